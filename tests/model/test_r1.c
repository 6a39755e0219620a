/* test_r1.c - the R1 gradient penalty of a discriminator (gf_net_r1) on the
 * CPU backend:
 *
 * 1. Golden: P and scale * dP/dtheta against PyTorch's double backprop
 *    (golden/r1_CASE.safetensors, written by golden/make_r1_golden.py with
 *    torch.autograd.grad(create_graph=True); no Python needed here). Both
 *    sides start from the formula weights of test_golden.c (tensor ids from
 *    64), spectral norm's u and v as stored in the file (the formula vector
 *    after 20 power iterations in double), the stored real batch and the
 *    same dropout masks. Cases:
 *      dcgan28_sn  dcgan-28 D with spectral norm (3 convolutions), n 4,
 *                  scale 5 (2 scale / n = 2.5: the backward seeded with 2)
 *      mlp         mlp D with dropout keyed by (step, pass 3) at global
 *                  samples 2..9, n 8, scale 1.5
 *      mlp_sn      the same with spectral norm, pass 0, scale 3
 *    Tolerances (f32 on both sides, sums in different orders; worst
 *    |d|/tol measured with torch 2.15 in brackets):
 *      P                   |d| <= 2e-6 |t|                      (0.33)
 *      gradient samples    |d| <= 2e-5 rms + 2e-5 |t|, rms = L2 / sqrt(n)
 *                                                               (0.05)
 *      gradient L2         |d| <= 4e-6 L2                       (0.12)
 *      gradient sum        |d| <= 2e-7 L2 sqrt(n) + 4e-6 |t|    (0.05)
 *      biases              exactly 0 (P does not depend on them)
 *    SN cases also check that the golden's "nosn" gradient (sigma detached:
 *    a sweep without gf_spectral_norm_bwd's u v^T term) is outside the L2
 *    tolerance by 100x in every SN tensor, so that bug could not pass.
 *    Argument "--perturb" runs with scale (1 + 1e-4): every gradient is
 *    then 0.01 % off (P is not: it does not depend on scale), and the
 *    program exits 0 only when checks failed in every case (ctest
 *    model_r1_fires).
 * 2. Finite differences on tiny Ds (mlp 8x8 with dropout, with and without
 *    SN; dcgan-28 ndf 2 with SN): (P(theta + h d) - P(theta - h d)) / 2h
 *    against <dP/dtheta, d> within 1e-2 relative, for a random direction d
 *    in each weight tensor and in all of them at once (entries the
 *    tensor's rms times U(-1, 1)), h from 1e-2, halving until every
 *    activation keeps its sign (P jumps where a leaky relu's slope
 *    changes). P is f32: its rounding (~1e-6 relative with SN) over the
 *    step makes the noise floor ~1e-3 at h 1e-2, 1e-2 at h 1e-3. Bias
 *    directions must leave P bit-identical (g depends on the activations'
 *    signs only). Plus: two calls accumulate exactly twice the gradient; a
 *    batch cut into two slices (sample0 keys the dropout masks, scale
 *    n_j / n each) gives the whole batch's P and gradient (1e-5); spectral
 *    norm's scale invariance (sum dP/dW_orig * W_orig = 0 within 1e-5
 *    |g| |W|).
 * 3. Refusals: batch norm (dcgan D without SN), G, an inference net, a
 *    negative or NaN scale; each leaves the gradients alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/net.h"
#include "gf/safetensors.h"
#include "golden_util.h"
#include "net_layers.h" /* the layer table: activation buffers, kinds */

static const char *meta(const gf_st_file *f, const char *key) {
  const char *v = gf_st_meta_get(f, key);
  REQUIRE(v != NULL);
  return v;
}

static void grad_stats(const gf_param *p, double *sum, double *l2) {
  const float *g = p->grad.data;
  int64_t n = gf_tensor_numel(&p->grad);
  double s = 0, q = 0;
  for (int64_t i = 0; i < n; i++) s += g[i], q += (double)g[i] * g[i];
  *sum = s;
  *l2 = sqrt(q);
}

