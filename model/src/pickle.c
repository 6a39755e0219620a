/* pickle.c - the restricted unpickler (see gf/pickle.h): a stack machine
 * over the input bytes that builds values in an arena and calls nothing. */
#include "gf/pickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"

/* ---- the arena ---- */

typedef struct pk_block {
  struct pk_block *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} pk_block;

struct gf_pk_doc {
  pk_block *blocks;
  size_t n_nodes;
};

gf_status gf_pk_doc_new(gf_pk_doc **out, gf_err *err) {
  *out = calloc(1, sizeof **out);
  if (!*out) return gf_fail(err, GF_ENOMEM, "pickle: out of memory");
  return GF_OK;
}

void gf_pk_doc_free(gf_pk_doc *d) {
  if (!d) return;
  pk_block *b = d->blocks;
  while (b) {
    pk_block *next = b->next;
    free(b);
    b = next;
  }
  free(d);
}

/* n bytes, 16-aligned, zeroed, owned by d; NULL when out of memory. */
static void *arena_alloc(gf_pk_doc *d, size_t n) {
  n = (n + 15u) & ~(size_t)15u;
  if (n == 0) n = 16;
  pk_block *b = d->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = 64u * 1024u;
    if (n > cap / 4) cap = n; /* a big one gets a block of its own */
    if (cap > SIZE_MAX - sizeof *b) return NULL;
    pk_block *nb = malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->used = 0;
    nb->cap = cap;
    if (b && cap == n) { /* keep filling the current block afterwards */
      nb->next = b->next;
      b->next = nb;
      b = nb;
    } else {
      nb->next = b;
      d->blocks = nb;
      b = nb;
    }
  }
  void *p = b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

/* ---- the machine ---- */

enum {
  OP_MARK = '(',
  OP_STOP = '.',
  OP_POP = '0',
  OP_POP_MARK = '1',
  OP_DUP = '2',
  OP_BINFLOAT = 'G',
  OP_BININT = 'J',
  OP_BININT1 = 'K',
  OP_BININT2 = 'M',
  OP_NONE = 'N',
  OP_BINPERSID = 'Q',
  OP_REDUCE = 'R',
  OP_BINUNICODE = 'X',
  OP_APPEND = 'a',
  OP_BUILD = 'b',
  OP_GLOBAL = 'c',
  OP_DICT = 'd',
  OP_EMPTY_DICT = '}',
  OP_APPENDS = 'e',
  OP_BINGET = 'h',
  OP_LONG_BINGET = 'j',
  OP_LIST = 'l',
  OP_EMPTY_LIST = ']',
  OP_BINPUT = 'q',
  OP_LONG_BINPUT = 'r',
  OP_SETITEM = 's',
  OP_TUPLE = 't',
  OP_EMPTY_TUPLE = ')',
  OP_SETITEMS = 'u',
  OP_BINBYTES = 'B',
  OP_SHORT_BINBYTES = 'C',
  OP_PROTO = 0x80,
  OP_NEWOBJ = 0x81,
  OP_TUPLE1 = 0x85,
  OP_TUPLE2 = 0x86,
  OP_TUPLE3 = 0x87,
  OP_NEWTRUE = 0x88,
  OP_NEWFALSE = 0x89,
  OP_LONG1 = 0x8a,
  OP_LONG4 = 0x8b,
  OP_SHORT_BINUNICODE = 0x8c,
  OP_BINUNICODE8 = 0x8d,
  OP_BINBYTES8 = 0x8e,
  OP_EMPTY_SET = 0x8f,
  OP_ADDITEMS = 0x90,
  OP_FROZENSET = 0x91,
  OP_STACK_GLOBAL = 0x93,
  OP_MEMOIZE = 0x94,
  OP_FRAME = 0x95,
};

