/* comm_nccl.c - the nccl engine: CUDA device buffers, NCCL collectives on a
 * stream owned by the comm, ordered after the gf_ctx's stream by an event
 * recorded when each request is created. Communicators are non-blocking
 * (ncclConfig_t.blocking = 0): a call that answers ncclInProgress is polled
 * with ncclCommGetAsyncError, and completion is an event polled with
 * cudaEventQuery, so every wait is comm.c's loop with its deadline and a
 * stuck peer ends in GF_ETIMEOUT and ncclCommAbort rather than a hang.
 *
 * Bootstrap: rank 0's ncclUniqueId goes out over MPI (mpirun/srun launches
 * in builds with MPI) or the TCP rendezvous of comm_rdv.c (MASTER_ADDR,
 * MASTER_PORT). Host C only; the tree's add, AVG's scale and the bf16
 * conversions of F32_AS_BF16 are the kernels of comm_nccl_kernels.cu. BF16
 * and F32_AS_BF16 (ncclBfloat16) are written but not run on a GPU yet.
 * Built only with GF_HAVE_NCCL, into the CUDA backend module
 * (libganflow_cuda.so, ../cuda_module.h): what it needs of gf_kernels (the
 * waiting loop's pause, the rendezvous, MPI) it reaches through c->host. */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/cuda_backend.h"
#include "comm_impl.h"
#include "comm_nccl_kernels.h"

typedef struct nccl_slot {
  cudaEvent_t ready;  /* recorded on the ctx stream at creation; owned */
  cudaEvent_t done;   /* recorded on the comm stream by the fence; owned */
  ncclComm_t pending; /* comm of a call that answered ncclInProgress, or
                         NULL when the started step is fully queued */
  int post_done;      /* the step's follow-up (tree add, allgather copy
                         out) is queued */
  void *scratch;      /* tree: partner's buffer, cudaMallocAsync'd on the
                         comm stream; owned until release */
  size_t scratch_bytes;
  void *stage;        /* F32_AS_BF16: the bf16 copy NCCL moves; like
                         scratch */
  size_t stage_bytes;
} nccl_slot;

typedef struct nccl_state {
  int device;                /* CUDA ordinal of the ctx */
  cudaStream_t ctx_stream;   /* the ctx's (borrowed) */
  cudaStream_t stream;       /* the comm's own, non-blocking */
  ncclComm_t world;          /* owned */
  ncclComm_t node, leaders;  /* hier only (leaders NULL off leaders) */
  int mpi_boot;              /* the id went over MPI */
  int we_init_mpi;           /* ... and this comm initialized MPI */
  void *barrier_dev;         /* 8 bytes summed by the barrier */
  unsigned char *dev_stage;  /* allgather: world * bytes on device */
  unsigned char *host_stage; /* ... and in pinned host memory */
  size_t stage_cap;          /* bytes of each stage */
  int stage_owner;           /* slot using the stages, or -1 */
  nccl_slot slots[GF_COMM_SLOTS];
} nccl_state;

static gf_status nccl_check(ncclResult_t r, ncclComm_t comm, const char *call,
                            const char *file, int line, gf_err *err) {
  if (r == ncclSuccess || r == ncclInProgress) return GF_OK;
  const char *last = comm ? ncclGetLastError(comm) : NULL;
  return gf_fail(err, r == ncclSystemError ? GF_EIO : GF_EDEVICE,
                 "nccl: %s failed at %s:%d: %s%s%s", call, file, line,
                 ncclGetErrorString(r), last && last[0] ? ": " : "",
                 last ? last : "");
}
/* NCCL_TRY(call, comm): ncclSuccess or ncclInProgress pass. */
#define NCCL_TRY(call, comm)                                              \
  do {                                                                    \
    gf_status st_ = nccl_check((call), (comm), #call, __FILE__, __LINE__, \
                               err);                                      \
    if (st_) return st_;                                                  \
  } while (0)

