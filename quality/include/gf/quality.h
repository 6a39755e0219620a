/* quality.h - FID and KID of generated images against a reference set of
 * real images, as ganflow-train's evaluations and `ganflow eval` / `ganflow
 * fid` compute them: the reference's Inception features and moments are
 * computed once per (images, network) and kept in the feature cache
 * (gf/feat_cache.h); the generated set's are computed each time.
 *
 * Both sets go through gf_inception_features_u8 (8-bit pixels, the
 * preprocessing of gf/inception.h), so a reference computed from a
 * dataset equals one computed from the same images saved as PNG. */
#ifndef GF_QUALITY_H
#define GF_QUALITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/feat_cache.h"
#include "gf/fid.h"
#include "gf/inception.h"
#include "gf/kid.h"
#include "gf/status.h"

enum {
  GF_QUALITY_FID = 1u << 0,
  GF_QUALITY_KID = 1u << 1,
};

/* The reference set: its features (for KID) and FID's side of it
 * prepared from their moments (for FID; the moments themselves are in the
 * cache file and not kept). */
typedef struct gf_quality_ref {
  int64_t n;                           /* images */
  float *feats;                        /* owned; [n, GF_INCEPTION_DIM] */
  gf_feat_moments moments;             /* owned; the features' mean and
                                          covariance */
  gf_fid_ref fid;                      /* owned; gf_fid_ref_init of
                                          moments, prepared the first time
                                          a set of more than
                                          GF_INCEPTION_DIM images is
                                          compared; empty until then */
  char data_sha256[65];                /* digest of the images' bytes and
                                          their shape */
  char cache_path[1024];               /* the cache file ("" none) */
  bool from_cache;                     /* read, not computed */
} gf_quality_ref;

/* The reference of n images of c x h x w 8-bit pixels (planar per image):
 * read from cache_dir (NULL: gf_feat_cache_default_dir; "" no cache) when a
 * file of this (images, network, preprocessing) is there, else computed
 * with net and written there (a cache that cannot be written is only
 * reported through *warn, a caller-provided buffer of warn_cap bytes; warn
 * may be NULL). A cache file that exists but does not match (another
 * network or images) or is damaged is an error naming the file: delete it
 * to recompute. Computing releases net's activations
 * (gf_inception_release) once the features are in, before the moments and
 * FID's preparation take their memory. On success the caller owns *ref
 * (gf_quality_ref_free). */
gf_status gf_quality_ref_init(gf_inception *net, const uint8_t *pixels,
                              int64_t n, int c, int h, int w,
                              const char *cache_dir, gf_quality_ref *ref,
                              char *warn, size_t warn_cap, gf_err *err);
/* Releases what ref owns; accepts a zeroed or freed ref. */
void gf_quality_ref_free(gf_quality_ref *ref);

/* The last step of a reference whose features ref->feats (ref->n of them)
 * are in: when key is not NULL and ref->cache_path is not empty, the
 * cache file of key (the features and *m) is written at ref->cache_path (a
 * failure to write is no error: its message goes to warn, a
 * caller-provided buffer of warn_cap bytes that may be NULL, and
 * ref->cache_path is emptied); then the moments *m (computed, or read
 * from the cache) become ref->moments (*m left empty, also on failure).
 * For gf_quality_ref_init and the references other callers build the same
 * way (gf_img_set_ref). */
gf_status gf_quality_ref_finish(gf_quality_ref *ref, gf_feat_moments *m,
                                const gf_feat_cache_key *key, char *warn,
                                size_t warn_cap, gf_err *err);

typedef struct gf_quality {
  double fid;             /* NAN when not asked */
  double kid, kid_std;    /* NAN when not asked */
} gf_quality;

/* FID and/or KID (which: GF_QUALITY_* bits) of n generated images' features
 * feats [n, GF_INCEPTION_DIM] against ref. n >= 2; kc NULL means
 * gf_kid_config_default(). FID: for n <= GF_INCEPTION_DIM through
 * gf_fid_feats (the n x n form: no eigen-decomposition of the reference's
 * covariance, a hundredth of the work at n = 64); above, gf_fid_to_ref
 * against ref->fid, which the first such call prepares (the reason ref is
 * not const). */
gf_status gf_quality_of_features(gf_quality_ref *ref,
                                 const float *feats, int64_t n,
                                 unsigned which, const gf_kid_config *kc,
                                 gf_quality *out, gf_err *err);

#endif
