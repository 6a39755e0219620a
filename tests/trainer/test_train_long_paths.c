/* test_train_long_paths.c - paths from ganflow-train's flags and
 * environment that are too long for what the trainer builds from them are
 * refused while the configuration is checked (train_config.c), as a usage
 * error (exit 2) naming the flag, before anything is created on disk and
 * before MLflow is contacted:
 *   - a --checkpoint-dir or --data longer than their buffers (4095);
 *   - one that fits its buffer but leaves no room for the names joined to
 *     it ("<dir>/ckpt-<step>.safetensors.tmp.XXXXXX", "<dir>/.model-tmp/
 *     code/ganflow_pyfunc.py.tmp.XXXXXX", "<data>/cifar-10-batches-bin/
 *     data_batch_1.bin"), which used to pass, create the directory, and
 *     fail later (or be cut short);
 *   - an MLFLOW_EXPERIMENT_NAME longer than the experiment field, which
 *     used to be cut short silently.
 * The executable runs in an empty folder with MLFLOW_TRACKING_URI on a
 * closed loopback port: a refusal that came too late would show as a
 * connection error, a created folder, or a signal. The longest accepted
 * paths are found through gf_train_parse_args and checked against the
 * longest names joined to them.
 *
 * Unit: no server, no data. Usage: test_train_long_paths [GANFLOW_TRAIN]
 * (default: the ganflow-train of this build). */
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/train.h"
#include "proc_util.h"

/* The longest names the trainer joins to a checkpoint directory and to a
 * dataset directory ('/' included). --steps is below 2^32: 10 digits, here
 * 13 for margin. */
static const char *const k_ckpt_names[] = {
    "/ckpt-0001099511627776.safetensors.tmp.XXXXXX",
    "/.upload-ckpt-0001099511627776.safetensors",
    "/.upload-samples-1099511627776.webp.tmp.XXXXXX",
    "/.model-tmp/code/ganflow_pyfunc.py.tmp.XXXXXX",
    "/.model-tmp/generator.safetensors.tmp.XXXXXX",
    "/mlflow.outbox",
    "/monitor_step.tmp.XXXXXX",
    "/run_id.tmp.XXXXXX",
};
static const char *const k_data_names[] = {
    "/cifar-10-batches-bin/data_batch_1.bin",
    "/train-labels-idx1-ubyte.gz",
};

static const char *g_bin = GF_TRAIN_BIN;
/* Port 1 of loopback: privileged and unassigned in practice, so nothing
 * answers there; an MLflow call fails at once with a connection error. */
static const char *const k_closed_uri = "http://127.0.0.1:1";

/* A relative path of n characters: components of 200 'a's (each a name
 * the file system takes, so an old build could create them all), the last
 * one shorter. Caller frees. */
static char *long_path(size_t n, char last) {
  char *p = malloc(n + 1);
  REQUIRE(p != NULL);
  for (size_t i = 0; i < n; i++) p[i] = (i % 201 == 200) ? '/' : 'a';
  if (n) p[n - 1] = last; /* never a '/' at the end */
  p[n] = '\0';
  return p;
}

/* The whole file, NUL-terminated (caller frees). */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  REQUIRE(f != NULL);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? 2 * cap : 8192;
      buf = realloc(buf, cap);
      REQUIRE(buf != NULL);
    }
    size_t got = fread(buf + len, 1, 4096, f);
    len += got;
    if (got == 0) break;
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}

/* Runs the trainer with args[1..] in an empty folder under tmp (the
 * test's working directory meanwhile), its output into tmp/log, MLflow on
 * a closed port, `exp` as MLFLOW_EXPERIMENT_NAME (NULL: unset). Checks:
 * exit status 2, no signal; the output names `needle` and no MLflow
 * connection; the folder is still empty. */
