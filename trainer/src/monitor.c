/* monitor.c - the resource monitor (gf/monitor.h): what each tick of its
 * sampler thread reads (the schedule is sampler_thread.c's), the step-time
 * accumulators, the MLflow metric names and the callback. The readers live in
 * monitor_proc.c and monitor_nvml.c. Not for: sending anything to MLflow
 * (the owner's callback does that). */
#include "gf/monitor.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/text.h"
#include "sampler_thread.h"

struct gf_monitor {
  gf_monitor_config cfg; /* nvml_library not kept (borrowed at start) */
  gf_nvml *nvml;         /* owned; NULL without GPU figures */
  char gpu_note[sizeof((gf_err *)0)->msg]; /* why there are no GPU
                                              figures; "" otherwise */
  int gpus;              /* GPUs NVML reported at start */

  gf_sampler_thread sampler; /* its lock guards everything below */
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
  GF_FORMAT_FITS(name, 96, "system/gpu_%d_%s", i, what);
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

  pthread_mutex_lock(&m->sampler.lock);
  int64_t steps = m->steps;
  double sd = m->sum_data, sc = m->sum_compute, sa = m->sum_allreduce;
  m->steps = 0;
  m->sum_data = m->sum_compute = m->sum_allreduce = 0.0;
  m->read_failures += failures;
  pthread_mutex_unlock(&m->sampler.lock);
  if (steps > 0) {
    double n = (double)steps;
    c->emit(c->user, "system/step_data_wait_seconds", sd / n, step, ts);
    c->emit(c->user, "system/step_compute_seconds", sc / n, step, ts);
    if (c->world_size > 1)
      c->emit(c->user, "system/step_allreduce_seconds", sa / n, step, ts);
  }
}

/* gf_sampler_tick: one sample, taken with the sampler's lock released. */
static void sampler_tick(void *arg) {
  gf_monitor *m = arg;
  int64_t step = m->cfg.first_step + m->samples;
  pthread_mutex_unlock(&m->sampler.lock);
  take_sample(m, step);
  pthread_mutex_lock(&m->sampler.lock);
  m->samples++;
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
  int rc = gf_sampler_init(&m->sampler, cfg->interval_s);
  if (rc != 0) {
    gf_nvml_close(m->nvml);
    free(m);
    return gf_fail(err, GF_EIO, "monitor: cannot set up its lock: %s",
                   strerror(rc));
  }
  rc = gf_sampler_start(&m->sampler, sampler_tick, m);
  if (rc != 0) {
    gf_sampler_destroy(&m->sampler);
    gf_nvml_close(m->nvml);
    free(m);
    return gf_fail(err, GF_EIO, "monitor: cannot start the sampler: %s",
                   strerror(rc));
  }
  *out = m;
  return GF_OK;
}

void gf_monitor_add_step(gf_monitor *m, double data_wait_s, double compute_s,
                         double allreduce_s) {
  if (!m) return;
  pthread_mutex_lock(&m->sampler.lock);
  m->steps++;
  m->sum_data += data_wait_s;
  m->sum_compute += compute_s;
  m->sum_allreduce += allreduce_s;
  pthread_mutex_unlock(&m->sampler.lock);
}

void gf_monitor_stop(gf_monitor *m) {
  if (!m || !m->sampler.thread_started) return;
  gf_sampler_stop(&m->sampler);
  gf_nvml_close(m->nvml);
  m->nvml = NULL;
}

void gf_monitor_free(gf_monitor *m) {
  if (!m) return;
  gf_monitor_stop(m);
  gf_sampler_destroy(&m->sampler);
  free(m);
}

int64_t gf_monitor_next_step(const gf_monitor *m) {
  if (!m) return 0;
  gf_monitor *mm = (gf_monitor *)m; /* the lock is not part of the value */
  pthread_mutex_lock(&mm->sampler.lock);
  int64_t s = m->cfg.first_step + m->samples;
  pthread_mutex_unlock(&mm->sampler.lock);
  return s;
}

gf_monitor_stats gf_monitor_get_stats(const gf_monitor *m) {
  gf_monitor_stats s = {0};
  if (!m) return s;
  gf_monitor *mm = (gf_monitor *)m;
  pthread_mutex_lock(&mm->sampler.lock);
  s.samples = m->samples;
  s.read_failures = m->read_failures;
  pthread_mutex_unlock(&mm->sampler.lock);
  s.gpus = m->gpus;
  return s;
}

const char *gf_monitor_gpu_note(const gf_monitor *m) {
  return m ? m->gpu_note : "";
}
