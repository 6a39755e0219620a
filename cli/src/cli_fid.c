/* cli_fid.c - `ganflow fid PATH_A PATH_B` (gf/cli_quality.h): both image
 * sets read at their native sizes (image_folder.c), PATH_A's reference
 * statistics from the feature cache or computed (and cached), PATH_B's
 * features computed, then FID and KID (gf/quality.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/cli_quality.h"
#include "gf/fs.h"

static void describe(FILE *log, const char *label, const char *path,
                     const gf_img_set *s) {
  if (!log) return;
  if (s->uniform)
    fprintf(log, "%s: %s (%s): %lld images of %dx%dx%d\n", label, path,
            s->kind, (long long)s->n, s->c, s->h, s->w);
  else
    fprintf(log, "%s: %s (%s): %lld images of several sizes\n", label, path,
            s->kind, (long long)s->n);
  if (s->skipped)
    fprintf(log, "%s: %lld file(s) without a .png/.jpg/.jpeg name not read\n",
            label, (long long)s->skipped);
}

gf_status gf_cli_fid(const gf_cli_fid_opts *o, FILE *out, FILE *log,
                     gf_quality *q, gf_err *err) {
  if (!o || !o->path_a || !o->path_b || o->batch < 1 || !out)
    return gf_fail(err, GF_EINVAL, "fid: bad arguments");
  char cache[GF_PATH_MAX];
  bool no_default = false;
  GF_TRY(gf_cli_cache_dir(o->cache_dir, cache, sizeof cache, &no_default,
                          err));
  if (no_default && log)
    fprintf(log, "no cache directory (HOME unset): statistics not cached\n");
  gf_img_set a = {0}, b = {0};
  gf_ctx ctx;
  bool ctx_ready = false;
  gf_inception *net = NULL;
  gf_quality_ref ref = {0};
  float *fb = NULL;
  double t0 = gf_mono_s();
  /* Inputs first: a bad folder is reported before the network loads. */
  gf_status st = gf_img_set_load(o->path_a, &a, err);
  if (st == GF_OK) st = gf_img_set_load(o->path_b, &b, err);
  if (st == GF_OK && (a.n < 2 || b.n < 2))
    st = gf_fail(err, GF_EINVAL, "%s: FID needs at least 2 images per set "
                 "(got %lld)", a.n < 2 ? o->path_a : o->path_b,
                 (long long)(a.n < 2 ? a.n : b.n));
  if (st == GF_OK) {
    describe(log, "A", o->path_a, &a);
    describe(log, "B", o->path_b, &b);
    st = gf_cli_quality_ctx(&ctx, o->backend, o->device_index, o->threads,
                            err);
    ctx_ready = st == GF_OK;
  }
  if (st == GF_OK)
    st = gf_inception_load(&ctx, NULL, NULL, o->batch, &net, err);
  double t_load = gf_mono_s();
  if (st == GF_OK && log)
    fprintf(log, "network loaded in %.1f s (%zu MB on the device)\n",
            t_load - t0, gf_inception_device_bytes(net) >> 20);
  if (st == GF_OK)
    st = gf_img_set_ref(net, &a, o->batch, cache, log, &ref, err);
  double t_ref = gf_mono_s();
  if (st == GF_OK && log) {
    if (ref.from_cache)
      fprintf(log, "A: statistics from the cache %s\n", ref.cache_path);
    else
      fprintf(log, "A: features of %lld images in %.1f s (%.2f images/s)%s%s"
              "\n", (long long)a.n, t_ref - t_load,
              (double)a.n / (t_ref - t_load), ref.cache_path[0] ?
              ", cached in " : "", ref.cache_path);
  }
  if (st == GF_OK) {
    fb = malloc((size_t)b.n * GF_INCEPTION_DIM * sizeof *fb);
    if (!fb) st = gf_fail(err, GF_ENOMEM, "out of memory for features");
  }
  if (st == GF_OK)
    st = gf_img_set_features(net, &b, o->batch, "B", log, fb, err);
  double t_b = gf_mono_s();
  if (st == GF_OK && log)
    fprintf(log, "B: features of %lld images in %.1f s (%.2f images/s)\n",
            (long long)b.n, t_b - t_ref, (double)b.n / (t_b - t_ref));
  gf_quality res = {NAN, NAN, NAN};
  if (st == GF_OK)
    st = gf_quality_of_features(&ref, fb, b.n,
                                GF_QUALITY_FID | (o->kid ? GF_QUALITY_KID : 0),
                                NULL, &res, err);
  if (st == GF_OK) {
    fprintf(out, "FID: %.6f\n", res.fid);
    if (o->kid) fprintf(out, "KID: %.8f ± %.8f\n", res.kid, res.kid_std);
    fflush(out);
    if (log) fprintf(log, "total %.1f s\n", gf_mono_s() - t0);
    if (q) *q = res;
  }
  free(fb);
  gf_quality_ref_free(&ref);
  gf_inception_free(net);
  if (ctx_ready) gf_ctx_free(&ctx);
  gf_img_set_free(&a);
  gf_img_set_free(&b);
  return st;
}
