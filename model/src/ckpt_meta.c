/* ckpt_meta.c - checkpoint metadata <-> safetensors metadata strings, and
 * the digest-carrying checkpoint write/open; see gf/ckpt_meta.h. */
#include "gf/ckpt_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"

#define K_VERSION "ganflow.format_version"
#define K_STEP "ganflow.step"
#define K_EPOCH "ganflow.epoch"
#define K_EPOCH_OFFSET "ganflow.epoch_offset"
#define K_SEED "ganflow.seed"
#define K_WORLD "ganflow.world_size"
#define K_RUN_ID "ganflow.run_id"
#define K_CONFIG "ganflow.config"
#define K_RECIPE "ganflow.recipe"

/* Printable ASCII of at most GF_CKPT_RECIPE_MAX characters. */
static int recipe_valid(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (n >= GF_CKPT_RECIPE_MAX || s[n] < 0x20 || s[n] > 0x7e) return 0;
  return 1;
}

int gf_ckpt_run_id_valid(const char *s) {
  size_t n = 0;
  for (; s[n]; n++) {
    char c = s[n];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          c == '_' || c == '-'))
      return 0;
    if (n >= GF_CKPT_RUN_ID_MAX) return 0;
  }
  return 1;
}

static gf_status validate(const gf_ckpt_meta *m, gf_err *err) {
  if (m->format_version != GF_CKPT_FORMAT_VERSION)
    return gf_fail(err, GF_EUNSUPPORTED, "checkpoint: format_version %d is not %d",
                   m->format_version, GF_CKPT_FORMAT_VERSION);
  if (m->step < 0) return gf_fail(err, GF_EINVAL, "checkpoint: step is negative");
  if (m->epoch < 0) return gf_fail(err, GF_EINVAL, "checkpoint: epoch is negative");
  if (m->epoch_offset < 0) return gf_fail(err, GF_EINVAL, "checkpoint: epoch_offset is negative");
  if (m->world_size < 1) return gf_fail(err, GF_EINVAL, "checkpoint: world_size < 1");
  if (memchr(m->run_id, '\0', sizeof m->run_id) == NULL || !gf_ckpt_run_id_valid(m->run_id))
    return gf_fail(err, GF_EINVAL, "checkpoint: run_id has characters outside [A-Za-z0-9_-]");
  if (memchr(m->recipe, '\0', sizeof m->recipe) == NULL || !recipe_valid(m->recipe))
    return gf_fail(err, GF_EINVAL, "checkpoint: recipe is not printable ASCII of at most %d "
                   "characters", GF_CKPT_RECIPE_MAX);
  return gf_model_config_validate(&m->config, err);
}

gf_status gf_ckpt_meta_to_kv(const gf_ckpt_meta *m, gf_ckpt_meta_kv *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  GF_TRY(validate(m, err));
  /* Decimal integers of at most 20 digits: they fit nums[i] (24 bytes). */
  GF_TRY(gf_format(out->nums[0], sizeof out->nums[0], err, K_VERSION, "%d",
                   m->format_version));
  GF_TRY(gf_format(out->nums[1], sizeof out->nums[1], err, K_STEP, "%lld",
                   (long long)m->step));
  GF_TRY(gf_format(out->nums[2], sizeof out->nums[2], err, K_EPOCH, "%lld",
                   (long long)m->epoch));
  GF_TRY(gf_format(out->nums[3], sizeof out->nums[3], err, K_EPOCH_OFFSET,
                   "%lld", (long long)m->epoch_offset));
  GF_TRY(gf_format(out->nums[4], sizeof out->nums[4], err, K_SEED, "%llu",
                   (unsigned long long)m->seed));
  GF_TRY(gf_format(out->nums[5], sizeof out->nums[5], err, K_WORLD, "%d",
                   m->world_size));
  GF_TRY(gf_model_config_to_json_compact(&m->config, &out->config_json, err));
  memcpy(out->run_id, m->run_id, sizeof out->run_id);
  const gf_st_kv kv[GF_CKPT_META_NKEYS - 1] = {
      {K_VERSION, out->nums[0]}, {K_STEP, out->nums[1]},  {K_EPOCH, out->nums[2]},
      {K_EPOCH_OFFSET, out->nums[3]}, {K_SEED, out->nums[4]}, {K_WORLD, out->nums[5]},
      {K_RUN_ID, out->run_id},   {K_CONFIG, out->config_json},
  };
  memcpy(out->kv, kv, sizeof kv);
  out->n = GF_CKPT_META_NKEYS - 1;
  if (m->recipe[0]) {
    memcpy(out->recipe, m->recipe, sizeof out->recipe);
    out->kv[out->n++] = (gf_st_kv){K_RECIPE, out->recipe};
  }
  return GF_OK;
}

