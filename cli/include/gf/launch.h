/* launch.h - `ganflow launch`, the supervisor of a multi-rank ganflow-train
 * job (DESIGN §4.6):
 *
 *   ganflow launch --nproc N [--nproc-min M] [--max-restarts R]
 *                  [--hang-timeout S] [--start-timeout S]
 *                  [--launcher local|mpirun|srun] [--heartbeat-dir DIR]
 *                  [--hostfile FILE] [--launcher-arg ARG]...
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
 * The parsing and planning functions are pure and unit-tested; gf_launch_run
 * forks, waits and signals, and is tested end to end (tests/trainer). */
#ifndef GF_LAUNCH_H
#define GF_LAUNCH_H

#include <stdbool.h>
#include <stdio.h>

#include "gf/status.h"
#include "gf/train.h"

#define GF_LAUNCH_MAX_RANKS 256
#define GF_LAUNCH_MAX_LARGS 32

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
} gf_launch_opts;

/* Parses argv (argv[0] = "launch") into *o, which borrows argv's strings.
 * The training flags are parsed with gf_train_parse_args, so a bad one is
 * refused here, before any rank starts. GF_EINVAL with the reason;
 * *help set (and GF_OK) for --help. */
gf_status gf_launch_parse(gf_launch_opts *o, int argc, char **argv,
                          bool *help, gf_err *err);
void gf_launch_usage(FILE *out);

/* The world size of the next attempt when `avail` slots can run: the
 * largest W <= min(avail, nproc), W >= nproc_min, under which the global
 * batch still splits (--batch, and --exact-shards in exact mode, where W
 * must be a power of two), and *grad_accum the --grad-accum that keeps the
 * micro-batch of nproc ranks (the configured value when that does not
 * divide). GF_ENOTFOUND with the reason when no W qualifies. */
gf_status gf_launch_plan_world(const gf_launch_opts *o, int avail, int *world,
                               int *grad_accum, gf_err *err);

/* The argv of one rank's command for an attempt (NULL-terminated; owned by
 * the caller, free with gf_launch_argv_free; the strings are copies): cmd
 * with --grad-accum set to grad_accum when it differs from the configured
 * value, and --resume auto after a restart (restarted true). */
char **gf_launch_argv(const gf_launch_opts *o, int grad_accum, bool restarted,
                      gf_err *err);
void gf_launch_argv_free(char **argv);

/* Supervises the job to its end; returns a GF_LAUNCH_EXIT_* status. Log
 * lines go to `log`. Blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD in the
 * calling thread (it takes them with sigtimedwait); call it from main with
 * no other threads. */
int gf_launch_run(const gf_launch_opts *o, FILE *log);

#endif
