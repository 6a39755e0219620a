/* test_comm_state.c - gf_comm's request checker (comm_req_state_ok in
 * kernels/src/comm/comm.c, gf/invariant.h) fires: a request of a local comm
 * (world 1), corrupted one field at a time (a step past the end, no
 * buffer, a failure without its error, another lane, a step still marked
 * started, a peer outside the world, a bf16 copy of the wrong type), aborts
 * at its next transition (gf_comm_test) with the checker's name on stderr,
 * each in a child of its own; the same request untouched goes through.
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
#include <unistd.h>

#include "comm/comm_impl.h"

typedef enum corruption {
  NONE = 0,
  CUR_PAST_END,
  NO_BUFFER,
  FAILED_WITHOUT_ERROR,
  OTHER_LANE,
  DONE_BUT_STARTED,
  PEER_OUTSIDE,
  BF16_COPY_TYPE,
  N_CORRUPTIONS
} corruption;

static const char *const names[] = {"none",
                                    "cur past the end",
                                    "no buffer",
                                    "failed without its error",
                                    "another lane",
                                    "done but started",
                                    "peer outside the world",
                                    "bf16 copy of the wrong type"};

/* In the child: a finished iallreduce on a local comm, corrupted by `how`,
 * then tested and waited on. Exits 0 when nothing aborted. */
static void child(corruption how) {
  gf_launch_info li;
  memset(&li, 0, sizeof li);
  li.world_size = 1;
  li.local_world_size = 1;
  strcpy(li.launcher, "none");
  strcpy(li.hostname, "here");
  gf_comm_config cfg = {GF_COMM_LOCAL, GF_ALLREDUCE_ENGINE, 5.0, NULL, &li};
  gf_comm *c = NULL;
  gf_err e = {0};
  if (gf_comm_init(&c, &cfg, &e) != GF_OK) _exit(10);
  float x[4] = {1, 2, 3, 4};
  gf_comm_dtype dt = how == BF16_COPY_TYPE ? GF_CDT_F32_AS_BF16 : GF_CDT_F32;
  int h = -1, done = 0;
  if (gf_comm_iallreduce(c, x, 4, dt, GF_RED_SUM, &h, &e) != GF_OK) _exit(11);
  gf_comm_req *r = &c->reqs[h % 128];
  switch (how) {
  case CUR_PAST_END: r->cur = r->nsteps + 1; break;
  case NO_BUFFER: r->buf = NULL; break;
  case FAILED_WITHOUT_ERROR: r->failed = GF_EIO; break;
  case OTHER_LANE: r->lane = 3; break;
  case DONE_BUT_STARTED: r->started = 1; break;
  case PEER_OUTSIDE: r->steps[0].peer = 5; break;
  case BF16_COPY_TYPE: r->wdt = GF_CDT_F32; break;
  default: break;
  }
  if (gf_comm_test(c, h, &done, &e) != GF_OK || !done) _exit(12);
  if (gf_comm_wait(c, h, &e) != GF_OK) _exit(13);
  gf_comm_free(c);
  _exit(0);
}

static void child_of(void *how) { child(*(const corruption *)how); }

/* child(how) in a child of its own: its wait status, its stderr in out. */
static int run(corruption how, char *out, size_t cap) {
  return tu_fork_capture(child_of, &how, out, cap);
}

int main(void) {
  char err[4096];
  int ws = run(NONE, err, sizeof err);
  CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "untouched: status %#x: %s", ws,
         err);
  for (int how = NONE + 1; how < N_CORRUPTIONS; how++) {
    ws = run((corruption)how, err, sizeof err);
    CHECKF(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT,
           "%s: not aborted (status %#x): %s", names[how], ws, err);
    CHECKF(strstr(err, "state check failed: comm_req_state_ok") != NULL,
           "%s: %s", names[how], err);
  }
  return check_report();
}
#endif
