/* request_v2.c - POST /v2/models/{name}/infer as KServe V2 / Open Inference
 * Protocol clients send it (tritonclient.http among them): the JSON
 * request, the binary tensor data extension (Inference-Header-Content-
 * Length: L, the JSON in the first L bytes, each input's raw bytes after
 * it), the optional class input beside seed or z, the outputs and
 * parameters asked, and the Content-Type check. Every
 * size and shape is checked against max_images and the body length before
 * anything is allocated. See gfs/request.h. Not here: HTTP, answers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gf/parse.h"
#include "request_internal.h"

gfs_ctype gfs_content_type(const char *v) {
  if (!v) return GFS_CT_NONE;
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strcspn(v, "; \t");
  gfs_ctype kind;
  if (n == 16 && strncasecmp(v, "application/json", 16) == 0)
    kind = GFS_CT_JSON;
  else if (n == 24 && strncasecmp(v, "application/octet-stream", 24) == 0)
    kind = GFS_CT_OCTET;
  else
    return GFS_CT_OTHER;
  /* Parameters: only a charset of utf-8 means what we read. */
  for (const char *p = v + n; (p = strchr(p, ';')) != NULL;) {
    p++;
    while (*p == ' ' || *p == '\t') p++;
    if (strncasecmp(p, "charset=", 8) != 0) continue;
    const char *cs = p + 8;
    if (*cs == '"') cs++;
    if (strncasecmp(cs, "utf-8", 5) != 0 && strncasecmp(cs, "utf8", 4) != 0)
      return GFS_CT_OTHER;
  }
  return kind;
}

int gfs_header_length_parse(const char *value, size_t max, size_t *out) {
  uint64_t v;
  if (!value) return -1;
  while (*value == ' ') value++;
  char buf[24];
  size_t n = strlen(value);
  while (n && value[n - 1] == ' ') n--;
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, value, n);
  buf[n] = '\0';
  if (gf_parse_u64(NULL, buf, 0, max, &v, NULL) != GF_OK) return -1;
  *out = (size_t)v;
  return 0;
}

/* What the JSON says about the one input, before any data is taken. */
typedef struct v2_input {
  int is_seed;           /* 1: seed, 0: z (or class) */
  int is_class;          /* 1: class (INT64 or INT32 [n] or [n, 1]) */
  int class_bytes;       /* 8 (INT64) or 4 (INT32) */
  int64_t dims[2];       /* shape */
  int nd;
  int seed_signed;       /* INT64 (negative values refused) vs UINT64 */
  const cJSON *data;     /* "data", or NULL when binary */
  int binary;            /* parameters.binary_data_size given */
  uint64_t binary_size;
} v2_input;

/* The binary part of the body: body[L, len). */
typedef struct v2_ctx {
  const unsigned char *bin;
  size_t bin_len;
} v2_ctx;

