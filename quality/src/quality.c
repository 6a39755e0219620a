/* quality.c - reference statistics with their cache, and FID/KID of a
 * generated set against them (gf/quality.h). */
#include "gf/quality.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/feat_cache.h"
#include "gf/sha256.h"
#include "gf/text.h"

/* SHA-256 of "ganflow-images n c h w\n" followed by the pixels: images of
 * another shape never share a digest with these. */
static gf_status images_digest(const uint8_t *px, int64_t n, int c, int h,
                               int w, char hex[GF_SHA256_HEX_LEN + 1],
                               gf_err *err) {
  char head[96];
  int len = snprintf(head, sizeof head, "ganflow-images %lld %d %d %d\n",
                     (long long)n, c, h, w);
  gf_sha256 s;
  GF_TRY(gf_sha256_init(&s, err));
  gf_status st = gf_sha256_update(&s, head, (size_t)len, err);
  if (st == GF_OK)
    st = gf_sha256_update(&s, px, (size_t)n * c * h * w, err);
  if (st == GF_OK) st = gf_sha256_final(&s, hex, err);
  gf_sha256_free(&s);
  return st;
}

void gf_quality_ref_free(gf_quality_ref *ref) {
  if (!ref) return;
  free(ref->feats);
  ref->feats = NULL;
  gf_feat_moments_free(&ref->moments);
  gf_fid_ref_free(&ref->fid);
  ref->n = 0;
}

gf_status gf_quality_ref_finish(gf_quality_ref *ref, gf_feat_moments *m,
                                const gf_feat_cache_key *key, char *warn,
                                size_t warn_cap, gf_err *err) {
  if (key && ref->cache_path[0]) {
    gf_err e;
    if (gf_feat_cache_write(ref->cache_path, key, ref->feats, m, &e) !=
        GF_OK) {
      if (warn && warn_cap) {
        int wn = snprintf(warn, warn_cap, "reference statistics not cached: "
                         "%s", e.msg);
        (void)wn; /* a cut warning still warns */
      }
      ref->cache_path[0] = '\0';
    }
  }
  gf_status st = gf_feat_moments_check("a", m, err);
  if (st != GF_OK) {
    gf_feat_moments_free(m);
    return st;
  }
  ref->moments = *m;
  memset(m, 0, sizeof *m);
  return GF_OK;
}

gf_status gf_quality_ref_init(gf_inception *net, const uint8_t *pixels,
                              int64_t n, int c, int h, int w,
                              const char *cache_dir, gf_quality_ref *ref,
                              char *warn, size_t warn_cap, gf_err *err) {
  if (!ref) return gf_fail(err, GF_EINVAL, "quality: NULL ref");
  memset(ref, 0, sizeof *ref);
  if (warn && warn_cap) warn[0] = '\0';
  if (!net || !pixels || n < 2)
    return gf_fail(err, GF_EINVAL, "quality: a reference needs a network "
                   "and at least 2 images (got %lld)", (long long)n);
  GF_TRY(images_digest(pixels, n, c, h, w, ref->data_sha256, err));
  gf_feat_cache_key key = {gf_inception_sha256(net), ref->data_sha256,
                           GF_INCEPTION_PREPROCESS, n, GF_INCEPTION_DIM};
  char dir[1024];
  if (!cache_dir)
    GF_TRY(gf_feat_cache_default_dir(dir, sizeof dir, err));
  else
    GF_TRY(gf_format(dir, sizeof dir, err, "feature cache dir", "%s",
                     cache_dir));
  gf_feat_moments m = {0};
  if (dir[0]) {
    GF_TRY(gf_feat_cache_path(dir, &key, ref->cache_path,
                              sizeof ref->cache_path, err));
    gf_err e;
    gf_status s = gf_feat_cache_read(ref->cache_path, &key, &ref->feats, &m,
                                     &e);
    if (s == GF_OK) {
      ref->n = n;
      ref->from_cache = true;
      s = gf_quality_ref_finish(ref, &m, NULL, NULL, 0, err);
      if (s != GF_OK) gf_quality_ref_free(ref);
      return s;
    }
    if (s != GF_ENOTFOUND) {
      gf_quality_ref_free(ref);
      return gf_fail(err, s, "%s (delete it to compute the reference "
                     "statistics again)", e.msg);
    }
  }
  ref->feats = malloc((size_t)n * GF_INCEPTION_DIM * sizeof *ref->feats);
  if (!ref->feats)
    return gf_fail(err, GF_ENOMEM, "quality: no memory for %lld features",
                   (long long)n);
  gf_status s = gf_inception_features_u8(net, pixels, n, c, h, w, ref->feats,
                                         err);
  gf_inception_release(net);
  if (s == GF_OK)
    s = gf_feat_moments_compute(ref->feats, n, GF_INCEPTION_DIM, &m, err);
  ref->n = n;
  if (s == GF_OK)
    s = gf_quality_ref_finish(ref, &m, dir[0] ? &key : NULL, warn, warn_cap,
                              err);
  if (s != GF_OK) gf_quality_ref_free(ref);
  return s;
}

gf_status gf_quality_of_features(gf_quality_ref *ref,
                                 const float *feats, int64_t n,
                                 unsigned which, const gf_kid_config *kc,
                                 gf_quality *out, gf_err *err) {
  if (!ref || !feats || !out || n < 2 || ref->n < 2)
    return gf_fail(err, GF_EINVAL, "quality: needs a reference and at least "
                   "2 generated images (got %lld)", (long long)n);
  out->fid = out->kid = out->kid_std = NAN;
  if ((which & GF_QUALITY_FID) && n <= GF_INCEPTION_DIM) {
    GF_TRY(gf_fid_feats(&ref->moments, feats, n, GF_INCEPTION_DIM, &out->fid,
                        err));
  } else if (which & GF_QUALITY_FID) {
    if (!ref->fid.y) GF_TRY(gf_fid_ref_init(&ref->moments, &ref->fid, err));
    gf_feat_moments m = {0};
    GF_TRY(gf_feat_moments_compute(feats, n, GF_INCEPTION_DIM, &m, err));
    GF_TRY(gf_fid_to_ref_take(&ref->fid, &m, &out->fid, err));
  }
  if (which & GF_QUALITY_KID) {
    gf_kid_config d = gf_kid_config_default();
    GF_TRY(gf_kid(ref->feats, ref->n, feats, n, GF_INCEPTION_DIM,
                  kc ? kc : &d, &out->kid, &out->kid_std, err));
  }
  return GF_OK;
}
