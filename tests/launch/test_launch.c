/* test_launch.c - `ganflow launch` supervising real 2-rank ganflow-train
 * jobs (local launcher: CPU ranks over gf_comm's tcp engine, one thread
 * each) on Fashion-MNIST, against the MLflow server of the `mlflow` ctest
 * fixture. The test injects the failures from outside, as an operator's
 * bad day would, reading the ranks' heartbeat files to know where they are:
 *
 *   ref     an undisturbed job: the reference tensors.
 *   kills   kill -9 of a rank at 3 seeded-random steps, then SIGSTOP of
 *           one: the job finishes without help, byte-identical to ref,
 *           one metric point per (key, step), 4 restarts in MLflow
 *           (sys/restarts, ganflow.restart.N); the stopped rank is found
 *           within --hang-timeout + a few seconds.
 *   slot    slot 1 cannot start (a wrapper refuses it while a marker file
 *           exists): the job goes on at world size 1 with the same global
 *           batch (--grad-accum 2: the same micro-batch), and grows back to
 *           2 ranks at the next restart once the slot works again.
 *   exhaust --max-restarts 2 and three kills, the second one as the
 *           attempt starts training (two restarts from one checkpoint:
 *           sys/restarts at steps 1 and 2): FAILED with the reason (exit
 *           1, run FAILED, tag ganflow.launch.failure), every checkpoint
 *           still on disk and verifying.
 *   term    SIGTERM to the supervisor: exit 143, run KILLED with a
 *           checkpoint; the same command resumes it to FINISHED,
 *           byte-identical to ref.
 *   mpirun  --launcher mpirun (the MPI engine) with a --hostfile of 2
 *           slots: the host file shrinks to 1 slot and a rank is killed
 *           (mpirun ends the job): restarted on 1 rank, FINISHED, each
 *           step once. Skipped without mpirun.
 *   watchdog  no supervisor: 2 ranks started by hand with torchrun-style
 *           variables and --comm-timeout 3; SIGSTOP of rank 1: rank 0's
 *           collective times out and it exits 1 with the reason within
 *           the timeout + a few seconds.
 * Every scenario's run is checked for exactly-once over all its metric
 * keys (no (key, step) twice: the losses, perf/, the resource monitor's
 * figures of every rank, sampled every 0.25 s so that each attempt has
 * some, sys/restarts and sys/restart_recovery_s at the restart's number).
 * It prints the recovery figures (a rank's death to the restarted job's
 * first new step, a SIGSTOP to its detection). GF_LAUNCH_ONLY=name runs one
 * scenario (and ref when it needs it); GF_LAUNCH_SEED changes the kill
 * steps. FAILS when Fashion-MNIST is missing. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/heartbeat.h"
#include "mlflow_test.h"
#include "train_test_util.h"

#define STEPS 80
#define EVERY 5 /* --log-every and --checkpoint-every */
#define HANG_TIMEOUT 4.0
#define MONITOR_INTERVAL "0.25" /* seconds between monitor samples */

static char g_uri[512];
static pid_t g_child;
static mlflow_client *g_mc;

typedef struct cmd {
  char *argv[64];
  int n;
  char store[16][160];
  int ns;
} cmd;

static void add(cmd *c, const char *a) {
  REQUIRE(c->n < 63);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

/* "--flag=v", kept in c. */
static const char *flag(cmd *c, const char *name, long v) {
  REQUIRE(c->ns < 16);
  snprintf(c->store[c->ns], sizeof c->store[c->ns], "%s=%ld", name, v);
  return c->store[c->ns++];
}

typedef struct job {
  char name[32];
  char dir[512];   /* checkpoint dir */
  char hb[600];    /* heartbeat dir */
  char log[512];   /* the supervisor's and the ranks' output */
  char exp[160];
  char marker[512]; /* slot: exists while slot 1 must fail */
} job;

static void job_init(job *j, const char *name) {
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->dir, sizeof j->dir, "%s/%s", GF_TEST_TMP, name);
  snprintf(j->hb, sizeof j->hb, "%s/heartbeat", j->dir);
  snprintf(j->log, sizeof j->log, "%s/%s.log", GF_TEST_TMP, name);
  snprintf(j->marker, sizeof j->marker, "%s/%s.slot1-down", GF_TEST_TMP, name);
  char u[128];
  test_unique(u, sizeof u, name);
  snprintf(j->exp, sizeof j->exp, "launch-%s", u);
}

