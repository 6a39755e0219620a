/* test_golden.c - one gf_gan_step of each network against PyTorch's numbers
 * (tests/model/golden/CASE.safetensors, written by golden/make_golden.py; no
 * Python needed here). Both sides start from the same weights (an integer
 * formula, gt_golden_value of golden_util.c, exact in f32 in C and numpy),
 * the same real batch and latents (stored), and the same dropout masks
 * (Philox, keyed as gf/rng.h says, re-implemented in numpy by the script).
 *
 * Cases: mlp, dcgan28, dcgan64 (BCE, one D step per G step: gf_gan_step)
 * and the recipes, whose files' metadata say loss, spectral_norm,
 * ema_decay / ema_rampup and d_steps (absent: BCE, none, none, 1):
 *   dcgan28_hinge_sn_ema  hinge loss, spectral norm, EMA of beta 0.9,
 *                         2 D steps (gf_gan_d_step twice, step keys
 *                         2 step + j) per gf_gan_g_step
 *   mlp_wgan_sn           WGAN critic loss, SN on D's three linear layers
 *                         and its dropout masks, 2 D steps per G step
 *   dcgan28_ema_ramp      BCE with a ramped EMA (decay 0.999, rampup
 *                         0.05): G update 1 has beta 0, so G_ema must equal
 *                         G bit for bit as well as match PyTorch
 * and R1 with DiffAugment (metadata r1_gamma, r1_every, augment: the
 * policy string; gf_gan_step, one D step):
 *   dcgan28_hinge_sn_r1_aug      hinge, SN, R1 gamma 10 every step on the
 *                                augmented reals, every DiffAugment policy
 *   dcgan28_hinge_sn_r1lazy_aug  the same with r1_every 2 at an even step:
 *                                R1 applied, weighted 2
 *   dcgan28_hinge_sn_r1skip_aug  r1_every 2 at an odd step: not applied
 *   mlp_r1_aug                   BCE, R1 gamma 10 (its forward with
 *                                dropout pass 3's masks), translation and
 *                                cutout
 * SN's u and v start from the formula vector of their tensor id,
 * normalized in double and rounded once (load_sn_start), or, where the
 * metadata has sn_start_iters, from the vectors the file stores (the
 * formula vectors after that many power iterations in double: the raw
 * ones give sigma far below W's top singular value, which R1's double
 * backward amplifies); G_ema from a copy of G's arenas, as
 * gf_gan_init_params leaves it.
 *
 * Tolerances (f32 throughout; the two sides sum in different orders:
 * oneDNN's blocked GEMM/convolutions and its batch-norm reductions versus
 * PyTorch's MKL/own kernels), per quantity:
 *   losses, mean D(.)     |d| <= 2e-6 + 2e-5 |t|    (mean of a few logits)
 *   G output sample       |d| <= 2e-6 + 1e-4 |t|    (tanh of a forward)
 *   gradient samples      |d| <= 2e-4 rms + 1e-3 |t|, rms = L2 / sqrt(n):
 *                         gradients pass two batch norms and the updated
 *                         D; errors scale with the tensor's magnitude,
 *                         and entries that cancel to ~0 get the rms term
 *   gradient L2 norm      |d| <= 1e-4 L2
 *   gradient sum          |d| <= 1e-5 L2 sqrt(n) + 1e-4 |t| (sums cancel;
 *                         bounded by the L2-scaled error of each entry)
 *   parameters after Adam |d| <= 1e-3 lr + 1e-6 |t| where the gradient is
 *                         clearly non-zero (|g| > 2 x its tolerance); else
 *                         2.01 lr: Adam's first step is lr * g / (|g| +
 *                         eps), a sign function of g, so an entry whose
 *                         gradient is within rounding of 0 may go either way
 *   BN running stats      |d| <= 2e-6 + 2e-5 |t|
 *   D step stats (K > 1)  as losses, for each D step
 *   SN u and v (after the G step's power iteration)
 *                         |d| <= SN_TOL_ABS / sqrt(n) + 2e-5 |t|, n the
 *                         vector's length: a unit vector's entries are
 *                         ~1/sqrt(n), and the absolute term is the same
 *                         fraction of that scale as BN stats' 2e-6 is of
 *                         theirs (~1)
 *   sigma = u . W v       |d| <= 2e-6 |t| (final u, W, v, in double)
 *   EMA parameters        |d| <= (1 - beta) atol + 1e-6 (|t| + |t_G|):
 *                         lerp(G, EMA0, beta) carries (1 - beta) of G's
 *                         own after-Adam tolerance atol (EMA0 is exact on
 *                         both sides), plus lerp's rounding (t_G: PyTorch's
 *                         G entry); EMA BN stats as BN stats
 *   EMA with beta 0       G_ema's arenas equal G's byte for byte
 *   R1 penalty (gf_gan_stats.r1)
 *                         as losses (measured worst |d| / tol 0.008)
 *   R1 applied (r1_done)  exactly
 *   augment params        bit for bit: gf_augment_draw's rows for each
 *                         augmentation of the step against the script's
 *                         numpy re-implementation of the draw (the same
 *                         rows its PyTorch step applied)
 *   zero gradients        a gradient that is 0 in exact arithmetic (mlp G's
 *                         linear biases, followed by batch norm, which
 *                         removes any constant shift; under WGAN, D's last
 *                         bias: -1 from the real batch, +1 from the fake)
 *                         is rounding noise (or exactly 0) on both sides (~1e-9 of the others): where PyTorch's
 *                         L2 is below 1e-5 x the net's largest gradient L2,
 *                         ours must be too, entries are not compared, and
 *                         Adam (which turns noise into +-lr) gets 2.01 lr
 * Each line printed gives the worst |d| / tolerance seen per quantity.
 * Argument 2 "--perturb-z" adds 1e-3 to one latent value (of the last D
 * step, the one the G step uses): the comparison must then fail, and the
 * program exits 0 only when every case ran and checks failed in each of
 * them, counted per case (ctest model_golden_fires), which proves each
 * case's tolerances are tight enough to see a small real mismatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/augment.h"
#include "gf/gan.h"
#include "gf/safetensors.h"
#include "golden_util.h"

#define LR 2e-4

/* Spectral norm's u and v (make_golden.py: unit_formula): the formula
 * vector of tensor tid_base + t, normalized in double, rounded once to f32;
 * written through gf_net_find, as a caller that knows the names would. */