static gf_status input_header(const cJSON *in, int z_dim, int max_images,
                              v2_input *vi, gf_err *err) {
  memset(vi, 0, sizeof *vi);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(in, "shape");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(in, "datatype");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(in, "parameters");
  vi->data = cJSON_GetObjectItemCaseSensitive(in, "data");
  const cJSON *bsize =
      cJSON_IsObject(params)
          ? cJSON_GetObjectItemCaseSensitive(params, "binary_data_size")
          : NULL;
  if (params && !cJSON_IsObject(params))
    return gf_fail(err, GF_EINVAL, "input parameters must be an object");
  if (bsize) {
    if (gfs_json_uint(bsize, &vi->binary_size) != 0 || cJSON_IsString(bsize))
      return gf_fail(err, GF_EINVAL,
                     "binary_data_size must be a non-negative integer");
    vi->binary = 1;
    if (vi->data)
      return gf_fail(err, GF_EINVAL,
                     "an input with binary_data_size has no \"data\"");
  }
  if (!cJSON_IsString(name) || !cJSON_IsArray(shape) ||
      !cJSON_IsString(dtype) || (!vi->data && !vi->binary))
    return gf_fail(err, GF_EINVAL, "input needs name, shape, datatype and "
                                   "data (or parameters.binary_data_size)");
  vi->nd = cJSON_GetArraySize(shape);
  for (int i = 0; i < vi->nd && i < 2; i++) {
    uint64_t d;
    const cJSON *e = cJSON_GetArrayItem(shape, i);
    if (!cJSON_IsNumber(e) || gfs_json_uint(e, &d) != 0 || d > (1u << 30))
      return gf_fail(err, GF_EINVAL, "shape: bad dimension");
    vi->dims[i] = (int64_t)d;
  }
  if (strcmp(name->valuestring, "seed") == 0) {
    vi->is_seed = 1;
    vi->seed_signed = strcmp(dtype->valuestring, "INT64") == 0;
    if (!vi->seed_signed && strcmp(dtype->valuestring, "UINT64") != 0)
      return gf_fail(err, GF_EINVAL, "seed: datatype must be INT64 or UINT64");
    if (vi->nd != 1) return gf_fail(err, GF_EINVAL, "seed: shape must be [n]");
    return gfs_check_n(vi->dims[0], max_images, err);
  }
  if (strcmp(name->valuestring, "class") == 0) {
    vi->is_class = 1;
    vi->class_bytes = strcmp(dtype->valuestring, "INT64") == 0   ? 8
                      : strcmp(dtype->valuestring, "INT32") == 0 ? 4
                                                                 : 0;
    if (!vi->class_bytes)
      return gf_fail(err, GF_EINVAL, "class: datatype must be INT64 or INT32");
    if (vi->nd != 1 && !(vi->nd == 2 && vi->dims[1] == 1))
      return gf_fail(err, GF_EINVAL, "class: shape must be [n] or [n, 1]");
    return gfs_check_n(vi->dims[0], max_images, err);
  }
  if (strcmp(name->valuestring, "z") == 0) {
    if (strcmp(dtype->valuestring, "FP32") != 0)
      return gf_fail(err, GF_EINVAL, "z: datatype must be FP32");
    if (vi->nd != 2 || vi->dims[1] != z_dim)
      return gf_fail(err, GF_EINVAL, "z: shape must be [n, %d]", z_dim);
    return gfs_check_n(vi->dims[0], max_images, err);
  }
  return gf_fail(err, GF_EINVAL, "unknown input '%.64s' (expected seed, z, "
                 "class)",
                 name->valuestring);
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static float lef32(const unsigned char *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Takes the input's values from its binary bytes (sizes already checked:
 * bin holds exactly n * element size bytes). Memory: out->seeds or out->z
 * is malloc'd here, released by gfs_infer_req_free (also on failure). */
static gf_status take_binary(const v2_input *vi, const unsigned char *bin,
                             int z_dim, gfs_infer_req *out, gf_err *err) {
  int n = (int)vi->dims[0];
  if (vi->is_seed) {
    out->seeds = malloc((size_t)n * sizeof *out->seeds);
    if (!out->seeds) return gf_fail(err, GF_ENOMEM, "out of memory");
    for (int k = 0; k < n; k++) {
      out->seeds[k] = le64(bin + (size_t)k * 8);
      if (vi->seed_signed && out->seeds[k] > (uint64_t)INT64_MAX)
        return gf_fail(err, GF_EINVAL,
                       "seed[%d]: must be a non-negative integer", k);
    }
  } else {
    size_t count = (size_t)n * (size_t)z_dim;
    out->z = malloc(count * sizeof *out->z);
    if (!out->z) return gf_fail(err, GF_ENOMEM, "out of memory");
    for (size_t i = 0; i < count; i++) {
      out->z[i] = lef32(bin + i * 4);
      gf_status st = gfs_check_z((double)out->z[i], err);
      if (st) return st;
    }
  }
  out->n = n;
  return GF_OK;
}

/* The class input's values (n = vi->dims[0] rows, checked) from its
 * binary bytes (bin holds exactly n * class_bytes) or its JSON data (flat,
 * or [n, 1] nested). Memory: out->cls is malloc'd here, released by
 * gfs_infer_req_free (also on failure). */
static gf_status take_class(const v2_input *vi, const unsigned char *bin,
                            gfs_infer_req *out, gf_err *err) {
  int n = (int)vi->dims[0];
  if (!(out->cls = malloc((size_t)n * sizeof *out->cls)))
    return gf_fail(err, GF_ENOMEM, "out of memory");
  if (bin) {
    for (int k = 0; k < n; k++) {
      const unsigned char *p = bin + (size_t)k * (size_t)vi->class_bytes;
      int64_t v = vi->class_bytes == 8
                      ? (int64_t)le64(p)
                      : (int64_t)(int32_t)((uint32_t)p[0] |
                                           (uint32_t)p[1] << 8 |
                                           (uint32_t)p[2] << 16 |
                                           (uint32_t)p[3] << 24);
      if (v < 0 || v > INT32_MAX)
        return gf_fail(err, GF_EINVAL, "class[%d]: must be a class index "
                       "(an integer >= 0)", k);
      out->cls[k] = v;
    }
    return GF_OK;
  }
  if (!cJSON_IsArray(vi->data) || cJSON_GetArraySize(vi->data) != n)
    return gf_fail(err, GF_EINVAL, "class: data does not match shape");
  int k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, vi->data) {
    const cJSON *v = e;
    if (vi->nd == 2 && cJSON_IsArray(e) && cJSON_GetArraySize(e) == 1)
      v = e->child;
    uint64_t c;
    if (!cJSON_IsNumber(v) || gfs_json_uint(v, &c) != 0 ||
        c > (uint64_t)INT32_MAX)
      return gf_fail(err, GF_EINVAL, "class[%d]: must be a class index "
                     "(an integer >= 0)", k);
    out->cls[k++] = (int64_t)c;
  }
  return GF_OK;
}