/* The training command: [wrapper] ganflow-train <the job's flags>. */
static void train_cmd(cmd *c, const job *j, bool wrapper);

/* ganflow launch [opts] -- [wrapper] ganflow-train <the job's flags> */
static void build(cmd *c, const job *j, int max_restarts, int nproc_min,
                  bool wrapper) {
  c->n = c->ns = 0;
  add(c, GF_GANFLOW_BIN);
  add(c, "launch");
  add(c, "--nproc");
  add(c, "2");
  add(c, flag(c, "--nproc-min", nproc_min));
  add(c, flag(c, "--max-restarts", max_restarts));
  add(c, flag(c, "--hang-timeout", (long)HANG_TIMEOUT));
  add(c, "--start-timeout=120");
  add(c, "--");
  train_cmd(c, j, wrapper);
}

static void train_cmd(cmd *c, const job *j, bool wrapper) {
  if (wrapper) {
    /* slot 1 fails at once while the marker exists (as a broken GPU or a
     * missing library on one host would) */
    add(c, "/bin/sh");
    add(c, "-c");
    add(c, "if [ \"$GANFLOW_SLOT\" = 1 ] && [ -e \"$MARK\" ]; then "
           "echo \"slot 1 is down\" >&2; exit 3; fi; exec \"$@\"");
    add(c, "sh");
  }
  add(c, GF_TRAIN_BIN);
  const char *fixed[] = {"--data", FASHION, "--model", "mlp", "--batch", "32",
                         "--threads", "1", "--seed", "11", "--sample-every",
                         "0", "--eval-every", "0", "--register-model", "",
                         "--keep", "5", "--check-every", "10",
                         "--comm-timeout", "60"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) add(c, fixed[i]);
  add(c, flag(c, "--steps", STEPS));
  add(c, flag(c, "--log-every", EVERY));
  add(c, flag(c, "--checkpoint-every", EVERY));
  add(c, "--checkpoint-dir");
  add(c, j->dir);
  add(c, "--experiment");
  add(c, j->exp);
}

static pid_t spawn(const job *j, const cmd *c, bool append) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(j->log, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setenv("MLFLOW_TRACKING_URI", g_uri, 1);
    /* resource-monitor samples in every attempt, however short: their
     * figures fall under the exactly-once check of check_run */
    setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", MONITOR_INTERVAL, 1);
    setenv("MARK", j->marker, 1);
    execv(c->argv[0], c->argv);
    _exit(127);
  }
  g_child = pid;
  return pid;
}

static int wait_exit(pid_t pid, double timeout_s, const job *j) {
  int rc = wait_group(pid, timeout_s, j->log);
  g_child = 0;
  return rc;
}

static void kill_child_at_exit(void) {
  if (g_child > 0) {
    kill(-g_child, SIGKILL);
    waitpid(g_child, NULL, 0);
  }
}

/* Rank r's newest heartbeat; false when there is none (yet). */
static bool beat(const job *j, int r, gf_heartbeat_rec *out) {
  gf_err e;
  return gf_heartbeat_read(j->hb, r, out, &e) == GF_OK;
}

/* Waits until rank 0 of the attempt that is not `old_pid` has reached
 * `step` in training; its record in *out. */
static bool wait_step(const job *j, long old_pid, int64_t step, double timeout_s,
                      gf_heartbeat_rec *out) {
  double t0 = mono_s();
  while (mono_s() - t0 < timeout_s) {
    if (beat(j, 0, out) && out->pid != old_pid && out->phase == GF_HB_TRAIN &&
        out->step >= step)
      return true;
    sleep_s(0.01);
  }
  fprintf(stderr, "%s: rank 0 did not reach step %lld in %.0f s\n", j->name,
          (long long)step, timeout_s);
  dump_log(j->log);
  return false;
}

