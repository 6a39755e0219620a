/* train_test_util.h - what the tests that drive the ganflow-train
 * executable share: clocks, reading its log, the checkpoints it left, a
 * byte-for-byte checkpoint comparison and the exactly-once check of a
 * metric's history in MLflow; starting the trainer in a process group of
 * its own, tracked so that it dies with the test, and killing it past a
 * checkpoint; a trainer's command line and scratch paths (tu_cmd, tu_job).
 * Header-only (static functions); include after check.h,
 * gf/checkpoint.h, gf/safetensors.h and mlflow_test.h. */
#ifndef GF_TRAIN_TEST_UTIL_H
#define GF_TRAIN_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file_util.h"
#include "wait_util.h"

static inline double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The whole file, NUL-terminated (caller frees); NULL when unreadable. */
static inline char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
  size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  if (buf) buf[got] = '\0';
  if (len) *len = got;
  return buf;
}

static inline void dump_log(const char *log) {
  char *text = read_all(log, NULL);
  fprintf(stderr, "---- %s ----\n%s----\n", log, text ? text : "(unreadable)");
  free(text);
}

static inline bool log_contains(const char *log, const char *needle) {
  char *text = read_all(log, NULL);
  bool found = text && strstr(text, needle);
  free(text);
  return found;
}

/* The K of the last "step K/N" log line (plain lines: stderr is a file);
 * 0 when none yet. */
static inline long log_last_step(const char *log) {
  char *text = read_all(log, NULL);
  long last = 0;
  for (char *p = text; p && *p;) {
    long k, n;
    if (strncmp(p, "step ", 5) == 0 && sscanf(p, "step %ld/%ld", &k, &n) == 2)
      last = k;
    char *nl = strchr(p, '\n');
    p = nl ? nl + 1 : NULL;
  }
  free(text);
  return last;
}

/* Newest ckpt-*.safetensors step in dir by name (not verified); -1. */
static inline long newest_ckpt_on_disk(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  long best = -1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    int64_t s;
    if (gf_checkpoint_parse_name(de->d_name, &s) && s > best) best = (long)s;
  }
  closedir(d);
  return best;
}

static inline int count_ckpts(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    int64_t s;
    n += gf_checkpoint_parse_name(de->d_name, &s);
  }
  closedir(d);
  return n;
}

/* Exit code, 128 + signal when killed by one. */
static inline int decode_status(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

/* Waits for child pid (the leader of its own process group): its exit
 * code (decode_status), or -1 after timeout_s, when the whole group is
 * killed and log is printed. */
static inline int wait_group(pid_t pid, double timeout_s, const char *log) {
  double t0 = mono_s();
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return decode_status(status);
    if (mono_s() - t0 > timeout_s) {
      fprintf(stderr, "%s: still running after %.0f s: killed\n", log,
              timeout_s);
      kill(-pid, SIGKILL);
      waitpid(pid, NULL, 0);
      dump_log(log);
      return -1;
    }
    sleep_s(0.05);
  }
}

/* The child a test is running (the leader of its own process group), 0 when
 * none: one per test process, killed with its group at exit by
 * tu_kill_child_at_exit. */
static inline pid_t *tu_child(void) {
  static pid_t child;
  return &child;
}

static inline void tu_kill_child_at_exit(void) {
  pid_t c = *tu_child();
  if (c > 0) {
    kill(-c, SIGKILL);
    waitpid(c, NULL, 0);
  }
}

/* wait_group on the tracked child, which is then no longer tracked. */
static inline int tu_wait_child(pid_t pid, double timeout_s, const char *log) {
  int rc = wait_group(pid, timeout_s, log);
  *tu_child() = 0;
  return rc;
}

/* Starts argv[0] (argv NULL-terminated, borrowed) as the tracked child in a
 * process group of its own (so the test can end mpirun and its ranks), with
 * stdout and stderr into log (truncated), MLFLOW_TRACKING_URI=uri,
 * OMPI_MCA_rmaps_base_oversubscribe=1 and, when sampling_s is not NULL,
 * MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=sampling_s. Returns its pid. */
