/* test_generator.c - the generator of a verified model directory
 * (gf/generator.h), on its own: load with several executors, latents as a
 * pure function of the seed, executors that agree bit for bit, the
 * reference count and the resident gauge, PNG output with the image's
 * geometry, and the refusals (a corrupted weight file, a missing
 * directory) that leave nothing allocated; batch invariance (rows run
 * in any pass have the bytes of the row alone); one copy of the weights
 * and of their laid-out forms whatever the number of executors, in every
 * precision. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/generator.h"
#include "gf/mlmodel.h"
#include "model_dir_util.h"

static void write_model(const char *dir, gf_arch arch, uint64_t seed) {
  gf_err err = {0};
  int rc = tu_write_model_dir(dir, arch, seed, 0, &err);
  REQUIRE(rc == 0);
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static void test_load_and_generate(const char *dir) {
  atomic_long resident;
  atomic_init(&resident, 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 2, 1, 4, &resident, GF_GEN_FP32};
  gf_generator *m = NULL;
  gf_err err = {0};
  gf_status st = gf_generator_load(dir, "fashion", "3", &o, &m, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(m != NULL);
  CHECK_STR_EQ(m->name, "fashion");
  CHECK_STR_EQ(m->version, "3");
  CHECK_INT_EQ(m->n_exec, 2);
  CHECK_INT_EQ(atomic_load(&m->refs), 1);
  CHECK_INT_EQ(atomic_load(&resident), 1);
  int zd = m->cfg.z_dim;
  size_t numel = m->image_numel;
  CHECK_INT_EQ(numel, (size_t)m->cfg.image_channels * m->cfg.image_height *
                          m->cfg.image_width);

  /* Latents: a pure function of the seed; per-image mode gives image k
   * the first sample of seeds[k]. */
  float *z1 = malloc(4 * (size_t)zd * sizeof *z1);
  float *z2 = malloc(4 * (size_t)zd * sizeof *z2);
  float *zk = malloc((size_t)zd * sizeof *zk);
  REQUIRE(z1 && z2 && zk);
  uint64_t seeds[4] = {7, 8, 9, 10};
  CHECK(gf_generator_latents(m, seeds, 4, 0, z1, &err) == GF_OK);
  CHECK(gf_generator_latents(m, seeds, 4, 0, z2, &err) == GF_OK);
  CHECK(memcmp(z1, z2, 4 * (size_t)zd * sizeof *z1) == 0);
  CHECK(gf_generator_latents(m, seeds, 4, 1, z2, &err) == GF_OK);
  for (int k = 0; k < 4; k++) {
    CHECK(gf_generator_latents(m, &seeds[k], 1, 0, zk, &err) == GF_OK);
    CHECKF(memcmp(zk, z2 + (size_t)k * zd, (size_t)zd * sizeof *zk) == 0,
           "per-image latent %d", k);
  }
  CHECK(memcmp(z1 + zd, z2 + zd, (size_t)zd * sizeof *z1) != 0);

  /* Both executors give the same bytes; images lie in [-1, 1]. */
  float *a = malloc(4 * numel * sizeof *a), *b = malloc(4 * numel * sizeof *b);
  REQUIRE(a && b);
  CHECKF(gf_generator_run(m, 0, z1, 4, a, &err) == GF_OK, "%s", err.msg);
  CHECKF(gf_generator_run(m, 1, z1, 4, b, &err) == GF_OK, "%s", err.msg);
  CHECK(memcmp(a, b, 4 * numel * sizeof *a) == 0);
  int in_range = 1, varied = 0;
  for (size_t i = 0; i < 4 * numel; i++) {
    if (!(a[i] >= -1.0f && a[i] <= 1.0f)) in_range = 0;
    if (a[i] != a[0]) varied = 1;
  }
  CHECK(in_range);
  CHECK(varied);
  CHECK_INT_EQ(gf_generator_run(m, 0, z1, 0, a, &err), GF_EINVAL);
  CHECK_INT_EQ(gf_generator_latents(m, seeds, 0, 0, z1, &err), GF_EINVAL);

  /* Batch invariance: the load probe found it, and 7 rows (passes of 4,
   * 2 and 1 on a max_batch of 4) are the bytes of each row alone, on
   * either executor. */
  CHECKF(m->batch_invariant == 1, "not batch-invariant: %s",
         m->invariance_note);
  CHECK_INT_EQ(gf_generator_passes(m, 7), 3);
  CHECK_INT_EQ(gf_generator_passes(m, 4), 1);
  CHECK_INT_EQ(gf_generator_passes(m, 9), 3);
  float *z7 = malloc(7 * (size_t)zd * sizeof *z7);
  float *i7 = malloc(7 * numel * sizeof *i7), *i1 = malloc(numel * sizeof *i1);
  REQUIRE(z7 && i7 && i1);
  CHECK(gf_generator_latents(m, seeds, 7, 0, z7, &err) == GF_OK);
  for (int ex = 0; ex < 2; ex++) {
    CHECKF(gf_generator_run(m, ex, z7, 7, i7, &err) == GF_OK, "%s", err.msg);
    for (int k = 0; k < 7; k++) {
      CHECK(gf_generator_run(m, 1 - ex, z7 + (size_t)k * zd, 1, i1, &err) ==
            GF_OK);
      CHECKF(memcmp(i1, i7 + (size_t)k * numel, numel * sizeof *i1) == 0,
             "row %d of 7 on executor %d differs from the row alone", k, ex);
    }
  }
  free(z7);
  free(i7);
  free(i1);

  /* PNG: one bare image, or a grid with a 2-pixel border. */
  uint8_t *png = NULL;
  size_t len = 0;
  CHECK(gf_generator_png(m, a, 1, &png, &len, &err) == GF_OK);
  REQUIRE(png && len > 24);
  CHECK(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
  CHECK_INT_EQ(be32(png + 16), m->cfg.image_width);
  CHECK_INT_EQ(be32(png + 20), m->cfg.image_height);
  free(png);
  png = NULL;
  CHECK(gf_generator_png(m, a, 4, &png, &len, &err) == GF_OK);
  REQUIRE(png && len > 24);
  CHECK(be32(png + 16) > (uint32_t)m->cfg.image_width);
  free(png);

  /* References: the last unref frees and drops the resident gauge. */
  gf_generator_ref(m);
  CHECK_INT_EQ(atomic_load(&m->refs), 2);
  gf_generator_unref(m);
  CHECK_INT_EQ(atomic_load(&resident), 1);
  gf_generator_unref(m);
  CHECK_INT_EQ(atomic_load(&resident), 0);
  gf_generator_unref(NULL);
  free(a);
  free(b);
  free(z1);
  free(z2);
  free(zk);
}

