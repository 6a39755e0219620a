/* mlmodel_read.c - parses MLmodel (through yaml_tree.h) and verifies the
 * model directory it describes; see gf/mlmodel.h. The signature's JSON is
 * mlmodel_signature.c's, the class names mlmodel_classes.c's. */
#include "gf/mlmodel.h"

#include <stdlib.h>
#include <string.h>

#include "gf/file.h"
#include "gf/fs.h"
#include "mlmodel_classes.h"
#include "mlmodel_signature.h"
#include "model_config_internal.h"
#include "yaml_tree.h"

#define MAX_FILES 64

void gf_mlmodel_init(gf_mlmodel *m) { memset(m, 0, sizeof *m); }

void gf_mlmodel_free(gf_mlmodel *m) {
  if (!m) return;
  free(m->artifact_path);
  free(m->run_id);
  free(m->model_uuid);
  free(m->utc_time_created);
  free(m->mlflow_version);
  free(m->ganflow_version);
  free(m->pyfunc_loader);
  free(m->pyfunc_python);
  for (size_t i = 0; i < m->n_sig_inputs; i++) free(m->sig_inputs[i].name);
  free(m->sig_inputs);
  for (size_t i = 0; i < m->n_sig_outputs; i++) free(m->sig_outputs[i].name);
  free(m->sig_outputs);
  for (size_t i = 0; i < m->n_files; i++) free(m->files[i].name);
  free(m->files);
  for (int i = 0; i < m->n_class_names; i++) free(m->class_names[i]);
  free(m->class_names);
  free(m->dir);
  free(m->generator_path);
  free(m->config_path);
  gf_mlmodel_init(m);
}

const char *gf_mlmodel_file_sha256(const gf_mlmodel *m, const char *name) {
  for (size_t i = 0; m && name && i < m->n_files; i++)
    if (strcmp(m->files[i].name, name) == 0) return m->files[i].sha256;
  return NULL;
}

/* Optional string field: NULL when absent or null; a copy otherwise. */
static gf_status opt_string(const gf_ynode *map, const char *key, char **out, gf_err *err) {
  *out = NULL;
  const gf_ynode *v = gf_ynode_get(map, key);
  if (!v || gf_ynode_is_null(v)) return GF_OK;
  if (v->kind != GF_YN_SCALAR)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %s is not a string", key);
  *out = strdup(v->text);
  if (!*out) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  return GF_OK;
}

/* A plain scalar that spells a decimal integer (optional '-'). */
static int plain_int(const gf_ynode *v) {
  if (v->kind != GF_YN_SCALAR || !v->plain) return 0;
  const char *p = v->text + (v->text[0] == '-');
  if (!*p || strlen(p) > 9) return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

/* The config mapping as a cJSON object (plain integers become numbers,
 * plain true/false booleans, other scalars strings, collections null),
 * then the shared validation. */
static gf_status parse_config(const gf_ynode *cfg, gf_model_config *out, gf_err *err) {
  if (!cfg || cfg->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.%s.config is missing or not a mapping",
                   GF_MLMODEL_FLAVOR);
  cJSON *o = cJSON_CreateObject();
  int ok = o != NULL;
  for (size_t i = 0; ok && i < cfg->n; i++) {
    const gf_ynode *v = cfg->items[i];
    cJSON *item;
    if (plain_int(v)) item = cJSON_CreateNumber((double)strtol(v->text, NULL, 10));
    else if (v->kind == GF_YN_SCALAR && v->plain && strcmp(v->text, "true") == 0)
      item = cJSON_CreateTrue();
    else if (v->kind == GF_YN_SCALAR && v->plain && strcmp(v->text, "false") == 0)
      item = cJSON_CreateFalse();
    else if (v->kind == GF_YN_SCALAR) item = cJSON_CreateString(v->text);
    else item = cJSON_CreateNull();
    ok = item && cJSON_AddItemToObject(o, cfg->keys[i], item);
    if (!ok) cJSON_Delete(item);
  }
  if (!ok) {
    cJSON_Delete(o);
    return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  }
  gf_err inner = {GF_OK, ""};
  gf_status st = gf_model_config_from_cjson(o, out, &inner);
  cJSON_Delete(o);
  if (st != GF_OK)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.%s.%s", GF_MLMODEL_FLAVOR, inner.msg);
  return GF_OK;
}

/* A listed file must be a relative path inside the directory: at most
 * MAX_FILE_DEPTH components, none empty or ".", no ".." anywhere, no
 * backslash or control character ("code/ganflow_pyfunc.py"). */
#define MAX_FILE_DEPTH 4
static int file_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 255 || strchr(s, '\\') || strstr(s, "..")) return 0;
  int depth = 0;
  for (const char *c = s; *c; depth++) {
    size_t len = strcspn(c, "/");
    if (len == 0 || (len == 1 && c[0] == '.')) return 0; /* "", leading '/', "//", "." */
    c += len;
    if (*c == '/' && *++c == '\0') return 0;             /* trailing '/' */
  }
  if (depth > MAX_FILE_DEPTH) return 0;
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20) return 0;
  return 1;
}

