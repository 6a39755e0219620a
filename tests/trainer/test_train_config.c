/* test_train_config.c - ganflow-train's command line (train_config.c):
 * every flag parsed into the config, defaults, each bad value a usage
 * error naming its flag, --help, --device cuda refused, the config
 * flattened to MLflow params, and the executable's exit codes (0 for
 * --help, 2 for a bad flag). Unit: no server, no data. */
#include <stdarg.h>
#include <sys/wait.h>

#include "check.h"
#include "gf/comm.h"
#include "gf/ctx.h"
#include "gf/energy.h"
#include "gf/flags.h"
#include "gf/ckpt_meta.h"
#include "gf/gan.h"
#include "gf/ops.h"
#include "gf/train.h"

#define MAX_ARGS 64

/* Parses a NULL-terminated list of arguments (argv[0] added). */
static gf_parse_result parse(gf_train_config *cfg, gf_err *err, ...) {
  char *argv[MAX_ARGS];
  int argc = 0;
  argv[argc++] = "ganflow-train";
  va_list ap;
  va_start(ap, err);
  for (char *a; (a = va_arg(ap, char *)) != NULL && argc < MAX_ARGS - 1;)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  memset(err, 0, sizeof *err);
  return gf_train_parse_args(cfg, argc, argv, err);
}

/* A bad command line whose message must name `flag`. */
#define BAD(flag, ...)                                                      \
  do {                                                                      \
    gf_train_config c_;                                                     \
    gf_err e_;                                                              \
    gf_parse_result r_ = parse(&c_, &e_, "--data", "/d", __VA_ARGS__, NULL); \
    CHECKF(r_ == GF_PARSE_USAGE, "%s accepted", flag);                      \
    CHECKF(strstr(e_.msg, flag) != NULL, "message '%s' lacks %s", e_.msg,   \
           flag);                                                           \
  } while (0)

static void test_defaults(void) {
  gf_train_config c;
  gf_err e;
  unsetenv("MLFLOW_EXPERIMENT_NAME");
  REQUIRE(parse(&c, &e, "--data", "/data/fm", NULL) == GF_PARSE_OK);
  CHECK_STR_EQ(c.data, "/data/fm");
  CHECK(c.model == GF_ARCH_DCGAN);
  CHECK_INT_EQ(c.image_size, 28);
  CHECK_INT_EQ(c.channels, 1);
  CHECK_INT_EQ(c.z_dim, 100);
  CHECK_INT_EQ(c.batch, 64);
  CHECK_NEAR(c.lr_g, 2e-4, 0);
  CHECK_NEAR(c.lr_d, 2e-4, 0);
  CHECK_STR_EQ(c.device, "cpu");
  CHECK_INT_EQ(c.checkpoint_every, 500);
  CHECK_INT_EQ(c.keep, 3);
  CHECK(c.resume == GF_RESUME_AUTO);
  CHECK_INT_EQ(c.sample_every, 500);
  CHECK_INT_EQ(c.eval_every, 1000);
  CHECK_INT_EQ(c.log_every, 10);
  CHECK_STR_EQ(c.experiment, "ganflow");
  CHECK_STR_EQ(c.register_model, "ganflow-dcgan");
  CHECK_STR_EQ(c.checkpoint_dir, "checkpoints/ganflow/default");
  CHECK(!c.deterministic);

  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "mlp", NULL) ==
          GF_PARSE_OK);
  CHECK_INT_EQ(c.z_dim, 50);
  CHECK_STR_EQ(c.register_model, "ganflow-mlp");

  setenv("MLFLOW_EXPERIMENT_NAME", "from env/x", 1);
  REQUIRE(parse(&c, &e, "--data", "/d", "--run-name", "r1", NULL) ==
          GF_PARSE_OK);
  CHECK_STR_EQ(c.experiment, "from env/x");
  CHECK_STR_EQ(c.checkpoint_dir, "checkpoints/from_env_x/r1");
  unsetenv("MLFLOW_EXPERIMENT_NAME");
}

