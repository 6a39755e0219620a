/* mlmodel.h - the MLflow model directory of DESIGN §4.3:
 *
 *   <dir>/MLmodel                YAML: artifact_path, flavors.ganflow
 *                                {ganflow_version, config, files: {name:
 *                                {sha256}}}, flavors.python_function,
 *                                mlflow_version, model_uuid, run_id,
 *                                signature {inputs, outputs, params},
 *                                utc_time_created
 *   <dir>/generator.safetensors  G weights and BN statistics
 *   <dir>/config.json            gf_model_config as JSON; a conditional
 *                                model's may add "class_names": [K
 *                                strings] (also in flavors.ganflow.config
 *                                as a sequence; both or neither)
 *   <dir>/code/ganflow_pyfunc.py the python_function flavor's loader (a numpy
 *                                copy of the generator, model/python/)
 *   <dir>/requirements.txt, python_env.yaml, conda.yaml
 *                                its environment, as MLflow's flavors write it
 *
 * The writer writes each file atomically, MLmodel last, and lists every
 * other file with its SHA-256 in flavors.ganflow.files. The reader parses
 * MLmodel with libyaml (bounded: 1 MiB, nesting depth, no aliases), checks
 * the ganflow flavor, and verifies the SHA-256 of every listed file before
 * it returns; listed names must be relative paths inside the directory
 * (components not empty, no "..", not absolute). Only generator.safetensors
 * and config.json are required, so a directory written before the
 * python_function flavor existed still reads. Which tensors G has is the
 * networks' business.
 *
 * The signature is MLflow's column-based one (mlflow.models.ModelSignature,
 * ColSpec), so that MLflow's scoring server takes seeds or latents, with a
 * tensor output; its inputs and outputs are JSON strings inside the YAML:
 *   inputs:  [{"type": "long", "name": "seed", "required": false},
 *             {"type": "array", "items": {"type": "double"}, "name": "z",
 *              "required": false}]
 *   outputs: [{"name": "image", "type": "tensor",
 *              "tensor-spec": {"dtype": "float32", "shape": [-1, C, H, W]}}]
 * A class-conditional model (config num_classes K > 0) has a third input
 * column, {"type": "long", "name": "class", "required": false}: the
 * row's class index 0..K-1 (the python_function flavor also takes a class
 * name there when called without MLflow's schema enforcement, and requires
 * a class on every row of a conditional model).
 * Each row gives a seed or a z of z_dim numbers ("double", not "float":
 * MLflow refuses to narrow JSON numbers, parsed as float64, to float32);
 * images are in [-1, 1], as ganflow-serve's V2 infer and /invocations
 * answer them (the PNG endpoints quantize them). The reader also takes the
 * tensor-based signature written before (seed int64 [-1]) and an MLmodel
 * without a signature, and refuses a malformed one, one that mixes tensors
 * and columns, or column types other than MLflow's scalar types and arrays
 * of them. */
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
#define GF_MLMODEL_PYFUNC_MODULE "ganflow_pyfunc"
#define GF_MLMODEL_PYFUNC_CODE "code/" GF_MLMODEL_PYFUNC_MODULE ".py"
#define GF_MLMODEL_SIG_INPUTS                                          \
  "[{\"type\": \"long\", \"name\": \"seed\", \"required\": false}, " \
  "{\"type\": \"array\", \"items\": {\"type\": \"double\"}, "         \
  "\"name\": \"z\", \"required\": false}]"
/* A class-conditional model's inputs: GF_MLMODEL_SIG_INPUTS plus class. */
#define GF_MLMODEL_SIG_INPUTS_COND                                     \
  "[{\"type\": \"long\", \"name\": \"seed\", \"required\": false}, " \
  "{\"type\": \"array\", \"items\": {\"type\": \"double\"}, "         \
  "\"name\": \"z\", \"required\": false}, "                          \
  "{\"type\": \"long\", \"name\": \"class\", \"required\": false}]"
#define GF_MLMODEL_SIG_CLASS "class" /* the class column's name */
/* Class names a model directory may carry (the YAML reader's per-sequence
 * bound; datasets have at most 256). */
#define GF_MLMODEL_MAX_CLASS_NAMES 1024
#define GF_MLMODEL_SIG_MAX_TENSORS 16
#define GF_MLMODEL_SIG_MAX_DIMS 8

