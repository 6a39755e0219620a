/* launch_run.c - gf_launch_run: the supervisor's loop over attempts. Each
 * attempt is planned (world size, slots, argv), started (launch_proc.c) and
 * watched until it ends: every rank done, a signal passed on, a rank that
 * exits with an error or is killed, or heartbeats that stop. A failed
 * attempt is killed whole and, within --max-restarts, started again with
 * --resume auto; the restart goes to the log and to the MLflow run.
 *
 * Failure detection, per poll (every 100 ms, or at once on SIGCHLD):
 *   - local: a rank's exit status (the first non-zero one is the cause;
 *     status 2 is a configuration no restart fixes);
 *     mpirun/srun: the launcher's (it ends the job when a rank dies);
 *   - heartbeats: the job counts as hung when no running rank's beat has
 *     changed for --hang-timeout (the newest beat in TRAIN or CHECKPOINT)
 *     or --start-timeout (any other phase). Synchronous data parallelism
 *     makes every rank wait for a stopped one within a step, so the rank
 *     whose beat is oldest is named as the cause.
 * A rank that fails before its first training beat while the others wait
 * for it is a slot that cannot start: the next attempt leaves that slot
 * out (local launcher); slots left out are tried again at the next restart
 * with another cause. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/checkpoint.h"
#include "gf/clock.h"
#include "gf/fs.h"
#include "gf/text.h"
#include "launch_internal.h"
#include "mlflow/mlflow.h"

#define POLL_S 0.1
#define MAX_EVENTS 64

typedef enum end_kind {
  END_DONE = 0,  /* training finished, model logged */
  END_STOPPED,   /* a signal was passed on; the ranks checkpointed */
  END_ABORTED,   /* a second signal: the ranks were killed */
  END_USAGE,     /* the ranks refused their configuration */
  END_FAILED     /* a rank died, hung or could not start */
} end_kind;

typedef struct outcome {
  end_kind end;
  char cause[512];
  int start_slot; /* END_FAILED: the slot that could not start, or -1 */
  double t_seen;  /* monotonic s when the failure was seen */
} outcome;

/* A restart goes to the run as restart number base + n (base: the
 * restarts the run held before this supervisor, from MLflow): tag
 * ganflow.restart.<number>, and sys/restarts = number and
 * sys/restart_recovery_s at step <number>. The number, not the step resumed
 * from, is the metrics' step: two restarts may resume from one checkpoint,
 * and each (key, step) of a run is logged once (DESIGN §4.4). */
typedef struct restart_event {
  int n;              /* 1, 2, ... within this supervisor */
  int64_t step;       /* the step the next attempt resumes from */
  char text[700];     /* cause, world sizes, step */
  bool logged;        /* sent to MLflow */
  double recovery_s;  /* failure to the first new step; < 0 until seen */
  bool recovery_logged;
} restart_event;

typedef struct sup {
  const gf_launch_opts *o;
  FILE *log;
  sigset_t sigs;
  int signals;        /* SIGTERM/SIGINT/SIGHUP received */
  bool slot_down[GF_LAUNCH_MAX_RANKS];
  int restarts;
  char run_id[GF_HB_RUN_MAX + 1]; /* the MLflow run, once known */
  mlflow_client *mc;  /* NULL until first needed (or when it cannot be) */
  bool mc_tried;
  bool tagged;        /* ganflow.launch set on the run */
  int base;           /* restarts the run held before ours; -1 unread */
  restart_event ev[MAX_EVENTS];
  int n_ev;
  /* recovery timing of the current attempt */
  bool awaiting;      /* a restart whose first new step is not seen yet */
  double t_fail;      /* monotonic s the failure was seen */
  int64_t resume_step;
} sup;