static void test_every_flag(void) {
  gf_train_config c;
  gf_err e;
  gf_parse_result r = parse(
      &c, &e, "--data", "cifar10:/c", "--model", "dcgan", "--steps", "123",
      "--batch", "16", "--lr-g", "1e-3", "--lr-d", "0.0005", "--z-dim", "64",
      "--seed", "18446744073709551615", "--device", "cpu", "--threads", "3",
      "--checkpoint-dir", "/tmp/ck", "--checkpoint-every", "7", "--keep", "5",
      "--resume", "never", "--sample-every", "11", "--eval-every", "13",
      "--experiment", "exp", "--run-name", "rn", "--register-model", "reg",
      "--alias", "prod", "--image-size", "32", "--channels", "3",
      "--log-every", "2", "--deterministic", "--eval-images", "500",
      "--eval-metrics", "kid,swd,fid", "--fid-images", "250", NULL);
  CHECKF(r == GF_PARSE_OK, "%s", e.msg);
  CHECK_STR_EQ(c.data, "cifar10:/c");
  CHECK(c.model == GF_ARCH_DCGAN);
  CHECK_INT_EQ(c.steps, 123);
  CHECK_INT_EQ(c.batch, 16);
  CHECK_NEAR(c.lr_g, 1e-3, 0);
  CHECK_NEAR(c.lr_d, 5e-4, 0);
  CHECK_INT_EQ(c.z_dim, 64);
  CHECK(c.seed == UINT64_MAX);
  CHECK_INT_EQ(c.threads, 3);
  CHECK_STR_EQ(c.checkpoint_dir, "/tmp/ck");
  CHECK_INT_EQ(c.checkpoint_every, 7);
  CHECK_INT_EQ(c.keep, 5);
  CHECK(c.resume == GF_RESUME_NEVER);
  CHECK_INT_EQ(c.sample_every, 11);
  CHECK_INT_EQ(c.eval_every, 13);
  CHECK_STR_EQ(c.experiment, "exp");
  CHECK_STR_EQ(c.run_name, "rn");
  CHECK_STR_EQ(c.register_model, "reg");
  CHECK_STR_EQ(c.alias, "prod");
  CHECK_INT_EQ(c.image_size, 32);
  CHECK_INT_EQ(c.channels, 3);
  CHECK_INT_EQ(c.log_every, 2);
  CHECK(c.deterministic);
  CHECK_INT_EQ(c.eval_images, 500);
  CHECK(c.eval_metrics == (GF_EVAL_SWD | GF_EVAL_FID | GF_EVAL_KID));
  CHECK_INT_EQ(c.fid_images, 250);
  REQUIRE(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_OK);
  CHECK(c.eval_metrics == GF_EVAL_SWD);
  CHECK_INT_EQ(c.fid_images, 0);
  REQUIRE(parse(&c, &e, "--data", "/d", "--eval-metrics", "fid", NULL) ==
          GF_PARSE_OK);
  CHECK(c.eval_metrics == GF_EVAL_FID);

  REQUIRE(parse(&c, &e, "--data", "/d", "--resume", "/x/ckpt.safetensors",
                NULL) == GF_PARSE_OK);
  CHECK(c.resume == GF_RESUME_PATH);
  CHECK_STR_EQ(c.resume_path, "/x/ckpt.safetensors");
  REQUIRE(parse(&c, &e, "--data", "/d", "--register-model", "", NULL) ==
          GF_PARSE_OK);
  CHECK_STR_EQ(c.register_model, "");
  REQUIRE(parse(&c, &e, "--data", "/d", "--allreduce", "hierarchical",
                "--sync-bn", "--grad-accum", "4", "--bucket-kb", "256",
                "--comm-timeout", "30", "--check-every", "0", NULL) ==
          GF_PARSE_OK);
  CHECK_INT_EQ(c.allreduce, GF_ALLREDUCE_HIER);
  CHECK(c.sync_bn);
  CHECK_INT_EQ(c.grad_accum, 4);
  CHECK_INT_EQ(c.bucket_kb, 256);
  CHECK(c.comm_timeout == 30);
  CHECK_INT_EQ(c.check_every, 0);
  REQUIRE(parse(&c, &e, "--data", "/d", "--exact-reduce", "--exact-shards",
                "4", "--batch", "16", NULL) == GF_PARSE_OK);
  CHECK(c.exact_reduce);
  CHECK_INT_EQ(c.exact_shards, 4);
  /* --name=value works as getopt_long allows. */
  REQUIRE(parse(&c, &e, "--data=/e", "--steps=9", NULL) == GF_PARSE_OK);
  CHECK_STR_EQ(c.data, "/e");
  CHECK_INT_EQ(c.steps, 9);
}

