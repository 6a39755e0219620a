/* request.h - parsers of what a client sends to ganflow-serve: the query
 * string of GET /v1/models/{name}/generate and the JSON bodies of
 * POST /v2/models/{name}/infer (KServe V2 / Open Inference Protocol) and
 * POST /invocations (MLflow scoring server). Pure functions of their input:
 * no I/O, bounded allocation (at most max_images latents or seeds), fuzzed
 * by tests/fuzz/serve.cmake. Statuses: GF_EINVAL for a well-formed request
 * with a bad value (HTTP 400), GF_EFORMAT for a malformed one (HTTP 400).
 * Not here: HTTP, models. */
#ifndef GFS_REQUEST_H
#define GFS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GFS_QUERY_MAX 4096 /* bytes of a raw query string */

typedef enum gfs_format {
  GFS_FORMAT_PNG = 0,  /* image/png: one image, or a grid when n > 1 */
  GFS_FORMAT_JSON = 1, /* application/json: pixel values */
} gfs_format;

/* Arguments of GET .../generate. Defaults: seed 0, n 1, no class, png. */
typedef struct gfs_gen_args {
  uint64_t seed;     /* latent of image k is Philox (seed, SAMPLE, 0, 0, k) */
  int n;             /* images, 1..max_images */
  int has_class;     /* class= given */
  int64_t cls;       /* class index when has_class (checked against the
                        model later: unconditional models accept none) */
  gfs_format format;
  unsigned seen;     /* bit per key already given (duplicates are errors) */
} gfs_gen_args;

void gfs_gen_args_default(gfs_gen_args *a);

/* Applies one decoded key=value pair (keys: seed, n, class, format); an
 * unknown or repeated key, an empty or non-numeric value, n outside
 * 1..max_images are errors naming the key. Allocates nothing. */
gf_status gfs_gen_args_set(gfs_gen_args *a, const char *key,
                           const char *value, int max_images, gf_err *err);

/* Parses a raw query string ("seed=1&n=4", percent-encoded, '+' = space;
 * no leading '?') of len bytes (need not be NUL-terminated, at most
 * GFS_QUERY_MAX) into *out (defaults first). Allocates nothing that
 * outlives the call. */
gf_status gfs_query_parse(const char *query, size_t len, int max_images,
                          gfs_gen_args *out, gf_err *err);

/* Strict decimal parsers: digits only (int64: optional leading '-'), no
 * spaces, overflow is an error. Return 0 on success. */
int gfs_parse_u64(const char *s, uint64_t *out);
int gfs_parse_i64(const char *s, int64_t *out);

/* A generation request from a JSON body: either n seeds or n latent
 * vectors of z_dim values. */
typedef struct gfs_infer_req {
  int n;             /* images, 1..max_images */
  uint64_t *seeds;   /* n seeds, or NULL when z is given; malloc'd */
  float *z;          /* n * z_dim values, or NULL when seeds are given;
                        malloc'd; every value finite */
  int z_dim;         /* the z_dim the request was checked against */
  char id[128];      /* V2 "id" echoed in the answer ("" when none) */
} gfs_infer_req;

void gfs_infer_req_init(gfs_infer_req *r);
/* Frees seeds and z and re-initialises; accepts NULL. */
void gfs_infer_req_free(gfs_infer_req *r);

/* Parses a V2 infer body (len bytes, need not be NUL-terminated):
 *   {"id": "...", "inputs": [{"name": "seed", "shape": [n],
 *     "datatype": "INT64", "data": [..]}]}  or
 *   {"inputs": [{"name": "z", "shape": [n, z_dim], "datatype": "FP32",
 *     "data": [..] (flat or nested)}]}
 * Exactly one input; shape must match the data; n 1..max_images. Fills *out
 * (init'd here); on failure *out holds nothing. */
gf_status gfs_v2_parse(const char *body, size_t len, int z_dim,
                       int max_images, gfs_infer_req *out, gf_err *err);

/* Parses an MLflow scoring body: {"inputs": {"seed": [..]}},
 * {"inputs": {"z": [[..], ..]}}, {"instances": [{"seed": s}, ..]} or
 * {"inputs": [[z..], ..]} (tensor input = latents). As gfs_v2_parse. */
gf_status gfs_invocations_parse(const char *body, size_t len, int z_dim,
                                int max_images, gfs_infer_req *out,
                                gf_err *err);

#endif
