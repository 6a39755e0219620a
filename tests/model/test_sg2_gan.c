/* test_sg2_gan.c - the StyleGAN2-ADA training step (gf/sg2_gan.h).
 *
 *   test_sg2_gan GOLDEN_DIR TMP_DIR
 *   (a) golden: ONE official iteration (Gmain + Dmain, the reg phases off,
 *       bgc at a fixed p = 0.4, style mixing, noise const) from
 *       golden/sg2_train.safetensors (unconditional, one round; the
 *       official cut-offs as drawn) and golden/sg2_train_cond.safetensors
 *       (c_dim 3, two rounds of 2: the batch cut as micro-batches; one
 *       cut-off per phase), both made by golden/make_sg2_train_golden.py
 *       with every draw given: every G and D gradient Adam stepped with,
 *       every parameter after the step, Adam's moments, the EMA'd G_ema
 *       (params and buffers), w_avg (updated by both phases' mappings),
 *       the losses and scores. The worst differences are printed; the
 *       comparison is shown to fire (a cut-off moved by one; a D bias moved
 *       by 1e-3; p moved to 0.3; a real label moved).
 *       golden/sg2_train_reg.safetensors: the FULL iteration, all four
 *       phases (Gmain, Greg with gain 4, Dmain, Dreg with gain 16; c_dim 3,
 *       two rounds of 2, path length on the first sample of each round,
 *       pl_weight 2, r1_gamma 0.5, pl_mean 0.25 before; the pl noise and
 *       every draw given): every parameter after both Adam steps of each
 *       net, the reg phases' gradients, the moments, G_ema, the losses,
 *       the pl and r1 penalties, pl_mean after; fires on Greg's cut-off,
 *       one pl noise value, pl_mean, Dreg's augmentation, r1_gamma.
 *   (b) resume: N steps straight against k steps, save, load in a fresh
 *       gan, N - k steps: the saved states are the same bytes (Philox
 *       draws, random noise, style mixing, ADA with its controller, two
 *       rounds per step).
 *       A batch in one round and in two draws alike (Gmain's loss).
 *   (c) the p controller: a scripted sign sequence through
 *       gf_ada_ctl_step against the official rule written out here, and
 *       the step's p against that rule from the signs each step reports.
 *   (d) Greg and Dreg from Philox: resume across a step where both run is
 *       the same bytes (pl_mean crosses the save; it fires); the phases
 *       without lazy intervals (Gboth, Dboth).
 *   Also: the regularization hooks (gf_sg2_greg_pl / gf_sg2_dreg_r1 by
 *   default, a refusing hook; a hook's calls every interval steps with
 *   gain = interval, and its Adam step), the lazy correction of Adam's
 *   settings, refusals of a state of another config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "gf/sg2_gan.h"
#include "sg2_test_util.h"

/* |ours - official| <= tol of the tensor:
 *  gradients           GRAD_TOL_REL * max|official| (+1e-12); worst seen
 *                      8.1e-6 (a noise_strength gradient: one sum over
 *                      every pixel of a layer)
 *  Adam moments        MOM_TOL_REL * max|official|: v squares the gradient
 *                      (worst 1.6e-5)
 *  parameters after Adam  PARAM_TOL abs: the first step with beta1 0 moves
 *      every element by about lr c g / (|g| + eps), so the rounding of a
 *      near-zero g shows (worst 8.3e-6; lr c = 0.002)
 *  losses, scores      LOSS_TOL abs (worst 8.5e-7) */
#define GRAD_TOL_REL 5e-5
#define MOM_TOL_REL 1e-4
#define PARAM_TOL 2e-5
#define LOSS_TOL 1e-5
#define REG_TOL_REL 1e-4 /* the penalties, relative */
/* D's biases after Dreg (their R1 gradient, and Adam's moments of it):
 * BIAS_TOL_REL of the tensor's max (+ BIAS_FLOOR abs). That gradient comes
 * from mbstd's second derivative alone, a sum over n H W terms that cancel
 * to about 1e-2 of the weights' (b8's below 1e-9), where f32 autograd and
 * forward-over-reverse round differently (test_sg2_reg.c's BIAS_TOL_REL;
 * worst seen here 1.5e-3, b16.conv1.bias; b8's, under the floor, 6.4e-3
 * of their max 9.8e-10) */
#define BIAS_TOL_REL 5e-3
#define BIAS_FLOOR 1e-9

static gf_ctx g_ctx;
static const char *g_tmp;

typedef struct worst {
  double v;
  char what[200];
} worst;
static worst w_grad, w_mom, w_param, w_ema, w_loss, w_reg, w_bias;

static void die(const char *what, const gf_err *err) {
  fprintf(stderr, "%s: %s\n", what, err->msg);
  exit(1);
}

/* An owned f32 host copy of golden tensor name (NULL when absent). */
static float *gold(const gf_st_file *f, const char *name, size_t *n) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t) return NULL;
  REQUIRE(t->dtype == GF_ST_F32);
  float *v = malloc(t->nbytes ? t->nbytes : 4);
  REQUIRE(v);
  memcpy(v, t->data, t->nbytes);
  if (n) *n = t->numel;
  return v;
}

static float *need(const gf_st_file *f, const char *name, size_t *n) {
  float *v = gold(f, name, n);
  if (!v) {
    fprintf(stderr, "golden %s missing\n", name);
    exit(1);
  }
  return v;
}

static gf_sg2_gan_hp golden_hp(void) {
  gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(NULL);
  hp.lr_g = hp.lr_d = 0.0025;
  hp.style_mixing = 0.9f;
  hp.pl_weight = 0;
  hp.r1_gamma = 0;
  hp.ema_kimg = 10;
  hp.ema_rampup = 0.05;
  hp.augment = true;
  hp.ada_p0 = 0.4f;
  hp.ada_target = 0; /* p fixed */
  hp.noise = GF_SG2_NOISE_CONST;
  return hp;
}