static void test_bad_values(void) {
  BAD("--model", "--model", "stylegan");
  BAD("--steps", "--steps", "0");
  BAD("--steps", "--steps", "12x");
  BAD("--steps", "--steps", "-5");
  BAD("--batch", "--batch", "1");
  BAD("--batch", "--batch", "abc");
  BAD("--lr-g", "--lr-g", "0");
  BAD("--lr-g", "--lr-g", "nan");
  BAD("--lr-d", "--lr-d", "fast");
  BAD("--z-dim", "--z-dim", "0");
  BAD("--seed", "--seed", "-1");
  BAD("--seed", "--seed", "99999999999999999999999");
  BAD("--device", "--device", "gpu");
  BAD("--device", "--device", "cuda:x");
  if (gf_cuda_device_check(0, NULL) != GF_OK) /* no GPU (or no CUDA build) */
    BAD("--device", "--device", "cuda");
  BAD("--device", "--device", "cuda:4096");
  BAD("--threads", "--threads", "-2");
  BAD("--checkpoint-dir", "--checkpoint-dir", "");
  BAD("--checkpoint-every", "--checkpoint-every", "-1");
  BAD("--keep", "--keep", "0");
  BAD("--resume", "--resume", "");
  BAD("--sample-every", "--sample-every", "x");
  BAD("--eval-every", "--eval-every", "1.5");
  BAD("--eval-metrics", "--eval-metrics", "");
  BAD("--eval-metrics", "--eval-metrics", "fid,");
  BAD("--eval-metrics", "--eval-metrics", "is");
  BAD("--eval-metrics", "--eval-metrics", "fidkid");
  BAD("--fid-images", "--fid-images", "1");
  BAD("--fid-images", "--fid-images", "100001");
  BAD("--experiment", "--experiment", "");
  BAD("--alias", "--alias", "latest");
  BAD("--alias", "--alias", "v3");
  BAD("--alias", "--alias", "a/b");
  BAD("--alias", "--register-model", "", "--alias", "prod");
  BAD("--image-size", "--image-size", "40");
  BAD("--image-size", "--image-size", "big");
  BAD("--channels", "--channels", "2");
  BAD("--log-every", "--log-every", "0");
  BAD("--no-such-flag", "--no-such-flag", "1");
  /* Data parallelism. */
  BAD("--allreduce", "--allreduce", "butterfly");
  BAD("--grad-accum", "--grad-accum", "0");
  BAD("--exact-shards", "--exact-shards", "0");
  BAD("--exact-shards", "--exact-reduce", "--exact-shards", "6");
  BAD("--exact-reduce", "--exact-reduce", "--batch", "12");
  BAD("--exact-reduce", "--exact-reduce", "--sync-bn");
  BAD("--exact-reduce", "--exact-reduce", "--grad-accum", "2");
  BAD("--bucket-kb", "--bucket-kb", "1");
  BAD("--comm-timeout", "--comm-timeout", "0.5");
  BAD("--comm-timeout", "--comm-timeout", "soon");
  BAD("--check-every", "--check-every", "-1");
  BAD("--steps", "--steps");
  /* --data is required. */
  gf_train_config c;
  gf_err e;
  CHECK(parse(&c, &e, "--steps", "5", NULL) == GF_PARSE_USAGE);
  CHECK(strstr(e.msg, "--data") != NULL);
  CHECK(parse(&c, &e, "--data", "/d", "stray", NULL) == GF_PARSE_USAGE);
  CHECK(strstr(e.msg, "stray") != NULL);
  /* cuda says why when there is no GPU (or no CUDA backend). */
  if (gf_cuda_device_check(0, NULL) != GF_OK) {
    CHECK(parse(&c, &e, "--data", "/d", "--device", "cuda:0", NULL) ==
          GF_PARSE_USAGE);
    CHECK(strstr(e.msg, "CUDA") != NULL);
  }
}

