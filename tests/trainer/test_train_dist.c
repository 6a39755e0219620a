/* test_train_dist.c - ganflow-train on several CPU ranks (DESIGN §4.6),
 * launched with the real `mpirun` of Open MPI (oversubscribed, one thread
 * per rank), on Fashion-MNIST, against the MLflow server of the `mlflow`
 * ctest fixture. Every 2-rank run passes --check-every 1: each step the
 * ranks compare digests of their parameters and Adam moments, and a
 * difference fails the run, so every scenario below also checks that the
 * ranks stay identical.
 *
 *   1. Sync BN: 2 ranks x 8 images with --sync-bn against 1 rank x 16 (the
 *      same global batch, 20 steps of dcgan): the parameters within
 *      float rounding of the one-rank run (SYNC_*_TOL says how that is
 *      told apart from a wrong function).
 *   2. kill -9 of rank 1 mid-run (after a checkpoint), then the same
 *      command again: it resumes into the same MLflow run, which ends
 *      FINISHED with exactly one point per (key, step), and the final
 *      checkpoint is byte-identical to an uninterrupted 2-rank run's.
 *   3. World size changes on resume: the first 10 steps on 2 ranks, the
 *      next 10 on 1 (default mode: within rounding of the 2-rank run);
 *      with --exact-reduce, 1 rank and 2 ranks byte-identical, and 10 + 10
 *      steps on 2 then 1 and on 1 then 2 ranks byte-identical to both.
 *   4. Bad launches fail cleanly on every rank: a bad flag on rank 1 only
 *      (an MPMD command line), a --batch the world size does not divide,
 *      different flags on the two ranks: exit status 2 within seconds and
 *      each rank's message.
 *
 * Skips (77) when this build has no MPI or mpirun is missing; FAILS when
 * Fashion-MNIST is missing. GF_DIST_ONLY=name runs one scenario (sync,
 * kill, elastic, exact, launch). */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/comm.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "train_test_util.h"

#define LOG_EVERY 5

/* Scenario 1's criterion. The 2-rank and the 1-rank runs compute the same
 * function with other float rounding (sync BN combines per-rank
 * statistics, a gradient is the sum of two half-batch sums, ...), and a
 * GAN amplifies rounding: Adam's first steps move every parameter by about
 * lr in the direction of its gradient's SIGN, so a near-zero gradient
 * whose rounding differs moves its parameter the other way. Measured here
 * (dcgan, 20 steps, --batch 16): the very same 1-rank job with --threads 2
 * instead of 1 differs from itself by a mean |diff| of 9e-5, with 10% of
 * the parameters more than 2e-4 apart; 2 ranks with --sync-bn differ from
 * 1 rank by a mean of 5e-5 and 1%; 2 ranks WITHOUT --sync-bn (per-rank
 * statistics: the wrong function) by a mean of 3e-4 and 55%. So: mean
 * |diff| <= 1.5e-4 and at most 25% of the parameters beyond 2e-4 (both
 * well above rounding, well below a wrong function), and no parameter
 * beyond 2 x lr x steps = 8e-3 (Adam's bound on how far two runs can
 * drift in 20 steps whatever the gradients). */
#define SYNC_MEAN_TOL 1.5e-4
#define SYNC_FRAC_TOL 0.25
#define SYNC_FAR 2e-4
#define SYNC_MAX_TOL 8e-3

typedef struct param_diff {
  double max, mean, frac_far; /* frac_far: share of parameters > SYNC_FAR */
} param_diff;

static char g_uri[512];
static char g_mpirun[1024];

