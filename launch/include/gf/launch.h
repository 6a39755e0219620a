/* launch.h - `ganflow launch`, the supervisor of a multi-rank ganflow-train
 * job (DESIGN §4.6):
 *
 *   ganflow launch --nproc N [--nproc-min M] [--max-restarts R]
 *                  [--nnodes MIN[:MAX] --node-rank K --rdzv HOST:PORT]
 *                  [--hang-timeout S] [--start-timeout S]
 *                  [--launcher local|mpirun|srun] [--heartbeat-dir DIR]
 *                  [--hostfile FILE] [--launcher-arg ARG]...
 *                  [--elastic-capacity file:PATH|hostfile:PATH|slurm
 *                   [--capacity-notice-margin S]]
 *                  -- [WRAPPER...] ganflow-train ARGS...
 *
 * It starts the ranks (local: N processes with torchrun-style variables,
 * talking over gf_comm's tcp engine; mpirun / srun: the engine's own
 * launcher), watches them (exit statuses, heartbeat files of
 * gf/heartbeat.h), and when one dies, hangs or fails to start it kills every
 * rank and starts the job again with --resume auto, which continues from the
 * newest checkpoint that verifies into the same MLflow run. A slot whose
 * rank fails before training starts is left out of the next attempt (down
 * to --nproc-min ranks, the global batch kept, --grad-accum scaled so the
 * micro-batch stays the same) and tried again at the next restart that has
 * another cause. Each restart goes to the MLflow run (metric sys/restarts,
 * tag ganflow.restart.<n>) and to the log. SIGTERM/SIGINT are passed to the
 * ranks, which checkpoint and end the run KILLED.
 *
 * Exit status: 0 the training finished; 1 FAILED (restarts exhausted, too
 * few slots, a fatal error; the reason on stderr and in the run's tag
 * ganflow.launch.failure); 2 usage (of launch, or a configuration the ranks
 * refuse, which no restart can fix); 143 stopped by a signal after the
 * ranks checkpointed (run KILLED; the same command resumes it).
 *
 * With --nnodes MIN[:MAX] --node-rank K --rdzv HOST:PORT (or Kubeflow's
 * PET_* / PyTorchJob's variables) it is one node's agent, as torchrun's:
 * it runs --nproc ranks on this node, and node 0's agent hosts the
 * rendezvous that starts each round on the nodes there, restarts every
 * node's ranks when any fails, goes on without a lost node (down to MIN)
 * and lets a returning one in at a checkpoint (launch/src/launch_node.c).
 *
 * With --elastic-capacity the slots come from a file an autoscaler
 * rewrites (or an Open MPI host file), read every 0.5 s
 * (launch/src/launch_capacity.c): more slots make the ranks checkpoint at
 * once (SIGTERM) and the job start again larger; a spot notice (a host's
 * leaving= deadline within --capacity-notice-margin) does the same to go
 * smaller before the host goes; neither counts as a restart. Slots gone
 * without notice kill the ranks on them, a failure like any other. Each
 * change: tag ganflow.capacity.<n>; every job: metric sys/world_size at
 * the step each attempt began from (docs/distributed.md).
 *
 * The parsing and planning functions are pure and unit-tested; gf_launch_run
 * forks, waits and signals, and is tested end to end (tests/trainer, and
 * across test hosts in tests/cluster). */
#ifndef GF_LAUNCH_H
#define GF_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/status.h"
#include "gf/train.h"

#define GF_LAUNCH_MAX_RANKS 256
#define GF_LAUNCH_MAX_LARGS 32
#define GF_LAUNCH_MAX_NODES 64
#define GF_CAP_MAX_HOSTS 256  /* lines of a capacity source */
#define GF_CAP_HOST_MAX 63    /* characters of a host name */
#define GF_CAP_FILE_MAX 65536 /* bytes of a capacity source */
#define GF_CAP_MARGIN_DEFAULT 30.0 /* --capacity-notice-margin s */

