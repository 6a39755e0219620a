/* sg2_snapshot.c - StyleGAN2-ADA snapshots through the restricted unpickler
 * (see gf/sg2_snapshot.h for the format and the allow-list). */
#include "gf/sg2_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/file.h"
#include "gf/pickle.h"
#include "gf/strbuf.h"
#include "gf/text.h"

static const char *const k_outer_allow[] = {
    "torch_utils.persistence._reconstruct_persistent_obj",
    "collections.OrderedDict",
    "dnnlib.util.EasyDict",
    "builtins.set",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_parameter",
    "torch.storage._load_from_bytes",
    "numpy.dtype",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
};

/* The storage classes of the legacy format: torch dtype name, bytes per
 * element; size 0 marks the ones refused. */
static const struct {
  const char *global, *dtype;
  size_t size;
} k_storages[] = {
    {"torch.FloatStorage", "float32", 4},
    {"torch.HalfStorage", "float16", 2},
    {"torch.DoubleStorage", "float64", 0},
    {"torch.BFloat16Storage", "bfloat16", 0},
    {"torch.LongStorage", "int64", 0},
    {"torch.IntStorage", "int32", 0},
    {"torch.ShortStorage", "int16", 0},
    {"torch.CharStorage", "int8", 0},
    {"torch.ByteStorage", "uint8", 0},
    {"torch.BoolStorage", "bool", 0},
};
#define N_STORAGES (sizeof k_storages / sizeof k_storages[0])

#define MAX_MODULE_DEPTH 32
#define MAX_MODULES 65536
/* Entries of _parameters/_buffers/_modules visited, and storage bytes
 * parsed (the input's size times this, plus 1 MiB): a file's values can be
 * shared, and a reader that followed every reference could be made to loop
 * for ever; one of the official files visits each entry and storage once. */
#define MAX_WORK ((size_t)1 << 22)
#define PARSE_FACTOR 4
#define MAX_NAME 256

typedef struct sg_ctx {
  gf_pk_doc *doc;
  gf_pk_opts outer, inner;
  const char *inner_allow[N_STORAGES];
  size_t len;       /* the input's size */
  size_t n_modules; /* modules visited, all nets */
  size_t n_elems;   /* tensor elements copied, all nets */
  size_t n_work;    /* entries of modules' dicts visited, all nets */
  size_t n_parsed;  /* storage bytes parsed, all nets */
  const char *net;  /* "G_ema", for messages */
  gf_err *err;
} sg_ctx;

void gf_sg2_snapshot_free(gf_sg2_snapshot *s) {
  if (!s) return;
  gf_sg2_snap_net *nets[] = {&s->G, &s->D, &s->G_ema, &s->augment_pipe};
  for (size_t k = 0; k < 4; k++) {
    gf_sg2_snap_net *n = nets[k];
    for (size_t i = 0; i < n->n_tensors; i++) {
      free(n->tensors[i].name);
      free(n->tensors[i].data);
    }
    free(n->tensors);
    for (size_t i = 0; i < n->n_extra; i++) {
      free(n->extra[i].key);
      free(n->extra[i].value);
    }
    free(n->extra);
  }
  memset(s, 0, sizeof *s);
}

const gf_sg2_snap_tensor *gf_sg2_snap_find(const gf_sg2_snap_net *n, const char *name) {
  for (size_t i = 0; n && i < n->n_tensors; i++)
    if (strcmp(n->tensors[i].name, name) == 0) return &n->tensors[i];
  return NULL;
}

const char *gf_sg2_snap_extra(const gf_sg2_snap_net *n, const char *key) {
  for (size_t i = 0; n && i < n->n_extra; i++)
    if (strcmp(n->extra[i].key, key) == 0) return n->extra[i].value;
  return NULL;
}

static gf_status nomem(sg_ctx *c) {
  return gf_fail(c->err, GF_ENOMEM, "StyleGAN2-ADA snapshot: out of memory");
}

/* A printable, bounded copy of an untrusted string for messages. */
static const char *shown(const gf_pk_value *v, char *buf, size_t cap) {
  size_t k = 0;
  if (v && v->kind == GF_PK_STR)
    for (; k < v->len && k + 1 < cap; k++)
      buf[k] = (v->s[k] >= 0x20 && v->s[k] < 0x7f) ? v->s[k] : '?';
  buf[k] = '\0';
  return buf;
}