static inline pid_t tu_spawn_trainer(char *const *argv, const char *log,
                                     const char *uri, const char *sampling_s) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setenv("MLFLOW_TRACKING_URI", uri, 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    if (sampling_s)
      setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", sampling_s, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  *tu_child() = pid;
  return pid;
}

/* Waits (at most timeout_s) until dir holds a checkpoint at step >= ckpt and
 * log a step >= past, then SIGKILLs pid's group; reaps it (tu_wait_child,
 * timeout_s) and returns its exit code (128 + SIGKILL when killed). *ended:
 * it ended by itself first; *at: the log's last step at the kill. */
static inline int tu_kill_past(pid_t pid, const char *dir, long ckpt,
                               const char *log, long past, double timeout_s,
                               bool *ended, long *at) {
  tu_deadline d = tu_deadline_in(timeout_s);
  int status = 0;
  *ended = false;
  while (!(newest_ckpt_on_disk(dir) >= ckpt && log_last_step(log) >= past) &&
         !tu_deadline_passed(&d)) {
    if ((*ended = waitpid(pid, &status, WNOHANG) == pid)) break;
    tu_pause_s(0.002);
  }
  *at = log_last_step(log);
  if (!*ended) kill(-pid, SIGKILL);
  int rc = *ended ? decode_status(status) : tu_wait_child(pid, timeout_s, log);
  *tu_child() = 0;
  return rc;
}

/* The runs of experiment exp: how many (-1: no such experiment), the
 * status and id of the first into *status and id (may be NULL). */
static inline int tu_exp_runs(mlflow_client *mc, const char *exp,
                              mlflow_run_status *status, char *id,
                              size_t cap) {
  mlflow_experiment x;
  mlflow_error e;
  mlflow_status ms = mlflow_experiment_get_by_name(mc, exp, &x, &e);
  if (ms == MLFLOW_E_NOT_FOUND) return -1;
  CHECKF(ms == MLFLOW_OK, "experiment %s: %s", exp, e.message);
  if (ms != MLFLOW_OK) return -2;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  ms = mlflow_runs_search(mc, ids, 1, NULL, NULL, 0, NULL, &l, &e);
  mlflow_experiment_free(&x);
  CHECKF(ms == MLFLOW_OK, "runs/search in %s: %s", exp, e.message);
  if (ms != MLFLOW_OK) return -2;
  if (l.count && status) *status = l.runs[0].info.status;
  if (l.count && id) snprintf(id, cap, "%s", l.runs[0].info.run_id);
  int n = (int)l.count;
  mlflow_run_list_free(&l);
  return n;
}

/* The experiment holds one run, with status want; its id into id. */
static inline void tu_one_run(mlflow_client *mc, const char *exp,
                              mlflow_run_status want, char *id, size_t cap,
                              const char *what) {
  mlflow_run_status st = 0;
  id[0] = '\0';
  int n = tu_exp_runs(mc, exp, &st, id, cap);
  CHECKF(n == 1, "%s: %d runs in %s, want 1", what, n, exp);
  CHECKF(n != 1 || st == want, "%s: run is %s, want %s", what,
         mlflow_run_status_name(st), mlflow_run_status_name(want));
}

/* A trainer's command line: argv (NULL-terminated) points into the
 * caller's strings and into store, which holds the numbers tu_num
 * formats. */
typedef struct tu_cmd {
  char *argv[96];
  int n;
  char store[24][32];
  int ns;
  char rank_asan[256]; /* "ASAN_OPTIONS=..." for mpirun's ranks, or "" */
} tu_cmd;

