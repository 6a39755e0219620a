/* test_gradcheck_ref.c - every backward of the double-precision references
 * (ref_ops.c) checked coordinate by coordinate against central finite
 * differences of the reference forward (FD_STEP = 1e-6, loss = sum r .* y), on
 * small shapes with stride, padding, output padding and odd sizes. The CPU
 * ops are compared with these references in the other tests, so this closes
 * the loop: op == reference == derivative of the forward. Tolerance:
 * atol 1e-7 + rtol 1e-6 (double, truncation error ~h^2). */
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

#define FD_STEP 1e-6
#define ATOL 1e-7
#define RTOL 1e-6

/* A forward from a flat list of input arrays to y; loss = sum r y. */
typedef void (*fwd_fn)(void *u, double **in, double *y);

/* Checks grads[k] (the reference backward's output for input k) against
 * per-coordinate central differences; returns the number of misses. */
static size_t fd_check(const char *label, fwd_fn f, void *u, double **in,
                       const size_t *n_in, double **grads, int k_in,
                       const double *r, size_t ny) {
  double *y = kt_dzeros(ny), *fd = NULL;
  size_t bad = 0;
  for (int k = 0; k < k_in; k++) {
    if (!grads[k]) continue;
    fd = kt_dzeros(n_in[k]);
    for (size_t i = 0; i < n_in[k]; i++) {
      double save = in[k][i], lp = 0, lm = 0;
      in[k][i] = save + FD_STEP;
      f(u, in, y);
      for (size_t j = 0; j < ny; j++) lp += r[j] * y[j];
      in[k][i] = save - FD_STEP;
      f(u, in, y);
      for (size_t j = 0; j < ny; j++) lm += r[j] * y[j];
      in[k][i] = save;
      fd[i] = (lp - lm) / (2 * FD_STEP);
    }
    char l[96];
    snprintf(l, sizeof l, "%s grad %d", label, k);
    bad += kt_compare_d(l, grads[k], fd, n_in[k], ATOL, RTOL);
    free(fd);
  }
  free(y);
  return bad;
}

static double *rnd(kt_rng *r, size_t n, double lo, double hi) {
  double *d = kt_dzeros(n);
  for (size_t i = 0; i < n; i++) d[i] = kt_uniform(r, lo, hi);
  return d;
}

/* ---- linear ---- */
typedef struct { int N, I, O; } lin_u;
static void lin_f(void *u, double **in, double *y) {
  lin_u *l = u;
  ref_linear_fwd(in[0], in[1], in[2], y, l->N, l->I, l->O);
}
static void check_linear(kt_rng *rng) {
  lin_u l = {3, 4, 5};
  size_t n_in[3] = {12, 20, 5};
  double *in[3] = {rnd(rng, 12, -1, 1), rnd(rng, 20, -1, 1), rnd(rng, 5, -1, 1)};
  double *r = rnd(rng, 15, -1, 1);
  double *g[3] = {kt_dzeros(12), kt_dzeros(20), kt_dzeros(5)};
  ref_linear_bwd(in[0], in[1], r, g[0], g[1], g[2], 3, 4, 5);
  CHECK(fd_check("linear", lin_f, &l, in, n_in, g, 3, r, 15) == 0);
  for (int k = 0; k < 3; k++) free(in[k]), free(g[k]);
  free(r);
}

/* ---- conv / deconv ---- */
typedef struct { ref_conv g; int tr; } conv_u;
static void conv_f(void *u, double **in, double *y) {
  conv_u *c = u;
  if (c->tr) ref_deconv2d_fwd(&c->g, in[0], in[1], in[2], y);
  else ref_conv2d_fwd(&c->g, in[0], in[1], in[2], y);
}
static void check_conv(kt_rng *rng, ref_conv g, int tr) {
  conv_u c = {g, tr};
  if (tr) ref_deconv_out(&c.g);
  else ref_conv_out(&c.g);
  size_t nx = (size_t)g.N * g.Cin * g.H * g.W;
  size_t nw = (size_t)g.Cout * g.Cin * g.kh * g.kw;
  size_t ny = (size_t)g.N * g.Cout * c.g.OH * c.g.OW;
  size_t n_in[3] = {nx, nw, (size_t)g.Cout};
  double *in[3] = {rnd(rng, nx, -1, 1), rnd(rng, nw, -1, 1),
                   rnd(rng, (size_t)g.Cout, -1, 1)};
  double *r = rnd(rng, ny, -1, 1);
  double *gr[3] = {kt_dzeros(nx), kt_dzeros(nw), kt_dzeros((size_t)g.Cout)};
  if (tr) ref_deconv2d_bwd(&c.g, in[0], in[1], r, gr[0], gr[1], gr[2]);
  else ref_conv2d_bwd(&c.g, in[0], in[1], r, gr[0], gr[1], gr[2]);
  CHECKF(fd_check(tr ? "deconv" : "conv", conv_f, &c, in, n_in, gr, 3, r,
                  ny) == 0, "%s s%d p%d op%d", tr ? "deconv" : "conv", g.sh,
         g.ph, g.oph);
  for (int k = 0; k < 3; k++) free(in[k]), free(gr[k]);
  free(r);
}

