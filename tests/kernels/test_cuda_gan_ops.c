/* test_cuda_gan_ops.c - the GAN ops on the CUDA backend (label gpu; exits 77
 * where there is no GPU): gf_hinge_fwd/bwd, gf_mean_fwd, gf_lerp,
 * gf_spectral_norm_fwd/bwd against the CPU twin and against PyTorch's
 * numbers (golden/gan_ops.safetensors, as test_gan_ops.c).
 * Against the CPU: bit for bit. Both backends take every sum in the order
 * of kernels/src/reduce_order.h and round every f32 operation alike (no FMA
 * contraction; lerp's FMA explicit on both), so any difference is a bug.
 * Against PyTorch: test_gan_ops.c's tolerances (hinge dx and lerp
 * bit-exact; losses 4 ulp; SN 1e-6 (|t| + max|t|), sigma 1e-6 |t|).
 * Cases: the goldens (hinge both signs with the kinks, mean, lerp at five
 * betas, SN on [8,4,3,3] and [5,7] at n_iter 0, 1, 3), then large ones:
 * hinge and mean over 100003 values, lerp over 3000017, SN on
 * [512, 256, 4, 4] at n_iter 1 and 0 with GF_ACCUMULATE and dw = dw_sn,
 * each repeated for identical bits; a host tensor on the CUDA ctx is
 * refused.
 * Argument 1: the golden file (default GF_GAN_OPS_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/safetensors.h"
#include "kt_cuda.h"
#include "kt_util.h"

#ifndef GF_GAN_OPS_GOLDEN
#define GF_GAN_OPS_GOLDEN "gan_ops.safetensors"
#endif

#define SN_EPS 1e-12f

static gf_ctx cpu, gpu;
static kt_rng rng = {4242};

/* A host tensor and its device copy. */
typedef struct twin {
  gf_tensor h, d;
} twin;

static twin tw_of(const gf_tensor *h) {
  twin t;
  t.h = kt_tensor(h->ndim, h->shape[0], h->shape[1], h->shape[2], h->shape[3]);
  memcpy(t.h.data, h->data, gf_tensor_nbytes(h));
  t.d = kt_to_dev(&t.h);
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
static void tw_free(twin *t) {
  gf_tensor_free(&t->h);
  gf_tensor_free(&t->d);
}
/* Sets both halves to the host values of src. */
static void tw_set(twin *t, const gf_tensor *src) {
  gf_err e = {0};
  REQUIRE(gf_tensor_nbytes(src) == gf_tensor_nbytes(&t->h));
  memcpy(t->h.data, src->data, gf_tensor_nbytes(src));
  REQUIRE(gf_tensor_copy(&t->d, &t->h, &e) == GF_OK);
}

/* The device half equals the host half bit for bit (the worst difference
 * is printed on a miss). */
static void same(const char *label, const twin *t) {
  size_t nb = kt_diff_bytes(&t->d, &t->h);
  if (nb) (void)kt_cmp_dev(label, &t->d, &t->h, (kt_tol){0.0, 0.0});
  CHECKF(nb == 0, "%s: CUDA differs from the CPU in %zu bytes", label, nb);
}

/* ---- golden -------------------------------------------------------------- */

static gf_tensor gold(const gf_st_file *f, const char *name) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t || t->dtype != GF_ST_F32 || t->ndim > 4) {
    fprintf(stderr, "golden: %s missing or not f32 with <= 4 dims\n", name);
    exit(1);
  }
  int64_t s[4] = {1, 1, 1, 1};
  for (int i = 0; i < t->ndim; i++) s[i] = t->shape[i];
  gf_tensor g = kt_tensor(t->ndim ? t->ndim : 1, s[0], s[1], s[2], s[3]);
  REQUIRE(gf_tensor_nbytes(&g) == t->nbytes);
  memcpy(g.data, t->data, t->nbytes);
  return g;
}

/* The device tensor against PyTorch's want: |d| <= atol + rtol |t| +
 * srel max|t|, or bit-exact with atol < 0 (test_gan_ops.c's tolerances). */
