/* request_invocations.c - POST /invocations bodies as MLflow's scoring
 * server takes them (mlflow/pyfunc/scoring_server: exactly one of
 * dataframe_split, dataframe_records, instances, inputs; "params" and
 * other members ignored) for a ganflow model, whose signature has the
 * optional columns seed (long) and z (array of float, z_dim long), and
 * class (an index or a class's text) for a class-conditional model. Each
 * row is a seed or a latent, never both or neither. Row counts are
 * checked against max_images before anything is allocated. See
 * gfs/request.h. Not here: HTTP, answers. */
#include <stdlib.h>
#include <string.h>

#include "request_internal.h"

/* Rows being filled: seeds[n], z[n * z_dim] and kind[n] allocated for
 * every row; compacted into a gfs_infer_req at the end. */
typedef struct rows {
  int n, z_dim;
  uint64_t *seeds;
  float *z;
  uint8_t *kind; /* 0: not set yet, 1: seed, 2: latent */
  gfs_infer_req *req; /* where the class column goes (gfs_take_class) */
} rows;

/* Allocates rows for n (checked) rows. Memory: free with rows_free, or
 * hand over with rows_finish. */
static gf_status rows_alloc(rows *rs, int64_t n, int z_dim, int max_images,
                            gf_err *err) {
  gfs_infer_req *req = rs->req;
  memset(rs, 0, sizeof *rs);
  rs->req = req;
  gf_status st = gfs_check_n(n, max_images, err);
  if (st) return st;
  rs->n = (int)n;
  rs->z_dim = z_dim;
  rs->seeds = calloc((size_t)n, sizeof *rs->seeds);
  rs->z = calloc((size_t)n * (size_t)z_dim, sizeof *rs->z);
  rs->kind = calloc((size_t)n, 1);
  if (!rs->seeds || !rs->z || !rs->kind)
    return gf_fail(err, GF_ENOMEM, "out of memory");
  return GF_OK;
}

static void rows_free(rows *rs) {
  free(rs->seeds);
  free(rs->z);
  free(rs->kind);
  gfs_infer_req *req = rs->req;
  memset(rs, 0, sizeof *rs);
  rs->req = req;
}

/* Moves rs into out: seeds only, latents only, or both with row_z. */
static void rows_finish(rows *rs, gfs_infer_req *out) {
  int seeds = 0, lat = 0;
  for (int k = 0; k < rs->n; k++) {
    seeds += rs->kind[k] == 1;
    lat += rs->kind[k] == 2;
  }
  out->n = rs->n;
  if (seeds) {
    out->seeds = rs->seeds;
    rs->seeds = NULL;
  }
  if (lat) {
    out->z = rs->z;
    rs->z = NULL;
  }
  if (seeds && lat) {
    for (int k = 0; k < rs->n; k++) rs->kind[k] = rs->kind[k] == 2;
    out->row_z = rs->kind;
    rs->kind = NULL;
  }
  rows_free(rs);
}