/* Waits (polling every ms) until rank 0 of the attempt that is not
 * `old_pid` beats in training, whatever its step; its record in *out. */
static bool wait_train(const job *j, long old_pid, double timeout_s,
                       gf_heartbeat_rec *out) {
  double t0 = mono_s();
  while (mono_s() - t0 < timeout_s) {
    if (beat(j, 0, out) && out->pid != old_pid && out->phase == GF_HB_TRAIN)
      return true;
    sleep_s(0.001);
  }
  fprintf(stderr, "%s: rank 0 did not start training in %.0f s\n", j->name,
          timeout_s);
  dump_log(j->log);
  return false;
}

/* After a failure at t_fail of the attempt whose rank 0 was old_pid: the
 * next attempt's first completed step; returns the seconds from t_fail,
 * and *t_new when its rank 0 first beat (the restart seen). */
static double recovery(const job *j, long old_pid, double t_fail, double *t_new) {
  gf_heartbeat_rec h;
  double t0 = mono_s();
  int64_t first = -2;
  *t_new = -1;
  while (mono_s() - t0 < 120) {
    if (beat(j, 0, &h) && h.pid != old_pid) {
      if (*t_new < 0) *t_new = mono_s() - t_fail;
      if (h.phase == GF_HB_TRAIN) {
        if (first == -2) first = h.step;
        else if (h.step > first) return mono_s() - t_fail;
      }
    }
    sleep_s(0.005);
  }
  CHECKF(0, "%s: no new step within 120 s of the failure", j->name);
  dump_log(j->log);
  return -1;
}

static char *run_of(const job *j) {
  char path[1024];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(j->dir, path, sizeof path, &meta, NULL, NULL, 0,
                                &e) != GF_OK)
    return NULL;
  return strdup(meta.run_id);
}

static void check_run(const job *j, const char *run_id, mlflow_run_status want,
                      int restarts) {
  mlflow_run run;
  mlflow_error e;
  REQUIRE(mlflow_run_get(g_mc, run_id, &run, &e) == MLFLOW_OK);
  CHECKF(run.info.status == want, "%s: run status %s, want %s", j->name,
         mlflow_run_status_name(run.info.status), mlflow_run_status_name(want));
  const char *n = mlflow_run_tag(&run, "ganflow.restarts");
  if (restarts)
    CHECKF(n && atoi(n) == restarts, "%s: ganflow.restarts %s, want %d", j->name,
           n ? n : "(none)", restarts);
  for (int i = 1; i <= restarts; i++) {
    char key[64];
    snprintf(key, sizeof key, "ganflow.restart.%d", i);
    const char *v = mlflow_run_tag(&run, key);
    CHECKF(v && strstr(v, "resuming from step"), "%s: tag %s: %s", j->name, key,
           v ? v : "(none)");
    if (v) fprintf(stderr, "%s: %s = %s\n", j->name, key, v);
  }
  mlflow_run_free(&run);
  mlflow_metric_list h;
  /* restart n of the run: sys/restarts = n and sys/restart_recovery_s at
   * step n (a step that no other restart of the run takes) */
  if (mlflow_metric_history(g_mc, run_id, "sys/restarts", &h, &e) == MLFLOW_OK) {
    CHECKF((int)h.count == restarts, "%s: sys/restarts has %zu points, want %d",
           j->name, h.count, restarts);
    for (size_t i = 0; i < h.count; i++)
      CHECKF(h.items[i].value >= 1 && h.items[i].value <= restarts &&
             h.items[i].step == (int64_t)h.items[i].value,
             "%s: sys/restarts %g at step %lld", j->name, h.items[i].value,
             (long long)h.items[i].step);
    mlflow_metric_list_free(&h);
  } else {
    CHECKF(0, "%s: sys/restarts: %s", j->name, e.message);
  }
  if (restarts &&
      mlflow_metric_history(g_mc, run_id, "sys/restart_recovery_s", &h, &e) ==
          MLFLOW_OK) {
    CHECKF((int)h.count <= restarts, "%s: sys/restart_recovery_s has %zu "
           "points, want at most %d", j->name, h.count, restarts);
    for (size_t i = 0; i < h.count; i++)
      CHECKF(h.items[i].step >= 1 && h.items[i].step <= restarts,
             "%s: sys/restart_recovery_s at step %lld", j->name,
             (long long)h.items[i].step);
    mlflow_metric_list_free(&h);
  }
  /* every key of the run, the monitor's figures among them */
  long points = 0;
  int keys = check_exactly_once(g_mc, run_id, j->name, &points);
  int rss = run_keys_ending(g_mc, run_id, "rss_megabytes");
  CHECKF(rss > 0, "%s: no resource-monitor sample in the run (no "
         "*rss_megabytes key)", j->name);
  fprintf(stderr, "%s: exactly-once: %d keys (%d of RSS), %ld points\n",
          j->name, keys, rss, points);
}

