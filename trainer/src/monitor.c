/* monitor.c - the resource monitor's sampler thread (gf/monitor.h): the
 * sampling schedule on CLOCK_MONOTONIC, the step-time accumulators, the
 * MLflow metric names and the callback. The readers live in
 * monitor_proc.c and monitor_nvml.c. Not for: sending anything to MLflow
 * (the owner's callback does that). */
#include "gf/monitor.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/text.h"

struct gf_monitor {
  gf_monitor_config cfg; /* nvml_library not kept (borrowed at start) */
  gf_nvml *nvml;         /* owned; NULL without GPU figures */
  char gpu_note[sizeof((gf_err *)0)->msg]; /* why there are no GPU
                                              figures; "" otherwise */
  int gpus;              /* GPUs NVML reported at start */

  pthread_t thread;
  int thread_started;    /* joinable until gf_monitor_stop joined it */

  pthread_mutex_t lock;  /* guards everything below */
  pthread_cond_t wake;   /* signalled by stop; clock CLOCK_MONOTONIC */
  int stopping;
  int64_t samples;       /* samples taken; next step = first_step + samples */
  int64_t read_failures;
  /* step-time split since the previous sample */
  int64_t steps;
  double sum_data, sum_compute, sum_allreduce;

  gf_cpu_times cpu_prev; /* sampler thread only */
};

gf_monitor_config gf_monitor_config_default(void) {
  gf_monitor_config c = {
      .interval_s = GF_MONITOR_DEFAULT_INTERVAL_S,
      .first_step = 0,
      .emit = NULL,
      .user = NULL,
      .nvml_library = NULL,
      .world_size = 1,
  };
  return c;
}

/* A GPU figure's MLflow name, "system/gpu_<i>_<what>", into name[96]: the
 * longest <what> is 28 bytes and i an int, so it always fits. */
static void gpu_name(char name[96], int i, const char *what) {
  int n = snprintf(name, 96, "system/gpu_%d_%s", i, what);
  assert(gf_fits(n, 96));
  (void)n;
}

/* One sample: read everything, then emit with no lock held. */
static void take_sample(gf_monitor *m, int64_t step) {
  const gf_monitor_config *c = &m->cfg;
  int64_t ts = gf_unix_ms();
  int64_t failures = 0;

  gf_cpu_times now;
  if (gf_cpu_times_read(&now, NULL) == GF_OK) {
    c->emit(c->user, "system/cpu_utilization_percentage",
            gf_cpu_utilization(&m->cpu_prev, &now), step, ts);
    m->cpu_prev = now;
  } else {
    failures++;
  }
  gf_mem_info mem;
  if (gf_meminfo_read(&mem, NULL) == GF_OK) {
    c->emit(c->user, "system/system_memory_usage_megabytes", mem.used_mb, step,
            ts);
    c->emit(c->user, "system/system_memory_usage_percentage", mem.used_pct,
            step, ts);
  } else {
    failures++;
  }
  double rss, peak;
  if (gf_process_rss_read(&rss, &peak, NULL) == GF_OK) {
    c->emit(c->user, "perf/rss_megabytes", rss, step, ts);
    c->emit(c->user, "perf/peak_rss_megabytes", peak, step, ts);
  } else {
    failures++;
  }
  for (int i = 0; i < gf_nvml_count(m->nvml); i++) {
    gf_gpu_sample g;
    char name[96];
    gf_nvml_sample(m->nvml, i, &g);
    if (g.have_util) {
      gpu_name(name, i, "utilization_percentage");
      c->emit(c->user, name, g.util_pct, step, ts);
    }
    if (g.have_mem) {
      gpu_name(name, i, "memory_usage_megabytes");
      c->emit(c->user, name, g.mem_used_mb, step, ts);
      gpu_name(name, i, "memory_usage_percentage");
      c->emit(c->user, name, g.mem_pct, step, ts);
    }
    if (g.have_power) {
      gpu_name(name, i, "power_usage_watts");
      c->emit(c->user, name, g.power_w, step, ts);
    }
    failures += !g.have_util + !g.have_mem + !g.have_power;
  }

  pthread_mutex_lock(&m->lock);
  int64_t steps = m->steps;
  double sd = m->sum_data, sc = m->sum_compute, sa = m->sum_allreduce;
  m->steps = 0;
  m->sum_data = m->sum_compute = m->sum_allreduce = 0.0;
  m->read_failures += failures;
  pthread_mutex_unlock(&m->lock);
  if (steps > 0) {
    double n = (double)steps;
    c->emit(c->user, "system/step_data_wait_seconds", sd / n, step, ts);
    c->emit(c->user, "system/step_compute_seconds", sc / n, step, ts);
    if (c->world_size > 1)
      c->emit(c->user, "system/step_allreduce_seconds", sa / n, step, ts);
  }
}

