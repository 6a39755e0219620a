/* cost.h - what a run cost, kept across every rank and every process of
 * the run: the ledger file and the price of a slot.
 *
 * A run's cost and energy are sums over all of its processes: each rank of
 * each attempt (a first start, a resume after kill -9, a planned restart at
 * another world size). Every process measures its own share from its start
 * (gf/energy.h for joules, the price for dollars); at each logging step the
 * ranks add their shares and rank 0 logs base + sum, where base is what the
 * run's earlier processes had spent. Rank 0 keeps base + sum in the ledger,
 * <checkpoint-dir>/cost.ledger, rewritten atomically as the run goes (at
 * logging steps, at most once a second, and at checkpoints and the end);
 * the next process of the run starts from the ledger's totals. So a
 * restart neither resets the sums nor counts anything twice; what a killed
 * process spent after its last ledger write (at most about a second, or
 * one logging interval when steps are slower) is not counted.
 *
 * The ledger, one "key value" pair per line ('#' comments):
 *   # ganflow cost ledger
 *   run_id       3f2a...          (the MLflow run it belongs to)
 *   processes    3                (processes that added to it, all ranks)
 *   cpu_joules   1234.5
 *   gpu_joules   0
 *   usd          0.0123
 *   slot_seconds 45.6             (seconds of priced slots, summed)
 * Numbers are written with 17 significant digits, so they read back
 * exactly. Pure functions except _read and _write; no global state. */
#ifndef GF_COST_H
#define GF_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/ckpt_meta.h"
#include "gf/status.h"

#define GF_COST_LEDGER_FILE "cost.ledger"
#define GF_COST_LEDGER_MAX 4096 /* bytes a ledger may have */

/* What the run spent so far. Every field >= 0 and finite. */
typedef struct gf_cost_totals {
  double cpu_joules;   /* CPU packages (RAPL) or the CPU-time estimate */
  double gpu_joules;   /* GPUs' NVML energy counters */
  double usd;          /* price x priced slot time */
  double slot_seconds; /* seconds of priced slots (nodes or GPUs) */
  int64_t processes;   /* processes that added to these totals */
} gf_cost_totals;

typedef struct gf_cost_ledger {
  char run_id[GF_CKPT_RUN_ID_MAX + 1]; /* [A-Za-z0-9_-]+ */
  gf_cost_totals t;
} gf_cost_ledger;

/* Parses len bytes of ledger text (need not end in NUL). Every key once,
 * all six required, unknown keys refused. GF_EFORMAT naming the line. */
gf_status gf_cost_ledger_parse(const char *text, size_t len,
                               gf_cost_ledger *out, gf_err *err);
/* The text of l into out[cap]. GF_EINVAL for a bad run id or totals,
 * also when cap is too small (GF_COST_LEDGER_MAX always fits). */
gf_status gf_cost_ledger_format(const gf_cost_ledger *l, char *out,
                                size_t cap, gf_err *err);
/* Reads path. *found false (and GF_OK, *out zeroed) when there is no such
 * file; GF_EIO when it cannot be read; GF_EFORMAT when it does not parse. */
gf_status gf_cost_ledger_read(const char *path, gf_cost_ledger *out,
                              bool *found, gf_err *err);
/* Replaces path atomically with l's text (gf/atomic_file.h). */
gf_status gf_cost_ledger_write(const char *path, const gf_cost_ledger *l,
                               gf_err *err);

/* Slots this process pays for: 1 or 0. A price per node is paid by each
 * node's local rank 0; a price per GPU (a rank's slot: its GPU, or a CPU
 * rank's share) by every rank. */
int gf_price_slots(bool per_node, int local_rank);

/* NVML's index of this process's CUDA device cuda_index under
 * CUDA_VISIBLE_DEVICES = cvd: cuda_index when cvd is NULL or empty, else
 * the cuda_index-th entry of cvd's comma-separated integers; -1 (no GPU
 * energy: the meter says so) when cvd names devices otherwise (UUIDs, MIG
 * instances) or has too few entries. It assumes CUDA numbers the visible
 * devices in NVML's (PCI) order, as CUDA_DEVICE_ORDER=PCI_BUS_ID makes it,
 * and as the default order is on a machine of identical GPUs. */
int gf_cost_nvml_index(const char *cvd, int cuda_index);

#endif
