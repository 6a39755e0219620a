/* test_sg2_nets.c - the StyleGAN2 generator and discriminator forwards
 * (gf/sg2_net.h) against the official code's numbers in
 * golden/sg2_<case>_{g,d}.safetensors (golden/make_sg2_nets_golden.py:
 * uncond, cond with c_dim 3, clamp with conv_clamp 0.6).
 *
 *   test_sg2_nets GOLDEN_DIR          the CPU (2 threads): every golden
 *       tensor name maps to a tensor of the net and back, shapes are
 *       refused by name, ws (psi 1; psi 0.7 cutoff 4), the w_avg update,
 *       images with noise const and none, block outputs, D's logits and
 *       block outputs within TOL (below); each comparison shown to fire (a
 *       perturbed weight must fail it); 1 and 4 threads the same bits;
 *       the initialisers; random noise per global sample.
 *       The backward (cond and clamp: sg2_<case>_{g,d}_grad, the official
 *       autograd): dL/dws, every G and D parameter's gradient and D's
 *       dL/dimg within GRAD_TOL_REL; GF_ACCUMULATE adds; a perturbed
 *       weight fails it; 1 and 4 threads the same bits (G, D's dL/dimg
 *       and its 1x1 conv and fc gradients; D's 3x3 conv weight gradients,
 *       oneDNN's backward-weights, to rounding).
 *   test_sg2_nets GOLDEN_DIR cuda     the same forwards and backwards on
 *       CUDA against the CPU and the goldens; 77 without a usable GPU.
 *
 * Tolerance: |ours - official| <= TOL_REL * max|official| of the tensor
 * (+ 1e-7), 1e-5, about 8 times the worst seen (1.2e-6): the official fp32 path sums in other orders (oneDNN against
 * ATen's convolutions, double lane sums in the demodulation), nothing
 * else differs. Gradients: GRAD_TOL_REL 1e-4 (worst seen 1.9e-5, a
 * noise_strength gradient: one sum over every pixel of a layer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/safetensors.h"
#include "gf/sg2_net.h"
#include "sg2_test_util.h"

#define TOL_REL 1e-5
#define CUDA_TOL_REL 1e-5
#define GRAD_TOL_REL 1e-4

static const char *g_dir;

typedef struct worst {
  double rel; /* worst |d| / max|t| */
  char what[96];
} worst;
static worst g_worst, g_worst_grad;
static bool g_grading; /* misses() records into g_worst_grad */

static gf_tensor host_copy(const gf_tensor *t) {
  return sg2t_on_dev(t, GF_DEV_CPU);
}

/* Values of got (any device) outside tol of want; records the worst. */
static long misses(const char *what, const gf_tensor *got,
                   const gf_tensor *want, double rel, bool record) {
  gf_tensor h = host_copy(got);
  long bad = 0;
  if (gf_tensor_numel(&h) != gf_tensor_numel(want)) {
    fprintf(stderr, "%s: %lld values, want %lld\n", what,
            (long long)gf_tensor_numel(&h), (long long)gf_tensor_numel(want));
    gf_tensor_free(&h);
    return 1;
  }
  const float *g = h.data, *t = want->data;
  int64_t n = gf_tensor_numel(want);
  double tmax = 0, wd = 0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(t[i]) > tmax) tmax = fabs(t[i]);
  double tol = rel * tmax + 1e-7;
  int64_t wi = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - t[i]);
    if (!(d <= tol)) bad++;
    if (!(d <= wd)) {
      wd = d;
      wi = i;
    }
  }
  if (record) {
    double r = tmax > 0 ? wd / tmax : wd;
    printf("  %-34s n %-6lld worst |d| %-10.3g = %-9.3g max|t| at %lld\n",
           what, (long long)n, wd, r, (long long)wi);
    worst *wp = g_grading ? &g_worst_grad : &g_worst;
    if (r > wp->rel) {
      wp->rel = r;
      snprintf(wp->what, sizeof wp->what, "%s", what);
    }
  }
  gf_tensor_free(&h);
  return bad;
}

#define CMP(what, got, want)                                               \
  CHECKF(misses(what, got, want, TOL_REL, true) == 0, "%s outside %g",     \
         what, TOL_REL)

/* Loads every "pre." tensor of f into net by name; checks the name sets
 * match both ways. */
static void load_all(gf_sg2_net *net, const gf_st_file *f, const char *pre,
                     bool check_names) {
  size_t pl = strlen(pre);
  int found = 0;
  for (size_t i = 0; i < f->n_tensors; i++) {
    const char *nm = f->tensors[i].name;
    if (strncmp(nm, pre, pl) != 0) continue;
    gf_tensor g = sg2t_gold(f, nm);
    gf_err err;
    gf_status st = gf_sg2_load(net, nm + pl, &g, &err);
    CHECKF(st == GF_OK, "load %s: %s", nm, err.msg);
    found += st == GF_OK;
    gf_tensor_free(&g);
  }
  if (!check_names) return;
  CHECKF(found == net->n_tensors, "%s: %d golden tensors loaded, the net has %d",
         pre, found, net->n_tensors);
  for (int i = 0; i < net->n_tensors; i++) {
    char full[96];
    snprintf(full, sizeof full, "%s%s", pre, net->tensors[i].name);
    CHECKF(gf_st_find(f, full) != NULL, "net tensor %s not in the golden",
           net->tensors[i].name);
  }
}

/* Sets element 0 of the net's tensor name to v, or adds delta to it
 * (add true); returns the old value. */