static ncclDataType_t nccl_type(gf_comm_dtype dt) {
  switch (dt) {
  case GF_CDT_F32: return ncclFloat32;
  case GF_CDT_F64: return ncclFloat64;
  case GF_CDT_I64: return ncclInt64;
  case GF_CDT_U8: return ncclUint8;
  case GF_CDT_BF16: return ncclBfloat16;
  case GF_CDT_F32_AS_BF16: return ncclFloat32;
  }
  return ncclUint8;
}

/* The dtype AVG's scale works in (the f32 of F32_AS_BF16). */
static int scale_dtype(gf_comm_dtype dt) {
  return dt == GF_CDT_F32_AS_BF16 ? GF_CDT_F32 : (int)dt;
}

/* Grows a slot's device buffer *p (*bytes) to need, stream-ordered on s. */
static gf_status grow_async(void **p, size_t *bytes, size_t need,
                            cudaStream_t s, gf_err *err) {
  if (need <= *bytes) return GF_OK;
  if (*p) CU_TRY(cudaFreeAsync(*p, s));
  *p = NULL;
  *bytes = 0;
  CU_TRY(cudaMallocAsync(p, need, s));
  *bytes = need;
  return GF_OK;
}

/* Polls comm until a non-blocking call finished (ncclSuccess), failed, or
 * the deadline passed (GF_ETIMEOUT naming `what` and c's timeout). */
static gf_status settle(const gf_comm *c, ncclComm_t comm, double deadline,
                        const char *what, gf_err *err) {
  gf_comm_poll poll;
  c->host->poll_start(&poll);
  for (;;) {
    ncclResult_t a = ncclInProgress;
    NCCL_TRY(ncclCommGetAsyncError(comm, &a), comm);
    if (a == ncclSuccess) return GF_OK;
    if (a != ncclInProgress)
      return nccl_check(a, comm, what, __FILE__, __LINE__, err);
    if (gf_comm_now() >= deadline)
      return gf_fail(err, GF_ETIMEOUT,
                     "nccl: %s did not complete within %.3g s (a rank is "
                     "missing or stuck)",
                     what, c->timeout_s);
    c->host->poll_pause(&poll);
  }
}

static void abort_comm(ncclComm_t *comm) {
  if (*comm) (void)ncclCommAbort(*comm);
  *comm = NULL;
}

/* Finalizes (flushing, with c's timeout) and destroys *comm; aborts it
 * when finalizing fails or times out. */
static void close_comm(const gf_comm *c, ncclComm_t *comm) {
  if (!*comm) return;
  gf_err e;
  if (ncclCommFinalize(*comm) != ncclSuccess &&
      settle(c, *comm, gf_comm_now() + c->timeout_s, "ncclCommFinalize",
             &e) != GF_OK) {
    abort_comm(comm);
    return;
  }
  if (ncclCommDestroy(*comm) != ncclSuccess) (void)ncclCommAbort(*comm);
  *comm = NULL;
}

static void nccl_fini(gf_comm *c, int quiet) {
  nccl_state *s = c->impl;
  if (!s) return;
  (void)cudaSetDevice(s->device);
  if (quiet) {
    /* work may still be queued behind a peer that never comes: abort so
     * the kernels return instead of waiting for it */
    abort_comm(&s->leaders);
    abort_comm(&s->node);
    abort_comm(&s->world);
  }
  if (s->stream) (void)cudaStreamSynchronize(s->stream);
  for (int i = 0; i < GF_COMM_SLOTS; i++) {
    nccl_slot *m = &s->slots[i];
    if (m->scratch) (void)cudaFree(m->scratch);
    if (m->stage) (void)cudaFree(m->stage);
    if (m->ready) (void)cudaEventDestroy(m->ready);
    if (m->done) (void)cudaEventDestroy(m->done);
  }
  close_comm(c, &s->leaders);
  close_comm(c, &s->node);
  close_comm(c, &s->world);
  if (s->barrier_dev) (void)cudaFree(s->barrier_dev);
  if (s->dev_stage) (void)cudaFree(s->dev_stage);
  if (s->host_stage) (void)cudaFreeHost(s->host_stage);
  if (s->stream) (void)cudaStreamDestroy(s->stream);
  if (s->mpi_boot) c->host->mpi_release(s->we_init_mpi);
  free(s);
  c->impl = NULL;
}

