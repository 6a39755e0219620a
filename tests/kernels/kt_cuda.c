/* kt_cuda.c - helpers of the GPU tests; see kt_cuda.h. */
#include "kt_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt_util.h"

const kt_tol KT_TOL_F32 = {1e-5, 1e-4};
const kt_tol KT_TOL_F32_ELT = {1e-6, 1e-5};
const kt_tol KT_TOL_TF32 = {2e-3, 1e-2};

void kt_cuda_ctx_or_skip(gf_ctx *ctx) {
  gf_err e = {0};
  gf_ctx_config cfg = {GF_BACKEND_CUDA, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_status st = gf_ctx_init(ctx, &cfg, &e);
  if (st == GF_OK) return;
  if (st == GF_EUNSUPPORTED || st == GF_EDEVICE) {
    printf("skipped: %s\n", e.msg);
    exit(77);
  }
  fprintf(stderr, "CUDA ctx: %s\n", e.msg);
  exit(1);
}

gf_tensor kt_to_dev(const gf_tensor *h) {
  gf_tensor d;
  gf_err e = {0};
  if (gf_tensor_init(&d, GF_F32, GF_DEV_CUDA, h->ndim, h->shape, &e) ||
      gf_tensor_copy(&d, h, &e)) {
    fprintf(stderr, "kt_to_dev: %s\n", e.msg);
    exit(1);
  }
  return d;
}

gf_tensor kt_to_host(const gf_tensor *d) {
  gf_tensor h;
  gf_err e = {0};
  if (gf_tensor_init(&h, GF_F32, GF_DEV_CPU, d->ndim, d->shape, &e) ||
      gf_tensor_copy(&h, d, &e)) {
    fprintf(stderr, "kt_to_host: %s\n", e.msg);
    exit(1);
  }
  return h;
}

size_t kt_cmp_dev(const char *label, const gf_tensor *got_dev,
                  const gf_tensor *want_host, kt_tol tol) {
  gf_tensor g = kt_to_host(got_dev);
  double *w = kt_dbl(want_host);
  size_t n = (size_t)gf_tensor_numel(want_host);
  size_t bad = (size_t)gf_tensor_numel(&g) == n
                   ? kt_compare(label, g.data, w, n, tol.atol, tol.rtol)
                   : n + 1;
  free(w);
  gf_tensor_free(&g);
  return bad;
}

size_t kt_diff_bytes(const gf_tensor *a_dev, const gf_tensor *b_host) {
  gf_tensor a = kt_to_host(a_dev);
  size_t nb = gf_tensor_nbytes(&a), bad = 0;
  if (nb != gf_tensor_nbytes(b_host)) bad = nb + 1;
  const unsigned char *p = a.data, *q = b_host->data;
  for (size_t i = 0; bad <= nb && i < nb; i++) bad += p[i] != q[i];
  gf_tensor_free(&a);
  return bad;
}

kt_twin kt_twin_of(const gf_tensor *h) {
  kt_twin t;
  gf_err e = {0};
  if (gf_tensor_init(&t.h, h->dtype, GF_DEV_CPU, h->ndim, h->shape, &e) !=
      GF_OK) {
    fprintf(stderr, "kt_twin_of: %s\n", e.msg);
    exit(1);
  }
  memcpy(t.h.data, h->data, gf_tensor_nbytes(h));
  if (gf_tensor_init(&t.d, h->dtype, GF_DEV_CUDA, h->ndim, h->shape, &e) !=
          GF_OK ||
      gf_tensor_copy(&t.d, &t.h, &e) != GF_OK) {
    fprintf(stderr, "kt_twin_of: %s\n", e.msg);
    exit(1);
  }
  return t;
}

kt_twin kt_twin_rnd(kt_rng *r, int ndim, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3, double lo, double hi) {
  gf_tensor h = kt_tensor(ndim, d0, d1, d2, d3);
  kt_fill(&h, r, lo, hi, 0.0);
  kt_twin t = kt_twin_of(&h);
  gf_tensor_free(&h);
  return t;
}

void kt_twin_free(kt_twin *t) {
  gf_tensor_free(&t->h);
  gf_tensor_free(&t->d);
}

void kt_twin_set(kt_twin *t, const gf_tensor *src) {
  gf_err e = {0};
  if (gf_tensor_nbytes(src) != gf_tensor_nbytes(&t->h)) {
    fprintf(stderr, "kt_twin_set: %zu bytes into %zu\n",
            (size_t)gf_tensor_nbytes(src), (size_t)gf_tensor_nbytes(&t->h));
    exit(1);
  }
  memcpy(t->h.data, src->data, gf_tensor_nbytes(src));
  if (gf_tensor_copy(&t->d, &t->h, &e) != GF_OK) {
    fprintf(stderr, "kt_twin_set: %s\n", e.msg);
    exit(1);
  }
}

void kt_twin_neg_zero_every(kt_twin *t, int64_t k) {
  kt_neg_zero_every(&t->h, k);
  gf_err e = {0};
  if (gf_tensor_copy(&t->d, &t->h, &e) != GF_OK) {
    fprintf(stderr, "kt_twin_neg_zero_every: %s\n", e.msg);
    exit(1);
  }
}