static void load_sn_start(gf_net *net, uint32_t tid_base) {
  for (int t = 0; t < net->n_tensors; t++) {
    const gf_param *p = &net->tensors[t];
    if (p->kind != GF_PARAM_SN_U && p->kind != GF_PARAM_SN_V) continue;
    gf_param *q = gf_net_find(net, p->name);
    REQUIRE(q == p);
    int64_t n = gf_tensor_numel(&q->value);
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
      double v = gt_golden_value(tid_base + (uint32_t)t, (uint32_t)i);
      ss += v * v;
    }
    double nrm = sqrt(ss) < 1e-12 ? 1e-12 : sqrt(ss);
    float *d = q->value.data;
    for (int64_t i = 0; i < n; i++)
      d[i] = (float)(gt_golden_value(tid_base + (uint32_t)t, (uint32_t)i) / nrm);
  }
}

/* Spectral norm's u and v as the file stores them (sn_start.<name>: the
 * formula vectors after power iterations in double, metadata
 * sn_start_iters), written through gf_net_find. */
static void load_sn_stored(gf_net *net, const gf_st_file *f);

/* G_ema = G: gf_gan_init_params copies the arenas so; this test loads the
 * formula instead of calling it. */
static void copy_arena_host(gf_arena *dst, const gf_arena *src) {
  REQUIRE(dst->used == src->used);
  if (src->used) memcpy(dst->base, src->base, src->used);
}

static void copy_f32(const gf_st_tensor *t, float *out) { memcpy(out, t->data, t->nbytes); }

static void load_sn_stored(gf_net *net, const gf_st_file *f) {
  char key[160];
  int loaded = 0;
  for (int t = 0; t < net->n_tensors; t++) {
    const gf_param *p = &net->tensors[t];
    if (p->kind != GF_PARAM_SN_U && p->kind != GF_PARAM_SN_V) continue;
    gf_param *q = gf_net_find(net, p->name);
    REQUIRE(q == p);
    snprintf(key, sizeof key, "sn_start.%s", q->name);
    copy_f32(gt_need(f, key, GF_ST_F32, (size_t)gf_tensor_numel(&q->value)), q->value.data);
    loaded++;
  }
  REQUIRE(loaded > 0);
}

/* DiffAugment's policy string ("color,translation,cutout" or a part) as
 * GF_AUG_* bits; an unknown name stops the test. */
