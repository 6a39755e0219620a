/* test_monitor.c - the resource monitor (gf/monitor.h): the /proc parsers on
 * known text, MLflow's metric names exactly, CPU utilization rising under
 * busy threads, memory figures against /proc/meminfo, the sampling cadence,
 * a prompt stop with a long interval, no GPU figures and no error without
 * NVML, the GPU figures through a fake NVML, the step-time split means, and
 * step numbering from a resumed first step.
 *
 * Built twice (tests/trainer/monitor.cmake): as the test, and with
 * GF_TEST_FAKE_NVML as a loadable module exporting the seven NVML entry
 * points with known answers (2 GPUs; GPU 1 has no power reading), whose
 * path the test gets as GF_FAKE_NVML_PATH. */
#ifdef GF_TEST_FAKE_NVML

/* ---- the fake libnvidia-ml ---------------------------------------------- */
#include <stdlib.h>

typedef struct fake_dev { int index; } fake_dev;
typedef struct fake_util { unsigned int gpu, memory; } fake_util;
typedef struct fake_mem { unsigned long long total, free, used; } fake_mem;

int fake_nvml_live; /* nvmlInit_v2 calls minus nvmlShutdown calls */
static fake_dev devs[2] = {{0}, {1}};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, fake_dev **dev);
int nvmlDeviceGetUtilizationRates(fake_dev *dev, fake_util *u);
int nvmlDeviceGetMemoryInfo(fake_dev *dev, fake_mem *m);
int nvmlDeviceGetPowerUsage(fake_dev *dev, unsigned int *mw);

int nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_FAIL_INIT")) return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
  fake_nvml_live++;
  return 0;
}
int nvmlShutdown(void) {
  fake_nvml_live--;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int *count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, fake_dev **dev) {
  if (i >= 2) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *dev = &devs[i];
  return 0;
}
int nvmlDeviceGetUtilizationRates(fake_dev *dev, fake_util *u) {
  u->gpu = 30u + 10u * (unsigned)dev->index;
  u->memory = 5;
  return 0;
}
int nvmlDeviceGetMemoryInfo(fake_dev *dev, fake_mem *m) {
  m->total = 8000000000ULL;
  m->used = 2000000000ULL * (unsigned long long)(dev->index + 1);
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPowerUsage(fake_dev *dev, unsigned int *mw) {
  if (dev->index == 1) return 3; /* NVML_ERROR_NOT_SUPPORTED */
  *mw = 150500;
  return 0;
}

#else

/* ---- the test ----------------------------------------------------------- */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gf/monitor.h"

#ifndef GF_FAKE_NVML_PATH
#error "GF_FAKE_NVML_PATH: the path of the fake NVML module"
#endif

typedef struct rec {
  char name[96];
  double value;
  int64_t step, ts;
} rec;

/* Everything the callback received; filled from the sampler thread. */
typedef struct collector {
  pthread_mutex_t lock;
  rec r[8192];
  int n;
} collector;

static void collect(void *user, const char *name, double value, int64_t step,
                    int64_t ts) {
  collector *c = user;
  pthread_mutex_lock(&c->lock);
  if (c->n < (int)(sizeof c->r / sizeof c->r[0])) {
    rec *r = &c->r[c->n++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->value = value;
    r->step = step;
    r->ts = ts;
  }
  pthread_mutex_unlock(&c->lock);
}

static collector *collector_new(void) {
  collector *c = calloc(1, sizeof *c);
  REQUIRE(c);
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

static void collector_free(collector *c) {
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Value of `name` at `step`; 0 when absent. */
static int find(collector *c, const char *name, int64_t step, double *v) {
  int found = 0;
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->n; i++)
    if (c->r[i].step == step && strcmp(c->r[i].name, name) == 0) {
      *v = c->r[i].value;
      found++;
    }
  pthread_mutex_unlock(&c->lock);
  return found;
}

static int count_prefix(collector *c, const char *prefix) {
  int k = 0;
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->n; i++)
    if (strncmp(c->r[i].name, prefix, strlen(prefix)) == 0) k++;
  pthread_mutex_unlock(&c->lock);
  return k;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Waits (up to `limit` seconds) until the monitor has taken `n` samples. */
static int wait_samples(gf_monitor *m, int64_t n, double limit) {
  double end = now_s() + limit;
  while (gf_monitor_get_stats(m).samples < n) {
    if (now_s() > end) return 0;
    sleep_s(0.005);
  }
  return 1;
}

static gf_monitor *start_world(collector *c, double interval, int64_t first,
                               const char *nvml, int world) {
  gf_monitor_config cfg = gf_monitor_config_default();
  cfg.world_size = world;
  cfg.interval_s = interval;
  cfg.first_step = first;
  cfg.emit = collect;
  cfg.user = c;
  cfg.nvml_library = nvml;
  gf_monitor *m = NULL;
  gf_err err = {0};
  gf_status st = gf_monitor_start(&m, &cfg, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(m);
  return m;
}

static gf_monitor *start(collector *c, double interval, int64_t first,
                         const char *nvml) {
  return start_world(c, interval, first, nvml, 1);
}

/* ---- parsers ------------------------------------------------------------ */

static void test_parsers(void) {
  gf_cpu_times a, b;
  gf_err err = {0};
  const char *stat0 =
      "cpu  100 20 30 400 50 6 7 8 90 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
  REQUIRE(gf_cpu_times_parse(stat0, &a, &err) == GF_OK);
  CHECK_INT_EQ(a.total, 100 + 20 + 30 + 400 + 50 + 6 + 7 + 8);
  CHECK_INT_EQ(a.busy, 100 + 20 + 30 + 6 + 7 + 8);
  /* The cpu line need not be first; old kernels have 4 fields. */
  REQUIRE(gf_cpu_times_parse("intr 5\ncpu  300 0 100 600\n", &b, &err) == GF_OK);
  CHECK_INT_EQ(b.total, 1000);
  CHECK_INT_EQ(b.busy, 400);
  gf_cpu_times c0 = {.busy = 1000, .total = 4000};
  gf_cpu_times c1 = {.busy = 1750, .total = 5000};
  CHECK_NEAR(gf_cpu_utilization(&c0, &c1), 75.0, 1e-12);
  CHECK_NEAR(gf_cpu_utilization(&c0, &c0), 0.0, 0);   /* no time passed */
  CHECK_NEAR(gf_cpu_utilization(&c1, &c0), 0.0, 0);   /* went backwards */
  CHECK(gf_cpu_times_parse("cpu0 1 2 3 4\n", &a, &err) == GF_EFORMAT);
  CHECK(gf_cpu_times_parse("cpu  1 2 x\n", &a, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "/proc/stat") != NULL);

  gf_mem_info mi;
  const char *meminfo = "MemTotal:       16384000 kB\nMemFree:  1 kB\n"
                        "MemAvailable:    4096000 kB\nBuffers: 2 kB\n";
  REQUIRE(gf_meminfo_parse(meminfo, &mi, &err) == GF_OK);
  CHECK_NEAR(mi.total_mb, 16384000.0 * 1024 / 1e6, 1e-6);
  CHECK_NEAR(mi.used_mb, (16384000.0 - 4096000.0) * 1024 / 1e6, 1e-6);
  CHECK_NEAR(mi.used_pct, 75.0, 1e-9);
  CHECK(gf_meminfo_parse("MemTotal: 100 kB\nMemFree: 5 kB\n", &mi, &err) ==
        GF_EFORMAT);
  CHECK(gf_meminfo_parse("MemTotal: 0 kB\nMemAvailable: 0 kB\n", &mi, &err) ==
        GF_EFORMAT);
  /* "MemTotalX:" is not "MemTotal:". */
  CHECK(gf_meminfo_parse("MemTotalX: 9 kB\nMemAvailable: 1 kB\n", &mi, &err) ==
        GF_EFORMAT);

  /* The live readers answer sensibly. */
  REQUIRE(gf_cpu_times_read(&a, &err) == GF_OK);
  CHECK(a.total > 0 && a.busy <= a.total);
  REQUIRE(gf_meminfo_read(&mi, &err) == GF_OK);
  CHECK(mi.total_mb > 0 && mi.used_mb > 0 && mi.used_mb <= mi.total_mb);
  double rss, peak;
  REQUIRE(gf_process_rss_read(&rss, &peak, &err) == GF_OK);
  CHECK(rss > 0.1 && rss <= peak && peak < mi.total_mb);
}

/* ---- the sampler -------------------------------------------------------- */

static const char *kHostNames[] = {
    "system/cpu_utilization_percentage",
    "system/system_memory_usage_megabytes",
    "system/system_memory_usage_percentage",
    "perf/rss_megabytes",
    "perf/peak_rss_megabytes",
};
#define N_HOST_NAMES (int)(sizeof kHostNames / sizeof kHostNames[0])

/* Names, steps from 0, cadence, timestamps, memory figures, no GPU. */
static void test_names_cadence_memory(void) {
  collector *c = collector_new();
  int64_t t_begin = unix_ms();
  double t0 = now_s();
  gf_monitor *m = start(c, 0.05, 0, "/nonexistent/libnvidia-ml.so.1");
  sleep_s(1.0);
  gf_monitor_stop(m);
  double elapsed = now_s() - t0;
  int64_t t_end = unix_ms();
  gf_monitor_stats st = gf_monitor_get_stats(m);
  printf("monitor: %lld samples in %.2f s at 50 ms\n", (long long)st.samples,
         elapsed);
  /* About 20; generous bounds for 2 shared cores. */
  CHECKF(st.samples >= 8 && st.samples <= (int64_t)(elapsed / 0.05) + 1,
         "%lld samples in %.2f s", (long long)st.samples, elapsed);
  CHECK_INT_EQ(gf_monitor_next_step(m), st.samples);
  CHECK_INT_EQ(st.gpus, 0);
  CHECK(strstr(gf_monitor_gpu_note(m), "cannot dlopen") != NULL);
  CHECK_INT_EQ(count_prefix(c, "system/gpu"), 0);
  /* no steps fed */
  CHECK_INT_EQ(count_prefix(c, "system/step_data_wait_seconds"), 0);
  CHECK_INT_EQ(c->n, st.samples * N_HOST_NAMES); /* nothing else emitted */
  CHECK_INT_EQ(st.read_failures, 0);

  int64_t prev_ts = 0;
  for (int64_t s = 0; s < st.samples; s++) {
    double v[N_HOST_NAMES];
    for (int k = 0; k < N_HOST_NAMES; k++)
      CHECKF(find(c, kHostNames[k], s, &v[k]) == 1, "%s at step %lld",
             kHostNames[k], (long long)s);
    CHECK(v[0] >= 0 && v[0] <= 100);
    CHECK(v[1] > 0 && v[2] > 0 && v[2] < 100);
    CHECK(v[3] > 0 && v[3] <= v[4]);
    int64_t ts = -1;
    for (int i = 0; i < c->n; i++)
      if (c->r[i].step == s) {
        if (ts < 0) ts = c->r[i].ts;
        CHECK(c->r[i].ts == ts); /* one timestamp per sample */
      }
    CHECK(ts >= t_begin && ts <= t_end && ts >= prev_ts);
    prev_ts = ts;
  }
  /* Memory against /proc/meminfo read here (other processes move it a
   * little between the two reads). */
  double used_mb = 0, pct = 0;
  REQUIRE(find(c, kHostNames[1], st.samples - 1, &used_mb) == 1);
  REQUIRE(find(c, kHostNames[2], st.samples - 1, &pct) == 1);
  FILE *f = fopen("/proc/meminfo", "r");
  REQUIRE(f);
  long long total_kb = -1, avail_kb = -1;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "MemTotal: %lld kB", &total_kb);
    sscanf(line, "MemAvailable: %lld kB", &avail_kb);
  }
  fclose(f);
  REQUIRE(total_kb > 0 && avail_kb >= 0);
  double total_mb = (double)total_kb * 1024 / 1e6;
  double here_mb = (double)(total_kb - avail_kb) * 1024 / 1e6;
  CHECKF(fabs(used_mb - here_mb) < 0.05 * total_mb, "used %.1f MB vs %.1f MB",
         used_mb, here_mb);
  CHECK_NEAR(pct, 100 * used_mb / total_mb, 1e-6 * pct + 1e-9);
  /* Mean spacing of the timestamps is about the interval. */
  if (st.samples >= 3) {
    double mean_ms = (double)(prev_ts - c->r[0].ts) / (double)(st.samples - 1);
    printf("monitor: mean spacing %.1f ms\n", mean_ms);
    CHECKF(mean_ms > 35 && mean_ms < 150, "mean spacing %.1f ms", mean_ms);
  }
  gf_monitor_free(m);
  collector_free(c);
}

/* Stop wakes the sampler at once, whatever the interval; free is safe after
 * stop, stop is idempotent, NULL is fine. */
static void test_prompt_stop(void) {
  collector *c = collector_new();
  gf_monitor *m = start(c, 3600.0, 0, "");
  sleep_s(0.02);
  double t0 = now_s();
  gf_monitor_stop(m);
  double took = now_s() - t0;
  printf("monitor: stop with a 1 h interval took %.4f s\n", took);
  CHECKF(took < 1.0, "stop took %.3f s", took);
  CHECK_INT_EQ(c->n, 0);
  CHECK(strstr(gf_monitor_gpu_note(m), "turned off") != NULL);
  gf_monitor_stop(m);
  gf_monitor_free(m);
  gf_monitor_free(NULL);
  gf_monitor_stop(NULL);
  gf_monitor_add_step(NULL, 1, 2, 3);
  /* Free without stop stops too. */
  m = start(c, 3600.0, 0, "");
  t0 = now_s();
  gf_monitor_free(m);
  CHECK(now_s() - t0 < 1.0);
  collector_free(c);
}

static atomic_int spin_stop;

static void *spin(void *arg) {
  (void)arg;
  volatile double x = 1.0;
  while (!atomic_load(&spin_stop))
    for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
  return NULL;
}

/* Busy threads raise the machine's CPU utilization above an idle reading. */
static void test_cpu_busy(void) {
  gf_cpu_times a, b;
  REQUIRE(gf_cpu_times_read(&a, NULL) == GF_OK);
  sleep_s(0.5);
  REQUIRE(gf_cpu_times_read(&b, NULL) == GF_OK);
  double idle = gf_cpu_utilization(&a, &b);

  collector *c = collector_new();
  atomic_store(&spin_stop, 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) REQUIRE(pthread_create(&t[i], NULL, spin, NULL) == 0);
  gf_monitor *m = start(c, 0.2, 0, "");
  REQUIRE(wait_samples(m, 4, 10.0));
  gf_monitor_stop(m);
  atomic_store(&spin_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  double sum = 0;
  int n = 0;
  for (int64_t s = 1; s < 4; s++) { /* step 0 may include the start-up */
    double v;
    if (find(c, "system/cpu_utilization_percentage", s, &v) == 1) {
      sum += v;
      n++;
    }
  }
  REQUIRE(n == 3);
  double busy = sum / n;
  printf("monitor: cpu idle %.1f%%, with 2 busy threads %.1f%%\n", idle, busy);
  CHECKF(busy > idle + 15 || busy > 90, "busy %.1f vs idle %.1f", busy, idle);
  gf_monitor_free(m);
  collector_free(c);
}

/* ---- NVML --------------------------------------------------------------- */

static void test_nvml_absent_and_broken(void) {
  gf_nvml *nv = (gf_nvml *)1;
  gf_err err = {0};
  CHECK(gf_nvml_open(&nv, "/nonexistent/libnvidia-ml.so.1", &err) ==
        GF_ENOTFOUND);
  CHECK(nv == NULL);
  CHECK(strstr(err.msg, "cannot dlopen /nonexistent/libnvidia-ml.so.1") != NULL);
  /* A real library that is not NVML. */
  CHECK(gf_nvml_open(&nv, "libm.so.6", &err) == GF_ENOTFOUND);
  CHECK(strstr(err.msg, "has no nvmlInit_v2") != NULL);
  CHECK_INT_EQ(gf_nvml_count(NULL), 0);
  gf_nvml_close(NULL);

  /* NVML present but the driver does not answer: no GPU figures, no error. */
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  CHECK(gf_nvml_open(&nv, GF_FAKE_NVML_PATH, &err) == GF_EDEVICE);
  CHECK(strstr(err.msg, "nvmlInit_v2 failed (NVML error 9)") != NULL);
  collector *c = collector_new();
  gf_monitor *m = start(c, 0.05, 0, GF_FAKE_NVML_PATH);
  REQUIRE(wait_samples(m, 2, 10.0));
  gf_monitor_stop(m);
  unsetenv("FAKE_NVML_FAIL_INIT");
  CHECK_INT_EQ(gf_monitor_get_stats(m).gpus, 0);
  CHECK(strstr(gf_monitor_gpu_note(m), "nvmlInit_v2 failed") != NULL);
  CHECK_INT_EQ(count_prefix(c, "system/gpu"), 0);
  gf_monitor_free(m);

  /* The machine's own NVML, if any: GPU figures exactly when GPUs. */
  c->n = 0;
  m = start(c, 0.05, 0, NULL);
  REQUIRE(wait_samples(m, 2, 10.0));
  gf_monitor_stop(m);
  int gpus = gf_monitor_get_stats(m).gpus;
  printf("monitor: this machine: %d GPU(s)%s%s\n", gpus, gpus ? "" : ": ",
         gf_monitor_gpu_note(m));
  if (gpus == 0) CHECK_INT_EQ(count_prefix(c, "system/gpu"), 0);
  else CHECK(count_prefix(c, "system/gpu_0_utilization_percentage") >= 2);
  gf_monitor_free(m);
  collector_free(c);
}

static void test_nvml_fake(void) {
  /* Hold the module ourselves to watch its init/shutdown balance. */
  void *lib = dlopen(GF_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  int *live = dlsym(lib, "fake_nvml_live");
  REQUIRE(live);
  collector *c = collector_new();
  gf_monitor *m = start(c, 0.05, 0, GF_FAKE_NVML_PATH);
  CHECK_INT_EQ(*live, 1);
  CHECK_INT_EQ(gf_monitor_get_stats(m).gpus, 2);
  CHECK_STR_EQ(gf_monitor_gpu_note(m), "");
  REQUIRE(wait_samples(m, 2, 10.0));
  gf_monitor_stop(m);
  CHECK_INT_EQ(*live, 0); /* nvmlShutdown on stop */
  dlclose(lib);
  struct { const char *name; double want; } g[] = {
      {"system/gpu_0_utilization_percentage", 30},
      {"system/gpu_0_memory_usage_megabytes", 2000},
      {"system/gpu_0_memory_usage_percentage", 25},
      {"system/gpu_0_power_usage_watts", 150.5},
      {"system/gpu_1_utilization_percentage", 40},
      {"system/gpu_1_memory_usage_megabytes", 4000},
      {"system/gpu_1_memory_usage_percentage", 50},
  };
  for (int64_t s = 0; s < 2; s++)
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
      double v = -1;
      CHECKF(find(c, g[k].name, s, &v) == 1, "%s at step %lld", g[k].name,
             (long long)s);
      CHECK_NEAR(v, g[k].want, 1e-9);
    }
  double v;
  CHECK(find(c, "system/gpu_1_power_usage_watts", 0, &v) == 0); /* unsupported */
  CHECK(gf_monitor_get_stats(m).read_failures >= 2); /* counted per sample */
  CHECK_INT_EQ(count_prefix(c, "system/gpu_2"), 0);
  gf_monitor_free(m);

  /* After stop nothing holds the module: it was dlclosed. */
  CHECK(dlopen(GF_FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD) == NULL);

  /* The loader on its own. */
  gf_nvml *nv = NULL;
  gf_err err = {0};
  REQUIRE(gf_nvml_open(&nv, GF_FAKE_NVML_PATH, &err) == GF_OK);
  CHECK_INT_EQ(gf_nvml_count(nv), 2);
  gf_gpu_sample gs;
  gf_nvml_sample(nv, 1, &gs);
  CHECK(gs.have_util && gs.have_mem && !gs.have_power);
  gf_nvml_sample(nv, 2, &gs); /* out of range: nothing */
  CHECK(!gs.have_util && !gs.have_mem && !gs.have_power);
  gf_nvml_close(nv);
  collector_free(c);
}

/* ---- the step split, resumed steps, bad configs ------------------------- */

static void *feed(void *arg) {
  gf_monitor *m = arg;
  for (int i = 0; i < 20000; i++) gf_monitor_add_step(m, 0.25, 0.5, 0.125);
  return NULL;
}

static void test_split_and_resume(void) {
  collector *c = collector_new();
  gf_monitor *m = start_world(c, 0.3, 17, "", 2);
  REQUIRE(wait_samples(m, 1, 10.0));
  /* Right after sample 17: four steps, then wait for sample 18. */
  gf_monitor_add_step(m, 0.10, 0.50, 0.00);
  gf_monitor_add_step(m, 0.30, 0.70, 0.20);
  gf_monitor_add_step(m, 0.20, 0.60, 0.10);
  gf_monitor_add_step(m, 0.00, 0.20, 0.10);
  REQUIRE(wait_samples(m, 3, 10.0));
  gf_monitor_stop(m);
  double v;
  CHECK(find(c, "system/cpu_utilization_percentage", 17, &v) == 1);
  CHECK(find(c, "system/cpu_utilization_percentage", 16, &v) == 0);
  /* no steps before 17 */
  CHECK(find(c, "system/step_data_wait_seconds", 17, &v) == 0);
  CHECK(find(c, "system/step_data_wait_seconds", 18, &v) == 1);
  CHECK_NEAR(v, 0.15, 1e-12);
  CHECK(find(c, "system/step_compute_seconds", 18, &v) == 1);
  CHECK_NEAR(v, 0.50, 1e-12);
  CHECK(find(c, "system/step_allreduce_seconds", 18, &v) == 1);
  CHECK_NEAR(v, 0.10, 1e-12);
  /* reset after a sample */
  CHECK(find(c, "system/step_compute_seconds", 19, &v) == 0);
  int64_t samples = gf_monitor_get_stats(m).samples;
  CHECK_INT_EQ(gf_monitor_next_step(m), 17 + samples);
  gf_monitor_free(m);

  /* Steps fed from several threads at once while sampling: every step's
   * split is (0.25, 0.5, 0.125), exact in binary, so each mean is too. */
  c->n = 0;
  m = start_world(c, 0.02, 0, "", 2);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) REQUIRE(pthread_create(&t[i], NULL, feed, m) == 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  REQUIRE(wait_samples(m, gf_monitor_get_stats(m).samples + 2, 10.0));
  gf_monitor_stop(m);
  int means = 0;
  for (int i = 0; i < c->n; i++) {
    if (strcmp(c->r[i].name, "system/step_data_wait_seconds") == 0) {
      CHECK(c->r[i].value == 0.25);
      means++;
    }
    if (strcmp(c->r[i].name, "system/step_allreduce_seconds") == 0)
      CHECK(c->r[i].value == 0.125);
  }
  CHECK(means >= 1);
  gf_monitor_free(m);

  /* One rank: the all-reduce share, always 0 there, is not logged. */
  c->n = 0;
  m = start(c, 0.02, 0, "");
  gf_monitor_add_step(m, 0.25, 0.5, 0.0);
  REQUIRE(wait_samples(m, gf_monitor_get_stats(m).samples + 2, 10.0));
  gf_monitor_stop(m);
  CHECK_INT_EQ(count_prefix(c, "system/step_data_wait_seconds"), 1);
  CHECK_INT_EQ(count_prefix(c, "system/step_allreduce_seconds"), 0);
  gf_monitor_free(m);
  collector_free(c);
}

static void test_bad_config(void) {
  gf_monitor *m = (gf_monitor *)1;
  gf_err err = {0};
  gf_monitor_config cfg = gf_monitor_config_default();
  CHECK(cfg.interval_s == 10.0 && cfg.first_step == 0);
  CHECK(gf_monitor_start(&m, &cfg, &err) == GF_EINVAL); /* no callback */
  CHECK(m == NULL);
  CHECK(strstr(err.msg, "callback") != NULL);
  collector *c = collector_new();
  cfg.emit = collect;
  cfg.user = c;
  double bad[] = {0.0, -1.0, NAN, 1e9};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cfg.interval_s = bad[i];
    CHECK(gf_monitor_start(&m, &cfg, &err) == GF_EINVAL);
    CHECK(strstr(err.msg, "interval") != NULL);
  }
  cfg.interval_s = 1;
  cfg.first_step = -1;
  CHECK(gf_monitor_start(&m, &cfg, &err) == GF_EINVAL);
  CHECK(gf_monitor_start(&m, NULL, &err) == GF_EINVAL);
  CHECK(gf_monitor_start(NULL, &cfg, &err) == GF_EINVAL);
  collector_free(c);
}

int main(void) {
  test_parsers();
  test_bad_config();
  test_names_cadence_memory();
  test_prompt_stop();
  test_cpu_busy();
  test_nvml_absent_and_broken();
  test_nvml_fake();
  test_split_and_resume();
  return check_report();
}

#endif
