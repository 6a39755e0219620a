/* test_fir.c - the CPU FIR resampling ops (gf_upfirdn2d_fwd / _bwd,
 * gf_upfirdn2d_out_shape) against PyTorch's numbers
 * (golden/fir.safetensors, written by golden/make_fir_golden.py; no Python
 * needed here), against plain loops written from the formulas of ops.h
 * (kt_fir.h), at 1 and 4 threads, the adjoint identity, and the argument
 * checks.
 *
 * Against PyTorch (each run prints the worst difference per quantity): the
 * cases up2 (G's 2x upsampling: [1,3,3,1] filter, gain 4, pad (2,1,2,1)),
 * down2 (pad (1,1,1,1)), blur (pad (2,1,2,1)), asym (up [1,2], down
 * [2,1], a random 3x5 filter, two sides cropped) and flip (correlation,
 * gain -0.75), y and dx each within 2 (taps + 2) ulp of the element's
 * |gain| sum |terms| (F.conv2d and its autograd sum in another order than
 * ops.h's, and add the zero-inserted taps). Each such comparison is shown
 * to fire: the golden with one element moved by 2^-10 max |t| must miss.
 * Against the loops: bit-exact, y and dx (the adjoint summed directly over
 * dy, so the backward's derived pads are checked too), on the golden cases
 * and on 300 random geometries (factors 1..3, pads -3..4 on each side,
 * filters 1..5 on a side, flip 0 / 1); one bit off in the loops' result
 * must be noticed. Large cases (above the threading threshold) give the
 * same bits at 1 and 4 threads. The adjoint identity <A x, g> = <x, A^T g>
 * in double within the two results' rounding bounds, on every case, and
 * missed when the backward's window is not reversed. Taps on inserted
 * zeros are skipped: an infinite filter tap that only ever meets inserted
 * zeros leaves the outputs finite.
 * Argument checks: NULLs, bad factors, flip, gain, an output side < 1, x
 * not 4-D or with an empty side, a filter not 2-D or empty, dtype
 * (GF_EUNSUPPORTED, the house's rule), device, shapes, and y overlapping x
 * or f, dx overlapping dy or f (GF_EINVAL); an empty batch is GF_OK.
 * Argument 1: the golden file (default GF_FIR_GOLDEN, the source tree's,
 * from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_fir.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_FIR_GOLDEN
#define GF_FIR_GOLDEN "fir.safetensors"
#endif

static const char *const kCases[] = {"up2", "down2", "blur", "asym", "flip"};

/* ---- helpers ------------------------------------------------------------- */

/* An owned tensor of t's shape filled with a value no op here produces. */
static gf_tensor garbage_like(const gf_tensor *t) {
  gf_tensor g = kt_clone(t);
  float *p = g.data;
  for (int64_t i = 0; i < gf_tensor_numel(&g); i++) p[i] = 12345.0f;
  return g;
}

/* A random filter [fh, fw] of values in [-1, 1). */
static gf_tensor rand_filter(kt_rng *r, int fh, int fw) {
  gf_tensor f = kt_tensor(2, fh, fw, 1, 1);
  kt_fill(&f, r, -1.0, 1.0, 0.0);
  return f;
}

/* The worst |got - want| of a run in units of 2^-24 of the element's
 * scale, for the report (printed with what). */
static void print_ulps_of_scale(const char *what, const gf_tensor *got,
                                const gf_tensor *want, const double *scale) {
  const float *g = got->data, *t = want->data;
  double worst = 0.0;
  for (int64_t i = 0; i < gf_tensor_numel(got); i++) {
    double d = fabs((double)g[i] - t[i]);
    double s = scale[i] > 0 ? scale[i] * 0x1p-24 : 0x1p-149;
    if (d / s > worst) worst = d / s;
  }
  printf("%-26s worst |d| = %.3g ulp of |gain| sum |terms|\n", what, worst);
}

