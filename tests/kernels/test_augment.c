/* test_augment.c - DiffAugment on the CPU backend (gf_augment_fwd / _bwd)
 * and its draws (gf_augment_draw, model/): the op against PyTorch's numbers
 * for the official DiffAugment_pytorch.py (golden/augment.safetensors,
 * written by golden/make_augment_golden.py; no Python needed here) for
 * each policy alone, translation + cutout, and all three, at 4 x 1 x 28 x
 * 28, 2 x 3 x 32 x 32 and 4 x 2 x 13 x 17 (odd cutout sizes, H != W), with
 * the shifts at both extremes and the cutout at the borders; against a
 * double reference of the spec (also for shifts beyond the image, fractions
 * and 1 x 1 images) and the transpose identity <g, A x> = <A^T g, x>; the
 * same bits at 1 and 4 threads and in place (y = x, dx = dy); the
 * argument errors. The draws: the same rows per global sample however the
 * batch is cut (12 = 5 + 7), columns independent of the other policy
 * bits, neutral columns for a policy not asked for, ranges, every integer
 * reached, means within 4 standard errors and integer frequencies within
 * 5 sigma over 40000 samples.
 *
 * Tolerances against PyTorch (f32 on both sides; the worst difference of
 * each comparison is printed, in ulp and relative to the tensor's largest
 * |value|):
 *   translation, cutout, both (y, dx)   bit-exact (data movement, x * 1 or
 *                                       x * 0 with x's sign, the scatter's
 *                                       -0 -> +0)
 *   color, all (y)      |d| <= 2^-22 max|t|: the channel means are
 *                       PyTorch's bits (f32 in channel order); the sample
 *                       mean's sum is double lanes here, PyTorch's f32
 *                       cascade there, so M may differ in its last bit
 *                       (measured: see the printed lines, <= 1 ulp of M)
 *   color, all (dx)     |d| <= 2^-20 max|t|: each mean's gradient is the
 *                       difference of two sums over the group (sum g -
 *                       sum g s) that cancel when s or c is near 1, so
 *                       their f32 rounding (ours from double, PyTorch's
 *                       cascade) shows at ~ulp(sum |g|) / n per element
 * Against the double reference: |d| <= 1e-5 (1 + |ref|) for y; the
 * transpose identity to 1e-5 of sum |g| |A x| + sum |A^T g| |x|.
 * The golden comparison is shown to fire: tx one step off (bit-exact
 * geometry) and a contrast factor 2^-16 off (the colour tolerances of y
 * and dx) must each fail it.
 * Argument 1: the golden file (default GF_AUGMENT_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/augment.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_AUGMENT_GOLDEN
#define GF_AUGMENT_GOLDEN "augment.safetensors"
#endif

#define TOL_Y 0x1p-22  /* colour y: |d| <= TOL_Y max|t| */
#define TOL_DX 0x1p-20 /* colour dx: |d| <= TOL_DX max|t| */

/* ---- golden file --------------------------------------------------------- */

/* Misses of got against PyTorch's want: |d| > srel max|t| (srel < 0:
 * any bit difference); with a label, prints the first few and the worst
 * difference (kt_misses). */
static size_t misses(const char *what, const gf_tensor *got,
                     const gf_tensor *want, double srel) {
  return kt_misses(what ? what : "", got, want, srel < 0 ? -1.0 : 0.0, 0.0,
                   srel < 0 ? 0.0 : srel, NULL, what != NULL);
}

static gf_tensor like(const gf_tensor *t) {
  return kt_tensor(t->ndim, t->shape[0], t->ndim > 1 ? t->shape[1] : 1,
                   t->ndim > 2 ? t->shape[2] : 1,
                   t->ndim > 3 ? t->shape[3] : 1);
}

