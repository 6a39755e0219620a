/* comm_impl.h - private to kernels/src/comm/: the gf_comm struct, the
 * request state machine every collective runs through, the engine table
 * (local, mpi, nccl, tcp) that comm.c dispatches to, like backend.h for ops,
 * and the helpers every engine shares (comm_core.c). Not here: any engine's
 * own state or wire format (the tcp engine's: comm_tcp.h, comm_tcp_wire.h).
 *
 * Every collective is a request: a short list of steps (engine primitives
 * such as "reduce to root 0 inside the node" or "exchange with rank r^2 and
 * add") that comm.c starts one after another as the engine reports each
 * finished. comm.c validates arguments once, builds the steps from the algo
 * and owns handles, timeouts and statistics; an engine only starts and
 * tests one step of one request at a time.
 *
 * Matching across ranks: collectives on one communicator must be issued in
 * the same order on every rank. Requests advance independently (whichever
 * test sees data first), so each request is put on a lane (seq % lanes, the
 * same on every rank since every rank makes the same calls) with its own
 * engine communicators, and within a lane a request starts a communicating
 * step only when every earlier request of that lane has started all of
 * its own. A `tagged` engine (tcp) names every message by request and step
 * and needs no such order. */
#ifndef GF_COMM_IMPL_H
#define GF_COMM_IMPL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/clock.h"
#include "gf/comm.h"

#define GF_COMM_MAX_REQ 64   /* user handles outstanding at once */
#define GF_COMM_SLOTS 72     /* + slots for the blocking calls */
#define GF_COMM_LANES 8      /* independent issue orders (mpi) */
#define GF_COMM_MAX_STEPS 20 /* tree: <= 16 levels, + scale + fence */

typedef enum gf_comm_opkind {
  GF_OP_ALLREDUCE = 0,
  GF_OP_BCAST,
  GF_OP_BARRIER,
  GF_OP_ALLGATHER
} gf_comm_opkind;

typedef enum gf_comm_stepkind {
  /* communicating steps: hold the lane order */
  GF_STEP_ALLREDUCE = 0, /* sum in place over scope */
  GF_STEP_REDUCE,        /* sum to scope rank `peer` (in place there) */
  GF_STEP_BCAST,         /* scope rank `peer`'s buf to the scope */
  GF_STEP_XADD,          /* exchange with world rank `peer`, then
                            buf = lower rank's + higher rank's */
  GF_STEP_BARRIER,
  GF_STEP_ALLGATHER, /* sendbuf (elem bytes) -> buf (world * elem) */
  /* local steps */
  GF_STEP_SCALE,  /* buf *= 1/world */
  GF_STEP_FENCE,  /* device engines: wait for the queued work */
  GF_STEP_PACK,   /* F32_AS_BF16: wbuf = buf rounded to bf16 (the engine's
                     staging copy, which the communicating steps move) */
  GF_STEP_UNPACK  /* F32_AS_BF16: buf = wbuf as f32 */
} gf_comm_stepkind;

/* Steps that talk to peers (and so keep the lane order). */
static inline int gf_comm_step_talks(int kind) { return kind < GF_STEP_SCALE; }

typedef enum gf_comm_scope {
  GF_SCOPE_WORLD = 0,
  GF_SCOPE_NODE,   /* the ranks of this host */
  GF_SCOPE_LEADERS /* local rank 0 of every host */
} gf_comm_scope;

typedef struct gf_comm_step {
  unsigned char kind;  /* gf_comm_stepkind */
  unsigned char scope; /* gf_comm_scope */
  short level;         /* XADD: tree level (0 first) */
  int peer;            /* REDUCE/BCAST: root rank within scope; XADD: world
                          rank of the partner */
} gf_comm_step;

typedef struct gf_comm_req {
  int active;   /* slot holds a request until it is released */
  unsigned gen; /* bumped at each release; part of the handle */
  gf_comm_opkind op;
  void *buf;           /* in place data; allgather: the `all` output */
  const void *sendbuf; /* allgather: `mine` */
  size_t count;        /* elements (allgather: bytes per rank) */
  size_t elem;         /* bytes per element (allgather: 1) */
  gf_comm_dtype dt;
  /* What the communicating steps move and add: buf, dt, elem, except for
   * F32_AS_BF16, where wdt is BF16, welem 2 and wbuf the engine's bf16
   * copy once the PACK step has made it (NULL before). */
  void *wbuf;
  gf_comm_dtype wdt;
  size_t welem;
  gf_reduce_op red;
  int root;        /* broadcast root */
  uint64_t seq;    /* order of creation, the same on every rank */
  int lane;        /* seq % lanes */
  int nsteps, cur; /* steps[cur] is in flight or next; cur == nsteps
                      when done */
  int started;     /* steps[cur] has been started */
  gf_comm_step steps[GF_COMM_MAX_STEPS];
  gf_status failed; /* GF_OK, or the error that ended it (fail_err) */
  gf_err fail_err;
  double t_start; /* CLOCK_MONOTONIC seconds at creation */
} gf_comm_req;