static float poke(gf_sg2_net *net, const char *name, float v, bool add) {
  gf_param *p = gf_sg2_find(net, name);
  if (!p) {
    fprintf(stderr, "poke: no %s\n", name);
    exit(1);
  }
  gf_tensor h = host_copy(&p->value);
  float old = ((float *)h.data)[0];
  ((float *)h.data)[0] = add ? old + v : v;
  gf_err err;
  if (gf_tensor_copy(&p->value, &h, &err)) exit(1);
  gf_tensor_free(&h);
  return old;
}

typedef struct gouts {
  gf_tensor ws, ws_trunc, img_const, img_none, w_avg;
} gouts;

/* G's forwards of the golden case; owned CPU copies in *o. */
static void run_g(gf_sg2_net *g, gf_ctx *ctx, const gf_tensor *z,
                  const gf_tensor *c, gouts *o, bool with_update) {
  gf_err err;
  gf_tensor ws, img;
  CHECKF(gf_sg2_mapping_fwd(g, ctx, z, c, 0.7f, 4, GF_MODE_INFER, &ws,
                            &err) == GF_OK, "%s", err.msg);
  o->ws_trunc = host_copy(&ws);
  CHECKF(gf_sg2_mapping_fwd(g, ctx, z, c, 1.0f, 0, GF_MODE_TRAIN, &ws,
                            &err) == GF_OK, "%s", err.msg);
  o->ws = host_copy(&ws);
  CHECKF(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_NONE, 0, 0, 0,
                              GF_MODE_INFER, &img, &err) == GF_OK,
         "%s", err.msg);
  o->img_none = host_copy(&img);
  CHECKF(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_CONST, 0, 0, 0,
                              GF_MODE_INFER, &img, &err) == GF_OK,
         "%s", err.msg);
  o->img_const = host_copy(&img);
  o->w_avg = (gf_tensor){0};
  if (with_update) {
    gf_param *wa = gf_sg2_find(g, "mapping.w_avg");
    gf_tensor keep = host_copy(&wa->value);
    CHECKF(gf_sg2_w_avg_update(g, ctx, &err) == GF_OK, "%s", err.msg);
    o->w_avg = host_copy(&wa->value);
    CHECK(gf_tensor_copy(&wa->value, &keep, &err) == GF_OK);
    gf_tensor_free(&keep);
  }
}

static void free_gouts(gouts *o) {
  gf_tensor_free(&o->ws);
  gf_tensor_free(&o->ws_trunc);
  gf_tensor_free(&o->img_const);
  gf_tensor_free(&o->img_none);
  gf_tensor_free(&o->w_avg);
}

static long cmp_g(const char *cs, const gouts *o, const gf_st_file *f,
                  bool record) {
  const char *nm[5] = {"out.ws", "out.ws_trunc", "out.img_const",
                       "out.img_none", "out.w_avg_updated"};
  const gf_tensor *got[5] = {&o->ws, &o->ws_trunc, &o->img_const,
                             &o->img_none, &o->w_avg};
  long bad = 0;
  for (int i = 0; i < 5; i++) {
    if (!got[i]->data) continue;
    gf_tensor t = sg2t_gold(f, nm[i]);
    char w[96];
    snprintf(w, sizeof w, "%s %s", cs, nm[i]);
    long m = misses(w, got[i], &t, TOL_REL, record);
    if (record) CHECKF(m == 0, "%s: %ld outside", w, m);
    bad += m;
    gf_tensor_free(&t);
  }
  return bad;
}

/* Each G comparison must fire on its own: a perturbed tensor that only it
 * sees. */
static void g_fires(const char *cs, gf_sg2_net *g, gf_ctx *ctx,
                    const gf_tensor *z, const gf_tensor *c,
                    const gf_st_file *f) {
  struct {
    const char *tensor, *quantity;
    float delta;
  } p[] = {
      {"mapping.fc1.bias", "out.ws", 0.1f},
      {"mapping.w_avg", "out.ws_trunc", 1e-3f},
      {"synthesis.b16.conv0.noise_const", "out.img_const", 1e-2f},
      {"synthesis.b32.torgb.bias", "out.img_none", 1e-3f},
      {"synthesis.b8.conv1.weight", "out.img_none", 0.05f},
  };
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
    float old = poke(g, p[i].tensor, p[i].delta, true);
    gouts o;
    run_g(g, ctx, z, c, &o, false);
    gf_tensor t = sg2t_gold(f, p[i].quantity);
    const gf_tensor *got = strcmp(p[i].quantity, "out.ws") == 0 ? &o.ws
                         : strcmp(p[i].quantity, "out.ws_trunc") == 0
                             ? &o.ws_trunc
                         : strcmp(p[i].quantity, "out.img_const") == 0
                             ? &o.img_const
                             : &o.img_none;
    CHECKF(misses("fires", got, &t, TOL_REL, false) > 0,
           "%s: %s + %g went unnoticed by %s", cs, p[i].tensor,
           (double)p[i].delta, p[i].quantity);
    gf_tensor_free(&t);
    free_gouts(&o);
    poke(g, p[i].tensor, old, false);
  }
  /* the w_avg update: another beta must miss */
  float beta = g->cfg.w_avg_beta;
  g->cfg.w_avg_beta = 0.99f;
  gouts o;
  run_g(g, ctx, z, c, &o, true);
  gf_tensor t = sg2t_gold(f, "out.w_avg_updated");
  CHECKF(misses("fires", &o.w_avg, &t, TOL_REL, false) > 0,
         "%s: w_avg beta 0.99 went unnoticed", cs);
  gf_tensor_free(&t);
  free_gouts(&o);
  g->cfg.w_avg_beta = beta;
}

