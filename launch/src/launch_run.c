/* launch_run.c - gf_launch_run: the supervisor's loop over attempts. Each
 * attempt is planned (world size, slots, argv), started (launch_proc.c) and
 * watched until it ends: every rank done, a signal passed on, a rank that
 * exits with an error or is killed, or heartbeats that stop. A failed
 * attempt is killed whole and, within --max-restarts, started again with
 * --resume auto; the restart goes to the log and to the MLflow run.
 *
 * Failure detection, per poll (every 100 ms, or at once on SIGCHLD), by
 * launch_watch.c:
 *   - local: a rank's exit status (the first non-zero one is the cause;
 *     status 2 is a configuration no restart fixes);
 *     mpirun/srun: the launcher's (it ends the job when a rank dies);
 *   - heartbeats: no running rank's beat changed within its phase's limit
 *     (--hang-timeout in training, --start-timeout before).
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
#include "gf/invariant.h"
#include "gf/parse.h"
#include "gf/text.h"
#include "launch_internal.h"
#include "mlflow/mlflow.h"

#define POLL_S 0.1

#if defined(GF_STATE_CHECKS)
/* The attempt as the one-node supervisor holds it: its own checker, a
 * restart count that is the supervisor's, within --max-restarts, and a
 * world no larger than the slots there are. */
static int sup_attempt_ok(const launch_sup *s, const launch_attempt *a) {
  return launch_attempt_state_ok(a) && a->restarts == s->restarts &&
         s->restarts >= 0 && s->restarts <= s->o->max_restarts &&
         a->rank_base == 0 && a->global_world == a->world &&
         (s->o->launcher != GF_LAUNCHER_LOCAL || a->world <= s->o->nproc);
}
#endif

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
    if (nt && *nt)
      GF_TRY(gf_parse_int("SLURM_NTASKS", nt, 1, INT32_MAX, avail, err));
  }
  return GF_OK;
}

static int finish_failed(launch_sup *s, const char *reason) {
  launch_say(s, "FAILED: %s", reason);
  launch_end_run(s, MLFLOW_RUN_FAILED, reason);
  return GF_LAUNCH_EXIT_FAILED;
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
      GF_FORMAT_FITS(why, sizeof why, "%s%s%s", e.msg,
                     last_cause[0] ? "; last failure: " : "", last_cause);
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
      GF_FORMAT_FITS(ev->text, sizeof ev->text, "%s; restarted on %d "
                     "rank%s (was %d), resuming from step %" PRId64,
                     last_cause, world, world == 1 ? "" : "s", prev_world,
                     from);
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
    GF_ASSERT_STATE(a->state == ATTEMPT_RUNNING && sup_attempt_ok(s, a));
    s->ws_pending = true;
    s->ws_world = world;
    s->ws_from = from;
    attempts++;
    failed = false;
    outcome out;
    watch(s, a, &out);
    GF_ASSERT_STATE(a->state == ATTEMPT_ENDED && sup_attempt_ok(s, a));
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
      GF_FORMAT_FITS(why, sizeof why, "%d restart%s used (--max-restarts); "
                     "last failure: %s", s->restarts,
                     s->restarts == 1 ? "" : "s", out.cause);
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