/* An owned copy of t with element i moved by 2^-10 max |t| (sign s). */
static gf_tensor moved(const gf_tensor *t, size_t i, float s) {
  gf_tensor w = kt_clone(t);
  float *p = w.data, m = 0.0f;
  for (int64_t k = 0; k < gf_tensor_numel(&w); k++) m = fmaxf(m, fabsf(p[k]));
  p[i] += s * 0x1p-10f * m;
  return w;
}

/* sum a[i] b[i] in double. */
static double dot(const gf_tensor *a, const gf_tensor *b) {
  const float *p = a->data, *q = b->data;
  double s = 0.0;
  for (int64_t i = 0; i < gf_tensor_numel(a); i++) s += (double)p[i] * q[i];
  return s;
}

/* sum |a[i]| s[i] in double. */
static double wdot(const gf_tensor *a, const double *s) {
  const float *p = a->data;
  double t = 0.0;
  for (int64_t i = 0; i < gf_tensor_numel(a); i++)
    t += fabs((double)p[i]) * s[i];
  return t;
}

/* The adjoint identity <y, g> = <x, dx> for y = A x and dx = A^T g (the
 * ops' f32 results), in double: its two sides differ by at most the
 * results' rounding, (taps + 1) ulp of each element's |gain| sum |terms|
 * (ys, dxs) weighted by the other factor, plus the double sums' own. */
enum { ADJ_QUIET = -1, ADJ_ON_MISS = 0, ADJ_PRINT = 1 }; /* when to print */
static bool adjoint_ok(const char *what, const gf_tensor *x, const gf_tensor *y,
                       const gf_tensor *g, const gf_tensor *dx,
                       const double *ys, const double *dxs, int taps,
                       int print) {
  double lhs = dot(y, g), rhs = dot(x, dx);
  double tol = (taps + 1) * 0x1p-24 * (wdot(g, ys) + wdot(x, dxs)) + 1e-12;
  bool ok = fabs(lhs - rhs) <= tol;
  if (print == ADJ_PRINT || (print == ADJ_ON_MISS && !ok))
    printf("%-26s <Ax,g> %.9g <x,A^T g> %.9g |d| %.3g tol %.3g%s\n", what, lhs,
           rhs, fabs(lhs - rhs), tol, ok ? "" : "  MISS");
  return ok;
}

static int taps_of(const gf_tensor *f) {
  return (int)(f->shape[0] * f->shape[1]);
}

/* ---- against PyTorch and the loops --------------------------------------- */

/* got against the loops' ref (bit-exact) and PyTorch's want (within
 * kt_fir_torch_tol of scale, the elements' |gain| sum |terms|), and the
 * PyTorch comparison shown to fire: want with one element moved by
 * 2^-10 max |t| must miss. */
static void check_result(const char *what, const gf_tensor *got,
                         const gf_tensor *ref, const gf_tensor *want,
                         const double *scale, int taps) {
  size_t n = (size_t)gf_tensor_numel(want);
  CHECKF(kt_same_bits(got, ref), "%s: not the loops' bits", what);
  double *tol = kt_fir_torch_tol(scale, n, taps);
  KT_VS_TORCH(what, got, want, 0.0, 0.0, 0.0, tol);
  print_ulps_of_scale(what, got, want, scale);
  gf_tensor w = moved(want, n / 2, n % 2 ? 1.0f : -1.0f);
  CHECKF(kt_misses(what, got, &w, 0.0, 0.0, 0.0, tol, false) == 1,
         "%s: a moved element went unnoticed", what);
  gf_tensor_free(&w);
  free(tol);
}

