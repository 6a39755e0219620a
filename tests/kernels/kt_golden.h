/* kt_golden.h - helpers of the kernels tests that check ops against
 * PyTorch's numbers in golden/ (safetensors files): reading a golden tensor
 * into an owned CPU gf_tensor (gf_model's safetensors reader), an owned copy of
 * a tensor, a view at an offset (overlap checks), the ulp distance of two
 * floats, and the golden comparison with its miss counter and the printed
 * worst-difference line. Shared by test_gan_ops.c, test_cond_ops.c,
 * test_augment.c, test_resample.c, test_fir.c and their CUDA twins.
 * Test code only: helpers exit the test on a failure; not for comparing
 * the CUDA backend with the CPU (kt_cuda.h). */
#ifndef GF_TEST_KT_GOLDEN_H
#define GF_TEST_KT_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/kernels.h"
#include "gf/safetensors.h"

/* Initializes *f and opens the golden file at path in it; exits the test
 * (status 1, the reason on stderr) when it cannot be read. The caller
 * frees it with gf_st_file_free. */
void kt_gold_open(gf_st_file *f, const char *path);

/* Flags of kt_gold: by default a golden tensor must be F32 with 1..4 dims. */
enum {
  KT_GOLD_I32 = 1u, /* I32 accepted too (read as a GF_I32 tensor) */
  KT_GOLD_0D = 2u   /* a 0-d tensor accepted, read as shape [1] */
};

/* An owned CPU copy of golden tensor `name` of f (its dtype and shape);
 * exits the test when it is missing or of a dtype / rank `flags` does not
 * allow. The caller frees it with gf_tensor_free. */
gf_tensor kt_gold(const gf_st_file *f, const char *name, unsigned flags);

/* An owned CPU copy of CPU tensor t (same dtype and shape); exits on
 * failure. The caller frees it with gf_tensor_free. */
gf_tensor kt_clone(const gf_tensor *t);

/* True when a and b (CPU) have the same size and bytes. */
bool kt_same_bits(const gf_tensor *a, const gf_tensor *b);

/* Distance in ulp between two finite floats (0 for equal bits; +0 and -0
 * are 1 apart). */
int64_t kt_ulps(float a, float b);

/* Misses of f32 `got` (CPU or device: a device tensor is copied to the
 * host) against PyTorch's f32 `want` (CPU): elements with |d| > atol +
 * rtol |t| + srel max|t| + tscale[i] (tscale: a per-element allowance, or
 * NULL); atol < 0: any bit difference is a miss. When verbose, prints the
 * first 3 misses and the line "what n N worst |d| D = D/max|t| max|t|, U
 * ulp". Returns the number of misses. */
size_t kt_misses(const char *what, const gf_tensor *got, const gf_tensor *want,
                 double atol, double rtol, double srel, const double *tscale,
                 bool verbose);

/* kt_misses, verbose, as a check of the calling test (a macro: check.h's
 * counters are the test's own): fails the test on any miss. The trailing
 * arguments are kt_misses's atol, rtol, srel, tscale (one macro may supply
 * them). */
#define KT_VS_TORCH(what, got, want, ...)                                     \
  do {                                                                        \
    const char *kt_what_ = (what);                                            \
    const gf_tensor *kt_want_ = (want);                                       \
    size_t kt_bad_ = kt_misses(kt_what_, (got), kt_want_, __VA_ARGS__, true); \
    CHECKF(kt_bad_ == 0, "%s: %zu of %zu outside tolerance", kt_what_,        \
           kt_bad_, (size_t)gf_tensor_numel(kt_want_));                       \
  } while (0)

/* kt_gold of the golden tensor named "pre.sfx" (a case's prefix and the
 * quantity). */
gf_tensor kt_gold_at(const gf_st_file *f, const char *pre, const char *sfx,
                     unsigned flags);

/* An owned CPU copy of f32 tensor t with every element 12345, a value no
 * op under test produces (the op must overwrite every element). The
 * caller frees it with gf_tensor_free. */
gf_tensor kt_garbage_like(const gf_tensor *t);

/* True when the bit-exact comparison of got with want would see a change:
 * a copy of want with its middle element one ulp up gives exactly one miss
 * (kt_misses, quiet). */
bool kt_ulp_change_seen(const char *what, const gf_tensor *got,
                        const gf_tensor *want);

/* got bit-exact against PyTorch's want (KT_VS_TORCH), and that comparison
 * shown to fire (kt_ulp_change_seen): checks of the calling test. */
#define KT_EXACT_FIRES(what, got, want)                                    \
  do {                                                                     \
    const char *kt_w_ = (what);                                            \
    KT_VS_TORCH(kt_w_, (got), (want), -1.0, 0.0, 0.0, NULL);               \
    CHECKF(kt_ulp_change_seen(kt_w_, (got), (want)),                       \
           "%s: a one-ulp change went unnoticed", kt_w_);                  \
  } while (0)
#endif
