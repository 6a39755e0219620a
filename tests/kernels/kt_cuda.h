/* kt_cuda.h - helpers of the GPU tests (label gpu): a CUDA ctx or a clean
 * skip (exit 77) where there is no GPU or no CUDA backend, device copies of
 * host tensors and back, and the CPU-vs-GPU comparison with a tolerance per
 * number format. Test code only: helpers exit the test on a failure. */
#ifndef GF_TEST_KT_CUDA_H
#define GF_TEST_KT_CUDA_H

#include <stddef.h>

#include "gf/kernels.h"

/* Tolerances for comparing a CUDA result with the CPU twin: f32 math on
 * both sides differs only in summation order and libm (KT_TOL_F32); TF32
 * tensor-core math rounds inputs to 10 mantissa bits (KT_TOL_TF32). */
typedef struct kt_tol {
  double atol, rtol;
} kt_tol;
extern const kt_tol KT_TOL_F32, KT_TOL_F32_ELT, KT_TOL_TF32;

/* Initializes *ctx as a CUDA ctx on ordinal 0, or exits 77 (skipped) with
 * the reason when this build has no CUDA backend or the machine no GPU. */
void kt_cuda_ctx_or_skip(gf_ctx *ctx);

/* An owned CUDA copy of host tensor h (same shape); exits on failure. */
gf_tensor kt_to_dev(const gf_tensor *h);
/* An owned host copy of device tensor d; exits on failure. */
gf_tensor kt_to_host(const gf_tensor *d);

/* Compares device tensor got with host tensor want: counts elements with
 * |got - want| > atol + rtol |want| and prints the worst (kt_compare). */
size_t kt_cmp_dev(const char *label, const gf_tensor *got_dev,
                  const gf_tensor *want_host, kt_tol tol);
/* Number of bytes that differ between device tensor a and host tensor b
 * (0: bit-identical). */
size_t kt_diff_bytes(const gf_tensor *a_dev, const gf_tensor *b_host);

#endif