static void g_blocks(const char *cs, gf_sg2_net *g, gf_ctx *ctx,
                     const gf_tensor *z, const gf_tensor *c,
                     const gf_st_file *f) {
  gf_err err;
  gf_tensor ws, img;
  CHECK(gf_sg2_mapping_fwd(g, ctx, z, c, 1.0f, 0, GF_MODE_INFER, &ws,
                           &err) == GF_OK);
  CHECK(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_CONST, 0, 0, 0,
                             GF_MODE_INFER, &img, &err) == GF_OK);
  for (int res = 4; res <= 16; res *= 2) {
    gf_tensor x, im;
    CHECK(gf_sg2_synthesis_block(g, res, &x, &im, &err) == GF_OK);
    char nm[64], w[96];
    snprintf(nm, sizeof nm, "mid.const.b%d.x", res);
    if (gf_st_find(f, nm)) {
      gf_tensor t = sg2t_gold(f, nm);
      snprintf(w, sizeof w, "%s %s", cs, nm);
      CMP(w, &x, &t);
      gf_tensor_free(&t);
    }
    snprintf(nm, sizeof nm, "mid.const.b%d.img", res);
    gf_tensor t = sg2t_gold(f, nm);
    snprintf(w, sizeof w, "%s %s", cs, nm);
    CMP(w, &im, &t);
    gf_tensor_free(&t);
  }
}

/* D's logits (owned CPU copy). */
static gf_tensor run_d(gf_sg2_net *d, gf_ctx *ctx, const gf_tensor *img,
                       const gf_tensor *c) {
  gf_err err;
  gf_tensor lg;
  if (gf_sg2_d_fwd(d, ctx, img, c, GF_MODE_INFER, &lg, &err) != GF_OK) {
    CHECKF(0, "d_fwd: %s", err.msg);
    return host_copy(&(gf_tensor){0});
  }
  return host_copy(&lg);
}

static void refusals(gf_sg2_net *g) {
  gf_err err;
  int64_t s[2] = {32, 33};
  gf_tensor bad;
  CHECK(gf_tensor_init(&bad, GF_F32, GF_DEV_CPU, 2, s, &err) == GF_OK);
  gf_status st = gf_sg2_load(g, "mapping.fc1.weight", &bad, &err);
  CHECKF(st == GF_EINVAL && strstr(err.msg, "mapping.fc1.weight") &&
             strstr(err.msg, "[32,33]"),
         "wrong shape: %d %s", st, err.msg);
  st = gf_sg2_load(g, "synthesis.b8.conv0.resample_filter", &bad, &err);
  CHECKF(st == GF_ENOTFOUND && strstr(err.msg, "resample_filter"),
         "unknown name: %d %s", st, err.msg);
  gf_tensor_free(&bad);
}

/* The official initialisers: sizes of the values. */
static void init_check(gf_ctx *ctx, const gf_sg2_config *cfg) {
  gf_sg2_net g;
  gf_err err;
  REQUIRE(gf_sg2_net_init(&g, ctx, cfg, GF_SG2_G, 2, true, &err) == GF_OK);
  REQUIRE(gf_sg2_init_params(&g, 7, &err) == GF_OK);
  struct {
    const char *name;
    double mean, sd, tol;
  } e[] = {
      {"mapping.fc0.weight", 0, 100, 8},  {"mapping.fc0.bias", 0, 0, 0},
      {"mapping.w_avg", 0, 0, 0},         {"synthesis.b4.const", 0, 1, 0.12},
      {"synthesis.b8.conv0.weight", 0, 1, 0.05},
      {"synthesis.b8.conv0.affine.bias", 1, 0, 0},
      {"synthesis.b8.conv0.noise_strength", 0, 0, 0},
      {"synthesis.b8.conv0.noise_const", 0, 1, 0.25},
      {"synthesis.b8.conv0.bias", 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
    gf_param *p = gf_sg2_find(&g, e[i].name);
    REQUIRE(p != NULL);
    gf_tensor h = host_copy(&p->value);
    const float *v = h.data;
    int64_t n = gf_tensor_numel(&h);
    double m = 0, s = 0;
    for (int64_t j = 0; j < n; j++) m += v[j];
    m /= (double)n;
    for (int64_t j = 0; j < n; j++) s += (v[j] - m) * (v[j] - m);
    s = sqrt(s / (double)n);
    CHECKF(fabs(m - e[i].mean) <= e[i].tol + 0.3 * e[i].sd &&
               fabs(s - e[i].sd) <= e[i].tol,
           "init %s: mean %g sd %g, want %g %g", e[i].name, m, s, e[i].mean,
           e[i].sd);
    gf_tensor_free(&h);
  }
  gf_sg2_net_free(&g);
}

/* Random noise: a batch of 2 against two batches of 1 (sample0 0 and 1):
 * each sample's noise is its own, so the images agree to rounding; and a
 * second seed changes them. */
static void random_noise(gf_ctx *ctx, gf_sg2_net *g, const gf_tensor *z,
                         const gf_tensor *c) {
  gf_err err;
  gf_tensor ws, img;
  REQUIRE(gf_sg2_mapping_fwd(g, ctx, z, c, 1.0f, 0, GF_MODE_INFER, &ws,
                             &err) == GF_OK);
  gf_tensor wsh = host_copy(&ws);
  REQUIRE(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_RANDOM, 5, 3, 0,
                               GF_MODE_TRAIN, &img, &err) == GF_OK);
  gf_tensor both = host_copy(&img);
  REQUIRE(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_CONST, 5, 3, 0,
                               GF_MODE_TRAIN, &img, &err) == GF_OK);
  gf_tensor cst = host_copy(&img);
  CHECK(misses("random vs const", &both, &cst, TOL_REL, false) > 0);
  int64_t per = gf_tensor_numel(&both) / 2, wper = gf_tensor_numel(&wsh) / 2;
  for (int i = 0; i < 2; i++) {
    gf_tensor one = wsh;
    one.shape[0] = 1;
    one.data = (float *)wsh.data + i * wper;
    REQUIRE(gf_sg2_synthesis_fwd(g, ctx, &one, GF_SG2_NOISE_RANDOM, 5, 3, i,
                                 GF_MODE_TRAIN, &img, &err) == GF_OK);
    gf_tensor want = both;
    want.shape[0] = 1;
    want.data = (float *)both.data + i * per;
    CHECKF(misses("random slice", &img, &want, 1e-6, false) == 0,
           "random noise of sample %d differs in a batch of 1", i);
  }
  gf_tensor_free(&wsh);
  gf_tensor_free(&both);
  gf_tensor_free(&cst);
}