static void final_ckpt(const job *j, char *out, size_t cap) {
  snprintf(out, cap, "%s/ckpt-%012d.safetensors", j->dir, STEPS);
}

static bool only(const char *name) {
  const char *o = getenv("GF_LAUNCH_ONLY");
  return !o || !*o || strcmp(o, name) == 0;
}

/* ---- scenarios ----------------------------------------------------------- */

static bool scenario_ref(job *ref) {
  job_init(ref, "ref");
  cmd c;
  build(&c, ref, 0, 2, false);
  int rc = wait_exit(spawn(ref, &c, false), 300, ref);
  CHECKF(rc == 0, "ref: exit %d", rc);
  if (rc != 0) dump_log(ref->log);
  char *run = run_of(ref);
  if (run) {
    check_run(ref, run, MLFLOW_RUN_FINISHED, 0);
    free(run);
  }
  return rc == 0;
}

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static void scenario_kills(const job *ref) {
  job j;
  job_init(&j, "kills");
  const char *env = getenv("GF_LAUNCH_SEED");
  uint64_t seed = env && *env ? strtoull(env, NULL, 10) : 20261124;
  /* 3 kills at increasing random steps in [8, 60), then a SIGSTOP */
  int64_t at[4];
  int who[4];
  int64_t lo = 8;
  int first = (int)(lcg(&seed) % 2); /* the ranks take turns: rank 0 (the
                                        MLflow writer) dies too */
  for (int i = 0; i < 4; i++) {
    at[i] = lo + (int64_t)(lcg(&seed) % 10);
    who[i] = (first + i) % 2;
    lo = at[i] + 4;
  }
  fprintf(stderr, "kills: seed %llu: kill -9 rank %d at step %lld, rank %d at "
          "%lld, rank %d at %lld; SIGSTOP rank %d at %lld\n",
          (unsigned long long)(env && *env ? strtoull(env, NULL, 10) : 20261124),
          who[0], (long long)at[0], who[1], (long long)at[1], who[2],
          (long long)at[2], who[3], (long long)at[3]);
  cmd c;
  build(&c, &j, 4, 2, false);
  pid_t sup = spawn(&j, &c, false);
  long old = -1, stopped_pid = 0;
  for (int i = 0; i < 4; i++) {
    gf_heartbeat_rec h0, hv;
    if (!wait_step(&j, old, at[i], 120, &h0)) break;
    if (!beat(&j, who[i], &hv)) {
      CHECKF(0, "kills: no heartbeat of rank %d", who[i]);
      break;
    }
    old = h0.pid;
    double t = mono_s();
    if (i < 3) {
      kill((pid_t)hv.pid, SIGKILL);
      double t_new = 0, rec = recovery(&j, old, t, &t_new);
      fprintf(stderr, "kills: kill -9 of rank %d at step %lld: restart seen "
              "after %.2f s, first new step %.2f s after the kill\n", who[i],
              (long long)hv.step, t_new, rec);
      CHECKF(rec >= 0 && rec <= 15, "kills: recovery %.2f s", rec);
    } else {
      kill((pid_t)hv.pid, SIGSTOP);
      stopped_pid = hv.pid;
      double t_new = 0, rec = recovery(&j, old, t, &t_new);
      fprintf(stderr, "kills: SIGSTOP of rank %d at step %lld: detected and "
              "restarted after %.2f s (hang timeout %.0f s), first new step "
              "after %.2f s\n", who[i], (long long)hv.step, t_new,
              HANG_TIMEOUT, rec);
      CHECKF(t_new > 0 && t_new <= HANG_TIMEOUT + 5, "kills: hang seen after "
             "%.2f s", t_new);
    }
  }
  int rc = wait_exit(sup, 300, &j);
  CHECKF(rc == 0, "kills: exit %d", rc);
  if (rc != 0) dump_log(j.log);
  char got[1024], want[1024];
  final_ckpt(&j, got, sizeof got);
  final_ckpt(ref, want, sizeof want);
  compare_ckpts(got, want, "kills vs ref");
  char *run = run_of(&j);
  REQUIRE(run);
  check_run(&j, run, MLFLOW_RUN_FINISHED, 4);
  check_history(g_mc, run, "loss/d", EVERY, STEPS, "kills");
  check_history(g_mc, run, "loss/g", EVERY, STEPS, "kills");
  free(run);
  CHECK(log_contains(j.log, "no heartbeat for"));
  char blame[64]; /* the stopped rank is the one named */
  snprintf(blame, sizeof blame, "rank %d (pid %ld, stopped)", who[3], stopped_pid);
  CHECKF(log_contains(j.log, blame), "kills: the log does not blame %s", blame);
}

