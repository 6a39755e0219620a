/* comm.c - gf_comm: the choice of an engine, argument checks, the request
 * state machine (steps of each algorithm, lane order, progress, timeouts,
 * and its checker), topology from hostnames and statistics; see gf/comm.h
 * and comm_impl.h. The engines (comm_local.c, comm_mpi.c, comm_nccl.c,
 * comm_tcp.c) only start and test steps, and call nothing here: what they
 * share is in comm_core.c. Launch parsing is in comm_launch.c, the TCP
 * rendezvous in comm_rdv.c, sockets in base (gf/sock.h). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "gf/invariant.h"
#include "gf/text.h"

/* ---- names --------------------------------------------------------------- */

const char *gf_comm_backend_name(gf_comm_backend b) {
  switch (b) {
  case GF_COMM_LOCAL: return "local";
  case GF_COMM_MPI: return "mpi";
  case GF_COMM_NCCL: return "nccl";
  case GF_COMM_TCP: return "tcp";
  }
  return "?";
}

const char *gf_allreduce_algo_name(gf_allreduce_algo a) {
  switch (a) {
  case GF_ALLREDUCE_ENGINE: return "ring";
  case GF_ALLREDUCE_REDUCE_BCAST: return "reduce-bcast";
  case GF_ALLREDUCE_HIER: return "hierarchical";
  case GF_ALLREDUCE_TREE: return "tree";
  }
  return "?";
}

gf_status gf_allreduce_algo_parse(const char *s, gf_allreduce_algo *out,
                                  gf_err *err) {
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++) {
    if (s && strcmp(s, gf_allreduce_algo_name((gf_allreduce_algo)a)) == 0) {
      *out = (gf_allreduce_algo)a;
      return GF_OK;
    }
  }
  return gf_fail(err, GF_EINVAL,
                 "comm: unknown all-reduce algorithm \"%.64s\" (ring, "
                 "reduce-bcast, hierarchical, tree)",
                 s ? s : "(null)");
}

gf_status gf_comm_backend_parse(const char *s, gf_comm_backend *out,
                                gf_err *err) {
  for (int b = GF_COMM_LOCAL; b <= GF_COMM_TCP; b++) {
    if (s && strcmp(s, gf_comm_backend_name((gf_comm_backend)b)) == 0) {
      *out = (gf_comm_backend)b;
      return GF_OK;
    }
  }
  return gf_fail(err, GF_EINVAL,
                 "comm: unknown backend \"%.64s\" (local, mpi, nccl, tcp)",
                 s ? s : "(null)");
}

int gf_comm_built(gf_comm_backend b) {
  switch (b) {
  case GF_COMM_LOCAL: return 1;
  case GF_COMM_MPI:
#ifdef GF_HAVE_MPI
    return 1;
#else
    return 0;
#endif
  case GF_COMM_NCCL:
#ifdef GF_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
  case GF_COMM_TCP: return 1; /* POSIX sockets only */
  }
  return 0;
}

static const char *dtype_name(gf_comm_dtype dt) {
  switch (dt) {
  case GF_CDT_F32: return "f32";
  case GF_CDT_F64: return "f64";
  case GF_CDT_I64: return "i64";
  case GF_CDT_U8: return "u8";
  case GF_CDT_BF16: return "bf16";
  case GF_CDT_F32_AS_BF16: return "f32-as-bf16";
  }
  return "?";
}

/* ---- accessors ----------------------------------------------------------- */

int gf_comm_rank(const gf_comm *c) { return c ? c->rank : 0; }
int gf_comm_world(const gf_comm *c) { return c ? c->world : 1; }
int gf_comm_local_rank(const gf_comm *c) { return c ? c->local_rank : 0; }
int gf_comm_local_world(const gf_comm *c) { return c ? c->local_world : 1; }
int gf_comm_nodes(const gf_comm *c) { return c ? c->nodes : 1; }
gf_comm_backend gf_comm_backend_of(const gf_comm *c) {
  return c ? c->backend : GF_COMM_LOCAL;
}
gf_allreduce_algo gf_comm_algo_of(const gf_comm *c) {
  return c ? c->algo : GF_ALLREDUCE_ENGINE;
}
int gf_comm_device_buffers(const gf_comm *c) {
  return c && c->ops->device_buffers;
}
void gf_comm_set_timeout(gf_comm *c, double timeout_s) {
  if (c) c->timeout_s = timeout_s > 0 ? timeout_s : 600.0;
}
double gf_comm_timeout(const gf_comm *c) { return c ? c->timeout_s : 0; }