static void test_refusals(const char *dir, const char *missing) {
  atomic_long resident;
  atomic_init(&resident, 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 1, 2, &resident, GF_GEN_FP32};
  gf_generator *m = (gf_generator *)1;
  gf_err err = {0};
  CHECK(gf_generator_load(missing, "x", "1", &o, &m, &err) != GF_OK);
  CHECK(m == NULL);
  CHECK(strstr(err.msg, "MLmodel") != NULL || strstr(err.msg, missing) != NULL);

  /* One flipped byte in the weights: refused by digest, nothing kept. */
  REQUIRE(tu_write_model_dir(dir, GF_ARCH_MLP, 11, 1, &err) == 0);
  m = (gf_generator *)1;
  CHECK_INT_EQ(gf_generator_load(dir, "x", "1", &o, &m, &err), GF_EINTEGRITY);
  CHECK(m == NULL);
  CHECK_INT_EQ(atomic_load(&resident), 0);

  gf_generator_opts bad = {GF_BACKEND_CPU, 0, 0, 1, 2, NULL, GF_GEN_FP32};
  CHECK_INT_EQ(gf_generator_load(dir, "x", "1", &bad, &m, &err), GF_EINVAL);

  /* threads 0 is every online core (gf_ctx_config's meaning: ganflow
   * eval's default); a negative count is refused */
  REQUIRE(tu_write_model_dir(dir, GF_ARCH_MLP, 11, 0, &err) == 0);
  gf_generator_opts all = {GF_BACKEND_CPU, 0, 1, 0, 2, NULL, GF_GEN_FP32};
  m = NULL;
  CHECKF(gf_generator_load(dir, "x", "1", &all, &m, &err) == GF_OK,
         "threads 0: %s", err.msg);
  gf_generator_unref(m);
  all.threads = -1;
  m = (gf_generator *)1;
  CHECK_INT_EQ(gf_generator_load(dir, "x", "1", &all, &m, &err), GF_EINVAL);
  CHECK(m == NULL);
}

