/* test_cond_ops.c - the CPU class-conditioning ops (gf_embedding_fwd/bwd,
 * gf_channel_affine_fwd/bwd, gf_rowdot_fwd/bwd, gf_labels_check) against
 * PyTorch's numbers (golden/cond.safetensors, written by
 * golden/make_cond_golden.py; no Python needed here), against double
 * references written here, and through the compositions they exist for:
 * BigGAN's conditional batch norm (batch norm without affine, then the
 * affine) and the projection discriminator's head (a linear plus the
 * rowdot of the class embedding). Also GF_ACCUMULATE, the in-place forms,
 * NULL outputs, the same bits at 1 and 4 threads at a size above the
 * threading threshold, the argument errors, and labels outside [0, K):
 * refused by the API on the CPU, and harmless (NaN rows, no contribution,
 * no out-of-bounds access: run under ASan) in the backend itself.
 *
 * Tolerances against PyTorch (f32 on both sides; each run prints the worst
 * difference per quantity):
 *   embedding y, dtable, dtable accumulated       bit-exact (PyTorch's CPU
 *                              index_add_ sums in f32 in increasing n, as
 *                              the op promises; the golden script checks
 *                              that order too)
 *   affine y, dx (S = 1 and NCHW), dgain, dbias at S = 1   bit-exact
 *   rowdot da, db; projection dtable                       bit-exact
 *   affine dgain, dbias at S = 289; rowdot y               |d| <= 4 ulp of
 *                              the sum of |terms| (double lane sums here,
 *                              PyTorch's f32 reduction there)
 *   ccbn through our batch norm: xhat, y   |d| <= 1e-5 (|t| + 1)
 *                              dx          |d| <= 1e-5 (|t| + max|t|)
 *                              (the batch norm's statistics and its
 *                              backward sums in other orders)
 *   projection out, dh, dw, dbias          |d| <= 1e-5 (|t| + max|t|)
 *                              (oneDNN's linear vs PyTorch's BLAS)
 * Against the double references: the embedding gradient rtol 1e-6 of the
 * sum of |terms| (f32 in-order sums of a dozen terms at most), the lane
 * sums within one f32 rounding of the result (plus 2^-40 of the sum of
 * |terms| for the double sum's own error).
 * Each bit-exact comparison is shown to fire: the golden perturbed by one
 * ulp in one element must fail it.
 * Argument 1: the golden file (default GF_COND_GOLDEN, the source tree's,
 * from CMake). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_COND_GOLDEN
#define GF_COND_GOLDEN "cond.safetensors"
#endif

/* ---- helpers ------------------------------------------------------------- */

/* An owned i32 [n] CPU tensor, zeroed. */
static gf_tensor labels_tensor(int64_t n) {
  gf_tensor t;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&t, GF_I32, GF_DEV_CPU, 1, &n, &e) == GF_OK);
  return t;
}

/* Bit-exact against PyTorch, and the comparison shown to fire: want with
 * one element one ulp off must miss. */
static void exact_fires(const char *what, const gf_tensor *got,
                        const gf_tensor *want) {
  KT_VS_TORCH(what, got, want, -1.0, 0.0, 0.0, NULL);
  gf_tensor w = kt_clone(want);
  float *p = w.data;
  size_t i = (size_t)gf_tensor_numel(&w) / 2;
  p[i] = nextafterf(p[i], INFINITY);
  CHECKF(kt_misses(what, got, &w, -1.0, 0.0, 0.0, NULL, false) == 1,
         "%s: a one-ulp change went unnoticed", what);
  gf_tensor_free(&w);
}

/* ---- double references ----------------------------------------------------
 * Each also returns, per output, the sum of |terms| (for the tolerance of a
 * sum taken in another order). */

/* dtable[k] = sum over labels[n] == k of dy[n] (labels in range). */
static void ref_emb_bwd(const int32_t *L, const float *dy, int64_t N, int64_t K,
                        int64_t D, double *out, double *mag) {
  memset(out, 0, (size_t)(K * D) * sizeof *out);
  memset(mag, 0, (size_t)(K * D) * sizeof *mag);
  for (int64_t n = 0; n < N; n++)
    for (int64_t d = 0; d < D; d++) {
      out[L[n] * D + d] += dy[n * D + d];
      mag[L[n] * D + d] += fabs((double)dy[n * D + d]);
    }
}

/* dgain, dbias over planes of S. */
static void ref_affine_sums(const float *x, const float *dy, int64_t P,
                            int64_t S, double *dg, double *db, double *mg,
                            double *mb) {
  for (int64_t p = 0; p < P; p++) {
    dg[p] = db[p] = mg[p] = mb[p] = 0.0;
    for (int64_t s = 0; s < S; s++) {
      double t = (double)dy[p * S + s] * x[p * S + s];
      dg[p] += t;
      mg[p] += fabs(t);
      db[p] += dy[p * S + s];
      mb[p] += fabs((double)dy[p * S + s]);
    }
  }
}

static void ref_rowdot(const float *a, const float *b, int64_t N, int64_t D,
                       double *y, double *mag) {
  for (int64_t n = 0; n < N; n++) {
    y[n] = mag[n] = 0.0;
    for (int64_t d = 0; d < D; d++) {
      double t = (double)a[n * D + d] * b[n * D + d];
      y[n] += t;
      mag[n] += fabs(t);
    }
  }
}

