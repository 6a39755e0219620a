/* energy.c - the energy meter of one training process (gf/energy.h): the
 * choice of CPU source (RAPL's powercap counters, else an estimate from the
 * process's CPU time) and GPU source (NVML's energy counter, else NVML's
 * power integrated over time, else none), their baselines, the wrap-aware
 * accumulation, and the sampler thread that reads often enough to see every
 * RAPL wrap.
 *
 * Not the price table (price.c), and not what the trainer logs: it only
 * measures. NVML comes through gf_nvml (monitor_nvml.c), so no NVML header
 * or library is needed to build. */
#include "gf/energy.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/fs.h"
#include "gf/monitor.h"
#include "gf/note.h"
#include "gf/text.h"
#include "sampler_thread.h"

#define RAPL_MAX_ZONES 64
#define NOTE_CAP 1024

typedef struct rapl_zone {
  char *energy_path; /* malloc'd "<root>/intel-rapl:N[/intel-rapl:N:M]/
                        energy_uj", owned by the meter */
  uint64_t range_uj; /* max_energy_range_uj: the counter's largest value */
  uint64_t last_uj;  /* the counter at the last good read (guarded) */
} rapl_zone;

struct gf_energy_meter {
  /* Fixed at open. */
  gf_energy_source cpu_src;  /* RAPL or ESTIMATE */
  gf_energy_source gpu_src;  /* NVML, NVML_POWER or NONE */
  int rapl_read;             /* 1: this process reads RAPL (source RAPL and
                                rapl_whole_node) */
  double watts_per_core;     /* ESTIMATE's W per CPU-second */
  double interval_s;         /* sampler period, seconds */
  rapl_zone *zones;          /* malloc'd, n_zones of them; NULL unless RAPL */
  int n_zones;               /* 0..RAPL_MAX_ZONES */
  gf_nvml *nv;               /* owned; NULL when the GPU source is NONE */
  int gpu;                   /* NVML index of the measured GPU, -1: none */
  double cpu0_s;             /* process CPU seconds at open */
  char note[NOTE_CAP];       /* gf_energy_note; NUL-terminated */

  gf_sampler_thread sampler; /* its lock guards everything below */

  uint64_t rapl_uj;          /* RAPL microjoules since open, all zones */
  uint64_t gpu_last_mj;      /* NVML counter at the last good read */
  uint64_t gpu_mj;           /* NVML millijoules since open */
  double power_last_w;       /* NVML_POWER: the last reading, watts */
  double power_last_t;       /* ... and when it was taken (gf_mono_s) */
  double power_j;            /* NVML_POWER: joules integrated since open */
  double cpu_s;              /* process CPU seconds since open, the largest
                                seen (so reads never go backwards) */
};

const char *gf_energy_source_name(gf_energy_source s) {
  switch (s) {
    case GF_ENERGY_NONE: return "none";
    case GF_ENERGY_NVML: return "nvml";
    case GF_ENERGY_RAPL: return "rapl";
    case GF_ENERGY_ESTIMATE: return "estimate";
    case GF_ENERGY_NVML_POWER: return "nvml-power";
  }
  return "unknown";
}

gf_energy_config gf_energy_config_default(void) {
  gf_energy_config c;
  memset(&c, 0, sizeof c);
  c.rapl_root = NULL;
  c.rapl_whole_node = true;
  c.nvml_library = NULL;
  c.gpu_index = -1;
  c.gpu_pci_bus_id = NULL;
  c.cpu_watts_per_core = GF_ENERGY_DEFAULT_CPU_WATTS_PER_CORE;
  c.interval_s = GF_ENERGY_DEFAULT_INTERVAL_S;
  return c;
}

/* ---- small readers -------------------------------------------------------- */

/* This process's CPU time (all threads) in seconds; 0 on success, else
 * errno. */
static int process_cpu_s(double *out) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return errno;
  *out = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  return 0;
}

/* Reads at most cap-1 bytes of a (sysfs) file into buf, NUL-terminated.
 * 0 on success, else errno (EISDIR for a directory, EACCES, ENOENT...). */
static int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return e;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return 0;
}

/* Reads a file holding one unsigned decimal (sysfs: digits and a newline).
 * 0 on success; errno when unreadable; -1 when it holds no such number. */
static int read_u64(const char *path, uint64_t *out) {
  char buf[64];
  int e = read_small(path, buf, sizeof buf);
  if (e) return e;
  const char *p = buf;
  if (*p < '0' || *p > '9') return -1;
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  while (*p == '\n' || *p == ' ' || *p == '\r' || *p == '\t') p++;
  if (*p) return -1;
  *out = v;
  return 0;
}

