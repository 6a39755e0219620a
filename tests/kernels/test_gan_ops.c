/* test_gan_ops.c - the CPU ops of the other GAN losses, the EMA and
 * spectral normalization (gf_hinge_fwd/bwd, gf_mean_fwd, gf_lerp,
 * gf_spectral_norm_fwd/bwd) against PyTorch's numbers
 * (golden/gan_ops.safetensors, written by golden/make_gan_ops_golden.py; no
 * Python needed here), against the double references of ref_ops.c, and the
 * SN backward against a directional finite difference; GF_ACCUMULATE, the
 * in-place forms the API allows, the same bits at 1 and 4 threads, and the
 * argument errors (GF_EINVAL, GF_OK for a NULL dw).
 *
 * Tolerances against PyTorch (f32 on both sides; each run prints the worst
 * difference per quantity, also in ulp and relative to the tensor's
 * largest |value|):
 *   hinge dx; lerp at beta 0, 0.3, 0.5, 0.999, 1     bit-exact
 *   hinge and mean loss    |d| <= 4 ulp (double sums here, f32 there;
 *                          measured <= 1 ulp)
 *   SN sigma               |d| <= 1e-6 |t|          (measured <= 2 ulp)
 *   SN u, v, w_sn, dw      |d| <= 1e-6 (|t| + max|t|): the matrix-vector
 *                          products and norms are summed in another order
 *                          (PyTorch's f32 BLAS vs our double lane sums),
 *                          and dw uses the gradient of sigma, a sum over
 *                          the whole weight, in double (PyTorch: f32): an
 *                          element that cancels to ~0 is many ulp off
 *                          while |d| stays ~1e-7 max|t| (measured <= 2.3e-7
 *                          max|t|; 256 ulp at worst, on a cancelled one)
 * Against the double references: losses rtol 2e-7 (f32 terms summed in
 * double), dx rtol 1e-7, lerp atol 2e-7 + rtol 1e-7 (one rounding of
 * avg - x and one of the fma), SN atol 1e-6 + rtol 1e-5 (f32 iterates vs
 * double; dw with the same u, v, sigma); finite differences (h = 2^-7)
 * atol 1e-3 + rtol 2e-3.
 * The SN golden comparison is shown to fire: the largest weight perturbed
 * by 2^-16 of itself must fail it.
 * Argument 1: the golden file (default GF_GAN_OPS_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_golden.h"
#include "kt_util.h"
#include "ref_ops.h"

#ifndef GF_GAN_OPS_GOLDEN
#define GF_GAN_OPS_GOLDEN "gan_ops.safetensors"
#endif

#define SN_EPS 1e-12f

/* ---- golden file --------------------------------------------------------- */

static float gold1(const gf_st_file *f, const char *name) {
  gf_tensor g = kt_gold(f, name, KT_GOLD_0D);
  float v = *(float *)g.data;
  gf_tensor_free(&g);
  return v;
}

static void cmp_ref(const char *label, const gf_tensor *got, const double *want,
                    double atol, double rtol) {
  CHECK(kt_compare(label, got->data, want, (size_t)gf_tensor_numel(got), atol,
                   rtol) == 0);
}

/* ---- hinge and mean ------------------------------------------------------ */

