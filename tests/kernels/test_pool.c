/* test_pool.c - the CPU backend's forward-only feature-extractor ops against
 * naive references written here: max pooling and average pooling (with
 * count_include_pad both ways; padding at the borders, non-square windows
 * and strides, windows that skip the last rows, N > 1, sizes on both sides
 * of the threading threshold, all-negative inputs under padding; both the
 * oneDNN and the plain-loop paths of the CPU backend), bilinear resize as TF1's legacy resize_bilinear (up, down,
 * identity, 1x1 sources, Inception's 299x299), channel concatenation
 * (offset 0, middle and last, 4-D and 2-D, the other channels untouched),
 * a few values by hand, and every bad argument answering GF_EINVAL with a
 * message. The references run in double from the definitions (the resize
 * reference takes its source coordinates in float, as the definition
 * does). Tolerances: max pooling and the channel copy exact; average
 * pooling and resize atol 1e-6 + rtol 1e-6 (f32 sums of <= 64 values in
 * [-1, 1) against double). */
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"

/* ---- references ------------------------------------------------------------ */

typedef struct pool_case {
  int64_t N, C, H, W;
  gf_pool_params p;
} pool_case;

/* kind 0: max; 1: average; p->count_include_pad picks the divisor. */
static void ref_pool(int avg, const pool_case *c, const double *x,
                     int64_t OH, int64_t OW, double *y) {
  const gf_pool_params *p = &c->p;
  for (int64_t pl = 0; pl < c->N * c->C; pl++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double m = -INFINITY, s = 0.0;
        int64_t cnt = 0;
        for (int i = 0; i < p->kernel[0]; i++)
          for (int j = 0; j < p->kernel[1]; j++) {
            int64_t h = oh * p->stride[0] - p->pad[0] + i;
            int64_t w = ow * p->stride[1] - p->pad[1] + j;
            if (h < 0 || h >= c->H || w < 0 || w >= c->W) continue;
            double v = x[(pl * c->H + h) * c->W + w];
            m = v > m || isnan(v) ? v : m;
            s += v;
            cnt++;
          }
        double div = p->count_include_pad
                         ? (double)p->kernel[0] * p->kernel[1]
                         : (double)cnt;
        y[(pl * OH + oh) * OW + ow] = avg ? s / div : m;
      }
}

/* TF1 legacy resize_bilinear: coordinates in float, blend in double. */
static void ref_coord(int64_t i, int64_t in, int64_t out, int64_t *i0,
                      int64_t *i1, double *f) {
  float s = (float)i * ((float)in / (float)out);
  if (s > (float)(in - 1)) s = (float)(in - 1);
  if (s < 0.0f) s = 0.0f;
  *i0 = (int64_t)floorf(s);
  *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
  *f = (double)s - (double)*i0;
}

static void ref_resize(const double *x, int64_t planes, int64_t H, int64_t W,
                       int64_t OH, int64_t OW, double *y) {
  for (int64_t pl = 0; pl < planes; pl++)
    for (int64_t i = 0; i < OH; i++)
      for (int64_t j = 0; j < OW; j++) {
        int64_t y0, y1, x0, x1;
        double fy, fx;
        ref_coord(i, H, OH, &y0, &y1, &fy);
        ref_coord(j, W, OW, &x0, &x1, &fx);
        const double *p = x + pl * H * W;
        double top = (1 - fx) * p[y0 * W + x0] + fx * p[y0 * W + x1];
        double bot = (1 - fx) * p[y1 * W + x0] + fx * p[y1 * W + x1];
        y[(pl * OH + i) * OW + j] = (1 - fy) * top + fy * bot;
      }
}

/* ---- pooling --------------------------------------------------------------- */

