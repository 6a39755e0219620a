/* cli_eval_follow.c - `ganflow eval --follow CHECKPOINT_DIR`
 * (gf/cli_quality.h): a process beside the trainer that scores each
 * checkpoint appearing in the trainer's checkpoint directory and logs the
 * metrics into the training run at the checkpoint's step, so training
 * never waits for them.
 *
 * The loop: take a pending stop signal if any; ask MLflow for the run's
 * status; scan the directory; evaluate the newest checkpoint not done yet
 * (after asking the run's metric history whether it already holds `fid` at
 * that step: restarts never log a step twice); when none is left and the
 * run is no longer RUNNING, return. The status is read BEFORE the scan, so
 * a run seen ended has already written its last checkpoint and the scan
 * sees it. Between scans the loop sleeps in sigtimedwait() on the stop
 * signals for --poll seconds: no busy loop, and a signal ends the wait at
 * once but never an evaluation. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli_eval_internal.h"
#include "gf/checkpoint.h"
#include "gf/text.h"

/* A set of steps (unsorted, small: one entry per checkpoint seen). */
typedef struct step_set {
  int64_t *v;
  size_t n, cap;
} step_set;

static bool set_has(const step_set *s, int64_t x) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == x) return true;
  return false;
}

static gf_status set_add(step_set *s, int64_t x, gf_err *err) {
  if (set_has(s, x)) return GF_OK;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    int64_t *v = realloc(s->v, cap * sizeof *v);
    if (!v) return gf_fail(err, GF_ENOMEM, "follow: out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return GF_OK;
}

static int cmp_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x < y) - (x > y);
}

/* The checkpoint steps in dir, newest first, into *out (replaced). A
 * missing directory is empty (the trainer has not made it yet). */
static gf_status scan(const char *dir, step_set *out, gf_err *err) {
  out->n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return GF_OK;
    return gf_fail(err, GF_EIO, "%s: cannot read the directory: %s", dir,
                   strerror(errno));
  }
  struct dirent *e;
  gf_status st = GF_OK;
  while (st == GF_OK && (e = readdir(d))) {
    int64_t step;
    if (gf_checkpoint_parse_name(e->d_name, &step))
      st = set_add(out, step, err);
  }
  closedir(d);
  if (st == GF_OK && out->n) qsort(out->v, out->n, sizeof *out->v, cmp_desc);
  return st;
}

/* dir/run_id, the file ganflow-train writes when it creates its run, into
 * id (cap bytes); "" when absent or not a run id. */
static void read_run_id_file(const char *dir, char *id, size_t cap) {
  id[0] = '\0';
  char path[GF_PATH_MAX];
  gf_err e;
  if (gf_path_join(path, sizeof path, dir, "run_id", &e) != GF_OK) return;
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[128] = "";
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    size_t n = strlen(line);
    if (n && n < cap &&
        strspn(line, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_-") == n)
      memcpy(id, line, n + 1);
  }
  fclose(f);
}

/* The metric whose history says "done": fid, else the first one asked. */
static const char *marker_key(unsigned metrics) {
  if (metrics & GF_CLI_EVAL_FID) return "fid";
  if (metrics & GF_CLI_EVAL_KID) return "kid";
  return "swd/avg";
}

/* *has = whether run holds key at step. */
static gf_status history_has(mlflow_client *c, const char *run,
                             const char *key, int64_t step, bool *has,
                             gf_err *err) {
  mlflow_metric_list l;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_metric_history(c, run, key, &l, &e) != MLFLOW_OK)
    return gf_fail(err, GF_EIO, "run %s: get-history of %s: %s", run, key,
                   e.message);
  *has = false;
  for (size_t i = 0; i < l.count; i++)
    if (l.items[i].step == step) *has = true;
  mlflow_metric_list_free(&l);
  return GF_OK;
}

typedef struct follow {
  mlflow_client *c;
  const gf_cli_eval_opts *o;
  FILE *out, *log;
  eval_ref ref;            /* loaded at the first evaluation */
  bool ref_ready;
  char run[GF_CKPT_RUN_ID_MAX + 1]; /* the run followed, "" unknown yet */
  step_set done;           /* evaluated, skipped or gone */
  step_set seen;           /* ever seen on disk */
  step_set now;            /* this scan */
  int evaluated, skipped;
} follow;

