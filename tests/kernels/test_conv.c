/* test_conv.c - gf_conv2d_* and gf_deconv2d_* (CPU backend) against the
 * nested-loop references on random inputs of several shapes (odd sizes,
 * stride 2, padding, output padding, batch 1, non-square kernels, the DCGAN
 * 1x1 -> 4x4 and 4x4 -> 1x1 layers), parameter-gradient accumulation, NULL
 * gradient outputs, the primitive cache, and directional finite-difference
 * checks of every backward output on the f32 op itself.
 * Tolerances: forward and backward vs the double reference atol 1e-4 +
 * rtol 1e-4 (inputs in [-1,1], weights in [-0.5,0.5], f32 sums of at most a
 * few hundred terms); finite differences (h = 2^-7, +-1 directions) atol
 * 1e-3 + rtol 1e-3. */
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

#define TOL_A 1e-4
#define TOL_R 1e-4
#define FD_H 0.0078125
#define FD_A 1e-3
#define FD_R 1e-3

typedef struct conv_case {
  int N, Cin, H, W, Cout, kh, kw, sh, sw, ph, pw, oph, opw;
  int bias;
} conv_case;

typedef struct fd_state {
  gf_ctx *ctx;
  int transposed;
  gf_tensor *x, *w, *b, *y, *r;
  gf_conv_params p;
} fd_state;

static double fd_loss(void *u) {
  fd_state *s = u;
  gf_err e;
  gf_status st = s->transposed
                     ? gf_deconv2d_fwd(s->ctx, s->x, s->w, s->b, &s->p, s->y, &e)
                     : gf_conv2d_fwd(s->ctx, s->x, s->w, s->b, &s->p, s->y, &e);
  REQUIRE(st == GF_OK);
  return kt_dot(s->y->data, s->r->data, (size_t)gf_tensor_numel(s->y));
}

