/* launch_internal.h - private to launch/src/launch_*.c: one attempt of a
 * supervised job (its processes and what their heartbeats said) and the
 * process primitives of launch_proc.c. */
#ifndef GF_LAUNCH_INTERNAL_H
#define GF_LAUNCH_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gf/heartbeat.h"
#include "gf/launch.h"
#include "mlflow/mlflow.h"

#define LAUNCH_MAX_EVENTS 64

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

/* Where an attempt is (launch_attempt_state_ok checks the rest against it).
 * launch_proc.c moves it: launch_spawn PLANNED -> RUNNING, launch_reap and
 * launch_kill_all RUNNING -> ENDED. */
typedef enum launch_attempt_state {
  ATTEMPT_PLANNED = 0, /* filled in (world, slots, port), nothing started:
                          no pid, no process group */
  ATTEMPT_RUNNING,     /* started (pgid > 0): local, every rank's pid; else
                          the launcher's alone; one of them not reaped */
  ATTEMPT_ENDED        /* every process started has been reaped */
} launch_attempt_state;

/* One start of the job (on a node agent: this node's ranks of a round). */
typedef struct launch_attempt {
  launch_attempt_state state; /* see above */
  bool local;            /* its ranks are this process's children (the
                            local launcher; set by launch_spawn); else one
                            launcher process (mpirun, srun) */
  int restarts;          /* restarts before it (the GANFLOW_RESTART its
                            processes got), >= 0 */
  int world;             /* ranks started here (a->r[0..world-1]) */
  int rank_base;         /* the world rank of a->r[0] (node agents) */
  int global_world;      /* WORLD_SIZE of the job (world on one node) */
  const char *hb_dir;    /* where these ranks beat (borrowed) */
  int grad_accum;        /* --grad-accum given to them */
  int port;              /* MASTER_PORT */
  char master[256];      /* MASTER_ADDR */
  launch_rank r[GF_LAUNCH_MAX_RANKS];
  pid_t launcher_pid;    /* mpirun/srun: the launcher process; else 0 */
  bool launcher_exited;
  int launcher_status;
  const char *hostfile;  /* mpirun: the host file to pass (borrowed; NULL:
                            --hostfile's, if any) */
  pid_t pgid;            /* process group of every process started */
  double t_start;        /* gf_mono_s() at the start */
} launch_attempt;

/* How an attempt (or, on a node agent, its part of a round) ended. */
typedef enum end_kind {
  END_DONE = 0,  /* training finished, model logged */
  END_STOPPED,   /* a signal was passed on; the ranks checkpointed */
  END_ABORTED,   /* a second signal: the ranks were killed */
  END_USAGE,     /* the ranks refused their configuration */
  END_FAILED,    /* a rank died, hung or could not start */
  END_PEER,      /* node agent: the rendezvous ended the round (another
                    node failed, or the world changes) */
  END_RESIZE     /* --elastic-capacity: the ranks checkpointed and stopped
                    for a planned change of the world (not a failure) */
} end_kind;

typedef struct outcome {
  end_kind end;
  char cause[512];
  int start_slot; /* END_FAILED: the slot that could not start, or -1 */
  double t_seen;  /* monotonic s when the failure was seen */
} outcome;

/* A restart goes to the run as restart number base + n (base: the
 * restarts the run held before this supervisor, from MLflow): tag
 * ganflow.restart.<number>, and sys/restarts = number and
 * sys/restart_recovery_s at step <number>. The number, not the step resumed
 * from, is the metrics' step: two restarts may resume from one checkpoint,
 * and each (key, step) of a run is logged once (DESIGN §4.4). */
typedef struct restart_event {
  int n;              /* 1, 2, ... within this supervisor */
  int64_t step;       /* the step the next attempt resumes from */
  char text[700];     /* cause, world sizes, step */
  bool logged;        /* sent to MLflow */
  double recovery_s;  /* failure to the first new step; < 0 until seen */
  bool recovery_logged;
} restart_event;

/* A change of the job's capacity (--elastic-capacity): tag
 * ganflow.capacity.<number> (number = cap_base + n) with its text. */
typedef struct capacity_event {
  int n;              /* 1, 2, ... within this supervisor */
  char text[480];     /* gf_cap_plan's text and what was done */
  bool logged;
} capacity_event;

/* A point of sys/world_size: an attempt's world at the step it started
 * from, sent once the attempt completed a step (an attempt that trained
 * none changed nothing), and only when the world differs from the last
 * point sent. */