void gf_comm_get_stats(const gf_comm *c, gf_comm_stats *out) {
  if (!out) return;
  if (c) *out = c->stats;
  else memset(out, 0, sizeof *out);
}

/* ---- requests ------------------------------------------------------------ */

static int handle_of(const gf_comm *c, int slot) {
  return (int)((c->reqs[slot].gen & 0xffffffu) * 128u + (unsigned)slot);
}

static gf_status slot_of(gf_comm *c, int handle, int *slot, gf_err *err) {
  int s = handle >= 0 ? handle % 128 : -1;
  if (s < 0 || s >= GF_COMM_MAX_REQ || !c->reqs[s].active ||
      handle_of(c, s) != handle)
    return gf_fail(err, GF_EINVAL, "comm: request handle %d is not outstanding",
                   handle);
  *slot = s;
  return GF_OK;
}

#if defined(GF_STATE_CHECKS)
/* Whether request `slot` agrees with the state it is in (gf/invariant.h):
 *   free     !active: every field zero but gen
 *   pending  active, failed GF_OK, cur < nsteps (started: steps[cur] is in
 *            flight, else next)
 *   done     active, failed GF_OK, cur == nsteps, nothing started
 *   failed   active, failed != GF_OK and fail_err saying so, cur < nsteps
 * and, while active: op, dtype and every step in range (a peer inside the
 * world, not this rank for an exchange); the buffers its op needs (buf for
 * count > 0, sendbuf for an allgather and only then) and the element size
 * of its dtype; the working copy buf's own or, for f32-as-bf16, a bf16
 * copy that does not exist before its PACK step starts; a seq the comm has
 * issued and the lane it gives; a start time not in the future under a
 * positive timeout. */
static int comm_req_state_ok(const gf_comm *c, int slot) {
  if (slot < 0 || slot >= GF_COMM_SLOTS || !(c->timeout_s > 0)) return 0;
  const gf_comm_req *r = &c->reqs[slot];
  if (!r->active) {
    gf_comm_req zero;
    memset(&zero, 0, sizeof zero);
    zero.gen = r->gen;
    return memcmp(r, &zero, sizeof zero) == 0;
  }
  if ((unsigned)r->op > GF_OP_ALLGATHER ||
      (unsigned)r->dt > GF_CDT_F32_AS_BF16 || r->nsteps < 0 ||
      r->nsteps > GF_COMM_MAX_STEPS || r->cur < 0 || r->cur > r->nsteps ||
      r->seq >= c->next_seq || c->ops->lanes < 1 ||
      r->lane != (int)(r->seq % (uint64_t)c->ops->lanes) ||
      r->elem != gf_comm_dtype_size(r->dt) || r->t_start > gf_comm_now())
    return 0;
  if (r->failed) { /* failed: on a step, with its error */
    if (r->cur == r->nsteps || r->fail_err.code != r->failed ||
        !r->fail_err.msg[0] ||
        !memchr(r->fail_err.msg, '\0', sizeof r->fail_err.msg))
      return 0;
  } else if (r->fail_err.code != GF_OK || r->fail_err.msg[0] ||
             (r->cur == r->nsteps && r->started)) {
    return 0;
  }
  if ((r->count && r->op != GF_OP_BARRIER && !r->buf) ||
      ((r->op == GF_OP_ALLGATHER && r->count) != (r->sendbuf != NULL)) ||
      (r->op == GF_OP_BCAST && (r->root < 0 || r->root >= c->world)))
    return 0;
  int pack = -1; /* index of the PACK step */
  for (int i = 0; i < r->nsteps; i++) {
    const gf_comm_step *s = &r->steps[i];
    if (s->kind > GF_STEP_UNPACK || s->scope > GF_SCOPE_LEADERS ||
        s->peer < 0 || s->peer >= c->world ||
        (s->kind == GF_STEP_XADD && s->peer == c->rank))
      return 0;
    if (s->kind == GF_STEP_PACK) pack = i;
  }
  if (r->dt != GF_CDT_F32_AS_BF16)
    return r->wbuf == r->buf && r->wdt == r->dt && r->welem == r->elem;
  int packing = pack >= 0 && (pack < r->cur || (pack == r->cur && r->started));
  return r->wdt == GF_CDT_BF16 && r->welem == sizeof(uint16_t) &&
         (packing || r->wbuf == NULL);
}
#endif