static void run_case(gf_ctx *ctx, const conv_case *c, int transposed,
                     kt_rng *rng) {
  char lbl[160];
  snprintf(lbl, sizeof lbl, "%s N%d Cin%d %dx%d Cout%d k%dx%d s%d,%d p%d,%d "
           "op%d,%d b%d", transposed ? "deconv" : "conv", c->N, c->Cin, c->H,
           c->W, c->Cout, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, c->oph,
           c->opw, c->bias);
  ref_conv g = {c->N, c->Cin, c->H, c->W, c->Cout, c->kh, c->kw, c->sh,
                c->sw, c->ph, c->pw, c->oph, c->opw, 0, 0};
  if (transposed) ref_deconv_out(&g);
  else ref_conv_out(&g);
  gf_conv_params p = {{c->sh, c->sw}, {c->ph, c->pw}, {c->oph, c->opw}};
  gf_tensor x = kt_tensor(4, c->N, c->Cin, c->H, c->W);
  gf_tensor w = transposed ? kt_tensor(4, c->Cin, c->Cout, c->kh, c->kw)
                           : kt_tensor(4, c->Cout, c->Cin, c->kh, c->kw);
  gf_tensor b = kt_tensor(1, c->Cout, 1, 1, 1);
  gf_tensor y = kt_tensor(4, c->N, c->Cout, g.OH, g.OW);
  gf_tensor dy = kt_tensor(4, c->N, c->Cout, g.OH, g.OW);
  gf_tensor dx = kt_tensor(4, c->N, c->Cin, c->H, c->W);
  gf_tensor dw = transposed ? kt_tensor(4, c->Cin, c->Cout, c->kh, c->kw)
                            : kt_tensor(4, c->Cout, c->Cin, c->kh, c->kw);
  gf_tensor db = kt_tensor(1, c->Cout, 1, 1, 1);
  kt_fill(&x, rng, -1, 1, 0);
  kt_fill(&w, rng, -0.5, 0.5, 0);
  kt_fill(&b, rng, -0.5, 0.5, 0);
  kt_fill(&dy, rng, -1, 1, 0);
  gf_tensor *bp = c->bias ? &b : NULL;
  size_t nx = (size_t)gf_tensor_numel(&x), nw = (size_t)gf_tensor_numel(&w);
  size_t ny = (size_t)gf_tensor_numel(&y);

  int64_t shp[4];
  gf_err e = {0};
  gf_status st = transposed ? gf_deconv2d_out_shape(&x, &w, &p, shp, &e)
                            : gf_conv2d_out_shape(&x, &w, &p, shp, &e);
  CHECKF(st == GF_OK && shp[2] == g.OH && shp[3] == g.OW, "%s: out shape",
         lbl);

  double *xd = kt_dbl(&x), *wd = kt_dbl(&w), *bd = kt_dbl(&b);
  double *dyd = kt_dbl(&dy);
  double *yr = kt_dzeros(ny), *dxr = kt_dzeros(nx), *dwr = kt_dzeros(nw);
  double *dbr = kt_dzeros((size_t)c->Cout);
  if (transposed) {
    ref_deconv2d_fwd(&g, xd, wd, c->bias ? bd : NULL, yr);
    ref_deconv2d_bwd(&g, xd, wd, dyd, dxr, dwr, dbr);
  } else {
    ref_conv2d_fwd(&g, xd, wd, c->bias ? bd : NULL, yr);
    ref_conv2d_bwd(&g, xd, wd, dyd, dxr, dwr, dbr);
  }

  /* forward */
  st = transposed ? gf_deconv2d_fwd(ctx, &x, &w, bp, &p, &y, &e)
                  : gf_conv2d_fwd(ctx, &x, &w, bp, &p, &y, &e);
  CHECKF(st == GF_OK, "%s fwd: %s", lbl, e.msg);
  if (st == GF_OK) CHECKF(kt_compare(lbl, y.data, yr, ny, TOL_A, TOL_R) == 0,
                          "%s: forward", lbl);

  /* backward, overwrite; dw/db start as garbage to prove overwrite */
  kt_fill(&dw, rng, -9, 9, 0);
  kt_fill(&db, rng, -9, 9, 0);
  kt_fill(&dx, rng, -9, 9, 0);
  st = transposed
           ? gf_deconv2d_bwd(ctx, &x, &w, &dy, &p, &dx, &dw, &db,
                             GF_OVERWRITE, &e)
           : gf_conv2d_bwd(ctx, &x, &w, &dy, &p, &dx, &dw, &db, GF_OVERWRITE,
                           &e);
  CHECKF(st == GF_OK, "%s bwd: %s", lbl, e.msg);
  if (st == GF_OK) {
    CHECKF(kt_compare("dx", dx.data, dxr, nx, TOL_A, TOL_R) == 0, "%s dx",
           lbl);
    CHECKF(kt_compare("dw", dw.data, dwr, nw, TOL_A, TOL_R) == 0, "%s dw",
           lbl);
    CHECKF(kt_compare("db", db.data, dbr, (size_t)c->Cout, TOL_A, TOL_R) == 0,
           "%s db", lbl);
  }

  /* accumulate: a second call adds the same gradient again */
  st = transposed ? gf_deconv2d_bwd(ctx, &x, &w, &dy, &p, NULL, &dw, &db,
                                    GF_ACCUMULATE, &e)
                  : gf_conv2d_bwd(ctx, &x, &w, &dy, &p, NULL, &dw, &db,
                                  GF_ACCUMULATE, &e);
  CHECKF(st == GF_OK, "%s bwd accumulate: %s", lbl, e.msg);
  for (size_t i = 0; i < nw; i++) dwr[i] *= 2;
  for (int i = 0; i < c->Cout; i++) dbr[i] *= 2;
  CHECKF(kt_compare("dw+=", dw.data, dwr, nw, 2 * TOL_A, TOL_R) == 0,
         "%s dw accumulate", lbl);
  CHECKF(kt_compare("db+=", db.data, dbr, (size_t)c->Cout, 2 * TOL_A,
                    TOL_R) == 0, "%s db accumulate", lbl);

  /* only db (the plain-C bias path), overwriting */
  st = transposed ? gf_deconv2d_bwd(ctx, &x, &w, &dy, &p, NULL, NULL, &db,
                                    GF_OVERWRITE, &e)
                  : gf_conv2d_bwd(ctx, &x, &w, &dy, &p, NULL, NULL, &db,
                                  GF_OVERWRITE, &e);
  for (int i = 0; i < c->Cout; i++) dbr[i] /= 2;
  CHECKF(st == GF_OK && kt_compare("db only", db.data, dbr, (size_t)c->Cout,
                                   TOL_A, TOL_R) == 0, "%s db only", lbl);

  /* directional finite differences of the f32 op, loss = sum r .* y */
  fd_state s = {ctx, transposed, &x, &w, bp, &y, &dy, p};
  st = transposed ? gf_deconv2d_bwd(ctx, &x, &w, &dy, &p, &dx, &dw, bp ? &db : NULL,
                                    GF_OVERWRITE, &e)
                  : gf_conv2d_bwd(ctx, &x, &w, &dy, &p, &dx, &dw, bp ? &db : NULL,
                                  GF_OVERWRITE, &e);
  REQUIRE(st == GF_OK);
  float *dir = malloc(sizeof(float) * (nx > nw ? nx : nw));
  REQUIRE(dir);
  kt_rademacher(dir, nx, rng);
  double fd = kt_dir_fd(fd_loss, &s, x.data, dir, nx, FD_H);
  CHECKF(kt_fd_ok("fd dx", fd, kt_dot(dx.data, dir, nx), FD_A, FD_R),
         "%s fd dx", lbl);
  kt_rademacher(dir, nw, rng);
  fd = kt_dir_fd(fd_loss, &s, w.data, dir, nw, FD_H);
  CHECKF(kt_fd_ok("fd dw", fd, kt_dot(dw.data, dir, nw), FD_A, FD_R),
         "%s fd dw", lbl);
  if (bp) {
    kt_rademacher(dir, (size_t)c->Cout, rng);
    fd = kt_dir_fd(fd_loss, &s, b.data, dir, (size_t)c->Cout, FD_H);
    CHECKF(kt_fd_ok("fd db", fd, kt_dot(db.data, dir, (size_t)c->Cout), FD_A,
                    FD_R), "%s fd db", lbl);
  }
  free(dir);
  free(xd); free(wd); free(bd); free(dyd); free(yr); free(dxr); free(dwr);
  free(dbr);
  gf_tensor *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &db};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