static void test_help(void) {
  gf_train_config c;
  gf_err e;
  CHECK(parse(&c, &e, "--help", NULL) == GF_PARSE_HELP);
  CHECK(parse(&c, &e, "--steps", "3", "--help", NULL) == GF_PARSE_HELP);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  REQUIRE(f);
  gf_train_usage(f, "ganflow-train");
  fclose(f);
  static const char *const flags[] = {
    "--data", "--model", "--steps", "--batch", "--lr-g", "--lr-d", "--z-dim",
    "--seed", "--device", "--threads", "--checkpoint-dir",
    "--checkpoint-every", "--keep", "--resume", "--sample-every",
    "--eval-every", "--eval-metrics", "--fid-images", "--experiment",
    "--run-name", "--register-model",
    "--alias", "--promote-if-better", "--image-size", "--channels", "--log-every", "--deterministic",
    "--allreduce", "--sync-bn", "--grad-accum", "--exact-reduce",
    "--exact-shards", "--bucket-kb", "--comm-timeout", "--check-every",
    "--loss", "--d-steps", "--sn", "--ema-decay", "--ema-rampup",
    "--export-generator", "--mirror", "--r1", "--r1-every", "--diffaug", "--cond",
    "--width", "resnet", "mpirun", "--help", "MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "ganflow sync"};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
    CHECKF(strstr(text, flags[i]) != NULL, "--help lacks %s", flags[i]);
  free(text);
}

static void test_params(void) {
  gf_train_config c;
  gf_err e;
  gf_train_param p[GF_TRAIN_MAX_PARAMS];
  /* with every optional param: the table still fits */
  REQUIRE(parse(&c, &e, "--data", "/fm", "--eval-metrics", "swd,fid,kid",
                NULL) == GF_PARSE_OK);
  size_t n = gf_train_config_params(&c, p, GF_TRAIN_MAX_PARAMS);
  CHECK(n < GF_TRAIN_MAX_PARAMS);
  bool em = false, fi = false;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(p[i].key, "eval_metrics"))
      em = !strcmp(p[i].value, "swd,fid,kid");
    if (!strcmp(p[i].key, "fid_images")) fi = !strcmp(p[i].value, "2000");
  }
  CHECK(em && fi);
  REQUIRE(parse(&c, &e, "--data", "/fm", "--model", "mlp", "--lr-g", "2e-4",
                "--seed", "7", "--steps", "60", NULL) == GF_PARSE_OK);
  n = gf_train_config_params(&c, p, GF_TRAIN_MAX_PARAMS);
  CHECK(n >= 19 && n <= GF_TRAIN_MAX_PARAMS);
  const char *want[][2] = {{"data", "/fm"},     {"model", "mlp"},
                           {"z_dim", "50"},     {"steps", "60"},
                           {"batch", "64"},     {"lr_g", "0.0002"},
                           {"lr_d", "0.0002"},  {"seed", "7"},
                           {"device", "cpu"},   {"image_size", "28"},
                           {"channels", "1"},   {"log_every", "10"},
                           {"world_size", "1"}, {"deterministic", "false"}};
  for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
    const char *got = NULL;
    for (size_t i = 0; i < n; i++)
      if (strcmp(p[i].key, want[w][0]) == 0) got = p[i].value;
    CHECKF(got && strcmp(got, want[w][1]) == 0, "param %s = %s, want %s",
           want[w][0], got ? got : "(missing)", want[w][1]);
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      CHECKF(strcmp(p[i].key, p[j].key) != 0, "duplicate param %s", p[i].key);
  /* A truncated table stays within n_max. */
  CHECK_INT_EQ(gf_train_config_params(&c, p, 3), 3);
}

static void test_promote_flag(void) {
  gf_train_config c;
  gf_err e;
  REQUIRE(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_OK);
  CHECK_STR_EQ(c.promote_alias, "");
  REQUIRE(parse(&c, &e, "--data", "/d", "--promote-if-better", "production",
                NULL) == GF_PARSE_OK);
  CHECK_STR_EQ(c.promote_alias, "production");
  CHECK_STR_EQ(c.promote_metric, "swd/avg");
  CHECK(!c.promote_max);
  REQUIRE(parse(&c, &e, "--data", "/d", "--alias", "candidate",
                "--promote-if-better", "prod:d/real:max", NULL) ==
          GF_PARSE_OK);
  CHECK_STR_EQ(c.promote_alias, "prod");
  CHECK_STR_EQ(c.promote_metric, "d/real");
  CHECK(c.promote_max);
  REQUIRE(parse(&c, &e, "--data", "/d", "--promote-if-better", "p:swd/avg:min",
                NULL) == GF_PARSE_OK);
  CHECK_STR_EQ(c.promote_metric, "swd/avg");
  CHECK(!c.promote_max);
  BAD("--promote-if-better", "--promote-if-better", "");
  BAD("--promote-if-better", "--promote-if-better", ":swd/avg");
  BAD("--promote-if-better", "--promote-if-better", "latest");
  BAD("--promote-if-better", "--promote-if-better", "p:a..b");
  BAD("--promote-if-better", "--promote-if-better", "p::max");
  BAD("--promote-if-better", "--register-model", "", "--promote-if-better",
      "p");
  BAD("--promote-if-better", "--alias", "prod", "--promote-if-better",
      "prod:swd/avg");
}