static inline void tu_add(tu_cmd *c, const char *a) {
  REQUIRE(c->n < 95);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

/* Each of the NULL-terminated flags (none when flags is NULL). */
static inline void tu_add_all(tu_cmd *c, const char *const *flags) {
  for (; flags && *flags; flags++) tu_add(c, *flags);
}

/* v in decimal, kept in c's store (24 numbers a command at most). */
static inline const char *tu_num(tu_cmd *c, long v) {
  REQUIRE(c->ns < 24);
  snprintf(c->store[c->ns], sizeof c->store[c->ns], "%ld", v);
  return c->store[c->ns++];
}

/* Empties c, then (ranks > 0) starts it with mpirun's launch of ranks
 * processes that see MLFLOW_TRACKING_URI and, when not NULL, the variable
 * named by also_x; and ASAN_OPTIONS=$GF_TEST_RANK_ASAN_OPTIONS where that
 * is set (for the sanitizer build: see tests/trainer's
 * CMakeLists.txt on leak checks under mpirun). */
static inline void tu_mpirun(tu_cmd *c, const char *mpirun, int ranks,
                             const char *also_x) {
  c->n = c->ns = 0;
  if (ranks <= 0) return;
  const char *mpi[] = {mpirun, "--allow-run-as-root", "--oversubscribe",
                       "--bind-to", "none", "-x", "MLFLOW_TRACKING_URI",
                       NULL};
  tu_add_all(c, mpi);
  if (also_x) {
    tu_add(c, "-x");
    tu_add(c, also_x);
  }
  const char *rank_asan = getenv("GF_TEST_RANK_ASAN_OPTIONS");
  c->rank_asan[0] = '\0';
  if (rank_asan && *rank_asan) {
    int w = snprintf(c->rank_asan, sizeof c->rank_asan, "ASAN_OPTIONS=%s",
                     rank_asan);
    REQUIRE(w > 0 && (size_t)w < sizeof c->rank_asan);
    tu_add(c, "-x");
    tu_add(c, c->rank_asan);
  }
  tu_add(c, "-np");
  tu_add(c, tu_num(c, ranks));
}

/* The flags of a job's length and place: --steps, --log-every,
 * --checkpoint-every (0: the last only), --checkpoint-dir, --experiment. */
static inline void tu_run_flags(tu_cmd *c, long steps, long log_every,
                                long ckpt_every, const char *dir,
                                const char *exp) {
  tu_add(c, "--steps");
  tu_add(c, tu_num(c, steps));
  tu_add(c, "--log-every");
  tu_add(c, tu_num(c, log_every));
  tu_add(c, "--checkpoint-every");
  tu_add(c, tu_num(c, ckpt_every));
  tu_add(c, "--checkpoint-dir");
  tu_add(c, dir);
  tu_add(c, "--experiment");
  tu_add(c, exp);
}

/* One ganflow-train job: its name, its scratch paths under tmp, a fresh
 * experiment and its command. */
typedef struct tu_job {
  char name[64];
  char dir[1024]; /* --checkpoint-dir: tmp/name */
  char log[1100]; /* tmp/name.log */
  char exp[192];  /* "<prefix>-<name, made unique>" */
  tu_cmd c;
} tu_job;

/* j for name, its command empty. */
static inline void tu_job_init(tu_job *j, const char *tmp, const char *prefix,
                               const char *name) {
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->dir, sizeof j->dir, "%s/%s", tmp, name);
  snprintf(j->log, sizeof j->log, "%s/%s.log", tmp, name);
  char u[160];
  test_unique(u, sizeof u, name);
  snprintf(j->exp, sizeof j->exp, "%s-%s", prefix, u);
}

/* What a test of ganflow-train does first: a fresh tmp, the tracked child
 * killed at exit, SIGPIPE ignored (a server closing early must not end the
 * test) and no MLFLOW_RUN_ID or MLFLOW_EXPERIMENT_NAME from the caller. */
static inline void tu_trainer_test_start(const char *tmp) {
  tu_fresh_dir(tmp);
  atexit(tu_kill_child_at_exit);
  signal(SIGPIPE, SIG_IGN);
  test_tracking_env(NULL);
}