static unsigned policy_bits(const char *s) {
  static const struct {
    const char *name;
    unsigned bit;
  } k[] = {{"color", GF_AUG_COLOR}, {"translation", GF_AUG_TRANSLATION}, {"cutout", GF_AUG_CUTOUT}};
  unsigned bits = 0;
  while (s && *s) {
    size_t len = strcspn(s, ",");
    unsigned b = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
      if (strlen(k[i].name) == len && strncmp(s, k[i].name, len) == 0) b = k[i].bit;
    if (!b) {
      fprintf(stderr, "golden file: unknown augment policy in '%s'\n", s);
      exit(1);
    }
    bits |= b;
    s += len + (s[len] == ',');
  }
  return bits;
}

static int meta_int(const gf_st_file *f, const char *key) {
  const char *v = gf_st_meta_get(f, key);
  REQUIRE(v != NULL);
  return atoi(v);
}
/* The recipe keys: absent in the plain cases' files. */
static int meta_int_or(const gf_st_file *f, const char *key, int dflt) {
  const char *v = gf_st_meta_get(f, key);
  return v ? atoi(v) : dflt;
}
static double meta_double_or(const gf_st_file *f, const char *key, double dflt) {
  const char *v = gf_st_meta_get(f, key);
  return v ? strtod(v, NULL) : dflt;
}


#define MAX_D_STEPS 8
#define SN_TOL_ABS 2e-6 /* SN u, v: times 1/sqrt(n), a unit vector's entry scale */

/* The quantities compared, each with its worst |d| / tol. */
typedef struct golden_worst {
  gt_worst loss, fake, gs, gl2, gsum, after, bn, zero, sn, sigma, ema, ema_bn, ema_eq, r1, r1_done,
      aug;
} golden_worst;

static void cmp_stats(golden_worst *w, const gf_st_file *f, int K, const gf_gan_stats *sd,
                      const gf_gan_stats *s) {
  const gf_st_tensor *stats = gt_need(f, "stats", GF_ST_F64, 6);
  double mine[6] = {s->loss_d_real, s->loss_d_fake, s->loss_g, s->d_real, s->d_fake,
                    s->d_fake_after};
  for (size_t i = 0; i < 6; i++) {
    double t = gt_f64_at(stats, i);
    GT_CMP(&w->loss, "stats", i, mine[i], t, 2e-6 + 2e-5 * fabs(t));
  }
  if (K == 1) return;
  /* Every D step's half: [loss_d_real, loss_d_fake, d_real, d_fake]. */
  const gf_st_tensor *td = gt_need(f, "stats_d", GF_ST_F64, (size_t)K * 4);
  for (int j = 0; j < K; j++) {
    double dm[4] = {sd[j].loss_d_real, sd[j].loss_d_fake, sd[j].d_real, sd[j].d_fake};
    for (size_t i = 0; i < 4; i++) {
      double t = gt_f64_at(td, (size_t)j * 4 + i);
      GT_CMP(&w->loss, "stats_d", (size_t)j * 4 + i, dm[i], t, 2e-6 + 2e-5 * fabs(t));
    }
  }
}

/* The R1 half of each D step's stats (stats_r1 [K, 2]: P, applied; the
 * recipes with r1_gamma): P as the losses, applied exactly. */
static void cmp_r1(golden_worst *w, const gf_st_file *f, int K, const gf_gan_stats *sd,
                   const gf_gan_stats *s) {
  const gf_st_tensor *t = gt_need(f, "stats_r1", GF_ST_F64, (size_t)K * 2);
  for (int j = 0; j < K; j++) {
    const gf_gan_stats *sj = K == 1 ? s : &sd[j];
    double tp = gt_f64_at(t, (size_t)j * 2), td = gt_f64_at(t, (size_t)j * 2 + 1);
    GT_CMP(&w->r1, "stats_r1", (size_t)j * 2, sj->r1, tp, 2e-6 + 2e-5 * fabs(tp));
    GT_CMP(&w->r1_done, "stats_r1", (size_t)j * 2 + 1, sj->r1_done ? 1.0 : 0.0, td, 0.5);
  }
}

/* The params gf_augment_draw draws for each augmentation of the step
 * against the script's numpy re-implementation (aug.params [2K + 1, n,
 * 7]: D step j's real (pass 0) and fake (pass 1) batches, key K step + j,
 * then G's step, pass 2): bit for bit. */