/* got[i] within rtol mag[i] + one rounding of the result of want[i]. */
static void cmp_sum(const char *what, const float *got, const double *want,
                    const double *mag, size_t n, double rtol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double tol = rtol * mag[i] + 0x1p-24 * fabs(want[i]);
    if (!(fabs((double)got[i] - want[i]) <= tol) && bad++ < 3)
      fprintf(stderr, "  %s[%zu]: %.9g vs %.17g (tol %.3g)\n", what, i, got[i],
              want[i], tol);
  }
  CHECKF(bad == 0, "%s: %zu of %zu outside tolerance", what, bad, n);
}

/* ---- embedding ----------------------------------------------------------- */

static void test_embedding_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor table = kt_gold(f, "emb.table", KT_GOLD_I32),
            labels = kt_gold(f, "emb.labels", KT_GOLD_I32);
  gf_tensor dy = kt_gold(f, "emb.dy", KT_GOLD_I32),
            g0 = kt_gold(f, "emb.g0", KT_GOLD_I32);
  gf_tensor ty = kt_gold(f, "emb.y", KT_GOLD_I32),
            tdt = kt_gold(f, "emb.dtable", KT_GOLD_I32);
  gf_tensor tda = kt_gold(f, "emb.dtable_acc", KT_GOLD_I32);
  int64_t K = table.shape[0], D = table.shape[1], N = labels.shape[0];
  gf_tensor y = kt_tensor(2, N, D, 1, 1), dt = kt_tensor(2, K, D, 1, 1);
  kt_rng r = {5};
  kt_fill(&y, &r, -1.0, 1.0, 0.0);
  kt_fill(&dt, &r, -1.0, 1.0, 0.0); /* overwritten */
  gf_err e = {0};
  CHECKF(gf_embedding_fwd(ctx, &table, &labels, &y, &e) == GF_OK, "%s", e.msg);
  exact_fires("emb y", &y, &ty);
  CHECKF(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  exact_fires("emb dtable", &dt, &tdt);
  memcpy(dt.data, g0.data, gf_tensor_nbytes(&g0));
  CHECKF(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_ACCUMULATE, &e) == GF_OK,
         "%s", e.msg);
  exact_fires("emb dtable accumulated", &dt, &tda);
  /* the double reference */
  double *want = kt_dzeros((size_t)(K * D)), *mag = kt_dzeros((size_t)(K * D));
  REQUIRE(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) == GF_OK);
  ref_emb_bwd(labels.data, dy.data, N, K, D, want, mag);
  cmp_sum("emb dtable ref", dt.data, want, mag, (size_t)(K * D), 1e-6);
  free(want);
  free(mag);
  gf_tensor *all[] = {&table, &labels, &dy, &g0, &ty, &tdt, &tda, &y, &dt};
  for (size_t i = 0; i < 9; i++) gf_tensor_free(all[i]);
}

/* K = 1000, N = 256, D = 128 (BigGAN's shared embedding at batch 256): the
 * reference, 1 vs 4 threads, accumulate = old + overwrite, element by
 * element. */
static void test_embedding_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t K = 1000, N = 256, D = 128;
  gf_tensor table = kt_tensor(2, K, D, 1, 1), labels = labels_tensor(N);
  gf_tensor dy = kt_tensor(2, N, D, 1, 1), y = kt_tensor(2, N, D, 1, 1);
  gf_tensor dt = kt_tensor(2, K, D, 1, 1), dt4 = kt_tensor(2, K, D, 1, 1);
  kt_fill(&table, rng, -1.0, 1.0, 0.0);
  kt_fill(&dy, rng, -1.0, 1.0, 0.0);
  int32_t *L = labels.data;
  for (int64_t n = 0; n < N; n++) /* a few classes many times, most once */
    L[n] = n % 4 == 0 ? (int32_t)(n % 12) : (int32_t)kt_uniform(rng, 0, K);
  gf_err e = {0};
  CHECKF(gf_embedding_fwd(ctx4, &table, &labels, &y, &e) == GF_OK, "%s", e.msg);
  bool rows = true;
  for (int64_t n = 0; n < N; n++)
    rows &= memcmp((float *)y.data + n * D, (float *)table.data + L[n] * D,
                   (size_t)D * 4) == 0;
  CHECK(rows);
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_embedding_bwd(ctx4, &labels, &dy, &dt4, GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_same_bits(&dt, &dt4));
  double *want = kt_dzeros((size_t)(K * D)), *mag = kt_dzeros((size_t)(K * D));
  ref_emb_bwd(L, dy.data, N, K, D, want, mag);
  cmp_sum("emb large dtable ref", dt.data, want, mag, (size_t)(K * D), 1e-6);
  kt_fill(&dt4, rng, -1.0, 1.0, 0.0);
  gf_tensor sum = kt_tensor(2, K, D, 1, 1);
  const float *o = dt4.data, *w = dt.data;
  float *sp = sum.data;
  for (int64_t i = 0; i < K * D; i++) sp[i] = o[i] + w[i];
  CHECK(gf_embedding_bwd(ctx4, &labels, &dy, &dt4, GF_ACCUMULATE, &e) == GF_OK);
  CHECK(kt_same_bits(&dt4, &sum));
  free(want);
  free(mag);
  gf_tensor *all[] = {&table, &labels, &dy, &y, &dt, &dt4, &sum};
  for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
}

/* Labels outside [0, K): the API refuses them on the CPU (nothing
 * written); the backend itself, called directly, reads and writes nothing
 * out of bounds (ASan would say so): NaN rows forward, nothing backward. */