/* The trainer's flags: dcgan 28x28 on Fashion-MNIST, --batch 16. */
static void trainer(tu_cmd *c, const char *dir, const char *exp, long steps,
                    long ckpt_every) {
  tu_add(c, GF_TRAIN_BIN);
  const char *fixed[] = {"--data", FASHION, "--model", "dcgan", "--batch",
                         "16", "--threads", "1", "--seed", "7",
                         "--sample-every", "0", "--eval-every", "0",
                         "--register-model", "", "--check-every", "1",
                         "--keep", "10"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) tu_add(c, fixed[i]);
  tu_run_flags(c, steps, LOG_EVERY, ckpt_every, dir, exp);
}

/* Starts c (the tracked child, in its own process group: the test can end
 * mpirun and its ranks), stdout+stderr to log. */
static pid_t spawn(const char *log, const tu_cmd *c) {
  return tu_spawn_trainer(c->argv, log, g_uri, "0.2");
}

/* Runs c to the end; checks its exit status (the log is printed when it
 * differs). */
static bool run_ok(const tu_cmd *c, const char *log, int want, const char *what) {
  int rc = tu_wait_child(spawn(log, c), 600, log);
  CHECKF(rc == want, "%s: exit %d, want %d (log %s)", what, rc, want, log);
  if (rc != want) dump_log(log);
  return rc == want;
}

static void paths(char *dir, char *exp, char *log, size_t cap,
                  const char *name) {
  snprintf(dir, cap, "%s/%s", GF_TEST_TMP, name);
  char u[128];
  test_unique(u, sizeof u, name);
  snprintf(exp, cap, "dist-%s", u);
  snprintf(log, cap, "%s/%s.log", GF_TEST_TMP, name);
}

static void ckpt_path(char *out, size_t cap, const char *dir, long step) {
  snprintf(out, cap, "%s/ckpt-%012ld.safetensors", dir, step);
}

/* |a - b| over the trainable G and D tensors of two checkpoints (names
 * without ".adam_" and not BN running statistics). */
static param_diff diff_params(const char *a_path, const char *b_path) {
  gf_st_file a, b;
  gf_st_file_init(&a);
  gf_st_file_init(&b);
  gf_err err;
  gf_status s = gf_st_open(&a, a_path, GF_ST_VERIFY_SHA256, &err);
  CHECKF(s == GF_OK, "%s: %s", a_path, err.msg);
  REQUIRE(s == GF_OK);
  s = gf_st_open(&b, b_path, GF_ST_VERIFY_SHA256, &err);
  CHECKF(s == GF_OK, "%s: %s", b_path, err.msg);
  REQUIRE(s == GF_OK);
  param_diff r = {0, 0, 0};
  double sum = 0;
  size_t n = 0, far = 0;
  int compared = 0;
  for (size_t i = 0; i < a.n_tensors; i++) {
    const gf_st_tensor *ta = &a.tensors[i];
    const char *nm = ta->name;
    if (ta->dtype != GF_ST_F32 || strstr(nm, ".adam_") || strstr(nm, "running_"))
      continue;
    const gf_st_tensor *tb = gf_st_find(&b, nm);
    CHECKF(tb && tb->nbytes == ta->nbytes, "%s missing or resized in %s", nm,
           b_path);
    REQUIRE(tb && tb->nbytes == ta->nbytes);
    const float *x = ta->data, *y = tb->data;
    for (size_t j = 0; j < ta->nbytes / 4; j++, n++) {
      double d = fabs((double)x[j] - (double)y[j]);
      if (!(d <= r.max)) r.max = d; /* NaN propagates as a failure */
      sum += d;
      far += d > SYNC_FAR;
    }
    compared++;
  }
  CHECKF(compared >= 8, "only %d parameter tensors compared", compared);
  r.mean = n ? sum / (double)n : 0;
  r.frac_far = n ? (double)far / (double)n : 0;
  gf_st_file_free(&a);
  gf_st_file_free(&b);
  return r;
}