/* --precision bf16 and int8: where the processor has it, a dcgan loads,
 * its rows are batch-invariant, and its images lie within 0.05 of fp32's
 * (bf16: 8-bit mantissas in every convolution; int8: u8 activations after
 * the first layer, s8 weights per channel); elsewhere the load is refused
 * with the reason and leaves nothing allocated. */
static void test_precision(const char *dir, gf_gen_precision prec) {
  atomic_long resident;
  atomic_init(&resident, 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 2, 1, 4, &resident, prec};
  gf_generator_opts f = o;
  f.precision = GF_GEN_FP32;
  gf_generator *m = NULL, *m32 = NULL;
  gf_err err = {0};
  gf_ctx c;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&c, &cc, &err) == GF_OK);
  gf_status have = prec == GF_GEN_BF16 ? gf_ctx_bf16_check(&c, &err)
                                       : gf_ctx_int8_check(&c, &err);
  gf_ctx_free(&c);
  const char *name = gf_gen_precision_name(prec);
  gf_status st = gf_generator_load(dir, "d", "1", &o, &m, &err);
  if (have != GF_OK) {
    printf("%s refused here, as it must be: %s\n", name, err.msg);
    CHECK_INT_EQ(st, GF_EUNSUPPORTED);
    CHECK(m == NULL);
    CHECK(strstr(err.msg, prec == GF_GEN_BF16 ? "AVX512_BF16"
                                              : "AVX512_VNNI") != NULL);
    CHECK_INT_EQ(atomic_load(&resident), 0);
    return;
  }
  REQUIRE(st == GF_OK);
  REQUIRE(gf_generator_load(dir, "d", "1", &f, &m32, &err) == GF_OK);
  CHECK_INT_EQ(m->precision, prec);
  CHECKF(m->batch_invariant == 1, "%s not batch-invariant: %s", name,
         m->invariance_note);
  size_t numel = m->image_numel, zd = (size_t)m->cfg.z_dim;
  float *z = malloc(6 * zd * sizeof *z), *a = malloc(6 * numel * sizeof *a);
  float *b = malloc(6 * numel * sizeof *b), *one = malloc(numel * sizeof *one);
  REQUIRE(z && a && b && one);
  uint64_t seed = 5;
  CHECK(gf_generator_latents(m, &seed, 6, 0, z, &err) == GF_OK);
  CHECK(gf_generator_run(m, 0, z, 6, a, &err) == GF_OK);
  CHECK(gf_generator_run(m32, 0, z, 6, b, &err) == GF_OK);
  double worst = 0;
  int differ = 0;
  for (size_t i = 0; i < 6 * numel; i++) {
    double d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (d > worst) worst = d;
    if (a[i] != b[i]) differ = 1;
  }
  printf("%s against fp32, 6 dcgan images: max |diff| %.4f\n", name, worst);
  CHECKF(worst <= 0.05, "%s images %.4f from fp32", name, worst);
  CHECK(differ); /* it did run in the lower precision */
  CHECK(gf_generator_run(m, 1, z + 5 * zd, 1, one, &err) == GF_OK);
  CHECK(memcmp(one, a + 5 * numel, numel * sizeof *one) == 0);
  free(z);
  free(a);
  free(b);
  free(one);
  gf_generator_unref(m);
  gf_generator_unref(m32);
  CHECK_INT_EQ(atomic_load(&resident), 0);
}