static void cmp_aug(golden_worst *w, const gf_st_file *f, int K, int n, int H, int W,
                    unsigned policy, uint64_t seed, int64_t step) {
  const gf_st_tensor *t =
      gt_need(f, "aug.params", GF_ST_F32, (size_t)(2 * K + 1) * n * GF_AUG_NPARAMS);
  float mine[64 * GF_AUG_NPARAMS];
  REQUIRE(n <= 64);
  gf_err err = {0};
  for (int r = 0; r < 2 * K + 1; r++) {
    int j = r < 2 * K ? r / 2 : K - 1, pass = r < 2 * K ? r % 2 : 2;
    REQUIRE(gf_augment_draw(mine, n, H, W, policy, seed, K * step + j, pass, 0, &err) == GF_OK);
    for (size_t i = 0; i < (size_t)n * GF_AUG_NPARAMS; i++) {
      size_t at = (size_t)r * n * GF_AUG_NPARAMS + i;
      GT_CMP(&w->aug, "aug.params", at, mine[i], gt_f32_at(t, at), 0.0);
    }
  }
}

/* sigma = u . (W v) of the SN layer whose u is p, in double. */
static double sn_sigma(gf_net *net, const gf_param *u) {
  char name[96];
  size_t len = strlen(u->name) - strlen("weight_u");
  REQUIRE(len < sizeof name - 16 && strcmp(u->name + len, "weight_u") == 0);
  memcpy(name, u->name, len);
  strcpy(name + len, "weight_orig");
  const gf_param *w = gf_net_find(net, name);
  strcpy(name + len, "weight_v");
  const gf_param *v = gf_net_find(net, name);
  REQUIRE(w && v);
  int64_t r = gf_tensor_numel(&u->value), k = gf_tensor_numel(&v->value);
  REQUIRE(gf_tensor_numel(&w->value) == r * k);
  const float *wd = w->value.data, *ud = u->value.data, *vd = v->value.data;
  double sigma = 0.0;
  for (int64_t i = 0; i < r; i++) {
    double wv = 0.0;
    for (int64_t j = 0; j < k; j++) wv += (double)wd[i * k + j] * vd[j];
    sigma += ud[i] * wv;
  }
  return sigma;
}

/* Parameters, gradients, BN statistics and SN vectors of net; with ema
 * (G's EMA twin, same layout) also its tensors, beta the f32 beta of the
 * update. */
