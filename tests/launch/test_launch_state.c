/* test_launch_state.c - the launch attempt's checker
 * (launch_attempt_state_ok in launch/src/launch_proc.c, gf/invariant.h)
 * fires: an attempt of two running ranks (two real child processes that
 * sleep), corrupted one field at a time (a rank without its pid, an exit
 * status on a rank not reaped, a reaped rank without a pid, no rank at all,
 * ranks past WORLD_SIZE, a negative restart count, two ranks on one slot,
 * a launcher pid beside local ranks, an ended attempt with a rank not
 * reaped), aborts at its next transition (launch_reap) with the checker's
 * name on stderr, each in a child of its own; the attempt untouched goes
 * through, and so do its reap and kill.
 *
 * The checkers exist only where GF_STATE_CHECKS is defined (Debug and the
 * sanitizer build); elsewhere this says so and passes. */
#include <stdio.h>

#include "check.h"
#include "proc_util.h"

#if !defined(GF_STATE_CHECKS)
STATE_CHECKS_OFF_MAIN()
#else
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "launch_internal.h"

typedef enum corruption {
  NONE = 0,
  PID_LOST,
  STATUS_NOT_REAPED,
  REAPED_WITHOUT_PID,
  NO_RANKS,
  PAST_WORLD_SIZE,
  NEGATIVE_RESTARTS,
  SLOT_TWICE,
  LAUNCHER_BESIDE_LOCAL,
  ENDED_NOT_REAPED,
  N_CORRUPTIONS
} corruption;

static const char *const names[] = {"none",
                                    "a rank without its pid",
                                    "a status not reaped",
                                    "reaped without a pid",
                                    "no ranks",
                                    "ranks past WORLD_SIZE",
                                    "negative restarts",
                                    "one slot twice",
                                    "a launcher beside local ranks",
                                    "ended with a rank not reaped"};

/* A child that sleeps until it is killed (at most 60 s). */
static pid_t sleeper(void) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct timespec ts = {60, 0};
    nanosleep(&ts, NULL);
    _exit(0);
  }
  return pid;
}

/* A RUNNING attempt of the local launcher over pids a and b. */
static void running(launch_attempt *at, pid_t a, pid_t b) {
  memset(at, 0, sizeof *at);
  at->world = 2;
  at->global_world = 2;
  at->grad_accum = 1;
  at->hb_dir = "hb";
  at->port = 29500;
  strcpy(at->master, "127.0.0.1");
  at->r[0].slot = 0;
  at->r[1].slot = 1;
  at->r[0].pid = a;
  at->r[1].pid = b;
  at->pgid = a;
  at->t_start = gf_mono_s();
  at->local = true;
  at->state = ATTEMPT_RUNNING;
}

/* In the child: the attempt corrupted by `how`, then reaped. The pids are
 * the parent's children: this process reaps none of them. */
static void child(launch_attempt *at, corruption how) {
  switch (how) {
  case PID_LOST: at->r[1].pid = 0; break;
  case STATUS_NOT_REAPED: at->r[0].status = 9; break;
  case REAPED_WITHOUT_PID:
    at->r[1].pid = 0;
    at->r[1].exited = true;
    break;
  case NO_RANKS: at->world = 0; break;
  case PAST_WORLD_SIZE: at->rank_base = 1; break;
  case NEGATIVE_RESTARTS: at->restarts = -1; break;
  case SLOT_TWICE: at->r[1].slot = 0; break;
  case LAUNCHER_BESIDE_LOCAL: at->launcher_pid = at->r[0].pid; break;
  case ENDED_NOT_REAPED: at->state = ATTEMPT_ENDED; break;
  default: break;
  }
  launch_reap(at);
  _exit(0);
}

typedef struct job {
  launch_attempt *at;
  corruption how;
} job;

static void child_of(void *j) { child(((job *)j)->at, ((job *)j)->how); }

/* child(at, how) in a child of its own: its wait status, its stderr. */
static int run(launch_attempt *at, corruption how, char *out, size_t cap) {
  job j = {at, how};
  return tu_fork_capture(child_of, &j, out, cap);
}

int main(void) {
  launch_attempt *at = calloc(1, sizeof *at);
  REQUIRE(at);
  pid_t a = sleeper(), b = sleeper();
  char err[4096];
  for (int how = NONE; how < N_CORRUPTIONS; how++) {
    running(at, a, b);
    int ws = run(at, (corruption)how, err, sizeof err);
    if (how == NONE) {
      CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "untouched: status %#x: %s",
             ws, err);
      continue;
    }
    CHECKF(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT,
           "%s: not aborted (status %#x): %s", names[how], ws, err);
    CHECKF(strstr(err, "state check failed") &&
               strstr(err, "launch_attempt_state_ok"),
           "%s: %s", names[how], err);
  }
  /* here, untouched: reaped while they run, then killed and reaped */
  running(at, a, b);
  launch_reap(at);
  CHECK(at->state == ATTEMPT_RUNNING);
  launch_kill_all(at);
  CHECK(at->state == ATTEMPT_ENDED);
  CHECK(at->r[0].exited && at->r[1].exited);
  CHECK(WIFSIGNALED(at->r[0].status) && WTERMSIG(at->r[0].status) == SIGKILL);
  free(at);
  return check_report();
}
#endif