/* Loads every tensor of net from "pre.<name>" of f. */
static void load_net(gf_sg2_net *net, const gf_st_file *f, const char *pre) {
  for (int i = 0; i < net->n_tensors; i++) {
    char nm[160];
    snprintf(nm, sizeof nm, "%s.%s", pre, net->tensors[i].name);
    size_t n;
    float *v = need(f, nm, &n);
    gf_tensor *t = &net->tensors[i].value, h;
    REQUIRE((int64_t)n == gf_tensor_numel(t));
    gf_err err;
    REQUIRE(gf_tensor_view(&h, v, GF_F32, GF_DEV_CPU, t->ndim, t->shape,
                           &err) == GF_OK);
    REQUIRE(gf_tensor_copy(t, &h, &err) == GF_OK);
    free(v);
  }
}

/* Compares t (host f32) with golden name, within tol (rel: of the
 * tensor's max|official|, + floor): misses counted, worst kept. */
static int cmp_floor(const gf_st_file *f, const char *name,
                     const gf_tensor *t, bool rel, double tol, double floor,
                     worst *w) {
  size_t n;
  float *g = need(f, name, &n);
  REQUIRE((int64_t)n == gf_tensor_numel(t));
  const float *c = t->data;
  double mx = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(g[i]) > mx) mx = fabs(g[i]);
  double lim = rel ? tol * mx + floor : tol;
  int miss = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)c[i] - g[i]);
    double r = rel ? d / (mx + 1e-12) : d;
    if (!(d <= lim)) miss++;
    /* the worst kept over tensors above their floor's scale */
    if (mx > 1e3 * floor && !(r <= w->v)) {
      w->v = r;
      snprintf(w->what, sizeof w->what, "%s[%zu]", name, i);
    }
  }
  free(g);
  return miss;
}

/* A reported scalar against the golden's (mean of its values: the rounds'
 * means), relative (REG_TOL_REL) or absolute (LOSS_TOL). */
static int cmp_scalar(const gf_st_file *f, const char *name, double got,
                      bool rel) {
  size_t n;
  float *v = need(f, name, &n);
  double m = 0;
  for (size_t i = 0; i < n; i++) m += v[i];
  m /= (double)n;
  free(v);
  double d = fabs(got - m), r = rel ? d / fabs(m) : d;
  worst *w = rel ? &w_reg : &w_loss;
  if (!(r <= w->v)) {
    w->v = r;
    snprintf(w->what, sizeof w->what, "%s (%.9g vs %.9g)", name, got, m);
  }
  return !(r <= (rel ? REG_TOL_REL : LOSS_TOL));
}

static int cmp(const gf_st_file *f, const char *name, const gf_tensor *t,
               bool rel, double tol, worst *w) {
  return cmp_floor(f, name, t, rel, tol, 1e-12, w);
}

typedef struct golden_in {
  float *z[4], *z2[4], *ada[4], *real;
  float *c[4], *real_c; /* c_dim > 0 */
  int cutoff[2];
  int c_dim, rounds;
  /* the four-phase case (metadata reg = 1) */
  bool reg;
  int cutoff_greg;
  float *pl_noise;
  float pl_mean0, pl_weight, r1_gamma;
} golden_in;

static void golden_read(const gf_st_file *f, golden_in *in) {
  memset(in, 0, sizeof *in);
  in->z[GF_SG2_PHASE_GMAIN] = need(f, "in.z.gmain", NULL);
  in->z[GF_SG2_PHASE_DMAIN] = need(f, "in.z.dmain", NULL);
  in->z2[GF_SG2_PHASE_GMAIN] = need(f, "in.z2.gmain", NULL);
  in->z2[GF_SG2_PHASE_DMAIN] = need(f, "in.z2.dmain", NULL);
  in->ada[GF_SG2_PASS_GMAIN_FAKE] = need(f, "in.ada.gmain_fake", NULL);
  in->ada[GF_SG2_PASS_DMAIN_FAKE] = need(f, "in.ada.dmain_fake", NULL);
  in->ada[GF_SG2_PASS_DMAIN_REAL] = need(f, "in.ada.dmain_real", NULL);
  in->real = need(f, "in.real", NULL);
  const char *cd = gf_st_meta_get(f, "c_dim"), *rd = gf_st_meta_get(f, "rounds");
  REQUIRE(cd && rd);
  in->c_dim = atoi(cd);
  in->rounds = atoi(rd);
  REQUIRE(in->rounds >= 1 && 4 % in->rounds == 0);
  if (in->c_dim > 0) {
    in->c[GF_SG2_PHASE_GMAIN] = need(f, "in.c.gmain", NULL);
    in->c[GF_SG2_PHASE_DMAIN] = need(f, "in.c.dmain", NULL);
    in->real_c = need(f, "in.real_c", NULL);
  }
  float *c = need(f, "in.cutoff", NULL);
  in->cutoff[0] = (int)c[0];
  in->cutoff[1] = (int)c[1];
  free(c);
  const char *rg = gf_st_meta_get(f, "reg");
  in->reg = rg && atoi(rg) == 1;
  if (!in->reg) return;
  in->z[GF_SG2_PHASE_GREG] = need(f, "in.z.greg", NULL);
  in->z2[GF_SG2_PHASE_GREG] = need(f, "in.z2.greg", NULL);
  in->ada[GF_SG2_PASS_DREG_REAL] = need(f, "in.ada.dreg_real", NULL);
  in->pl_noise = need(f, "in.pl_noise", NULL);
  if (in->c_dim > 0) in->c[GF_SG2_PHASE_GREG] = need(f, "in.c.greg", NULL);
  c = need(f, "in.cutoff_greg", NULL);
  in->cutoff_greg = (int)c[0];
  free(c);
  c = need(f, "in.pl_mean", NULL);
  in->pl_mean0 = c[0];
  free(c);
  const char *pw = gf_st_meta_get(f, "pl_weight"),
             *rgm = gf_st_meta_get(f, "r1_gamma");
  REQUIRE(pw && rgm);
  in->pl_weight = (float)atof(pw);
  in->r1_gamma = (float)atof(rgm);
}

