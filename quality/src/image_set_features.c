/* image_set_features.c - the Inception features of an image set at its
 * native size (gf/image_set.h), batched by image size, and its reference
 * statistics with the feature cache (gf/image_set_features.h), for
 * `ganflow fid`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/feat_cache.h"
#include "gf/image_set_features.h"
#include "gf/sha256.h"
#include "gf/text.h"

/* ---- features ---------------------------------------------------------- */

/* Sort key of an item: its size, then its index (stable groups). */
typedef struct item_key {
  int h, w;
  int64_t i;
} item_key;

static int cmp_key(const void *pa, const void *pb) {
  const item_key *a = pa, *b = pb;
  if (a->h != b->h) return a->h < b->h ? -1 : 1;
  if (a->w != b->w) return a->w < b->w ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static void progress(FILE *log, const char *what, int64_t done, int64_t n,
                     double t0) {
  if (!log) return;
  double dt = gf_mono_s() - t0;
  fprintf(log, "%s: %lld/%lld images, %.1f images/s\n", what,
          (long long)done, (long long)n, dt > 0 ? (double)done / dt : 0.0);
  fflush(log);
}

static gf_status features_uniform(gf_inception *net, const gf_img_set *set,
                                  int batch, const char *what, FILE *log,
                                  float *feats, gf_err *err) {
  size_t stride = (size_t)set->c * (size_t)set->h * (size_t)set->w;
  double t0 = gf_mono_s(), last = t0;
  for (int64_t i = 0; i < set->n; i += batch) {
    int64_t k = set->n - i < batch ? set->n - i : batch;
    GF_TRY(gf_inception_features_u8(net, set->pixels + (size_t)i * stride, k,
                                    set->c, set->h, set->w,
                                    feats + (size_t)i * GF_INCEPTION_DIM,
                                    err));
    if (gf_mono_s() - last >= 10 || i + k == set->n) {
      progress(log, what, i + k, set->n, t0);
      last = gf_mono_s();
    }
  }
  return GF_OK;
}

static gf_status features_mixed(gf_inception *net, const gf_img_set *set,
                                int batch, const char *what, FILE *log,
                                float *feats, gf_err *err) {
  item_key *keys = malloc((size_t)set->n * sizeof *keys);
  float *out = malloc((size_t)batch * GF_INCEPTION_DIM * sizeof *out);
  uint8_t *buf = NULL;
  size_t buf_cap = 0;
  gf_status st = GF_OK;
  if (!keys || !out) st = gf_fail(err, GF_ENOMEM, "features: out of memory");
  for (int64_t i = 0; st == GF_OK && i < set->n; i++)
    keys[i] = (item_key){set->items[i].h, set->items[i].w, i};
  if (st == GF_OK) qsort(keys, (size_t)set->n, sizeof *keys, cmp_key);
  double t0 = gf_mono_s(), last = t0;
  int64_t done = 0;
  for (int64_t g = 0; st == GF_OK && g < set->n;) {
    /* One batch: up to `batch` items of one size. */
    int64_t e = g;
    int c = 1;
    while (e < set->n && e - g < batch && keys[e].h == keys[g].h &&
           keys[e].w == keys[g].w) {
      if (set->items[keys[e].i].c == 3) c = 3;
      e++;
    }
    int h = keys[g].h, w = keys[g].w;
    size_t stride = (size_t)c * (size_t)h * (size_t)w;
    size_t need = stride * (size_t)(e - g);
    if (need > buf_cap) {
      uint8_t *nb = realloc(buf, need);
      if (!nb) {
        st = gf_fail(err, GF_ENOMEM, "features: out of memory");
        break;
      }
      buf = nb;
      buf_cap = need;
    }
    for (int64_t j = g; j < e; j++)
      gf_img_put_planes(&set->items[keys[j].i], c, buf + (size_t)(j - g) * stride);
    st = gf_inception_features_u8(net, buf, e - g, c, h, w, out, err);
    for (int64_t j = g; st == GF_OK && j < e; j++)
      memcpy(feats + (size_t)keys[j].i * GF_INCEPTION_DIM,
             out + (size_t)(j - g) * GF_INCEPTION_DIM,
             GF_INCEPTION_DIM * sizeof *out);
    done += e - g;
    g = e;
    if (st == GF_OK && (gf_mono_s() - last >= 10 || done == set->n)) {
      progress(log, what, done, set->n, t0);
      last = gf_mono_s();
    }
  }
  free(buf);
  free(out);
  free(keys);
  return st;
}

gf_status gf_img_set_features(gf_inception *net, const gf_img_set *set,
                              int batch, const char *what, FILE *log,
                              float *feats, gf_err *err) {
  if (!net || !set || set->n < 1 || batch < 1 || !feats)
    return gf_fail(err, GF_EINVAL, "features: bad arguments");
  return set->uniform
             ? features_uniform(net, set, batch, what, log, feats, err)
             : features_mixed(net, set, batch, what, log, feats, err);
}

/* ---- reference statistics ---------------------------------------------- */

/* SHA-256 of "ganflow-image-list n\n", then per image "c h w\n" and its
 * pixels: never equal to a uniform set's digest (gf_quality_ref_init's
 * "ganflow-images ..." header). */
static gf_status mixed_digest(const gf_img_set *set, char hex[65],
                              gf_err *err) {
  gf_sha256 s;
  GF_TRY(gf_sha256_init(&s, err));
  char head[96];
  int len = snprintf(head, sizeof head, "ganflow-image-list %lld\n",
                     (long long)set->n);
  gf_status st = gf_sha256_update(&s, head, (size_t)len, err);
  for (int64_t i = 0; st == GF_OK && i < set->n; i++) {
    const gf_image *im = &set->items[i];
    len = snprintf(head, sizeof head, "%d %d %d\n", im->c, im->h, im->w);
    st = gf_sha256_update(&s, head, (size_t)len, err);
    if (st == GF_OK)
      st = gf_sha256_update(&s, im->px,
                            (size_t)im->c * (size_t)im->h * (size_t)im->w,
                            err);
  }
  if (st == GF_OK) st = gf_sha256_final(&s, hex, err);
  gf_sha256_free(&s);
  return st;
}

static gf_status mixed_ref(gf_inception *net, const gf_img_set *set,
                           int batch, const char *dir, FILE *log,
                           gf_quality_ref *ref, gf_err *err) {
  GF_TRY(mixed_digest(set, ref->data_sha256, err));
  gf_feat_cache_key key = {gf_inception_sha256(net), ref->data_sha256,
                           GF_INCEPTION_PREPROCESS, set->n, GF_INCEPTION_DIM};
  gf_feat_moments m = {0};
  if (dir[0]) {
    GF_TRY(gf_feat_cache_path(dir, &key, ref->cache_path,
                              sizeof ref->cache_path, err));
    gf_err e;
    gf_status s = gf_feat_cache_read(ref->cache_path, &key, &ref->feats, &m,
                                     &e);
    if (s == GF_OK) {
      ref->n = set->n;
      ref->from_cache = true;
      return gf_quality_ref_finish(ref, &m, NULL, NULL, 0, err);
    }
    if (s != GF_ENOTFOUND)
      return gf_fail(err, s, "%s (delete it to compute the reference "
                     "statistics again)", e.msg);
  }
  ref->feats = malloc((size_t)set->n * GF_INCEPTION_DIM * sizeof *ref->feats);
  if (!ref->feats)
    return gf_fail(err, GF_ENOMEM, "out of memory for %lld features",
                   (long long)set->n);
  gf_status s = gf_img_set_features(net, set, batch, "reference", log,
                                    ref->feats, err);
  gf_inception_release(net);
  GF_TRY(s);
  GF_TRY(gf_feat_moments_compute(ref->feats, set->n, GF_INCEPTION_DIM, &m,
                                 err));
  ref->n = set->n;
  char warn[600];
  warn[0] = '\0';
  s = gf_quality_ref_finish(ref, &m, dir[0] ? &key : NULL, warn, sizeof warn,
                            err);
  if (warn[0] && log) fprintf(log, "%s\n", warn);
  return s;
}

gf_status gf_img_set_ref(gf_inception *net, const gf_img_set *set, int batch,
                         const char *cache_dir, FILE *log,
                         gf_quality_ref *ref, gf_err *err) {
  memset(ref, 0, sizeof *ref);
  if (!net || !set || set->n < 2)
    return gf_fail(err, GF_EINVAL, "FID needs at least 2 images in each set "
                   "(got %lld)", set ? (long long)set->n : 0LL);
  if (set->uniform) {
    char warn[600];
    gf_status st = gf_quality_ref_init(net, set->pixels, set->n, set->c,
                                       set->h, set->w, cache_dir, ref, warn,
                                       sizeof warn, err);
    if (st == GF_OK && warn[0] && log) fprintf(log, "%s\n", warn);
    return st;
  }
  gf_status st = mixed_ref(net, set, batch, cache_dir ? cache_dir : "", log,
                           ref, err);
  if (st != GF_OK) gf_quality_ref_free(ref);
  return st;
}
