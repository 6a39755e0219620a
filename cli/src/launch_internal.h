/* launch_internal.h - private to cli/src/launch_*.c: one attempt of a
 * supervised job (its processes and what their heartbeats said) and the
 * process primitives of launch_proc.c. */
#ifndef GF_LAUNCH_INTERNAL_H
#define GF_LAUNCH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gf/heartbeat.h"
#include "gf/launch.h"

/* One rank of an attempt as the supervisor sees it. */
typedef struct launch_rank {
  pid_t pid;             /* local launcher: the rank's process; else 0 */
  int slot;              /* local: the slot it runs in (0..nproc-1) */
  bool exited;           /* reaped */
  int status;            /* waitpid status once exited */
  gf_heartbeat_rec hb;   /* newest heartbeat read (have_hb) */
  bool have_hb;
  double t_change;       /* gf_mono_s() when hb.seq last changed (or the
                            attempt's start) */
  bool trained;          /* a beat in TRAIN or later was seen */
} launch_rank;

/* One start of the job. */
typedef struct launch_attempt {
  int world;             /* ranks */
  int grad_accum;        /* --grad-accum given to them */
  int port;              /* MASTER_PORT */
  char master[256];      /* MASTER_ADDR */
  launch_rank r[GF_LAUNCH_MAX_RANKS];
  pid_t launcher_pid;    /* mpirun/srun: the launcher process; else 0 */
  bool launcher_exited;
  int launcher_status;
  pid_t pgid;            /* process group of every process started */
  double t_start;        /* gf_mono_s() at the start */
} launch_attempt;

/* ---- launch_proc.c ---------------------------------------------------- */
/* A TCP port free on this host right now (bind to 0; the kernel's pick). */
gf_status launch_free_port(int *port, gf_err *err);
/* mkdir -p dir, then removes its rank-*.hb files (an earlier attempt's). */
gf_status launch_prepare_hb_dir(const char *dir, gf_err *err);
/* Starts the attempt's processes: local, one per slot in a->r[i].slot;
 * mpirun/srun, the launcher. argv is the rank command (NULL-terminated);
 * restarts is the count so far (GANFLOW_RESTART in their environment).
 * Every process is put in one new process group (a->pgid) and gets
 * SIGKILL when the supervisor dies (PR_SET_PDEATHSIG). On failure, what
 * started is killed and reaped. */
gf_status launch_spawn(const gf_launch_opts *o, launch_attempt *a,
                       char **argv, int restarts, gf_err *err);
/* Reaps what has exited, without blocking. */
void launch_reap(launch_attempt *a);
/* Sends sig to every process of the attempt still running (the group, the
 * local ranks and, for ranks known only by heartbeat, their pids when they
 * run on this host). */
void launch_signal(launch_attempt *a, int sig);
/* Asks the ranks to stop (SIGTERM: they checkpoint at the next step).
 * local: the ranks themselves. mpirun: the ranks on this host by their
 * heartbeats (mpirun would turn a SIGTERM into a kill after a few
 * seconds), mpirun when none is known. srun: `scancel --signal=TERM
 * $SLURM_JOB_ID`, which reaches the job's steps but not the batch script
 * (srun itself ends the step when signalled). */
void launch_signal_stop(const gf_launch_opts *o, launch_attempt *a);
/* SIGKILL to everything, then reaps it all (blocking; SIGKILL also ends a
 * stopped process). */
void launch_kill_all(launch_attempt *a);
/* The number of slots in an Open MPI host file ("host slots=N" lines; a
 * host without slots= counts 1); GF_EIO / GF_EFORMAT with the reason. */
gf_status launch_hostfile_slots(const char *path, int *slots, gf_err *err);
/* "exited with status 3", "was killed by signal 9 (Killed)" (just "was
 * killed by signal 9" when the C library's name would not fit) into
 * out[cap], cap >= LAUNCH_STATUS_MIN. */
#define LAUNCH_STATUS_MIN 48
void launch_describe_status(int status, char *out, size_t cap);
/* Whether /proc says pid is stopped (state T). */
bool launch_pid_stopped(pid_t pid);
/* mpirun/srun: a rank of this host (by its heartbeat) whose process is gone
 * although its last beat was not the end of its work (finish, done,
 * stopped): the index of the first, or -1. Found before the launcher
 * notices (mpirun takes about 2 s to exit after a rank died). */
int launch_find_vanished(const launch_attempt *a);

#endif