static void say(sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(sup *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ganflow launch: ", s->log);
  vfprintf(s->log, fmt, ap);
  fputc('\n', s->log);
  fflush(s->log);
  va_end(ap);
}

/* ---- MLflow ------------------------------------------------------------ */

/* The client, made once from the environment; NULL when it cannot be
 * (the events then stay in the log). Short retries: the supervisor must
 * keep watching. */
static mlflow_client *client(sup *s) {
  if (s->mc_tried) return s->mc;
  s->mc_tried = true;
  mlflow_config cfg;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_config_from_env(&cfg, &e) != MLFLOW_OK) {
    say(s, "warning: MLflow settings: %s (restarts are only logged here)",
        e.message);
    return NULL;
  }
  /* at most ~11 s per call while a server is down: a restart event not
   * sent is kept and sent with the next one */
  cfg.max_retries = 1;
  cfg.backoff_factor = 0.5;
  cfg.backoff_jitter = 0.2;
  cfg.timeout_s = 5;
  if (mlflow_client_new(&s->mc, &cfg, &e) != MLFLOW_OK) {
    say(s, "warning: MLflow client: %s", e.message);
    s->mc = NULL;
  }
  mlflow_config_free(&cfg);
  return s->mc;
}

/* Keeps id as the run's id. Its sources (a checkpoint's run_id, a
 * heartbeat's run, a run_id file's line checked against GF_HB_RUN_MAX) are
 * no longer than run_id holds; one that were would be kept as no id at all
 * (the run is then found again from the next source), never cut. */
static void keep_run_id(sup *s, const char *id) {
  _Static_assert(sizeof ((gf_ckpt_meta *)0)->run_id <= sizeof s->run_id &&
                     sizeof ((gf_heartbeat_rec *)0)->run <= sizeof s->run_id,
                 "run ids fit sup.run_id");
  gf_status st = gf_format(s->run_id, sizeof s->run_id, NULL, "run id", "%s",
                           id);
  assert(st == GF_OK);
  (void)st;
}

/* The run id from the newest good checkpoint, else <ckpt-dir>/run_id. */
static void find_run_id(sup *s) {
  if (s->run_id[0]) return;
  char path[GF_PATH_MAX];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(s->o->train.checkpoint_dir, path, sizeof path,
                                &meta, NULL, NULL, 0, &e) == GF_OK &&
      meta.run_id[0]) {
    keep_run_id(s, meta.run_id);
    return;
  }
  if (gf_path_join(path, sizeof path, s->o->train.checkpoint_dir, "run_id",
                   &e) != GF_OK) {
    say(s, "warning: the run id file: %s", e.msg);
    return;
  }
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[128] = "";
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, " \r\n")] = '\0';
    if (strlen(line) <= GF_HB_RUN_MAX) keep_run_id(s, line);
  }
  fclose(f);
}

static const char *launcher_name(gf_launcher l) {
  return l == GF_LAUNCHER_MPIRUN ? "mpirun" : l == GF_LAUNCHER_SRUN ? "srun" : "local";
}

/* s->base from the run's sys/restarts (its newest step is the number of
 * the run's last logged restart); false when the run cannot be read. */
static bool read_base(sup *s, mlflow_client *c) {
  if (s->base >= 0) return true;
  mlflow_run run;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_run_get(c, s->run_id, &run, &e) != MLFLOW_OK) {
    say(s, "warning: MLflow: restarts not logged yet: %s", e.message);
    return false;
  }
  s->base = 0;
  for (size_t i = 0; i < run.n_metrics; i++)
    if (strcmp(run.metrics[i].key, "sys/restarts") == 0 &&
        run.metrics[i].step > 0 && run.metrics[i].step < INT_MAX / 2)
      s->base = (int)run.metrics[i].step;
  mlflow_run_free(&run);
  return true;
}

/* Sends what the run lacks: the launch tag, then every restart event not
 * logged yet and its recovery time. Failures are reported and retried at
 * the next call. */
