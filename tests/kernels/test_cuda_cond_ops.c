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
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_COND_GOLDEN
#define GF_COND_GOLDEN "cond.safetensors"
#endif

static gf_ctx cpu, gpu;
static kt_rng rng = {5151};

/* ---- twins (kt_cuda.h) of labels ----------------------------------------- */

/* N labels in [0, K): uniform, or (heavy) every third one of the classes
 * 0..4 (long runs of a few classes), the rest uniform. */
static kt_twin tw_labels(int64_t N, int64_t K, int heavy) {
  gf_tensor h;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&h, GF_I32, GF_DEV_CPU, 1, &N, &e) == GF_OK);
  int32_t *L = h.data;
  for (int64_t n = 0; n < N; n++)
    L[n] = heavy && n % 3 == 0 ? (int32_t)(n % 5)
                               : (int32_t)kt_uniform(&rng, 0, (double)K);
  kt_twin t = kt_twin_of(&h);
  gf_tensor_free(&h);
  return t;
}

/* ---- golden -------------------------------------------------------------- */

static kt_twin tw_gold(const gf_st_file *f, const char *name) {
  gf_tensor g = kt_gold(f, name, KT_GOLD_I32);
  kt_twin t = kt_twin_of(&g);
  gf_tensor_free(&g);
  return t;
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
  kt_twin table = tw_gold(f, "emb.table"), labels = tw_gold(f, "emb.labels");
  kt_twin dy = tw_gold(f, "emb.dy");
  gf_tensor g0 = kt_gold(f, "emb.g0", KT_GOLD_I32),
            ty = kt_gold(f, "emb.y", KT_GOLD_I32);
  gf_tensor tdt = kt_gold(f, "emb.dtable", KT_GOLD_I32),
            tda = kt_gold(f, "emb.dtable_acc", KT_GOLD_I32);
  int64_t K = table.h.shape[0], D = table.h.shape[1], N = labels.h.shape[0];
  kt_twin y = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1),
          dt = kt_twin_rnd(&rng, 2, K, D, 1, 1, -1, 1);
  gf_err e = {0};
  REQUIRE(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
         e.msg);
  KT_SAME("emb y", &y);
  KT_VS_TORCH("emb y", &y.d, &ty, EXACT);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_OVERWRITE, &e) ==
          GF_OK);
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_OVERWRITE, &e) ==
             GF_OK,
         "%s", e.msg);
  KT_SAME("emb dtable", &dt);
  KT_VS_TORCH("emb dtable", &dt.d, &tdt, EXACT);
  kt_twin_set(&dt, &g0);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_ACCUMULATE, &e) ==
          GF_OK);
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_ACCUMULATE, &e) ==
             GF_OK,
         "%s", e.msg);
  KT_SAME("emb dtable accumulated", &dt);
  KT_VS_TORCH("emb dtable accumulated", &dt.d, &tda, EXACT);
  kt_twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&g0, &ty, &tdt, &tda};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static void test_affine_golden(const gf_st_file *f) {
  /* ccbn: the affine on PyTorch's xhat */
  kt_twin xh = tw_gold(f, "ccbn.xhat"), gain = tw_gold(f, "ccbn.gain");
  kt_twin bias = tw_gold(f, "ccbn.bias"), dy = tw_gold(f, "ccbn.dy");
  gf_tensor ty = kt_gold(f, "ccbn.y", KT_GOLD_I32),
            tdxh = kt_gold(f, "ccbn.dxhat", KT_GOLD_I32);
  gf_tensor tdg = kt_gold(f, "ccbn.dgain", KT_GOLD_I32),
            tdb = kt_gold(f, "ccbn.dbias", KT_GOLD_I32);
  int64_t N = xh.h.shape[0], C = xh.h.shape[1];
  int64_t S = xh.h.shape[2] * xh.h.shape[3];
  kt_twin y = kt_twin_of(&xh.h), dx = kt_twin_of(&xh.h),
          dg = kt_twin_of(&gain.h);
  kt_twin db = kt_twin_of(&gain.h);
  gf_err e = {0};
  REQUIRE(gf_channel_affine_fwd(&cpu, &xh.h, &gain.h, &bias.h, &y.h, &e) ==
          GF_OK);
  CHECKF(gf_channel_affine_fwd(&gpu, &xh.d, &gain.d, &bias.d, &y.d, &e) ==
             GF_OK,
         "%s", e.msg);
  KT_SAME("ccbn y", &y);
  KT_VS_TORCH("ccbn y", &y.d, &ty, EXACT);
  REQUIRE(gf_channel_affine_bwd(&cpu, &xh.h, &gain.h, &dy.h, &dx.h, &dg.h,
                                &db.h, &e) == GF_OK);
  CHECKF(gf_channel_affine_bwd(&gpu, &xh.d, &gain.d, &dy.d, &dx.d, &dg.d, &db.d,
                               &e) == GF_OK,
         "%s", e.msg);
  KT_SAME("ccbn dxhat", &dx);
  KT_SAME("ccbn dgain", &dg);
  KT_SAME("ccbn dbias", &db);
  KT_VS_TORCH("ccbn dxhat", &dx.d, &tdxh, EXACT);
  double *tg = sum_tol(dy.h.data, xh.h.data, N * C, S);
  double *tb = sum_tol(dy.h.data, NULL, N * C, S);
  KT_VS_TORCH("ccbn dgain", &dg.d, &tdg, 0.0, 0.0, 0.0, tg);
  KT_VS_TORCH("ccbn dbias", &db.d, &tdb, 0.0, 0.0, 0.0, tb);
  free(tg);
  free(tb);
  /* [N, C]: everything bit-exact */
  kt_twin x2 = tw_gold(f, "aff2.x"), g2 = tw_gold(f, "aff2.gain");
  kt_twin b2 = tw_gold(f, "aff2.bias"), dy2 = tw_gold(f, "aff2.dy");
  kt_twin y2 = kt_twin_of(&x2.h), dx2 = kt_twin_of(&x2.h),
          dg2 = kt_twin_of(&g2.h);
  kt_twin db2 = kt_twin_of(&g2.h);
  const char *nm[4] = {"aff2.y", "aff2.dx", "aff2.dgain", "aff2.dbias"};
  kt_twin *got[4] = {&y2, &dx2, &dg2, &db2};
  REQUIRE(gf_channel_affine_fwd(&cpu, &x2.h, &g2.h, &b2.h, &y2.h, &e) == GF_OK);
  CHECK(gf_channel_affine_fwd(&gpu, &x2.d, &g2.d, &b2.d, &y2.d, &e) == GF_OK);
  REQUIRE(gf_channel_affine_bwd(&cpu, &x2.h, &g2.h, &dy2.h, &dx2.h, &dg2.h,
                                &db2.h, &e) == GF_OK);
  CHECK(gf_channel_affine_bwd(&gpu, &x2.d, &g2.d, &dy2.d, &dx2.d, &dg2.d,
                              &db2.d, &e) == GF_OK);
  for (int i = 0; i < 4; i++) {
    gf_tensor t = kt_gold(f, nm[i], KT_GOLD_I32);
    KT_SAME(nm[i], got[i]);
    KT_VS_TORCH(nm[i], &got[i]->d, &t, EXACT);
    gf_tensor_free(&t);
  }
  kt_twin *tws[] = {&xh, &gain, &bias, &dy,  &y,  &dx,  &dg,  &db,
                    &x2, &g2,   &b2,   &dy2, &y2, &dx2, &dg2, &db2};
  for (size_t i = 0; i < 16; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&ty, &tdxh, &tdg, &tdb};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static void test_rowdot_golden(const gf_st_file *f) {
  kt_twin a = tw_gold(f, "rowdot.a"), b = tw_gold(f, "rowdot.b");
  kt_twin y = tw_gold(f, "rowdot.y0"), dy = tw_gold(f, "rowdot.dy");
  gf_tensor y0 = kt_gold(f, "rowdot.y0", KT_GOLD_I32),
            ty = kt_gold(f, "rowdot.y", KT_GOLD_I32);
  gf_tensor tya = kt_gold(f, "rowdot.y_acc", KT_GOLD_I32),
            tda = kt_gold(f, "rowdot.da", KT_GOLD_I32);
  gf_tensor tdb = kt_gold(f, "rowdot.db", KT_GOLD_I32);
  int64_t N = a.h.shape[0], D = a.h.shape[1];
  kt_twin da = kt_twin_of(&a.h), db = kt_twin_of(&b.h);
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
  KT_SAME("rowdot y accumulated", &y);
  double *tol2 = kt_dzeros((size_t)N);
  for (int64_t n = 0; n < N; n++)
    tol2[n] = tol[n] + 4 * 0x1p-24 * fabs((double)((float *)y0.data)[n]);
  KT_VS_TORCH("rowdot y accumulated", &y.d, &tya, 0.0, 0.0, 0.0, tol2);
  REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, GF_OVERWRITE, &e) == GF_OK);
  KT_SAME("rowdot y", &y);
  KT_VS_TORCH("rowdot y", &y.d, &ty, 0.0, 0.0, 0.0, tol);
  REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, &da.h, &db.h, GF_OVERWRITE,
                        &e) == GF_OK);
  CHECKF(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, &da.d, &db.d, GF_OVERWRITE,
                       &e) == GF_OK,
         "%s", e.msg);
  KT_SAME("rowdot da", &da);
  KT_SAME("rowdot db", &db);
  KT_VS_TORCH("rowdot da", &da.d, &tda, EXACT);
  KT_VS_TORCH("rowdot db", &db.d, &tdb, EXACT);
  free(tol);
  free(tol2);
  kt_twin *tws[] = {&a, &b, &y, &dy, &da, &db};
  for (size_t i = 0; i < 6; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&y0, &ty, &tya, &tda, &tdb};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
}