static const char *read_why(int e) {
  return e < 0 ? "not an unsigned number" : strerror(e);
}

/* Parses "intel-rapl:N" (colons == 1) or "intel-rapl:N:M" (colons == 2)
 * exactly; 1 and the numbers when it matches. */
static int rapl_name(const char *s, int colons, unsigned *n, unsigned *m) {
  static const char prefix[] = "intel-rapl:";
  if (strncmp(s, prefix, sizeof prefix - 1) != 0) return 0;
  s += sizeof prefix - 1;
  unsigned v[2] = {0, 0};
  for (int k = 0; k < colons; k++) {
    if (k > 0) {
      if (*s != ':') return 0;
      s++;
    }
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
      if (++digits > 6) return 0;
      v[k] = v[k] * 10 + (unsigned)(*s - '0');
    }
    if (!digits) return 0;
  }
  if (*s) return 0;
  *n = v[0];
  if (m) *m = v[1];
  return 1;
}

/* The entries of dir matching rapl_name(.., colons, ..) with first number
 * `parent` (when colons == 2), sorted by their last number, into ids (at
 * most cap). Returns the count, or -errno when dir cannot be opened. */
static int rapl_list(const char *dir, int colons, unsigned parent,
                     unsigned *ids, int cap) {
  DIR *d = opendir(dir);
  if (!d) return -errno;
  int k = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    unsigned n, m;
    if (!rapl_name(de->d_name, colons, &n, colons == 2 ? &m : NULL)) continue;
    if (colons == 2 && n != parent) continue;
    if (k < cap) ids[k] = colons == 2 ? m : n;
    k++;
  }
  closedir(d);
  if (k > cap) k = cap + 1; /* the caller refuses "too many" */
  /* insertion sort: a few entries */
  for (int i = 1; i < k && i < cap; i++)
    for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
      unsigned t = ids[j];
      ids[j] = ids[j - 1];
      ids[j - 1] = t;
    }
  return k;
}

/* The `name` of zone directory dir into buf (newline stripped); 0 or errno. */
static int zone_name(const char *dir, char *buf, size_t cap) {
  char path[GF_PATH_MAX];
  if (!gf_fits(snprintf(path, sizeof path, "%s/name", dir), sizeof path))
    return ENAMETOOLONG;
  int e = read_small(path, buf, cap);
  if (e) return e;
  size_t n = strlen(buf);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
  return 0;
}

/* Adds zone directory dir to m->zones: reads max_energy_range_uj and the
 * energy_uj baseline. 0 on success; else the reason in why. */
static int zone_add(gf_energy_meter *m, const char *dir, char *why,
                    size_t why_cap) {
  if (m->n_zones >= RAPL_MAX_ZONES) {
    gf_note(why, why_cap, "more than %d zones", RAPL_MAX_ZONES);
    return -1;
  }
  char path[GF_PATH_MAX];
  uint64_t range = 0, now = 0;
  if (!gf_fits(snprintf(path, sizeof path, "%s/max_energy_range_uj", dir),
               sizeof path)) {
    gf_note(why, why_cap, "%s: path too long", dir);
    return -1;
  }
  int e = read_u64(path, &range);
  if (e == 0 && range == 0) e = -1;
  if (e) {
    gf_note(why, why_cap, "%s: %s", path, read_why(e));
    return -1;
  }
  char *energy = gf_path_join_alloc(dir, "energy_uj");
  if (!energy) {
    gf_note(why, why_cap, "out of memory");
    return -1;
  }
  e = read_u64(energy, &now);
  if (e) {
    gf_note(why, why_cap, "%s: %s", energy, read_why(e));
    free(energy);
    return -1;
  }
  rapl_zone *z = &m->zones[m->n_zones++];
  z->energy_path = energy;
  z->range_uj = range;
  z->last_uj = now;
  return 0;
}

static void zones_free(gf_energy_meter *m) {
  for (int i = 0; i < m->n_zones; i++) free(m->zones[i].energy_path);
  free(m->zones);
  m->zones = NULL;
  m->n_zones = 0;
}

/* Finds the package (+ dram) zones, or the psys zone alone, under root and
 * takes their baselines. 1 when RAPL is usable (m->zones set); 0 with the
 * reason in why (m->zones freed). */