static void flush_events(sup *s) {
  if (!s->run_id[0]) return;
  mlflow_client *c = client(s);
  if (!c) return;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (!s->tagged) {
    char v[256]; /* a launcher's name, ints and a %g: 256 bytes hold them */
    int n = snprintf(v, sizeof v, "%s, %d ranks (at least %d), up to %d "
                     "restarts, hang timeout %gs",
                     launcher_name(s->o->launcher), s->o->nproc,
                     s->o->nproc_min, s->o->max_restarts, s->o->hang_timeout);
    assert(gf_fits(n, sizeof v));
    (void)n;
    if (mlflow_set_tag(c, s->run_id, "ganflow.launch", v, &e) == MLFLOW_OK)
      s->tagged = true;
    else
      say(s, "warning: MLflow: %s", e.message);
  }
  if (s->n_ev && !read_base(s, c)) return;
  for (int i = 0; i < s->n_ev; i++) {
    restart_event *ev = &s->ev[i];
    int number = s->base + ev->n;
    if (!ev->logged) {
      char key[64], n[16]; /* a literal and an int; an int */
      int kl = snprintf(key, sizeof key, "ganflow.restart.%d", number);
      int nl = snprintf(n, sizeof n, "%d", number);
      assert(gf_fits(kl, sizeof key) && gf_fits(nl, sizeof n));
      (void)kl;
      (void)nl;
      mlflow_metric m = {"sys/restarts", (double)number, mlflow_now_ms(), number};
      mlflow_kv tags[2] = {{key, ev->text}, {"ganflow.restarts", n}};
      if (mlflow_log_batch(c, s->run_id, &m, 1, NULL, 0, tags, 2, &e) != MLFLOW_OK) {
        say(s, "warning: MLflow: restart %d not logged yet: %s", ev->n, e.message);
        return;
      }
      ev->logged = true;
    }
    if (ev->recovery_s >= 0 && !ev->recovery_logged) {
      if (mlflow_log_metric(c, s->run_id, "sys/restart_recovery_s",
                            ev->recovery_s, mlflow_now_ms(), number, &e) !=
          MLFLOW_OK) {
        say(s, "warning: MLflow: %s", e.message);
        return;
      }
      ev->recovery_logged = true;
    }
  }
}

static void set_run_id(sup *s, const char *id) {
  if (!id[0] || strcmp(s->run_id, id) == 0) return;
  keep_run_id(s, id);
  flush_events(s);
}

/* The job's end in MLflow when the ranks could not set it themselves. */
static void end_run(sup *s, mlflow_run_status st, const char *reason) {
  find_run_id(s);
  if (!s->run_id[0]) return;
  mlflow_client *c = client(s);
  if (!c) return;
  flush_events(s);
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if ((reason && mlflow_set_tag(c, s->run_id, "ganflow.launch.failure", reason,
                                &e) != MLFLOW_OK) ||
      mlflow_run_update(c, s->run_id, st, mlflow_now_ms(), &e) != MLFLOW_OK)
    say(s, "warning: MLflow: cannot mark run %s %s: %s", s->run_id,
        mlflow_run_status_name(st), e.message);
}

/* ---- watching one attempt ---------------------------------------------- */

static void read_beats(sup *s, launch_attempt *a, double now) {
  for (int i = 0; i < a->world; i++) {
    launch_rank *r = &a->r[i];
    gf_heartbeat_rec rec;
    gf_err e;
    if (gf_heartbeat_read(s->o->hb_dir, i, &rec, &e) != GF_OK) continue;
    if (r->have_hb && rec.seq == r->hb.seq) continue;
    r->hb = rec;
    r->have_hb = true;
    r->t_change = now;
    if (rec.phase >= GF_HB_TRAIN) r->trained = true;
    if (i == 0 && rec.run[0]) set_run_id(s, rec.run);
  }
  const launch_rank *r0 = &a->r[0];
  if (s->awaiting && r0->have_hb && r0->hb.phase == GF_HB_TRAIN &&
      r0->hb.step > s->resume_step) {
    s->awaiting = false;
    double dt = now - s->t_fail;
    say(s, "step %" PRId64 " done, %.1f s after the failure was seen",
        r0->hb.step, dt);
    if (s->n_ev) { /* the newest event is this attempt's restart */
      s->ev[s->n_ev - 1].recovery_s = dt;
      flush_events(s);
    }
  }
}