static void test_hinge_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor x = kt_gold(f, "hinge.x", KT_GOLD_0D);
  float dloss = gold1(f, "hinge.dloss");
  size_t n = (size_t)gf_tensor_numel(&x);
  gf_tensor loss = kt_tensor(1, 1, 1, 1, 1),
            dx = kt_tensor(1, (int64_t)n, 1, 1, 1);
  double *xd = kt_dbl(&x), *dxr = kt_dzeros(n);
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    char name[64];
    snprintf(name, sizeof name, "hinge.%s.loss", s ? "fake" : "real");
    gf_tensor tl = kt_gold(f, name, KT_GOLD_0D);
    snprintf(name, sizeof name, "hinge.%s.dx", s ? "fake" : "real");
    gf_tensor tdx = kt_gold(f, name, KT_GOLD_0D);
    gf_err e = {0};
    CHECKF(gf_hinge_fwd(ctx, &x, sign, &loss, &e) == GF_OK, "%s", e.msg);
    KT_VS_TORCH(s ? "hinge fake loss" : "hinge real loss", &loss, &tl, 0.0,
                4 * 0x1p-24, 0.0, NULL);
    double want = ref_hinge_fwd(xd, sign, n);
    cmp_ref("hinge loss ref", &loss, &want, 0.0, 2e-7);
    CHECKF(gf_hinge_bwd(ctx, &x, sign, dloss, &dx, &e) == GF_OK, "%s", e.msg);
    KT_VS_TORCH(s ? "hinge fake dx" : "hinge real dx", &dx, &tdx, -1.0, 0.0,
                0.0, NULL);
    ref_hinge_bwd(xd, sign, dloss, dxr, n);
    cmp_ref("hinge dx ref", &dx, dxr, 0.0, 1e-7);
    /* in place: dx = x */
    gf_tensor y = kt_tensor(1, (int64_t)n, 1, 1, 1);
    memcpy(y.data, x.data, n * sizeof(float));
    CHECK(gf_hinge_bwd(ctx, &y, sign, dloss, &y, NULL) == GF_OK);
    CHECK(kt_same_bits(&y, &tdx));
    gf_tensor_free(&y);
    gf_tensor_free(&tl);
    gf_tensor_free(&tdx);
  }
  free(xd);
  free(dxr);
  gf_tensor_free(&x);
  gf_tensor_free(&loss);
  gf_tensor_free(&dx);
}

static void test_mean_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor x = kt_gold(f, "mean.x", KT_GOLD_0D),
            tl = kt_gold(f, "mean.loss", KT_GOLD_0D);
  gf_tensor loss = kt_tensor(1, 1, 1, 1, 1);
  gf_err e = {0};
  CHECKF(gf_mean_fwd(ctx, &x, &loss, &e) == GF_OK, "%s", e.msg);
  KT_VS_TORCH("mean loss", &loss, &tl, 0.0, 4 * 0x1p-24, 0.0, NULL);
  double *xd = kt_dbl(&x);
  double want = ref_mean(xd, (size_t)gf_tensor_numel(&x));
  cmp_ref("mean ref", &loss, &want, 0.0, 2e-7);
  free(xd);
  gf_tensor_free(&x);
  gf_tensor_free(&tl);
  gf_tensor_free(&loss);
}

/* Above GF_PAR_MIN (threads), against the references; 1 and 4 threads give
 * the same bits. */
static void test_hinge_mean_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t n = 100003;
  gf_tensor x = kt_tensor(1, n, 1, 1, 1), loss = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor loss4 = kt_tensor(1, 1, 1, 1, 1), dx = kt_tensor(1, n, 1, 1, 1);
  gf_tensor dx4 = kt_tensor(1, n, 1, 1, 1);
  kt_fill(&x, rng, -3.0, 3.0, 0.0);
  double *xd = kt_dbl(&x), *dxr = kt_dzeros((size_t)n);
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    CHECK(gf_hinge_fwd(ctx, &x, sign, &loss, NULL) == GF_OK);
    CHECK(gf_hinge_fwd(ctx4, &x, sign, &loss4, NULL) == GF_OK);
    double want = ref_hinge_fwd(xd, sign, (size_t)n);
    cmp_ref("hinge large loss", &loss, &want, 0.0, 2e-7);
    CHECK(kt_same_bits(&loss, &loss4));
    CHECK(gf_hinge_bwd(ctx, &x, sign, 1.0f, &dx, NULL) == GF_OK);
    CHECK(gf_hinge_bwd(ctx4, &x, sign, 1.0f, &dx4, NULL) == GF_OK);
    ref_hinge_bwd(xd, sign, 1.0, dxr, (size_t)n);
    cmp_ref("hinge large dx", &dx, dxr, 0.0, 1e-7);
    CHECK(kt_same_bits(&dx, &dx4));
  }
  CHECK(gf_mean_fwd(ctx, &x, &loss, NULL) == GF_OK);
  CHECK(gf_mean_fwd(ctx4, &x, &loss4, NULL) == GF_OK);
  double want = ref_mean(xd, (size_t)n);
  /* the mean of values in [-3, 3] is near 0: a relative tolerance of the
   * sum's scale */
  cmp_ref("mean large", &loss, &want, 1e-7 * 1.5, 2e-7);
  CHECK(kt_same_bits(&loss, &loss4));
  free(xd);
  free(dxr);
  gf_tensor *all[] = {&x, &loss, &loss4, &dx, &dx4};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
}