static void *sampler(void *arg) {
  gf_monitor *m = arg;
  struct timespec next;
  gf_deadline_after(&next, CLOCK_MONOTONIC, m->cfg.interval_s);
  pthread_mutex_lock(&m->lock);
  while (!m->stopping) {
    int rc = pthread_cond_timedwait(&m->wake, &m->lock, &next);
    if (m->stopping) break;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (rc != ETIMEDOUT && gf_timespec_before(&now, &next))
      continue; /* spurious */
    int64_t step = m->cfg.first_step + m->samples;
    pthread_mutex_unlock(&m->lock);
    take_sample(m, step);
    pthread_mutex_lock(&m->lock);
    m->samples++;
    /* Keep the schedule (no drift); after an overrun, skip the missed
     * ticks instead of sampling in a burst. */
    gf_timespec_add(&next, m->cfg.interval_s);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (gf_timespec_before(&next, &now)) {
      next = now;
      gf_timespec_add(&next, m->cfg.interval_s);
    }
  }
  pthread_mutex_unlock(&m->lock);
  return NULL;
}

gf_status gf_monitor_start(gf_monitor **out, const gf_monitor_config *cfg,
                           gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "monitor: no output pointer");
  *out = NULL;
  if (!cfg || !cfg->emit)
    return gf_fail(err, GF_EINVAL, "monitor: no callback to emit figures to");
  if (!(cfg->interval_s > 0.0) || cfg->interval_s > 86400.0)
    return gf_fail(err, GF_EINVAL,
                   "monitor: interval %g s (need > 0 and <= 86400)",
                   cfg->interval_s);
  if (cfg->first_step < 0)
    return gf_fail(err, GF_EINVAL, "monitor: first step %lld (need >= 0)",
                   (long long)cfg->first_step);
  gf_monitor *m = calloc(1, sizeof *m);
  if (!m) return gf_fail(err, GF_ENOMEM, "monitor: out of memory");
  m->cfg = *cfg;
  m->cfg.nvml_library = NULL;
  gf_status st = gf_cpu_times_read(&m->cpu_prev, err);
  if (st != GF_OK) {
    free(m);
    return st;
  }
  if (cfg->nvml_library && cfg->nvml_library[0] == '\0') {
    strcpy(m->gpu_note, "GPU figures turned off");
  } else {
    gf_err nerr = {0};
    if (gf_nvml_open(&m->nvml, cfg->nvml_library, &nerr) != GF_OK)
      memcpy(m->gpu_note, nerr.msg, sizeof m->gpu_note); /* same size */
    else if (gf_nvml_count(m->nvml) == 0)
      strcpy(m->gpu_note, "NVML reports no GPU");
  }
  m->gpus = gf_nvml_count(m->nvml);
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);
  if (rc == 0) {
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
  }
  if (rc == 0) {
    rc = pthread_mutex_init(&m->lock, NULL);
    if (rc != 0) pthread_cond_destroy(&m->wake);
  }
  if (rc != 0) {
    gf_nvml_close(m->nvml);
    free(m);
    return gf_fail(err, GF_EIO, "monitor: cannot set up its lock: %s",
                   strerror(rc));
  }
  rc = pthread_create(&m->thread, NULL, sampler, m);
  if (rc != 0) {
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
    gf_nvml_close(m->nvml);
    free(m);
    return gf_fail(err, GF_EIO, "monitor: cannot start the sampler: %s",
                   strerror(rc));
  }
  m->thread_started = 1;
  *out = m;
  return GF_OK;
}

void gf_monitor_add_step(gf_monitor *m, double data_wait_s, double compute_s,
                         double allreduce_s) {
  if (!m) return;
  pthread_mutex_lock(&m->lock);
  m->steps++;
  m->sum_data += data_wait_s;
  m->sum_compute += compute_s;
  m->sum_allreduce += allreduce_s;
  pthread_mutex_unlock(&m->lock);
}

void gf_monitor_stop(gf_monitor *m) {
  if (!m || !m->thread_started) return;
  pthread_mutex_lock(&m->lock);
  m->stopping = 1;
  pthread_cond_broadcast(&m->wake);
  pthread_mutex_unlock(&m->lock);
  pthread_join(m->thread, NULL);
  m->thread_started = 0;
  gf_nvml_close(m->nvml);
  m->nvml = NULL;
}

void gf_monitor_free(gf_monitor *m) {
  if (!m) return;
  gf_monitor_stop(m);
  pthread_cond_destroy(&m->wake);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

int64_t gf_monitor_next_step(const gf_monitor *m) {
  if (!m) return 0;
  gf_monitor *mm = (gf_monitor *)m; /* the lock is not part of the value */
  pthread_mutex_lock(&mm->lock);
  int64_t s = m->cfg.first_step + m->samples;
  pthread_mutex_unlock(&mm->lock);
  return s;
}

gf_monitor_stats gf_monitor_get_stats(const gf_monitor *m) {
  gf_monitor_stats s = {0};
  if (!m) return s;
  gf_monitor *mm = (gf_monitor *)m;
  pthread_mutex_lock(&mm->lock);
  s.samples = m->samples;
  s.read_failures = m->read_failures;
  pthread_mutex_unlock(&mm->lock);
  s.gpus = m->gpus;
  return s;
}

const char *gf_monitor_gpu_note(const gf_monitor *m) {
  return m ? m->gpu_note : "";
}