static void golden_free(golden_in *in) {
  for (int i = 0; i < 4; i++) {
    free(in->z[i]);
    free(in->z2[i]);
    free(in->ada[i]);
    free(in->c[i]);
  }
  free(in->real);
  free(in->real_c);
  free(in->pl_noise);
}

enum {
  FIRE_NONE,
  FIRE_CUTOFF,
  FIRE_DBIAS,
  FIRE_P,
  FIRE_LABEL,
  FIRE_GREG_CUTOFF, /* Greg's cut-off moved by one */
  FIRE_PL_NOISE,    /* one path-length noise value scaled by 1.01 */
  FIRE_PL_MEAN,     /* the running mean before the step + 0.01 */
  FIRE_DREG_AUG,    /* Dreg given Dmain's real augmentation */
  FIRE_R1_GAMMA,    /* r1_gamma x 1.01 */
};

/* One golden step; returns the comparisons that missed (and fills the
 * worst records when fire is FIRE_NONE). */
static int golden_run(const gf_st_file *f, golden_in *gi, int fire) {
  gf_sg2_config cfg = sg2t_tiny_config();
  cfg.c_dim = gi->c_dim;
  gf_sg2_gan_hp hp = golden_hp();
  if (fire == FIRE_P) hp.ada_p0 = 0.3f;
  if (gi->reg) {
    hp.pl_weight = gi->pl_weight;
    hp.r1_gamma = gi->r1_gamma * (fire == FIRE_R1_GAMMA ? 1.01f : 1.0f);
  }
  gf_sg2_gan gan;
  gf_err err;
  if (gf_sg2_gan_init(&gan, &g_ctx, &cfg, &hp, 4, 4 / gi->rounds, 1, &err))
    die("gan init", &err);
  load_net(&gan.g, f, "init.G");
  load_net(&gan.d, f, "init.D");
  load_net(&gan.g_ema, f, "init.G_ema");
  if (fire == FIRE_DBIAS) {
    gf_param *b = gf_sg2_find(&gan.d, "b32.conv0.bias");
    REQUIRE(b);
    ((float *)b->value.data)[0] += 1e-3f;
  }
  gan.cur_nimg = 1000;
  gan.pl_mean = gi->pl_mean0 + (fire == FIRE_PL_MEAN ? 0.01f : 0.0f);
  gf_sg2_draws dr;
  memset(&dr, 0, sizeof dr);
  for (int i = 0; i < 4; i++) {
    dr.z[i] = gi->z[i];
    dr.z2[i] = gi->z2[i];
    dr.ada[i] = gi->ada[i];
  }
  float pl0 = 0.0f;
  if (gi->reg) {
    dr.cutoff[GF_SG2_PHASE_GREG] =
        gi->cutoff_greg - (fire == FIRE_GREG_CUTOFF);
    dr.pl_noise = gi->pl_noise;
    pl0 = gi->pl_noise[5];
    if (fire == FIRE_PL_NOISE) gi->pl_noise[5] *= 1.01f;
    if (fire == FIRE_DREG_AUG)
      dr.ada[GF_SG2_PASS_DREG_REAL] = gi->ada[GF_SG2_PASS_DMAIN_REAL];
  }
  dr.cutoff[GF_SG2_PHASE_GMAIN] = gi->cutoff[0] - (fire == FIRE_CUTOFF);
  dr.cutoff[GF_SG2_PHASE_DMAIN] = gi->cutoff[1];
  const int64_t rs[4] = {4, 3, 32, 32};
  gf_tensor real;
  REQUIRE(gf_tensor_view(&real, gi->real, GF_F32, GF_DEV_CPU, 4, rs, &err) ==
          GF_OK);
  gf_sg2_step_in in = {.real = &real, .draws = &dr};
  gf_tensor cs[4];
  const int64_t lc[2] = {4, gi->c_dim};
  float flipped[64];
  if (gi->c_dim > 0) {
    REQUIRE(4 * gi->c_dim <= 64);
    memcpy(flipped, gi->real_c, sizeof(float) * 4 * (size_t)gi->c_dim);
    if (fire == FIRE_LABEL) { /* sample 0's class moved by one */
      float t = flipped[gi->c_dim - 1];
      memmove(flipped + 1, flipped, sizeof(float) * (size_t)(gi->c_dim - 1));
      flipped[0] = t;
    }
    float *src[4] = {gi->c[GF_SG2_PHASE_GMAIN], gi->c[GF_SG2_PHASE_DMAIN],
                     flipped, gi->c[GF_SG2_PHASE_GREG]};
    for (int k = 0; k < 4; k++)
      if (src[k])
        REQUIRE(gf_tensor_view(&cs[k], src[k], GF_F32, GF_DEV_CPU, 2, lc,
                               &err) == GF_OK);
    in.gen_c[GF_SG2_PHASE_GMAIN] = &cs[0];
    in.gen_c[GF_SG2_PHASE_DMAIN] = &cs[1];
    in.real_c = &cs[2];
    if (src[3]) in.gen_c[GF_SG2_PHASE_GREG] = &cs[3];
  }
  gf_sg2_step_out out;
  if (gf_sg2_gan_step(&gan, &g_ctx, &in, 0, &out, &err)) die("step", &err);
  if (gi->reg) gi->pl_noise[5] = pl0;
  int miss = 0;
  /* the gradients Adam last stepped with: the reg phases' when they ran */
  const char *gpre = gi->reg ? "grad_reg" : "grad";
  struct {
    gf_sg2_net *net;
    const char *pre;
  } nets[3] = {{&gan.g, "G"}, {&gan.d, "D"}, {&gan.g_ema, "G_ema"}};
  char nm[160];
  for (int k = 0; k < 3; k++) {
    gf_sg2_net *net = nets[k].net;
    for (int i = 0; i < net->n_tensors; i++) {
      gf_param *p = &net->tensors[i];
      snprintf(nm, sizeof nm, "after.%s.%s", nets[k].pre, p->name);
      miss += cmp(f, nm, &p->value, false, PARAM_TOL,
                  k == 2 ? &w_ema : &w_param);
      if (k == 2 || !p->trainable) continue;
      size_t ln = strlen(p->name);
      bool r1b = gi->reg && k == 1 && ln >= 4 &&
                 strcmp(p->name + ln - 4, "bias") == 0;
      double gt = r1b ? BIAS_TOL_REL : GRAD_TOL_REL,
             mt = r1b ? BIAS_TOL_REL : MOM_TOL_REL,
             fl = r1b ? BIAS_FLOOR : 1e-12;
      worst *wg = r1b ? &w_bias : &w_grad, *wm = r1b ? &w_bias : &w_mom;
      snprintf(nm, sizeof nm, "%s.%s.%s", gpre, nets[k].pre, p->name);
      miss += cmp_floor(f, nm, &p->grad, true, gt, fl, wg);
      snprintf(nm, sizeof nm, "adam_m.%s.%s", nets[k].pre, p->name);
      miss += cmp_floor(f, nm, &p->adam_m, true, mt, fl, wm);
      snprintf(nm, sizeof nm, "adam_v.%s.%s", nets[k].pre, p->name);
      miss += cmp_floor(f, nm, &p->adam_v, true, mt, fl, wm);
    }
  }
  const char *ln[4] = {"out.loss_g", "out.loss_d", "out.scores_fake",
                       "out.scores_real"};
  double got[4] = {out.loss_g, out.loss_d, out.scores_fake, out.scores_real};
  for (int k = 0; k < 4; k++) {
    size_t n;
    float *v = need(f, ln[k], &n);
    double m = 0;
    for (size_t i = 0; i < n; i++) m += v[i];
    m /= (double)n;
    double d = fabs(got[k] - m);
    if (!(d <= LOSS_TOL)) miss++;
    if (!(d <= w_loss.v)) {
      w_loss.v = d;
      snprintf(w_loss.what, sizeof w_loss.what, "%s (%.7g vs %.7g)", ln[k],
               got[k], m);
    }
    free(v);
  }
  CHECK(fabs(out.ada_p - 0.4) < 1e-7 || fire == FIRE_P);
  if (gi->reg) {
    CHECK(out.ran_greg && out.ran_dreg);
    CHECK_INT_EQ(gan.adam_step_g, 2); /* every parameter, both phases */
    CHECK_INT_EQ(gan.adam_step_d, 2);
    CHECK_INT_EQ(out.real_sign_count, 8); /* Dmain's and Dreg's reals */
    miss += cmp_scalar(f, "out.pl_penalty", out.pl_penalty, true);
    miss += cmp_scalar(f, "out.r1_penalty", out.r1_penalty, true);
    miss += cmp_scalar(f, "out.pl_mean", out.pl_mean, true);
    size_t n;
    float *st = need(f, "adam_step.G.mapping.fc0.weight", &n);
    CHECK(st[0] == 2.0f); /* the official step count Adam used */
    free(st);
  }
  gf_sg2_gan_free(&gan);
  return miss;
}