static void pool_check(gf_ctx *ctx, kt_rng *rng, const pool_case *c,
                       double lo, double hi) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, c->N, c->C, c->H, c->W);
  kt_fill(&x, rng, lo, hi, 0);
  int64_t ys[4];
  REQUIRE(gf_pool2d_out_shape(&x, &c->p, ys, &e) == GF_OK);
  CHECK_INT_EQ(ys[2], (c->H + 2 * c->p.pad[0] - c->p.kernel[0]) /
                          c->p.stride[0] + 1);
  gf_tensor y = kt_tensor(4, ys[0], ys[1], ys[2], ys[3]);
  size_t n = (size_t)gf_tensor_numel(&y);
  double *xd = kt_dbl(&x), *yr = kt_dzeros(n);
  char lab[128];
  snprintf(lab, sizeof lab, "[%lld,%lld,%lld,%lld] k%dx%d s%dx%d p%dx%d",
           (long long)c->N, (long long)c->C, (long long)c->H,
           (long long)c->W, c->p.kernel[0], c->p.kernel[1], c->p.stride[0],
           c->p.stride[1], c->p.pad[0], c->p.pad[1]);
  ref_pool(0, c, xd, ys[2], ys[3], yr);
  CHECKF(gf_maxpool2d_fwd(ctx, &x, &c->p, &y, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_compare("maxpool", y.data, yr, n, 0, 0) == 0, "maxpool %s", lab);
  for (int inc = 0; inc < 2; inc++) {
    pool_case ci = *c;
    ci.p.count_include_pad = inc;
    ref_pool(1, &ci, xd, ys[2], ys[3], yr);
    CHECKF(gf_avgpool2d_fwd(ctx, &x, &ci.p, &y, &e) == GF_OK, "%s", e.msg);
    CHECKF(kt_compare("avgpool", y.data, yr, n, 1e-6, 1e-6) == 0,
           "avgpool include_pad %d %s", inc, lab);
  }
  free(xd);
  free(yr);
  gf_tensor_free(&x);
  gf_tensor_free(&y);
}

static void test_pool(gf_ctx *ctx, kt_rng *rng) {
  const pool_case cs[] = {
      {2, 3, 9, 9, {{3, 3}, {2, 2}, {0, 0}, 1}},     /* Inception's s2 */
      {2, 3, 10, 10, {{3, 3}, {2, 2}, {0, 0}, 1}},   /* last row skipped */
      {1, 4, 8, 8, {{3, 3}, {1, 1}, {1, 1}, 1}},     /* s1 p1 borders */
      {2, 3, 7, 10, {{3, 2}, {2, 1}, {1, 1}, 1}},    /* non-square */
      {3, 2, 6, 11, {{5, 3}, {3, 2}, {2, 1}, 1}},    /* pad = k/2 */
      {2, 5, 8, 8, {{8, 8}, {8, 8}, {0, 0}, 1}},     /* global 8x8 */
      {1, 1, 1, 1, {{1, 1}, {1, 1}, {0, 0}, 1}},     /* identity */
      {1, 2, 4, 5, {{2, 2}, {1, 3}, {1, 0}, 1}},     /* even kernel, pad 1 */
      {2, 64, 35, 35, {{3, 3}, {1, 1}, {1, 1}, 1}},  /* threaded */
      {1, 32, 71, 71, {{3, 3}, {2, 2}, {0, 0}, 1}},  /* threaded, s2 */
  };
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
    pool_check(ctx, rng, &cs[i], -1, 1);
  /* all negative: padding must not contribute a 0 to the max */
  pool_check(ctx, rng, &cs[2], -2, -1);
  /* the cases ran through oneDNN primitives (jit shapes) and through the
   * loops (10x10 s2 needs a negative right padding: loops) */
  CHECK(gf_ctx_get_stats(ctx).cached_primitives > 0);

  /* by hand: 1..9 in a 3x3 plane, 3x3 windows, stride 1, pad 1 */
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 1, 1, 3, 3), y = kt_tensor(4, 1, 1, 3, 3);
  float *xp = x.data, *yp = y.data;
  for (int i = 0; i < 9; i++) xp[i] = (float)(i + 1);
  gf_pool_params p = {{3, 3}, {1, 1}, {1, 1}, 0};
  CHECK(gf_maxpool2d_fwd(ctx, &x, &p, &y, &e) == GF_OK);
  CHECK(yp[0] == 5.0f && yp[1] == 6.0f && yp[4] == 9.0f && yp[8] == 9.0f);
  CHECK(gf_avgpool2d_fwd(ctx, &x, &p, &y, &e) == GF_OK);
  CHECK(yp[0] == 3.0f && yp[1] == 3.5f && yp[4] == 5.0f && yp[8] == 7.0f);
  p.count_include_pad = 1;
  CHECK(gf_avgpool2d_fwd(ctx, &x, &p, &y, &e) == GF_OK);
  CHECK(yp[0] == 12.0f / 9.0f && yp[4] == 5.0f && yp[8] == 28.0f / 9.0f);
  /* the checker fires: exclude-pad output against the include-pad
   * reference differs at the borders */
  {
    pool_case c = {1, 1, 3, 3, {{3, 3}, {1, 1}, {1, 1}, 1}};
    double xd[9], yr[9];
    for (int i = 0; i < 9; i++) xd[i] = i + 1;
    ref_pool(1, &c, xd, 3, 3, yr);
    p.count_include_pad = 0;
    CHECK(gf_avgpool2d_fwd(ctx, &x, &p, &y, &e) == GF_OK);
    fprintf(stderr, "(expected misses follow: the checker must fire)\n");
    CHECK_INT_EQ(kt_compare("fires", y.data, yr, 9, 1e-6, 1e-6), 8);
  }
  gf_tensor_free(&x);
  gf_tensor_free(&y);
}

