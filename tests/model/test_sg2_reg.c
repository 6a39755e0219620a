/* test_sg2_reg.c - StyleGAN2's regularisers (gf/sg2_net.h) against the
 * official code's double backward in golden/sg2_<case>_r1.safetensors
 * (golden/make_sg2_reg_golden.py) and golden/sg2_<case>_pl.safetensors
 * (golden/make_sg2_pl_golden.py); the weights and inputs are the nets'
 * goldens sg2_<case>_{d,g}.safetensors.
 *
 *   test_sg2_reg GOLDEN_DIR        the CPU (1 thread), cases uncond, cond
 *       (c_dim 3: D's mapping gets R1 gradients), clamp (conv_clamp 0.6)
 *       and orig (no skips):
 *       gf_sg2_d_r1 at scale 1: the penalty (the mean of out.r1_penalty)
 *       and every D parameter's gradient (D.r1.<name>) within
 *       GRAD_TOL_REL of the tensor's max; grad_x (out.r1_grads) through
 *       gf_sg2_d_bwd; GF_ACCUMULATE at scale 0.5 adds half; 4 threads
 *       within the same tolerances; a finite-difference check of the
 *       penalty along one element (the largest R1 gradient) of each of
 *       b4.fc.weight, b8.conv1.weight and b4.conv.weight (layers above and
 *       below mbstd); each comparison shown to fire
 *       (a perturbed weight fails the golden comparisons, a gradient
 *       scaled by 1.05 fails the finite differences).
 *       Through the augmentation (gf_sg2_d_r1 with a gf_ada, p 0.6; cond
 *       and uncond): the penalty against ||A^T grad|| by the first-order
 *       passes, gf_ada_jvp against the difference of two forwards, the
 *       gradients against finite differences (no official golden: its
 *       draws are not ours); each shown to fire.
 *       Path length (gf_sg2_g_pl; golden/sg2_<case>_pl.safetensors of
 *       make_sg2_pl_golden.py, uncond, cond (4 threads) and clamp, batch
 *       2, noise const, the pl noise given): the penalty and the updated
 *       pl_mean within PEN_TOL_REL, every G parameter's gradient (the
 *       mapping's through ws) within PL_TOL_REL of the tensor's max
 *       (worst seen 1.0e-5, a noise_strength); GF_ACCUMULATE at scale 0.5
 *       adds half; finite differences of weight * penalty along one
 *       element of synthesis.b32.torgb.weight, its affine and
 *       mapping.fc0.weight (not with clamp: clamps engage along it)
 *       within PL_FD_TOL_REL 1e-2 (worst seen 2e-3; step PL_FD_H 1e-4 of
 *       the tensor's max: the lengths are sums of f32 gradients, and a
 *       larger step moves leaky-ReLU kinks, on which the lengths jump);
 *       a perturbed weight fails the golden comparisons, a gradient 5%
 *       off the finite differences.
 *   test_sg2_reg GOLDEN_DIR cuda   the same R1 on CUDA against the goldens
 *       and the CPU, and path length on CUDA against the goldens; 77
 *       without a usable GPU.
 *
 * Tolerances: GRAD_TOL_REL 1e-4 of the tensor's max|official| (+ 1e-9
 * absolute; worst seen 3.3e-5); a bias's R1 gradient BIAS_TOL_REL 3e-3
 * (worst seen 1.1e-3): it comes from mbstd's second derivative alone
 * (orig's b8.conv1.bias, all below 3e-10, is within the 1e-9 floor), 1e-2
 * of the weights' gradients, a sum over n H W terms that cancel, where the f32 autograd
 * and this code round differently (the finite differences cannot resolve
 * it: a bias step moves the penalty below f32's resolution); the penalty
 * PEN_TOL_REL 1e-5 (worst seen 3.8e-7); finite differences FD_TOL_REL
 * 2e-3 of the directional derivative (worst seen 3e-4; f32 central
 * differences, step FD_H times the tensor's max|value|; one element, so
 * that few leaky-ReLU kinks move: the penalty jumps where one does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/ada.h"
#include "gf/safetensors.h"
#include "gf/sg2_net.h"
#include "sg2_test_util.h"

#define GRAD_TOL_REL 1e-4
#define BIAS_TOL_REL 3e-3
#define PL_TOL_REL 1e-4
#define PL_FD_H 1e-4
#define PL_FD_TOL_REL 1e-2

#define PEN_TOL_REL 1e-5
#define FD_TOL_REL 2e-3
#define FD_H 1e-3

static const char *g_dir;
/* worst |d| / max|t|: R1 weights, R1 biases, path length */
static double g_worst_grad[3], g_worst_pen;
static char g_worst_what[3][128];

