/* wait_util.h - waiting for an event instead of sleeping and hoping: a
 * CLOCK_MONOTONIC deadline, a poll of a condition against it, a wait for
 * a file descriptor, and marks that processes of one test leave for each
 * other in a shared folder ("rank 2 timed out") and wait for. A test waits
 * on the state it needs and fails, naming that state, when the deadline
 * passes; where it checks that something does NOT happen, the deadline is
 * a bounded window tied to what the code under test promises, and the test
 * asserts an observable state at its end.
 * Test code only (it may exit); not for the libraries. */
#ifndef GF_TEST_WAIT_UTIL_H
#define GF_TEST_WAIT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* CLOCK_MONOTONIC in seconds. */
static inline double tu_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleeps s seconds (restarted after a signal). Only for the pause between
 * two checks of a real condition, never to let something happen. */
static inline void tu_pause_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A point in CLOCK_MONOTONIC time; end is in seconds (tu_mono_s). */
typedef struct tu_deadline {
  double end;
} tu_deadline;

static inline tu_deadline tu_deadline_in(double s) {
  tu_deadline d = {tu_mono_s() + s};
  return d;
}
static inline int tu_deadline_passed(const tu_deadline *d) {
  return tu_mono_s() >= d->end;
}
/* Seconds left, 0 once passed. */
static inline double tu_deadline_left(const tu_deadline *d) {
  double left = d->end - tu_mono_s();
  return left > 0 ? left : 0;
}

/* Checks cond(arg) until it returns non-zero or timeout_s pass, pausing
 * poll_s between checks; the condition is checked once more at the
 * deadline, so a state reached just then counts. Returns 1 when it held, 0
 * when the deadline passed without it. */
typedef int (*tu_cond_fn)(void *arg);
static inline int tu_wait_for(tu_cond_fn cond, void *arg, double timeout_s,
                              double poll_s) {
  tu_deadline d = tu_deadline_in(timeout_s);
  for (;;) {
    if (cond(arg)) return 1;
    if (tu_deadline_passed(&d)) return cond(arg) != 0;
    double left = tu_deadline_left(&d);
    tu_pause_s(poll_s < left ? poll_s : left);
  }
}

/* Waits until fd reports `events` (POLLIN, POLLOUT) or timeout_s pass;
 * returns the revents, 0 at the deadline. */
static inline int tu_wait_fd(int fd, short events, double timeout_s) {
  tu_deadline d = tu_deadline_in(timeout_s);
  for (;;) {
    struct pollfd pf = {fd, events, 0};
    double left = tu_deadline_left(&d);
    int ms = (int)(left * 1000.0) + (left > 0);
    int pr = poll(&pf, 1, ms);
    if (pr > 0) return pf.revents;
    if (pr < 0 && errno != EINTR) return 0;
    if (tu_deadline_passed(&d)) return 0;
  }
}

/* ---- marks: events between processes of one test ---------------------
 * A mark is an empty file DIR/NAME.ID, made once its event has happened;
 * the other processes wait until the ids they need are all there. */

/* Leaves mark name.id in dir. */
static inline void tu_mark(const char *dir, const char *name, int id) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%d", dir, name, id);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  close(fd);
}

static inline int tu_has_mark(const char *dir, const char *name, int id) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%d", dir, name, id);
  return access(path, F_OK) == 0;
}

/* Waits until marks name.id exist for every id in [0, n) except `skip`
 * (-1: none), checking every 2 ms. Returns 1, or 0 at the deadline after
 * printing which ids are missing (the caller turns that into a failure). */
static inline int tu_wait_marks(const char *dir, const char *name, int n,
                                int skip, double timeout_s) {
  tu_deadline d = tu_deadline_in(timeout_s);
  for (;;) {
    int missing = 0;
    for (int i = 0; i < n; i++)
      missing += i != skip && !tu_has_mark(dir, name, i);
    if (!missing) return 1;
    if (tu_deadline_passed(&d)) break;
    tu_pause_s(0.002);
  }
  fprintf(stderr, "no mark \"%s\" within %.3g s from:", name, timeout_s);
  for (int i = 0; i < n; i++)
    if (i != skip && !tu_has_mark(dir, name, i)) fprintf(stderr, " %d", i);
  fputc('\n', stderr);
  return 0;
}

#endif