/* ---- resize ---------------------------------------------------------------- */

static void resize_check(gf_ctx *ctx, kt_rng *rng, int64_t N, int64_t C,
                         int64_t H, int64_t W, int64_t OH, int64_t OW) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, N, C, H, W), y = kt_tensor(4, N, C, OH, OW);
  kt_fill(&x, rng, -1, 1, 0);
  size_t n = (size_t)gf_tensor_numel(&y);
  double *xd = kt_dbl(&x), *yr = kt_dzeros(n);
  ref_resize(xd, N * C, H, W, OH, OW, yr);
  CHECKF(gf_resize_bilinear_fwd(ctx, &x, &y, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_compare("resize", y.data, yr, n, 1e-6, 1e-6) == 0,
         "resize [%lld,%lld,%lld,%lld] -> %lldx%lld", (long long)N,
         (long long)C, (long long)H, (long long)W, (long long)OH,
         (long long)OW);
  if (H == OH && W == OW) /* identity: a copy, bit for bit */
    CHECK(memcmp(x.data, y.data, gf_tensor_nbytes(&x)) == 0);
  free(xd);
  free(yr);
  gf_tensor_free(&x);
  gf_tensor_free(&y);
}

static void test_resize(gf_ctx *ctx, kt_rng *rng) {
  resize_check(ctx, rng, 2, 3, 28, 28, 299, 299); /* Inception, threaded */
  resize_check(ctx, rng, 1, 3, 64, 64, 299, 299);
  resize_check(ctx, rng, 1, 3, 33, 47, 299, 299); /* non-square */
  resize_check(ctx, rng, 2, 3, 17, 13, 5, 4);     /* down */
  resize_check(ctx, rng, 1, 2, 6, 7, 6, 7);       /* identity */
  resize_check(ctx, rng, 1, 1, 1, 1, 4, 3);       /* one source pixel */
  resize_check(ctx, rng, 3, 2, 10, 3, 4, 9);      /* down in h, up in w */
  resize_check(ctx, rng, 1, 1, 5, 5, 1, 1);       /* to one pixel */
  /* by hand: [0, 1] to 4 columns samples at 0, 0.5, 1, 1.5 -> 1 (clamped) */
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 1, 1, 1, 2), y = kt_tensor(4, 1, 1, 2, 4);
  ((float *)x.data)[1] = 1.0f;
  CHECK(gf_resize_bilinear_fwd(ctx, &x, &y, &e) == GF_OK);
  const float *yp = y.data;
  CHECK(yp[0] == 0.0f && yp[1] == 0.5f && yp[2] == 1.0f && yp[3] == 1.0f);
  CHECK(yp[4] == 0.0f && yp[5] == 0.5f && yp[6] == 1.0f && yp[7] == 1.0f);
  gf_tensor_free(&x);
  gf_tensor_free(&y);
}

