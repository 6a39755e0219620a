/* test_ada.c - the ADA pipeline (gf/ada.h) on the CPU: against the
 * official StyleGAN2-ADA AugmentPipe (bgc) run with the same draws
 * (golden/ada.safetensors, written by golden/make_ada_golden.py from the
 * official code at d72cc7d; no Python needed here), the draws' statistics,
 * the same draws for a batch cut in two, and the p controller against
 * hand-computed steps.
 *
 * Against the official code, per case (RGB and 1-channel, p = 1, 0.3 and
 * 0.6): the reflect margin equal to the official one; the output y and the
 * input gradient dx (autograd there) within 2^-16 max|t| (the official
 * pipeline runs the same chain in f32 with its own summation orders and a
 * separable filter; each run prints the worst difference). Each
 * comparison is shown to fire: the golden with one element moved by
 * 2^-8 max|t| must miss, and the pipeline run at another p must miss.
 * Draws: over 40000 samples, every gate passes at rate p within 5 sigma
 * (and a wrong rate p + 0.02 is rejected), the uniform columns are in
 * [0, 1) with mean 1/2, the normal ones have mean 0 and variance 1 within
 * 5 sigma. A batch of 16 drawn whole equals its two halves drawn with
 * sample0 0 and 8 bit for bit (and a half drawn at sample0 9 differs);
 * the pipeline run on each half (its own margin, as two ranks would)
 * gives the whole batch's images within 2^-16 max|t|.
 * Controller: hand-computed p and rt over 12 steps (increase, decrease,
 * the floor at 0, rt == target, a window without logits), compared bit for
 * bit (one ulp off must be noticed); the argument checks.
 * Argument 1: the golden file (default GF_ADA_GOLDEN from CMake). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/ada.h"
#include "gf/kernels.h"
#include "gf/safetensors.h"

#ifndef GF_ADA_GOLDEN
#define GF_ADA_GOLDEN "ada.safetensors"
#endif

/* An owned CPU copy of golden tensor pre.sfx (f32 or i32, as stored). */
static gf_tensor gold(const gf_st_file *f, const char *pre, const char *sfx) {
  char name[96];
  snprintf(name, sizeof name, "%s.%s", pre, sfx);
  const gf_st_tensor *t = gf_st_find(f, name);
  REQUIRE(t != NULL);
  REQUIRE(t->dtype == GF_ST_F32 || t->dtype == GF_ST_I32);
  gf_tensor out;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&out, t->dtype == GF_ST_F32 ? GF_F32 : GF_I32,
                         GF_DEV_CPU, t->ndim, t->shape, &e) == GF_OK);
  memcpy(out.data, t->data, t->nbytes);
  return out;
}

static gf_tensor zeros_like(const gf_tensor *t) {
  gf_tensor out;
  gf_err e = {0};
  REQUIRE(gf_tensor_init(&out, GF_F32, GF_DEV_CPU, t->ndim, t->shape, &e) ==
          GF_OK);
  return out;
}

/* Misses of got against want: |d| > tol max|want|; prints the worst when
 * verbose. */
static size_t misses(const char *what, const gf_tensor *got,
                     const gf_tensor *want, double tol, int verbose) {
  const float *g = got->data, *w = want->data;
  int64_t n = gf_tensor_numel(want);
  double mx = 0.0, worst = 0.0;
  for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)w[i]));
  size_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - w[i]);
    if (!(d <= tol * mx)) bad++;
    if (d > worst || isnan(d)) worst = d;
  }
  if (verbose)
    printf("%-16s n %-6lld worst |d| %.3g = %.3g max|t| (tol %.3g), max|t| "
           "%.3g\n", what, (long long)n, worst, worst / mx, tol, mx);
  return bad;
}

#define TOL 0x1p-16

/* misses of got against want with want's middle element moved by 2^-8
 * max|want| (want is restored). */
static size_t moved_misses(const gf_tensor *got, gf_tensor *want) {
  float *v = want->data, mx = 0.0f;
  for (int64_t i = 0; i < gf_tensor_numel(want); i++) mx = fmaxf(mx, fabsf(v[i]));
  int64_t mid = gf_tensor_numel(want) / 2;
  float keep = v[mid];
  v[mid] += 0x1p-8f * mx;
  size_t m = misses("moved", got, want, TOL, 0);
  v[mid] = keep;
  return m;
}