static gf_status parse_files(const gf_ynode *files, gf_mlmodel *m, gf_err *err) {
  if (!files || files->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.%s.files is missing or not a mapping",
                   GF_MLMODEL_FLAVOR);
  if (files->n == 0 || files->n > MAX_FILES)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.%s.files has %zu entries (1..%d allowed)",
                   GF_MLMODEL_FLAVOR, files->n, MAX_FILES);
  m->files = calloc(files->n, sizeof *m->files);
  if (!m->files) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  for (size_t i = 0; i < files->n; i++) {
    const char *name = files->keys[i];
    if (!file_name_ok(name))
      return gf_fail(err, GF_EFORMAT,
                     "MLmodel: file \"%.64s\" is not a relative path inside the model "
                     "directory",
                     name);
    const gf_ynode *sha = gf_ynode_get(files->items[i], "sha256");
    if (!sha || sha->kind != GF_YN_SCALAR || !gf_sha256_hex_valid(sha->text))
      return gf_fail(err, GF_EFORMAT, "MLmodel: file \"%.64s\" has no valid sha256", name);
    gf_mlmodel_file *f = &m->files[m->n_files];
    f->name = strdup(name);
    if (!f->name) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
    memcpy(f->sha256, sha->text, GF_SHA256_HEX_LEN + 1);
    m->n_files++;
  }
  if (!gf_mlmodel_file_sha256(m, GF_MLMODEL_GENERATOR) || !gf_mlmodel_file_sha256(m, GF_MLMODEL_CONFIG))
    return gf_fail(err, GF_EFORMAT, "MLmodel: files must list %s and %s", GF_MLMODEL_GENERATOR,
                   GF_MLMODEL_CONFIG);
  return GF_OK;
}

/* The optional python_function flavor: a mapping; its loader_module and
 * python_version (strings when present) are kept for `ganflow inspect`.
 * MLflow reads the rest. */
