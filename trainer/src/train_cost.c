/* train_cost.c - the run's energy and cost as ganflow-train measures and
 * logs them (gf/cost.h, gf/energy.h): every rank meters its own process
 * from its start, the ranks add their shares at each logging step, and
 * rank 0 logs the run's totals (earlier processes' from the ledger, plus
 * this attempt's) and keeps the ledger for the next process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/cost.h"
#include "gf/energy.h"
#include "gf/text.h"
#include "mlflow/client.h"
#include "train_state.h"

/* Seconds between ledger writes at logging steps (each is an fsync'd
 * rename): what a kill -9 can lose is at most about this much. */
#define LEDGER_EVERY_S 1.0

enum { SH_CPU, SH_GPU, SH_USD, SH_SLOT, SH_N };

gf_status train_cost_start(train_state *st, const gf_launch_info *launch,
                           gf_err *err) {
  train_cost *c = &st->cost;
  c->t0 = gf_mono_s();
  int local_rank = launch ? launch->local_rank : 0;
  c->slots = gf_price_slots(st->cfg->price_unit == GF_PRICE_PER_NODE,
                            local_rank);
  gf_energy_config ec = gf_energy_config_default();
  const char *root = getenv("GANFLOW_POWERCAP_ROOT");
  if (root) ec.rapl_root = root;
  ec.rapl_whole_node = local_rank == 0;
  ec.cpu_watts_per_core = st->cfg->cpu_watts_per_core;
  if (st->on_dev) {
    ec.nvml_library = NULL;
    ec.gpu_index = gf_cost_nvml_index(getenv("CUDA_VISIBLE_DEVICES"),
                                      st->ctx.device_index);
  } else {
    ec.nvml_library = "";
  }
  return gf_energy_open(&c->meter, &ec, err);
}

/* The distinct source names of every rank, "+"-joined, into out[cap]. */
static void join_sources(const int32_t *all, int world, int which, char *out,
                         size_t cap) {
  out[0] = '\0';
  for (int src = 0; src <= GF_ENERGY_NVML_POWER; src++) {
    bool any = false;
    for (int r = 0; r < world && !any; r++) any = all[2 * r + which] == src;
    if (!any) continue;
    size_t len = strlen(out);
    int n = snprintf(out + len, cap - len, "%s%s", len ? "+" : "",
                     gf_energy_source_name((gf_energy_source)src));
    if (!gf_fits(n, cap - len)) {
      out[len] = '\0';
      return;
    }
  }
}

gf_status train_cost_begin_run(train_state *st, gf_err *err) {
  train_cost *c = &st->cost;
  int32_t mine[2] = {(int32_t)gf_energy_cpu_source(c->meter),
                     (int32_t)gf_energy_gpu_source(c->meter)};
  int32_t *all = calloc((size_t)st->world * 2, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = gf_dist_allgather(&st->dist, mine, sizeof mine, all, err);
  if (s != GF_OK || st->rank != 0) {
    free(all);
    return s;
  }
  char cpu[96], gpu[96];
  join_sources(all, st->world, 0, cpu, sizeof cpu);
  join_sources(all, st->world, 1, gpu, sizeof gpu);
  free(all);
  c->gpu_metered = strcmp(gpu, "none") != 0;
  gf_tracker_set_tag(st->tracker, "ganflow.energy.cpu_source", cpu);
  gf_tracker_set_tag(st->tracker, "ganflow.energy.gpu_source", gpu);
  const char *note = gf_energy_note(c->meter);
  if (note && *note) {
    gf_tracker_set_tag(st->tracker, "ganflow.energy.note", note);
    gf_logf(st->log, GF_LOG_INFO, "ganflow-train: energy: %s", note);
  }
  /* The earlier processes of this run, from the ledger. */
  const char *run = gf_tracker_run_id(st->tracker);
  GF_TRY(gf_path_join(c->ledger_path, sizeof c->ledger_path,
                      st->cfg->checkpoint_dir, GF_COST_LEDGER_FILE, err));
  gf_cost_ledger l;
  bool found = false;
  gf_err le;
  memset(&le, 0, sizeof le);
  if (gf_cost_ledger_read(c->ledger_path, &l, &found, &le) != GF_OK) {
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s; the run's "
            "cost and energy start again from this process", le.msg);
    gf_tracker_set_tag(st->tracker, "ganflow.cost.ledger", le.msg);
  } else if (found && strcmp(l.run_id, run) == 0) {
    c->base = l.t;
    gf_logf(st->log, GF_LOG_INFO, "ganflow-train: the run's earlier "
            "processes spent %.6g USD, %.6g J (%lld processes)", l.t.usd,
            l.t.cpu_joules + l.t.gpu_joules, (long long)l.t.processes);
  } else if (found) {
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s belongs to run "
            "%s, not %s; this run's cost starts at 0", c->ledger_path,
            l.run_id, run);
  }
  size_t n = strlen(run);
  if (n >= sizeof c->run_id) n = sizeof c->run_id - 1;
  memcpy(c->run_id, run, n);
  c->run_id[n] = '\0';
  c->ledger_ok = true;
  return GF_OK;
}