static const conv_case conv_cases[] = {
    /* N Cin H W Cout kh kw sh sw ph pw oph opw bias */
    {2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 0, 0, 1},
    {1, 2, 8, 9, 3, 4, 4, 2, 2, 1, 1, 0, 0, 1},  /* batch 1, DCGAN k4 s2 p1 */
    {3, 5, 5, 5, 2, 3, 3, 2, 2, 0, 0, 0, 0, 0},  /* odd, stride 2, no pad */
    {2, 4, 4, 4, 1, 4, 4, 1, 1, 0, 0, 0, 0, 0},  /* DCGAN D last: 4x4 -> 1x1 */
    {2, 3, 6, 5, 4, 3, 2, 2, 1, 1, 0, 0, 0, 1},  /* non-square */
    {2, 3, 8, 8, 5, 3, 3, 2, 2, 1, 1, 0, 0, 1},  /* window skips last row */
};

static const conv_case deconv_cases[] = {
    {2, 5, 1, 1, 4, 4, 4, 1, 1, 0, 0, 0, 0, 0},  /* DCGAN G first: 1 -> 4 */
    {1, 3, 4, 5, 2, 4, 4, 2, 2, 1, 1, 0, 0, 1},  /* DCGAN k4 s2 p1, batch 1 */
    {2, 2, 3, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1},  /* output padding */
    {3, 4, 3, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1},  /* stride 1, odd */
    {2, 2, 1, 1, 3, 7, 7, 1, 1, 0, 0, 0, 0, 0},  /* 28x28 G first: 1 -> 7 */
    {1, 3, 3, 4, 2, 3, 2, 2, 1, 1, 0, 1, 0, 1},  /* non-square, op on h */
    {2, 2, 3, 3, 2, 3, 3, 2, 2, 0, 0, 1, 1, 1},  /* out_pad > pad */
};