/* Where --elastic-capacity reads the slots the job may use. */
typedef enum gf_cap_kind {
  GF_CAP_NONE = 0,  /* no --elastic-capacity: the slots are fixed */
  GF_CAP_FILE,      /* file:PATH, lines "HOST slots=N [leaving=WHEN]" */
  GF_CAP_HOSTFILE,  /* hostfile:PATH, an Open MPI host file, re-read */
  GF_CAP_SLURM      /* slurm: the Slurm job's allocation (scontrol), its
                       EndTime a notice on every node */
} gf_cap_kind;

typedef enum gf_launcher {
  GF_LAUNCHER_LOCAL = 0,
  GF_LAUNCHER_MPIRUN = 1,
  GF_LAUNCHER_SRUN = 2
} gf_launcher;

enum {
  GF_LAUNCH_EXIT_OK = 0,
  GF_LAUNCH_EXIT_FAILED = 1,
  GF_LAUNCH_EXIT_USAGE = 2,
  GF_LAUNCH_EXIT_STOPPED = 143
};

typedef struct gf_launch_opts {
  int nproc;            /* --nproc, ranks wanted, 1..GF_LAUNCH_MAX_RANKS */
  bool nproc_auto;      /* --nproc auto (or PET_NPROC_PER_NODE=auto): nproc
                           is resolved from --device and the visible GPUs */
  int nproc_min;        /* --nproc-min (nproc): fewest ranks to go on with */
  int max_restarts;     /* --max-restarts (3) */
  double hang_timeout;  /* --hang-timeout s (60): no beat while training */
  double start_timeout; /* --start-timeout s (600): no beat in start-up,
                           evaluation, final upload */
  gf_launcher launcher; /* --launcher (local) */
  char hb_dir[GF_TRAIN_PATH_MAX]; /* --heartbeat-dir; "" until finished:
                                     <checkpoint-dir>/heartbeat */
  char hostfile[GF_TRAIN_PATH_MAX]; /* --hostfile (mpirun), re-read at each
                                       start; "" none */
  const char *largs[GF_LAUNCH_MAX_LARGS]; /* --launcher-arg, borrowed */
  int n_largs;
  char **cmd;           /* the command after "--" (borrowed from argv) */
  int ncmd;
  int train_at;         /* cmd[train_at] is the ganflow-train word */
  gf_train_config train; /* its flags, as ganflow-train parses them */
  /* Several nodes (one agent per node, as torchrun): nnodes_max 0 means
   * one node (the fields below unused); then nproc is per node. */
  int nnodes_min, nnodes_max; /* --nnodes MIN[:MAX] */
  int node_rank;              /* --node-rank: 0 hosts the rendezvous */
  char rdzv_host[256];        /* --rdzv HOST:PORT: node 0's address, also
                                 the ranks' MASTER_ADDR */
  int rdzv_port;
  double rdzv_last_call;      /* --rdzv-last-call s (2): in the first round,
                                 once MIN nodes are there, how long to wait
                                 for more */
  char conv[24];              /* where the node settings came from: "flags",
                                 "PET_*" (Kubeflow Trainer), "PyTorchJob" */
  /* --elastic-capacity SOURCE (one node only): the job follows the slots
   * the source lists, up to --nproc; --nproc-min defaults to 1 then. */
  gf_cap_kind cap_kind;
  char cap_path[GF_TRAIN_PATH_MAX]; /* the source's file ("" for NONE);
                                       slurm: the job id (SLURM_JOB_ID) */
  double cap_margin; /* --capacity-notice-margin s: slots of a host
                        leaving within this are no longer used (30) */
} gf_launch_opts;

/* Parses argv (argv[0] = "launch") into *o, which borrows argv's strings,
 * then the node settings the flags left unset from the environment read
 * through get (gf_launch_parse_env; get NULL: none).
 * The training flags are parsed with gf_train_parse_args, so a bad one is
 * refused here, before any rank starts. GF_EINVAL with the reason;
 * *help set (and GF_OK) for --help. */
gf_status gf_launch_parse(gf_launch_opts *o, int argc, char **argv,
                          const char *(*get)(void *user, const char *name),
                          void *user, bool *help, gf_err *err);