static void expect_refused(const char *tmp, const char *what,
                           const char *needle, const char *exp,
                           char **args) {
  char cwd[512], log[512], home[1024];
  snprintf(cwd, sizeof cwd, "%s/run", tmp);
  snprintf(log, sizeof log, "%s/log", tmp);
  REQUIRE(mkdir(cwd, 0755) == 0);
  REQUIRE(getcwd(home, sizeof home) != NULL);
  setenv("MLFLOW_TRACKING_URI", k_closed_uri, 1);
  setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0", 1);
  setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5", 1);
  unsetenv("MLFLOW_RUN_ID");
  unsetenv("GANFLOW_HEARTBEAT_DIR");
  if (exp)
    setenv("MLFLOW_EXPERIMENT_NAME", exp, 1);
  else
    unsetenv("MLFLOW_EXPERIMENT_NAME");
  args[0] = (char *)g_bin;
  REQUIRE(chdir(cwd) == 0);
  int rc = tu_run_log(log, args, NULL, NULL);
  REQUIRE(chdir(home) == 0);
  REQUIRE(rc != 127); /* not started: a wrong path */
  unsetenv("MLFLOW_EXPERIMENT_NAME");
  char *text = slurp(log);
  int before = check_failures_;
  CHECKF(rc == 2, "%s: exit status %d, not 2 (usage)", what, rc);
  CHECKF(strstr(text, needle) != NULL, "%s: the message does not name %s",
         what, needle);
  CHECKF(!strstr(text, "MLflow") && !strstr(text, "connect"),
         "%s: refused only after contacting MLflow", what);
  /* rmdir takes only an empty folder */
  CHECKF(rmdir(cwd) == 0, "%s: something was created before the refusal",
         what);
  if (check_failures_ != before)
    fprintf(stderr, "---- %s: its output ----\n%.600s\n----\n", what, text);
  free(text);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cwd); /* deep trees too */
  REQUIRE(system(cmd) == 0);
}

static void test_executable(const char *tmp) {
  char *over = long_path(GF_TRAIN_PATH_MAX + 10, 'b');
  char *under = long_path(GF_TRAIN_PATH_MAX - 40, 'b'); /* fits the field */
  char data_under[GF_TRAIN_PATH_MAX];
  char *dpath = long_path(GF_TRAIN_PATH_MAX - 40 - 4, 'd');
  snprintf(data_under, sizeof data_under, "idx:%s", dpath);

  char *a1[] = {"", "--data", "/nonexistent", "--checkpoint-dir", over,
                "--steps", "1", NULL};
  expect_refused(tmp, "--checkpoint-dir over its field", "--checkpoint-dir",
                 NULL, a1);
  char *a2[] = {"", "--data", "/nonexistent", "--checkpoint-dir", under,
                "--steps", "1", NULL};
  expect_refused(tmp, "--checkpoint-dir without room for its files",
                 "--checkpoint-dir", NULL, a2);
  char *a3[] = {"", "--data", over, "--steps", "1", NULL};
  expect_refused(tmp, "--data over its field", "--data", NULL, a3);
  char *a4[] = {"", "--data", data_under, "--steps", "1", NULL};
  expect_refused(tmp, "--data without room for its files", "--data", NULL,
                 a4);
  char exp[GF_TRAIN_NAME_MAX + 8];
  memset(exp, 'e', sizeof exp - 1);
  exp[sizeof exp - 1] = '\0';
  char *a5[] = {"", "--data", "/nonexistent", "--steps", "1", NULL};
  expect_refused(tmp, "MLFLOW_EXPERIMENT_NAME over its field",
                 "MLFLOW_EXPERIMENT_NAME", exp, a5);
  free(over);
  free(under);
  free(dpath);
}

/* gf_train_parse_args on --data D [extra...]; GF_PARSE_USAGE messages must
 * name `flag`. */
static gf_parse_result parse(const char *flag, const char *data,
                             const char *ckpt, gf_err *e) {
  gf_train_config *cfg = malloc(sizeof *cfg);
  REQUIRE(cfg != NULL);
  char *argv[] = {"ganflow-train", "--data", (char *)data,
                  "--checkpoint-dir", (char *)(ckpt ? ckpt : "ck"), NULL};
  memset(e, 0, sizeof *e);
  gf_parse_result r = gf_train_parse_args(cfg, 5, argv, e);
  if (r == GF_PARSE_USAGE)
    CHECKF(strstr(e->msg, flag) != NULL, "message '%s' lacks %s", e->msg,
           flag);
  free(cfg);
  return r;
}

