/* energy.h - what a training run costs (issue 26): the energy meter of one
 * training process, and the price table that turns hours into dollars.
 *
 * ---- the energy meter --------------------------------------------------
 * One per training process. It reports joules used since gf_energy_open,
 * split into CPU and GPU, each from the best source this machine offers:
 *
 *   CPU  RAPL (Linux powercap, /sys/class/powercap): the node's CPU package
 *        counters. Counted: each top-level zone "intel-rapl:N" whose `name`
 *        starts with "package", plus its subzones "intel-rapl:N:M" named
 *        "dram" (memory is not inside the package). Not counted: "core" and
 *        "uncore" subzones (the package already contains them). A "psys"
 *        (platform) zone contains the packages, so it is used only when the
 *        tree has no package zone at all, and then alone. Zones are found
 *        as rapl_root's entries "intel-rapl:N" and, for subzones, the
 *        entries "intel-rapl:N:M" inside "intel-rapl:N" (sysfs also lists
 *        them flat in /sys/class/powercap; those flat links are ignored, so
 *        nothing counts twice). The same code reads AMD's packages, which
 *        the kernel also names intel-rapl:N.
 *        Each zone's energy_uj counts microjoules from 0 to
 *        max_energy_range_uj and then starts again from 0: a reading lower
 *        than the previous one wrapped once, and adds
 *        (max_energy_range_uj + 1 - previous) + reading. The sampler thread
 *        reads every interval_s so that no counter wraps twice unseen (a
 *        package counter of 2^38 uJ wraps after ~20 min at 200 W).
 *        RAPL is the source only when every counted zone's energy_uj and
 *        max_energy_range_uj read at open (a partial sum would undercount).
 *        RAPL is the whole node's: on a node with several ranks only the
 *        process opened with rapl_whole_node (the trainer: local rank 0)
 *        reads it; the others report the same source and 0 CPU joules, so
 *        the job's sum counts each node once.
 *   CPU  ESTIMATE otherwise (no powercap tree, or energy_uj unreadable:
 *        kernels patched for CVE-2020-8694, PLATYPUS, make it root-only,
 *        so EACCES is normal): cpu_seconds x cpu_watts_per_core, where
 *        cpu_seconds is this process's CPU time (CLOCK_PROCESS_CPUTIME_ID)
 *        since open; gf_energy_note says why and at how many watts. Every
 *        rank estimates its own process, so these add up across ranks.
 *   GPU  NVML: nvmlDeviceGetTotalEnergyConsumption of this process's GPU
 *        (millijoules since the driver loaded; Volta and later), less its
 *        value at open. A reading lower than the previous one means the
 *        driver was reloaded and the counter restarted from 0: the reading
 *        itself is added.
 *   GPU  NVML_POWER when the GPU has no energy counter but answers
 *        nvmlDeviceGetPowerUsage: the power readings integrated over time
 *        (trapezoids between samples, i.e. every interval_s and at every
 *        gf_energy_read). An estimate, labelled as one ("nvml-power").
 *   GPU  NONE: no GPU asked for (nvml_library "" or no GPU given), or NVML
 *        absent, or neither counter nor power answers: gpu_joules stays 0
 *        and gf_energy_note says why (when a GPU was asked for).
 * Neither a missing RAPL tree nor a missing NVML is an error: the meter
 * always opens with some source.
 *
 * ---- the price table ---------------------------------------------------
 * A text file of what an hour of a machine costs:
 *     # instance kind     market     usd/hour  unit
 *     c7i.2xlarge         on-demand  0.357     node
 *     c7i.2xlarge         spot       0.1214    node
 *     h100-80gb           spot       2.10      gpu
 * One entry per line, four fields separated by spaces or tabs; blank lines
 * and '#' comments (a field starting with '#' comments out the rest of its
 * line); "\r\n" line ends are fine. kind: 1..63 characters of
 * [A-Za-z0-9._:/-]; market: "on-demand" or "spot"; usd/hour: a plain
 * decimal number >= 0 ("2", "0.1214"; no sign, exponent, hex, inf or nan;
 * at most 15 significant digits, so the value is exactly what strtod would
 * give, without strtod's dependence on LC_NUMERIC); unit: "node" (the price
 * of a whole machine) or "gpu" (the price of one rank's slot). A (kind,
 * market) pair appears at most once; at most GF_PRICE_MAX_ENTRIES entries.
 *
 * Threads: a meter may be read from any thread; a price table is a plain
 * value, read-only after parsing. No global mutable state. Errors follow
 * gf/status.h; nothing here prints or exits. */
#ifndef GF_ENERGY_H
#define GF_ENERGY_H

#include <stdbool.h>
#include <stddef.h>

