/* test_sg2_generator.c - an official snapshot imported as a ganflow
 * stylegan2 model directory (gf/sg2_import.h) and served by
 * gf/generator.h: G_ema's images for the goldens' z (psi 1 and 0.7, noise
 * const) against the official code's (tests/model/golden/
 * stylegan_tiny*.safetensors, 1e-3 max abs allowed; the worst printed),
 * unconditional and conditional; batch invariance (the load probe, and
 * rows run alone against the golden batch); psi, trunc_cutoff, noise and
 * style mixing change the bytes, the same request gives the same bytes;
 * style refusals, on stylegan2 and on a dcgan; the config's JSON and
 * MLmodel round trips, and a config.json written before stylegan2 still
 * reads; import refusals (a truncated pickle, a foreign kwarg).
 *
 * Usage: test_sg2_generator DATA_DIR GOLDEN_DIR */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "file_util.h"
#include "gf/generator.h"
#include "gf/model_config.h"
#include "gf/safetensors.h"
#include "gf/sg2_import.h"
#include "gf/sg2_snapshot.h"
#include "model_dir_util.h"

#define TOL 1e-3

static const float *golden(const gf_st_file *f, const char *name, size_t numel) {
  const gf_st_tensor *t = gf_st_find(f, name);
  REQUIRE(t != NULL && t->dtype == GF_ST_F32 && t->numel == numel);
  return t->data;
}

static double max_abs(const float *a, const float *b, size_t n) {
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= w)) w = d; /* NaN wins */
  }
  return w;
}

static gf_generator *import_and_load(const char *pkl, const char *dir,
                                     int max_batch) {
  gf_sg2_snapshot s;
  gf_err err = {0};
  gf_status st = gf_sg2_snapshot_read(pkl, &s, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(st == GF_OK);
  gf_mlmodel_info info = {"model", NULL, "2.17.0", "test", NULL};
  gf_model_config cfg;
  st = gf_sg2_import_dir(&s, dir, &info, NULL, 0, &cfg, &err);
  gf_sg2_snapshot_free(&s);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(st == GF_OK);
  CHECK(cfg.architecture == GF_ARCH_STYLEGAN2);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 2, 1, max_batch, NULL,
                         GF_GEN_FP32};
  gf_generator *m = NULL;
  st = gf_generator_load(dir, "tiny", "1", &o, &m, &err);
  CHECKF(st == GF_OK, "load: %s", err.msg);
  REQUIRE(m != NULL);
  CHECKF(m->batch_invariant, "%s", m->invariance_note);
  return m;
}

/* The goldens' 4 rows, psi 1 and 0.7, as one batch and one by one. */
static void check_golden(const char *data, const char *gold, const char *fx) {
  char pkl[4096], gpath[4096], dir[4096];
  snprintf(pkl, sizeof pkl, "%s/sg2_%s.pkl", data, fx);
  snprintf(gpath, sizeof gpath, "%s/stylegan_%s.safetensors", gold, fx);
  tu_mkdtemp(dir, sizeof dir);
  gf_generator *m = import_and_load(pkl, dir, 4);
  gf_st_file f;
  gf_err err = {0};
  REQUIRE(gf_st_open(&f, gpath, 0, &err) == GF_OK);
  size_t zd = (size_t)m->cfg.z_dim, inum = m->image_numel;
  const float *z = golden(&f, "z", 4 * zd);
  int32_t lab[4], *labels = NULL;
  if (m->num_classes > 0) {
    const float *c = golden(&f, "c", 4 * (size_t)m->num_classes);
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < m->num_classes; k++)
        if (c[i * m->num_classes + k] == 1.0f) lab[i] = k;
    labels = lab;
  }
  float *img = malloc(4 * inum * sizeof *img), *one = malloc(inum * sizeof *one);
  REQUIRE(img && one);
  const float psis[2] = {1.0f, 0.7f};
  const char *names[2] = {"img_psi1", "img_psi07"};
  for (int p = 0; p < 2; p++) {
    gf_gen_style s;
    gf_gen_style_default(&s);
    s.psi = psis[p];
    gf_status st = gf_generator_run_styled(m, 0, z, labels, &s, 4, img, &err);
    CHECKF(st == GF_OK, "%s", err.msg);
    double w = max_abs(img, golden(&f, names[p], 4 * inum), 4 * inum);
    printf("%s %s: max abs difference to the official image %.3g\n", fx,
           names[p], w);
    CHECKF(w <= TOL, "%s %s: %g", fx, names[p], w);
    for (int i = 0; i < 4; i++) { /* batch invariance: each row alone */
      st = gf_generator_run_styled(m, 1, z + i * zd, labels ? labels + i : NULL,
                                   &s, 1, one, &err);
      CHECKF(st == GF_OK && memcmp(one, img + i * inum, inum * sizeof *one) == 0,
             "%s %s row %d alone differs", fx, names[p], i);
    }
  }
  gf_st_file_free(&f);
  free(img);
  free(one);
  gf_generator_unref(m);
  tu_rmdir(dir);
}

