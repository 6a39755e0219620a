/* test_train_faults.c - fault injection on the ganflow-train executable
 * (issue 4 part 5), on real Fashion-MNIST (/usr/share/datasets/
 * fashion-mnist; the test FAILS without it) with --model mlp, against the
 * real MLflow server of the `mlflow` ctest fixture and, for the outage, a
 * server of the test's own. Every scenario has its own experiment and
 * checkpoint dir under GF_TEST_TMP.
 *
 *   0. Reference: N = 120 steps uninterrupted (--checkpoint-every 10
 *      --log-every 5, no samples, no SWD, fixed --seed and --threads).
 *   1. SIGKILL at >= 4 seeded-random points (watching the log lines, then a
 *      random delay so the kill lands mid-step, mid-checkpoint or
 *      mid-upload), the same command restarted each time until it exits 0:
 *      every tensor of the final checkpoint (G and D params, BN statistics,
 *      Adam moments and steps) byte-identical to the reference's (first
 *      differing tensor reported); one MLflow run throughout, FINISHED;
 *      loss/d, loss/g, d/real, d/fake and the perf/ figures (images/s,
 *      data wait, compute) hold exactly one point at each of
 *      steps 5, 10, ..., N (a metric "at step k" is the state after k
 *      optimizer steps, train_loop.c); every key of the run, the resource
 *      monitor's (sampled every 0.25 s: perf/rss_megabytes, system/...)
 *      among them, holds at most one point per step.
 *   2. SIGTERM after >= 2 checkpoints (this also covers the SIGTERM
 *      contract, stronger than test_train_integration: exit 0, run KILLED
 *      through mlflow_run_get, and the newest checkpoint is exactly the step
 *      the trainer says it stopped at), then the newest checkpoint is
 *      (a) truncated, (b) has one byte of tensor data flipped; the restart
 *      names the skipped file on stderr, resumes from the previous one, and
 *      ends bit-identical to the reference with exactly-once metrics.
 *   3. MLflow unreachable: the own server's process group is SIGKILLed a
 *      few seconds into a longer run and restarted >= 3.5 s later on the
 *      same port; the trainer keeps stepping while it is down (progress
 *      checked across the outage), exits 0, the run is FINISHED, every
 *      logged step of those keys is on the server exactly once, and
 *      the outbox is gone. Should the trainer come near its end before the
 *      server is back, it is paused (SIGSTOP) until the server answers, so
 *      the result does not depend on how fast `mlflow server` starts.
 *   4. Data errors through the binary: a missing --data dir, a truncated
 *      .gz and a truncated plain IDX file, an empty image folder: exit 1 (2
 *      accepted for usage), the message names the file or dir, and no
 *      MLflow run of that experiment is left RUNNING.
 *   5. A batch of resource-monitor figures in flight when the trainer dies
 *      and landing after the resumed one read the run (the tracker
 *      in-process, the late batch sent by the test): the resumed numbering
 *      starts past it (<checkpoint-dir>/monitor_step), each step once.
 *
 * Reproducing: the kill points derive from GF_FAULTS_SEED (printed at the
 * start). GF_FAULTS_REF_SEED overrides the reference run's --seed: any
 * other value than the default must make scenarios 1 and 2 fail (how the
 * test was shown able to fail). Abnormal exits (a signal, a sanitizer
 * report) fail the scenario with the trainer's whole log printed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "fashion.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "gf/train.h"
#include "mlflow_test.h"
#include "train_test_util.h"

#define REF_STEPS 120
#define LOG_EVERY 5
#define CKPT_EVERY 10
#define DEFAULT_SEED 7
#define OUTAGE_STEPS 400
#define OUTAGE_KILL_STEP 60   /* the server dies once the log shows this */
#define OUTAGE_MARGIN 100     /* pause the trainer this close to its end */

static char g_uri[512];          /* the fixture server */
static uint64_t g_rng;           /* kill plan generator (GF_FAULTS_SEED) */
static long g_ref_seed = DEFAULT_SEED;
static char g_ref_final[1200];   /* reference final checkpoint */
static char g_own_state[1100];   /* own server's state dir, stopped at exit */
/* The keys logged every --log-every steps (train_loop.c). */
static const char *const g_keys[] = {"loss/d", "loss/g", "d/real", "d/fake",
                                     "perf/images_per_sec", "perf/data_wait_s",
                                     "perf/compute_s"};
#define N_KEYS (int)(sizeof g_keys / sizeof g_keys[0])

/* ---- small utilities ---------------------------------------------------- */

