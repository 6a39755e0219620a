/* test_cuda_cond_ops.c - the class-conditioning ops on the CUDA backend
 * (label gpu; exits 77 where there is no GPU): gf_embedding_fwd/bwd,
 * gf_channel_affine_fwd/bwd, gf_rowdot_fwd/bwd against the CPU twin and
 * against PyTorch's numbers (golden/cond.safetensors, as test_cond_ops.c).
 * Against the CPU: bit for bit, every op. Both backends sum the embedding
 * gradient in f32 in increasing n and every other sum in the lane order of
 * kernels/src/reduce_order.h, and round every f32 operation alike (no FMA
 * contraction), so any difference is a bug.
 * Against PyTorch: test_cond_ops.c's tolerances (embedding, affine y and
 * dx, rowdot da / db, the projection's dtable bit-exact; the sums within
 * 4 ulp of their sum of |terms|; the compositions through batch norm and
 * linear 1e-5).
 * Cases: the goldens (embedding with repeated labels, both accum modes;
 * the ccbn affine on PyTorch's xhat; the affine on [N, C]; rowdot with
 * accumulation; the projection head through linear + embedding + rowdot),
 * then large ones, each run twice for identical bits: the embedding at
 * K = 1000, N = 256, D = 128 (BigGAN's shared embedding; heavy repeats of a
 * few classes) and at K = 7, N = 1000, D = 300 (several column blocks, long
 * runs of each class), both accum modes; the affine on [64, 256, 8, 8] and
 * [8, 32, 33, 33] (planes longer than the 256 lanes) with each output alone
 * and dx = dy, in place forward; rowdot on [256, 1024] and [1000, 37];
 * labels outside [0, K) on the device (not checked there: NaN rows
 * forward, nothing backward, the CPU backend's bits); a host tensor on the
 * CUDA ctx refused.
 * Argument 1: the golden file (default GF_COND_GOLDEN, the source tree's,
 * from CMake). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "gf/safetensors.h"
#include "kt_cuda.h"
#include "kt_util.h"

#ifndef GF_COND_GOLDEN
#define GF_COND_GOLDEN "cond.safetensors"
#endif

static gf_ctx cpu, gpu;
static kt_rng rng = {5151};

/* ---- twins: a host tensor and its device copy, any dtype ---------------- */

typedef struct twin {
  gf_tensor h, d;
} twin;

static twin tw_of(const gf_tensor *h) {
  twin t;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&t.h, h->dtype, GF_DEV_CPU, h->ndim, h->shape, &e) ==
          GF_OK);
  memcpy(t.h.data, h->data, gf_tensor_nbytes(h));
  REQUIRE(gf_tensor_init(&t.d, h->dtype, GF_DEV_CUDA, h->ndim, h->shape, &e) ==
          GF_OK);
  REQUIRE(gf_tensor_copy(&t.d, &t.h, &e) == GF_OK);
  return t;
}
static twin tw_rnd(int ndim, int64_t a, int64_t b, int64_t c, int64_t d,
                   double lo, double hi) {
  gf_tensor h = kt_tensor(ndim, a, b, c, d);
  kt_fill(&h, &rng, lo, hi, 0.0);
  twin t = tw_of(&h);
  gf_tensor_free(&h);
  return t;
}
/* N labels in [0, K): uniform, or (heavy) every third one of the classes
 * 0..4 (long runs of a few classes), the rest uniform. */