static void req_release(gf_comm *c, int slot) {
  gf_comm_req *r = &c->reqs[slot];
  if (c->ops->release) c->ops->release(c, slot);
  unsigned gen = r->gen + 1;
  memset(r, 0, sizeof *r);
  r->gen = gen;
  GF_ASSERT_STATE(comm_req_state_ok(c, slot));
}

/* Room for the longest step name: "tree level %d exchange with rank %d"
 * with two 11-character ints is 52 bytes. */
#define STEP_NAME_CAP 96

/* Names step s (integers and fixed words only, so it always fits). */
static void step_name(const gf_comm_step *s, char buf[STEP_NAME_CAP]) {
  static const char *const scope[] = {"world", "node", "leaders"};
  const char *word = NULL; /* the steps named by a fixed word */
  switch (s->kind) {
  case GF_STEP_ALLREDUCE:
    GF_FORMAT_FITS(buf, STEP_NAME_CAP, "all-reduce over %s", scope[s->scope]);
    break;
  case GF_STEP_REDUCE:
    GF_FORMAT_FITS(buf, STEP_NAME_CAP, "reduce over %s to %d", scope[s->scope],
                   s->peer);
    break;
  case GF_STEP_BCAST:
    GF_FORMAT_FITS(buf, STEP_NAME_CAP, "broadcast over %s from %d",
                   scope[s->scope], s->peer);
    break;
  case GF_STEP_XADD:
    GF_FORMAT_FITS(buf, STEP_NAME_CAP, "tree level %d exchange with rank %d",
                   s->level, s->peer);
    break;
  case GF_STEP_BARRIER: word = "barrier"; break;
  case GF_STEP_ALLGATHER: word = "allgather"; break;
  case GF_STEP_SCALE: word = "scale by 1/world"; break;
  case GF_STEP_FENCE: word = "device completion"; break;
  case GF_STEP_PACK: word = "rounding to bf16"; break;
  case GF_STEP_UNPACK: word = "bf16 back to f32"; break;
  default: GF_FORMAT_FITS(buf, STEP_NAME_CAP, "step %d", s->kind); break;
  }
  if (word) GF_FORMAT_FITS(buf, STEP_NAME_CAP, "%s", word);
}

static const char *op_name(gf_comm_opkind op) {
  switch (op) {
  case GF_OP_ALLREDUCE: return "allreduce";
  case GF_OP_BCAST: return "broadcast";
  case GF_OP_BARRIER: return "barrier";
  case GF_OP_ALLGATHER: return "allgather";
  }
  return "?";
}

static void push_step(gf_comm_req *r, int kind, int scope, int peer,
                      int level) {
  gf_comm_step *s = &r->steps[r->nsteps++];
  s->kind = (unsigned char)kind;
  s->scope = (unsigned char)scope;
  s->peer = peer;
  s->level = (short)level;
}

/* The steps of an all-reduce under c->algo. */
static void plan_allreduce(const gf_comm *c, gf_comm_req *r) {
  int packed = r->dt == GF_CDT_F32_AS_BF16;
  if (packed) push_step(r, GF_STEP_PACK, GF_SCOPE_WORLD, 0, 0);
  switch (c->algo) {
  case GF_ALLREDUCE_ENGINE:
    push_step(r, GF_STEP_ALLREDUCE, GF_SCOPE_WORLD, 0, 0);
    break;
  case GF_ALLREDUCE_REDUCE_BCAST:
    push_step(r, GF_STEP_REDUCE, GF_SCOPE_WORLD, 0, 0);
    push_step(r, GF_STEP_BCAST, GF_SCOPE_WORLD, 0, 0);
    break;
  case GF_ALLREDUCE_HIER:
    push_step(r, GF_STEP_REDUCE, GF_SCOPE_NODE, 0, 0);
    if (c->local_rank == 0)
      push_step(r, GF_STEP_ALLREDUCE, GF_SCOPE_LEADERS, 0, 0);
    push_step(r, GF_STEP_BCAST, GF_SCOPE_NODE, 0, 0);
    break;
  case GF_ALLREDUCE_TREE:
    for (int l = 0; (1 << l) < c->world; l++)
      push_step(r, GF_STEP_XADD, GF_SCOPE_WORLD, c->rank ^ (1 << l), l);
    break;
  }
  if (packed) push_step(r, GF_STEP_UNPACK, GF_SCOPE_WORLD, 0, 0);
  if (r->red == GF_RED_AVG) push_step(r, GF_STEP_SCALE, GF_SCOPE_WORLD, 0, 0);
}

