/* comm_mpi.c - the mpi engine: host buffers, MPI non-blocking collectives
 * (MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Isend/Irecv for the tree,
 * MPI_Ibarrier, MPI_Iallgather) tested with MPI_Testall, so every wait is
 * comm.c's polling loop with its deadline. Each lane has its own duplicate
 * of MPI_COMM_WORLD (and, for the hierarchical algorithm, its node and
 * node-leader communicators), all with MPI_ERRORS_RETURN so that an MPI
 * failure becomes a gf_status instead of ending the process. Also the MPI
 * bootstrap of the nccl engine. Built only with GF_HAVE_MPI. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"

typedef struct mpi_slot {
  MPI_Request rq[2]; /* requests of the started step; nrq of them live */
  int nrq;
  void *scratch;      /* tree: the partner's buffer; owned, kept for reuse
                         by this slot, freed at fini */
  size_t scratch_cap; /* bytes of scratch */
  void *stage;        /* F32_AS_BF16: the bf16 copy MPI moves; owned like
                         scratch */
  size_t stage_cap;
} mpi_slot;

typedef struct mpi_state {
  int we_init;                     /* this comm initialized MPI */
  int nlanes;                      /* lanes created (<= LANES) */
  MPI_Comm world[GF_COMM_LANES];   /* dups of MPI_COMM_WORLD */
  MPI_Comm node[GF_COMM_LANES];    /* hier: ranks of this host, else
                                      MPI_COMM_NULL */
  MPI_Comm leaders[GF_COMM_LANES]; /* hier: local rank 0 of each host
                                      (MPI_COMM_NULL elsewhere) */
  MPI_Op bf16_sum;                 /* the BF16 sum (MPI has no bf16 type:
                                      MPI_UINT16_T with this op), or
                                      MPI_OP_NULL */
  mpi_slot slots[GF_COMM_SLOTS];
} mpi_state;

static gf_status mpi_check(int rc, const char *call, const char *file, int line,
                           gf_err *err) {
  if (rc == MPI_SUCCESS) return GF_OK;
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS || len <= 0)
    return gf_fail(err, GF_EDEVICE, "mpi: %s failed at %s:%d: MPI error %d",
                   call, file, line, rc);
  msg[len < (int)sizeof msg ? len : (int)sizeof msg - 1] = '\0';
  return gf_fail(err, GF_EDEVICE, "mpi: %s failed at %s:%d: %s", call, file,
                 line, msg);
}
#define MPI_TRY(call)                                                  \
  do {                                                                 \
    gf_status st_ = mpi_check((call), #call, __FILE__, __LINE__, err); \
    if (st_) return st_;                                               \
  } while (0)

static MPI_Datatype mpi_type(gf_comm_dtype dt) {
  switch (dt) {
  case GF_CDT_F32: return MPI_FLOAT;
  case GF_CDT_F64: return MPI_DOUBLE;
  case GF_CDT_I64: return MPI_INT64_T;
  case GF_CDT_U8: return MPI_UINT8_T;
  case GF_CDT_BF16: return MPI_UINT16_T;
  case GF_CDT_F32_AS_BF16: return MPI_FLOAT;
  }
  return MPI_DATATYPE_NULL;
}

/* The user op of BF16 sums: inout[i] = in[i] + inout[i], each addition in
 * f32 rounded to bf16 (the same as the host engines'; IEEE addition
 * commutes, so MPI's operand order does not matter, only its grouping). */
static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  gf_comm_host_add(GF_CDT_BF16, inout, in, inout, (size_t)*len);
}

/* Tests n requests until all finished or the deadline (CLOCK_MONOTONIC
 * seconds) passes; `what` names the operation in the timeout message. */
static gf_status wait_until(MPI_Request *rq, int n, double deadline,
                            const char *what, double timeout_s, gf_err *err) {
  gf_comm_poll poll;
  gf_comm_poll_start(&poll);
  for (;;) {
    int flag = 0;
    MPI_TRY(MPI_Testall(n, rq, &flag, MPI_STATUSES_IGNORE));
    if (flag) return GF_OK;
    if (gf_comm_now() >= deadline)
      return gf_fail(err, GF_ETIMEOUT,
                     "mpi: %s did not complete within %.3g s (a rank is "
                     "missing or stuck)",
                     what, timeout_s);
    gf_comm_poll_pause(&poll);
  }
}