static twin tw_labels(int64_t N, int64_t K, int heavy) {
  gf_tensor h;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&h, GF_I32, GF_DEV_CPU, 1, &N, &e) == GF_OK);
  int32_t *L = h.data;
  for (int64_t n = 0; n < N; n++)
    L[n] = heavy && n % 3 == 0 ? (int32_t)(n % 5)
                               : (int32_t)kt_uniform(&rng, 0, (double)K);
  twin t = tw_of(&h);
  gf_tensor_free(&h);
  return t;
}
static void tw_free(twin *t) {
  gf_tensor_free(&t->h);
  gf_tensor_free(&t->d);
}
/* Both halves from the host values of src. */
static void tw_set(twin *t, const gf_tensor *src) {
  gf_err e = {0};
  REQUIRE(gf_tensor_nbytes(src) == gf_tensor_nbytes(&t->h));
  memcpy(t->h.data, src->data, gf_tensor_nbytes(src));
  REQUIRE(gf_tensor_copy(&t->d, &t->h, &e) == GF_OK);
}
/* The device half equals the host half bit for bit. */
static void same(const char *label, const twin *t) {
  size_t nb = kt_diff_bytes(&t->d, &t->h);
  if (nb) (void)kt_cmp_dev(label, &t->d, &t->h, (kt_tol){0.0, 0.0});
  CHECKF(nb == 0, "%s: CUDA differs from the CPU in %zu bytes", label, nb);
}

/* ---- golden -------------------------------------------------------------- */

static gf_tensor gold(const gf_st_file *f, const char *name) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t || (t->dtype != GF_ST_F32 && t->dtype != GF_ST_I32) || t->ndim < 1 ||
      t->ndim > 4) {
    fprintf(stderr, "golden: %s missing or not f32/i32 with 1..4 dims\n", name);
    exit(1);
  }
  gf_tensor g;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&g, t->dtype == GF_ST_I32 ? GF_I32 : GF_F32,
                         GF_DEV_CPU, t->ndim, t->shape, &e) == GF_OK);
  REQUIRE(gf_tensor_nbytes(&g) == t->nbytes);
  memcpy(g.data, t->data, t->nbytes);
  return g;
}
static twin tw_gold(const gf_st_file *f, const char *name) {
  gf_tensor g = gold(f, name);
  twin t = tw_of(&g);
  gf_tensor_free(&g);
  return t;
}

/* The device tensor against PyTorch's want: |d| <= atol + rtol |t| +
 * srel max|t| + tol[i] (tol may be NULL), or bit-exact with atol < 0. */
static void vs_torch(const char *what, const gf_tensor *dev,
                     const gf_tensor *want, double atol, double rtol,
                     double srel, const double *tol) {
  gf_tensor h = kt_to_host(dev);
  REQUIRE(gf_tensor_numel(&h) == gf_tensor_numel(want));
  const float *g = h.data, *t = want->data;
  size_t n = (size_t)gf_tensor_numel(&h), bad = 0;
  double tmax = 0.0;
  for (size_t i = 0; i < n; i++) tmax = fmax(tmax, fabs((double)t[i]));
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - (double)t[i]);
    bool ok = atol < 0 ? memcmp(&g[i], &t[i], 4) == 0
                       : d <= atol + rtol * fabs((double)t[i]) + srel * tmax +
                                  (tol ? tol[i] : 0.0);
    if (!ok && bad++ < 3)
      fprintf(stderr, "  %s[%zu]: %.9g vs PyTorch %.9g\n", what, i, g[i], t[i]);
  }
  CHECKF(bad == 0, "%s: %zu of %zu outside tolerance", what, bad, n);
  gf_tensor_free(&h);
}
#define EXACT -1.0, 0.0, 0.0, NULL

/* 4 ulp of the sum of |x_i y_i| (y NULL: |x_i|) over each plane of S. */
static double *sum_tol(const float *x, const float *y, int64_t P, int64_t S) {
  double *t = kt_dzeros((size_t)P);
  for (int64_t p = 0; p < P; p++) {
    for (int64_t s = 0; s < S; s++)
      t[p] += fabs((double)x[p * S + s] * (y ? (double)y[p * S + s] : 1.0));
    t[p] *= 4 * 0x1p-24;
  }
  return t;
}