/* A free slot: user slots for handles, the spare ones for blocking calls. */
static gf_status take_slot(gf_comm *c, int internal, int *slot, gf_err *err) {
  int lo = internal ? GF_COMM_MAX_REQ : 0;
  int hi = internal ? GF_COMM_SLOTS : GF_COMM_MAX_REQ;
  for (int s = lo; s < hi; s++) {
    if (!c->reqs[s].active) {
      *slot = s;
      return GF_OK;
    }
  }
  if (internal)
    return gf_fail(err, GF_ESTATE,
                   "comm: %d blocking operations are still in flight after "
                   "timeouts; abort the comm",
                   GF_COMM_SLOTS - GF_COMM_MAX_REQ);
  return gf_fail(err, GF_ESTATE,
                 "comm: %d non-blocking all-reduces are already outstanding "
                 "(the most a comm holds); wait for some first",
                 GF_COMM_MAX_REQ);
}

static gf_status check_usable(const gf_comm *c, gf_err *err) {
  if (!c) return gf_fail(err, GF_EINVAL, "comm: NULL comm");
  if (c->aborted)
    return gf_fail(err, GF_ESTATE, "comm: the communicator was aborted");
  return GF_OK;
}

/* Creates a request in a free slot with its steps planned; starts nothing
 * (progress does). */
static gf_status req_create(gf_comm *c, int internal, gf_comm_req *proto,
                            int *slot_out, gf_err *err) {
  int slot = -1;
  GF_TRY(take_slot(c, internal, &slot, err));
  gf_comm_req *r = &c->reqs[slot];
  unsigned gen = r->gen;
  *r = *proto;
  r->gen = gen;
  r->active = 1;
  r->seq = c->next_seq++;
  r->lane = (int)(r->seq % (uint64_t)c->ops->lanes);
  r->wbuf = r->buf;
  r->wdt = r->dt;
  r->welem = r->elem;
  if (r->dt == GF_CDT_F32_AS_BF16) {
    r->wbuf = NULL; /* until PACK */
    r->wdt = GF_CDT_BF16;
    r->welem = sizeof(uint16_t);
  }
  r->t_start = gf_comm_now();
  if (r->count == 0 && r->op != GF_OP_BARRIER)
    r->nsteps = 0; /* every rank passes the same count: nothing to move */
  else if (c->ops->fence) push_step(r, GF_STEP_FENCE, GF_SCOPE_WORLD, 0, 0);
  if (c->ops->begin) {
    gf_status st = c->ops->begin(c, slot, err);
    if (st) {
      req_release(c, slot);
      return st;
    }
  }
  GF_ASSERT_STATE(comm_req_state_ok(c, slot));
  *slot_out = slot;
  return GF_OK;
}

/* True when request r still has a communicating step that holds its lane:
 * one not yet started, or (serial_issue engines) one started but not done. */
static int holds_lane(const gf_comm *c, const gf_comm_req *r) {
  if (!r->active || r->failed) return 0;
  for (int i = r->cur; i < r->nsteps; i++) {
    if (!gf_comm_step_talks(r->steps[i].kind)) continue;
    if (i > r->cur || !r->started || c->ops->serial_issue) return 1;
  }
  return 0;
}

/* May request `slot` start its next communicating step now? */
static int lane_free(const gf_comm *c, int slot) {
  if (c->ops->tagged) return 1;
  const gf_comm_req *r = &c->reqs[slot];
  for (int s = 0; s < GF_COMM_SLOTS; s++) {
    const gf_comm_req *o = &c->reqs[s];
    if (s == slot || !o->active || o->lane != r->lane || o->seq > r->seq)
      continue;
    if (holds_lane(c, o)) return 0;
  }
  return 1;
}

static void req_fail(gf_comm *c, int slot, gf_status st, const gf_err *e) {
  gf_comm_req *r = &c->reqs[slot];
  char what[STEP_NAME_CAP];
  step_name(&r->steps[r->cur], what);
  r->failed = st;
  gf_fail(&r->fail_err, st, "comm: %s (%s): %s", op_name(r->op), what,
          e ? e->msg : "failed");
  GF_ASSERT_STATE(comm_req_state_ok(c, slot));
}

