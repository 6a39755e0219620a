/* test_train_cost.c - what a run costs (gf/cost.h, gf/energy.h through
 * ganflow-train): the ledger and price flags in-process, then the binary
 * on Fashion-MNIST (mlp, one thread per rank) against the MLflow server of
 * the `mlflow` ctest fixture, priced at 3600 USD per slot-hour so that
 * cost/usd reads as slot-seconds, which the test bounds with the wall time
 * it measures itself:
 *
 *   1. kill -9 and resume (one rank, the CPU-time estimate: an empty
 *      powercap tree). The first process is killed after KILL_AT_S and a
 *      checkpoint, the second stopped by SIGTERM after STOP_AT_S and 60
 *      steps past the first's last. The ledger ends with 2 processes, its
 *      usd at most W1 + W2 (the processes' wall times: a double count
 *      would add W1 again) and at least T - 3 s (T: the seconds between
 *      the first step line the test saw and the signal, summed; 3 s: the
 *      killed process's last second and logging interval); its CPU
 *      joules at most 10 W x the processes' CPU seconds (their rusage), at
 *      least LOW of it. energy/joules, cost/usd and cost/slot_hours never go down from
 *      one step to the next, across the restart (a reset would); every
 *      (key, step) once; the params and the source tags.
 *   2. Two ranks under mpirun with a fake RAPL tree (GANFLOW_POWERCAP_ROOT)
 *      whose package counter the test advances at RAPL_W watts and wraps
 *      every RAPL_WRAP_J joules. Priced per GPU (a CPU rank's slot): usd
 *      above 1.8 T (both ranks counted) and at most 2 W. RAPL is the
 *      node's: the CPU joules at most RAPL_W x W (counted once, not per
 *      rank) and at least RAPL_W x (T - 0.5 s), over T long enough for
 *      the counter to wrap: a wrap taken for a reset (the sum falling back
 *      under RAPL_WRAP_J) fails it. (A wrap's interval dropped would lose
 *      too little to see here; test_energy checks the wrap's arithmetic.)
 *      Tag ganflow.energy.cpu_source = rapl. At each evaluation,
 *      cost/swd_avg_x_usd = swd/avg x cost/usd of that step.
 *
 * Skips (77) only for scenario 2 when this build has no MPI or mpirun is
 * missing; fails without Fashion-MNIST. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/comm.h"
#include "gf/cost.h"
#include "gf/energy.h"
#include "gf/safetensors.h"
#include "gf/train.h"
#include "mlflow_test.h"
#include "train_test_util.h"
#include "wait_util.h"

#define PRICE "3600" /* USD per slot-hour: cost/usd = slot-seconds */
#define KILL_AT_S 4.0 /* seconds of training */
#define STOP_AT_S 2.0
/* The upper bounds are tight: no process can count more than its own wall
 * or CPU time, so a double count shows at once. The lower bounds allow for
 * what is honestly not counted (a process's start before its meter opens,
 * mpirun's start, what a killed process spent after its last ledger
 * write), which a loaded machine stretches: LOW of the measured time. A
 * reset shows in the histories instead (check_rising across the restart);
 * a RAPL wrap taken for a reset would leave at most RAPL_WRAP_J. */
#define LOW 0.5
#define RAPL_W 50.0
#define RAPL_WRAP_J 400.0 /* 8 s at RAPL_W: the meter samples every 5 s */
#define RUN_TIMEOUT_S 300

/* ---- in-process --------------------------------------------------------- */

