/* kt_util.h - helpers shared by the kernels tests: deterministic random
 * data, tensors that abort the test when they cannot be made, float/double
 * conversion, the tolerance comparison every test uses (kt_compare), and the
 * directional finite-difference check (kt_dir_fd). Test code only. */
#ifndef GF_TEST_KT_UTIL_H
#define GF_TEST_KT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gf/kernels.h"

/* Initializes *ctx as a CPU ctx of nthreads threads (layout auto); exits
 * the test on failure. The caller frees it with gf_ctx_free. */
void kt_cpu_ctx(gf_ctx *ctx, int nthreads);

/* splitmix64 generator; the state is the caller's. */
typedef struct kt_rng {
  uint64_t s;
} kt_rng;
double kt_uniform(kt_rng *r, double lo, double hi);

/* An owned f32 CPU tensor of the given dims (ndim <= 4), zero-filled;
 * exits the test on failure. Free with gf_tensor_free. */
gf_tensor kt_tensor(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
/* Fills t with uniform values in [lo, hi); with min_abs > 0 values are kept
 * at least min_abs away from 0 (for the kinks of ReLU). */
void kt_fill(gf_tensor *t, kt_rng *r, double lo, double hi, double min_abs);
/* A malloc'd double copy of t's data (caller frees); exits on failure. */
double *kt_dbl(const gf_tensor *t);
/* A malloc'd zeroed double array of n (caller frees); exits on failure. */
double *kt_dzeros(size_t n);

/* Counts elements with |got - want| > atol + rtol |want|; prints the first
 * few misses and the worst error with the label. 0 means all within. */
size_t kt_compare(const char *label, const float *got, const double *want,
                  size_t n, double atol, double rtol);
/* Same with a double `got`. */
size_t kt_compare_d(const char *label, const double *got, const double *want,
                    size_t n, double atol, double rtol);

/* Loss callback of the finite-difference check: runs the forward with the
 * current inputs and returns a scalar (e.g. sum r .* y in double). */
typedef double (*kt_loss_fn)(void *user);

/* Directional derivative of f along dir at the current value of param, by
 * central differences with step h (param is restored bit for bit). With
 * dir = +-1 and h = 2^-7 the perturbed values are exact in f32. */
double kt_dir_fd(kt_loss_fn f, void *user, float *param, const float *dir,
                 size_t n, double h);
/* Fills dir with random +-1. */
void kt_rademacher(float *dir, size_t n, kt_rng *r);
/* sum grad[i] * dir[i] in double. */
double kt_dot(const float *grad, const float *dir, size_t n);
/* True when |fd - an| <= atol + rtol max(|fd|, |an|); prints either way on a
 * miss. */
int kt_fd_ok(const char *label, double fd, double an, double atol,
             double rtol);

/* A CPU f32 view (borrowing, not owning) of t's data from element off,
 * shaped s (ndim dims); exits the test on failure. For overlap checks. */
gf_tensor kt_view_at(gf_tensor *t, int64_t off, int ndim, const int64_t *s);

/* "pre what" written into buf (cap bytes), for a check's label; exits the
 * test when it does not fit. Returns buf. */
const char *kt_label(char *buf, size_t cap, const char *pre, const char *what);

/* Sets every k-th element of f32 CPU tensor t to -0.0f, from the first. */
void kt_neg_zero_every(gf_tensor *t, int64_t k);
#endif