/* Initializes MPI (FUNNELED) unless it is already; checks that MPI's rank
 * and size are the launch's. *we_init = 1 when this call initialized it (it
 * finalizes again on failure). */
static gf_status mpi_open(const gf_launch_info *li, int *we_init, gf_err *err) {
  int inited = 0, finalized = 0, provided = 0, rank = -1, size = 0;
  *we_init = 0;
  MPI_TRY(MPI_Finalized(&finalized));
  if (finalized)
    return gf_fail(err, GF_ESTATE,
                   "mpi: MPI was already finalized in this process and cannot "
                   "be initialized again");
  MPI_TRY(MPI_Initialized(&inited));
  if (!inited) {
    MPI_TRY(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
    *we_init = 1;
  } else {
    MPI_TRY(MPI_Query_thread(&provided));
  }
  gf_status st = GF_OK;
  if (provided < MPI_THREAD_FUNNELED)
    st = gf_fail(err, GF_EUNSUPPORTED,
                 "mpi: MPI provides thread level %d, below FUNNELED", provided);
  if (!st)
    st = mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank",
                   __FILE__, __LINE__, err);
  if (!st)
    st = mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size",
                   __FILE__, __LINE__, err);
  if (!st && (rank != li->rank || size != li->world_size))
    st = gf_fail(err, GF_EINVAL,
                 "mpi: MPI says rank %d of %d but the launch (%s) says rank "
                 "%d of %d",
                 rank, size, li->launcher, li->rank, li->world_size);
  if (st && *we_init) {
    MPI_Finalize();
    *we_init = 0;
  }
  return st;
}

/* Duplicates MPI_COMM_WORLD n times with MPI_Comm_idup, waiting with the
 * timeout, and sets MPI_ERRORS_RETURN on each. */
static gf_status dup_world(MPI_Comm *out, int n, double timeout_s,
                           gf_err *err) {
  MPI_Request rq[GF_COMM_LANES];
  for (int i = 0; i < n; i++) {
    out[i] = MPI_COMM_NULL;
    MPI_TRY(MPI_Comm_idup(MPI_COMM_WORLD, &out[i], &rq[i]));
  }
  GF_TRY(wait_until(rq, n, gf_comm_now() + timeout_s,
                    "duplicating MPI_COMM_WORLD", timeout_s, err));
  for (int i = 0; i < n; i++)
    MPI_TRY(MPI_Comm_set_errhandler(out[i], MPI_ERRORS_RETURN));
  return GF_OK;
}

static void free_comm(MPI_Comm *c) {
  if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  *c = MPI_COMM_NULL;
}

static void mpi_fini(gf_comm *c, int quiet) {
  mpi_state *s = c->impl;
  if (!s) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!quiet) {
    for (int l = 0; l < GF_COMM_LANES && !finalized; l++) {
      free_comm(&s->leaders[l]);
      free_comm(&s->node[l]);
      free_comm(&s->world[l]);
    }
    if (s->bf16_sum != MPI_OP_NULL && !finalized) MPI_Op_free(&s->bf16_sum);
    for (int i = 0; i < GF_COMM_SLOTS; i++) {
      free(s->slots[i].scratch);
      free(s->slots[i].stage);
    }
    if (s->we_init && !finalized) MPI_Finalize();
  } else {
    /* operations may still write into scratch and use the communicators:
     * leave both (and MPI) alone; only slots without a started step give
     * their scratch back */
    for (int i = 0; i < GF_COMM_SLOTS; i++) {
      if (c->reqs[i].active) continue;
      free(s->slots[i].scratch);
      free(s->slots[i].stage);
    }
  }
  free(s);
  c->impl = NULL;
}