/* The criterion of SYNC_*_TOL. */
static void check_close(const char *got, const char *ref, const char *what) {
  param_diff d = diff_params(got, ref);
  fprintf(stderr, "%s: |diff| max %.3g, mean %.3g, %.1f%% beyond %.0e\n", what,
          d.max, d.mean, 100 * d.frac_far, SYNC_FAR);
  CHECKF(d.max <= SYNC_MAX_TOL && d.mean <= SYNC_MEAN_TOL &&
         d.frac_far <= SYNC_FRAC_TOL, "%s: beyond rounding (max %.3g > %.3g, "
         "mean %.3g > %.3g or %.3f > %.2f beyond %.0e)", what, d.max,
         SYNC_MAX_TOL, d.mean, SYNC_MEAN_TOL, d.frac_far, SYNC_FRAC_TOL,
         SYNC_FAR);
}

/* The experiment holds one run, with status want; its id into id. */
static void one_run(mlflow_client *mc, const char *exp, mlflow_run_status want,
                    char *id, size_t cap, const char *what) {
  mlflow_experiment x;
  mlflow_error e;
  mlflow_status ms = mlflow_experiment_get_by_name(mc, exp, &x, &e);
  CHECKF(ms == MLFLOW_OK, "%s: experiment %s: %s", what, exp, e.message);
  if (ms != MLFLOW_OK) return;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  ms = mlflow_runs_search(mc, ids, 1, NULL, NULL, 0, NULL, &l, &e);
  mlflow_experiment_free(&x);
  CHECKF(ms == MLFLOW_OK, "%s: runs/search: %s", what, e.message);
  if (ms != MLFLOW_OK) return;
  CHECKF(l.count == 1, "%s: %zu runs in %s, want 1", what, l.count, exp);
  if (l.count >= 1) {
    CHECKF(l.runs[0].info.status == want, "%s: run is %s, want %s", what,
           mlflow_run_status_name(l.runs[0].info.status),
           mlflow_run_status_name(want));
    snprintf(id, cap, "%s", l.runs[0].info.run_id);
  }
  mlflow_run_list_free(&l);
}

/* ---- 1. sync BN: 2 x 8 against 1 x 16 ----------------------------------- */

/* 20 steps with `flag` on 1 rank (NAME-1rank) and on 2 (NAME-2ranks):
 * the final checkpoints into one (1 rank) and two (2 ranks), the 2-rank
 * run's experiment and log into exp2 and log2 (1024 bytes each). */
static bool one_and_two(const char *name, const char *flag, long ckpt_every,
                        char *one, char *two, char *exp2, char *log2) {
  char n1[128], n2[128], dir1[1024], exp1[1024], log1[1024], dir2[1024];
  snprintf(n1, sizeof n1, "%s-1rank", name);
  snprintf(n2, sizeof n2, "%s-2ranks", name);
  paths(dir1, exp1, log1, sizeof dir1, n1);
  paths(dir2, exp2, log2, sizeof dir2, n2);
  tu_cmd c;
  tu_mpirun(&c, g_mpirun, 0, NULL);
  trainer(&c, dir1, exp1, 20, ckpt_every);
  tu_add(&c, flag);
  if (!run_ok(&c, log1, 0, n1)) return false;
  tu_mpirun(&c, g_mpirun, 2, NULL);
  trainer(&c, dir2, exp2, 20, ckpt_every);
  tu_add(&c, flag);
  if (!run_ok(&c, log2, 0, n2)) return false;
  ckpt_path(one, 1200, dir1, 20);
  ckpt_path(two, 1200, dir2, 20);
  return true;
}