typedef struct pk_vm {
  gf_pk_doc *doc;
  const gf_pk_opts *o;
  const uint8_t *buf;
  size_t len, pos, op_at; /* op_at: the current opcode's offset */
  gf_pk_value **stack;
  size_t sp, stack_cap;
  size_t *marks;
  size_t n_marks, marks_cap;
  gf_pk_value **memo;
  size_t n_memo, memo_cap;
  gf_err *err;
} pk_vm;

static gf_status oom(pk_vm *m) {
  return gf_fail(m->err, GF_ENOMEM, "pickle: out of memory at byte %zu",
                 m->op_at);
}

static gf_status bad(pk_vm *m, const char *what) {
  return gf_fail(m->err, GF_EFORMAT, "pickle: %s (opcode 0x%02x at byte %zu)",
                 what, m->buf[m->op_at], m->op_at);
}

/* The next n bytes of the input; NULL (err filled) when fewer are left. */
static const uint8_t *take(pk_vm *m, size_t n, gf_status *st) {
  if (n > m->len - m->pos) {
    if (m->pos == m->op_at) /* the opcode itself */
      *st = gf_fail(m->err, GF_EFORMAT,
                    "pickle: truncated at byte %zu (no STOP)", m->len);
    else
      *st = gf_fail(m->err, GF_EFORMAT,
                    "pickle: truncated at byte %zu (opcode 0x%02x at byte %zu "
                    "needs %zu more bytes)",
                    m->len, m->buf[m->op_at], m->op_at, n);
    return NULL;
  }
  const uint8_t *p = m->buf + m->pos;
  m->pos += n;
  *st = GF_OK;
  return p;
}

static uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

static gf_pk_value *node(pk_vm *m, gf_pk_kind k) {
  if (m->doc->n_nodes >= m->o->limits.max_nodes) return NULL;
  gf_pk_value *v = arena_alloc(m->doc, sizeof *v);
  if (!v) return NULL;
  m->doc->n_nodes++;
  v->kind = k;
  v->depth = 1;
  v->offset = m->op_at;
  return v;
}

/* node() failed: the node limit or memory. */
static gf_status node_fail(pk_vm *m) {
  if (m->doc->n_nodes >= m->o->limits.max_nodes)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: more than %zu values (byte %zu)",
                   m->o->limits.max_nodes, m->op_at);
  return oom(m);
}

/* arr (n entries used of *cap, each size bytes, malloc'd), doubled (first
 * 64) when full: the array to use from now on, or NULL when out of memory
 * (arr is then left as it was). */
static void *room(void *arr, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return arr;
  size_t c = *cap ? *cap * 2 : 64;
  void *q = realloc(arr, c * size);
  if (q) *cap = c;
  return q;
}

static gf_status push(pk_vm *m, gf_pk_value *v) {
  if (m->sp == m->stack_cap && m->sp >= m->o->limits.max_stack)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: stack deeper than %zu (byte %zu)",
                   m->o->limits.max_stack, m->op_at);
  gf_pk_value **st = room(m->stack, m->sp, &m->stack_cap, sizeof *st);
  if (!st) return oom(m);
  m->stack = st;
  m->stack[m->sp++] = v;
  return GF_OK;
}

static gf_status push_new(pk_vm *m, gf_pk_kind k, gf_pk_value **out) {
  gf_pk_value *v = node(m, k);
  if (!v) return node_fail(m);
  if (out) *out = v;
  return push(m, v);
}

/* The top n entries exist above the innermost mark (or the bottom). */
static gf_status need(pk_vm *m, size_t n) {
  size_t floor = m->n_marks ? m->marks[m->n_marks - 1] : 0;
  if (m->sp - floor < n) return bad(m, "stack underflow");
  return GF_OK;
}

static gf_status pop_mark(pk_vm *m, size_t *at) {
  if (m->n_marks == 0) return bad(m, "no MARK to pop");
  *at = m->marks[--m->n_marks];
  return GF_OK;
}