/* Values of got (any device) farther than rel * max|want| (+ 1e-9) from
 * want * scale; prints and records the worst when record. */
static long misses(const char *what, const gf_tensor *got,
                   const gf_tensor *want, double scale, double rel, bool record,
                   int slot) {
  gf_tensor h = sg2t_on_dev(got, GF_DEV_CPU);
  long bad = 0;
  int64_t n = gf_tensor_numel(want);
  if (gf_tensor_numel(&h) != n) {
    gf_tensor_free(&h);
    return 1;
  }
  const float *g = h.data, *t = want->data;
  double tmax = 0, wd = 0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(t[i] * scale) > tmax) tmax = fabs(t[i] * scale);
  double tol = rel * tmax + 1e-9;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - t[i] * scale);
    if (!(d <= tol)) bad++;
    if (!(d <= wd)) wd = d;
  }
  if (record) {
    double r = tmax > 0 ? wd / tmax : wd;
    printf("  %-40s n %-6lld worst |d| %-10.3g = %-9.3g max|t|\n", what,
           (long long)n, wd, r);
    if (r > g_worst_grad[slot]) {
      g_worst_grad[slot] = r;
      snprintf(g_worst_what[slot], sizeof g_worst_what[slot], "%s", what);
    }
  }
  gf_tensor_free(&h);
  return bad;
}

/* A case: the D golden (weights, inputs), the R1 golden, D built for
 * training on ctx with the golden weights, img and c on ctx's device. */
typedef struct rcase {
  const char *name;
  gf_st_file fd, fr;
  gf_sg2_config cfg;
  gf_sg2_net d;
  gf_tensor img, c;
  bool has_c;
  gf_ada *aug;     /* NULL, or img = aug's forward of reals */
  gf_tensor reals; /* with aug: the pipeline's input */
} rcase;

