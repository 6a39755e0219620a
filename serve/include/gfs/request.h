/* request.h - parsers of what a client sends to ganflow-serve: the query
 * string of GET /v1/models/{name}/generate and the JSON bodies of
 * POST /v2/models/{name}/infer (KServe V2 / Open Inference Protocol, with
 * the binary tensor data extension) and POST /invocations (MLflow scoring
 * server), and the request headers they depend on. Pure functions of their input:
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
#define GFS_CLASS_MAX 64   /* bytes of one class (a name or an index) */
#define GFS_CLASS_SPEC_MAX 1024 /* bytes of a decoded class= value */

typedef enum gfs_format {
  GFS_FORMAT_PNG = 0,  /* image/png: one image, or a grid when n > 1 */
  GFS_FORMAT_JSON = 1, /* application/json: pixel values */
} gfs_format;

/* A stylegan2 model's per-request style (gf_gen_style once resolved
 * against the model; a model of another architecture refuses anything
 * but the defaults, 400). GET's psi=, trunc_cutoff=, noise=, mix=,
 * mix_from=; V2's "parameters" {"psi": 0.7, "trunc_cutoff": 4, "noise":
 * "random", "mix": 9, "mix_from": 4}. */
typedef enum gfs_noise {
  GFS_NOISE_CONST = 0,  /* the default */
  GFS_NOISE_RANDOM = 1, /* from the request's seed: image k's noise is
                           sample k */
  GFS_NOISE_NONE = 2,
} gfs_noise;

typedef struct gfs_style {
  double psi;        /* -8..8, default 1 (no truncation) */
  int trunc_cutoff;  /* 0..64, default 0 (every w) */
  gfs_noise noise;
  int has_mix;       /* mix= given (then mix_from too) */
  uint64_t mix;      /* image k's ws from mix_from on: sample k of seed mix */
  int mix_from;      /* 1..63 with mix */
  unsigned seen;     /* bit per key already given */
} gfs_style;

void gfs_style_default(gfs_style *s);
/* 1 when every field has its default. */
int gfs_style_is_default(const gfs_style *s);
/* Applies key=value when key is one of psi, trunc_cutoff, noise, mix,
 * mix_from (*handled = 1): a repeated key, a value that is not a number in
 * range (psi finite in [-8, 8]; trunc_cutoff 0..64; mix a u64; mix_from
 * 1..63) or noise other than const|random|none is GF_EINVAL naming the
 * key ("<what>: psi: ..."). *handled = 0 for any other key. */
gf_status gfs_style_set(gfs_style *s, const char *what, const char *key,
                        const char *value, int *handled, gf_err *err);
/* The cross-key rule once every key is in: mix and mix_from go together
 * (GF_EINVAL naming them). */
gf_status gfs_style_check(const gfs_style *s, const char *what, gf_err *err);

/* Arguments of GET .../generate. Defaults: seed 0, n 1, no class, png. */
typedef struct gfs_gen_args {
  uint64_t seed;     /* latent of image k is Philox (seed, SAMPLE, 0, 0, k) */
  int n;             /* images, 1..max_images */
  int has_class;     /* class= given */
  char cls[GFS_CLASS_SPEC_MAX + 1]; /* class= as decoded: one class or a
                        comma-separated list, each 1..GFS_CLASS_MAX bytes
                        (names or indices, resolved against the model
                        later: unconditional models accept none) */
  int n_cls;         /* items in cls (1..max_images) when has_class */
  gfs_format format;
  unsigned seen;     /* bit per key already given (duplicates are errors) */
  gfs_style style;   /* psi=, trunc_cutoff=, noise=, mix=, mix_from= */
} gfs_gen_args;

void gfs_gen_args_default(gfs_gen_args *a);

/* Applies one decoded key=value pair (keys: seed, n, class, format and
 * the style's, gfs_style_set); an
 * unknown or repeated key, an empty or non-numeric value, n outside
 * 1..max_images, a class list with an empty or over-long item or more than
 * max_images items are errors naming the key. Allocates nothing. */
gf_status gfs_gen_args_set(gfs_gen_args *a, const char *key,
                           const char *value, int max_images, gf_err *err);

/* Parses a raw query string ("seed=1&n=4", percent-encoded, '+' = space;
 * no leading '?') of len bytes (need not be NUL-terminated, at most
 * GFS_QUERY_MAX) into *out (defaults first). Allocates nothing that
 * outlives the call. */
gf_status gfs_query_parse(const char *query, size_t len, int max_images,
                          gfs_gen_args *out, gf_err *err);

/* Image datatype of a V2 answer. */
typedef enum gfs_image_dtype {
  GFS_IMAGE_FP32 = 0,  /* floats in [-1, 1] as the generator made them */
  GFS_IMAGE_UINT8 = 1, /* pixels 0..255 as in the PNG (gfs_pixel_u8) */
} gfs_image_dtype;

/* A generation request from a body: n rows, each a seed or a latent of
 * z_dim values. */