static int rapl_probe(gf_energy_meter *m, const char *root, char *why,
                      size_t why_cap) {
  m->zones = calloc(RAPL_MAX_ZONES, sizeof *m->zones);
  if (!m->zones) {
    gf_note(why, why_cap, "out of memory");
    return 0;
  }
  unsigned top[RAPL_MAX_ZONES];
  int n_top = rapl_list(root, 1, 0, top, RAPL_MAX_ZONES);
  if (n_top < 0) {
    gf_note(why, why_cap, "%s: %s", root, strerror(-n_top));
    goto fail;
  }
  if (n_top > RAPL_MAX_ZONES) {
    gf_note(why, why_cap, "%s: more than %d zones", root,
                           RAPL_MAX_ZONES);
    goto fail;
  }
  int packages = 0, psys = -1;
  char dir[GF_PATH_MAX], sub[GF_PATH_MAX], name[64];
  for (int i = 0; i < n_top; i++) {
    if (!gf_fits(snprintf(dir, sizeof dir, "%s/intel-rapl:%u", root, top[i]),
                 sizeof dir)) {
      gf_note(why, why_cap, "%s: path too long", root);
      goto fail;
    }
    int e = zone_name(dir, name, sizeof name);
    if (e) {
      gf_note(why, why_cap, "%s/name: %s", dir, strerror(e));
      goto fail;
    }
    if (strcmp(name, "psys") == 0) {
      if (psys < 0) psys = (int)top[i];
      continue;
    }
    if (strncmp(name, "package", 7) != 0) continue;
    packages++;
    if (zone_add(m, dir, why, why_cap)) goto fail;
    unsigned subs[RAPL_MAX_ZONES];
    int n_sub = rapl_list(dir, 2, top[i], subs, RAPL_MAX_ZONES);
    if (n_sub < 0) {
      gf_note(why, why_cap, "%s: %s", dir, strerror(-n_sub));
      goto fail;
    }
    for (int j = 0; j < n_sub && j < RAPL_MAX_ZONES; j++) {
      if (!gf_fits(snprintf(sub, sizeof sub, "%s/intel-rapl:%u:%u", dir,
                            top[i], subs[j]),
                   sizeof sub)) {
        gf_note(why, why_cap, "%s: path too long", dir);
        goto fail;
      }
      e = zone_name(sub, name, sizeof name);
      if (e) {
        gf_note(why, why_cap, "%s/name: %s", sub, strerror(e));
        goto fail;
      }
      if (strcmp(name, "dram") == 0 && zone_add(m, sub, why, why_cap))
        goto fail;
    }
  }
  if (packages == 0) {
    if (psys < 0) {
      gf_note(why, why_cap, "%s: no package zone", root);
      goto fail;
    }
    if (!gf_fits(snprintf(dir, sizeof dir, "%s/intel-rapl:%d", root, psys),
                 sizeof dir) ||
        zone_add(m, dir, why, why_cap))
      goto fail;
  }
  return 1;
fail:
  zones_free(m);
  return 0;
}

/* ---- sampling ------------------------------------------------------------- */

/* One sample of every source this meter reads; m->sampler.lock held. */
static void sample_locked(gf_energy_meter *m) {
  if (m->rapl_read) {
    for (int i = 0; i < m->n_zones; i++) {
      rapl_zone *z = &m->zones[i];
      uint64_t v;
      if (read_u64(z->energy_path, &v) != 0) continue; /* next sample */
      if (v >= z->last_uj)
        m->rapl_uj += v - z->last_uj;
      else if (z->last_uj <= z->range_uj)
        m->rapl_uj += (z->range_uj - z->last_uj) + v + 1; /* one wrap */
      else
        m->rapl_uj += v; /* last above the range: count from 0 */
      z->last_uj = v;
    }
  }
  if (m->gpu_src == GF_ENERGY_NVML) {
    unsigned long long mj;
    if (gf_nvml_energy_mj(m->nv, m->gpu, &mj, NULL)) {
      uint64_t v = (uint64_t)mj;
      m->gpu_mj += v >= m->gpu_last_mj ? v - m->gpu_last_mj : v;
      m->gpu_last_mj = v;
    }
  } else if (m->gpu_src == GF_ENERGY_NVML_POWER) {
    double w;
    if (gf_nvml_power_w(m->nv, m->gpu, &w)) {
      double t = gf_mono_s();
      if (t > m->power_last_t)
        m->power_j += 0.5 * (w + m->power_last_w) * (t - m->power_last_t);
      m->power_last_w = w;
      m->power_last_t = t;
    }
  }
}