static void test_embedding_golden(const gf_st_file *f) {
  twin table = tw_gold(f, "emb.table"), labels = tw_gold(f, "emb.labels");
  twin dy = tw_gold(f, "emb.dy");
  gf_tensor g0 = gold(f, "emb.g0"), ty = gold(f, "emb.y");
  gf_tensor tdt = gold(f, "emb.dtable"), tda = gold(f, "emb.dtable_acc");
  int64_t K = table.h.shape[0], D = table.h.shape[1], N = labels.h.shape[0];
  twin y = tw_rnd(2, N, D, 1, 1, -1, 1), dt = tw_rnd(2, K, D, 1, 1, -1, 1);
  gf_err e = {0};
  REQUIRE(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
         e.msg);
  same("emb y", &y);
  vs_torch("emb y", &y.d, &ty, EXACT);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_OVERWRITE, &e) ==
          GF_OK);
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_OVERWRITE, &e) ==
             GF_OK,
         "%s", e.msg);
  same("emb dtable", &dt);
  vs_torch("emb dtable", &dt.d, &tdt, EXACT);
  tw_set(&dt, &g0);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_ACCUMULATE, &e) ==
          GF_OK);
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_ACCUMULATE, &e) ==
             GF_OK,
         "%s", e.msg);
  same("emb dtable accumulated", &dt);
  vs_torch("emb dtable accumulated", &dt.d, &tda, EXACT);
  twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) tw_free(tws[i]);
  gf_tensor *all[] = {&g0, &ty, &tdt, &tda};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static void test_affine_golden(const gf_st_file *f) {
  /* ccbn: the affine on PyTorch's xhat */
  twin xh = tw_gold(f, "ccbn.xhat"), gain = tw_gold(f, "ccbn.gain");
  twin bias = tw_gold(f, "ccbn.bias"), dy = tw_gold(f, "ccbn.dy");
  gf_tensor ty = gold(f, "ccbn.y"), tdxh = gold(f, "ccbn.dxhat");
  gf_tensor tdg = gold(f, "ccbn.dgain"), tdb = gold(f, "ccbn.dbias");
  int64_t N = xh.h.shape[0], C = xh.h.shape[1];
  int64_t S = xh.h.shape[2] * xh.h.shape[3];
  twin y = tw_of(&xh.h), dx = tw_of(&xh.h), dg = tw_of(&gain.h);
  twin db = tw_of(&gain.h);
  gf_err e = {0};
  REQUIRE(gf_channel_affine_fwd(&cpu, &xh.h, &gain.h, &bias.h, &y.h, &e) ==
          GF_OK);
  CHECKF(gf_channel_affine_fwd(&gpu, &xh.d, &gain.d, &bias.d, &y.d, &e) ==
             GF_OK,
         "%s", e.msg);
  same("ccbn y", &y);
  vs_torch("ccbn y", &y.d, &ty, EXACT);
  REQUIRE(gf_channel_affine_bwd(&cpu, &xh.h, &gain.h, &dy.h, &dx.h, &dg.h,
                                &db.h, &e) == GF_OK);
  CHECKF(gf_channel_affine_bwd(&gpu, &xh.d, &gain.d, &dy.d, &dx.d, &dg.d, &db.d,
                               &e) == GF_OK,
         "%s", e.msg);
  same("ccbn dxhat", &dx);
  same("ccbn dgain", &dg);
  same("ccbn dbias", &db);
  vs_torch("ccbn dxhat", &dx.d, &tdxh, EXACT);
  double *tg = sum_tol(dy.h.data, xh.h.data, N * C, S);
  double *tb = sum_tol(dy.h.data, NULL, N * C, S);
  vs_torch("ccbn dgain", &dg.d, &tdg, 0.0, 0.0, 0.0, tg);
  vs_torch("ccbn dbias", &db.d, &tdb, 0.0, 0.0, 0.0, tb);
  free(tg);
  free(tb);
  /* [N, C]: everything bit-exact */
  twin x2 = tw_gold(f, "aff2.x"), g2 = tw_gold(f, "aff2.gain");
  twin b2 = tw_gold(f, "aff2.bias"), dy2 = tw_gold(f, "aff2.dy");
  twin y2 = tw_of(&x2.h), dx2 = tw_of(&x2.h), dg2 = tw_of(&g2.h);
  twin db2 = tw_of(&g2.h);
  const char *nm[4] = {"aff2.y", "aff2.dx", "aff2.dgain", "aff2.dbias"};
  twin *got[4] = {&y2, &dx2, &dg2, &db2};
  REQUIRE(gf_channel_affine_fwd(&cpu, &x2.h, &g2.h, &b2.h, &y2.h, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(&gpu, &x2.d, &g2.d, &b2.d, &y2.d, &e) == GF_OK);
  REQUIRE(gf_channel_affine_bwd(&cpu, &x2.h, &g2.h, &dy2.h, &dx2.h, &dg2.h,
                                &db2.h, &e) == GF_OK);
  CHECK(gf_channel_affine_bwd(&gpu, &x2.d, &g2.d, &dy2.d, &dx2.d, &dg2.d,
                              &db2.d, &e) == GF_OK);
  for (int i = 0; i < 4; i++) {
    gf_tensor t = gold(f, nm[i]);
    same(nm[i], got[i]);
    vs_torch(nm[i], &got[i]->d, &t, EXACT);
    gf_tensor_free(&t);
  }
  twin *tws[] = {&xh, &gain, &bias, &dy,  &y,  &dx,  &dg,  &db,
                 &x2, &g2,   &b2,   &dy2, &y2, &dx2, &dg2, &db2};
  for (size_t i = 0; i < 16; i++) tw_free(tws[i]);
  gf_tensor *all[] = {&ty, &tdxh, &tdg, &tdb};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static void test_rowdot_golden(const gf_st_file *f) {
  twin a = tw_gold(f, "rowdot.a"), b = tw_gold(f, "rowdot.b");
  twin y = tw_gold(f, "rowdot.y0"), dy = tw_gold(f, "rowdot.dy");
  gf_tensor y0 = gold(f, "rowdot.y0"), ty = gold(f, "rowdot.y");
  gf_tensor tya = gold(f, "rowdot.y_acc"), tda = gold(f, "rowdot.da");
  gf_tensor tdb = gold(f, "rowdot.db");
  int64_t N = a.h.shape[0], D = a.h.shape[1];
  twin da = tw_of(&a.h), db = tw_of(&b.h);
  double *tol = kt_dzeros((size_t)N);
  const float *ap = a.h.data, *bp = b.h.data;
  for (int64_t n = 0; n < N; n++) {
    for (int64_t d = 0; d < D; d++)
      tol[n] += fabs((double)ap[n * D + d] * bp[n * D + d]);
    tol[n] *= 4 * 0x1p-24;
  }
  gf_err e = {0};
  REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, GF_ACCUMULATE, &e) == GF_OK);
  CHECKF(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, GF_ACCUMULATE, &e) == GF_OK,
         "%s", e.msg);
  same("rowdot y accumulated", &y);
  double *tol2 = kt_dzeros((size_t)N);
  for (int64_t n = 0; n < N; n++)
    tol2[n] = tol[n] + 4 * 0x1p-24 * fabs((double)((float *)y0.data)[n]);
  vs_torch("rowdot y accumulated", &y.d, &tya, 0.0, 0.0, 0.0, tol2);
  REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, GF_OVERWRITE, &e) == GF_OK);
  same("rowdot y", &y);
  vs_torch("rowdot y", &y.d, &ty, 0.0, 0.0, 0.0, tol);
  REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, &da.h, &db.h, GF_OVERWRITE,
                        &e) == GF_OK);
  CHECKF(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, &da.d, &db.d, GF_OVERWRITE,
                       &e) == GF_OK,
         "%s", e.msg);
  same("rowdot da", &da);
  same("rowdot db", &db);
  vs_torch("rowdot da", &da.d, &tda, EXACT);
  vs_torch("rowdot db", &db.d, &tdb, EXACT);
  free(tol);
  free(tol2);
  twin *tws[] = {&a, &b, &y, &dy, &da, &db};
  for (size_t i = 0; i < 6; i++) tw_free(tws[i]);
  gf_tensor *all[] = {&y0, &ty, &tya, &tda, &tdb};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
}