/* ---- channel concatenation ------------------------------------------------- */

static void copy_check(gf_ctx *ctx, kt_rng *rng, int ndim, int64_t N,
                       int64_t Cs, int64_t Cd, int64_t S, int64_t off) {
  gf_err e = {0};
  int64_t h = ndim == 4 ? S : 1;
  gf_tensor src = kt_tensor(ndim, N, Cs, h, 1);
  gf_tensor dst = kt_tensor(ndim, N, Cd, h, 1);
  kt_fill(&src, rng, -1, 1, 0);
  REQUIRE(gf_fill(ctx, &dst, 7.0f, &e) == GF_OK);
  CHECKF(gf_copy_channels(ctx, &src, &dst, off, &e) == GF_OK, "%s", e.msg);
  const float *sp = src.data, *dp = dst.data;
  size_t bad = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < Cd; c++)
      for (int64_t s = 0; s < h; s++) {
        float got = dp[(n * Cd + c) * h + s];
        float want = c >= off && c < off + Cs
                         ? sp[(n * Cs + c - off) * h + s]
                         : 7.0f;
        bad += memcmp(&got, &want, sizeof got) != 0;
      }
  CHECKF(bad == 0, "copy_channels %dD N%lld %lld into %lld at %lld: %zu bad",
         ndim, (long long)N, (long long)Cs, (long long)Cd, (long long)off,
         bad);
  gf_tensor_free(&src);
  gf_tensor_free(&dst);
}

static void test_copy_channels(gf_ctx *ctx, kt_rng *rng) {
  copy_check(ctx, rng, 4, 2, 3, 10, 20, 0);
  copy_check(ctx, rng, 4, 2, 3, 10, 20, 4);
  copy_check(ctx, rng, 4, 2, 3, 10, 20, 7);   /* last */
  copy_check(ctx, rng, 4, 3, 5, 5, 6, 0);     /* the whole of dst */
  copy_check(ctx, rng, 2, 4, 6, 9, 1, 3);     /* [N,C] */
  copy_check(ctx, rng, 4, 4, 384, 2048, 64, 1664); /* threaded */
}

/* ---- bad arguments --------------------------------------------------------- */

