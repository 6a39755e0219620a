/* test_energy.c - the energy meter and the price table (gf/energy.h):
 *   RAPL on fake powercap trees in a temp dir: two packages with dram,
 *   core and uncore subzones (only package + dram count), a flat duplicate,
 *   psys and intel-rapl-mmio zones (ignored while packages exist), a psys-
 *   only tree, a counter wrap (+ max_energy_range_uj + 1), monotone reads
 *   from several threads, rapl_whole_node false (0 CPU joules, same
 *   source); unreadable trees fall back to the estimate with a note: an
 *   energy_uj that is a directory (EISDIR) stands for the kernel's root-only
 *   energy_uj (EACCES), because CI runs as root and chmod 000 would not stop
 *   its reads; a missing dram energy_uj, a non-numeric range, no package
 *   zone, no tree, RAPL off;
 *   the estimate: CPU burnt, joules == cpu_seconds x W;
 *   NVML through fake libraries: one with the energy counter and the
 *   PCI-bus-id lookup (3 GPUs: counter; no counter but power; neither),
 *   and test_monitor's fake, which has neither entry point (the monitor's
 *   older library); a missing library; bad config; a prompt close;
 *   the price table: a valid file, every error class naming its line,
 *   lookups and their ENOTFOUND messages, exact prices, the file loader.
 *
 * Built twice (tests/trainer/CMakeLists.txt): as the test, and with
 * GF_TEST_FAKE_NVML_ENERGY as the loadable fake NVML with the energy
 * counter, whose path the test gets as GF_FAKE_NVML_ENERGY_PATH (and
 * test_monitor's as GF_FAKE_NVML_PATH). Counters are rewritten between
 * reads and gf_energy_read samples at once, so nothing here sleeps. */
#ifdef GF_TEST_FAKE_NVML_ENERGY

/* ---- the fake libnvidia-ml with an energy counter ----------------------- */
#include <strings.h>

typedef struct fake_dev { int index; } fake_dev;
typedef struct fake_util { unsigned int gpu, memory; } fake_util;
typedef struct fake_mem { unsigned long long total, free, used; } fake_mem;

/* Set by the test through dlsym. GPU 0 has an energy counter; GPU 1 only a
 * power reading; GPU 2 neither. */
int fake_nvml_live; /* nvmlInit_v2 calls minus nvmlShutdown calls */
unsigned long long fake_energy_mj[3] = {5000000ULL, 0, 0};
unsigned int fake_power_mw[3] = {250000, 200000, 0};
static fake_dev devs[3] = {{0}, {1}, {2}};
static const char *const bus_ids[3] = {"00000000:1A:00.0", "00000000:3B:00.0",
                                       "00000000:5E:00.0"};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, fake_dev **dev);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, fake_dev **dev);
int nvmlDeviceGetUtilizationRates(fake_dev *dev, fake_util *u);
int nvmlDeviceGetMemoryInfo(fake_dev *dev, fake_mem *m);
int nvmlDeviceGetPowerUsage(fake_dev *dev, unsigned int *mw);
int nvmlDeviceGetTotalEnergyConsumption(fake_dev *dev, unsigned long long *mj);