static void test_ledger(void) {
  gf_cost_ledger l;
  memset(&l, 0, sizeof l);
  snprintf(l.run_id, sizeof l.run_id, "0123abcd");
  l.t = (gf_cost_totals){1.0 / 3.0, 2e-7, 12.345678901234567, 99.5, 7};
  char text[GF_COST_LEDGER_MAX];
  gf_err e;
  CHECK(gf_cost_ledger_format(&l, text, sizeof text, &e) == GF_OK);
  gf_cost_ledger back;
  CHECK(gf_cost_ledger_parse(text, strlen(text), &back, &e) == GF_OK);
  CHECK(memcmp(&back.t, &l.t, sizeof l.t) == 0); /* exact: %.17g */
  CHECK_STR_EQ(back.run_id, "0123abcd");
  static const char *const bad[] = {
      "run_id a\nprocesses 1\ncpu_joules 0\ngpu_joules 0\nusd 0\n", /* no slot */
      "run_id a\nprocesses 1\ncpu_joules 0\ngpu_joules 0\nusd 0\nslot_seconds 0\nusd 1\n",
      "run_id a\nprocesses 1\ncpu_joules -1\ngpu_joules 0\nusd 0\nslot_seconds 0\n",
      "run_id a\nprocesses 1\ncpu_joules nan\ngpu_joules 0\nusd 0\nslot_seconds 0\n",
      "run_id a\nprocesses 1.5\ncpu_joules 0\ngpu_joules 0\nusd 0\nslot_seconds 0\n",
      "run_id a/b\nprocesses 1\ncpu_joules 0\ngpu_joules 0\nusd 0\nslot_seconds 0\n",
      "run_id a\nprocesses 1\ncpu_joules 0\ngpu_joules 0\nusd 0 1\nslot_seconds 0\n",
      "run_id a\nprocesses 1\ncpu_joules 0\ngpu_joules 0\nusd 0\nslot_seconds 0\nwatts 3\n",
      "run_id a\nprocesses 1\ncpu_joules 1e999\ngpu_joules 0\nusd 0\nslot_seconds 0\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&e, 0, sizeof e);
    CHECKF(gf_cost_ledger_parse(bad[i], strlen(bad[i]), &back, &e) ==
               GF_EFORMAT && strstr(e.msg, "cost ledger"),
           "bad ledger %zu accepted (%s)", i, e.msg);
  }
  const char ok[] = "# c\n\nrun_id a\r\nprocesses 1\ncpu_joules 0\n"
                    "gpu_joules 0\nusd 0\nslot_seconds 0";
  CHECK(gf_cost_ledger_parse(ok, strlen(ok), &back, &e) == GF_OK);
  /* the file: written, read back, absent */
  char path[1200];
  snprintf(path, sizeof path, "%s/ledger", GF_TEST_TMP);
  CHECK(gf_cost_ledger_write(path, &l, &e) == GF_OK);
  bool found = false;
  CHECK(gf_cost_ledger_read(path, &back, &found, &e) == GF_OK && found);
  CHECK(memcmp(&back.t, &l.t, sizeof l.t) == 0);
  snprintf(path, sizeof path, "%s/no-ledger", GF_TEST_TMP);
  CHECK(gf_cost_ledger_read(path, &back, &found, &e) == GF_OK && !found);
}

static void test_slots_and_gpus(void) {
  CHECK_INT_EQ(gf_price_slots(true, 0), 1);
  CHECK_INT_EQ(gf_price_slots(true, 1), 0);
  CHECK_INT_EQ(gf_price_slots(false, 3), 1);
  CHECK_INT_EQ(gf_cost_nvml_index(NULL, 2), 2);
  CHECK_INT_EQ(gf_cost_nvml_index("", 0), 0);
  CHECK_INT_EQ(gf_cost_nvml_index("3,1", 0), 3);
  CHECK_INT_EQ(gf_cost_nvml_index("3,1", 1), 1);
  CHECK_INT_EQ(gf_cost_nvml_index("3,1", 2), -1);
  CHECK_INT_EQ(gf_cost_nvml_index("GPU-8f1e", 0), -1);
  CHECK_INT_EQ(gf_cost_nvml_index("0,x", 1), -1);
  CHECK_INT_EQ(gf_cost_nvml_index("0", -1), -1);
}

/* Parses argv as ganflow-train would; the status, the config in *cfg. */
static gf_parse_result parse(gf_train_config *cfg, gf_err *e, ...) {
  char *argv[32] = {"ganflow-train", "--data", FASHION};
  int argc = 3;
  va_list ap;
  va_start(ap, e);
  for (char *a; argc < 31 && (a = va_arg(ap, char *)) != NULL;) argv[argc++] = a;
  va_end(ap);
  memset(e, 0, sizeof *e);
  return gf_train_parse_args(cfg, argc, argv, e);
}