/* A class-conditional generator (num_classes 3): labels per row, mixed
 * classes in one pass with the bytes of each row alone, classes that
 * differ, the class spec and index rules, refusals; bf16 / int8 where the
 * CPU has them, against fp32. */
static void test_conditional(const char *dir, gf_arch arch,
                             const char *uncond_dir) {
  gf_model_config cfg;
  gf_model_config_default(&cfg, arch);
  cfg.num_classes = 3;
  gf_err err = {0};
  REQUIRE(tu_write_model_dir_cfg(dir, &cfg, 21, 0, &err) == 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 2, 1, 4, NULL, GF_GEN_FP32};
  gf_generator *m = NULL;
  gf_status st = gf_generator_load(dir, "cond", "1", &o, &m, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(m != NULL);
  CHECK_INT_EQ(m->num_classes, 3);
  CHECKF(m->batch_invariant == 1, "not batch-invariant: %s",
         m->invariance_note);
  size_t numel = m->image_numel, zd = (size_t)m->cfg.z_dim;
  float *z = malloc(4 * zd * sizeof *z), *a = malloc(4 * numel * sizeof *a);
  float *b = malloc(4 * numel * sizeof *b), *one = malloc(numel * sizeof *one);
  REQUIRE(z && a && b && one);
  uint64_t seed = 9;
  CHECK(gf_generator_latents(m, &seed, 4, 0, z, &err) == GF_OK);
  /* no labels, bad labels */
  CHECK_INT_EQ(gf_generator_run(m, 0, z, 4, a, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "class-conditional") != NULL);
  int32_t bad[4] = {0, 3, 0, 0}, neg[4] = {0, 0, -1, 0};
  CHECK_INT_EQ(gf_generator_run_labeled(m, 0, z, bad, 4, a, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "0..2") != NULL);
  CHECK_INT_EQ(gf_generator_run_labeled(m, 0, z, neg, 4, a, &err), GF_EINVAL);
  /* mixed classes in one pass: each row's bytes as alone, on the other
   * executor; deterministic */
  int32_t lab[4] = {0, 1, 2, 1};
  CHECKF(gf_generator_run_labeled(m, 0, z, lab, 4, a, &err) == GF_OK, "%s",
         err.msg);
  CHECK(gf_generator_run_labeled(m, 1, z, lab, 4, b, &err) == GF_OK);
  CHECK(memcmp(a, b, 4 * numel * sizeof *a) == 0);
  for (int k = 0; k < 4; k++) {
    CHECK(gf_generator_run_labeled(m, 1, z + (size_t)k * zd, &lab[k], 1, one,
                                   &err) == GF_OK);
    CHECKF(memcmp(one, a + (size_t)k * numel, numel * sizeof *one) == 0,
           "row %d of a mixed pass differs from the row alone", k);
  }
  /* the same latent in each class: three different images */
  for (int c = 0; c < 3; c++) {
    int32_t l1 = c;
    CHECK(gf_generator_run_labeled(m, 0, z, &l1, 1, b + (size_t)c * numel,
                                   &err) == GF_OK);
  }
  CHECK(memcmp(b, b + numel, numel * sizeof *b) != 0);
  CHECK(memcmp(b, b + 2 * numel, numel * sizeof *b) != 0);
  CHECK(memcmp(b + numel, b + 2 * numel, numel * sizeof *b) != 0);
  /* class text and specs */
  int k = -1;
  CHECK(gf_generator_class_index(m, "2", &k, &err) == GF_OK && k == 2);
  CHECK(gf_generator_class_index(m, "0", &k, &err) == GF_OK && k == 0);
  const char *badc[] = {"3", "02", "-1", "+1", "x", "", " 1", "1 ",
                        "99999999999999999999"};
  for (size_t i = 0; i < sizeof badc / sizeof *badc; i++) {
    CHECKF(gf_generator_class_index(m, badc[i], &k, &err) != GF_OK,
           "accepted class '%s'", badc[i]);
    CHECK(strstr(err.msg, "0..2") != NULL);
  }
  int32_t got[4];
  CHECK(gf_generator_class_labels(m, "1", 4, got, &err) == GF_OK);
  CHECK(got[0] == 1 && got[1] == 1 && got[2] == 1 && got[3] == 1);
  CHECK(gf_generator_class_labels(m, "0,2", 4, got, &err) == GF_OK);
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == 2 && got[3] == 2);
  CHECK(gf_generator_class_labels(m, "2,1,0,1", 4, got, &err) == GF_OK);
  CHECK(got[0] == 2 && got[1] == 1 && got[2] == 0 && got[3] == 1);
  const char *bads[] = {"0,1,2", "0,,1", ",", "0,1,2,0,1", "0,3", ""};
  for (size_t i = 0; i < sizeof bads / sizeof *bads; i++)
    CHECKF(gf_generator_class_labels(m, bads[i], 4, got, &err) != GF_OK,
           "accepted spec '%s'", bads[i]);
  /* an unconditional model takes no class */
  gf_generator *u = NULL;
  REQUIRE(gf_generator_load(uncond_dir, "u", "1", &o, &u, &err) == GF_OK);
  CHECK_INT_EQ(u->num_classes, 0);
  CHECK_INT_EQ(gf_generator_class_index(u, "0", &k, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "not class-conditional") != NULL);
  float *uz = malloc((size_t)u->cfg.z_dim * sizeof *uz);
  float *ui = malloc(u->image_numel * sizeof *ui);
  REQUIRE(uz && ui);
  CHECK(gf_generator_latents(u, &seed, 1, 0, uz, &err) == GF_OK);
  CHECK_INT_EQ(gf_generator_run_labeled(u, 0, uz, lab, 1, ui, &err),
               GF_EINVAL);
  CHECK(gf_generator_run_labeled(u, 0, uz, NULL, 1, ui, &err) == GF_OK);
  free(uz);
  free(ui);
  gf_generator_unref(u);
  /* lower precisions where the CPU has them: the same classes, near fp32,
   * still batch-invariant */
  for (int p = GF_GEN_BF16; p <= GF_GEN_INT8; p++) {
    gf_generator_opts lo = o;
    lo.precision = (gf_gen_precision)p;
    gf_generator *lm = NULL;
    st = gf_generator_load(dir, "cond", "1", &lo, &lm, &err);
    if (st == GF_EUNSUPPORTED) {
      printf("conditional %s refused here: %s\n",
             gf_gen_precision_name(lo.precision), err.msg);
      continue;
    }
    CHECKF(st == GF_OK, "%s: %s", gf_gen_precision_name(lo.precision),
           err.msg);
    if (st != GF_OK) continue;
    CHECKF(lm->batch_invariant == 1, "%s: %s",
           gf_gen_precision_name(lo.precision), lm->invariance_note);
    CHECK(gf_generator_run_labeled(lm, 0, z, lab, 4, b, &err) == GF_OK);
    double worst = 0;
    for (size_t i = 0; i < 4 * numel; i++) {
      double d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
      if (d > worst) worst = d;
    }
    printf("conditional %s %s against fp32: max |diff| %.4f\n",
           gf_arch_name(arch), gf_gen_precision_name(lo.precision), worst);
    CHECKF(worst <= 0.05, "%s %.4f from fp32",
           gf_gen_precision_name(lo.precision), worst);
    gf_generator_unref(lm);
  }
  free(z);
  free(a);
  free(b);
  free(one);
  gf_generator_unref(m);
}

