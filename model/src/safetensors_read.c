/* safetensors_read.c - the strict safetensors parser (from a buffer or a
 * file), lookups, and the data digest check; also the dtype table shared
 * with the writer. See gf/safetensors.h for what "strict" covers. */
#include "gf/safetensors.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gf/file.h"
#include "gf/text.h"

static const struct {
  const char *name;
  size_t size;
} k_dtypes[GF_ST_DTYPE_COUNT] = {
    [GF_ST_F32] = {"F32", 4}, [GF_ST_F16] = {"F16", 2}, [GF_ST_BF16] = {"BF16", 2},
    [GF_ST_F64] = {"F64", 8}, [GF_ST_I64] = {"I64", 8}, [GF_ST_I32] = {"I32", 4},
    [GF_ST_I16] = {"I16", 2}, [GF_ST_I8] = {"I8", 1},   [GF_ST_U8] = {"U8", 1},
    [GF_ST_BOOL] = {"BOOL", 1},
};

const char *gf_st_shape_text(const int64_t *shape, int ndim,
                             char buf[GF_ST_SHAPE_TEXT_MAX]) {
  size_t k = 0;
  buf[k++] = '[';
  for (int i = 0; i < ndim && i < GF_ST_MAX_DIMS; i++) {
    /* one byte kept for the "]" */
    GF_FORMAT_FITS(buf + k, GF_ST_SHAPE_TEXT_MAX - k - 1, "%s%lld",
                   i ? ", " : "", (long long)shape[i]);
    k += strlen(buf + k);
  }
  buf[k++] = ']';
  buf[k] = '\0';
  return buf;
}

const char *gf_st_dtype_name(gf_st_dtype dt) {
  if ((unsigned)dt >= GF_ST_DTYPE_COUNT) return "?";
  return k_dtypes[dt].name;
}

size_t gf_st_dtype_size(gf_st_dtype dt) {
  if ((unsigned)dt >= GF_ST_DTYPE_COUNT) return 0;
  return k_dtypes[dt].size;
}

gf_status gf_st_dtype_parse(const char *name, gf_st_dtype *out, gf_err *err) {
  for (int i = 0; i < GF_ST_DTYPE_COUNT; i++) {
    if (name && strcmp(name, k_dtypes[i].name) == 0) {
      *out = (gf_st_dtype)i;
      return GF_OK;
    }
  }
  return gf_fail(err, GF_EUNSUPPORTED, "safetensors: unsupported dtype \"%.32s\"",
                 name ? name : "(null)");
}

void gf_st_file_init(gf_st_file *f) { memset(f, 0, sizeof *f); }

void gf_st_file_free(gf_st_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
  free(f->tensors);
  for (size_t i = 0; i < f->n_meta; i++) {
    free((char *)f->meta[i].key);
    free((char *)f->meta[i].value);
  }
  free(f->meta);
  free(f->owned);
  gf_st_file_init(f);
}

static int cmp_tensor_name(const void *a, const void *b) {
  return strcmp(((const gf_st_tensor *)a)->name, ((const gf_st_tensor *)b)->name);
}

