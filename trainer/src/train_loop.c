/* train_loop.c - one ganflow-train run from a finished configuration to
 * its exit status: resume decision, data, networks, MLflow (through
 * train_tracking.c), the step loop with its metrics, sample grids, SWD
 * evaluations and checkpoints, the progress display, and the end (model
 * registration, final run status).
 *
 * Determinism (DESIGN §4.1): step k (0-based) runs --d-steps K D updates
 * (gf_gan_d_step) and one G update (gf_gan_g_step); D update j draws its
 * latents and dropout masks from (seed, k K + j) and its data from
 * gf_data_position_of_step(k K + j) in st->order's stream (its samples per
 * epoch: the images, doubled with mirror); a checkpoint taken after k steps holds
 * meta.step = k and every arena byte, so a run resumed from it repeats the
 * uninterrupted run's steps k, k+1, ... bit for bit (same --threads; on
 * --device cuda with --deterministic, on the same GPU model).
 * Sample grids and SWD use G in inference mode (BN running statistics,
 * nothing updated) with fixed latents from (seed, GF_RNG_SAMPLE), so they
 * never perturb training and are comparable over a run.
 *
 * --device cuda[:N]: the GAN's arenas live on the GPU; each batch is copied
 * there, and a host twin of the GAN (same config, CPU memory) is what
 * checkpoints are written from and loaded into (gf_gan_copy_state), and
 * what the model directory is written from; sample grids and SWD images
 * are read back from the GPU.
 *
 * Step numbering in MLflow: a metric logged "at step k" describes the
 * state after k completed optimizer steps (k = 1..steps); checkpoint
 * ckpt-k holds that state.
 *
 * Several ranks (DESIGN §4.6, a gf_comm from main): every rank trains on
 * its slice of the global batch (gf_data_rank_slice) and the GAN step
 * all-reduces the gradients (gf/gan.h). Rank 0 alone decides where to
 * start, reads the checkpoint and sends the state to the others, talks to
 * MLflow, writes sample grids, SWD and checkpoints (after a barrier); the
 * others relay their system metrics to it. Before every step the ranks
 * sum a flag for a batch that could not be read (no rank enters the step
 * without its batch); after it, the stop flag (so that all stop at the
 * same step) and the losses (logged as the means over ranks). Every
 * --check-every steps they compare digests of their parameters. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/checkpoint.h"
#include "gf/clock.h"
#include "gf/ctx.h"
#include "gf/data.h"
#include "gf/fs.h"
#include "gf/gan.h"
#include "gf/image_grid.h"
#include "gf/monitor.h"
#include "gf/rng.h"
#include "gf/sg2_gan.h"
#include "gf/strbuf.h"
#include "gf/swd.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"
#include "train_dist.h"
#include "train_state.h"

/* "MM:SS", "H:MM:SS" or "--:--" into buf[32]: at most 10 digits of hours
 * (s <= 1e7) and two fields, so it always fits. */