/* splitmix64: the kill plan, reproducible from GF_FAULTS_SEED. */
static uint64_t rnd(void) {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static long rnd_in(long lo, long hi) { /* [lo, hi] */
  return lo + (long)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---- the trainer -------------------------------------------------------- */

typedef struct trainer_cmd {
  char *argv[48];
  char num[6][32];
} trainer_cmd;

static void make_cmd(trainer_cmd *t, const char *data, const char *dir,
                     const char *exp, long steps, long ckpt_every, long seed) {
  snprintf(t->num[0], sizeof t->num[0], "%ld", steps);
  snprintf(t->num[1], sizeof t->num[1], "%ld", ckpt_every);
  snprintf(t->num[2], sizeof t->num[2], "%ld", seed);
  snprintf(t->num[3], sizeof t->num[3], "%d", LOG_EVERY);
  char *const a[] = {GF_TRAIN_BIN, "--data", (char *)data, "--model", "mlp",
                     "--steps", t->num[0], "--batch", "32", "--log-every",
                     t->num[3], "--sample-every", "0", "--eval-every", "0",
                     "--checkpoint-every", t->num[1], "--keep", "3",
                     "--threads", "2", "--seed", t->num[2],
                     "--checkpoint-dir", (char *)dir, "--experiment",
                     (char *)exp, "--register-model", "", NULL};
  memcpy(t->argv, a, sizeof a);
}

/* Starts the trainer (the tracked child) with MLFLOW_TRACKING_URI=uri,
 * stdout+stderr to log, and resource-monitor samples (system/...,
 * perf/rss_megabytes) every 0.25 s: in every segment, however short, for
 * check_exactly_once. */
static pid_t spawn(const char *log, const trainer_cmd *t, const char *uri) {
  return tu_spawn_trainer(t->argv, log, uri, "0.25");
}

static int wait_rc(pid_t pid) {
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  REQUIRE(r == pid);
  if (pid == *tu_child()) *tu_child() = 0;
  return decode_status(status);
}

/* Waits up to timeout_s; -1 (and the child killed) on timeout. */
static int wait_rc_timeout(pid_t pid, double timeout_s, const char *log) {
  double t0 = mono_s();
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (pid == *tu_child()) *tu_child() = 0;
      return decode_status(status);
    }
    if (mono_s() - t0 > timeout_s) {
      fprintf(stderr, "trainer %d still running after %.0f s: killed "
              "(hang?)\n", (int)pid, timeout_s);
      kill(pid, SIGKILL);
      wait_rc(pid);
      dump_log(log);
      return -1;
    }
    sleep_s(0.05);
  }
}

/* Checks the exit code; on a mismatch prints the whole log (an abnormal
 * exit such as 134 from a glibc abort or a sanitizer report shows there). */
static bool expect_rc(int rc, int want, const char *what, const char *log) {
  CHECKF(rc == want, "%s: exit %d, want %d (log %s)", what, rc, want, log);
  if (rc != want) dump_log(log);
  return rc == want;
}

/* Seconds per step, estimated from when the last two log lines appeared
 * (wait_step's observations); 0 when unknown. */
static double g_step_s;

/* Polls until the log shows step >= target; false if the process ended
 * (it is then reaped and *rc set) or timeout. Sets g_step_s to the
 * fastest seconds per step between two log lines it saw. */
static bool wait_step(pid_t pid, const char *log, long target,
                      double timeout_s, int *rc) {
  double t0 = mono_s(), t_seen = 0;
  long seen = -1;
  g_step_s = 0;
  while (mono_s() - t0 < timeout_s) {
    long s = log_last_step(log);
    if (s != seen) {
      double now = mono_s();
      /* the fastest interval seen: one that spans a checkpoint write or a
       * start-up stall (530 ms/step once under CI's load, against 20) would
       * send the kill past the end of the run */
      double per = seen > 0 && s > seen ? (now - t_seen) / (double)(s - seen) : 0;
      if (per > 0 && (g_step_s == 0 || per < g_step_s)) g_step_s = per;
      seen = s;
      t_seen = now;
    }
    if (s >= target) return true;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      if (pid == *tu_child()) *tu_child() = 0;
      *rc = decode_status(status);
      return false;
    }
    sleep_s(0.005);
  }
  *rc = -1;
  return false;
}

/* ---- checks ------------------------------------------------------------- */

/* Runs of an experiment: count, and the RUNNING ones; *only_id (may be
 * NULL) receives the run id when there is exactly one. -1: no such
 * experiment. */
static int experiment_runs(mlflow_client *c, const char *exp, int *n_running,
                           int *n_failed, char *only_id, size_t cap) {
  mlflow_experiment x;
  mlflow_error e;
  *n_running = *n_failed = 0;
  mlflow_status ms = mlflow_experiment_get_by_name(c, exp, &x, &e);
  if (ms == MLFLOW_E_NOT_FOUND) return -1;
  CHECKF(ms == MLFLOW_OK, "experiment %s: %s", exp, e.message);
  if (ms != MLFLOW_OK) return -2;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  ms = mlflow_runs_search(c, ids, 1, NULL, NULL, 0, NULL, &l, &e);
  CHECKF(ms == MLFLOW_OK, "runs/search in %s: %s", exp, e.message);
  mlflow_experiment_free(&x);
  if (ms != MLFLOW_OK) return -2;
  for (size_t i = 0; i < l.count; i++) {
    *n_running += l.runs[i].info.status == MLFLOW_RUN_RUNNING;
    *n_failed += l.runs[i].info.status == MLFLOW_RUN_FAILED;
  }
  if (only_id && l.count == 1)
    snprintf(only_id, cap, "%s", l.runs[0].info.run_id);
  int n = (int)l.count;
  mlflow_run_list_free(&l);
  return n;
}

static mlflow_run_status run_status(mlflow_client *c, const char *run_id) {
  mlflow_run r;
  mlflow_error e;
  if (mlflow_run_get(c, run_id, &r, &e) != MLFLOW_OK) {
    fprintf(stderr, "runs/get %s: %s\n", run_id, e.message);
    return 0;
  }
  mlflow_run_status s = r.info.status;
  mlflow_run_free(&r);
  return s;
}