/* Every tensor of two checkpoints byte-identical: names, dtypes, shapes,
 * bytes. Reports the first difference (tensor, element, values). Also
 * checks that the file holds what the comparison claims to cover. */
static inline void compare_ckpts(const char *got_path, const char *ref_path,
                          const char *what) {
  gf_st_file a, b;
  gf_st_file_init(&a);
  gf_st_file_init(&b);
  gf_err err;
  gf_status s = gf_st_open(&a, got_path, GF_ST_VERIFY_SHA256, &err);
  CHECKF(s == GF_OK, "%s: %s: %s", what, got_path, err.msg);
  if (s != GF_OK) return;
  s = gf_st_open(&b, ref_path, GF_ST_VERIFY_SHA256, &err);
  CHECKF(s == GF_OK, "%s: reference %s: %s", what, ref_path, err.msg);
  if (s != GF_OK) {
    gf_st_file_free(&a);
    return;
  }
  int n_g = 0, n_d = 0, n_m = 0, n_v = 0, n_bn = 0, n_step = 0;
  for (size_t i = 0; i < a.n_tensors; i++) {
    const char *nm = a.tensors[i].name;
    n_g += strncmp(nm, "g.", 2) == 0;
    n_d += strncmp(nm, "d.", 2) == 0;
    n_m += strstr(nm, ".adam_m") != NULL;
    n_v += strstr(nm, ".adam_v") != NULL;
    n_bn += strstr(nm, "running_mean") != NULL ||
            strstr(nm, "running_var") != NULL;
    n_step += strcmp(nm, "g.adam_step") == 0 || strcmp(nm, "d.adam_step") == 0;
  }
  CHECKF(n_g > 0 && n_d > 0 && n_m > 0 && n_v > 0 && n_bn > 0 && n_step == 2,
         "%s: checkpoint lacks tensor kinds (g %d d %d adam_m %d adam_v %d "
         "bn %d adam_step %d)", what, n_g, n_d, n_m, n_v, n_bn, n_step);
  CHECKF(a.n_tensors == b.n_tensors, "%s: %zu tensors vs reference %zu", what,
         a.n_tensors, b.n_tensors);
  size_t n_diff = 0;
  for (size_t i = 0; i < a.n_tensors; i++) {
    const gf_st_tensor *ta = &a.tensors[i];
    const gf_st_tensor *tb = gf_st_find(&b, ta->name);
    if (!tb) {
      if (!n_diff++)
        fprintf(stderr, "%s: first difference: tensor %s missing from the "
                "reference\n", what, ta->name);
      continue;
    }
    bool same = ta->dtype == tb->dtype && ta->ndim == tb->ndim &&
                ta->nbytes == tb->nbytes &&
                memcmp(ta->shape, tb->shape, sizeof ta->shape) == 0 &&
                memcmp(ta->data, tb->data, ta->nbytes) == 0;
    if (same) continue;
    if (!n_diff++) {
      size_t off = 0;
      const uint8_t *pa = ta->data, *pb = tb->data;
      size_t n = ta->nbytes < tb->nbytes ? ta->nbytes : tb->nbytes;
      while (off < n && pa[off] == pb[off]) off++;
      if (ta->dtype == GF_ST_F32 && tb->dtype == GF_ST_F32 && off < n) {
        size_t el = off / 4;
        float va, vb;
        memcpy(&va, pa + el * 4, 4);
        memcpy(&vb, pb + el * 4, 4);
        fprintf(stderr, "%s: first differing tensor %s (%zu bytes): element "
                "%zu is %.9g, reference %.9g\n", what, ta->name, ta->nbytes,
                el, (double)va, (double)vb);
      } else {
        fprintf(stderr, "%s: first differing tensor %s: dtype/shape/size or "
                "byte %zu differ\n", what, ta->name, off);
      }
    }
  }
  CHECKF(n_diff == 0, "%s: %zu of %zu tensors differ from the uninterrupted "
         "run's (%s vs %s)", what, n_diff, a.n_tensors, got_path, ref_path);
  if (n_diff == 0 && a.n_tensors == b.n_tensors)
    fprintf(stderr, "%s: all %zu tensors byte-identical to the reference\n",
            what, a.n_tensors);
  gf_st_file_free(&a);
  gf_st_file_free(&b);
}