static void rcase_open(rcase *k, const char *cs, gf_ctx *ctx) {
  gf_err err;
  char path[512];
  k->name = cs;
  gf_st_file_init(&k->fd);
  gf_st_file_init(&k->fr);
  snprintf(path, sizeof path, "%s/sg2_%s_d.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(&k->fd, path, 0, &err) == GF_OK);
  snprintf(path, sizeof path, "%s/sg2_%s_r1.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(&k->fr, path, 0, &err) == GF_OK);
  k->cfg = sg2t_case_config(&k->fd);
  REQUIRE(gf_sg2_net_init(&k->d, ctx, &k->cfg, GF_SG2_D, 4, true, &err) ==
          GF_OK);
  int loaded = 0;
  for (size_t i = 0; i < k->fd.n_tensors; i++) {
    const char *nm = k->fd.tensors[i].name;
    if (strncmp(nm, "D.", 2) != 0) continue;
    gf_tensor g = sg2t_gold(&k->fd, nm);
    CHECKF(gf_sg2_load(&k->d, nm + 2, &g, &err) == GF_OK, "load %s: %s", nm,
           err.msg);
    loaded++;
    gf_tensor_free(&g);
  }
  CHECKF(loaded == k->d.n_tensors, "%s: %d tensors loaded of %d", cs, loaded,
         k->d.n_tensors);
  gf_tensor h = sg2t_gold(&k->fd, "in.img");
  k->img = sg2t_on_dev(&h, ctx->device);
  gf_tensor_free(&h);
  k->has_c = k->cfg.c_dim > 0;
  k->aug = NULL;
  memset(&k->c, 0, sizeof k->c);
  if (k->has_c) {
    h = sg2t_gold(&k->fd, "in.c");
    k->c = sg2t_on_dev(&h, ctx->device);
    gf_tensor_free(&h);
  }
}

static void rcase_close(rcase *k) {
  gf_sg2_net_free(&k->d);
  gf_tensor_free(&k->img);
  if (k->has_c) gf_tensor_free(&k->c);
  gf_st_file_free(&k->fd);
  gf_st_file_free(&k->fr);
}

static float r1(rcase *k, gf_ctx *ctx, float scale, gf_accum accum) {
  gf_err err;
  float pen = NAN;
  CHECKF(gf_sg2_d_r1(&k->d, ctx, &k->img, k->has_c ? &k->c : NULL, k->aug,
                     scale, accum, &pen, &err) == GF_OK,
         "%s: gf_sg2_d_r1: %s", k->name, err.msg);
  return pen;
}

/* The golden mean penalty. */
static double gold_pen(const rcase *k) {
  gf_tensor p = sg2t_gold(&k->fr, "out.r1_penalty");
  double s = 0;
  for (int64_t i = 0; i < gf_tensor_numel(&p); i++) s += ((float *)p.data)[i];
  s /= (double)gf_tensor_numel(&p);
  gf_tensor_free(&p);
  return s;
}

/* Misses of every trainable parameter's gradient against D.r1.<name> *
 * scale; every golden gradient must be compared. */
static long cmp_grads(rcase *k, double scale, const char *tag, bool record) {
  long bad = 0;
  int n = 0;
  for (int i = 0; i < k->d.n_tensors; i++) {
    gf_param *p = &k->d.tensors[i];
    if (!p->trainable) continue;
    char nm[128], w[192];
    snprintf(nm, sizeof nm, "D.r1.%s", p->name);
    if (!gf_st_find(&k->fr, nm)) {
      CHECKF(0, "%s: no golden %s", k->name, nm);
      continue;
    }
    n++;
    gf_tensor t = sg2t_gold(&k->fr, nm);
    snprintf(w, sizeof w, "%s%s r1 d%s", k->name, tag, p->name);
    bool bias = p->kind == GF_PARAM_BIAS;
    double tol = bias ? BIAS_TOL_REL : GRAD_TOL_REL;
    long m = misses(w, &p->grad, &t, scale, tol, record, bias ? 1 : 0);
    if (record) CHECKF(m == 0, "%s: %ld outside %g", w, m, tol);
    bad += m;
    gf_tensor_free(&t);
  }
  int golden = 0;
  for (size_t i = 0; i < k->fr.n_tensors; i++)
    golden += strncmp(k->fr.tensors[i].name, "D.r1.", 5) == 0;
  CHECKF(golden == n, "%s: %d golden gradients, %d compared", k->name, golden,
         n);
  return bad;
}

static bool pen_ok(const rcase *k, float pen, bool record) {
  double t = gold_pen(k), d = fabs(pen - t) / fabs(t);
  if (record) {
    printf("  %-40s %.9g vs %.9g: |d| %.3g relative\n", k->name, pen, t, d);
    if (d > g_worst_pen) g_worst_pen = d;
  }
  return d <= PEN_TOL_REL;
}

/* grad_x sum D against out.r1_grads. */
static long cmp_gx(rcase *k, gf_ctx *ctx) {
  gf_err err;
  gf_tensor lg, ones, gx;
  REQUIRE(gf_sg2_d_fwd(&k->d, ctx, &k->img, k->has_c ? &k->c : NULL,
                       GF_MODE_TRAIN, &lg, &err) == GF_OK);
  REQUIRE(gf_tensor_init(&ones, GF_F32, ctx->device, 2, lg.shape, &err) ==
          GF_OK);
  REQUIRE(gf_tensor_init(&gx, GF_F32, ctx->device, 4, k->img.shape, &err) ==
          GF_OK);
  REQUIRE(gf_fill(ctx, &ones, 1.0f, &err) == GF_OK);
  REQUIRE(gf_sg2_d_bwd(&k->d, ctx, &ones, &gx, GF_OVERWRITE, &err) == GF_OK);
  gf_tensor t = sg2t_gold(&k->fr, "out.r1_grads");
  char w[96];
  snprintf(w, sizeof w, "%s grad_x sum D", k->name);
  long m = misses(w, &gx, &t, 1.0, GRAD_TOL_REL, true, 0);
  gf_tensor_free(&t);
  gf_tensor_free(&ones);
  gf_tensor_free(&gx);
  return m;
}

/* Adds h * dir to tensor p's value (dir a host array of its numel). */
static void shift(gf_param *p, const float *dir, double h) {
  gf_tensor v = sg2t_on_dev(&p->value, GF_DEV_CPU);
  float *x = v.data;
  for (int64_t i = 0; i < gf_tensor_numel(&v); i++)
    x[i] = (float)(x[i] + h * dir[i]);
  gf_err err;
  REQUIRE(gf_tensor_copy(&p->value, &v, &err) == GF_OK);
  gf_tensor_free(&v);
}

/* The central difference of the penalty along the element of parameter
 * `name` with the largest gradient (step FD_H max|value|) against
 * <grad, dir> with the gradient times gscale; returns whether it agrees. */
static bool fd_check(rcase *k, gf_ctx *ctx, const char *name, double gscale,
                     bool record) {
  gf_param *p = gf_sg2_find(&k->d, name);
  REQUIRE(p != NULL);
  r1(k, ctx, 1.0f, GF_OVERWRITE);
  gf_tensor g = sg2t_on_dev(&p->grad, GF_DEV_CPU),
            v = sg2t_on_dev(&p->value, GF_DEV_CPU);
  int64_t n = gf_tensor_numel(&g);
  float *dir = malloc((size_t)n * sizeof *dir);
  REQUIRE(dir != NULL);
  double vmax = 0, dot = 0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(((float *)v.data)[i]) > vmax) vmax = fabs(((float *)v.data)[i]);
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    dir[i] = 0.0f;
    if (fabs(((float *)g.data)[i]) > fabs(((float *)g.data)[at])) at = i;
  }
  dir[at] = 1.0f;
  dot = ((float *)g.data)[at] * gscale;
  double h = FD_H * vmax;
  shift(p, dir, h);
  double pp = r1(k, ctx, 1.0f, GF_OVERWRITE);
  shift(p, dir, -2 * h);
  double pm = r1(k, ctx, 1.0f, GF_OVERWRITE);
  shift(p, dir, h);
  double fd = (pp - pm) / (2 * h);
  double rel = fabs(fd - dot) / fabs(dot);
  if (record)
    printf("  %-40s fd %.6g vs <grad, dir> %.6g: %.3g relative\n", name, fd,
           dot, rel);
  free(dir);
  gf_tensor_free(&g);
  gf_tensor_free(&v);
  return rel <= FD_TOL_REL;
}