int nvmlInit_v2(void) {
  fake_nvml_live++;
  return 0;
}
int nvmlShutdown(void) {
  fake_nvml_live--;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int *count) {
  *count = 3;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, fake_dev **dev) {
  if (i >= 3) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *dev = &devs[i];
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, fake_dev **dev) {
  for (int i = 0; i < 3; i++)
    /* NVML also takes the short domain ("0000:1a:00.0"), any case */
    if (strcasecmp(bus, bus_ids[i]) == 0 || strcasecmp(bus, bus_ids[i] + 4) == 0) {
      *dev = &devs[i];
      return 0;
    }
  return 6; /* NVML_ERROR_NOT_FOUND */
}
int nvmlDeviceGetUtilizationRates(fake_dev *dev, fake_util *u) {
  (void)dev;
  u->gpu = 50;
  u->memory = 5;
  return 0;
}
int nvmlDeviceGetMemoryInfo(fake_dev *dev, fake_mem *m) {
  (void)dev;
  m->total = 8000000000ULL;
  m->used = 1000000000ULL;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPowerUsage(fake_dev *dev, unsigned int *mw) {
  if (fake_power_mw[dev->index] == 0) return 3; /* NVML_ERROR_NOT_SUPPORTED */
  *mw = fake_power_mw[dev->index];
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(fake_dev *dev, unsigned long long *mj) {
  if (dev->index != 0) return 3; /* NVML_ERROR_NOT_SUPPORTED (pre-Volta) */
  *mj = fake_energy_mj[0];
  return 0;
}

#else

/* ---- the test ----------------------------------------------------------- */
#define _GNU_SOURCE /* nftw's FTW_DEPTH | FTW_PHYS */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gf/energy.h"
#include "gf/monitor.h"

#ifndef GF_FAKE_NVML_PATH
#error "GF_FAKE_NVML_PATH: test_monitor's fake NVML (no energy counter)"
#endif
#ifndef GF_FAKE_NVML_ENERGY_PATH
#error "GF_FAKE_NVML_ENERGY_PATH: the fake NVML with an energy counter"
#endif

/* ---- helpers ------------------------------------------------------------- */

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A fresh directory under $TMPDIR (or /tmp) into buf. */
static void make_tmpdir(char *buf, size_t cap, const char *tag) {
  const char *t = getenv("TMPDIR");
  int n = snprintf(buf, cap, "%s/gf-energy-%s-XXXXXX", t && *t ? t : "/tmp",
                   tag);
  REQUIRE(n > 0 && (size_t)n < cap);
  REQUIRE(mkdtemp(buf) != NULL);
}

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static void rm_rf(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes text to dir/rel atomically (a temp file renamed over it), so a
 * reader on another thread never sees it half-written. */
static void put(const char *dir, const char *rel, const char *text) {
  char path[4096], tmp[4200];
  REQUIRE(snprintf(path, sizeof path, "%s/%s", dir, rel) < (int)sizeof path);
  REQUIRE(snprintf(tmp, sizeof tmp, "%s.tmp", path) < (int)sizeof tmp);
  FILE *f = fopen(tmp, "w");
  REQUIRE(f);
  REQUIRE(fputs(text, f) >= 0);
  REQUIRE(fclose(f) == 0);
  REQUIRE(rename(tmp, path) == 0);
}

static void put_u64(const char *dir, const char *rel, uint64_t v) {
  char text[32];
  snprintf(text, sizeof text, "%llu\n", (unsigned long long)v);
  put(dir, rel, text);
}

static void mkdir_in(const char *dir, const char *rel) {
  char path[4096];
  REQUIRE(snprintf(path, sizeof path, "%s/%s", dir, rel) < (int)sizeof path);
  REQUIRE(mkdir(path, 0755) == 0);
}

/* A zone directory rel with its name, counter and range. */
static void zone(const char *root, const char *rel, const char *name,
                 uint64_t energy, uint64_t range) {
  char p[512];
  mkdir_in(root, rel);
  snprintf(p, sizeof p, "%s/name", rel);
  char text[80];
  snprintf(text, sizeof text, "%s\n", name);
  put(root, p, text);
  snprintf(p, sizeof p, "%s/energy_uj", rel);
  put_u64(root, p, energy);
  snprintf(p, sizeof p, "%s/max_energy_range_uj", rel);
  put_u64(root, p, range);
}

#define PKG_RANGE 262143328850ULL
#define DRAM_RANGE 65712999613ULL

/* The tree of a two-socket server, as /sys/class/powercap shows it, plus
 * zones that must not count. Counters start at the values below. */
static void server_tree(const char *root) {
  zone(root, "intel-rapl:0", "package-0", 2000000, PKG_RANGE);
  zone(root, "intel-rapl:0/intel-rapl:0:0", "core", 700, PKG_RANGE);
  zone(root, "intel-rapl:0/intel-rapl:0:1", "uncore", 800, PKG_RANGE);
  zone(root, "intel-rapl:0/intel-rapl:0:2", "dram", 3000, DRAM_RANGE);
  zone(root, "intel-rapl:1", "package-1", 5000, PKG_RANGE);
  zone(root, "intel-rapl:1/intel-rapl:1:0", "dram", 100, DRAM_RANGE);
  zone(root, "intel-rapl:1/intel-rapl:1:1", "core", 100, PKG_RANGE);
  /* sysfs lists subzones flat too (links); not counted a second time */
  zone(root, "intel-rapl:0:2", "dram", 3000, DRAM_RANGE);
  /* the platform zone contains the packages; the MMIO interface repeats
   * package 0 */
  zone(root, "intel-rapl:2", "psys", 9000, PKG_RANGE);
  zone(root, "intel-rapl-mmio:0", "package-0", 9000, PKG_RANGE);
}

static gf_energy_meter *open_meter(const gf_energy_config *cfg) {
  gf_energy_meter *m = NULL;
  gf_err err = {0};
  gf_status st = gf_energy_open(&m, cfg, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  REQUIRE(m);
  return m;
}

static gf_energy_config cfg_cpu_only(const char *rapl_root) {
  gf_energy_config c = gf_energy_config_default();
  c.rapl_root = rapl_root;
  c.nvml_library = "";
  c.interval_s = 3600; /* the sampler stays out of the way */
  return c;
}

static gf_energy_reading reading(gf_energy_meter *m) {
  gf_energy_reading r;
  memset(&r, 0, sizeof r);
  gf_err err = {0};
  CHECKF(gf_energy_read(m, &r, &err) == GF_OK, "%s", err.msg);
  return r;
}

/* ---- the meter: config, names -------------------------------------------- */

static void test_names_and_config(void) {
  CHECK_STR_EQ(gf_energy_source_name(GF_ENERGY_NONE), "none");
  CHECK_STR_EQ(gf_energy_source_name(GF_ENERGY_NVML), "nvml");
  CHECK_STR_EQ(gf_energy_source_name(GF_ENERGY_RAPL), "rapl");
  CHECK_STR_EQ(gf_energy_source_name(GF_ENERGY_ESTIMATE), "estimate");
  CHECK_STR_EQ(gf_energy_source_name(GF_ENERGY_NVML_POWER), "nvml-power");
  CHECK_STR_EQ(gf_energy_source_name((gf_energy_source)42), "unknown");

  gf_energy_config d = gf_energy_config_default();
  CHECK(d.rapl_root == NULL && d.rapl_whole_node && d.nvml_library == NULL);
  CHECK_INT_EQ(d.gpu_index, -1);
  CHECK(d.cpu_watts_per_core == 10.0 && d.interval_s == 5.0);

  struct {
    double watts, interval;
    int gpu;
    const char *msg;
  } bad[] = {
      {0, 5, -1, "watts per core"},       {-1, 5, -1, "watts per core"},
      {NAN, 5, -1, "watts per core"},     {INFINITY, 5, -1, "watts per core"},
      {10, 0, -1, "interval"},            {10, 3601, -1, "interval"},
      {10, NAN, -1, "interval"},          {10, 5, -2, "GPU index -2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_energy_config c = cfg_cpu_only("");
    c.cpu_watts_per_core = bad[i].watts;
    c.interval_s = bad[i].interval;
    c.gpu_index = bad[i].gpu;
    gf_energy_meter *m = (gf_energy_meter *)1;
    gf_err err = {0};
    CHECK(gf_energy_open(&m, &c, &err) == GF_EINVAL);
    CHECK(m == NULL);
    CHECKF(strstr(err.msg, bad[i].msg) != NULL, "%s", err.msg);
  }
  gf_energy_close(NULL);
  CHECK(gf_energy_read(NULL, NULL, NULL) == GF_EINVAL);
  CHECK_STR_EQ(gf_energy_note(NULL), "");
}

/* ---- RAPL ---------------------------------------------------------------- */

static void test_rapl_server(void) {
  char root[512];
  make_tmpdir(root, sizeof root, "rapl");
  server_tree(root);
  gf_energy_config c = cfg_cpu_only(root);
  gf_energy_meter *m = open_meter(&c);
  CHECK_INT_EQ(gf_energy_cpu_source(m), GF_ENERGY_RAPL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECK_STR_EQ(gf_energy_note(m), "");
  gf_energy_reading r = reading(m);
  CHECK(r.cpu_joules == 0 && r.gpu_joules == 0);

  /* +1 J package 0, +0.5 J its dram, +2 J package 1, +0.25 J its dram:
   * 3.75 J; core, uncore, psys, the flat link and MMIO move a lot and do
   * not count */
  put_u64(root, "intel-rapl:0/energy_uj", 3000000);
  put_u64(root, "intel-rapl:0/intel-rapl:0:2/energy_uj", 503000);
  put_u64(root, "intel-rapl:1/energy_uj", 2005000);
  put_u64(root, "intel-rapl:1/intel-rapl:1:0/energy_uj", 250100);
  put_u64(root, "intel-rapl:0/intel-rapl:0:0/energy_uj", 900000700);
  put_u64(root, "intel-rapl:0/intel-rapl:0:1/energy_uj", 900000800);
  put_u64(root, "intel-rapl:1/intel-rapl:1:1/energy_uj", 900000100);
  put_u64(root, "intel-rapl:0:2/energy_uj", 900003000);
  put_u64(root, "intel-rapl:2/energy_uj", 900009000);
  put_u64(root, "intel-rapl-mmio:0/energy_uj", 900009000);
  r = reading(m);
  CHECK_NEAR(r.cpu_joules, 3.75, 1e-9);
  CHECK(reading(m).cpu_joules == r.cpu_joules); /* nothing moved */

  /* package 0 wraps: 3000000 -> range -> 0 -> 999: adds
   * (range - 3000000) + 999 + 1 */
  put_u64(root, "intel-rapl:0/energy_uj", 999);
  double want = 3.75 + 1e-6 * (double)(PKG_RANGE - 3000000ULL + 1000ULL);
  r = reading(m);
  CHECK_NEAR(r.cpu_joules, want, 1e-6);
  /* and counts on from there */
  put_u64(root, "intel-rapl:0/energy_uj", 1000999);
  CHECK_NEAR(reading(m).cpu_joules, want + 1.0, 1e-6);

  /* a counter that cannot be read in one sample keeps its total and is
   * counted in full at the next good read */
  char p[600];
  snprintf(p, sizeof p, "%s/intel-rapl:1/energy_uj", root);
  REQUIRE(remove(p) == 0);
  CHECK_NEAR(reading(m).cpu_joules, want + 1.0, 1e-6);
  put_u64(root, "intel-rapl:1/energy_uj", 3005000); /* +1 J since 2005000 */
  CHECK_NEAR(reading(m).cpu_joules, want + 2.0, 1e-6);
  gf_energy_close(m);

  /* Another rank of the node: same source, 0 CPU joules. */
  c.rapl_whole_node = false;
  m = open_meter(&c);
  CHECK_INT_EQ(gf_energy_cpu_source(m), GF_ENERGY_RAPL);
  put_u64(root, "intel-rapl:0/energy_uj", 9000999);
  r = reading(m);
  CHECK(r.cpu_joules == 0);
  CHECK(r.cpu_seconds >= 0);
  gf_energy_close(m);
  rm_rf(root);
}

/* A laptop-like tree with only the platform zone: psys alone counts. */
static void test_rapl_psys_only(void) {
  char root[512];
  make_tmpdir(root, sizeof root, "psys");
  zone(root, "intel-rapl:0", "psys", 100, PKG_RANGE);
  zone(root, "intel-rapl:1", "core", 100, PKG_RANGE); /* not a package */
  gf_energy_config c = cfg_cpu_only(root);
  gf_energy_meter *m = open_meter(&c);
  CHECK_INT_EQ(gf_energy_cpu_source(m), GF_ENERGY_RAPL);
  put_u64(root, "intel-rapl:0/energy_uj", 4000100);
  put_u64(root, "intel-rapl:1/energy_uj", 9000100);
  CHECK_NEAR(reading(m).cpu_joules, 4.0, 1e-9);
  gf_energy_close(m);
  rm_rf(root);
}

/* Trees RAPL cannot use: the estimate, and a note naming why. */
static void expect_estimate(const char *root, const char *why) {
  gf_energy_config c = cfg_cpu_only(root);
  c.cpu_watts_per_core = 12.5;
  gf_energy_meter *m = open_meter(&c);
  CHECK_INT_EQ(gf_energy_cpu_source(m), GF_ENERGY_ESTIMATE);
  const char *note = gf_energy_note(m);
  CHECKF(strstr(note, why) != NULL, "note \"%s\" lacks \"%s\"", note, why);
  CHECKF(strncmp(note, "RAPL: ", 6) == 0, "%s", note);
  CHECKF(strstr(note, "; CPU energy is an estimate at 12.5 W per core") !=
             NULL, "%s", note);
  gf_energy_reading r = reading(m);
  CHECK_NEAR(r.cpu_joules, r.cpu_seconds * 12.5, 1e-12);
  gf_energy_close(m);
}

static void test_rapl_unusable(void) {
  char root[512], p[700];
  /* energy_uj unreadable (see the file comment: a directory, EISDIR) */
  make_tmpdir(root, sizeof root, "eisdir");
  server_tree(root);
  snprintf(p, sizeof p, "%s/intel-rapl:1/energy_uj", root);
  REQUIRE(remove(p) == 0);
  REQUIRE(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/intel-rapl:1/energy_uj: Is a directory", root);
  expect_estimate(root, p);
  rm_rf(root);

  /* a counted subzone without its counter: no partial sum */
  make_tmpdir(root, sizeof root, "nodram");
  server_tree(root);
  snprintf(p, sizeof p, "%s/intel-rapl:0/intel-rapl:0:2/energy_uj", root);
  REQUIRE(remove(p) == 0);
  snprintf(p, sizeof p,
           "%s/intel-rapl:0/intel-rapl:0:2/energy_uj: No such file", root);
  expect_estimate(root, p);
  rm_rf(root);

  /* a range that is no number */
  make_tmpdir(root, sizeof root, "range");
  server_tree(root);
  put(root, "intel-rapl:1/max_energy_range_uj", "lots\n");
  expect_estimate(root, "intel-rapl:1/max_energy_range_uj: not an unsigned");
  rm_rf(root);

  /* zones, but no package and no psys */
  make_tmpdir(root, sizeof root, "nopkg");
  zone(root, "intel-rapl:0", "dram", 1, DRAM_RANGE);
  snprintf(p, sizeof p, "%s: no package zone", root);
  expect_estimate(root, p);
  rm_rf(root);

  /* an empty tree, no tree, RAPL off */
  make_tmpdir(root, sizeof root, "empty");
  snprintf(p, sizeof p, "%s: no package zone", root);
  expect_estimate(root, p);
  snprintf(p, sizeof p, "%s/nothing", root);
  char why[800];
  snprintf(why, sizeof why, "%s: No such file or directory", p);
  expect_estimate(p, why);
  rm_rf(root);
  expect_estimate("", "RAPL: off;");
}

/* Readers on two threads while the counters move: each sees a
 * non-decreasing total; what was seen is counted exactly. */
typedef struct reader_arg {
  gf_energy_meter *m;
  atomic_int *done; /* set by the writer after its last write */
  int bad;          /* reads that went backwards or failed */
  long reads;
} reader_arg;

static void *reader(void *p) {
  reader_arg *a = p;
  double last_j = 0, last_s = 0;
  while (!atomic_load(a->done)) {
    gf_energy_reading r;
    if (gf_energy_read(a->m, &r, NULL) != GF_OK || r.cpu_joules < last_j ||
        r.cpu_seconds < last_s)
      a->bad++;
    last_j = r.cpu_joules;
    last_s = r.cpu_seconds;
    a->reads++;
  }
  return NULL;
}

static void test_rapl_threads(void) {
  char root[512];
  make_tmpdir(root, sizeof root, "threads");
  zone(root, "intel-rapl:0", "package-0", 0, 999999); /* wraps at 1 J */
  gf_energy_config c = cfg_cpu_only(root);
  gf_energy_meter *m = open_meter(&c);
  atomic_int done = 0;
  reader_arg a[2] = {{m, &done, 0, 0}, {m, &done, 0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    REQUIRE(pthread_create(&t[i], NULL, reader, &a[i]) == 0);
  /* 405 steps of 0.1 J, wrapping every 10 steps (900000 -> 0 is 0.1 J
   * with a range of 999999); the last value is 500000 */
  for (int i = 1; i <= 405; i++)
    put_u64(root, "intel-rapl:0/energy_uj", (uint64_t)(i % 10) * 100000);
  atomic_store(&done, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK_INT_EQ(a[0].bad, 0);
  CHECK_INT_EQ(a[1].bad, 0);
  /* 40.5 J when the reads saw every lap; a lap no read fell into (readers
   * not scheduled for 10 writes) is lost, as a wrap the sampler misses
   * would be. What was seen is exact: a multiple of 0.1 J, at least the
   * last lap's 0.5 J, at most 40.5 J. */
  double j = reading(m).cpu_joules;
  CHECKF(j <= 40.5 + 1e-9 && j >= 0.5 - 1e-9, "%g", j);
  CHECKF(fabs(j * 10 - (double)(long long)(j * 10 + 0.5)) < 1e-6, "%.9g", j);
  gf_energy_close(m);
  rm_rf(root);
}

/* ---- the estimate --------------------------------------------------------- */

static void test_estimate(void) {
  gf_energy_config c = cfg_cpu_only("");
  c.cpu_watts_per_core = 7.5;
  gf_energy_meter *m = open_meter(&c);
  CHECK_INT_EQ(gf_energy_cpu_source(m), GF_ENERGY_ESTIMATE);
  CHECK_STR_EQ(gf_energy_note(m),
               "RAPL: off; CPU energy is an estimate at 7.5 W per core");
  /* burn ~50 ms of CPU */
  volatile double x = 0;
  double until = cpu_s() + 0.05;
  while (cpu_s() < until)
    for (int i = 0; i < 10000; i++) x += 1e-9 * i;
  CHECK(x > 0);
  gf_energy_reading r = reading(m);
  CHECKF(r.cpu_seconds >= 0.05 && r.cpu_seconds < 60, "%g", r.cpu_seconds);
  CHECK_NEAR(r.cpu_joules, r.cpu_seconds * 7.5, 1e-12);
  CHECK(r.gpu_joules == 0);
  gf_energy_reading r2 = reading(m);
  CHECK(r2.cpu_seconds >= r.cpu_seconds && r2.cpu_joules >= r.cpu_joules);
  gf_energy_close(m);
}

/* ---- NVML ----------------------------------------------------------------- */

static gf_energy_meter *open_gpu(const char *lib, int index, const char *bus) {
  gf_energy_config c = cfg_cpu_only("");
  c.nvml_library = lib;
  c.gpu_index = index;
  c.gpu_pci_bus_id = bus;
  return open_meter(&c);
}

/* The GPU part of the note ("" when none). */
static const char *gpu_note(gf_energy_meter *m) {
  const char *g = strstr(gf_energy_note(m), "GPU: ");
  return g ? g : "";
}

static void test_nvml_helpers(void) {
  gf_nvml *nv = NULL;
  gf_err err = {0};
  REQUIRE(gf_nvml_open(&nv, GF_FAKE_NVML_ENERGY_PATH, &err) == GF_OK);
  CHECK_INT_EQ(gf_nvml_count(nv), 3);
  CHECK_INT_EQ(gf_nvml_has_energy(nv), 1);
  unsigned long long mj = 7;
  int code = 0;
  CHECK_INT_EQ(gf_nvml_energy_mj(nv, 0, &mj, &code), 1);
  CHECK(mj == 5000000ULL && code == 0);
  mj = 7;
  CHECK_INT_EQ(gf_nvml_energy_mj(nv, 1, &mj, &code), 0);
  CHECK(mj == 7 && code == 3);
  CHECK_INT_EQ(gf_nvml_energy_mj(nv, 3, &mj, &code), 0);
  CHECK_INT_EQ(code, -1);
  CHECK_INT_EQ(gf_nvml_energy_mj(nv, -1, &mj, NULL), 0);
  double w = 0;
  CHECK_INT_EQ(gf_nvml_power_w(nv, 1, &w), 1);
  CHECK(w == 200.0);
  CHECK_INT_EQ(gf_nvml_power_w(nv, 2, &w), 0);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(nv, "00000000:3B:00.0"), 1);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(nv, "0000:5e:00.0"), 2);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(nv, "0000:99:00.0"), -1);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(nv, ""), -1);
  gf_nvml_close(nv);

  /* test_monitor's fake: no energy entry point, no bus-id lookup; the
   * monitor's seven still resolve */
  REQUIRE(gf_nvml_open(&nv, GF_FAKE_NVML_PATH, &err) == GF_OK);
  CHECK_INT_EQ(gf_nvml_has_energy(nv), 0);
  CHECK_INT_EQ(gf_nvml_energy_mj(nv, 0, &mj, &code), 0);
  CHECK_INT_EQ(code, -1);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(nv, "0000:3b:00.0"), -1);
  CHECK_INT_EQ(gf_nvml_power_w(nv, 0, &w), 1);
  CHECK(w == 150.5);
  gf_nvml_close(nv);
  CHECK_INT_EQ(gf_nvml_has_energy(NULL), 0);
  CHECK_INT_EQ(gf_nvml_energy_mj(NULL, 0, &mj, NULL), 0);
  CHECK_INT_EQ(gf_nvml_index_by_pci_bus_id(NULL, "x"), -1);
}

static void test_nvml_energy(void) {
  void *lib = dlopen(GF_FAKE_NVML_ENERGY_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  int *live = dlsym(lib, "fake_nvml_live");
  unsigned long long *mj = dlsym(lib, "fake_energy_mj");
  unsigned int *mw = dlsym(lib, "fake_power_mw");
  REQUIRE(live && mj && mw);

  /* GPU 0 by index: the counter, from its value at open */
  mj[0] = 5000000ULL;
  gf_energy_meter *m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 0, NULL);
  CHECK_INT_EQ(*live, 1);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NVML);
  CHECK_STR_EQ(gpu_note(m), "");
  CHECK(reading(m).gpu_joules == 0);
  mj[0] += 12345;
  CHECK_NEAR(reading(m).gpu_joules, 12.345, 1e-9);
  CHECK_NEAR(reading(m).gpu_joules, 12.345, 1e-9);
  /* the driver reloaded: the counter restarts from 0 */
  mj[0] = 100;
  CHECK_NEAR(reading(m).gpu_joules, 12.445, 1e-9);
  mj[0] = 1100;
  CHECK_NEAR(reading(m).gpu_joules, 13.445, 1e-9);
  gf_energy_close(m);
  CHECK_INT_EQ(*live, 0); /* nvmlShutdown on close */

  /* by PCI bus id, preferred over the index (2 here) */
  mj[0] = 1000;
  m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 2, "0000:1a:00.0");
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NVML);
  mj[0] = 3000;
  CHECK_NEAR(reading(m).gpu_joules, 2.0, 1e-9);
  gf_energy_close(m);

  /* an unknown bus id is no guess at the index */
  m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 0, "0000:99:00.0");
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECKF(strstr(gpu_note(m), "finds no GPU at PCI bus id 0000:99:00.0") != NULL,
         "%s", gf_energy_note(m));
  CHECK_INT_EQ(*live, 0); /* closed again at once */
  mj[0] += 5000;
  CHECK(reading(m).gpu_joules == 0);
  gf_energy_close(m);

  /* an index NVML does not have */
  m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 5, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECKF(strstr(gpu_note(m), "has 3 GPUs, no GPU 5") != NULL, "%s",
         gf_energy_note(m));
  gf_energy_close(m);

  /* GPU 1: no counter (NVML_ERROR_NOT_SUPPORTED) but power: integrated,
   * labelled nvml-power; at most 200 W over the time it was open */
  double t0 = mono_s();
  m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 1, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NVML_POWER);
  CHECKF(strstr(gpu_note(m), "nvmlDeviceGetTotalEnergyConsumption of GPU 1 "
                             "failed (NVML error 3)") != NULL &&
             strstr(gpu_note(m), "integrated from its power readings") != NULL,
         "%s", gf_energy_note(m));
  double j1 = reading(m).gpu_joules;
  double j2 = reading(m).gpu_joules;
  double t1 = mono_s();
  CHECKF(j1 > 0 && j2 >= j1 && j2 <= 200.0 * (t1 - t0) + 1e-9,
         "%g %g over %g s", j1, j2, t1 - t0);
  gf_energy_close(m);

  /* GPU 2: neither */
  m = open_gpu(GF_FAKE_NVML_ENERGY_PATH, 2, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECKF(strstr(gpu_note(m), "and it has no power reading; no GPU energy") !=
             NULL, "%s", gf_energy_note(m));
  gf_energy_close(m);
  CHECK_INT_EQ(*live, 0);
  dlclose(lib);
}

/* A library without the energy entry point (test_monitor's fake), no
 * library, and no GPU asked for: never an error. */
static void test_nvml_without_energy(void) {
  gf_energy_meter *m = open_gpu(GF_FAKE_NVML_PATH, 0, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NVML_POWER);
  CHECKF(strstr(gpu_note(m), "has no nvmlDeviceGetTotalEnergyConsumption") !=
             NULL, "%s", gf_energy_note(m));
  CHECK(reading(m).gpu_joules > 0);
  gf_energy_close(m);

  m = open_gpu(GF_FAKE_NVML_PATH, 1, NULL); /* no power reading either */
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECK(reading(m).gpu_joules == 0);
  gf_energy_close(m);

  m = open_gpu(GF_FAKE_NVML_PATH, -1, "0000:3b:00.0"); /* no lookup */
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECKF(strstr(gpu_note(m), "finds no GPU at PCI bus id") != NULL, "%s",
         gf_energy_note(m));
  gf_energy_close(m);

  m = open_gpu("/nonexistent/libnvidia-ml.so.1", 0, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECKF(strncmp(gpu_note(m), "GPU: cannot dlopen /nonexistent/", 32) == 0,
         "%s", gf_energy_note(m));
  gf_energy_close(m);

  /* no GPU asked for: no GPU note */
  m = open_gpu("", 0, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECK_STR_EQ(gpu_note(m), "");
  gf_energy_close(m);
  m = open_gpu(GF_FAKE_NVML_PATH, -1, NULL);
  CHECK_INT_EQ(gf_energy_gpu_source(m), GF_ENERGY_NONE);
  CHECK_STR_EQ(gpu_note(m), "");
  gf_energy_close(m);
}

/* The sampler's wait ends at once on close, whatever the interval. */
static void test_prompt_close(void) {
  gf_energy_config c = cfg_cpu_only("");
  c.interval_s = 3600;
  gf_energy_meter *m = open_meter(&c);
  double t0 = mono_s();
  gf_energy_close(m);
  CHECKF(mono_s() - t0 < 2.0, "close took %g s", mono_s() - t0);
}

/* ---- the price table ------------------------------------------------------ */

static const char PRICES[] =
    "# instance kind     market     usd/hour  unit\n"
    "c7i.2xlarge         on-demand  0.357     node\n"
    "\n"
    "c7i.2xlarge\tspot\t0.1214\tnode   # a comment after the fields\r\n"
    "   \t  \n"
    "h100-80gb           spot       2.10      gpu\n"
    "gcp/a2-highgpu:1g   on-demand  3.673385  gpu\n"
    "free_tier           spot       0         node";

static void test_price_parse(void) {
  gf_price_table t;
  gf_price_table_init(&t);
  gf_err err = {0};
  REQUIRE(gf_price_parse(PRICES, strlen(PRICES), "prices.txt", &t, &err) ==
          GF_OK);
  REQUIRE(t.n == 5);
  CHECK_STR_EQ(t.entries[0].kind, "c7i.2xlarge");
  CHECK_INT_EQ(t.entries[0].market, GF_MARKET_ON_DEMAND);
  CHECK_INT_EQ(t.entries[0].unit, GF_PRICE_PER_NODE);
  CHECK(t.entries[0].usd_per_hour == strtod("0.357", NULL));
  CHECK_INT_EQ(t.entries[0].line, 2);
  CHECK_INT_EQ(t.entries[1].market, GF_MARKET_SPOT);
  CHECK(t.entries[1].usd_per_hour == 0.1214);
  CHECK_INT_EQ(t.entries[1].line, 4);
  CHECK_INT_EQ(t.entries[2].unit, GF_PRICE_PER_GPU);
  CHECK(t.entries[2].usd_per_hour == 2.1);
  CHECK_STR_EQ(t.entries[3].kind, "gcp/a2-highgpu:1g");
  CHECK(t.entries[3].usd_per_hour == 3.673385);
  CHECK(t.entries[4].usd_per_hour == 0 && t.entries[4].line == 8);

  const gf_price_entry *e = NULL;
  CHECK(gf_price_lookup(&t, "c7i.2xlarge", GF_MARKET_SPOT, &e, &err) == GF_OK);
  CHECK(e == &t.entries[1]);
  CHECK(gf_price_lookup(&t, "h100-80gb", GF_MARKET_ON_DEMAND, &e, &err) ==
        GF_ENOTFOUND);
  CHECK(e == NULL);
  CHECK_STR_EQ(err.msg, "no on-demand price for h100-80gb; the price table "
                        "has only h100-80gb spot");
  CHECK(gf_price_lookup(&t, "m5.large", GF_MARKET_SPOT, &e, &err) ==
        GF_ENOTFOUND);
  CHECK_STR_EQ(err.msg, "no spot price for m5.large; the price table has "
                        "c7i.2xlarge on-demand, c7i.2xlarge spot, h100-80gb "
                        "spot, gcp/a2-highgpu:1g on-demand, free_tier spot");
  CHECK(gf_price_lookup(&t, "c7i.2xlarge", GF_MARKET_SPOT, NULL, &err) ==
        GF_EINVAL);
  gf_price_table_free(&t);
  CHECK(t.entries == NULL && t.n == 0);
  gf_price_table_free(&t); /* twice is fine */
  gf_price_table_free(NULL);

  /* nothing but comments: an empty table, whose lookups say so */
  REQUIRE(gf_price_parse("# none\n\n", 8, NULL, &t, &err) == GF_OK);
  CHECK(t.n == 0 && t.entries == NULL);
  CHECK(gf_price_lookup(&t, "x", GF_MARKET_SPOT, &e, &err) == GF_ENOTFOUND);
  CHECK(strstr(err.msg, "the price table is empty") != NULL);
  REQUIRE(gf_price_parse(NULL, 0, NULL, &t, &err) == GF_OK);
  CHECK(t.n == 0);

  /* the buffer is not NUL-terminated: only len bytes count */
  const char cut[] = "a spot 1 node\nb spot 2 node";
  REQUIRE(gf_price_parse(cut, 13, NULL, &t, &err) == GF_OK);
  CHECK(t.n == 1 && strcmp(t.entries[0].kind, "a") == 0);
  gf_price_table_free(&t);

  /* many entries: the message lists what fits, then "..." */
  char big[8192];
  size_t bl = 0;
  for (int i = 0; i < 100; i++)
    bl += (size_t)snprintf(big + bl, sizeof big - bl,
                           "kind-%03d on-demand 1 node\n", i);
  REQUIRE(gf_price_parse(big, bl, NULL, &t, &err) == GF_OK);
  CHECK(gf_price_lookup(&t, "nope", GF_MARKET_SPOT, &e, &err) == GF_ENOTFOUND);
  CHECKF(strstr(err.msg, "kind-000 on-demand, kind-001 on-demand") != NULL &&
             strlen(err.msg) > 300 &&
             strcmp(err.msg + strlen(err.msg) - 5, ", ...") == 0,
         "%s", err.msg);
  gf_price_table_free(&t);
}

/* Exact values, against strtod in the C locale (this test never calls
 * setlocale). */
static void test_price_numbers(void) {
  const char *ok[] = {"0",     "0.0",        "7",  "00.50",
                      "2.10",  "0.1",        "1.000000000000000000000000000",
                      "123456789012345", "0.000000000000000000001",
                      "99999.9999999999"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char text[128];
    int n = snprintf(text, sizeof text, "k spot %s gpu\n", ok[i]);
    gf_price_table t;
    gf_err err = {0};
    CHECKF(gf_price_parse(text, (size_t)n, NULL, &t, &err) == GF_OK, "%s: %s",
           ok[i], err.msg);
    if (t.n == 1)
      CHECKF(t.entries[0].usd_per_hour == strtod(ok[i], NULL), "%s: %.17g",
             ok[i], t.entries[0].usd_per_hour);
    gf_price_table_free(&t);
  }
}

/* Each error class names the origin, the line and what is wrong. */
static void test_price_errors(void) {
  struct {
    const char *text;
    const char *msg;
  } bad[] = {
      {"a spot 1 node\n# c\nb spot 1\n",
       "p.txt: line 3: 3 fields, expected 4 (kind market usd/hour unit)"},
      {"a spot 1 node extra\n", "p.txt: line 1: 5 fields, expected 4"},
      {"\n\nlonely\n", "p.txt: line 3: 1 field, expected 4"},
      {"a spot 1 node\na spot 2 gpu\n",
       "p.txt: line 2: duplicate entry a spot (first on line 1)"},
      {"bad!kind spot 1 node\n",
       "p.txt: line 1: kind 'bad!kind' has the character 0x21 at 4"},
      {"caf\xc3\xa9 spot 1 node\n",
       "p.txt: line 1: kind 'caf?\?' has the character 0xc3 at 4"},
      {"a Spot 1 node\n", "p.txt: line 1: market 'Spot' (on-demand or spot)"},
      {"a spot 1 nodes\n", "p.txt: line 1: unit 'nodes' (node or gpu)"},
      {"a spot -1 node\n", "p.txt: line 1: price '-1' is negative"},
      {"a spot +1 node\n", "p.txt: line 1: price '+1' has a sign"},
      {"a spot nan node\n", "p.txt: line 1: price 'nan' is not a plain"},
      {"a spot inf node\n", "p.txt: line 1: price 'inf' is not a plain"},
      {"a spot 1e3 node\n", "p.txt: line 1: price '1e3' is not a plain"},
      {"a spot 0x10 node\n", "p.txt: line 1: price '0x10' is not a plain"},
      {"a spot 1. node\n", "p.txt: line 1: price '1.' is not a plain"},
      {"a spot .5 node\n", "p.txt: line 1: price '.5' is not a plain"},
      {"a spot 1,5 node\n", "p.txt: line 1: price '1,5' is not a plain"},
      {"a spot 1.2.3 node\n", "p.txt: line 1: price '1.2.3' is not a plain"},
      {"a spot 12abc node\n", "p.txt: line 1: price '12abc' is not a plain"},
      {"a spot 1234567890.123456 node\n",
       "p.txt: line 1: price '1234567890.123456' has more than 15 significant"},
      {"a spot 0.00000000000000000000001 node\n",
       "has more than 22 decimals"},
      {"a spot 1\r node\n", "p.txt: line 1: price '1?' is not a plain"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_price_table t = {(gf_price_entry *)1, 7};
    gf_err err = {0};
    CHECK(gf_price_parse(bad[i].text, strlen(bad[i].text), "p.txt", &t,
                         &err) == GF_EFORMAT);
    CHECK(t.entries == NULL && t.n == 0);
    CHECKF(strstr(err.msg, bad[i].msg) != NULL, "case %zu: \"%s\"", i,
           err.msg);
  }

  /* a NUL byte; a kind of 64 characters (63 is fine) */
  gf_price_table t;
  gf_err err = {0};
  const char nul[] = "a spot 1 node\nb spot\0 1 node\n";
  CHECK(gf_price_parse(nul, sizeof nul - 1, "p.txt", &t, &err) == GF_EFORMAT);
  CHECK_STR_EQ(err.msg, "p.txt: line 2: a NUL byte");
  char text[256];
  memset(text, 'k', 63);
  snprintf(text + 63, sizeof text - 63, " spot 1 node\n");
  CHECK(gf_price_parse(text, strlen(text), "p.txt", &t, &err) == GF_OK);
  CHECK(t.n == 1 && strlen(t.entries[0].kind) == 63);
  gf_price_table_free(&t);
  memset(text, 'k', 64);
  snprintf(text + 64, sizeof text - 64, " spot 1 node\n");
  CHECK(gf_price_parse(text, strlen(text), "p.txt", &t, &err) == GF_EFORMAT);
  CHECKF(strstr(err.msg, "line 1: kind 'kkkk") != NULL &&
             strstr(err.msg, "is 64 characters long, more than 63") != NULL,
         "%s", err.msg);

  /* GF_PRICE_MAX_ENTRIES entries, then one more */
  size_t cap = (GF_PRICE_MAX_ENTRIES + 1) * 32;
  char *many = malloc(cap);
  REQUIRE(many);
  size_t len = 0;
  for (int i = 0; i < GF_PRICE_MAX_ENTRIES; i++)
    len += (size_t)snprintf(many + len, cap - len, "k%d spot 1 node\n", i);
  CHECK(gf_price_parse(many, len, NULL, &t, &err) == GF_OK);
  CHECK(t.n == GF_PRICE_MAX_ENTRIES);
  gf_price_table_free(&t);
  len += (size_t)snprintf(many + len, cap - len, "last spot 1 node\n");
  CHECK(gf_price_parse(many, len, NULL, &t, &err) == GF_EFORMAT);
  CHECK_STR_EQ(err.msg, "price table: line 4097: more than 4096 entries");
  free(many);

  /* more than a price file may hold */
  CHECK(gf_price_parse("", (size_t)GF_PRICE_FILE_MAX + 1, NULL, &t, &err) ==
        GF_EINVAL);
  CHECK(strstr(err.msg, "more than the 1048576") != NULL);
}

static void test_price_words(void) {
  gf_price_market mk;
  gf_price_unit u;
  gf_err err = {0};
  CHECK(gf_price_parse_market("spot", &mk, &err) == GF_OK &&
        mk == GF_MARKET_SPOT);
  CHECK(gf_price_parse_market("on-demand", &mk, &err) == GF_OK &&
        mk == GF_MARKET_ON_DEMAND);
  CHECK(gf_price_parse_market("ondemand", &mk, &err) == GF_EINVAL);
  CHECK_STR_EQ(err.msg, "market 'ondemand' (on-demand or spot)");
  CHECK(gf_price_parse_market(NULL, &mk, &err) == GF_EINVAL);
  CHECK(gf_price_parse_unit("gpu", &u, &err) == GF_OK && u == GF_PRICE_PER_GPU);
  CHECK(gf_price_parse_unit("node", &u, &err) == GF_OK &&
        u == GF_PRICE_PER_NODE);
  CHECK(gf_price_parse_unit("GPU", &u, &err) == GF_EINVAL);
  CHECK_STR_EQ(err.msg, "price unit 'GPU' (node or gpu)");
  CHECK_STR_EQ(gf_price_market_name(GF_MARKET_SPOT), "spot");
  CHECK_STR_EQ(gf_price_market_name(GF_MARKET_ON_DEMAND), "on-demand");
  CHECK_STR_EQ(gf_price_unit_name(GF_PRICE_PER_GPU), "gpu");
  CHECK_STR_EQ(gf_price_unit_name(GF_PRICE_PER_NODE), "node");
  CHECK_STR_EQ(gf_price_unit_name((gf_price_unit)9), "unknown");
}

static void test_price_load(void) {
  char dir[512], path[700];
  make_tmpdir(dir, sizeof dir, "price");
  put(dir, "prices.txt", PRICES);
  snprintf(path, sizeof path, "%s/prices.txt", dir);
  gf_price_table t;
  gf_err err = {0};
  CHECKF(gf_price_load(path, &t, &err) == GF_OK, "%s", err.msg);
  CHECK(t.n == 5);
  gf_price_table_free(&t);

  put(dir, "bad.txt", "a spot 1 node\na spot 1 node\n");
  snprintf(path, sizeof path, "%s/bad.txt", dir);
  CHECK(gf_price_load(path, &t, &err) == GF_EFORMAT);
  char want[800];
  snprintf(want, sizeof want, "%s: line 2: duplicate entry a spot", path);
  CHECKF(strstr(err.msg, want) == err.msg, "%s", err.msg);

  snprintf(path, sizeof path, "%s/none.txt", dir);
  CHECK(gf_price_load(path, &t, &err) == GF_EIO);
  CHECK(strstr(err.msg, "none.txt: No such file or directory") != NULL);
  CHECK(gf_price_load(dir, &t, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "not a regular file") != NULL);
  CHECK(gf_price_load("", &t, &err) == GF_EINVAL);

  /* 1 MiB + 1 of blank lines */
  snprintf(path, sizeof path, "%s/huge.txt", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  for (int i = 0; i <= GF_PRICE_FILE_MAX; i++) fputc('\n', f);
  REQUIRE(fclose(f) == 0);
  CHECK(gf_price_load(path, &t, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "1048577 bytes, more than the 1048576") != NULL);
  rm_rf(dir);
}

int main(void) {
  test_names_and_config();
  test_rapl_server();
  test_rapl_psys_only();
  test_rapl_unusable();
  test_rapl_threads();
  test_estimate();
  test_nvml_helpers();
  test_nvml_energy();
  test_nvml_without_energy();
  test_prompt_close();
  test_price_parse();
  test_price_numbers();
  test_price_errors();
  test_price_words();
  test_price_load();
  return check_report();
}

#endif