typedef struct world_point {
  int64_t step;
  int world;
  bool logged;
} world_point;

typedef struct launch_sup {
  const gf_launch_opts *o;
  FILE *log;
  sigset_t sigs;
  int signals;        /* SIGTERM/SIGINT/SIGHUP received */
  bool slot_down[GF_LAUNCH_MAX_RANKS];
  int restarts;
  char run_id[GF_HB_RUN_MAX + 1]; /* the MLflow run, once known */
  mlflow_client *mc;  /* NULL until first needed (or when it cannot be) */
  bool mc_tried;
  bool tagged;        /* ganflow.launch set on the run */
  int base;           /* restarts the run held before ours; -1 unread */
  restart_event ev[LAUNCH_MAX_EVENTS];
  int n_ev;
  /* recovery timing of the current attempt */
  bool awaiting;      /* a restart whose first new step is not seen yet */
  double t_fail;      /* monotonic s the failure was seen */
  int64_t resume_step;
  /* sys/world_size of the current attempt */
  bool ws_pending;    /* its first step not seen yet */
  int ws_world;       /* its world */
  int64_t ws_from;    /* the step it started from */
  int ws_last;        /* the last point's world; 0 none */
  int64_t ws_last_step; /* the last point's step (when ws_last) */
  world_point ws[LAUNCH_MAX_EVENTS];
  int n_ws;
  /* --elastic-capacity (launch_run.c; NULL and unused without it) */
  gf_capacity *cap;         /* the last good capacity read (owned) */
  gf_capacity *cap_next;    /* scratch of a read (owned) */
  gf_capacity *cap_planned; /* the capacity the running attempt was planned
                               on (owned) */
  char *cap_text;           /* the last good source's bytes (owned,
                               GF_CAP_FILE_MAX + 1) */
  size_t cap_len;
  char *cap_buf;            /* scratch of a read, as cap_text */
  bool cap_bad;             /* the last read failed (said once) */
  double t_cap_read;        /* gf_mono_s() of the last read */
  bool cap_stopping;        /* SIGTERM sent for a planned change */
  int64_t cap_deadline;     /* that change's notice deadline (Unix s); -1 */
  char cap_hosts[GF_PATH_MAX]; /* mpirun: the host file written for it */
  char cap_why[400];        /* that change's gf_cap_plan text */
  int cap_base;             /* capacity changes the run held before ours;
                               -1 unread */
  capacity_event cev[LAUNCH_MAX_EVENTS];
  int n_cev;
  int n_cap;                /* capacity events made so far */
} launch_sup;


/* ---- launch_events.c (the run and the log) ---------------------------- */
/* Sets up a zeroed *s for options o and log lines to `log`, and blocks
 * SIGTERM, SIGINT, SIGHUP and SIGCHLD in the calling thread (taken with
 * sigtimedwait on s->sigs). */