/* gf_sampler_tick: one sample, with the sampler's lock held. */
static void sampler_tick(void *arg) { sample_locked(arg); }

/* ---- open, read, close ---------------------------------------------------- */

/* Appends "; " (when note is not empty) and the formatted text to m->note,
 * cutting it short with "..." when the note is full. */
static void note_add(gf_energy_meter *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_add(gf_energy_meter *m, const char *fmt, ...) {
  size_t len = strlen(m->note);
  if (len && len + 2 < sizeof m->note) memcpy(m->note + len, "; ", 3);
  va_list ap;
  va_start(ap, fmt);
  gf_vnote_append(m->note, sizeof m->note, fmt, ap);
  va_end(ap);
}

/* Picks the CPU source: RAPL when usable, else the estimate (noted). */
static void open_cpu(gf_energy_meter *m, const gf_energy_config *cfg) {
  const char *root = cfg->rapl_root ? cfg->rapl_root
                                    : GF_ENERGY_DEFAULT_RAPL_ROOT;
  char why[768];
  why[0] = '\0';
  if (!root[0]) {
    gf_note(why, sizeof why, "off");
  } else if (rapl_probe(m, root, why, sizeof why)) {
    m->cpu_src = GF_ENERGY_RAPL;
    m->rapl_read = cfg->rapl_whole_node ? 1 : 0;
    if (!m->rapl_read) zones_free(m); /* the node's rank 0 reads them */
    return;
  }
  m->cpu_src = GF_ENERGY_ESTIMATE;
  note_add(m, "RAPL: %s; CPU energy is an estimate at %g W per core", why,
           m->watts_per_core);
}

/* Picks the GPU source: the energy counter, else power readings, else none
 * (noted). A closed NVML when none. */
static void open_gpu(gf_energy_meter *m, const gf_energy_config *cfg) {
  m->gpu_src = GF_ENERGY_NONE;
  m->gpu = -1;
  int by_pci = cfg->gpu_pci_bus_id && cfg->gpu_pci_bus_id[0];
  if ((cfg->nvml_library && !cfg->nvml_library[0]) ||
      (!by_pci && cfg->gpu_index < 0))
    return; /* no GPU asked for */
  const char *lib = cfg->nvml_library ? cfg->nvml_library
                                      : GF_NVML_DEFAULT_LIBRARY;
  gf_err e;
  memset(&e, 0, sizeof e);
  if (gf_nvml_open(&m->nv, lib, &e) != GF_OK) {
    const char *msg = e.msg;
    if (strncmp(msg, "monitor: ", 9) == 0) msg += 9;
    note_add(m, "GPU: %s; no GPU energy", msg);
    return;
  }
  int idx;
  if (by_pci) {
    idx = gf_nvml_index_by_pci_bus_id(m->nv, cfg->gpu_pci_bus_id);
    if (idx < 0) {
      note_add(m, "GPU: NVML (%s) finds no GPU at PCI bus id %s; no GPU "
               "energy", lib, cfg->gpu_pci_bus_id);
      goto none;
    }
  } else {
    idx = cfg->gpu_index;
    if (idx >= gf_nvml_count(m->nv)) {
      note_add(m, "GPU: NVML (%s) has %d GPUs, no GPU %d; no GPU energy", lib,
               gf_nvml_count(m->nv), idx);
      goto none;
    }
  }
  m->gpu = idx;
  unsigned long long mj;
  int code = -1;
  if (gf_nvml_energy_mj(m->nv, idx, &mj, &code)) {
    m->gpu_src = GF_ENERGY_NVML;
    m->gpu_last_mj = (uint64_t)mj;
    return;
  }
  char why[256];
  if (!gf_nvml_has_energy(m->nv))
    gf_note(why, sizeof why, "%s has no nvmlDeviceGetTotalEnergyConsumption",
            lib);
  else
    gf_note(why, sizeof why,
            "nvmlDeviceGetTotalEnergyConsumption of GPU %d failed (NVML "
            "error %d)",
            idx, code);
  double w;
  if (gf_nvml_power_w(m->nv, idx, &w)) {
    m->gpu_src = GF_ENERGY_NVML_POWER;
    m->power_last_w = w;
    m->power_last_t = gf_mono_s();
    note_add(m, "GPU: %s; GPU energy is integrated from its power readings "
             "(every %g s and at each read)", why, m->interval_s);
    return;
  }
  note_add(m, "GPU: %s, and it has no power reading; no GPU energy", why);
none:
  m->gpu = -1;
  gf_nvml_close(m->nv);
  m->nv = NULL;
}

static void meter_free(gf_energy_meter *m) {
  zones_free(m);
  gf_nvml_close(m->nv);
  free(m);
}

gf_status gf_energy_open(gf_energy_meter **out, const gf_energy_config *cfg,
                         gf_err *err) {
  if (!out || !cfg)
    return gf_fail(err, GF_EINVAL, "energy: NULL argument to gf_energy_open");
  *out = NULL;
  if (!(cfg->cpu_watts_per_core > 0) || !isfinite(cfg->cpu_watts_per_core))
    return gf_fail(err, GF_EINVAL,
                   "energy: CPU watts per core must be > 0 and finite, not %g",
                   cfg->cpu_watts_per_core);
  if (!(cfg->interval_s > 0) || !(cfg->interval_s <= 3600))
    return gf_fail(err, GF_EINVAL,
                   "energy: sampling interval must be in (0, 3600] s, not %g",
                   cfg->interval_s);
  if (cfg->gpu_index < -1)
    return gf_fail(err, GF_EINVAL, "energy: GPU index %d (-1: none)",
                   cfg->gpu_index);
  if (cfg->rapl_root && cfg->rapl_root[0])
    GF_TRY(gf_path_check("energy: RAPL root", cfg->rapl_root, 64, err));

  gf_energy_meter *m = calloc(1, sizeof *m);
  if (!m) return gf_fail(err, GF_ENOMEM, "energy: out of memory");
  m->watts_per_core = cfg->cpu_watts_per_core;
  m->interval_s = cfg->interval_s;
  m->gpu = -1;
  int e = process_cpu_s(&m->cpu0_s);
  if (e) {
    free(m);
    return gf_fail(err, GF_EIO, "energy: CLOCK_PROCESS_CPUTIME_ID: %s",
                   strerror(e));
  }
  open_cpu(m, cfg);
  open_gpu(m, cfg);

  int rc = gf_sampler_init(&m->sampler, m->interval_s);
  if (rc != 0) {
    meter_free(m);
    return gf_fail(err, GF_EIO, "energy: cannot create the sampler's lock: %s",
                   strerror(rc));
  }
  rc = gf_sampler_start(&m->sampler, sampler_tick, m);
  if (rc != 0) {
    gf_sampler_destroy(&m->sampler);
    meter_free(m);
    return gf_fail(err, GF_EIO, "energy: cannot start the sampler thread: %s",
                   strerror(rc));
  }
  *out = m;
  return GF_OK;
}

gf_status gf_energy_read(gf_energy_meter *m, gf_energy_reading *out,
                         gf_err *err) {
  if (!m || !out)
    return gf_fail(err, GF_EINVAL, "energy: NULL argument to gf_energy_read");
  double now_s = 0;
  int e = process_cpu_s(&now_s);
  pthread_mutex_lock(&m->sampler.lock);
  sample_locked(m);
  if (!e && now_s - m->cpu0_s > m->cpu_s) m->cpu_s = now_s - m->cpu0_s;
  out->cpu_seconds = m->cpu_s;
  if (m->cpu_src == GF_ENERGY_RAPL)
    out->cpu_joules = 1e-6 * (double)m->rapl_uj; /* 0 unless rapl_read */
  else
    out->cpu_joules = m->cpu_s * m->watts_per_core;
  if (m->gpu_src == GF_ENERGY_NVML)
    out->gpu_joules = 1e-3 * (double)m->gpu_mj;
  else if (m->gpu_src == GF_ENERGY_NVML_POWER)
    out->gpu_joules = m->power_j;
  else
    out->gpu_joules = 0;
  pthread_mutex_unlock(&m->sampler.lock);
  if (e)
    return gf_fail(err, GF_EIO, "energy: CLOCK_PROCESS_CPUTIME_ID: %s",
                   strerror(e));
  return GF_OK;
}

gf_energy_source gf_energy_cpu_source(const gf_energy_meter *m) {
  return m ? m->cpu_src : GF_ENERGY_NONE;
}

gf_energy_source gf_energy_gpu_source(const gf_energy_meter *m) {
  return m ? m->gpu_src : GF_ENERGY_NONE;
}

const char *gf_energy_note(const gf_energy_meter *m) {
  return m ? m->note : "";
}

void gf_energy_close(gf_energy_meter *m) {
  if (!m) return;
  gf_sampler_destroy(&m->sampler);
  meter_free(m);
}
