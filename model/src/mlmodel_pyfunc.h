/* mlmodel_pyfunc.h - the python_function flavor's files of the model
 * directory (gf/mlmodel.h): the loader module embedded from
 * model/python/ganflow_pyfunc.py at build time, and the environment files
 * MLflow's own flavors write beside it, and the two file helpers the
 * model directory's writer shares with it. Internal to gf_model
 * (mlmodel_write.c); not a parser of anything. */
#ifndef GF_MLMODEL_PYFUNC_H
#define GF_MLMODEL_PYFUNC_H

#include "gf/mlmodel.h"

#define GF_PYFUNC_N_FILES 4

/* What gf_pyfunc_write wrote: relative paths (static strings) and the
 * SHA-256 of each file's bytes. */
typedef struct gf_pyfunc_files {
  const char *name[GF_PYFUNC_N_FILES];
  char sha256[GF_PYFUNC_N_FILES][GF_SHA256_HEX_LEN + 1];
} gf_pyfunc_files;

/* The Python version the flavor records: the build's (CMake's
 * GF_PYFUNC_PYTHON_VERSION); a static string. */
const char *gf_pyfunc_default_python(void);

/* 1 when v is a version MLflow and pip read: 1 to 3 dot-separated decimal
 * numbers ("3", "3.11", "3.11.2"), at most 15 characters. */
int gf_pyfunc_python_ok(const char *v);

/* Creates directory path, or accepts it when it exists as a directory
 * (its parent must exist). */
gf_status gf_mlmodel_mkdir(const char *path, gf_err *err);

/* Writes dir/name atomically (gf_atomic_write_file) and the SHA-256 of its
 * bytes into sha. */
gf_status gf_mlmodel_put(const char *dir, const char *name, const void *data,
                         size_t len, char sha[GF_SHA256_HEX_LEN + 1],
                         gf_err *err);

/* Writes dir/code/ganflow_pyfunc.py (creating dir/code), requirements.txt,
 * python_env.yaml and conda.yaml, each atomically, and fills out. dir must
 * exist; python is a version that gf_pyfunc_python_ok accepts. Allocates
 * nothing that outlives the call. */
gf_status gf_pyfunc_write(const char *dir, const char *python,
                          gf_pyfunc_files *out, gf_err *err);

#endif