/* ---- lerp ---------------------------------------------------------------- */

static const double kBetas[5] = {0.0, 0.3, 0.5, 0.999, 1.0};

static void test_lerp_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor avg0 = kt_gold(f, "lerp.avg", KT_GOLD_0D),
            x = kt_gold(f, "lerp.x", KT_GOLD_0D);
  gf_tensor betas = kt_gold(f, "lerp.beta", KT_GOLD_0D);
  REQUIRE(gf_tensor_numel(&betas) == 5);
  int64_t n = gf_tensor_numel(&x);
  gf_tensor avg = kt_tensor(1, n, 1, 1, 1);
  double *xd = kt_dbl(&x);
  for (int i = 0; i < 5; i++) {
    CHECK(((float *)betas.data)[i] == (float)kBetas[i]);
    char name[32];
    snprintf(name, sizeof name, "lerp.out%d", i);
    gf_tensor want = kt_gold(f, name, KT_GOLD_0D);
    memcpy(avg.data, avg0.data, gf_tensor_nbytes(&avg));
    gf_err e = {0};
    CHECKF(gf_lerp(ctx, &avg, &x, kBetas[i], &e) == GF_OK, "%s", e.msg);
    char what[32];
    snprintf(what, sizeof what, "lerp beta %g", kBetas[i]);
    KT_VS_TORCH(what, &avg, &want, -1.0, 0.0, 0.0, NULL);
    double *r = kt_dbl(&avg0);
    ref_lerp(r, xd, (double)(float)kBetas[i], (size_t)n);
    /* the golden's first entries hold -3e4 and 1e-30: scale atol */
    cmp_ref("lerp ref", &avg, r, 2e-7 * 3e4, 1e-7);
    free(r);
    gf_tensor_free(&want);
  }
  free(xd);
  gf_tensor_free(&avg0);
  gf_tensor_free(&x);
  gf_tensor_free(&betas);
  gf_tensor_free(&avg);
}

static void test_lerp_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t n = 200003;
  gf_tensor a = kt_tensor(1, n, 1, 1, 1), a4 = kt_tensor(1, n, 1, 1, 1);
  gf_tensor x = kt_tensor(2, 7, (n + 6) / 7, 1, 1); /* another shape */
  REQUIRE(gf_tensor_numel(&x) >= n);
  gf_tensor xv;
  REQUIRE(gf_tensor_view(&xv, x.data, GF_F32, GF_DEV_CPU, 1, &n, NULL) ==
          GF_OK);
  for (int i = 0; i < 5; i++) {
    kt_fill(&a, rng, -1.0, 1.0, 0.0);
    kt_fill(&xv, rng, -1.0, 1.0, 0.0);
    memcpy(a4.data, a.data, gf_tensor_nbytes(&a));
    double *r = kt_dbl(&a), *xd = kt_dbl(&xv);
    ref_lerp(r, xd, (double)(float)kBetas[i], (size_t)n);
    CHECK(gf_lerp(ctx, &a, &xv, kBetas[i], NULL) == GF_OK);
    CHECK(gf_lerp(ctx4, &a4, &xv, kBetas[i], NULL) == GF_OK);
    cmp_ref("lerp large", &a, r, 2e-7, 1e-7);
    CHECK(kt_same_bits(&a, &a4));
    free(r);
    free(xd);
  }
  /* avg == x: lerp(x, x) = x */
  memcpy(a4.data, a.data, gf_tensor_nbytes(&a));
  CHECK(gf_lerp(ctx, &a, &a, 0.3, NULL) == GF_OK);
  CHECK(kt_same_bits(&a, &a4));
  gf_tensor_free(&a);
  gf_tensor_free(&a4);
  gf_tensor_free(&x);
}

