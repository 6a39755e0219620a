/* mlmodel.h - the MLflow model directory of DESIGN §4.3:
 *
 *   <dir>/MLmodel                YAML: artifact_path, flavors.ganflow
 *                                {ganflow_version, config, files: {name:
 *                                {sha256}}}, mlflow_version, model_uuid,
 *                                run_id, signature {inputs, outputs,
 *                                params}, utc_time_created
 *   <dir>/generator.safetensors  G weights and BN statistics
 *   <dir>/config.json            gf_model_config as JSON
 *
 * The writer writes each file atomically, MLmodel last. The reader parses
 * MLmodel with libyaml (bounded: 1 MiB, nesting depth, no aliases), checks
 * the ganflow flavor, and verifies the SHA-256 of every listed file before
 * it returns; listed names must be plain file names (no '/', no "..", not
 * absolute). Which tensors G has is the networks' business.
 *
 * The signature is MLflow's tensor-based one (mlflow.models.ModelSignature,
 * TensorSpec), its inputs and outputs JSON strings inside the YAML:
 *   inputs:  [{"name": "seed", "type": "tensor",
 *              "tensor-spec": {"dtype": "int64", "shape": [-1]}}]
 *   outputs: [{"name": "image", "type": "tensor",
 *              "tensor-spec": {"dtype": "float32", "shape": [-1, C, H, W]}}]
 * (images in [-1, 1], as ganflow-serve's V2 infer and /invocations answer;
 * the PNG endpoints quantize them). The reader accepts an MLmodel without a
 * signature (written before it existed) and refuses a malformed one or one
 * that is not tensor-based. */
#ifndef GF_MLMODEL_H
#define GF_MLMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gf/model_config.h"
#include "gf/safetensors.h"
#include "gf/sha256.h"
#include "gf/status.h"

#define GF_MLMODEL_FILE "MLmodel"
#define GF_MLMODEL_GENERATOR "generator.safetensors"
#define GF_MLMODEL_CONFIG "config.json"
#define GF_MLMODEL_FLAVOR "ganflow"
#define GF_MLMODEL_MAX_BYTES (1u << 20)
#define GF_MLMODEL_SIG_INPUTS                                                 \
  "[{\"name\": \"seed\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\": " \
  "\"int64\", \"shape\": [-1]}}]"
#define GF_MLMODEL_SIG_MAX_TENSORS 16
#define GF_MLMODEL_SIG_MAX_DIMS 8

/* One tensor of the signature (a TensorSpec). */
typedef struct gf_mlmodel_tensor {
  char *name;                              /* malloc'd; NULL when unnamed */
  char dtype[16];                          /* numpy name: "int64", "float32" */
  int ndim;                                /* 0..GF_MLMODEL_SIG_MAX_DIMS */
  int64_t shape[GF_MLMODEL_SIG_MAX_DIMS];  /* -1 = any size */
} gf_mlmodel_tensor;

/* Writer input; strings borrowed for the call. */
typedef struct gf_mlmodel_info {
  const char *artifact_path;   /* e.g. "model"; required */
  const char *run_id;          /* MLflow run id; NULL writes no run_id */
  const char *mlflow_version;  /* e.g. "2.17.0"; required */
  const char *ganflow_version; /* e.g. "0.1.0"; required */
} gf_mlmodel_info;

/* Creates dir if missing (parent must exist) and writes generator.safetensors
 * (tensors + meta, with the data digest), config.json and MLmodel, each
 * atomically, MLmodel last. model_uuid (random v4, 32 hex digits) and
 * utc_time_created are generated; when uuid_out is non-NULL the uuid is
 * copied there. */
gf_status gf_mlmodel_write(const char *dir, const gf_model_config *cfg,
                           const gf_st_tensor_desc *tensors, size_t n,
                           const gf_st_kv *meta, size_t n_meta,
                           const gf_mlmodel_info *info, char uuid_out[33],
                           gf_err *err);

/* One entry of flavors.ganflow.files. */
typedef struct gf_mlmodel_file {
  char *name;                          /* plain file name, malloc'd */
  char sha256[GF_SHA256_HEX_LEN + 1];  /* lowercase hex */
} gf_mlmodel_file;

/* A parsed (and, from gf_mlmodel_read, verified) model directory. All
 * strings are malloc'd and owned by the struct; optional ones are NULL
 * when absent. */
typedef struct gf_mlmodel {
  char *artifact_path;
  char *run_id;
  char *model_uuid;
  char *utc_time_created;
  char *mlflow_version;
  char *ganflow_version;  /* required in the flavor */
  gf_model_config config; /* flavors.ganflow.config, validated */
  gf_mlmodel_file *files; /* n_files entries, names unique */
  size_t n_files;
  int has_signature;      /* 1 when MLmodel has a (non-null) signature */
  gf_mlmodel_tensor *sig_inputs;  /* n_sig_inputs entries, owned */
  size_t n_sig_inputs;
  gf_mlmodel_tensor *sig_outputs; /* n_sig_outputs entries, owned */
  size_t n_sig_outputs;
  char *dir;              /* gf_mlmodel_read only: the directory */
  char *generator_path;   /* gf_mlmodel_read only: dir/generator.safetensors */
  char *config_path;      /* gf_mlmodel_read only: dir/config.json */
} gf_mlmodel;

void gf_mlmodel_init(gf_mlmodel *m);
/* Frees everything m owns and re-initialises it; accepts NULL. */
void gf_mlmodel_free(gf_mlmodel *m);

/* Parses MLmodel text (len bytes, need not be NUL-terminated) without
 * touching the file system: structure, flavor, config, file names and
 * digest syntax. Allocates into m (init'd here; freed on failure). */
gf_status gf_mlmodel_parse(const char *yaml, size_t len, gf_mlmodel *m,
                           gf_err *err);
/* Reads dir/MLmodel, parses it, verifies every listed file's SHA-256
 * (GF_EINTEGRITY on mismatch, GF_EIO when missing), requires
 * generator.safetensors and config.json to be listed, and checks that
 * config.json equals the flavor config. Allocates into m (freed on
 * failure). */
gf_status gf_mlmodel_read(const char *dir, gf_mlmodel *m, gf_err *err);
/* Opens m's generator.safetensors into f and verifies its SHA-256 against
 * the MLmodel digest on the very bytes loaded (so a file swapped after
 * gf_mlmodel_read is caught), plus the safetensors data digest. f owns the
 * bytes afterwards; on failure f is left freed. */
gf_status gf_mlmodel_load_generator(const gf_mlmodel *m, gf_st_file *f,
                                    gf_err *err);
/* The digest recorded for a listed file name, or NULL. */
const char *gf_mlmodel_file_sha256(const gf_mlmodel *m, const char *name);

#endif