static void test_bad_labels(gf_ctx *ctx) {
  int64_t K = 4, D = 3, N = 5;
  gf_tensor table = kt_tensor(2, K, D, 1, 1), labels = labels_tensor(N);
  gf_tensor y = kt_tensor(2, N, D, 1, 1), dy = kt_tensor(2, N, D, 1, 1);
  gf_tensor dt = kt_tensor(2, K, D, 1, 1);
  kt_rng r = {11};
  kt_fill(&table, &r, -1.0, 1.0, 0.0);
  kt_fill(&dy, &r, -1.0, 1.0, 0.0);
  int32_t *L = labels.data;
  int32_t vals[5] = {1, -1, 3, 4, INT32_MIN};
  memcpy(L, vals, sizeof vals);
  gf_err e = {0};
  gf_tensor y0 = kt_clone(&y), dt0 = kt_clone(&dt);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "labels[1] = -1") != NULL);
  CHECK(kt_same_bits(&y, &y0));
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(kt_same_bits(&dt, &dt0));
  CHECK(gf_labels_check(&labels, K, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "outside [0, 4)") != NULL);
  CHECK(gf_labels_check(&labels, INT32_MAX, &e) == GF_EINVAL); /* -1 */
  L[1] = 0;
  L[4] = 2;
  CHECK(gf_labels_check(&labels, K, &e) == GF_EINVAL); /* 4 */
  CHECK(strstr(e.msg, "labels[3] = 4") != NULL);
  CHECK(gf_labels_check(&labels, 5, &e) == GF_OK);
  CHECK(gf_labels_check(&table, K, &e) == GF_EINVAL); /* f32 */
  CHECK(gf_labels_check(NULL, K, &e) == GF_EINVAL);
  /* the backend: labels {1, -1, 3, 4, INT32_MIN} with K = 4 */
  memcpy(L, vals, sizeof vals);
  const gf_backend_ops *o = &gf_cpu_backend_ops;
  CHECK(o->embedding_fwd(ctx, &table, &labels, &y, &e) == GF_OK);
  const float *yp = y.data, *tp = table.data;
  CHECK(memcmp(yp, tp + 1 * D, (size_t)D * 4) == 0);
  CHECK(memcmp(yp + 2 * D, tp + 3 * D, (size_t)D * 4) == 0);
  bool nan_rows = true;
  for (int64_t d = 0; d < D; d++)
    nan_rows &= isnan(yp[1 * D + d]) && isnan(yp[3 * D + d]) &&
                isnan(yp[4 * D + d]);
  CHECK(nan_rows);
  kt_fill(&dt, &r, -1.0, 1.0, 0.0);
  CHECK(o->embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) == GF_OK);
  const float *dp = dt.data, *gp = dy.data;
  bool ok = true;
  for (int64_t d = 0; d < D; d++) {
    ok &= dp[0 * D + d] == 0.0f && dp[2 * D + d] == 0.0f;
    ok &= dp[1 * D + d] == gp[0 * D + d] && dp[3 * D + d] == gp[2 * D + d];
  }
  CHECK(ok);
  gf_tensor *all[] = {&table, &labels, &y, &dy, &dt, &y0, &dt0};
  for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
}

/* ---- conditional batch norm ---------------------------------------------- */

/* The affine alone on PyTorch's xhat (bit-exact but for the sums), then
 * the whole ccbn through gf_batchnorm_*: xhat, y, dx. */
