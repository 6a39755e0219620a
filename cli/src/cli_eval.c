/* cli_eval.c - `ganflow eval SOURCE` (gf/cli_quality.h) and the evaluator
 * it shares with --follow (cli_eval_internal.h): the FID network, the
 * dataset read at the generator's geometry as ganflow-train reads it, the
 * reference statistics of its first N images (cached by digest), N
 * generated images scored against them, and the one log-batch that puts
 * fid, kid, kid_std (swd/avg) into an MLflow run. Everything that can fail
 * on the inputs fails before anything is logged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_eval_internal.h"
#include "gf/clock.h"
#include "gf/swd.h"
#include "gf/text.h"

gf_status eval_ref_init(eval_ref *r, const gf_cli_eval_opts *o, FILE *log,
                        gf_err *err) {
  memset(r, 0, sizeof *r);
  bool no_default = false;
  GF_TRY(gf_cli_cache_dir(o->cache_dir, r->cache, sizeof r->cache,
                          &no_default, err));
  if (no_default && log)
    fprintf(log, "no cache directory (HOME unset): reference statistics "
            "not cached\n");
  double t0 = gf_mono_s();
  GF_TRY(gf_cli_quality_ctx(&r->ctx, o->backend, o->device_index, o->threads,
                            err));
  r->ctx_ready = true;
  gf_status st = gf_inception_load(&r->ctx, NULL, NULL, o->batch, &r->net,
                                   err);
  if (st != GF_OK) {
    eval_ref_free(r);
    return st;
  }
  if (log)
    fprintf(log, "FID network loaded in %.1f s (%zu MB on the device)\n",
            gf_mono_s() - t0, gf_inception_device_bytes(r->net) >> 20);
  return GF_OK;
}

void eval_ref_free(eval_ref *r) {
  if (!r) return;
  gf_quality_ref_free(&r->ref);
  gf_dataset_free(&r->ds);
  gf_inception_free(r->net);
  if (r->ctx_ready) gf_ctx_free(&r->ctx);
  memset(r, 0, sizeof *r);
}

gf_status eval_ref_prepare(eval_ref *r, const gf_cli_eval_opts *o, int c,
                           int h, int w, FILE *log, gf_err *err) {
  if (r->ready && r->c == c && r->h == h && r->w == w) return GF_OK;
  gf_quality_ref_free(&r->ref);
  gf_dataset_free(&r->ds);
  r->ready = false;
  gf_data_options d;
  memset(&d, 0, sizeof d);
  GF_TRY(gf_data_spec_parse(o->data, &d, err));
  d.fit = GF_DATA_FIT_RESIZE; /* ganflow-train's default */
  d.channels = c;
  d.height = h;
  d.width = w;
  double t0 = gf_mono_s();
  GF_TRY(gf_dataset_load(&r->ds, &d, err));
  if (r->ds.n < o->images) {
    gf_status st = gf_fail(err, GF_EINVAL, "%s: %lld images, fewer than "
                           "--images %lld", o->data, (long long)r->ds.n,
                           (long long)o->images);
    gf_dataset_free(&r->ds);
    return st;
  }
  double t1 = gf_mono_s();
  if (log) {
    fprintf(log, "dataset %s (%s): %lld images read as %dx%dx%d in %.1f s; "
            "the first %lld are the reference\n", r->ds.source,
            gf_data_format_name(r->ds.format), (long long)r->ds.n, c, h, w,
            t1 - t0, (long long)o->images);
    fflush(log);
  }
  char warn[600];
  gf_status st = gf_quality_ref_init(r->net, r->ds.pixels, o->images, c, h, w,
                                     r->cache, &r->ref, warn, sizeof warn,
                                     err);
  if (st != GF_OK) {
    gf_dataset_free(&r->ds);
    return st;
  }
  if (log) {
    if (warn[0]) fprintf(log, "%s\n", warn);
    if (r->ref.from_cache)
      fprintf(log, "reference statistics from the cache %s\n",
              r->ref.cache_path);
    else
      fprintf(log, "reference: features of %lld images in %.1f s (%.2f "
              "images/s)%s%s\n", (long long)o->images, gf_mono_s() - t1,
              (double)o->images / (gf_mono_s() - t1),
              r->ref.cache_path[0] ? ", cached in " : "", r->ref.cache_path);
    fflush(log);
  }
  r->c = c;
  r->h = h;
  r->w = w;
  r->ready = true;
  return GF_OK;
}