/* The projection head on the device: linear (cuBLAS) + embedding + rowdot,
 * back through linear_bwd, rowdot_bwd (de fresh, dh accumulated onto the
 * linear's) and embedding_bwd; the
 * linear's results are compared with PyTorch's at 1e-5, the embedding
 * gradient (dy h summed in order) bit for bit. */
static void test_projection_golden(const gf_st_file *f) {
  twin h = tw_gold(f, "proj.h"), w = tw_gold(f, "proj.w");
  twin bias = tw_gold(f, "proj.bias"), table = tw_gold(f, "proj.table");
  twin labels = tw_gold(f, "proj.labels"), dout = tw_gold(f, "proj.dout");
  gf_tensor tout = gold(f, "proj.out"), tdh = gold(f, "proj.dh");
  gf_tensor tdw = gold(f, "proj.dw"), tdb = gold(f, "proj.dbias");
  gf_tensor tdt = gold(f, "proj.dtable");
  int64_t N = h.h.shape[0], Fe = h.h.shape[1], K = table.h.shape[0];
  twin out = tw_rnd(2, N, 1, 1, 1, 0, 1), emb = tw_rnd(2, N, Fe, 1, 1, 0, 1);
  twin dh = tw_of(&h.h), de = tw_of(&emb.h), dw = tw_of(&w.h);
  twin db = tw_of(&bias.h), dt = tw_rnd(2, K, Fe, 1, 1, 0, 1);
  gf_err e = {0};
  CHECK(gf_linear_fwd(&gpu, &h.d, &w.d, &bias.d, &out.d, &e) == GF_OK);
  CHECK(gf_embedding_fwd(&gpu, &table.d, &labels.d, &emb.d, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(&gpu, &emb.d, &h.d, &out.d, GF_ACCUMULATE, &e) == GF_OK);
  vs_torch("proj out", &out.d, &tout, 0.0, 1e-5, 1e-5, NULL);
  CHECK(gf_linear_bwd(&gpu, &h.d, &w.d, &dout.d, &dh.d, &dw.d, &db.d,
                      GF_OVERWRITE, &e) == GF_OK);
  /* de = dout h (a fresh gradient), dh += dout e (onto the linear's) */
  CHECK(gf_rowdot_bwd(&gpu, &emb.d, &h.d, &dout.d, &de.d, NULL, GF_OVERWRITE,
                      &e) == GF_OK);
  CHECK(gf_rowdot_bwd(&gpu, &emb.d, &h.d, &dout.d, NULL, &dh.d, GF_ACCUMULATE,
                      &e) == GF_OK);
  CHECK(gf_embedding_bwd(&gpu, &labels.d, &de.d, &dt.d, GF_OVERWRITE, &e) ==
        GF_OK);
  vs_torch("proj dh", &dh.d, &tdh, 0.0, 1e-5, 1e-5, NULL);
  vs_torch("proj dw", &dw.d, &tdw, 0.0, 1e-5, 1e-5, NULL);
  vs_torch("proj dbias", &db.d, &tdb, 0.0, 1e-5, 1e-5, NULL);
  vs_torch("proj dtable", &dt.d, &tdt, EXACT);
  twin *tws[] = {&h,   &w,  &bias, &table, &labels, &dout, &out,
                 &emb, &dh, &de,   &dw,    &db,     &dt};
  for (size_t i = 0; i < 13; i++) tw_free(tws[i]);
  gf_tensor *all[] = {&tout, &tdh, &tdw, &tdb, &tdt};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
}

/* ---- large cases --------------------------------------------------------- */

static void embedding_case(int64_t K, int64_t N, int64_t D, int heavy) {
  twin table = tw_rnd(2, K, D, 1, 1, -1, 1), labels = tw_labels(N, K, heavy);
  twin dy = tw_rnd(2, N, D, 1, 1, -1, 1), y = tw_rnd(2, N, D, 1, 1, 0, 1);
  twin dt = tw_rnd(2, K, D, 1, 1, -1, 1);
  gf_err e = {0};
  REQUIRE(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_ACCUMULATE, &e) ==
          GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
           e.msg);
    same("emb large y", &y);
  }
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_ACCUMULATE, &e) ==
             GF_OK,
         "%s", e.msg);
  same("emb large dtable accumulated", &dt);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_OVERWRITE, &e) ==
          GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_OVERWRITE, &e) ==
               GF_OK,
           "%s", e.msg);
    same("emb large dtable", &dt);
  }
  twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) tw_free(tws[i]);
}

