/* fuzz_model_pickle.c - fuzz target for the restricted unpickler and the
 * StyleGAN2-ADA snapshot reader on top of it: any input must give GF_OK or
 * an error with a message. The snapshot reader runs on the input as given;
 * the unpickler alone runs with persistent ids and a few globals allowed,
 * and its result is walked to a bounded depth (the graph may share values
 * or hold cycles). On GF_OK every tensor's values and every kwarg must be
 * readable and the shapes must agree with numel. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gf/pickle.h"
#include "gf/sg2_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Visits at most *budget values, to depth 64. */
static unsigned walk(const gf_pk_value *v, int depth, size_t *budget) {
  if (!v || depth > 64 || *budget == 0) return 0;
  (*budget)--;
  unsigned sum = (unsigned)v->kind;
  if (v->kind == GF_PK_STR || v->kind == GF_PK_BYTES || v->kind == GF_PK_BIGINT)
    for (size_t i = 0; i < v->len; i++) sum += (uint8_t)v->s[i];
  if (v->kind == GF_PK_STR && v->s[v->len] != '\0') __builtin_trap();
  if (v->kind == GF_PK_GLOBAL)
    sum += (unsigned)(strlen(v->module) + strlen(v->name));
  for (size_t i = 0; i < v->items.n; i++)
    sum += walk(v->items.v[i], depth + 1, budget);
  for (size_t i = 0; i < v->kv.n; i++)
    sum += walk(v->kv.v[i], depth + 1, budget);
  sum += walk(v->callee, depth + 1, budget) + walk(v->args, depth + 1, budget) +
         walk(v->state, depth + 1, budget);
  return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  volatile unsigned sum = 0;
  gf_err err;
  gf_sg2_snapshot s;
  if (gf_sg2_snapshot_parse(data, size, &s, &err) == GF_OK) {
    const gf_sg2_snap_net *nets[] = {&s.G, &s.D, &s.G_ema, &s.augment_pipe};
    for (int k = 0; k < 4; k++) {
      const gf_sg2_snap_net *n = nets[k];
      for (size_t i = 0; i < n->n_tensors; i++) {
        const gf_sg2_snap_tensor *t = &n->tensors[i];
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
        if (numel != t->numel || gf_sg2_snap_find(n, t->name) == NULL)
          __builtin_trap();
        for (size_t e = 0; e < t->numel; e++)
          sum += (unsigned)(t->data[e] != 0.0f);
      }
      for (size_t i = 0; i < n->n_extra; i++)
        sum += (unsigned)(strlen(n->extra[i].key) + strlen(n->extra[i].value));
      sum += (unsigned)strlen(n->class_name) +
             (unsigned)strlen(n->architecture);
    }
    gf_sg2_snapshot_free(&s);
  } else if (err.msg[0] == '\0') {
    __builtin_trap();
  }

  static const char *const allow[] = {"collections.OrderedDict", "builtins.set",
                                      "torch.FloatStorage", "_codecs.encode"};
  gf_pk_opts o;
  gf_pk_opts_default(&o);
  o.allow = allow;
  o.n_allow = sizeof allow / sizeof allow[0];
  o.allow_persid = 1;
  o.limits.max_nodes = 1 << 20;
  gf_pk_doc *doc;
  if (gf_pk_doc_new(&doc, &err) != GF_OK) return 0;
  size_t pos = 0, used;
  gf_pk_value *root;
  for (int k = 0; k < 4 && pos < size; k++) { /* pickles back to back */
    if (gf_pk_parse(doc, data + pos, size - pos, &o, &root, &used, &err) !=
        GF_OK) {
      if (err.msg[0] == '\0' || root != NULL) __builtin_trap();
      break;
    }
    if (used == 0 || used > size - pos) __builtin_trap();
    size_t budget = 100000;
    sum += walk(root, 0, &budget);
    pos += used;
  }
  gf_pk_doc_free(doc);
  (void)sum;
  return 0;
}
