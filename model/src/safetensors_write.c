/* safetensors_write.c - serialising tensors + metadata to the safetensors
 * layout, into memory or atomically onto disk; see gf/safetensors.h. */
#include "gf/safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "gf/atomic_file.h"
#include "gf/strbuf.h"
#include "gf/text.h"

/* The validated plan of one write: order, offsets, and the header bytes. */
typedef struct plan {
  size_t *order;      /* n tensor indices in layout order (malloc'd) */
  uint64_t *nbytes;   /* per tensor, indexed like the input (malloc'd) */
  uint64_t data_len;  /* total data buffer size */
  gf_strbuf header;   /* 8-byte length prefix + padded JSON */
} plan;

static void plan_free(plan *p) {
  free(p->order);
  free(p->nbytes);
  gf_strbuf_free(&p->header);
}

/* qsort has no context argument, so sorting goes through this record. */
typedef struct order_rec {
  size_t index;
  size_t elsize;
  const char *name;
} order_rec;

static int cmp_order(const void *a, const void *b) {
  const order_rec *x = a, *y = b;
  if (x->elsize != y->elsize) return x->elsize > y->elsize ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int cmp_kv_key(const void *a, const void *b) {
  const gf_st_kv *x = *(const gf_st_kv *const *)a;
  const gf_st_kv *y = *(const gf_st_kv *const *)b;
  return strcmp(x->key, y->key);
}

static int valid_text(const char *s) {
  return s && gf_utf8_valid((const uint8_t *)s, strlen(s));
}

static gf_status check_tensor(const gf_st_tensor_desc *t, uint64_t *nbytes,
                              gf_err *err) {
  if (!t->name || !*t->name || !valid_text(t->name))
    return gf_fail(err, GF_EINVAL, "safetensors write: tensor name empty or not UTF-8");
  if (strcmp(t->name, "__metadata__") == 0)
    return gf_fail(err, GF_EINVAL, "safetensors write: tensor name \"__metadata__\" is reserved");
  size_t el = gf_st_dtype_size(t->dtype);
  if (el == 0)
    return gf_fail(err, GF_EINVAL, "safetensors write: tensor \"%s\": bad dtype %d",
                   t->name, (int)t->dtype);
  if (t->ndim < 0 || t->ndim > GF_ST_MAX_DIMS || (t->ndim > 0 && !t->shape))
    return gf_fail(err, GF_EINVAL, "safetensors write: tensor \"%s\": bad rank %d",
                   t->name, t->ndim);
  uint64_t n = el;
  for (int d = 0; d < t->ndim; d++) {
    /* JSON readers (and ours) take integers up to 2^53 exactly. */
    if (t->shape[d] < 0 || t->shape[d] > ((int64_t)1 << 53))
      return gf_fail(err, GF_EINVAL, "safetensors write: tensor \"%s\": bad dim %d",
                     t->name, d);
    if (__builtin_mul_overflow(n, (uint64_t)t->shape[d], &n))
      return gf_fail(err, GF_EINVAL, "safetensors write: tensor \"%s\": size overflows",
                     t->name);
  }
  if (n > 0 && !t->data)
    return gf_fail(err, GF_EINVAL, "safetensors write: tensor \"%s\": NULL data",
                   t->name);
  *nbytes = n;
  return GF_OK;
}

/* Validates everything and builds order, offsets and header. On failure
 * the plan is freed. */
static gf_status make_plan(plan *p, const gf_st_tensor_desc *t, size_t n,
                           const gf_st_kv *meta, size_t n_meta, unsigned flags,
                           gf_err *err) {
  gf_status st = GF_OK;
  order_rec *recs = NULL;
  const gf_st_kv **mk = NULL;
  p->order = NULL;
  p->nbytes = NULL;
  p->data_len = 0;
  gf_strbuf_init(&p->header);
  if ((n && !t) || (n_meta && !meta))
    return gf_fail(err, GF_EINVAL, "safetensors write: NULL tensor or metadata array");

  p->order = malloc((n ? n : 1) * sizeof *p->order);
  p->nbytes = malloc((n ? n : 1) * sizeof *p->nbytes);
  recs = malloc((n ? n : 1) * sizeof *recs);
  mk = malloc((n_meta ? n_meta : 1) * sizeof *mk);
  if (!p->order || !p->nbytes || !recs || !mk) {
    st = gf_fail(err, GF_ENOMEM, "safetensors write: out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    if ((st = check_tensor(&t[i], &p->nbytes[i], err)) != GF_OK) goto done;
    recs[i] = (order_rec){i, gf_st_dtype_size(t[i].dtype), t[i].name};
  }
  qsort(recs, n, sizeof *recs, cmp_order);
  for (size_t i = 0; i < n; i++) p->order[i] = recs[i].index;
  /* Names unique: re-sort by name alone and compare neighbours. */
  for (size_t i = 0; i < n; i++) recs[i].elsize = 0;
  qsort(recs, n, sizeof *recs, cmp_order);
  for (size_t i = 0; i + 1 < n; i++) {
    if (strcmp(recs[i].name, recs[i + 1].name) == 0) {
      st = gf_fail(err, GF_EINVAL, "safetensors write: duplicate tensor \"%s\"",
                   recs[i].name);
      goto done;
    }
  }

  for (size_t i = 0; i < n_meta; i++) {
    if (!valid_text(meta[i].key) || !valid_text(meta[i].value)) {
      st = gf_fail(err, GF_EINVAL, "safetensors write: metadata entry %zu is NULL or not UTF-8", i);
      goto done;
    }
    if ((flags & GF_ST_DATA_SHA256) && strcmp(meta[i].key, GF_ST_DATA_SHA256_KEY) == 0) {
      st = gf_fail(err, GF_EINVAL, "safetensors write: metadata key \"%s\" is set by the writer",
                   GF_ST_DATA_SHA256_KEY);
      goto done;
    }
    mk[i] = &meta[i];
  }
  qsort(mk, n_meta, sizeof *mk, cmp_kv_key);
  for (size_t i = 0; i + 1 < n_meta; i++) {
    if (strcmp(mk[i]->key, mk[i + 1]->key) == 0) {
      st = gf_fail(err, GF_EINVAL, "safetensors write: duplicate metadata key \"%s\"",
                   mk[i]->key);
      goto done;
    }
  }

  char digest[GF_SHA256_HEX_LEN + 1] = "";
  if (flags & GF_ST_DATA_SHA256) {
    gf_sha256 h;
    if ((st = gf_sha256_init(&h, err)) != GF_OK) goto done;
    for (size_t i = 0; i < n && st == GF_OK; i++)
      st = gf_sha256_update(&h, t[p->order[i]].data, p->nbytes[p->order[i]], err);
    if (st != GF_OK) {
      gf_sha256_free(&h);
      goto done;
    }
    if ((st = gf_sha256_final(&h, digest, err)) != GF_OK) goto done;
  }

  gf_strbuf *b = &p->header;
  gf_strbuf_append(b, "\0\0\0\0\0\0\0\0", 8); /* length, patched below */
  gf_strbuf_puts(b, "{");
  int first = 1;
  if (n_meta || (flags & GF_ST_DATA_SHA256)) {
    gf_strbuf_puts(b, "\"__metadata__\":{");
    int mfirst = 1;
    int digest_done = !(flags & GF_ST_DATA_SHA256);
    for (size_t i = 0; i <= n_meta; i++) {
      /* Merge the digest entry into the sorted keys. */
      if (!digest_done && (i == n_meta || strcmp(GF_ST_DATA_SHA256_KEY, mk[i]->key) < 0)) {
        if (!mfirst) gf_strbuf_puts(b, ",");
        gf_strbuf_json_string(b, GF_ST_DATA_SHA256_KEY, strlen(GF_ST_DATA_SHA256_KEY));
        gf_strbuf_puts(b, ":");
        gf_strbuf_json_string(b, digest, GF_SHA256_HEX_LEN);
        mfirst = 0;
        digest_done = 1;
      }
      if (i == n_meta) break;
      if (!mfirst) gf_strbuf_puts(b, ",");
      gf_strbuf_json_string(b, mk[i]->key, strlen(mk[i]->key));
      gf_strbuf_puts(b, ":");
      gf_strbuf_json_string(b, mk[i]->value, strlen(mk[i]->value));
      mfirst = 0;
    }
    gf_strbuf_puts(b, "}");
    first = 0;
  }
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const gf_st_tensor_desc *d = &t[p->order[i]];
    if (!first) gf_strbuf_puts(b, ",");
    first = 0;
    gf_strbuf_json_string(b, d->name, strlen(d->name));
    gf_strbuf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", gf_st_dtype_name(d->dtype));
    for (int k = 0; k < d->ndim; k++)
      gf_strbuf_printf(b, "%s%lld", k ? "," : "", (long long)d->shape[k]);
    uint64_t end;
    if (__builtin_add_overflow(off, p->nbytes[p->order[i]], &end) ||
        end > ((uint64_t)1 << 53)) {
      st = gf_fail(err, GF_EINVAL, "safetensors write: data too large");
      goto done;
    }
    gf_strbuf_printf(b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)end);
    off = end;
  }
  gf_strbuf_puts(b, "}");
  while (b->len % 8) gf_strbuf_puts(b, " ");
  if (b->failed) {
    st = gf_fail(err, GF_ENOMEM, "safetensors write: out of memory building header");
    goto done;
  }
  uint64_t hlen = b->len - 8;
  if (hlen > GF_ST_MAX_HEADER) {
    st = gf_fail(err, GF_EINVAL, "safetensors write: header of %llu bytes exceeds the limit",
                 (unsigned long long)hlen);
    goto done;
  }
  for (int k = 0; k < 8; k++) b->data[k] = (char)(uint8_t)(hlen >> (8 * k));
  p->data_len = off;

done:
  free(recs);
  free(mk);
  if (st != GF_OK) plan_free(p);
  return st;
}