static const char *status_name(mlflow_run_status s) {
  const char *n = mlflow_run_status_name(s);
  return n ? n : "?";
}

/* Exactly-once over every metric key of the run (check_exactly_once),
 * the resource monitor's RSS among them: a run without it would not test
 * the figures logged outside the step loop. */
static void check_all_keys(mlflow_client *c, const char *run_id,
                           const char *what) {
  long points = 0;
  int keys = check_exactly_once(c, run_id, what, &points);
  CHECKF(run_keys_ending(c, run_id, "/rss_megabytes") > 0,
         "%s: no perf/rss_megabytes in the run (monitor samples)", what);
  fprintf(stderr, "[%s] exactly-once: %d keys, %ld points\n", what, keys,
          points);
}

/* The end state every resumed run must reach: one run in exp (the id of
 * the run_id file), FINISHED, exactly-once history of every key (the
 * step-loop keys at exactly their steps), and the final checkpoint equal
 * to the reference's. */
static void check_outcome(mlflow_client *c, const char *dir, const char *exp,
                          const char *first_run_id, long steps,
                          const char *ref_final, const char *what) {
  char path[1200];
  snprintf(path, sizeof path, "%s/run_id", dir);
  char *run_id = test_read_text(path);
  CHECKF(run_id && strcmp(run_id, first_run_id) == 0,
         "%s: run_id file now %s, first process used %s", what,
         run_id ? run_id : "(none)", first_run_id);
  int running, failed;
  char only[64] = "";
  int n = experiment_runs(c, exp, &running, &failed, only, sizeof only);
  CHECKF(n == 1, "%s: experiment %s holds %d runs, want exactly 1", what, exp,
         n);
  CHECKF(n != 1 || strcmp(only, first_run_id) == 0,
         "%s: the experiment's run is %s, not %s", what, only, first_run_id);
  mlflow_run_status st = run_status(c, first_run_id);
  CHECKF(st == MLFLOW_RUN_FINISHED, "%s: run %s is %s, want FINISHED", what,
         first_run_id, status_name(st));
  for (int k = 0; k < N_KEYS; k++)
    check_history(c, first_run_id, g_keys[k], LOG_EVERY, steps, what);
  check_all_keys(c, first_run_id, what);
  if (ref_final) {
    snprintf(path, sizeof path, "%s/" GF_CKPT_NAME_FMT, dir, (long long)steps);
    compare_ckpts(path, ref_final, what);
  }
  free(run_id);
}

/* ---- scenario 0: the reference ------------------------------------------ */