/* ---- tensors ---- */

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
           man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        man <<= 1;
        e++;
      } while (!(man & 0x400u));
      u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static int nonneg_int(const gf_pk_value *v) {
  return v && v->kind == GF_PK_INT && v->i >= 0;
}

/* A storage: its legacy torch.save bytes checked and located. */
typedef struct sg_storage {
  const uint8_t *data;
  size_t numel, elem;
  const char *dtype;
} sg_storage;

static const uint8_t k_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                    0x20, 0x6a, 0xa8, 0x50, 0x19};

static gf_status read_storage(sg_ctx *c, const char *tname,
                              const gf_pk_value *call, sg_storage *out) {
  if (!gf_pk_is(call, "torch.storage", "_load_from_bytes") ||
      call->kind != GF_PK_CALL || call->args->items.n != 1 ||
      call->args->items.v[0]->kind != GF_PK_BYTES)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': the storage is not "
                   "torch.storage._load_from_bytes(bytes) (byte %zu)",
                   c->net, tname, call->offset);
  const gf_pk_value *b = call->args->items.v[0];
  size_t cap = c->len <= (SIZE_MAX - ((size_t)1 << 20)) / PARSE_FACTOR
                   ? c->len * PARSE_FACTOR + ((size_t)1 << 20)
                   : SIZE_MAX;
  c->n_parsed = b->len > SIZE_MAX - c->n_parsed ? SIZE_MAX
                                                : c->n_parsed + b->len;
  if (c->n_parsed > cap)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': storages shared too often (more "
                   "than %d times the file's bytes parsed)",
                   c->net, tname, PARSE_FACTOR);
  const uint8_t *p = (const uint8_t *)b->s;
  size_t len = b->len, pos = 0, used = 0;
  gf_pk_value *v[5];
  for (int k = 0; k < 5; k++) {
    gf_err e;
    gf_status st = gf_pk_parse(c->doc, p + pos, len - pos, &c->inner, &v[k],
                               &used, &e);
    if (st != GF_OK)
      return gf_fail(c->err, st,
                     "%s tensor '%s': storage bytes at byte %zu, record %d at "
                     "+%zu: %s",
                     c->net, tname, b->offset, k, pos, e.msg);
    pos += used;
  }
  const gf_pk_value *pid = v[3]->kind == GF_PK_PERSID ? v[3]->args : NULL;
  if (v[0]->kind != GF_PK_BIGINT || v[0]->len != sizeof k_magic ||
      memcmp(v[0]->s, k_magic, sizeof k_magic) != 0 ||
      v[1]->kind != GF_PK_INT || v[1]->i != 1001 || v[2]->kind != GF_PK_DICT ||
      !pid || pid->kind != GF_PK_TUPLE || pid->items.n < 5 ||
      !gf_pk_str_eq(pid->items.v[0], "storage") ||
      pid->items.v[1]->kind != GF_PK_GLOBAL ||
      pid->items.v[2]->kind != GF_PK_STR || !nonneg_int(pid->items.v[4]) ||
      v[4]->kind != GF_PK_LIST || v[4]->items.n != 1 ||
      !gf_pk_str_eq(v[4]->items.v[0], pid->items.v[2]->s))
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': storage bytes (byte %zu) are not "
                   "torch.save's legacy format of one storage",
                   c->net, tname, b->offset);
  const gf_pk_value *le = gf_pk_get(v[2], "little_endian");
  if (le && !(le->kind == GF_PK_BOOL && le->i == 1))
    return gf_fail(c->err, GF_EUNSUPPORTED,
                   "%s tensor '%s': a big-endian storage", c->net, tname);
  const gf_pk_value *g = pid->items.v[1];
  size_t s = 0;
  while (s < N_STORAGES && !(strncmp(k_storages[s].global, "torch.", 6) == 0 &&
                             strcmp(g->module, "torch") == 0 &&
                             strcmp(k_storages[s].global + 6, g->name) == 0))
    s++;
  if (s == N_STORAGES) /* cannot happen: the allow-list is k_storages */
    return gf_fail(c->err, GF_EFORMAT, "%s tensor '%s': unknown storage type",
                   c->net, tname);
  if (k_storages[s].size == 0)
    return gf_fail(c->err, GF_EUNSUPPORTED, "%s tensor '%s' is %s", c->net,
                   tname, k_storages[s].dtype);
  uint64_t numel = (uint64_t)pid->items.v[4]->i;
  if (len - pos < 8)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': storage truncated at byte %zu", c->net,
                   tname, b->offset + len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | p[pos + (size_t)i];
  pos += 8;
  size_t elem = k_storages[s].size;
  if (n != numel || numel > (len - pos) / elem || (len - pos) != numel * elem)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': storage of %llu elements does not "
                   "match its %zu bytes of data",
                   c->net, tname, (unsigned long long)numel, len - pos);
  out->data = p + pos;
  out->numel = (size_t)numel;
  out->elem = elem;
  out->dtype = k_storages[s].dtype;
  return GF_OK;
}