static void cmp_net(golden_worst *w, const gf_st_file *f, gf_net *net, const gf_net *ema,
                    double beta) {
  char key[160];
  double max_l2 = 0; /* the net's largest gradient L2 (PyTorch's) */
  for (int ti = 0; ti < net->n_tensors; ti++) {
    if (!net->tensors[ti].trainable) continue;
    snprintf(key, sizeof key, "grad_stats.%s", net->tensors[ti].name);
    double l2 = gt_f64_at(gt_need(f, key, GF_ST_F64, 2), 1);
    max_l2 = l2 > max_l2 ? l2 : max_l2;
  }
  for (int ti = 0; ti < net->n_tensors; ti++) {
    gf_param *p = &net->tensors[ti];
    size_t nel = (size_t)gf_tensor_numel(&p->value);
    const gf_param *pe = ema ? &ema->tensors[ti] : NULL;
    const float *ev = pe ? pe->value.data : NULL;
    const gf_st_tensor *te = NULL;
    if (pe) {
      REQUIRE(strcmp(pe->name, p->name) == 0);
      snprintf(key, sizeof key, "ema.%s", p->name);
      te = gt_need(f, key, GF_ST_F32, p->trainable ? gt_sample_k(nel) : nel);
    }
    if (p->kind == GF_PARAM_SN_U || p->kind == GF_PARAM_SN_V) {
      snprintf(key, sizeof key, "sn.%s", p->name);
      const gf_st_tensor *tv = gt_need(f, key, GF_ST_F32, nel);
      for (size_t i = 0; i < nel; i++) {
        double t = gt_f32_at(tv, i);
        GT_CMP(&w->sn, p->name, i, ((float *)p->value.data)[i], t,
            SN_TOL_ABS / sqrt((double)nel) + 2e-5 * fabs(t));
      }
      if (p->kind == GF_PARAM_SN_U) {
        size_t len = strlen(p->name) - strlen(".weight_u");
        snprintf(key, sizeof key, "sigma.%.*s", (int)len, p->name);
        double t = gt_f64_at(gt_need(f, key, GF_ST_F64, 1), 0);
        GT_CMP(&w->sigma, key + 6, 0, sn_sigma(net, p), t, 2e-6 * fabs(t));
      }
      continue;
    }
    if (!p->trainable) {
      snprintf(key, sizeof key, "bn.%s", p->name);
      const gf_st_tensor *tb = gt_need(f, key, GF_ST_F32, nel);
      for (size_t i = 0; i < nel; i++) {
        double t = gt_f32_at(tb, i);
        GT_CMP(&w->bn, p->name, i, ((float *)p->value.data)[i], t, 2e-6 + 2e-5 * fabs(t));
        if (te) {
          t = gt_f32_at(te, i);
          GT_CMP(&w->ema_bn, p->name, i, ev[i], t, 2e-6 + 2e-5 * fabs(t));
        }
      }
      continue;
    }
    snprintf(key, sizeof key, "grad_stats.%s", p->name);
    const gf_st_tensor *ts = gt_need(f, key, GF_ST_F64, 2);
    double tsum = gt_f64_at(ts, 0), tl2 = gt_f64_at(ts, 1);
    const float *g = p->grad.data, *pv = p->value.data;
    double sum = 0, l2 = 0;
    for (size_t i = 0; i < nel; i++) sum += g[i], l2 += (double)g[i] * g[i];
    l2 = sqrt(l2);
    snprintf(key, sizeof key, "after.%s", p->name);
    const gf_st_tensor *ta = gt_need(f, key, GF_ST_F32, gt_sample_k(nel));
    bool zero = tl2 <= 1e-5 * max_l2; /* zero in exact arithmetic: noise */
    const gf_st_tensor *tg = NULL;
    double rms = tl2 / sqrt((double)nel);
    if (zero) {
      GT_CMP(&w->zero, p->name, 0, l2, 0, 1e-5 * max_l2);
    } else {
      GT_CMP(&w->gl2, p->name, 0, l2, tl2, 1e-4 * tl2);
      GT_CMP(&w->gsum, p->name, 0, sum, tsum, 1e-5 * tl2 * sqrt((double)nel) + 1e-4 * fabs(tsum));
      snprintf(key, sizeof key, "grad.%s", p->name);
      tg = gt_need(f, key, GF_ST_F32, gt_sample_k(nel));
    }
    for (size_t i = 0; i < gt_sample_k(nel); i++) {
      size_t j = gt_sample_idx(i, nel);
      double ta_i = gt_f32_at(ta, i), atol = 2.01 * LR;
      if (!zero) {
        double t = gt_f32_at(tg, i);
        double gtol = 2e-4 * rms + 1e-3 * fabs(t);
        GT_CMP(&w->gs, p->name, j, g[j], t, gtol);
        if (fabs(t) > 2 * gtol) atol = 1e-3 * LR + 1e-6 * fabs(ta_i);
      }
      GT_CMP(&w->after, p->name, j, pv[j], ta_i, atol);
      if (te) {
        double t = gt_f32_at(te, i);
        GT_CMP(&w->ema, p->name, j, ev[j], t, (1.0 - beta) * atol + 1e-6 * (fabs(t) + fabs(ta_i)));
      }
    }
  }
}

/* Bytes of two host arenas that differ (their used parts; a size mismatch
 * counts as all). */
static size_t arena_diff(const gf_arena *a, const gf_arena *b) {
  if (a->used != b->used) return a->used > b->used ? a->used : b->used;
  size_t d = 0;
  for (size_t i = 0; i < a->used; i++)
    d += ((const unsigned char *)a->base)[i] != ((const unsigned char *)b->base)[i];
  return d;
}