static void scenario_slot(void) {
  job j;
  job_init(&j, "slot");
  FILE *m = fopen(j.marker, "w");
  REQUIRE(m);
  fclose(m);
  cmd c;
  build(&c, &j, 3, 1, true);
  pid_t sup = spawn(&j, &c, false);
  gf_heartbeat_rec h, h1;
  bool ok = wait_step(&j, -1, 20, 120, &h);
  CHECKF(ok && !beat(&j, 1, &h1), "slot: a second rank runs while slot 1 is down");
  /* the slot comes back; a rank dies: the restart uses both slots again */
  unlink(j.marker);
  if (ok) kill((pid_t)h.pid, SIGKILL);
  gf_heartbeat_rec n1;
  double t0 = mono_s();
  bool two = false;
  while (ok && mono_s() - t0 < 60 && !two) {
    two = beat(&j, 1, &n1) && n1.phase == GF_HB_TRAIN;
    sleep_s(0.05);
  }
  CHECKF(two, "slot: the job did not grow back to 2 ranks");
  int rc = wait_exit(sup, 300, &j);
  CHECKF(rc == 0, "slot: exit %d", rc);
  if (rc != 0) dump_log(j.log);
  char *run = run_of(&j);
  REQUIRE(run);
  check_run(&j, run, MLFLOW_RUN_FINISHED, 2);
  mlflow_run r;
  mlflow_error e;
  REQUIRE(mlflow_run_get(g_mc, run, &r, &e) == MLFLOW_OK);
  const char *ws = mlflow_run_param(&r, "world_size");
  const char *ga = mlflow_run_param(&r, "grad_accum");
  const char *b = mlflow_run_param(&r, "batch");
  CHECKF(ws && strcmp(ws, "1") == 0, "slot: world_size %s", ws ? ws : "-");
  CHECKF(ga && strcmp(ga, "2") == 0, "slot: grad_accum %s", ga ? ga : "-");
  CHECKF(b && strcmp(b, "32") == 0, "slot: batch %s", b ? b : "-");
  const char *t1 = mlflow_run_tag(&r, "ganflow.restart.1");
  const char *t2 = mlflow_run_tag(&r, "ganflow.restart.2");
  CHECKF(t1 && strstr(t1, "before training began") && strstr(t1, "on 1 rank (was 2)"),
         "slot: restart 1: %s", t1 ? t1 : "-");
  CHECKF(t2 && strstr(t2, "on 2 ranks (was 1)"), "slot: restart 2: %s", t2 ? t2 : "-");
  mlflow_run_free(&r);
  check_history(g_mc, run, "loss/d", EVERY, STEPS, "slot");
  free(run);
  char last[1024];
  final_ckpt(&j, last, sizeof last);
  CHECKF(access(last, F_OK) == 0, "slot: no final checkpoint %s", last);
}

