/* monitor_nvml.c - NVML opened at run time (gf/monitor.h, "NVML loaded at
 * run time"): dlopen of libnvidia-ml.so.1, the seven entry points the
 * monitor uses, two optional ones the energy meter uses (gf/energy.h), and
 * per-GPU queries. The few NVML types are declared here
 * from NVML's documented ABI (nvmlReturn_t is an int-sized enum, 0 =
 * NVML_SUCCESS; nvmlDevice_t an opaque pointer), so no NVML header or
 * library is needed to build, and a machine without a GPU runs the same
 * binary. Each gf_nvml owns its library handle; nothing is global. */
#include "gf/monitor.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;                   /* nvmlReturn_t */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t */
typedef struct nvml_utilization {          /* nvmlUtilization_t */
  unsigned int gpu;    /* percent of time a kernel ran, last sample period */
  unsigned int memory; /* percent of time memory was read or written */
} nvml_utilization;
typedef struct nvml_memory { /* nvmlMemory_t (v1) */
  unsigned long long total, free, used; /* bytes */
} nvml_memory;

#define NVML_SUCCESS 0

struct gf_nvml {
  void *lib; /* dlopen handle, owned; dlclosed by gf_nvml_close */
  nvml_return (*init)(void);
  nvml_return (*shutdown)(void);
  nvml_return (*get_count)(unsigned int *count);
  nvml_return (*get_handle)(unsigned int index, nvml_device *dev);
  nvml_return (*get_util)(nvml_device dev, nvml_utilization *u);
  nvml_return (*get_mem)(nvml_device dev, nvml_memory *m);
  nvml_return (*get_power)(nvml_device dev, unsigned int *milliwatts);
  /* Optional (NULL when the library lacks them): */
  nvml_return (*get_energy)(nvml_device dev, unsigned long long *millijoules);
  nvml_return (*get_by_pci)(const char *bus_id, nvml_device *dev);
  int initialized;                   /* nvmlInit_v2 succeeded */
  int count;                         /* 0..GF_NVML_MAX_GPUS */
  nvml_device dev[GF_NVML_MAX_GPUS]; /* handles of GPUs 0..count-1 */
};

/* dlsym into a function pointer without a cast between object and
 * function pointer types (POSIX guarantees they have one representation). */
static int resolve(void *lib, const char *name, void *fnptr, size_t size) {
  void *sym = dlsym(lib, name);
  if (!sym || size != sizeof sym) return 0;
  memcpy(fnptr, &sym, sizeof sym);
  return 1;
}

#define RESOLVE(nv, field, name) \
  resolve((nv)->lib, name, &(nv)->field, sizeof((nv)->field))

gf_status gf_nvml_open(gf_nvml **out, const char *library, gf_err *err) {
  *out = NULL;
  const char *path = library ? library : GF_NVML_DEFAULT_LIBRARY;
  gf_nvml *nv = calloc(1, sizeof *nv);
  if (!nv) return gf_fail(err, GF_ENOMEM, "monitor: out of memory for NVML");
  nv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!nv->lib) {
    const char *why = dlerror();
    gf_fail(err, GF_ENOTFOUND, "monitor: cannot dlopen %s: %s", path,
            why ? why : "unknown error");
    free(nv);
    return GF_ENOTFOUND;
  }
  const char *missing = NULL;
  if (!RESOLVE(nv, init, "nvmlInit_v2")) missing = "nvmlInit_v2";
  else if (!RESOLVE(nv, shutdown, "nvmlShutdown")) missing = "nvmlShutdown";
  else if (!RESOLVE(nv, get_count, "nvmlDeviceGetCount_v2"))
    missing = "nvmlDeviceGetCount_v2";
  else if (!RESOLVE(nv, get_handle, "nvmlDeviceGetHandleByIndex_v2"))
    missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (!RESOLVE(nv, get_util, "nvmlDeviceGetUtilizationRates"))
    missing = "nvmlDeviceGetUtilizationRates";
  else if (!RESOLVE(nv, get_mem, "nvmlDeviceGetMemoryInfo"))
    missing = "nvmlDeviceGetMemoryInfo";
  else if (!RESOLVE(nv, get_power, "nvmlDeviceGetPowerUsage"))
    missing = "nvmlDeviceGetPowerUsage";
  if (missing) {
    gf_fail(err, GF_ENOTFOUND, "monitor: %s has no %s", path, missing);
    gf_nvml_close(nv);
    return GF_ENOTFOUND;
  }
  if (!RESOLVE(nv, get_energy, "nvmlDeviceGetTotalEnergyConsumption"))
    nv->get_energy = NULL;
  if (!RESOLVE(nv, get_by_pci, "nvmlDeviceGetHandleByPciBusId_v2"))
    nv->get_by_pci = NULL;
  nvml_return rc = nv->init();
  if (rc != NVML_SUCCESS) {
    gf_fail(err, GF_EDEVICE, "monitor: nvmlInit_v2 failed (NVML error %d)", rc);
    gf_nvml_close(nv);
    return GF_EDEVICE;
  }
  nv->initialized = 1;
  unsigned int count = 0;
  rc = nv->get_count(&count);
  if (rc != NVML_SUCCESS) {
    gf_fail(err, GF_EDEVICE,
            "monitor: nvmlDeviceGetCount_v2 failed (NVML error %d)", rc);
    gf_nvml_close(nv);
    return GF_EDEVICE;
  }
  if (count > GF_NVML_MAX_GPUS) count = GF_NVML_MAX_GPUS;
  for (unsigned int i = 0; i < count; i++) {
    rc = nv->get_handle(i, &nv->dev[i]);
    if (rc != NVML_SUCCESS) {
      gf_fail(err, GF_EDEVICE,
              "monitor: nvmlDeviceGetHandleByIndex_v2(%u) failed (NVML error "
              "%d)",
              i, rc);
      gf_nvml_close(nv);
      return GF_EDEVICE;
    }
  }
  nv->count = (int)count;
  *out = nv;
  return GF_OK;
}

