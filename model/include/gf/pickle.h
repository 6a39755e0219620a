/* pickle.h - a restricted unpickler: Python pickle streams (protocols 2-5)
 * read into a value tree, executing nothing.
 *
 * The opcodes are the ones pickle.dump and torch.save (legacy format) emit
 * for plain data, containers and objects reduced to a global call:
 *   PROTO FRAME STOP MARK POP POP_MARK DUP
 *   NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 LONG1 LONG4 BINFLOAT
 *   SHORT_BINUNICODE BINUNICODE BINUNICODE8 SHORT_BINBYTES BINBYTES BINBYTES8
 *   EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_LIST LIST APPEND APPENDS
 *   EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET
 *   GLOBAL STACK_GLOBAL REDUCE NEWOBJ BUILD BINPERSID (when allowed)
 *   BINGET LONG_BINGET BINPUT LONG_BINPUT MEMOIZE
 * Anything else (the text protocol 0 opcodes, INST/OBJ, EXT*, NEWOBJ_EX,
 * out-of-band buffers) is refused with GF_EUNSUPPORTED.
 *
 * Nothing is imported or called. GLOBAL and STACK_GLOBAL only name
 * something; the name must be on the caller's allow-list ("module.name",
 * exact), else GF_EINVAL "pickle: global os.system is not allowed (byte N)".
 * REDUCE and NEWOBJ of an allowed global make a CALL node (the global, the
 * argument tuple); BUILD attaches its state to a CALL node, and SETITEM(S)
 * / APPEND(S) onto a CALL node (an OrderedDict, a dict or list subclass)
 * are recorded as its kv / items. A REDUCE of anything but a global is
 * refused.
 *
 * Every length is checked against the input left ("truncated at byte N"),
 * and the opts' limits bound the nesting depth, the stack, the mark stack,
 * the memo, the node count and string/bytes lengths. The parser keeps no
 * global state, never prints and never exits.
 *
 * Values live in a gf_pk_doc (one arena): gf_pk_doc_free frees every value
 * of every pickle parsed into it at once. BYTES values (and BIGINT bytes)
 * point into the caller's input buffer, which must outlive the doc; strings
 * are NUL-terminated copies in the arena.
 *
 * The result is a graph, not always a tree: a memoized value may be
 * referenced many times, and a container mutated after it was referenced
 * (APPEND of a list onto itself) can make a cycle. The depth limit holds
 * for values as built; walkers of untrusted input must still bound their
 * own recursion and work. */
#ifndef GF_PICKLE_H
#define GF_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

typedef enum gf_pk_kind {
  GF_PK_NONE,
  GF_PK_BOOL,   /* i: 0 or 1 */
  GF_PK_INT,    /* i: fits int64 */
  GF_PK_BIGINT, /* s/len: little-endian two's complement, more than 8 bytes */
  GF_PK_FLOAT,  /* f */
  GF_PK_STR,    /* s/len: UTF-8 as stored (not validated), NUL-terminated */
  GF_PK_BYTES,  /* s/len: into the input buffer */
  GF_PK_TUPLE,  /* items */
  GF_PK_LIST,   /* items */
  GF_PK_SET,    /* items (set and frozenset) */
  GF_PK_DICT,   /* kv: key, value, key, value... in insertion order */
  GF_PK_GLOBAL, /* module, name: an allowed global */
  GF_PK_CALL,   /* callee (a GLOBAL), args (a TUPLE), state (BUILD or NULL),
                   items (APPEND(S) onto it), kv (SETITEM(S) onto it) */
  GF_PK_PERSID, /* args: the persistent id (BINPERSID) */
} gf_pk_kind;

typedef struct gf_pk_value gf_pk_value;

typedef struct gf_pk_seq {
  gf_pk_value **v;
  size_t n, cap;
} gf_pk_seq;

struct gf_pk_value {
  gf_pk_kind kind;
  uint32_t depth; /* 1 + the deepest child's depth when built */
  size_t offset;  /* byte offset of the opcode that made it */
  int64_t i;
  double f;
  const char *s; /* STR, BYTES, BIGINT */
  size_t len;
  const char *module, *name;          /* GLOBAL */
  gf_pk_value *callee, *args, *state; /* CALL; args also PERSID */
  gf_pk_seq items;                    /* TUPLE, LIST, SET, CALL */
  gf_pk_seq kv;                       /* DICT, CALL: 2 entries per item */
};

typedef struct gf_pk_limits {
  size_t max_depth; /* value nesting, 200 */
  size_t max_stack; /* stack entries, 1 << 20 */
  size_t max_marks; /* open MARKs, 256 */
  size_t max_memo;  /* memo entries, 1 << 22 */
  size_t max_nodes; /* values per doc (all pickles parsed into it), 1 << 24 */
  size_t max_str;   /* one STR's bytes, 64 MiB */
  size_t max_bytes; /* one BYTES' length, 4 GiB (or SIZE_MAX / 2) */
} gf_pk_limits;

typedef struct gf_pk_opts {
  const char *const *allow; /* "module.name" entries the stream may name */
  size_t n_allow;
  int allow_persid; /* BINPERSID makes PERSID nodes; else refused */
  gf_pk_limits limits;
} gf_pk_opts;

/* The default limits above, no globals allowed, no persistent ids. */
void gf_pk_opts_default(gf_pk_opts *o);

typedef struct gf_pk_doc gf_pk_doc;

/* A new empty doc; *out is the caller's, freed with gf_pk_doc_free. */
gf_status gf_pk_doc_new(gf_pk_doc **out, gf_err *err);
/* Frees the doc and every value parsed into it; NULL is fine. */
void gf_pk_doc_free(gf_pk_doc *d);

/* Parses one pickle (through its STOP) from buf[0..len) into doc: *root is
 * the value left on the stack, owned by doc; *used (may be NULL) the bytes
 * read, STOP included, for streams that hold several pickles back to back.
 * Byte offsets in messages and values are relative to buf. On failure
 * *root is NULL; what was already built stays in doc until it is freed. */
gf_status gf_pk_parse(gf_pk_doc *doc, const uint8_t *buf, size_t len,
                      const gf_pk_opts *opts, gf_pk_value **root, size_t *used,
                      gf_err *err);

/* "none", "int", "dict"...; never NULL. */
const char *gf_pk_kind_name(gf_pk_kind k);
/* The value for the STR key `key` in a DICT's or CALL's kv, the last one
 * when repeated (as Python's dict keeps it); NULL when absent or v is
 * neither. */
const gf_pk_value *gf_pk_get(const gf_pk_value *v, const char *key);
/* 1 when v is the GLOBAL module.name or a CALL of it; else 0. */
int gf_pk_is(const gf_pk_value *v, const char *module, const char *name);
/* 1 when v is a STR equal to s. */
int gf_pk_str_eq(const gf_pk_value *v, const char *s);

#endif