static bool ok_exit(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

/* Ended when every rank (local) or the launcher has exited 0: by rank 0's
 * last beat, done or stopped. */
static void classify_clean_end(sup *s, const launch_attempt *a, outcome *out) {
  const launch_rank *r0 = &a->r[0];
  if (r0->have_hb && r0->hb.phase == GF_HB_DONE) {
    out->end = END_DONE;
  } else if ((r0->have_hb && r0->hb.phase == GF_HB_STOPPED) || s->signals) {
    out->end = END_STOPPED;
  } else {
    out->end = END_FAILED;
    out->start_slot = -1;
    int n = snprintf(out->cause, sizeof out->cause, "every rank exited 0, "
                     "but rank 0 reported neither the end of training nor a "
                     "stop (last phase: %s)",
                     r0->have_hb ? gf_hb_phase_name(r0->hb.phase) : "none");
    assert(gf_fits(n, sizeof out->cause)); /* a phase's name */
    (void)n;
  }
}

/* A rank (local) or the launcher that failed; false when none did. */
static bool find_exit_failure(const gf_launch_opts *o, launch_attempt *a,
                              outcome *out) {
  /* Every cause below is literals, ints, names of phases and launchers and
   * how (< 128 bytes): out->cause (512 bytes) holds it. */
  char how[128];
  int n;
  if (o->launcher != GF_LAUNCHER_LOCAL) {
    int gone = a->launcher_exited ? -1 : launch_find_vanished(a);
    if (gone >= 0) {
      const launch_rank *r = &a->r[gone];
      out->end = END_FAILED;
      n = snprintf(out->cause, sizeof out->cause, "rank %d (pid %ld on this "
                   "host) vanished at step %" PRId64 " (%s)", gone, r->hb.pid,
                   r->hb.step, gf_hb_phase_name(r->hb.phase));
      assert(gf_fits(n, sizeof out->cause));
      return true;
    }
    if (!a->launcher_exited || ok_exit(a->launcher_status)) return false;
    launch_describe_status(a->launcher_status, how, sizeof how);
    out->end = WIFEXITED(a->launcher_status) && WEXITSTATUS(a->launcher_status) == 2
                   ? END_USAGE : END_FAILED;
    n = snprintf(out->cause, sizeof out->cause, "%s %s",
                 launcher_name(o->launcher), how);
    assert(gf_fits(n, sizeof out->cause));
    return true;
  }
  int pick = -1;
  for (int i = 0; i < a->world; i++) {
    const launch_rank *r = &a->r[i];
    if (!r->exited || ok_exit(r->status)) continue;
    /* a rank killed by a signal is a likelier cause than one that exited
     * because its peer vanished */
    if (pick < 0 || (WIFSIGNALED(r->status) && !WIFSIGNALED(a->r[pick].status)))
      pick = i;
  }
  if (pick < 0) return false;
  const launch_rank *r = &a->r[pick];
  launch_describe_status(r->status, how, sizeof how);
  bool usage = WIFEXITED(r->status) && WEXITSTATUS(r->status) == 2;
  out->end = usage ? END_USAGE : END_FAILED;
  int alive = 0;
  for (int i = 0; i < a->world; i++) alive += i != pick && !a->r[i].exited;
  bool at_start = !r->trained && (alive > 0 || a->world == 1);
  out->start_slot = !usage && at_start ? r->slot : -1;
  n = snprintf(out->cause, sizeof out->cause, "rank %d (slot %d, pid %ld) %s%s",
               pick, r->slot, (long)r->pid, how,
               at_start ? " before training began" :
               r->have_hb ? "" : "");
  assert(gf_fits(n, sizeof out->cause));
  if (r->have_hb && r->trained) {
    size_t len = strlen(out->cause);
    n = snprintf(out->cause + len, sizeof out->cause - len, " at step %" PRId64,
                 r->hb.step);
    assert(gf_fits(n, sizeof out->cause - len));
  }
  (void)n;
  return true;
}

/* Hung: no running rank has beaten within its phase's limit. */
static bool find_hang(const gf_launch_opts *o, launch_attempt *a, double now,
                      outcome *out) {
  double newest = a->t_start;
  int newest_i = -1, running = 0;
  for (int i = 0; i < a->world; i++) {
    const launch_rank *r = &a->r[i];
    if (r->exited) continue;
    running++;
    if (r->t_change >= newest) newest = r->t_change, newest_i = i;
  }
  if (!running) return false;
  gf_hb_phase ph = newest_i >= 0 && a->r[newest_i].have_hb
                       ? a->r[newest_i].hb.phase : GF_HB_START;
  bool short_limit = ph == GF_HB_TRAIN || ph == GF_HB_CHECKPOINT;
  double limit = short_limit ? o->hang_timeout : o->start_timeout;
  if (now - newest <= limit) return false;
  /* The cause: a stopped process when there is one (its peers wait for it
   * in a collective and beat last in the same poll), else the rank whose
   * beat is oldest, then the lowest step. */
  int cause = -1;
  bool stopped = false;
  for (int i = 0; i < a->world; i++) {
    const launch_rank *r = &a->r[i];
    if (r->exited) continue;
    long p = r->pid > 0 ? (long)r->pid : r->have_hb ? r->hb.pid : 0;
    bool st = p > 0 && launch_pid_stopped((pid_t)p);
    const launch_rank *c = cause >= 0 ? &a->r[cause] : NULL;
    bool better = !c || (st && !stopped) ||
                  (st == stopped &&
                   (r->t_change < c->t_change ||
                    (r->t_change == c->t_change && r->have_hb && c->have_hb &&
                     r->hb.step < c->hb.step)));
    if (better) cause = i, stopped = st;
  }
  int oldest_i = cause;
  const launch_rank *r = &a->r[oldest_i];
  long pid = r->pid > 0 ? (long)r->pid : r->have_hb ? r->hb.pid : 0;
  out->end = END_FAILED;
  out->start_slot = -1;
  /* literals, numbers and phase names: out->cause (512 bytes) holds them */
  int n;
  if (r->have_hb)
    n = snprintf(out->cause, sizeof out->cause, "no heartbeat for %.1f s "
                 "(limit %gs in %s): rank %d (pid %ld%s) last reported step "
                 "%" PRId64 " in %s %.1f s ago", now - newest, limit,
                 gf_hb_phase_name(ph), oldest_i, pid,
                 stopped ? ", stopped" : "", r->hb.step,
                 gf_hb_phase_name(r->hb.phase), now - r->t_change);
  else
    n = snprintf(out->cause, sizeof out->cause, "no heartbeat for %.1f s "
                 "(limit %gs in %s): rank %d (pid %ld%s) never reported",
                 now - newest, limit, gf_hb_phase_name(ph), oldest_i, pid,
                 stopped ? ", stopped" : "");
  assert(gf_fits(n, sizeof out->cause));
  (void)n;
  return true;
}

static bool all_clean(const gf_launch_opts *o, const launch_attempt *a) {
  if (o->launcher != GF_LAUNCHER_LOCAL)
    return a->launcher_exited && ok_exit(a->launcher_status);
  for (int i = 0; i < a->world; i++)
    if (!a->r[i].exited || !ok_exit(a->r[i].status)) return false;
  return true;
}

static void watch(sup *s, launch_attempt *a, outcome *out) {
  const gf_launch_opts *o = s->o;
  memset(out, 0, sizeof *out);
  out->start_slot = -1;
  for (;;) {
    struct timespec ts = {0, (long)(POLL_S * 1e9)};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      s->signals++;
      if (s->signals == 1) {
        say(s, "%s: passing SIGTERM to the ranks; they checkpoint at the "
            "next step and stop (a second signal kills them)", strsignal(sig));
        launch_signal_stop(o, a);
      } else {
        say(s, "%s again: killing the ranks", strsignal(sig));
        launch_kill_all(a);
        out->end = END_ABORTED;
        return;
      }
    }
    launch_reap(a);
    double now = gf_mono_s();
    read_beats(s, a, now);
    if (find_exit_failure(o, a, out) || find_hang(o, a, now, out)) {
      out->t_seen = now;
      launch_kill_all(a);
      /* after a stop was asked for, an end is a stop, never a restart */
      if (s->signals && out->end == END_FAILED) {
        say(s, "after the stop signal: %s", out->cause);
        out->end = END_ABORTED;
      }
      return;
    }
    if (all_clean(o, a)) {
      read_beats(s, a, gf_mono_s()); /* rank 0's last words */
      classify_clean_end(s, a, out);
      out->t_seen = gf_mono_s();
      return;
    }
  }
}