/* The call returned GF_EINVAL and said why. */
#define BAD(call, e)                                                       \
  do {                                                                     \
    (e).msg[0] = '\0';                                                     \
    CHECK((call) == GF_EINVAL);                                            \
    CHECKF((e).msg[0] != '\0', "no message for %s", #call);                \
  } while (0)

static void test_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 2, 3, 8, 8), y = kt_tensor(4, 2, 3, 3, 3);
  gf_tensor x3 = kt_tensor(3, 2, 3, 8, 1);
  int64_t out[4];
  gf_pool_params ok = {{3, 3}, {2, 2}, {0, 0}, 1};
  CHECK(gf_maxpool2d_fwd(ctx, &x, &ok, &y, &e) == GF_OK);
  gf_pool_params bad[] = {
      {{0, 3}, {2, 2}, {0, 0}, 1},  /* kernel < 1 */
      {{3, 3}, {0, 2}, {0, 0}, 1},  /* stride < 1 */
      {{3, 3}, {2, 2}, {-1, 0}, 1}, /* pad < 0 */
      {{3, 3}, {2, 2}, {0, 2}, 1},  /* pad > kernel/2 */
      {{2, 2}, {2, 2}, {2, 0}, 1},  /* pad > kernel/2 */
      {{9, 3}, {1, 1}, {0, 0}, 1},  /* kernel larger than the input */
      {{3, 3}, {2, 2}, {0, 0}, 2},  /* count_include_pad not 0/1 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    BAD(gf_pool2d_out_shape(&x, &bad[i], out, &e), e);
    BAD(gf_maxpool2d_fwd(ctx, &x, &bad[i], &y, &e), e);
    BAD(gf_avgpool2d_fwd(ctx, &x, &bad[i], &y, &e), e);
  }
  BAD(gf_pool2d_out_shape(&x, NULL, out, &e), e);
  BAD(gf_maxpool2d_fwd(ctx, &x, NULL, &y, &e), e);
  BAD(gf_avgpool2d_fwd(ctx, &x, NULL, &y, &e), e);
  BAD(gf_maxpool2d_fwd(ctx, &x3, &ok, &y, &e), e);
  BAD(gf_maxpool2d_fwd(ctx, NULL, &ok, &y, &e), e);
  BAD(gf_maxpool2d_fwd(ctx, &x, &ok, NULL, &e), e);
  gf_tensor y4 = kt_tensor(4, 2, 3, 4, 4), y2 = kt_tensor(4, 2, 2, 3, 3);
  BAD(gf_maxpool2d_fwd(ctx, &x, &ok, &y4, &e), e);
  BAD(gf_avgpool2d_fwd(ctx, &x, &ok, &y2, &e), e);
  BAD(gf_maxpool2d_fwd(ctx, &x, &ok, &x, &e), e);
  /* NULL err is allowed */
  CHECK(gf_maxpool2d_fwd(ctx, &x, &bad[0], &y, NULL) == GF_EINVAL);

  /* resize: N or C differ, wrong rank, in place */
  gf_tensor r1 = kt_tensor(4, 2, 3, 5, 5), r2 = kt_tensor(4, 1, 3, 5, 5);
  gf_tensor r3 = kt_tensor(4, 2, 4, 5, 5), r4 = kt_tensor(2, 2, 3, 1, 1);
  CHECK(gf_resize_bilinear_fwd(ctx, &x, &r1, &e) == GF_OK);
  BAD(gf_resize_bilinear_fwd(ctx, &x, &r2, &e), e);
  BAD(gf_resize_bilinear_fwd(ctx, &x, &r3, &e), e);
  BAD(gf_resize_bilinear_fwd(ctx, &x, &r4, &e), e);
  BAD(gf_resize_bilinear_fwd(ctx, &r4, &x, &e), e);
  BAD(gf_resize_bilinear_fwd(ctx, &x, &x, &e), e);
  BAD(gf_resize_bilinear_fwd(ctx, NULL, &x, &e), e);

  /* copy_channels: offset out of range, shapes, ranks, overlap */
  gf_tensor s = kt_tensor(4, 2, 3, 8, 8), d = kt_tensor(4, 2, 10, 8, 8);
  gf_tensor dn = kt_tensor(4, 3, 10, 8, 8), dh = kt_tensor(4, 2, 10, 8, 7);
  gf_tensor d2 = kt_tensor(2, 2, 10, 1, 1);
  CHECK(gf_copy_channels(ctx, &s, &d, 7, &e) == GF_OK);
  BAD(gf_copy_channels(ctx, &s, &d, -1, &e), e);
  BAD(gf_copy_channels(ctx, &s, &d, 8, &e), e);
  BAD(gf_copy_channels(ctx, &s, &d, INT64_MAX, &e), e);
  BAD(gf_copy_channels(ctx, &d, &s, 0, &e), e); /* Cs > Cd */
  BAD(gf_copy_channels(ctx, &s, &dn, 0, &e), e);
  BAD(gf_copy_channels(ctx, &s, &dh, 0, &e), e);
  BAD(gf_copy_channels(ctx, &s, &d2, 0, &e), e);
  BAD(gf_copy_channels(ctx, &x3, &d, 0, &e), e);
  BAD(gf_copy_channels(ctx, NULL, &d, 0, &e), e);
  gf_tensor view;
  int64_t vs[4] = {1, 3, 8, 8};
  REQUIRE(gf_tensor_view(&view, (float *)d.data + 64, GF_F32, GF_DEV_CPU, 4,
                         vs, NULL) == GF_OK);
  BAD(gf_copy_channels(ctx, &view, &d, 0, &e), e);

  gf_tensor *all[] = {&x, &y, &x3, &y4, &y2, &r1, &r2, &r3,
                      &r4, &s, &d, &dn, &dh, &d2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {2024};
  test_pool(&ctx, &rng);
  test_resize(&ctx, &rng);
  test_copy_channels(&ctx, &rng);
  test_errors(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