static void affine_case(int64_t N, int64_t C, int64_t H, int64_t W) {
  twin x = tw_rnd(4, N, C, H, W, -2, 2), dy = tw_rnd(4, N, C, H, W, -1, 1);
  twin g = tw_rnd(2, N, C, 1, 1, 0.5, 1.5), b = tw_rnd(2, N, C, 1, 1, -1, 1);
  twin y = tw_rnd(4, N, C, H, W, 0, 1), dx = tw_rnd(4, N, C, H, W, 0, 1);
  twin dg = tw_rnd(2, N, C, 1, 1, 0, 1), db = tw_rnd(2, N, C, 1, 1, 0, 1);
  gf_err e = {0};
  REQUIRE(gf_channel_affine_fwd(&cpu, &x.h, &g.h, &b.h, &y.h, &e) == GF_OK);
  REQUIRE(gf_channel_affine_bwd(&cpu, &x.h, &g.h, &dy.h, &dx.h, &dg.h, &db.h,
                                &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_channel_affine_fwd(&gpu, &x.d, &g.d, &b.d, &y.d, &e) == GF_OK,
           "%s", e.msg);
    same("affine large y", &y);
    CHECKF(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, &dx.d, &dg.d, &db.d,
                                 &e) == GF_OK,
           "%s", e.msg);
    same("affine large dx", &dx);
    same("affine large dgain", &dg);
    same("affine large dbias", &db);
  }
  /* each output alone */
  gf_tensor zero = kt_tensor(4, N, C, H, W);
  gf_tensor zg = kt_tensor(2, N, C, 1, 1);
  gf_tensor_copy(&dx.d, &zero, &e);
  gf_tensor_copy(&dg.d, &zg, &e);
  gf_tensor_copy(&db.d, &zg, &e);
  CHECK(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, &dx.d, NULL, NULL, &e) ==
        GF_OK);
  CHECK(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, NULL, &dg.d, NULL, &e) ==
        GF_OK);
  CHECK(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, NULL, NULL, &db.d, &e) ==
        GF_OK);
  same("affine large dx alone", &dx);
  same("affine large dgain alone", &dg);
  same("affine large dbias alone", &db);
  /* in place: y = x forward (no bias too), dx = dy backward */
  REQUIRE(gf_channel_affine_fwd(&cpu, &x.h, &g.h, NULL, &y.h, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(&gpu, &x.d, &g.d, NULL, &x.d, &e) == GF_OK);
  gf_tensor xd = kt_to_host(&x.d);
  CHECK(memcmp(xd.data, y.h.data, gf_tensor_nbytes(&xd)) == 0);
  gf_tensor_free(&xd);
  gf_tensor_copy(&x.d, &x.h, &e);
  CHECK(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, &dy.d, &dg.d, &db.d,
                              &e) == GF_OK);
  gf_tensor dyd = kt_to_host(&dy.d);
  CHECK(memcmp(dyd.data, dx.h.data, gf_tensor_nbytes(&dyd)) == 0);
  same("affine in place dgain", &dg);
  same("affine in place dbias", &db);
  gf_tensor_free(&dyd);
  gf_tensor_free(&zero);
  gf_tensor_free(&zg);
  twin *tws[] = {&x, &dy, &g, &b, &y, &dx, &dg, &db};
  for (size_t i = 0; i < 8; i++) tw_free(tws[i]);
}