static gf_status parse_pyfunc(const gf_ynode *py, gf_mlmodel *m, gf_err *err) {
  if (!py || gf_ynode_is_null(py)) return GF_OK;
  if (py->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.python_function is not a mapping");
  gf_status st = opt_string(py, "loader_module", &m->pyfunc_loader, err);
  if (st == GF_OK) st = opt_string(py, "python_version", &m->pyfunc_python, err);
  if (st == GF_OK && !m->pyfunc_loader)
    st = gf_fail(err, GF_EFORMAT, "MLmodel: flavors.python_function has no loader_module");
  return st;
}

static gf_status parse_tree(const gf_ynode *root, gf_mlmodel *m, gf_err *err) {
  if (root->kind != GF_YN_MAP) return gf_fail(err, GF_EFORMAT, "MLmodel: not a mapping");
  gf_status st;
  if ((st = opt_string(root, "artifact_path", &m->artifact_path, err)) != GF_OK) return st;
  if ((st = opt_string(root, "run_id", &m->run_id, err)) != GF_OK) return st;
  if ((st = opt_string(root, "model_uuid", &m->model_uuid, err)) != GF_OK) return st;
  if ((st = opt_string(root, "utc_time_created", &m->utc_time_created, err)) != GF_OK) return st;
  if ((st = opt_string(root, "mlflow_version", &m->mlflow_version, err)) != GF_OK) return st;
  const gf_ynode *flavors = gf_ynode_get(root, "flavors");
  if (!flavors || flavors->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors is missing or not a mapping");
  const gf_ynode *gan = gf_ynode_get(flavors, GF_MLMODEL_FLAVOR);
  if (!gan || gan->kind != GF_YN_MAP)
    return gf_fail(err, GF_EFORMAT, "MLmodel: no %s flavor", GF_MLMODEL_FLAVOR);
  if ((st = opt_string(gan, "ganflow_version", &m->ganflow_version, err)) != GF_OK) return st;
  if (!m->ganflow_version)
    return gf_fail(err, GF_EFORMAT, "MLmodel: flavors.%s.ganflow_version is missing",
                   GF_MLMODEL_FLAVOR);
  if ((st = parse_config(gf_ynode_get(gan, "config"), &m->config, err)) != GF_OK) return st;
  if ((st = gf_mlmodel_parse_class_names(gf_ynode_get(gan, "config"), m, err)) != GF_OK)
    return st;
  if ((st = gf_mlmodel_parse_signature(root, m, err)) != GF_OK) return st;
  if ((st = parse_pyfunc(gf_ynode_get(flavors, "python_function"), m, err)) != GF_OK) return st;
  return parse_files(gf_ynode_get(gan, "files"), m, err);
}

gf_status gf_mlmodel_parse(const char *yaml, size_t len, gf_mlmodel *m, gf_err *err) {
  gf_mlmodel_init(m);
  if (len > GF_MLMODEL_MAX_BYTES)
    return gf_fail(err, GF_EFORMAT, "MLmodel: %zu bytes exceeds the %u-byte limit", len,
                   GF_MLMODEL_MAX_BYTES);
  gf_ynode *root = NULL;
  gf_status st = gf_yaml_parse(yaml, len, &root, err);
  if (st == GF_OK) st = parse_tree(root, m, err);
  gf_ynode_free(root);
  if (st != GF_OK) gf_mlmodel_free(m);
  return st;
}

/* Reads a whole file of at most max bytes into a malloc'd buffer (*out,
 * caller frees), NUL-terminated. GF_EIO when missing or unreadable,
 * GF_EFORMAT when too large. */
static gf_status read_small(const char *path, size_t max, char **out,
                            size_t *len, gf_err *err) {
  gf_err e;
  gf_status st = gf_read_file(path, max, out, len, &e);
  if (st == GF_OK) return GF_OK;
  return gf_fail(err, st == GF_ENOTFOUND || st == GF_EINVAL ? GF_EIO : st,
                 "MLmodel: %s", e.msg);
}

static gf_status verify_files(gf_mlmodel *m, gf_err *err) {
  gf_status st = GF_OK;
  for (size_t i = 0; i < m->n_files && st == GF_OK; i++) {
    const gf_mlmodel_file *f = &m->files[i];
    char *path = gf_path_join_alloc(m->dir, f->name);
    if (!path) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
    char got[GF_SHA256_HEX_LEN + 1];
    if (strcmp(f->name, GF_MLMODEL_CONFIG) == 0) {
      /* Hash and parse the same bytes. */
      char *text = NULL;
      size_t len = 0;
      st = read_small(path, GF_MLMODEL_MAX_BYTES, &text, &len, err);
      if (st == GF_OK) st = gf_sha256_buf(text, len, got, err);
      if (st == GF_OK && strcmp(got, f->sha256) != 0)
        st = gf_fail(err, GF_EINTEGRITY, "MLmodel: %s has SHA-256 %s, MLmodel lists %s", path,
                     got, f->sha256);
      gf_model_config c;
      if (st == GF_OK) st = gf_model_config_from_json(text, len, &c, err);
      if (st == GF_OK && !gf_model_config_equal(&c, &m->config))
        st = gf_fail(err, GF_EFORMAT, "MLmodel: %s differs from the flavor config", path);
      if (st == GF_OK) st = gf_mlmodel_check_json_class_names(text, len, m, path, err);
      free(text);
    } else {
      st = gf_sha256_file(path, got, err);
      if (st == GF_OK && strcmp(got, f->sha256) != 0)
        st = gf_fail(err, GF_EINTEGRITY, "MLmodel: %s has SHA-256 %s, MLmodel lists %s", path,
                     got, f->sha256);
    }
    free(path);
  }
  return st;
}

gf_status gf_mlmodel_read(const char *dir, gf_mlmodel *m, gf_err *err) {
  gf_mlmodel_init(m);
  if (!dir || !*dir) return gf_fail(err, GF_EINVAL, "MLmodel: empty directory");
  char *ml_path = gf_path_join_alloc(dir, GF_MLMODEL_FILE);
  if (!ml_path) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  char *text = NULL;
  size_t len = 0;
  gf_status st = read_small(ml_path, GF_MLMODEL_MAX_BYTES, &text, &len, err);
  free(ml_path);
  if (st != GF_OK) return st;
  st = gf_mlmodel_parse(text, len, m, err);
  free(text);
  if (st != GF_OK) return st;
  m->dir = strdup(dir);
  m->generator_path = gf_path_join_alloc(dir, GF_MLMODEL_GENERATOR);
  m->config_path = gf_path_join_alloc(dir, GF_MLMODEL_CONFIG);
  if (!m->dir || !m->generator_path || !m->config_path)
    st = gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  if (st == GF_OK) st = verify_files(m, err);
  if (st != GF_OK) gf_mlmodel_free(m);
  return st;
}

gf_status gf_mlmodel_load_generator(const gf_mlmodel *m, gf_st_file *f, gf_err *err) {
  gf_st_file_init(f);
  const char *want = gf_mlmodel_file_sha256(m, GF_MLMODEL_GENERATOR);
  if (!m->generator_path || !want)
    return gf_fail(err, GF_ESTATE, "MLmodel: model was not read from a directory");
  gf_status st = gf_st_open(f, m->generator_path, GF_ST_VERIFY_SHA256, err);
  if (st != GF_OK) return st;
  char got[GF_SHA256_HEX_LEN + 1];
  st = gf_sha256_buf(f->bytes, f->size, got, err);
  if (st == GF_OK && strcmp(got, want) != 0)
    st = gf_fail(err, GF_EINTEGRITY, "MLmodel: %s has SHA-256 %s, MLmodel lists %s",
                 m->generator_path, got, want);
  if (st != GF_OK) gf_st_file_free(f);
  return st;
}
