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

/* ---- watching one attempt ---------------------------------------------- */

void launch_read_beats(launch_sup *s, launch_attempt *a, double now) {
  for (int i = 0; i < a->world; i++) {
    launch_rank *r = &a->r[i];
    gf_heartbeat_rec rec;
    gf_err e;
    if (gf_heartbeat_read(a->hb_dir, a->rank_base + i, &rec, &e) != GF_OK)
      continue;
    if (r->have_hb && rec.seq == r->hb.seq) continue;
    r->hb = rec;
    r->have_hb = true;
    r->t_change = now;
    if (rec.phase >= GF_HB_TRAIN) r->trained = true;
    if (a->rank_base + i == 0 && rec.run[0]) launch_set_run_id(s, rec.run);
  }
  const launch_rank *r0 = &a->r[0];
  /* any phase from TRAIN on past the step the attempt began from: it
   * trained a step (a fast attempt's TRAIN beats may all fall between two
   * polls, its checkpoint or stop beat does not) */
  if (a->rank_base == 0 && s->ws_pending && r0->have_hb &&
      r0->hb.phase >= GF_HB_TRAIN && r0->hb.step > s->ws_from) {
    s->ws_pending = false; /* this world trained a step: the run says so */
    launch_add_world_point(s, s->ws_from, s->ws_world);
    launch_flush_events(s);
  }
  if (a->rank_base == 0 && s->awaiting && r0->have_hb && r0->hb.phase == GF_HB_TRAIN &&
      r0->hb.step > s->resume_step) {
    s->awaiting = false;
    double dt = now - s->t_fail;
    launch_say(s, "step %" PRId64 " done, %.1f s after the failure was seen",
        r0->hb.step, dt);
    if (s->n_ev) { /* the newest event is this attempt's restart */
      s->ev[s->n_ev - 1].recovery_s = dt;
      launch_flush_events(s);
    }
  }
}