static void test_cache(gf_ctx *ctx, kt_rng *rng) {
  gf_tensor x = kt_tensor(4, 2, 3, 6, 6), w = kt_tensor(4, 4, 3, 3, 3);
  gf_tensor y = kt_tensor(4, 2, 4, 6, 6);
  kt_fill(&x, rng, -1, 1, 0);
  kt_fill(&w, rng, -1, 1, 0);
  gf_conv_params p = {{1, 1}, {1, 1}, {0, 0}};
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, NULL) == GF_OK);
  gf_ctx_stats a = gf_ctx_get_stats(ctx);
  for (int i = 0; i < 3; i++)
    CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, NULL) == GF_OK);
  gf_ctx_stats b = gf_ctx_get_stats(ctx);
  CHECK_INT_EQ(b.primitives_created, a.primitives_created);
  CHECK_INT_EQ(b.primitive_hits, a.primitive_hits + 3);
  /* a different padding is a different primitive */
  p.pad[0] = p.pad[1] = 0;
  gf_tensor y2 = kt_tensor(4, 2, 4, 4, 4);
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y2, NULL) == GF_OK);
  CHECK_INT_EQ(gf_ctx_get_stats(ctx).primitives_created,
               a.primitives_created + 1);
  gf_tensor_free(&x); gf_tensor_free(&w); gf_tensor_free(&y);
  gf_tensor_free(&y2);
}

static void test_errors(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(4, 1, 3, 5, 5), w = kt_tensor(4, 2, 4, 3, 3);
  gf_tensor y = kt_tensor(4, 1, 2, 3, 3);
  gf_conv_params p = {{1, 1}, {0, 0}, {0, 0}};
  gf_err e = {0};
  /* channel mismatch (w expects 4) */
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, &e) == GF_EINVAL);
  CHECK(e.code == GF_EINVAL && strstr(e.msg, "channels") != NULL);
  gf_tensor_free(&w);
  w = kt_tensor(4, 2, 3, 3, 3);
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, &e) == GF_OK);
  /* wrong output shape */
  gf_tensor ybad = kt_tensor(4, 1, 2, 4, 3);
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &ybad, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "y has shape [1,2,4,3], expected [1,2,3,3]") != NULL);
  /* bad stride, out_pad on a conv, out_pad >= stride on a deconv */
  p.stride[0] = 0;
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, &e) == GF_EINVAL);
  p.stride[0] = 1;
  p.out_pad[0] = 1;
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, &e) == GF_EINVAL);
  int64_t out[4];
  gf_tensor wt = kt_tensor(4, 3, 2, 3, 3);
  CHECK(gf_deconv2d_out_shape(&x, &wt, &p, out, &e) == GF_EINVAL);
  /* a non-f32 tensor is refused, not misread */
  x.dtype = GF_BF16;
  CHECK(gf_conv2d_fwd(ctx, &x, &w, NULL, &p, &y, &e) == GF_EUNSUPPORTED);
  x.dtype = GF_F32;
  /* kernel larger than the padded input */
  gf_tensor xs = kt_tensor(4, 1, 3, 2, 2);
  p.out_pad[0] = 0;
  CHECK(gf_conv2d_out_shape(&xs, &w, &p, out, &e) == GF_EINVAL);
  gf_tensor_free(&x); gf_tensor_free(&w); gf_tensor_free(&y);
  gf_tensor_free(&ybad); gf_tensor_free(&wt); gf_tensor_free(&xs);
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {12345};
  for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++)
    run_case(&ctx, &conv_cases[i], 0, &rng);
  for (size_t i = 0; i < sizeof deconv_cases / sizeof *deconv_cases; i++)
    run_case(&ctx, &deconv_cases[i], 1, &rng);
  test_cache(&ctx, &rng);
  test_errors(&ctx);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx); /* a second free is harmless */
  gf_ctx_free(NULL);
  return check_report();
}