/* ---- 1. golden ------------------------------------------------------------- */
static void golden_case(gf_ctx *ctx, const char *dir, const char *name, int perturb) {
  char path[4096], key[160];
  snprintf(path, sizeof path, "%s/r1_%s.safetensors", dir, name);
  gf_err err = {0};
  gf_st_file f;
  gf_st_file_init(&f);
  gf_status st = gf_st_open(&f, path, 0, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  gf_model_config c;
  gf_arch arch;
  REQUIRE(gf_arch_parse(meta(&f, "arch"), &arch, NULL) == GF_OK);
  gf_model_config_default(&c, arch);
  c.image_height = c.image_width = atoi(meta(&f, "size"));
  c.image_channels = atoi(meta(&f, "channels"));
  c.z_dim = atoi(meta(&f, "z_dim"));
  c.ngf = atoi(meta(&f, "ngf"));
  c.ndf = atoi(meta(&f, "ndf"));
  c.spectral_norm = atoi(meta(&f, "spectral_norm"));
  int n = atoi(meta(&f, "batch"));
  uint64_t seed = strtoull(meta(&f, "seed"), NULL, 10);
  int64_t step = atoll(meta(&f, "step")), sample0 = atoll(meta(&f, "sample0"));
  int pass = atoi(meta(&f, "pass"));
  float scale = strtof(meta(&f, "scale"), NULL);

  gf_net d;
  st = gf_net_init(&d, ctx, &c, GF_NET_D, n, true, &err);
  if (st) fprintf(stderr, "%s: %s\n", name, err.msg);
  REQUIRE(st == GF_OK);
  gt_load_formula(&d, 64);
  for (int t = 0; t < d.n_tensors; t++) { /* SN's u and v as stored */
    gf_param *p = &d.tensors[t];
    if (p->kind != GF_PARAM_SN_U && p->kind != GF_PARAM_SN_V) continue;
    snprintf(key, sizeof key, "sn.%s", p->name);
    size_t nel = (size_t)gf_tensor_numel(&p->value);
    memcpy(p->value.data, gt_need(&f, key, GF_ST_F32, nel)->data, nel * 4);
  }
  gf_tensor real;
  int64_t rs[4] = {n, c.image_channels, c.image_height, c.image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  const gf_st_tensor *tr = gt_need(&f, "input.real", GF_ST_F32, (size_t)gf_tensor_numel(&real));
  memcpy(real.data, tr->data, tr->nbytes);

  double pen = -1;
  float s_run = perturb ? scale * 1.0001f : scale;
  st = gf_net_r1(&d, ctx, &real, s_run, seed, step, sample0, pass, &pen, &err);
  if (st) fprintf(stderr, "%s: %s\n", name, err.msg);
  REQUIRE(st == GF_OK);

  gt_worst wp = {"P", 0, "", 0}, ws = {"grad sample", 0, "", 0}, wl = {"grad L2", 0, "", 0},
        wsum = {"grad sum", 0, "", 0}, wz = {"bias grad", 0, "", 0}, wn = {"nosn L2 gap", 0, "", 0};
  double tp = gt_f64_at(gt_need(&f, "penalty", GF_ST_F64, 1), 0);
  GT_CMP(&wp, "penalty", 0, pen, tp, 2e-6 * fabs(tp));
  for (int t = 0; t < d.n_tensors; t++) {
    gf_param *p = &d.tensors[t];
    if (!p->trainable) continue;
    size_t nel = (size_t)gf_tensor_numel(&p->value);
    double sum, l2;
    grad_stats(p, &sum, &l2);
    snprintf(key, sizeof key, "grad_stats.%s", p->name);
    const gf_st_tensor *ts = gt_need(&f, key, GF_ST_F64, 2);
    double tsum = gt_f64_at(ts, 0), tl2 = gt_f64_at(ts, 1);
    if (p->kind == GF_PARAM_BIAS) {
      REQUIRE(tl2 == 0.0);
      GT_CMP(&wz, p->name, 0, l2, 0.0, 0x1p-1074); /* |d| <= denorm_min: 0 */
      continue;
    }
    GT_CMP(&wl, p->name, 0, l2, tl2, 4e-6 * tl2);
    GT_CMP(&wsum, p->name, 0, sum, tsum, 2e-7 * tl2 * sqrt((double)nel) + 4e-6 * fabs(tsum));
    snprintf(key, sizeof key, "grad.%s", p->name);
    const gf_st_tensor *tg = gt_need(&f, key, GF_ST_F32, gt_sample_k(nel));
    double rms = tl2 / sqrt((double)nel);
    const float *g = p->grad.data;
    for (size_t i = 0; i < gt_sample_k(nel); i++) {
      size_t j = gt_sample_idx(i, nel);
      double tv = gt_f32_at(tg, i);
      GT_CMP(&ws, p->name, j, g[j], tv, 2e-5 * rms + 2e-5 * fabs(tv));
    }
    if (c.spectral_norm && !perturb) { /* the SN-less sweep must be far outside */
      snprintf(key, sizeof key, "nosn.grad_stats.%s", p->name);
      double nl2 = gt_f64_at(gt_need(&f, key, GF_ST_F64, 2), 1);
      double gap = fabs(nl2 - tl2) / (4e-6 * tl2);
      wn.n++;
      if (wn.n == 1 || gap < wn.ratio) {
        wn.ratio = gap;
        snprintf(wn.where, sizeof wn.where, "%s", p->name);
      }
      CHECKF(gap > 20,
             "%s: the detached-sigma gradient's L2 %.9g is only %.3g tolerances from "
             "%.9g",
             p->name, nl2, gap, tl2);
    }
  }
  fprintf(stderr, "%s: P %.9g (PyTorch %.9g), scale %g\n", name, pen, tp, (double)s_run);
  gt_worst *all[] = {&wp, &ws, &wl, &wsum, &wz};
  gt_print_worst(all, sizeof all / sizeof all[0]);
  if (wn.n)
    fprintf(stderr, "  %-12s smallest |L2 - L2_nosn| / tol %.3g at %s\n", wn.what, wn.ratio,
            wn.where);
  gf_tensor_free(&real);
  gf_net_free(&d);
  gf_st_file_free(&f);
}

/* ---- 2. finite differences and properties ----------------------------------- */
static double urand(uint64_t *s) { /* splitmix64 -> [-1, 1) */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1p-52 - 1.0;
}

typedef struct fd_net {
  gf_net d;
  gf_tensor x;
  gf_tensor labels; /* class-conditional Ds: [n] i32; else empty */
  int n;
  const char *name;
} fd_net;

static void fd_setup(fd_net *t, gf_ctx *ctx, const char *name, gf_arch arch, int size, int ndf,
                     int sn, int classes, int n) {
  gf_err err = {0};
  gf_model_config c;
  gf_model_config_default(&c, arch);
  c.image_height = c.image_width = size;
  c.image_channels = 1;
  c.ndf = ndf;
  c.spectral_norm = sn;
  c.num_classes = classes;
  memset(t, 0, sizeof *t);
  t->name = name;
  t->n = n;
  REQUIRE(gf_net_init(&t->d, ctx, &c, GF_NET_D, n, true, &err) == GF_OK);
  REQUIRE(gf_net_init_params(&t->d, 11, &err) == GF_OK);
  if (classes > 0) { /* every class but one, the first twice */
    int64_t ln = n;
    REQUIRE(gf_tensor_init(&t->labels, GF_I32, GF_DEV_CPU, 1, &ln, &err) == GF_OK);
    for (int i = 0; i < n; i++) ((int32_t *)t->labels.data)[i] = i % (classes - 1);
    REQUIRE(gf_net_set_labels(&t->d, &t->labels, &err) == GF_OK);
  }
  for (int i = 0; i < 20; i++) REQUIRE(gf_net_sn_iterate(&t->d, ctx, &err) == GF_OK);
  int64_t xs[4] = {n, 1, size, size};
  REQUIRE(gf_tensor_init(&t->x, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
  uint64_t s = 5;
  float *x = t->x.data;
  for (int64_t i = 0; i < gf_tensor_numel(&t->x); i++) x[i] = (float)urand(&s);
}
static void fd_free(fd_net *t) {
  gf_net_free(&t->d);
  gf_tensor_free(&t->x);
  gf_tensor_free(&t->labels);
}

#define FD_SEED 3
#define FD_STEP 9
#define FD_PASS 2
static double pen_only(fd_net *t, gf_ctx *ctx) {
  gf_err err = {0};
  double p = -1;
  gf_status st = gf_net_r1(&t->d, ctx, &t->x, 0.0f, FD_SEED, FD_STEP, 0, FD_PASS, &p, &err);
  if (st) fprintf(stderr, "%s: %s\n", t->name, err.msg);
  REQUIRE(st == GF_OK);
  return p;
}
/* The signs of every element-wise layer's buffer after the last forward
 * (leaky relu: its input's; dropout: 0 where dropped), packed as bytes. */
static size_t sign_pattern(const gf_net *d, int n, unsigned char *out, size_t cap) {
  size_t k = 0;
  for (int i = 0; i < d->n_layers; i++) {
    const gf_layer *l = &d->layers[i];
    if (l->kind != GF_L_LRELU && l->kind != GF_L_RELU) continue;
    const float *a = d->layers[i - 1].act;
    int64_t m = (int64_t)n * l->in_numel;
    for (int64_t j = 0; j < m; j++) {
      REQUIRE(k < cap);
      out[k++] = (unsigned char)((a[j] > 0) + 2 * (a[j] < 0));
    }
  }
  return k;
}

/* Directional finite differences of P; `which` is a tensor index or -1
 * (every weight tensor). */
static void fd_direction(fd_net *t, gf_ctx *ctx, int which, const unsigned char *base_signs,
                         size_t nsigns, unsigned char *signs, uint64_t *rs, double *worst_fd) {
  gf_net *d = &t->d;
  /* the direction: uniform(-1, 1) times the tensor's rms */
  float *dir[GF_NET_MAX_TENSORS] = {0};
  double an = 0;
  bool bias = which >= 0 && d->tensors[which].kind == GF_PARAM_BIAS;
  for (int k = 0; k < d->n_tensors; k++) {
    gf_param *p = &d->tensors[k];
    if (!p->trainable || (which >= 0 && k != which)) continue;
    if (which < 0 && p->kind == GF_PARAM_BIAS) continue;
    int64_t m = gf_tensor_numel(&p->value);
    const float *w = p->value.data;
    double rms = 0;
    for (int64_t i = 0; i < m; i++) rms += (double)w[i] * w[i];
    rms = sqrt(rms / (double)m);
    if (rms == 0) rms = 0.01;
    dir[k] = malloc((size_t)m * sizeof(float));
    REQUIRE(dir[k]);
    const float *g = p->grad.data;
    for (int64_t i = 0; i < m; i++) {
      dir[k][i] = (float)(rms * urand(rs));
      an += (double)g[i] * dir[k][i];
    }
  }
  /* save the values, step h, halving until no activation changes sign */
  double h = 1e-2, fd = 0, pm_base = 0;
  bool ok = false;
  for (int tries = 0; tries < 12 && !ok; tries++, h *= 0.5) {
    double pm[2];
    bool same = true;
    for (int sgn = 0; sgn < 2; sgn++) {
      float *saved[GF_NET_MAX_TENSORS] = {0};
      for (int k = 0; k < d->n_tensors; k++) {
        if (!dir[k]) continue;
        gf_param *p = &d->tensors[k];
        int64_t m = gf_tensor_numel(&p->value);
        float *w = p->value.data;
        saved[k] = malloc((size_t)m * sizeof(float));
        REQUIRE(saved[k]);
        memcpy(saved[k], w, (size_t)m * sizeof(float));
        for (int64_t i = 0; i < m; i++) w[i] = (float)(w[i] + (sgn ? -h : h) * dir[k][i]);
      }
      pm[sgn] = pen_only(t, ctx);
      same = same && sign_pattern(d, t->n, signs, nsigns) == nsigns &&
             memcmp(signs, base_signs, nsigns) == 0;
      for (int k = 0; k < d->n_tensors; k++) {
        if (!saved[k]) continue;
        memcpy(d->tensors[k].value.data, saved[k],
               (size_t)gf_tensor_numel(&d->tensors[k].value) * sizeof(float));
        free(saved[k]);
      }
    }
    if (!same) continue;
    ok = true;
    fd = (pm[0] - pm[1]) / (2 * h);
    pm_base = 0.5 * (pm[0] + pm[1]);
    if (bias)
      CHECKF(pm[0] == pm[1], "%s: a bias direction changed P: %.17g vs %.17g", t->name, pm[0],
             pm[1]);
  }
  char what[96];
  snprintf(what, sizeof what, "%s", which >= 0 ? d->tensors[which].name : "all weights");
  CHECKF(ok, "%s %s: every step down to %g changes an activation's sign", t->name, what, h);
  if (ok && !bias) {
    /* 1 % of the derivative, plus the noise floor of P's f32 rounding
     * (~1e-6 P) over the step: the resnet's P is ~2e-4 (its poolings
     * shrink grad_x D) and some of its directions' derivatives ~1e-6 */
    double tol = 1e-2 * fabs(an) + 2e-6 * pm_base / (2 * h) + 1e-9;
    double r = fabs(fd - an) / tol;
    if (r > *worst_fd) *worst_fd = r;
    fprintf(stderr, "  fd %-22s h %.3g: fd %.9g vs analytic %.9g (|d|/tol %.3g)\n", what, h * 2, fd,
            an, r);
    CHECKF(fabs(fd - an) <= tol, "%s %s: FD %.9g vs analytic %.9g", t->name, what, fd, an);
  }
  for (int k = 0; k < d->n_tensors; k++) free(dir[k]);
}

static void zero_grads(gf_net *d) { memset(d->grads.base, 0, d->grads.used); }

static void fd_case(gf_ctx *ctx, const char *name, gf_arch arch, int size, int ndf, int sn,
                    int classes) {
  fd_net t;
  fd_setup(&t, ctx, name, arch, size, ndf, sn, classes, 3);
  gf_net *d = &t.d;
  gf_err err = {0};
  /* gradient with scale 1: dP/dtheta */
  zero_grads(d);
  double p0 = -1;
  REQUIRE(gf_net_r1(d, ctx, &t.x, 1.0f, FD_SEED, FD_STEP, 0, FD_PASS, &p0, &err) == GF_OK);
  fprintf(stderr, "%s: P %.9g\n", name, p0);
  CHECK(p0 > 0);
  size_t cap = 0;
  for (int i = 0; i < d->n_layers; i++)
    if (d->layers[i].kind == GF_L_LRELU || d->layers[i].kind == GF_L_RELU)
      cap += (size_t)t.n * d->layers[i].in_numel;
  unsigned char *base = malloc(cap + 1), *signs = malloc(cap + 1);
  REQUIRE(base && signs);
  size_t ns = sign_pattern(d, t.n, base, cap);
  uint64_t rs = 77;
  double wfd = 0;
  for (int k = 0; k < d->n_tensors; k++)
    if (d->tensors[k].trainable) fd_direction(&t, ctx, k, base, ns, signs, &rs, &wfd);
  fd_direction(&t, ctx, -1, base, ns, signs, &rs, &wfd);
  fprintf(stderr, "%s: finite differences worst |d|/tol %.3g\n", name, wfd);
  CHECKF(pen_only(&t, ctx) == p0, "%s: P not reproducible", name);

  /* spectral norm: P is invariant under W_orig -> a W_orig, so
   * sum dP/dW_orig * W_orig = 0 */
  for (int k = 0; sn && k < d->n_tensors; k++) {
    gf_param *p = &d->tensors[k];
    if (p->kind != GF_PARAM_WEIGHT) continue;
    const float *g = p->grad.data, *w = p->value.data;
    double dot = 0, gn = 0, wn = 0;
    for (int64_t i = 0; i < gf_tensor_numel(&p->value); i++)
      dot += (double)g[i] * w[i], gn += (double)g[i] * g[i], wn += (double)w[i] * w[i];
    CHECKF(fabs(dot) <= 1e-5 * sqrt(gn * wn), "%s %s: sum dP/dW W = %.3g (|g||W| %.3g)", name,
           p->name, dot, sqrt(gn * wn));
  }

  /* accumulation: a second call adds the same gradient again, exactly */
  float *g1 = malloc(d->grads.used);
  REQUIRE(g1);
  memcpy(g1, d->grads.base, d->grads.used);
  REQUIRE(gf_net_r1(d, ctx, &t.x, 1.0f, FD_SEED, FD_STEP, 0, FD_PASS, NULL, &err) == GF_OK);
  size_t bad = 0, nf = d->grads.used / sizeof(float);
  for (size_t i = 0; i < nf; i++) bad += ((float *)d->grads.base)[i] != 2.0f * g1[i];
  CHECKF(bad == 0, "%s: second call: %zu gradient entries are not exactly doubled", name, bad);

  /* slices: samples [0, 1) and [1, 3) with sample0 0 and 1, scale n_j / n */
  zero_grads(d);
  int64_t per = gf_tensor_numel(&t.x) / t.n;
  double ps = 0;
  for (int j = 0; j < 2; j++) {
    int s0 = j == 0 ? 0 : 1, nj = j == 0 ? 1 : t.n - 1;
    gf_tensor xj;
    int64_t xs[4] = {nj, t.x.shape[1], t.x.shape[2], t.x.shape[3]};
    REQUIRE(gf_tensor_view(&xj, (float *)t.x.data + s0 * per, GF_F32, GF_DEV_CPU, 4, xs, &err) ==
            GF_OK);
    if (classes > 0) { /* the slice's labels */
      gf_tensor lj;
      int64_t ls = nj;
      REQUIRE(gf_tensor_view(&lj, (int32_t *)t.labels.data + s0, GF_I32, GF_DEV_CPU, 1, &ls,
                             &err) == GF_OK);
      REQUIRE(gf_net_set_labels(d, &lj, &err) == GF_OK);
    }
    double pj = -1;
    REQUIRE(gf_net_r1(d, ctx, &xj, (float)nj / (float)t.n, FD_SEED, FD_STEP, s0, FD_PASS, &pj,
                      &err) == GF_OK);
    ps += pj * nj;
  }
  ps /= t.n;
  CHECKF(fabs(ps - p0) <= 1e-5 * p0, "%s: sliced P %.9g vs whole %.9g", name, ps, p0);
  double gl2 = 0, dl2 = 0;
  for (size_t i = 0; i < nf; i++) {
    double a = ((float *)d->grads.base)[i], b = g1[i];
    gl2 += b * b, dl2 += (a - b) * (a - b);
  }
  CHECKF(sqrt(dl2) <= 1e-5 * sqrt(gl2), "%s: sliced gradient off by %.3g of its L2", name,
         sqrt(dl2 / gl2));
  free(g1);
  free(base);
  free(signs);
  fd_free(&t);
}

/* ---- 3. refusals -------------------------------------------------------------- */
static bool all_zero(const gf_arena *a) {
  for (size_t i = 0; i < a->used; i++)
    if (((const unsigned char *)a->base)[i]) return false;
  return true;
}

static void refusals(gf_ctx *ctx) {
  gf_err err = {0};
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  c.image_height = c.image_width = 28;
  c.image_channels = 1;
  c.ndf = c.ngf = 4;
  c.z_dim = 8;
  gf_net d;
  REQUIRE(gf_net_init(&d, ctx, &c, GF_NET_D, 2, true, &err) == GF_OK); /* with BN */
  REQUIRE(gf_net_init_params(&d, 1, &err) == GF_OK);
  gf_tensor x;
  int64_t xs[4] = {2, 1, 28, 28};
  REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
  double pen = 42;
  gf_status st = gf_net_r1(&d, ctx, &x, 1.0f, 1, 0, 0, 0, &pen, &err);
  CHECK_INT_EQ(st, GF_EUNSUPPORTED);
  CHECKF(strstr(err.msg, "batch norm") != NULL, "message: %s", err.msg);
  fprintf(stderr, "refused: %s\n", err.msg);
  CHECK(all_zero(&d.grads) && pen == 42 && d.fwd_batch == 0);
  gf_net_free(&d);

  gf_net g; /* G: batch norm and tanh */
  REQUIRE(gf_net_init(&g, ctx, &c, GF_NET_G, 2, true, &err) == GF_OK);
  gf_tensor z;
  int64_t zs[2] = {2, 8};
  REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  CHECK_INT_EQ(gf_net_r1(&g, ctx, &z, 1.0f, 1, 0, 0, 0, &pen, &err), GF_EUNSUPPORTED);
  gf_net_free(&g);
  gf_tensor_free(&z);

  c.spectral_norm = 1; /* no BN: accepted, but not for inference or bad scales */
  REQUIRE(gf_net_init(&d, ctx, &c, GF_NET_D, 2, false, &err) == GF_OK);
  CHECK_INT_EQ(gf_net_r1(&d, ctx, &x, 1.0f, 1, 0, 0, 0, &pen, &err), GF_ESTATE);
  gf_net_free(&d);
  REQUIRE(gf_net_init(&d, ctx, &c, GF_NET_D, 2, true, &err) == GF_OK);
  REQUIRE(gf_net_init_params(&d, 1, &err) == GF_OK);
  CHECK_INT_EQ(gf_net_r1(&d, ctx, &x, -1.0f, 1, 0, 0, 0, &pen, &err), GF_EINVAL);
  CHECK_INT_EQ(gf_net_r1(&d, ctx, &x, NAN, 1, 0, 0, 0, &pen, &err), GF_EINVAL);
  CHECK_INT_EQ(gf_net_r1(&d, ctx, &x, INFINITY, 1, 0, 0, 0, &pen, &err), GF_EINVAL);
  CHECK(all_zero(&d.grads) && pen == 42);
  /* x = 0 with no bias: D is 0 near x, yet its gradient is not; fine */
  CHECK_INT_EQ(gf_net_r1(&d, ctx, &x, 1.0f, 1, 0, 0, 0, &pen, &err), GF_OK);
  CHECK(pen >= 0 && isfinite(pen));
  gf_net_free(&d);
  gf_tensor_free(&x);
}

int main(int argc, char **argv) {
  int perturb = gt_args(argc, argv, "test_r1", "--perturb");
  gf_ctx ctx;
  gt_cpu_ctx(&ctx);
  const char *cases[] = {"dcgan28_sn", "mlp", "mlp_sn", "resnet28_sn"};
  enum { N_CASES = sizeof cases / sizeof cases[0] };
  int missed[N_CASES];
  for (size_t i = 0; i < N_CASES; i++) {
    int before = check_failures_;
    golden_case(&ctx, argv[1], cases[i], perturb);
    missed[i] = check_failures_ - before;
  }
  if (perturb) {
    gf_ctx_free(&ctx);
    return gt_fires_verdict(cases, missed, N_CASES);
  }
  fd_case(&ctx, "fd mlp 8x8", GF_ARCH_MLP, 8, 1, 0, 0);
  fd_case(&ctx, "fd mlp 8x8 SN", GF_ARCH_MLP, 8, 1, 1, 0);
  fd_case(&ctx, "fd dcgan28 ndf 2 SN", GF_ARCH_DCGAN, 28, 2, 1, 0);
  fd_case(&ctx, "fd resnet28 ndf 2 SN", GF_ARCH_RESNET, 28, 2, 1, 0);
  fd_case(&ctx, "fd mlp 8x8 conditional", GF_ARCH_MLP, 8, 1, 0, 3);
  fd_case(&ctx, "fd resnet28 ndf 2 SN conditional", GF_ARCH_RESNET, 28, 2, 1, 3);
  refusals(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
