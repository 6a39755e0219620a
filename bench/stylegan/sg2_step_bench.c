/* sg2_step_bench.c - speed and peak memory of ganflow's StyleGAN2-ADA
 * training step (gf_sg2_gan_step: the Gmain and Dmain phases, ADA on at a
 * fixed p, the G EMA; Greg and Dreg off, pl_weight = r1_gamma = 0, unless
 * --reg) or of G's forward alone (mapping +
 * synthesis, inference mode, constant noise, psi 1), on the CPU, one
 * configuration per process so that the RSS high-water mark (VmHWM) is
 * that configuration's. The sizes are the `auto` preset's at --res (3
 * channels, unconditional), with --cbase / --cmax overriding its channel
 * base and maximum. Prints one line; run.sh runs the set beside the
 * official code (official_step.py).
 *
 *   sg2_step_bench [--what step|gfwd] [--res 32] [--cbase N] [--cmax N]
 *                  [--batch N] [--threads N] [--steps N] [--warmup N]
 *                  [--p 0.2] [--reg]
 *
 * --batch 0 (the default) takes the preset's batch. Every step (warm-up
 * ones excepted) is timed; the line gives the median as s/kimg (seconds
 * per thousand real images shown: step time / batch * 1000) or images/s.
 * --reg runs the regularizers as training does (path length every 4th
 * step, R1 every 16th, the preset's weights) and takes the mean step over
 * --steps (a multiple of 16 covers whole cycles) instead of the median. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "gf/clock.h"
#include "gf/sg2_gan.h"

static int usage(void) {
  fprintf(stderr, "usage: sg2_step_bench [--what step|gfwd] [--res N] [--cbase N] "
                  "[--cmax N] [--batch N] [--threads N] [--steps N] [--warmup N] "
                  "[--p P] [--reg]\n");
  return 2;
}

typedef struct opts {
  const char *what;
  int res, cbase, cmax, batch, threads, steps, warmup;
  float p;
  int reg; /* --reg: Greg and Dreg at their lazy intervals (real training) */
} opts;

/* Times n calls of one step or one G forward; t[i] their seconds. */
typedef struct bench {
  gf_ctx ctx;
  gf_sg2_config cfg;
  gf_sg2_gan gan;   /* --what step */
  gf_sg2_net g;     /* --what gfwd */
  gf_tensor real, z;
} bench;

static int run_one(bench *b, const opts *o, int64_t i, gf_err *err) {
  if (!strcmp(o->what, "step")) {
    gf_sg2_step_in in = {.real = &b->real};
    return gf_sg2_gan_step(&b->gan, &b->ctx, &in, 11, NULL, err) != GF_OK;
  }
  gf_tensor ws, img;
  float *zp = b->z.data;
  for (int64_t k = 0; k < gf_tensor_numel(&b->z); k++)
    zp[k] = (float)((k * 7919 + i * 104729) % 2001) / 1000.0f - 1.0f;
  return gf_sg2_mapping_fwd(&b->g, &b->ctx, &b->z, NULL, 1.0f, 0, GF_MODE_INFER, &ws,
                            err) != GF_OK ||
         gf_sg2_synthesis_fwd(&b->g, &b->ctx, &ws, GF_SG2_NOISE_CONST, 0, 0, 0,
                              GF_MODE_INFER, &img, err) != GF_OK;
}