/* The projection head on the device: linear (cuBLAS) + embedding + rowdot,
 * back through linear_bwd, rowdot_bwd (de fresh, dh accumulated onto the
 * linear's) and embedding_bwd; the
 * linear's results are compared with PyTorch's at 1e-5, the embedding
 * gradient (dy h summed in order) bit for bit. */
static void test_projection_golden(const gf_st_file *f) {
  kt_twin h = tw_gold(f, "proj.h"), w = tw_gold(f, "proj.w");
  kt_twin bias = tw_gold(f, "proj.bias"), table = tw_gold(f, "proj.table");
  kt_twin labels = tw_gold(f, "proj.labels"), dout = tw_gold(f, "proj.dout");
  gf_tensor tout = kt_gold(f, "proj.out", KT_GOLD_I32),
            tdh = kt_gold(f, "proj.dh", KT_GOLD_I32);
  gf_tensor tdw = kt_gold(f, "proj.dw", KT_GOLD_I32),
            tdb = kt_gold(f, "proj.dbias", KT_GOLD_I32);
  gf_tensor tdt = kt_gold(f, "proj.dtable", KT_GOLD_I32);
  int64_t N = h.h.shape[0], Fe = h.h.shape[1], K = table.h.shape[0];
  kt_twin out = kt_twin_rnd(&rng, 2, N, 1, 1, 1, 0, 1),
          emb = kt_twin_rnd(&rng, 2, N, Fe, 1, 1, 0, 1);
  kt_twin dh = kt_twin_of(&h.h), de = kt_twin_of(&emb.h), dw = kt_twin_of(&w.h);
  kt_twin db = kt_twin_of(&bias.h),
          dt = kt_twin_rnd(&rng, 2, K, Fe, 1, 1, 0, 1);
  gf_err e = {0};
  CHECK(gf_linear_fwd(&gpu, &h.d, &w.d, &bias.d, &out.d, &e) == GF_OK);
  CHECK(gf_embedding_fwd(&gpu, &table.d, &labels.d, &emb.d, &e) == GF_OK);
  CHECK(gf_rowdot_fwd(&gpu, &emb.d, &h.d, &out.d, GF_ACCUMULATE, &e) == GF_OK);
  KT_VS_TORCH("proj out", &out.d, &tout, 0.0, 1e-5, 1e-5, NULL);
  CHECK(gf_linear_bwd(&gpu, &h.d, &w.d, &dout.d, &dh.d, &dw.d, &db.d,
                      GF_OVERWRITE, &e) == GF_OK);
  /* de = dout h (a fresh gradient), dh += dout e (onto the linear's) */
  CHECK(gf_rowdot_bwd(&gpu, &emb.d, &h.d, &dout.d, &de.d, NULL, GF_OVERWRITE,
                      &e) == GF_OK);
  CHECK(gf_rowdot_bwd(&gpu, &emb.d, &h.d, &dout.d, NULL, &dh.d, GF_ACCUMULATE,
                      &e) == GF_OK);
  CHECK(gf_embedding_bwd(&gpu, &labels.d, &de.d, &dt.d, GF_OVERWRITE, &e) ==
        GF_OK);
  KT_VS_TORCH("proj dh", &dh.d, &tdh, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("proj dw", &dw.d, &tdw, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("proj dbias", &db.d, &tdb, 0.0, 1e-5, 1e-5, NULL);
  KT_VS_TORCH("proj dtable", &dt.d, &tdt, EXACT);
  kt_twin *tws[] = {&h,   &w,  &bias, &table, &labels, &dout, &out,
                    &emb, &dh, &de,   &dw,    &db,     &dt};
  for (size_t i = 0; i < 13; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&tout, &tdh, &tdw, &tdb, &tdt};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
}

/* ---- large cases --------------------------------------------------------- */

static void embedding_case(int64_t K, int64_t N, int64_t D, int heavy) {
  kt_twin table = kt_twin_rnd(&rng, 2, K, D, 1, 1, -1, 1),
          labels = tw_labels(N, K, heavy);
  kt_twin dy = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1),
          y = kt_twin_rnd(&rng, 2, N, D, 1, 1, 0, 1);
  kt_twin dt = kt_twin_rnd(&rng, 2, K, D, 1, 1, -1, 1);
  gf_err e = {0};
  REQUIRE(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_ACCUMULATE, &e) ==
          GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("emb large y", &y);
  }
  CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_ACCUMULATE, &e) ==
             GF_OK,
         "%s", e.msg);
  KT_SAME("emb large dtable accumulated", &dt);
  REQUIRE(gf_embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, GF_OVERWRITE, &e) ==
          GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, GF_OVERWRITE, &e) ==
               GF_OK,
           "%s", e.msg);
    KT_SAME("emb large dtable", &dt);
  }
  kt_twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
}

