/* kt_cuda.h - helpers of the GPU tests (label gpu): a CUDA ctx or a clean
 * skip (exit 77) where there is no GPU or no CUDA backend, device copies of
 * host tensors and back, and the CPU-vs-GPU comparison with a tolerance per
 * number format. Test code only: helpers exit the test on a failure. */
#ifndef GF_TEST_KT_CUDA_H
#define GF_TEST_KT_CUDA_H

#include <stddef.h>

#include "gf/kernels.h"
#include "kt_util.h"

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

/* A host tensor and its device copy (same dtype and shape); both owned. */
typedef struct kt_twin {
  gf_tensor h, d;
} kt_twin;

/* An owned twin of host tensor h (any dtype): a host copy and a device
 * copy; exits on failure. Free with kt_twin_free. */
kt_twin kt_twin_of(const gf_tensor *h);
/* An owned twin of a new f32 tensor of the given dims (kt_tensor) filled
 * with uniform values in [lo, hi) from r; exits on failure. */
kt_twin kt_twin_rnd(kt_rng *r, int ndim, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3, double lo, double hi);
/* Frees both halves; accepts a zeroed twin. */
void kt_twin_free(kt_twin *t);
/* Sets both halves to the host values of src (same size); exits on
 * failure. */
void kt_twin_set(kt_twin *t, const gf_tensor *src);

/* The device half of twin t equals its host half bit for bit: a check of
 * the calling test (a macro: check.h's counters are the test's own); the
 * worst difference is printed on a miss. */
#define KT_SAME(label, t)                                                    \
  do {                                                                       \
    const char *kt_label_ = (label);                                         \
    const kt_twin *kt_t_ = (t);                                              \
    size_t kt_nb_ = kt_diff_bytes(&kt_t_->d, &kt_t_->h);                     \
    if (kt_nb_)                                                              \
      (void)kt_cmp_dev(kt_label_, &kt_t_->d, &kt_t_->h, (kt_tol){0.0, 0.0}); \
    CHECKF(kt_nb_ == 0, "%s: CUDA differs from the CPU in %zu bytes",        \
           kt_label_, kt_nb_);                                               \
  } while (0)

/* Sets every k-th element of both halves of twin t to -0.0f, from the
 * first; exits on failure. */
void kt_twin_neg_zero_every(kt_twin *t, int64_t k);
#endif
