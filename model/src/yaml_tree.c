/* yaml_tree.c - libyaml event stream -> bounded gf_ynode tree; see
 * yaml_tree.h. */
#include "yaml_tree.h"

#include <stdlib.h>
#include <string.h>

#include <yaml.h>

typedef struct ctx {
  yaml_parser_t parser;
  size_t nodes; /* nodes built so far, against GF_YAML_MAX_NODES */
  gf_err *err;
} ctx;

void gf_ynode_free(gf_ynode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) {
    if (n->keys) free(n->keys[i]);
    gf_ynode_free(n->items[i]);
  }
  free(n->keys);
  free(n->items);
  free(n->text);
  free(n);
}

static gf_status next_event(ctx *c, yaml_event_t *ev) {
  if (!yaml_parser_parse(&c->parser, ev)) {
    return gf_fail(c->err, GF_EFORMAT, "yaml: %s at line %lu column %lu",
                   c->parser.problem ? c->parser.problem : "parse error",
                   (unsigned long)c->parser.problem_mark.line + 1,
                   (unsigned long)c->parser.problem_mark.column + 1);
  }
  return GF_OK;
}

static gf_status fail_at(ctx *c, const yaml_event_t *ev, const char *what) {
  return gf_fail(c->err, GF_EFORMAT, "yaml: %s at line %lu", what,
                 (unsigned long)ev->start_mark.line + 1);
}

static gf_status push(ctx *c, gf_ynode *parent, char *key, gf_ynode *child) {
  if (parent->n >= GF_YAML_MAX_ENTRIES) {
    free(key);
    gf_ynode_free(child);
    return gf_fail(c->err, GF_EFORMAT, "yaml: more than %d entries in one collection",
                   GF_YAML_MAX_ENTRIES);
  }
  /* Capacity is 4, then doubles whenever n reaches a power of two. */
  if (parent->n == 0 || (parent->n >= 4 && (parent->n & (parent->n - 1)) == 0)) {
    size_t cap = parent->n ? parent->n * 2 : 4;
    gf_ynode **items = realloc(parent->items, cap * sizeof *items);
    if (items) parent->items = items;
    if (items && parent->kind == GF_YN_MAP) {
      char **keys = realloc(parent->keys, cap * sizeof *keys);
      if (keys) parent->keys = keys;
      else items = NULL;
    }
    if (!items) {
      free(key);
      gf_ynode_free(child);
      return gf_fail(c->err, GF_ENOMEM, "yaml: out of memory");
    }
  }
  if (parent->kind == GF_YN_MAP) parent->keys[parent->n] = key;
  parent->items[parent->n++] = child;
  return GF_OK;
}

/* Builds the node that starts with *ev (consumed here, also on failure). */
static gf_status build(ctx *c, yaml_event_t *ev, int depth, gf_ynode **out) {
  gf_status st = GF_OK;
  *out = NULL;
  if (++c->nodes > GF_YAML_MAX_NODES) {
    st = fail_at(c, ev, "too many nodes");
    yaml_event_delete(ev);
    return st;
  }
  gf_ynode *n = calloc(1, sizeof *n);
  if (!n) {
    yaml_event_delete(ev);
    return gf_fail(c->err, GF_ENOMEM, "yaml: out of memory");
  }
  switch (ev->type) {
  case YAML_SCALAR_EVENT: {
    size_t len = ev->data.scalar.length;
    n->kind = GF_YN_SCALAR;
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (memchr(ev->data.scalar.value, '\0', len)) {
      st = fail_at(c, ev, "NUL character in a scalar");
      break;
    }
    n->text = malloc(len + 1);
    if (!n->text) {
      st = gf_fail(c->err, GF_ENOMEM, "yaml: out of memory");
      break;
    }
    memcpy(n->text, ev->data.scalar.value, len);
    n->text[len] = '\0';
    break;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    int is_map = ev->type == YAML_MAPPING_START_EVENT;
    yaml_event_type_t end_type = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    n->kind = is_map ? GF_YN_MAP : GF_YN_SEQ;
    if (depth >= GF_YAML_MAX_DEPTH) {
      st = fail_at(c, ev, "nesting too deep");
      break;
    }
    for (;;) {
      yaml_event_t e;
      if ((st = next_event(c, &e)) != GF_OK) break;
      if (e.type == end_type) {
        yaml_event_delete(&e);
        break;
      }
      char *key = NULL;
      if (is_map) {
        if (e.type != YAML_SCALAR_EVENT) {
          st = fail_at(c, &e, "mapping key is not a scalar");
          yaml_event_delete(&e);
          break;
        }
        size_t klen = e.data.scalar.length;
        if (memchr(e.data.scalar.value, '\0', klen)) {
          st = fail_at(c, &e, "NUL character in a key");
          yaml_event_delete(&e);
          break;
        }
        for (size_t i = 0; i < n->n && st == GF_OK; i++)
          if (strlen(n->keys[i]) == klen && memcmp(n->keys[i], e.data.scalar.value, klen) == 0)
            st = fail_at(c, &e, "duplicate mapping key");
        key = st == GF_OK ? malloc(klen + 1) : NULL;
        if (st == GF_OK && !key) st = gf_fail(c->err, GF_ENOMEM, "yaml: out of memory");
        if (key) {
          memcpy(key, e.data.scalar.value, klen);
          key[klen] = '\0';
        }
        yaml_event_delete(&e);
        if (st != GF_OK) break;
        if ((st = next_event(c, &e)) != GF_OK) {
          free(key);
          break;
        }
      }
      gf_ynode *child;
      if ((st = build(c, &e, depth + 1, &child)) != GF_OK) {
        free(key);
        break;
      }
      if ((st = push(c, n, key, child)) != GF_OK) break;
    }
    break;
  }
  case YAML_ALIAS_EVENT:
    st = fail_at(c, ev, "aliases are not allowed");
    break;
  default:
    st = fail_at(c, ev, "unexpected event");
    break;
  }
  yaml_event_delete(ev);
  if (st != GF_OK) {
    gf_ynode_free(n);
    return st;
  }
  *out = n;
  return GF_OK;
}