static void affine_case(int64_t N, int64_t C, int64_t H, int64_t W) {
  kt_twin x = kt_twin_rnd(&rng, 4, N, C, H, W, -2, 2),
          dy = kt_twin_rnd(&rng, 4, N, C, H, W, -1, 1);
  kt_twin g = kt_twin_rnd(&rng, 2, N, C, 1, 1, 0.5, 1.5),
          b = kt_twin_rnd(&rng, 2, N, C, 1, 1, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, N, C, H, W, 0, 1),
          dx = kt_twin_rnd(&rng, 4, N, C, H, W, 0, 1);
  kt_twin dg = kt_twin_rnd(&rng, 2, N, C, 1, 1, 0, 1),
          db = kt_twin_rnd(&rng, 2, N, C, 1, 1, 0, 1);
  gf_err e = {0};
  REQUIRE(gf_channel_affine_fwd(&cpu, &x.h, &g.h, &b.h, &y.h, &e) == GF_OK);
  REQUIRE(gf_channel_affine_bwd(&cpu, &x.h, &g.h, &dy.h, &dx.h, &dg.h, &db.h,
                                &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_channel_affine_fwd(&gpu, &x.d, &g.d, &b.d, &y.d, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("affine large y", &y);
    CHECKF(gf_channel_affine_bwd(&gpu, &x.d, &g.d, &dy.d, &dx.d, &dg.d, &db.d,
                                 &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("affine large dx", &dx);
    KT_SAME("affine large dgain", &dg);
    KT_SAME("affine large dbias", &db);
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
  KT_SAME("affine large dx alone", &dx);
  KT_SAME("affine large dgain alone", &dg);
  KT_SAME("affine large dbias alone", &db);
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
  KT_SAME("affine in place dgain", &dg);
  KT_SAME("affine in place dbias", &db);
  gf_tensor_free(&dyd);
  gf_tensor_free(&zero);
  gf_tensor_free(&zg);
  kt_twin *tws[] = {&x, &dy, &g, &b, &y, &dx, &dg, &db};
  for (size_t i = 0; i < 8; i++) kt_twin_free(tws[i]);
}

static void rowdot_case(int64_t N, int64_t D) {
  kt_twin a = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1),
          b = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 2, N, 1, 1, 1, -1, 1),
          dy = kt_twin_rnd(&rng, 2, N, 1, 1, 1, -1, 1);
  kt_twin da = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1),
          db = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1);
  gf_err e = {0};
  for (int acc = 0; acc < 2; acc++) {
    gf_accum m = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, m, &e) == GF_OK);
    CHECKF(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, m, &e) == GF_OK, "%s", e.msg);
    KT_SAME(acc ? "rowdot large y accumulated" : "rowdot large y", &y);
    REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, &da.h, &db.h, m, &e) ==
            GF_OK);
    CHECKF(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, &da.d, &db.d, m, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME(acc ? "rowdot large da accumulated" : "rowdot large da", &da);
    KT_SAME(acc ? "rowdot large db accumulated" : "rowdot large db", &db);
  }
  REQUIRE(gf_rowdot_fwd(&cpu, &a.h, &b.h, &y.h, GF_OVERWRITE, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECK(gf_rowdot_fwd(&gpu, &a.d, &b.d, &y.d, GF_OVERWRITE, &e) == GF_OK);
    KT_SAME("rowdot large y again", &y);
  }
  REQUIRE(gf_rowdot_bwd(&cpu, &a.h, &b.h, &dy.h, NULL, &db.h, GF_OVERWRITE,
                        &e) == GF_OK);
  CHECK(gf_rowdot_bwd(&gpu, &a.d, &b.d, &dy.d, NULL, &db.d, GF_OVERWRITE, &e) ==
        GF_OK);
  KT_SAME("rowdot large db alone", &db);
  kt_twin *tws[] = {&a, &b, &y, &dy, &da, &db};
  for (size_t i = 0; i < 6; i++) kt_twin_free(tws[i]);
}