static void reference_run(mlflow_client *c) {
  double t0 = mono_s();
  char exp[128], dir[1100], log[1100];
  test_unique(exp, sizeof exp, "faults-ref");
  snprintf(dir, sizeof dir, "%s/ref", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/ref.log", GF_TEST_TMP);
  trainer_cmd t;
  make_cmd(&t, FASHION, dir, exp, REF_STEPS, CKPT_EVERY, g_ref_seed);
  int rc = wait_rc_timeout(spawn(log, &t, g_uri), 240, log);
  REQUIRE(expect_rc(rc, 0, "reference run", log));
  snprintf(g_ref_final, sizeof g_ref_final, "%s/" GF_CKPT_NAME_FMT, dir,
           (long long)REF_STEPS);
  REQUIRE(access(g_ref_final, R_OK) == 0);
  fprintf(stderr, "[reference] %d steps uninterrupted: %.1f s\n", REF_STEPS,
          mono_s() - t0);
  test_drop_artifacts(c, exp); /* the final checkpoint on disk stays */
}

/* ---- scenario 1: SIGKILL at random steps -------------------------------- */

enum { N_KILLS = 4 };

static void sigkill_scenario(mlflow_client *c) {
  double t0 = mono_s();
  char exp[128], dir[1100], log[1100];
  test_unique(exp, sizeof exp, "faults-kill");
  snprintf(dir, sizeof dir, "%s/kill", GF_TEST_TMP);
  trainer_cmd t;
  make_cmd(&t, FASHION, dir, exp, REF_STEPS, CKPT_EVERY, DEFAULT_SEED);

  /* One target per window of 25 steps in [10, 110): distinct, each past
   * the previous kill's checkpoint, so every restart makes progress. Log
   * lines come every LOG_EVERY steps: the kill waits for the line at or
   * before the target, then (target - line + a random fraction) steps at
   * the step time measured from the last log lines, so it lands at any
   * step and anywhere in one: mid-step, mid-checkpoint, mid-upload. */
  long target[N_KILLS], frac_pct[N_KILLS];
  for (int i = 0; i < N_KILLS; i++) {
    target[i] = rnd_in(10 + 25 * i + 2, 10 + 25 * i + 20);
    frac_pct[i] = rnd_in(0, 99);
  }
  char first_run_id[64] = "";
  int kills = 0;
  long killed_at[N_KILLS] = {0};
  bool ok = true;
  for (int seg = 0; ok; seg++) {
    snprintf(log, sizeof log, "%s/kill-%d.log", GF_TEST_TMP, seg);
    long ckpt_before = newest_ckpt_on_disk(dir);
    pid_t pid = spawn(log, &t, g_uri);
    if (seg < N_KILLS) {
      int rc = 0;
      long line = target[seg] / LOG_EVERY * LOG_EVERY;
      if (!wait_step(pid, log, line, 180, &rc)) {
        CHECKF(false, "segment %d ended (exit %d) before step %ld", seg, rc,
               line);
        if (rc == -1) {
          kill(pid, SIGKILL);
          wait_rc(pid);
        }
        dump_log(log);
        ok = false;
        break;
      }
      double step_s = g_step_s > 0 ? g_step_s : 0.02;
      double delay = ((double)(target[seg] - line) + frac_pct[seg] / 100.0) *
                     step_s;
      sleep_s(delay);
      CHECK(kill(pid, SIGKILL) == 0);
      int krc = wait_rc(pid);
      CHECKF(krc == 128 + SIGKILL, "segment %d: exit %d, want SIGKILL", seg,
             krc);
      killed_at[seg] = log_last_step(log);
      kills++;
      fprintf(stderr, "[sigkill] kill %d: target step %ld.%02ld (%.0f ms "
              "after the step-%ld line at ~%.0f ms/step), last log line step "
              "%ld, newest checkpoint on disk %ld (was %ld)\n", seg + 1,
              target[seg], frac_pct[seg], delay * 1e3, line, step_s * 1e3,
              killed_at[seg], newest_ckpt_on_disk(dir), ckpt_before);
    } else {
      int rc = wait_rc_timeout(pid, 240, log);
      ok = expect_rc(rc, 0, "sigkill: final segment", log);
      break;
    }
    if (seg == 0) {
      test_run_id_file(dir, first_run_id, sizeof first_run_id);
    } else if (ckpt_before >= 0) {
      CHECKF(log_contains(log, "resuming from"),
             "segment %d did not resume (log %s)", seg, log);
    }
  }
  CHECK(kills >= 3);
  /* At least 3 distinct kill points (log steps). */
  int distinct = 0;
  for (int i = 0; i < kills; i++) {
    bool dupk = false;
    for (int j = 0; j < i; j++) dupk |= killed_at[j] == killed_at[i];
    distinct += !dupk;
  }
  CHECKF(distinct >= 3, "only %d distinct kill points", distinct);
  if (ok)
    check_outcome(c, dir, exp, first_run_id, REF_STEPS, g_ref_final,
                  "sigkill");
  fprintf(stderr, "[sigkill] %d kills, %s: %.1f s\n", kills,
          ok ? "finished" : "FAILED", mono_s() - t0);
  test_drop_artifacts(c, exp);
  test_drop_tmp(dir);
}

/* ---- scenario 2 (+3): SIGTERM, then a corrupted newest checkpoint ------- */

static void corrupt(const char *path, bool truncate_it) {
  struct stat sb;
  REQUIRE(stat(path, &sb) == 0);
  if (truncate_it) {
    REQUIRE(truncate(path, sb.st_size / 2) == 0);
    return;
  }
  FILE *f = fopen(path, "r+b");
  REQUIRE(f);
  uint8_t len8[8];
  REQUIRE(fread(len8, 1, 8, f) == 8);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
  uint64_t data0 = 8 + hlen, data_len = (uint64_t)sb.st_size - data0;
  REQUIRE(data0 < (uint64_t)sb.st_size);
  long off = (long)(data0 + data_len / 3);
  REQUIRE(fseek(f, off, SEEK_SET) == 0);
  int ch = fgetc(f);
  REQUIRE(ch != EOF);
  REQUIRE(fseek(f, off, SEEK_SET) == 0);
  fputc(ch ^ 0xff, f);
  REQUIRE(fclose(f) == 0);
}

static void corrupt_scenario(mlflow_client *c, bool truncate_it) {
  double t0 = mono_s();
  const char *variant = truncate_it ? "truncated" : "flipped";
  char exp[128], dir[1100], log[1100], what[64];
  snprintf(what, sizeof what, "corrupt-%s", variant);
  test_unique(exp, sizeof exp, what);
  snprintf(dir, sizeof dir, "%s/%s", GF_TEST_TMP, what);
  snprintf(log, sizeof log, "%s/%s-term.log", GF_TEST_TMP, what);
  trainer_cmd t;
  make_cmd(&t, FASHION, dir, exp, REF_STEPS, CKPT_EVERY, DEFAULT_SEED);

  /* SIGTERM once >= 2 checkpoints exist (steps 10 and 20). */
  long target = rnd_in(25, 55);
  pid_t pid = spawn(log, &t, g_uri);
  int rc = 0;
  if (!wait_step(pid, log, target, 180, &rc)) {
    CHECKF(false, "%s: trainer ended (exit %d) before step %ld", what, rc,
           target);
    if (rc == -1) {
      kill(pid, SIGKILL);
      wait_rc(pid);
    }
    dump_log(log);
    return;
  }
  CHECK(kill(pid, SIGTERM) == 0);
  rc = wait_rc_timeout(pid, 180, log);
  /* SIGTERM contract: exit 0, "stopped ... at step K", ckpt-K newest and
   * good, run KILLED. */
  if (!expect_rc(rc, 0, "SIGTERM", log)) return;
  char *text = read_all(log, NULL);
  const char *m = text ? strstr(text, "stopped by a signal at step ") : NULL;
  long k = -1;
  if (m) sscanf(m, "stopped by a signal at step %ld", &k);
  free(text);
  CHECKF(k >= target && k < REF_STEPS, "%s: stop message step %ld (signal "
         "after step %ld)", what, k, target);
  char latest[1200], first_run_id[64] = "";
  test_run_id_file(dir, first_run_id, sizeof first_run_id);
  gf_ckpt_meta meta;
  gf_err gerr;
  REQUIRE(gf_checkpoint_find_latest(dir, latest, sizeof latest, &meta, NULL,
                                    NULL, 0, &gerr) == GF_OK);
  CHECKF(meta.step == k, "%s: newest good checkpoint is step %lld, the "
         "trainer stopped at %ld", what, (long long)meta.step, k);
  CHECK_STR_EQ(meta.run_id, first_run_id);
  mlflow_run_status st = run_status(c, first_run_id);
  CHECKF(st == MLFLOW_RUN_KILLED, "%s: after SIGTERM run is %s, want KILLED",
         what, status_name(st));
  int n_ck = count_ckpts(dir);
  CHECKF(n_ck >= 2, "%s: %d checkpoints before corrupting", what, n_ck);
  if (n_ck < 2) return;

  /* The previous checkpoint: the newest one below k. */
  long prev = -1;
  {
    DIR *d = opendir(dir);
    REQUIRE(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      int64_t s;
      if (gf_checkpoint_parse_name(de->d_name, &s) && s < k && s > prev)
        prev = (long)s;
    }
    closedir(d);
  }
  corrupt(latest, truncate_it);
  char base[128];
  snprintf(base, sizeof base, GF_CKPT_NAME_FMT, (long long)k);
  fprintf(stderr, "[%s] SIGTERM after step %ld -> stopped at %ld; %s %s; "
          "expecting resume from %ld\n", what, target, k, variant, base,
          prev);

  snprintf(log, sizeof log, "%s/%s-resume.log", GF_TEST_TMP, what);
  rc = wait_rc_timeout(spawn(log, &t, g_uri), 240, log);
  if (!expect_rc(rc, 0, "resume past a corrupted checkpoint", log)) return;
  bool named = false;
  text = read_all(log, NULL);
  for (char *p = text; p && *p && !named;) { /* a line naming the file */
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    named = strstr(p, base) && (strstr(p, "skip") || strstr(p, "damaged"));
    p = nl ? nl + 1 : NULL;
  }
  free(text);
  CHECKF(named, "%s: no stderr line says %s was skipped", what, base);
  char want[1300];
  snprintf(want, sizeof want, "resuming from %s/" GF_CKPT_NAME_FMT " (step",
           dir, (long long)prev);
  CHECKF(log_contains(log, want), "%s: log lacks \"%s\"", what, want);
  if (!named || !log_contains(log, want)) dump_log(log);
  check_outcome(c, dir, exp, first_run_id, REF_STEPS, g_ref_final, what);
  fprintf(stderr, "[%s] %.1f s\n", what, mono_s() - t0);
  test_drop_artifacts(c, exp);
  test_drop_tmp(dir);
}

/* ---- scenario 3: MLflow unreachable during the run ---------------------- */

typedef struct restarter {
  const char *state;
  atomic_int done;
  int rc;
  double took_s;
} restarter;

static void *restart_server(void *arg) {
  restarter *r = arg;
  double t0 = mono_s();
  r->rc = test_server_cmd(r->state, "start", NULL);
  r->took_s = mono_s() - t0;
  atomic_store(&r->done, 1);
  return NULL;
}

/* The own server's first start runs beside the other scenarios (it takes
 * 5-30 s of Python start-up). */
static restarter g_first_start;
static pthread_t g_first_start_th;
static bool g_first_start_pending; /* thread started, not joined */

static void stop_own_server(void) {
  if (g_first_start_pending) {
    pthread_join(g_first_start_th, NULL);
    g_first_start_pending = false;
  }
  if (g_own_state[0]) test_server_cmd(g_own_state, "stop", NULL);
  g_own_state[0] = '\0';
}

static void kill_child_at_exit(void) {
  pid_t child = *tu_child();
  if (child > 0) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    *tu_child() = 0;
  }
  stop_own_server();
}

