/* fir_taps.h - which taps of an upfirdn2d window land on samples of the
 * upsampled input (ops.h, "FIR resampling"), per axis, shared by the CPU
 * loops (cpu/cpu_fir.c) and the CUDA kernel (cuda/cuda_fir.cu) so that
 * both visit the same taps in the same order. Private to kernels/; plain C
 * and CUDA C++ (static inline, host and device there). Not the arithmetic:
 * each backend does its own fmaf loop in the order ops.h states.
 *
 * Along one axis, output index i reads the window taps p = 0 .. k-1 at
 * upsampled position r = i down + p - pad0; r is a sample when
 * 0 <= r < n up and r % up == 0, the sample of input index r / up. Those p
 * form an arithmetic progression of step up: first, first + up, ... below
 * end, with input index src0 at p = first, src0 + 1 at first + up, and so
 * on. An empty set has first >= end. */
#ifndef GF_FIR_TAPS_H
#define GF_FIR_TAPS_H

#include <stdint.h>

#ifdef __CUDACC__
#define GF_FIR_FN static inline __host__ __device__
#else
#define GF_FIR_FN static inline
#endif

typedef struct gf_fir_taps {
  int64_t first; /* the first tap p on a sample */
  int64_t end;   /* taps stop below end (step up) */
  int64_t src0;  /* the input index of tap first */
} gf_fir_taps;

/* The taps of output index i along an axis of n input samples with
 * factors up, down >= 1, leading pad pad0 (negative: crop) and k taps. */
GF_FIR_FN gf_fir_taps gf_fir_axis_taps(int64_t i, int64_t n, int up, int down,
                                       int pad0, int k) {
  gf_fir_taps t;
  int64_t a0 = i * down - pad0; /* upsampled position of tap 0 */
  int64_t lo = a0 < 0 ? -a0 : 0;
  int64_t hi = n * up - a0; /* taps below hi stay inside the samples */
  if (hi > k) hi = k;
  int64_t rem = (a0 + lo) % up; /* a0 + lo >= 0 */
  t.first = rem ? lo + (up - rem) : lo;
  t.end = hi;
  t.src0 = (a0 + t.first) / up;
  return t;
}

#endif