static void run(gf_generator *m, const float *z, const gf_gen_style *s,
                int n, float *out) {
  gf_err err = {0};
  CHECKF(gf_generator_run_styled(m, 0, z, NULL, s, n, out, &err) == GF_OK,
         "%s", err.msg);
}

/* Options change the bytes; the same request gives the same bytes, in any
 * pass size; refusals name the option. */
static void check_options(const char *data) {
  char pkl[4096], dir[4096];
  snprintf(pkl, sizeof pkl, "%s/sg2_tiny.pkl", data);
  tu_mkdtemp(dir, sizeof dir);
  gf_generator *m = import_and_load(pkl, dir, 2);
  size_t zd = (size_t)m->cfg.z_dim, inum = m->image_numel;
  float *z = malloc(3 * zd * sizeof *z), *mz = malloc(3 * zd * sizeof *mz);
  float *base = malloc(3 * inum * sizeof *base), *a = malloc(3 * inum * sizeof *a),
        *b = malloc(3 * inum * sizeof *b);
  REQUIRE(z && mz && base && a && b);
  uint64_t seed = 5, mseed = 6;
  gf_err err = {0};
  REQUIRE(gf_generator_latents(m, &seed, 3, 0, z, &err) == GF_OK);
  REQUIRE(gf_generator_latents(m, &mseed, 3, 0, mz, &err) == GF_OK);
  gf_gen_style d;
  gf_gen_style_default(&d);
  run(m, z, &d, 3, base);
  size_t nb = 3 * inum * sizeof *a;
  gf_gen_style v[5];
  for (int i = 0; i < 5; i++) v[i] = d;
  v[0].psi = 0.7f;
  v[1].psi = 0.5f, v[1].trunc_cutoff = 2;
  v[2].noise = GF_SG2_NOISE_RANDOM, v[2].noise_seed = 5;
  v[3].noise = GF_SG2_NOISE_NONE;
  v[4].mix_z = mz, v[4].mix_from = 4;
  for (int i = 0; i < 5; i++) {
    run(m, z, &v[i], 3, a);
    CHECKF(memcmp(a, base, nb) != 0, "option %d leaves the bytes", i);
    run(m, z, &v[i], 3, b); /* 3 rows: passes of 2 + 1 */
    CHECKF(memcmp(a, b, nb) == 0, "option %d: the same request differs", i);
    for (int r = 0; r < 3; r++) { /* row r alone: its own sample */
      gf_gen_style one = v[i];
      one.noise_sample0 = r;
      if (one.mix_z) one.mix_z = mz + r * zd;
      run(m, z + r * zd, &one, 1, b);
      CHECKF(memcmp(a + r * inum, b, inum * sizeof *a) == 0,
             "option %d row %d alone differs", i, r);
    }
  }
  /* cutoff 2 of psi 0.5 is not psi 0.5 everywhere */
  gf_gen_style all = d;
  all.psi = 0.5f;
  run(m, z, &all, 3, a);
  run(m, z, &v[1], 3, b);
  CHECK(memcmp(a, b, nb) != 0);
  /* another noise seed, other bytes */
  gf_gen_style n2 = v[2];
  n2.noise_seed = 6;
  run(m, z, &v[2], 3, a);
  run(m, z, &n2, 3, b);
  CHECK(memcmp(a, b, nb) != 0);

  gf_gen_style bad = d;
  bad.psi = NAN;
  CHECK(gf_generator_run_styled(m, 0, z, NULL, &bad, 1, a, &err) == GF_EINVAL &&
        strstr(err.msg, "psi") != NULL);
  bad = d, bad.trunc_cutoff = 99;
  CHECK(gf_generator_run_styled(m, 0, z, NULL, &bad, 1, a, &err) == GF_EINVAL &&
        strstr(err.msg, "trunc_cutoff") != NULL);
  bad = d, bad.mix_z = mz, bad.mix_from = 0;
  CHECK(gf_generator_run_styled(m, 0, z, NULL, &bad, 1, a, &err) == GF_EINVAL &&
        strstr(err.msg, "mix_from") != NULL);
  int32_t lab = 0;
  CHECK(gf_generator_run_styled(m, 0, z, &lab, &v[0], 1, a, &err) == GF_EINVAL);
  free(z), free(mz), free(base), free(a), free(b);
  gf_generator_unref(m);
  tu_rmdir(dir);

  /* a dcgan honours none of them */
  tu_mkdtemp(dir, sizeof dir);
  REQUIRE(tu_write_model_dir(dir, GF_ARCH_DCGAN, 1, 0, &err) == 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 1, 1, NULL, GF_GEN_FP32};
  REQUIRE(gf_generator_load(dir, "dc", "1", &o, &m, &err) == GF_OK);
  float *zz = calloc((size_t)m->cfg.z_dim, sizeof *zz);
  float *im = malloc(m->image_numel * sizeof *im);
  REQUIRE(zz && im);
  gf_gen_style p = d;
  p.psi = 0.7f;
  CHECK(gf_generator_run_styled(m, 0, zz, NULL, &p, 1, im, &err) == GF_EINVAL &&
        strstr(err.msg, "psi") != NULL && strstr(err.msg, "dcgan") != NULL);
  p = d, p.noise = GF_SG2_NOISE_RANDOM;
  CHECK(gf_generator_run_styled(m, 0, zz, NULL, &p, 1, im, &err) == GF_EINVAL &&
        strstr(err.msg, "noise") != NULL);
  CHECKF(gf_generator_run_styled(m, 0, zz, NULL, &d, 1, im, &err) == GF_OK,
         "%s", err.msg);
  free(zz), free(im);
  gf_generator_unref(m);
  tu_rmdir(dir);
}