static void test_golden(const char *dir, const char *file, const int *fires,
                        const char *const *fn, int nf) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  gf_st_file f;
  gf_err err;
  gf_st_file_init(&f);
  if (gf_st_open(&f, path, 0, &err)) die(path, &err);
  golden_in gi;
  golden_read(&f, &gi);
  printf("golden %s: c_dim %d, %d round(s), cut-offs %d %d\n", file,
         gi.c_dim, gi.rounds, gi.cutoff[0], gi.cutoff[1]);
  memset(&w_grad, 0, sizeof w_grad);
  w_mom = w_param = w_ema = w_loss = w_reg = w_bias = w_grad;
  int miss = golden_run(&f, &gi, FIRE_NONE);
  CHECKF(miss == 0, "%d golden comparisons missed", miss);
  printf("  worst: gradient |d|/max %.3g at %s\n", w_grad.v, w_grad.what);
  printf("  worst: Adam moment |d|/max %.3g at %s\n", w_mom.v, w_mom.what);
  printf("  worst: parameter |d| %.3g at %s\n", w_param.v, w_param.what);
  printf("  worst: G_ema |d| %.3g at %s\n", w_ema.v, w_ema.what);
  printf("  worst: loss/score |d| %.3g at %s\n", w_loss.v, w_loss.what);
  if (gi.reg) {
    printf("  worst: pl/r1 penalty, pl_mean |d|/|x| %.3g at %s\n", w_reg.v,
           w_reg.what);
    printf("  worst: D bias after R1 |d|/max %.3g at %s\n", w_bias.v,
           w_bias.what);
  }
  for (int k = 0; k < nf; k++) {
    int m = golden_run(&f, &gi, fires[k]);
    printf("  fires: %s: %d comparisons missed\n", fn[k], m);
    CHECKF(m > 0, "the golden comparison does not fire for %s", fn[k]);
  }
  golden_free(&gi);
  gf_st_file_free(&f);
}

/* ---- (b) resume ------------------------------------------------------- */

static gf_sg2_gan_hp resume_hp(void) {
  gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(NULL);
  hp.pl_weight = 0;
  hp.r1_gamma = 0;
  hp.ada_p0 = 0.2f;
  hp.ada_kimg = 0.1; /* p moves visibly */
  hp.ada_interval = 2;
  return hp;
}