static bool same_bits(const gf_tensor *a, const gf_tensor *b) {
  return gf_tensor_numel(a) == gf_tensor_numel(b) &&
         memcmp(a->data, b->data, gf_tensor_nbytes(a)) == 0;
}

/* Opens case cs's two golden files; its config and batches. */
static gf_sg2_config open_case(const char *cs, gf_st_file *fg, gf_st_file *fd,
                               int *ng, int *nd) {
  char path[512];
  gf_err err;
  gf_st_file_init(fg);
  gf_st_file_init(fd);
  snprintf(path, sizeof path, "%s/sg2_%s_g.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(fg, path, 0, &err) == GF_OK);
  snprintf(path, sizeof path, "%s/sg2_%s_d.safetensors", g_dir, cs);
  REQUIRE(gf_st_open(fd, path, 0, &err) == GF_OK);
  *ng = sg2t_meta_int(fg, "batch");
  *nd = sg2t_meta_int(fd, "batch");
  gf_sg2_config cfg = sg2t_case_config(fg);
  printf("case %s: c_dim %d conv_clamp %g\n", cs, cfg.c_dim,
         (double)cfg.conv_clamp);
  return cfg;
}

/* D's forward of case cs (golden file fd) on ctx against the goldens,
 * its comparisons shown to fire, 1 (ctx) and 4 threads (ctx4) the same
 * bits. */
static void run_d_case(const char *cs, const gf_st_file *fd,
                       const gf_sg2_config *cfg, int nd, gf_ctx *ctx,
                       gf_ctx *ctx4) {
  gf_err err;
  gf_sg2_net d;
  REQUIRE(gf_sg2_net_init(&d, ctx, cfg, GF_SG2_D, nd, false, &err) ==
          GF_OK);
  load_all(&d, fd, "D.", true);
  gf_tensor img = sg2t_gold(fd, "in.img"), cd = {0};
  if (cfg->c_dim) cd = sg2t_gold(fd, "in.c");
  const gf_tensor *cdp = cfg->c_dim ? &cd : NULL;
  gf_tensor lg = run_d(&d, ctx, &img, cdp);
  gf_tensor tl = sg2t_gold(fd, "out.logits");
  CHECK(gf_sg2_d_bwd(&d, ctx, &tl, NULL, GF_OVERWRITE, &err) == GF_ESTATE);
  char w[96];
  snprintf(w, sizeof w, "%s out.logits", cs);
  CMP(w, &lg, &tl);
  for (int res = 16; res >= 8; res /= 2) {
    gf_tensor x;
    char nm[48];
    snprintf(nm, sizeof nm, "mid.d.b%d.x", res);
    CHECK(gf_sg2_d_block(&d, res, &x, &err) == GF_OK);
    gf_tensor t = sg2t_gold(fd, nm);
    snprintf(w, sizeof w, "%s %s", cs, nm);
    CMP(w, &x, &t);
    gf_tensor_free(&t);
  }
  gf_tensor lg4 = run_d(&d, ctx4, &img, cdp);
  CHECKF(same_bits(&lg, &lg4), "%s: D on 1 and 4 threads differ", cs);
  const char *dp = cfg->c_dim ? "mapping.fc1.bias" : "b4.out.bias";
  const char *dp2 = "b32.conv0.weight";
  for (int k = 0; k < 2; k++) {
    const char *t = k ? dp2 : dp;
    float delta = k ? 0.05f : 0.1f;
    float old = poke(&d, t, delta, true);
    gf_tensor l2 = run_d(&d, ctx, &img, cdp);
    CHECKF(misses("fires", &l2, &tl, TOL_REL, false) > 0,
           "%s: D's %s + %g went unnoticed", cs, t, (double)delta);
    gf_tensor_free(&l2);
    poke(&d, t, old, false);
  }
  gf_tensor_free(&lg);
  gf_tensor_free(&lg4);
  gf_tensor_free(&tl);
  gf_tensor_free(&img);
  gf_tensor_free(&cd);
  gf_sg2_net_free(&d);
}

static void run_case(const char *cs, gf_ctx *ctx, gf_ctx *ctx4) {
  gf_err err;
  gf_st_file fg, fd;
  int ng, nd;
  gf_sg2_config cfg = open_case(cs, &fg, &fd, &ng, &nd);

  /* G */
  gf_sg2_net g;
  REQUIRE(gf_sg2_net_init(&g, ctx, &cfg, GF_SG2_G, ng, true, &err) == GF_OK);
  load_all(&g, &fg, "G.", true);
  gf_tensor z = sg2t_gold(&fg, "in.z"), c = {0};
  if (cfg.c_dim) c = sg2t_gold(&fg, "in.c");
  const gf_tensor *cp = cfg.c_dim ? &c : NULL;
  gouts o;
  run_g(&g, ctx, &z, cp, &o, true);
  cmp_g(cs, &o, &fg, true);
  g_blocks(cs, &g, ctx, &z, cp, &fg);
  g_fires(cs, &g, ctx, &z, cp, &fg);
  refusals(&g);
  random_noise(ctx, &g, &z, cp);
  /* 1 thread against 4: the same bits */
  gouts o4;
  run_g(&g, ctx4, &z, cp, &o4, true);
  CHECKF(same_bits(&o.ws, &o4.ws) && same_bits(&o.img_const, &o4.img_const) &&
             same_bits(&o.img_none, &o4.img_none) &&
             same_bits(&o.w_avg, &o4.w_avg),
         "%s: G on 1 and 4 threads differ", cs);
  free_gouts(&o);
  free_gouts(&o4);
  gf_sg2_net_free(&g);

  run_d_case(cs, &fd, &cfg, nd, ctx, ctx4);
  if (strcmp(cs, "uncond") == 0) init_check(ctx, &cfg);
  gf_tensor_free(&z);
  gf_tensor_free(&c);
  gf_st_file_free(&fg);
  gf_st_file_free(&fd);
}

/* D's 'orig' architecture (d_resnet 0, the cifar config's): D only. */
static void orig_case(gf_ctx *ctx, gf_ctx *ctx4) {
  char path[512];
  gf_err err;
  gf_st_file fd;
  gf_st_file_init(&fd);
  snprintf(path, sizeof path, "%s/sg2_orig_d.safetensors", g_dir);
  REQUIRE(gf_st_open(&fd, path, 0, &err) == GF_OK);
  gf_sg2_config cfg = sg2t_case_config(&fd);
  CHECK(cfg.d_resnet == 0);
  printf("case orig: d_resnet %d\n", cfg.d_resnet);
  run_d_case("orig", &fd, &cfg, sg2t_meta_int(&fd, "batch"), ctx, ctx4);
  gf_st_file_free(&fd);
}

/* Every trainable tensor's gradient against "pre.grad.<name>" of f;
 * returns the misses. The golden set and the net's trainables must
 * match. */
static long cmp_grads(const char *cs, gf_sg2_net *net, const gf_st_file *f,
                      const char *pre, double scale, bool record) {
  long bad = 0;
  int n = 0;
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *p = &net->tensors[i];
    if (!p->trainable) continue;
    char nm[128], w[160];
    snprintf(nm, sizeof nm, "%s.grad.%s", pre, p->name);
    if (!gf_st_find(f, nm)) {
      CHECKF(0, "%s: no golden gradient %s", cs, nm);
      continue;
    }
    n++;
    gf_tensor t = sg2t_gold(f, nm);
    float *tv = t.data;
    for (int64_t j = 0; j < gf_tensor_numel(&t); j++) tv[j] *= (float)scale;
    snprintf(w, sizeof w, "%s d%s", cs, p->name);
    long m = misses(w, &p->grad, &t, GRAD_TOL_REL, record);
    if (record) CHECKF(m == 0, "%s: %ld outside %g", w, m, GRAD_TOL_REL);
    bad += m;
    gf_tensor_free(&t);
  }
  int golden = 0;
  char pg[16];
  snprintf(pg, sizeof pg, "%s.grad.", pre);
  for (size_t i = 0; i < f->n_tensors; i++)
    golden += strncmp(f->tensors[i].name, pg, strlen(pg)) == 0;
  CHECKF(golden == n, "%s: %d golden gradients, %d compared", cs, golden, n);
  return bad;
}