static int cmp_tensor_offsets(const void *a, const void *b) {
  const gf_st_tensor *x = *(const gf_st_tensor *const *)a;
  const gf_st_tensor *y = *(const gf_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

static int cmp_kv(const void *a, const void *b) {
  return strcmp(((const gf_st_kv *)a)->key, ((const gf_st_kv *)b)->key);
}

/* A JSON number that is an exact non-negative integer <= 2^53. */
static int json_uint(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  if (!(d >= 0.0 && d <= 9007199254740992.0)) return 0; /* also rejects NaN */
  uint64_t u = (uint64_t)d;
  if ((double)u != d) return 0;
  *out = u;
  return 1;
}

static gf_status parse_metadata(gf_st_file *f, const cJSON *m, gf_err *err) {
  if (cJSON_IsNull(m)) return GF_OK;
  if (!cJSON_IsObject(m))
    return gf_fail(err, GF_EFORMAT, "safetensors: __metadata__ is not an object");
  size_t n = 0;
  for (const cJSON *c = m->child; c; c = c->next) n++;
  if (n == 0) return GF_OK;
  f->meta = calloc(n, sizeof *f->meta);
  if (!f->meta) return gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
  for (const cJSON *c = m->child; c; c = c->next) {
    if (!cJSON_IsString(c) || !c->valuestring)
      return gf_fail(err, GF_EFORMAT, "safetensors: metadata \"%.64s\" is not a string",
                     c->string ? c->string : "");
    gf_st_kv *kv = &f->meta[f->n_meta];
    kv->key = strdup(c->string ? c->string : "");
    kv->value = strdup(c->valuestring);
    f->n_meta++;
    if (!kv->key || !kv->value)
      return gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
  }
  qsort(f->meta, f->n_meta, sizeof *f->meta, cmp_kv);
  for (size_t i = 0; i + 1 < f->n_meta; i++)
    if (strcmp(f->meta[i].key, f->meta[i + 1].key) == 0)
      return gf_fail(err, GF_EFORMAT, "safetensors: duplicate metadata key \"%.64s\"",
                     f->meta[i].key);
  return GF_OK;
}

/* Fills t (name already set) from its header entry; checks the size. */
static gf_status parse_tensor(gf_st_tensor *t, const cJSON *e, size_t data_len,
                              gf_err *err) {
  if (!cJSON_IsObject(e))
    return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": entry is not an object",
                   t->name);
  const cJSON *dtype = NULL, *shape = NULL, *offs = NULL;
  for (const cJSON *c = e->child; c; c = c->next) {
    const cJSON **slot = NULL;
    const char *k = c->string ? c->string : "";
    if (strcmp(k, "dtype") == 0) slot = &dtype;
    else if (strcmp(k, "shape") == 0) slot = &shape;
    else if (strcmp(k, "data_offsets") == 0) slot = &offs;
    if (!slot || *slot)
      return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": %s field \"%.32s\"",
                     t->name, slot ? "duplicate" : "unknown", k);
    *slot = c;
  }
  if (!dtype || !shape || !offs)
    return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": missing %s", t->name,
                   !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
  if (!cJSON_IsString(dtype))
    return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": dtype is not a string",
                   t->name);
  gf_status st = gf_st_dtype_parse(dtype->valuestring, &t->dtype, err);
  if (st != GF_OK) return st;
  if (!cJSON_IsArray(shape))
    return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": shape is not an array",
                   t->name);
  uint64_t numel = 1;
  int nd = 0;
  for (const cJSON *c = shape->child; c; c = c->next, nd++) {
    uint64_t d;
    if (nd == GF_ST_MAX_DIMS)
      return gf_fail(err, GF_EUNSUPPORTED, "safetensors: tensor \"%.64s\": more than %d dims",
                     t->name, GF_ST_MAX_DIMS);
    if (!json_uint(c, &d))
      return gf_fail(err, GF_EFORMAT,
                     "safetensors: tensor \"%.64s\": shape[%d] is not a non-negative integer",
                     t->name, nd);
    if (__builtin_mul_overflow(numel, d, &numel))
      return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": shape overflows",
                     t->name);
    t->shape[nd] = (int64_t)d;
  }
  t->ndim = nd;
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, (uint64_t)gf_st_dtype_size(t->dtype), &nbytes) ||
      nbytes > SIZE_MAX)
    return gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\": byte size overflows",
                   t->name);
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
      !json_uint(offs->child, &t->begin) || !json_uint(offs->child->next, &t->end))
    return gf_fail(err, GF_EFORMAT,
                   "safetensors: tensor \"%.64s\": data_offsets is not [begin, end]", t->name);
  if (t->begin > t->end || t->end > data_len)
    return gf_fail(err, GF_EFORMAT,
                   "safetensors: tensor \"%.64s\": offsets [%llu, %llu] outside the %zu-byte data buffer",
                   t->name, (unsigned long long)t->begin, (unsigned long long)t->end, data_len);
  if (t->end - t->begin != nbytes)
    return gf_fail(err, GF_EFORMAT,
                   "safetensors: tensor \"%.64s\": shape x %s = %llu bytes but offsets span %llu",
                   t->name, gf_st_dtype_name(t->dtype), (unsigned long long)nbytes,
                   (unsigned long long)(t->end - t->begin));
  t->nbytes = (size_t)nbytes;
  t->numel = (size_t)numel;
  return GF_OK;
}

/* Tensors must tile [0, data_len) exactly: sorted by offset, each begins
 * where the previous ended and the last ends at data_len. */