struct gf_comm;

typedef struct gf_comm_ops {
  const char *name;
  int device_buffers; /* buffers are CUDA device pointers */
  int lanes;          /* 1..GF_COMM_LANES: issue orders the engine keeps */
  int serial_issue;   /* a started communicating step holds its lane until
                         step_test reports it done (nccl: a call still being
                         enqueued blocks further calls on the comm) */
  int tagged;         /* the engine matches every message by its request
                         and step (tcp), so requests need no issue order:
                         any request may start any step at any time */
  int fence;          /* every request ends with a GF_STEP_FENCE */
  /* Creates c->impl; c->launch, rank, world, timeout_s, ctx, algo are set.
   * On failure releases what it made (fini is not called). */
  gf_status (*init)(struct gf_comm *c, gf_err *err);
  /* After the hostnames are known (c->local_rank, local_world, node_index):
   * the node and leader communicators for GF_ALLREDUCE_HIER. May be NULL. */
  gf_status (*init_hier)(struct gf_comm *c, gf_err *err);
  /* Releases c->impl (NULL fine). `quiet`: operations are still in flight
   * or the comm was aborted, so nothing that waits for peers may run. */
  void (*fini)(struct gf_comm *c, int quiet);
  void (*abort)(struct gf_comm *c, int code);
  /* Checks that buf (count elements of elem bytes) suits the engine; may be
   * NULL. */
  gf_status (*check_buf)(struct gf_comm *c, const void *buf, size_t bytes,
                         gf_err *err);
  /* Called once when a request is created (before any step); may be NULL. */
  gf_status (*begin)(struct gf_comm *c, int slot, gf_err *err);
  /* Starts steps[cur] of request `slot`. */
  gf_status (*step_start)(struct gf_comm *c, int slot, gf_err *err);
  /* Tests the started step; *done = 1 once it has finished (and its local
   * part, such as the add of XADD, is done). */
  gf_status (*step_test)(struct gf_comm *c, int slot, int *done, gf_err *err);
  /* Releases the engine's per-request state of `slot`; may be NULL. */
  void (*release)(struct gf_comm *c, int slot);
  /* Fills pfd (room for c->world entries) with the descriptors whose
   * events may let a started step progress (tcp: every live socket for
   * reading, those with queued bytes for writing) and returns how many; a
   * wait sleeps in poll() on them between tests instead of its
   * spin-then-sleep pause. May be NULL. */
  int (*poll_set)(struct gf_comm *c, struct pollfd *pfd);
} gf_comm_ops;

struct gf_comm_host;

struct gf_comm {
  gf_comm_backend backend;
  gf_allreduce_algo algo;
  const gf_comm_ops *ops;
  const struct gf_comm_host *host; /* gf_comm_host_services: what an engine
                                      built apart from gf_kernels (nccl, in
                                      the CUDA module) calls back into */
  void *impl;                  /* engine state, owned (ops->fini) */
  gf_launch_info launch;       /* copy of the config's */
  struct gf_ctx *ctx;          /* nccl: borrowed CUDA ctx; else NULL */
  double timeout_s;            /* > 0 */
  int rank, world;             /* this rank in 0..world-1 */
  int local_rank, local_world; /* among the ranks with this hostname */
  int nodes;                   /* distinct hostnames, >= 1 */
  int node_index;              /* 0..nodes-1: order of first appearance */
  int *node_of;                /* [world] every rank's node_index (so
                                  node_of[rank] == node_index); owned */
  int aborted;                 /* gf_comm_abort ran */
  struct pollfd *pfd;          /* [world] poll_set's array; owned; NULL
                                  without poll_set */
  uint64_t next_seq;           /* requests created so far */
  gf_comm_req reqs[GF_COMM_SLOTS];
  gf_comm_stats stats;
};

/* The engines (comm_local.c, comm_mpi.c, comm_nccl.c, comm_tcp.c). comm.c
 * reaches them through these tables; they reach comm.c never (what they
 * share is comm_core.c, below both). */
extern const gf_comm_ops gf_comm_local_ops;
extern const gf_comm_ops gf_comm_tcp_ops;
#ifdef GF_HAVE_MPI
extern const gf_comm_ops gf_comm_mpi_ops;
#endif
#ifdef GF_HAVE_NCCL
/* In the CUDA backend module (libganflow_cuda.so): gf_kernels reaches it
 * through the module's table, never by this name (gf_comm_nccl_engine). */
extern const gf_comm_ops gf_comm_nccl_ops;
#endif

/* ---- helpers shared by comm.c and the engines (comm_core.c) ------------- */
/* CLOCK_MONOTONIC in seconds: gf_mono_s under the name the engines'
 * deadlines (and the comm tests) use. */
static inline double gf_comm_now(void) { return gf_mono_s(); }
/* The pause between two polls of a waiting loop. For the first
 * GF_COMM_SPIN_S of the loop it only yields the CPU: MPI's non-blocking
 * collectives advance only inside MPI_Test, one round per call, so a sleep
 * between polls would stretch a many-round operation (a 4 MB reduce is
 * hundreds of rounds). After that it sleeps, 2 us doubling to 1 ms, so a
 * long wait for a late peer costs no CPU. */
