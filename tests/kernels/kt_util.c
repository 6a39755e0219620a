/* kt_util.c - helpers of the kernels tests; see kt_util.h. */
#include "kt_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double kt_uniform(kt_rng *r, double lo, double hi) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * ((double)(z >> 11) * 0x1p-53);
}

gf_tensor kt_tensor(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  int64_t shape[4] = {d0, d1, d2, d3};
  gf_tensor t;
  gf_err e;
  if (gf_tensor_init(&t, GF_F32, GF_DEV_CPU, ndim, shape, &e) != GF_OK) {
    fprintf(stderr, "kt_tensor: %s\n", e.msg);
    exit(1);
  }
  return t;
}

void kt_fill(gf_tensor *t, kt_rng *r, double lo, double hi, double min_abs) {
  float *p = t->data;
  int64_t n = gf_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v;
    do v = kt_uniform(r, lo, hi);
    while (fabs(v) < min_abs);
    p[i] = (float)v;
  }
}

double *kt_dzeros(size_t n) {
  double *d = calloc(n ? n : 1, sizeof *d);
  if (!d) {
    fprintf(stderr, "kt_dzeros: out of memory\n");
    exit(1);
  }
  return d;
}

double *kt_dbl(const gf_tensor *t) {
  size_t n = (size_t)gf_tensor_numel(t);
  double *d = kt_dzeros(n);
  const float *p = t->data;
  for (size_t i = 0; i < n; i++) d[i] = p[i];
  return d;
}

static size_t compare(const char *label, const float *gf, const double *gd,
                      const double *want, size_t n, double atol,
                      double rtol) {
  size_t bad = 0, worst_i = 0;
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double g = gf ? (double)gf[i] : gd[i];
    double diff = fabs(g - want[i]);
    if (!(diff <= atol + rtol * fabs(want[i]))) { /* NaN counts as a miss */
      if (bad < 5)
        fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (diff %.3g)\n", label,
                i, g, want[i], diff);
      bad++;
    }
    if (isnan(diff) ? !isnan(worst) : (!isnan(worst) && diff > worst)) {
      worst = diff;
      worst_i = i;
    }
  }
  if (bad)
    fprintf(stderr, "%s: %zu of %zu outside atol %g rtol %g; worst %.3g at "
            "%zu\n", label, bad, n, atol, rtol, worst, worst_i);
  return bad;
}

size_t kt_compare(const char *label, const float *got, const double *want,
                  size_t n, double atol, double rtol) {
  return compare(label, got, NULL, want, n, atol, rtol);
}

size_t kt_compare_d(const char *label, const double *got, const double *want,
                    size_t n, double atol, double rtol) {
  return compare(label, NULL, got, want, n, atol, rtol);
}

double kt_dir_fd(kt_loss_fn f, void *user, float *param, const float *dir,
                 size_t n, double h) {
  float *save = malloc((n ? n : 1) * sizeof *save);
  if (!save) {
    fprintf(stderr, "kt_dir_fd: out of memory\n");
    exit(1);
  }
  memcpy(save, param, n * sizeof *save);
  for (size_t i = 0; i < n; i++) param[i] = (float)(save[i] + h * dir[i]);
  double lp = f(user);
  for (size_t i = 0; i < n; i++) param[i] = (float)(save[i] - h * dir[i]);
  double lm = f(user);
  memcpy(param, save, n * sizeof *save);
  free(save);
  return (lp - lm) / (2.0 * h);
}

void kt_rademacher(float *dir, size_t n, kt_rng *r) {
  for (size_t i = 0; i < n; i++)
    dir[i] = kt_uniform(r, 0.0, 1.0) < 0.5 ? -1.0f : 1.0f;
}

double kt_dot(const float *grad, const float *dir, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)grad[i] * dir[i];
  return s;
}

int kt_fd_ok(const char *label, double fd, double an, double atol,
             double rtol) {
  double diff = fabs(fd - an);
  double scale = fabs(fd) > fabs(an) ? fabs(fd) : fabs(an);
  int ok = diff <= atol + rtol * scale;
  if (!ok)
    fprintf(stderr, "%s: finite difference %.9g vs backward %.9g (diff %.3g)"
            "\n", label, fd, an, diff);
  return ok;
}

void kt_cpu_ctx(gf_ctx *ctx, int nthreads) {
  gf_ctx_config c = {GF_BACKEND_CPU, nthreads, 0, GF_CPU_LAYOUT_AUTO};
  gf_err e = {0};
  if (gf_ctx_init(ctx, &c, &e) != GF_OK) {
    fprintf(stderr, "CPU ctx: %s\n", e.msg);
    exit(1);
  }
}

gf_tensor kt_view_at(gf_tensor *t, int64_t off, int ndim, const int64_t *s) {
  gf_tensor v;
  gf_err e = {0};
  if (gf_tensor_view(&v, (float *)t->data + off, GF_F32, GF_DEV_CPU, ndim, s,
                     &e) != GF_OK) {
    fprintf(stderr, "view: %s\n", e.msg);
    exit(1);
  }
  return v;
}

const char *kt_label(char *buf, size_t cap, const char *pre, const char *what) {
  int k = snprintf(buf, cap, "%s %s", pre, what);
  if (k < 0 || (size_t)k >= cap) {
    fprintf(stderr, "label %s %s too long\n", pre, what);
    exit(1);
  }
  return buf;
}

void kt_neg_zero_every(gf_tensor *t, int64_t k) {
  float *p = t->data;
  for (int64_t i = 0; i < gf_tensor_numel(t); i += k) p[i] = -0.0f;
}