static void scenario_exhaust(void) {
  job j;
  job_init(&j, "exhaust");
  cmd c;
  build(&c, &j, 2, 2, false);
  pid_t sup = spawn(&j, &c, false);
  gf_heartbeat_rec h, v;
  long old = -1;
  /* rank 1 at step 12; then rank 0 of the next attempt at its first beat
   * in training, before it completes a step (so before the next
   * checkpoint): the two restarts resume from the same step; then rank 1
   * at step 22, which exhausts --max-restarts 2 */
  for (int i = 0; i < 3; i++) {
    if (i == 1) {
      if (!wait_train(&j, old, 120, &h)) break;
      old = h.pid;
      kill((pid_t)h.pid, SIGKILL);
      continue;
    }
    if (!wait_step(&j, old, i ? 22 : 12, 120, &h) || !beat(&j, 1, &v)) break;
    old = h.pid;
    kill((pid_t)v.pid, SIGKILL);
  }
  int rc = wait_exit(sup, 120, &j);
  CHECKF(rc == 1, "exhaust: exit %d, want 1", rc);
  CHECK(log_contains(j.log, "FAILED: 2 restarts used (--max-restarts)"));
  /* the checkpoints are all there and verify: none skipped */
  char path[1024];
  gf_ckpt_meta meta;
  int skipped = -1;
  gf_err e;
  REQUIRE(gf_checkpoint_find_latest(j.dir, path, sizeof path, &meta, &skipped,
                                    NULL, 0, &e) == GF_OK);
  CHECKF(skipped == 0 && meta.step >= 20, "exhaust: newest step %lld, %d "
         "skipped", (long long)meta.step, skipped);
  CHECKF(count_ckpts(j.dir) >= 4, "exhaust: %d checkpoints", count_ckpts(j.dir));
  mlflow_run r;
  mlflow_error me;
  REQUIRE(mlflow_run_get(g_mc, meta.run_id, &r, &me) == MLFLOW_OK);
  CHECKF(r.info.status == MLFLOW_RUN_FAILED, "exhaust: run %s",
         mlflow_run_status_name(r.info.status));
  const char *why = mlflow_run_tag(&r, "ganflow.launch.failure");
  CHECKF(why && strstr(why, "was killed by signal 9"), "exhaust: failure tag %s",
         why ? why : "-");
  /* two restarts from one step: restart 1 and 2 of the run, at steps 1
   * and 2 of sys/restarts (at the step resumed from, both would share it) */
  const char *t1 = mlflow_run_tag(&r, "ganflow.restart.1");
  const char *t2 = mlflow_run_tag(&r, "ganflow.restart.2");
  const char *f1 = t1 ? strstr(t1, "resuming from step") : NULL;
  const char *f2 = t2 ? strstr(t2, "resuming from step") : NULL;
  CHECKF(f1 && f2 && strcmp(f1, f2) == 0, "exhaust: restarts 1 and 2 resume "
         "from different steps: %s | %s", t1 ? t1 : "-", t2 ? t2 : "-");
  mlflow_run_free(&r);
  mlflow_metric_list hist;
  if (mlflow_metric_history(g_mc, meta.run_id, "sys/restarts", &hist, &me) ==
      MLFLOW_OK) {
    CHECKF(hist.count == 2, "exhaust: sys/restarts has %zu points", hist.count);
    for (size_t i = 0; i < hist.count; i++)
      CHECKF(hist.items[i].step == (int64_t)hist.items[i].value &&
             hist.items[i].step >= 1 && hist.items[i].step <= 2,
             "exhaust: sys/restarts %g at step %lld", hist.items[i].value,
             (long long)hist.items[i].step);
    mlflow_metric_list_free(&hist);
  } else {
    CHECKF(0, "exhaust: sys/restarts: %s", me.message);
  }
  check_exactly_once(g_mc, meta.run_id, "exhaust", NULL);
}