/* Class names from the model directory: a name or an index, the names
 * in the refusal, lists of names. */
static void test_class_names(const char *dir) {
  gf_model_config cfg;
  gf_model_config_default(&cfg, GF_ARCH_MLP);
  cfg.num_classes = 3;
  const char *names[] = {"T-shirt/top", "Ankle boot", "2"};
  gf_err err = {0};
  REQUIRE(tu_write_model_dir_names(dir, &cfg, 31, 0, names, &err) == 0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 1, 4, NULL, GF_GEN_FP32};
  gf_generator *m = NULL;
  REQUIRE(gf_generator_load(dir, "named", "1", &o, &m, &err) == GF_OK);
  CHECK_INT_EQ(m->n_class_names, 3);
  CHECK_STR_EQ(m->class_names[1], "Ankle boot");
  int k = -1;
  CHECK(gf_generator_class_index(m, "Ankle boot", &k, &err) == GF_OK &&
        k == 1);
  CHECK(gf_generator_class_index(m, "0", &k, &err) == GF_OK && k == 0);
  /* a name wins over the index of the same spelling */
  CHECK(gf_generator_class_index(m, "2", &k, &err) == GF_OK && k == 2);
  CHECK(gf_generator_class_index(m, "1", &k, &err) == GF_OK && k == 1);
  CHECK(gf_generator_class_index(m, "ankle boot", &k, &err) != GF_OK);
  CHECK(gf_generator_class_index(m, "Sandal", &k, &err) != GF_OK);
  CHECKF(strstr(err.msg, "0..2") && strstr(err.msg, "T-shirt/top"), "%s",
         err.msg);
  int32_t got[4];
  CHECK(gf_generator_class_labels(m, "Ankle boot,T-shirt/top", 4, got,
                                  &err) == GF_OK);
  CHECK(got[0] == 1 && got[1] == 1 && got[2] == 0 && got[3] == 0);
  gf_generator_unref(m);
}