static bool ok_exit(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

/* Ended when every rank (local) or the launcher has exited 0: by rank 0's
 * last beat, done or stopped. */
void launch_classify_clean_end(launch_sup *s, const launch_attempt *a,
                               outcome *out) {
  const launch_rank *r0 = &a->r[0];
  if (a->rank_base != 0) { /* rank 0's node tells how the job ended */
    out->end = s->signals ? END_STOPPED : END_DONE;
  } else if (r0->have_hb && r0->hb.phase == GF_HB_DONE) {
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
bool launch_find_exit_failure(const gf_launch_opts *o, launch_attempt *a,
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
                 launch_launcher_name(o->launcher), how);
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
               a->rank_base + pick, r->slot, (long)r->pid, how,
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
bool launch_find_hang(const gf_launch_opts *o, launch_attempt *a, double now,
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
                 gf_hb_phase_name(ph), a->rank_base + oldest_i, pid,
                 stopped ? ", stopped" : "", r->hb.step,
                 gf_hb_phase_name(r->hb.phase), now - r->t_change);
  else
    n = snprintf(out->cause, sizeof out->cause, "no heartbeat for %.1f s "
                 "(limit %gs in %s): rank %d (pid %ld%s) never reported",
                 now - newest, limit, gf_hb_phase_name(ph),
                 a->rank_base + oldest_i, pid,
                 stopped ? ", stopped" : "");
  assert(gf_fits(n, sizeof out->cause));
  (void)n;
  return true;
}

bool launch_all_clean(const gf_launch_opts *o, const launch_attempt *a) {
  if (o->launcher != GF_LAUNCHER_LOCAL)
    return a->launcher_exited && ok_exit(a->launcher_status);
  for (int i = 0; i < a->world; i++)
    if (!a->r[i].exited || !ok_exit(a->r[i].status)) return false;
  return true;
}

/* Slots of this host's launcher not left out (local), else --nproc. */
static int other_slots(const launch_sup *s) {
  const gf_launch_opts *o = s->o;
  if (o->launcher != GF_LAUNCHER_LOCAL) return o->nproc;
  int n = 0;
  for (int i = 0; i < o->nproc; i++) n += !s->slot_down[i];
  return n;
}

static void watch(launch_sup *s, launch_attempt *a, outcome *out) {
  const gf_launch_opts *o = s->o;
  memset(out, 0, sizeof *out);
  out->start_slot = -1;
  for (;;) {
    struct timespec ts = {0, (long)(POLL_S * 1e9)};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      s->signals++;
      if (s->signals == 1) {
        launch_say(s, "%s: passing SIGTERM to the ranks; they checkpoint at the "
            "next step and stop (a second signal kills them)", strsignal(sig));
        launch_signal_stop(o, a);
      } else {
        launch_say(s, "%s again: killing the ranks", strsignal(sig));
        launch_kill_all(a);
        out->end = END_ABORTED;
        return;
      }
    }
    launch_reap(a);
    double now = gf_mono_s();
    launch_read_beats(s, a, now);
    if (launch_capacity_watch(s, a, other_slots(s), out)) return;
    if (launch_find_exit_failure(o, a, out) || launch_find_hang(o, a, now, out)) {
      out->t_seen = now;
      launch_kill_all(a);
      /* after a stop was asked for, an end is a stop, never a restart */
      if (s->signals && out->end == END_FAILED) {
        launch_say(s, "after the stop signal: %s", out->cause);
        out->end = END_ABORTED;
      }
      return;
    }
    if (launch_all_clean(o, a)) {
      launch_read_beats(s, a, gf_mono_s()); /* rank 0's last words */
      launch_classify_clean_end(s, a, out);
      out->t_seen = gf_mono_s();
      if (out->end == END_STOPPED && s->cap_stopping && !s->signals)
        out->end = END_RESIZE;
      return;
    }
  }
}

/* ---- the attempts ------------------------------------------------------ */

/* Slots that can run now: local, those not left out; mpirun with a host
 * file, its slots; srun, the allocation's tasks. */
static gf_status available(launch_sup *s, int *avail, gf_err *err) {
  const gf_launch_opts *o = s->o;
  *avail = o->nproc;
  if (o->cap_kind != GF_CAP_NONE) {
    *avail = launch_capacity_avail(s, other_slots(s));
  } else if (o->launcher == GF_LAUNCHER_LOCAL) {
    *avail = other_slots(s);
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

static int finish_failed(launch_sup *s, const char *reason) {
  launch_say(s, "FAILED: %s", reason);
  launch_end_run(s, MLFLOW_RUN_FAILED, reason);
  return GF_LAUNCH_EXIT_FAILED;
}

/* The step the next attempt resumes from (0 without a checkpoint). */
int64_t launch_resume_step(launch_sup *s) {
  char path[GF_PATH_MAX];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(s->o->train.checkpoint_dir, path, sizeof path,
                                &meta, NULL, NULL, 0, &e) != GF_OK)
    return 0;
  if (!s->run_id[0] && meta.run_id[0]) launch_keep_run_id(s, meta.run_id);
  return meta.step;
}

int gf_launch_run(const gf_launch_opts *o, FILE *log) {
  if (o->nnodes_max > 0) return launch_node_run(o, log);
  launch_sup *s = calloc(1, sizeof *s);
  launch_attempt *a = calloc(1, sizeof *a);
  if (!s || !a) {
    fprintf(log, "ganflow launch: out of memory\n");
    free(s);
    free(a);
    return GF_LAUNCH_EXIT_FAILED;
  }
  launch_sup_init(s, o, log);
  int rc = GF_LAUNCH_EXIT_FAILED;
  int prev_world = 0;
  int attempts = 0;
  bool failed = false; /* the last attempt failed: this one is a restart */
  char last_cause[sizeof ((outcome *)0)->cause] = "";
  if (o->cap_kind != GF_CAP_NONE) {
    gf_err e;
    memset(&e, 0, sizeof e);
    if (launch_capacity_start(s, &e) != GF_OK) {
      launch_say(s, "%s", e.msg);
      rc = GF_LAUNCH_EXIT_USAGE;
      goto done;
    }
  }
  for (;;) {
    gf_err e;
    memset(&e, 0, sizeof e);
    int avail = 0, world = 0, ga = 0;
    if (available(s, &avail, &e) != GF_OK) {
      rc = s->restarts ? finish_failed(s, e.msg) : GF_LAUNCH_EXIT_USAGE;
      if (!s->restarts) launch_say(s, "%s", e.msg);
      break;
    }
    bool stopped = false;
    if (gf_launch_plan_world(o, avail, &world, &ga, &e) != GF_OK &&
        o->cap_kind != GF_CAP_NONE &&
        !launch_capacity_wait(s, other_slots(s), &world, &ga, &stopped, &e)) {
      if (stopped) {
        launch_say(s, "stopped by a signal while waiting for capacity; run "
            "the same command to resume");
        if (attempts) launch_end_run(s, MLFLOW_RUN_KILLED, NULL);
        rc = GF_LAUNCH_EXIT_STOPPED;
        break;
      }
    }
    if (world == 0) {
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
    a->global_world = world;
    a->hb_dir = o->hb_dir;
    a->grad_accum = ga;
    for (int i = 0, slot = 0; i < world; slot++)
      if (o->launcher != GF_LAUNCHER_LOCAL || !s->slot_down[slot]) a->r[i++].slot = slot;
    static const char loopback[] = "127.0.0.1";
    _Static_assert(sizeof loopback <= sizeof a->master, "loopback fits");
    if (o->launcher == GF_LAUNCHER_LOCAL ||
        gethostname(a->master, sizeof a->master - 1) != 0)
      memcpy(a->master, loopback, sizeof loopback);
    int64_t from = attempts || o->train.resume == GF_RESUME_AUTO
                       ? launch_resume_step(s) : 0;
    if (failed) {
      restart_event *ev = launch_add_event(s, from);
      /* a cause (< 512 bytes), literals and ints: text[700] holds them */
      int n = snprintf(ev->text, sizeof ev->text, "%s; restarted on %d "
                       "rank%s (was %d), resuming from step %" PRId64,
                       last_cause, world, world == 1 ? "" : "s", prev_world,
                       from);
      assert(gf_fits(n, sizeof ev->text));
      (void)n;
      launch_say(s, "restart %d of %d: %s", s->restarts, o->max_restarts, ev->text);
      launch_find_run_id(s);
      launch_flush_events(s);
      s->resume_step = from;
      s->awaiting = true;
    }
    if (launch_free_port(&a->port, &e) != GF_OK ||
        launch_prepare_hb_dir(o->hb_dir, &e) != GF_OK ||
        (o->cap_kind != GF_CAP_NONE &&
         launch_capacity_begin(s, a, &e) != GF_OK)) {
      rc = finish_failed(s, e.msg);
      break;
    }
    char **argv = gf_launch_argv(o, ga, attempts > 0, &e);
    if (!argv) {
      rc = finish_failed(s, e.msg);
      break;
    }
    launch_say(s, "starting %d rank%s (%s%s, grad-accum %d, MASTER_PORT %d)", world,
        world == 1 ? "" : "s", launch_launcher_name(o->launcher),
        world < o->nproc ? ", fewer than --nproc" : "", o->train.exact_reduce
        ? o->train.exact_shards / world : ga, a->port);
    gf_status st = launch_spawn(o, a, argv, s->restarts, &e);
    gf_launch_argv_free(argv);
    if (st != GF_OK) {
      rc = finish_failed(s, e.msg);
      break;
    }
    s->ws_pending = true;
    s->ws_world = world;
    s->ws_from = from;
    attempts++;
    failed = false;
    outcome out;
    watch(s, a, &out);
    prev_world = world;
    if (out.end == END_RESIZE) { /* planned: no restart counted */
      launch_capacity_resized(s, launch_resume_step(s));
      launch_find_run_id(s);
      launch_flush_events(s);
      continue;
    }
    if (out.end == END_DONE) {
      launch_say(s, "training finished (%d restart%s)", s->restarts,
          s->restarts == 1 ? "" : "s");
      rc = GF_LAUNCH_EXIT_OK;
      break;
    }
    if (out.end == END_STOPPED || out.end == END_ABORTED) {
      if (out.end == END_ABORTED) launch_end_run(s, MLFLOW_RUN_KILLED, NULL);
      launch_say(s, "stopped by a signal%s; run the same command to resume",
          out.end == END_ABORTED ? " (ranks killed: resuming repeats the "
                                   "steps since the last checkpoint)" : "");
      rc = GF_LAUNCH_EXIT_STOPPED;
      break;
    }
    if (out.end == END_USAGE) {
      launch_say(s, "%s: the ranks refused their configuration (their messages say "
          "why); a restart cannot fix that", out.cause);
      rc = GF_LAUNCH_EXIT_USAGE;
      break;
    }
    memcpy(last_cause, out.cause, sizeof last_cause); /* same sizes */
    launch_say(s, "attempt failed: %s", out.cause);
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
    failed = true;
  }
done:
  launch_flush_events(s);
  launch_capacity_free(s);
  mlflow_client_free(s->mc);
  free(s);
  free(a);
  return rc;
}
