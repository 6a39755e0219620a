/* kt_golden.c - see kt_golden.h. */
#include "kt_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kt_gold_open(gf_st_file *f, const char *path) {
  gf_err e = {0};
  gf_st_file_init(f);
  if (gf_st_open(f, path, 0, &e) != GF_OK) {
    fprintf(stderr, "%s: %s\n", path, e.msg);
    exit(1);
  }
}

gf_tensor kt_gold(const gf_st_file *f, const char *name, unsigned flags) {
  const gf_st_tensor *t = gf_st_find(f, name);
  bool i32 = (flags & KT_GOLD_I32) != 0;
  int min_ndim = (flags & KT_GOLD_0D) ? 0 : 1;
  if (!t || (t->dtype != GF_ST_F32 && !(i32 && t->dtype == GF_ST_I32)) ||
      t->ndim < min_ndim || t->ndim > 4) {
    fprintf(stderr, "golden: %s missing or not %s with %s4 dims\n", name,
            i32 ? "f32/i32" : "f32", min_ndim ? "1.." : "<= ");
    exit(1);
  }
  int64_t one = 1;
  gf_tensor g;
  gf_err e = {0};
  if (gf_tensor_init(&g, t->dtype == GF_ST_I32 ? GF_I32 : GF_F32, GF_DEV_CPU,
                     t->ndim ? t->ndim : 1, t->ndim ? t->shape : &one,
                     &e) != GF_OK) {
    fprintf(stderr, "golden: %s: %s\n", name, e.msg);
    exit(1);
  }
  if (gf_tensor_nbytes(&g) != t->nbytes) {
    fprintf(stderr, "golden: %s: %zu bytes for its shape, %zu stored\n", name,
            (size_t)gf_tensor_nbytes(&g), (size_t)t->nbytes);
    exit(1);
  }
  memcpy(g.data, t->data, t->nbytes);
  return g;
}

gf_tensor kt_clone(const gf_tensor *t) {
  gf_tensor c;
  gf_err e = {0};
  if (gf_tensor_init(&c, t->dtype, GF_DEV_CPU, t->ndim, t->shape, &e) !=
      GF_OK) {
    fprintf(stderr, "kt_clone: %s\n", e.msg);
    exit(1);
  }
  memcpy(c.data, t->data, gf_tensor_nbytes(t));
  return c;
}

bool kt_same_bits(const gf_tensor *a, const gf_tensor *b) {
  return gf_tensor_nbytes(a) == gf_tensor_nbytes(b) &&
         memcmp(a->data, b->data, gf_tensor_nbytes(a)) == 0;
}

int64_t kt_ulps(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
  int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return oa > ob ? oa - ob : ob - oa;
}

size_t kt_misses(const char *what, const gf_tensor *got, const gf_tensor *want,
                 double atol, double rtol, double srel, const double *tscale,
                 bool verbose) {
  gf_tensor host = {0};
  const gf_tensor *gt = got;
  if (got->device != GF_DEV_CPU) {
    gf_err e = {0};
    if (gf_tensor_init(&host, GF_F32, GF_DEV_CPU, got->ndim, got->shape, &e) !=
            GF_OK ||
        gf_tensor_copy(&host, got, &e) != GF_OK) {
      fprintf(stderr, "%s: to the host: %s\n", what, e.msg);
      exit(1);
    }
    gt = &host;
  }
  if (gt->dtype != GF_F32 || want->dtype != GF_F32 ||
      gf_tensor_numel(gt) != gf_tensor_numel(want)) {
    fprintf(stderr, "%s: not two f32 tensors of the same size\n", what);
    exit(1);
  }
  const float *g = gt->data, *t = want->data;
  size_t n = (size_t)gf_tensor_numel(gt), bad = 0;
  double worst = 0.0, tmax = 0.0;
  int64_t worst_ulp = 0;
  for (size_t i = 0; i < n; i++) tmax = fmax(tmax, fabs((double)t[i]));
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - (double)t[i]);
    bool ok = atol < 0 ? memcmp(&g[i], &t[i], 4) == 0
                       : d <= atol + rtol * fabs((double)t[i]) + srel * tmax +
                                  (tscale ? tscale[i] : 0.0);
    if (!ok && verbose && bad < 3)
      fprintf(stderr, "  %s[%zu]: %.9g vs PyTorch %.9g\n", what, i, g[i], t[i]);
    bad += !ok;
    if (!(d <= worst)) worst = d;
    int64_t u = kt_ulps(g[i], t[i]);
    if (u > worst_ulp) worst_ulp = u;
  }
  if (verbose)
    printf("%-26s n %-5zu worst |d| %-9.3g = %-9.3g max|t|, %3lld ulp%s\n",
           what, n, worst, tmax > 0 ? worst / tmax : 0.0, (long long)worst_ulp,
           atol < 0 ? " (bit-exact required)" : "");
  gf_tensor_free(&host);
  return bad;
}

gf_tensor kt_gold_at(const gf_st_file *f, const char *pre, const char *sfx,
                     unsigned flags) {
  char nm[96];
  int k = snprintf(nm, sizeof nm, "%s.%s", pre, sfx);
  if (k < 0 || k >= (int)sizeof nm) {
    fprintf(stderr, "kt_gold_at: name %s.%s too long\n", pre, sfx);
    exit(1);
  }
  return kt_gold(f, nm, flags);
}

gf_tensor kt_garbage_like(const gf_tensor *t) {
  gf_tensor g = kt_clone(t);
  float *p = g.data;
  for (int64_t i = 0; i < gf_tensor_numel(&g); i++) p[i] = 12345.0f;
  return g;
}

bool kt_ulp_change_seen(const char *what, const gf_tensor *got,
                        const gf_tensor *want) {
  gf_tensor w = kt_clone(want);
  float *p = w.data;
  size_t i = (size_t)gf_tensor_numel(&w) / 2;
  p[i] = nextafterf(p[i], INFINITY);
  bool seen = kt_misses(what, got, &w, -1.0, 0.0, 0.0, NULL, false) == 1;
  gf_tensor_free(&w);
  return seen;
}