/* Advances request `slot` as far as it goes without waiting. */
static void req_progress(gf_comm *c, int slot) {
  gf_comm_req *r = &c->reqs[slot];
  gf_err e;
  memset(&e, 0, sizeof e);
  while (r->active && !r->failed && r->cur < r->nsteps) {
    const gf_comm_step *s = &r->steps[r->cur];
    if (!r->started) {
      if (gf_comm_step_talks(s->kind) && !lane_free(c, slot)) return;
      gf_status st = c->ops->step_start(c, slot, &e);
      if (st) {
        req_fail(c, slot, st, &e);
        return;
      }
      r->started = 1;
      GF_ASSERT_STATE(comm_req_state_ok(c, slot));
    }
    int done = 0;
    gf_status st = c->ops->step_test(c, slot, &done, &e);
    if (st) {
      req_fail(c, slot, st, &e);
      return;
    }
    if (!done) return;
    r->cur++;
    r->started = 0;
    if (r->cur == r->nsteps && r->op == GF_OP_ALLREDUCE)
      c->stats.busy_s += gf_comm_now() - r->t_start;
    GF_ASSERT_STATE(comm_req_state_ok(c, slot));
  }
}

/* One pass over every outstanding request, oldest first (so that an older
 * request that frees a lane lets a younger one start in the same pass). */
static void progress_all(gf_comm *c) {
  int order[GF_COMM_SLOTS], n = 0;
  for (int s = 0; s < GF_COMM_SLOTS; s++) {
    const gf_comm_req *r = &c->reqs[s];
    if (!r->active || r->failed || r->cur == r->nsteps) continue;
    int i = n++;
    for (; i > 0 && c->reqs[order[i - 1]].seq > r->seq; i--)
      order[i] = order[i - 1];
    order[i] = s;
  }
  for (int i = 0; i < n; i++) req_progress(c, order[i]);
}

static int req_finished(const gf_comm_req *r) {
  return r->failed || r->cur == r->nsteps;
}

/* The longest a wait sleeps in poll() in one go: short enough to see its
 * deadline pass. */
#define IDLE_MS 50

/* Waits for request `slot` with the timeout. Releases it when it finished
 * (successfully or not); leaves it outstanding on GF_ETIMEOUT. */
static gf_status req_wait(gf_comm *c, int slot, gf_err *err) {
  double t0 = gf_comm_now(), deadline = t0 + c->timeout_s;
  gf_comm_poll pause;
  gf_comm_poll_start(&pause);
  gf_comm_req *r = &c->reqs[slot];
  progress_all(c);
  while (!req_finished(r)) {
    double now = gf_comm_now();
    if (now >= deadline) {
      char what[STEP_NAME_CAP];
      c->stats.wait_s += now - t0;
      step_name(&r->steps[r->cur], what);
      return gf_fail(err, GF_ETIMEOUT,
                     "comm: %s of %zu %s (%s, %s) did not complete within "
                     "%.3g s: waiting on step %d of %d, %s%s",
                     op_name(r->op), r->count, dtype_name(r->dt),
                     gf_comm_backend_name(c->backend),
                     gf_allreduce_algo_name(c->algo), c->timeout_s, r->cur + 1,
                     r->nsteps, what,
                     r->started ? ""
                                : " (not started: earlier operations "
                                  "are still pending)");
    }
    /* the first GF_COMM_SPIN_S only yield (a woken sleeper reacts later,
     * and a large message arrives in many pieces); after that sleep in
     * poll() until a socket can move bytes */
    int n = c->pfd && now - t0 >= GF_COMM_SPIN_S
                ? c->ops->poll_set(c, c->pfd)
                : 0;
    if (n) {
      int ms = gf_ms_left(deadline);
      (void)poll(c->pfd, (nfds_t)n, ms < IDLE_MS ? ms : IDLE_MS);
    } else {
      gf_comm_poll_pause(&pause);
    }
    progress_all(c);
  }
  c->stats.wait_s += gf_comm_now() - t0;
  GF_ASSERT_STATE(comm_req_state_ok(c, slot));
  gf_status st = r->failed;
  if (st && err) *err = r->fail_err;
  req_release(c, slot);
  return st;
}

/* Creates an internal request and waits for it (the blocking calls). */
static gf_status run_blocking(gf_comm *c, gf_comm_req *proto, gf_err *err) {
  int slot = -1;
  GF_TRY(req_create(c, 1, proto, &slot, err));
  return req_wait(c, slot, err);
}

/* ---- argument checks ----------------------------------------------------- */