/* Hands rank 0's id to every rank: over MPI (when gf_kernels has it), or
 * the TCP rendezvous. */
static gf_status share_id(gf_comm *c, nccl_state *s, ncclUniqueId *id,
                          gf_err *err) {
  const gf_launch_info *li = &c->launch;
  if (c->world == 1) return GF_OK;
  int by_mpi = strcmp(li->launcher, "mpirun") == 0 ||
               strcmp(li->launcher, "srun") == 0;
  if (by_mpi && c->host->mpi_share) {
    /* on failure MPI is finalized again, or left alone after a timeout */
    gf_status st = c->host->mpi_share(li, id, sizeof *id, c->timeout_s,
                                      &s->we_init_mpi, err);
    s->mpi_boot = st == GF_OK;
    return st;
  }
  if (li->master_addr[0] && li->master_port > 0)
    return c->host->rdv_share(li->master_addr, li->master_port, c->rank,
                              c->world, id, sizeof *id, c->timeout_s, err);
  return gf_fail(err, GF_EINVAL,
                 "nccl: %d ranks launched by %s need %s to share the NCCL id",
                 c->world, li->launcher,
                 by_mpi ? "MPI (this build has none) or MASTER_ADDR and "
                          "MASTER_PORT"
                        : "MASTER_ADDR and MASTER_PORT");
}

static ncclConfig_t nonblocking_config(void) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  return cfg;
}

static gf_status nccl_init_state(gf_comm *c, nccl_state *s, gf_err *err) {
  if (c->ctx->backend != GF_BACKEND_CUDA || !c->ctx->impl)
    return gf_fail(err, GF_EINVAL, "nccl: config.ctx is not a CUDA ctx");
  s->device = c->ctx->device_index;
  s->ctx_stream = gf_cu(c->ctx)->stream;
  CU_TRY(cudaSetDevice(s->device));
  CU_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  CU_TRY(cudaMalloc(&s->barrier_dev, 8));
  CU_TRY(cudaMemset(s->barrier_dev, 0, 8));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (c->rank == 0) NCCL_TRY(ncclGetUniqueId(&id), NULL);
  GF_TRY(share_id(c, s, &id, err));
  ncclConfig_t cfg = nonblocking_config();
  double deadline = gf_comm_now() + c->timeout_s;
  ncclResult_t r = ncclCommInitRankConfig(&s->world, c->world, id, c->rank,
                                          &cfg);
  if (r != ncclSuccess && r != ncclInProgress) {
    gf_status st = nccl_check(r, s->world, "ncclCommInitRankConfig", __FILE__,
                              __LINE__, err);
    abort_comm(&s->world);
    return st;
  }
  return settle(c, s->world, deadline,
                "ncclCommInitRankConfig (every rank must join)", err);
}

static gf_status nccl_init(gf_comm *c, gf_err *err) {
  nccl_state *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "nccl: cannot allocate the state");
  s->stage_owner = -1;
  c->impl = s;
  gf_status st = nccl_init_state(c, s, err);
  if (st) nccl_fini(c, 1);
  return st;
}

/* ncclCommSplit of the world comm, settled; color NCCL_SPLIT_NOCOLOR gives
 * *out NULL. */
static gf_status split(gf_comm *c, nccl_state *s, int color, ncclComm_t *out,
                       const char *what, gf_err *err) {
  ncclConfig_t cfg = nonblocking_config();
  double deadline = gf_comm_now() + c->timeout_s;
  NCCL_TRY(ncclCommSplit(s->world, color, c->rank, out, &cfg), s->world);
  GF_TRY(settle(c, s->world, deadline, what, err));
  if (*out) GF_TRY(settle(c, *out, deadline, what, err));
  return GF_OK;
}

