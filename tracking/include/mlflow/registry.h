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


/* ---- promotion gate (registry_gate.c) ----------------------------------
 * Moves an alias to a candidate version only when the candidate's metric
 * beats the version that holds the alias now. The value of a version is the
 * last value (runs/get's latest, i.e. the highest step) of the metric in
 * the run that produced it (the version's run_id). Generic: versions, runs,
 * one metric key; nothing here knows what the metric means.
 *
 * Decisions, in order:
 *   candidate not READY                      -> MLFLOW_E_STATE (an error)
 *   alias already on the candidate           -> PROMOTED_ALREADY (no call)
 *   candidate has no run, no such metric,
 *     or the value is NaN                    -> REFUSED_MISSING
 *   no version holds the alias               -> PROMOTED_NO_HOLDER
 *   the holder has no run, its run is gone,
 *     it lacks the metric or its value is NaN -> PROMOTED_HOLDER_MISSING
 *     (a holder that cannot be measured does not block a measured
 *     candidate; the message says so)
 *   candidate strictly better                -> PROMOTED_BETTER
 *   equal                                    -> REFUSED_EQUAL
 *   worse                                    -> REFUSED_WORSE
 * MLflow has no compare-and-set on aliases: another writer moving the alias
 * between the read and the write is not detected. */

typedef enum mlflow_gate_goal {
  MLFLOW_GATE_MIN = 0, /* lower is better (the default) */
  MLFLOW_GATE_MAX = 1, /* higher is better */
} mlflow_gate_goal;

typedef enum mlflow_gate_verdict {
  MLFLOW_GATE_PROMOTED_BETTER = 1,
  MLFLOW_GATE_PROMOTED_NO_HOLDER,
  MLFLOW_GATE_PROMOTED_HOLDER_MISSING,
  MLFLOW_GATE_PROMOTED_ALREADY,
  MLFLOW_GATE_REFUSED_WORSE,
  MLFLOW_GATE_REFUSED_EQUAL,
  MLFLOW_GATE_REFUSED_MISSING,
} mlflow_gate_verdict;

/* 1 for the PROMOTED_* verdicts (the alias is on the candidate afterwards). */
int mlflow_gate_promoted(mlflow_gate_verdict v);
/* "better", "no holder", "holder unmeasured", "already", "worse", "equal",
 * "missing"; "?" outside the enum. Static strings. */
const char *mlflow_gate_verdict_name(mlflow_gate_verdict v);

/* What the gate compared; filled by mlflow_alias_set_if_better. Plain
 * arrays, nothing to free. */
typedef struct mlflow_gate_result {
  mlflow_gate_verdict verdict;
  char holder_version[32];     /* "" when no version held the alias */
  char candidate_run_id[64];   /* "" when the version has no run */
  char holder_run_id[64];      /* "" when none */
  int candidate_has_value;     /* 1 when candidate_value is set (not NaN) */
  int holder_has_value;
  double candidate_value;
  double holder_value;
  char message[768];           /* one line, no newline: "swd/avg: version 4
                                  = 12.3 (run ...) vs version 3 = 15
                                  (run ...): better, alias production -> 4";
                                  never cut: when that line would not fit
                                  (a long key and alias), "swd/avg: better
                                  (the full comparison is in the result's
                                  fields)" */
} mlflow_gate_result;

/* Parses "METRIC[:min|max]" (the goal defaults to min) into metric
 * (metric_size bytes, NUL-terminated) and *goal. Only a last ":min" or
 * ":max" is a goal, so metric keys holding ':' stay whole. The key must be
 * a valid MLflow key (mlflow_validate_key). MLFLOW_E_INVALID otherwise. */
mlflow_status mlflow_gate_metric_parse(const char *spec, char *metric,
                                       size_t metric_size,
                                       mlflow_gate_goal *goal,
                                       mlflow_error *err);

/* The gate above for version of registered model name and alias. Returns
 * MLFLOW_OK when a decision was made (promoted or refused: see
 * out->verdict and out->message), another status when the registry or a
 * run could not be read or the alias could not be set (err says which);
 * MLFLOW_E_PROTOCOL, before any decision, when the server names a version
 * or run id longer than out's fields hold. out is always written (zeroed
 * first). */
mlflow_status mlflow_alias_set_if_better(mlflow_client *c, const char *name,
                                         const char *version,
                                         const char *alias,
                                         const char *metric,
                                         mlflow_gate_goal goal,
                                         mlflow_gate_result *out,
                                         mlflow_error *err);

#ifdef __cplusplus
}
#endif
#endif