static void sync_scenario(mlflow_client *mc, char *ref2, size_t cap) {
  char a[1200], b[1200], exp2[1024], log2[1024];
  if (!one_and_two("sync", "--sync-bn", 0, a, b, exp2, log2)) return;
  check_close(b, a, "sync: 2 ranks x 8 vs 1 rank x 16, 20 steps");
  CHECKF(log_contains(log2, "x 2 ranks"), "sync: the 2-rank run does not say "
         "it ran on 2 ranks");
  /* Rank 1's system metrics reached the run through rank 0, under MLflow's
   * per-node name; the params say how the job was spread. */
  char id[64] = "";
  one_run(mc, exp2, MLFLOW_RUN_FINISHED, id, sizeof id, "sync: 2 ranks");
  mlflow_run r;
  mlflow_error e;
  if (id[0] && mlflow_run_get(mc, id, &r, &e) == MLFLOW_OK) {
    bool sys1 = false, ar = false;
    for (size_t i = 0; i < r.n_metrics; i++) {
      sys1 |= strcmp(r.metrics[i].key,
                     "system/rank_1/cpu_utilization_percentage") == 0;
      ar |= strcmp(r.metrics[i].key, "perf/allreduce_s") == 0;
    }
    CHECKF(sys1, "sync: no system/rank_1/cpu_utilization_percentage in the run");
    CHECKF(ar, "sync: no perf/allreduce_s in the run");
    const char *ws = mlflow_run_param(&r, "world_size");
    const char *lb = mlflow_run_param(&r, "local_batch");
    CHECKF(ws && strcmp(ws, "2") == 0, "sync: param world_size %s", ws ? ws : "-");
    CHECKF(lb && strcmp(lb, "8") == 0, "sync: param local_batch %s", lb ? lb : "-");
    mlflow_run_free(&r);
  } else {
    CHECKF(false, "sync: runs/get %s: %s", id, e.message);
  }
  snprintf(ref2, cap, "%s", b);
}

/* ---- 2. kill -9 of one rank ------------------------------------------------ */

/* A /proc file (its size reads as 0, so read until EOF); caller frees. */
static char *read_proc(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      char *nb = realloc(buf, 2 * cap + 1);
      if (!nb) free(buf);
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

/* The pid of rank `rank` among mpirun's children (Open MPI starts the
 * local ranks itself and gives each OMPI_COMM_WORLD_RANK); -1. */
static pid_t rank_pid(pid_t mpirun, int rank) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  struct dirent *de;
  pid_t found = -1;
  char want[64];
  snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
  while (found < 0 && (de = readdir(d)) != NULL) {
    pid_t p = (pid_t)atoi(de->d_name);
    if (p <= 0) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    char *st = read_proc(path, NULL);
    char *rp = st ? strrchr(st, ')') : NULL;
    int ppid = -1;
    if (rp) sscanf(rp + 2, "%*c %d", &ppid);
    free(st);
    if (ppid != mpirun) continue;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)p);
    size_t len = 0;
    char *env = read_proc(path, &len);
    for (size_t i = 0; env && i < len; i += strlen(env + i) + 1)
      if (strcmp(env + i, want) == 0) found = p;
    free(env);
  }
  closedir(d);
  return found;
}

