/* test_generator_cuda.c - a class-conditional generator on the CUDA backend
 * (label gpu; exits 77, skipped, where the build has no CUDA backend or the
 * machine no usable GPU, naming the reason). For an mlp and a dcgan with 3
 * classes, loaded on the CPU and on CUDA (2 executors, passes of up to 4):
 *   - the CUDA rows of a mixed-class pass within 2e-3 of the CPU's;
 *   - the same call again, and on the other executor, within 1e-6 (cuDNN's
 *     convolutions may change the last bits from call to call: the
 *     unconditional dcgan's do too, which the test prints beside, with the
 *     unconditional generator's batch-invariance verdict);
 *   - where the load found the CUDA generator batch-invariant, each row of a
 *     mixed pass has the bytes of the row alone;
 *   - the same latent in three classes gives three different images;
 *   - no labels, or a label out of range: refused, the executor still
 *     usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "file_util.h"
#include "gf/generator.h"
#include "model_dir_util.h"

static void run_arch(const char *dir, gf_arch arch) {
  gf_model_config cfg;
  gf_model_config_default(&cfg, arch);
  cfg.num_classes = 3;
  gf_err err = {0};
  REQUIRE(tu_write_model_dir_cfg(dir, &cfg, 41, 0, &err) == 0);
  gf_generator_opts oc = {GF_BACKEND_CPU, 0, 1, 2, 4, NULL, GF_GEN_FP32};
  gf_generator_opts og = {GF_BACKEND_CUDA, 0, 2, 1, 4, NULL, GF_GEN_FP32};
  gf_generator *mc = NULL, *mg = NULL;
  REQUIRE(gf_generator_load(dir, "c", "1", &oc, &mc, &err) == GF_OK);
  gf_status st = gf_generator_load(dir, "c", "1", &og, &mg, &err);
  CHECKF(st == GF_OK, "CUDA load: %s", err.msg);
  if (st != GF_OK) {
    gf_generator_unref(mc);
    return;
  }
  printf("%s: CUDA batch_invariant %d %s\n", gf_arch_name(arch),
         mg->batch_invariant, mg->invariance_note);
  size_t numel = mg->image_numel, zd = (size_t)mg->cfg.z_dim;
  float *z = malloc(4 * zd * sizeof *z), *a = malloc(4 * numel * sizeof *a);
  float *b = malloc(4 * numel * sizeof *b), *c = malloc(4 * numel * sizeof *c);
  REQUIRE(z && a && b && c);
  uint64_t seed = 3;
  REQUIRE(gf_generator_latents(mg, &seed, 4, 0, z, &err) == GF_OK);
  int32_t lab[4] = {2, 0, 1, 2};
  CHECKF(gf_generator_run_labeled(mg, 0, z, lab, 4, a, &err) == GF_OK, "%s",
         err.msg);
  CHECK(gf_generator_run_labeled(mc, 0, z, lab, 4, c, &err) == GF_OK);
  double worst = 0;
  for (size_t i = 0; i < 4 * numel; i++) {
    double d = fabs((double)a[i] - (double)c[i]);
    if (!(d <= worst)) worst = d;
  }
  printf("%s: CUDA against CPU, 4 mixed-class images: max |diff| %.2e\n",
         gf_arch_name(arch), worst);
  CHECKF(worst <= 2e-3, "CUDA %.2e from the CPU", worst);
  for (int rep = 0; rep < 2; rep++) {
    CHECK(gf_generator_run_labeled(mg, 1 - rep, z, lab, 4, b, &err) ==
          GF_OK);
    double d2 = 0;
    size_t nd = 0;
    for (size_t i = 0; i < 4 * numel; i++) {
      double d = fabs((double)a[i] - (double)b[i]);
      nd += a[i] != b[i];
      if (!(d <= d2)) d2 = d;
    }
    printf("%s: again on executor %d: %zu values differ, max %.2e\n",
           gf_arch_name(arch), 1 - rep, nd, d2);
    /* cuDNN's convolutions may differ in the last bits from call to call
     * (the unconditional dcgan does too, printed below) */
    CHECKF(d2 <= 1e-6, "a repeated call %.2e away", d2);
  }
  {
    /* the same checks on an unconditional generator, for comparison */
    gf_model_config u;
    gf_model_config_default(&u, arch);
    char ud[400];
    snprintf(ud, sizeof ud, "%s-u", dir);
    REQUIRE(tu_write_model_dir_cfg(ud, &u, 41, 0, &err) == 0);
    gf_generator *mu = NULL;
    REQUIRE(gf_generator_load(ud, "u", "1", &og, &mu, &err) == GF_OK);
    float *ua = malloc(4 * mu->image_numel * sizeof *ua);
    float *ub = malloc(4 * mu->image_numel * sizeof *ub);
    float *uz = malloc(4 * (size_t)mu->cfg.z_dim * sizeof *uz);
    REQUIRE(ua && ub && uz);
    REQUIRE(gf_generator_latents(mu, &seed, 4, 0, uz, &err) == GF_OK);
    CHECK(gf_generator_run(mu, 0, uz, 4, ua, &err) == GF_OK);
    CHECK(gf_generator_run(mu, 0, uz, 4, ub, &err) == GF_OK);
    printf("%s unconditional: batch_invariant %d %s; twice: %s\n",
           gf_arch_name(arch), mu->batch_invariant, mu->invariance_note,
           memcmp(ua, ub, 4 * mu->image_numel * sizeof *ua) ? "differ"
                                                           : "same");
    free(ua);
    free(ub);
    free(uz);
    gf_generator_unref(mu);
  }
  if (mg->batch_invariant)
    for (int k = 0; k < 4; k++) {
      CHECK(gf_generator_run_labeled(mg, k & 1, z + (size_t)k * zd, &lab[k],
                                     1, b, &err) == GF_OK);
      CHECKF(memcmp(b, a + (size_t)k * numel, numel * sizeof *b) == 0,
             "row %d alone differs from the mixed pass", k);
    }
  for (int k = 0; k < 3; k++) {
    int32_t l = k;
    CHECK(gf_generator_run_labeled(mg, 0, z, &l, 1, b + (size_t)k * numel,
                                   &err) == GF_OK);
  }
  CHECK(memcmp(b, b + numel, numel * sizeof *b) != 0);
  CHECK(memcmp(b + numel, b + 2 * numel, numel * sizeof *b) != 0);
  CHECK_INT_EQ(gf_generator_run(mg, 0, z, 4, b, &err), GF_EINVAL);
  int32_t bad[4] = {0, 3, 0, 0};
  CHECK_INT_EQ(gf_generator_run_labeled(mg, 0, z, bad, 4, b, &err),
               GF_EINVAL);
  CHECK(gf_generator_run_labeled(mg, 0, z, lab, 4, b, &err) == GF_OK);
  worst = 0;
  for (size_t i = 0; i < 4 * numel; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= worst)) worst = d;
  }
  CHECKF(worst <= 1e-6, "after the refusals: %.2e away", worst);
  free(z);
  free(a);
  free(b);
  free(c);
  gf_generator_unref(mg);
  gf_generator_unref(mc);
}

int main(void) {
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CUDA, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_err err = {0};
  if (gf_ctx_init(&ctx, &cc, &err) != GF_OK) {
    printf("SKIP: no CUDA context: %s\n", err.msg);
    return 77;
  }
  gf_ctx_free(&ctx);
  char root[256], dir[320];
  tu_mkdtemp(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/mlp", root);
  run_arch(dir, GF_ARCH_MLP);
  snprintf(dir, sizeof dir, "%s/dcgan", root);
  run_arch(dir, GF_ARCH_DCGAN);
  tu_rmdir(root);
  return check_report();
}