static int absent(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* Row k from its seed, z and class cells (NULL or null = absent). */
static gf_status row_cells(rows *rs, int k, const cJSON *seed,
                           const cJSON *z, const cJSON *cls, gf_err *err) {
  gf_status st = gfs_take_class(cls, k, rs->n, rs->req, err);
  if (st) return st;
  if (absent(seed) == absent(z))
    return gf_fail(err, GF_EINVAL, "row %d: needs exactly one of seed, z", k);
  if (!absent(seed)) {
    if (gfs_json_uint(seed, &rs->seeds[k]) != 0)
      return gf_fail(err, GF_EINVAL,
                     "row %d: seed must be a non-negative integer", k);
    rs->kind[k] = 1;
    return GF_OK;
  }
  if (!cJSON_IsArray(z) || cJSON_GetArraySize(z) != rs->z_dim)
    return gf_fail(err, GF_EINVAL, "row %d: z must be a list of %d numbers",
                   k, rs->z_dim);
  float *dst = rs->z + (size_t)k * (size_t)rs->z_dim;
  const cJSON *v;
  int i = 0;
  cJSON_ArrayForEach(v, z) {
    if (!cJSON_IsNumber(v))
      return gf_fail(err, GF_EINVAL, "row %d: z must hold numbers", k);
    st = gfs_check_z(v->valuedouble, err);
    if (st) return st;
    dst[i++] = (float)v->valuedouble;
  }
  rs->kind[k] = 2;
  return GF_OK;
}

/* A column name: 0 seed, 1 z, 2 class, -1 other. */
static int column(const char *name) {
  if (strcmp(name, "seed") == 0) return 0;
  if (strcmp(name, "z") == 0) return 1;
  if (strcmp(name, "class") == 0) return 2;
  return -1;
}

/* A record {"seed": s} or {"z": [..]}: any other key is an error. */
static gf_status row_record(rows *rs, int k, const cJSON *rec,
                            gf_err *err) {
  const cJSON *cell[3] = {NULL, NULL, NULL}, *e;
  cJSON_ArrayForEach(e, rec) {
    int c = e->string ? column(e->string) : -1;
    if (c < 0)
      return gf_fail(err, GF_EINVAL, "row %d: unknown column '%.64s' "
                     "(expected seed, z, class)", k, e->string ? e->string : "");
    cell[c] = e;
  }
  return row_cells(rs, k, cell[0], cell[1], cell[2], err);
}

/* An element of "instances" or a list "inputs": a record, a latent (an
 * array), or a bare seed. */
static gf_status row_any(rows *rs, int k, const cJSON *v, gf_err *err) {
  if (cJSON_IsObject(v)) return row_record(rs, k, v, err);
  if (cJSON_IsArray(v)) return row_cells(rs, k, NULL, v, NULL, err);
  if (cJSON_IsNumber(v) || cJSON_IsString(v))
    return row_cells(rs, k, v, NULL, NULL, err);
  return gf_fail(err, GF_EINVAL, "row %d: expected {\"seed\": s}, "
                 "{\"z\": [..]}, a seed or a list of %d numbers", k,
                 rs->z_dim);
}

static gf_status rows_list(rows *rs, const cJSON *list, const char *what,
                           int z_dim, int max_images, gf_err *err) {
  if (!cJSON_IsArray(list))
    return gf_fail(err, GF_EINVAL, "%s must be a list of rows", what);
  gf_status st = rows_alloc(rs, cJSON_GetArraySize(list), z_dim, max_images,
                            err);
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, list) {
    if (st) break;
    st = row_any(rs, k++, v, err);
  }
  return st;
}

static gf_status rows_records(rows *rs, const cJSON *list, int z_dim,
                              int max_images, gf_err *err) {
  if (!cJSON_IsArray(list))
    return gf_fail(err, GF_EINVAL,
                   "dataframe_records must be a list of records");
  gf_status st = rows_alloc(rs, cJSON_GetArraySize(list), z_dim, max_images,
                            err);
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, list) {
    if (st) break;
    st = cJSON_IsObject(v)
             ? row_record(rs, k, v, err)
             : gf_fail(err, GF_EINVAL, "dataframe_records[%d]: not a "
                       "record", k);
    k++;
  }
  return st;
}

/* {"columns": [..], "data": [[..], ..], "index": [..]} */
static gf_status rows_split(rows *rs, const cJSON *split, int z_dim,
                            int max_images, gf_err *err) {
  if (!cJSON_IsObject(split))
    return gf_fail(err, GF_EINVAL, "dataframe_split must be an object");
  const cJSON *e, *cols = NULL, *data = NULL, *index = NULL;
  cJSON_ArrayForEach(e, split) {
    if (strcmp(e->string, "columns") == 0) cols = e;
    else if (strcmp(e->string, "data") == 0) data = e;
    else if (strcmp(e->string, "index") == 0) index = e;
    else
      return gf_fail(err, GF_EINVAL, "dataframe_split: unknown member "
                     "'%.64s' (expected columns, data, index)", e->string);
  }
  if (!cJSON_IsArray(cols) || !cJSON_IsArray(data))
    return gf_fail(err, GF_EINVAL,
                   "dataframe_split needs columns and data lists");
  int where[3] = {-1, -1, -1}, nc = cJSON_GetArraySize(cols), i = 0;
  cJSON_ArrayForEach(e, cols) {
    int c = cJSON_IsString(e) ? column(e->valuestring) : -1;
    if (c < 0 || where[c] >= 0)
      return gf_fail(err, GF_EINVAL, "dataframe_split: columns must be "
                     "seed and/or z (and class), each once");
    where[c] = i++;
  }
  int n = cJSON_GetArraySize(data);
  if (index && (!cJSON_IsArray(index) || cJSON_GetArraySize(index) != n))
    return gf_fail(err, GF_EINVAL,
                   "dataframe_split: index must list one label per row");
  gf_status st = rows_alloc(rs, n, z_dim, max_images, err);
  int k = 0;
  cJSON_ArrayForEach(e, data) {
    if (st) break;
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != nc) {
      st = gf_fail(err, GF_EINVAL, "dataframe_split: row %d must hold %d "
                   "values", k, nc);
      break;
    }
    const cJSON *seed = where[0] >= 0 ? cJSON_GetArrayItem(e, where[0])
                                      : NULL;
    const cJSON *z = where[1] >= 0 ? cJSON_GetArrayItem(e, where[1]) : NULL;
    const cJSON *c = where[2] >= 0 ? cJSON_GetArrayItem(e, where[2]) : NULL;
    st = row_cells(rs, k++, seed, z, c, err);
  }
  return st;
}