static void kill_scenario(mlflow_client *mc) {
  char rdir[1024], rexp[1024], rlog[1024], dir[1024], exp[1024], log[1024];
  paths(rdir, rexp, rlog, sizeof rdir, "kill-ref");
  paths(dir, exp, log, sizeof dir, "kill");
  const long steps = 40;
  tu_cmd c;
  tu_mpirun(&c, g_mpirun, 2, NULL);
  trainer(&c, rdir, rexp, steps, 10);
  if (!run_ok(&c, rlog, 0, "kill: uninterrupted 2-rank run")) return;

  tu_mpirun(&c, g_mpirun, 2, NULL);
  trainer(&c, dir, exp, steps, 10);
  pid_t pid = spawn(log, &c);
  double t0 = mono_s();
  while (newest_ckpt_on_disk(dir) < 10 && mono_s() - t0 < 300) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      *tu_child() = 0;
      CHECKF(false, "kill: the run ended before its first checkpoint");
      dump_log(log);
      return;
    }
    sleep_s(0.02);
  }
  sleep_s(0.3); /* into the next steps */
  pid_t victim = rank_pid(pid, 1);
  CHECKF(victim > 0, "kill: rank 1's process not found under mpirun %d",
         (int)pid);
  long at = log_last_step(log);
  if (victim > 0) kill(victim, SIGKILL);
  int rc = tu_wait_child(pid, 180, log);
  fprintf(stderr, "kill: rank 1 killed near step %ld; mpirun exited %d\n", at,
          rc);
  CHECKF(rc != 0 && rc != -1, "kill: mpirun exit %d after a rank died", rc);
  CHECKF(newest_ckpt_on_disk(dir) < steps, "kill: the run finished anyway");
  char id1[64] = "";
  one_run(mc, exp, MLFLOW_RUN_RUNNING, id1, sizeof id1, "kill: after the kill");
  /* The same command again. */
  char log2[1100];
  snprintf(log2, sizeof log2, "%s.resume", log);
  if (!run_ok(&c, log2, 0, "kill: the same command again")) return;
  CHECKF(log_contains(log2, "resuming from"), "kill: the second run did not "
         "resume from a checkpoint");
  char id2[64] = "";
  one_run(mc, exp, MLFLOW_RUN_FINISHED, id2, sizeof id2, "kill: after resume");
  CHECKF(strcmp(id1, id2) == 0, "kill: run %s then %s", id1, id2);
  const char *keys[] = {"loss/d", "loss/g", "d/real", "perf/images_per_sec",
                        "perf/allreduce_s"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    check_history(mc, id2, keys[i], LOG_EVERY, steps, "kill");
  char a[1200], b[1200];
  ckpt_path(a, sizeof a, dir, steps);
  ckpt_path(b, sizeof b, rdir, steps);
  compare_ckpts(a, b, "kill: killed and resumed vs uninterrupted");
}

/* ---- 3. another world size on resume ------------------------------------- */

/* 10 steps on ranks_a, then (same dir, --steps 20) 10 more on ranks_b. */
static void two_legs(const char *name, int ranks_a, int ranks_b, bool exact,
                     char *final, size_t cap) {
  char dir[1024], exp[1024], log[1024], log2[1100];
  paths(dir, exp, log, sizeof dir, name);
  snprintf(log2, sizeof log2, "%s.leg2", log);
  tu_cmd c;
  tu_mpirun(&c, g_mpirun, ranks_a, NULL);
  trainer(&c, dir, exp, 10, 10);
  if (exact) tu_add(&c, "--exact-reduce");
  else tu_add(&c, "--sync-bn");
  if (!run_ok(&c, log, 0, name)) return;
  tu_mpirun(&c, g_mpirun, ranks_b, NULL);
  trainer(&c, dir, exp, 20, 10);
  if (exact) tu_add(&c, "--exact-reduce");
  else tu_add(&c, "--sync-bn");
  if (!run_ok(&c, log2, 0, name)) return;
  CHECKF(log_contains(log2, "resuming on"), "%s: the second leg did not "
         "report the world-size change", name);
  ckpt_path(final, cap, dir, 20);
}

static void elastic_scenario(const char *ref2) {
  char got[1200] = "";
  two_legs("elastic-2to1", 2, 0, false, got, sizeof got);
  if (!got[0] || !ref2[0]) return;
  check_close(got, ref2, "elastic: 10 steps on 2 ranks + 10 on 1 vs 20 on 2");
}

static void exact_scenario(void) {
  char a[1200], b[1200], e2[1024], l2[1024];
  if (!one_and_two("exact", "--exact-reduce", 10, a, b, e2, l2)) return;
  compare_ckpts(b, a, "exact: 2 ranks vs 1 rank");
  char got[1200] = "";
  two_legs("exact-2to1", 2, 0, true, got, sizeof got);
  if (got[0]) compare_ckpts(got, a, "exact: 2 then 1 rank vs 1 rank");
  got[0] = '\0';
  two_legs("exact-1to2", 0, 2, true, got, sizeof got);
  if (got[0]) compare_ckpts(got, a, "exact: 1 then 2 ranks vs 1 rank");
}