static void own_server_start_async(void) {
  snprintf(g_own_state, sizeof g_own_state, "%s/own-server", GF_TEST_TMP);
  g_first_start.state = g_own_state;
  atomic_init(&g_first_start.done, 0);
  REQUIRE(pthread_create(&g_first_start_th, NULL, restart_server,
                         &g_first_start) == 0);
  g_first_start_pending = true;
}

/* SIGSTOPs the trainer once it is within OUTAGE_MARGIN steps of its end
 * (so that it cannot finish while the server is still down); true when
 * it is (now) paused. */
static bool pause_near_end(pid_t pid, const char *log, bool *paused,
                           long *s_pause) {
  if (*paused) return true;
  long s = log_last_step(log);
  if (s >= OUTAGE_STEPS - OUTAGE_MARGIN && kill(pid, SIGSTOP) == 0) {
    *paused = true;
    *s_pause = s;
  }
  return *paused;
}

static void outage_scenario(void) {
  double t0 = mono_s();
  pthread_join(g_first_start_th, NULL);
  g_first_start_pending = false;
  if (g_first_start.rc != 0) {
    CHECKF(false, "could not start an MLflow server in %s", g_own_state);
    return;
  }
  char path[1200];
  snprintf(path, sizeof path, "%s/uri", g_own_state);
  char *uri = test_read_text(path);
  REQUIRE(uri);
  fprintf(stderr, "[outage] own server %s (start-up took %.1f s, beside the "
          "other scenarios)\n", uri, g_first_start.took_s);
  mlflow_client *c = test_client_of(uri);

  char exp[128], dir[1100], log[1100];
  test_unique(exp, sizeof exp, "faults-outage");
  snprintf(dir, sizeof dir, "%s/outage", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/outage.log", GF_TEST_TMP);
  trainer_cmd t;
  make_cmd(&t, FASHION, dir, exp, OUTAGE_STEPS, 100, DEFAULT_SEED);
  pid_t pid = spawn(log, &t, uri);
  int rc = 0;
  /* A few seconds into the run (start-up, data, run creation) and past
   * its first logged steps and their batches. */
  if (!wait_step(pid, log, OUTAGE_KILL_STEP, 180, &rc)) {
    CHECKF(false, "outage: trainer ended (exit %d) before step %d", rc,
           OUTAGE_KILL_STEP);
    if (rc == -1) {
      kill(pid, SIGKILL);
      wait_rc(pid);
    }
    dump_log(log);
    goto out;
  }
  snprintf(path, sizeof path, "%s/pid", g_own_state);
  char *spid = test_read_text(path);
  REQUIRE(spid && atoi(spid) > 1);
  long s_kill = log_last_step(log);
  REQUIRE(kill(-atoi(spid), SIGKILL) == 0); /* server and its workers */
  free(spid);
  double t_kill = mono_s();
  bool paused = false;
  long s_pause = -1;
  /* Down for >= 3.5 s, and until the trainer shows 2 more log lines (a
   * trainer blocked on MLflow never does: 60 s cap), unless it nears its
   * end first. On a loaded machine a step can take 0.3 s, so progress is
   * asserted in steps, not in a rate. */
  while ((mono_s() - t_kill < 3.5 ||
          log_last_step(log) < s_kill + 2 * LOG_EVERY) &&
         mono_s() - t_kill < 60 && !pause_near_end(pid, log, &paused,
                                                   &s_pause))
    sleep_s(0.01);
  long s_mid = paused ? s_pause : log_last_step(log);
  double t_mid = mono_s() - t_kill;
  CHECKF(s_mid >= s_kill + 2 * LOG_EVERY, "outage: no training progress "
         "while the server was down (step %ld at the kill, %ld %.1f s later)",
         s_kill, s_mid, t_mid);
  CHECKF(waitpid(pid, &rc, WNOHANG) == 0, "outage: trainer exited during the "
         "outage");

  restarter r = {.state = g_own_state};
  atomic_init(&r.done, 0);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, restart_server, &r) == 0);
  while (!atomic_load(&r.done)) {
    pause_near_end(pid, log, &paused, &s_pause);
    sleep_s(0.01);
  }
  pthread_join(th, NULL);
  long s_back = log_last_step(log);
  if (paused) kill(pid, SIGCONT);
  double outage = mono_s() - t_kill;
  CHECKF(r.rc == 0, "outage: the server did not come back (start exit %d)",
         r.rc);
  fprintf(stderr, "[outage] server down %.1f s (restart took %.1f s): steps "
          "%ld at the kill, %ld after %.1f s, %ld when it was back%s\n",
          outage, r.took_s, s_kill, s_mid, t_mid, s_back,
          paused ? " (trainer paused near its end until the server answered)"
                 : "");
  if (paused)
    fprintf(stderr, "[outage] paused at step %ld\n", s_pause);
  rc = wait_rc_timeout(pid, 300, log);
  if (expect_rc(rc, 0, "outage run", log)) {
    snprintf(path, sizeof path, "%s/run_id", dir);
    char *run_id = test_read_text(path);
    REQUIRE(run_id);
    mlflow_run_status st = run_status(c, run_id);
    CHECKF(st == MLFLOW_RUN_FINISHED, "outage: run is %s, want FINISHED",
           status_name(st));
    for (int k = 0; k < N_KEYS; k++)
      check_history(c, run_id, g_keys[k], LOG_EVERY, OUTAGE_STEPS, "outage");
    check_all_keys(c, run_id, "outage");
    snprintf(path, sizeof path, "%s/mlflow.outbox", dir);
    CHECKF(access(path, F_OK) != 0, "outage: %s still exists after a "
           "FINISHED run", path);
    int running, failed;
    CHECK_INT_EQ(experiment_runs(c, exp, &running, &failed, NULL, 0), 1);
    free(run_id);
  }