#include "gf/status.h"

/* ---- the energy meter ---------------------------------------------------- */

#define GF_ENERGY_DEFAULT_INTERVAL_S 5.0
#define GF_ENERGY_DEFAULT_CPU_WATTS_PER_CORE 10.0
#define GF_ENERGY_DEFAULT_RAPL_ROOT "/sys/class/powercap"

typedef enum gf_energy_source {
  GF_ENERGY_NONE = 0,  /* no figure: joules stay 0 */
  GF_ENERGY_NVML,      /* GPU: NVML's total-energy counter */
  GF_ENERGY_RAPL,      /* CPU: the node's RAPL package (+ dram) counters */
  GF_ENERGY_ESTIMATE,  /* CPU: process CPU time x watts per core */
  GF_ENERGY_NVML_POWER /* GPU: NVML power readings integrated over time */
} gf_energy_source;

/* "none", "nvml", "rapl", "estimate", "nvml-power"; "unknown" for a value
 * outside the enum. Static, never NULL. */
const char *gf_energy_source_name(gf_energy_source s);

typedef struct gf_energy_config {
  const char *rapl_root;      /* NULL: GF_ENERGY_DEFAULT_RAPL_ROOT; "": never
                                 RAPL (CPU is estimated); else the powercap
                                 directory to scan. Borrowed during open. */
  bool rapl_whole_node;       /* true only in the process that answers for
                                 the node's CPU packages (the trainer: local
                                 rank 0); when false and RAPL is the source,
                                 cpu_joules stays 0 (default true) */
  const char *nvml_library;   /* NULL: GF_NVML_DEFAULT_LIBRARY; "": no GPU
                                 energy (CPU training); else a path or
                                 soname for dlopen. Borrowed during open. */
  int gpu_index;              /* NVML index of this process's GPU; -1: none
                                 (default -1). NVML's order, which ignores
                                 CUDA_VISIBLE_DEVICES. */
  const char *gpu_pci_bus_id; /* NULL or "": use gpu_index; else this GPU's
                                 PCI bus id ("0000:3b:00.0"), preferred over
                                 gpu_index; when NVML cannot find it the GPU
                                 source is NONE (noted), never a guess.
                                 Borrowed during open. */
  double cpu_watts_per_core;  /* ESTIMATE: watts per second of this
                                 process's CPU time, > 0 and finite
                                 (default 10) */
  double interval_s;          /* seconds between background samples, > 0
                                 and <= 3600 (default 5): often enough to
                                 see every RAPL wrap */
} gf_energy_config;

/* RAPL at the default root for the whole node, no GPU (nvml_library NULL,
 * gpu_index -1, no bus id), 10 W per core, 5 s. */
gf_energy_config gf_energy_config_default(void);

typedef struct gf_energy_meter gf_energy_meter;

/* Allocates a meter: picks the CPU and GPU sources (opening NVML when a GPU
 * is asked for), takes the baselines (RAPL counters, GPU counter, process
 * CPU time) and starts the sampler thread, which stops promptly on close
 * (a condition variable, whatever the interval). On success *out is owned
 * by the caller: release it with gf_energy_close. GF_EINVAL for a bad
 * config (watts not > 0 or not finite, interval not in (0, 3600],
 * gpu_index < -1, a rapl_root too long for a path); GF_EIO when the
 * process CPU clock cannot be read or the thread cannot start; GF_ENOMEM.
 * A missing or unreadable RAPL tree or NVML is not an error (see the
 * sources above). *out is NULL on failure. */
gf_status gf_energy_open(gf_energy_meter **out, const gf_energy_config *cfg,
                         gf_err *err);

typedef struct gf_energy_reading {
  double cpu_joules;  /* since open, from gf_energy_cpu_source; >= 0 */
  double gpu_joules;  /* since open, from gf_energy_gpu_source; >= 0 */
  double cpu_seconds; /* this process's CPU time since open (all threads) */
} gf_energy_reading;

/* Samples now (RAPL counters, GPU counter or power, process CPU time) and
 * fills *out with the totals since open. Each field is non-decreasing from
 * one call to the next, whichever thread calls; a counter that cannot be
 * read in this sample keeps its last total. Thread-safe. GF_EINVAL when m
 * or out is NULL; GF_EIO when the process CPU clock fails (out then holds
 * the previous totals). */
gf_status gf_energy_read(gf_energy_meter *m, gf_energy_reading *out,
                         gf_err *err);

/* GF_ENERGY_RAPL or GF_ENERGY_ESTIMATE. */
gf_energy_source gf_energy_cpu_source(const gf_energy_meter *m);
/* GF_ENERGY_NVML, GF_ENERGY_NVML_POWER or GF_ENERGY_NONE. */
gf_energy_source gf_energy_gpu_source(const gf_energy_meter *m);