/* ---- spectral normalization ---------------------------------------------- */

typedef struct sn_case {
  const char *name;
  int n_iters;
  int iters[3];
} sn_case;

/* sn.<case>.* of the golden file: every n_iter it holds, forward and
 * backward, against PyTorch and the references. */
static void test_sn_golden(gf_ctx *ctx, const gf_st_file *f, const sn_case *c) {
  char name[64];
#define GOLD(...) \
  (snprintf(name, sizeof name, __VA_ARGS__), kt_gold(f, name, KT_GOLD_0D))
  gf_tensor w = GOLD("sn.%s.w", c->name), u0 = GOLD("sn.%s.u0", c->name);
  gf_tensor v0 = GOLD("sn.%s.v0", c->name), g = GOLD("sn.%s.g", c->name);
  int64_t R = w.shape[0], K = gf_tensor_numel(&w) / R;
  gf_tensor u = kt_tensor(1, R, 1, 1, 1), v = kt_tensor(1, K, 1, 1, 1);
  gf_tensor sigma = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor w_sn = kt_tensor(w.ndim, w.shape[0], w.shape[1], w.shape[2],
                             w.shape[3]);
  gf_tensor dw = kt_tensor(w.ndim, w.shape[0], w.shape[1], w.shape[2],
                           w.shape[3]);
  double *wd = kt_dbl(&w), *gd = kt_dbl(&g);
  double *wsr = kt_dzeros((size_t)(R * K)), *dwr = kt_dzeros((size_t)(R * K));
  for (int ii = 0; ii < c->n_iters; ii++) {
    int it = c->iters[ii];
    memcpy(u.data, u0.data, gf_tensor_nbytes(&u));
    memcpy(v.data, v0.data, gf_tensor_nbytes(&v));
    gf_err e = {0};
    CHECKF(gf_spectral_norm_fwd(ctx, &w, &u, &v, it, SN_EPS, &sigma, &w_sn,
                                &e) == GF_OK,
           "%s", e.msg);
    CHECKF(gf_spectral_norm_bwd(ctx, &w, &u, &v, &sigma, &g, &dw, GF_OVERWRITE,
                                &e) == GF_OK,
           "%s", e.msg);
    const char *part[5] = {"u", "v", "sigma", "w_sn", "dw"};
    gf_tensor *got[5] = {&u, &v, &sigma, &w_sn, &dw};
    for (int q = 0; q < 5; q++) {
      gf_tensor t = GOLD("sn.%s.it%d.%s", c->name, it, part[q]);
      char what[48];
      snprintf(what, sizeof what, "sn %s it%d %s", c->name, it, part[q]);
      KT_VS_TORCH(what, got[q], &t, 0.0, 1e-6, q == 2 ? 0.0 : 1e-6, NULL);
      gf_tensor_free(&t);
    }
    /* references: the forward from u0, v0 in double; the backward with
     * this forward's u, v, sigma */
    double *ur = kt_dbl(&u0), *vr = kt_dbl(&v0), sr = 0.0;
    ref_spectral_norm_fwd(wd, ur, vr, (int)R, (int)K, it, SN_EPS, &sr, wsr);
    cmp_ref("sn u ref", &u, ur, 1e-6, 1e-5);
    cmp_ref("sn v ref", &v, vr, 1e-6, 1e-5);
    cmp_ref("sn sigma ref", &sigma, &sr, 0.0, 1e-5);
    cmp_ref("sn w_sn ref", &w_sn, wsr, 1e-6, 1e-5);
    double *uo = kt_dbl(&u), *vo = kt_dbl(&v);
    ref_spectral_norm_bwd(wd, uo, vo, *(float *)sigma.data, gd, dwr, (int)R,
                          (int)K);
    cmp_ref("sn dw ref", &dw, dwr, 1e-6, 1e-5);
    free(ur);
    free(vr);
    free(uo);
    free(vo);
  }
  free(wd);
  free(gd);
  free(wsr);
  free(dwr);
  gf_tensor *all[] = {&w, &u0, &v0, &g, &u, &v, &sigma, &w_sn, &dw};
  for (size_t i = 0; i < 9; i++) gf_tensor_free(all[i]);
#undef GOLD
}