/* ---- the attempts ------------------------------------------------------ */

/* Slots that can run now: local, those not left out; mpirun with a host
 * file, its slots; srun, the allocation's tasks. */
static gf_status available(sup *s, int *avail, gf_err *err) {
  const gf_launch_opts *o = s->o;
  *avail = o->nproc;
  if (o->launcher == GF_LAUNCHER_LOCAL) {
    int n = 0;
    for (int i = 0; i < o->nproc; i++) n += !s->slot_down[i];
    *avail = n;
  } else if (o->launcher == GF_LAUNCHER_MPIRUN && o->hostfile[0]) {
    GF_TRY(launch_hostfile_slots(o->hostfile, avail, err));
  } else if (o->launcher == GF_LAUNCHER_SRUN) {
    const char *nt = getenv("SLURM_NTASKS");
    if (!getenv("SLURM_JOB_ID"))
      return gf_fail(err, GF_EINVAL, "--launcher srun runs inside a Slurm "
                     "allocation (sbatch or salloc): SLURM_JOB_ID is not set");
    if (nt && atoi(nt) > 0) *avail = atoi(nt);
  }
  return GF_OK;
}

static int finish_failed(sup *s, const char *reason) {
  say(s, "FAILED: %s", reason);
  end_run(s, MLFLOW_RUN_FAILED, reason);
  return GF_LAUNCH_EXIT_FAILED;
}