static gf_status check_data(gf_comm *c, const char *what, const void *buf,
                            size_t count, gf_comm_dtype dt, gf_err *err) {
  if ((unsigned)dt > GF_CDT_F32_AS_BF16)
    return gf_fail(err, GF_EINVAL, "comm: %s: unknown dtype %d", what, (int)dt);
  size_t es = gf_comm_dtype_size(dt);
  if (count > SIZE_MAX / es)
    return gf_fail(err, GF_EINVAL, "comm: %s: %zu elements overflow", what,
                   count);
  if (count && !buf)
    return gf_fail(err, GF_EINVAL, "comm: %s: NULL buffer for %zu elements",
                   what, count);
  if (count && c->ops->check_buf)
    return c->ops->check_buf(c, buf, count * es, err);
  return GF_OK;
}

static gf_status allreduce_proto(gf_comm *c, void *buf, size_t count,
                                 gf_comm_dtype dt, gf_reduce_op op,
                                 gf_comm_req *r, gf_err *err) {
  memset(r, 0, sizeof *r);
  GF_TRY(check_usable(c, err));
  GF_TRY(check_data(c, "allreduce", buf, count, dt, err));
  if (dt == GF_CDT_U8)
    return gf_fail(err, GF_EINVAL,
                   "comm: allreduce: u8 is for broadcast and allgather only");
  if (op != GF_RED_SUM && op != GF_RED_AVG)
    return gf_fail(err, GF_EINVAL, "comm: allreduce: unknown op %d", (int)op);
  if (op == GF_RED_AVG && (dt == GF_CDT_I64 || dt == GF_CDT_BF16))
    return gf_fail(err, GF_EINVAL,
                   "comm: allreduce: AVG needs f32, f64 or f32-as-bf16, not "
                   "%s",
                   dtype_name(dt));
  r->op = GF_OP_ALLREDUCE;
  r->buf = buf;
  r->count = count;
  r->dt = dt;
  r->elem = gf_comm_dtype_size(dt);
  r->red = op;
  plan_allreduce(c, r);
  return GF_OK;
}

static void count_allreduce(gf_comm *c, const gf_comm_req *r) {
  c->stats.allreduce_calls++;
  c->stats.allreduce_bytes += (uint64_t)(r->count * r->elem);
}

/* ---- collectives --------------------------------------------------------- */

gf_status gf_comm_allreduce(gf_comm *c, void *buf, size_t count,
                            gf_comm_dtype dt, gf_reduce_op op, gf_err *err) {
  gf_comm_req r;
  GF_TRY(allreduce_proto(c, buf, count, dt, op, &r, err));
  count_allreduce(c, &r);
  return run_blocking(c, &r, err);
}

gf_status gf_comm_iallreduce(gf_comm *c, void *buf, size_t count,
                             gf_comm_dtype dt, gf_reduce_op op, int *req,
                             gf_err *err) {
  if (!req) return gf_fail(err, GF_EINVAL, "comm: iallreduce: NULL req");
  *req = -1;
  gf_comm_req r;
  GF_TRY(allreduce_proto(c, buf, count, dt, op, &r, err));
  int slot = -1;
  GF_TRY(req_create(c, 0, &r, &slot, err));
  count_allreduce(c, &r);
  *req = handle_of(c, slot);
  /* start at once what can start: the engine works while the caller
   * computes */
  progress_all(c);
  return GF_OK;
}

gf_status gf_comm_test(gf_comm *c, int req, int *done, gf_err *err) {
  if (!done) return gf_fail(err, GF_EINVAL, "comm: test: NULL done");
  *done = 0;
  if (!c) return gf_fail(err, GF_EINVAL, "comm: NULL comm");
  int slot = -1;
  GF_TRY(slot_of(c, req, &slot, err));
  progress_all(c);
  GF_ASSERT_STATE(comm_req_state_ok(c, slot));
  *done = req_finished(&c->reqs[slot]);
  return GF_OK;
}

gf_status gf_comm_wait(gf_comm *c, int req, gf_err *err) {
  if (!c) return gf_fail(err, GF_EINVAL, "comm: NULL comm");
  int slot = -1;
  GF_TRY(slot_of(c, req, &slot, err));
  if (c->aborted) {
    req_release(c, slot);
    return gf_fail(err, GF_ESTATE, "comm: the communicator was aborted");
  }
  return req_wait(c, slot, err);
}