static gf_status mpi_init(gf_comm *c, gf_err *err) {
  mpi_state *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "mpi: cannot allocate the state");
  for (int l = 0; l < GF_COMM_LANES; l++)
    s->world[l] = s->node[l] = s->leaders[l] = MPI_COMM_NULL;
  s->bf16_sum = MPI_OP_NULL;
  gf_status st = mpi_open(&c->launch, &s->we_init, err);
  if (st) {
    free(s);
    return st;
  }
  c->impl = s;
  s->nlanes = GF_COMM_LANES;
  st = mpi_check(MPI_Op_create(bf16_sum_fn, 1, &s->bf16_sum), "MPI_Op_create",
                 __FILE__, __LINE__, err);
  if (!st) st = dup_world(s->world, s->nlanes, c->timeout_s, err);
  if (st) mpi_fini(c, st == GF_ETIMEOUT);
  return st;
}

static gf_status mpi_init_hier(gf_comm *c, gf_err *err) {
  mpi_state *s = c->impl;
  for (int l = 0; l < s->nlanes; l++) {
    int nrank = -1, nsize = 0;
    MPI_TRY(MPI_Comm_split_type(s->world[l], MPI_COMM_TYPE_SHARED, c->rank,
                                MPI_INFO_NULL, &s->node[l]));
    MPI_TRY(MPI_Comm_set_errhandler(s->node[l], MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(s->node[l], &nrank));
    MPI_TRY(MPI_Comm_size(s->node[l], &nsize));
    if (nrank != c->local_rank || nsize != c->local_world)
      return gf_fail(err, GF_ESTATE,
                     "mpi: the shared-memory node has rank %d of %d but the "
                     "hostnames say local rank %d of %d (hosts sharing a "
                     "name?)",
                     nrank, nsize, c->local_rank, c->local_world);
    MPI_TRY(MPI_Comm_split(s->world[l], nrank == 0 ? 0 : MPI_UNDEFINED, c->rank,
                           &s->leaders[l]));
    if (s->leaders[l] != MPI_COMM_NULL)
      MPI_TRY(MPI_Comm_set_errhandler(s->leaders[l], MPI_ERRORS_RETURN));
  }
  return GF_OK;
}

static void mpi_abort(gf_comm *c, int code) {
  (void)c;
  gf_comm_mpi_abort_world(code);
}

static MPI_Comm scope_comm(const mpi_state *s, int lane, int scope) {
  switch (scope) {
  case GF_SCOPE_NODE: return s->node[lane];
  case GF_SCOPE_LEADERS: return s->leaders[lane];
  default: return s->world[lane];
  }
}

static gf_status mpi_start(gf_comm *c, int slot, gf_err *err) {
  mpi_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *p = &r->steps[r->cur];
  mpi_slot *m = &s->slots[slot];
  MPI_Comm comm = scope_comm(s, r->lane, p->scope);
  MPI_Datatype ty = mpi_type(r->wdt);
  MPI_Op sum = r->wdt == GF_CDT_BF16 ? s->bf16_sum : MPI_SUM;
  void *buf = r->wbuf;
  m->nrq = 0;
  if (r->count > INT_MAX)
    return gf_fail(err, GF_EINVAL,
                   "mpi: %zu elements exceed MPI's int count; split the "
                   "buffer",
                   r->count);
  int n = (int)r->count;
  switch (p->kind) {
  case GF_STEP_ALLREDUCE:
    MPI_TRY(MPI_Iallreduce(MPI_IN_PLACE, buf, n, ty, sum, comm, &m->rq[0]));
    break;
  case GF_STEP_REDUCE: {
    int me = -1;
    MPI_TRY(MPI_Comm_rank(comm, &me));
    if (me == p->peer)
      MPI_TRY(MPI_Ireduce(MPI_IN_PLACE, buf, n, ty, sum, p->peer, comm,
                          &m->rq[0]));
    else MPI_TRY(MPI_Ireduce(buf, NULL, n, ty, sum, p->peer, comm, &m->rq[0]));
    break;
  }
  case GF_STEP_BCAST:
    MPI_TRY(MPI_Ibcast(buf, n, ty, p->peer, comm, &m->rq[0]));
    break;
  case GF_STEP_XADD: {
    size_t bytes = r->count * r->welem;
    if (bytes > m->scratch_cap) {
      void *q = malloc(bytes);
      if (!q)
        return gf_fail(err, GF_ENOMEM,
                       "mpi: cannot allocate %zu bytes of "
                       "tree scratch",
                       bytes);
      free(m->scratch);
      m->scratch = q;
      m->scratch_cap = bytes;
    }
    int tag = 1000 + p->level;
    MPI_TRY(MPI_Irecv(m->scratch, n, ty, p->peer, tag, comm, &m->rq[0]));
    m->nrq = 1;
    MPI_TRY(MPI_Isend(buf, n, ty, p->peer, tag, comm, &m->rq[1]));
    m->nrq = 2;
    return GF_OK;
  }
  case GF_STEP_BARRIER: MPI_TRY(MPI_Ibarrier(comm, &m->rq[0])); break;
  case GF_STEP_ALLGATHER:
    MPI_TRY(MPI_Iallgather(r->sendbuf, n, MPI_BYTE, r->buf, n, MPI_BYTE, comm,
                           &m->rq[0]));
    break;
  case GF_STEP_SCALE:
    gf_comm_host_scale(r->dt, r->buf, r->count, c->world);
    return GF_OK;
  case GF_STEP_PACK:
    return gf_comm_host_pack(&c->reqs[slot], &m->stage, &m->stage_cap, err);
  case GF_STEP_UNPACK: gf_comm_host_unpack(&c->reqs[slot]); return GF_OK;
  default:
    return gf_fail(err, GF_EINVAL, "mpi: step kind %d is not mine", p->kind);
  }
  m->nrq = 1;
  return GF_OK;
}

static gf_status mpi_test(gf_comm *c, int slot, int *done, gf_err *err) {
  mpi_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *p = &r->steps[r->cur];
  mpi_slot *m = &s->slots[slot];
  *done = 0;
  if (m->nrq) {
    int flag = 0;
    MPI_TRY(MPI_Testall(m->nrq, m->rq, &flag, MPI_STATUSES_IGNORE));
    if (!flag) return GF_OK;
    m->nrq = 0;
  }
  if (p->kind == GF_STEP_XADD) {
    /* lower rank's value + higher rank's, whichever side this rank is */
    if (c->rank < p->peer)
      gf_comm_host_add(r->wdt, r->wbuf, r->wbuf, m->scratch, r->count);
    else gf_comm_host_add(r->wdt, r->wbuf, m->scratch, r->wbuf, r->count);
  }
  *done = 1;
  return GF_OK;
}

static void mpi_release(gf_comm *c, int slot) {
  mpi_state *s = c->impl;
  if (s) s->slots[slot].nrq = 0;
}

const gf_comm_ops gf_comm_mpi_ops = {
    .name = "mpi",
    .device_buffers = 0,
    .lanes = GF_COMM_LANES,
    .serial_issue = 0,
    .fence = 0,
    .init = mpi_init,
    .init_hier = mpi_init_hier,
    .fini = mpi_fini,
    .abort = mpi_abort,
    .check_buf = NULL,
    .begin = NULL,
    .step_start = mpi_start,
    .step_test = mpi_test,
    .release = mpi_release,
};

/* ---- bootstrap of the nccl engine --------------------------------------- */

gf_status gf_comm_mpi_share(const gf_launch_info *launch, void *blob, size_t n,
                            double timeout_s, int *we_init, gf_err *err) {
  GF_TRY(mpi_open(launch, we_init, err));
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request rq = MPI_REQUEST_NULL;
  gf_status st = dup_world(&dup, 1, timeout_s, err);
  if (!st)
    st = mpi_check(MPI_Ibcast(blob, (int)n, MPI_BYTE, 0, dup, &rq),
                   "MPI_Ibcast", __FILE__, __LINE__, err);
  if (!st)
    st = wait_until(&rq, 1, gf_comm_now() + timeout_s,
                    "broadcast of the NCCL unique id", timeout_s, err);
  if (st != GF_ETIMEOUT) {
    free_comm(&dup);
    if (st) {
      gf_comm_mpi_release(*we_init);
      *we_init = 0;
    }
  }
  return st;
}

void gf_comm_mpi_release(int we_init) {
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (we_init && !finalized) MPI_Finalize();
}

void gf_comm_mpi_abort_world(int code) {
  int inited = 0, finalized = 1;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}