static void test_golden(gf_ctx *ctx, const gf_st_file *file, const char *name) {
  kt_fir_case c = kt_fir_case_load(file, name);
  int taps = taps_of(&c.f);
  size_t ny = (size_t)gf_tensor_numel(&c.y), nx = (size_t)gf_tensor_numel(&c.x);
  gf_err e = {0};
  int64_t os[4];
  CHECKF(gf_upfirdn2d_out_shape(&c.x, &c.f, &c.p, os, &e) == GF_OK, "%s",
         e.msg);
  CHECK(memcmp(os, c.y.shape, sizeof os) == 0);
  /* forward, backward */
  gf_tensor y = garbage_like(&c.y), ry = garbage_like(&c.y);
  gf_tensor dx = garbage_like(&c.dx), rdx = garbage_like(&c.dx);
  double *ys = kt_dzeros(ny), *dxs = kt_dzeros(nx);
  CHECKF(gf_upfirdn2d_fwd(ctx, &c.x, &c.f, &c.p, &y, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_upfirdn2d_bwd(ctx, &c.f, &c.p, &c.g, &dx, &e) == GF_OK, "%s",
         e.msg);
  kt_fir_ref(&c.x, &c.f, &c.p, &ry, ys);
  kt_fir_ref_adj(&c.g, &c.f, &c.p, &rdx, dxs);
  char what[64];
  snprintf(what, sizeof what, "%s.y", name);
  check_result(what, &y, &ry, &c.y, ys, taps);
  snprintf(what, sizeof what, "%s.dx", name);
  check_result(what, &dx, &rdx, &c.dx, dxs, taps);
  snprintf(what, sizeof what, "%s adjoint", name);
  CHECK(adjoint_ok(what, &c.x, &y, &c.g, &dx, ys, dxs, taps, ADJ_PRINT));
  free(ys);
  free(dxs);
  gf_tensor *all[] = {&y, &ry, &dx, &rdx};
  for (int k = 0; k < 4; k++) gf_tensor_free(all[k]);
  kt_fir_case_free(&c);
}

/* ---- random geometries against the loops --------------------------------- */

/* Runs forward and backward of one geometry at ctx (and, when ctx4 is not
 * NULL, at ctx4 too: the same bits), against the loops bit for bit, and
 * the adjoint identity. Returns false (and checks nothing) when the
 * geometry has no output. */
static bool run_geometry(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *r, int64_t N,
                         int64_t C, int64_t H, int64_t W, const gf_tensor *f,
                         const gf_fir_params *p, const char *what) {
  gf_tensor x = kt_tensor(4, N, C, H, W);
  int64_t os[4];
  gf_err e = {0};
  if (gf_upfirdn2d_out_shape(&x, f, p, os, &e) != GF_OK) {
    gf_tensor_free(&x);
    return false;
  }
  kt_fill(&x, r, -2.0, 2.0, 0.0);
  gf_tensor y = kt_tensor(4, os[0], os[1], os[2], os[3]);
  gf_tensor ry = kt_tensor(4, os[0], os[1], os[2], os[3]);
  gf_tensor g = kt_tensor(4, os[0], os[1], os[2], os[3]);
  gf_tensor dx = kt_tensor(4, N, C, H, W), rdx = kt_tensor(4, N, C, H, W);
  kt_fill(&g, r, -1.0, 1.0, 0.0);
  double *ys = kt_dzeros((size_t)gf_tensor_numel(&y));
  double *dxs = kt_dzeros((size_t)gf_tensor_numel(&x));
  CHECKF(gf_upfirdn2d_fwd(ctx, &x, f, p, &y, &e) == GF_OK, "%s: %s", what,
         e.msg);
  CHECKF(gf_upfirdn2d_bwd(ctx, f, p, &g, &dx, &e) == GF_OK, "%s: %s", what,
         e.msg);
  kt_fir_ref(&x, f, p, &ry, ys);
  kt_fir_ref_adj(&g, f, p, &rdx, dxs);
  CHECKF(kt_same_bits(&y, &ry), "%s: y is not the loops'", what);
  CHECKF(kt_same_bits(&dx, &rdx), "%s: dx is not the direct adjoint's", what);
  CHECKF(adjoint_ok(what, &x, &y, &g, &dx, ys, dxs, taps_of(f), ADJ_ON_MISS),
         "%s: <Ax,g> != <x,A^T g>", what);
  if (ctx4) {
    gf_tensor y4 = kt_tensor(4, os[0], os[1], os[2], os[3]);
    gf_tensor dx4 = kt_tensor(4, N, C, H, W);
    CHECK(gf_upfirdn2d_fwd(ctx4, &x, f, p, &y4, &e) == GF_OK);
    CHECK(gf_upfirdn2d_bwd(ctx4, f, p, &g, &dx4, &e) == GF_OK);
    CHECKF(kt_same_bits(&y4, &y) && kt_same_bits(&dx4, &dx),
           "%s: 4 threads differ from 1", what);
    gf_tensor_free(&y4);
    gf_tensor_free(&dx4);
  }
  free(ys);
  free(dxs);
  gf_tensor *all[] = {&x, &y, &ry, &g, &dx, &rdx};
  for (int k = 0; k < 6; k++) gf_tensor_free(all[k]);
  return true;
}

static int rnd_int(kt_rng *r, int lo, int hi) { /* in [lo, hi] */
  int v = lo + (int)kt_uniform(r, 0.0, hi - lo + 1);
  return v > hi ? hi : v;
}

static void test_random_geometries(gf_ctx *ctx, kt_rng *r) {
  int ran = 0;
  for (int t = 0; t < 300; t++) {
    gf_fir_params p;
    for (int d = 0; d < 2; d++) {
      p.up[d] = rnd_int(r, 1, 3);
      p.down[d] = rnd_int(r, 1, 3);
    }
    for (int k = 0; k < 4; k++) p.pad[k] = rnd_int(r, -3, 4);
    p.flip = rnd_int(r, 0, 1);
    p.gain = (float)kt_uniform(r, -2.0, 2.0);
    gf_tensor f = rand_filter(r, rnd_int(r, 1, 5), rnd_int(r, 1, 5));
    char what[96];
    snprintf(what, sizeof what, "random %d (up %d,%d down %d,%d f %lldx%lld)",
             t, p.up[0], p.up[1], p.down[0], p.down[1], (long long)f.shape[0],
             (long long)f.shape[1]);
    ran += run_geometry(ctx, NULL, r, rnd_int(r, 1, 2), rnd_int(r, 1, 3),
                        rnd_int(r, 1, 9), rnd_int(r, 1, 9), &f, &p, what);
    gf_tensor_free(&f);
  }
  printf("random geometries: %d of 300 with an output\n", ran);
  CHECK(ran > 200);
}

/* StyleGAN-sized planes above the threading threshold, 1 vs 4 threads. */
static void test_threads(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *r) {
  float k[4] = {1, 3, 3, 1};
  gf_tensor f = kt_tensor(2, 4, 4, 1, 1);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) ((float *)f.data)[a * 4 + b] = k[a] * k[b] / 64;
  gf_fir_params up2 = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
  gf_fir_params down2 = {{1, 1}, {2, 2}, {1, 1, 1, 1}, 0, 1.0f};
  gf_fir_params blur = {{1, 1}, {1, 1}, {2, 1, 2, 1}, 1, 1.0f};
  CHECK(run_geometry(ctx, ctx4, r, 4, 16, 32, 32, &f, &up2, "threads up2"));
  CHECK(run_geometry(ctx, ctx4, r, 4, 16, 64, 64, &f, &down2, "threads down2"));
  CHECK(run_geometry(ctx, ctx4, r, 2, 32, 33, 31, &f, &blur, "threads blur"));
  gf_tensor_free(&f);
}