/* The comparison above fires: the largest weight moved by 2^-16 of itself
 * (a 1.5e-5 relative error in one of 288 entries) moves w_sn beyond the
 * tolerance somewhere (counted quietly here). */
static void test_sn_golden_fires(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor w = kt_gold(f, "sn.conv.w", KT_GOLD_0D),
            u = kt_gold(f, "sn.conv.u0", KT_GOLD_0D);
  gf_tensor v = kt_gold(f, "sn.conv.v0", KT_GOLD_0D),
            want = kt_gold(f, "sn.conv.it1.w_sn", KT_GOLD_0D);
  gf_tensor sigma = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor w_sn = kt_tensor(4, w.shape[0], w.shape[1], w.shape[2], w.shape[3]);
  float *wp = w.data;
  int64_t big = 0;
  for (int64_t i = 1; i < gf_tensor_numel(&w); i++)
    if (fabsf(wp[i]) > fabsf(wp[big])) big = i;
  wp[big] *= 1.0f + 0x1p-16f;
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &sigma, &w_sn, NULL) ==
        GF_OK);
  const float *a = w_sn.data, *t = want.data;
  size_t bad = 0;
  double tmax = 0.0;
  for (int64_t i = 0; i < gf_tensor_numel(&want); i++)
    tmax = fmax(tmax, fabs((double)t[i]));
  for (int64_t i = 0; i < gf_tensor_numel(&w_sn); i++)
    bad += !(fabs((double)a[i] - t[i]) <= 1e-6 * (fabs((double)t[i]) + tmax));
  CHECKF(bad > 0, "a perturbed weight still passes the SN tolerance");
  gf_tensor *all[] = {&w, &u, &v, &want, &sigma, &w_sn};
  for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
}

typedef struct sn_fd {
  gf_ctx *ctx;
  gf_tensor *w, *u, *v, *sigma, *w_sn, *g;
} sn_fd;

/* sum(g * w_sn(w)) with u, v fixed (n_iter 0). */
static double sn_loss(void *p) {
  sn_fd *s = p;
  REQUIRE(gf_spectral_norm_fwd(s->ctx, s->w, s->u, s->v, 0, SN_EPS, s->sigma,
                               s->w_sn, NULL) == GF_OK);
  return kt_dot(s->w_sn->data, s->g->data, (size_t)gf_tensor_numel(s->g));
}

/* Finite differences, GF_ACCUMULATE, dw = dw_sn, 1 vs 4 threads, and the
 * references at a size above GF_PAR_MIN. */
