/* monitor.h - the resource monitor of ganflow-train (DESIGN §4.7): a
 * sampler thread that measures the machine and the training loop every
 * interval and hands each figure to a callback under MLflow's own
 * system-metric names, so the MLflow UI's system-metrics charts show them.
 *
 * Per sample, in this order (values as MLflow's psutil/pynvml monitors
 * compute them; MB = 10^6 bytes):
 *   system/cpu_utilization_percentage      busy / total jiffies of the whole
 *                                          machine since the previous sample
 *                                          (/proc/stat; busy = total - idle
 *                                          - iowait, guest time not counted
 *                                          twice), 0..100
 *   system/system_memory_usage_megabytes   MemTotal - MemAvailable
 *   system/system_memory_usage_percentage  (/proc/meminfo), 0..100
 *   perf/rss_megabytes                     this process's VmRSS and VmHWM
 *   perf/peak_rss_megabytes                (/proc/self/status); ours
 *   per GPU i that NVML reports, where NVML answers:
 *   system/gpu_{i}_utilization_percentage  nvmlDeviceGetUtilizationRates.gpu
 *   system/gpu_{i}_memory_usage_megabytes  nvmlDeviceGetMemoryInfo used
 *   system/gpu_{i}_memory_usage_percentage used / total * 100
 *   system/gpu_{i}_power_usage_watts       nvmlDeviceGetPowerUsage / 1000
 *   when the training loop reported steps since the previous sample (ours):
 *   system/step_data_wait_seconds,         the mean over those steps of the
 *   system/step_compute_seconds,           seconds given to
 *   system/step_allreduce_seconds          gf_monitor_add_step
 * (The trainer also logs its step-time split as perf/data_wait_s and
 * perf/compute_s with every --log-every metric point, step-aligned with the
 * losses; these are the same split on the wall-clock sampling cadence, next
 * to the CPU and GPU charts.)
 * Every figure of one sample carries the same step and timestamp (Unix ms).
 * Steps count samples from cfg.first_step (0 for a new run, as MLflow's
 * own monitor; a resumed run passes a step that none of its earlier
 * processes can have sent: ganflow-train's gf_tracker_monitor_first_step).
 * The names are one process's: in a multi-rank job every rank samples at
 * the same steps, and rank 0 logs rank r's figures as system/rank_<r>/...
 * and perf/rank_<r>/... (trainer/src/train_dist.h, gf_relay_node_name).
 * A figure that cannot be read in a sample is left out of that sample
 * (counted in gf_monitor_stats.read_failures); sampling goes on.
 *
 * NVML is opened at run time with dlopen("libnvidia-ml.so.1"); its handle
 * and function pointers live in the monitor. Without the library (or with
 * no driver) there are simply no GPU figures and no error:
 * gf_monitor_gpu_note says why. No header or library of NVML is needed to
 * build.
 *
 * Threads: the callback runs on the sampler thread with no monitor lock
 * held; gf_monitor_add_step may be called from any thread at any time. No
 * global mutable state. Errors follow gf/status.h. */
#ifndef GF_MONITOR_H
#define GF_MONITOR_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_MONITOR_DEFAULT_INTERVAL_S 10.0
#define GF_NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define GF_NVML_MAX_GPUS 64

/* Receives one figure. name is valid only during the call. */
typedef void (*gf_monitor_emit_fn)(void *user, const char *name, double value,
                                   int64_t step, int64_t timestamp_ms);

typedef struct gf_monitor_config {
  double interval_s;        /* seconds between samples, > 0 (default 10) */
  int64_t first_step;       /* step of the first sample, >= 0 */
  gf_monitor_emit_fn emit;  /* required */
  void *user;               /* passed to emit; borrowed */
  const char *nvml_library; /* NULL: GF_NVML_DEFAULT_LIBRARY; "": no GPU
                               figures (a job that trains on no GPU: an
                               idle GPU's figures would be flat noise);
                               else a path or soname for dlopen.
                               Borrowed during gf_monitor_start only. */
  int world_size;           /* ranks of the job (1): the all-reduce share
                               of the step, always 0 on one rank, is
                               logged only when > 1 */
} gf_monitor_config;

/* interval 10 s, first step 0, no callback, the default NVML library,
 * world 1. */
gf_monitor_config gf_monitor_config_default(void);

typedef struct gf_monitor gf_monitor;

/* Allocates a monitor, opens NVML (if it can), reads the CPU baseline and
 * starts the sampler thread; the first sample comes one interval later.
 * On success *out is owned by the caller: release it with gf_monitor_free.
 * GF_EINVAL for a bad config (no callback, interval not > 0 or over a
 * day, negative first step); GF_EIO when /proc/stat cannot be read or the
 * thread cannot start; GF_ENOMEM. *out is NULL on failure. */
gf_status gf_monitor_start(gf_monitor **out, const gf_monitor_config *cfg,
                           gf_err *err);

/* Records one training step's time split (seconds, >= 0): waiting for data,
 * computing (forward, backward, optimizer), all-reducing gradients.
 * Thread-safe; cheap (one mutex). Ignored when m is NULL. */
void gf_monitor_add_step(gf_monitor *m, double data_wait_s, double compute_s,
                         double allreduce_s);

/* Stops the sampler promptly (it wakes at once, whatever the interval),
 * waits for it, shuts NVML down and dlcloses it. Idempotent; the monitor
 * stays readable. NULL is fine. */
void gf_monitor_stop(gf_monitor *m);

/* Stops (if running) and frees. NULL is fine. */
void gf_monitor_free(gf_monitor *m);

/* The step the next sample will carry: first_step + samples taken. */
int64_t gf_monitor_next_step(const gf_monitor *m);