/* The executable's exit codes. */
static int run_bin(const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", GF_TRAIN_BIN, args);
  int rc = system(cmd);
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static void test_exit_codes(void) {
  CHECK_INT_EQ(run_bin("--help"), 0);
  CHECK_INT_EQ(run_bin("--data /d --batch x"), 2);
  CHECK_INT_EQ(run_bin("--data /d --device cuda"), 2);
  CHECK_INT_EQ(run_bin(""), 2);
  CHECK_INT_EQ(run_bin("--data /d --alias prod --promote-if-better prod"), 2);
}

/* The GAN recipe flags: parsed, defaults, refusals, params and the recipe
 * words checkpoints record. */
static void test_recipe_flags(void) {
  gf_train_config c;
  gf_err e;
  REQUIRE(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_OK);
  CHECK(c.loss == GF_GAN_LOSS_BCE && c.d_steps == 1 && !c.spectral_norm && !c.mirror);
  CHECK(c.ema_decay == 0.0 && c.ema_rampup == 0.05 && !c.export_raw);
  char r[GF_CKPT_RECIPE_MAX + 1];
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECK_STR_EQ(r, "loss=bce,d_steps=1,ema_decay=0,ema_rampup=0,mirror=false,r1=0,r1_every=0,diffaug=none");
  REQUIRE(parse(&c, &e, "--data", "/d", "--loss", "hinge", "--d-steps", "3", "--sn",
                "--ema-decay", "0.999", "--ema-rampup", "0", "--mirror", NULL) == GF_PARSE_OK);
  CHECK(c.loss == GF_GAN_LOSS_HINGE && c.d_steps == 3 && c.spectral_norm && c.mirror);
  CHECK(c.ema_decay == 0.999 && c.ema_rampup == 0.0 && !c.export_raw);
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECK_STR_EQ(r, "loss=hinge,d_steps=3,ema_decay=0.999,ema_rampup=0,mirror=true,r1=0,"
                  "r1_every=0,diffaug=none");
  REQUIRE(parse(&c, &e, "--data", "/d", "--sn", "--r1", "10", "--r1-every", "4", NULL) ==
          GF_PARSE_OK);
  CHECK(c.r1_gamma == 10.0 && c.r1_every == 4);
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECK_STR_EQ(r, "loss=bce,d_steps=1,ema_decay=0,ema_rampup=0,mirror=false,r1=10,r1_every=4,"
                  "diffaug=none");
  REQUIRE(parse(&c, &e, "--data", "/d", "--diffaug", "cutout,color", NULL) == GF_PARSE_OK);
  CHECK(c.diffaug == (GF_AUG_COLOR | GF_AUG_CUTOUT));
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECK(strstr(r, ",diffaug=color,cutout") != NULL);
  REQUIRE(parse(&c, &e, "--data", "/d", "--diffaug", "color,translation,cutout", NULL) ==
          GF_PARSE_OK);
  CHECK(c.diffaug == GF_AUG_ALL);
  REQUIRE(parse(&c, &e, "--data", "/d", "--diffaug", "none", NULL) == GF_PARSE_OK);
  CHECK(c.diffaug == 0);
  BAD("--diffaug", "--diffaug", "flip");
  BAD("--diffaug", "--diffaug", "color,");
  BAD("--diffaug", "--diffaug", "");
  REQUIRE(parse(&c, &e, "--data", "/d", "--cond", NULL) == GF_PARSE_OK);
  CHECK(c.cond);
  gf_train_param cp[GF_TRAIN_MAX_PARAMS];
  size_t cn = gf_train_config_params(&c, cp, GF_TRAIN_MAX_PARAMS);
  bool cond = false;
  for (size_t i = 0; i < cn; i++)
    cond |= !strcmp(cp[i].key, "cond") && !strcmp(cp[i].value, "true");
  CHECK(cond);
  REQUIRE(parse(&c, &e, "--data", "/d", "--cond", "--sn", "--r1", "1", NULL) == GF_PARSE_OK);
  BAD("--cond", "--cond", "--sync-bn");
  /* the residual pair: width, latent default, sizes, R1 (its D has no
   * batch norm) */
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "resnet", "--width", "32", "--image-size",
                "32", "--channels", "3", NULL) == GF_PARSE_OK);
  CHECK(c.model == GF_ARCH_RESNET && c.z_dim == 128 && c.width == 32);
  gf_model_config rm;
  REQUIRE(gf_train_model_config(&c, &rm, &e) == GF_OK);
  CHECK(rm.architecture == GF_ARCH_RESNET && rm.ngf == 32 && rm.ndf == 32);
  gf_train_param rp[GF_TRAIN_MAX_PARAMS];
  size_t rn = gf_train_config_params(&c, rp, GF_TRAIN_MAX_PARAMS);
  bool width = false;
  for (size_t i = 0; i < rn; i++)
    width |= !strcmp(rp[i].key, "width") && !strcmp(rp[i].value, "32");
  CHECK(width);
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "resnet", "--r1", "1", "--cond", NULL) ==
          GF_PARSE_OK);
  BAD("resnet", "--model", "resnet", "--image-size", "48");
  BAD("--width", "--model", "mlp", "--width", "8");
  BAD("--width", "--width", "0");
  BAD("resnet", "--model", "resnet2");
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "mlp", "--r1", "1", NULL) == GF_PARSE_OK);
  CHECK(c.r1_every == 16); /* mlp's D has no batch norm */
  BAD("--r1", "--r1", "1");                        /* dcgan D with batch norm */
  BAD("--r1", "--r1", "-1", "--sn");
  BAD("--r1-every", "--r1-every", "0");
  REQUIRE(parse(&c, &e, "--data", "/d", "--loss", "hinge", "--d-steps", "3", "--sn",
                "--ema-decay", "0.999", "--ema-rampup", "0", "--mirror", NULL) == GF_PARSE_OK);
  gf_model_config m;
  REQUIRE(gf_train_model_config(&c, &m, &e) == GF_OK);
  CHECK(m.spectral_norm == 1);
  gf_train_param p[GF_TRAIN_MAX_PARAMS];
  size_t n = gf_train_config_params(&c, p, GF_TRAIN_MAX_PARAMS);
  CHECK(n < GF_TRAIN_MAX_PARAMS);
  const char *want[][2] = {{"loss", "hinge"},        {"d_steps", "3"},
                           {"spectral_norm", "true"}, {"ema_decay", "0.999"},
                           {"ema_rampup", "0"},       {"export_generator", "ema"},
                           {"mirror", "true"}};
  for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
    bool found = false;
    for (size_t i = 0; i < n; i++)
      found |= !strcmp(p[i].key, want[w][0]) && !strcmp(p[i].value, want[w][1]);
    CHECKF(found, "param %s=%s missing", want[w][0], want[w][1]);
  }
  REQUIRE(parse(&c, &e, "--data", "/d", "--ema-decay", "0.99", "--export-generator", "raw",
                "--loss", "wgan", NULL) == GF_PARSE_OK);
  CHECK(c.export_raw && c.loss == GF_GAN_LOSS_WGAN);
  n = gf_train_config_params(&c, p, GF_TRAIN_MAX_PARAMS);
  bool raw = false;
  for (size_t i = 0; i < n; i++)
    raw |= !strcmp(p[i].key, "export_generator") && !strcmp(p[i].value, "raw");
  CHECK(raw);
  BAD("--loss", "--loss", "lsgan");
  BAD("--d-steps", "--d-steps", "0");
  BAD("--d-steps", "--d-steps", "101");
  BAD("--ema-decay", "--ema-decay", "1");
  BAD("--ema-decay", "--ema-decay", "-0.1");
  BAD("--ema-decay", "--ema-decay", "nan");
  BAD("--ema-rampup", "--ema-rampup", "-1");
  BAD("--export-generator", "--export-generator", "best");
  BAD("--export-generator", "--export-generator", "ema"); /* no EMA */
}

