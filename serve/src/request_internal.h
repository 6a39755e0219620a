/* request_internal.h - what the body parsers (request_json.c,
 * request_v2.c, request_invocations.c) share: strict JSON numbers, the
 * batch-size check, seeds and latents taken from JSON arrays, and the
 * parse-then-fill frame. Not a public interface: see gfs/request.h. */
#ifndef GFS_REQUEST_INTERNAL_H
#define GFS_REQUEST_INTERNAL_H

#include <cjson/cJSON.h>

#include "gfs/request.h"

/* A JSON number that is an exact integer in [0, 2^53], or a string of
 * decimal digits (larger seeds). 0 on success. */
int gfs_json_uint(const cJSON *v, uint64_t *out);

/* Row k's class (of n rows, n already checked) from a JSON cell: NULL or
 * null: none (-2); an integer 0..2^31-1: an index; a string of
 * 1..GFS_CLASS_MAX bytes: a name (or an index in digits), resolved later.
 * out->cls (every row -2 at first) and out->cls_name are malloc'd at
 * the first class, released by gfs_infer_req_free. */
gf_status gfs_take_class(const cJSON *v, int k, int n, gfs_infer_req *out,
                         gf_err *err);

/* GF_EINVAL unless 1 <= n <= max_images. */
gf_status gfs_check_n(int64_t n, int max_images, gf_err *err);

/* One latent value: finite and |x| <= 1e6, else GF_EINVAL. */
gf_status gfs_check_z(double x, gf_err *err);

/* Fills out->seeds (malloc'd here) from arr, an array of 1..max_images
 * seeds; sets out->n. */
gf_status gfs_take_seeds(const cJSON *arr, int max_images, gfs_infer_req *out,
                         gf_err *err);

/* Fills out->z (malloc'd here, n * z_dim values) from data, a flat or
 * nested array of exactly that many numbers; sets out->n. n is checked
 * against max_images before the allocation. */
gf_status gfs_take_z(const cJSON *data, int64_t n, int z_dim, int max_images,
                     gfs_infer_req *out, gf_err *err);

/* Parses body[0, len) as JSON and hands the root to fn; *out is init'd
 * first and freed when fn fails. fn's ctx is passed through. */
typedef gf_status (*gfs_body_fn)(const cJSON *root, int z_dim,
                                 int max_images, void *ctx,
                                 gfs_infer_req *out, gf_err *err);
gf_status gfs_json_body(const char *body, size_t len, int z_dim,
                        int max_images, gfs_body_fn fn, void *ctx,
                        gfs_infer_req *out, gf_err *err);

#endif