static void fill_real(gf_tensor *real, int64_t step) {
  float *v = real->data;
  int64_t n = gf_tensor_numel(real);
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)sin(0.37 * (double)i + 1.3 * (double)step);
}

static void steps(gf_sg2_gan *gan, int n, gf_sg2_step_out *outs) {
  const int64_t rs[4] = {4, 3, 32, 32};
  gf_tensor real;
  gf_err err;
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  for (int i = 0; i < n; i++) {
    fill_real(&real, gan->step);
    gf_sg2_step_in in = {.real = &real};
    if (gf_sg2_gan_step(gan, &g_ctx, &in, 99, outs ? &outs[i] : NULL, &err))
      die("step", &err);
  }
  gf_tensor_free(&real);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  REQUIRE(fp);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  REQUIRE(b && fread(b, 1, (size_t)len, fp) == (size_t)len);
  fclose(fp);
  *n = (size_t)len;
  return b;
}

static int g_mbstd_group = 2;

static void make_gan(gf_sg2_gan *gan, const gf_sg2_gan_hp *hp, int mb) {
  gf_sg2_config cfg = sg2t_tiny_config();
  cfg.mbstd_group = g_mbstd_group;
  gf_err err;
  if (gf_sg2_gan_init(gan, &g_ctx, &cfg, hp, 4, mb, 5, &err))
    die("gan init", &err);
}

/* The straight, k-step and resumed states' paths under g_tmp. */
static void state_paths(char p[3][512], const char *tag) {
  const char *w[3] = {"straight", "k", "resumed"};
  for (int i = 0; i < 3; i++)
    snprintf(p[i], 512, "%s/sg2_%s%s.safetensors", g_tmp, tag, w[i]);
}

static void test_resume(void) {
  const int N = 3, K = 1;
  gf_sg2_gan_hp hp = resume_hp();
  gf_sg2_gan a, b, c;
  gf_err err;
  char p[3][512];
  state_paths(p, "");
  const char *pa = p[0], *pk = p[1], *pb = p[2];
  make_gan(&a, &hp, 2);
  steps(&a, N, NULL);
  REQUIRE(gf_sg2_gan_save(&a, pa, &err) == GF_OK);
  make_gan(&b, &hp, 2);
  steps(&b, K, NULL);
  REQUIRE(gf_sg2_gan_save(&b, pk, &err) == GF_OK);
  CHECK(b.ctl.sign_count > 0); /* the controller's sums cross the save */
  gf_sg2_gan_free(&b);
  make_gan(&c, &hp, 2);
  if (gf_sg2_gan_load(&c, pk, &err)) die("load", &err);
  CHECK_INT_EQ(c.step, K);
  CHECK_INT_EQ(c.cur_nimg, 4 * K);
  steps(&c, N - K, NULL);
  REQUIRE(gf_sg2_gan_save(&c, pb, &err) == GF_OK);
  size_t na, nb;
  unsigned char *ba = slurp(pa, &na), *bb = slurp(pb, &nb);
  CHECKF(na == nb && memcmp(ba, bb, na) == 0,
         "resumed state differs from the straight run (%zu / %zu bytes)", na,
         nb);
  printf("resume: %d steps straight and %d + %d resumed: %zu bytes %s\n", N,
         K, N - K, na, na == nb && !memcmp(ba, bb, na) ? "identical" : "DIFFER");
  /* the state moved: G differs from the start's, p moved */
  CHECK(c.ctl.p != hp.ada_p0);
  /* it fires: one more step on one side */
  steps(&c, 1, NULL);
  REQUIRE(gf_sg2_gan_save(&c, pb, &err) == GF_OK);
  free(bb);
  bb = slurp(pb, &nb);
  CHECK(!(na == nb && memcmp(ba, bb, na) == 0));
  free(ba);
  free(bb);
  /* another config's state: refused by name and shape, nothing changed */
  gf_sg2_config other = sg2t_tiny_config();
  other.channel_max = 8;
  gf_sg2_gan o;
  REQUIRE(gf_sg2_gan_init(&o, &g_ctx, &other, &hp, 4, 2, 5, &err) == GF_OK);
  CHECK_INT_EQ(gf_sg2_gan_load(&o, pa, &err), GF_EFORMAT);
  printf("refused: %s\n", err.msg);
  CHECK_INT_EQ(o.step, 0);
  CHECK(gf_sg2_gan_load(&o, "/nonexistent/x.safetensors", &err) != GF_OK);
  gf_sg2_gan_free(&o);
  gf_sg2_gan_free(&a);
  gf_sg2_gan_free(&c);
}

/* The Philox draws are keyed by global sample: a batch of 4 in one round
 * and in two rounds of 2 draws the same latents, mixing latents, cut-off,
 * noise and augmentations, so Gmain's loss (before any update) is the same
 * up to rounding; another seed gives another. Two things depend on the
 * round as in the official code, and are held apart here: D's
 * minibatch-stddev groups (strided over the round: mbstd group 1 here) and
 * ADA's reflect margin (the round's largest: it changes the loss by about
 * 1e-7 here). */