typedef struct gf_monitor_stats {
  int64_t samples;        /* samples taken */
  int64_t read_failures;  /* figures left out because a read failed */
  int gpus;               /* GPUs reported through NVML (0 without) */
} gf_monitor_stats;

gf_monitor_stats gf_monitor_get_stats(const gf_monitor *m);

/* Why there are no GPU figures ("" when there are GPUs): e.g. "cannot
 * dlopen libnvidia-ml.so.1: ...". Valid until gf_monitor_free. */
const char *gf_monitor_gpu_note(const gf_monitor *m);

/* ---- the readers the sampler uses (also for tests and tools) ----------- */

/* Aggregate CPU time of the machine, in jiffies. */
typedef struct gf_cpu_times {
  uint64_t busy;  /* total - idle - iowait */
  uint64_t total; /* user+nice+system+idle+iowait+irq+softirq+steal */
} gf_cpu_times;

/* Parses the "cpu " line of /proc/stat text. GF_EFORMAT when missing or
 * malformed. */
gf_status gf_cpu_times_parse(const char *proc_stat, gf_cpu_times *out,
                             gf_err *err);
/* Reads /proc/stat. GF_EIO when unreadable. */
gf_status gf_cpu_times_read(gf_cpu_times *out, gf_err *err);
/* 100 * (busy delta) / (total delta), clamped to 0..100; 0 when no time
 * passed or the counters went backwards. */
double gf_cpu_utilization(const gf_cpu_times *before,
                          const gf_cpu_times *after);

typedef struct gf_mem_info {
  double total_mb;  /* MemTotal, 10^6 bytes */
  double used_mb;   /* MemTotal - MemAvailable */
  double used_pct;  /* used / total * 100 */
} gf_mem_info;

/* Parses /proc/meminfo text (kB = 1024 bytes). GF_EFORMAT when MemTotal or
 * MemAvailable is missing or MemTotal is 0. */
gf_status gf_meminfo_parse(const char *meminfo, gf_mem_info *out,
                           gf_err *err);
gf_status gf_meminfo_read(gf_mem_info *out, gf_err *err);

/* VmRSS and VmHWM of /proc/self/status in MB (10^6 bytes). */
gf_status gf_process_rss_read(double *rss_mb, double *peak_mb, gf_err *err);

/* ---- NVML loaded at run time ------------------------------------------- */

typedef struct gf_nvml gf_nvml;

typedef struct gf_gpu_sample {
  int have_util, have_mem, have_power; /* 1 when that query answered */
  double util_pct;     /* 0..100 */
  double mem_used_mb;  /* 10^6 bytes */
  double mem_pct;      /* used / total * 100 */
  double power_w;
} gf_gpu_sample;

/* dlopens `library` (NULL: GF_NVML_DEFAULT_LIBRARY), resolves the seven
 * functions (and the optional ones below, when present), nvmlInit_v2, counts the devices and takes their handles. On
 * success *out (caller-owned, release with gf_nvml_close) may report 0
 * GPUs. GF_ENOTFOUND when the library cannot be opened or lacks a symbol;
 * GF_EDEVICE when NVML answers an error; GF_ENOMEM. *out is NULL on
 * failure and the library is closed again. */
gf_status gf_nvml_open(gf_nvml **out, const char *library, gf_err *err);
int gf_nvml_count(const gf_nvml *nv);
/* Queries GPU i (0 <= i < count). Never fails as a whole: a query that
 * errors leaves its have_ flag 0. */
void gf_nvml_sample(const gf_nvml *nv, int i, gf_gpu_sample *out);
/* nvmlShutdown, dlclose, free. NULL is fine. */
void gf_nvml_close(gf_nvml *nv);

/* Optional entry points, for the energy meter (gf/energy.h). Each is
 * resolved by gf_nvml_open when the library has it; one that is absent
 * (older drivers) or answers an error only means no figure: never an
 * error of gf_nvml_open, and the monitor's figures above do not use them. */

/* 1 when the library exports nvmlDeviceGetTotalEnergyConsumption (Volta
 * and later GPUs answer it), else 0. */
int gf_nvml_has_energy(const gf_nvml *nv);
/* GPU i's energy counter in millijoules since the driver was loaded
 * (nvmlDeviceGetTotalEnergyConsumption): 1 and *millijoules when it
 * answered, 0 (and *millijoules untouched) when the symbol is absent, i is
 * out of range or NVML answered an error (e.g. NVML_ERROR_NOT_SUPPORTED on
 * pre-Volta GPUs); *nvml_error (may be NULL) gets NVML's code then, or -1
 * when the symbol is absent or i out of range. */
int gf_nvml_energy_mj(const gf_nvml *nv, int i, unsigned long long *millijoules,
                      int *nvml_error);
/* GPU i's power draw in watts (nvmlDeviceGetPowerUsage / 1000): 1 when it
 * answered, else 0. */
int gf_nvml_power_w(const gf_nvml *nv, int i, double *watts);
/* The NVML index (0..count-1) of the GPU at PCI bus id `bus_id` ("0000:3b:
 * 00.0", as cudaDeviceGetPCIBusId writes it; NVML parses it), found with
 * nvmlDeviceGetHandleByPciBusId_v2 and compared with the handles taken at
 * open. -1 when the symbol is absent, NVML does not know the id, or the
 * GPU is not among the first GF_NVML_MAX_GPUS. NVML's indices ignore
 * CUDA_VISIBLE_DEVICES; a bus id does not depend on it. */
int gf_nvml_index_by_pci_bus_id(const gf_nvml *nv, const char *bus_id);

#endif