static gf_status nccl_init_hier(gf_comm *c, gf_err *err) {
  nccl_state *s = c->impl;
  CU_TRY(cudaSetDevice(s->device));
  GF_TRY(split(c, s, c->node_index, &s->node,
               "ncclCommSplit (node communicator)", err));
  return split(c, s, c->local_rank == 0 ? 0 : NCCL_SPLIT_NOCOLOR, &s->leaders,
               "ncclCommSplit (node leaders)", err);
}

static void nccl_abort(gf_comm *c, int code) {
  nccl_state *s = c->impl;
  if (!s) return;
  (void)cudaSetDevice(s->device);
  abort_comm(&s->leaders);
  abort_comm(&s->node);
  abort_comm(&s->world);
  if (s->mpi_boot) c->host->mpi_abort_world(code);
}

static gf_status nccl_check_buf(gf_comm *c, const void *buf, size_t bytes,
                                gf_err *err) {
  nccl_state *s = c->impl;
  struct cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  CU_TRY(cudaPointerGetAttributes(&a, buf));
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    return gf_fail(err, GF_EINVAL,
                   "nccl: the %zu-byte buffer is host memory; the nccl "
                   "backend takes CUDA device buffers",
                   bytes);
  if (a.device != s->device)
    return gf_fail(err, GF_EINVAL,
                   "nccl: the buffer is on CUDA device %d, the comm's ctx on "
                   "%d",
                   a.device, s->device);
  return GF_OK;
}

static gf_status nccl_begin(gf_comm *c, int slot, gf_err *err) {
  nccl_state *s = c->impl;
  nccl_slot *m = &s->slots[slot];
  const gf_comm_req *r = &c->reqs[slot];
  if (r->nsteps == 0) return GF_OK;
  CU_TRY(cudaSetDevice(s->device));
  if (!m->ready)
    CU_TRY(cudaEventCreateWithFlags(&m->ready, cudaEventDisableTiming));
  if (!m->done)
    CU_TRY(cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming));
  /* the data is ready once the ctx stream's work so far has run */
  CU_TRY(cudaEventRecord(m->ready, s->ctx_stream));
  CU_TRY(cudaStreamWaitEvent(s->stream, m->ready, 0));
  return GF_OK;
}

static ncclComm_t scope_comm(const nccl_state *s, int scope) {
  switch (scope) {
  case GF_SCOPE_NODE: return s->node;
  case GF_SCOPE_LEADERS: return s->leaders;
  default: return s->world;
  }
}