/* The table itself, the defaults the rows give, and the environment
 * variables read as numbers with the flags. */
static void test_table_and_env(void) {
  gf_err e;
  CHECKF(gf_flags_check(gf_train_flags(), &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_flags_check(gf_train_env(), &e) == GF_OK, "%s", e.msg);
  unsetenv("MLFLOW_EXPERIMENT_NAME");
  gf_train_config c;
  gf_train_config_default(&c);
  CHECK(c.comm_timeout == 300 && c.check_every == 100 && c.bucket_kb == 1024);
  CHECK(c.exact_shards == 8 && c.r1_every == 16 && c.ema_rampup == 0.05);
  CHECK(c.price_per_hour == -1 && c.price_unit == GF_PRICE_PER_NODE);
  CHECK(c.market == GF_MARKET_ON_DEMAND && c.cpu_watts_per_core == 10);
  CHECK(c.world_size == 1 && c.grad_accum == 1 && c.d_steps == 1);
  CHECK(c.eval_metrics == GF_EVAL_SWD && c.diffaug == 0 && c.width == 64);
  CHECK(c.allreduce == GF_ALLREDUCE_ENGINE && !c.threads_set && !c.width_set);
  CHECK(c.sys_metrics_interval_s == 0 && c.resume == GF_RESUME_AUTO);
  CHECK(strcmp(c.experiment, "ganflow") == 0 && strcmp(c.device, "cpu") == 0);
  /* --name=VALUE and the flags that record being given */
  REQUIRE(parse(&c, &e, "--data=/d", "--threads=2", "--bucket-kb", "64",
                "--allreduce=tree", "--price-unit", "gpu", NULL) ==
          GF_PARSE_OK);
  CHECK(c.threads_set && c.bucket_set && c.allreduce_set && c.price_unit_set);
  CHECK(!c.register_set && !c.export_set);
  /* numbers from the environment: read with the flags, refused as usage */
  setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.25", 1);
  REQUIRE(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_OK);
  CHECK(c.sys_metrics_interval_s == 0.25);
  setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0", 1);
  CHECK(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL: 0 is outside "
                      "(0, 86400]");
  unsetenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL");
  setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", " 5", 1);
  CHECK(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "MLFLOW_HTTP_REQUEST_TIMEOUT: ' 5' is not a number");
  unsetenv("MLFLOW_HTTP_REQUEST_TIMEOUT");
  /* the one wording for numbers, naming the flag */
  CHECK(parse(&c, &e, "--data", "/d", "--batch", " 2", NULL) ==
        GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "--batch: ' 2' is not an integer");
  CHECK(parse(&c, &e, "--data", "/d", "--batch", "0", NULL) ==
        GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "--batch: 0 is outside [2, 65536]");
  CHECK(parse(&c, &e, "--data", "/d", "--lr-g", "abc", NULL) ==
        GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "--lr-g: 'abc' is not a number");
  CHECK(parse(&c, &e, "--data", "/d", "--lr-g", "2", NULL) == GF_PARSE_USAGE);
  CHECK_STR_EQ(e.msg, "--lr-g: 2 is outside (0, 1]");
}

/* --model stylegan2: the preset fills what was not given, the new rows
 * parse and bound, the recipe and params carry them (the other models'
 * recipes unchanged), and what the run cannot do yet is refused naming
 * the flag. */
static void test_stylegan2_flags(void) {
  gf_train_config c;
  gf_err e;
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "stylegan2", NULL) ==
          GF_PARSE_OK);
  /* auto at 32 px, one rank: train.py's rules (batch 32, lr 0.0025,
   * ema 10 kimg, mapping 2, cbase 16384 -> 32768 * 0.5, cmax 512) */
  CHECK(c.model == GF_ARCH_STYLEGAN2 && c.image_size == 32 && c.z_dim == 512);
  CHECK_INT_EQ(c.batch, 32);
  CHECK(c.lr_g == 0.0025 && c.lr_d == 0.0025);
  CHECK_INT_EQ(c.map_layers, 2);
  CHECK(c.aug == GF_TRAIN_AUG_ADA && c.ada_target == 0.6 && c.ada_kimg == 500);
  /* R1 gamma 0.0002 res^2 / batch, path length 2 */
  CHECK(c.r1_gamma == 0.0064 && c.pl_weight == 2 && c.style_mixing == 0.9);
  CHECK_INT_EQ(c.r1_every, 16);
  char r[GF_CKPT_RECIPE_MAX + 1];
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECKF(strstr(r, ",cfg=auto,map=2,") && strstr(r, "aug=ada,aug_p=0,"
         "ada_target=0.6,ada_kimg=500,pl=2,mix=0.9,ema_kimg="),
         "recipe %s", r);
  gf_train_param ps[GF_TRAIN_MAX_PARAMS];
  size_t np = gf_train_config_params(&c, ps, GF_TRAIN_MAX_PARAMS);
  int found = 0;
  for (size_t i = 0; i < np; i++)
    found += strcmp(ps[i].key, "sg2_cfg") == 0 ||
             strcmp(ps[i].key, "ada_target") == 0 ||
             strcmp(ps[i].key, "ema_kimg") == 0;
  CHECK_INT_EQ(found, 3);
  gf_model_config m;
  REQUIRE(gf_train_model_config(&c, &m, &e) == GF_OK);
  CHECK(m.architecture == GF_ARCH_STYLEGAN2 && m.sg2.mapping_layers == 2);
  CHECK_STR_EQ(c.register_model, "ganflow-stylegan2");
  /* flags over the preset */
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "stylegan2", "--cfg",
                "cifar", "--image-size", "64", "--channels", "3", "--batch",
                "8", "--lr-g", "0.001", "--cbase", "512", "--cmax", "32",
                "--map-layers", "3", "--aug", "fixed", "--aug-p", "0.25",
                "--style-mixing", "0.5", "--ema-kimg", "1", "--z-dim", "8",
                NULL) == GF_PARSE_OK);
  CHECK(c.sg2_cfg == 5 && c.batch == 8 && c.lr_g == 0.001 && c.cbase == 512);
  CHECK(c.cmax == 32 && c.map_layers == 3 && c.aug == GF_TRAIN_AUG_FIXED);
  CHECK(c.aug_p == 0.25 && c.style_mixing == 0.5 && c.ema_kimg == 1);
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECKF(strstr(r, "aug=fixed,aug_p=0.25,pl=0") != NULL, "recipe %s", r);
  CHECK(c.r1_gamma == 0.01 && c.pl_weight == 0); /* cifar's */
  /* the regularizers given over the preset */
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "stylegan2", "--r1", "10",
                "--r1-every", "8", "--pl-weight", "0", NULL) == GF_PARSE_OK);
  CHECK(c.r1_gamma == 10 && c.r1_every == 8 && c.pl_weight == 0);
  /* refusals, each naming its flag */
  BAD("--r1", "--model", "stylegan2", "--r1", "-1");
  BAD("--pl-weight", "--model", "stylegan2", "--pl-weight", "-2");
  BAD("--image-size", "--model", "stylegan2", "--image-size", "28");
  BAD("--image-size", "--model", "stylegan2", "--image-size", "2048");
  BAD("--channels", "--model", "stylegan2", "--channels", "2");
  BAD("--sn", "--model", "stylegan2", "--sn");
  BAD("--ema-decay", "--model", "stylegan2", "--ema-decay", "0.9");
  BAD("--cfg", "--model", "stylegan2", "--cfg", "paper2048");
  BAD("--map-layers", "--model", "stylegan2", "--map-layers", "0");
  BAD("--cmax", "--model", "stylegan2", "--cmax", "5000");
  BAD("--aug", "--model", "stylegan2", "--aug", "bgc");
  BAD("--aug-p", "--model", "stylegan2", "--aug-p", "1.5");
  BAD("--ada-target", "--model", "stylegan2", "--ada-target", "0");
  BAD("--style-mixing", "--model", "stylegan2", "--style-mixing", "-0.1");
  BAD("--sync-bn", "--model", "stylegan2", "--sync-bn"); /* no batch norm */
  /* several ranks: exact mode and rounds (--grad-accum) are its too */
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "stylegan2", "--batch",
                "8", "--exact-reduce", "--exact-shards", "4", NULL) ==
          GF_PARSE_OK);
  CHECK(c.exact_reduce && c.exact_shards == 4);
  REQUIRE(parse(&c, &e, "--data", "/d", "--model", "stylegan2", "--batch",
                "8", "--grad-accum", "2", NULL) == GF_PARSE_OK);
  CHECK_INT_EQ(c.grad_accum, 2);
  BAD("--cfg", "--cfg", "cifar"); /* dcgan */
  BAD("--ema-kimg", "--model", "resnet", "--ema-kimg", "5");
  /* the other models' recipe is as before */
  REQUIRE(parse(&c, &e, "--data", "/d", NULL) == GF_PARSE_OK);
  REQUIRE(gf_train_recipe(&c, r, sizeof r, &e) == GF_OK);
  CHECK_STR_EQ(r, "loss=bce,d_steps=1,ema_decay=0,ema_rampup=0,mirror=false,"
                  "r1=0,r1_every=0,diffaug=none");
}

int main(void) {
  test_table_and_env();
  test_defaults();
  test_every_flag();
  test_bad_values();
  test_help();
  test_params();
  test_promote_flag();
  test_recipe_flags();
  test_stylegan2_flags();
  test_exit_codes();
  return check_report();
}