gf_status gf_comm_broadcast(gf_comm *c, void *buf, size_t count,
                            gf_comm_dtype dt, int root, gf_err *err) {
  GF_TRY(check_usable(c, err));
  GF_TRY(check_data(c, "broadcast", buf, count, dt, err));
  if (dt == GF_CDT_F32_AS_BF16)
    return gf_fail(err, GF_EINVAL,
                   "comm: broadcast: f32-as-bf16 is for all-reduce only");
  if (root < 0 || root >= c->world)
    return gf_fail(err, GF_EINVAL, "comm: broadcast: root %d not in [0, %d)",
                   root, c->world);
  gf_comm_req r;
  memset(&r, 0, sizeof r);
  r.op = GF_OP_BCAST;
  r.buf = buf;
  r.count = count;
  r.dt = dt;
  r.elem = gf_comm_dtype_size(dt);
  r.root = root;
  push_step(&r, GF_STEP_BCAST, GF_SCOPE_WORLD, root, 0);
  return run_blocking(c, &r, err);
}

gf_status gf_comm_barrier(gf_comm *c, gf_err *err) {
  GF_TRY(check_usable(c, err));
  gf_comm_req r;
  memset(&r, 0, sizeof r);
  r.op = GF_OP_BARRIER;
  r.dt = GF_CDT_U8;
  r.elem = 1;
  push_step(&r, GF_STEP_BARRIER, GF_SCOPE_WORLD, 0, 0);
  return run_blocking(c, &r, err);
}

gf_status gf_comm_allgather(gf_comm *c, const void *mine, size_t bytes,
                            void *all, gf_err *err) {
  GF_TRY(check_usable(c, err));
  if (bytes && (!mine || !all))
    return gf_fail(err, GF_EINVAL, "comm: allgather: NULL %s",
                   mine ? "all" : "mine");
  if (bytes > SIZE_MAX / (size_t)c->world)
    return gf_fail(err, GF_EINVAL, "comm: allgather: %zu bytes overflow",
                   bytes);
  gf_comm_req r;
  memset(&r, 0, sizeof r);
  r.op = GF_OP_ALLGATHER;
  r.buf = all;
  r.sendbuf = mine;
  r.count = bytes;
  r.dt = GF_CDT_U8;
  r.elem = 1;
  push_step(&r, GF_STEP_ALLGATHER, GF_SCOPE_WORLD, 0, 0);
  return run_blocking(c, &r, err);
}

/* ---- creation ------------------------------------------------------------ */

static const gf_comm_ops *engine_of(gf_comm_backend b) {
  switch (b) {
  case GF_COMM_LOCAL: return &gf_comm_local_ops;
  case GF_COMM_MPI:
#ifdef GF_HAVE_MPI
    return &gf_comm_mpi_ops;
#else
    return NULL;
#endif
  case GF_COMM_NCCL:
    return NULL; /* in the CUDA module: gf_comm_nccl_engine (comm_host.c) */
  case GF_COMM_TCP: return &gf_comm_tcp_ops;
  }
  return NULL;
}

/* Local rank, local world, node count and index, and every rank's node
 * (c->node_of), from every rank's hostname (allgathered when world > 1). A
 * node's index is the order of its hostname's first appearance. */
static gf_status find_topology(gf_comm *c, gf_err *err) {
  c->local_rank = 0;
  c->local_world = 1;
  c->nodes = 1;
  c->node_index = 0;
  c->node_of[0] = 0;
  if (c->world == 1) return GF_OK;
  enum { HN = sizeof c->launch.hostname };
  char *names = malloc((size_t)c->world * HN);
  if (!names)
    return gf_fail(err, GF_ENOMEM, "comm: cannot allocate %d hostnames",
                   c->world);
  gf_status st = gf_comm_allgather(c, c->launch.hostname, HN, names, err);
  if (st) {
    free(names);
    return st;
  }
  int nodes = 0, lrank = 0, lworld = 0;
  for (int r = 0; r < c->world; r++) {
    const char *nr = names + (size_t)r * HN;
    int q = 0; /* the first rank with r's hostname */
    while (q < r && strncmp(nr, names + (size_t)q * HN, HN) != 0) q++;
    c->node_of[r] = q == r ? nodes++ : c->node_of[q];
    if (strncmp(nr, c->launch.hostname, HN) == 0) {
      if (r < c->rank) lrank++;
      lworld++;
    }
  }
  free(names);
  c->nodes = nodes;
  c->node_index = c->node_of[c->rank];
  c->local_rank = lrank;
  c->local_world = lworld;
  return GF_OK;
}