/* G's backward: synthesis ('const' noise) then mapping. */
static void g_backward(gf_sg2_net *g, gf_ctx *ctx, const gf_tensor *z,
                       const gf_tensor *c, const gf_tensor *dimg,
                       gf_accum accum, gf_tensor *dws_out) {
  gf_err err;
  gf_tensor ws, img, dws;
  REQUIRE(gf_sg2_mapping_fwd(g, ctx, z, c, 1.0f, 0, GF_MODE_TRAIN, &ws,
                             &err) == GF_OK);
  REQUIRE(gf_sg2_synthesis_fwd(g, ctx, &ws, GF_SG2_NOISE_CONST, 0, 0, 0,
                               GF_MODE_TRAIN, &img, &err) == GF_OK);
  CHECKF(gf_sg2_synthesis_bwd(g, ctx, dimg, accum, &dws, &err) == GF_OK,
         "synthesis_bwd: %s", err.msg);
  if (dws_out) *dws_out = host_copy(&dws);
  CHECKF(gf_sg2_mapping_bwd(g, ctx, &dws, accum, &err) == GF_OK,
         "mapping_bwd: %s", err.msg);
}

static void d_backward(gf_sg2_net *d, gf_ctx *ctx, const gf_tensor *img,
                       const gf_tensor *c, const gf_tensor *dl,
                       gf_tensor *dimg, gf_accum accum) {
  gf_err err;
  gf_tensor lg;
  REQUIRE(gf_sg2_d_fwd(d, ctx, img, c, GF_MODE_TRAIN, &lg, &err) == GF_OK);
  CHECKF(gf_sg2_d_bwd(d, ctx, dl, dimg, accum, &err) == GF_OK, "d_bwd: %s",
         err.msg);
}