/* {"seed": [..], "z": [[..], ..]}: columns of one length. */
static gf_status rows_columns(rows *rs, const cJSON *cols, int z_dim,
                              int max_images, gf_err *err) {
  const cJSON *col[3] = {NULL, NULL, NULL}, *e;
  cJSON_ArrayForEach(e, cols) {
    int c = column(e->string);
    if (c < 0)
      return gf_fail(err, GF_EINVAL, "inputs: unknown column '%.64s' "
                     "(expected seed, z, class)", e->string);
    if (!cJSON_IsArray(e))
      return gf_fail(err, GF_EINVAL, "inputs: %s must be a list", e->string);
    col[c] = e;
  }
  if (!col[0] && !col[1])
    return gf_fail(err, GF_EINVAL, "inputs needs a seed or a z column");
  int n = cJSON_GetArraySize(col[0] ? col[0] : col[1]);
  if (col[0] && col[1] && cJSON_GetArraySize(col[1]) != n)
    return gf_fail(err, GF_EINVAL, "inputs: seed and z differ in length");
  if (col[2] && cJSON_GetArraySize(col[2]) != n)
    return gf_fail(err, GF_EINVAL,
                   "inputs: class differs in length from seed/z");
  gf_status st = rows_alloc(rs, n, z_dim, max_images, err);
  const cJSON *s = col[0] ? col[0]->child : NULL;
  const cJSON *z = col[1] ? col[1]->child : NULL;
  const cJSON *c = col[2] ? col[2]->child : NULL;
  for (int k = 0; st == GF_OK && k < n; k++) {
    st = row_cells(rs, k, s, z, c, err);
    if (s) s = s->next;
    if (z) z = z->next;
    if (c) c = c->next;
  }
  return st;
}

static gf_status parse_invocations(const cJSON *root, int z_dim,
                                   int max_images, void *ctx,
                                   gfs_infer_req *out, gf_err *err) {
  (void)ctx;
  if (!cJSON_IsObject(root))
    return gf_fail(err, GF_EINVAL, "body must be a JSON object");
  static const char *const formats[] = {"dataframe_split",
                                        "dataframe_records", "instances",
                                        "inputs"};
  const cJSON *found = NULL;
  int which = -1, count = 0;
  for (int i = 0; i < 4; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, formats[i]);
    if (v) {
      found = v;
      which = i;
      count++;
    }
  }
  if (count != 1)
    return gf_fail(err, GF_EINVAL,
                   "expected exactly one of dataframe_split, "
                   "dataframe_records, instances, inputs");
  rows rs;
  memset(&rs, 0, sizeof rs);
  rs.req = out;
  gf_status st;
  if (which == 0) st = rows_split(&rs, found, z_dim, max_images, err);
  else if (which == 1) st = rows_records(&rs, found, z_dim, max_images, err);
  else if (which == 3 && cJSON_IsObject(found))
    st = rows_columns(&rs, found, z_dim, max_images, err);
  else st = rows_list(&rs, found, formats[which], z_dim, max_images, err);
  if (st == GF_OK) rows_finish(&rs, out);
  rows_free(&rs);
  return st;
}

gf_status gfs_invocations_parse(const char *body, size_t len, int z_dim,
                                int max_images, gfs_infer_req *out,
                                gf_err *err) {
  return gfs_json_body(body, len, z_dim, max_images, parse_invocations, NULL,
                       out, err);
}