/* The executors share one copy of the weights (their G tensors are views
 * of m->weights') and one of their laid-out forms (the store holds as
 * many bytes with 3 executors as with 1), each adding only its
 * activations; 3 executors give the bytes 1 gives. */
static void test_shared_weights(const char *dir, gf_gen_precision prec) {
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 1, 4, NULL, prec};
  gf_ctx c;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_err err = {0};
  REQUIRE(gf_ctx_init(&c, &cc, &err) == GF_OK);
  gf_status have = prec == GF_GEN_BF16   ? gf_ctx_bf16_check(&c, &err)
                   : prec == GF_GEN_INT8 ? gf_ctx_int8_check(&c, &err)
                                         : GF_OK;
  gf_ctx_free(&c);
  if (have != GF_OK) {
    printf("shared weights, %s: not on this processor (%s)\n",
           gf_gen_precision_name(prec), err.msg);
    return;
  }
  gf_generator *one = NULL, *three = NULL;
  CHECKF(gf_generator_load(dir, "m", "1", &o, &one, &err) == GF_OK, "%s",
         err.msg);
  o.n_exec = 3;
  CHECKF(gf_generator_load(dir, "m", "1", &o, &three, &err) == GF_OK, "%s",
         err.msg);
  REQUIRE(one && three);
  const char *pn = gf_gen_precision_name(prec);
  for (int k = 0; k < 3; k++) {
    const gf_generator_exec *e = &three->exec[k];
    CHECK(e->ctx.frozen_store == three->frozen);
    int views = e->g.n_tensors == three->weights.n_tensors;
    for (int i = 0; views && i < e->g.n_tensors; i++)
      views = e->g.tensors[i].value.data == three->weights.tensors[i].value.data;
    CHECKF(views, "%s: executor %d holds weights of its own", pn, k);
    CHECK_INT_EQ(gf_net_arena_bytes(&e->g), gf_net_arena_bytes(&one->exec[0].g));
  }
  CHECK(three->weights.max_batch == 0 && three->weights.acts.cap == 0);
  size_t b1 = gf_frozen_store_bytes(one->frozen);
  size_t b3 = gf_frozen_store_bytes(three->frozen);
  CHECKF(b1 == b3, "%s: laid-out weights of %zu bytes with 1 executor, %zu "
         "with 3", pn, b1, b3);
  printf("shared weights, %s %s: %zu laid-out bytes\n",
         gf_arch_name(one->cfg.architecture), pn, b1);
  /* the linear layers' transposed weights always; convolutions' unless
   * they run on plain layouts (GF_ONEDNN_LAYOUT=plain) */
  const char *lay = getenv("GF_ONEDNN_LAYOUT");
  if (one->cfg.architecture == GF_ARCH_MLP || !lay || strcmp(lay, "plain"))
    CHECKF(b1 > 0, "%s: the executors laid out nothing in the store", pn);
  int zd = one->cfg.z_dim;
  size_t numel = one->image_numel;
  float *z = malloc(7 * (size_t)zd * sizeof *z);
  float *a = malloc(7 * numel * sizeof *a), *b = malloc(7 * numel * sizeof *b);
  REQUIRE(z && a && b);
  uint64_t seed = 21;
  REQUIRE(gf_generator_latents(one, &seed, 7, 0, z, &err) == GF_OK);
  CHECK(gf_generator_run(one, 0, z, 7, a, &err) == GF_OK);
  for (int k = 0; k < 3; k++) {
    CHECK(gf_generator_run(three, k, z, 7, b, &err) == GF_OK);
    CHECKF(memcmp(a, b, 7 * numel * sizeof *a) == 0, "%s: executor %d of 3 "
           "differs from the lone executor", pn, k);
  }
  CHECK_INT_EQ(three->batch_invariant, one->batch_invariant);
  free(z);
  free(a);
  free(b);
  gf_generator_unref(one);
  gf_generator_unref(three);
}

