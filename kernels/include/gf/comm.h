/* comm.h - the collective layer of data-parallel training (DESIGN §4.6):
 * how the process was launched, and a communicator with all-reduce,
 * broadcast, barrier and allgather on one of four engines, chosen like the
 * kernels' backends:
 *   local  world 1: every op is a no-op (allgather a copy); no library used
 *   mpi    host buffers; MPI non-blocking collectives (GF_HAVE_MPI builds)
 *   nccl   CUDA device buffers ordered after the gf_ctx's stream (builds
 *          with the CUDA backend and NCCL, GF_HAVE_NCCL; the engine is in
 *          the CUDA backend module, loaded by the first gf_comm_init that
 *          asks for it)
 *   tcp    host buffers over a full mesh of TCP connections bootstrapped
 *          from MASTER_ADDR:MASTER_PORT, no library (every POSIX build):
 *          CPU ranks of a torchrun-style launch, like PyTorch's gloo
 *
 * Every wait has a deadline (gf_comm_config.timeout_s): a peer that never
 * arrives gives GF_ETIMEOUT, never a hang; gf_comm_abort then ends the job.
 * tcp: a peer that dies (its connection closes without gf_comm_free) is
 * GF_EIO naming that rank at once, not at the timeout, on every rank: the
 * rank that sees it tells the others ("tcp: rank 2 is gone (seen by rank
 * 1: connection closed)"), so a rank waiting on a live peer fails too.
 * Collectives are matched across ranks by call order: every rank must call
 * the same sequence of gf_comm_* collectives (iallreduce, allreduce,
 * broadcast, barrier, allgather) with the same counts, dtypes and roots;
 * handles may be tested and waited for in any order.
 *
 * A gf_comm is used by one thread at a time (mpi: the thread that created
 * it, MPI_THREAD_FUNNELED). No global state: a process may
 * hold several comms (with mpi, the one that initialized MPI must be freed
 * last, since freeing it finalizes MPI). Not here: bucketing of gradients,
 * which buffers to reduce, when to wait (the trainer's business). */
#ifndef GF_COMM_H
#define GF_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

struct gf_ctx;

typedef enum gf_comm_backend {
  GF_COMM_LOCAL = 0,
  GF_COMM_MPI = 1,
  GF_COMM_NCCL = 2,
  GF_COMM_TCP = 3
} gf_comm_backend;

typedef enum gf_allreduce_algo {
  /* "ring": the engine's own all-reduce (MPI_Allreduce / ncclAllReduce;
   * tcp: a ring reduce-scatter + allgather, a fixed order of additions for
   * a given world) */
  GF_ALLREDUCE_ENGINE = 0,
  /* "reduce-bcast": reduce to rank 0, then broadcast */
  GF_ALLREDUCE_REDUCE_BCAST = 1,
  /* "hierarchical": reduce inside each node (MPI_Comm_split_type SHARED;
   * NCCL: a per-node communicator; tcp: the ranks of each hostname), all-reduce among node leaders,
   * broadcast inside the node */
  GF_ALLREDUCE_HIER = 2,
  /* "tree": recursive doubling with a fixed pairing, identical bits at any
   * power-of-two world size: at level l rank r exchanges the whole buffer
   * with r ^ (1<<l) and both compute lower_rank_value + higher_rank_value,
   * so every rank holds the binary-tree sum over ranks in rank order,
   * ((v0+v1)+(v2+v3)) at 4 ranks. Non-power-of-two world: GF_EINVAL at
   * init. */
  GF_ALLREDUCE_TREE = 3
} gf_allreduce_algo;

/* AVG = SUM, then multiply by 1/world (f32, f64, f32-as-bf16 only). */
typedef enum gf_reduce_op { GF_RED_SUM = 0, GF_RED_AVG = 1 } gf_reduce_op;