static gf_status read_tensor(sg_ctx *c, const char *tname, const gf_pk_value *v,
                             gf_sg2_snap_tensor *t) {
  if (gf_pk_is(v, "torch._utils", "_rebuild_parameter") &&
      v->kind == GF_PK_CALL && v->args->items.n >= 1)
    v = v->args->items.v[0];
  const gf_pk_value *a = v && v->kind == GF_PK_CALL ? v->args : NULL;
  if (!gf_pk_is(v, "torch._utils", "_rebuild_tensor_v2") || !a ||
      v->kind != GF_PK_CALL || a->items.n < 4 || !nonneg_int(a->items.v[1]) ||
      a->items.v[2]->kind != GF_PK_TUPLE ||
      a->items.v[3]->kind != GF_PK_TUPLE ||
      a->items.v[2]->items.n != a->items.v[3]->items.n)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s' is not a torch tensor (byte %zu)", c->net,
                   tname, v ? v->offset : 0);
  const gf_pk_value *size = a->items.v[2], *stride = a->items.v[3];
  if (size->items.n > GF_SG2_MAX_DIMS)
    return gf_fail(c->err, GF_EUNSUPPORTED,
                   "%s tensor '%s' has %zu dimensions, more than %d", c->net,
                   tname, size->items.n, GF_SG2_MAX_DIMS);
  sg_storage s = {0};
  GF_TRY(read_storage(c, tname, a->items.v[0], &s));
  uint64_t off = (uint64_t)a->items.v[1]->i, numel = 1, last = off;
  int ndim = (int)size->items.n;
  for (int d = 0; d < ndim; d++) {
    const gf_pk_value *sz = size->items.v[d], *st = stride->items.v[d];
    if (!nonneg_int(sz) || !nonneg_int(st) ||
        (uint64_t)sz->i > ((uint64_t)1 << 40) ||
        (uint64_t)st->i > ((uint64_t)1 << 40))
      return gf_fail(c->err, GF_EFORMAT, "%s tensor '%s': bad size or stride",
                     c->net, tname);
    t->shape[d] = sz->i;
    numel = sz->i && numel > UINT64_MAX / (uint64_t)sz->i
                ? UINT64_MAX
                : numel * (uint64_t)sz->i;
    if (sz->i > 1 &&
        (uint64_t)st->i > (UINT64_MAX - last) / (uint64_t)(sz->i - 1))
      return gf_fail(c->err, GF_EFORMAT, "%s tensor '%s': strides overflow",
                     c->net, tname);
    if (sz->i) last += (uint64_t)(sz->i - 1) * (uint64_t)st->i;
  }
  if (numel && (last >= s.numel || numel > s.numel))
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': view past its storage of %zu elements",
                   c->net, tname, s.numel);
  if (numel > c->len / 2 + 1 -
                  (c->n_elems < c->len / 2 + 1 ? c->n_elems : c->len / 2 + 1))
    return gf_fail(c->err, GF_EFORMAT,
                   "%s tensor '%s': more tensor elements than the file "
                   "can hold",
                   c->net, tname);
  c->n_elems += (size_t)numel;
  t->ndim = ndim;
  t->numel = (size_t)numel;
  t->data = malloc((numel ? (size_t)numel : 1) * sizeof *t->data);
  if (!t->data) return nomem(c);
  size_t idx[GF_SG2_MAX_DIMS] = {0};
  for (size_t k = 0; k < t->numel; k++) {
    uint64_t e = off;
    for (int d = 0; d < ndim; d++)
      e += idx[d] * (uint64_t)stride->items.v[d]->i;
    const uint8_t *q = s.data + e * s.elem;
    if (s.elem == 4) {
      uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                   (uint32_t)q[3] << 24;
      memcpy(&t->data[k], &u, sizeof u);
    } else {
      t->data[k] = half_to_float((uint16_t)(q[0] | q[1] << 8));
    }
    for (int d = ndim - 1; d >= 0; d--) { /* row-major odometer */
      if (++idx[d] < (size_t)t->shape[d]) break;
      idx[d] = 0;
    }
  }
  return GF_OK;
}