/* SWD of the generated images against the first n of the dataset. */
static gf_status eval_swd(const eval_ref *r, const float *gen, int64_t n,
                          int threads, double *avg, gf_err *err) {
  if (r->h != r->w)
    return gf_fail(err, GF_EUNSUPPORTED, "swd needs square images (the "
                   "model's are %dx%d)", r->w, r->h);
  gf_swd_images a = {r->ds.pixels, GF_SWD_U8, n, r->c, r->h, r->w};
  gf_swd_images b = {gen, GF_SWD_F32, n, r->c, r->h, r->w};
  gf_swd_config cfg = gf_swd_config_default();
  cfg.threads = threads > 0 && threads <= GF_SWD_MAX_THREADS ? threads : 0;
  gf_swd_result res;
  GF_TRY(gf_swd(&a, &b, &cfg, &res, err));
  *avg = res.avg;
  return GF_OK;
}

gf_status eval_run(eval_ref *r, eval_gen *g, const gf_cli_eval_opts *o,
                   FILE *log, gf_eval_result *res, gf_err *err) {
  res->fid = res->kid = res->kid_std = res->swd_avg = NAN;
  int64_t n = o->images;
  int c = g->cfg.image_channels, h = g->cfg.image_height,
      w = g->cfg.image_width;
  bool swd = (o->metrics & GF_CLI_EVAL_SWD) != 0;
  float *feats = malloc((size_t)n * GF_INCEPTION_DIM * sizeof *feats);
  float *z = malloc((size_t)g->max_batch * (size_t)g->cfg.z_dim * sizeof *z);
  /* The generated images: all of them for SWD, else one batch at a time. */
  size_t keep = swd ? (size_t)n : (size_t)g->max_batch;
  float *img = malloc(keep * g->image_numel * sizeof *img);
  gf_status st = GF_OK;
  if (!feats || !z || !img)
    st = gf_fail(err, GF_ENOMEM, "eval: out of memory for %lld images",
                 (long long)n);
  double t0 = gf_mono_s(), last = t0, t_gen = 0;
  for (int64_t i = 0; st == GF_OK && i < n; i += g->max_batch) {
    int k = (int)(n - i < g->max_batch ? n - i : g->max_batch);
    float *dst = img + (swd ? (size_t)i * g->image_numel : 0);
    double tg = gf_mono_s();
    st = eval_gen_run(g, o->seed, i, k, z, dst, err);
    t_gen += gf_mono_s() - tg;
    if (st == GF_OK)
      st = gf_inception_features_f32(r->net, dst, k, c, h, w,
                                     feats + (size_t)i * GF_INCEPTION_DIM,
                                     err);
    if (st == GF_OK && log && (gf_mono_s() - last >= 10 || i + k == n)) {
      double dt = gf_mono_s() - t0;
      fprintf(log, "generated: %lld/%lld images, %.2f images/s (generator "
              "%.1f s)\n", (long long)(i + k), (long long)n,
              (double)(i + k) / dt, t_gen);
      fflush(log);
      last = gf_mono_s();
    }
  }
  unsigned which = (o->metrics & GF_CLI_EVAL_FID ? GF_QUALITY_FID : 0) |
                   (o->metrics & GF_CLI_EVAL_KID ? GF_QUALITY_KID : 0);
  gf_quality q = {NAN, NAN, NAN};
  if (st == GF_OK && which)
    st = gf_quality_of_features(&r->ref, feats, n, which, NULL, &q, err);
  if (st == GF_OK) {
    res->fid = q.fid;
    res->kid = q.kid;
    res->kid_std = q.kid_std;
  }
  if (st == GF_OK && swd)
    st = eval_swd(r, img, n, o->threads, &res->swd_avg, err);
  free(img);
  free(z);
  free(feats);
  return st;
}

void eval_print(FILE *out, unsigned metrics, const gf_eval_result *res) {
  if (metrics & GF_CLI_EVAL_FID) fprintf(out, "fid %.6f\n", res->fid);
  if (metrics & GF_CLI_EVAL_KID)
    fprintf(out, "kid %.8f kid_std %.8f\n", res->kid, res->kid_std);
  if (metrics & GF_CLI_EVAL_SWD) fprintf(out, "swd/avg %.6f\n", res->swd_avg);
  fflush(out);
}