static void test_golden(gf_ctx *ctx, const gf_st_file *f, const char *name) {
  gf_tensor x = gold(f, name, "x"), params = gold(f, name, "params");
  gf_tensor pt = gold(f, name, "p"), padt = gold(f, name, "pad");
  gf_tensor y = gold(f, name, "y"), g = gold(f, name, "g");
  gf_tensor dx = gold(f, name, "dx");
  float p = ((float *)pt.data)[0];
  int64_t N = x.shape[0];
  REQUIRE(params.shape[1] == GF_ADA_NPARAMS);
  gf_err e = {0};
  /* the margin */
  float *th = malloc((size_t)N * 6 * sizeof(float));
  float *co = malloc((size_t)N * 16 * sizeof(float));
  REQUIRE(th && co);
  int pad[4];
  CHECKF(gf_ada_matrices(params.data, N, x.shape[1], x.shape[2], x.shape[3],
                         p, th, co, pad, &e) == GF_OK, "%s", e.msg);
  const int *want_pad = padt.data;
  printf("%-16s margin %d %d %d %d (official %d %d %d %d)\n", name, pad[0],
         pad[1], pad[2], pad[3], want_pad[0], want_pad[1], want_pad[2],
         want_pad[3]);
  CHECKF(memcmp(pad, want_pad, sizeof pad) == 0, "%s: margin differs", name);
  /* forward, backward */
  gf_ada a;
  REQUIRE(gf_ada_init(&a, ctx, &e) == GF_OK);
  gf_tensor gy = zeros_like(&y), gdx = zeros_like(&dx);
  CHECKF(gf_ada_fwd(&a, &x, params.data, p, &gy, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_ada_bwd(&a, &g, &gdx, &e) == GF_OK, "%s", e.msg);
  char what[64];
  snprintf(what, sizeof what, "%s.y", name);
  CHECKF(misses(what, &gy, &y, TOL, 1) == 0, "%s", what);
  snprintf(what, sizeof what, "%s.dx", name);
  CHECKF(misses(what, &gdx, &dx, TOL, 1) == 0, "%s", what);
  /* fires: a moved element (y and dx); the pipeline at another p */
  CHECKF(moved_misses(&gy, &y) == 1, "%s: a moved y went unnoticed", name);
  CHECKF(moved_misses(&gdx, &dx) == 1, "%s: a moved dx went unnoticed", name);
  float p2 = p > 0.5f ? 0.5f : p + 0.3f;
  CHECK(gf_ada_fwd(&a, &x, params.data, p2, &gy, &e) == GF_OK);
  CHECKF(misses("other p", &gy, &y, TOL, 0) > 0, "%s: p does not matter",
         name);
  gf_ada_free(&a);
  free(th);
  free(co);
  gf_tensor *all[] = {&x, &params, &pt, &padt, &y, &g, &dx, &gy, &gdx};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    gf_tensor_free(all[k]);
}

/* |rate - p| within 5 sigma of a binomial over n. */
static int rate_ok(double hits, double n, double p) {
  double sigma = sqrt(p * (1 - p) / n);
  return fabs(hits / n - p) <= 5 * sigma;
}

static void test_draw_stats(void) {
  enum { N = 40000 };
  float *r = malloc((size_t)N * GF_ADA_NPARAMS * sizeof(float));
  REQUIRE(r);
  gf_err e = {0};
  REQUIRE(gf_ada_draw(r, N, 42, 7, 1, 1000, &e) == GF_OK);
  const float p = 0.3f;
  for (int k = 0; k < GF_ADA_NGATES; k++) {
    int c = gf_ada_gate_column(k);
    double hits = 0;
    for (int i = 0; i < N; i++) hits += r[i * GF_ADA_NPARAMS + c] < p;
    CHECKF(rate_ok(hits, N, p), "gate %d: rate %.4f for p %.2f", k, hits / N,
           (double)p);
    CHECKF(!rate_ok(hits, N, p + 0.02), "gate %d: a wrong rate passes", k);
  }
  for (int c = 0; c < GF_ADA_NPARAMS; c++) {
    double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < N; i++) {
      double v = r[i * GF_ADA_NPARAMS + c];
      s += v;
      s2 += v * v;
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
    double mean = s / N, var = s2 / N - mean * mean;
    if (gf_ada_column_is_normal(c)) {
      CHECKF(fabs(mean) <= 5 / sqrt(N), "column %d: mean %.4f", c, mean);
      CHECKF(fabs(var - 1) <= 5 * sqrt(2.0 / N), "column %d: var %.4f", c,
             var);
    } else {
      CHECKF(lo >= 0 && hi < 1, "column %d: range [%g, %g]", c, lo, hi);
      CHECKF(fabs(mean - 0.5) <= 5 * sqrt(1.0 / 12 / N), "column %d: mean "
             "%.4f", c, mean);
    }
  }
  /* the rotation happens (pre or post) at rate p */
  double rot = 0;
  float q = 1.0f - sqrtf(1.0f - p);
  for (int i = 0; i < N; i++)
    rot += r[i * GF_ADA_NPARAMS + GF_ADA_P_ROT_PRE_GATE] < q ||
           r[i * GF_ADA_NPARAMS + GF_ADA_P_ROT_POST_GATE] < q;
  CHECKF(rate_ok(rot, N, p), "rotation rate %.4f", rot / N);
  printf("draws: %d samples, 13 gates at p %.2f within 5 sigma, rotation "
         "(pre or post) %.4f\n", N, (double)p, rot / N);
  free(r);
}

static void test_split(void) {
  float whole[16 * GF_ADA_NPARAMS], half[16 * GF_ADA_NPARAMS];
  float off[8 * GF_ADA_NPARAMS];
  gf_err e = {0};
  REQUIRE(gf_ada_draw(whole, 16, 99, 123, 2, 0, &e) == GF_OK);
  REQUIRE(gf_ada_draw(half, 8, 99, 123, 2, 0, &e) == GF_OK);
  REQUIRE(gf_ada_draw(half + 8 * GF_ADA_NPARAMS, 8, 99, 123, 2, 8, &e) ==
          GF_OK);
  REQUIRE(gf_ada_draw(off, 8, 99, 123, 2, 9, &e) == GF_OK);
  CHECK(memcmp(whole, half, sizeof whole) == 0);
  CHECK(memcmp(whole + 8 * GF_ADA_NPARAMS, off, sizeof off) != 0);
  /* another pass or step draws other numbers */
  REQUIRE(gf_ada_draw(half, 16, 99, 123, 3, 0, &e) == GF_OK);
  CHECK(memcmp(whole, half, sizeof whole) != 0);
  CHECK(gf_ada_draw(whole, -1, 0, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_ada_draw(NULL, 2, 0, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_ada_draw(whole, 2, 0, -1, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_ada_draw(whole, 2, 0, 0, -1, 0, &e) == GF_EINVAL);
}

/* The pipeline on a batch cut in two (each half with its own margin, as
 * two ranks would run it) against the whole batch: the same draws per
 * sample give the same images up to rounding (the margins differ, so the
 * normalised coordinates round differently). */
static void test_split_pipeline(gf_ctx *ctx) {
  enum { N = 8 };
  gf_err e = {0};
  const int64_t s[4] = {N, 3, 16, 16}, h[4] = {N / 2, 3, 16, 16};
  float params[N * GF_ADA_NPARAMS];
  REQUIRE(gf_ada_draw(params, N, 5, 11, 0, 0, &e) == GF_OK);
  gf_tensor x, y, yh[2], xh[2];
  REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, s, &e) == GF_OK);
  REQUIRE(gf_tensor_init(&y, GF_F32, GF_DEV_CPU, 4, s, &e) == GF_OK);
  float *xv = x.data;
  for (int64_t i = 0; i < gf_tensor_numel(&x); i++)
    xv[i] = (float)sin(0.37 * (double)i) + 0.25f * (float)cos(0.011 * i * i);
  gf_ada a;
  REQUIRE(gf_ada_init(&a, ctx, &e) == GF_OK);
  CHECK(gf_ada_fwd(&a, &x, params, 0.8f, &y, &e) == GF_OK);
  int pads[2][4];
  for (int k = 0; k < 2; k++) {
    float *th = malloc(N / 2 * 6 * sizeof(float));
    float *co = malloc(N / 2 * 16 * sizeof(float));
    REQUIRE(th && co);
    REQUIRE(gf_ada_matrices(params + k * (N / 2) * GF_ADA_NPARAMS, N / 2, 3,
                            16, 16, 0.8f, th, co, pads[k], &e) == GF_OK);
    free(th);
    free(co);
    REQUIRE(gf_tensor_view(&xh[k], xv + k * (N / 2) * 3 * 256, GF_F32,
                           GF_DEV_CPU, 4, h, &e) == GF_OK);
    REQUIRE(gf_tensor_view(&yh[k], (float *)y.data + k * (N / 2) * 3 * 256,
                           GF_F32, GF_DEV_CPU, 4, h, &e) == GF_OK);
    gf_tensor got;
    REQUIRE(gf_tensor_init(&got, GF_F32, GF_DEV_CPU, 4, h, &e) == GF_OK);
    CHECK(gf_ada_fwd(&a, &xh[k], params + k * (N / 2) * GF_ADA_NPARAMS, 0.8f,
                     &got, &e) == GF_OK);
    CHECKF(misses(k ? "split half 1" : "split half 0", &got, &yh[k], TOL, 1)
           == 0, "half %d differs from the whole batch", k);
    gf_tensor_free(&got);
  }
  printf("split margins %d %d %d %d / %d %d %d %d\n", pads[0][0],
         pads[0][1], pads[0][2], pads[0][3], pads[1][0], pads[1][1],
         pads[1][2], pads[1][3]);
  gf_ada_free(&a);
  gf_tensor_free(&x);
  gf_tensor_free(&y);
}

static int same_f(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void test_ctl(void) {
  /* batch 32, interval 4, target 0.6, ada_kimg 500: one adjustment is
   * 32 * 4 / 500000 = 2.56e-4 */
  const double adj = 32.0 * 4 / 500000;
  gf_ada_ctl c = gf_ada_ctl_start(0.0f), n;
  gf_err e = {0};
  CHECK(isnan(c.rt) && c.p == 0.0f);
  /* steps 1..4: signs +100 of 128 real logits -> rt 0.78125 > 0.6 */
  const double sums[12] = {30, 20, 26, 24, 10, 12, 8, 2, 19, 19, 19, 20};
  const int64_t counts[12] = {32, 32, 32, 32, 32, 32, 32, 32, 0, 0, 0, 0};
  float want_p[12], p = 0.0f;
  double want_rt[12], rt = NAN;
  for (int s = 0; s < 12; s++) want_p[s] = 0, want_rt[s] = NAN;
  /* hand-computed: step 4 rt = 100/128 -> p = (float)adj; step 8 rt =
   * 32/128 = 0.25 -> p = max((float)adj - (float)adj, 0) = 0; step 12: no
   * logits since step 8 (counts 0, sums ignored) -> unchanged */
  for (int s = 0; s < 12; s++) {
    if (s == 3) p = 0.0f + (float)adj, rt = 100.0 / 128;
    if (s == 7) p = fmaxf(p - (float)adj, 0.0f), rt = 32.0 / 128;
    want_p[s] = p;
    want_rt[s] = rt;
  }
  for (int s = 0; s < 12; s++) {
    double sum = counts[s] ? sums[s] : 0.0;
    CHECKF(gf_ada_ctl_step(&c, sum, counts[s], s + 1, 32, 4, 0.6, 500.0, &n,
                           &e) == GF_OK, "%s", e.msg);
    c = n;
    CHECKF(same_f(c.p, want_p[s]), "step %d: p %.9g want %.9g", s + 1,
           (double)c.p, (double)want_p[s]);
    CHECKF((isnan(c.rt) && isnan(want_rt[s])) || c.rt == want_rt[s],
           "step %d: rt %g want %g", s + 1, c.rt, want_rt[s]);
  }
  printf("controller: %s %.9g %s %.9g after step 4 (adjust %.6g)\n",
         GF_ADA_LOG_P, (double)want_p[3], GF_ADA_LOG_RT, want_rt[3], adj);
  CHECK(!same_f(want_p[3], nextafterf(want_p[3], 1.0f))); /* fires */
  /* rt == target: no change; p above 1 is not clamped; the floor */
  gf_ada_ctl h = gf_ada_ctl_start(0.5f);
  CHECK(gf_ada_ctl_step(&h, 60, 100, 4, 32, 4, 0.6, 500.0, &n, &e) == GF_OK);
  CHECK(same_f(n.p, 0.5f) && n.rt == 0.6);
  h = gf_ada_ctl_start(1.0f);
  CHECK(gf_ada_ctl_step(&h, 100, 100, 8, 64, 4, 0.6, 0.1, &n, &e) == GF_OK);
  CHECK(same_f(n.p, 1.0f + (float)(64.0 * 4 / 100)));
  h = gf_ada_ctl_start(0.001f);
  CHECK(gf_ada_ctl_step(&h, -10, 10, 4, 64, 4, 0.6, 0.1, &n, &e) == GF_OK);
  CHECK(same_f(n.p, 0.0f) && n.sign_count == 0 && n.sign_sum == 0);
  /* not an adjustment step: accumulates */
  CHECK(gf_ada_ctl_step(&h, 3, 5, 3, 64, 4, 0.6, 0.1, &n, &e) == GF_OK);
  CHECK(n.sign_sum == 3 && n.sign_count == 5 && same_f(n.p, 0.001f));
  /* argument checks */
  CHECK(gf_ada_ctl_step(&h, 6, 5, 3, 64, 4, 0.6, 0.1, &n, &e) == GF_EINVAL);
  CHECK(gf_ada_ctl_step(&h, 0, 5, 0, 64, 4, 0.6, 0.1, &n, &e) == GF_EINVAL);
  CHECK(gf_ada_ctl_step(&h, 0, 5, 1, 0, 4, 0.6, 0.1, &n, &e) == GF_EINVAL);
  CHECK(gf_ada_ctl_step(&h, 0, 5, 1, 8, 0, 0.6, 0.1, &n, &e) == GF_EINVAL);
  CHECK(gf_ada_ctl_step(&h, 0, 5, 1, 8, 4, NAN, 0.1, &n, &e) == GF_EINVAL);
  CHECK(gf_ada_ctl_step(&h, 0, 5, 1, 8, 4, 0.6, 0.0, &n, &e) == GF_EINVAL);
}

static void test_args(gf_ctx *ctx) {
  gf_err e = {0};
  gf_ada a;
  REQUIRE(gf_ada_init(&a, ctx, &e) == GF_OK);
  const int64_t s2[4] = {2, 2, 8, 8}, s3[4] = {2, 3, 8, 8};
  gf_tensor x2, x3, y3;
  REQUIRE(gf_tensor_init(&x2, GF_F32, GF_DEV_CPU, 4, s2, &e) == GF_OK);
  REQUIRE(gf_tensor_init(&x3, GF_F32, GF_DEV_CPU, 4, s3, &e) == GF_OK);
  REQUIRE(gf_tensor_init(&y3, GF_F32, GF_DEV_CPU, 4, s3, &e) == GF_OK);
  float params[2 * GF_ADA_NPARAMS];
  REQUIRE(gf_ada_draw(params, 2, 1, 1, 0, 0, &e) == GF_OK);
  CHECK(gf_ada_bwd(&a, &x3, &y3, &e) == GF_EINVAL); /* no forward yet */
  CHECK(gf_ada_fwd(&a, &x2, params, 1.0f, &x2, &e) == GF_EINVAL); /* C 2 */
  CHECK(gf_ada_fwd(&a, &x3, params, NAN, &y3, &e) == GF_EINVAL);
  CHECK(gf_ada_fwd(&a, &x3, params, -0.5f, &y3, &e) == GF_EINVAL);
  CHECK(gf_ada_fwd(&a, &x3, params, 1.0f, &y3, &e) == GF_OK);
  CHECK(gf_ada_bwd(&a, &y3, &x3, &e) == GF_OK);
  gf_ada_free(&a);
  gf_ada_free(&a); /* twice is fine */
  gf_tensor_free(&x2);
  gf_tensor_free(&x3);
  gf_tensor_free(&y3);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : GF_ADA_GOLDEN;
  gf_ctx ctx;
  gf_err e = {0};
  gf_ctx_config cc = {.backend = GF_BACKEND_CPU, .nthreads = 2};
  REQUIRE(gf_ctx_init(&ctx, &cc, &e) == GF_OK);
  gf_st_file f;
  gf_st_file_init(&f);
  REQUIRE(gf_st_open(&f, path, 0, &e) == GF_OK);
  const char *cases[] = {"rgb_p1", "rgb_p03", "rgb_wide", "gray_p1",
                         "gray_p03"};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    test_golden(&ctx, &f, cases[k]);
  test_draw_stats();
  test_split();
  test_split_pipeline(&ctx);
  test_ctl();
  test_args(&ctx);
  gf_st_file_free(&f);
  gf_ctx_free(&ctx);
  return check_report();
}