/* Why a better source was not used, "" when RAPL and (if asked for) the
 * GPU counter both are: e.g. "RAPL: /sys/class/powercap/intel-rapl:0/
 * energy_uj: Permission denied; CPU energy is an estimate at 10 W per
 * core". Parts for the CPU and the GPU are joined by "; ". Valid until
 * gf_energy_close. */
const char *gf_energy_note(const gf_energy_meter *m);

/* Stops the sampler (promptly), shuts NVML down and frees. NULL is fine. */
void gf_energy_close(gf_energy_meter *m);

/* ---- the price table ----------------------------------------------------- */

#define GF_PRICE_KIND_MAX 64        /* bytes of a kind with its NUL */
#define GF_PRICE_MAX_ENTRIES 4096   /* entries of one table */
#define GF_PRICE_FILE_MAX (1 << 20) /* bytes of a price file */

typedef enum gf_price_market {
  GF_MARKET_ON_DEMAND = 0, /* "on-demand" */
  GF_MARKET_SPOT           /* "spot" (preemptible) */
} gf_price_market;

typedef enum gf_price_unit {
  GF_PRICE_PER_NODE = 0, /* "node": the price of a whole machine */
  GF_PRICE_PER_GPU       /* "gpu": the price of one rank's slot */
} gf_price_unit;

typedef struct gf_price_entry {
  char kind[GF_PRICE_KIND_MAX]; /* NUL-terminated, [A-Za-z0-9._:/-]{1,63} */
  gf_price_market market;
  gf_price_unit unit;
  double usd_per_hour; /* US dollars per hour of the unit; finite, >= 0 */
  int line;            /* 1-based line of the file it came from */
} gf_price_entry;

/* Owned by the caller (often on the stack); all-zero bytes, or
 * gf_price_table_init, is an empty table. Release with
 * gf_price_table_free. */
typedef struct gf_price_table {
  gf_price_entry *entries; /* malloc'd, owned by the table; n of them in
                              file order; NULL when n is 0 */
  size_t n;                /* 0..GF_PRICE_MAX_ENTRIES */
} gf_price_table;

/* An empty table; allocates nothing. */
void gf_price_table_init(gf_price_table *t);
/* Frees the entries and leaves t empty; NULL is fine. */
void gf_price_table_free(gf_price_table *t);

/* Parses the len bytes at text (not NUL-terminated; NUL bytes in it are an
 * error) into *out, replacing what was there without freeing it (pass an
 * empty table). On success *out owns a new entries array: the caller
 * releases it with gf_price_table_free. `origin` names the input in
 * messages (a path; NULL: "price table"). GF_EFORMAT naming origin, the
 * 1-based line and what is wrong (a bad field count, kind, market, price
 * or unit; a duplicate (kind, market) with the line of the first; more
 * than GF_PRICE_MAX_ENTRIES entries); GF_EINVAL when len >
 * GF_PRICE_FILE_MAX; GF_ENOMEM. On failure *out is empty. A text with no
 * entries is a valid, empty table. */
gf_status gf_price_parse(const char *text, size_t len, const char *origin,
                         gf_price_table *out, gf_err *err);

/* Reads the file at path (a regular file of at most GF_PRICE_FILE_MAX
 * bytes) and parses it as gf_price_parse does, with path as origin; same
 * ownership. GF_EIO when it cannot be opened or read (naming path and the
 * reason), GF_EINVAL when it is too large or not a regular file, else as
 * gf_price_parse. */
gf_status gf_price_load(const char *path, gf_price_table *out, gf_err *err);

/* The entry of (kind, market) in t: *out points into t->entries (valid
 * until t is freed). GF_ENOTFOUND when there is none, naming kind and
 * market and what the table has (the markets of that kind, or the kinds
 * there are, as many as fit the message); GF_EINVAL for NULL arguments. */
gf_status gf_price_lookup(const gf_price_table *t, const char *kind,
                          gf_price_market market, const gf_price_entry **out,
                          gf_err *err);

/* "on-demand" / "spot" to the enum (for flags). GF_EINVAL naming s and the
 * accepted words otherwise. */
gf_status gf_price_parse_market(const char *s, gf_price_market *out,
                                gf_err *err);
/* "node" / "gpu" to the enum. GF_EINVAL naming s and the accepted words. */
gf_status gf_price_parse_unit(const char *s, gf_price_unit *out, gf_err *err);
/* "on-demand", "spot"; "node", "gpu" ("unknown" outside the enums). */
const char *gf_price_market_name(gf_price_market m);
const char *gf_price_unit_name(gf_price_unit u);

#endif