/* ---- 4. launches that must fail on every rank ---------------------------- */

static void launch_case(const char *name, const tu_cmd *c, const char *need1,
                        const char *need2) {
  char log[1024];
  snprintf(log, sizeof log, "%s/%s.log", GF_TEST_TMP, name);
  double t0 = mono_s();
  int rc = tu_wait_child(spawn(log, c), 120, log);
  double secs = mono_s() - t0;
  fprintf(stderr, "launch %s: exit %d after %.1f s\n", name, rc, secs);
  CHECKF(rc == 2, "launch %s: exit %d, want 2", name, rc);
  CHECKF(secs < 60, "launch %s: took %.0f s", name, secs);
  bool ok = log_contains(log, need1) && (!need2 || log_contains(log, need2));
  CHECKF(ok, "launch %s: log lacks '%s'%s%s", name, need1, need2 ? " or " : "",
         need2 ? need2 : "");
  if (rc != 2 || !ok) dump_log(log);
}

/* An MPMD command line: rank 0 runs the usual flags, rank 1 the same plus
 * `flag value`. */
static void mpmd_rank1_extra(tu_cmd *c, const char *dir, const char *exp,
                             const char *flag, const char *value) {
  tu_mpirun(c, g_mpirun, 1, NULL);
  trainer(c, dir, exp, 10, 10);
  tu_add(c, ":");
  tu_add(c, "-np");
  tu_add(c, "1");
  trainer(c, dir, exp, 10, 10);
  tu_add(c, flag);
  tu_add(c, value);
}

static void launch_scenario(void) {
  char dir[1024], exp[1024], log[1024];
  paths(dir, exp, log, sizeof dir, "launch");
  tu_cmd c;
  /* MPMD: rank 0 fine, rank 1 with a bad --batch. */
  mpmd_rank1_extra(&c, dir, exp, "--batch", "x");
  launch_case("bad-flag-rank1", &c, "rank 1: --batch: 'x' is not an integer",
              "rank 0: rank 1 refused its command line");
  /* Flags that differ between the ranks. */
  mpmd_rank1_extra(&c, dir, exp, "--lr-d", "1e-3");
  launch_case("other-flags", &c, "was given other flags than rank 0", NULL);
  /* A global batch 2 ranks do not divide. */
  tu_mpirun(&c, g_mpirun, 2, NULL);
  trainer(&c, dir, exp, 10, 10);
  tu_add(&c, "--batch");
  tu_add(&c, "15");
  launch_case("batch-15", &c, "--batch 15 does not split evenly over 2 ranks",
              NULL);
}

int main(void) {
  double t_all = mono_s();
  const char *mpirun = GF_MPIEXEC;
  if (!gf_comm_built(GF_COMM_MPI) || !*mpirun || access(mpirun, X_OK) != 0) {
    fprintf(stderr, "SKIP: no MPI in this build or no mpirun (%s)\n", mpirun);
    return 77;
  }
  snprintf(g_mpirun, sizeof g_mpirun, "%s", mpirun);
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_trainer_test_start(GF_TEST_TMP);
  mlflow_client *mc = test_client_of(g_uri);

  const char *only = getenv("GF_DIST_ONLY");
#define WANT(name) (!only || !*only || strstr(only, name))
  char ref2[1200] = "";
  if (WANT("launch")) launch_scenario();
  if (WANT("sync") || WANT("elastic")) sync_scenario(mc, ref2, sizeof ref2);
  if (WANT("elastic")) elastic_scenario(ref2);
  if (WANT("exact")) exact_scenario();
  if (WANT("kill")) kill_scenario(mc);
  mlflow_client_free(mc);
  fprintf(stderr, "test_train_dist: %.0f s\n", mono_s() - t_all);
  return check_report();
}