gf_status gf_comm_init(gf_comm **out, const gf_comm_config *cfg, gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "comm: NULL out");
  *out = NULL;
  if (!cfg || !cfg->launch)
    return gf_fail(err, GF_EINVAL, "comm: NULL %s", cfg ? "launch" : "config");
  const gf_launch_info *li = cfg->launch;
  if ((unsigned)cfg->backend > GF_COMM_TCP)
    return gf_fail(err, GF_EINVAL, "comm: unknown backend %d",
                   (int)cfg->backend);
  if ((unsigned)cfg->algo > GF_ALLREDUCE_TREE)
    return gf_fail(err, GF_EINVAL, "comm: unknown all-reduce algorithm %d",
                   (int)cfg->algo);
  if (li->world_size < 1 || li->rank < 0 || li->rank >= li->world_size)
    return gf_fail(err, GF_EINVAL, "comm: launch rank %d of world %d", li->rank,
                   li->world_size);
  const gf_comm_ops *ops = engine_of(cfg->backend);
  if (cfg->backend == GF_COMM_NCCL && gf_comm_built(GF_COMM_NCCL))
    GF_TRY(gf_comm_nccl_engine(&ops, err));
  if (!ops)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "comm: the %s backend is not built in this library (%s "
                   "was not found when it was configured; see GF_%s)",
                   gf_comm_backend_name(cfg->backend),
                   cfg->backend == GF_COMM_MPI ? "MPI" : "NCCL",
                   cfg->backend == GF_COMM_MPI ? "MPI" : "NCCL");
  if (cfg->backend == GF_COMM_LOCAL && li->world_size != 1)
    return gf_fail(err, GF_EINVAL,
                   "comm: the local backend runs world 1, but the launch "
                   "(%s) says world %d: use mpi, tcp or nccl",
                   li->launcher, li->world_size);
  if (cfg->algo == GF_ALLREDUCE_TREE &&
      (li->world_size & (li->world_size - 1)) != 0)
    return gf_fail(err, GF_EINVAL,
                   "comm: the tree all-reduce needs a power-of-two world, "
                   "not %d",
                   li->world_size);
  if (cfg->backend == GF_COMM_NCCL && !cfg->ctx)
    return gf_fail(err, GF_EINVAL, "comm: nccl needs a CUDA ctx (config.ctx)");

  gf_comm *c = calloc(1, sizeof *c);
  if (!c) return gf_fail(err, GF_ENOMEM, "comm: cannot allocate the comm");
  c->backend = cfg->backend;
  c->algo = cfg->algo;
  c->ops = ops;
  c->host = &gf_comm_host_services;
  c->launch = *li;
  c->launch.hostname[sizeof c->launch.hostname - 1] = '\0';
  c->ctx = cfg->ctx;
  c->rank = li->rank;
  c->world = li->world_size;
  gf_comm_set_timeout(c, cfg->timeout_s);
  c->local_world = 1;
  c->nodes = 1;
  c->node_of = calloc((size_t)c->world, sizeof *c->node_of);
  if (ops->poll_set) c->pfd = calloc((size_t)c->world, sizeof *c->pfd);
  if (!c->node_of || (ops->poll_set && !c->pfd)) {
    free(c->node_of);
    free(c->pfd);
    free(c);
    return gf_fail(err, GF_ENOMEM,
                   "comm: cannot allocate the state of %d ranks",
                   li->world_size);
  }
  gf_status st = ops->init(c, err);
  if (st) {
    free(c->node_of);
    free(c->pfd);
    free(c);
    return st;
  }
  st = find_topology(c, err);
  if (!st && c->algo == GF_ALLREDUCE_HIER && ops->init_hier)
    st = ops->init_hier(c, err);
  if (st) {
    gf_comm_free(c);
    return st;
  }
  /* bootstrap traffic is not the caller's */
  memset(&c->stats, 0, sizeof c->stats);
  *out = c;
  return GF_OK;
}

void gf_comm_free(gf_comm *c) {
  if (!c) return;
  int in_flight = 0;
  for (int s = 0; s < GF_COMM_SLOTS; s++)
    in_flight |= c->reqs[s].active && !req_finished(&c->reqs[s]);
  if (!in_flight || c->aborted) {
    for (int s = 0; s < GF_COMM_SLOTS; s++)
      if (c->reqs[s].active) req_release(c, s);
  }
  c->ops->fini(c, in_flight || c->aborted);
  free(c->node_of);
  free(c->pfd);
  free(c);
}

void gf_comm_abort(gf_comm *c, int code) {
  if (!c || c->aborted) return;
  c->aborted = 1;
  c->ops->abort(c, code);
}