/* Labels outside [0, K) on the device: not checked (no sync), yet nothing
 * outside the table is touched: the CPU backend's own loops (called
 * through its table, past the API's check) give the same bits, NaN rows
 * and all. Run under compute-sanitizer memcheck to see no stray access. */
static void test_bad_labels_device(void) {
  int64_t K = 6, D = 130, N = 300;
  kt_twin table = kt_twin_rnd(&rng, 2, K, D, 1, 1, -1, 1),
          labels = tw_labels(N, K, 0);
  int32_t *L = labels.h.data;
  L[0] = -1;
  L[7] = (int32_t)K;
  L[150] = INT32_MAX;
  L[299] = INT32_MIN;
  gf_err e = {0};
  REQUIRE(gf_tensor_copy(&labels.d, &labels.h, &e) == GF_OK);
  kt_twin dy = kt_twin_rnd(&rng, 2, N, D, 1, 1, -1, 1),
          y = kt_twin_rnd(&rng, 2, N, D, 1, 1, 0, 1);
  kt_twin dt = kt_twin_rnd(&rng, 2, K, D, 1, 1, -1, 1);
  const gf_backend_ops *o = &gf_cpu_backend_ops;
  CHECK(gf_embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_EINVAL);
  REQUIRE(o->embedding_fwd(&cpu, &table.h, &labels.h, &y.h, &e) == GF_OK);
  CHECKF(gf_embedding_fwd(&gpu, &table.d, &labels.d, &y.d, &e) == GF_OK, "%s",
         e.msg);
  KT_SAME("bad labels y", &y);
  CHECK(isnan(((float *)y.h.data)[7 * D]));
  for (int acc = 0; acc < 2; acc++) {
    gf_accum m = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(o->embedding_bwd(&cpu, &labels.h, &dy.h, &dt.h, m, &e) == GF_OK);
    CHECKF(gf_embedding_bwd(&gpu, &labels.d, &dy.d, &dt.d, m, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("bad labels dtable", &dt);
  }
  kt_twin *tws[] = {&table, &labels, &dy, &y, &dt};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
}

static void test_host_refused(void) {
  kt_twin a = kt_twin_rnd(&rng, 2, 4, 3, 1, 1, -1, 1), lab = tw_labels(4, 4, 0);
  kt_twin y = kt_twin_rnd(&rng, 2, 4, 1, 1, 1, -1, 1),
          e4 = kt_twin_rnd(&rng, 2, 4, 3, 1, 1, -1, 1);
  gf_err e = {0};
  CHECK(gf_rowdot_fwd(&gpu, &a.h, &a.d, &y.d, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_embedding_fwd(&gpu, &e4.d, &lab.h, &a.d, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "labels") != NULL);
  kt_twin *tws[] = {&a, &lab, &y, &e4};
  for (size_t i = 0; i < 4; i++) kt_twin_free(tws[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_COND_GOLDEN);
  kt_cpu_ctx(&cpu, 4);
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
