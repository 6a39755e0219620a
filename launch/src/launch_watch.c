/* launch_watch.c - what watching an attempt's ranks finds, for the one-node
 * supervisor (launch_run.c) and the node agents (launch_node.c) alike: the
 * ranks' heartbeats read (and what rank 0's tell the run: its id, the
 * world it trains at, the time a restart took), a rank or launcher that
 * exited with an error, a hang (no beat within its phase's limit), every
 * rank done, and how a clean end ended. Each looks at the attempt as it is
 * and decides nothing else: when to poll, kill or restart is the caller's.
 *
 * Hang rule: the job counts as hung when no running rank's beat has
 * changed for --hang-timeout (the newest beat in TRAIN or CHECKPOINT) or
 * --start-timeout (any other phase). Synchronous data parallelism makes
 * every rank wait for a stopped one within a step, so the cause named is a
 * stopped process when there is one, else the rank whose beat is oldest. */
#define _GNU_SOURCE
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "gf/text.h"
#include "launch_internal.h"

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
    /* literals and a phase's name */
    GF_FORMAT_FITS(out->cause, sizeof out->cause, "every rank exited 0, "
                   "but rank 0 reported neither the end of training nor a "
                   "stop (last phase: %s)",
                   r0->have_hb ? gf_hb_phase_name(r0->hb.phase) : "none");
  }
}

/* A rank (local) or the launcher that failed; false when none did. */
bool launch_find_exit_failure(const gf_launch_opts *o, launch_attempt *a,
                              outcome *out) {
  /* Every cause below is literals, ints, names of phases and launchers and
   * how (< 128 bytes): out->cause (512 bytes) holds it. */
  char how[128];
  if (o->launcher != GF_LAUNCHER_LOCAL) {
    int gone = a->launcher_exited ? -1 : launch_find_vanished(a);
    if (gone >= 0) {
      const launch_rank *r = &a->r[gone];
      out->end = END_FAILED;
      GF_FORMAT_FITS(out->cause, sizeof out->cause, "rank %d (pid %ld on "
                     "this host) vanished at step %" PRId64 " (%s)", gone,
                     r->hb.pid, r->hb.step, gf_hb_phase_name(r->hb.phase));
      return true;
    }
    if (!a->launcher_exited || ok_exit(a->launcher_status)) return false;
    launch_describe_status(a->launcher_status, how, sizeof how);
    out->end = WIFEXITED(a->launcher_status) && WEXITSTATUS(a->launcher_status) == 2
                   ? END_USAGE : END_FAILED;
    GF_FORMAT_FITS(out->cause, sizeof out->cause, "%s %s",
                   launch_launcher_name(o->launcher), how);
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
  GF_FORMAT_FITS(out->cause, sizeof out->cause,
                 "rank %d (slot %d, pid %ld) %s%s", a->rank_base + pick,
                 r->slot, (long)r->pid, how,
                 at_start ? " before training began" :
                 r->have_hb ? "" : "");
  if (r->have_hb && r->trained) {
    size_t len = strlen(out->cause);
    GF_FORMAT_FITS(out->cause + len, sizeof out->cause - len,
                   " at step %" PRId64, r->hb.step);
  }
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
  if (r->have_hb)
    GF_FORMAT_FITS(out->cause, sizeof out->cause, "no heartbeat for %.1f s "
                   "(limit %gs in %s): rank %d (pid %ld%s) last reported step "
                   "%" PRId64 " in %s %.1f s ago", now - newest, limit,
                   gf_hb_phase_name(ph), a->rank_base + oldest_i, pid,
                   stopped ? ", stopped" : "", r->hb.step,
                   gf_hb_phase_name(r->hb.phase), now - r->t_change);
  else
    GF_FORMAT_FITS(out->cause, sizeof out->cause, "no heartbeat for %.1f s "
                   "(limit %gs in %s): rank %d (pid %ld%s) never reported",
                   now - newest, limit, gf_hb_phase_name(ph),
                   a->rank_base + oldest_i, pid,
                   stopped ? ", stopped" : "");
  return true;
}

bool launch_all_clean(const gf_launch_opts *o, const launch_attempt *a) {
  if (o->launcher != GF_LAUNCHER_LOCAL)
    return a->launcher_exited && ok_exit(a->launcher_status);
  for (int i = 0; i < a->world; i++)
    if (!a->r[i].exited || !ok_exit(a->r[i].status)) return false;
  return true;
}
