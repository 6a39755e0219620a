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