/* Sets element 0 of tensor name to v plus its value (restore: -v). */
static void poke(gf_sg2_net *net, const char *name, float v) {
  gf_param *p = gf_sg2_find(net, name);
  REQUIRE(p != NULL);
  float dir[1] = {1.0f};
  gf_tensor one = p->value;
  one.shape[0] = 1;
  one.ndim = 1;
  gf_param q = *p;
  q.value = one;
  shift(&q, dir, v);
}

static void cpu_case(const char *cs, gf_ctx *ctx, gf_ctx *ctx4) {
  rcase k;
  rcase_open(&k, cs, ctx);
  CHECKF(cmp_gx(&k, ctx) == 0, "%s: grad_x outside %g", cs, GRAD_TOL_REL);
  float pen = r1(&k, ctx, 1.0f, GF_OVERWRITE);
  CHECKF(pen_ok(&k, pen, true), "%s: penalty %.9g vs %.9g", cs, pen,
         gold_pen(&k));
  cmp_grads(&k, 1.0, "", true);
  /* accumulate: + 0.5 */
  float pen2 = r1(&k, ctx, 0.5f, GF_ACCUMULATE);
  CHECKF(pen2 == pen, "%s: penalty %.9g then %.9g", cs, pen, pen2);
  CHECKF(cmp_grads(&k, 1.5, " accum", false) == 0,
         "%s: scale 1 then accumulate 0.5 is not 1.5", cs);
  /* 4 threads */
  float pen4 = r1(&k, ctx4, 1.0f, GF_OVERWRITE);
  CHECKF(pen_ok(&k, pen4, false), "%s: 4 threads penalty", cs);
  CHECKF(cmp_grads(&k, 1.0, " 4 threads", false) == 0,
         "%s: 4 threads gradients", cs);
  /* finite differences along three tensors: the top block, the block
   * feeding mbstd, the epilogue conv */
  const char *fdn[3] = {"b4.fc.weight", "b8.conv1.weight", "b4.conv.weight"};
  for (int i = 0; i < 3; i++) {
    CHECKF(fd_check(&k, ctx, fdn[i], 1.0, true),
           "%s: finite differences "
           "along %s",
           cs, fdn[i]);
    CHECKF(!fd_check(&k, ctx, fdn[i], 1.05, false),
           "%s: a gradient 5%% off "
           "along %s passes the finite differences",
           cs, fdn[i]);
  }
  /* fires: a perturbed weight fails the penalty and gradient comparisons */
  poke(&k.d, "b16.conv0.weight", 0.5f);
  float pp = r1(&k, ctx, 1.0f, GF_OVERWRITE);
  CHECKF(!pen_ok(&k, pp, false),
         "%s: a perturbed weight passes the "
         "penalty",
         cs);
  CHECKF(cmp_grads(&k, 1.0, " perturbed", false) > 0,
         "%s: a perturbed "
         "weight passes the gradients",
         cs);
  poke(&k.d, "b16.conv0.weight", -0.5f);
  rcase_close(&k);
}

/* R1 through the augmentation (p 0.6, every augmentation on): the reals
 * are the golden img, D sees aug(reals). No official golden here (its
 * draws are not Philox's): the penalty against ||A^T grad_img sum D||^2
 * by gf_sg2_d_bwd and gf_ada_bwd, gf_ada_jvp against the difference of
 * two forwards, and the gradients against finite differences (fixed
 * draws), each shown to fire. */