/* Image datatype named by a parameter value. */
static gf_status image_dtype(const cJSON *v, gfs_image_dtype *out,
                             gf_err *err) {
  if (cJSON_IsString(v) && strcmp(v->valuestring, "FP32") == 0)
    *out = GFS_IMAGE_FP32;
  else if (cJSON_IsString(v) && strcmp(v->valuestring, "UINT8") == 0)
    *out = GFS_IMAGE_UINT8;
  else
    return gf_fail(err, GF_EINVAL, "image datatype must be FP32 or UINT8");
  return GF_OK;
}

static gf_status flag(const cJSON *v, const char *what, int *out,
                      gf_err *err) {
  if (!cJSON_IsBool(v))
    return gf_fail(err, GF_EINVAL, "%s must be true or false", what);
  *out = cJSON_IsTrue(v);
  return GF_OK;
}

/* The style's parameters (gfs_style_set on the value's text: a number
 * printed exactly, or a string as it is; anything else is refused, naming
 * the parameter). */
static gf_status style_params(const cJSON *params, gfs_style *style,
                              gf_err *err) {
  static const char *const keys[] = {"psi", "trunc_cutoff", "noise", "mix",
                                     "mix_from"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, keys[i]);
    if (!v) continue;
    char text[64];
    if (cJSON_IsString(v) && strlen(v->valuestring) < sizeof text) {
      memcpy(text, v->valuestring, strlen(v->valuestring) + 1);
    } else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
               fabs(v->valuedouble) < 1e300) {
      gf_f64_text(v->valuedouble, text);
    } else {
      return gf_fail(err, GF_EINVAL, "parameters: %s must be a number or "
                     "a short string", keys[i]);
    }
    int handled;
    GF_TRY(gfs_style_set(style, "parameters", keys[i], text, &handled, err));
  }
  return gfs_style_check(style, "parameters", err);
}

/* Request-level parameters, then the outputs asked (each may override). */
static gf_status outputs_asked(const cJSON *root, gfs_infer_req *out,
                               gf_err *err) {
  gf_status st;
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "parameters");
  if (params) {
    if (!cJSON_IsObject(params))
      return gf_fail(err, GF_EINVAL, "parameters must be an object");
    const cJSON *b =
        cJSON_GetObjectItemCaseSensitive(params, "binary_data_output");
    if (b && (st = flag(b, "binary_data_output", &out->binary_out, err)))
      return st;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(params,
                                                      "image_datatype");
    if (d && (st = image_dtype(d, &out->dtype, err))) return st;
    if ((st = style_params(params, &out->style, err))) return st;
  }
  const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
  if (!outputs) return GF_OK;
  if (!cJSON_IsArray(outputs) || cJSON_GetArraySize(outputs) > 1)
    return gf_fail(err, GF_EINVAL,
                   "outputs must be an array of at most one output (image)");
  const cJSON *o = cJSON_GetArrayItem(outputs, 0);
  if (!o) return GF_OK;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
  if (!cJSON_IsObject(o) || !cJSON_IsString(name) ||
      strcmp(name->valuestring, "image") != 0)
    return gf_fail(err, GF_EINVAL,
                   "unknown output (the only output is \"image\")");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "parameters");
  if (!op) return GF_OK;
  if (!cJSON_IsObject(op))
    return gf_fail(err, GF_EINVAL, "output parameters must be an object");
  if (cJSON_GetObjectItemCaseSensitive(op, "classification") ||
      cJSON_GetObjectItemCaseSensitive(op, "shared_memory_region"))
    return gf_fail(err, GF_EINVAL, "image: classification and shared memory "
                                   "are not supported");
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(op, "binary_data");
  if (b && (st = flag(b, "binary_data", &out->binary_out, err))) return st;
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(op, "datatype");
  if (d && (st = image_dtype(d, &out->dtype, err))) return st;
  return GF_OK;
}