static int setup(bench *b, const opts *o, gf_err *err) {
  gf_sg2_recipe rc;
  gf_ctx_config cc = {.backend = GF_BACKEND_CPU, .nthreads = o->threads};
  if (gf_ctx_init(&b->ctx, &cc, err) != GF_OK) return 1;
  if (gf_sg2_config_preset(&b->cfg, &rc, GF_SG2_AUTO, o->res, 3, 0, 1, err) != GF_OK)
    return 1;
  if (o->cbase > 0) b->cfg.channel_base = o->cbase;
  if (o->cmax > 0) b->cfg.channel_max = o->cmax;
  if (gf_sg2_config_validate(&b->cfg, err) != GF_OK) return 1;
  int batch = o->batch > 0 ? o->batch : rc.batch;
  if (!strcmp(o->what, "step")) {
    gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(&rc);
    if (!o->reg) { /* Greg and Dreg off */
      hp.pl_weight = 0;
      hp.r1_gamma = 0;
    }
    hp.augment = true;
    hp.ada_p0 = o->p;
    hp.ada_target = 0; /* p fixed */
    if (gf_sg2_gan_init(&b->gan, &b->ctx, &b->cfg, &hp, batch, batch, 1, err) != GF_OK)
      return 1;
    int64_t rs[4] = {batch, 3, o->res, o->res};
    if (gf_tensor_init(&b->real, GF_F32, GF_DEV_CPU, 4, rs, err) != GF_OK) return 1;
    float *rp = b->real.data;
    for (int64_t i = 0; i < gf_tensor_numel(&b->real); i++)
      rp[i] = (float)((i * 7919) % 255) / 127.5f - 1.0f;
    return 0;
  }
  if (gf_sg2_net_init(&b->g, &b->ctx, &b->cfg, GF_SG2_G, batch, false, err) != GF_OK ||
      gf_sg2_init_params(&b->g, 1, err) != GF_OK)
    return 1;
  int64_t zs[2] = {batch, b->cfg.z_dim};
  return gf_tensor_init(&b->z, GF_F32, GF_DEV_CPU, 2, zs, err) != GF_OK;
}

int main(int argc, char **argv) {
  opts o = {"step", 32, 0, 0, 0, 2, 5, 1, 0.2f, 0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reg")) {
      o.reg = 1;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char *k = argv[i], *v = argv[++i];
    if (!strcmp(k, "--what")) o.what = v;
    else if (!strcmp(k, "--res")) o.res = atoi(v);
    else if (!strcmp(k, "--cbase")) o.cbase = atoi(v);
    else if (!strcmp(k, "--cmax")) o.cmax = atoi(v);
    else if (!strcmp(k, "--batch")) o.batch = atoi(v);
    else if (!strcmp(k, "--threads")) o.threads = atoi(v);
    else if (!strcmp(k, "--steps")) o.steps = atoi(v);
    else if (!strcmp(k, "--warmup")) o.warmup = atoi(v);
    else if (!strcmp(k, "--p")) o.p = (float)atof(v);
    else return usage();
  }
  if ((strcmp(o.what, "step") && strcmp(o.what, "gfwd")) || o.threads < 1 || o.steps < 1 ||
      o.warmup < 0 || o.batch < 0 || o.cbase < 0 || o.cmax < 0 || !(o.p >= 0 && o.p <= 1))
    return usage();
  static bench b; /* zeroed: every free below accepts a never-built member */
  gf_err err = {0};
  int rc = setup(&b, &o, &err);
  double *t = calloc((size_t)o.steps, sizeof *t);
  if (!t) rc = 1;
  for (int64_t i = -o.warmup; rc == 0 && i < o.steps; i++) {
    double t0 = gf_mono_s();
    rc = run_one(&b, &o, i, &err);
    if (i >= 0) t[i] = gf_mono_s() - t0;
  }
  if (rc) {
    fprintf(stderr, "sg2_step_bench: %s\n", err.msg[0] ? err.msg : "out of memory");
  } else {
    qsort(t, (size_t)o.steps, sizeof *t, gf_bench_cmp_double);
    double med = t[o.steps / 2];
    if (o.reg) { /* the steps differ (Greg every 4th, Dreg every 16th): the
                    mean over whole cycles is what training pays */
      double sum = 0;
      for (int i = 0; i < o.steps; i++) sum += t[i];
      med = sum / o.steps;
    }
    int batch = !strcmp(o.what, "step") ? b.gan.batch : b.g.max_batch;
    printf("ganflow %s%s res=%d cbase=%d cmax=%d batch=%d threads=%d steps=%d: ", o.what,
           o.reg ? "+reg" : "", o.res, b.cfg.channel_base, b.cfg.channel_max, batch,
           o.threads, o.steps);
    if (!strcmp(o.what, "step"))
      printf("s_per_kimg=%.2f ", med / batch * 1e3);
    else
      printf("img_per_s=%.2f ", batch / med);
    printf("median_ms=%.1f min_ms=%.1f max_ms=%.1f vmhwm_mib=%.1f\n", 1e3 * med,
           1e3 * t[0], 1e3 * t[o.steps - 1], gf_bench_vm_hwm_kib() / 1024.0);
  }
  free(t);
  gf_tensor_free(&b.real);
  gf_tensor_free(&b.z);
  gf_sg2_gan_free(&b.gan);
  gf_sg2_net_free(&b.g);
  gf_ctx_free(&b.ctx);
  return rc;
}