typedef struct gfs_infer_req {
  int n;             /* images, 1..max_images */
  uint64_t *seeds;   /* n seeds, or NULL when every row is a latent;
                        malloc'd */
  float *z;          /* n * z_dim values, or NULL when every row is a seed;
                        malloc'd; every value finite */
  uint8_t *row_z;    /* only when both seeds and z are set (MLflow rows of
                        both kinds), else NULL; n flags, malloc'd: 1 = row
                        k is the latent in z (seeds[k] is 0), 0 = row k is
                        seeds[k] (its z values are 0) */
  int64_t *cls;      /* n class indices (>= 0), -1 for a row that names
                        its class (cls_name), or NULL when no row has a
                        class; malloc'd. A partial column has -2 for a
                        row without a class. Checked against the model
                        later. */
  char *cls_name;    /* n * (GFS_CLASS_MAX + 1) bytes: row k's class name
                        at k * (GFS_CLASS_MAX + 1) where cls[k] == -1;
                        NULL when no row names one; malloc'd */
  int z_dim;         /* the z_dim the request was checked against */
  char id[128];      /* V2 "id" echoed in the answer ("" when none) */
  int binary_out;    /* V2: the image goes back as binary tensor data */
  gfs_image_dtype dtype; /* V2: datatype of the image asked */
  gfs_style style;   /* V2: the "parameters" psi, trunc_cutoff, noise,
                        mix, mix_from (random noise and mixing latents
                        from the first row's seed, 0 for latent rows:
                        row k's are sample k) */
} gfs_infer_req;

void gfs_infer_req_init(gfs_infer_req *r);
/* Frees seeds, z and row_z and re-initialises; accepts NULL. */
void gfs_infer_req_free(gfs_infer_req *r);

/* What a Content-Type header says about a body. */
typedef enum gfs_ctype {
  GFS_CT_NONE = 0,  /* no header: taken as JSON (tritonclient sends none) */
  GFS_CT_JSON = 1,  /* application/json, parameters allowed (a charset
                       other than utf-8 is OTHER) */
  GFS_CT_OCTET = 2, /* application/octet-stream (V2 binary extension) */
  GFS_CT_OTHER = 3, /* anything else: 415 */
} gfs_ctype;

/* Classifies a Content-Type value (NULL = no header); case-insensitive. */
gfs_ctype gfs_content_type(const char *value);

/* Parses the value of the Inference-Header-Content-Length header (binary
 * tensor data extension): decimal digits only, at most max. Returns 0 and
 * sets *out, or -1 (empty, sign, non-digit, overflow, over max). */
int gfs_header_length_parse(const char *value, size_t max, size_t *out);

/* Parses a V2 infer request. body holds len bytes (need not be
 * NUL-terminated); header_len is the value of its
 * Inference-Header-Content-Length header, or NULL when absent (the body
 * is all JSON). With it, body[0, L) is the JSON and the rest the inputs'
 * binary data, each input with "parameters": {"binary_data_size": N}
 * taking its N bytes in order (seed: INT64/UINT64 little-endian [n], z:
 * FP32 little-endian [n, z_dim], class: INT64/INT32 little-endian [n]);
 * the sizes must add up to the rest exactly. The JSON:
 *   {"id": "...", "inputs": [{"name": "seed", "shape": [n],
 *     "datatype": "INT64", "data": [..]}],
 *    "outputs": [{"name": "image", "parameters": {"binary_data": true,
 *     "datatype": "UINT8"}}],
 *    "parameters": {"binary_data_output": true, "image_datatype": "UINT8"}}
 *   or one input {"name": "z", "shape": [n, z_dim], "datatype": "FP32",
 *     "data": [..] (flat or nested)}.
 * One input (seed or z), plus optionally {"name": "class", "datatype":
 * "INT64" or "INT32", "shape": [n] or [n, 1]} with the same n (into
 * out->cls: indices 0..2^31-1, checked against the model later); shape
 * must match the data; n 1..max_images, checked
 * with every size before anything is allocated. An output other than
 * "image", or a datatype other than FP32 and UINT8, is an error. Fills
 * *out (init'd here); on failure *out holds nothing. */
gf_status gfs_v2_parse_request(const char *body, size_t len,
                               const char *header_len, int z_dim,
                               int max_images, gfs_infer_req *out,
                               gf_err *err);
/* gfs_v2_parse_request without a header: the body is all JSON. */
gf_status gfs_v2_parse(const char *body, size_t len, int z_dim,
                       int max_images, gfs_infer_req *out, gf_err *err);

/* Parses a body that MLflow's scoring server takes for a model whose
 * signature has the columns seed (long, optional), z (array of float,
 * length z_dim, optional) and, for a class-conditional model, class (an
 * index, or a class's text of 1..GFS_CLASS_MAX bytes, into out->cls and
 * out->cls_name; null or absent = none, -2): exactly one of
 *   {"dataframe_split": {"columns": ["seed", "z"], "data": [[1, null],
 *     [null, [..]]], "index": [..]}},
 *   {"dataframe_records": [{"seed": 1}, {"z": [..]}]},
 *   {"instances": [{"seed": 1}, {"z": [..]}, 7, [z..]]},
 *   {"inputs": {"seed": [1, 2]}} / {"inputs": {"z": [[..], ..]}} (columns,
 *     equal lengths, null = absent), {"inputs": [<row as in instances>]};
 * "params" and other members are ignored, as MLflow does. Each row holds
 * exactly one of a seed (integer >= 0, or a string of digits) and a
 * latent (z_dim finite numbers); a column other than seed, z and class is
 * an error. As gfs_v2_parse otherwise. */
gf_status gfs_invocations_parse(const char *body, size_t len, int z_dim,
                                int max_images, gfs_infer_req *out,
                                gf_err *err);

/* The pixel of one generator value, as the PNG encoder maps it: clamp to
 * [-1, 1] (NaN -> 0), then round((x + 1) / 2 * 255), halves up. */
uint8_t gfs_pixel_u8(float x);

#endif