/* Element types; U8 is for broadcast/allgather only.
 *   BF16         bfloat16 values in uint16_t (the high half of an f32's
 *                bits); each addition of a reduction is done in f32 and
 *                rounded to the nearest bf16, ties to even (SUM only).
 *   F32_AS_BF16  f32 buffers that travel as bf16, for all-reduce only (half
 *                the bytes on the wire, like PyTorch DDP's
 *                bf16_compress_hook): the engine rounds a copy of the
 *                buffer to bf16 (gf_comm_bf16_from_f32), all-reduces that
 *                copy as BF16 with the comm's algorithm (its fixed order of
 *                additions, each in f32 and rounded to bf16 again for the
 *                wire) and writes the sums back as f32; AVG scales those
 *                f32 afterwards. Every rank ends with the same bits, each a
 *                bf16 value; the sums differ from F32's by bf16 rounding, so
 *                not for bit-exact work. The local engine (world 1) rounds
 *                the buffer to bf16; nccl uses ncclBfloat16. */
typedef enum gf_comm_dtype {
  GF_CDT_F32 = 0,
  GF_CDT_F64 = 1,
  GF_CDT_I64 = 2,
  GF_CDT_U8 = 3,
  GF_CDT_BF16 = 4,
  GF_CDT_F32_AS_BF16 = 5
} gf_comm_dtype;

/* dst[i] = the bf16 nearest src[i], ties to even; a NaN stays a NaN of the
 * same sign (quiet), a value beyond bf16's range becomes +-inf as in IEEE
 * rounding. n values of caller-owned memory; dst and src must not overlap.
 * The arithmetic of BF16 and F32_AS_BF16 on every engine (nccl's kernels
 * do the same bit operations). */
void gf_comm_bf16_from_f32(uint16_t *dst, const float *src, size_t n);
/* dst[i] = src[i] as f32 (exact). Caller-owned memory, no overlap. */
void gf_comm_bf16_to_f32(float *dst, const uint16_t *src, size_t n);

/* ---- launch ---------------------------------------------------------------
 * How the process was launched, from the environment. */
typedef struct gf_launch_info {
  int rank, world_size;  /* 0 <= rank < world_size <= 65536 */
  int local_rank;        /* 0 <= local_rank < local_world_size; when
                            the launcher does not say, rank (one node
                            assumed; gf_comm finds the real topology
                            from hostnames) */
  int local_world_size;  /* 1..world_size; world_size when not said */
  char launcher[16];     /* "none", "mpirun", "srun", "torchrun" */
  char master_addr[256]; /* MASTER_ADDR ("" when not given) */
  int master_port;       /* MASTER_PORT (0 when not given) */
  char hostname[256];    /* gethostname() of this process */
} gf_launch_info;

/* Fills *out from environment variables read through get(user, name), which
 * returns NULL for an unset variable (pass gf_launch_getenv for the real
 * environment). First match wins:
 *   mpirun    OMPI_COMM_WORLD_RANK set: OMPI_COMM_WORLD_RANK, _SIZE,
 *             _LOCAL_RANK, _LOCAL_SIZE
 *   srun      PMIX_RANK or SLURM_PROCID set: rank PMIX_RANK else
 *             SLURM_PROCID; world OMPI_COMM_WORLD_SIZE else SLURM_NTASKS;
 *             local rank OMPI_COMM_WORLD_LOCAL_RANK else SLURM_LOCALID;
 *             local world OMPI_COMM_WORLD_LOCAL_SIZE else
 *             SLURM_NTASKS_PER_NODE else this node's (SLURM_NODEID) entry
 *             of SLURM_TASKS_PER_NODE ("2(x3),1")
 *   torchrun  RANK or WORLD_SIZE set: RANK, WORLD_SIZE, LOCAL_RANK,
 *             LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (both required
 *             when WORLD_SIZE > 1)
 *   none      otherwise: rank 0 of 1
 * mpirun and srun launches take MASTER_ADDR and MASTER_PORT too when both
 * are set (optional there; checked the same way; one without the other is
 * ignored), so the tcp engine and the nccl rendezvous work under them.
 * Every value is checked: decimal digits only, 0 <= rank < world <= 65536,
 * local rank < local world <= world, port 1..65535, MASTER_ADDR a host name
 * or address. A malformed or missing value is GF_EINVAL with a message that
 * names the variable and quotes its value. Pure parse: no allocation; out
 * is caller-owned and fully written on success. */
gf_status gf_launch_detect(gf_launch_info *out,
                           const char *(*get)(void *user, const char *name),
                           void *user, gf_err *err);
