/* clock.h - the clocks of the gf_ libraries: CLOCK_MONOTONIC for durations,
 * timeouts and schedules; CLOCK_REALTIME only for timestamps that leave the
 * process (MLflow metric timestamps, log lines). One place, so that no file
 * keeps a private copy.
 *
 * Not a timer or scheduler: callers wait with their own condition
 * variables, using gf_deadline_after for the absolute time they take. */
#ifndef GF_CLOCK_H
#define GF_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in seconds (double: ns resolution for ~100 days). */
double gf_mono_s(void);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gf_mono_ns(void);
/* CLOCK_REALTIME in milliseconds since the Unix epoch. */
int64_t gf_unix_ms(void);

/* Adds s seconds (s >= 0) to *t, keeping tv_nsec in [0, 1e9). */
void gf_timespec_add(struct timespec *t, double s);
/* 1 when a is strictly before b, else 0. */
int gf_timespec_before(const struct timespec *a, const struct timespec *b);
/* *ts = now on `clock` + s seconds: the absolute time pthread_cond_timedwait
 * takes (CLOCK_REALTIME for a default condvar, CLOCK_MONOTONIC for one whose
 * attribute says so). */
void gf_deadline_after(struct timespec *ts, clockid_t clock, double s);
/* Milliseconds from now until `deadline` (gf_mono_s() seconds), for
 * poll(): 0 once it has passed, at least 1 before it, at most 1e9. */
int gf_ms_left(double deadline);

#endif