/* Depth of c after holding child; refuses past the limit. */
static gf_status deepen(pk_vm *m, gf_pk_value *c, const gf_pk_value *child) {
  if (child->depth + 1u > c->depth) c->depth = child->depth + 1u;
  if (c->depth > m->o->limits.max_depth)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: values nested deeper than %zu (byte %zu)",
                   m->o->limits.max_depth, m->op_at);
  return GF_OK;
}

static gf_status seq_add(pk_vm *m, gf_pk_value *c, gf_pk_seq *s,
                         gf_pk_value *v) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4;
    gf_pk_value **nv = arena_alloc(m->doc, cap * sizeof *nv);
    if (!nv) return oom(m);
    if (s->n) memcpy(nv, s->v, s->n * sizeof *nv);
    s->v = nv;
    s->cap = cap;
  }
  s->v[s->n++] = v;
  return deepen(m, c, v);
}

/* A container of kind k from stack[from..sp), which are popped. */
static gf_status collect(pk_vm *m, gf_pk_kind k, size_t from) {
  gf_pk_value *v = node(m, k);
  if (!v) return node_fail(m);
  gf_status st = GF_OK;
  if (k == GF_PK_DICT && (m->sp - from) % 2)
    return bad(m, "odd number of items for a dict");
  gf_pk_seq *s = k == GF_PK_DICT ? &v->kv : &v->items;
  for (size_t i = from; i < m->sp && st == GF_OK; i++)
    st = seq_add(m, v, s, m->stack[i]);
  if (st != GF_OK) return st;
  m->sp = from;
  return push(m, v);
}

static gf_status memo_put(pk_vm *m, uint64_t idx) {
  if (m->sp == 0) return bad(m, "memo store of an empty stack");
  if (idx > m->n_memo)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: memo index %llu out of range (%zu so far, "
                   "byte %zu)",
                   (unsigned long long)idx, m->n_memo, m->op_at);
  if (idx == m->n_memo) {
    if (m->n_memo >= m->o->limits.max_memo)
      return gf_fail(m->err, GF_EFORMAT,
                     "pickle: more than %zu memo entries (byte %zu)",
                     m->o->limits.max_memo, m->op_at);
    gf_pk_value **mm = room(m->memo, m->n_memo, &m->memo_cap, sizeof *mm);
    if (!mm) return oom(m);
    m->memo = mm;
    m->n_memo++;
  }
  m->memo[idx] = m->stack[m->sp - 1];
  return GF_OK;
}

static gf_status memo_get(pk_vm *m, uint64_t idx) {
  if (idx >= m->n_memo)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: memo index %llu out of range (%zu so far, "
                   "byte %zu)",
                   (unsigned long long)idx, m->n_memo, m->op_at);
  return push(m, m->memo[idx]);
}