static void test_rounds_draw_alike(void) {
  gf_sg2_gan_hp hp = resume_hp();
  g_mbstd_group = 1;
  gf_sg2_gan a, b;
  gf_sg2_step_out oa, ob, oc;
  make_gan(&a, &hp, 4);
  make_gan(&b, &hp, 2);
  steps(&a, 1, &oa);
  steps(&b, 1, &ob);
  CHECKF(fabs(oa.loss_g - ob.loss_g) < 1e-6, "loss_g %.9g (1 round) vs "
         "%.9g (2 rounds)", oa.loss_g, ob.loss_g);
  CHECK_INT_EQ(oa.real_sign_count, ob.real_sign_count);
  gf_sg2_gan_free(&b);
  make_gan(&b, &hp, 2);
  const int64_t rs[4] = {4, 3, 32, 32};
  gf_tensor real;
  gf_err err;
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  fill_real(&real, 0);
  gf_sg2_step_in in = {.real = &real};
  REQUIRE(gf_sg2_gan_step(&b, &g_ctx, &in, 100, &oc, &err) == GF_OK);
  CHECK(fabs(oa.loss_g - oc.loss_g) > 1e-4);
  printf("rounds: loss_g %.7f (1 x 4) %.7f (2 x 2), %.7f (another seed)\n",
         oa.loss_g, ob.loss_g, oc.loss_g);
  gf_tensor_free(&real);
  gf_sg2_gan_free(&a);
  gf_sg2_gan_free(&b);
  g_mbstd_group = 2;
}

/* ---- (c) the p controller --------------------------------------------- */

/* The official rule, written out: every interval steps, adjust = sign(rt -
 * target) batch interval / (ada_kimg 1000); p = max(p + adjust, 0) (f32). */
typedef struct ref_ctl {
  float p;
  double sum;
  int64_t count;
} ref_ctl;

static void ref_step(ref_ctl *r, double sum, int64_t count, int64_t done,
                     int64_t batch, int interval, double target,
                     double kimg) {
  r->sum += sum;
  r->count += count;
  if (done % interval) return;
  double rt = r->sum / (double)r->count;
  double s = rt > target ? 1.0 : rt < target ? -1.0 : 0.0;
  float p = r->p + (float)(s * (double)(batch * interval) / (kimg * 1000.0));
  r->p = p < 0.0f ? 0.0f : p;
  r->sum = 0;
  r->count = 0;
}

static void test_controller(void) {
  /* scripted: 32 logits a step; sign sums give rt above, below, at and
   * around the target; p is driven to 0 and held there */
  const double sums[16] = {32, 32, 20, 32, -32, -32, -10, -32,
                           -32, -32, -32, -32, 6.4, 12.8, 32, 0};
  gf_ada_ctl c = gf_ada_ctl_start(0.01f);
  ref_ctl r = {0.01f, 0, 0};
  gf_err err;
  int moved = 0;
  for (int i = 0; i < 16; i++) {
    gf_ada_ctl nx;
    REQUIRE(gf_ada_ctl_step(&c, sums[i], 32, i + 1, 32, 4, 0.6, 2.0, &nx,
                            &err) == GF_OK);
    float before = c.p;
    c = nx;
    ref_step(&r, sums[i], 32, i + 1, 32, 4, 0.6, 2.0);
    CHECKF(c.p == r.p, "step %d: p %.9g, the rule's %.9g", i, (double)c.p,
           (double)r.p);
    moved += c.p != before;
  }
  CHECK(moved >= 3);
  CHECK(c.p == 0.0f); /* clamped at 0, held there by rt 0.4 < 0.6 */
  /* the step's p from the signs it reports */
  gf_sg2_gan_hp hp = resume_hp();
  gf_sg2_gan gan;
  make_gan(&gan, &hp, 4);
  gf_sg2_step_out out[6];
  steps(&gan, 6, out);
  ref_ctl q = {hp.ada_p0, 0, 0};
  for (int i = 0; i < 6; i++) {
    CHECK_INT_EQ(out[i].real_sign_count, 4);
    ref_step(&q, out[i].real_sign_sum, out[i].real_sign_count, i + 1, 4,
             hp.ada_interval, hp.ada_target, hp.ada_kimg);
    CHECKF((float)out[i].ada_p == q.p, "step %d: p %.9g, the rule's %.9g", i,
           out[i].ada_p, (double)q.p);
  }
  printf("controller: p %.4f after 6 steps (from %.2f), rt %.3f\n",
         out[5].ada_p, (double)hp.ada_p0, out[5].ada_rt);
  gf_sg2_gan_free(&gan);
}

/* ---- hooks, Adam settings ---------------------------------------------- */

static int g_hook_calls;
static float g_hook_gain;

static gf_status zero_hook(gf_sg2_gan *gan, gf_ctx *ctx,
                           const gf_sg2_step_in *in, int64_t sample0,
                           int64_t n, float gain, gf_accum accum,
                           gf_err *err) {
  (void)in, (void)sample0, (void)n;
  g_hook_calls++;
  g_hook_gain = gain;
  if (accum == GF_ACCUMULATE) return GF_OK;
  gf_tensor g;
  GF_TRY(gf_arena_view_all(&gan->g.grads, &g, err));
  return gf_fill(ctx, &g, 0.0f, err);
}

