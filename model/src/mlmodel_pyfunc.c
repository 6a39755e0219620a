/* mlmodel_pyfunc.c - writes the python_function flavor's files (the loader
 * module and its environment) into a model directory; see
 * mlmodel_pyfunc.h. The MLmodel entry itself is mlmodel_write.c's. */
#include "mlmodel_pyfunc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/atomic_file.h"
#include "gf/fs.h"
#include "gf/text.h"

#ifndef GF_PYFUNC_PYTHON_VERSION
#define GF_PYFUNC_PYTHON_VERSION "3.11.2"
#endif

/* Generated from model/python/ganflow_pyfunc.py (model/CMakeLists.txt). */
extern const unsigned char gf_pyfunc_source[];
extern const size_t gf_pyfunc_source_len;

/* Unpinned, so that loading it never warns about version mismatches; the
 * loader needs numpy alone (and pandas, which MLflow brings). */
static const char k_requirements[] = "mlflow\nnumpy\n";

const char *gf_pyfunc_default_python(void) { return GF_PYFUNC_PYTHON_VERSION; }

int gf_pyfunc_python_ok(const char *v) {
  if (!v || !*v || strlen(v) > 15) return 0;
  int parts = 0, digits = 0;
  for (const char *p = v;; p++) {
    if (*p >= '0' && *p <= '9') {
      digits++;
      continue;
    }
    if (digits == 0 || (*p != '.' && *p != '\0')) return 0;
    parts++;
    digits = 0;
    if (*p == '\0') break;
  }
  return parts <= 3;
}

/* One level only, unlike gf_mkdir_p: a model directory whose parent is
 * missing is the caller's mistake (a mistyped path), not a tree to create. */
gf_status gf_mlmodel_mkdir(const char *path, gf_err *err) {
  if (mkdir(path, 0755) != 0) {
    struct stat sb;
    if (errno != EEXIST || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
      return gf_fail(err, GF_EIO, "MLmodel: cannot create directory %s: %s", path,
                     strerror(errno));
  }
  return GF_OK;
}

gf_status gf_mlmodel_put(const char *dir, const char *name, const void *data, size_t len,
                         char sha[GF_SHA256_HEX_LEN + 1], gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(gf_path_join(path, sizeof path, dir, name, err));
  gf_status st = gf_sha256_buf(data, len, sha, err);
  if (st == GF_OK) st = gf_atomic_write_file(path, data, len, err);
  return st;
}

gf_status gf_pyfunc_write(const char *dir, const char *python, gf_pyfunc_files *out,
                          gf_err *err) {
  if (!gf_pyfunc_python_ok(python))
    return gf_fail(err, GF_EINVAL, "MLmodel: python_version \"%.32s\" is not a version",
                   python ? python : "(null)");
  char code_dir[GF_PATH_MAX];
  GF_TRY(gf_path_join(code_dir, sizeof code_dir, dir, "code", err));
  gf_status st = gf_mlmodel_mkdir(code_dir, err);
  if (st != GF_OK) return st;
  char env[512], conda[512];
  GF_TRY(gf_format(env, sizeof env, err, "python_env.yaml",
                   "python: %s\nbuild_dependencies:\n- pip\n- setuptools\n- wheel\n"
                   "dependencies:\n- -r requirements.txt\n", python));
  GF_TRY(gf_format(conda, sizeof conda, err, "conda.yaml",
                   "channels:\n- conda-forge\ndependencies:\n- python=%s\n- pip\n- pip:\n"
                   "  - mlflow\n  - numpy\nname: mlflow-env\n", python));
  out->name[0] = GF_MLMODEL_PYFUNC_CODE;
  out->name[1] = "requirements.txt";
  out->name[2] = "python_env.yaml";
  out->name[3] = "conda.yaml";
  st = gf_mlmodel_put(dir, out->name[0], gf_pyfunc_source, gf_pyfunc_source_len,
                     out->sha256[0], err);
  if (st == GF_OK)
    st = gf_mlmodel_put(dir, out->name[1], k_requirements, strlen(k_requirements), out->sha256[1], err);
  if (st == GF_OK) st = gf_mlmodel_put(dir, out->name[2], env, strlen(env), out->sha256[2], err);
  if (st == GF_OK) st = gf_mlmodel_put(dir, out->name[3], conda, strlen(conda), out->sha256[3], err);
  return st;
}