static void write_ledger(train_state *st, const gf_cost_totals *t) {
  train_cost *c = &st->cost;
  gf_cost_ledger l;
  memset(&l, 0, sizeof l);
  memcpy(l.run_id, c->run_id, sizeof l.run_id);
  l.t = *t;
  gf_err e;
  memset(&e, 0, sizeof e);
  if (gf_cost_ledger_write(c->ledger_path, &l, &e) != GF_OK)
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s", e.msg);
  c->last_write = gf_mono_s();
}

/* The run's totals: base, the other ranks' shares at the last exchange,
 * and this process's own share (sh, SH_N values). */
static gf_cost_totals run_totals(const train_state *st, const double *own) {
  const train_cost *c = &st->cost;
  gf_cost_totals t = c->base;
  t.cpu_joules += c->others[SH_CPU] + own[SH_CPU];
  t.gpu_joules += c->others[SH_GPU] + own[SH_GPU];
  t.usd += c->others[SH_USD] + own[SH_USD];
  t.slot_seconds += c->others[SH_SLOT] + own[SH_SLOT];
  t.processes += st->world;
  return t;
}

/* This process's share now: its joules, and its slot's dollars and
 * seconds since it began. */
static void own_share(train_state *st, double *sh) {
  train_cost *c = &st->cost;
  gf_energy_reading r;
  memset(&r, 0, sizeof r);
  gf_err me;
  memset(&me, 0, sizeof me);
  if (gf_energy_read(c->meter, &r, &me) != GF_OK && st->rank == 0)
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s", me.msg);
  double wall = gf_mono_s() - c->t0;
  double price = st->cfg->price_per_hour;
  sh[SH_CPU] = r.cpu_joules;
  sh[SH_GPU] = r.gpu_joules;
  sh[SH_USD] = price > 0 ? price / 3600.0 * wall * c->slots : 0.0;
  sh[SH_SLOT] = wall * c->slots;
}

static void log_totals(train_state *st, const gf_cost_totals *t, int64_t k,
                       double images) {
  int64_t ts = mlflow_now_ms();
  gf_tracker *tr = st->tracker;
  gf_tracker_metric(tr, "energy/joules", t->cpu_joules + t->gpu_joules, ts, k);
  gf_tracker_metric(tr, "energy/cpu_joules", t->cpu_joules, ts, k);
  if (st->cost.gpu_metered)
    gf_tracker_metric(tr, "energy/gpu_joules", t->gpu_joules, ts, k);
  if (st->cfg->price_per_hour < 0) return;
  gf_tracker_metric(tr, "cost/usd", t->usd, ts, k);
  gf_tracker_metric(tr, "cost/slot_hours", t->slot_seconds / 3600.0, ts, k);
  if (images > 0)
    gf_tracker_metric(tr, "cost/usd_per_1k_images", t->usd / images * 1000.0,
                      ts, k);
}

gf_status train_cost_exchange(train_state *st, int64_t k, double images,
                              bool log_metrics, gf_err *err) {
  train_cost *c = &st->cost;
  double own[SH_N], sum[SH_N];
  own_share(st, own);
  memcpy(sum, own, sizeof sum);
  GF_TRY(gf_dist_sum_f64(&st->dist, sum, SH_N, err));
  if (st->rank != 0 || !c->ledger_ok) return GF_OK;
  for (int i = 0; i < SH_N; i++) c->others[i] = sum[i] - own[i];
  gf_cost_totals t = run_totals(st, own);
  c->run_usd = t.usd;
  if (gf_mono_s() - c->last_write >= LEDGER_EVERY_S) write_ledger(st, &t);
  if (log_metrics) log_totals(st, &t, k, images);
  return GF_OK;
}

void train_cost_close(train_state *st, int64_t k, double images,
                      bool log_metrics) {
  train_cost *c = &st->cost;
  if (st->rank != 0 || !c->ledger_ok || !c->meter) return;
  double own[SH_N];
  own_share(st, own);
  gf_cost_totals t = run_totals(st, own);
  c->run_usd = t.usd;
  write_ledger(st, &t);
  if (log_metrics) log_totals(st, &t, k, images);
  if (st->cfg->price_per_hour >= 0)
    gf_logf(st->log, GF_LOG_INFO, "ganflow-train: the run so far: %.6g J, "
            "%.6g USD (%.4g slot-hours, %lld processes)",
            t.cpu_joules + t.gpu_joules, t.usd, t.slot_seconds / 3600.0,
            (long long)t.processes);
  else
    gf_logf(st->log, GF_LOG_INFO, "ganflow-train: the run so far: %.6g J "
            "(%lld processes; no price given)", t.cpu_joules + t.gpu_joules,
            (long long)t.processes);
}

void train_cost_quality(train_state *st, const char *key, double value,
                        int64_t k) {
  if (st->rank != 0 || st->cfg->price_per_hour < 0 || !isfinite(value)) return;
  char name[128];
  int n = snprintf(name, sizeof name, "cost/%s_x_usd", key);
  if (!gf_fits(n, sizeof name)) return;
  for (char *p = name + 5; *p; p++)
    if (*p == '/') *p = '_';
  gf_tracker_metric(st->tracker, name, value * st->cost.run_usd,
                    mlflow_now_ms(), k);
}

void train_cost_free(train_state *st) {
  gf_energy_close(st->cost.meter);
  st->cost.meter = NULL;
}