static void test_price_flags(void) {
  char prices[1200];
  snprintf(prices, sizeof prices, "%s/prices.txt", GF_TEST_TMP);
  const char text[] = "# kind market usd/hour unit\n"
                      "c7i.2xlarge on-demand 0.357 node\n"
                      "c7i.2xlarge spot 0.1214 node\n"
                      "h100-80gb spot 2.10 gpu\n";
  tu_write(prices, text, strlen(text));
  gf_train_config cfg;
  gf_err e;
  unsetenv("GANFLOW_INSTANCE_KIND");
  CHECK(parse(&cfg, &e, NULL) == GF_PARSE_OK);
  CHECK(cfg.price_per_hour < 0 && cfg.cpu_watts_per_core == 10);
  CHECK(parse(&cfg, &e, "--price-per-hour", "1.5", "--price-unit", "gpu",
              NULL) == GF_PARSE_OK);
  CHECK(cfg.price_per_hour == 1.5 && cfg.price_unit == GF_PRICE_PER_GPU);
  CHECK(parse(&cfg, &e, "--price-file", prices, "--instance-kind",
              "c7i.2xlarge", "--market", "spot", NULL) == GF_PARSE_OK);
  CHECK(cfg.price_per_hour == 0.1214 && cfg.price_unit == GF_PRICE_PER_NODE &&
        cfg.market == GF_MARKET_SPOT);
  setenv("GANFLOW_INSTANCE_KIND", "h100-80gb", 1);
  CHECK(parse(&cfg, &e, "--price-file", prices, "--market", "spot", NULL) ==
        GF_PARSE_OK);
  CHECK(cfg.price_per_hour == 2.10 && cfg.price_unit == GF_PRICE_PER_GPU);
  /* the params say which price was used */
  gf_train_param params[GF_TRAIN_MAX_PARAMS];
  size_t np = gf_train_config_params(&cfg, params, GF_TRAIN_MAX_PARAMS);
  int seen = 0;
  for (size_t i = 0; i < np; i++) {
    if (strcmp(params[i].key, "price_usd_per_hour") == 0)
      seen += strcmp(params[i].value, "2.1") == 0;
    if (strcmp(params[i].key, "price_unit") == 0)
      seen += strcmp(params[i].value, "gpu") == 0;
    if (strcmp(params[i].key, "instance_kind") == 0)
      seen += strcmp(params[i].value, "h100-80gb") == 0;
    if (strcmp(params[i].key, "market") == 0)
      seen += strcmp(params[i].value, "spot") == 0;
  }
  CHECK_INT_EQ(seen, 4);
  /* refusals, each naming what is wrong */
  struct {
    const char *a[6];
    const char *want;
  } bad[] = {
      {{"--price-file", prices, "--market", "on-demand"}, "h100-80gb"},
      {{"--price-file", prices, "--price-per-hour", "1"}, "one price"},
      {{"--price-file", prices, "--market", "spot", "--price-unit", "node"},
       "--price-unit"},
      {{"--price-per-hour", "-1"}, "--price-per-hour"},
      {{"--price-per-hour", "nan"}, "--price-per-hour"},
      {{"--price-unit", "rack"}, "--price-unit"},
      {{"--market", "reserved"}, "--market"},
      {{"--cpu-watts-per-core", "0"}, "--cpu-watts-per-core"},
      {{"--price-file", "/nonexistent/prices"}, "/nonexistent/prices"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    gf_parse_result r = parse(&cfg, &e, bad[i].a[0], bad[i].a[1], bad[i].a[2],
                              bad[i].a[3], bad[i].a[4], bad[i].a[5], NULL);
    CHECKF(r == GF_PARSE_USAGE && strstr(e.msg, bad[i].want),
           "price refusal %zu: result %d, '%s' (want '%s')", i, (int)r, e.msg,
           bad[i].want);
  }
  unsetenv("GANFLOW_INSTANCE_KIND");
  CHECK(parse(&cfg, &e, "--price-file", prices, NULL) == GF_PARSE_USAGE &&
        strstr(e.msg, "--instance-kind"));
}

/* ---- through the binary ------------------------------------------------- */

typedef struct job {
  char dir[1024], log[1100], exp[192], powercap[1100];
  char np[16];           /* mpirun's -np value */
  char *argv[64];
  int n;
  double t_start, wall;  /* fork to reap, seconds */
  double cpu;            /* the process's CPU seconds (rusage) */
  double trained;        /* seconds from the first step line the test saw
                            to the signal: the trainer ran (and metered)
                            at least that long */
} job;

static void add(job *j, const char *a) {
  REQUIRE(j->n < 63);
  j->argv[j->n++] = (char *)a;
  j->argv[j->n] = NULL;
}

static void job_init(job *j, const char *name, const char *mpirun, int ranks,
                     const char *unit) {
  memset(j, 0, sizeof *j);
  snprintf(j->dir, sizeof j->dir, "%s/%s", GF_TEST_TMP, name);
  snprintf(j->log, sizeof j->log, "%s/%s.log", GF_TEST_TMP, name);
  snprintf(j->powercap, sizeof j->powercap, "%s/%s-powercap", GF_TEST_TMP,
           name);
  REQUIRE(mkdir(j->powercap, 0755) == 0);
  char u[160];
  test_unique(u, sizeof u, name);
  snprintf(j->exp, sizeof j->exp, "cost-%s", u);
  if (ranks > 0) {
    const char *mpi[] = {mpirun, "--allow-run-as-root", "--oversubscribe",
                         "--bind-to", "none", "-x", "MLFLOW_TRACKING_URI",
                         "-x", "GANFLOW_POWERCAP_ROOT", "-np", NULL};
    for (int i = 0; mpi[i]; i++) add(j, mpi[i]);
    snprintf(j->np, sizeof j->np, "%d", ranks);
    add(j, j->np);
  }
  const char *fixed[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                         "--batch", "64", "--threads", "1", "--seed", "3",
                         "--steps", "10000000", "--log-every", "20",
                         "--checkpoint-every", "200", "--sample-every", "0",
                         "--eval-every", "0", "--register-model", "",
                         "--price-per-hour", PRICE, "--price-unit", unit,
                         "--checkpoint-dir", j->dir, "--experiment", j->exp,
                         NULL};
  for (int i = 0; fixed[i]; i++) add(j, fixed[i]);
}

/* Starts j's command (tu_spawn_trainer: the tracked child, its own process
 * group) with j's powercap tree; j's clock starts. */
static pid_t spawn(job *j, const char *uri) {
  setenv("GANFLOW_POWERCAP_ROOT", j->powercap, 1);
  j->t_start = mono_s();
  return tu_spawn_trainer(j->argv, j->log, uri, NULL);
}

/* Waits for pid (timeout: killed); its exit code, and j's wall and CPU. */
static int reap(job *j, pid_t pid) {
  tu_deadline d = tu_deadline_in(RUN_TIMEOUT_S);
  int status = 0;
  struct rusage ru;
  for (;;) {
    memset(&ru, 0, sizeof ru);
    pid_t got = wait4(pid, &status, WNOHANG, &ru);
    if (got == pid) break;
    if (tu_deadline_passed(&d)) {
      kill(-pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      dump_log(j->log);
      break;
    }
    tu_pause_s(0.005);
  }
  *tu_child() = 0;
  j->wall += mono_s() - j->t_start;
  j->cpu += (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
            (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  return decode_status(status);
}

/* Waits until the process has trained for `secs` (since the first step
 * line of its log), its log shows a step past `step` and a checkpoint is on
 * disk, then sends sig; false when it ended first. */
static bool signal_after(job *j, pid_t pid, double secs, long step, int sig) {
  tu_deadline d = tu_deadline_in(RUN_TIMEOUT_S);
  double first = 0;
  for (;;) {
    long at = log_last_step(j->log);
    if (at > 0 && first == 0) first = mono_s();
    if (first > 0 && mono_s() - first >= secs && at > step &&
        newest_ckpt_on_disk(j->dir) > 0)
      break;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid || tu_deadline_passed(&d)) {
      dump_log(j->log);
      return false;
    }
    tu_pause_s(0.01);
  }
  j->trained += mono_s() - first;
  kill(sig == SIGKILL ? -pid : pid, sig);
  return true;
}

/* The run id of the log's "ganflow-train: run <id>," line. */
static bool log_run_id(const char *log, char *out, size_t cap) {
  char *text = read_all(log, NULL);
  const char *p = text ? strstr(text, "ganflow-train: run ") : NULL;
  bool ok = p && sscanf(p, "ganflow-train: run %63[0-9a-f],", out) == 1 &&
            strlen(out) < cap;
  free(text);
  return ok;
}

/* key's history never goes down from one step to the next; its last value
 * (by step) into *last. */
static void check_rising(mlflow_client *mc, const char *run, const char *key,
                         double *last, const char *what) {
  mlflow_metric_list h;
  mlflow_error e;
  *last = NAN;
  if (mlflow_metric_history(mc, run, key, &h, &e) != MLFLOW_OK) {
    CHECKF(0, "%s: history of %s: %s", what, key, e.message);
    return;
  }
  CHECKF(h.count >= 3, "%s: %s has %zu points", what, key, h.count);
  /* sort by step (the server's order is (step, timestamp) already) */
  int64_t prev_step = -1;
  double prev = -1;
  size_t drops = 0;
  for (size_t i = 0; i < h.count; i++) {
    if (h.items[i].step > prev_step && h.items[i].value < prev) {
      if (!drops++)
        fprintf(stderr, "%s: %s goes from %.6g down to %.6g at step %lld\n",
                what, key, prev, h.items[i].value,
                (long long)h.items[i].step);
    }
    prev_step = h.items[i].step;
    prev = h.items[i].value;
  }
  CHECKF(drops == 0, "%s: %s went down %zu times", what, key, drops);
  *last = prev;
  mlflow_metric_list_free(&h);
}

/* The value of key at step (NAN when none). */
static double value_at(const mlflow_metric_list *h, int64_t step) {
  for (size_t i = 0; i < h->count; i++)
    if (h->items[i].step == step) return h->items[i].value;
  return NAN;
}

/* cost/swd_avg_x_usd at each evaluation = swd/avg x cost/usd there. */
static void check_quality_per_cost(mlflow_client *mc, const char *run) {
  mlflow_metric_list x, swd, usd;
  mlflow_error e;
  if (mlflow_metric_history(mc, run, "cost/swd_avg_x_usd", &x, &e) != MLFLOW_OK ||
      mlflow_metric_history(mc, run, "swd/avg", &swd, &e) != MLFLOW_OK ||
      mlflow_metric_history(mc, run, "cost/usd", &usd, &e) != MLFLOW_OK) {
    CHECKF(0, "ranks: histories: %s", e.message);
    return;
  }
  CHECKF(x.count >= 1, "ranks: cost/swd_avg_x_usd has %zu points", x.count);
  for (size_t i = 0; i < x.count; i++) {
    int64_t k = x.items[i].step;
    double want = value_at(&swd, k) * value_at(&usd, k);
    CHECKF(fabs(x.items[i].value - want) <= 1e-9 * fabs(want),
           "ranks: cost/swd_avg_x_usd at step %lld is %.9g, swd/avg x "
           "cost/usd there %.9g", (long long)k, x.items[i].value, want);
  }
  mlflow_metric_list_free(&x);
  mlflow_metric_list_free(&swd);
  mlflow_metric_list_free(&usd);
}

static void read_ledger(const job *j, gf_cost_ledger *l) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", j->dir, GF_COST_LEDGER_FILE);
  bool found = false;
  gf_err e;
  memset(&e, 0, sizeof e);
  CHECKF(gf_cost_ledger_read(path, l, &found, &e) == GF_OK && found,
         "ledger %s: %s", path, found ? e.msg : "missing");
}

static void kill_scenario(const char *uri, mlflow_client *mc) {
  job j;
  job_init(&j, "kill", NULL, 0, "gpu");
  pid_t pid = spawn(&j, uri);
  bool killed = signal_after(&j, pid, KILL_AT_S, 0, SIGKILL);
  int rc = reap(&j, pid);
  long at1 = log_last_step(j.log);
  /* the resumed process logs into a file of its own */
  snprintf(j.log, sizeof j.log, "%s/kill-resumed.log", GF_TEST_TMP);
  double w1 = j.wall, c1 = j.cpu;
  CHECKF(killed && rc == 128 + SIGKILL, "kill: first process exit %d", rc);
  if (!killed) return;
  pid = spawn(&j, uri);
  /* past the steps the first process logged, so that the histories show
   * the second process's totals after the first's */
  bool stopped = signal_after(&j, pid, STOP_AT_S, at1 + 60, SIGTERM);
  rc = reap(&j, pid);
  CHECKF(stopped && rc == 0, "kill: resumed process exit %d", rc);
  double w2 = j.wall - w1, c2 = j.cpu - c1;
  gf_cost_ledger l;
  read_ledger(&j, &l);
  fprintf(stderr, "[kill] W1 %.2f s, W2 %.2f s, CPU %.2f + %.2f s; ledger: "
          "%" PRId64 " processes, %.3f USD, %.2f slot-s, %.2f J\n", w1, w2, c1,
          c2, l.t.processes, l.t.usd, l.t.slot_seconds, l.t.cpu_joules);
  CHECK_INT_EQ(l.t.processes, 2);
  CHECKF(l.t.usd <= w1 + w2 + 0.01 && l.t.usd >= j.trained - 3.0,
         "kill: %.3f USD outside [%.3f, %.3f]", l.t.usd, j.trained - 3.0,
         w1 + w2);
  CHECK_NEAR(l.t.slot_seconds, l.t.usd, 1e-6 * l.t.usd + 1e-9);
  CHECKF(l.t.cpu_joules <= 10 * (c1 + c2) + 0.1 &&
             l.t.cpu_joules >= LOW * 10 * (c1 + c2),
         "kill: %.2f J outside 10 W x [%.2f, %.2f] s", l.t.cpu_joules,
         LOW * (c1 + c2), c1 + c2);
  CHECK_NEAR(l.t.gpu_joules, 0, 0);
  char run[64];
  if (!log_run_id(j.log, run, sizeof run)) {
    CHECKF(0, "kill: no run id in %s", j.log);
    return;
  }
  CHECKF(strcmp(run, l.run_id) == 0, "kill: ledger of run %s, not %s",
         l.run_id, run);
  double usd = 0, joules = 0, hours = 0;
  check_rising(mc, run, "cost/usd", &usd, "kill");
  check_rising(mc, run, "energy/joules", &joules, "kill");
  check_rising(mc, run, "cost/slot_hours", &hours, "kill");
  /* the last logged totals: what the ledger holds, up to the last exchange */
  CHECKF(usd <= l.t.usd + 1e-9 && usd >= LOW * l.t.usd,
         "kill: last cost/usd %.3f vs ledger %.3f", usd, l.t.usd);
  CHECK(check_exactly_once(mc, run, "kill", NULL) > 0);
  mlflow_run r;
  mlflow_error e;
  if (mlflow_run_get(mc, run, &r, &e) != MLFLOW_OK) {
    CHECKF(0, "kill: runs/get: %s", e.message);
    return;
  }
  const char *src = mlflow_run_tag(&r, "ganflow.energy.cpu_source");
  CHECKF(src && strcmp(src, "estimate") == 0, "kill: cpu_source %s",
         src ? src : "(none)");
  const char *note = mlflow_run_tag(&r, "ganflow.energy.note");
  CHECKF(note && strstr(note, "estimate"), "kill: note %s",
         note ? note : "(none)");
  const char *p = mlflow_run_param(&r, "price_usd_per_hour");
  CHECKF(p && strcmp(p, PRICE) == 0, "kill: price param %s", p ? p : "-");
  p = mlflow_run_param(&r, "price_unit");
  CHECKF(p && strcmp(p, "gpu") == 0, "kill: unit param %s", p ? p : "-");
  bool has_per1k = false;
  for (size_t i = 0; i < r.n_metrics; i++)
    has_per1k |= strcmp(r.metrics[i].key, "cost/usd_per_1k_images") == 0 &&
                 r.metrics[i].value > 0;
  CHECK(has_per1k);
  mlflow_run_free(&r);
}

/* The fake RAPL package: a counter advanced at RAPL_W, wrapping. */
typedef struct rapl_feeder {
  char file[1400], tmp[1200];
  double t0;
  atomic_int stop;
} rapl_feeder;

static void rapl_write(rapl_feeder *f) {
  double j = (mono_s() - f->t0) * RAPL_W;
  uint64_t range = (uint64_t)(RAPL_WRAP_J * 1e6); /* max_energy_range_uj + 1 */
  uint64_t uj = (uint64_t)(j * 1e6) % range;
  char text[32];
  int n = snprintf(text, sizeof text, "%" PRIu64 "\n", uj);
  tu_write(f->tmp, text, (size_t)n);
  REQUIRE(rename(f->tmp, f->file) == 0);
}

static void *rapl_feed(void *arg) {
  rapl_feeder *f = arg;
  while (!atomic_load(&f->stop)) {
    rapl_write(f);
    tu_pause_s(0.02);
  }
  return NULL;
}

static void ranks_scenario(const char *uri, mlflow_client *mc,
                           const char *mpirun) {
  job j;
  job_init(&j, "ranks", mpirun, 2, "gpu");
  /* evaluations: cost/swd_avg_x_usd beside swd/avg and cost/usd */
  add(&j, "--eval-every");
  add(&j, "100");
  add(&j, "--eval-images");
  add(&j, "100");
  char zone[1200], path[1300];
  snprintf(zone, sizeof zone, "%s/intel-rapl:0", j.powercap);
  REQUIRE(mkdir(zone, 0755) == 0);
  snprintf(path, sizeof path, "%s/name", zone);
  tu_write(path, "package-0\n", 10);
  snprintf(path, sizeof path, "%s/max_energy_range_uj", zone);
  char range[32];
  int n = snprintf(range, sizeof range, "%.0f\n", RAPL_WRAP_J * 1e6 - 1);
  tu_write(path, range, (size_t)n);
  rapl_feeder f;
  memset(&f, 0, sizeof f);
  snprintf(f.file, sizeof f.file, "%s/energy_uj", zone);
  snprintf(f.tmp, sizeof f.tmp, "%s/.energy_uj.tmp", j.powercap);
  f.t0 = mono_s();
  rapl_write(&f);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, rapl_feed, &f) == 0);
  pid_t pid = spawn(&j, uri);
  /* long enough that the counter wraps: RAPL_W x 9 s > RAPL_WRAP_J */
  bool stopped = signal_after(&j, pid, 9.0, 0, SIGTERM);
  int rc = reap(&j, pid);
  atomic_store(&f.stop, 1);
  pthread_join(th, NULL);
  /* mpirun itself, signalled, exits 1 whatever its ranks did: the ranks'
   * own end is in the log */
  CHECKF(stopped && log_contains(j.log, "stopped by a signal at step") &&
             log_contains(j.log, "the run so far"),
         "ranks: mpirun exit %d, the ranks did not stop as SIGTERM asks", rc);
  gf_cost_ledger l;
  read_ledger(&j, &l);
  double w = j.wall;
  fprintf(stderr, "[ranks] W %.2f s, trained %.2f s; ledger: %" PRId64 " processes, %.3f USD, "
          "%.2f J\n", w, j.trained, l.t.processes, l.t.usd, l.t.cpu_joules);
  CHECK_INT_EQ(l.t.processes, 2);
  CHECKF(l.t.usd > 1.8 * j.trained && l.t.usd <= 2 * w + 0.01,
         "ranks: %.3f USD outside (1.8 T, 2 W] = (%.3f, %.3f] (T: seen "
         "training)", l.t.usd, 1.8 * j.trained, 2 * w);
  CHECKF(l.t.cpu_joules <= RAPL_W * w + 1 &&
             l.t.cpu_joules >= RAPL_W * (j.trained - 0.5),
         "ranks: %.2f J outside %.0f W x [%.2f, %.2f] s", l.t.cpu_joules,
         RAPL_W, j.trained - 0.5, w);
  char run[64];
  if (!log_run_id(j.log, run, sizeof run)) {
    CHECKF(0, "ranks: no run id in %s", j.log);
    return;
  }
  double joules = 0;
  check_rising(mc, run, "energy/joules", &joules, "ranks");
  check_quality_per_cost(mc, run);
  mlflow_run r;
  mlflow_error e;
  if (mlflow_run_get(mc, run, &r, &e) != MLFLOW_OK) {
    CHECKF(0, "ranks: runs/get: %s", e.message);
    return;
  }
  const char *src = mlflow_run_tag(&r, "ganflow.energy.cpu_source");
  CHECKF(src && strcmp(src, "rapl") == 0, "ranks: cpu_source %s",
         src ? src : "(none)");
  mlflow_run_free(&r);
}

int main(void) {
  tu_trainer_test_start(GF_TEST_TMP);
  test_ledger();
  test_slots_and_gpus();
  test_price_flags();
  if (!tu_have_fashion()) return 1;
  unsetenv("GANFLOW_INSTANCE_KIND");
  char *uri = test_mlflow_uri();
  mlflow_client *mc = test_client_of(uri);
  kill_scenario(uri, mc);
  const char *mpirun = GF_MPIEXEC;
  bool mpi = gf_comm_built(GF_COMM_MPI) && *mpirun && access(mpirun, X_OK) == 0;
  if (mpi) ranks_scenario(uri, mc, mpirun);
  mlflow_client_free(mc);
  free(uri);
  int rc = check_report();
  if (rc == 0 && !mpi) SKIP_TEST("scenario 2: no MPI in this build or no mpirun");
  return rc;
}
