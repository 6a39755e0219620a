/* sampler_thread.h - private to gf_monitor and gf_trainer: a thread that
 * calls a callback every interval on CLOCK_MONOTONIC and wakes promptly when
 * stopped. The energy meter (energy.c) and the resource monitor (monitor.c)
 * each embed one. Not for: anything the callback measures; the owner's
 * fields may share the lock, which the owner then takes as &s->lock. */
#ifndef GF_TRAINER_SAMPLER_THREAD_H
#define GF_TRAINER_SAMPLER_THREAD_H

#include <pthread.h>

/* Called by the thread with s->lock held, first one interval after
 * gf_sampler_start, then on a fixed schedule (after an overrun the missed
 * ticks are skipped, not taken in a burst). It may unlock and relock
 * s->lock around slow work. */
typedef void (*gf_sampler_tick)(void *user);

typedef struct gf_sampler_thread {
  double interval_s;     /* > 0, seconds between ticks */
  gf_sampler_tick tick;  /* set by gf_sampler_start */
  void *user;            /* borrowed; passed to tick */
  pthread_t thread;
  int thread_started;    /* joinable until gf_sampler_stop joined it */
  pthread_mutex_t lock;  /* guards stopping and whatever the owner adds */
  pthread_cond_t wake;   /* signalled by stop; clock CLOCK_MONOTONIC */
  int stopping;
} gf_sampler_thread;

/* Sets up the lock and the CLOCK_MONOTONIC condition variable of *s, which
 * the caller owns (zeroed or not). 0, or an errno value with nothing left to
 * destroy. */
int gf_sampler_init(gf_sampler_thread *s, double interval_s);

/* Starts the thread; tick and user are borrowed until gf_sampler_stop.
 * 0, or an errno value (then only gf_sampler_destroy remains to call). */
int gf_sampler_start(gf_sampler_thread *s, gf_sampler_tick tick, void *user);

/* Asks the thread to stop, wakes it and joins it; a no-op when it is not
 * running. Call without s->lock held. */
void gf_sampler_stop(gf_sampler_thread *s);

/* gf_sampler_stop, then destroys the lock and condition variable; only
 * after a successful gf_sampler_init. */
void gf_sampler_destroy(gf_sampler_thread *s);

#endif