out:
  mlflow_client_free(c);
  free(uri);
  stop_own_server();
  fprintf(stderr, "[outage] %.1f s\n", mono_s() - t0);
}

/* ---- scenario 4: data errors -------------------------------------------- */

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f);
  REQUIRE(fwrite(data, 1, n, f) == n);
  REQUIRE(fclose(f) == 0);
}

static void copy_prefix(const char *from, const char *to, size_t n) {
  size_t len = 0;
  char *buf = read_all(from, &len);
  REQUIRE(buf);
  write_file(to, buf, n < len ? n : len);
  free(buf);
}

static void copy_file(const char *from, const char *to) {
  copy_prefix(from, to, (size_t)-1);
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* One bad --data: exit 1 (or 2), a message naming `names`, no RUNNING run. */
static void data_case(mlflow_client *c, const char *name, const char *data,
                      const char *names) {
  char exp[128], dir[1100], log[1100];
  test_unique(exp, sizeof exp, "faults-data");
  snprintf(dir, sizeof dir, "%s/data-%s", GF_TEST_TMP, name);
  snprintf(log, sizeof log, "%s/data-%s.log", GF_TEST_TMP, name);
  trainer_cmd t;
  make_cmd(&t, data, dir, exp, 20, CKPT_EVERY, DEFAULT_SEED);
  int rc = wait_rc_timeout(spawn(log, &t, g_uri), 120, log);
  CHECKF(rc == 1 || rc == 2, "data %s: exit %d, want 1 (or 2)", name, rc);
  bool named = log_contains(log, names);
  CHECKF(named, "data %s: no message naming %s", name, names);
  if ((rc != 1 && rc != 2) || !named) dump_log(log);
  int running, failed;
  int n = experiment_runs(c, exp, &running, &failed, NULL, 0);
  CHECKF(running == 0, "data %s: %d runs left RUNNING", name, running);
  char *text = read_all(log, NULL);
  char *nl = text ? strrchr(text, '\n') : NULL;
  if (nl && nl > text) { /* last line, for the report */
    *nl = '\0';
    nl = strrchr(text, '\n');
  }
  fprintf(stderr, "[data] %s: exit %d, %s; \"%s\"\n", name, rc,
          n < 0 ? "no run created (experiment absent)"
                : n == 0 ? "no run created"
                         : failed == n ? "run(s) FAILED" : "run(s) left",
          nl ? nl + 1 : (text ? text : ""));
  free(text);
}

static void data_scenario(mlflow_client *c) {
  double t0 = mono_s();
  char d[1200], p[1300], q[1300];
  /* A --data dir that does not exist. */
  snprintf(d, sizeof d, "%s/no-such-data", GF_TEST_TMP);
  data_case(c, "missing-dir", d, d);

  /* Fashion-MNIST with its image file cut in the middle (gzip). */
  snprintf(d, sizeof d, "%s/trunc-gz", GF_TEST_TMP);
  REQUIRE(mkdir(d, 0755) == 0);
  snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", d);
  copy_prefix(FASHION "/train-images-idx3-ubyte.gz", p, 1000000);
  snprintf(q, sizeof q, "%s/train-labels-idx1-ubyte.gz", d);
  copy_file(FASHION "/train-labels-idx1-ubyte.gz", q);
  data_case(c, "truncated-gz", d, p);

  /* A plain IDX image file declaring 100 images of 28x28 holding 10. */
  snprintf(d, sizeof d, "%s/trunc-idx", GF_TEST_TMP);
  REQUIRE(mkdir(d, 0755) == 0);
  size_t n_img = 100, have = 10;
  uint8_t *img = calloc(1, 16 + have * 784);
  REQUIRE(img);
  put_be32(img, 0x803);
  put_be32(img + 4, (uint32_t)n_img);
  put_be32(img + 8, 28);
  put_be32(img + 12, 28);
  for (size_t i = 0; i < have * 784; i++) img[16 + i] = (uint8_t)(i * 7);
  snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", d);
  write_file(p, img, 16 + have * 784);
  free(img);
  uint8_t lab[8 + 100];
  memset(lab, 1, sizeof lab);
  put_be32(lab, 0x801);
  put_be32(lab + 4, (uint32_t)n_img);
  snprintf(q, sizeof q, "%s/train-labels-idx1-ubyte", d);
  write_file(q, lab, sizeof lab);
  data_case(c, "truncated-idx", d, p);

  /* An image folder with no image in it. */
  snprintf(d, sizeof d, "%s/empty-images", GF_TEST_TMP);
  REQUIRE(mkdir(d, 0755) == 0);
  snprintf(p, sizeof p, "images:%s", d);
  data_case(c, "empty-folder", p, d);
  fprintf(stderr, "[data] %.1f s\n", mono_s() - t0);
}

/* ---- scenario 5: a monitor batch that lands after the resume ------------ */

/* The resource monitor's figures are numbered by sample, not by training
 * step. A batch of them in flight when a trainer is killed can reach the
 * server after the resumed trainer read the run, and the resumed trainer
 * must not number its samples over it. Played with the tracker in-process
 * (gf/train.h), so that the late batch arrives exactly then: a child
 * starts the run, queues samples 0..4 of a monitor key and dies before its
 * logger sends them (a partial batch waits up to a second); the parent
 * resumes the run, sends those five points itself (the late batch), then
 * queues the resumed tracker's samples: every (key, step) once. */
static void inflight_scenario(mlflow_client *c) {
  double t0 = mono_s();
  const char *key = "system/cpu_utilization_percentage";
  char exp[128], dir[1100], path[1200];
  test_unique(exp, sizeof exp, "faults-inflight");
  snprintf(dir, sizeof dir, "%s/inflight", GF_TEST_TMP);
  REQUIRE(mkdir(dir, 0755) == 0);
  setenv("MLFLOW_TRACKING_URI", g_uri, 1);
  gf_train_config cfg;
  gf_train_config_default(&cfg);
  snprintf(cfg.checkpoint_dir, sizeof cfg.checkpoint_dir, "%s", dir);
  snprintf(cfg.experiment, sizeof cfg.experiment, "%s", exp);
  cfg.register_model[0] = '\0';
  int64_t ts = mlflow_now_ms();
  mlflow_metric late[5];
  for (int s = 0; s < 5; s++)
    late[s] = (mlflow_metric){key, 10.0 + s, ts + s, s};
  gf_log tlog = {gf_log_to_stream, stderr, 0};
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    gf_tracker *t = NULL;
    gf_err e;
    gf_tracker_start_info si = {&cfg, NULL, "cpu", NULL};
    if (gf_tracker_start(&t, &si, &tlog, &e) != GF_OK) {
      fprintf(stderr, "inflight: child: %s\n", e.msg);
      _exit(3);
    }
    if (gf_tracker_monitor_first_step(t) != 0) _exit(4);
    for (int s = 0; s < 5; s++)
      gf_tracker_metric(t, key, late[s].value, late[s].timestamp_ms, s);
    _exit(0); /* as if killed: the queued batch is not sent */
  }
  int rc = wait_rc(pid);
  CHECKF(rc == 0, "inflight: the first tracker exited %d", rc);
  snprintf(path, sizeof path, "%s/run_id", dir);
  char *run_id = test_read_text(path);
  REQUIRE(rc == 0 && run_id);
  snprintf(path, sizeof path, "%s/monitor_step", dir);
  char *reserved = test_read_text(path);
  char want[128];
  snprintf(want, sizeof want, "%s 5", run_id);
  CHECKF(reserved && strcmp(reserved, want) == 0, "inflight: %s holds '%s', "
         "want '%s'", path, reserved ? reserved : "(none)", want);
  free(reserved);

  gf_tracker *t = NULL;
  gf_err e;
  gf_tracker_start_info si = {&cfg, run_id, "cpu", NULL};
  REQUIRE(gf_tracker_start(&t, &si, &tlog, &e) == GF_OK);
  int64_t first = gf_tracker_monitor_first_step(t);
  CHECKF(first >= 5, "inflight: the resumed tracker numbers samples from "
         "%lld, over the 5 its predecessor may have sent", (long long)first);
  mlflow_error me;
  CHECKF(mlflow_log_batch(c, run_id, late, 5, NULL, 0, NULL, 0, &me) ==
             MLFLOW_OK, "inflight: the late batch: %s", me.message);
  for (int s = 0; s < 3; s++)
    gf_tracker_metric(t, key, 50.0 + s, mlflow_now_ms(), first + s);
  CHECK(gf_tracker_finish(t, MLFLOW_RUN_FINISHED, &tlog) == 0);
  mlflow_metric_list h;
  if (mlflow_metric_history(c, run_id, key, &h, &me) == MLFLOW_OK) {
    CHECKF(h.count == 8, "inflight: %s has %zu points, want 8", key, h.count);
    mlflow_metric_list_free(&h);
  }
  check_exactly_once(c, run_id, "inflight", NULL);
  unsetenv("MLFLOW_TRACKING_URI");
  free(run_id);
  fprintf(stderr, "[inflight] resumed at monitor step %lld: %.1f s\n",
          (long long)first, mono_s() - t0);
  test_drop_tmp(dir);
}