/* ---- modules ---- */

/* arr (n entries of size bytes, malloc'd, capacity n rounded up to 16)
 * with room for one more: the array to use from now on, or NULL when out of
 * memory (arr is then left as it was). */
static void *room16(void *arr, size_t n, size_t size) {
  return n % 16 ? arr : realloc(arr, (n + 16) * size);
}

static gf_status add_tensor(sg_ctx *c, gf_sg2_snap_net *n, const char *name,
                            const gf_pk_value *v) {
  gf_sg2_snap_tensor *ts = room16(n->tensors, n->n_tensors, sizeof *ts);
  if (!ts) return nomem(c);
  n->tensors = ts;
  gf_sg2_snap_tensor *t = &n->tensors[n->n_tensors];
  memset(t, 0, sizeof *t);
  t->name = strdup(name);
  if (!t->name) return nomem(c);
  n->n_tensors++; /* freed by gf_sg2_snapshot_free from here on */
  return read_tensor(c, name, v, t);
}

/* The dict-like entries of an OrderedDict (a CALL with kv) or a dict. */
static const gf_pk_seq *entries(const gf_pk_value *v) {
  if (v && v->kind == GF_PK_DICT) return &v->kv;
  if (v && v->kind == GF_PK_CALL &&
      (gf_pk_is(v, "collections", "OrderedDict") ||
       gf_pk_is(v, "dnnlib.util", "EasyDict")))
    return &v->kv;
  return NULL;
}

/* 1 when name is in the module's _non_persistent_buffers_set. */
static int non_persistent(const gf_pk_value *set, const gf_pk_value *key) {
  if (set && set->kind == GF_PK_CALL && gf_pk_is(set, "builtins", "set") &&
      set->args->items.n == 1)
    set = set->args->items.v[0];
  if (!set || (set->kind != GF_PK_SET && set->kind != GF_PK_LIST)) return 0;
  for (size_t i = 0; i < set->items.n; i++)
    if (set->items.v[i]->kind == GF_PK_STR &&
        gf_pk_str_eq(set->items.v[i], key->s))
      return 1;
  return 0;
}

static gf_status read_kwargs(sg_ctx *c, gf_sg2_snap_net *n, const gf_pk_value *kw);
static gf_status add_extra(sg_ctx *c, gf_sg2_snap_net *n, const char *key,
                           const gf_pk_value *v);