/* ---- checks that fire ---------------------------------------------------- */

/* The loops comparison notices one bit, and the adjoint identity notices a
 * backward whose window is not reversed (flip kept). */
static void test_fires(gf_ctx *ctx, kt_rng *r) {
  gf_tensor f = rand_filter(r, 3, 4);
  gf_fir_params p = {{2, 1}, {1, 2}, {1, 2, 2, 0}, 0, 1.25f};
  gf_tensor x = kt_tensor(4, 2, 3, 6, 7);
  kt_fill(&x, r, -1.0, 1.0, 0.0);
  int64_t os[4];
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_out_shape(&x, &f, &p, os, &e) == GF_OK);
  gf_tensor y = kt_tensor(4, os[0], os[1], os[2], os[3]);
  gf_tensor ry = kt_tensor(4, os[0], os[1], os[2], os[3]);
  gf_tensor g = kt_tensor(4, os[0], os[1], os[2], os[3]);
  kt_fill(&g, r, -1.0, 1.0, 0.0);
  gf_tensor dx = kt_tensor(4, 2, 3, 6, 7), bad = kt_tensor(4, 2, 3, 6, 7);
  double *ys = kt_dzeros((size_t)gf_tensor_numel(&y));
  double *dxs = kt_dzeros((size_t)gf_tensor_numel(&x));
  REQUIRE(gf_upfirdn2d_fwd(ctx, &x, &f, &p, &y, &e) == GF_OK);
  REQUIRE(gf_upfirdn2d_bwd(ctx, &f, &p, &g, &dx, &e) == GF_OK);
  kt_fir_ref(&x, &f, &p, &ry, ys);
  kt_fir_ref_adj(&g, &f, &p, &bad, dxs);
  CHECK(kt_same_bits(&y, &ry));
  float *q = ry.data;
  q[5] = nextafterf(q[5], INFINITY);
  CHECK(!kt_same_bits(&y, &ry));
  CHECK(adjoint_ok("fires: right adjoint", &x, &y, &g, &dx, ys, dxs,
                   taps_of(&f), ADJ_ON_MISS));
  /* the wrong adjoint: the window not reversed */
  gf_fir_params pw = p;
  pw.flip = 1;
  kt_fir_ref_adj(&g, &f, &pw, &bad, NULL);
  CHECK(!adjoint_ok("fires: window not reversed", &x, &y, &g, &bad, ys, dxs,
                    taps_of(&f), ADJ_QUIET));
  free(ys);
  free(dxs);
  gf_tensor *all[] = {&f, &x, &y, &ry, &g, &dx, &bad};
  for (int k = 0; k < 7; k++) gf_tensor_free(all[k]);
}