static void vs_torch(const char *what, const gf_tensor *dev,
                     const gf_tensor *want, double atol, double rtol,
                     double srel) {
  gf_tensor h = kt_to_host(dev);
  REQUIRE(gf_tensor_numel(&h) == gf_tensor_numel(want));
  const float *g = h.data, *t = want->data;
  size_t n = (size_t)gf_tensor_numel(&h), bad = 0;
  double tmax = 0.0;
  for (size_t i = 0; i < n; i++) tmax = fmax(tmax, fabs((double)t[i]));
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - (double)t[i]);
    bool ok = atol < 0 ? memcmp(&g[i], &t[i], 4) == 0
                       : d <= atol + rtol * fabs((double)t[i]) + srel * tmax;
    if (!ok && bad++ < 3)
      fprintf(stderr, "  %s[%zu]: %.9g vs PyTorch %.9g\n", what, i, g[i], t[i]);
  }
  CHECKF(bad == 0, "%s: %zu of %zu outside tolerance", what, bad, n);
  gf_tensor_free(&h);
}

static void test_hinge_mean_golden(const gf_st_file *f) {
  gf_tensor xh = gold(f, "hinge.x"), dl = gold(f, "hinge.dloss");
  float dloss = *(float *)dl.data;
  twin x = tw_of(&xh);
  int64_t n = gf_tensor_numel(&xh);
  twin loss = tw_rnd(1, 1, 1, 1, 1, 0, 1), dx = tw_rnd(1, n, 1, 1, 1, 0, 1);
  gf_err e = {0};
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    char name[48];
    snprintf(name, sizeof name, "hinge.%s.loss", s ? "fake" : "real");
    gf_tensor tl = gold(f, name);
    snprintf(name, sizeof name, "hinge.%s.dx", s ? "fake" : "real");
    gf_tensor tdx = gold(f, name);
    REQUIRE(gf_hinge_fwd(&cpu, &x.h, sign, &loss.h, &e) == GF_OK);
    CHECKF(gf_hinge_fwd(&gpu, &x.d, sign, &loss.d, &e) == GF_OK, "%s", e.msg);
    same("hinge loss", &loss);
    vs_torch("hinge loss", &loss.d, &tl, 0.0, 4 * 0x1p-24, 0.0);
    REQUIRE(gf_hinge_bwd(&cpu, &x.h, sign, dloss, &dx.h, &e) == GF_OK);
    CHECKF(gf_hinge_bwd(&gpu, &x.d, sign, dloss, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    same("hinge dx", &dx);
    vs_torch("hinge dx", &dx.d, &tdx, -1.0, 0.0, 0.0);
    /* in place on the device: dx = x */
    twin y = tw_of(&xh);
    CHECK(gf_hinge_bwd(&gpu, &y.d, sign, dloss, &y.d, &e) == GF_OK);
    vs_torch("hinge dx in place", &y.d, &tdx, -1.0, 0.0, 0.0);
    tw_free(&y);
    gf_tensor_free(&tl);
    gf_tensor_free(&tdx);
  }
  gf_tensor mx = gold(f, "mean.x"), ml = gold(f, "mean.loss");
  twin m = tw_of(&mx);
  REQUIRE(gf_mean_fwd(&cpu, &m.h, &loss.h, &e) == GF_OK);
  CHECKF(gf_mean_fwd(&gpu, &m.d, &loss.d, &e) == GF_OK, "%s", e.msg);
  same("mean loss", &loss);
  vs_torch("mean loss", &loss.d, &ml, 0.0, 4 * 0x1p-24, 0.0);
  tw_free(&m);
  tw_free(&x);
  tw_free(&loss);
  tw_free(&dx);
  gf_tensor *all[] = {&xh, &dl, &mx, &ml};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static const double kBetas[5] = {0.0, 0.3, 0.5, 0.999, 1.0};

static void test_lerp_golden(const gf_st_file *f) {
  gf_tensor avg0 = gold(f, "lerp.avg"), xh = gold(f, "lerp.x");
  twin x = tw_of(&xh), a = tw_of(&avg0);
  for (int i = 0; i < 5; i++) {
    char name[32];
    snprintf(name, sizeof name, "lerp.out%d", i);
    gf_tensor want = gold(f, name);
    tw_set(&a, &avg0);
    gf_err e = {0};
    REQUIRE(gf_lerp(&cpu, &a.h, &x.h, kBetas[i], &e) == GF_OK);
    CHECKF(gf_lerp(&gpu, &a.d, &x.d, kBetas[i], &e) == GF_OK, "%s", e.msg);
    same("lerp", &a);
    vs_torch("lerp", &a.d, &want, -1.0, 0.0, 0.0);
    gf_tensor_free(&want);
  }
  tw_free(&x);
  tw_free(&a);
  gf_tensor_free(&avg0);
  gf_tensor_free(&xh);
}

static void test_sn_golden(const gf_st_file *f, const char *cs, int n_iters,
                           const int *iters) {
  char name[64];
#define GOLD(...) (snprintf(name, sizeof name, __VA_ARGS__), gold(f, name))
  gf_tensor wh = GOLD("sn.%s.w", cs), u0 = GOLD("sn.%s.u0", cs);
  gf_tensor v0 = GOLD("sn.%s.v0", cs), gh = GOLD("sn.%s.g", cs);
  twin w = tw_of(&wh), g = tw_of(&gh), u = tw_of(&u0), v = tw_of(&v0);
  twin sigma = tw_rnd(1, 1, 1, 1, 1, 0, 1), w_sn = tw_of(&wh), dw = tw_of(&wh);
  for (int ii = 0; ii < n_iters; ii++) {
    int it = iters[ii];
    tw_set(&u, &u0);
    tw_set(&v, &v0);
    gf_err e = {0};
    REQUIRE(gf_spectral_norm_fwd(&cpu, &w.h, &u.h, &v.h, it, SN_EPS, &sigma.h,
                                 &w_sn.h, &e) == GF_OK);
    CHECKF(gf_spectral_norm_fwd(&gpu, &w.d, &u.d, &v.d, it, SN_EPS, &sigma.d,
                                &w_sn.d, &e) == GF_OK,
           "%s", e.msg);
    REQUIRE(gf_spectral_norm_bwd(&cpu, &w.h, &u.h, &v.h, &sigma.h, &g.h, &dw.h,
                                 GF_OVERWRITE, &e) == GF_OK);
    CHECKF(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &g.d, &dw.d,
                                GF_OVERWRITE, &e) == GF_OK,
           "%s", e.msg);
    const char *part[5] = {"u", "v", "sigma", "w_sn", "dw"};
    twin *got[5] = {&u, &v, &sigma, &w_sn, &dw};
    for (int q = 0; q < 5; q++) {
      char what[48];
      snprintf(what, sizeof what, "sn %s it%d %s", cs, it, part[q]);
      same(what, got[q]);
      gf_tensor t = GOLD("sn.%s.it%d.%s", cs, it, part[q]);
      vs_torch(what, &got[q]->d, &t, 0.0, 1e-6, q == 2 ? 0.0 : 1e-6);
      gf_tensor_free(&t);
    }
  }
  twin *tws[] = {&w, &g, &u, &v, &sigma, &w_sn, &dw};
  for (size_t i = 0; i < 7; i++) tw_free(tws[i]);
  gf_tensor *all[] = {&wh, &u0, &v0, &gh};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
#undef GOLD
}

/* ---- large cases --------------------------------------------------------- */

static void test_large_eltwise(void) {
  gf_err e = {0};
  int64_t n = 100003;
  twin x = tw_rnd(1, n, 1, 1, 1, -3.0, 3.0), dx = tw_rnd(1, n, 1, 1, 1, 0, 1);
  twin loss = tw_rnd(1, 1, 1, 1, 1, 0, 1);
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    REQUIRE(gf_hinge_fwd(&cpu, &x.h, sign, &loss.h, &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_hinge_fwd(&gpu, &x.d, sign, &loss.d, &e) == GF_OK, "%s", e.msg);
      same("hinge large loss", &loss);
    }
    REQUIRE(gf_hinge_bwd(&cpu, &x.h, sign, 0.5f, &dx.h, &e) == GF_OK);
    CHECKF(gf_hinge_bwd(&gpu, &x.d, sign, 0.5f, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    same("hinge large dx", &dx);
  }
  REQUIRE(gf_mean_fwd(&cpu, &x.h, &loss.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_mean_fwd(&gpu, &x.d, &loss.d, &e) == GF_OK, "%s", e.msg);
    same("mean large", &loss);
  }
  /* lerp over 3M values: a generator's parameter arena */
  int64_t m = 3000017;
  twin a = tw_rnd(1, m, 1, 1, 1, -1.0, 1.0),
       p = tw_rnd(1, m, 1, 1, 1, -1.0, 1.0);
  for (int i = 0; i < 5; i++) {
    REQUIRE(gf_lerp(&cpu, &a.h, &p.h, kBetas[i], &e) == GF_OK);
    CHECKF(gf_lerp(&gpu, &a.d, &p.d, kBetas[i], &e) == GF_OK, "%s", e.msg);
    same("lerp large", &a);
  }
  twin *all[] = {&x, &dx, &loss, &a, &p};
  for (size_t i = 0; i < 5; i++) tw_free(all[i]);
}

/* SN of a [512, 256, 4, 4] conv weight (K = 4096). */
static void test_large_sn(void) {
  gf_err e = {0};
  int64_t R = 512, K = 4096;
  twin w = tw_rnd(4, R, 256, 4, 4, -0.05, 0.05);
  twin g = tw_rnd(4, R, 256, 4, 4, -1.0, 1.0);
  twin u = tw_rnd(1, R, 1, 1, 1, -1.0, 1.0), v = tw_rnd(1, K, 1, 1, 1, -1, 1);
  twin sigma = tw_rnd(1, 1, 1, 1, 1, 0, 1);
  twin w_sn = tw_rnd(4, R, 256, 4, 4, 0, 1),
       dw = tw_rnd(4, R, 256, 4, 4, -1, 1);
  for (int pass = 0; pass < 3; pass++) {
    int it = pass == 2 ? 0 : 1; /* two training calls, then inference */
    REQUIRE(gf_spectral_norm_fwd(&cpu, &w.h, &u.h, &v.h, it, SN_EPS, &sigma.h,
                                 &w_sn.h, &e) == GF_OK);
    CHECKF(gf_spectral_norm_fwd(&gpu, &w.d, &u.d, &v.d, it, SN_EPS, &sigma.d,
                                &w_sn.d, &e) == GF_OK,
           "%s", e.msg);
    same("sn large u", &u);
    same("sn large v", &v);
    same("sn large sigma", &sigma);
    same("sn large w_sn", &w_sn);
    /* accumulate into the random dw, then overwrite */
    gf_accum acc = pass == 0 ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_spectral_norm_bwd(&cpu, &w.h, &u.h, &v.h, &sigma.h, &g.h, &dw.h,
                                 acc, &e) == GF_OK);
    CHECKF(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &g.d, &dw.d,
                                acc, &e) == GF_OK,
           "%s", e.msg);
    same(acc ? "sn large dw accumulate" : "sn large dw", &dw);
  }
  /* dw = dw_sn on the device equals the separate result */
  twin gg = tw_of(&g.h);
  CHECK(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &gg.d, &gg.d,
                             GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_diff_bytes(&gg.d, &dw.h) == 0);
  /* a host tensor is not on the CUDA ctx's device */
  CHECK(gf_spectral_norm_fwd(&gpu, &w.h, &u.d, &v.d, 1, SN_EPS, &sigma.d,
                             &w_sn.d, &e) == GF_EINVAL);
  CHECK(gf_lerp(&gpu, &w_sn.d, &w.h, 0.5, &e) == GF_EINVAL);
  twin *all[] = {&w, &g, &u, &v, &sigma, &w_sn, &dw, &gg};
  for (size_t i = 0; i < 8; i++) tw_free(all[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  const char *path = argc > 1 ? argv[1] : GF_GAN_OPS_GOLDEN;
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err e = {0};
  if (gf_st_open(&f, path, 0, &e) != GF_OK) {
    fprintf(stderr, "%s: %s\n", path, e.msg);
    return 1;
  }
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&cpu, &cc, &e) == GF_OK);
  test_hinge_mean_golden(&f);
  test_lerp_golden(&f);
  static const int conv_it[] = {0, 1}, lin_it[] = {0, 1, 3};
  test_sn_golden(&f, "conv", 2, conv_it);
  test_sn_golden(&f, "linear", 3, lin_it);
  test_large_eltwise();
  test_large_sn();
  gf_err se = {0};
  CHECKF(gf_ctx_sync(&gpu, &se) == GF_OK, "%s", se.msg);
  gf_ctx_free(&gpu);
  gf_ctx_free(&cpu);
  gf_st_file_free(&f);
  return check_report();
}