/* (Called by gf_launch_parse.) Fills the node settings that the flags left
 * unset from a Kubernetes launch's environment, read through get(user,
 * name) (NULL when unset; get NULL reads nothing): Kubeflow Trainer's PET_NNODES (MIN or MIN:MAX),
 * PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT;
 * else PyTorchJob's MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods, one agent
 * each) and RANK (the pod's index), read only when all four are set and
 * WORLD_SIZE > 1. Resolves --nproc auto (PET_NPROC_PER_NODE=auto, the
 * Kubeflow default): with o->train.device cuda[:N], the GPUs visible
 * (CUDA_VISIBLE_DEVICES through get, else the /dev/nvidiaN files: the one
 * read outside get), else 1. Then checks the node settings as a whole
 * (--node-rank below MAX, --rdzv given with --nnodes), --nproc given.
 * GF_EINVAL naming the variable or flag. */
gf_status gf_launch_parse_env(gf_launch_opts *o,
                              const char *(*get)(void *user, const char *name),
                              void *user, gf_err *err);
/* "HOST:PORT" (HOST a name, an IPv4 address or [IPv6]) into host[cap] and
 * *port (1..65535); GF_EINVAL naming `what` otherwise. */
gf_status gf_launch_parse_hostport(const char *what, const char *v, char *host,
                                   size_t cap, int *port, gf_err *err);
void gf_launch_usage(FILE *out);
/* The flag table of `ganflow launch` (gf/flags.h rows over
 * gf_launch_opts; the training flags are ganflow-train's own table,
 * gf_train_flags); static, for the tests that walk it. */
struct gf_flag_table;
const struct gf_flag_table *gf_launch_flags(void);

/* The world size of the next attempt when `avail` slots can run: the
 * largest W <= min(avail, nproc), W >= nproc_min, under which the global
 * batch still splits (--batch, and --exact-shards in exact mode, where W
 * must be a power of two), and *grad_accum the --grad-accum that keeps the
 * micro-batch of nproc ranks (the configured value when that does not
 * divide). GF_ENOTFOUND with the reason when no W qualifies. */
gf_status gf_launch_plan_world(const gf_launch_opts *o, int avail, int *world,
                               int *grad_accum, gf_err *err);

/* With --nnodes: the nodes of the next round when `present` agents are
 * there: the most K <= min(present, MAX), K >= MIN, whose world K x nproc
 * splits the job as gf_launch_plan_world asks (the micro-batch kept is
 * that of MAX nodes); GF_ENOTFOUND with the reason when none does. */
gf_status gf_launch_plan_nodes(const gf_launch_opts *o, int present,
                               int *nodes, int *grad_accum, gf_err *err);

/* The argv of one rank's command for an attempt (NULL-terminated; owned by
 * the caller, free with gf_launch_argv_free; the strings are copies): cmd
 * with --grad-accum set to grad_accum when it differs from the configured
 * value, and --resume auto after a restart (restarted true). */
char **gf_launch_argv(const gf_launch_opts *o, int grad_accum, bool restarted,
                      gf_err *err);
void gf_launch_argv_free(char **argv);

/* ---- elastic capacity (launch/src/launch_capacity.c; pure) ----------------
 *
 * A capacity source is text of lines, '#' to the end of a line a comment:
 *   HOST [slots=N] [leaving=WHEN]
 * HOST a name or address ([A-Za-z0-9._:-], at most GF_CAP_HOST_MAX
 * characters); slots=N, 0..GF_LAUNCH_MAX_RANKS, 1 when absent (as Open
 * MPI); leaving=WHEN (file: only) the spot notice: the host goes at WHEN,
 * Unix seconds or RFC 3339 ("2026-11-26T15:30:00Z", an offset "+02:00",
 * fractions of a second dropped). In a file: source a host appears once
 * and any other key is an error; a hostfile: source ignores the other keys
 * of Open MPI's format (max_slots=...) and may repeat a host. */
typedef struct gf_cap_host {
  char name[GF_CAP_HOST_MAX + 1];
  int slots;        /* 0..GF_LAUNCH_MAX_RANKS */
  int64_t leaving;  /* Unix s when the host goes; -1: no notice */
  int line;         /* its line in the source, from 1 */
} gf_cap_host;

typedef struct gf_capacity {
  gf_cap_host h[GF_CAP_MAX_HOSTS]; /* h[0..n-1], in the source's order */
  int n;
} gf_capacity;

