/* comm_impl.h - private to kernels/src/comm/: the gf_comm struct, the
 * request state machine every collective runs through, and the engine table
 * (local, mpi, nccl, tcp) that comm.c dispatches to, like backend.h for ops.
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
  int aborted;                 /* gf_comm_abort ran */
  struct pollfd *pfd;          /* [world] poll_set's array; owned; NULL
                                  without poll_set */
  uint64_t next_seq;           /* requests created so far */
  gf_comm_req reqs[GF_COMM_SLOTS];
  gf_comm_stats stats;
};

/* The engines (comm_local.c, comm_mpi.c, comm_nccl.c, comm_tcp.c). */
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

/* ---- helpers shared by the engines (comm.c) ------------------------------ */
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

/* ---- socket helpers (comm_tcp_net.c; used by comm_rdv.c and the tcp
 * engine) ------------------------------------------------------------------
 * Every socket is non-blocking and close-on-exec; every wait polls against
 * a CLOCK_MONOTONIC deadline (seconds, gf_comm_now()). */
struct addrinfo;
/* Milliseconds left until the deadline for poll(): 0 once it has passed,
 * at least 1 before. */
int gf_comm_ms_left(double deadline);
/* Big-endian integers of the wire formats. */
void gf_comm_put_u32(unsigned char *p, uint32_t v);
uint32_t gf_comm_get_u32(const unsigned char *p);
int gf_comm_set_nonblock(int fd);
/* Moves exactly n bytes over non-blocking fd before the deadline (out: send
 * with MSG_NOSIGNAL, else recv). Returns 0, or -1 with errno (ETIMEDOUT at
 * the deadline, EPIPE for a peer that closed). */
int gf_comm_io_full(int fd, void *buf, size_t n, int out, double deadline);
/* A non-blocking listening socket on `port` of every address (IPv6
 * dual-stack, else IPv4), SO_REUSEADDR. port 0: an ephemeral port, written
 * to *bound. The caller owns *out (close). GF_EIO naming `who` (message
 * prefix) and, for port > 0, MASTER_PORT and the port; a port in use says
 * so. */
gf_status gf_comm_listen(const char *who, int port, int *out, int *bound,
                         gf_err *err);
/* One connection attempt to each address of the list; returns a connected
 * non-blocking fd (the caller closes it) or -1 with errno of the last
 * failure. Waits at most 1 s (and not past the deadline) per address. */
int gf_comm_connect_once(const struct addrinfo *ai, double deadline);
/* Connects to addr:port, retrying every 50 ms until the deadline (the peer
 * may not listen yet). GF_OK with *fd connected (caller-owned);
 * GF_EINVAL (err filled, naming `who`) when addr does not resolve;
 * GF_ETIMEOUT at the deadline with only why->msg filled (the last failure),
 * for the caller's message. */
gf_status gf_comm_dial(const char *who, const char *addr, int port,
                       double deadline, int *fd, gf_err *why, gf_err *err);

/* ---- tcp engine wire format (comm_tcp_net.c) -----------------------------
 * Bootstrap messages, integers big-endian, GF_TCP_MSG_BYTES each:
 *   "gfTC" | version u16 (GF_TCP_VERSION) | kind u16 | rank u32 | world u32
 *   | port u32 | token u32
 * kinds: HELLO (rank -> rank 0: its rank, world and listening port),
 * TABLE (rank 0 -> rank: rank = the recipient, token = this job's nonce;
 * followed by world GF_TCP_ENTRY_BYTES entries), REJECT (rank 0 -> rank:
 * port = the reason, world = rank 0's world), MESH (rank j -> rank i < j
 * over j's new connection: j, the token) and MESH_ACK (i -> j). A table
 * entry: family u8 (0 for rank 0, which everyone reaches at MASTER_ADDR; 4
 * or 6) | 3 zero bytes | address (16 bytes; IPv4 in the first 4, the rest
 * zero) | port u32. */