static gf_status check_coverage(gf_st_file *f, gf_err *err) {
  if (f->n_tensors == 0) {
    if (f->data_len != 0)
      return gf_fail(err, GF_EFORMAT, "safetensors: %zu data bytes but no tensors", f->data_len);
    return GF_OK;
  }
  gf_st_tensor **by_off = malloc(f->n_tensors * sizeof *by_off);
  if (!by_off) return gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
  for (size_t i = 0; i < f->n_tensors; i++) by_off[i] = &f->tensors[i];
  qsort(by_off, f->n_tensors, sizeof *by_off, cmp_tensor_offsets);
  gf_status st = GF_OK;
  uint64_t at = 0;
  for (size_t i = 0; i < f->n_tensors && st == GF_OK; i++) {
    if (by_off[i]->begin != at)
      st = gf_fail(err, GF_EFORMAT, "safetensors: tensor \"%.64s\" starts at %llu: %s at %llu",
                   by_off[i]->name, (unsigned long long)by_off[i]->begin,
                   by_off[i]->begin > at ? "gap" : "overlap", (unsigned long long)at);
    at = by_off[i]->end;
  }
  if (st == GF_OK && at != f->data_len)
    st = gf_fail(err, GF_EFORMAT, "safetensors: tensors end at %llu, data buffer has %zu bytes",
                 (unsigned long long)at, f->data_len);
  free(by_off);
  return st;
}

static gf_status parse_header(gf_st_file *f, const char *text, size_t len,
                              gf_err *err) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    return gf_fail(err, GF_EFORMAT, "safetensors: header is not valid JSON (near byte %zu)", at);
  }
  gf_status st = GF_OK;
  for (const char *p = end; p < text + len; p++) {
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      st = gf_fail(err, GF_EFORMAT, "safetensors: trailing bytes after the header JSON");
      goto done;
    }
  }
  if (!cJSON_IsObject(root)) {
    st = gf_fail(err, GF_EFORMAT, "safetensors: header is not a JSON object");
    goto done;
  }
  size_t n = 0, n_md = 0;
  const cJSON *md = NULL;
  for (const cJSON *c = root->child; c; c = c->next) {
    if (c->string && strcmp(c->string, "__metadata__") == 0) {
      md = c;
      n_md++;
    } else {
      n++;
    }
  }
  if (n_md > 1) {
    st = gf_fail(err, GF_EFORMAT, "safetensors: duplicate __metadata__");
    goto done;
  }
  if (md && (st = parse_metadata(f, md, err)) != GF_OK) goto done;
  if (n) {
    f->tensors = calloc(n, sizeof *f->tensors);
    if (!f->tensors) {
      st = gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
      goto done;
    }
  }
  for (const cJSON *c = root->child; c; c = c->next) {
    if (c == md) continue;
    gf_st_tensor *t = &f->tensors[f->n_tensors];
    t->name = strdup(c->string ? c->string : "");
    if (!t->name) {
      st = gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
      goto done;
    }
    f->n_tensors++;
    if ((st = parse_tensor(t, c, f->data_len, err)) != GF_OK) goto done;
    t->data = f->data + t->begin;
  }
  if (f->n_tensors) qsort(f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
  for (size_t i = 0; i + 1 < f->n_tensors; i++) {
    if (strcmp(f->tensors[i].name, f->tensors[i + 1].name) == 0) {
      st = gf_fail(err, GF_EFORMAT, "safetensors: duplicate tensor \"%.64s\"",
                   f->tensors[i].name);
      goto done;
    }
  }
  st = check_coverage(f, err);
done:
  cJSON_Delete(root);
  return st;
}

