/* mlmodel_classes.c - the class names of a model directory: the YAML and
 * JSON readers, config.json's writer with names, and the name-or-index
 * lookup; see gf/mlmodel.h and mlmodel_classes.h. Parses outside input:
 * counts bounded by the config's num_classes and
 * GF_MLMODEL_MAX_CLASS_NAMES, every name checked by gf_class_name_check. */
#include "gf/parse.h"
#include "mlmodel_classes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gf/class_name.h"
#include "gf/text.h"
#include "model_config_internal.h"

/* Count and names checks shared by both readers: n names for m's config. */
static gf_status names_fit(const gf_mlmodel *m, size_t n, const char *where, gf_err *err) {
  int k = m->config.num_classes;
  if (k <= 0)
    return gf_fail(err, GF_EFORMAT,
                   "MLmodel: %s has class_names, but the model is not class-conditional "
                   "(num_classes 0)",
                   where);
  if (n != (size_t)k)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s has %zu class_names for num_classes %d", where,
                   n, k);
  if (n > GF_MLMODEL_MAX_CLASS_NAMES)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s has %zu class_names (at most %d)", where, n,
                   GF_MLMODEL_MAX_CLASS_NAMES);
  return GF_OK;
}

gf_status gf_mlmodel_parse_class_names(const gf_ynode *cfg, gf_mlmodel *m, gf_err *err) {
  const char *where = "flavors." GF_MLMODEL_FLAVOR ".config";
  const gf_ynode *v = gf_ynode_get(cfg, "class_names");
  if (!v || gf_ynode_is_null(v)) return GF_OK;
  if (v->kind != GF_YN_SEQ)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s.class_names is not a sequence", where);
  GF_TRY(names_fit(m, v->n, where, err));
  m->class_names = calloc(v->n, sizeof *m->class_names);
  if (!m->class_names) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  for (size_t i = 0; i < v->n; i++) {
    const gf_ynode *s = v->items[i];
    if (s->kind != GF_YN_SCALAR)
      return gf_fail(err, GF_EFORMAT, "MLmodel: %s.class_names[%zu] is not a string", where,
                     i);
    if (!(m->class_names[i] = strdup(s->text)))
      return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
    m->n_class_names = (int)i + 1;
  }
  gf_err inner = {GF_OK, ""};
  if (gf_class_names_check((const char *const *)m->class_names, m->n_class_names, &inner) !=
      GF_OK)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s.%s", where, inner.msg);
  return GF_OK;
}

gf_status gf_mlmodel_check_json_class_names(const char *text, size_t len, const gf_mlmodel *m,
                                            const char *path, gf_err *err) {
  cJSON *o = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s is not a JSON object", path);
  }
  const cJSON *names = NULL;
  gf_status st = GF_OK;
  for (const cJSON *c = o->child; c && st == GF_OK; c = c->next) {
    if (!c->string || strcmp(c->string, "class_names") != 0) continue;
    if (names) st = gf_fail(err, GF_EFORMAT, "MLmodel: %s: class_names given twice", path);
    names = c;
  }
  if (st == GF_OK && names && cJSON_IsNull(names)) names = NULL;
  if (st == GF_OK && !names && m->class_names)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: %s has no class_names, the flavor config has %d",
                 path, m->n_class_names);
  if (st == GF_OK && names && !cJSON_IsArray(names))
    st = gf_fail(err, GF_EFORMAT, "MLmodel: %s: class_names is not an array", path);
  if (st == GF_OK && names && !m->class_names)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: %s has class_names, the flavor config has none",
                 path);
  if (st == GF_OK && names && cJSON_GetArraySize(names) != m->n_class_names)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: %s has %d class_names, the flavor config %d", path,
                 cJSON_GetArraySize(names), m->n_class_names);
  int k = 0;
  for (const cJSON *c = names ? names->child : NULL; c && st == GF_OK; c = c->next, k++) {
    if (!cJSON_IsString(c) || strcmp(c->valuestring, m->class_names[k]) != 0)
      st = gf_fail(err, GF_EFORMAT,
                   "MLmodel: %s: class_names[%d] differs from the flavor config's", path, k);
  }
  cJSON_Delete(o);
  return st;
}

gf_status gf_mlmodel_config_json_with_names(const gf_model_config *cfg,
                                            const char *const *names, int n, char **out,
                                            gf_err *err) {
  *out = NULL;
  cJSON *o = gf_model_config_to_cjson(cfg);
  cJSON *arr = o ? cJSON_AddArrayToObject(o, "class_names") : NULL;
  int ok = arr != NULL;
  for (int k = 0; ok && k < n; k++) {
    cJSON *s = cJSON_CreateString(names[k]);
    ok = s && cJSON_AddItemToArray(arr, s);
    if (!ok) cJSON_Delete(s);
  }
  char *text = ok ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  if (!text) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory for config.json");
  size_t len = strlen(text);
  char *s = malloc(len + 2); /* plain malloc, as gf_model_config_to_json */
  if (s) {
    memcpy(s, text, len);
    s[len] = '\n';
    s[len + 1] = '\0';
  }
  cJSON_free(text);
  if (!s) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory for config.json");
  *out = s;
  return GF_OK;
}

gf_status gf_mlmodel_class_index(const gf_mlmodel *m, const char *name_or_index, int *out,
                                 gf_err *err) {
  *out = -1;
  if (!m || m->config.num_classes <= 0)
    return gf_fail(err, GF_EINVAL, "class: the model is not class-conditional");
  const int k = m->config.num_classes;
  if (!name_or_index || !*name_or_index)
    return gf_fail(err, GF_EINVAL, "class: empty (give a class %san index 0..%d)",
                   m->class_names ? "name or " : "", k - 1);
  const char *s = name_or_index;
  for (int i = 0; i < m->n_class_names; i++) {
    if (strcmp(m->class_names[i], s) == 0) {
      *out = i;
      return GF_OK;
    }
  }
  char q[GF_CLASS_NAME_QUOTE_CAP];
  gf_class_name_quote(s, q, sizeof q);
  size_t len = strlen(s), digits = strspn(s, "0123456789");
  if (digits == len && (len == 1 || s[0] != '0')) {
    int v;
    if (gf_parse_int(NULL, s, 0, k - 1, &v, NULL) == GF_OK) {
      *out = v;
      return GF_OK;
    }
    return gf_fail(err, GF_ENOTFOUND, "class %s: %snot an index 0..%d", q,
                   m->class_names ? "no class of that name, and " : "", k - 1);
  }
  for (int i = 0; i < m->n_class_names; i++)
    if (strcasecmp(m->class_names[i], s) == 0)
      return gf_fail(err, GF_ENOTFOUND,
                     "class %s: no such class; names are case-sensitive: did you mean '%s' "
                     "(index %d)?",
                     q, m->class_names[i], i);
  if (!m->class_names)
    return gf_fail(err, GF_ENOTFOUND,
                   "class %s: the model has no class names; give an index 0..%d", q, k - 1);
  char list[320];
  const size_t cap = sizeof list - 6; /* room kept for ", ..." */
  size_t o = 0;
  list[0] = '\0';
  for (int i = 0; i < m->n_class_names; i++) {
    int w = snprintf(list + o, cap - o, "%s'%s'", i ? ", " : "", m->class_names[i]);
    if (!gf_fits(w, cap - o)) { /* cut at a whole name */
      memcpy(list + o, ", ...", 6);
      break;
    }
    o += (size_t)w;
  }
  return gf_fail(err, GF_ENOTFOUND,
                 "class %s: no such class name or index (%d classes, 0..%d: %s)", q, k, k - 1,
                 list);
}