/* <k>.p<policy>.{y,dx} against the op for each policy of the case. */
static void test_golden(gf_ctx *ctx, const gf_st_file *f, const char *k,
                        const unsigned *pol, int npol) {
  char name[64];
#define GOLD(...) \
  (snprintf(name, sizeof name, __VA_ARGS__), kt_gold(f, name, 0))
  gf_tensor x = GOLD("%s.x", k), g = GOLD("%s.g", k);
  gf_tensor prm = GOLD("%s.params", k);
  REQUIRE(x.ndim == 4 && prm.ndim == 2 && prm.shape[1] == GF_AUG_NPARAMS);
  gf_tensor y = like(&x), dx = like(&x);
  for (int i = 0; i < npol; i++) {
    unsigned p = pol[i];
    bool color = p & GF_AUG_COLOR;
    gf_tensor ty = GOLD("%s.p%u.y", k, p), tdx = GOLD("%s.p%u.dx", k, p);
    gf_err e = {0};
    CHECKF(gf_augment_fwd(ctx, &x, &prm, p, &y, &e) == GF_OK, "%s", e.msg);
    CHECKF(gf_augment_bwd(ctx, &prm, p, &g, &dx, &e) == GF_OK, "%s", e.msg);
    char what[48];
    snprintf(what, sizeof what, "%s policy %u y", k, p);
    CHECKF(misses(what, &y, &ty, color ? TOL_Y : -1.0) == 0, "%s", what);
    snprintf(what, sizeof what, "%s policy %u dx", k, p);
    CHECKF(misses(what, &dx, &tdx, color ? TOL_DX : -1.0) == 0, "%s", what);
    gf_tensor_free(&ty);
    gf_tensor_free(&tdx);
  }
  gf_tensor *all[] = {&x, &g, &prm, &y, &dx};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
#undef GOLD
}

/* The comparisons fire: tx of sample 0 one step off breaks the bit-exact
 * geometry; a contrast factor 2^-16 off (relative) breaks the colour
 * tolerance. */
static void test_golden_fires(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor x = kt_gold(f, "c2_13x17.x", 0),
            prm = kt_gold(f, "c2_13x17.params", 0);
  gf_tensor want = kt_gold(f, "c2_13x17.p6.y", 0), y = like(&x);
  float *pp = prm.data;
  pp[GF_AUG_P_TX] += 1.0f;
  REQUIRE(gf_augment_fwd(ctx, &x, &prm, 6, &y, NULL) == GF_OK);
  CHECKF(misses(NULL, &y, &want, -1.0) > 0, "tx + 1 still matches PyTorch");
  pp[GF_AUG_P_TX] -= 1.0f;
  REQUIRE(gf_augment_fwd(ctx, &x, &prm, 6, &y, NULL) == GF_OK);
  CHECK(misses(NULL, &y, &want, -1.0) == 0);
  gf_tensor_free(&want);
  want = kt_gold(f, "c2_13x17.p1.y", 0);
  pp[GF_AUG_NPARAMS + GF_AUG_P_CONTRAST] *= 1.0f + 0x1p-16f;
  REQUIRE(gf_augment_fwd(ctx, &x, &prm, 1, &y, NULL) == GF_OK);
  CHECKF(misses(NULL, &y, &want, TOL_Y) > 0,
         "a contrast factor 2^-16 off still passes the colour tolerance");
  gf_tensor g = kt_gold(f, "c2_13x17.g", 0),
            wdx = kt_gold(f, "c2_13x17.p1.dx", 0);
  REQUIRE(gf_augment_bwd(ctx, &prm, 1, &g, &y, NULL) == GF_OK);
  CHECKF(misses(NULL, &y, &wdx, TOL_DX) > 0,
         "a contrast factor 2^-16 off still passes the colour dx tolerance");
  gf_tensor *all[] = {&x, &prm, &want, &y, &g, &wdx};
  for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
}

/* ---- a double reference of the spec (gf/ops.h) --------------------------- */