#define GF_COMM_SPIN_S 0.05
typedef struct gf_comm_poll {
  double t0;     /* CLOCK_MONOTONIC seconds when the loop started */
  long delay_ns; /* next sleep; 0 until the spin phase is over */
} gf_comm_poll;
void gf_comm_poll_start(gf_comm_poll *p);
void gf_comm_poll_pause(gf_comm_poll *p);
/* Bytes of one element of dt. */
size_t gf_comm_dtype_size(gf_comm_dtype dt);
/* Host: dst[i] = lower[i] + higher[i] for n elements of dt (dst may alias
 * either input): the tree's add, written out in operand order. */
void gf_comm_host_add(gf_comm_dtype dt, void *dst, const void *lower,
                      const void *higher, size_t n);
/* Host: buf[i] *= 1/world (f32 and f32-as-bf16: the f32 of 1.0/world;
 * f64: 1.0/world). */
void gf_comm_host_scale(gf_comm_dtype dt, void *buf, size_t n, int world);
/* Host PACK step of request r: grows *stage (owned by the engine's slot,
 * *cap bytes; freed by the engine) to r->count bf16 values, rounds r->buf
 * into it and points r->wbuf at it. GF_ENOMEM when it cannot grow. */
gf_status gf_comm_host_pack(gf_comm_req *r, void **stage, size_t *cap,
                            gf_err *err);
/* Host UNPACK step: r->buf = r->wbuf widened to f32. */
void gf_comm_host_unpack(gf_comm_req *r);

/* ---- gf_kernels' services for an engine built apart (comm_host.c) --------
 * The nccl engine lives in the CUDA backend module (../cuda_module.h),
 * which links none of gf_kernels: it calls the waiting loop's pause, the
 * rendezvous and MPI through this table, which gf_comm_init puts in every
 * comm (c->host). Part of the module's ABI (GF_CUDA_MODULE_ABI). */
typedef struct gf_comm_host {
  void (*poll_start)(gf_comm_poll *p); /* gf_comm_poll_start */
  void (*poll_pause)(gf_comm_poll *p); /* gf_comm_poll_pause */
  gf_status (*rdv_share)(const char *addr, int port, int rank, int world,
                         void *blob, size_t n, double timeout_s,
                         gf_err *err); /* gf_comm_rdv_share */
  /* gf_comm_mpi_share, _release, _abort_world; NULL without MPI. */
  gf_status (*mpi_share)(const gf_launch_info *launch, void *blob, size_t n,
                         double timeout_s, int *we_init, gf_err *err);
  void (*mpi_release)(int we_init);
  void (*mpi_abort_world)(int code);
} gf_comm_host;
extern const gf_comm_host gf_comm_host_services;

/* The nccl engine, from the CUDA backend module (loaded on this first
 * use): GF_OK with *out; GF_EUNSUPPORTED when this build has no NCCL, the
 * module cannot be loaded (the loader's message) or it was built without
 * NCCL. */
gf_status gf_comm_nccl_engine(const gf_comm_ops **out, gf_err *err);

/* Listens on `port` of every address (gf_sock_listen; port 0: one the
 * kernel picks, written to *bound, which may be NULL). The caller closes
 * *fd. GF_EIO naming `who` (message prefix) and, for port > 0,
 * MASTER_PORT and the port; a port in use says so. */
gf_status gf_comm_listen(const char *who, int port, int *fd, int *bound,
                         gf_err *err);

/* ---- bootstrap helpers (for the nccl engine) ----------------------------- */
/* TCP rendezvous (comm_rdv.c, over gf/sock.h): rank 0 listens on port (all
 * addresses) and sends the n-byte blob to each of ranks 1..world-1, which
 * connect to addr:port, retrying until the deadline. Checks a magic word, the world
 * size and that each rank arrives once. GF_ETIMEOUT after timeout_s; GF_EIO
 * for socket errors (a port already in use names the port). No allocation
 * that outlives the call. */
gf_status gf_comm_rdv_share(const char *addr, int port, int rank, int world,
                            void *blob, size_t n, double timeout_s,
                            gf_err *err);

#ifdef GF_HAVE_MPI
/* MPI for the nccl engine's bootstrap (comm_mpi.c). Initializes MPI unless
 * it already is (*we_init = 1 then), checks rank and size against launch,
 * and broadcasts root 0's n-byte blob with the timeout. */
gf_status gf_comm_mpi_share(const gf_launch_info *launch, void *blob, size_t n,
                            double timeout_s, int *we_init, gf_err *err);
/* MPI_Finalize when we_init and MPI is not finalized yet. */
void gf_comm_mpi_release(int we_init);
/* MPI_Abort(MPI_COMM_WORLD, code) when MPI is initialized. */
void gf_comm_mpi_abort_world(int code);
#endif

#endif
