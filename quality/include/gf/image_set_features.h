/* image_set_features.h - the Inception features and the reference
 * statistics of an image set at its native size (gf/image_set.h), for
 * `ganflow fid` (quality/src/image_set_features.c). */
#ifndef GF_IMAGE_SET_FEATURES_H
#define GF_IMAGE_SET_FEATURES_H

#include <stdio.h>

#include "gf/image_set.h"
#include "gf/inception.h"
#include "gf/quality.h"
#include "gf/status.h"

/* Features [set->n, GF_INCEPTION_DIM] (caller's memory) of every image of
 * set, in set order: images of one size go through the network together,
 * at most `batch` at a time. Progress lines go to log (may be NULL),
 * labelled with `what`. */
gf_status gf_img_set_features(gf_inception *net, const gf_img_set *set,
                              int batch, const char *what, FILE *log,
                              float *feats, gf_err *err);

/* The reference statistics of set (gf/quality.h): a uniform set through
 * gf_quality_ref_init; a set of mixed sizes the same way with a digest of
 * each image's shape and pixels (cached in the same feature cache).
 * cache_dir as gf_quality_ref_init's ("" no cache). On success the caller
 * owns *ref (gf_quality_ref_free). */
gf_status gf_img_set_ref(gf_inception *net, const gf_img_set *set, int batch,
                         const char *cache_dir, FILE *log,
                         gf_quality_ref *ref, gf_err *err);

#endif