int gf_nvml_count(const gf_nvml *nv) { return nv ? nv->count : 0; }

void gf_nvml_sample(const gf_nvml *nv, int i, gf_gpu_sample *out) {
  memset(out, 0, sizeof *out);
  if (!nv || i < 0 || i >= nv->count) return;
  nvml_utilization u;
  if (nv->get_util(nv->dev[i], &u) == NVML_SUCCESS) {
    out->have_util = 1;
    out->util_pct = (double)u.gpu;
  }
  nvml_memory m;
  if (nv->get_mem(nv->dev[i], &m) == NVML_SUCCESS && m.total > 0) {
    out->have_mem = 1;
    out->mem_used_mb = (double)m.used / 1e6;
    out->mem_pct = 100.0 * (double)m.used / (double)m.total;
  }
  unsigned int mw;
  if (nv->get_power(nv->dev[i], &mw) == NVML_SUCCESS) {
    out->have_power = 1;
    out->power_w = (double)mw / 1000.0;
  }
}

int gf_nvml_has_energy(const gf_nvml *nv) {
  return nv && nv->get_energy ? 1 : 0;
}

int gf_nvml_energy_mj(const gf_nvml *nv, int i, unsigned long long *millijoules,
                      int *nvml_error) {
  if (nvml_error) *nvml_error = -1;
  if (!nv || !nv->get_energy || i < 0 || i >= nv->count) return 0;
  unsigned long long mj = 0;
  nvml_return rc = nv->get_energy(nv->dev[i], &mj);
  if (rc != NVML_SUCCESS) {
    if (nvml_error) *nvml_error = rc;
    return 0;
  }
  if (nvml_error) *nvml_error = NVML_SUCCESS;
  *millijoules = mj;
  return 1;
}

int gf_nvml_power_w(const gf_nvml *nv, int i, double *watts) {
  if (!nv || i < 0 || i >= nv->count) return 0;
  unsigned int mw;
  if (nv->get_power(nv->dev[i], &mw) != NVML_SUCCESS) return 0;
  *watts = (double)mw / 1000.0;
  return 1;
}

int gf_nvml_index_by_pci_bus_id(const gf_nvml *nv, const char *bus_id) {
  if (!nv || !nv->get_by_pci || !bus_id || !bus_id[0]) return -1;
  nvml_device dev = NULL;
  if (nv->get_by_pci(bus_id, &dev) != NVML_SUCCESS || !dev) return -1;
  for (int i = 0; i < nv->count; i++)
    if (nv->dev[i] == dev) return i;
  return -1;
}

void gf_nvml_close(gf_nvml *nv) {
  if (!nv) return;
  if (nv->initialized && nv->shutdown) nv->shutdown();
  if (nv->lib) dlclose(nv->lib);
  free(nv);
}