/* getenv as a `get` callback (user ignored). */
const char *gf_launch_getenv(void *user, const char *name);

/* ---- communicator -------------------------------------------------------- */
typedef struct gf_comm_config {
  gf_comm_backend backend;
  gf_allreduce_algo algo;
  double timeout_s;             /* every wait; <= 0 means 600 s */
  struct gf_ctx *ctx;           /* nccl: the CUDA ctx whose device and stream
                                   the buffers use (borrowed, must outlive
                                   the comm); else NULL */
  const gf_launch_info *launch; /* required; copied */
} gf_comm_config;

typedef struct gf_comm gf_comm; /* opaque */

/* Creates the communicator; *out is owned by the caller (gf_comm_free).
 *   mpi   MPI_Init_thread(FUNNELED) unless MPI is already initialized (then
 *         this comm does not finalize it either); MPI's rank and size must
 *         agree with the launch.
 *   nccl  unique id from rank 0, broadcast over MPI when this build has MPI
 *         and the launch is mpirun/srun (MPI is then initialized as above),
 *         else over a small TCP rendezvous at MASTER_ADDR:MASTER_PORT (rank
 *         0 listens, the others connect); the communicators are
 *         non-blocking so every wait can time out.
 *   tcp   rank 0 listens on MASTER_PORT (a port in use is GF_EIO naming
 *         it), every rank connects to it (retrying until the timeout) and
 *         gets the table of every rank's own listening port, then each
 *         pair connects; a rank that does not arrive is GF_ETIMEOUT naming
 *         it, a WORLD_SIZE that differs or a rank that comes twice
 *         GF_EINVAL. Needs master_addr and master_port in the launch.
 *   local launch->world_size must be 1.
 * Then, when world > 1, the hostnames are allgathered (gf_comm_nodes, local
 * rank and world). GF_EUNSUPPORTED with a clear message when this build
 * lacks the backend (nccl: or the CUDA backend module holding it does not
 * load); GF_EINVAL for a bad config (tree at a world that is
 * not a power of two, nccl without a CUDA ctx); GF_ETIMEOUT when peers do
 * not arrive. On failure *out is NULL and nothing needs freeing. */
gf_status gf_comm_init(gf_comm **out, const gf_comm_config *cfg, gf_err *err);
/* Releases the communicator; NULL fine. MPI_Finalize when it initialized
 * MPI. With operations still in flight (after a GF_ETIMEOUT) it does not
 * wait for peers that may never come: mpi leaves its communicators, the
 * buffers MPI may still write and MPI itself alone (call gf_comm_abort
 * first to end the job); nccl aborts its communicators; tcp closes its
 * sockets without waiting (peers see a goodbye, or an error if they still
 * expected data). */
void gf_comm_free(gf_comm *c);
/* Ends the job's other ranks too, for use after a timeout or a fatal error
 * on one rank. mpi (and nccl bootstrapped over MPI): MPI_Abort(code), which
 * does not return under Open MPI. nccl: ncclCommAbort on every
 * communicator, so that peers' pending operations fail. tcp: sends an
 * abort notice and closes every socket, so that every peer fails at once
 * with GF_EIO naming this rank. Afterwards every
 * collective on c returns GF_ESTATE; gf_comm_free is still needed. */
void gf_comm_abort(gf_comm *c, int code);

int gf_comm_rank(const gf_comm *c);
int gf_comm_world(const gf_comm *c);
int gf_comm_local_rank(const gf_comm *c);  /* among ranks on this host */
int gf_comm_local_world(const gf_comm *c); /* ranks on this host */
int gf_comm_nodes(const gf_comm *c);       /* distinct hostnames */
gf_comm_backend gf_comm_backend_of(const gf_comm *c);
gf_allreduce_algo gf_comm_algo_of(const gf_comm *c);
/* 1: data buffers of allreduce/broadcast are CUDA device pointers (nccl);
 * 0: host memory (local, mpi, tcp). */
int gf_comm_device_buffers(const gf_comm *c);
/* The timeout of every later wait, in seconds (<= 0 means 600 s); also for
 * requests already in flight. */