/* An arena copy of n bytes, NUL-terminated. */
static const char *dup_text(pk_vm *m, const uint8_t *p, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *s = arena_alloc(m->doc, n + 1);
  if (!s) return NULL;
  if (n) memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

/* A length (nlen bytes, little-endian) then that many bytes: *p, *n. A
 * length over limit is refused as "<what> of N bytes". */
static gf_status take_sized(pk_vm *m, size_t nlen, size_t limit,
                            const char *what, const uint8_t **p, size_t *n) {
  gf_status st;
  const uint8_t *q = take(m, nlen, &st);
  if (!q) return st;
  uint64_t len = le(q, nlen);
  if (len > limit)
    return gf_fail(m->err, GF_EFORMAT,
                   "pickle: %s of %llu bytes at byte %zu, more than %zu "
                   "allowed",
                   what, (unsigned long long)len, m->op_at, limit);
  *n = (size_t)len;
  *p = take(m, *n, &st);
  return *p ? GF_OK : st;
}

/* STR (copied, NUL-terminated), BYTES (borrowed) and LONG payloads. */
static gf_status op_sized(pk_vm *m, gf_pk_kind k, size_t nlen) {
  const uint8_t *p = NULL;
  size_t n = 0;
  const gf_pk_limits *l = &m->o->limits;
  GF_TRY(take_sized(m, nlen, k == GF_PK_BYTES ? l->max_bytes : l->max_str,
                    k == GF_PK_STR     ? "string"
                    : k == GF_PK_BYTES ? "bytes"
                                       : "integer",
                    &p, &n));
  if (k == GF_PK_INT && n > 8) k = GF_PK_BIGINT;
  gf_pk_value *v;
  GF_TRY(push_new(m, k, &v));
  v->len = n;
  if (k == GF_PK_STR) {
    v->s = dup_text(m, p, n);
    if (!v->s) return oom(m);
  } else if (k == GF_PK_INT) {
    uint64_t u = n ? le(p, n) : 0;
    if (n && n < 8 && (p[n - 1] & 0x80))
      u |= ~(uint64_t)0 << (8 * n); /* sign */
    memcpy(&v->i, &u, sizeof u);
    v->len = 0;
  } else {
    v->s = (const char *)p;
  }
  return GF_OK;
}

static int allowed(const gf_pk_opts *o, const char *mod, const char *name) {
  size_t lm = strlen(mod);
  for (size_t i = 0; i < o->n_allow; i++) {
    const char *a = o->allow[i];
    if (a && strncmp(a, mod, lm) == 0 && a[lm] == '.' &&
        strcmp(a + lm + 1, name) == 0)
      return 1;
  }
  return 0;
}

/* A printable copy of an untrusted name for messages. */
static void clean(char *dst, size_t cap, const char *s) {
  size_t k = 0;
  for (; s[k] && k + 1 < cap; k++)
    dst[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
  dst[k] = '\0';
}

static gf_status push_global(pk_vm *m, const char *mod, const char *name) {
  if (!allowed(m->o, mod, name)) {
    char cm[96], cn[96];
    clean(cm, sizeof cm, mod);
    clean(cn, sizeof cn, name);
    return gf_fail(m->err, GF_EINVAL,
                   "pickle: global %s.%s is not allowed (byte %zu)", cm, cn,
                   m->op_at);
  }
  gf_pk_value *v;
  GF_TRY(push_new(m, GF_PK_GLOBAL, &v));
  v->module = mod;
  v->name = name;
  return GF_OK;
}

/* GLOBAL: "module\nname\n" as text lines. */
static gf_status op_global(pk_vm *m) {
  const char *parts[2];
  for (int k = 0; k < 2; k++) {
    const uint8_t *s = m->buf + m->pos;
    const uint8_t *nl = memchr(s, '\n', m->len - m->pos);
    if (!nl)
      return gf_fail(m->err, GF_EFORMAT,
                     "pickle: truncated at byte %zu (GLOBAL at byte %zu "
                     "without its newline)",
                     m->len, m->op_at);
    size_t n = (size_t)(nl - s);
    if (n > 255 || memchr(s, '\0', n))
      return bad(m, "GLOBAL name longer than 255 bytes or with a NUL");
    parts[k] = dup_text(m, s, n);
    if (!parts[k]) return oom(m);
    m->pos += n + 1;
  }
  return push_global(m, parts[0], parts[1]);
}

static gf_status op_stack_global(pk_vm *m) {
  GF_TRY(need(m, 2));
  gf_pk_value *mod = m->stack[m->sp - 2], *name = m->stack[m->sp - 1];
  if (mod->kind != GF_PK_STR || name->kind != GF_PK_STR)
    return bad(m, "STACK_GLOBAL of non-strings");
  if (strlen(mod->s) != mod->len || strlen(name->s) != name->len)
    return bad(m, "STACK_GLOBAL name with a NUL");
  m->sp -= 2;
  return push_global(m, mod->s, name->s);
}

static gf_status op_call(pk_vm *m) {
  GF_TRY(need(m, 2));
  gf_pk_value *f = m->stack[m->sp - 2], *a = m->stack[m->sp - 1];
  if (f->kind != GF_PK_GLOBAL)
    return bad(m, "REDUCE/NEWOBJ of something not a global");
  if (a->kind != GF_PK_TUPLE)
    return bad(m, "REDUCE/NEWOBJ arguments not a tuple");
  m->sp -= 2;
  gf_pk_value *v = node(m, GF_PK_CALL);
  if (!v) return node_fail(m);
  v->callee = f;
  v->args = a;
  GF_TRY(deepen(m, v, a));
  return push(m, v);
}

/* APPEND(S) / SETITEM(S) / ADDITEMS of stack[from..sp) onto stack[from-1]. */
static gf_status op_extend(pk_vm *m, size_t from, int pairs) {
  if (from == 0) return bad(m, "nothing to add items to");
  gf_pk_value *c = m->stack[from - 1];
  gf_pk_seq *s = NULL;
  if (pairs) {
    if ((m->sp - from) % 2) return bad(m, "odd number of items for SETITEMS");
    if (c->kind == GF_PK_DICT || c->kind == GF_PK_CALL) s = &c->kv;
  } else if (c->kind == GF_PK_LIST || c->kind == GF_PK_CALL ||
             c->kind == GF_PK_SET) {
    s = &c->items;
  }
  if (!s) {
    char what[64];
    GF_FORMAT_FITS(what, sizeof what, "cannot add items to a %s",
                   gf_pk_kind_name(c->kind));
    return bad(m, what);
  }
  for (size_t i = from; i < m->sp; i++) GF_TRY(seq_add(m, c, s, m->stack[i]));
  m->sp = from;
  return GF_OK;
}

static gf_status step(pk_vm *m, int *done) {
  gf_status st;
  m->op_at = m->pos;
  const uint8_t *p = take(m, 1, &st);
  if (!p) return st;
  size_t at = 0;
  gf_pk_value *v;
  switch (*p) {
  case OP_PROTO:
    if (!(p = take(m, 1, &st))) return st;
    if (*p < 2 || *p > 5) return bad(m, "protocol not 2 to 5");
    return GF_OK;
  case OP_FRAME: /* framing is advisory: the opcodes inside are read as usual */
    return take(m, 8, &st) ? GF_OK : st;
  case OP_STOP:
    if (m->n_marks) return bad(m, "STOP with an open MARK");
    if (m->sp != 1)
      return bad(m, "STOP without exactly one value on the stack");
    *done = 1;
    return GF_OK;
  case OP_MARK:
    if (m->n_marks >= m->o->limits.max_marks)
      return gf_fail(m->err, GF_EFORMAT,
                     "pickle: more than %zu open MARKs (byte %zu)",
                     m->o->limits.max_marks, m->op_at);
    size_t *mk = room(m->marks, m->n_marks, &m->marks_cap, sizeof *mk);
    if (!mk) return oom(m);
    m->marks = mk;
    m->marks[m->n_marks++] = m->sp;
    return GF_OK;
  case OP_POP:
    if (m->n_marks && m->marks[m->n_marks - 1] == m->sp) { /* pops the mark */
      m->n_marks--;
      return GF_OK;
    }
    GF_TRY(need(m, 1));
    m->sp--;
    return GF_OK;
  case OP_POP_MARK:
    GF_TRY(pop_mark(m, &at));
    m->sp = at;
    return GF_OK;
  case OP_DUP: GF_TRY(need(m, 1)); return push(m, m->stack[m->sp - 1]);
  case OP_NONE: return push_new(m, GF_PK_NONE, NULL);
  case OP_NEWTRUE:
  case OP_NEWFALSE:
    GF_TRY(push_new(m, GF_PK_BOOL, &v));
    v->i = *p == OP_NEWTRUE;
    return GF_OK;
  case OP_BININT:
  case OP_BININT1:
  case OP_BININT2: {
    size_t n = *p == OP_BININT ? 4 : *p == OP_BININT1 ? 1 : 2;
    const uint8_t *q = take(m, n, &st);
    if (!q) return st;
    GF_TRY(push_new(m, GF_PK_INT, &v));
    v->i = n == 4 ? (int64_t)(int32_t)(uint32_t)le(q, 4) : (int64_t)le(q, n);
    return GF_OK;
  }
  case OP_LONG1: return op_sized(m, GF_PK_INT, 1);
  case OP_LONG4: return op_sized(m, GF_PK_INT, 4);
  case OP_BINFLOAT: {
    const uint8_t *q = take(m, 8, &st);
    if (!q) return st;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | q[i]; /* big-endian */
    GF_TRY(push_new(m, GF_PK_FLOAT, &v));
    memcpy(&v->f, &u, sizeof u);
    return GF_OK;
  }
  case OP_SHORT_BINUNICODE: return op_sized(m, GF_PK_STR, 1);
  case OP_BINUNICODE: return op_sized(m, GF_PK_STR, 4);
  case OP_BINUNICODE8: return op_sized(m, GF_PK_STR, 8);
  case OP_SHORT_BINBYTES: return op_sized(m, GF_PK_BYTES, 1);
  case OP_BINBYTES: return op_sized(m, GF_PK_BYTES, 4);
  case OP_BINBYTES8: return op_sized(m, GF_PK_BYTES, 8);
  case OP_EMPTY_TUPLE: return push_new(m, GF_PK_TUPLE, NULL);
  case OP_EMPTY_LIST: return push_new(m, GF_PK_LIST, NULL);
  case OP_EMPTY_DICT: return push_new(m, GF_PK_DICT, NULL);
  case OP_EMPTY_SET: return push_new(m, GF_PK_SET, NULL);
  case OP_TUPLE1:
  case OP_TUPLE2:
  case OP_TUPLE3: {
    size_t n = (size_t)(*p - OP_TUPLE1 + 1);
    GF_TRY(need(m, n));
    return collect(m, GF_PK_TUPLE, m->sp - n);
  }
  case OP_TUPLE: GF_TRY(pop_mark(m, &at)); return collect(m, GF_PK_TUPLE, at);
  case OP_LIST: GF_TRY(pop_mark(m, &at)); return collect(m, GF_PK_LIST, at);
  case OP_DICT: GF_TRY(pop_mark(m, &at)); return collect(m, GF_PK_DICT, at);
  case OP_FROZENSET: GF_TRY(pop_mark(m, &at)); return collect(m, GF_PK_SET, at);
  case OP_APPEND: GF_TRY(need(m, 2)); return op_extend(m, m->sp - 1, 0);
  case OP_SETITEM: GF_TRY(need(m, 3)); return op_extend(m, m->sp - 2, 1);
  case OP_APPENDS:
  case OP_ADDITEMS: GF_TRY(pop_mark(m, &at)); return op_extend(m, at, 0);
  case OP_SETITEMS: GF_TRY(pop_mark(m, &at)); return op_extend(m, at, 1);
  case OP_GLOBAL: return op_global(m);
  case OP_STACK_GLOBAL: return op_stack_global(m);
  case OP_REDUCE:
  case OP_NEWOBJ: return op_call(m);
  case OP_BUILD:
    GF_TRY(need(m, 2));
    v = m->stack[m->sp - 2];
    if (v->kind != GF_PK_CALL)
      return bad(m, "BUILD of something not made by a call");
    if (v->state) return bad(m, "second BUILD of one object");
    v->state = m->stack[m->sp - 1];
    GF_TRY(deepen(m, v, v->state));
    m->sp--;
    return GF_OK;
  case OP_BINPERSID:
    if (!m->o->allow_persid)
      return bad(m, "persistent ids are not allowed here");
    GF_TRY(need(m, 1));
    v = node(m, GF_PK_PERSID);
    if (!v) return node_fail(m);
    v->args = m->stack[m->sp - 1];
    GF_TRY(deepen(m, v, v->args));
    m->stack[m->sp - 1] = v;
    return GF_OK;
  case OP_BINGET:
  case OP_LONG_BINGET: {
    size_t n = *p == OP_BINGET ? 1 : 4;
    const uint8_t *q = take(m, n, &st);
    if (!q) return st;
    return memo_get(m, le(q, n));
  }
  case OP_BINPUT:
  case OP_LONG_BINPUT: {
    size_t n = *p == OP_BINPUT ? 1 : 4;
    const uint8_t *q = take(m, n, &st);
    if (!q) return st;
    return memo_put(m, le(q, n));
  }
  case OP_MEMOIZE: return memo_put(m, m->n_memo);
  default:
    return gf_fail(m->err, GF_EUNSUPPORTED,
                   "pickle: opcode 0x%02x at byte %zu is not "
                   "supported",
                   *p, m->op_at);
  }
}

gf_status gf_pk_parse(gf_pk_doc *doc, const uint8_t *buf, size_t len,
                      const gf_pk_opts *opts, gf_pk_value **root, size_t *used,
                      gf_err *err) {
  *root = NULL;
  if (used) *used = 0;
  if (!doc || !opts || (!buf && len))
    return gf_fail(err, GF_EINVAL, "pickle: NULL argument");
  pk_vm m = {.doc = doc, .o = opts, .buf = buf, .len = len, .err = err};
  gf_status st = GF_OK;
  int done = 0;
  if (len == 0)
    st = gf_fail(err, GF_EFORMAT, "pickle: truncated at byte 0 (empty input)");
  while (st == GF_OK && !done) st = step(&m, &done);
  if (st == GF_OK) {
    *root = m.stack[0];
    if (used) *used = m.pos;
  }
  free(m.stack);
  free(m.marks);
  free(m.memo);
  return st;
}

void gf_pk_opts_default(gf_pk_opts *o) {
  memset(o, 0, sizeof *o);
  o->limits.max_depth = 200;
  o->limits.max_stack = (size_t)1 << 20;
  o->limits.max_marks = 256;
  o->limits.max_memo = (size_t)1 << 22;
  o->limits.max_nodes = (size_t)1 << 24;
  o->limits.max_str = (size_t)64 << 20;
  o->limits.max_bytes = SIZE_MAX / 2 < ((uint64_t)4 << 30)
                            ? SIZE_MAX / 2
                            : (size_t)((uint64_t)4 << 30);
}

const char *gf_pk_kind_name(gf_pk_kind k) {
  static const char *const names[] = {"none",  "bool",  "int",   "bigint",
                                      "float", "str",   "bytes", "tuple",
                                      "list",  "set",   "dict",  "global",
                                      "call",  "persid"};
  if ((unsigned)k >= sizeof names / sizeof names[0]) return "?";
  return names[k];
}

int gf_pk_str_eq(const gf_pk_value *v, const char *s) {
  return v && v->kind == GF_PK_STR && strlen(s) == v->len &&
         memcmp(v->s, s, v->len) == 0;
}

const gf_pk_value *gf_pk_get(const gf_pk_value *v, const char *key) {
  if (!v || (v->kind != GF_PK_DICT && v->kind != GF_PK_CALL)) return NULL;
  const gf_pk_value *hit = NULL;
  for (size_t i = 0; i + 1 < v->kv.n; i += 2)
    if (gf_pk_str_eq(v->kv.v[i], key)) hit = v->kv.v[i + 1];
  return hit;
}

int gf_pk_is(const gf_pk_value *v, const char *module, const char *name) {
  if (v && v->kind == GF_PK_CALL) v = v->callee;
  return v && v->kind == GF_PK_GLOBAL && strcmp(v->module, module) == 0 &&
         strcmp(v->name, name) == 0;
}