static void rowdot_case(int64_t N, int64_t D) {
  twin a = tw_rnd(2, N, D, 1, 1, -1, 1), b = tw_rnd(2, N, D, 1, 1, -1, 1);
  twin y = tw_rnd(2, N, 1, 1, 1, -1, 1), dy = tw_rnd(2, N, 1, 1, 1, -1, 1);
  twin da = tw_rnd(2, N, D, 1, 1, -1, 1), db = tw_rnd(2, N, D, 1, 1, -1, 1);
  gf_err e = {0};
  for (int acc = 0; acc < 2; acc++) {
    gf_accum m = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, m, &e) == GF_OK);
    CHECKF(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, m, &e) == GF_OK, "%s", e.msg);
    same(acc ? "rowdot large y accumulated" : "rowdot large y", &y);
    REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, &da.h, &db.h, m, &e) ==
            GF_OK);
    CHECKF(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, &da.d, &db.d, m, &e) == GF_OK,
           "%s", e.msg);
    same(acc ? "rowdot large da accumulated" : "rowdot large da", &da);
    same(acc ? "rowdot large db accumulated" : "rowdot large db", &db);
  }
  REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, GF_OVERWRITE, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECK(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, GF_OVERWRITE, &e) == GF_OK);
    same("rowdot large y again", &y);
  }
  REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, NULL, &db.h, GF_OVERWRITE,
                        &e) == GF_OK);
  CHECK(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, NULL, &db.d, GF_OVERWRITE, &e) ==
        GF_OK);
  same("rowdot large db alone", &db);
  twin *tws[] = {&a, &b, &y, &dy, &da, &db};
  for (size_t i = 0; i < 6; i++) tw_free(tws[i]);
}