/* Parses f->bytes/f->size (already set; f->owned may be set). */
static gf_status parse_bytes(gf_st_file *f, unsigned flags, gf_err *err) {
  const uint8_t *b = f->bytes;
  if (f->size < 8)
    return gf_fail(err, GF_EFORMAT, "safetensors: %zu bytes, shorter than the 8-byte length",
                   f->size);
  uint64_t n = 0;
  for (int k = 7; k >= 0; k--) n = (n << 8) | b[k];
  if (n == 0) return gf_fail(err, GF_EFORMAT, "safetensors: header length is zero");
  if (n > GF_ST_MAX_HEADER)
    return gf_fail(err, GF_EFORMAT, "safetensors: header length %llu exceeds %u",
                   (unsigned long long)n, GF_ST_MAX_HEADER);
  if (n > f->size - 8)
    return gf_fail(err, GF_EFORMAT,
                   "safetensors: header length %llu exceeds the %zu bytes after it",
                   (unsigned long long)n, f->size - 8);
  f->header_len = (size_t)n;
  f->data = b + 8 + f->header_len;
  f->data_len = f->size - 8 - f->header_len;
  const uint8_t *h = b + 8;
  if (h[0] != '{')
    return gf_fail(err, GF_EFORMAT, "safetensors: header does not start with '{'");
  if (!gf_utf8_valid(h, f->header_len))
    return gf_fail(err, GF_EFORMAT, "safetensors: header is not valid UTF-8");
  for (size_t i = 0; i < f->header_len; i++) {
    if (h[i] < 0x20 && h[i] != '\t' && h[i] != '\n' && h[i] != '\r')
      return gf_fail(err, GF_EFORMAT, "safetensors: control byte 0x%02x in header at %zu",
                     h[i], i);
  }
  /* cJSON wants a terminated string; parse a private copy. */
  char *text = malloc(f->header_len + 1);
  if (!text) return gf_fail(err, GF_ENOMEM, "safetensors: out of memory");
  memcpy(text, h, f->header_len);
  text[f->header_len] = '\0';
  gf_status st = parse_header(f, text, f->header_len, err);
  free(text);
  if (st == GF_OK && (flags & GF_ST_VERIFY_SHA256)) st = gf_st_verify_data_sha256(f, err);
  return st;
}

gf_status gf_st_parse(gf_st_file *f, const void *buf, size_t len,
                      unsigned flags, gf_err *err) {
  gf_st_file_init(f);
  if (!buf && len) return gf_fail(err, GF_EINVAL, "safetensors: NULL buffer");
  f->bytes = buf;
  f->size = len;
  gf_status st = parse_bytes(f, flags, err);
  if (st != GF_OK) gf_st_file_free(f);
  return st;
}

gf_status gf_st_open(gf_st_file *f, const char *path, unsigned flags,
                     gf_err *err) {
  gf_st_file_init(f);
  char *bytes = NULL;
  size_t size = 0;
  gf_err e;
  gf_status st = gf_read_file(path, SIZE_MAX, &bytes, &size, &e);
  if (st != GF_OK) /* nothing there, or no file: GF_EIO, as documented */
    return gf_fail(err, st == GF_ENOTFOUND || st == GF_EINVAL ? GF_EIO : st,
                   "safetensors: %s", e.msg);
  f->owned = (uint8_t *)bytes;
  f->bytes = f->owned;
  f->size = size;
  st = parse_bytes(f, flags, err);
  if (st != GF_OK) {
    /* Say which file: prefix the parser's message with the path. */
    if (err) {
      char msg[sizeof err->msg];
      memcpy(msg, err->msg, sizeof msg);
      gf_fail(err, st, "%s: %s", path, msg);
    }
    gf_st_file_free(f);
  }
  return st;
}

const gf_st_tensor *gf_st_find(const gf_st_file *f, const char *name) {
  if (!f || !name || !f->n_tensors) return NULL;
  gf_st_tensor key;
  key.name = (char *)name;
  return bsearch(&key, f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
}

const char *gf_st_meta_get(const gf_st_file *f, const char *key) {
  if (!f || !key || !f->n_meta) return NULL;
  gf_st_kv k = {key, NULL};
  const gf_st_kv *hit = bsearch(&k, f->meta, f->n_meta, sizeof *f->meta, cmp_kv);
  return hit ? hit->value : NULL;
}

gf_status gf_st_data_sha256(const gf_st_file *f, char hex[GF_SHA256_HEX_LEN + 1],
                            gf_err *err) {
  return gf_sha256_buf(f->data, f->data_len, hex, err);
}

gf_status gf_st_verify_data_sha256(const gf_st_file *f, gf_err *err) {
  const char *want = gf_st_meta_get(f, GF_ST_DATA_SHA256_KEY);
  if (!want)
    return gf_fail(err, GF_ENOTFOUND, "safetensors: no %s in the metadata",
                   GF_ST_DATA_SHA256_KEY);
  if (!gf_sha256_hex_valid(want))
    return gf_fail(err, GF_EFORMAT, "safetensors: %s is not a SHA-256 hex digest",
                   GF_ST_DATA_SHA256_KEY);
  char got[GF_SHA256_HEX_LEN + 1];
  gf_status st = gf_st_data_sha256(f, got, err);
  if (st != GF_OK) return st;
  if (strcmp(got, want) != 0)
    return gf_fail(err, GF_EINTEGRITY, "safetensors: data SHA-256 %s, metadata says %s", got,
                   want);
  return GF_OK;
}