static gf_status walk_module(sg_ctx *c, gf_sg2_snap_net *n, const gf_pk_value *obj,
                             const char *prefix, int depth) {
  char buf[96];
  if (depth > MAX_MODULE_DEPTH || ++c->n_modules > MAX_MODULES)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s: modules nested deeper than %d or more than %d "
                   "of them",
                   c->net, MAX_MODULE_DEPTH, MAX_MODULES);
  const gf_pk_value *meta = NULL;
  if (gf_pk_is(obj, "torch_utils.persistence", "_reconstruct_persistent_obj") &&
      obj->kind == GF_PK_CALL && obj->args->items.n == 1)
    meta = obj->args->items.v[0];
  if (!meta || meta->kind != GF_PK_DICT)
    return gf_fail(c->err, GF_EFORMAT,
                   "%s: module '%s' is not a persistence record (a %s, "
                   "byte %zu)",
                   c->net, prefix, obj ? gf_pk_kind_name(obj->kind) : "?",
                   obj ? obj->offset : 0);
  const gf_pk_value *type = gf_pk_get(meta, "type"),
                    *ver = gf_pk_get(meta, "version"),
                    *src = gf_pk_get(meta, "module_src"),
                    *cls = gf_pk_get(meta, "class_name"),
                    *state = gf_pk_get(meta, "state");
  if (!gf_pk_str_eq(type, "class") || !ver || ver->kind != GF_PK_INT || !src ||
      src->kind != GF_PK_STR || !cls || cls->kind != GF_PK_STR ||
      !entries(state))
    return gf_fail(c->err, GF_EFORMAT,
                   "%s: module '%s': persistence record without type "
                   "'class', an int version, module_src, class_name and a "
                   "state dict (byte "
                   "%zu)",
                   c->net, prefix, meta->offset);
  if (depth == 0) {
    shown(cls, n->class_name, sizeof n->class_name);
    GF_TRY(read_kwargs(c, n, gf_pk_get(state, "_init_kwargs")));
    const gf_pk_value *args = gf_pk_get(state, "_init_args");
    if (args && args->kind != GF_PK_TUPLE && args->kind != GF_PK_LIST)
      return gf_fail(c->err, GF_EFORMAT, "%s: _init_args is a %s, not a tuple",
                     c->net, gf_pk_kind_name(args->kind));
    for (size_t i = 0; args && i < args->items.n && i < 64; i++) {
      char key[32];
      GF_FORMAT_FITS(key, sizeof key, "args.%zu", i);
      GF_TRY(add_extra(c, n, key, args->items.v[i]));
    }
  }
  const gf_pk_value *nps = gf_pk_get(state, "_non_persistent_buffers_set");
  const char *groups[3] = {"_parameters", "_buffers", "_modules"};
  for (int g = 0; g < 3; g++) {
    const gf_pk_value *d = gf_pk_get(state, groups[g]);
    if (!d) continue;
    const gf_pk_seq *e = entries(d);
    if (!e)
      return gf_fail(c->err, GF_EFORMAT,
                     "%s: module '%s': %s is a %s, not a dict", c->net, prefix,
                     groups[g], gf_pk_kind_name(d->kind));
    for (size_t i = 0; i + 1 < e->n; i += 2) {
      const gf_pk_value *k = e->v[i], *v = e->v[i + 1];
      char name[MAX_NAME];
      if (++c->n_work > MAX_WORK)
        return gf_fail(c->err, GF_EFORMAT,
                       "%s: more than %zu module entries visited "
                       "(modules shared too often)",
                       c->net, MAX_WORK);
      if (k->kind != GF_PK_STR || k->len == 0 || strlen(k->s) != k->len ||
          strlen(prefix) + k->len + 2 > sizeof name)
        return gf_fail(c->err, GF_EFORMAT,
                       "%s: module '%s': a bad %s key \"%s\"", c->net, prefix,
                       groups[g], shown(k, buf, sizeof buf));
      /* fits: the length was checked above */
      GF_FORMAT_FITS(name, sizeof name, "%s%s", prefix, k->s);
      if (v->kind == GF_PK_NONE) continue; /* state_dict skips None too */
      if (g == 2) {
        strcat(name, ".");
        GF_TRY(walk_module(c, n, v, name, depth + 1));
      } else if (g == 0 || !non_persistent(nps, k)) {
        GF_TRY(add_tensor(c, n, name, v));
      }
    }
  }
  return GF_OK;
}

/* Python-like text of a kwarg's value. */
static void value_text(gf_strbuf *b, const gf_pk_value *v, int depth) {
  switch (v->kind) {
  case GF_PK_NONE: gf_strbuf_puts(b, "None"); return;
  case GF_PK_BOOL: gf_strbuf_puts(b, v->i ? "True" : "False"); return;
  case GF_PK_INT: gf_strbuf_printf(b, "%lld", (long long)v->i); return;
  case GF_PK_FLOAT: gf_strbuf_printf(b, "%.17g", v->f); return;
  case GF_PK_STR:
    gf_strbuf_append(b, v->s, v->len < 4096 ? v->len : 4096);
    return;
  case GF_PK_LIST:
  case GF_PK_TUPLE:
    if (depth < 4 && v->items.n <= 64) {
      gf_strbuf_puts(b, v->kind == GF_PK_LIST ? "[" : "(");
      for (size_t i = 0; i < v->items.n && b->len < 1024; i++) {
        if (i) gf_strbuf_puts(b, ", ");
        value_text(b, v->items.v[i], depth + 1);
      }
      gf_strbuf_puts(b, v->kind == GF_PK_LIST ? "]" : ")");
      return;
    }
    break;
  default: break;
  }
  gf_strbuf_printf(b, "<%s>", gf_pk_kind_name(v->kind));
}

