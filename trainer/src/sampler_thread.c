/* sampler_thread.c - the periodic sampler thread shared by the energy meter
 * and the resource monitor (sampler_thread.h). Not for: what is sampled. */
#include "sampler_thread.h"

#include <errno.h>
#include <time.h>

#include "gf/clock.h"

int gf_sampler_init(gf_sampler_thread *s, double interval_s) {
  s->interval_s = interval_s;
  s->tick = NULL;
  s->user = NULL;
  s->thread_started = 0;
  s->stopping = 0;
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);
  if (rc == 0) {
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
  }
  if (rc == 0) {
    rc = pthread_mutex_init(&s->lock, NULL);
    if (rc != 0) pthread_cond_destroy(&s->wake);
  }
  return rc;
}

static void *sampler_main(void *arg) {
  gf_sampler_thread *s = arg;
  struct timespec next, now;
  gf_deadline_after(&next, CLOCK_MONOTONIC, s->interval_s);
  pthread_mutex_lock(&s->lock);
  while (!s->stopping) {
    int rc = pthread_cond_timedwait(&s->wake, &s->lock, &next);
    if (s->stopping) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (rc != ETIMEDOUT && gf_timespec_before(&now, &next))
      continue; /* spurious */
    s->tick(s->user);
    /* Keep the schedule (no drift); after an overrun, skip the missed
     * ticks instead of sampling in a burst. */
    gf_timespec_add(&next, s->interval_s);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (gf_timespec_before(&next, &now)) {
      next = now;
      gf_timespec_add(&next, s->interval_s);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

int gf_sampler_start(gf_sampler_thread *s, gf_sampler_tick tick, void *user) {
  s->tick = tick;
  s->user = user;
  int rc = pthread_create(&s->thread, NULL, sampler_main, s);
  if (rc == 0) s->thread_started = 1;
  return rc;
}

void gf_sampler_stop(gf_sampler_thread *s) {
  if (!s->thread_started) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  s->thread_started = 0;
}

void gf_sampler_destroy(gf_sampler_thread *s) {
  gf_sampler_stop(s);
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->lock);
}