gf_status eval_log(mlflow_client *c, const char *run_id, int64_t step,
                   unsigned metrics, const gf_eval_result *res, gf_err *err) {
  int64_t now = mlflow_now_ms();
  mlflow_metric m[4];
  size_t n = 0;
  if (metrics & GF_CLI_EVAL_FID) m[n++] = (mlflow_metric){"fid", res->fid, now, step};
  if (metrics & GF_CLI_EVAL_KID) {
    m[n++] = (mlflow_metric){"kid", res->kid, now, step};
    m[n++] = (mlflow_metric){"kid_std", res->kid_std, now, step};
  }
  if (metrics & GF_CLI_EVAL_SWD)
    m[n++] = (mlflow_metric){"swd/avg", res->swd_avg, now, step};
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_log_batch(c, run_id, m, n, NULL, 0, NULL, 0, &e) != MLFLOW_OK)
    return gf_fail(err, GF_EIO, "run %s: logging the metrics at step %lld "
                   "failed: %s", run_id, (long long)step, e.message);
  return GF_OK;
}

gf_status eval_check_run(mlflow_client *c, const char *run_id,
                         mlflow_run_status *status, gf_err *err) {
  mlflow_run run;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_run_get(c, run_id, &run, &e) != MLFLOW_OK)
    return gf_fail(err, e.status == MLFLOW_E_NOT_FOUND ? GF_ENOTFOUND : GF_EIO,
                   "run %s: %s", run_id, e.message);
  bool deleted = run.info.lifecycle_stage &&
                 strcmp(run.info.lifecycle_stage, "deleted") == 0;
  if (status) *status = run.info.status;
  mlflow_run_free(&run);
  if (deleted)
    return gf_fail(err, GF_ESTATE, "run %s is deleted", run_id);
  return GF_OK;
}

gf_status gf_cli_eval(mlflow_client *c, const gf_cli_eval_opts *o, FILE *out,
                      FILE *log, gf_eval_result *res, gf_err *err) {
  if (!o || !o->source || !o->data || !out || o->images < 2 || o->batch < 1)
    return gf_fail(err, GF_EINVAL, "eval: bad arguments");
  bool is_uri = strncmp(o->source, "models:/", 8) == 0;
  if ((is_uri || o->run_id) && !c)
    return gf_fail(err, GF_EINVAL, "eval: an MLflow client is needed");
  if (is_uri && o->run_id && o->step < 0)
    return gf_fail(err, GF_EINVAL, "--run-id with a models:/ SOURCE needs "
                   "--step");
  /* The run first: a wrong id should not cost an evaluation. */
  if (o->run_id) GF_TRY(eval_check_run(c, o->run_id, NULL, err));
  double t0 = gf_mono_s();
  eval_gen g;
  eval_ref r;
  memset(&r, 0, sizeof r);
  gf_status st = is_uri ? eval_gen_open_uri(&g, c, o->source, o, err)
                        : eval_gen_open_ckpt(&g, o->source, o, err);
  if (st != GF_OK) return st;
  if (log) {
    if (g.is_ckpt)
      fprintf(log, "checkpoint %s: step %lld, run %s, %s %dx%dx%d\n",
              g.label, (long long)g.meta.step,
              g.meta.run_id[0] ? g.meta.run_id : "(none)",
              gf_arch_name(g.cfg.architecture), g.cfg.image_channels,
              g.cfg.image_height, g.cfg.image_width);
    else
      fprintf(log, "model %s: %s %dx%dx%d\n", g.label,
              gf_arch_name(g.cfg.architecture), g.cfg.image_channels,
              g.cfg.image_height, g.cfg.image_width);
  }
  st = eval_ref_init(&r, o, log, err);
  if (st == GF_OK)
    st = eval_ref_prepare(&r, o, g.cfg.image_channels, g.cfg.image_height,
                          g.cfg.image_width, log, err);
  gf_eval_result rr;
  if (st == GF_OK) st = eval_run(&r, &g, o, log, &rr, err);
  if (st == GF_OK) {
    rr.step = -1;
    eval_print(out, o->metrics, &rr);
    if (o->run_id) {
      rr.step = o->step >= 0 ? o->step : g.meta.step;
      st = eval_log(c, o->run_id, rr.step, o->metrics, &rr, err);
      if (st == GF_OK && log)
        fprintf(log, "logged into run %s at step %lld\n", o->run_id,
                (long long)rr.step);
    }
    if (log) fprintf(log, "total %.1f s\n", gf_mono_s() - t0);
    if (res) *res = rr;
  }
  eval_ref_free(&r);
  eval_gen_free(&g);
  return st;
}
