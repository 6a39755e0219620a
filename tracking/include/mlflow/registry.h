/* mlflow/registry.h - the model registry: registered models, versions,
 * aliases, and models:/ URIs resolved to a local directory. */
#ifndef MLFLOW_REGISTRY_H
#define MLFLOW_REGISTRY_H

#include "mlflow/client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlflow_model_version {
  char *name;
  char *version;          /* a decimal string, as the server sends it */
  char *source;           /* artifact URI the version was created from */
  char *run_id;           /* may be NULL */
  char *status;           /* "READY", "PENDING_REGISTRATION", "FAILED_REGISTRATION" */
  char *status_message;   /* may be NULL */
  char **aliases;         /* n_aliases strings */
  size_t n_aliases;
  int64_t creation_time_ms;
} mlflow_model_version;

void mlflow_model_version_free(mlflow_model_version *mv); /* accepts NULL */

typedef struct mlflow_model_version_list {
  mlflow_model_version *items;
  size_t count;
} mlflow_model_version_list;

void mlflow_model_version_list_free(mlflow_model_version_list *l);

/* Creates the registered model; an existing one is not an error. */
mlflow_status mlflow_registered_model_create(mlflow_client *c,
                                             const char *name,
                                             mlflow_error *err);

mlflow_status mlflow_registered_model_delete(mlflow_client *c,
                                             const char *name,
                                             mlflow_error *err);

/* New version from source (an artifact URI such as the run's
 * "mlflow-artifacts:/.../artifacts/model"); run_id may be NULL. */
mlflow_status mlflow_model_version_create(mlflow_client *c, const char *name,
                                          const char *source,
                                          const char *run_id,
                                          mlflow_model_version *out,
                                          mlflow_error *err);

mlflow_status mlflow_model_version_get(mlflow_client *c, const char *name,
                                       const char *version,
                                       mlflow_model_version *out,
                                       mlflow_error *err);

/* Polls until the version is READY (MLFLOW_OK), FAILED_REGISTRATION
 * (MLFLOW_E_STATE) or timeout_s passes (MLFLOW_E_TIMEOUT). out may be NULL. */
mlflow_status mlflow_model_version_wait_ready(mlflow_client *c,
                                              const char *name,
                                              const char *version,
                                              double timeout_s,
                                              mlflow_model_version *out,
                                              mlflow_error *err);

/* Every version of one registered model, newest first; name NULL lists the
 * versions of every registered model. */
mlflow_status mlflow_model_versions_search(mlflow_client *c, const char *name,
                                           mlflow_model_version_list *out,
                                           mlflow_error *err);

/* Alias names: [A-Za-z0-9_-]+, not "latest" nor "v<digits>" (reserved). */
int mlflow_alias_is_valid(const char *alias);

/* Creates the alias or moves it to version. */
mlflow_status mlflow_alias_set(mlflow_client *c, const char *name,
                               const char *alias, const char *version,
                               mlflow_error *err);

/* The version an alias points to; MLFLOW_E_NOT_FOUND when the alias (or the
 * model) does not exist, although the server says 400 for a missing alias. */
mlflow_status mlflow_alias_get(mlflow_client *c, const char *name,
                               const char *alias, mlflow_model_version *out,
                               mlflow_error *err);

mlflow_status mlflow_alias_delete(mlflow_client *c, const char *name,
                                  const char *alias, mlflow_error *err);

/* *uri_out is malloc'd; the caller frees it. */
mlflow_status mlflow_model_version_download_uri(mlflow_client *c,
                                                const char *name,
                                                const char *version,
                                                char **uri_out,
                                                mlflow_error *err);

/* models:/NAME/VERSION, models:/NAME@ALIAS, models:/NAME/latest. */
typedef struct mlflow_model_uri {
  char *name;
  char *version;  /* set for /VERSION; NULL otherwise */
  char *alias;    /* set for @ALIAS; NULL otherwise */
  int latest;     /* 1 for /latest */
} mlflow_model_uri;

mlflow_status mlflow_model_uri_parse(const char *uri, mlflow_model_uri *out,
                                     mlflow_error *err);
void mlflow_model_uri_free(mlflow_model_uri *u); /* accepts NULL */

/* The model version a models:/ URI names right now. */
mlflow_status mlflow_model_resolve(mlflow_client *c, const char *uri,
                                   mlflow_model_version *out,
                                   mlflow_error *err);

/* Resolves uri and downloads that version's files into dest_dir, which must
 * not exist yet: they are fetched into a sibling temporary directory that is
 * renamed to dest_dir only when complete. out (may be NULL) receives the
 * version downloaded. */
mlflow_status mlflow_model_download(mlflow_client *c, const char *uri,
                                    const char *dest_dir,
                                    mlflow_model_version *out,
                                    mlflow_error *err);

#ifdef __cplusplus
}
#endif
#endif