#define GF_TCP_VERSION 1
#define GF_TCP_MSG_BYTES 24
#define GF_TCP_ENTRY_BYTES 24
#define GF_TCP_MAX_WORLD 65536
enum {
  GF_TCP_HELLO = 1,
  GF_TCP_TABLE = 2,
  GF_TCP_REJECT = 3,
  GF_TCP_MESH = 4,
  GF_TCP_MESH_ACK = 5
};
/* REJECT reasons */
enum { GF_TCP_R_WORLD = 1, GF_TCP_R_TWICE = 2, GF_TCP_R_VERSION = 3 };
typedef struct gf_tcp_msg {
  int kind;       /* GF_TCP_HELLO..GF_TCP_MESH_ACK */
  int rank;       /* 0 <= rank < world */
  int world;      /* 1..GF_TCP_MAX_WORLD */
  int port;       /* HELLO: 1..65535; REJECT: the reason; else 0 */
  uint32_t token; /* TABLE, MESH, MESH_ACK: != 0; else 0 */
} gf_tcp_msg;
typedef struct gf_tcp_entry {
  int family;             /* 0 (rank 0), 4 or 6 */
  unsigned char addr[16]; /* family 4: first 4 bytes */
  int port;               /* 1..65535; 0 for rank 0 */
} gf_tcp_entry;
/* Writes m as GF_TCP_MSG_BYTES bytes (m is not checked). */
void gf_comm_tcp_put_msg(unsigned char *p, const gf_tcp_msg *m);
/* Parses n bytes from a peer (outside input): magic, version, kind, and
 * every field against the kind's range above. GF_EFORMAT with a message
 * naming the field otherwise; *out written only on success. */
gf_status gf_comm_tcp_parse_msg(const unsigned char *p, size_t n,
                                gf_tcp_msg *out, gf_err *err);
/* Parses the n bytes of a table of `world` entries (n must be world *
 * GF_TCP_ENTRY_BYTES): entry 0 all zero, the others family 4 or 6 with
 * zero padding, a non-zero address and a port 1..65535. out has world
 * entries (caller-owned); GF_EFORMAT naming the entry otherwise. */
gf_status gf_comm_tcp_parse_table(const unsigned char *p, size_t n, int world,
                                  gf_tcp_entry *out, gf_err *err);
/* The tcp engine's bootstrap: rank 0 listens on MASTER_PORT and collects a
 * HELLO from every rank, checks world agreement and that each rank comes
 * once, and sends everyone the TABLE; then every rank j connects to every
 * rank 0 < i < j and identifies itself (MESH / MESH_ACK); the connection
 * to rank 0 is the one of the hello. fds (world entries, caller-owned) get
 * one connected non-blocking TCP_NODELAY socket per peer (fds[rank] = -1),
 * which the caller closes. Everything before one deadline: GF_ETIMEOUT
 * names the ranks that did not arrive; GF_EINVAL for a world or rank that
 * disagrees; GF_EIO for socket errors (a MASTER_PORT in use names it). On
 * failure every socket is closed and fds are all -1. */
gf_status gf_comm_tcp_bootstrap(const gf_launch_info *li, double timeout_s,
                                int *fds, gf_err *err);

/* For fault-injection tests: the socket of a tcp comm to world rank peer
 * (owned by the comm: the caller may shut it down, never close it), or -1
 * (another engine, this rank, a closed comm). */
int gf_comm_tcp_peer_fd(const gf_comm *c, int peer);
/* For tests: the bytes (headers included) of messages from peer that the
 * tcp comm has read ahead of their receives and holds; 0 for another
 * engine. */
size_t gf_comm_tcp_early_bytes(const gf_comm *c, int peer);

/* ---- bootstrap helpers --------------------------------------------------- */
/* TCP rendezvous (comm_rdv.c): rank 0 listens on port (all addresses) and
 * sends the n-byte blob to each of ranks 1..world-1, which connect to
 * addr:port, retrying until the deadline. Checks a magic word, the world
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
