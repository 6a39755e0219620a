/* yaml_tree.h - internal to gf_model: a bounded YAML document reader
 * (libyaml events -> small tree) and an emitter helper for the MLmodel
 * file. Only what MLmodel needs: one document of mappings, sequences and
 * scalars; aliases, non-scalar keys, duplicate keys, deep nesting and
 * oversized input are rejected. Not a general YAML API. */
#ifndef GF_MODEL_YAML_TREE_H
#define GF_MODEL_YAML_TREE_H

#include <stddef.h>

#include "gf/status.h"

#define GF_YAML_MAX_BYTES (1u << 20) /* 1 MiB */
#define GF_YAML_MAX_DEPTH 32         /* nested collections */
#define GF_YAML_MAX_NODES 10000
#define GF_YAML_MAX_ENTRIES 1024   /* per mapping or sequence */

typedef enum gf_ynode_kind { GF_YN_SCALAR, GF_YN_MAP, GF_YN_SEQ } gf_ynode_kind;

/* A node and everything below it is owned by its parent; the root by the
 * caller (gf_ynode_free). */
typedef struct gf_ynode {
  gf_ynode_kind kind;
  char *text;              /* scalar: NUL-terminated, no embedded NUL */
  int plain;               /* scalar: 1 when unquoted (may be a number) */
  size_t n;                /* map/seq: entries */
  char **keys;             /* map: n keys (unique) */
  struct gf_ynode **items; /* map/seq: n children */
} gf_ynode;

/* Parses len bytes (need not be NUL-terminated) into a tree; *root is the
 * caller's to free with gf_ynode_free. GF_EFORMAT on anything malformed or
 * beyond the limits, with the line number where libyaml knows it. */
gf_status gf_yaml_parse(const char *buf, size_t len, gf_ynode **root, gf_err *err);
void gf_ynode_free(gf_ynode *n); /* accepts NULL */
/* The value of key in a map node, or NULL (also when n is not a map). */
const gf_ynode *gf_ynode_get(const gf_ynode *n, const char *key);
/* 1 for a plain null scalar ("", "~", "null", "Null", "NULL"). */
int gf_ynode_is_null(const gf_ynode *n);

#endif
