/* request_json.c - JSON bodies of POST /v2/models/{name}/infer (KServe V2)
 * and POST /invocations (MLflow scoring). cJSON with a length bound; every
 * count is checked against max_images before anything is allocated. See
 * gfs/request.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gfs/request.h"

void gfs_infer_req_init(gfs_infer_req *r) { memset(r, 0, sizeof *r); }

void gfs_infer_req_free(gfs_infer_req *r) {
  if (!r) return;
  free(r->seeds);
  free(r->z);
  gfs_infer_req_init(r);
}

/* A JSON number that is an exact integer in [lo, hi] (doubles carry 53
 * bits: larger seeds must be sent as strings of digits). */
static int json_uint(const cJSON *v, uint64_t *out) {
  if (cJSON_IsString(v)) return gfs_parse_u64(v->valuestring, out);
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  if (!(d >= 0) || d > 9007199254740992.0 || floor(d) != d) return -1;
  *out = (uint64_t)d;
  return 0;
}

static gf_status check_n(int64_t n, int max_images, gf_err *err) {
  if (n < 1 || n > max_images)
    return gf_fail(err, GF_EINVAL, "batch size must be 1..%d (got %lld)",
                   max_images, (long long)n);
  return GF_OK;
}

static gf_status take_seeds(const cJSON *arr, int max_images,
                            gfs_infer_req *out, gf_err *err) {
  if (!cJSON_IsArray(arr))
    return gf_fail(err, GF_EINVAL, "seed: data must be an array");
  gf_status st = check_n(cJSON_GetArraySize(arr), max_images, err);
  if (st) return st;
  int n = cJSON_GetArraySize(arr);
  out->seeds = malloc((size_t)n * sizeof *out->seeds);
  if (!out->seeds) return gf_fail(err, GF_ENOMEM, "out of memory");
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, arr) {
    if (json_uint(v, &out->seeds[k]) != 0)
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
    double d = v->valuedouble;
    if (!isfinite(d) || fabs(d) > 1e6)
      return gf_fail(err, GF_EINVAL, "z: values must be finite, |z| <= 1e6");
    z[(*k)++] = (float)d;
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

static gf_status take_z(const cJSON *data, int64_t n, int z_dim,
                        int max_images, gfs_infer_req *out, gf_err *err) {
  gf_status st = check_n(n, max_images, err);
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

static gf_status parse_v2(const cJSON *root, int z_dim, int max_images,
                          gfs_infer_req *out, gf_err *err) {
  if (!cJSON_IsObject(root))
    return gf_fail(err, GF_EINVAL, "body must be a JSON object");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
  if (id) {
    if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof out->id)
      return gf_fail(err, GF_EINVAL, "id must be a string under %zu bytes",
                     sizeof out->id);
    strcpy(out->id, id->valuestring);
  }
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
  if (!cJSON_IsArray(inputs) || cJSON_GetArraySize(inputs) != 1)
    return gf_fail(err, GF_EINVAL,
                   "inputs must be an array of one tensor (seed or z)");
  const cJSON *in = cJSON_GetArrayItem(inputs, 0);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(in, "shape");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(in, "datatype");
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(in, "data");
  if (!cJSON_IsString(name) || !cJSON_IsArray(shape) ||
      !cJSON_IsString(dtype) || !data)
    return gf_fail(err, GF_EINVAL,
                   "input needs name, shape, datatype and data");
  int nd = cJSON_GetArraySize(shape);
  int64_t dims[2] = {0, 0};
  for (int i = 0; i < nd && i < 2; i++) {
    uint64_t d;
    if (json_uint(cJSON_GetArrayItem(shape, i), &d) != 0 || d > (1u << 30))
      return gf_fail(err, GF_EINVAL, "shape: bad dimension");
    dims[i] = (int64_t)d;
  }
  if (strcmp(name->valuestring, "seed") == 0) {
    if (strcmp(dtype->valuestring, "INT64") != 0 &&
        strcmp(dtype->valuestring, "UINT64") != 0)
      return gf_fail(err, GF_EINVAL, "seed: datatype must be INT64");
    if (nd != 1) return gf_fail(err, GF_EINVAL, "seed: shape must be [n]");
    gf_status st = check_n(dims[0], max_images, err);
    if (st) return st;
    if (!cJSON_IsArray(data) || cJSON_GetArraySize(data) != dims[0])
      return gf_fail(err, GF_EINVAL, "seed: data does not match shape");
    return take_seeds(data, max_images, out, err);
  }
  if (strcmp(name->valuestring, "z") == 0) {
    if (strcmp(dtype->valuestring, "FP32") != 0)
      return gf_fail(err, GF_EINVAL, "z: datatype must be FP32");
    if (nd != 2 || dims[1] != z_dim)
      return gf_fail(err, GF_EINVAL, "z: shape must be [n, %d]", z_dim);
    return take_z(data, dims[0], z_dim, max_images, out, err);
  }
  return gf_fail(err, GF_EINVAL, "unknown input (expected seed or z)");
}

static gf_status parse_invocations(const cJSON *root, int z_dim,
                                   int max_images, gfs_infer_req *out,
                                   gf_err *err) {
  if (!cJSON_IsObject(root))
    return gf_fail(err, GF_EINVAL, "body must be a JSON object");
  const cJSON *inst = cJSON_GetObjectItemCaseSensitive(root, "instances");
  if (inst) {
    if (!cJSON_IsArray(inst))
      return gf_fail(err, GF_EINVAL, "instances must be an array");
    gf_status st = check_n(cJSON_GetArraySize(inst), max_images, err);
    if (st) return st;
    int n = cJSON_GetArraySize(inst), k = 0;
    out->seeds = malloc((size_t)n * sizeof *out->seeds);
    if (!out->seeds) return gf_fail(err, GF_ENOMEM, "out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, inst) {
      const cJSON *s = cJSON_IsObject(e)
                           ? cJSON_GetObjectItemCaseSensitive(e, "seed")
                           : e;
      if (json_uint(s, &out->seeds[k]) != 0)
        return gf_fail(err, GF_EINVAL, "instances[%d]: needs a seed", k);
      k++;
    }
    out->n = n;
    return GF_OK;
  }
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
  if (cJSON_IsArray(inputs))
    return take_z(inputs, cJSON_GetArraySize(inputs), z_dim, max_images, out,
                  err);
  if (!cJSON_IsObject(inputs))
    return gf_fail(err, GF_EINVAL,
                   "expected \"inputs\" ({\"seed\": [..]} or {\"z\": "
                   "[[..]]}) or \"instances\"");
  const cJSON *seed = cJSON_GetObjectItemCaseSensitive(inputs, "seed");
  const cJSON *z = cJSON_GetObjectItemCaseSensitive(inputs, "z");
  if (seed && !z) return take_seeds(seed, max_images, out, err);
  if (z && !seed && cJSON_IsArray(z))
    return take_z(z, cJSON_GetArraySize(z), z_dim, max_images, out, err);
  return gf_fail(err, GF_EINVAL, "inputs needs exactly one of seed, z");
}

typedef gf_status (*body_fn)(const cJSON *, int, int, gfs_infer_req *,
                             gf_err *);

static gf_status parse_body(const char *body, size_t len, int z_dim,
                            int max_images, gfs_infer_req *out, body_fn fn,
                            gf_err *err) {
  gfs_infer_req_init(out);
  if (z_dim < 1 || max_images < 1)
    return gf_fail(err, GF_EINVAL, "z_dim and max_images must be >= 1");
  if (!body || len == 0) return gf_fail(err, GF_EFORMAT, "empty body");
  cJSON *root = cJSON_ParseWithLength(body, len);
  if (!root) return gf_fail(err, GF_EFORMAT, "body is not valid JSON");
  out->z_dim = z_dim;
  gf_status st = fn(root, z_dim, max_images, out, err);
  cJSON_Delete(root);
  if (st != GF_OK) gfs_infer_req_free(out);
  return st;
}

gf_status gfs_v2_parse(const char *body, size_t len, int z_dim,
                       int max_images, gfs_infer_req *out, gf_err *err) {
  return parse_body(body, len, z_dim, max_images, out, parse_v2, err);
}

gf_status gfs_invocations_parse(const char *body, size_t len, int z_dim,
                                int max_images, gfs_infer_req *out,
                                gf_err *err) {
  return parse_body(body, len, z_dim, max_images, out, parse_invocations,
                    err);
}