void launch_sup_init(launch_sup *s, const gf_launch_opts *o, FILE *log);
void launch_say(launch_sup *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *launch_launcher_name(gf_launcher l);
/* Keeps id (a checkpoint's, a heartbeat's) as the run's id. */
void launch_keep_run_id(launch_sup *s, const char *id);
/* The run id from the newest good checkpoint, else <ckpt-dir>/run_id. */
void launch_find_run_id(launch_sup *s);
/* Sends the run what it lacks: the launch tag, restart events, recovery
 * times; failures are logged and retried at the next call. */
void launch_flush_events(launch_sup *s);
void launch_set_run_id(launch_sup *s, const char *id);
/* The run's end in MLflow when the ranks could not set it. */
void launch_end_run(launch_sup *s, mlflow_run_status st, const char *reason);
/* A new restart event (number s->restarts, resuming from `from`) with its
 * text; the oldest slot is reused past LAUNCH_MAX_EVENTS. */
restart_event *launch_add_event(launch_sup *s, int64_t from);
/* A new capacity event with `text` (cut to fit); the oldest slot is reused
 * past LAUNCH_MAX_EVENTS. */
void launch_add_capacity_event(launch_sup *s, const char *text);
/* A sys/world_size point (kept when world differs from the last one; at
 * the last point's step + 1 when step is not past it). */
void launch_add_world_point(launch_sup *s, int64_t step, int world);
/* The step the next attempt resumes from: the newest good checkpoint's (0
 * without one), whose run id is kept when none is known yet. */
int64_t launch_resume_step(launch_sup *s);

/* ---- launch_watch.c (watching an attempt) ----------------------------- */
/* Reads the attempt's heartbeats; rank 0's gives the run id and the
 * recovery time after a restart. */
void launch_read_beats(launch_sup *s, launch_attempt *a, double now);
/* A rank that exited with an error (local) or the launcher's failure. */
bool launch_find_exit_failure(const gf_launch_opts *o, launch_attempt *a,
                              outcome *out);
/* No running rank beat within its phase's limit. */
bool launch_find_hang(const gf_launch_opts *o, launch_attempt *a, double now,
                      outcome *out);
/* Every rank (or the launcher) exited 0. */
bool launch_all_clean(const gf_launch_opts *o, const launch_attempt *a);
/* Done, stopped or failed, by rank 0's last beat (or, on a node without
 * rank 0, done). */
void launch_classify_clean_end(launch_sup *s, const launch_attempt *a,
                               outcome *out);

/* ---- launch_rdzv.c (the rendezvous' wire) ---------------------------- */
#define RDZV_LINE 640 /* bytes of a line, '\n' included */
/* One connection: lines queued out and read in, non-blocking. */
typedef struct rdzv_conn {
  int fd;             /* -1: none */
  char in[2 * RDZV_LINE];
  size_t nin;
  char out[16 * RDZV_LINE];
  size_t nout;
  double t_heard;     /* gf_mono_s() when bytes last came in */
} rdzv_conn;
void rdzv_init(rdzv_conn *c);
void rdzv_close(rdzv_conn *c); /* then as rdzv_init left it */
/* Listens on port, every address (IPv6 and IPv4); *fd non-blocking. */
gf_status rdzv_listen(int port, int *fd, gf_err *err);
/* An accepted connection's fd (non-blocking), or -1 when none waits. */
int rdzv_accept(int lfd);
/* Connects c to host:port within timeout_s. */
gf_status rdzv_dial(rdzv_conn *c, const char *host, int port,
                    double timeout_s, gf_err *err);
/* Queues one line (printf-style; newlines in it become spaces; cut to
 * RDZV_LINE) and writes what it can; false when the connection is broken
 * or its peer has not read 16 lines. */
bool rdzv_send(rdzv_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes what is queued and reads what came; 0, or -1 when the connection
 * ended or broke (then rdzv_close it). */
int rdzv_pump(rdzv_conn *c, double now);
/* Takes the next whole line (without '\n', cut to cap) into line. */
bool rdzv_line(rdzv_conn *c, char *line, size_t cap);

/* One line of the rendezvous, parsed (the messages: launch_node.c). */
typedef enum rdzv_kind {
  RDZV_HELLO, RDZV_BEAT, RDZV_FAIL, RDZV_IDLE, RDZV_ENDED, /* agent -> 0 */
  RDZV_GO, RDZV_WAIT, RDZV_STOP, RDZV_DRAIN, RDZV_EXIT, RDZV_PING
} rdzv_kind;
/* ENDED: rank 0 finished / was stopped; no rank 0 here and every rank
 * exited 0; a rank refused the configuration (exit 2: no restart helps) */
enum { RDZV_END_DONE = 1, RDZV_END_STOPPED, RDZV_END_OK, RDZV_END_USAGE };
typedef struct rdzv_msg {
  rdzv_kind kind;
  int round;               /* every kind but HELLO, BEAT, EXIT, PING */
  int node, nproc;         /* HELLO */
  char host[64];           /* HELLO: no spaces */
  int world, base, ga, port, resume; /* GO */
  int ended;               /* ENDED: RDZV_END_* */
  int at_start;            /* FAIL: 1 "start" (before training), 0 "train" */
  int code;                /* EXIT: the exit status, 0..255 */
  char text[RDZV_LINE];    /* FAIL, STOP, EXIT: the rest of the line */
} rdzv_msg;
/* Parses one line (outside input: every field checked; numbers are
 * decimal, non-negative and below 2^31 and the GO fields consistent).
 * GF_EFORMAT with the reason otherwise. No allocation. */
gf_status rdzv_parse(const char *line, rdzv_msg *m, gf_err *err);

/* ---- launch_capacity.c (the source) ---------------------------------- */
/* Reads o->cap_path into text[GF_CAP_FILE_MAX + 1] (*len bytes) and parses
 * it into *c; GF_EIO (cannot read) or GF_EFORMAT (too big, bad line) with
 * the reason naming the file. */
gf_status launch_capacity_read(const gf_launch_opts *o, gf_capacity *c,
                               char *text, size_t *len, gf_err *err);
/* Writes an Open MPI host file of c's hosts that are usable at Unix time
 * now (not leaving within margin) to path, atomically. */
gf_status launch_capacity_hostfile(const gf_capacity *c, double now,
                                   double margin, const char *path,
                                   gf_err *err);

/* Allocates the capacity of s and reads the source the first time;
 * GF_EIO / GF_EFORMAT (a usage error at start) with the reason. */
gf_status launch_capacity_start(launch_sup *s, gf_err *err);
void launch_capacity_free(launch_sup *s);
/* Reads the source again; the slots the next attempt may use:
 * min(usable, other). */
int launch_capacity_avail(launch_sup *s, int other);
/* At an attempt's start: the capacity it is planned on; mpirun gets a host
 * file of the usable hosts (a->hostfile). */
gf_status launch_capacity_begin(launch_sup *s, launch_attempt *a,
                                gf_err *err);
/* Each poll of an attempt (every 0.5 s it reads the source and plans):
 * slots gone kill the ranks on them and the attempt (true, *out a failure
 * naming the capacity); a notice or, once training runs, more slots ask
 * the ranks to checkpoint and stop (s->cap_stopping; the attempt then ends
 * END_RESIZE). */
bool launch_capacity_watch(launch_sup *s, launch_attempt *a, int other,
                           outcome *out);
/* After an END_RESIZE: the capacity event, naming the checkpoint's step
 * and the time left before the notice's deadline. */
void launch_capacity_resized(launch_sup *s, int64_t step);
/* No world fits the capacity: waits (polling the source) up to
 * --start-timeout for one; false when none came (*stopped: a signal came
 * first). */
bool launch_capacity_wait(launch_sup *s, int other, int *world, int *ga,
                          bool *stopped, gf_err *err);

/* ---- launch_slurm.c ---------------------------------------------------- */
/* The allocation of Slurm job job_id as capacity text into text[cap]
 * (*len bytes): runs `scontrol show job -o` and `scontrol show hostnames`
 * (each at most 10 s) and gf_capacity_from_slurm. GF_EIO when scontrol
 * cannot run or fails, GF_EFORMAT when its answer does not parse. */
gf_status launch_slurm_read(const char *job_id, char *text, size_t cap,
                            size_t *len, gf_err *err);

/* ---- launch_node.c ---------------------------------------------------- */
/* gf_launch_run with --nnodes: this node's agent (and, on node 0, the
 * rendezvous). */
int launch_node_run(const gf_launch_opts *o, FILE *log);

/* ---- launch_proc.c ---------------------------------------------------- */
/* A TCP port free on this host right now (bind to 0; the kernel's pick). */
gf_status launch_free_port(int *port, gf_err *err);
/* mkdir -p dir, then removes its rank-*.hb files (an earlier attempt's). */
gf_status launch_prepare_hb_dir(const char *dir, gf_err *err);
/* Starts the attempt's processes (a PLANNED attempt; RUNNING after):
 * local, one per slot in a->r[i].slot; mpirun/srun, the launcher. argv is
 * the rank command (NULL-terminated); restarts is the count so far
 * (a->restarts, GANFLOW_RESTART in their environment).
 * Every process is put in one new process group (a->pgid) and gets
 * SIGKILL when the supervisor dies (PR_SET_PDEATHSIG). On failure, what
 * started is killed and reaped. */
gf_status launch_spawn(const gf_launch_opts *o, launch_attempt *a,
                       char **argv, int restarts, gf_err *err);
/* Reaps what has exited, without blocking (ENDED once all is). */
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
 * (srun itself ends the step when signalled); when scancel fails or takes
 * over 5 s (Slurm will not alter a job it is requeueing), the ranks on this
 * host. */
void launch_signal_stop(const gf_launch_opts *o, launch_attempt *a);
/* SIGKILL to everything, then reaps it all (blocking; SIGKILL also ends a
 * stopped process): ENDED, when anything had started. */
void launch_kill_all(launch_attempt *a);
#if defined(GF_STATE_CHECKS)
/* The attempt's checker (gf/invariant.h): 1 when its fields agree with its
 * state: world, first rank and WORLD_SIZE in range, distinct slots,
 * restarts >= 0, and per state the pids, the process group and the exit
 * statuses (a status only once reaped, a reaped process only with a pid).
 * Called at each transition (launch_proc.c) and by the supervisors. */
int launch_attempt_state_ok(const launch_attempt *a);
#endif
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