static int64_t ref_int(double v) {
  if (!(v <= 0x1p30)) return (int64_t)1 << 30;
  if (v < -0x1p30) return -((int64_t)1 << 30);
  return (int64_t)v; /* toward zero */
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* y = augment(x) in double for x [N,C,H,W], params rows p. */
static void ref_fwd(const float *x, const float *p, unsigned pol, int64_t N,
                    int64_t C, int64_t H, int64_t W, double *y) {
  int64_t HW = H * W, n = C * HW;
  double *t = malloc((size_t)n * sizeof *t);
  REQUIRE(t);
  for (int64_t k = 0; k < N; k++) {
    const float *xs = x + k * n, *pr = p + k * GF_AUG_NPARAMS;
    for (int64_t i = 0; i < n; i++) t[i] = xs[i];
    if (pol & GF_AUG_COLOR) {
      for (int64_t i = 0; i < n; i++) t[i] += pr[GF_AUG_P_BRIGHTNESS];
      for (int64_t q = 0; q < HW; q++) {
        double m = 0.0;
        for (int64_t c = 0; c < C; c++) m += t[c * HW + q];
        m /= (double)C;
        for (int64_t c = 0; c < C; c++)
          t[c * HW + q] = (t[c * HW + q] - m) * pr[GF_AUG_P_SATURATION] + m;
      }
      double M = 0.0;
      for (int64_t i = 0; i < n; i++) M += t[i];
      M /= (double)n;
      for (int64_t i = 0; i < n; i++)
        t[i] = (t[i] - M) * pr[GF_AUG_P_CONTRAST] + M;
    }
    int64_t tx = 0, ty = 0;
    if (pol & GF_AUG_TRANSLATION) {
      tx = ref_int(pr[GF_AUG_P_TX]);
      ty = ref_int(pr[GF_AUG_P_TY]);
    }
    int64_t S0 = (int64_t)(H * 0.5 + 0.5), S1 = (int64_t)(W * 0.5 + 0.5);
    bool cut = pol & GF_AUG_CUTOUT;
    /* the official mask: each (a, b) of the S0 x S1 grid, clamped */
    char *zero = calloc((size_t)HW, 1);
    REQUIRE(zero);
    if (cut)
      for (int64_t a = 0; a < S0; a++)
        for (int64_t b = 0; b < S1; b++) {
          int64_t r = clampi(a + ref_int(pr[GF_AUG_P_OX]) - S0 / 2, 0, H - 1);
          int64_t c = clampi(b + ref_int(pr[GF_AUG_P_OY]) - S1 / 2, 0, W - 1);
          zero[r * W + c] = 1;
        }
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) {
          int64_t si = i + tx, sj = j + ty;
          double v = si >= 0 && si < H && sj >= 0 && sj < W
                         ? t[c * HW + si * W + sj]
                         : 0.0;
          y[k * n + c * HW + i * W + j] = zero[i * W + j] ? 0.0 : v;
        }
    free(zero);
  }
  free(t);
}

/* Random params rows: colour from the official ranges, shifts and offsets
 * beyond them too (|tx| > H zeroes everything, fractions truncate). */
static void rand_params(gf_tensor *prm, int64_t H, int64_t W, kt_rng *r) {
  float *p = prm->data;
  for (int64_t k = 0; k < prm->shape[0]; k++, p += GF_AUG_NPARAMS) {
    p[GF_AUG_P_BRIGHTNESS] = (float)kt_uniform(r, -0.5, 0.5);
    p[GF_AUG_P_SATURATION] = (float)kt_uniform(r, 0.0, 2.0);
    p[GF_AUG_P_CONTRAST] = (float)kt_uniform(r, 0.5, 1.5);
    double sx = (double)gf_augment_shift(H) + 2, sy = gf_augment_shift(W) + 2;
    p[GF_AUG_P_TX] = (float)floor(kt_uniform(r, -sx, sx + 1));
    p[GF_AUG_P_TY] = (float)floor(kt_uniform(r, -sy, sy + 1));
    p[GF_AUG_P_OX] = (float)floor(kt_uniform(r, -2, (double)H + 3));
    p[GF_AUG_P_OY] = (float)floor(kt_uniform(r, -2, (double)W + 3));
    if (k == 1) { /* far outside, and fractions */
      p[GF_AUG_P_TX] = (float)(H + 5);
      p[GF_AUG_P_OY] = -1e9f;
    }
    if (k == 2) {
      p[GF_AUG_P_TX] = 1.75f;  /* 1 */
      p[GF_AUG_P_TY] = -1.75f; /* -1 */
      p[GF_AUG_P_OX] = 1e9f;   /* clamps to the last row */
    }
  }
}

