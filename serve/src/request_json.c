/* request_json.c - what the JSON body parsers share (request_internal.h):
 * the request struct, strict numbers, seeds and latents from JSON arrays,
 * cJSON with a length bound; every count is checked against max_images
 * before anything is allocated. The bodies themselves: request_v2.c (KServe
 * V2), request_invocations.c (MLflow scoring). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/parse.h"
#include "request_internal.h"

void gfs_infer_req_init(gfs_infer_req *r) {
  memset(r, 0, sizeof *r);
  gfs_style_default(&r->style);
}

void gfs_infer_req_free(gfs_infer_req *r) {
  if (!r) return;
  free(r->seeds);
  free(r->z);
  free(r->row_z);
  free(r->cls);
  free(r->cls_name);
  gfs_infer_req_init(r);
}

uint8_t gfs_pixel_u8(float x) {
  if (!(x > -1.0f)) return 0; /* also NaN */
  if (x >= 1.0f) return 255;
  double v = ((double)x + 1.0) * 0.5 * 255.0;
  return (uint8_t)floor(v + 0.5);
}

int gfs_json_uint(const cJSON *v, uint64_t *out) {
  if (cJSON_IsString(v))
    return gf_parse_u64(NULL, v->valuestring, 0, UINT64_MAX, out, NULL) ==
                   GF_OK
               ? 0
               : -1;
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  if (!(d >= 0) || d > 9007199254740992.0 || floor(d) != d) return -1;
  *out = (uint64_t)d;
  return 0;
}

gf_status gfs_take_class(const cJSON *v, int k, int n, gfs_infer_req *out,
                         gf_err *err) {
  if (!v || cJSON_IsNull(v)) {
    if (out->cls) out->cls[k] = -2;
    return GF_OK;
  }
  if (!out->cls) {
    if (!(out->cls = malloc((size_t)n * sizeof *out->cls)))
      return gf_fail(err, GF_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) out->cls[i] = -2;
  }
  if (cJSON_IsNumber(v)) {
    uint64_t c;
    if (gfs_json_uint(v, &c) != 0 || c > (uint64_t)INT32_MAX)
      return gf_fail(err, GF_EINVAL, "row %d: class must be a class index "
                     "(an integer >= 0) or a class name", k);
    out->cls[k] = (int64_t)c;
    return GF_OK;
  }
  size_t len = cJSON_IsString(v) ? strlen(v->valuestring) : 0;
  if (len == 0 || len > GFS_CLASS_MAX)
    return gf_fail(err, GF_EINVAL, "row %d: class must be a class index or "
                   "a class name of 1..%d bytes", k, GFS_CLASS_MAX);
  if (!out->cls_name &&
      !(out->cls_name = calloc((size_t)n, GFS_CLASS_MAX + 1)))
    return gf_fail(err, GF_ENOMEM, "out of memory");
  memcpy(out->cls_name + (size_t)k * (GFS_CLASS_MAX + 1), v->valuestring,
         len + 1);
  out->cls[k] = -1;
  return GF_OK;
}

gf_status gfs_check_n(int64_t n, int max_images, gf_err *err) {
  if (n < 1 || n > max_images)
    return gf_fail(err, GF_EINVAL, "batch size must be 1..%d (got %lld)",
                   max_images, (long long)n);
  return GF_OK;
}

gf_status gfs_check_z(double x, gf_err *err) {
  if (!isfinite(x) || fabs(x) > 1e6)
    return gf_fail(err, GF_EINVAL, "z: values must be finite, |z| <= 1e6");
  return GF_OK;
}

gf_status gfs_take_seeds(const cJSON *arr, int max_images, gfs_infer_req *out,
                         gf_err *err) {
  if (!cJSON_IsArray(arr))
    return gf_fail(err, GF_EINVAL, "seed: data must be an array");
  gf_status st = gfs_check_n(cJSON_GetArraySize(arr), max_images, err);
  if (st) return st;
  int n = cJSON_GetArraySize(arr);
  out->seeds = malloc((size_t)n * sizeof *out->seeds);
  if (!out->seeds) return gf_fail(err, GF_ENOMEM, "out of memory");
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, arr) {
    if (gfs_json_uint(v, &out->seeds[k]) != 0)
      return gf_fail(err, GF_EINVAL,
                     "seed[%d]: must be a non-negative integer", k);
    k++;
  }
  out->n = n;
  return GF_OK;
}

/* Flattens v (a number or nested arrays of numbers) into z; *k counts the
 * values written, at most cap. */
static gf_status flatten(const cJSON *v, float *z, size_t cap, size_t *k,
                         int depth, gf_err *err) {
  if (depth > 3) return gf_fail(err, GF_EINVAL, "z: nested too deeply");
  if (cJSON_IsNumber(v)) {
    if (*k >= cap) return gf_fail(err, GF_EINVAL, "z: more values than shape");
    gf_status st = gfs_check_z(v->valuedouble, err);
    if (st) return st;
    z[(*k)++] = (float)v->valuedouble;
    return GF_OK;
  }
  if (!cJSON_IsArray(v)) return gf_fail(err, GF_EINVAL, "z: not a number");
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    gf_status st = flatten(e, z, cap, k, depth + 1, err);
    if (st) return st;
  }
  return GF_OK;
}

gf_status gfs_take_z(const cJSON *data, int64_t n, int z_dim, int max_images,
                     gfs_infer_req *out, gf_err *err) {
  gf_status st = gfs_check_n(n, max_images, err);
  if (st) return st;
  size_t cap = (size_t)n * (size_t)z_dim, k = 0;
  out->z = malloc(cap * sizeof *out->z);
  if (!out->z) return gf_fail(err, GF_ENOMEM, "out of memory");
  if ((st = flatten(data, out->z, cap, &k, 0, err))) return st;
  if (k != cap)
    return gf_fail(err, GF_EINVAL, "z: %zu values for shape [%lld, %d]", k,
                   (long long)n, z_dim);
  out->n = (int)n;
  return GF_OK;
}

gf_status gfs_json_body(const char *body, size_t len, int z_dim,
                        int max_images, gfs_body_fn fn, void *ctx,
                        gfs_infer_req *out, gf_err *err) {
  gfs_infer_req_init(out);
  if (z_dim < 1 || max_images < 1)
    return gf_fail(err, GF_EINVAL, "z_dim and max_images must be >= 1");
  if (!body || len == 0) return gf_fail(err, GF_EFORMAT, "empty body");
  cJSON *root = cJSON_ParseWithLength(body, len);
  if (!root) return gf_fail(err, GF_EFORMAT, "body is not valid JSON");
  out->z_dim = z_dim;
  gf_status st = fn(root, z_dim, max_images, ctx, out, err);
  cJSON_Delete(root);
  if (st != GF_OK) gfs_infer_req_free(out);
  return st;
}
