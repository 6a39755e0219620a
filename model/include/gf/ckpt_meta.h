/* ckpt_meta.h - the checkpoint metadata of DESIGN §4.2 as safetensors
 * header metadata (string to string), and the checkpoint file write/open
 * pair that adds and verifies the SHA-256 of the tensor data.
 *
 * Keys (all values decimal or text):
 *   ganflow.format_version  ganflow.step  ganflow.epoch  ganflow.epoch_offset
 *   ganflow.seed  ganflow.world_size  ganflow.run_id  ganflow.config (JSON)
 *   ganflow.data_sha256 (GF_ST_DATA_SHA256_KEY, added by the writer)
 *   ganflow.recipe (optional: how the run trains, which a bit-exact
 *   continuation must repeat; see gf_ckpt_meta.recipe)
 * Which tensors a checkpoint holds is the trainer's business, not this
 * file's. */
#ifndef GF_CKPT_META_H
#define GF_CKPT_META_H

#include <stddef.h>
#include <stdint.h>

#include "gf/model_config.h"
#include "gf/safetensors.h"
#include "gf/status.h"

#define GF_CKPT_FORMAT_VERSION 1
#define GF_CKPT_RUN_ID_MAX 63 /* chars; MLflow run ids are 32 hex digits */
#define GF_CKPT_META_NKEYS 9 /* at most */
#define GF_CKPT_RECIPE_MAX 255 /* chars of ganflow.recipe */

typedef struct gf_ckpt_meta {
  int format_version;          /* == GF_CKPT_FORMAT_VERSION */
  int64_t step;                /* optimizer steps completed, >= 0 */
  int64_t epoch;               /* current epoch index, >= 0 */
  int64_t epoch_offset;        /* samples of the current epoch consumed, >= 0 */
  uint64_t seed;               /* the run's Philox seed */
  int world_size;              /* ranks that wrote it, >= 1 */
  char run_id[GF_CKPT_RUN_ID_MAX + 1]; /* [A-Za-z0-9_-]*, "" when untracked */
  gf_model_config config;
  char recipe[GF_CKPT_RECIPE_MAX + 1]; /* the trainer's words for the
                                 training recipe ("loss=hinge,d_steps=2,...",
                                 printable ASCII); "" when absent (a file of
                                 an older ganflow, or not written) */
} gf_ckpt_meta;

/* The metadata as strings, ready for gf_st_write_*. kv[i] point into this
 * struct (nums, config_json, run_id copy): do not copy or move it while kv
 * is in use. config_json is malloc'd; gf_ckpt_meta_kv_free releases it. */
typedef struct gf_ckpt_meta_kv {
  gf_st_kv kv[GF_CKPT_META_NKEYS];
  size_t n;
  char nums[6][24];
  char run_id[GF_CKPT_RUN_ID_MAX + 1];
  char recipe[GF_CKPT_RECIPE_MAX + 1];
  char *config_json;
} gf_ckpt_meta_kv;

/* Validates m and fills out (allocates out->config_json). */
gf_status gf_ckpt_meta_to_kv(const gf_ckpt_meta *m, gf_ckpt_meta_kv *out,
                             gf_err *err);
/* Frees config_json; accepts NULL. */
void gf_ckpt_meta_kv_free(gf_ckpt_meta_kv *kv);

/* 1 when the NUL-terminated s is a run id as a checkpoint holds one:
 * [A-Za-z0-9_-]*, at most GF_CKPT_RUN_ID_MAX characters ("" too: an
 * untracked run); else 0. */
int gf_ckpt_run_id_valid(const char *s);

/* Reads and validates the metadata of a parsed file into *out (nothing
 * allocated). GF_EFORMAT names the bad or missing key. */
gf_status gf_ckpt_meta_from_file(const gf_st_file *f, gf_ckpt_meta *out,
                                 gf_err *err);

/* Writes a checkpoint atomically: tensors + metadata + data digest. */
gf_status gf_ckpt_write(const char *path, const gf_st_tensor_desc *tensors,
                        size_t n, const gf_ckpt_meta *m, gf_err *err);
/* Opens a checkpoint: strict parse, data digest verified (GF_EINTEGRITY on
 * mismatch), metadata read into *m. f owns the file bytes afterwards
 * (gf_st_file_free); on failure f is left freed. */
gf_status gf_ckpt_open(const char *path, gf_st_file *f, gf_ckpt_meta *m,
                       gf_err *err);

#endif