void gf_comm_set_timeout(gf_comm *c, double timeout_s);
double gf_comm_timeout(const gf_comm *c);

/* True when this build has backend b (local and tcp: always; nccl: built
 * into the CUDA backend module, which this does not load). */
int gf_comm_built(gf_comm_backend b);
/* Static names: "local", "mpi", "nccl", "tcp"; "ring", "reduce-bcast",
 * "hierarchical", "tree"; "?" for a value out of range. */
const char *gf_comm_backend_name(gf_comm_backend b);
const char *gf_allreduce_algo_name(gf_allreduce_algo a);
/* Parses one of the algo names above; GF_EINVAL listing them otherwise. */
gf_status gf_allreduce_algo_parse(const char *s, gf_allreduce_algo *out,
                                  gf_err *err);
/* Parses "local", "mpi", "nccl" or "tcp"; GF_EINVAL otherwise. */
gf_status gf_comm_backend_parse(const char *s, gf_comm_backend *out,
                                gf_err *err);

/* ---- collectives ----------------------------------------------------------
 * Buffers: host memory (local, mpi, tcp) or CUDA device memory (nccl,
 * checked).
 * count elements of dt; count 0 is a valid no-op. All ranks must pass the
 * same count, dt and op. */

/* Blocking all-reduce in place with the configured algo; waits at most
 * timeout_s (GF_ETIMEOUT, message says which op and how long; the operation
 * then stays in flight inside the comm with buf in use: abort). */
gf_status gf_comm_allreduce(gf_comm *c, void *buf, size_t count,
                            gf_comm_dtype dt, gf_reduce_op op, gf_err *err);
/* Non-blocking all-reduce in place; *req receives a handle (up to 64
 * outstanding per comm; GF_ESTATE beyond). buf must stay untouched until
 * the wait. The several-step algorithms (reduce-bcast, hierarchical, tree)
 * are state machines advanced by gf_comm_test / gf_comm_wait. nccl: the
 * operation is ordered after the work queued on the ctx's stream so far and
 * runs on a stream of the comm. tcp: the steps of every outstanding
 * request move at once (a request's bytes move while an earlier one waits
 * on a slow peer; each request's additions keep their one fixed order, so
 * the bits do not depend on the interleaving), and only inside gf_comm_*
 * calls (non-blocking sockets; no thread; a wait sleeps in poll()). */
gf_status gf_comm_iallreduce(gf_comm *c, void *buf, size_t count,
                             gf_comm_dtype dt, gf_reduce_op op, int *req,
                             gf_err *err);
/* Drives progress of every outstanding request (MPI progresses only inside
 * MPI calls: call this between layers of the backward) and sets *done to 1
 * when req has completed (the handle stays valid until gf_comm_wait). */
gf_status gf_comm_test(gf_comm *c, int req, int *done, gf_err *err);
/* Waits for req with the timeout; the handle is released on success and on
 * failure of the operation itself. On GF_ETIMEOUT the request stays
 * outstanding (a later wait may still complete it). */
gf_status gf_comm_wait(gf_comm *c, int req, gf_err *err);
/* Blocking broadcast of root's buf to every rank (U8 allowed). */
gf_status gf_comm_broadcast(gf_comm *c, void *buf, size_t count,
                            gf_comm_dtype dt, int root, gf_err *err);
gf_status gf_comm_barrier(gf_comm *c, gf_err *err);
/* all[r * bytes ...] = rank r's `mine` (bytes each); for small values
 * (digests, flags, hostnames, statistics). Host memory on every backend
 * (nccl stages through the device; device pointers work there too). */
gf_status gf_comm_allgather(gf_comm *c, const void *mine, size_t bytes,
                            void *all, gf_err *err);

typedef struct gf_comm_stats {
  uint64_t allreduce_calls;
  uint64_t allreduce_bytes; /* payload bytes of all-reduces (count * size) */
  double wait_s;            /* seconds blocked in gf_comm_wait and in the
                               blocking calls */
  double busy_s;            /* seconds from each all-reduce's start to its
                               completion (as observed by test/wait),
                               summed */
} gf_comm_stats;
void gf_comm_get_stats(const gf_comm *c, gf_comm_stats *out);

#endif