/* Parses text[0..len) (not NUL-terminated; at most GF_CAP_FILE_MAX bytes)
 * into *c; kind is GF_CAP_FILE or GF_CAP_HOSTFILE. GF_EFORMAT with "line
 * N: ..." otherwise (*c then undefined). No allocation. */
gf_status gf_capacity_parse(const char *text, size_t len, gf_cap_kind kind,
                            gf_capacity *c, gf_err *err);
/* The value of KEY=VALUE in a `scontrol show job -o` record of len bytes
 * into out[cap]. GF_EFORMAT when the key is missing or the value does not
 * fit (err may be NULL). */
gf_status gf_slurm_job_value(const char *job, size_t len, const char *key,
                             char *out, size_t cap, gf_err *err);
/* The capacity file text (into out[cap], NUL-terminated) of a Slurm job:
 * its `scontrol show job -o` record and `scontrol show hostnames` of its
 * NodeList. A job not RUNNING has no slots (""); else one line per node,
 * "NAME slots=N[ leaving=T]", the job's NumTasks spread over its NumNodes
 * as Slurm's block distribution does (the first NumTasks % NumNodes nodes
 * one more), T the job's EndTime in Unix seconds (Slurm prints local
 * time; none when Unknown). GF_EFORMAT when a field is missing or not a
 * count, or the names are not NumNodes; pure but for mktime's zone. */
gf_status gf_capacity_from_slurm(const char *job, size_t job_len,
                                 const char *hosts, size_t hosts_len,
                                 char *out, size_t cap, gf_err *err);
/* WHEN of leaving=: decimal Unix seconds (0..1e11) or RFC 3339 (see
 * above) into *unix_s; GF_EFORMAT with the reason otherwise. */
gf_status gf_capacity_parse_when(const char *v, int64_t *unix_s, gf_err *err);
/* Slots of c at Unix time now: *present, of the hosts not gone (no notice,
 * or a deadline still ahead); *usable, of those not leaving within margin
 * seconds. Each total is capped at GF_LAUNCH_MAX_RANKS. */
void gf_capacity_slots(const gf_capacity *c, double now, double margin,
                       int *present, int *usable);

typedef enum gf_cap_act {
  GF_CAP_KEEP = 0, /* the running world fits the capacity */
  GF_CAP_GROW,     /* more usable slots: a planned restart, larger */
  GF_CAP_SHRINK,   /* a notice cuts the usable slots below the running
                      world: checkpoint now, restart smaller */
  GF_CAP_LOST      /* slots went without notice (or past their deadline):
                      the ranks on them are gone, a failure */
} gf_cap_act;

typedef struct gf_cap_plan {
  gf_cap_act act;
  int present, usable; /* gf_capacity_slots */
  int world;      /* the next attempt's world (0: none fits now, wait for
                     capacity); KEEP: the running one (if any) */
  int grad_accum; /* its --grad-accum (gf_launch_plan_world) */
  int64_t deadline; /* SHRINK: the soonest deadline of the notices; -1 */
  char text[400]; /* "2 -> 1 slots: spot notice for host b (1 slot),
                     deadline 2026-11-26T15:30:00Z, in 8 s"; "" for KEEP */
} gf_cap_plan;

/* What the supervisor does when the source says c while `running` ranks
 * run (0: none) at Unix time now; `other` bounds the slots besides the
 * source (local: those not left out after failing to start), prev (NULL:
 * none) is the capacity the running world was planned on, for naming the
 * hosts that went. LOST when present < running; else SHRINK when usable <
 * running; else GROW when gf_launch_plan_world(min(usable, other)) gives
 * a world larger than running; else KEEP. Pure. */
void gf_capacity_plan(const gf_launch_opts *o, const gf_capacity *prev,
                      const gf_capacity *c, int running, int other,
                      double now, gf_cap_plan *p);

/* Supervises the job to its end; returns a GF_LAUNCH_EXIT_* status. Log
 * lines go to `log`. Blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD in the
 * calling thread (it takes them with sigtimedwait); call it from main with
 * no other threads. */
int gf_launch_run(const gf_launch_opts *o, FILE *log);

#endif