static void test_reference(gf_ctx *ctx, kt_rng *rng) {
  static const int64_t shapes[][4] = {{5, 3, 9, 14},
                                      {3, 1, 1, 1},
                                      {4, 4, 2, 7},
                                      {3, 3, 16, 16}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t N = shapes[si][0], C = shapes[si][1], H = shapes[si][2],
            W = shapes[si][3];
    gf_tensor x = kt_tensor(4, N, C, H, W), g = kt_tensor(4, N, C, H, W);
    gf_tensor y = kt_tensor(4, N, C, H, W), y0 = kt_tensor(4, N, C, H, W);
    gf_tensor dx = kt_tensor(4, N, C, H, W), zero = kt_tensor(4, N, C, H, W);
    gf_tensor prm = kt_tensor(2, N, GF_AUG_NPARAMS, 1, 1);
    kt_fill(&x, rng, -1.0, 1.0, 0.0);
    kt_fill(&g, rng, -1.0, 1.0, 0.0);
    rand_params(&prm, H, W, rng);
    size_t n = (size_t)gf_tensor_numel(&x);
    double *ref = kt_dzeros(n);
    for (unsigned pol = 0; pol <= GF_AUG_ALL; pol++) {
      gf_err e = {0};
      CHECKF(gf_augment_fwd(ctx, &x, &prm, pol, &y, &e) == GF_OK, "%s", e.msg);
      ref_fwd(x.data, prm.data, pol, N, C, H, W, ref);
      const float *yp = y.data;
      size_t bad = 0;
      for (size_t i = 0; i < n; i++)
        bad += !(fabs(yp[i] - ref[i]) <= 1e-5 * (1.0 + fabs(ref[i])));
      CHECKF(bad == 0, "shape %zu policy %u: %zu of %zu off the reference", si,
             pol, bad, n);
      /* <g, A x> = <A^T g, x>, A x = fwd(x) - fwd(0) */
      CHECK(gf_augment_fwd(ctx, &zero, &prm, pol, &y0, NULL) == GF_OK);
      CHECK(gf_augment_bwd(ctx, &prm, pol, &g, &dx, NULL) == GF_OK);
      const float *y0p = y0.data, *gp = g.data, *dxp = dx.data, *xp = x.data;
      double lhs = 0, rhs = 0, scale = 0;
      for (size_t i = 0; i < n; i++) {
        double ax = (double)yp[i] - (double)y0p[i];
        lhs += (double)gp[i] * ax;
        rhs += (double)dxp[i] * (double)xp[i];
        scale += fabs((double)gp[i] * ax) + fabs((double)dxp[i] * xp[i]);
      }
      CHECKF(fabs(lhs - rhs) <= 1e-5 * scale + 1e-30,
             "shape %zu policy %u: <g, Ax> %.9g vs <A^T g, x> %.9g", si, pol,
             lhs, rhs);
    }
    free(ref);
    gf_tensor *all[] = {&x, &g, &y, &y0, &dx, &zero, &prm};
    for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
  }
}

/* Above GF_PAR_MIN: 1 and 4 threads, and in place, give the same bits for
 * every policy. */
static void test_threads_inplace(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t N = 16, C = 3, H = 32, W = 32;
  gf_tensor x = kt_tensor(4, N, C, H, W), g = kt_tensor(4, N, C, H, W);
  gf_tensor y1 = kt_tensor(4, N, C, H, W), y4 = kt_tensor(4, N, C, H, W);
  gf_tensor d1 = kt_tensor(4, N, C, H, W), d4 = kt_tensor(4, N, C, H, W);
  gf_tensor prm = kt_tensor(2, N, GF_AUG_NPARAMS, 1, 1);
  kt_fill(&x, rng, -1.0, 1.0, 0.0);
  kt_fill(&g, rng, -1.0, 1.0, 0.0);
  REQUIRE(gf_augment_draw(prm.data, N, (int)H, (int)W, GF_AUG_ALL, 99, 3, 1, 0,
                          NULL) == GF_OK);
  for (unsigned pol = 0; pol <= GF_AUG_ALL; pol++) {
    CHECK(gf_augment_fwd(ctx, &x, &prm, pol, &y1, NULL) == GF_OK);
    CHECK(gf_augment_fwd(ctx4, &x, &prm, pol, &y4, NULL) == GF_OK);
    CHECKF(kt_same_bits(&y1, &y4), "policy %u: y differs at 4 threads", pol);
    memcpy(y4.data, x.data, gf_tensor_nbytes(&x));
    CHECK(gf_augment_fwd(ctx4, &y4, &prm, pol, &y4, NULL) == GF_OK);
    CHECKF(kt_same_bits(&y1, &y4), "policy %u: y = x differs", pol);
    CHECK(gf_augment_bwd(ctx, &prm, pol, &g, &d1, NULL) == GF_OK);
    CHECK(gf_augment_bwd(ctx4, &prm, pol, &g, &d4, NULL) == GF_OK);
    CHECKF(kt_same_bits(&d1, &d4), "policy %u: dx differs at 4 threads", pol);
    memcpy(d4.data, g.data, gf_tensor_nbytes(&g));
    CHECK(gf_augment_bwd(ctx4, &prm, pol, &d4, &d4, NULL) == GF_OK);
    CHECKF(kt_same_bits(&d1, &d4), "policy %u: dx = dy differs", pol);
  }
  /* policy 0 is a copy */
  CHECK(gf_augment_fwd(ctx4, &x, &prm, 0, &y1, NULL) == GF_OK);
  CHECK(kt_same_bits(&x, &y1));
  gf_tensor *all[] = {&x, &g, &y1, &y4, &d1, &d4, &prm};
  for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
}