static gf_status add_extra(sg_ctx *c, gf_sg2_snap_net *n, const char *key,
                           const gf_pk_value *v) {
  gf_sg2_snap_kv *ex = room16(n->extra, n->n_extra, sizeof *ex);
  if (!ex) return nomem(c);
  n->extra = ex;
  gf_strbuf b;
  gf_strbuf_init(&b);
  if (v) value_text(&b, v, 0);
  else gf_strbuf_puts(&b, "{}");
  gf_sg2_snap_kv *kv = &n->extra[n->n_extra];
  kv->key = strdup(key);
  kv->value = gf_strbuf_take(&b, NULL);
  n->n_extra++;
  if (!kv->key || !kv->value) return nomem(c);
  return GF_OK;
}

/* Known kwargs into their fields, in either the top level or the named
 * nested dict; 1 when taken. */
static int known(gf_sg2_snap_net *n, const char *key, const gf_pk_value *v) {
  static const struct {
    const char *key;
    size_t off;
  } ints[] = {
      {"z_dim", offsetof(gf_sg2_snap_net, z_dim)},
      {"c_dim", offsetof(gf_sg2_snap_net, c_dim)},
      {"w_dim", offsetof(gf_sg2_snap_net, w_dim)},
      {"img_resolution", offsetof(gf_sg2_snap_net, img_resolution)},
      {"img_channels", offsetof(gf_sg2_snap_net, img_channels)},
      {"mapping_kwargs.num_layers", offsetof(gf_sg2_snap_net, mapping_layers)},
      {"channel_base", offsetof(gf_sg2_snap_net, channel_base)},
      {"synthesis_kwargs.channel_base", offsetof(gf_sg2_snap_net, channel_base)},
      {"channel_max", offsetof(gf_sg2_snap_net, channel_max)},
      {"synthesis_kwargs.channel_max", offsetof(gf_sg2_snap_net, channel_max)},
      {"num_fp16_res", offsetof(gf_sg2_snap_net, num_fp16_res)},
      {"synthesis_kwargs.num_fp16_res", offsetof(gf_sg2_snap_net, num_fp16_res)},
      {"conv_clamp", offsetof(gf_sg2_snap_net, conv_clamp)},
      {"synthesis_kwargs.conv_clamp", offsetof(gf_sg2_snap_net, conv_clamp)},
      {"epilogue_kwargs.mbstd_group_size",
       offsetof(gf_sg2_snap_net, mbstd_group_size)},
      {"epilogue_kwargs.mbstd_num_channels",
       offsetof(gf_sg2_snap_net, mbstd_num_channels)},
  };
  if (strcmp(key, "architecture") == 0 ||
      strcmp(key, "synthesis_kwargs.architecture") == 0) {
    if (v->kind != GF_PK_STR || v->len >= sizeof n->architecture) return 0;
    memcpy(n->architecture, v->s, v->len + 1);
    return 1;
  }
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (strcmp(key, ints[i].key) != 0) continue;
    if (v->kind == GF_PK_NONE) {
      if (!strstr(key, "conv_clamp") && !strstr(key, "mbstd_group_size"))
        return 0;
      *(int64_t *)((char *)n + ints[i].off) = -1;
      return 1;
    }
    if (v->kind != GF_PK_INT || v->i < 0) return 0; /* kept as text in extra */
    *(int64_t *)((char *)n + ints[i].off) = v->i;
    return 1;
  }
  return 0;
}