gf_status gf_st_write_buffer(const gf_st_tensor_desc *tensors, size_t n,
                             const gf_st_kv *meta, size_t n_meta,
                             unsigned flags, uint8_t **out, size_t *out_len,
                             gf_err *err) {
  *out = NULL;
  *out_len = 0;
  plan p;
  gf_status st = make_plan(&p, tensors, n, meta, n_meta, flags, err);
  if (st != GF_OK) return st;
  if (p.data_len > (uint64_t)(SIZE_MAX - p.header.len)) {
    plan_free(&p);
    return gf_fail(err, GF_ENOMEM, "safetensors write: file too large for memory");
  }
  size_t total = p.header.len + (size_t)p.data_len;
  uint8_t *buf = malloc(total);
  if (!buf) {
    plan_free(&p);
    return gf_fail(err, GF_ENOMEM, "safetensors write: cannot allocate %zu bytes", total);
  }
  memcpy(buf, p.header.data, p.header.len);
  size_t at = p.header.len;
  for (size_t i = 0; i < n; i++) {
    size_t k = p.order[i];
    if (p.nbytes[k]) memcpy(buf + at, tensors[k].data, (size_t)p.nbytes[k]);
    at += (size_t)p.nbytes[k];
  }
  plan_free(&p);
  *out = buf;
  *out_len = total;
  return GF_OK;
}

gf_status gf_st_write_file(const char *path, const gf_st_tensor_desc *tensors,
                           size_t n, const gf_st_kv *meta, size_t n_meta,
                           unsigned flags, gf_err *err) {
  plan p;
  gf_status st = make_plan(&p, tensors, n, meta, n_meta, flags, err);
  if (st != GF_OK) return st;
  gf_atomic_file af;
  st = gf_atomic_open(&af, path, err);
  if (st != GF_OK) {
    plan_free(&p);
    return st;
  }
  int ok = fwrite(p.header.data, 1, p.header.len, af.fp) == p.header.len;
  for (size_t i = 0; ok && i < n; i++) {
    size_t k = p.order[i];
    if (p.nbytes[k])
      ok = fwrite(tensors[k].data, 1, (size_t)p.nbytes[k], af.fp) == p.nbytes[k];
  }
  plan_free(&p);
  if (!ok) {
    gf_atomic_abort(&af);
    return gf_fail(err, GF_EIO, "safetensors write: short write to %s", path);
  }
  return gf_atomic_commit(&af, err);
}