int main(void) {
  double t_all = mono_s();
  if (!tu_have_fashion()) return 1;
  const char *seed = getenv("GF_FAULTS_SEED");
  g_rng = seed && *seed ? strtoull(seed, NULL, 0) : 20240611u;
  const char *ref_seed = getenv("GF_FAULTS_REF_SEED");
  if (ref_seed && *ref_seed) g_ref_seed = strtol(ref_seed, NULL, 0);
  fprintf(stderr, "GF_FAULTS_SEED=%llu (kill plan)%s\n",
          (unsigned long long)g_rng,
          g_ref_seed != DEFAULT_SEED ? "; GF_FAULTS_REF_SEED differs from "
                                       "the runs' seed: expect failures"
                                     : "");
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_fresh_dir(GF_TEST_TMP);
  atexit(kill_child_at_exit);
  signal(SIGPIPE, SIG_IGN);
  test_tracking_env(NULL);

  mlflow_client *c = test_client_of(g_uri);

  const char *only = getenv("GF_FAULTS_ONLY"); /* by hand: one scenario */
#define WANT(name) (!only || !*only || strstr(only, name))
  if (WANT("inflight")) inflight_scenario(c); /* forks: before any thread */
  if (WANT("outage")) own_server_start_async();
  if (WANT("data")) data_scenario(c);
  if (WANT("kill") || WANT("corrupt")) reference_run(c);
  if (WANT("kill")) sigkill_scenario(c);
  if (WANT("corrupt")) {
    corrupt_scenario(c, true);
    corrupt_scenario(c, false);
  }
  if (WANT("outage")) outage_scenario();
  mlflow_client_free(c);
  fprintf(stderr, "test_train_faults: %.1f s in all\n", mono_s() - t_all);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