/* A gradient case: open_case's files and the two gradient files (f = g,
 * d, g_grad, d_grad), G and D built for training on ctx with the golden
 * weights; starts recording the worst gradient difference. */
typedef struct gcase {
  gf_st_file f[4];
  gf_sg2_config cfg;
  int ng, nd;
  gf_sg2_net g, d;
} gcase;

static void gcase_open(gcase *k, const char *cs, gf_ctx *ctx) {
  gf_err err;
  k->cfg = open_case(cs, &k->f[0], &k->f[1], &k->ng, &k->nd);
  for (int i = 0; i < 2; i++) {
    char path[512];
    gf_st_file_init(&k->f[2 + i]);
    snprintf(path, sizeof path, "%s/sg2_%s_%s_grad.safetensors", g_dir, cs,
             i ? "d" : "g");
    REQUIRE(gf_st_open(&k->f[2 + i], path, 0, &err) == GF_OK);
  }
  REQUIRE(gf_sg2_net_init(&k->g, ctx, &k->cfg, GF_SG2_G, k->ng, true,
                          &err) == GF_OK);
  REQUIRE(gf_sg2_net_init(&k->d, ctx, &k->cfg, GF_SG2_D, k->nd, true,
                          &err) == GF_OK);
  load_all(&k->g, &k->f[0], "G.", false);
  load_all(&k->d, &k->f[1], "D.", false);
  g_grading = true;
}

static void gcase_close(gcase *k) {
  gf_sg2_net_free(&k->g);
  gf_sg2_net_free(&k->d);
  for (int i = 0; i < 4; i++) gf_st_file_free(&k->f[i]);
  g_grading = false;
}

/* The backward against the official autograd (sg2_<cs>_{g,d}_grad). */
static void grad_case(const char *cs, gf_ctx *ctx, gf_ctx *ctx4) {
  gf_err err;
  gcase k;
  gcase_open(&k, cs, ctx);
  const gf_sg2_config cfg = k.cfg;
  gf_st_file *fg = &k.f[0], *fd = &k.f[1], *gg = &k.f[2], *gd = &k.f[3];
  gf_sg2_net *gp = &k.g, *dp = &k.d;
  gf_tensor z = sg2t_gold(fg, "in.z"), c = {0}, dimg = sg2t_gold(gg, "in.dimg");
  if (cfg.c_dim) c = sg2t_gold(fg, "in.c");
  const gf_tensor *cp = cfg.c_dim ? &c : NULL;
  gf_tensor dws;
  g_backward(gp, ctx, &z, cp, &dimg, GF_OVERWRITE, &dws);
  gf_tensor tdws = sg2t_gold(gg, "out.dws");
  char w[96];
  snprintf(w, sizeof w, "%s dws", cs);
  CHECKF(misses(w, &dws, &tdws, GRAD_TOL_REL, true) == 0, "%s", w);
  cmp_grads(cs, gp, gg, "G", 1.0, true);
  /* 1 and 4 threads: the same bits */
  gf_tensor gall, g1, g4;
  REQUIRE(gf_arena_view_all(&gp->grads, &gall, &err) == GF_OK);
  g1 = host_copy(&gall);
  g_backward(gp, ctx4, &z, cp, &dimg, GF_OVERWRITE, NULL);
  g4 = host_copy(&gall);
  CHECKF(same_bits(&g1, &g4), "%s: G gradients on 1 and 4 threads differ",
         cs);
  /* accumulate: twice the gradient */
  g_backward(gp, ctx, &z, cp, &dimg, GF_ACCUMULATE, NULL);
  CHECKF(cmp_grads(cs, gp, gg, "G", 2.0, false) == 0,
         "%s: G's accumulated gradients are not twice", cs);
  /* fires: a perturbed weight */
  float old = poke(gp, "synthesis.b8.conv1.weight", 0.05f, true);
  g_backward(gp, ctx, &z, cp, &dimg, GF_OVERWRITE, NULL);
  CHECKF(cmp_grads(cs, gp, gg, "G", 1.0, false) > 0,
         "%s: G gradients: a perturbed weight went unnoticed", cs);
  poke(gp, "synthesis.b8.conv1.weight", old, false);
  /* refusals: a truncated mapping forward has no backward here */
  gf_tensor wst;
  REQUIRE(gf_sg2_mapping_fwd(gp, ctx, &z, cp, 0.7f, 0, GF_MODE_TRAIN, &wst,
                             &err) == GF_OK);
  CHECK(gf_sg2_mapping_bwd(gp, ctx, &wst, GF_OVERWRITE, &err) ==
        GF_EUNSUPPORTED);
  gf_tensor_free(&g1);
  gf_tensor_free(&g4);
  gf_tensor_free(&dws);
  gf_tensor_free(&tdws);

  gf_tensor img = sg2t_gold(fd, "in.img"), cd = {0}, dl = sg2t_gold(gd, "in.dlogits");
  if (cfg.c_dim) cd = sg2t_gold(fd, "in.c");
  const gf_tensor *cdp = cfg.c_dim ? &cd : NULL;
  gf_tensor dx;
  REQUIRE(gf_tensor_init(&dx, GF_F32, GF_DEV_CPU, 4, img.shape, &err) == 0);
  d_backward(dp, ctx, &img, cdp, &dl, &dx, GF_OVERWRITE);
  gf_tensor tdx = sg2t_gold(gd, "out.dimg");
  snprintf(w, sizeof w, "%s D dimg", cs);
  CHECKF(misses(w, &dx, &tdx, GRAD_TOL_REL, true) == 0, "%s", w);
  cmp_grads(cs, dp, gd, "D", 1.0, true);
  REQUIRE(gf_arena_view_all(&dp->grads, &gall, &err) == GF_OK);
  g1 = host_copy(&gall);
  gf_tensor dx4 = sg2t_on_dev(&dx, GF_DEV_CPU);
  d_backward(dp, ctx4, &img, cdp, &dl, &dx4, GF_OVERWRITE);
  g4 = host_copy(&gall);
  /* D's conv weight gradients come from oneDNN's backward-weights
   * convolution, whose sums over the batch split by thread: 1 and 4
   * threads agree to rounding there (the 3x3 ones everywhere, the 1x1
   * fromrgb and skip ones on some CPUs: an AVX2-only EPYC splits them
   * too); every other gradient and dL/dimg bit for bit, checked below */
  CHECKF(misses("D grads 1 vs 4 threads", &g4, &g1, 1e-6, false) == 0,
         "%s: D gradients on 1 and 4 threads differ beyond rounding", cs);
  for (int i = 0; i < dp->n_tensors; i++) {
    gf_param *p = &dp->tensors[i];
    if (!p->trainable || p->value.ndim == 4) continue;
    size_t off = (size_t)((char *)p->grad.data - (char *)gall.data);
    CHECKF(memcmp((char *)g1.data + off, (char *)g4.data + off,
                  gf_tensor_nbytes(&p->grad)) == 0,
           "%s: D's d%s on 1 and 4 threads differ", cs, p->name);
  }
  CHECKF(same_bits(&dx, &dx4), "%s: D's dimg on 1 and 4 threads differ", cs);
  d_backward(dp, ctx, &img, cdp, &dl, NULL, GF_ACCUMULATE);
  CHECKF(cmp_grads(cs, dp, gd, "D", 2.0, false) == 0,
         "%s: D's accumulated gradients are not twice", cs);
  old = poke(dp, "b16.conv0.weight", 0.05f, true);
  d_backward(dp, ctx, &img, cdp, &dl, &dx, GF_OVERWRITE);
  CHECKF(cmp_grads(cs, dp, gd, "D", 1.0, false) > 0 ||
             misses("fires", &dx, &tdx, GRAD_TOL_REL, false) > 0,
         "%s: D gradients: a perturbed weight went unnoticed", cs);
  poke(dp, "b16.conv0.weight", old, false);
  gf_tensor *fr[] = {&g1, &g4, &z,  &c,   &dimg,
                     &img, &cd, &dl, &dx, &dx4, &tdx};
  for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) gf_tensor_free(fr[i]);
  gcase_close(&k);
}