/* ---- batch norm (training, through the batch statistics) ---- */
typedef struct { int N, C, S, affine; } bn_u;
static void bn_f(void *u, double **in, double *y) {
  bn_u *b = u;
  double mean[8], var[8];
  ref_bn_fwd_train(in[0], b->affine ? in[1] : NULL, b->affine ? in[2] : NULL,
                   b->N, b->C, b->S, 1e-5, y, mean, var);
}
static void check_bn(kt_rng *rng, int N, int C, int S, int affine) {
  bn_u b = {N, C, S, affine};
  size_t n = (size_t)N * C * S;
  size_t n_in[3] = {n, (size_t)C, (size_t)C};
  double *in[3] = {rnd(rng, n, -2, 2), rnd(rng, (size_t)C, 0.5, 1.5),
                   rnd(rng, (size_t)C, -1, 1)};
  double *r = rnd(rng, n, -1, 1);
  double *g[3] = {kt_dzeros(n), affine ? kt_dzeros((size_t)C) : NULL,
                  affine ? kt_dzeros((size_t)C) : NULL};
  ref_bn_bwd(in[0], affine ? in[1] : NULL, r, N, C, S, 1e-5, g[0], g[1],
             g[2]);
  CHECKF(fd_check("bn", bn_f, &b, in, n_in, g, 3, r, n) == 0, "bn N%d C%d S%d",
         N, C, S);
  for (int k = 0; k < 3; k++) free(in[k]), free(g[k]);
  free(r);
}

/* ---- activations, dropout, BCE ---- */
typedef struct { int kind; } act_u;
static void act_f(void *u, double **in, double *y) {
  ref_act_fwd(((act_u *)u)->kind, 0.2, in[0], y, 50);
}
static void check_act(kt_rng *rng, int kind) {
  act_u a = {kind};
  size_t n_in[1] = {50};
  double *in[1] = {kt_dzeros(50)};
  for (int i = 0; i < 50; i++) { /* away from the kink at 0 */
    double v;
    do v = kt_uniform(rng, -4, 4);
    while (fabs(v) < 1e-3);
    in[0][i] = v;
  }
  double *r = rnd(rng, 50, -1, 1);
  double *g[1] = {kt_dzeros(50)};
  ref_act_bwd(kind, 0.2, in[0], r, g[0], 50);
  CHECKF(fd_check("act", act_f, &a, in, n_in, g, 1, r, 50) == 0, "act %d",
         kind);
  free(in[0]); free(g[0]); free(r);
}

static void drop_f(void *u, double **in, double *y) {
  (void)u;
  const uint32_t key[2] = {1, 2}, hi[2] = {3, 4};
  ref_dropout(in[0], 0.4, key, hi, 17, y, 40);
}
static void check_dropout(kt_rng *rng) {
  /* dropout is linear in x: its backward is the same masked scaling */
  size_t n_in[1] = {40};
  double *in[1] = {rnd(rng, 40, -1, 1)};
  double *r = rnd(rng, 40, -1, 1), *g[1] = {kt_dzeros(40)};
  const uint32_t key[2] = {1, 2}, hi[2] = {3, 4};
  ref_dropout(r, 0.4, key, hi, 17, g[0], 40);
  CHECK(fd_check("dropout", drop_f, NULL, in, n_in, g, 1, r, 40) == 0);
  free(in[0]); free(g[0]); free(r);
}

typedef struct { const double *t; } bce_u;
static void bce_f(void *u, double **in, double *y) {
  y[0] = ref_bce_fwd(in[0], ((bce_u *)u)->t, 30);
}
static void check_bce(kt_rng *rng) {
  double *t = rnd(rng, 30, 0, 1);
  bce_u b = {t};
  size_t n_in[1] = {30};
  double *in[1] = {rnd(rng, 30, -6, 6)};
  double r[1] = {0.7}, *g[1] = {kt_dzeros(30)};
  ref_bce_bwd(in[0], t, r[0], g[0], 30);
  CHECK(fd_check("bce", bce_f, &b, in, n_in, g, 1, r, 1) == 0);
  free(in[0]); free(g[0]); free(t);
}

int main(void) {
  kt_rng rng = {2024};
  check_linear(&rng);
  /* N Cin H W Cout kh kw sh sw ph pw oph opw */
  check_conv(&rng, (ref_conv){2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0}, 0);
  check_conv(&rng, (ref_conv){1, 2, 6, 7, 2, 4, 4, 2, 2, 1, 1, 0, 0, 0, 0}, 0);
  check_conv(&rng, (ref_conv){2, 1, 5, 5, 2, 3, 2, 2, 1, 0, 1, 0, 0, 0, 0}, 0);
  check_conv(&rng, (ref_conv){1, 3, 1, 1, 2, 4, 4, 1, 1, 0, 0, 0, 0, 0, 0}, 1);
  check_conv(&rng, (ref_conv){2, 2, 3, 2, 2, 4, 4, 2, 2, 1, 1, 0, 0, 0, 0}, 1);
  check_conv(&rng, (ref_conv){1, 2, 3, 3, 2, 3, 3, 2, 2, 1, 0, 1, 1, 0, 0}, 1);
  check_bn(&rng, 4, 3, 1, 1);
  check_bn(&rng, 2, 2, 5, 1);
  check_bn(&rng, 3, 2, 2, 0);
  for (int k = REF_RELU; k <= REF_SIGMOID; k++) check_act(&rng, k);
  check_dropout(&rng);
  check_bce(&rng);
  return check_report();
}