static int is_device_ptr(const void *p) {
  struct cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Grows the allgather stages to `bytes` and claims them for `slot`. */
static gf_status claim_stage(nccl_state *s, int slot, size_t bytes,
                             gf_err *err) {
  if (s->stage_owner >= 0)
    return gf_fail(err, GF_ESTATE,
                   "nccl: an earlier allgather is still in flight (it timed "
                   "out); abort the comm");
  if (bytes > s->stage_cap) {
    if (s->dev_stage) CU_TRY(cudaFree(s->dev_stage));
    if (s->host_stage) CU_TRY(cudaFreeHost(s->host_stage));
    s->dev_stage = s->host_stage = NULL;
    s->stage_cap = 0;
    CU_TRY(cudaMalloc((void **)&s->dev_stage, bytes));
    CU_TRY(cudaMallocHost((void **)&s->host_stage, bytes));
    s->stage_cap = bytes;
  }
  s->stage_owner = slot;
  return GF_OK;
}

/* Issues the NCCL call of the current step; records a pending comm when it
 * answered ncclInProgress. */
static gf_status nccl_start(gf_comm *c, int slot, gf_err *err) {
  nccl_state *s = c->impl;
  gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *p = &r->steps[r->cur];
  nccl_slot *m = &s->slots[slot];
  ncclComm_t comm = scope_comm(s, p->scope);
  ncclDataType_t ty = nccl_type(r->wdt);
  void *buf = r->wbuf;
  ncclResult_t res = ncclSuccess;
  m->pending = NULL;
  m->post_done = 0;
  if (gf_comm_step_talks(p->kind) && !comm)
    return gf_fail(err, GF_ESTATE, "nccl: the communicator was aborted");
  CU_TRY(cudaSetDevice(s->device));
  switch (p->kind) {
  case GF_STEP_ALLREDUCE:
    res = ncclAllReduce(buf, buf, r->count, ty, ncclSum, comm, s->stream);
    NCCL_TRY(res, comm);
    break;
  case GF_STEP_REDUCE:
    res = ncclReduce(buf, buf, r->count, ty, ncclSum, p->peer, comm,
                     s->stream);
    NCCL_TRY(res, comm);
    break;
  case GF_STEP_BCAST:
    res = ncclBroadcast(buf, buf, r->count, ty, p->peer, comm, s->stream);
    NCCL_TRY(res, comm);
    break;
  case GF_STEP_XADD: {
    GF_TRY(grow_async(&m->scratch, &m->scratch_bytes, r->count * r->welem,
                      s->stream, err));
    NCCL_TRY(ncclGroupStart(), NULL);
    ncclResult_t a = ncclSend(buf, r->count, ty, p->peer, comm, s->stream);
    ncclResult_t b = ncclRecv(m->scratch, r->count, ty, p->peer, comm,
                              s->stream);
    res = ncclGroupEnd();
    NCCL_TRY(a, comm);
    NCCL_TRY(b, comm);
    NCCL_TRY(res, comm);
    break;
  }
  case GF_STEP_BARRIER:
    res = ncclAllReduce(s->barrier_dev, s->barrier_dev, 1, ncclInt64, ncclSum,
                        comm, s->stream);
    NCCL_TRY(res, comm);
    break;
  case GF_STEP_ALLGATHER: {
    size_t all = r->count * (size_t)c->world;
    unsigned char *mine = NULL;
    GF_TRY(claim_stage(s, slot, all, err));
    mine = s->dev_stage + r->count * (size_t)c->rank;
    if (is_device_ptr(r->sendbuf)) {
      CU_TRY(cudaMemcpyAsync(mine, r->sendbuf, r->count,
                             cudaMemcpyDeviceToDevice, s->stream));
    } else {
      /* through pinned memory: a pageable copy would wait for the stream */
      memcpy(s->host_stage, r->sendbuf, r->count);
      CU_TRY(cudaMemcpyAsync(mine, s->host_stage, r->count,
                             cudaMemcpyHostToDevice, s->stream));
    }
    res = ncclAllGather(mine, s->dev_stage, r->count, ncclUint8, comm,
                        s->stream);
    NCCL_TRY(res, comm);
    break;
  }
  case GF_STEP_SCALE:
    CU_TRY(gf_comm_cuk_scale(s->stream, scale_dtype(r->dt), r->buf, r->count,
                             c->world));
    break;
  case GF_STEP_PACK:
    GF_TRY(grow_async(&m->stage, &m->stage_bytes, r->count * sizeof(uint16_t),
                      s->stream, err));
    CU_TRY(gf_comm_cuk_to_bf16(s->stream, m->stage, r->buf, r->count));
    r->wbuf = m->stage;
    break;
  case GF_STEP_UNPACK:
    CU_TRY(gf_comm_cuk_from_bf16(s->stream, r->buf, r->wbuf, r->count));
    break;
  case GF_STEP_FENCE: CU_TRY(cudaEventRecord(m->done, s->stream)); break;
  default:
    return gf_fail(err, GF_EINVAL, "nccl: step kind %d is not mine", p->kind);
  }
  if (res == ncclInProgress) m->pending = comm;
  return GF_OK;
}

/* The work a step queues once its NCCL call is fully enqueued. */
static gf_status queue_post(gf_comm *c, int slot, gf_err *err) {
  nccl_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *p = &r->steps[r->cur];
  nccl_slot *m = &s->slots[slot];
  if (p->kind == GF_STEP_XADD) {
    /* lower rank's value + higher rank's, whichever side this rank is */
    if (c->rank < p->peer)
      CU_TRY(gf_comm_cuk_add(s->stream, (int)r->wdt, r->wbuf, r->wbuf,
                             m->scratch, r->count));
    else
      CU_TRY(gf_comm_cuk_add(s->stream, (int)r->wdt, r->wbuf, m->scratch,
                             r->wbuf, r->count));
  } else if (p->kind == GF_STEP_ALLGATHER) {
    CU_TRY(cudaMemcpyAsync(s->host_stage, s->dev_stage,
                           r->count * (size_t)c->world, cudaMemcpyDeviceToHost,
                           s->stream));
  }
  m->post_done = 1;
  return GF_OK;
}

static gf_status nccl_test(gf_comm *c, int slot, int *done, gf_err *err) {
  nccl_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *p = &r->steps[r->cur];
  nccl_slot *m = &s->slots[slot];
  *done = 0;
  CU_TRY(cudaSetDevice(s->device));
  if (m->pending) {
    ncclResult_t a = ncclInProgress;
    NCCL_TRY(ncclCommGetAsyncError(m->pending, &a), m->pending);
    if (a == ncclInProgress) return GF_OK;
    if (a != ncclSuccess)
      return nccl_check(a, m->pending, "enqueue", __FILE__, __LINE__, err);
    m->pending = NULL;
  }
  if (!m->post_done) GF_TRY(queue_post(c, slot, err));
  if (p->kind == GF_STEP_FENCE) {
    cudaError_t q = cudaEventQuery(m->done);
    if (q == cudaErrorNotReady) {
      /* a peer's failure shows up here, not in the event */
      ncclResult_t a = ncclSuccess;
      if (s->world) {
        NCCL_TRY(ncclCommGetAsyncError(s->world, &a), s->world);
        if (a != ncclSuccess && a != ncclInProgress)
          return nccl_check(a, s->world, "asynchronous error", __FILE__,
                            __LINE__, err);
      }
      return GF_OK;
    }
    CU_TRY(q);
    if (r->op == GF_OP_ALLGATHER && s->stage_owner == slot) {
      size_t all = r->count * (size_t)c->world;
      if (is_device_ptr(r->buf))
        CU_TRY(cudaMemcpy(r->buf, s->host_stage, all, cudaMemcpyHostToDevice));
      else memcpy(r->buf, s->host_stage, all);
    }
  }
  *done = 1;
  return GF_OK;
}

static void nccl_release(gf_comm *c, int slot) {
  nccl_state *s = c->impl;
  if (!s) return;
  nccl_slot *m = &s->slots[slot];
  void **bufs[2] = {&m->scratch, &m->stage};
  size_t *sizes[2] = {&m->scratch_bytes, &m->stage_bytes};
  for (int i = 0; i < 2; i++) {
    if (!*bufs[i]) continue;
    (void)cudaSetDevice(s->device);
    /* stream-ordered: after the last kernel that reads it */
    if (cudaFreeAsync(*bufs[i], s->stream) != cudaSuccess)
      (void)cudaGetLastError();
    *bufs[i] = NULL;
    *sizes[i] = 0;
  }
  m->pending = NULL;
  m->post_done = 0;
  if (s->stage_owner == slot) s->stage_owner = -1;
}

const gf_comm_ops gf_comm_nccl_ops = {
    .name = "nccl",
    .device_buffers = 1,
    .lanes = 1,
    .serial_issue = 1,
    .fence = 1,
    .init = nccl_init,
    .init_hier = nccl_init_hier,
    .fini = nccl_fini,
    .abort = nccl_abort,
    .check_buf = nccl_check_buf,
    .begin = nccl_begin,
    .step_start = nccl_start,
    .step_test = nccl_test,
    .release = nccl_release,
};