static void test_hooks(void) {
  gf_sg2_gan_hp hp = resume_hp();
  hp.pl_weight = 2;
  gf_sg2_gan gan;
  gf_err err;
  make_gan(&gan, &hp, 4);
  const int64_t rs[4] = {4, 3, 32, 32};
  gf_tensor real;
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  gf_sg2_step_in in = {.real = &real};
  fill_real(&real, 0);
  CHECK(gan.greg == gf_sg2_greg_pl && gan.dreg == gf_sg2_dreg_r1);
  gan.greg = gf_sg2_greg_unsupported;
  CHECK_INT_EQ(gf_sg2_gan_step(&gan, &g_ctx, &in, 1, NULL, &err),
               GF_EUNSUPPORTED);
  printf("Greg refused by its hook: %s\n", err.msg);
  gf_sg2_gan_free(&gan);
  make_gan(&gan, &hp, 2);
  gan.greg = zero_hook;
  for (int i = 0; i < 5; i++) {
    gf_sg2_step_out out;
    REQUIRE(gf_sg2_gan_step(&gan, &g_ctx, &in, 1, &out, &err) == GF_OK);
    CHECK(out.ran_greg == (i % 4 == 0));
    CHECK(!out.ran_dreg);
  }
  CHECK_INT_EQ(g_hook_calls, 4); /* steps 0 and 4, two rounds each */
  CHECK(g_hook_gain == 4.0f);
  CHECK_INT_EQ(gan.adam_step_g, 5 + 2);
  CHECK_INT_EQ(gan.adam_step_d, 5);
  gf_sg2_gan_free(&gan);
  gf_tensor_free(&real);
  gf_adam_params a = gf_sg2_gan_adam(&hp, GF_SG2_G);
  CHECK(a.lr == 0.0025 * (4.0 / 5.0) && a.beta1 == 0.0 &&
        a.beta2 == pow(0.99, 4.0 / 5.0) && a.eps == 1e-8);
  a = gf_sg2_gan_adam(&hp, GF_SG2_D);
  CHECK(a.lr == 0.0025 * (16.0 / 17.0) && a.beta2 == pow(0.99, 16.0 / 17.0));
  gf_sg2_recipe rc;
  gf_sg2_config cfg;
  REQUIRE(gf_sg2_config_preset(&cfg, &rc, GF_SG2_PAPER256, 256, 3, 0, 1,
                               &err) == GF_OK);
  gf_sg2_gan_hp d = gf_sg2_gan_hp_default(&rc);
  CHECK(d.lr_g == 0.0025 && d.style_mixing == 0.9f && d.ema_kimg == 20.0);
}

/* Greg and Dreg from Philox (random noise, mixing, ADA with its
 * controller, two rounds): resume across a step where both run is the same
 * bytes; pl_mean crosses the save; the phases without a lazy interval
 * ('Gboth', 'Dboth') run with their main phases. */
static void test_reg_resume(void) {
  gf_sg2_gan_hp hp = resume_hp();
  hp.pl_weight = 2;
  hp.r1_gamma = 1;
  hp.g_reg_interval = 2;
  hp.d_reg_interval = 2;
  const int N = 3, K = 1;
  gf_sg2_gan a, b, c;
  gf_err err;
  char p[3][512];
  state_paths(p, "reg_");
  const char *pa = p[0], *pk = p[1], *pb = p[2];
  gf_sg2_step_out out[3];
  make_gan(&a, &hp, 2);
  steps(&a, N, out);
  CHECK(out[0].ran_greg && out[0].ran_dreg && !out[1].ran_greg &&
        !out[1].ran_dreg && out[2].ran_greg && out[2].ran_dreg);
  CHECK(out[0].pl_penalty > 0 && out[0].r1_penalty > 0 &&
        out[1].pl_penalty == 0 && out[1].r1_penalty == 0);
  CHECK_INT_EQ(out[0].real_sign_count, 8); /* Dmain's and Dreg's reals */
  CHECK_INT_EQ(out[1].real_sign_count, 4);
  CHECK_INT_EQ(a.adam_step_g, N + 2);
  CHECK_INT_EQ(a.adam_step_d, N + 2);
  REQUIRE(gf_sg2_gan_save(&a, pa, &err) == GF_OK);
  make_gan(&b, &hp, 2);
  steps(&b, K, NULL);
  CHECK(b.pl_mean != 0.0f);
  REQUIRE(gf_sg2_gan_save(&b, pk, &err) == GF_OK);
  gf_sg2_gan_free(&b);
  make_gan(&c, &hp, 2);
  if (gf_sg2_gan_load(&c, pk, &err)) die("load", &err);
  steps(&c, N - K, NULL);
  REQUIRE(gf_sg2_gan_save(&c, pb, &err) == GF_OK);
  size_t na, nb;
  unsigned char *ba = slurp(pa, &na), *bb = slurp(pb, &nb);
  bool same = na == nb && memcmp(ba, bb, na) == 0;
  CHECKF(same, "resumed state with Greg and Dreg differs (%zu / %zu bytes)",
         na, nb);
  printf("reg resume: %d steps straight and %d + %d resumed (Greg, Dreg at "
         "steps 0 and 2): %zu bytes %s; pl_mean %.6f, pl penalty %.4f, r1 "
         "penalty %.4g\n", N, K, N - K, na, same ? "identical" : "DIFFER",
         (double)a.pl_mean, out[2].pl_penalty, out[2].r1_penalty);
  free(ba);
  free(bb);
  /* it fires: pl_mean moved before the resumed steps */
  gf_sg2_gan_free(&c);
  make_gan(&c, &hp, 2);
  if (gf_sg2_gan_load(&c, pk, &err)) die("load", &err);
  c.pl_mean += 0.01f;
  steps(&c, N - K, NULL);
  REQUIRE(gf_sg2_gan_save(&c, pb, &err) == GF_OK);
  ba = slurp(pa, &na);
  bb = slurp(pb, &nb);
  CHECK(!(na == nb && memcmp(ba, bb, na) == 0));
  free(ba);
  free(bb);
  gf_sg2_gan_free(&c);
  gf_sg2_gan_free(&a);
  /* without lazy intervals: Gboth and Dboth (no separate phases, gain 1,
   * Dboth's reals counted once) */
  hp.g_reg_interval = hp.d_reg_interval = 0;
  make_gan(&a, &hp, 2);
  steps(&a, 2, out);
  CHECK(!out[0].ran_greg && !out[0].ran_dreg);
  CHECK(out[1].pl_penalty > 0 && out[1].r1_penalty > 0);
  CHECK_INT_EQ(out[1].real_sign_count, 4);
  CHECK_INT_EQ(a.adam_step_g, 2);
  CHECK(a.pl_mean != 0.0f);
  gf_sg2_gan_free(&a);
  /* path length needs rounds of at least pl_batch_shrink samples */
  hp.g_reg_interval = 4;
  gf_sg2_config cfg = sg2t_tiny_config();
  CHECK_INT_EQ(gf_sg2_gan_init(&a, &g_ctx, &cfg, &hp, 4, 1, 5, &err),
               GF_EINVAL);
  printf("refused: %s\n", err.msg);
}