/* Labels outside [0, K) on the device: not checked (no sync), yet nothing
 * outside the table is touched: the CPU backend's own loops (called
 * through its table, past the API's check) give the same bits, NaN rows
 * and all. Run under compute-sanitizer memcheck to see no stray access. */
static void test_bad_labels_device(void) {
  int64_t K = 6, D = 130, N = 300;
  twin table = tw_rnd(2, K, D, 1, 1, -1, 1), labels = tw_labels(N, K, 0);
  int32_t *L = labels.h.data;
  L[0] = -1;
  L[7] = (int32_t)K;
  L[150] = INT32_MAX;
  L[299] = INT32_MIN;
  gf_err e = {0};
  REQUIRE(gf_tensor_copy(&labels.d, &labels.h, &e) == GF_OK);
  twin dy = tw_rnd(2, N, D, 1, 1, -1, 1), y = tw_rnd(2, N, D, 1, 1, 0, 1);
  twin dt = tw_rnd(2, K, D, 1, 1, -1, 1);
  const gf_backend_ops *o = &gf_cpu_backend_ops;
  CHECK(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_EINVAL);
  REQUIRE(o->embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
         e.msg);
  same("bad labels y", &y);
  CHECK(isnan(((float *)y.h.data)[7 * D]));
  for (int acc = 0; acc < 2; acc++) {
    gf_accum m = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(o->embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, m, &e) == GF_OK);
    CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, m, &e) == GF_OK,
           "%s", e.msg);
    same("bad labels dtable", &dt);
  }
  twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) tw_free(tws[i]);
}

static void test_host_refused(void) {
  twin a = tw_rnd(2, 4, 3, 1, 1, -1, 1), lab = tw_labels(4, 4, 0);
  twin y = tw_rnd(2, 4, 1, 1, 1, -1, 1), e4 = tw_rnd(2, 4, 3, 1, 1, -1, 1);
  gf_err e = {0};
  CHECK(gf_rowdot_fwd(&gpu, &a.h, &a.d, &y.d, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(&gpu, &e4.d, &lab.h, &a.d, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "labels") != NULL);
  twin *tws[] = {&a, &lab, &y, &e4};
  for (size_t i = 0; i < 4; i++) tw_free(tws[i]);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : GF_COND_GOLDEN;
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err e = {0};
  if (gf_st_open(&f, path, 0, &e) != GF_OK) {
    fprintf(stderr, "%s: %s\n", path, e.msg);
    return 1;
  }
  gf_ctx_config cc = {GF_BACKEND_CPU, 4, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&cpu, &cc, &e) == GF_OK);
  test_embedding_golden(&f);
  test_affine_golden(&f);
  test_rowdot_golden(&f);
  test_projection_golden(&f);
  embedding_case(1000, 256, 128, 1);
  embedding_case(7, 1000, 300, 0);
  affine_case(64, 256, 8, 8);
  affine_case(8, 32, 33, 33);
  rowdot_case(256, 1024);
  rowdot_case(1000, 37);
  test_bad_labels_device();
  test_host_refused();
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  gf_st_file_free(&f);
  return check_report();
}