/* An infinite filter tap that only meets inserted zeros: with up 2 and a
 * 2x2 filter, window tap (0, 0) of output (i, j) sits on upsampled
 * position (i - 1, j - 1) (pad 1, 0 on each axis), a sample only for odd
 * i and j (+inf there). Skipping zero taps keeps the other 27 outputs
 * finite; multiplying their tap (0, 0) by 0 would make them NaN. */
static void test_skip_zero_taps(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(4, 1, 1, 3, 3), f = kt_tensor(2, 2, 2, 1, 1);
  float *xp = x.data, *fp = f.data;
  for (int i = 0; i < 9; i++) xp[i] = (float)(i + 1);
  fp[0] = INFINITY; /* flip 1: window tap (0, 0) is f[0][0] */
  fp[1] = fp[2] = fp[3] = 0.5f;
  gf_fir_params p = {{2, 2}, {1, 1}, {1, 0, 1, 0}, 1, 1.0f};
  int64_t os[4];
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_out_shape(&x, &f, &p, os, &e) == GF_OK);
  CHECK(os[2] == 6 && os[3] == 6);
  gf_tensor y = kt_tensor(4, 1, 1, 6, 6), ry = kt_tensor(4, 1, 1, 6, 6);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &p, &y, &e) == GF_OK);
  kt_fir_ref(&x, &f, &p, &ry, NULL);
  CHECK(kt_same_bits(&y, &ry));
  const float *yp = y.data;
  int finite = 0, inf = 0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      float v = yp[i * 6 + j];
      bool tap00 = (i % 2 == 1) && (j % 2 == 1);
      if (tap00) inf += isinf(v) && v > 0;
      else finite += isfinite(v);
    }
  CHECKF(inf == 9 && finite == 27, "%d infinite of 9, %d finite of 27", inf,
         finite);
  gf_tensor *all[] = {&x, &f, &y, &ry};
  for (int k = 0; k < 4; k++) gf_tensor_free(all[k]);
}