static void test_sn_props(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  /* finite differences on a small conv weight [6,2,2,2] */
  {
    gf_tensor w = kt_tensor(4, 6, 2, 2, 2), u = kt_tensor(1, 6, 1, 1, 1);
    gf_tensor v = kt_tensor(1, 8, 1, 1, 1), g = kt_tensor(4, 6, 2, 2, 2);
    gf_tensor sigma = kt_tensor(1, 1, 1, 1, 1), w_sn = kt_tensor(4, 6, 2, 2, 2);
    gf_tensor dw = kt_tensor(4, 6, 2, 2, 2);
    kt_fill(&w, rng, -1.0, 1.0, 0.0);
    kt_fill(&u, rng, -1.0, 1.0, 0.0);
    kt_fill(&v, rng, -1.0, 1.0, 0.0);
    kt_fill(&g, rng, -1.0, 1.0, 0.0);
    /* two iterations make u, v close to the singular vectors (sigma far
     * from 0); the derivative is then taken at fixed u, v */
    REQUIRE(gf_spectral_norm_fwd(ctx, &w, &u, &v, 2, SN_EPS, &sigma, &w_sn,
                                 NULL) == GF_OK);
    REQUIRE(gf_spectral_norm_bwd(ctx, &w, &u, &v, &sigma, &g, &dw, GF_OVERWRITE,
                                 NULL) == GF_OK);
    float dir[48];
    kt_rademacher(dir, 48, rng);
    sn_fd s = {ctx, &w, &u, &v, &sigma, &w_sn, &g};
    double fd = kt_dir_fd(sn_loss, &s, w.data, dir, 48, 0.0078125);
    CHECK(kt_fd_ok("sn fd", fd, kt_dot(dw.data, dir, 48), 1e-3, 2e-3));
    gf_tensor *all[] = {&w, &u, &v, &g, &sigma, &w_sn, &dw};
    for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
  }
  /* [256, 64, 3, 3]: 147456 weights */
  int64_t R = 256, K = 64 * 9;
  gf_tensor w = kt_tensor(4, R, 64, 3, 3), g = kt_tensor(4, R, 64, 3, 3);
  gf_tensor u = kt_tensor(1, R, 1, 1, 1), v = kt_tensor(1, K, 1, 1, 1);
  gf_tensor u4 = kt_tensor(1, R, 1, 1, 1), v4 = kt_tensor(1, K, 1, 1, 1);
  gf_tensor sg = kt_tensor(1, 1, 1, 1, 1), sg4 = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor w_sn = kt_tensor(4, R, 64, 3, 3), w_sn4 = kt_tensor(4, R, 64, 3, 3);
  gf_tensor dw = kt_tensor(4, R, 64, 3, 3), dw4 = kt_tensor(4, R, 64, 3, 3);
  kt_fill(&w, rng, -0.1, 0.1, 0.0);
  kt_fill(&g, rng, -1.0, 1.0, 0.0);
  kt_fill(&u, rng, -1.0, 1.0, 0.0);
  kt_fill(&v, rng, -1.0, 1.0, 0.0);
  memcpy(u4.data, u.data, gf_tensor_nbytes(&u));
  memcpy(v4.data, v.data, gf_tensor_nbytes(&v));
  double *wd = kt_dbl(&w), *ur = kt_dbl(&u), *vr = kt_dbl(&v), sr = 0.0;
  double *wsr = kt_dzeros((size_t)(R * K)), *dwr = kt_dzeros((size_t)(R * K));
  double *gd = kt_dbl(&g);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 3, SN_EPS, &sg, &w_sn, NULL) ==
        GF_OK);
  CHECK(gf_spectral_norm_fwd(ctx4, &w, &u4, &v4, 3, SN_EPS, &sg4, &w_sn4,
                             NULL) == GF_OK);
  CHECK(kt_same_bits(&u, &u4) && kt_same_bits(&v, &v4) &&
        kt_same_bits(&sg, &sg4) && kt_same_bits(&w_sn, &w_sn4));
  ref_spectral_norm_fwd(wd, ur, vr, (int)R, (int)K, 3, SN_EPS, &sr, wsr);
  cmp_ref("sn large u", &u, ur, 1e-6, 1e-5);
  cmp_ref("sn large v", &v, vr, 1e-6, 1e-5);
  cmp_ref("sn large sigma", &sg, &sr, 0.0, 1e-5);
  cmp_ref("sn large w_sn", &w_sn, wsr, 1e-6, 1e-5);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &sg, &g, &dw, GF_OVERWRITE,
                             NULL) == GF_OK);
  CHECK(gf_spectral_norm_bwd(ctx4, &w, &u, &v, &sg, &g, &dw4, GF_OVERWRITE,
                             NULL) == GF_OK);
  CHECK(kt_same_bits(&dw, &dw4));
  double *uo = kt_dbl(&u), *vo = kt_dbl(&v);
  ref_spectral_norm_bwd(wd, uo, vo, *(float *)sg.data, gd, dwr, (int)R, (int)K);
  cmp_ref("sn large dw", &dw, dwr, 1e-6, 1e-5);
  /* GF_ACCUMULATE: dw4 = D + (the overwrite result), element by element */
  kt_fill(&dw4, rng, -1.0, 1.0, 0.0);
  gf_tensor want = kt_tensor(4, R, 64, 3, 3);
  const float *d0 = dw4.data, *o = dw.data;
  float *wp = want.data;
  for (int64_t i = 0; i < R * K; i++) wp[i] = d0[i] + o[i];
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &sg, &g, &dw4, GF_ACCUMULATE,
                             NULL) == GF_OK);
  CHECK(kt_same_bits(&dw4, &want));
  /* dw = dw_sn */
  memcpy(dw4.data, g.data, gf_tensor_nbytes(&g));
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &sg, &dw4, &dw4, GF_OVERWRITE,
                             NULL) == GF_OK);
  CHECK(kt_same_bits(&dw4, &dw));
  /* n_iter 0 leaves u and v alone */
  memcpy(u4.data, u.data, gf_tensor_nbytes(&u));
  memcpy(v4.data, v.data, gf_tensor_nbytes(&v));
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 0, SN_EPS, &sg, &w_sn, NULL) ==
        GF_OK);
  CHECK(kt_same_bits(&u, &u4) && kt_same_bits(&v, &v4));
  free(wd);
  free(ur);
  free(vr);
  free(wsr);
  free(dwr);
  free(gd);
  free(uo);
  free(vo);
  gf_tensor *all[] = {&w,   &g,    &u,     &v,  &u4,  &v4,  &sg,
                      &sg4, &w_sn, &w_sn4, &dw, &dw4, &want};
  for (size_t i = 0; i < 13; i++) gf_tensor_free(all[i]);
}