static void aug_case(const char *cs, gf_ctx *ctx) {
  rcase k;
  rcase_open(&k, cs, ctx);
  gf_err err;
  gf_ada ada;
  REQUIRE(gf_ada_init(&ada, ctx, &err) == GF_OK);
  int64_t n = k.img.shape[0];
  float *params = malloc((size_t)(n * GF_ADA_NPARAMS) * sizeof *params);
  REQUIRE(params != NULL);
  REQUIRE(gf_ada_draw(params, n, 77, 3, 0, 0, &err) == GF_OK);
  k.reals = k.img;
  REQUIRE(gf_tensor_init(&k.img, GF_F32, ctx->device, 4, k.reals.shape, &err) ==
          GF_OK);
  REQUIRE(gf_ada_fwd(&ada, &k.reals, params, 0.6f, &k.img, &err) == GF_OK);
  k.aug = &ada;
  /* the penalty */
  float pen = r1(&k, ctx, 1.0f, GF_OVERWRITE);
  gf_tensor lg, ones, gd, gx;
  REQUIRE(gf_sg2_d_fwd(&k.d, ctx, &k.img, k.has_c ? &k.c : NULL, GF_MODE_TRAIN,
                       &lg, &err) == GF_OK);
  REQUIRE(gf_tensor_init(&ones, GF_F32, ctx->device, 2, lg.shape, &err) == 0);
  REQUIRE(gf_tensor_init(&gd, GF_F32, ctx->device, 4, k.img.shape, &err) == 0);
  REQUIRE(gf_tensor_init(&gx, GF_F32, ctx->device, 4, k.img.shape, &err) == 0);
  REQUIRE(gf_fill(ctx, &ones, 1.0f, &err) == GF_OK);
  REQUIRE(gf_sg2_d_bwd(&k.d, ctx, &ones, &gd, GF_OVERWRITE, &err) == GF_OK);
  REQUIRE(gf_ada_bwd(&ada, &gd, &gx, &err) == GF_OK);
  double want = 0, plain = 0;
  const float *G = gx.data, *GD = gd.data;
  for (int64_t i = 0; i < gf_tensor_numel(&gx); i++) {
    want += (double)G[i] * G[i];
    plain += (double)GD[i] * GD[i];
  }
  want /= (double)n;
  plain /= (double)n;
  printf("  %-40s %.9g vs ||A^T g||^2 %.9g (without A^T: %.9g)\n", "aug", pen,
         want, plain);
  CHECKF(fabs(pen - want) <= PEN_TOL_REL * want,
         "%s aug: penalty %.9g vs "
         "%.9g",
         cs, pen, want);
  CHECKF(fabs(plain - want) > PEN_TOL_REL * want,
         "%s aug: A^T changes "
         "nothing",
         cs);
  /* gf_ada_jvp: aug(reals + v) - aug(reals) = A v (affine) */
  gf_tensor v, y1, jv;
  REQUIRE(gf_tensor_init(&v, GF_F32, ctx->device, 4, k.img.shape, &err) == 0);
  REQUIRE(gf_tensor_init(&y1, GF_F32, ctx->device, 4, k.img.shape, &err) == 0);
  REQUIRE(gf_tensor_init(&jv, GF_F32, ctx->device, 4, k.img.shape, &err) == 0);
  float *V = v.data, *R = k.reals.data;
  for (int64_t i = 0; i < gf_tensor_numel(&v); i++)
    V[i] = R[(i * 7919) % gf_tensor_numel(&v)] * 0.5f + 0.25f;
  REQUIRE(gf_ada_jvp(&ada, &v, &jv, &err) == GF_OK);
  for (int64_t i = 0; i < gf_tensor_numel(&v); i++) V[i] += R[i];
  REQUIRE(gf_ada_fwd(&ada, &v, params, 0.6f, &y1, &err) == GF_OK);
  REQUIRE(gf_ada_fwd(&ada, &k.reals, params, 0.6f, &k.img, &err) == GF_OK);
  double jmax = 0, jd = 0, off = 0;
  const float *Y1 = y1.data, *Y0 = k.img.data, *J = jv.data;
  for (int64_t i = 0; i < gf_tensor_numel(&v); i++) {
    double d = (double)Y1[i] - Y0[i];
    if (fabs(J[i]) > jmax) jmax = fabs(J[i]);
    if (fabs(d - J[i]) > jd) jd = fabs(d - J[i]);
    if (fabs(d - 1.001 * J[i]) > off) off = fabs(d - 1.001 * J[i]);
  }
  printf("  %-40s worst |d| %.3g of max %.3g\n", "aug jvp vs fwd difference",
         jd, jmax);
  CHECKF(jd <= 1e-5 * jmax,
         "%s: gf_ada_jvp off the forward's difference "
         "by %.3g (max %.3g)",
         cs, jd, jmax);
  CHECKF(off > 1e-5 * jmax, "%s: a jvp 0.1%% off passes", cs);
  /* finite differences with the draws fixed */
  const char *fdn[3] = {"b4.fc.weight", "b8.conv1.weight", "b4.conv.weight"};
  for (int i = 0; i < 3; i++) {
    CHECKF(fd_check(&k, ctx, fdn[i], 1.0, true),
           "%s aug: finite "
           "differences along %s",
           cs, fdn[i]);
    CHECKF(!fd_check(&k, ctx, fdn[i], 1.05, false),
           "%s aug: a gradient 5%% "
           "off passes along %s",
           cs, fdn[i]);
  }
  gf_tensor *fr[] = {&ones, &gd, &gx, &v, &y1, &jv, &k.reals};
  for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) gf_tensor_free(fr[i]);
  free(params);
  gf_ada_free(&ada);
  rcase_close(&k);
}