/* The backward on CUDA against the goldens (case cs has gradients). */
static void cuda_grad_case(const char *cs, gf_ctx *gpu) {
  gcase k;
  gcase_open(&k, cs, gpu);
  const gf_sg2_config cfg = k.cfg;
  gf_st_file *fg = &k.f[0], *fd = &k.f[1], *gg = &k.f[2], *gd = &k.f[3];
  gf_sg2_net *gp = &k.g, *dp = &k.d;
  gf_tensor t[6] = {sg2t_gold(fg, "in.z"), sg2t_gold(gg, "in.dimg"),
                    sg2t_gold(fd, "in.img"), sg2t_gold(gd, "in.dlogits"),
                    sg2t_gold(gd, "out.dimg"), {0}};
  gf_tensor dv[5];
  for (int i = 0; i < 5; i++) dv[i] = sg2t_on_dev(&t[i], GF_DEV_CUDA);
  gf_tensor cg = {0}, cd = {0}, cgd = {0}, cdd = {0};
  if (cfg.c_dim) {
    cg = sg2t_gold(fg, "in.c");
    cd = sg2t_gold(fd, "in.c");
    cgd = sg2t_on_dev(&cg, GF_DEV_CUDA);
    cdd = sg2t_on_dev(&cd, GF_DEV_CUDA);
  }
  g_backward(gp, gpu, &dv[0], cfg.c_dim ? &cgd : NULL, &dv[1], GF_OVERWRITE,
             NULL);
  cmp_grads(cs, gp, gg, "G", 1.0, true);
  d_backward(dp, gpu, &dv[2], cfg.c_dim ? &cdd : NULL, &dv[3], &dv[4],
             GF_OVERWRITE);
  char w[64];
  snprintf(w, sizeof w, "%s cuda D dimg", cs);
  CHECKF(misses(w, &dv[4], &t[4], GRAD_TOL_REL, true) == 0, "%s", w);
  cmp_grads(cs, dp, gd, "D", 1.0, true);
  for (int i = 0; i < 5; i++) {
    gf_tensor_free(&t[i]);
    gf_tensor_free(&dv[i]);
  }
  gf_tensor *fr[] = {&cg, &cd, &cgd, &cdd};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(fr[i]);
  gcase_close(&k);
}