/* ---- argument errors ----------------------------------------------------- */

static void test_errors(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(2, 4, 3, 1, 1), loss = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor two = kt_tensor(1, 2, 1, 1, 1), dx = kt_tensor(2, 4, 3, 1, 1);
  gf_tensor dxb = kt_tensor(2, 3, 4, 1, 1);
  gf_err e = {0};
  /* hinge / mean */
  CHECK(gf_hinge_fwd(ctx, &x, 0.0f, &loss, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(ctx, &x, 2.0f, &loss, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(ctx, &x, NAN, &loss, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(ctx, NULL, 1.0f, &loss, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(ctx, &x, 1.0f, NULL, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(ctx, &x, 1.0f, &two, &e) == GF_EINVAL);
  CHECK(gf_hinge_fwd(NULL, &x, 1.0f, &loss, &e) == GF_EINVAL);
  CHECK(gf_hinge_bwd(ctx, &x, 0.0f, 1.0f, &dx, &e) == GF_EINVAL);
  CHECK(gf_hinge_bwd(ctx, &x, -1.0f, 1.0f, NULL, &e) == GF_EINVAL);
  CHECK(gf_hinge_bwd(ctx, &x, -1.0f, 1.0f, &dxb, &e) == GF_EINVAL);
  CHECK(gf_mean_fwd(ctx, &x, &two, &e) == GF_EINVAL);
  CHECK(gf_mean_fwd(ctx, NULL, &loss, &e) == GF_EINVAL);
  CHECK(gf_mean_fwd(ctx, &x, NULL, &e) == GF_EINVAL);
  gf_tensor xl;
  REQUIRE(gf_tensor_view(&xl, x.data, GF_F32, GF_DEV_CPU, 1, (int64_t[]){1},
                         NULL) == GF_OK);
  CHECK(gf_mean_fwd(ctx, &x, &xl, &e) == GF_EINVAL); /* loss inside x */
  /* lerp */
  gf_tensor a = kt_tensor(1, 12, 1, 1, 1), b = kt_tensor(1, 11, 1, 1, 1);
  CHECK(gf_lerp(ctx, &a, &x, 2.0, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, &a, &x, -0.1, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, &a, &x, NAN, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, &b, &x, 0.5, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, NULL, &x, 0.5, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, &a, NULL, 0.5, &e) == GF_EINVAL);
  CHECK(gf_lerp(ctx, &a, &x, 0.5, &e) == GF_OK); /* same numel, other shape */
  gf_tensor shifted;
  REQUIRE(gf_tensor_view(&shifted, (float *)a.data + 1, GF_F32, GF_DEV_CPU, 1,
                         (int64_t[]){11}, NULL) == GF_OK);
  gf_tensor a11;
  REQUIRE(gf_tensor_view(&a11, a.data, GF_F32, GF_DEV_CPU, 1, (int64_t[]){11},
                         NULL) == GF_OK);
  CHECK(gf_lerp(ctx, &a11, &shifted, 0.5, &e) == GF_EINVAL);
  /* spectral norm: w [4,3] */
  gf_tensor w = kt_tensor(2, 4, 3, 1, 1), u = kt_tensor(1, 4, 1, 1, 1);
  gf_tensor v = kt_tensor(1, 3, 1, 1, 1), s = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor ws = kt_tensor(2, 4, 3, 1, 1), dws = kt_tensor(2, 4, 3, 1, 1);
  gf_tensor dw = kt_tensor(2, 4, 3, 1, 1), u5 = kt_tensor(1, 5, 1, 1, 1);
  gf_tensor ws1 = kt_tensor(1, 12, 1, 1, 1);
  kt_rng r = {7};
  kt_fill(&w, &r, -1.0, 1.0, 0.0);
  kt_fill(&u, &r, -1.0, 1.0, 0.0);
  kt_fill(&v, &r, -1.0, 1.0, 0.0);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &s, &ws, &e) == GF_OK);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u5, &v, 1, SN_EPS, &s, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &u, 1, SN_EPS, &s, &ws, &e) ==
        GF_EINVAL); /* v has 4, not 3 (and is u) */
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &two, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, -1, SN_EPS, &s, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, 0.0f, &s, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &s, &ws1, &e) ==
        GF_EINVAL); /* w_sn [12] for w [4,3] */
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &s, &w, &e) ==
        GF_EINVAL); /* w_sn is w */
  CHECK(gf_spectral_norm_fwd(ctx, &w, NULL, &v, 1, SN_EPS, &s, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, NULL, &ws, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_fwd(ctx, &w, &u, &v, 1, SN_EPS, &s, NULL, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &dws, &dw, GF_OVERWRITE,
                             &e) == GF_OK);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &dws, NULL, GF_OVERWRITE,
                             &e) == GF_OK); /* nothing wanted */
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &dws, &dw, (gf_accum)7, &e) ==
        GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u5, &v, &s, &dws, &dw, GF_OVERWRITE,
                             &e) == GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, NULL, &dws, &dw, GF_OVERWRITE,
                             &e) == GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &ws1, &dw, GF_OVERWRITE,
                             &e) == GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &dws, &ws1, GF_OVERWRITE,
                             &e) == GF_EINVAL);
  CHECK(gf_spectral_norm_bwd(ctx, &w, &u, &v, &s, &dws, &w, GF_OVERWRITE, &e) ==
        GF_EINVAL); /* dw is w */
  gf_tensor *all[] = {&x, &loss, &two, &dx, &dxb, &a,  &b,  &w,
                      &u, &v,    &s,   &ws, &dws, &dw, &u5, &ws1};
  for (size_t i = 0; i < 16; i++) gf_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_GAN_OPS_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {2024};
  test_hinge_golden(&ctx4, &f);
  test_mean_golden(&ctx4, &f);
  test_hinge_mean_large(&ctx, &ctx4, &rng);
  test_lerp_golden(&ctx4, &f);
  test_lerp_large(&ctx, &ctx4, &rng);
  sn_case conv = {"conv", 2, {0, 1, 0}}, lin = {"linear", 3, {0, 1, 3}};
  test_sn_golden(&ctx4, &f, &conv);
  test_sn_golden(&ctx4, &f, &lin);
  test_sn_golden_fires(&ctx4, &f);
  test_sn_props(&ctx, &ctx4, &rng);
  test_errors(&ctx4);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
