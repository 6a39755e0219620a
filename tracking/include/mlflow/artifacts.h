/* mlflow/artifacts.h - run artifacts through the server's artifact proxy
 * (mlflow-artifacts:/...): upload, list, download.
 *
 * An artifact_uri argument is a run's artifact root or a registry download
 * URI: "mlflow-artifacts:/<path>", "mlflow-artifacts://host:port/<path>", or
 * "runs:/<run_id>[/<path>]" (resolved through runs/get). Every relative path,
 * given by the caller or sent by the server, must be safe (see
 * mlflow_path_is_safe) and every file written lands inside the target
 * directory. Downloads are written to a temporary name and renamed, so an
 * interrupted download never leaves a partial file under the final name. */
#ifndef MLFLOW_ARTIFACTS_H
#define MLFLOW_ARTIFACTS_H

#include "mlflow/client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlflow_file_info {
  char *path;        /* relative to the listed root, '/'-separated */
  int is_dir;
  int64_t file_size; /* bytes; -1 for directories or when unknown */
} mlflow_file_info;

typedef struct mlflow_file_list {
  mlflow_file_info *items;
  size_t count;
} mlflow_file_list;

void mlflow_file_list_free(mlflow_file_list *list); /* accepts NULL */

/* 1 when path is a non-empty relative path whose components are neither
 * empty, "." nor "..", with no backslash or control character; else 0. */
int mlflow_path_is_safe(const char *path);

/* Uploads one file to <artifact_uri>/<dest_path>; dest_path NULL means the
 * file's base name. */
mlflow_status mlflow_artifact_upload_file(mlflow_client *c,
                                          const char *artifact_uri,
                                          const char *local_path,
                                          const char *dest_path,
                                          mlflow_error *err);

/* Uploads every regular file under local_dir (recursively, symlinks not
 * followed) to <artifact_uri>/<dest_dir>/...; dest_dir NULL means the root. */
mlflow_status mlflow_artifact_upload_dir(mlflow_client *c,
                                         const char *artifact_uri,
                                         const char *local_dir,
                                         const char *dest_dir,
                                         mlflow_error *err);

/* Lists <artifact_uri>/<subpath> (subpath NULL: the root), one level or,
 * with recursive, the whole tree (directories included). Paths in the
 * result are relative to artifact_uri. The caller frees out. */
mlflow_status mlflow_artifact_list(mlflow_client *c, const char *artifact_uri,
                                   const char *subpath, int recursive,
                                   mlflow_file_list *out, mlflow_error *err);

/* Downloads <artifact_uri>/<path> to local_path (parent must exist). */
mlflow_status mlflow_artifact_download_file(mlflow_client *c,
                                            const char *artifact_uri,
                                            const char *path,
                                            const char *local_path,
                                            mlflow_error *err);

/* Downloads the tree <artifact_uri>/<subpath> (NULL: the root) into
 * local_dir, created if missing. */
mlflow_status mlflow_artifact_download_dir(mlflow_client *c,
                                           const char *artifact_uri,
                                           const char *subpath,
                                           const char *local_dir,
                                           mlflow_error *err);

#ifdef __cplusplus
}
#endif
#endif