/* ---- path length ------------------------------------------------------- */

/* G (training, batch 2) with the nets' golden weights, its mapping run on
 * the golden z (and c); *ws the mapping's output. */
static void pl_open(const char *cs, gf_ctx *ctx, gf_st_file *fg, gf_st_file *fp,
                    gf_sg2_net *g, gf_tensor *z, gf_tensor *c, gf_tensor *ws) {
  gf_err err;
  char path[512];
  gf_st_file_init(fg);
  gf_st_file_init(fp);
  snprintf(path, sizeof path, "%s/sg2_%s_g.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(fg, path, 0, &err) == GF_OK);
  snprintf(path, sizeof path, "%s/sg2_%s_pl.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(fp, path, 0, &err) == GF_OK);
  gf_sg2_config cfg = sg2t_case_config(fg);
  REQUIRE(gf_sg2_net_init(g, ctx, &cfg, GF_SG2_G, 2, true, &err) == GF_OK);
  for (size_t i = 0; i < fg->n_tensors; i++) {
    const char *nm = fg->tensors[i].name;
    if (strncmp(nm, "G.", 2) != 0) continue;
    gf_tensor t = sg2t_gold(fg, nm);
    CHECKF(gf_sg2_load(g, nm + 2, &t, &err) == GF_OK, "load %s: %s", nm,
           err.msg);
    gf_tensor_free(&t);
  }
  gf_tensor h = sg2t_gold(fg, "in.z");
  *z = sg2t_on_dev(&h, ctx->device);
  gf_tensor_free(&h);
  memset(c, 0, sizeof *c);
  if (cfg.c_dim > 0) {
    h = sg2t_gold(fg, "in.c");
    *c = sg2t_on_dev(&h, ctx->device);
    gf_tensor_free(&h);
  }
  REQUIRE(gf_sg2_mapping_fwd(g, ctx, z, cfg.c_dim ? c : NULL, 1.0f, 0,
                             GF_MODE_TRAIN, ws, &err) == GF_OK);
}

/* Misses of every trainable G gradient against G.pl.<name> * scale. */
static long cmp_pl_grads(const char *cs, gf_sg2_net *g, const gf_st_file *fp,
                         double scale, bool record) {
  long bad = 0;
  int n = 0;
  for (int i = 0; i < g->n_tensors; i++) {
    gf_param *p = &g->tensors[i];
    if (!p->trainable) continue;
    char nm[160], w[192];
    snprintf(nm, sizeof nm, "G.pl.%s", p->name);
    if (!gf_st_find(fp, nm)) {
      CHECKF(0, "%s: no golden %s", cs, nm);
      continue;
    }
    n++;
    gf_tensor t = sg2t_gold(fp, nm);
    snprintf(w, sizeof w, "%s pl d%s", cs, p->name);
    long m = misses(w, &p->grad, &t, scale, PL_TOL_REL, record, 2);
    if (record) CHECKF(m == 0, "%s: %ld outside %g", w, m, PL_TOL_REL);
    bad += m;
    gf_tensor_free(&t);
  }
  int golden = 0;
  for (size_t i = 0; i < fp->n_tensors; i++)
    golden += strncmp(fp->tensors[i].name, "G.pl.", 5) == 0;
  CHECKF(golden == n, "%s: %d golden gradients, %d compared", cs, golden, n);
  return bad;
}

static void pl_case(const char *cs, gf_ctx *ctx) {
  gf_st_file fg, fp;
  gf_sg2_net g;
  gf_tensor z, c, ws;
  gf_err err;
  pl_open(cs, ctx, &fg, &fp, &g, &z, &c, &ws);
  gf_tensor hn = sg2t_gold(&fp, "in.pl_noise"),
            nz = sg2t_on_dev(&hn, ctx->device);
  gf_tensor pm = sg2t_gold(&fp, "in.pl_mean");
  gf_sg2_pl_args args = {.pl_mean = ((float *)pm.data)[0],
                         .decay = 0.01f,
                         .weight = 2.0f,
                         .scale = 1.0f,
                         .noise = GF_SG2_NOISE_CONST};
  gf_sg2_pl_out out = {0};
  CHECKF(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_OVERWRITE, &out, &err) ==
             GF_OK,
         "%s: gf_sg2_g_pl: %s", cs, err.msg);
  gf_tensor tp = sg2t_gold(&fp, "out.pl_penalty"),
            tm = sg2t_gold(&fp, "out.pl_mean");
  double want = 0;
  for (int64_t i = 0; i < gf_tensor_numel(&tp); i++)
    want += ((float *)tp.data)[i];
  want /= (double)gf_tensor_numel(&tp);
  double dm = ((float *)tm.data)[0];
  printf("  %-40s penalty %.9g vs %.9g, pl_mean %.9g vs %.9g\n", cs,
         out.penalty, want, out.pl_mean, dm);
  CHECKF(fabs(out.penalty - want) <= PEN_TOL_REL * fabs(want) + 1e-7,
         "%s: pl penalty %.9g vs %.9g", cs, out.penalty, want);
  CHECKF(fabs(out.pl_mean - dm) <= PEN_TOL_REL * fabs(dm),
         "%s: pl_mean "
         "%.9g vs %.9g",
         cs, out.pl_mean, dm);
  cmp_pl_grads(cs, &g, &fp, 1.0, true);
  if (fabs(out.penalty - want) / fabs(want) > g_worst_pen)
    g_worst_pen = fabs(out.penalty - want) / fabs(want);
  /* accumulate: + 0.5 */
  args.scale = 0.5f;
  CHECK(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_ACCUMULATE, &out, &err) ==
        GF_OK);
  CHECKF(cmp_pl_grads(cs, &g, &fp, 1.5, false) == 0,
         "%s: pl scale 1 then "
         "accumulate 0.5 is not 1.5",
         cs);
  args.scale = 1.0f;
  /* finite differences of weight * penalty along one element (the largest
   * gradient) of the last toRGB's weight and affine (no leaky-ReLU kink
   * moves with them) and of the mapping's first weight; the mapping
   * forward reruns with each step */
  const char *fdn[3] = {"synthesis.b32.torgb.weight",
                        "synthesis.b32.torgb.affine.weight",
                        "mapping.fc0.weight"};
  /* with clamping (clamp), many clamps engage and release along the
   * mapping's direction (the lengths jump there): the toRGB ones only */
  int nfd = g.cfg.conv_clamp > 0.0f ? 2 : 3;
  for (int i = 0; i < nfd; i++) {
    gf_param *p = gf_sg2_find(&g, fdn[i]);
    REQUIRE(p != NULL);
    CHECK(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_OVERWRITE, &out, &err) ==
          GF_OK);
    gf_tensor gh = sg2t_on_dev(&p->grad, GF_DEV_CPU),
              vh = sg2t_on_dev(&p->value, GF_DEV_CPU);
    int64_t ne = gf_tensor_numel(&gh), at = 0;
    double vmax = 0;
    for (int64_t j = 0; j < ne; j++) {
      if (fabs(((float *)gh.data)[j]) > fabs(((float *)gh.data)[at])) at = j;
      vmax = fmax(vmax, fabs(((float *)vh.data)[j]));
    }
    float *dir = calloc((size_t)ne, sizeof *dir);
    REQUIRE(dir != NULL);
    dir[at] = 1.0f;
    double h = PL_FD_H * vmax, pp, pmn;
    shift(p, dir, h);
    REQUIRE(gf_sg2_mapping_fwd(&g, ctx, &z, c.data ? &c : NULL, 1.0f, 0,
                               GF_MODE_TRAIN, &ws, &err) == GF_OK);
    CHECK(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_OVERWRITE, &out, &err) ==
          GF_OK);
    pp = out.penalty;
    shift(p, dir, -2 * h);
    REQUIRE(gf_sg2_mapping_fwd(&g, ctx, &z, c.data ? &c : NULL, 1.0f, 0,
                               GF_MODE_TRAIN, &ws, &err) == GF_OK);
    CHECK(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_OVERWRITE, &out, &err) ==
          GF_OK);
    pmn = out.penalty;
    shift(p, dir, h);
    REQUIRE(gf_sg2_mapping_fwd(&g, ctx, &z, c.data ? &c : NULL, 1.0f, 0,
                               GF_MODE_TRAIN, &ws, &err) == GF_OK);
    double fd = args.weight * (pp - pmn) / (2 * h),
           dot = ((float *)gh.data)[at], rel = fabs(fd - dot) / fabs(dot);
    printf("  %-40s fd %.6g vs grad %.6g: %.3g relative\n", fdn[i], fd, dot,
           rel);
    CHECKF(rel <= PL_FD_TOL_REL, "%s: pl finite differences along %s", cs,
           fdn[i]);
    CHECKF(fabs(fd - 1.05 * dot) > PL_FD_TOL_REL * fabs(dot),
           "%s: a pl "
           "gradient 5%% off passes along %s",
           cs, fdn[i]);
    free(dir);
    gf_tensor_free(&gh);
    gf_tensor_free(&vh);
  }
  /* fires: a perturbed weight fails the golden comparisons */
  poke(&g, "synthesis.b8.conv1.weight", 0.5f);
  CHECK(gf_sg2_g_pl(&g, ctx, &ws, &nz, &args, GF_OVERWRITE, &out, &err) ==
        GF_OK);
  CHECKF(fabs(out.penalty - want) > PEN_TOL_REL * fabs(want),
         "%s: a "
         "perturbed weight passes the pl penalty",
         cs);
  CHECKF(cmp_pl_grads(cs, &g, &fp, 1.0, false) > 0,
         "%s: a perturbed weight "
         "passes the pl gradients",
         cs);
  poke(&g, "synthesis.b8.conv1.weight", -0.5f);
  gf_tensor *fr[] = {&hn, &nz, &pm, &tp, &tm, &z};
  for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) gf_tensor_free(fr[i]);
  if (c.data) gf_tensor_free(&c);
  gf_sg2_net_free(&g);
  gf_st_file_free(&fg);
  gf_st_file_free(&fp);
}