/* Every tensor of got byte-identical to ref's (a stylegan2 training state:
 * G., D., G_ema., the Adam moments and the state. scalars). */
static inline void tu_compare_sg2_states(const char *got, const char *ref,
                                         const char *what) {
  gf_st_file a, b;
  gf_st_file_init(&a);
  gf_st_file_init(&b);
  gf_err err;
  if (gf_st_open(&a, got, GF_ST_VERIFY_SHA256, &err) != GF_OK) {
    CHECKF(false, "%s: %s: %s", what, got, err.msg);
    return;
  }
  if (gf_st_open(&b, ref, GF_ST_VERIFY_SHA256, &err) != GF_OK) {
    CHECKF(false, "%s: %s: %s", what, ref, err.msg);
    gf_st_file_free(&a);
    return;
  }
  CHECKF(a.n_tensors == b.n_tensors, "%zu tensors vs %zu", a.n_tensors,
         b.n_tensors);
  size_t diff = 0, kinds[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < a.n_tensors; i++) {
    const gf_st_tensor *ta = &a.tensors[i], *tb = gf_st_find(&b, ta->name);
    kinds[0] += strncmp(ta->name, "G_ema.", 6) == 0;
    kinds[1] += strncmp(ta->name, "D.adam_v.", 9) == 0;
    kinds[2] += strcmp(ta->name, "state.ada_p") == 0;
    kinds[3] += strcmp(ta->name, "state.cur_nimg") == 0;
    bool same = tb && ta->dtype == tb->dtype && ta->nbytes == tb->nbytes &&
                memcmp(ta->data, tb->data, ta->nbytes) == 0;
    if (!same && !diff++)
      fprintf(stderr, "%s: first differing tensor: %s\n", what, ta->name);
  }
  CHECKF(kinds[0] && kinds[1] && kinds[2] == 1 && kinds[3] == 1,
         "%s: %s lacks the tensors of a stylegan2 state", what, got);
  CHECKF(diff == 0, "%s: %zu of %zu tensors differ from the reference's",
         what, diff, a.n_tensors);
  if (diff == 0)
    fprintf(stderr, "%s: all %zu tensors byte-identical\n", what,
            a.n_tensors);
  gf_st_file_free(&a);
  gf_st_file_free(&b);
}

/* key holds exactly one point at each of every, 2*every, ..., steps: no
 * duplicate, none missing, nothing else. */
static inline void check_history(mlflow_client *c, const char *run_id,
                          const char *key, long every, long steps,
                          const char *what) {
  mlflow_metric_list h;
  mlflow_error e;
  mlflow_status ms = mlflow_metric_history(c, run_id, key, &h, &e);
  CHECKF(ms == MLFLOW_OK, "%s: history of %s: %s", what, key, e.message);
  if (ms != MLFLOW_OK) return;
  int *seen = calloc((size_t)steps + 1, sizeof *seen);
  REQUIRE(seen);
  long stray = 0, dup = 0, missing = 0;
  for (size_t i = 0; i < h.count; i++) {
    int64_t s = h.items[i].step;
    if (s < every || s > steps || s % every) {
      if (!stray++)
        fprintf(stderr, "%s: %s: stray point at step %lld\n", what, key,
                (long long)s);
      continue;
    }
    if (seen[s]++ == 1)
      fprintf(stderr, "%s: %s: step %lld logged more than once\n", what, key,
              (long long)s);
    if (seen[s] > 1) dup++;
  }
  for (long s = every; s <= steps; s += every)
    if (!seen[s] && !missing++)
      fprintf(stderr, "%s: %s: first missing step %ld\n", what, key, s);
  CHECKF(stray == 0 && dup == 0 && missing == 0 &&
         (long)h.count == steps / every,
         "%s: %s has %zu points (want %ld): %ld duplicate, %ld missing, %ld "
         "stray", what, key, h.count, steps / every, dup, missing, stray);
  free(seen);
  mlflow_metric_list_free(&h);
}