/* The longest path accepted for a flag leaves room for every name joined
 * to it; one character more is refused naming the flag. */
static void test_limits(void) {
  gf_err e;
  unsetenv("MLFLOW_EXPERIMENT_NAME");
  size_t max = 0;
  for (size_t n = GF_TRAIN_PATH_MAX - 1; n > 0 && !max; n--) {
    char *p = long_path(n, 'b');
    if (parse("--checkpoint-dir", "/d", p, &e) == GF_PARSE_OK) max = n;
    free(p);
  }
  CHECKF(max > 1000, "no --checkpoint-dir of a useful length accepted");
  for (size_t i = 0; i < sizeof k_ckpt_names / sizeof *k_ckpt_names; i++)
    CHECKF(max + strlen(k_ckpt_names[i]) < GF_TRAIN_PATH_MAX,
           "--checkpoint-dir of %zu characters accepted: %s does not fit",
           max, k_ckpt_names[i]);
  char *p = long_path(max + 1, 'b');
  CHECK(parse("--checkpoint-dir", "/d", p, &e) == GF_PARSE_USAGE);
  free(p);

  max = 0;
  for (size_t n = GF_TRAIN_PATH_MAX - 1; n > 0 && !max; n--) {
    p = long_path(n, 'd');
    if (parse("--data", p, NULL, &e) == GF_PARSE_OK) max = n;
    free(p);
  }
  CHECKF(max > 1000, "no --data of a useful length accepted");
  for (size_t i = 0; i < sizeof k_data_names / sizeof *k_data_names; i++)
    CHECKF(max + strlen(k_data_names[i]) < GF_TRAIN_PATH_MAX,
           "--data of %zu characters accepted: %s does not fit", max,
           k_data_names[i]);
  /* A FORMAT: prefix is not part of the directory. */
  char spec[GF_TRAIN_PATH_MAX];
  p = long_path(max, 'd');
  snprintf(spec, sizeof spec, "cifar10:%s", p);
  CHECK(parse("--data", spec, NULL, &e) == GF_PARSE_OK);
  free(p);
  p = long_path(max + 1, 'd');
  CHECK(parse("--data", p, NULL, &e) == GF_PARSE_USAGE);
  free(p);

  /* MLFLOW_EXPERIMENT_NAME: too long is refused naming it, unless
   * --experiment replaces it; one that fits is taken whole. */
  char exp[GF_TRAIN_NAME_MAX + 1];
  memset(exp, 'e', sizeof exp - 1);
  exp[sizeof exp - 1] = '\0';
  setenv("MLFLOW_EXPERIMENT_NAME", exp, 1);
  CHECK(parse("MLFLOW_EXPERIMENT_NAME", "/d", NULL, &e) == GF_PARSE_USAGE);
  gf_train_config *cfg = malloc(sizeof *cfg);
  REQUIRE(cfg != NULL);
  char *argv[] = {"ganflow-train", "--data", "/d", "--experiment", "x", NULL};
  CHECK(gf_train_parse_args(cfg, 5, argv, &e) == GF_PARSE_OK);
  CHECK_STR_EQ(cfg->experiment, "x");
  exp[sizeof exp - 2] = '\0'; /* GF_TRAIN_NAME_MAX - 1 characters: fits */
  setenv("MLFLOW_EXPERIMENT_NAME", exp, 1);
  CHECK(gf_train_parse_args(cfg, 3, argv, &e) == GF_PARSE_OK);
  CHECK_STR_EQ(cfg->experiment, exp);
  free(cfg);
  unsetenv("MLFLOW_EXPERIMENT_NAME");
}

int main(int argc, char **argv) {
  /* absolute: the executable runs from another working directory */
  static char bin[4096];
  if (argc > 1) {
    REQUIRE(realpath(argv[1], bin) != NULL);
    g_bin = bin;
  }
  signal(SIGPIPE, SIG_IGN);
  char tmp[256];
  tu_mkdtemp(tmp, sizeof tmp);
  test_limits();
  test_executable(tmp);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return check_report();
}
