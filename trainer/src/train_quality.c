/* train_quality.c - FID and KID in ganflow-train's evaluations
 * (--eval-metrics fid,kid): rank 0 loads the FID Inception-v3 on a context
 * of its own (the trainer's GPU, or a CPU context with the plain oneDNN
 * layout, which runs this network several times faster than the training
 * ctx's blocked one), takes the reference statistics of the first
 * --fid-images dataset images from the feature cache or computes them
 * before the run starts (so a missing network file or a bad cache fails the
 * job before anything is logged), logs the cache file as the artifact
 * fid/reference.safetensors, and at each evaluation after step 0 scores
 * --fid-images generated images (the fixed evaluation latents, quantised to
 * 8 bits as the sample PNGs are) against it: metrics fid, kid, kid_std.
 * Between evaluations the network keeps its weights only: its activations
 * are released after each set's features. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/quality.h"
#include "gf/text.h"
#include "mlflow/client.h"
#include "train_state.h"

/* The FID network's chunk of images (at most; gf_inception_batch_for). */
#define TRAIN_FID_BATCH 32

gf_status train_quality_init(train_state *st, gf_err *err) {
  if (!st->n_fid) return GF_OK;
  const gf_model_config *m = &st->mcfg;
  if (m->image_channels != 1 && m->image_channels != 3)
    return gf_fail(err, GF_EINVAL, "--eval-metrics fid/kid: images of %d "
                   "channels; the FID network takes grey (1) or RGB (3) "
                   "images", m->image_channels);
  gf_ctx_config cc = {GF_BACKEND_CPU, st->ctx.nthreads, 0,
                      GF_CPU_LAYOUT_PLAIN};
  if (st->on_dev) {
    cc.backend = GF_BACKEND_CUDA;
    cc.device_index = st->ctx.device_index;
  }
  GF_TRY(gf_ctx_init(&st->qctx, &cc, err));
  st->qctx_ok = true;
  double t0 = gf_mono_s();
  gf_err e;
  /* Chunks of 32 images on a GPU; on the CPU the smallest chunk that
   * gives the same features (a few images: the activations are about
   * 12.6 MiB per image). */
  int batch = gf_inception_batch_for(&st->qctx, TRAIN_FID_BATCH);
  if (gf_inception_load(&st->qctx, NULL, NULL, batch, &st->inception, &e) !=
      GF_OK)
    return gf_fail(err, e.code, "--eval-metrics fid/kid: %s", e.msg);
  st->qfeats = malloc((size_t)st->n_fid * GF_INCEPTION_DIM *
                      sizeof *st->qfeats);
  if (!st->qfeats)
    return gf_fail(err, GF_ENOMEM, "out of memory for FID features");
  char warn[1200];
  /* The images as stored (never --mirror's flips): the real set. */
  gf_status s = gf_quality_ref_init(st->inception, st->ds.pixels, st->n_fid,
                                    m->image_channels, m->image_height,
                                    m->image_width, NULL, &st->qref, warn,
                                    sizeof warn, &e);
  if (s != GF_OK)
    return gf_fail(err, s, "--eval-metrics fid/kid: reference statistics: "
                   "%s", e.msg);
  st->qref_ok = true;
  if (warn[0]) gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s",
                       warn);
  gf_logf(st->log, GF_LOG_INFO, "ganflow-train: FID/KID against the first "
          "%d dataset images: reference statistics %s in %.1f s%s%s",
          st->n_fid, st->qref.from_cache ? "read from the cache" : "computed",
          gf_mono_s() - t0, st->qref.cache_path[0] ? ", " : "",
          st->qref.cache_path);
  return GF_OK;
}

void train_quality_announce(train_state *st) {
  if (!st->qref_ok || !st->tracker) return;
  char tag[512];
  int n = snprintf(tag, sizeof tag, "%lld images, data sha256 %s, network "
                   "sha256 %s, preprocessing %s", (long long)st->qref.n,
                   st->qref.data_sha256, gf_inception_sha256(st->inception),
                   GF_INCEPTION_PREPROCESS);
  if (gf_fits(n, sizeof tag)) /* two digests and a short name: it fits */
    gf_tracker_set_tag(st->tracker, "ganflow.fid.reference", tag);
  if (st->qref.cache_path[0])
    gf_tracker_upload(st->tracker, st->qref.cache_path,
                      "fid/reference.safetensors", false);
}

gf_status train_quality_eval(train_state *st, int64_t k, gf_err *err) {
  if (!st->qref_ok || k == 0) return GF_OK;
  const gf_model_config *m = &st->mcfg;
  double t0 = gf_mono_s();
  GF_TRY(train_generate(st, st->eval_z, st->n_fid, 1, err));
  gf_status fs = gf_inception_features_f32(st->inception, st->gen,
                                           st->n_fid, m->image_channels,
                                           m->image_height, m->image_width,
                                           st->qfeats, err);
  /* the activations until the next evaluation: memory FID's algebra and
   * training can use */
  gf_inception_release(st->inception);
  GF_TRY(fs);
  unsigned which = 0;
  if (st->cfg->eval_metrics & GF_EVAL_FID) which |= GF_QUALITY_FID;
  if (st->cfg->eval_metrics & GF_EVAL_KID) which |= GF_QUALITY_KID;
  gf_kid_config kc = gf_kid_config_default();
  kc.seed = st->cfg->seed;
  gf_quality q;
  GF_TRY(gf_quality_of_features(&st->qref, st->qfeats, st->n_fid, which, &kc,
                                &q, err));
  int64_t ts = mlflow_now_ms();
  char line[160] = "";
  if (which & GF_QUALITY_FID) {
    gf_tracker_metric(st->tracker, "fid", q.fid, ts, k);
    train_cost_quality(st, "fid", q.fid, k);
    GF_TRY(gf_format(line, sizeof line, err, "evaluation line", "fid %.2f",
                     q.fid));
  }
  if (which & GF_QUALITY_KID) {
    gf_tracker_metric(st->tracker, "kid", q.kid, ts, k);
    gf_tracker_metric(st->tracker, "kid_std", q.kid_std, ts, k);
    size_t len = strlen(line);
    GF_TRY(gf_format(line + len, sizeof line - len, err, "evaluation line",
                     "%skid %.4f +- %.4f", len ? ", " : "", q.kid,
                     q.kid_std));
  }
  gf_logf(st->log, GF_LOG_INFO, "step %lld: %s (%d images, %.1f s)",
          (long long)k, line, st->n_fid, gf_mono_s() - t0);
  return GF_OK;
}

void train_quality_free(train_state *st) {
  if (st->qref_ok) gf_quality_ref_free(&st->qref);
  st->qref_ok = false;
  gf_inception_free(st->inception);
  st->inception = NULL;
  free(st->qfeats);
  st->qfeats = NULL;
  if (st->qctx_ok) gf_ctx_free(&st->qctx);
  st->qctx_ok = false;
}