/* One input or output of the signature: a TensorSpec or a ColSpec. */
typedef struct gf_mlmodel_spec {
  char *name;      /* malloc'd; NULL when unnamed */
  char type[16];   /* "tensor", or the column's MLflow type: "long",
                      "double", "array", ... */
  char dtype[16];  /* tensor: numpy name ("int64", "float32"); array
                      column: the items' MLflow type ("double"); other
                      columns: "" */
  int required;    /* column: "required" (default 1); tensor: 1 */
  int ndim;                                /* tensor: 0..GF_MLMODEL_SIG_MAX_DIMS;
                                              column: 0 */
  int64_t shape[GF_MLMODEL_SIG_MAX_DIMS];  /* -1 = any size */
} gf_mlmodel_spec;

/* Writer input; strings borrowed for the call. */
typedef struct gf_mlmodel_info {
  const char *artifact_path;   /* e.g. "model"; required */
  const char *run_id;          /* MLflow run id; NULL writes no run_id */
  const char *mlflow_version;  /* e.g. "2.17.0"; required */
  const char *ganflow_version; /* e.g. "0.1.0"; required */
  const char *const *class_names; /* NULL: none written; else cfg's
                                     num_classes (> 0, at most
                                     GF_MLMODEL_MAX_CLASS_NAMES) names, label
                                     k's at [k], passing
                                     gf_class_names_check (gf/class_name.h).
                                     The last member: write it as NULL in
                                     a positional initializer (-Wextra's
                                     missing-field-initializers). */
} gf_mlmodel_info;

/* Creates dir if missing (parent must exist) and writes generator.safetensors
 * (tensors + meta, with the data digest), config.json, the python_function
 * flavor's files (code/ganflow_pyfunc.py, requirements.txt,
 * python_env.yaml, conda.yaml) and MLmodel, each atomically, MLmodel last.
 * The flavor records the build's Python version (CMake's
 * GF_PYFUNC_PYTHON_VERSION, detected from the checkout's .venv). model_uuid (random v4, 32 hex digits) and
 * utc_time_created are generated; when uuid_out is non-NULL the uuid is
 * copied there. A conditional config (num_classes > 0) gets the class
 * column in the signature; info->class_names, when given, go into
 * config.json and flavors.ganflow.config as "class_names" (GF_EINVAL when
 * the config is unconditional or a name is bad or repeated; there must be
 * num_classes of them, which the pointer array cannot show: the caller's
 * promise). Without class names config.json is exactly
 * gf_model_config_to_json's text. */
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
  char *pyfunc_loader;    /* flavors.python_function.loader_module; NULL
                             when the model has no such flavor (older) */
  char *pyfunc_python;    /* flavors.python_function.python_version, or NULL */
  size_t n_files;
  char **class_names;     /* flavors.ganflow.config.class_names (equal in
                             config.json): n_class_names malloc'd names,
                             label k's at [k], each passing
                             gf_class_name_check, none twice; NULL when
                             absent (always for unconditional models) */
  int n_class_names;      /* 0, or == config.num_classes */
  int has_signature;      /* 1 when MLmodel has a (non-null) signature */
  gf_mlmodel_spec *sig_inputs;    /* n_sig_inputs entries, owned */
  size_t n_sig_inputs;
  gf_mlmodel_spec *sig_outputs;   /* n_sig_outputs entries, owned */
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

/* The class index of a class given by name or index, for `class=`-style
 * arguments (out non-NULL): *out = k when name_or_index equals
 * m->class_names[k] exactly (bytes, case-sensitive), else when it is a
 * decimal index written without sign, spaces or leading zeros ("0", "7",
 * "12") below m->config.num_classes (a model without class names takes
 * indices only). A name wins over an index of the same spelling. Errors
 * (*out = -1): GF_EINVAL when the model is not class-conditional or the
 * argument is NULL or empty; GF_ENOTFOUND naming the argument and the
 * classes, with a hint when a name matches but for ASCII case. Allocates
 * nothing; the message quotes the argument printably. */
gf_status gf_mlmodel_class_index(const gf_mlmodel *m, const char *name_or_index,
                                 int *out, gf_err *err);

#endif