static void cuda_case(const char *cs, gf_ctx *cpu, gf_ctx *gpu) {
  rcase kc, kg;
  rcase_open(&kc, cs, cpu);
  rcase_open(&kg, cs, gpu);
  CHECKF(cmp_gx(&kg, gpu) == 0, "%s cuda: grad_x", cs);
  float pc = r1(&kc, cpu, 1.0f, GF_OVERWRITE),
        pg = r1(&kg, gpu, 1.0f, GF_OVERWRITE);
  CHECKF(pen_ok(&kg, pg, true), "%s cuda: penalty %.9g", cs, pg);
  CHECKF(fabs(pc - pg) <= PEN_TOL_REL * fabs(pc),
         "%s: penalty cuda %.9g cpu "
         "%.9g",
         cs, pg, pc);
  char tag[32];
  snprintf(tag, sizeof tag, " cuda");
  kg.name = cs;
  cmp_grads(&kg, 1.0, tag, true);
  for (int i = 0; i < kc.d.n_tensors; i++) {
    gf_param *a = &kc.d.tensors[i], *b = &kg.d.tensors[i];
    if (!a->trainable) continue;
    gf_tensor h = sg2t_on_dev(&a->grad, GF_DEV_CPU);
    char w[160];
    snprintf(w, sizeof w, "%s cuda vs cpu d%s", cs, a->name);
    CHECKF(misses(w, &b->grad, &h, 1.0, GRAD_TOL_REL, false, 0) == 0, "%s", w);
    gf_tensor_free(&h);
  }
  rcase_close(&kc);
  rcase_close(&kg);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GOLDEN_DIR [cuda]\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const char *cases[4] = {"uncond", "cond", "clamp", "orig"};
  gf_ctx cpu;
  sg2t_ctx_cpu(&cpu, 1);
  if (argc > 2 && strcmp(argv[2], "cuda") == 0) {
    gf_ctx gpu;
    if (sg2t_ctx_cuda(&gpu) != 0) {
      gf_ctx_free(&cpu);
      return 77;
    }
    for (int i = 0; i < 4; i++) cuda_case(cases[i], &cpu, &gpu);
    pl_case("uncond", &gpu);
    pl_case("cond", &gpu);
    pl_case("clamp", &gpu);
    gf_ctx_free(&gpu);
  } else {
    gf_ctx cpu4;
    sg2t_ctx_cpu(&cpu4, 4);
    for (int i = 0; i < 4; i++) cpu_case(cases[i], &cpu, &cpu4);
    aug_case("cond", &cpu);
    aug_case("uncond", &cpu);
    gf_ctx cpu4b;
    sg2t_ctx_cpu(&cpu4b, 4);
    pl_case("uncond", &cpu);
    pl_case("cond", &cpu4b);
    pl_case("clamp", &cpu);
    gf_ctx_free(&cpu4b);
    gf_ctx_free(&cpu4);
  }
  printf("against the official double backward, worst |d| / max|t|: R1 "
         "weight gradients %.3g (%s), R1 bias gradients %.3g (%s), path "
         "length gradients %.3g (%s); penalties %.3g relative\n",
         g_worst_grad[0], g_worst_what[0], g_worst_grad[1], g_worst_what[1],
         g_worst_grad[2], g_worst_what[2], g_worst_pen);
  gf_ctx_free(&cpu);
  return check_report();
}
