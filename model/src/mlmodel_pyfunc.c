/* mlmodel_pyfunc.c - writes the python_function flavor's files (the loader
 * module and its environment) into a model directory; see
 * mlmodel_pyfunc.h. The MLmodel entry itself is mlmodel_write.c's. */
#include "mlmodel_pyfunc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/atomic_file.h"

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
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
    return gf_fail(err, GF_EINVAL, "MLmodel: path %s/%s too long", dir, name);
  gf_status st = gf_sha256_buf(data, len, sha, err);
  if (st == GF_OK) st = gf_atomic_write_file(path, data, len, err);
  return st;
}

gf_status gf_pyfunc_write(const char *dir, const char *python, gf_pyfunc_files *out,
                          gf_err *err) {
  if (!gf_pyfunc_python_ok(python))
    return gf_fail(err, GF_EINVAL, "MLmodel: python_version \"%.32s\" is not a version",
                   python ? python : "(null)");
  char code_dir[4096];
  if ((size_t)snprintf(code_dir, sizeof code_dir, "%s/code", dir) >= sizeof code_dir)
    return gf_fail(err, GF_EINVAL, "MLmodel: path %s too long", dir);
  gf_status st = gf_mlmodel_mkdir(code_dir, err);
  if (st != GF_OK) return st;
  char env[512], conda[512];
  snprintf(env, sizeof env,
           "python: %s\nbuild_dependencies:\n- pip\n- setuptools\n- wheel\n"
           "dependencies:\n- -r requirements.txt\n", python);
  snprintf(conda, sizeof conda,
           "channels:\n- conda-forge\ndependencies:\n- python=%s\n- pip\n- pip:\n"
           "  - mlflow\n  - numpy\nname: mlflow-env\n", python);
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