static gf_status parse_v2(const cJSON *root, int z_dim, int max_images,
                          void *ctxp, gfs_infer_req *out, gf_err *err) {
  const v2_ctx *ctx = ctxp;
  if (!cJSON_IsObject(root))
    return gf_fail(err, GF_EINVAL, "body must be a JSON object");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
  if (id) {
    if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof out->id)
      return gf_fail(err, GF_EINVAL, "id must be a string under %zu bytes",
                     sizeof out->id);
    strcpy(out->id, id->valuestring);
  }
  gf_status st = outputs_asked(root, out, err);
  if (st) return st;
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
  int ni = cJSON_IsArray(inputs) ? cJSON_GetArraySize(inputs) : 0;
  if (ni < 1 || ni > 2)
    return gf_fail(err, GF_EINVAL, "inputs must be an array of one tensor "
                   "(seed or z) and optionally a class tensor");
  v2_input vis[2];
  int main_at = -1, class_at = -1;
  for (int i = 0; i < ni; i++) {
    v2_input *vi = &vis[i];
    if ((st = input_header(cJSON_GetArrayItem(inputs, i), z_dim, max_images,
                           vi, err)))
      return st;
    int *at = vi->is_class ? &class_at : &main_at;
    if (*at >= 0)
      return gf_fail(err, GF_EINVAL, "inputs: one of seed or z, and at most "
                     "one class");
    *at = i;
  }
  if (main_at < 0)
    return gf_fail(err, GF_EINVAL, "inputs: a seed or z tensor is needed "
                   "besides class");
  const v2_input *vi = &vis[main_at];
  if (class_at >= 0 && vis[class_at].dims[0] != vi->dims[0])
    return gf_fail(err, GF_EINVAL, "class: %lld rows, but %s has %lld",
                   (long long)vis[class_at].dims[0],
                   vi->is_seed ? "seed" : "z", (long long)vi->dims[0]);
  /* binary data: each binary input's bytes in the inputs' order */
  size_t off[2] = {0, 0}, used = 0;
  for (int i = 0; i < ni; i++) {
    if (!vis[i].binary) continue;
    size_t elem = vis[i].is_class ? (size_t)vis[i].class_bytes
                  : vis[i].is_seed ? 8 : (size_t)z_dim * 4;
    uint64_t want = (uint64_t)vis[i].dims[0] * elem;
    const char *what = vis[i].is_class ? "class" : vis[i].is_seed ? "seed"
                                                                  : "z";
    if (vis[i].binary_size != want)
      return gf_fail(err, GF_EINVAL,
                     "%s: binary_data_size %llu, but shape and datatype "
                     "make %llu bytes", what,
                     (unsigned long long)vis[i].binary_size,
                     (unsigned long long)want);
    off[i] = used;
    used += (size_t)want;
  }
  if (used != ctx->bin_len)
    return gf_fail(err, GF_EINVAL,
                   "binary data: %zu bytes follow the JSON header, the "
                   "inputs take %zu", ctx->bin_len, used);
  if (class_at >= 0 &&
      (st = take_class(&vis[class_at],
                       vis[class_at].binary ? ctx->bin + off[class_at] : NULL,
                       out, err)))
    return st;
  if (vi->binary) return take_binary(vi, ctx->bin + off[main_at], z_dim, out,
                                     err);
  if (vi->is_seed) {
    if (!cJSON_IsArray(vi->data) ||
        cJSON_GetArraySize(vi->data) != vi->dims[0])
      return gf_fail(err, GF_EINVAL, "seed: data does not match shape");
    /* JSON numbers stop at 2^53; larger seeds come as strings of digits,
     * taken whole whatever the datatype. */
    return gfs_take_seeds(vi->data, max_images, out, err);
  }
  return gfs_take_z(vi->data, vi->dims[0], z_dim, max_images, out, err);
}

gf_status gfs_v2_parse_request(const char *body, size_t len,
                               const char *header_len, int z_dim,
                               int max_images, gfs_infer_req *out,
                               gf_err *err) {
  v2_ctx ctx = {NULL, 0};
  size_t json_len = len;
  if (header_len) {
    if (gfs_header_length_parse(header_len, len, &json_len) != 0) {
      gfs_infer_req_init(out);
      return gf_fail(err, GF_EINVAL,
                     "Inference-Header-Content-Length must be a byte count "
                     "0..%zu (the body's length)", len);
    }
    ctx.bin = (const unsigned char *)body + json_len;
    ctx.bin_len = len - json_len;
  }
  return gfs_json_body(body, json_len, z_dim, max_images, parse_v2, &ctx,
                       out, err);
}

gf_status gfs_v2_parse(const char *body, size_t len, int z_dim,
                       int max_images, gfs_infer_req *out, gf_err *err) {
  return gfs_v2_parse_request(body, len, NULL, z_dim, max_images, out, err);
}