/* gf_checkpoint_save_sg2 / _load_sg2: the trainer's names, keep-K, the
 * newest good one found past a truncated file, a load that restores the
 * state, another model's checkpoint refused naming it. */
static void test_checkpoint_sg2(void) {
  gf_sg2_gan_hp hp = resume_hp();
  gf_sg2_gan a, b;
  gf_err err;
  char dir[512], path[1024], pa[600], pb[600];
  snprintf(dir, sizeof dir, "%s/sg2_ckpts", g_tmp);
  mkdir(dir, 0755);
  gf_ckpt_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.format_version = GF_CKPT_FORMAT_VERSION;
  meta.seed = 5;
  meta.world_size = 1;
  gf_model_config_default(&meta.config, GF_ARCH_STYLEGAN2);
  REQUIRE(gf_model_config_validate(&meta.config, &err) == GF_OK);
  make_gan(&a, &hp, 2);
  for (int k = 1; k <= 3; k++) {
    steps(&a, 1, NULL);
    meta.step = k;
    if (gf_checkpoint_save_sg2(dir, &a, &meta, 2, path, sizeof path, &err))
      die("save_sg2", &err);
  }
  char found[1024];
  gf_ckpt_meta got;
  int skipped = -1;
  REQUIRE(gf_checkpoint_find_latest(dir, found, sizeof found, &got, &skipped,
                                    NULL, 0, &err) == GF_OK);
  CHECK(got.step == 3 && skipped == 0 && got.config.architecture ==
                                            GF_ARCH_STYLEGAN2);
  snprintf(pa, sizeof pa, "%s/ckpt-000000000001.safetensors", dir);
  CHECK(access(pa, F_OK) != 0); /* pruned: keep 2 */
  make_gan(&b, &hp, 2);
  if (gf_checkpoint_load_sg2(found, &b, &got, &err)) die("load_sg2", &err);
  CHECK_INT_EQ(b.step, 3);
  snprintf(pa, sizeof pa, "%s/a.safetensors", g_tmp);
  snprintf(pb, sizeof pb, "%s/b.safetensors", g_tmp);
  REQUIRE(gf_sg2_gan_save(&a, pa, &err) == GF_OK);
  REQUIRE(gf_sg2_gan_save(&b, pb, &err) == GF_OK);
  size_t na, nb;
  unsigned char *ba = slurp(pa, &na), *bb = slurp(pb, &nb);
  CHECKF(na == nb && memcmp(ba, bb, na) == 0, "loaded checkpoint state differs");
  free(ba);
  free(bb);
  /* a truncated newest file: skipped, step 2 found */
  REQUIRE(truncate(found, 1000) == 0);
  REQUIRE(gf_checkpoint_find_latest(dir, found, sizeof found, &got, &skipped,
                                    NULL, 0, &err) == GF_OK);
  CHECK(got.step == 2 && skipped == 1);
  /* another model's checkpoint: refused naming it, b unchanged */
  gf_ckpt_meta dm = meta;
  gf_model_config_default(&dm.config, GF_ARCH_DCGAN);
  dm.step = 9;
  float one = 1.0f;
  int64_t shape[1] = {1};
  gf_st_tensor_desc t = {"g.x", GF_ST_F32, 1, shape, &one};
  snprintf(path, sizeof path, "%s/ckpt-000000000009.safetensors", dir);
  REQUIRE(gf_ckpt_write(path, &t, 1, &dm, &err) == GF_OK);
  CHECK(gf_checkpoint_load_sg2(path, &b, NULL, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "dcgan") != NULL, "message: %s", err.msg);
  CHECK_INT_EQ(b.step, 3);
  CHECK(gf_checkpoint_save_sg2(dir, &a, &dm, 2, NULL, 0, &err) == GF_EINVAL);
  printf("checkpoint_sg2: keep-K, newest good, load, refusals\n");
  gf_sg2_gan_free(&a);
  gf_sg2_gan_free(&b);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_sg2_gan GOLDEN_DIR TMP_DIR\n");
    return 2;
  }
  g_tmp = argv[2];
  gf_ctx_config cc = {.backend = GF_BACKEND_CPU, .nthreads = 2};
  gf_err err;
  if (gf_ctx_init(&g_ctx, &cc, &err)) die("ctx", &err);
  const int f1[3] = {FIRE_CUTOFF, FIRE_DBIAS, FIRE_P};
  const char *const n1[3] = {"cut-off - 1", "D bias + 1e-3", "p 0.3"};
  test_golden(argv[1], "sg2_train.safetensors", f1, n1, 3);
  const int f2[2] = {FIRE_LABEL, FIRE_CUTOFF};
  const char *const n2[2] = {"a real label moved", "cut-off - 1"};
  test_golden(argv[1], "sg2_train_cond.safetensors", f2, n2, 2);
  const int f3[6] = {FIRE_GREG_CUTOFF, FIRE_PL_NOISE, FIRE_PL_MEAN,
                     FIRE_DREG_AUG,    FIRE_R1_GAMMA, FIRE_CUTOFF};
  const char *const n3[6] = {"Greg cut-off - 1", "a pl noise value x 1.01",
                             "pl_mean + 0.01", "Dreg given Dmain's ADA draws",
                             "r1_gamma x 1.01", "Gmain cut-off - 1"};
  test_golden(argv[1], "sg2_train_reg.safetensors", f3, n3, 6);
  test_resume();
  test_rounds_draw_alike();
  test_controller();
  test_hooks();
  test_reg_resume();
  test_checkpoint_sg2();
  gf_ctx_free(&g_ctx);
  return check_report();
}
