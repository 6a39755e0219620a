/* mlmodel_signature.c - the signature of an MLmodel (gf/mlmodel.h): its
 * inputs and outputs, JSON strings inside the YAML, as TensorSpecs or
 * ColSpecs (cJSON). Parses outside input: bounded (tensor count, dims,
 * name and type lengths), never trusts a field's type. */
#include "mlmodel_signature.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Copies a short lowercase identifier (dtype, column type) into out. */
static int ident(const char *v, char out[16]) {
  size_t n = strlen(v);
  if (n == 0 || n >= 16 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != n) return 0;
  memcpy(out, v, n + 1);
  return 1;
}

/* MLflow's scalar column types (mlflow.types.DataType). */
static int column_type_ok(const char *t) {
  static const char *const k[] = {"boolean", "integer", "long",   "float",
                                  "double",  "string",  "binary", "datetime"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(t, k[i]) == 0) return 1;
  return 0;
}

/* A TensorSpec's "tensor-spec": {"dtype", "shape"} into t. */
static gf_status parse_tensor(const cJSON *o, const char *what, size_t idx,
                              gf_mlmodel_spec *t, gf_err *err) {
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "tensor-spec");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(spec, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(spec, "shape");
  if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu] needs a "
                   "tensor-spec with a dtype string and a shape array", what,
                   idx);
  if (!ident(dtype->valuestring, t->dtype))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: bad dtype",
                   what, idx);
  int nd = cJSON_GetArraySize(shape);
  if (nd > GF_MLMODEL_SIG_MAX_DIMS)
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: %d "
                   "dimensions (at most %d)", what, idx, nd,
                   GF_MLMODEL_SIG_MAX_DIMS);
  for (int d = 0; d < nd; d++) {
    const cJSON *v = cJSON_GetArrayItem(shape, d);
    double x = cJSON_IsNumber(v) ? v->valuedouble : -2;
    if (!(x >= -1 && x <= 2147483647.0) || x != (double)(int64_t)x)
      return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: shape[%d] "
                     "is not an integer >= -1", what, idx, d);
    t->shape[d] = (int64_t)x;
  }
  t->ndim = nd;
  return GF_OK;
}

/* A ColSpec's type (a scalar type, or "array" with scalar "items") and
 * "required" into t. */
static gf_status parse_column(const cJSON *o, const char *what, size_t idx,
                              gf_mlmodel_spec *t, gf_err *err) {
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(o, "required");
  if (req && !cJSON_IsBool(req))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: required is "
                   "not a boolean", what, idx);
  t->required = !req || cJSON_IsTrue(req);
  if (strcmp(t->type, "array") == 0) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(items, "type");
    if (!cJSON_IsString(it) || !ident(it->valuestring, t->dtype) ||
        !column_type_ok(t->dtype))
      return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: an array "
                     "column needs items of a scalar type", what, idx);
    return GF_OK;
  }
  if (!column_type_ok(t->type))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu] has type "
                   "\"%s\"; only tensors, MLflow's scalar column types and "
                   "arrays of them are supported", what, idx, t->type);
  return GF_OK;
}

/* One TensorSpec {"name", "type": "tensor", "tensor-spec": {...}} or
 * ColSpec {"name", "type", ["items"], ["required"]} into t (t->name
 * malloc'd). */
static gf_status parse_spec(const cJSON *o, const char *what, size_t idx,
                            gf_mlmodel_spec *t, gf_err *err) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsObject(o) || !cJSON_IsString(type))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu] is not a "
                   "{\"type\": ...} object", what, idx);
  if (!ident(type->valuestring, t->type))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: bad type",
                   what, idx);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
  if (name && !cJSON_IsNull(name) && !cJSON_IsString(name))
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: name is not "
                   "a string", what, idx);
  t->required = 1;
  gf_status st = strcmp(t->type, "tensor") == 0 ? parse_tensor(o, what, idx, t, err)
                                                : parse_column(o, what, idx, t, err);
  if (st != GF_OK) return st;
  if (cJSON_IsString(name)) {
    size_t nl = strlen(name->valuestring);
    if (nl == 0 || nl > 255)
      return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s[%zu]: bad name",
                     what, idx);
    if (!(t->name = strdup(name->valuestring)))
      return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  }
  return GF_OK;
}

/* signature.inputs or .outputs: absent or null = none; else a string
 * holding a JSON array of TensorSpecs or of ColSpecs (not both, as in
 * MLflow's Schema). Allocates *out (owned by m). */
static gf_status parse_schema(const gf_ynode *sig, const char *what,
                              gf_mlmodel_spec **out, size_t *n,
                              gf_err *err) {
  const gf_ynode *v = gf_ynode_get(sig, what);
  if (!v || gf_ynode_is_null(v)) return GF_OK;
  if (v->kind != GF_YN_SCALAR)
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s is not a JSON "
                   "string", what);
  cJSON *arr = cJSON_Parse(v->text);
  gf_status st = GF_OK;
  int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
  if (count < 0)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s is not a JSON "
                 "array", what);
  else if (count > GF_MLMODEL_SIG_MAX_TENSORS)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s has %d tensors (at "
                 "most %d)", what, count, GF_MLMODEL_SIG_MAX_TENSORS);
  else if (count > 0 && !(*out = calloc((size_t)count, sizeof **out)))
    st = gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  else if (count > 0)
    *n = (size_t)count; /* zeroed entries; all freed with m */
  for (int i = 0; st == GF_OK && i < count; i++)
    st = parse_spec(cJSON_GetArrayItem(arr, i), what, (size_t)i, &(*out)[i],
                    err);
  for (int i = 1; st == GF_OK && i < count; i++)
    if ((strcmp((*out)[i].type, "tensor") == 0) !=
        (strcmp((*out)[0].type, "tensor") == 0))
      st = gf_fail(err, GF_EFORMAT, "MLmodel: signature.%s mixes tensors and "
                   "columns", what);
  cJSON_Delete(arr);
  return st;
}

gf_status gf_mlmodel_parse_signature(const gf_ynode *root, gf_mlmodel *m,
                                     gf_err *err) {
  const gf_ynode *sig = gf_ynode_get(root, "signature");
  if (!sig || gf_ynode_is_null(sig)) return GF_OK;
  if (sig->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: signature is not a mapping");
  m->has_signature = 1;
  gf_status st = parse_schema(sig, "inputs", &m->sig_inputs, &m->n_sig_inputs,
                              err);
  if (st == GF_OK)
    st = parse_schema(sig, "outputs", &m->sig_outputs, &m->n_sig_outputs, err);
  return st;
}