/* CUDA against the CPU and the goldens, one case. */
static void cuda_case(const char *cs, gf_ctx *cpu, gf_ctx *gpu) {
  gf_err err;
  gf_st_file fg, fd;
  int ng, nd;
  gf_sg2_config cfg = open_case(cs, &fg, &fd, &ng, &nd);
  gf_sg2_net gc, gg, dc, dg;
  REQUIRE(gf_sg2_net_init(&gc, cpu, &cfg, GF_SG2_G, ng, false, &err) == 0);
  REQUIRE(gf_sg2_net_init(&gg, gpu, &cfg, GF_SG2_G, ng, false, &err) == 0);
  load_all(&gc, &fg, "G.", true);
  load_all(&gg, &fg, "G.", true);
  gf_tensor z = sg2t_gold(&fg, "in.z"), c = {0}, zg = sg2t_on_dev(&z, GF_DEV_CUDA),
            cg = {0};
  if (cfg.c_dim) {
    c = sg2t_gold(&fg, "in.c");
    cg = sg2t_on_dev(&c, GF_DEV_CUDA);
  }
  gouts oc, og;
  run_g(&gc, cpu, &z, cfg.c_dim ? &c : NULL, &oc, true);
  run_g(&gg, gpu, &zg, cfg.c_dim ? &cg : NULL, &og, true);
  cmp_g(cs, &og, &fg, true);
  const gf_tensor *a[5] = {&og.ws, &og.ws_trunc, &og.img_const, &og.img_none,
                           &og.w_avg};
  const gf_tensor *b[5] = {&oc.ws, &oc.ws_trunc, &oc.img_const, &oc.img_none,
                           &oc.w_avg};
  for (int i = 0; i < 5; i++)
    CHECKF(misses("cuda vs cpu", a[i], b[i], CUDA_TOL_REL, true) == 0,
           "%s: CUDA vs CPU quantity %d", cs, i);
  /* random noise: the same draws on both */
  gf_tensor ws, img;
  REQUIRE(gf_sg2_mapping_fwd(&gc, cpu, &z, cfg.c_dim ? &c : NULL, 1.0f, 0,
                             GF_MODE_INFER, &ws, &err) == GF_OK);
  REQUIRE(gf_sg2_synthesis_fwd(&gc, cpu, &ws, GF_SG2_NOISE_RANDOM, 9, 1, 0,
                               GF_MODE_INFER, &img, &err) == GF_OK);
  gf_tensor rc = host_copy(&img);
  REQUIRE(gf_sg2_mapping_fwd(&gg, gpu, &zg, cfg.c_dim ? &cg : NULL, 1.0f, 0,
                             GF_MODE_INFER, &ws, &err) == GF_OK);
  REQUIRE(gf_sg2_synthesis_fwd(&gg, gpu, &ws, GF_SG2_NOISE_RANDOM, 9, 1, 0,
                               GF_MODE_INFER, &img, &err) == GF_OK);
  CHECKF(misses("cuda vs cpu random", &img, &rc, CUDA_TOL_REL, true) == 0,
         "%s: random noise CUDA vs CPU", cs);
  gf_tensor_free(&rc);
  free_gouts(&oc);
  free_gouts(&og);
  REQUIRE(gf_sg2_net_init(&dc, cpu, &cfg, GF_SG2_D, nd, false, &err) == 0);
  REQUIRE(gf_sg2_net_init(&dg, gpu, &cfg, GF_SG2_D, nd, false, &err) == 0);
  load_all(&dc, &fd, "D.", true);
  load_all(&dg, &fd, "D.", true);
  gf_tensor im = sg2t_gold(&fd, "in.img"), imd = sg2t_on_dev(&im, GF_DEV_CUDA),
            cd = {0}, cdd = {0};
  if (cfg.c_dim) {
    cd = sg2t_gold(&fd, "in.c");
    cdd = sg2t_on_dev(&cd, GF_DEV_CUDA);
  }
  gf_tensor l1 = run_d(&dc, cpu, &im, cfg.c_dim ? &cd : NULL);
  gf_tensor l2 = run_d(&dg, gpu, &imd, cfg.c_dim ? &cdd : NULL);
  gf_tensor tl = sg2t_gold(&fd, "out.logits");
  char w[96];
  snprintf(w, sizeof w, "%s cuda out.logits", cs);
  CMP(w, &l2, &tl);
  CHECKF(misses("cuda vs cpu logits", &l2, &l1, CUDA_TOL_REL, true) == 0,
         "%s: logits CUDA vs CPU", cs);
  gf_tensor *fr[] = {&z, &c, &zg, &cg, &im, &imd, &cd, &cdd, &l1, &l2, &tl};
  for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) gf_tensor_free(fr[i]);
  gf_sg2_net_free(&gc);
  gf_sg2_net_free(&gg);
  gf_sg2_net_free(&dc);
  gf_sg2_net_free(&dg);
  gf_st_file_free(&fg);
  gf_st_file_free(&fd);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GOLDEN_DIR [cuda]\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const char *cases[3] = {"uncond", "cond", "clamp"};
  gf_ctx cpu, cpu4;
  sg2t_ctx_cpu(&cpu, 1);
  if (argc > 2 && strcmp(argv[2], "cuda") == 0) {
    gf_ctx gpu;
    if (sg2t_ctx_cuda(&gpu) != 0) {
      gf_ctx_free(&cpu);
      return 77;
    }
    for (int i = 0; i < 3; i++) cuda_case(cases[i], &cpu, &gpu);
    cuda_grad_case("cond", &gpu);
    cuda_grad_case("clamp", &gpu);
    gf_ctx_free(&gpu);
  } else {
    sg2t_ctx_cpu(&cpu4, 4);
    for (int i = 0; i < 3; i++) run_case(cases[i], &cpu, &cpu4);
    orig_case(&cpu, &cpu4);
    grad_case("cond", &cpu, &cpu4);
    grad_case("clamp", &cpu, &cpu4);
    gf_ctx_free(&cpu4);
  }
  printf("worst |d| / max|t| against the official code: forward %.3g "
         "(%s), gradients %.3g (%s)\n", g_worst.rel, g_worst.what,
         g_worst_grad.rel, g_worst_grad.what);
  gf_ctx_free(&cpu);
  return check_report();
}