static inline int tu_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Exactly-once over the whole run: every metric key the run holds (runs/get
 * lists them), its full history (metrics/get-history, every page), and no
 * (key, step) twice. One failure per key that repeats a step, naming the
 * first such step and how many points sit there. The system/ keys are
 * checked too: ganflow-train numbers its resource-monitor samples so that a
 * resumed process never repeats a step an earlier one may have sent
 * (train_tracking.c), so they are held to the same rule. Returns the number
 * of keys checked (-1 when the run cannot be read); *n_points (may be
 * NULL) receives the points seen. */
static inline int check_exactly_once(mlflow_client *c, const char *run_id,
                                     const char *what, long *n_points) {
  mlflow_run run;
  mlflow_error e;
  if (n_points) *n_points = 0;
  if (mlflow_run_get(c, run_id, &run, &e) != MLFLOW_OK) {
    CHECKF(0, "%s: runs/get %s: %s", what, run_id, e.message);
    return -1;
  }
  int keys = 0;
  for (size_t i = 0; i < run.n_metrics; i++) {
    const char *key = run.metrics[i].key;
    mlflow_metric_list h;
    if (mlflow_metric_history(c, run_id, key, &h, &e) != MLFLOW_OK) {
      CHECKF(0, "%s: history of %s: %s", what, key, e.message);
      continue;
    }
    keys++;
    if (n_points) *n_points += (long)h.count;
    int64_t *steps = malloc((h.count ? h.count : 1) * sizeof *steps);
    REQUIRE(steps);
    for (size_t j = 0; j < h.count; j++) steps[j] = h.items[j].step;
    qsort(steps, h.count, sizeof *steps, tu_cmp_i64);
    size_t dup_steps = 0, first_n = 0;
    int64_t first = -1;
    for (size_t j = 0, k; j < h.count; j = k) { /* runs of one step */
      for (k = j + 1; k < h.count && steps[k] == steps[j]; k++) {
      }
      if (k - j < 2) continue;
      if (!dup_steps++) {
        first = steps[j];
        first_n = k - j;
      }
    }
    if (dup_steps) {
      fprintf(stderr, "%s: %s: step %lld holds %zu points:", what, key,
              (long long)first, first_n);
      for (size_t j = 0; j < h.count; j++)
        if (h.items[j].step == first)
          fprintf(stderr, " %.9g (t=%lld)", h.items[j].value,
                  (long long)h.items[j].timestamp_ms);
      fputc('\n', stderr);
    }
    CHECKF(dup_steps == 0, "%s: %s logged more than once at %zu of its "
           "steps (first: step %lld, %zu points; %zu points in all)", what,
           key, dup_steps, (long long)first, first_n, h.count);
    free(steps);
    mlflow_metric_list_free(&h);
  }
  mlflow_run_free(&run);
  return keys;
}

/* The run holds a metric whose key ends in `suffix` (e.g.
 * "rss_megabytes": perf/rss_megabytes or a rank's perf/rank_1/...), with
 * at least one point; how many such keys. */
static inline int run_keys_ending(mlflow_client *c, const char *run_id,
                                  const char *suffix) {
  mlflow_run run;
  mlflow_error e;
  if (mlflow_run_get(c, run_id, &run, &e) != MLFLOW_OK) return 0;
  int n = 0;
  size_t ls = strlen(suffix);
  for (size_t i = 0; i < run.n_metrics; i++) {
    size_t lk = strlen(run.metrics[i].key);
    n += lk >= ls && strcmp(run.metrics[i].key + lk - ls, suffix) == 0;
  }
  mlflow_run_free(&run);
  return n;
}

#endif