/* config.json: stylegan2 round trip, required fields named, and a file
 * written before stylegan2 existed reads as it did. */
static void check_config(void) {
  gf_model_config c, back;
  gf_err err = {0};
  gf_model_config_default(&c, GF_ARCH_STYLEGAN2);
  char *json = NULL;
  REQUIRE(gf_model_config_to_json(&c, &json, &err) == GF_OK);
  CHECK(strstr(json, "\"channel_base\"") && strstr(json, "\"stylegan2\""));
  CHECK(gf_model_config_from_json(json, strlen(json), &back, &err) == GF_OK &&
        gf_model_config_equal(&c, &back));
  char *cut = strstr(json, "\"w_dim\"");
  REQUIRE(cut != NULL);
  memcpy(cut, "\"x_dim\"", 7);
  CHECK(gf_model_config_from_json(json, strlen(json), &back, &err) == GF_EINVAL &&
        strstr(err.msg, "w_dim") != NULL);
  free(json);
  c.image_height = c.image_width = 48;
  CHECK(gf_model_config_validate(&c, &err) == GF_EINVAL &&
        strstr(err.msg, "image_height") != NULL);
  static const char old[] =
      "{\"format_version\": 1, \"architecture\": \"dcgan\", \"z_dim\": 100,"
      " \"image_height\": 64, \"image_width\": 64, \"image_channels\": 3,"
      " \"num_classes\": 0, \"ngf\": 64, \"ndf\": 64,"
      " \"pixel_normalization\": \"tanh_-1_1\"}";
  gf_model_config dc;
  gf_model_config_default(&dc, GF_ARCH_DCGAN);
  CHECKF(gf_model_config_from_json(old, strlen(old), &back, &err) == GF_OK,
         "%s", err.msg);
  CHECK(gf_model_config_equal(&dc, &back));
  REQUIRE(gf_model_config_to_json_compact(&dc, &json, &err) == GF_OK);
  CHECK(strstr(json, "w_dim") == NULL); /* nothing new in old configs */
  free(json);
  gf_model_config dc2 = dc;
  dc2.sg2.w_dim = 8;
  CHECK(gf_model_config_validate(&dc2, &err) == GF_EINVAL);
}

/* Refusals: nothing written. */
static void check_refusals(const char *data) {
  char pkl[4096], dir[4096], sub[4200];
  snprintf(pkl, sizeof pkl, "%s/sg2_tiny.pkl", data);
  gf_sg2_snapshot s;
  gf_err err = {0};
  REQUIRE(gf_sg2_snapshot_read(pkl, &s, &err) == GF_OK);
  tu_mkdtemp(dir, sizeof dir);
  snprintf(sub, sizeof sub, "%s/out", dir);
  gf_mlmodel_info info = {"model", NULL, "2.17.0", "test", NULL};
  /* a kwarg ganflow does not know */
  gf_sg2_snap_kv kv = {"synthesis_kwargs.architecture_x", "'orig'"};
  gf_sg2_snap_kv *saved = s.G_ema.extra;
  size_t saved_n = s.G_ema.n_extra;
  s.G_ema.extra = &kv;
  s.G_ema.n_extra = 1;
  CHECK(gf_sg2_import_dir(&s, sub, &info, NULL, 0, NULL, &err) ==
            GF_EUNSUPPORTED && strstr(err.msg, "architecture_x") != NULL);
  s.G_ema.extra = saved;
  s.G_ema.n_extra = saved_n;
  /* another synthesis architecture */
  memcpy(s.G_ema.architecture, "resnet", 7);
  CHECK(gf_sg2_import_dir(&s, sub, &info, NULL, 0, NULL, &err) ==
            GF_EUNSUPPORTED && strstr(err.msg, "resnet") != NULL);
  memcpy(s.G_ema.architecture, "skip", 5);
  /* a tensor the net lacks */
  char *nm = s.G_ema.tensors[0].name, fake[] = "synthesis.b4.extra";
  s.G_ema.tensors[0].name = fake;
  CHECK(gf_sg2_import_dir(&s, sub, &info, NULL, 0, NULL, &err) ==
        GF_EUNSUPPORTED);
  s.G_ema.tensors[0].name = nm;
  CHECK(access(sub, F_OK) != 0); /* nothing written */
  gf_sg2_snapshot_free(&s);
  tu_rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DATA_DIR GOLDEN_DIR\n", argv[0]);
    return 2;
  }
  check_config();
  check_golden(argv[1], argv[2], "tiny");
  check_golden(argv[1], argv[2], "tiny_cond");
  check_options(argv[1]);
  check_refusals(argv[1]);
  return check_report();
}