/* ---- argument errors ----------------------------------------------------- */

/* A shallow copy of t (the same data, not owned) claiming dtype dt on dev. */
static gf_tensor as(const gf_tensor *t, gf_dtype dt, gf_device dev) {
  gf_tensor c = *t;
  c.dtype = dt;
  c.device = dev;
  return c;
}

static void test_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), f = kt_tensor(2, 4, 4, 1, 1);
  gf_tensor y = kt_tensor(4, 2, 3, 8, 10), y9 = kt_tensor(4, 2, 3, 8, 9);
  gf_fir_params p = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
  int64_t os[4];
  CHECK(gf_upfirdn2d_out_shape(&x, &f, &p, os, &e) == GF_OK);
  CHECK(os[0] == 2 && os[1] == 3 && os[2] == 8 && os[3] == 10);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &p, &y, &e) == GF_OK);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &y, &x, &e) == GF_OK);
  /* NULLs */
  CHECK(gf_upfirdn2d_out_shape(NULL, &f, &p, os, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_out_shape(&x, NULL, &p, os, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_out_shape(&x, &f, NULL, os, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(NULL, &x, &f, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, NULL, &f, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, NULL, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &p, NULL, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(NULL, &f, &p, &y, &x, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, NULL, &p, &y, &x, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, NULL, &y, &x, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, NULL, &x, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &y, NULL, &e) == GF_EINVAL);
  /* bad factors, flip, gain */
  gf_fir_params b = p;
  b.up[0] = 0;
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &b, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, ">= 1") != NULL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &b, &y, &x, &e) == GF_EINVAL);
  b = p;
  b.down[1] = -2;
  CHECK(gf_upfirdn2d_out_shape(&x, &f, &b, os, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &b, &y, &e) == GF_EINVAL);
  b = p;
  b.flip = 2;
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &b, &y, &e) == GF_EINVAL);
  b = p;
  b.gain = NAN;
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &b, &y, &e) == GF_EINVAL);
  b.gain = INFINITY;
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &b, &y, &x, &e) == GF_EINVAL);
  /* output side < 1: 4 rows, no pad, a 5-tap filter */
  gf_fir_params p0 = {{1, 1}, {1, 1}, {0, 0, 0, 0}, 0, 1.0f};
  gf_tensor f5 = kt_tensor(2, 5, 1, 1, 1), y1 = kt_tensor(4, 2, 3, 1, 5);
  CHECK(gf_upfirdn2d_out_shape(&x, &f5, &p0, os, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "< 1") != NULL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f5, &p0, &y1, &e) == GF_EINVAL);
  p0.pad[3] = 1; /* one row below: exactly one output row */
  CHECK(gf_upfirdn2d_out_shape(&x, &f5, &p0, os, &e) == GF_OK);
  CHECK(os[2] == 1 && os[3] == 5);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f5, &p0, &y1, &e) == GF_OK);
  p0.pad[2] = -2; /* cropped away again */
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f5, &p0, &y1, &e) == GF_EINVAL);
  /* x not 4-D or with an empty side; f not 2-D or empty */
  gf_tensor x3 = kt_tensor(3, 6, 4, 5, 1), xh0 = kt_tensor(4, 2, 3, 0, 5);
  gf_tensor f1 = kt_tensor(1, 16, 1, 1, 1), f3 = kt_tensor(3, 1, 4, 4, 1);
  gf_tensor f0 = kt_tensor(2, 0, 4, 1, 1);
  CHECK(gf_upfirdn2d_fwd(ctx, &x3, &f, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &xh0, &f, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f1, &p, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "2-D") != NULL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f3, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f0, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f1, &p, &y, &x, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &y, &x3, &e) == GF_EINVAL);
  /* shapes */
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &p, &y9, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [2,3,8,10]") != NULL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &y9, &x, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [2,3,8,10]") != NULL);
  /* dtype (the house's rule: GF_EUNSUPPORTED) and device */
  gf_tensor h16 = as(&x, GF_F16, GF_DEV_CPU), fi = as(&f, GF_I32, GF_DEV_CPU);
  gf_tensor fdev = as(&f, GF_F32, GF_DEV_CUDA);
  gf_tensor ydev = as(&y, GF_F32, GF_DEV_CUDA);
  CHECK(gf_upfirdn2d_fwd(ctx, &h16, &f, &p, &y, &e) == GF_EUNSUPPORTED);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &fi, &p, &y, &e) == GF_EUNSUPPORTED);
  CHECK(gf_upfirdn2d_bwd(ctx, &fi, &p, &y, &x, &e) == GF_EUNSUPPORTED);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &fdev, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(ctx, &x, &f, &p, &ydev, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &ydev, &x, &e) == GF_EINVAL);
  /* overlaps: x [1,1,2,2] inside y [1,1,4,4] (up 2, pad (2,1,2,1): 4x4) */
  gf_tensor big = kt_tensor(1, 64, 1, 1, 1);
  gf_tensor ys = kt_view_at(&big, 0, 4, (int64_t[]){1, 1, 4, 4});
  gf_tensor xs = kt_view_at(&big, 10, 4, (int64_t[]){1, 1, 2, 2});
  gf_tensor fs = kt_view_at(&big, 12, 2, (int64_t[]){4, 4});
  gf_tensor xo = kt_view_at(&big, 40, 4, (int64_t[]){1, 1, 2, 2});
  gf_tensor fo = kt_view_at(&big, 44, 2, (int64_t[]){4, 4});
  CHECK(gf_upfirdn2d_fwd(ctx, &xo, &fo, &p, &ys, &e) == GF_OK);
  CHECK(gf_upfirdn2d_fwd(ctx, &xs, &fo, &p, &ys, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "y overlaps x") != NULL);
  CHECK(gf_upfirdn2d_fwd(ctx, &xo, &fs, &p, &ys, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "y overlaps f") != NULL);
  CHECK(gf_upfirdn2d_bwd(ctx, &fo, &p, &ys, &xo, &e) == GF_OK);
  CHECK(gf_upfirdn2d_bwd(ctx, &fo, &p, &ys, &xs, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dx overlaps dy") != NULL);
  gf_tensor xf = kt_view_at(&big, 44, 4, (int64_t[]){1, 1, 2, 2});
  CHECK(gf_upfirdn2d_bwd(ctx, &fo, &p, &ys, &xf, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dx overlaps f") != NULL);
  /* an empty batch: nothing to do */
  gf_tensor x0 = kt_tensor(4, 0, 3, 4, 5), y0 = kt_tensor(4, 0, 3, 8, 10);
  CHECK(gf_upfirdn2d_fwd(ctx, &x0, &f, &p, &y0, &e) == GF_OK);
  CHECK(gf_upfirdn2d_bwd(ctx, &f, &p, &y0, &x0, &e) == GF_OK);
  gf_tensor *all[] = {&x,   &f,  &y,  &y9, &f5,  &y1, &x3,
                      &xh0, &f1, &f3, &f0, &big, &x0, &y0};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    gf_tensor_free(all[k]);
}

int main(int argc, char **argv) {
  gf_st_file file;
  kt_gold_open(&file, argc > 1 ? argv[1] : GF_FIR_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {20261207};
  for (size_t k = 0; k < sizeof kCases / sizeof kCases[0]; k++)
    test_golden(k % 2 ? &ctx4 : &ctx, &file, kCases[k]);
  test_random_geometries(&ctx, &rng);
  test_threads(&ctx, &ctx4, &rng);
  test_fires(&ctx, &rng);
  test_skip_zero_taps(&ctx);
  test_errors(&ctx);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&file);
  return check_report();
}