void gf_ckpt_meta_kv_free(gf_ckpt_meta_kv *kv) {
  if (!kv) return;
  free(kv->config_json);
  kv->config_json = NULL;
  kv->n = 0;
}

/* Strict unsigned decimal: digits only, no sign, no leading zeros except
 * "0", no overflow past max. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (!s || !*s || (s[0] == '0' && s[1])) return 0;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    uint64_t d = (uint64_t)(*p - '0');
    if (v > (max - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = v;
  return 1;
}

static gf_status get_u64(const gf_st_file *f, const char *key, uint64_t max, uint64_t *out,
                         gf_err *err) {
  const char *v = gf_st_meta_get(f, key);
  if (!v) return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s missing", key);
  if (!parse_u64(v, max, out))
    return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s=\"%.32s\" is not an integer in [0, %llu]",
                   key, v, (unsigned long long)max);
  return GF_OK;
}

gf_status gf_ckpt_meta_from_file(const gf_st_file *f, gf_ckpt_meta *out, gf_err *err) {
  gf_ckpt_meta m;
  memset(&m, 0, sizeof m);
  uint64_t u;
  gf_status st;
  if ((st = get_u64(f, K_VERSION, 1000000, &u, err)) != GF_OK) return st;
  m.format_version = (int)u;
  if ((st = get_u64(f, K_STEP, INT64_MAX, &u, err)) != GF_OK) return st;
  m.step = (int64_t)u;
  if ((st = get_u64(f, K_EPOCH, INT64_MAX, &u, err)) != GF_OK) return st;
  m.epoch = (int64_t)u;
  if ((st = get_u64(f, K_EPOCH_OFFSET, INT64_MAX, &u, err)) != GF_OK) return st;
  m.epoch_offset = (int64_t)u;
  if ((st = get_u64(f, K_SEED, UINT64_MAX, &m.seed, err)) != GF_OK) return st;
  if ((st = get_u64(f, K_WORLD, 1000000, &u, err)) != GF_OK) return st;
  m.world_size = (int)u;
  const char *rid = gf_st_meta_get(f, K_RUN_ID);
  if (!rid) return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s missing", K_RUN_ID);
  if (!gf_ckpt_run_id_valid(rid))
    return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s is not a run id", K_RUN_ID);
  memcpy(m.run_id, rid, strlen(rid) + 1);
  const char *cfg = gf_st_meta_get(f, K_CONFIG);
  if (!cfg) return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s missing", K_CONFIG);
  if ((st = gf_model_config_from_json(cfg, strlen(cfg), &m.config, err)) != GF_OK) {
    if (err) {
      char msg[sizeof err->msg];
      memcpy(msg, err->msg, sizeof msg);
      gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s: %s", K_CONFIG, msg);
    }
    return GF_EFORMAT;
  }
  const char *rec = gf_st_meta_get(f, K_RECIPE);
  if (rec && !recipe_valid(rec))
    return gf_fail(err, GF_EFORMAT, "checkpoint: metadata %s is not printable ASCII of at most "
                   "%d characters", K_RECIPE, GF_CKPT_RECIPE_MAX);
  if (rec) memcpy(m.recipe, rec, strlen(rec) + 1);
  if ((st = validate(&m, err)) != GF_OK) return st == GF_EINVAL ? GF_EFORMAT : st;
  *out = m;
  return GF_OK;
}

gf_status gf_ckpt_write(const char *path, const gf_st_tensor_desc *tensors, size_t n,
                        const gf_ckpt_meta *m, gf_err *err) {
  gf_ckpt_meta_kv kv;
  gf_status st = gf_ckpt_meta_to_kv(m, &kv, err);
  if (st != GF_OK) return st;
  st = gf_st_write_file(path, tensors, n, kv.kv, kv.n, GF_ST_DATA_SHA256, err);
  gf_ckpt_meta_kv_free(&kv);
  return st;
}

gf_status gf_ckpt_open(const char *path, gf_st_file *f, gf_ckpt_meta *m, gf_err *err) {
  gf_status st = gf_st_open(f, path, GF_ST_VERIFY_SHA256, err);
  if (st != GF_OK) return st;
  st = gf_ckpt_meta_from_file(f, m, err);
  if (st != GF_OK) gf_st_file_free(f);
  return st;
}