static void scenario_term(const job *ref) {
  job j;
  job_init(&j, "term");
  cmd c;
  build(&c, &j, 0, 2, false);
  pid_t sup = spawn(&j, &c, false);
  gf_heartbeat_rec h;
  if (wait_step(&j, -1, 30, 120, &h)) kill(sup, SIGTERM);
  int rc = wait_exit(sup, 120, &j);
  CHECKF(rc == 143, "term: exit %d, want 143", rc);
  char *run = run_of(&j);
  REQUIRE(run);
  mlflow_run r;
  mlflow_error e;
  REQUIRE(mlflow_run_get(g_mc, run, &r, &e) == MLFLOW_OK);
  CHECKF(r.info.status == MLFLOW_RUN_KILLED, "term: run %s after SIGTERM",
         mlflow_run_status_name(r.info.status));
  mlflow_run_free(&r);
  long stopped_at = newest_ckpt_on_disk(j.dir);
  CHECKF(stopped_at >= 30 && stopped_at < STEPS, "term: stopped at %ld", stopped_at);
  /* the same command resumes it */
  rc = wait_exit(spawn(&j, &c, true), 300, &j);
  CHECKF(rc == 0, "term: resume exit %d", rc);
  char *run2 = run_of(&j);
  CHECKF(run2 && strcmp(run, run2) == 0, "term: resumed into run %s, not %s",
         run2 ? run2 : "-", run);
  check_run(&j, run, MLFLOW_RUN_FINISHED, 0);
  check_history(g_mc, run, "loss/d", EVERY, STEPS, "term");
  char got[1024], want[1024];
  final_ckpt(&j, got, sizeof got);
  final_ckpt(ref, want, sizeof want);
  compare_ckpts(got, want, "term vs ref");
  free(run);
  free(run2);
}

static void scenario_mpirun(void) {
  if (!GF_MPIEXEC[0]) {
    fprintf(stderr, "mpirun: skipped (no mpirun in this build)\n");
    return;
  }
  job j;
  job_init(&j, "mpirun");
  cmd c;
  c.n = c.ns = 0;
  char hostfile[600];
  snprintf(hostfile, sizeof hostfile, "%s/mpirun.hosts", GF_TEST_TMP);
  FILE *hf = fopen(hostfile, "w");
  REQUIRE(hf);
  fputs("localhost slots=2\n", hf);
  fclose(hf);
  const char *pre[] = {GF_GANFLOW_BIN, "launch", "--nproc", "2",
                       "--nproc-min", "1", "--hostfile", hostfile,
                       "--launcher", "mpirun", "--max-restarts", "2",
                       "--hang-timeout", "30", "--start-timeout", "120",
                       "--launcher-arg=--allow-run-as-root",
                       "--launcher-arg=--oversubscribe",
                       "--launcher-arg=--bind-to", "--launcher-arg=none", "--"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) add(&c, pre[i]);
  train_cmd(&c, &j, false);
  pid_t sup = spawn(&j, &c, false);
  gf_heartbeat_rec h, v;
  if (wait_step(&j, -1, 15, 120, &h) && beat(&j, 1, &v)) {
    hf = fopen(hostfile, "w"); /* a host lost one of its slots */
    REQUIRE(hf);
    fputs("localhost slots=1 # one slot left\n", hf);
    fclose(hf);
    kill((pid_t)v.pid, SIGKILL);
    double t_new = 0, rec = recovery(&j, h.pid, mono_s(), &t_new);
    fprintf(stderr, "mpirun: kill -9 of rank 1 at step %lld: first new step "
            "%.2f s after the kill\n", (long long)v.step, rec);
  }
  int rc = wait_exit(sup, 300, &j);
  CHECKF(rc == 0, "mpirun: exit %d", rc);
  if (rc != 0) dump_log(j.log);
  char *run = run_of(&j);
  REQUIRE(run);
  check_run(&j, run, MLFLOW_RUN_FINISHED, 1);
  check_history(g_mc, run, "loss/d", EVERY, STEPS, "mpirun");
  mlflow_run r;
  mlflow_error e;
  REQUIRE(mlflow_run_get(g_mc, run, &r, &e) == MLFLOW_OK);
  const char *t1 = mlflow_run_tag(&r, "ganflow.restart.1");
  CHECKF(t1 && strstr(t1, "on 1 rank (was 2)"), "mpirun: restart 1: %s",
         t1 ? t1 : "-");
  mlflow_run_free(&r);
  free(run);
}