static void say(follow *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(follow *f, const char *fmt, ...) {
  if (!f->log) return;
  char ts[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(f->log, "%s ganflow eval --follow: ", ts);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f->log, fmt, ap);
  va_end(ap);
  fputc('\n', f->log);
  fflush(f->log);
}

/* Evaluates the checkpoint of `step` into its run (see the file header).
 * Returns an error only for what ends the follower (the network, MLflow
 * failing after its retries, a checkpoint without a run); a checkpoint
 * that vanished or does not open is reported and marked done. */
static gf_status eval_one(follow *f, int64_t step, gf_err *err) {
  char path[GF_PATH_MAX], name[64];
  GF_TRY(gf_format(name, sizeof name, err, "checkpoint name",
                   GF_CKPT_NAME_FMT, (long long)step));
  GF_TRY(gf_path_join(path, sizeof path, f->o->follow_dir, name, err));
  GF_TRY(set_add(&f->done, step, err));
  eval_gen g;
  gf_err ge;
  gf_status gs = eval_gen_open_ckpt(&g, path, f->o, &ge);
  struct stat sb;
  if (gs != GF_OK && stat(path, &sb) != 0) {
    say(f, "%s was removed before it was evaluated (pruned by the trainer's "
        "--keep)", path);
    f->skipped++;
    return GF_OK;
  }
  if (gs != GF_OK) {
    say(f, "%s skipped: %s", path, ge.msg);
    f->skipped++;
    return GF_OK;
  }
  const char *run = f->o->run_id ? f->o->run_id : g.meta.run_id;
  gf_status st = GF_OK;
  if (!run[0])
    st = gf_fail(err, GF_EINVAL, "%s: the checkpoint names no MLflow run "
                 "(trained without tracking); give --run-id", path);
  if (st == GF_OK && strcmp(run, f->run) != 0) {
    st = eval_check_run(f->c, run, NULL, err);
    if (st == GF_OK)
      st = gf_format(f->run, sizeof f->run, err, "run id", "%s", run);
    if (st == GF_OK) say(f, "following run %s", f->run);
  }
  bool has = false;
  if (st == GF_OK)
    st = history_has(f->c, run, marker_key(f->o->metrics), g.meta.step, &has,
                     err);
  if (st == GF_OK && has) {
    say(f, "step %lld: run %s already has %s there, skipped",
        (long long)g.meta.step, run, marker_key(f->o->metrics));
    f->skipped++;
    eval_gen_free(&g);
    return GF_OK;
  }
  if (st == GF_OK && !f->ref_ready) {
    st = eval_ref_init(&f->ref, f->o, f->log, err);
    f->ref_ready = st == GF_OK;
  }
  if (st == GF_OK)
    st = eval_ref_prepare(&f->ref, f->o, g.cfg.image_channels,
                          g.cfg.image_height, g.cfg.image_width, f->log, err);
  gf_eval_result res;
  if (st == GF_OK) st = eval_run(&f->ref, &g, f->o, f->log, &res, err);
  if (st == GF_OK) st = eval_log(f->c, run, g.meta.step, f->o->metrics, &res,
                                 err);
  if (st == GF_OK) {
    fprintf(f->out, "step %lld", (long long)g.meta.step);
    if (f->o->metrics & GF_CLI_EVAL_FID) fprintf(f->out, " fid %.6f", res.fid);
    if (f->o->metrics & GF_CLI_EVAL_KID)
      fprintf(f->out, " kid %.8f kid_std %.8f", res.kid, res.kid_std);
    if (f->o->metrics & GF_CLI_EVAL_SWD)
      fprintf(f->out, " swd/avg %.6f", res.swd_avg);
    fputc('\n', f->out);
    fflush(f->out);
    say(f, "step %lld evaluated (%s) and logged into run %s",
        (long long)g.meta.step, name, run);
    f->evaluated++;
  }
  eval_gen_free(&g);
  return st;
}

/* Takes a pending stop signal, waiting at most wait_s seconds: the signal,
 * or 0. */
static int wait_signal(const sigset_t *stop, double wait_s) {
  struct timespec ts = {(time_t)wait_s,
                        (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
  for (;;) {
    int sig = sigtimedwait(stop, NULL, &ts);
    if (sig > 0) return sig;
    if (errno != EINTR) return 0; /* EAGAIN: the time is up */
  }
}

static gf_status follow_loop(follow *f, const sigset_t *stop, int *stopped_by,
                             gf_err *err) {
  const gf_cli_eval_opts *o = f->o;
  bool waiting_said = false;
  for (;;) {
    int sig = wait_signal(stop, 0);
    if (sig) {
      say(f, "%s: stopping (%d evaluated, %d skipped)", strsignal(sig),
          f->evaluated, f->skipped);
      *stopped_by = sig;
      return GF_OK;
    }
    if (!f->run[0] && !o->run_id) {
      char id[GF_CKPT_RUN_ID_MAX + 1];
      read_run_id_file(o->follow_dir, id, sizeof id);
      if (id[0] && eval_check_run(f->c, id, NULL, err) == GF_OK) {
        GF_TRY(gf_format(f->run, sizeof f->run, err, "run id", "%s", id));
        say(f, "following run %s (from %s/run_id)", f->run, o->follow_dir);
      }
    } else if (!f->run[0]) {
      GF_TRY(eval_check_run(f->c, o->run_id, NULL, err));
      GF_TRY(gf_format(f->run, sizeof f->run, err, "--run-id", "%s",
                       o->run_id));
    }
    /* The run's status first, then the scan (see the file header). */
    mlflow_run_status status = MLFLOW_RUN_RUNNING;
    if (f->run[0]) {
      gf_err e;
      gf_status s = eval_check_run(f->c, f->run, &status, &e);
      if (s == GF_ENOTFOUND || s == GF_ESTATE)
        return gf_fail(err, s, "%s", e.msg);
      if (s != GF_OK) {
        say(f, "%s (retrying at the next scan)", e.msg);
        status = MLFLOW_RUN_RUNNING;
      }
    }
    GF_TRY(scan(o->follow_dir, &f->now, err));
    for (size_t i = 0; i < f->seen.n; i++) {
      int64_t s = f->seen.v[i];
      if (!set_has(&f->done, s) && !set_has(&f->now, s)) {
        say(f, "checkpoint of step %lld was removed before it was evaluated "
            "(pruned by the trainer's --keep)", (long long)s);
        GF_TRY(set_add(&f->done, s, err));
        f->skipped++;
      }
    }
    int64_t next = -1;
    for (size_t i = 0; i < f->now.n; i++) {
      GF_TRY(set_add(&f->seen, f->now.v[i], err));
      if (next < 0 && !set_has(&f->done, f->now.v[i])) next = f->now.v[i];
    }
    if (next >= 0) {
      waiting_said = false;
      GF_TRY(eval_one(f, next, err));
      continue;
    }
    if (f->run[0] && status != MLFLOW_RUN_RUNNING) {
      say(f, "run %s is %s and every checkpoint is done: %d evaluated, %d "
          "skipped", f->run, mlflow_run_status_name(status), f->evaluated,
          f->skipped);
      return GF_OK;
    }
    if (!waiting_said) {
      say(f, "waiting for new checkpoints in %s (every %g s)", o->follow_dir,
          o->poll_s);
      waiting_said = true;
    }
    sig = wait_signal(stop, o->poll_s);
    if (sig) {
      say(f, "%s: stopping (%d evaluated, %d skipped)", strsignal(sig),
          f->evaluated, f->skipped);
      *stopped_by = sig;
      return GF_OK;
    }
  }
}

gf_status gf_cli_eval_follow(mlflow_client *c, const gf_cli_eval_opts *o,
                             const sigset_t *stop, FILE *out, FILE *log,
                             int *stopped_by, gf_err *err) {
  int sig = 0;
  if (stopped_by) *stopped_by = 0;
  if (!c || !o || !o->follow_dir || !o->data || !stop || !out ||
      o->images < 2 || o->batch < 1 || !(o->poll_s > 0))
    return gf_fail(err, GF_EINVAL, "eval --follow: bad arguments");
  follow f;
  memset(&f, 0, sizeof f);
  f.c = c;
  f.o = o;
  f.out = out;
  f.log = log;
  gf_status st = follow_loop(&f, stop, &sig, err);
  if (f.ref_ready) eval_ref_free(&f.ref);
  free(f.done.v);
  free(f.seen.v);
  free(f.now.v);
  if (stopped_by) *stopped_by = sig;
  return st;
}