static void test_errors(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), y = kt_tensor(4, 2, 3, 4, 5);
  gf_tensor prm = kt_tensor(2, 2, GF_AUG_NPARAMS, 1, 1);
  gf_tensor p3 = kt_tensor(2, 3, GF_AUG_NPARAMS, 1, 1);
  gf_tensor p6 = kt_tensor(2, 2, 6, 1, 1), x3 = kt_tensor(3, 2, 3, 20, 1);
  gf_tensor yb = kt_tensor(4, 2, 3, 5, 4);
  gf_err e = {0};
  CHECK(gf_augment_fwd(ctx, &x, &prm, GF_AUG_ALL, &y, &e) == GF_OK);
  CHECK(gf_augment_fwd(ctx, &x, &prm, 8, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_bwd(ctx, &prm, 0x10, &x, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x, &p3, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x, &p6, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x, NULL, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, NULL, &prm, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x, &prm, 1, NULL, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x, &prm, 1, &yb, &e) == GF_EINVAL);
  CHECK(gf_augment_bwd(ctx, &prm, 1, &x, &yb, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &x3, &prm, 1, &x3, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(NULL, &x, &prm, 1, &y, &e) == GF_EINVAL);
  /* y shifted by one element inside x's buffer: partial overlap */
  gf_tensor big = kt_tensor(1, 2 * 60 + 1, 1, 1, 1), xa, ya;
  int64_t d[4] = {2, 3, 4, 5};
  REQUIRE(gf_tensor_view(&xa, big.data, GF_F32, GF_DEV_CPU, 4, d, NULL) ==
          GF_OK);
  REQUIRE(gf_tensor_view(&ya, (float *)big.data + 1, GF_F32, GF_DEV_CPU, 4, d,
                         NULL) == GF_OK);
  CHECK(gf_augment_fwd(ctx, &xa, &prm, 2, &ya, &e) == GF_EINVAL);
  CHECK(gf_augment_bwd(ctx, &prm, 2, &xa, &ya, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(ctx, &xa, &prm, 2, &xa, &e) == GF_OK); /* in place */
  /* params inside y */
  gf_tensor pin;
  int64_t pd[2] = {2, GF_AUG_NPARAMS};
  REQUIRE(gf_tensor_view(&pin, y.data, GF_F32, GF_DEV_CPU, 2, pd, NULL) ==
          GF_OK);
  CHECK(gf_augment_fwd(ctx, &x, &pin, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_augment_bwd(ctx, &pin, 1, &x, &y, &e) == GF_EINVAL);
  /* an empty batch is a no-op */
  gf_tensor x0 = kt_tensor(4, 0, 3, 4, 5), p0 = kt_tensor(2, 0, 7, 1, 1);
  CHECK(gf_augment_fwd(ctx, &x0, &p0, GF_AUG_ALL, &x0, &e) == GF_OK);
  gf_tensor *all[] = {&x, &y, &prm, &p3, &p6, &x3, &yb, &big, &x0, &p0};
  for (size_t i = 0; i < 10; i++) gf_tensor_free(all[i]);
}

/* ---- the draws ----------------------------------------------------------- */

static void test_sizes(void) {
  /* the official int(n * ratio + 0.5) */
  for (int64_t n = 0; n <= 4096; n++) {
    CHECK_INT_EQ(gf_augment_shift(n), (int64_t)((double)n * 0.125 + 0.5));
    CHECK_INT_EQ(gf_augment_cutout_size(n), (int64_t)((double)n * 0.5 + 0.5));
  }
  CHECK_INT_EQ(gf_augment_shift(28), 4);
  CHECK_INT_EQ(gf_augment_cutout_size(13), 7);
}

static void test_draw_slices(void) {
  enum { NS = 12, P = GF_AUG_NPARAMS };
  float all[NS * P], part[NS * P];
  gf_err e = {0};
  CHECKF(gf_augment_draw(all, NS, 28, 32, GF_AUG_ALL, 7, 41, 2, 100, &e) ==
             GF_OK,
         "%s", e.msg);
  CHECK(gf_augment_draw(part, 5, 28, 32, GF_AUG_ALL, 7, 41, 2, 100, NULL) ==
        GF_OK);
  CHECK(gf_augment_draw(part + 5 * P, 7, 28, 32, GF_AUG_ALL, 7, 41, 2, 105,
                        NULL) == GF_OK);
  CHECK(memcmp(all, part, sizeof all) == 0);
  /* one at a time, in reverse */
  for (int i = NS - 1; i >= 0; i--)
    CHECK(gf_augment_draw(part + i * P, 1, 28, 32, GF_AUG_ALL, 7, 41, 2,
                          100 + i, NULL) == GF_OK);
  CHECK(memcmp(all, part, sizeof all) == 0);
  /* a column does not depend on the other policy bits; neutral when off */
  static const unsigned pols[] = {0, 1, 2, 3, 4, 5, 6};
  for (size_t q = 0; q < sizeof pols / sizeof pols[0]; q++) {
    unsigned pol = pols[q];
    CHECK(gf_augment_draw(part, NS, 28, 32, pol, 7, 41, 2, 100, NULL) == GF_OK);
    for (int i = 0; i < NS; i++) {
      const float *a = all + i * P, *b = part + i * P;
      for (int c = 0; c < P; c++) {
        unsigned bit = c <= GF_AUG_P_CONTRAST ? GF_AUG_COLOR
                       : c <= GF_AUG_P_TY     ? GF_AUG_TRANSLATION
                                              : GF_AUG_CUTOUT;
        float neutral = c == GF_AUG_P_SATURATION || c == GF_AUG_P_CONTRAST
                            ? 1.0f
                            : 0.0f;
        CHECKF(b[c] == (pol & bit ? a[c] : neutral),
               "policy %u sample %d column %d: %g", pol, i, c, (double)b[c]);
      }
    }
  }
  /* another pass, step or seed draws other numbers */
  float o[NS * P];
  CHECK(gf_augment_draw(o, NS, 28, 32, GF_AUG_ALL, 7, 41, 3, 100, NULL) ==
        GF_OK);
  CHECK(memcmp(all, o, sizeof o) != 0);
  CHECK(gf_augment_draw(o, NS, 28, 32, GF_AUG_ALL, 7, 42, 2, 100, NULL) ==
        GF_OK);
  CHECK(memcmp(all, o, sizeof o) != 0);
  CHECK(gf_augment_draw(o, NS, 28, 32, GF_AUG_ALL, 8, 41, 2, 100, NULL) ==
        GF_OK);
  CHECK(memcmp(all, o, sizeof o) != 0);
  /* errors */
  CHECK(gf_augment_draw(NULL, 1, 28, 28, 7, 1, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(NULL, 0, 28, 28, 7, 1, 0, 0, 0, &e) == GF_OK);
  CHECK(gf_augment_draw(o, -1, 28, 28, 7, 1, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 0, 28, 7, 1, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 0, 7, 1, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 8, 1, 0, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 7, 1, -1, 0, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 7, 1, 0, -1, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 7, 1, 0, 1 << 24, 0, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 7, 1, 0, 0, -1, &e) == GF_EINVAL);
  CHECK(gf_augment_draw(o, 2, 28, 28, 7, 1, 0, 0, ((int64_t)1 << 60) - 1, &e) ==
        GF_EINVAL);
  CHECK(gf_augment_draw(o, 1, 28, 28, 7, 1, 0, 0, ((int64_t)1 << 60) - 1, &e) ==
        GF_OK);
}

/* Mean within 4 standard errors of mu for a variance var over n draws. */
static void check_mean(const char *what, double sum, double n, double mu,
                       double var) {
  double m = sum / n, se = sqrt(var / n);
  CHECKF(fabs(m - mu) <= 4.0 * se, "%s: mean %.6g, expected %.6g (SE %.3g)",
         what, m, mu, se);
}

static void test_draw_distribution(void) {
  enum { NS = 40000, P = GF_AUG_NPARAMS };
  const int H = 28, W = 13; /* shifts 4 and 2; cutouts 14 and 7 */
  float *p = malloc(sizeof(float) * NS * P);
  REQUIRE(p);
  REQUIRE(gf_augment_draw(p, NS, H, W, GF_AUG_ALL, 12345, 9, 0, 0, NULL) ==
          GF_OK);
  /* integer columns: range [lo, lo + m), counts per value */
  struct icol {
    int col;
    int64_t lo, m;
  } ic[4] = {{GF_AUG_P_TX, -4, 9},
             {GF_AUG_P_TY, -2, 5},
             {GF_AUG_P_OX, 0, H + 1}, /* 14 even: [0, H] */
             {GF_AUG_P_OY, 0, W}};    /* 7 odd: [0, W) */
  double sum[P] = {0};
  for (int i = 0; i < NS; i++)
    for (int c = 0; c < P; c++) sum[c] += p[i * P + c];
  for (int q = 0; q < 4; q++) {
    int64_t cnt[64] = {0};
    REQUIRE(ic[q].m <= 64);
    bool ok = true;
    for (int i = 0; i < NS; i++) {
      float v = p[i * P + ic[q].col];
      int64_t k = (int64_t)v - ic[q].lo;
      if (v != floorf(v) || k < 0 || k >= ic[q].m) {
        ok = false;
        break;
      }
      cnt[k]++;
    }
    CHECKF(ok, "column %d: a value outside its integer range", ic[q].col);
    double e = (double)NS / (double)ic[q].m;
    double sd = sqrt(e * (1.0 - 1.0 / (double)ic[q].m));
    for (int64_t k = 0; ok && k < ic[q].m; k++)
      CHECKF(fabs((double)cnt[k] - e) <= 5.0 * sd,
             "column %d value %lld: %lld draws, expected %.0f", ic[q].col,
             (long long)(k + ic[q].lo), (long long)cnt[k], e);
    double m = (double)ic[q].m;
    check_mean("integer column", sum[ic[q].col], NS,
               (double)ic[q].lo + (m - 1) / 2, (m * m - 1) / 12);
  }
  bool ok = true;
  for (int i = 0; i < NS; i++) {
    const float *r = p + i * P;
    ok &= r[GF_AUG_P_BRIGHTNESS] >= -0.5f && r[GF_AUG_P_BRIGHTNESS] < 0.5f;
    ok &= r[GF_AUG_P_SATURATION] >= 0.0f && r[GF_AUG_P_SATURATION] < 2.0f;
    ok &= r[GF_AUG_P_CONTRAST] >= 0.5f && r[GF_AUG_P_CONTRAST] <= 1.5f;
  }
  CHECKF(ok, "a colour factor outside its range");
  check_mean("brightness", sum[GF_AUG_P_BRIGHTNESS], NS, 0.0, 1.0 / 12);
  check_mean("saturation", sum[GF_AUG_P_SATURATION], NS, 1.0, 4.0 / 12);
  check_mean("contrast", sum[GF_AUG_P_CONTRAST], NS, 1.0, 1.0 / 12);
  free(p);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_AUGMENT_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {20201221};
  static const unsigned pol5[] = {1, 2, 4, 6, 7}, pol4[] = {1, 2, 4, 7};
  test_golden(&ctx4, &f, "c1_28", pol5, 5);
  test_golden(&ctx4, &f, "c3_32", pol4, 4);
  test_golden(&ctx4, &f, "c2_13x17", pol5, 5);
  test_golden(&ctx, &f, "c2_13x17", pol5, 5);
  test_golden_fires(&ctx4, &f);
  test_reference(&ctx4, &rng);
  test_threads_inplace(&ctx, &ctx4, &rng);
  test_errors(&ctx4);
  test_sizes();
  test_draw_slices();
  test_draw_distribution();
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