static gf_status read_kwargs(sg_ctx *c, gf_sg2_snap_net *n, const gf_pk_value *kw) {
  int is_g = strcmp(n->class_name, "Generator") == 0;
  int is_d = strcmp(n->class_name, "Discriminator") == 0;
  n->z_dim = n->c_dim = n->w_dim = n->img_resolution = n->img_channels = -1;
  n->mapping_layers = n->channel_base = n->channel_max = n->num_fp16_res = -1;
  n->conv_clamp = n->mbstd_group_size = n->mbstd_num_channels = -1;
  if (is_g || is_d) {
    n->channel_base = 32768;
    n->channel_max = 512;
    n->num_fp16_res = 0;
    GF_FORMAT_FITS(n->architecture, sizeof n->architecture, "%s",
                   is_g ? "skip" : "resnet");
  }
  if (is_g) n->mapping_layers = 8;
  if (is_d) {
    n->mbstd_group_size = 4;
    n->mbstd_num_channels = 1;
  }
  if (!kw) return GF_OK;
  const gf_pk_seq *e = entries(kw);
  if (!e)
    return gf_fail(c->err, GF_EFORMAT, "%s: _init_kwargs is a %s, not a dict",
                   c->net, gf_pk_kind_name(kw->kind));
  for (size_t i = 0; i + 1 < e->n; i += 2) {
    char buf[96], key[200];
    const gf_pk_value *k = e->v[i], *v = e->v[i + 1];
    if (k->kind != GF_PK_STR || k->len > 64)
      return gf_fail(c->err, GF_EFORMAT, "%s: a bad _init_kwargs key", c->net);
    const gf_pk_seq *sub = entries(v);
    if (!sub) {
      if (!known(n, shown(k, key, sizeof key), v))
        GF_TRY(add_extra(c, n, key, v));
      continue;
    }
    if (sub->n == 0) GF_TRY(add_extra(c, n, shown(k, buf, sizeof buf), NULL));
    for (size_t j = 0; j + 1 < sub->n; j += 2) { /* one level of nesting */
      const gf_pk_value *k2 = sub->v[j], *v2 = sub->v[j + 1];
      char b2[96];
      if (k2->kind != GF_PK_STR || k2->len > 64)
        return gf_fail(c->err, GF_EFORMAT, "%s: a bad _init_kwargs key",
                       c->net);
      /* fits: two shown keys of at most 96 bytes each */
      GF_FORMAT_FITS(key, sizeof key, "%s.%s", shown(k, buf, sizeof buf),
                     shown(k2, b2, sizeof b2));
      if (!known(n, key, v2)) GF_TRY(add_extra(c, n, key, v2));
    }
  }
  return GF_OK;
}

gf_status gf_sg2_snapshot_parse(const uint8_t *buf, size_t len,
                                gf_sg2_snapshot *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  sg_ctx c = {.len = len, .err = err};
  gf_pk_opts_default(&c.outer);
  c.outer.allow = k_outer_allow;
  c.outer.n_allow = sizeof k_outer_allow / sizeof k_outer_allow[0];
  gf_pk_opts_default(&c.inner);
  for (size_t i = 0; i < N_STORAGES; i++)
    c.inner_allow[i] = k_storages[i].global;
  c.inner.allow = c.inner_allow;
  c.inner.n_allow = N_STORAGES;
  c.inner.allow_persid = 1;
  GF_TRY(gf_pk_doc_new(&c.doc, err));
  gf_pk_value *root = NULL;
  gf_status st = gf_pk_parse(c.doc, buf, len, &c.outer, &root, NULL, err);
  if (st == GF_OK && root->kind != GF_PK_DICT)
    st = gf_fail(err, GF_EFORMAT,
                 "not a StyleGAN2-ADA snapshot: the pickle is a %s, not a "
                 "dict",
                 gf_pk_kind_name(root->kind));
  if (st == GF_OK && !gf_pk_get(root, "G_ema"))
    st = gf_fail(err, GF_EFORMAT,
                 "not a StyleGAN2-ADA snapshot: no key 'G_ema'");
  struct {
    const char *key;
    gf_sg2_snap_net *net;
  } nets[] = {{"G", &out->G},
              {"D", &out->D},
              {"G_ema", &out->G_ema},
              {"augment_pipe", &out->augment_pipe}};
  for (size_t i = 0; i < 4 && st == GF_OK; i++) {
    const gf_pk_value *v = gf_pk_get(root, nets[i].key);
    if (!v || v->kind == GF_PK_NONE) continue;
    c.net = nets[i].key;
    nets[i].net->present = 1;
    st = walk_module(&c, nets[i].net, v, "", 0);
  }
  if (st == GF_OK && out->augment_pipe.present) {
    const gf_sg2_snap_tensor *p = gf_sg2_snap_find(&out->augment_pipe, "p");
    if (p && p->numel == 1) {
      out->has_augment_p = 1;
      out->augment_p = p->data[0];
    }
  }
  gf_pk_doc_free(c.doc);
  if (st != GF_OK) gf_sg2_snapshot_free(out);
  return st;
}

gf_status gf_sg2_snapshot_read(const char *path, gf_sg2_snapshot *out,
                               gf_err *err) {
  memset(out, 0, sizeof *out);
  char *data = NULL;
  size_t len = 0;
  GF_TRY(gf_read_file(path, GF_SG2_MAX_FILE, &data, &len, err));
  gf_err e;
  gf_status st = gf_sg2_snapshot_parse((const uint8_t *)data, len, out, &e);
  free(data);
  if (st != GF_OK) return gf_fail(err, st, "%s: %s", path, e.msg);
  return GF_OK;
}