int main(void) {
  char root[256], dir[320], dcgan[320], missing[320];
  tu_mkdtemp(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/mlp", root);
  snprintf(dcgan, sizeof dcgan, "%s/dcgan", root);
  snprintf(missing, sizeof missing, "%s/none", root);
  write_model(dir, GF_ARCH_MLP, 11);
  test_load_and_generate(dir);
  write_model(dcgan, GF_ARCH_DCGAN, 12);
  test_load_and_generate(dcgan);
  test_precision(dcgan, GF_GEN_BF16);
  test_precision(dcgan, GF_GEN_INT8);
  test_shared_weights(dir, GF_GEN_FP32);
  for (int p = GF_GEN_FP32; p <= GF_GEN_INT8; p++)
    test_shared_weights(dcgan, (gf_gen_precision)p);
  /* the resnet (32x32x3, width 16): residual adds, upsampling and 1x1
   * shortcuts keep every row's bytes at every pass size */
  char resnet[320];
  snprintf(resnet, sizeof resnet, "%s/resnet", root);
  gf_model_config rc;
  gf_model_config_default(&rc, GF_ARCH_RESNET);
  rc.ngf = rc.ndf = 16;
  gf_err rerr = {0};
  REQUIRE(tu_write_model_dir_cfg(resnet, &rc, 13, 0, &rerr) == 0);
  test_load_and_generate(resnet);
  test_refusals(dir, missing);
  char cdir[320];
  snprintf(cdir, sizeof cdir, "%s/cond_mlp", root);
  test_conditional(cdir, GF_ARCH_MLP, dcgan);
  snprintf(cdir, sizeof cdir, "%s/cond_dcgan", root);
  test_conditional(cdir, GF_ARCH_DCGAN, dcgan);
  snprintf(cdir, sizeof cdir, "%s/cond_named", root);
  test_class_names(cdir);
  tu_rmdir(root);
  return check_report();
}