/* The step the next attempt resumes from (0 without a checkpoint). */
static int64_t resume_step(sup *s) {
  char path[GF_PATH_MAX];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(s->o->train.checkpoint_dir, path, sizeof path,
                                &meta, NULL, NULL, 0, &e) != GF_OK)
    return 0;
  if (!s->run_id[0] && meta.run_id[0]) keep_run_id(s, meta.run_id);
  return meta.step;
}

int gf_launch_run(const gf_launch_opts *o, FILE *log) {
  sup *s = calloc(1, sizeof *s);
  launch_attempt *a = calloc(1, sizeof *a);
  if (!s || !a) {
    fprintf(log, "ganflow launch: out of memory\n");
    free(s);
    free(a);
    return GF_LAUNCH_EXIT_FAILED;
  }
  s->o = o;
  s->log = log;
  s->base = -1;
  sigemptyset(&s->sigs);
  sigaddset(&s->sigs, SIGTERM);
  sigaddset(&s->sigs, SIGINT);
  sigaddset(&s->sigs, SIGHUP);
  sigaddset(&s->sigs, SIGCHLD);
  sigprocmask(SIG_BLOCK, &s->sigs, NULL);
  int rc = GF_LAUNCH_EXIT_FAILED;
  int prev_world = 0;
  char last_cause[sizeof ((outcome *)0)->cause] = "";
  for (;;) {
    gf_err e;
    memset(&e, 0, sizeof e);
    int avail = 0, world = 0, ga = 0;
    if (available(s, &avail, &e) != GF_OK) {
      rc = s->restarts ? finish_failed(s, e.msg) : GF_LAUNCH_EXIT_USAGE;
      if (!s->restarts) say(s, "%s", e.msg);
      break;
    }
    if (gf_launch_plan_world(o, avail, &world, &ga, &e) != GF_OK) {
      /* a gf_err message and a cause: why holds both */
      char why[sizeof e.msg + sizeof "; last failure: " + sizeof last_cause];
      int n = snprintf(why, sizeof why, "%s%s%s", e.msg,
                       last_cause[0] ? "; last failure: " : "", last_cause);
      assert(gf_fits(n, sizeof why));
      (void)n;
      rc = finish_failed(s, why);
      break;
    }
    memset(a, 0, sizeof *a);
    a->world = world;
    a->grad_accum = ga;
    for (int i = 0, slot = 0; i < world; slot++)
      if (o->launcher != GF_LAUNCHER_LOCAL || !s->slot_down[slot]) a->r[i++].slot = slot;
    static const char loopback[] = "127.0.0.1";
    _Static_assert(sizeof loopback <= sizeof a->master, "loopback fits");
    if (o->launcher == GF_LAUNCHER_LOCAL ||
        gethostname(a->master, sizeof a->master - 1) != 0)
      memcpy(a->master, loopback, sizeof loopback);
    int64_t from = 0;
    if (s->restarts) {
      from = resume_step(s);
      restart_event *ev = &s->ev[s->n_ev < MAX_EVENTS ? s->n_ev++ : MAX_EVENTS - 1];
      ev->n = s->restarts;
      ev->step = from;
      ev->logged = false;
      ev->recovery_s = -1;
      ev->recovery_logged = false;
      /* a cause (< 512 bytes), literals and ints: text[700] holds them */
      int n = snprintf(ev->text, sizeof ev->text, "%s; restarted on %d "
                       "rank%s (was %d), resuming from step %" PRId64,
                       last_cause, world, world == 1 ? "" : "s", prev_world,
                       from);
      assert(gf_fits(n, sizeof ev->text));
      (void)n;
      say(s, "restart %d of %d: %s", s->restarts, o->max_restarts, ev->text);
      find_run_id(s);
      flush_events(s);
      s->resume_step = from;
      s->awaiting = true;
    }
    if (launch_free_port(&a->port, &e) != GF_OK ||
        launch_prepare_hb_dir(o->hb_dir, &e) != GF_OK) {
      rc = finish_failed(s, e.msg);
      break;
    }
    char **argv = gf_launch_argv(o, ga, s->restarts > 0, &e);
    if (!argv) {
      rc = finish_failed(s, e.msg);
      break;
    }
    say(s, "starting %d rank%s (%s%s, grad-accum %d, MASTER_PORT %d)", world,
        world == 1 ? "" : "s", launcher_name(o->launcher),
        world < o->nproc ? ", fewer than --nproc" : "", o->train.exact_reduce
        ? o->train.exact_shards / world : ga, a->port);
    gf_status st = launch_spawn(o, a, argv, s->restarts, &e);
    gf_launch_argv_free(argv);
    if (st != GF_OK) {
      rc = finish_failed(s, e.msg);
      break;
    }
    outcome out;
    watch(s, a, &out);
    prev_world = world;
    if (out.end == END_DONE) {
      say(s, "training finished (%d restart%s)", s->restarts,
          s->restarts == 1 ? "" : "s");
      rc = GF_LAUNCH_EXIT_OK;
      break;
    }
    if (out.end == END_STOPPED || out.end == END_ABORTED) {
      if (out.end == END_ABORTED) end_run(s, MLFLOW_RUN_KILLED, NULL);
      say(s, "stopped by a signal%s; run the same command to resume",
          out.end == END_ABORTED ? " (ranks killed: resuming repeats the "
                                   "steps since the last checkpoint)" : "");
      rc = GF_LAUNCH_EXIT_STOPPED;
      break;
    }
    if (out.end == END_USAGE) {
      say(s, "%s: the ranks refused their configuration (their messages say "
          "why); a restart cannot fix that", out.cause);
      rc = GF_LAUNCH_EXIT_USAGE;
      break;
    }
    memcpy(last_cause, out.cause, sizeof last_cause); /* same sizes */
    say(s, "attempt failed: %s", out.cause);
    if (out.start_slot >= 0) {
      s->slot_down[out.start_slot] = true;
    } else {
      memset(s->slot_down, 0, sizeof s->slot_down);
    }
    if (s->restarts >= o->max_restarts) {
      char why[sizeof out.cause + 64]; /* a cause, literals and an int */
      int n = snprintf(why, sizeof why, "%d restart%s used (--max-restarts); "
                       "last failure: %s", s->restarts,
                       s->restarts == 1 ? "" : "s", out.cause);
      assert(gf_fits(n, sizeof why));
      (void)n;
      rc = finish_failed(s, why);
      break;
    }
    s->restarts++;
    s->t_fail = out.t_seen;
  }
  flush_events(s);
  mlflow_client_free(s->mc);
  free(s);
  free(a);
  return rc;
}