gf_status gf_yaml_parse(const char *buf, size_t len, gf_ynode **root, gf_err *err) {
  *root = NULL;
  if (len > GF_YAML_MAX_BYTES)
    return gf_fail(err, GF_EFORMAT, "yaml: %zu bytes exceeds the %u-byte limit", len,
                   GF_YAML_MAX_BYTES);
  if (!buf && len) return gf_fail(err, GF_EINVAL, "yaml: NULL buffer");
  ctx c;
  c.nodes = 0;
  c.err = err;
  if (!yaml_parser_initialize(&c.parser)) return gf_fail(err, GF_ENOMEM, "yaml: out of memory");
  yaml_parser_set_input_string(&c.parser, (const unsigned char *)(buf ? buf : ""), len);
  gf_status st;
  yaml_event_t ev;
  gf_ynode *doc = NULL;
  /* stream-start, document-start, node, document-end, stream-end */
  if ((st = next_event(&c, &ev)) != GF_OK) goto done;
  yaml_event_type_t t = ev.type;
  yaml_event_delete(&ev);
  if (t != YAML_STREAM_START_EVENT) {
    st = gf_fail(err, GF_EFORMAT, "yaml: no stream start");
    goto done;
  }
  if ((st = next_event(&c, &ev)) != GF_OK) goto done;
  t = ev.type;
  yaml_event_delete(&ev);
  if (t != YAML_DOCUMENT_START_EVENT) {
    st = gf_fail(err, GF_EFORMAT, "yaml: empty document");
    goto done;
  }
  if ((st = next_event(&c, &ev)) != GF_OK) goto done;
  if ((st = build(&c, &ev, 0, &doc)) != GF_OK) goto done;
  if ((st = next_event(&c, &ev)) != GF_OK) goto done;
  t = ev.type;
  yaml_event_delete(&ev);
  if (t != YAML_DOCUMENT_END_EVENT) {
    st = gf_fail(err, GF_EFORMAT, "yaml: document does not end after its root node");
    goto done;
  }
  if ((st = next_event(&c, &ev)) != GF_OK) goto done;
  t = ev.type;
  yaml_event_delete(&ev);
  if (t != YAML_STREAM_END_EVENT) {
    st = gf_fail(err, GF_EFORMAT, "yaml: more than one document");
    goto done;
  }
done:
  yaml_parser_delete(&c.parser);
  if (st != GF_OK) {
    gf_ynode_free(doc);
    return st;
  }
  *root = doc;
  return GF_OK;
}

const gf_ynode *gf_ynode_get(const gf_ynode *n, const char *key) {
  if (!n || n->kind != GF_YN_MAP) return NULL;
  for (size_t i = 0; i < n->n; i++)
    if (strcmp(n->keys[i], key) == 0) return n->items[i];
  return NULL;
}

int gf_ynode_is_null(const gf_ynode *n) {
  if (!n || n->kind != GF_YN_SCALAR || !n->plain) return 0;
  const char *s = n->text;
  return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
         !strcmp(s, "NULL");
}