static void run_case(gf_ctx *ctx, const char *path, int perturb) {
  gf_err err = {0};
  gf_st_file f;
  gf_st_file_init(&f);
  gf_status st = gf_st_open(&f, path, 0, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  const char *arch = gf_st_meta_get(&f, "arch");
  REQUIRE(arch != NULL);
  gf_model_config c;
  gf_arch ga;
  REQUIRE(gf_arch_parse(arch, &ga, NULL) == GF_OK);
  gf_model_config_default(&c, ga);
  c.image_height = c.image_width = meta_int(&f, "size");
  c.image_channels = meta_int(&f, "channels");
  c.z_dim = meta_int(&f, "z_dim");
  c.ngf = meta_int(&f, "ngf");
  c.ndf = meta_int(&f, "ndf");
  c.spectral_norm = meta_int_or(&f, "spectral_norm", 0);
  int n = meta_int(&f, "batch");
  uint64_t seed = (uint64_t)strtoull(gf_st_meta_get(&f, "seed"), NULL, 10);
  int64_t step = meta_int(&f, "step");
  int K = meta_int_or(&f, "d_steps", 1); /* D steps per G step */
  REQUIRE(K >= 1 && K <= MAX_D_STEPS);
  gf_gan_hparams hp;
  gf_gan_hparams_default(&hp);
  const char *loss = gf_st_meta_get(&f, "loss");
  if (loss) REQUIRE(gf_gan_loss_parse(loss, &hp.loss, &err) == GF_OK);
  hp.ema_decay = meta_double_or(&f, "ema_decay", 0.0);
  hp.ema_rampup = meta_double_or(&f, "ema_rampup", hp.ema_rampup);
  hp.r1_gamma = meta_double_or(&f, "r1_gamma", 0.0);
  hp.r1_every = meta_int_or(&f, "r1_every", hp.r1_every);
  hp.augment = policy_bits(gf_st_meta_get(&f, "augment"));

  gf_gan gan;
  st = gf_gan_init(&gan, ctx, &c, &hp, n, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  gt_load_formula(&gan.g, 0);
  gt_load_formula(&gan.d, 64);
  if (meta_int_or(&f, "sn_start_iters", 0) > 0) load_sn_stored(&gan.d, &f);
  else load_sn_start(&gan.d, 64);
  bool has_ema = gan.g_ema.layers != NULL;
  REQUIRE(has_ema == (hp.ema_decay > 0.0));
  if (has_ema) {
    copy_arena_host(&gan.g_ema.params, &gan.g.params);
    copy_arena_host(&gan.g_ema.bn_stats, &gan.g.bn_stats);
  }

  size_t img = (size_t)c.image_channels * c.image_height * c.image_width;
  gf_tensor real, z;
  int64_t rs[4] = {(int64_t)K * n, c.image_channels, c.image_height, c.image_width};
  int64_t zs[2] = {(int64_t)K * n, c.z_dim};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  copy_f32(gt_need(&f, "input.real", GF_ST_F32, (size_t)K * n * img), real.data);
  copy_f32(gt_need(&f, "input.z", GF_ST_F32, (size_t)K * n * c.z_dim), z.data);
  /* Latent 1 of the last D step, whose fake the G step uses: a change in
   * an earlier D step's latents reaches little beyond its loss and D's
   * first Adam update, which is lr sign(g) and hides small changes. */
  if (perturb) ((float *)z.data)[(size_t)(K - 1) * n * c.z_dim + 1] += 1e-3f;

  gf_gan_stats s, sd[MAX_D_STEPS];
  if (K == 1) { /* the one-call step */
    st = gf_gan_step(&gan, ctx, &real, &z, seed, step, 0, &s, &err);
  } else { /* K D steps, keys K step + j, then the G step on the last one's */
    int64_t rj[4] = {n, c.image_channels, c.image_height, c.image_width}, zj[2] = {n, c.z_dim};
    for (int j = 0; j < K && st == GF_OK; j++) {
      gf_tensor r1, z1;
      REQUIRE(gf_tensor_view(&r1, (float *)real.data + (size_t)j * n * img, GF_F32, GF_DEV_CPU, 4,
                             rj, &err) == GF_OK);
      REQUIRE(gf_tensor_view(&z1, (float *)z.data + (size_t)j * n * c.z_dim, GF_F32, GF_DEV_CPU,
                             2, zj, &err) == GF_OK);
      st = gf_gan_d_step(&gan, ctx, &r1, &z1, seed, K * step + j, 0, &sd[j], &err);
    }
    s = sd[K - 1];
    if (st == GF_OK) st = gf_gan_g_step(&gan, ctx, seed, K * step + K - 1, &s, &err);
  }
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);

  golden_worst w = {{"loss", 0, "", 0},         {"fake", 0, "", 0},     {"grad sample", 0, "", 0},
                    {"grad L2", 0, "", 0},      {"grad sum", 0, "", 0}, {"after Adam", 0, "", 0},
                    {"bn stats", 0, "", 0},     {"zero grad L2", 0, "", 0},
                    {"SN u, v", 0, "", 0},      {"SN sigma", 0, "", 0}, {"EMA param", 0, "", 0},
                    {"EMA bn stats", 0, "", 0}, {"EMA == G", 0, "", 0}, {"R1 penalty", 0, "", 0},
                    {"R1 applied", 0, "", 0},   {"aug params", 0, "", 0}};
  cmp_stats(&w, &f, K, sd, &s);
  if (hp.r1_gamma > 0.0) cmp_r1(&w, &f, K, sd, &s);
  if (hp.augment)
    cmp_aug(&w, &f, K, n, c.image_height, c.image_width, hp.augment, seed, step);

  gf_tensor fake;
  REQUIRE(gf_net_output(&gan.g, &fake, &err) == GF_OK);
  size_t nf = (size_t)gf_tensor_numel(&fake);
  const gf_st_tensor *tf = gt_need(&f, "out.fake", GF_ST_F32, gt_sample_k(nf));
  for (size_t i = 0; i < gt_sample_k(nf); i++) {
    double t = gt_f32_at(tf, i);
    GT_CMP(&w.fake, "fake", i, ((float *)fake.data)[gt_sample_idx(i, nf)], t,
           2e-6 + 1e-4 * fabs(t));
  }

  double beta = has_ema ? (double)(float)gf_gan_ema_beta(&gan.hp, 1) : 0.0; /* f32, as gf_lerp */
  cmp_net(&w, &f, &gan.g, has_ema ? &gan.g_ema : NULL, beta);
  cmp_net(&w, &f, &gan.d, NULL, 0.0);
  if (has_ema && beta == 0.0) { /* lerp(G, EMA, 0) = G exactly */
    size_t dp = arena_diff(&gan.g_ema.params, &gan.g.params);
    size_t db = arena_diff(&gan.g_ema.bn_stats, &gan.g.bn_stats);
    GT_CMP(&w.ema_eq, "differing bytes", 0, (double)(dp + db), 0, 0.5);
  }

  gt_worst *all[] = {&w.loss, &w.fake,   &w.gs,    &w.gl2, &w.gsum,   &w.after,
                  &w.bn,   &w.zero,   &w.sn,    &w.sigma, &w.ema,  &w.ema_bn,
                  &w.ema_eq, &w.r1,   &w.r1_done, &w.aug};
  fprintf(stderr, "%s: loss_d %.6f loss_g %.6f (loss %s, %d D step%s, SN %d, EMA beta %g", path,
          s.loss_d, s.loss_g, gf_gan_loss_name(hp.loss), K, K > 1 ? "s" : "", c.spectral_norm,
          beta);
  if (hp.r1_gamma > 0.0)
    fprintf(stderr, ", R1 gamma %g every %d: %s", hp.r1_gamma, hp.r1_every,
            s.r1_done ? "applied" : "not applied");
  if (hp.augment) fprintf(stderr, ", DiffAugment 0x%x", hp.augment);
  fprintf(stderr, ")\n");
  gt_print_worst(all, sizeof all / sizeof all[0]);
  gf_tensor_free(&real);
  gf_tensor_free(&z);
  gf_gan_free(&gan);
  gf_st_file_free(&f);
}

int main(int argc, char **argv) {
  int perturb = gt_args(argc, argv, "test_golden", "--perturb-z");
  gf_ctx ctx;
  gt_cpu_ctx(&ctx);
  const char *cases[] = {"mlp",
                         "dcgan28",
                         "dcgan64",
                         "dcgan28_hinge_sn_ema",
                         "mlp_wgan_sn",
                         "dcgan28_ema_ramp",
                         "dcgan28_hinge_sn_r1_aug",
                         "dcgan28_hinge_sn_r1lazy_aug",
                         "dcgan28_hinge_sn_r1skip_aug",
                         "mlp_r1_aug",
                         "resnet28",
                         "resnet32_hinge_sn_ema"};
  enum { N_CASES = sizeof cases / sizeof cases[0] };
  int missed[N_CASES]; /* checks that failed in each case */
  char path[4096];
  for (size_t i = 0; i < N_CASES; i++) {
    snprintf(path, sizeof path, "%s/%s.safetensors", argv[1], cases[i]);
    int before = check_failures_;
    run_case(&ctx, path, perturb);
    missed[i] = check_failures_ - before;
  }
  gf_ctx_free(&ctx);
  if (perturb) {
    /* Each network's comparison must fire on its own: a failure counted
     * in one case must not stand in for a silent other. */
    return gt_fires_verdict(cases, missed, N_CASES);
  }
  return check_report();
}