static void test_ccbn_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor x = kt_gold(f, "ccbn.x", KT_GOLD_I32),
            gain = kt_gold(f, "ccbn.gain", KT_GOLD_I32);
  gf_tensor bias = kt_gold(f, "ccbn.bias", KT_GOLD_I32),
            dy = kt_gold(f, "ccbn.dy", KT_GOLD_I32);
  gf_tensor txh = kt_gold(f, "ccbn.xhat", KT_GOLD_I32),
            ty = kt_gold(f, "ccbn.y", KT_GOLD_I32);
  gf_tensor tdx = kt_gold(f, "ccbn.dx", KT_GOLD_I32),
            tdxh = kt_gold(f, "ccbn.dxhat", KT_GOLD_I32);
  gf_tensor tdg = kt_gold(f, "ccbn.dgain", KT_GOLD_I32),
            tdb = kt_gold(f, "ccbn.dbias", KT_GOLD_I32);
  int64_t N = x.shape[0], C = x.shape[1], S = x.shape[2] * x.shape[3];
  gf_tensor y = kt_clone(&x), dxh = kt_clone(&x), dx = kt_clone(&x),
            xh = kt_clone(&x);
  gf_tensor dg = kt_tensor(2, N, C, 1, 1), db = kt_tensor(2, N, C, 1, 1);
  gf_err e = {0};
  CHECKF(gf_channel_affine_fwd(ctx, &txh, &gain, &bias, &y, &e) == GF_OK, "%s",
         e.msg);
  exact_fires("ccbn affine y", &y, &ty);
  CHECKF(gf_channel_affine_bwd(ctx, &txh, &gain, &dy, &dxh, &dg, &db, &e) ==
             GF_OK,
         "%s", e.msg);
  exact_fires("ccbn affine dxhat", &dxh, &tdxh);
  /* the sums: 4 ulp of the sum of |terms| from PyTorch, one rounding from
   * the double reference */
  double *rg = kt_dzeros((size_t)(N * C)), *rb = kt_dzeros((size_t)(N * C));
  double *mg = kt_dzeros((size_t)(N * C)), *mb = kt_dzeros((size_t)(N * C));
  double *tg = kt_dzeros((size_t)(N * C)), *tb = kt_dzeros((size_t)(N * C));
  ref_affine_sums(txh.data, dy.data, N * C, S, rg, rb, mg, mb);
  for (int64_t i = 0; i < N * C; i++) {
    tg[i] = 4 * 0x1p-24 * mg[i];
    tb[i] = 4 * 0x1p-24 * mb[i];
  }
  size_t bg = kt_misses("ccbn affine dgain", &dg, &tdg, 0.0, 0.0, 0.0, tg,
                        true);
  size_t bb = kt_misses("ccbn affine dbias", &db, &tdb, 0.0, 0.0, 0.0, tb,
                        true);
  CHECK(bg == 0 && bb == 0);
  cmp_sum("ccbn dgain ref", dg.data, rg, mg, (size_t)(N * C), 0x1p-40);
  cmp_sum("ccbn dbias ref", db.data, rb, mb, (size_t)(N * C), 0x1p-40);
  /* the whole ccbn: batch norm (affine=False) + the affine, and back */
  gf_tensor mean = kt_tensor(1, C, 1, 1, 1), var = kt_tensor(1, C, 1, 1, 1);
  gf_bn_params bp = {1e-5f, 0.1f};
  CHECKF(gf_batchnorm_fwd_train(ctx, &x, NULL, NULL, NULL, NULL, &bp, &xh,
                                &mean, &var, &e) == GF_OK,
         "%s", e.msg);
  KT_VS_TORCH("ccbn xhat", &xh, &txh, 1e-5, 1e-5, 0.0, NULL);
  CHECK(gf_channel_affine_fwd(ctx, &xh, &gain, &bias, &y, &e) == GF_OK);
  KT_VS_TORCH("ccbn y", &y, &ty, 1e-5, 1e-5, 0.0, NULL);
  CHECK(gf_channel_affine_bwd(ctx, &xh, &gain, &dy, &dxh, &dg, &db, &e) ==
        GF_OK);
  CHECKF(gf_batchnorm_bwd(ctx, &x, NULL, &mean, &var, 1e-5f, &dxh, &dx, NULL,
                          NULL, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  KT_VS_TORCH("ccbn dx", &dx, &tdx, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("ccbn dgain", &dg, &tdg, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("ccbn dbias", &db, &tdb, 0.0, 1e-5, 1e-5, NULL);
  free(rg);
  free(rb);
  free(mg);
  free(mb);
  free(tg);
  free(tb);
  gf_tensor *all[] = {&x,   &gain, &bias, &dy, &txh, &ty, &tdx, &tdxh, &tdg,
                      &tdb, &y,    &dxh,  &dx, &xh,  &dg, &db,  &mean, &var};
  for (size_t i = 0; i < 18; i++) gf_tensor_free(all[i]);
}

/* [N, C] (S = 1): everything bit-exact, in place too. */
static void test_affine2_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor x = kt_gold(f, "aff2.x", KT_GOLD_I32),
            gain = kt_gold(f, "aff2.gain", KT_GOLD_I32);
  gf_tensor bias = kt_gold(f, "aff2.bias", KT_GOLD_I32),
            dy = kt_gold(f, "aff2.dy", KT_GOLD_I32);
  gf_tensor ty = kt_gold(f, "aff2.y", KT_GOLD_I32),
            tdx = kt_gold(f, "aff2.dx", KT_GOLD_I32);
  gf_tensor tdg = kt_gold(f, "aff2.dgain", KT_GOLD_I32),
            tdb = kt_gold(f, "aff2.dbias", KT_GOLD_I32);
  gf_tensor y = kt_clone(&x), dx = kt_clone(&x), dg = kt_clone(&gain),
            db = kt_clone(&gain);
  gf_err e = {0};
  CHECKF(gf_channel_affine_fwd(ctx, &x, &gain, &bias, &y, &e) == GF_OK, "%s",
         e.msg);
  exact_fires("aff2 y", &y, &ty);
  CHECKF(gf_channel_affine_bwd(ctx, &x, &gain, &dy, &dx, &dg, &db, &e) == GF_OK,
         "%s", e.msg);
  exact_fires("aff2 dx", &dx, &tdx);
  exact_fires("aff2 dgain", &dg, &tdg);
  exact_fires("aff2 dbias", &db, &tdb);
  /* in place: y = x, dx = dy */
  gf_tensor xi = kt_clone(&x), dyi = kt_clone(&dy);
  CHECK(gf_channel_affine_fwd(ctx, &xi, &gain, &bias, &xi, &e) == GF_OK);
  CHECK(kt_same_bits(&xi, &ty));
  CHECK(gf_channel_affine_bwd(ctx, &x, &gain, &dyi, &dyi, &dg, &db, &e) ==
        GF_OK);
  CHECK(kt_same_bits(&dyi, &tdx) && kt_same_bits(&dg, &tdg) &&
        kt_same_bits(&db, &tdb));
  /* no bias: y = x gain */
  CHECK(gf_channel_affine_fwd(ctx, &x, &gain, NULL, &y, &e) == GF_OK);
  const float *xp = x.data, *gp = gain.data, *yp = y.data;
  bool ok = true;
  for (int64_t i = 0; i < gf_tensor_numel(&x); i++)
    ok &= yp[i] == xp[i] * gp[i];
  CHECK(ok);
  gf_tensor *all[] = {&x,   &gain, &bias, &dy, &ty, &tdx, &tdg,
                      &tdb, &y,    &dx,   &dg, &db, &xi,  &dyi};
  for (size_t i = 0; i < 14; i++) gf_tensor_free(all[i]);
}

/* NCHW above the threading threshold: 1 vs 4 threads, the references, NULL
 * outputs (each alone gives the same bits), dx = dy. */
static void test_affine_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t N = 16, C = 24, H = 20, W = 19, P = N * C, S = H * W;
  gf_tensor x = kt_tensor(4, N, C, H, W), dy = kt_tensor(4, N, C, H, W);
  gf_tensor gain = kt_tensor(2, N, C, 1, 1), bias = kt_tensor(2, N, C, 1, 1);
  kt_fill(&x, rng, -2.0, 2.0, 0.0);
  kt_fill(&dy, rng, -1.0, 1.0, 0.0);
  kt_fill(&gain, rng, 0.5, 1.5, 0.0);
  kt_fill(&bias, rng, -0.5, 0.5, 0.0);
  gf_tensor y = kt_clone(&x), y4 = kt_clone(&x), dx = kt_clone(&x),
            dx4 = kt_clone(&x);
  gf_tensor dg = kt_clone(&gain), db = kt_clone(&gain), dg4 = kt_clone(&gain);
  gf_tensor db4 = kt_clone(&gain);
  gf_err e = {0};
  CHECK(gf_channel_affine_fwd(ctx, &x, &gain, &bias, &y, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(ctx4, &x, &gain, &bias, &y4, &e) == GF_OK);
  CHECK(kt_same_bits(&y, &y4));
  const float *xp = x.data, *gp = gain.data, *bp = bias.data, *yp = y.data;
  bool ok = true;
  for (int64_t i = 0; i < P * S; i++) {
    float t = xp[i] * gp[i / S];
    float want = t + bp[i / S];
    ok &= memcmp(&yp[i], &want, 4) == 0;
  }
  CHECK(ok);
  CHECK(gf_channel_affine_bwd(ctx, &x, &gain, &dy, &dx, &dg, &db, &e) == GF_OK);
  CHECK(gf_channel_affine_bwd(ctx4, &x, &gain, &dy, &dx4, &dg4, &db4, &e) ==
        GF_OK);
  CHECK(kt_same_bits(&dx, &dx4) && kt_same_bits(&dg, &dg4) &&
        kt_same_bits(&db, &db4));
  double *rg = kt_dzeros((size_t)P), *rb = kt_dzeros((size_t)P);
  double *mg = kt_dzeros((size_t)P), *mb = kt_dzeros((size_t)P);
  ref_affine_sums(x.data, dy.data, P, S, rg, rb, mg, mb);
  cmp_sum("affine large dgain ref", dg.data, rg, mg, (size_t)P, 0x1p-40);
  cmp_sum("affine large dbias ref", db.data, rb, mb, (size_t)P, 0x1p-40);
  /* each output alone */
  kt_fill(&dx4, rng, -1.0, 1.0, 0.0);
  kt_fill(&dg4, rng, -1.0, 1.0, 0.0);
  kt_fill(&db4, rng, -1.0, 1.0, 0.0);
  CHECK(gf_channel_affine_bwd(ctx4, &x, &gain, &dy, &dx4, NULL, NULL, &e) ==
        GF_OK);
  CHECK(gf_channel_affine_bwd(ctx4, &x, &gain, &dy, NULL, &dg4, NULL, &e) ==
        GF_OK);
  CHECK(gf_channel_affine_bwd(ctx4, &x, &gain, &dy, NULL, NULL, &db4, &e) ==
        GF_OK);
  CHECK(kt_same_bits(&dx, &dx4) && kt_same_bits(&dg, &dg4) &&
        kt_same_bits(&db, &db4));
  /* dx = dy */
  CHECK(gf_channel_affine_bwd(ctx4, &x, &gain, &dy, &dy, &dg4, &db4, &e) ==
        GF_OK);
  CHECK(kt_same_bits(&dy, &dx) && kt_same_bits(&dg, &dg4) &&
        kt_same_bits(&db, &db4));
  free(rg);
  free(rb);
  free(mg);
  free(mb);
  gf_tensor *all[] = {&x,  &dy,  &gain, &bias, &y,   &y4,
                      &dx, &dx4, &dg,   &db,   &dg4, &db4};
  for (size_t i = 0; i < 12; i++) gf_tensor_free(all[i]);
}

/* ---- rowdot and the projection head -------------------------------------- */

static void test_rowdot_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor a = kt_gold(f, "rowdot.a", KT_GOLD_I32),
            b = kt_gold(f, "rowdot.b", KT_GOLD_I32);
  gf_tensor y0 = kt_gold(f, "rowdot.y0", KT_GOLD_I32),
            dy = kt_gold(f, "rowdot.dy", KT_GOLD_I32);
  gf_tensor ty = kt_gold(f, "rowdot.y", KT_GOLD_I32),
            tya = kt_gold(f, "rowdot.y_acc", KT_GOLD_I32);
  gf_tensor tda = kt_gold(f, "rowdot.da", KT_GOLD_I32),
            tdb = kt_gold(f, "rowdot.db", KT_GOLD_I32);
  int64_t N = a.shape[0], D = a.shape[1];
  gf_tensor y = kt_clone(&y0), da = kt_clone(&a), db = kt_clone(&b);
  double *ry = kt_dzeros((size_t)N), *mag = kt_dzeros((size_t)N);
  ref_rowdot(a.data, b.data, N, D, ry, mag);
  double *tol = kt_dzeros((size_t)N);
  for (int64_t n = 0; n < N; n++) tol[n] = 4 * 0x1p-24 * mag[n];
  gf_err e = {0};
  CHECKF(gf_rowdot_fwd(ctx, &a, &b, &y, GF_OVERWRITE, &e) == GF_OK, "%s",
         e.msg);
  CHECK(kt_misses("rowdot y", &y, &ty, 0.0, 0.0, 0.0, tol, true) == 0);
  cmp_sum("rowdot y ref", y.data, ry, mag, (size_t)N, 0x1p-40);
  /* accumulate onto y0; a 1-D y too */
  gf_tensor y1;
  REQUIRE(gf_tensor_reshape_view(&y1, &y, 1, &N, &e) == GF_OK);
  memcpy(y.data, y0.data, gf_tensor_nbytes(&y0));
  CHECK(gf_rowdot_fwd(ctx, &a, &b, &y1, GF_ACCUMULATE, &e) == GF_OK);
  for (int64_t n = 0; n < N; n++)
    tol[n] = 4 * 0x1p-24 * (mag[n] + fabs((double)((float *)y0.data)[n]));
  CHECK(kt_misses("rowdot y accumulated", &y, &tya, 0.0, 0.0, 0.0, tol, true) ==
        0);
  CHECKF(gf_rowdot_bwd(ctx, &a, &b, &dy, &da, &db, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  exact_fires("rowdot da", &da, &tda);
  exact_fires("rowdot db", &db, &tdb);
  free(ry);
  free(mag);
  free(tol);
  gf_tensor *all[] = {&a, &b, &y0, &dy, &ty, &tya, &tda, &tdb, &y, &da, &db};
  for (size_t i = 0; i < 11; i++) gf_tensor_free(all[i]);
}

/* out = linear(h, w, bias) + rowdot(embed(labels), h); back through
 * linear_bwd, rowdot_bwd (de overwritten, dh accumulated onto the
 * linear's) and embedding_bwd. */
static void test_projection_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor h = kt_gold(f, "proj.h", KT_GOLD_I32),
            w = kt_gold(f, "proj.w", KT_GOLD_I32);
  gf_tensor bias = kt_gold(f, "proj.bias", KT_GOLD_I32),
            table = kt_gold(f, "proj.table", KT_GOLD_I32);
  gf_tensor labels = kt_gold(f, "proj.labels", KT_GOLD_I32),
            dout = kt_gold(f, "proj.dout", KT_GOLD_I32);
  gf_tensor tout = kt_gold(f, "proj.out", KT_GOLD_I32),
            tdh = kt_gold(f, "proj.dh", KT_GOLD_I32);
  gf_tensor tdw = kt_gold(f, "proj.dw", KT_GOLD_I32),
            tdb = kt_gold(f, "proj.dbias", KT_GOLD_I32);
  gf_tensor tdt = kt_gold(f, "proj.dtable", KT_GOLD_I32);
  int64_t N = h.shape[0], Fe = h.shape[1], K = table.shape[0];
  gf_tensor out = kt_tensor(2, N, 1, 1, 1), e_ = kt_tensor(2, N, Fe, 1, 1);
  gf_tensor dh = kt_clone(&h), de = kt_clone(&e_), dw = kt_clone(&w);
  gf_tensor db = kt_clone(&bias), dt = kt_tensor(2, K, Fe, 1, 1);
  gf_err e = {0};
  CHECK(gf_linear_fwd(ctx, &h, &w, &bias, &out, &e) == GF_OK);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &e_, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(ctx, &e_, &h, &out, GF_ACCUMULATE, &e) == GF_OK);
  KT_VS_TORCH("proj out", &out, &tout, 0.0, 1e-5, 1e-5, NULL);
  CHECK(gf_linear_bwd(ctx, &h, &w, &dout, &dh, &dw, &db, GF_OVERWRITE, &e) ==
        GF_OK);
  /* de = dout h (a fresh gradient: de starts as garbage), dh += dout e */
  kt_rng r = {17};
  kt_fill(&de, &r, -1.0, 1.0, 0.0);
  CHECK(gf_rowdot_bwd(ctx, &e_, &h, &dout, &de, NULL, GF_OVERWRITE, &e) ==
        GF_OK);
  CHECK(gf_rowdot_bwd(ctx, &e_, &h, &dout, NULL, &dh, GF_ACCUMULATE, &e) ==
        GF_OK);
  CHECK(gf_embedding_bwd(ctx, &labels, &de, &dt, GF_OVERWRITE, &e) == GF_OK);
  KT_VS_TORCH("proj dh", &dh, &tdh, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("proj dw", &dw, &tdw, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("proj dbias", &db, &tdb, 0.0, 1e-5, 1e-5, NULL);
  exact_fires("proj dtable", &dt, &tdt);
  gf_tensor *all[] = {&h,    &w,   &bias, &table, &labels, &dout,
                      &tout, &tdh, &tdw,  &tdb,   &tdt,    &out,
                      &e_,   &dh,  &de,   &dw,    &db,     &dt};
  for (size_t i = 0; i < 18; i++) gf_tensor_free(all[i]);
}

/* [512, 300] and [300, 1000]: 1 vs 4 threads, the reference, accumulate =
 * old + overwrite. */
static void test_rowdot_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t shapes[2][2] = {{512, 300}, {300, 1000}};
  for (int c = 0; c < 2; c++) {
    int64_t N = shapes[c][0], D = shapes[c][1];
    gf_tensor a = kt_tensor(2, N, D, 1, 1), b = kt_tensor(2, N, D, 1, 1);
    gf_tensor y = kt_tensor(2, N, 1, 1, 1), y4 = kt_tensor(2, N, 1, 1, 1);
    gf_tensor dy = kt_tensor(2, N, 1, 1, 1);
    kt_fill(&a, rng, -1.0, 1.0, 0.0);
    kt_fill(&b, rng, -1.0, 1.0, 0.0);
    kt_fill(&dy, rng, -1.0, 1.0, 0.0);
    gf_err e = {0};
    CHECK(gf_rowdot_fwd(ctx, &a, &b, &y, GF_OVERWRITE, &e) == GF_OK);
    CHECK(gf_rowdot_fwd(ctx4, &a, &b, &y4, GF_OVERWRITE, &e) == GF_OK);
    CHECK(kt_same_bits(&y, &y4));
    double *ry = kt_dzeros((size_t)N), *mag = kt_dzeros((size_t)N);
    ref_rowdot(a.data, b.data, N, D, ry, mag);
    cmp_sum("rowdot large ref", y.data, ry, mag, (size_t)N, 0x1p-40);
    kt_fill(&y4, rng, -1.0, 1.0, 0.0);
    gf_tensor want = kt_clone(&y4);
    for (int64_t n = 0; n < N; n++)
      ((float *)want.data)[n] += ((float *)y.data)[n];
    CHECK(gf_rowdot_fwd(ctx4, &a, &b, &y4, GF_ACCUMULATE, &e) == GF_OK);
    CHECK(kt_same_bits(&y4, &want));
    gf_tensor da = kt_clone(&a), db = kt_clone(&a), da4 = kt_clone(&a),
              db4 = kt_clone(&a);
    CHECK(gf_rowdot_bwd(ctx, &a, &b, &dy, &da, &db, GF_OVERWRITE, &e) == GF_OK);
    CHECK(gf_rowdot_bwd(ctx4, &a, &b, &dy, &da4, NULL, GF_OVERWRITE, &e) ==
          GF_OK);
    CHECK(gf_rowdot_bwd(ctx4, &a, &b, &dy, NULL, &db4, GF_OVERWRITE, &e) ==
          GF_OK);
    CHECK(kt_same_bits(&da, &da4) && kt_same_bits(&db, &db4));
    const float *bp = b.data, *gp = dy.data, *dap = da.data;
    bool ok = true;
    for (int64_t i = 0; i < N * D; i++) ok &= dap[i] == gp[i / D] * bp[i];
    CHECK(ok);
    kt_fill(&da4, rng, -1.0, 1.0, 0.0);
    gf_tensor wa = kt_clone(&da4);
    float *wp = wa.data;
    for (int64_t i = 0; i < N * D; i++) wp[i] += ((float *)db.data)[i];
    CHECK(gf_rowdot_bwd(ctx4, &a, &b, &dy, NULL, &da4, GF_ACCUMULATE, &e) ==
          GF_OK);
    CHECK(kt_same_bits(&da4, &wa));
    free(ry);
    free(mag);
    gf_tensor *all[] = {&a, &b, &y, &y4, &dy, &want, &da, &db, &da4, &db4, &wa};
    for (size_t i = 0; i < 11; i++) gf_tensor_free(all[i]);
  }
}

/* ---- argument errors ----------------------------------------------------- */

static void test_errors(gf_ctx *ctx) {
  gf_err e = {0};
  int64_t K = 4, D = 3, N = 5;
  gf_tensor table = kt_tensor(2, K, D, 1, 1), labels = labels_tensor(N);
  gf_tensor y = kt_tensor(2, N, D, 1, 1), dy = kt_tensor(2, N, D, 1, 1);
  gf_tensor dt = kt_tensor(2, K, D, 1, 1), flab = kt_tensor(1, N, 1, 1, 1);
  gf_tensor y6 = kt_tensor(2, N + 1, D, 1, 1), t1 = kt_tensor(1, K, 1, 1, 1);
  gf_tensor lab2;
  int64_t l2[2] = {N, 1};
  REQUIRE(gf_tensor_init(&lab2, GF_I32, GF_DEV_CPU, 2, l2, &e) == GF_OK);
  /* embedding */
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &y, &e) == GF_OK);
  CHECK(gf_embedding_fwd(NULL, &table, &labels, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, NULL, &labels, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &table, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, NULL, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &table, &flab, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "i32") != NULL);
  CHECK(gf_embedding_fwd(ctx, &table, &lab2, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &y6, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &t1, &labels, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &table, &e) == GF_EINVAL);
  gf_tensor yl; /* y's first row over the labels' bytes */
  REQUIRE(gf_tensor_view(&yl, labels.data, GF_F32, GF_DEV_CPU, 2,
                         (int64_t[]){N, D}, &e) == GF_OK);
  CHECK(gf_embedding_fwd(ctx, &table, &labels, &yl, &e) == GF_EINVAL);
  gf_tensor f16 = table;
  f16.dtype = GF_F16;
  CHECK(gf_embedding_fwd(ctx, &f16, &labels, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor ldev = labels;
  ldev.device = GF_DEV_CUDA;
  CHECK(gf_embedding_fwd(ctx, &table, &ldev, &y, &e) == GF_EINVAL);
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, &dt, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, &dt, (gf_accum)3, &e) == GF_EINVAL);
  CHECK(gf_embedding_bwd(ctx, &labels, &y6, &dt, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, NULL, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_embedding_bwd(ctx, &labels, &dy, &dy, GF_OVERWRITE, &e) ==
        GF_EINVAL); /* dtable is dy */
  CHECK(gf_embedding_bwd(ctx, &flab, &dy, &dt, GF_OVERWRITE, &e) == GF_EINVAL);
  /* empty batch: y nothing, dtable zeroed (overwrite) */
  gf_tensor l0 = labels_tensor(0), y0 = kt_tensor(2, 0, D, 1, 1);
  CHECK(gf_embedding_fwd(ctx, &table, &l0, &y0, &e) == GF_OK);
  kt_rng r = {3};
  kt_fill(&dt, &r, 1.0, 2.0, 0.0);
  CHECK(gf_embedding_bwd(ctx, &l0, &y0, &dt, GF_OVERWRITE, &e) == GF_OK);
  bool zero = true;
  for (int64_t i = 0; i < K * D; i++) zero &= ((float *)dt.data)[i] == 0.0f;
  CHECK(zero);
  /* affine: x [2,3,2,2], gain [2,3] */
  gf_tensor x = kt_tensor(4, 2, 3, 2, 2), g = kt_tensor(2, 2, 3, 1, 1);
  gf_tensor bi = kt_tensor(2, 2, 3, 1, 1), ya = kt_tensor(4, 2, 3, 2, 2);
  gf_tensor g32 = kt_tensor(2, 3, 2, 1, 1), x1 = kt_tensor(1, 6, 1, 1, 1);
  gf_tensor dxa = kt_tensor(4, 2, 3, 2, 2), dg = kt_tensor(2, 2, 3, 1, 1);
  gf_tensor dba = kt_tensor(2, 2, 3, 1, 1), yb = kt_tensor(4, 2, 3, 4, 1);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g, &bi, &ya, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g, NULL, &ya, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g32, &bi, &ya, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g, &g32, &ya, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &x1, &g, &bi, &x1, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g, &bi, &yb, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &x, NULL, &bi, &ya, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &x, &g, &bi, NULL, &e) == GF_EINVAL);
  gf_tensor xs; /* x shifted by one element: partial overlap */
  REQUIRE(gf_tensor_view(&xs, (float *)x.data + 1, GF_F32, GF_DEV_CPU, 4,
                         (int64_t[]){2, 3, 2, 1}, &e) == GF_OK);
  gf_tensor xh; /* x's first half with xs's shape */
  REQUIRE(gf_tensor_view(&xh, x.data, GF_F32, GF_DEV_CPU, 4,
                         (int64_t[]){2, 3, 2, 1}, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(ctx, &xh, &g, &bi, &xs, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_fwd(ctx, &xh, &g, &bi, &xh, &e) == GF_OK);
  gf_tensor gx; /* gain inside y */
  REQUIRE(gf_tensor_view(&gx, ya.data, GF_F32, GF_DEV_CPU, 2, (int64_t[]){2, 3},
                         &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(ctx, &x, &gx, &bi, &ya, &e) == GF_EINVAL);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &dxa, &dg, &dba, &e) == GF_OK);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, NULL, NULL, NULL, &e) == GF_OK);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &ya, &dg, &dba, &e) ==
        GF_OK); /* dx = dy */
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &x, &dg, &dba, &e) ==
        GF_EINVAL); /* dx = x */
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &dxa, &dg, &dg, &e) ==
        GF_EINVAL);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &dxa, &g, &dba, &e) ==
        GF_EINVAL);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &dxa, &g32, &dba, &e) ==
        GF_EINVAL);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &yb, &dxa, &dg, &dba, &e) ==
        GF_EINVAL);
  CHECK(gf_channel_affine_bwd(ctx, &x, &g, &ya, &yb, &dg, &dba, &e) ==
        GF_EINVAL);
  /* rowdot: a, b [5,3] */
  gf_tensor ra = kt_tensor(2, N, D, 1, 1), rb = kt_tensor(2, N, D, 1, 1);
  gf_tensor ry = kt_tensor(2, N, 1, 1, 1), ry1 = kt_tensor(1, N, 1, 1, 1);
  gf_tensor ry2 = kt_tensor(2, N, 2, 1, 1), rb4 = kt_tensor(2, N, 4, 1, 1);
  gf_tensor rda = kt_tensor(2, N, D, 1, 1), rdb = kt_tensor(2, N, D, 1, 1);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb, &ry, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb, &ry1, GF_ACCUMULATE, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb, &ry2, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb4, &ry, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb, &ry, (gf_accum)2, &e) == GF_EINVAL);
  CHECK(gf_rowdot_fwd(ctx, &x, &x, &ry, GF_OVERWRITE, &e) == GF_EINVAL);
  gf_tensor ya_in; /* y over a's first elements */
  REQUIRE(gf_tensor_view(&ya_in, ra.data, GF_F32, GF_DEV_CPU, 1, &N, &e) ==
          GF_OK);
  CHECK(gf_rowdot_fwd(ctx, &ra, &rb, &ya_in, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry, &rda, &rdb, GF_OVERWRITE, &e) ==
        GF_OK);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry, NULL, NULL, GF_OVERWRITE, &e) ==
        GF_OK);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry, &rda, &rda, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry, &ra, &rdb, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry2, &rda, &rdb, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, &ry, &rb4, NULL, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_rowdot_bwd(ctx, &ra, &rb, NULL, &rda, &rdb, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  gf_tensor *all[] = {&table, &labels, &y,   &dy,  &dt, &flab, &y6, &t1,
                      &lab2,  &l0,     &y0,  &x,   &g,  &bi,   &ya, &g32,
                      &x1,    &dxa,    &dg,  &dba, &yb, &ra,   &rb, &ry,
                      &ry1,   &ry2,    &rb4, &rda, &rdb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    gf_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_COND_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {9090};
  test_embedding_golden(&ctx4, &f);
  test_embedding_large(&ctx, &ctx4, &rng);
  test_bad_labels(&ctx);
  test_ccbn_golden(&ctx4, &f);
  test_affine2_golden(&ctx, &f);
  test_affine_large(&ctx, &ctx4, &rng);
  test_rowdot_golden(&ctx, &f);
  test_projection_golden(&ctx4, &f);
  test_rowdot_large(&ctx, &ctx4, &rng);
  test_errors(&ctx);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