static void scenario_watchdog(void) {
  job j;
  job_init(&j, "watchdog");
  cmd c;
  c.n = c.ns = 0;
  train_cmd(&c, &j, false);
  add(&c, "--comm-timeout=3");
  int port = 20000 + (int)(getpid() % 20000);
  pid_t pid[2];
  char logs[2][600];
  for (int r = 0; r < 2; r++) {
    snprintf(logs[r], sizeof logs[r], "%s/watchdog-%d.log", GF_TEST_TMP, r);
    pid[r] = fork();
    REQUIRE(pid[r] >= 0);
    if (pid[r] == 0) {
      int fd = open(logs[r], O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(126);
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
      char b[16];
      setenv("MLFLOW_TRACKING_URI", g_uri, 1);
      setenv("GANFLOW_HEARTBEAT_DIR", GF_TEST_TMP, 1); /* to see the steps */
      snprintf(b, sizeof b, "%d", r);
      setenv("RANK", b, 1);
      setenv("LOCAL_RANK", b, 1);
      setenv("WORLD_SIZE", "2", 1);
      setenv("LOCAL_WORLD_SIZE", "2", 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      snprintf(b, sizeof b, "%d", port);
      setenv("MASTER_PORT", b, 1);
      execv(c.argv[0], c.argv);
      _exit(127);
    }
  }
  /* rank 1 at step 10 stops; rank 0 must give up on its own */
  gf_heartbeat_rec h;
  gf_err e;
  double t0 = mono_s();
  bool at10 = false;
  while (!at10 && mono_s() - t0 < 120) {
    at10 = gf_heartbeat_read(GF_TEST_TMP, 1, &h, &e) == GF_OK &&
           h.phase == GF_HB_TRAIN && h.step >= 10;
    sleep_s(0.01);
  }
  CHECKF(at10, "watchdog: rank 1 never reached step 10");
  kill(pid[1], SIGSTOP);
  double t_stop = mono_s();
  int st = 0;
  bool ended = false;
  while (!ended && mono_s() - t_stop < 30) {
    ended = waitpid(pid[0], &st, WNOHANG) == pid[0];
    sleep_s(0.05);
  }
  double dt = mono_s() - t_stop;
  kill(pid[1], SIGKILL);
  waitpid(pid[1], NULL, 0);
  if (!ended) {
    kill(pid[0], SIGKILL);
    waitpid(pid[0], &st, 0);
  }
  CHECKF(ended && decode_status(st) == 1 && dt <= 3 + 5,
         "watchdog: rank 0 %s after %.1f s (exit %d)", ended ? "ended" : "hung",
         dt, decode_status(st));
  CHECKF(log_contains(logs[0], "did not complete within 3 s"),
         "watchdog: rank 0's log lacks the reason");
  if (!log_contains(logs[0], "did not complete within 3 s")) dump_log(logs[0]);
  fprintf(stderr, "watchdog: SIGSTOP of rank 1: rank 0 exited %.1f s later "
          "(--comm-timeout 3)\n", dt);
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  g_mc = test_client_of(g_uri);
  atexit(kill_child_at_exit);
  signal(SIGPIPE, SIG_IGN);
  tu_fresh_dir(GF_TEST_TMP);

  job ref;
  bool need_ref = only("kills") || only("term");
  bool have_ref = need_ref && scenario_ref(&ref);
  if (only("kills") && have_ref) scenario_kills(&ref);
  if (only("slot")) scenario_slot();
  if (only("exhaust")) scenario_exhaust();
  if (only("term") && have_ref) scenario_term(&ref);
  if (only("mpirun")) scenario_mpirun();
  if (only("watchdog")) scenario_watchdog();
  mlflow_client_free(g_mc);
  return check_report();
}