static void fmt_eta(char buf[32], double s) {
  int n;
  long t = (long)(s + 0.5);
  if (!(s >= 0) || s > 1e7) n = snprintf(buf, 32, "--:--");
  else if (t >= 3600)
    n = snprintf(buf, 32, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else n = snprintf(buf, 32, "%02ld:%02ld", t / 60, t % 60);
  assert(gf_fits(n, 32));
  (void)n;
}

/* Window of steps since the last metric point. */
typedef struct window {
  int64_t steps;
  double data_s;       /* seconds waiting for the loader's batch */
  double compute_s;    /* seconds in the G+D step (device included) */
  double ema_step_s;   /* smoothed seconds per step, for the ETA */
  double r1_sum;       /* R1 penalties of the window's D updates that ran */
  int64_t r1_n;        /* it (--r1), and how many */
} window;

/* Real images a step reads (all ranks): one batch per D update. */
static double step_images(const train_state *st) {
  return (double)st->cfg->batch * st->cfg->d_steps;
}

/* Seconds of the window's steps: data wait + compute. */
static double window_s(const window *w) { return w->data_s + w->compute_s; }

static void progress(train_state *st, int64_t k, const gf_gan_stats *gs,
                     const window *w, bool log_line) {
  double secs = window_s(w);
  double ips = secs > 0 ? (double)w->steps * step_images(st) / secs : 0;
  if (w->ema_step_s > 0) ips = step_images(st) / w->ema_step_s;
  char eta[32];
  fmt_eta(eta, (double)(st->cfg->steps - k) * w->ema_step_s);
  if (st->log && st->log->live) {
    /* Redrawn in place: short, at most five times a second. */
    double t = gf_mono_s();
    if (!log_line && t - st->last_draw < 0.2 && k != st->cfg->steps) return;
    st->last_draw = t;
    gf_logf(st->log, GF_LOG_PROGRESS,
            "step %lld/%lld  %.0f img/s  loss_d "
            "%.4f  loss_g %.4f  ETA %s",
            (long long)k, (long long)st->cfg->steps, ips, gs->loss_d,
            gs->loss_g, eta);
  } else if (log_line) {
    gf_logf(st->log, GF_LOG_PROGRESS,
            "step %lld/%lld  loss_d %.4f  loss_g "
            "%.4f  d_real %.3f  d_fake %.3f  %.0f img/s  ETA %s",
            (long long)k, (long long)st->cfg->steps, gs->loss_d, gs->loss_g,
            gs->d_real, gs->d_fake, ips, eta);
  }
}

/* The seams' figures over the window since the last log point. */
static void log_sync_metrics(train_state *st, int64_t k, int64_t ts,
                             int64_t steps) {
  gf_gan_sync_stats now;
  gf_gan_sync_stats_get(&st->gan, &now);
  double ar = now.allreduce_s - st->sync_prev.allreduce_s;
  double ex = now.exposed_s - st->sync_prev.exposed_s;
  uint64_t bytes = now.bytes - st->sync_prev.bytes;
  st->sync_prev = now;
  if (steps <= 0 || st->world == 1) return;
  gf_tracker *t = st->tracker;
  gf_tracker_metric(t, "perf/allreduce_s", ar / (double)steps, ts, k);
  gf_tracker_metric(t, "perf/allreduce_exposed_s", ex / (double)steps, ts, k);
  if (ar > 0) {
    gf_tracker_metric(t, "perf/allreduce_hidden_fraction", 1.0 - ex / ar, ts, k);
    gf_tracker_metric(t, "perf/allreduce_gbytes_per_sec",
                      (double)bytes / ar * 1e-9, ts, k);
  }
}

static void log_step_metrics(train_state *st, int64_t k,
                             const gf_gan_stats *gs, const window *w,
                             const gf_sg2_step_out *so) {
  int64_t ts = mlflow_now_ms();
  gf_tracker *t = st->tracker;
  if (st->sg2) { /* ADA's augmentation probability and its signal */
    gf_tracker_metric(t, "ada/p", so->ada_p, ts, k);
    if (isfinite(so->ada_rt)) gf_tracker_metric(t, "ada/rt", so->ada_rt, ts, k);
  }
  gf_tracker_metric(t, "loss/d", gs->loss_d, ts, k);
  gf_tracker_metric(t, "loss/g", gs->loss_g, ts, k);
  gf_tracker_metric(t, "d/real", gs->d_real, ts, k);
  gf_tracker_metric(t, "d/fake", gs->d_fake, ts, k);
  if (w->r1_n > 0) /* the mean of the window's R1 penalties (--r1) */
    gf_tracker_metric(t, "loss/r1", w->r1_sum / (double)w->r1_n, ts, k);
  double secs = window_s(w);
  if (w->steps > 0 && secs > 0) {
    gf_tracker_metric(t, "perf/images_per_sec",
                      (double)w->steps * step_images(st) / secs, ts, k);
    /* The step-time split: mean seconds per step over the window. */
    gf_tracker_metric(t, "perf/data_wait_s", w->data_s / (double)w->steps, ts,
                      k);
    gf_tracker_metric(t, "perf/compute_s", w->compute_s / (double)w->steps,
                      ts, k);
  }
  log_sync_metrics(st, k, ts, w->steps);
}

static void train_state_free(train_state *st) {
  gf_monitor_free(st->monitor);
  train_cost_free(st);
  if (st->relay_ok) gf_relay_destroy(&st->relay);
  gf_data_loader_free(st->loader);
  gf_gan_free(&st->gan);
  gf_gan_free(&st->host);
  train_sg2_free(st);
  gf_tensor_free(&st->dreal);
  gf_tensor_free(&st->dz);
  gf_dist_free(&st->dist);
  if (st->hctx_ok) gf_ctx_free(&st->hctx);
  if (st->ctx_ok) gf_ctx_free(&st->ctx);
  gf_dataset_free(&st->ds);
  train_quality_free(st);
  free(st->grid_z);
  free(st->gen_labels);
  gf_tensor_free(&st->dlab);
  free(st->eval_z);
  free(st->gen);
  if (st->dir_lock >= 0) close(st->dir_lock);
}

static bool due(int64_t k, int64_t every) { return every > 0 && k % every == 0; }

/* World > 1: every rank's monitor figures since the last exchange, logged
 * by rank 0 under per-rank names (MLflow's per-node names for system/). */
static gf_status relay_system_metrics(train_state *st, gf_err *err) {
  if (st->world == 1 || !st->relay_ok) return GF_OK;
  gf_relay_buf *all = calloc((size_t)st->world, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = gf_relay_exchange(&st->relay, &st->dist, all, err);
  for (int r = 0; s == GF_OK && st->rank == 0 && r < st->world; r++) {
    for (int i = 0; i < all[r].n && i < GF_RELAY_MAX; i++) {
      const gf_relay_entry *e = &all[r].e[i];
      char name[GF_RELAY_NAME + 32];
      char raw[GF_RELAY_NAME];
      memcpy(raw, e->name, sizeof raw);
      raw[sizeof raw - 1] = '\0';
      gf_relay_node_name(name, sizeof name, raw, r);
      gf_tracker_metric(st->tracker, name, e->value, e->timestamp_ms, e->step);
    }
  }
  free(all);
  return s;
}

/* The next batch of this rank's slice into *real (on the ctx's device),
 * with a class-conditional run its labels given to the GAN (they must be
 * labels: gf_gan_set_labels checks), the seconds waited for it added to
 * *wait_s. With several ranks, every
 * rank learns whether all of them have their batch: a rank without it must
 * not enter the step. */
static gf_status next_real(train_state *st, gf_tensor *real, double *wait_s,
                           gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  const gf_batch *b = NULL;
  double t0 = gf_mono_s();
  gf_status s = gf_data_loader_next(st->loader, &b, err);
  *wait_s += gf_mono_s() - t0;
  int64_t shape[4] = {s == GF_OK ? (int64_t)b->n : 0, m->image_channels,
                      m->image_height, m->image_width};
  if (s == GF_OK)
    s = gf_tensor_view(real, b->images, GF_F32, GF_DEV_CPU, 4, shape, err);
  if (s == GF_OK && st->sg2) {
    /* gf_sg2_gan_step takes the batch on any device, its labels here */
    st->sg2_labels = m->num_classes > 0 ? b->labels : NULL;
  } else if (s == GF_OK && m->num_classes > 0) {
    gf_tensor lab;
    int64_t nl = (int64_t)b->n;
    s = gf_tensor_view(&lab, b->labels, GF_I32, GF_DEV_CPU, 1, &nl, err);
    if (s == GF_OK) s = gf_gan_set_labels(&st->gan, &st->ctx, &lab, err);
  }
  if (s == GF_OK && st->on_dev && !st->sg2) { /* the batch goes to the GPU */
    gf_tensor dr;
    s = gf_tensor_view(&dr, st->dreal.data, GF_F32, GF_DEV_CUDA, 4, shape,
                       err);
    dr.device_index = st->dreal.device_index; /* b->n <= batch samples */
    if (s == GF_OK) s = gf_tensor_copy(&dr, real, err);
    *real = dr;
  }
  if (st->world > 1) {
    double flag[1] = {s != GF_OK};
    gf_err e2;
    if (gf_dist_sum_f64(&st->dist, flag, 1, &e2) != GF_OK) {
      if (s == GF_OK && err) *err = e2;
      if (s == GF_OK) s = e2.code;
    } else if (flag[0] > 0 && s == GF_OK) {
      s = gf_fail(err, GF_ESTATE, "another rank could not read its batch "
                  "(its message is in its log)");
    }
  }
  return s;
}

/* What the ranks sum after each step. */
enum { AGG_STOP, AGG_LOSS_D, AGG_LOSS_DR, AGG_LOSS_DF, AGG_LOSS_G,
       AGG_D_REAL, AGG_D_FAKE, AGG_D_FAKE2, AGG_R1, AGG_N };

/* The step loop; *k_out = steps completed when it returns. */
static gf_status loop(train_state *st, const atomic_int *stop,
                      int64_t *k_out, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  bool lead = st->rank == 0;
  int64_t k = st->start_step;
  window w = {0, 0, 0, 0, 0, 0};
  gf_gan_stats gs;
  memset(&gs, 0, sizeof gs);
  gf_sg2_step_out so;
  memset(&so, 0, sizeof so);
  so.ada_rt = NAN;
  gf_status s = GF_OK;
  /* The untrained generator's SWD is the baseline the series is read
   * against (a resumed run already logged it; the tracker skips it). */
  if (lead && st->n_eval && k == 0) {
    double avg = 0;
    gf_heartbeat_beat(st->hb, GF_HB_EVAL, k);
    s = train_evaluate(st, 0, &avg, err);
    if (s != GF_OK) {
      *k_out = k;
      return s;
    }
    gf_logf(st->log, GF_LOG_INFO, "step 0: swd/avg %.2f (untrained generator)",
            avg);
  }
  /* Its sample grid too: step 0 is where MLflow's image card and its step
   * slider open, and the baseline the later grids are read against. */
  if (lead && cfg->sample_every && k == 0) {
    s = train_write_samples(st, 0, err);
    if (s != GF_OK) {
      *k_out = k;
      return s;
    }
  }
  gf_gan_sync_stats_get(&st->gan, &st->sync_prev);
  bool stopped = false;
  gf_heartbeat_beat(st->hb, GF_HB_TRAIN, k);
  int K = cfg->d_steps;
  while (k < cfg->steps && !stopped) {
    /* K D updates, each on its own batch (data step k K + j), then the G
     * update on the last one's latents. */
    double t0 = gf_mono_s(), data_s = 0;
    gf_gan_sync_stats before, after;
    gf_gan_sync_stats_get(&st->gan, &before);
    gf_gan_stats sum;
    memset(&sum, 0, sizeof sum);
    if (st->sg2) { /* one StyleGAN2-ADA iteration (K is 1) */
      gf_tensor real;
      s = next_real(st, &real, &data_s, err);
      if (s == GF_OK)
        s = train_sg2_step(st, &real, st->sg2_labels, k, &so, err);
      if (s != GF_OK) break;
      gs.loss_g = so.loss_g;
      sum.d_real = so.scores_real * K;
      sum.d_fake = so.scores_fake * K;
    }
    for (int j = 0; j < K && s == GF_OK && !st->sg2; j++) {
      gf_tensor real;
      s = next_real(st, &real, &data_s, err);
      if (s == GF_OK)
        s = gf_gan_d_step(&st->gan, &st->ctx, &real, NULL, cfg->seed,
                          k * K + j, st->sample0, &gs, err);
      sum.loss_d_real += gs.loss_d_real, sum.loss_d_fake += gs.loss_d_fake;
      sum.d_real += gs.d_real, sum.d_fake += gs.d_fake;
      if (s == GF_OK && gs.r1_done) sum.r1 += gs.r1, w.r1_n++;
    }
    if (s == GF_OK && !st->sg2)
      s = gf_gan_g_step(&st->gan, &st->ctx, cfg->seed, k * K + K - 1, &gs,
                        err);
    if (s != GF_OK) break;
    /* D's figures: the mean over the step's D updates */
    gs.loss_d_real = sum.loss_d_real / K, gs.loss_d_fake = sum.loss_d_fake / K;
    gs.d_real = sum.d_real / K, gs.d_fake = sum.d_fake / K;
    gs.loss_d = st->sg2 ? so.loss_d : gs.loss_d_real + gs.loss_d_fake;
    double t1 = t0 + data_s;
    gf_gan_sync_stats_get(&st->gan, &after);
    double t2 = gf_mono_s();
    k++;
    gf_heartbeat_beat(st->hb, GF_HB_TRAIN, k);
    /* The ranks agree on stopping and average the losses. */
    double agg[AGG_N] = {atomic_load(stop) != 0, gs.loss_d, gs.loss_d_real,
                         gs.loss_d_fake, gs.loss_g, gs.d_real, gs.d_fake,
                         gs.d_fake_after, sum.r1};
    if (st->world > 1) {
      s = gf_dist_sum_f64(&st->dist, agg, AGG_N, err);
      if (s != GF_OK) break;
    }
    if (st->world > 1 && !st->sg2) { /* stylegan2's are the whole batch's */
      double inv = 1.0 / st->world;
      gs.loss_d = agg[AGG_LOSS_D] * inv;
      gs.loss_d_real = agg[AGG_LOSS_DR] * inv;
      gs.loss_d_fake = agg[AGG_LOSS_DF] * inv;
      gs.loss_g = agg[AGG_LOSS_G] * inv;
      gs.d_real = agg[AGG_D_REAL] * inv;
      gs.d_fake = agg[AGG_D_FAKE] * inv;
      gs.d_fake_after = agg[AGG_D_FAKE2] * inv;
    }
    w.r1_sum += agg[AGG_R1] / st->world; /* every rank runs R1 at the same steps */
    stopped = agg[AGG_STOP] > 0;
    double t3 = gf_mono_s();
    /* all-reduce: the seams' waits after the backward, and the sum above */
    double ar = after.exposed_s - before.exposed_s + (t3 - t2);
    gf_monitor_add_step(st->monitor, t1 - t0, t3 - t1 - ar, ar);
    w.steps++;
    w.data_s += t1 - t0;
    w.compute_s += t3 - t1;
    w.ema_step_s = w.ema_step_s > 0 ? 0.9 * w.ema_step_s + 0.1 * (t3 - t0)
                                    : t3 - t0;
    bool log_now = due(k, cfg->log_every);
    if (log_now && (s = relay_system_metrics(st, err)) != GF_OK) break;
    /* the last step's cost is logged at the very end (train_cost_close) */
    if (log_now && (s = train_cost_exchange(st, k, (double)k * step_images(st),
                                            !stopped && k != cfg->steps,
                                            err)) != GF_OK)
      break;
    if (due(k, cfg->check_every) &&
        (s = st->sg2 ? train_sg2_check(st, k, err)
                     : gf_dist_check_params(&st->dist, &st->gan, cfg->sync_bn,
                                            k, err)) != GF_OK)
      break;
    if (lead) {
      if (log_now) log_step_metrics(st, k, &gs, &w, &so);
      progress(st, k, &gs, &w, log_now);
    }
    if (log_now) w.steps = 0, w.data_s = w.compute_s = w.r1_sum = 0, w.r1_n = 0;
    if (lead &&
        (due(k, cfg->sample_every) || (k == cfg->steps && cfg->sample_every))) {
      s = train_write_samples(st, k, err);
      if (s != GF_OK) break;
    }
    if (lead && (st->n_eval || st->n_fid) &&
        (due(k, cfg->eval_every) || (k == cfg->steps && cfg->eval_every))) {
      double avg = 0;
      gf_heartbeat_beat(st->hb, GF_HB_EVAL, k);
      if (st->n_eval) {
        s = train_evaluate(st, k, &avg, err);
        if (s != GF_OK) break;
        train_cost_quality(st, "swd/avg", avg, k);
        gf_logf(st->log, GF_LOG_INFO, "step %lld: swd/avg %.2f",
                (long long)k, avg);
      }
      s = train_quality_eval(st, k, err);
      if (s != GF_OK) break;
    }
    if (due(k, cfg->checkpoint_every) && k != cfg->steps) {
      gf_heartbeat_beat(st->hb, GF_HB_CHECKPOINT, k);
      s = train_checkpoint(st, k, err);
      if (s != GF_OK) break;
    }
  }
  *k_out = k;
  return s;
}

/* --promote-if-better, at the end of a run that registered a version: the
 * promotion gate of mlflow/registry.h on that version. Reported to the log
 * and in the run tag ganflow.promotion ("promoted: ...", "refused: ...",
 * "error: ...", "skipped: ..."); never fails the run. */
static void promote_if_better(gf_tracker *t, const gf_train_config *cfg,
                              const gf_log *log) {
  if (!cfg->promote_alias[0]) return;
  const char *version = gf_tracker_model_version(t);
  gf_strbuf b;
  gf_strbuf_init(&b);
  if (!version || !version[0]) {
    gf_strbuf_puts(&b, "skipped: no version registered by this process (the "
                       "run had its model already)");
  } else {
    mlflow_gate_result r;
    mlflow_error me;
    memset(&me, 0, sizeof me);
    mlflow_status s = mlflow_alias_set_if_better(
        gf_tracker_client(t), cfg->register_model, version, cfg->promote_alias,
        cfg->promote_metric, cfg->promote_max ? MLFLOW_GATE_MAX : MLFLOW_GATE_MIN,
        &r, &me);
    if (s != MLFLOW_OK)
      gf_strbuf_printf(&b, "error: %s@%s not moved to version %s: %s",
                       cfg->register_model, cfg->promote_alias, version,
                       me.message);
    else
      gf_strbuf_printf(&b, "%s: %s",
                       mlflow_gate_promoted(r.verdict) ? "promoted" : "refused",
                       r.message);
  }
  char *tag = gf_strbuf_take(&b, NULL);
  if (!tag) {
    gf_logf(log, GF_LOG_WARN, "ganflow-train: promotion: out of memory");
    return;
  }
  gf_logf(log, GF_LOG_INFO, "ganflow-train: promotion %s", tag);
  gf_tracker_set_tag(t, "ganflow.promotion", tag);
  free(tag);
}

gf_train_exit gf_train_run(const gf_train_config *given,
                           const gf_launch_info *launch, gf_comm *comm,
                           const atomic_int *stop, gf_heartbeat *hb,
                           const gf_log *log) {
  /* The run's config: the flags, with what --auto (or the run's stored
   * choice) sets (train_auto_setup). */
  gf_train_config tuned = *given;
  const gf_train_config *cfg = &tuned;
  gf_comm *auto_comm = NULL; /* owned: the chosen all-reduce's comm */
  train_state st;
  memset(&st, 0, sizeof st);
  st.dir_lock = -1;
  st.cfg = cfg;
  st.hb = hb;
  st.log = log;
  gf_heartbeat_beat(hb, GF_HB_SETUP, -1);
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_train_exit rc = GF_TRAIN_EXIT_FAIL;
  int run_status = MLFLOW_RUN_FAILED;
  bool shared_err = false; /* the same message on every rank: rank 0 says it */
  gf_comm *nccl = NULL;    /* owned: GPU ranks' communicator, made here */
  bool lead = true;

  gf_dist_init(&st.dist, comm, &st.ctx);
  st.rank = st.dist.rank;
  st.world = st.dist.world;
  lead = st.rank == 0;
  if (train_make_ctx(&st, launch, &err) != GF_OK) goto out;
  if (st.on_dev && launch && launch->world_size > 1) {
    /* GPUs talk over NCCL on the ctx's stream (its id over MPI when MPI
     * launched the job, else through MASTER_ADDR:MASTER_PORT). */
    gf_comm_config ncfg = {GF_COMM_NCCL,
                           cfg->exact_reduce ? GF_ALLREDUCE_TREE
                                             : (gf_allreduce_algo)cfg->allreduce,
                           cfg->comm_timeout, &st.ctx, launch};
    if (gf_comm_init(&nccl, &ncfg, &err) != GF_OK) goto out;
    comm = nccl;
    gf_dist_init(&st.dist, comm, &st.ctx);
    st.rank = st.dist.rank;
    st.world = st.dist.world;
  } else if (!comm && launch && launch->world_size > 1) {
    gf_fail(&err, GF_EINVAL, "launched as rank %d of %d (%s) without a "
            "communicator: CPU ranks start with mpirun, srun or "
            "torchrun-style variables (MASTER_ADDR, MASTER_PORT)",
            launch->rank, launch->world_size, launch->launcher);
    goto out_usage;
  }
  lead = st.rank == 0;
  if (gf_dist_agree(&st.dist, train_cost_start(&st, launch, &err),
                    "opening the energy meter", &err) != GF_OK)
    goto out;

  gf_status s = gf_train_model_config(cfg, &st.mcfg, &err);
  if (s == GF_OK) s = train_plan_slices(&st, &err);
  if (s != GF_OK) {
    shared_err = true;
    goto out_usage;
  }
  /* Rank 0 decides where the job starts. */
  if (lead) {
    s = gf_mkdir_p(cfg->checkpoint_dir, 0755, &err);
    if (s == GF_OK) s = train_lock_dir(cfg->checkpoint_dir, &st.dir_lock, &err);
    if (s == GF_OK) s = train_choose_start(&st, &err);
    else s = GF_EINVAL;
  }
  s = gf_dist_agree(&st.dist, s, "choosing where to start", &err);
  if (s == GF_EINVAL) goto out_usage;
  if (s != GF_OK) goto out;
  s = gf_dist_agree(&st.dist, train_load_data(&st, &err), "loading the data", &err);
  if (s != GF_OK) goto out;
  s = train_auto_setup(&st, &tuned, launch, &comm, &auto_comm, &err);
  if (s == GF_EINVAL) goto out_usage;
  if (s != GF_OK) goto out;
  bool usage = false;
  s = cfg->model == GF_ARCH_STYLEGAN2 ? train_sg2_build(&st, &usage, &err)
                                      : train_build_model(&st, &usage, &err);
  if (s != GF_OK && !usage && s == GF_EINVAL) s = GF_EIO; /* a failure, not usage */
  s = gf_dist_agree(&st.dist, s, "building the model", &err);
  if (s == GF_EINVAL) goto out_usage;
  if (s != GF_OK) goto out;
  s = train_share_start(&st, &err);
  if (s == GF_OK) s = train_distribute(&st, comm, &err);
  if (s == GF_OK && lead) s = train_alloc_eval(&st, &err);
  if (s == GF_OK && lead) s = train_quality_init(&st, &err);
  if (gf_dist_agree(&st.dist, s, "setting up the ranks", &err) != GF_OK) goto out;

  /* Integers and fixed words: at most 60 bytes. */
  char device_desc[96], ranks[32] = "", hosts[2048];
  int dn = 0;
  if (st.world > 1) dn = snprintf(ranks, sizeof ranks, " x %d ranks", st.world);
  assert(gf_fits(dn, sizeof ranks));
  if (st.on_dev)
    dn = snprintf(device_desc, sizeof device_desc, "cuda:%d%s%s",
                  st.ctx.device_index,
                  cfg->deterministic ? " (deterministic)" : "", ranks);
  else
    dn = snprintf(device_desc, sizeof device_desc, "cpu (%d threads)%s",
                  st.ctx.nthreads, ranks);
  assert(gf_fits(dn, sizeof device_desc));
  (void)dn;
  if (train_gather_hosts(&st, hosts, sizeof hosts, &err) != GF_OK) goto out;
  s = GF_OK;
  if (lead) {
    gf_tracker_start_info si = {cfg, st.run_id[0] ? st.run_id : NULL,
                                device_desc, hosts};
    s = gf_tracker_start(&st.tracker, &si, log, &err);
  }
  if (gf_dist_agree(&st.dist, s, "starting the MLflow run", &err) != GF_OK)
    goto out;
  if (lead) gf_heartbeat_set_run(hb, gf_tracker_run_id(st.tracker));
  if (lead) train_quality_announce(&st);
  if (gf_dist_agree(&st.dist, train_cost_begin_run(&st, &err),
                    "reading the cost ledger", &err) != GF_OK)
    goto out;
  gf_heartbeat_beat(hb, GF_HB_SETUP, st.start_step);
  if (lead)
    gf_logf(log, GF_LOG_INFO,
            "ganflow-train: run %s, %s %dx%dx%d, %lld "
            "images, %s, checkpoints in %s",
            gf_tracker_run_id(st.tracker), gf_arch_name(st.mcfg.architecture),
            st.mcfg.image_channels, st.mcfg.image_height, st.mcfg.image_width,
            (long long)st.ds.n, device_desc, cfg->checkpoint_dir);
  s = train_start_monitors(&st, &err);
  if (s == GF_OK)
    s = gf_data_loader_start(&st.loader, &st.ds, &st.order,
                             (uint64_t)st.start_step * (uint64_t)cfg->d_steps,
                             LOADER_DEPTH, &err);
  if (gf_dist_agree(&st.dist, s, "starting the monitor and the loader", &err) !=
      GF_OK)
    goto out;

  int64_t k = st.start_step;
  if (loop(&st, stop, &k, &err) != GF_OK) goto out;
  gf_heartbeat_beat(hb, GF_HB_FINISH, k);
  gf_monitor_stop(st.monitor);
  if (relay_system_metrics(&st, &err) != GF_OK) goto out; /* the last ones */

  /* The last state is always on disk (and uploaded) before the run ends. */
  if (st.ckpt_step != k && train_checkpoint(&st, k, &err) != GF_OK) goto out;
  /* The ranks' shares of the run's energy and cost, for rank 0 to log at
   * the last step once its uploads are done (train_cost_close). */
  if (train_cost_exchange(&st, k, (double)k * step_images(&st), false,
                          &err) != GF_OK)
    goto out;
  st.cost.closing = true;
  st.cost.close_step = k;
  st.cost.close_log = k > st.start_step;
  if (!lead) {
    rc = GF_TRAIN_EXIT_OK;
    goto out;
  }
  if (gf_tracker_flush(st.tracker, 120, &err) != GF_OK)
    gf_logf(log, GF_LOG_WARN, "ganflow-train: warning: %s", err.msg);
  gf_tracker_uploads_wait(st.tracker);
  if (k < cfg->steps) {
    gf_logf(log, GF_LOG_INFO,
            "ganflow-train: stopped by a signal at step "
            "%lld; checkpoint written; run the same command to resume",
            (long long)k);
    run_status = MLFLOW_RUN_KILLED;
    rc = GF_TRAIN_EXIT_OK;
    gf_heartbeat_beat(hb, GF_HB_STOPPED, k);
    goto out;
  }
  if (st.mcfg.num_classes > 0)
    gf_tracker_set_class_names(st.tracker, (const char *const *)st.ds.class_names,
                               st.ds.num_classes);
  if (st.sg2 ? train_sg2_log_model(&st, &err) != GF_OK
             : ((st.on_dev &&
                 gf_gan_copy_state(&st.host, &st.gan, &err) != GF_OK) ||
                gf_tracker_log_model(st.tracker, st.on_dev ? &st.host : &st.gan,
                                     log, &err) != GF_OK)) {
    gf_logf(log, GF_LOG_ERROR,
            "ganflow-train: training finished (checkpoint "
            "of step %lld written) but the model could not be logged: %s",
            (long long)k, err.msg);
    gf_logf(log, GF_LOG_ERROR, "run the same command again to retry");
    err.msg[0] = '\0';
    goto out;
  }
  promote_if_better(st.tracker, cfg, log);
  run_status = MLFLOW_RUN_FINISHED;
  rc = GF_TRAIN_EXIT_OK;
  gf_heartbeat_beat(hb, GF_HB_DONE, k);
  gf_logf(log, GF_LOG_INFO, "ganflow-train: finished %lld steps", (long long)k);
  goto out;

out_usage:
  rc = GF_TRAIN_EXIT_USAGE;
out:
  if (rc != GF_TRAIN_EXIT_OK && err.msg[0] && (lead || !shared_err)) {
    if (st.world > 1)
      gf_logf(log, GF_LOG_ERROR, "ganflow-train: rank %d: %s", st.rank,
              err.msg);
    else gf_logf(log, GF_LOG_ERROR, "ganflow-train: %s", err.msg);
  }
  gf_monitor_stop(st.monitor);
  if (st.tracker && st.cost.closing)
    train_cost_close(&st, st.cost.close_step,
                     (double)st.cost.close_step * step_images(&st),
                     st.cost.close_log);
  if (st.tracker) {
    /* Everything queued before the status changes, so a FINISHED run is
     * complete when a reader sees it. */
    if (gf_tracker_finish(st.tracker, run_status, log) != 0 &&
        run_status == MLFLOW_RUN_FINISHED)
      rc = GF_TRAIN_EXIT_FAIL;
    st.tracker = NULL;
  }
  train_state_free(&st);
  gf_comm_free(auto_comm);
  gf_comm_free(nccl);
  return rc;
}
