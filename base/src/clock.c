/* clock.c - monotonic and wall clocks; see gf/clock.h. */
#include "gf/clock.h"

double gf_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t gf_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t gf_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gf_timespec_add(struct timespec *t, double s) {
  time_t whole = (time_t)s;
  long frac = (long)((s - (double)whole) * 1e9);
  t->tv_sec += whole;
  t->tv_nsec += frac;
  while (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

int gf_timespec_before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec ||
         (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

void gf_deadline_after(struct timespec *ts, clockid_t clock, double s) {
  clock_gettime(clock, ts);
  gf_timespec_add(ts, s);
}

int gf_ms_left(double deadline) {
  double left = deadline - gf_mono_s();
  if (left <= 0) return 0;
  return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}
