/* cli_registry.c - `ganflow promote` and `ganflow models`; see gf/cli.h. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "gf/cli.h"
#include "gf/mlflow_status.h"

static gf_status from_mlflow(const mlflow_error *me, gf_err *err) {
  return gf_fail_mlflow(err, me, NULL);
}

gf_status gf_cli_promote(mlflow_client *c, const char *name,
                         const char *version, const char *alias, FILE *out,
                         gf_err *err) {
  if (!mlflow_alias_is_valid(alias))
    return gf_fail(err, GF_EINVAL, "--alias '%s': use letters, digits, _ and "
                   "-; 'latest' and v<number> are reserved", alias);
  mlflow_error me;
  memset(&me, 0, sizeof me);
  mlflow_model_version mv;
  memset(&mv, 0, sizeof mv);
  if (mlflow_model_version_get(c, name, version, &mv, &me) != MLFLOW_OK)
    return from_mlflow(&me, err);
  int ready = mv.status && strcmp(mv.status, "READY") == 0;
  char status[64];
  snprintf(status, sizeof status, "%s", mv.status ? mv.status : "unknown");
  mlflow_model_version_free(&mv);
  if (!ready)
    return gf_fail(err, GF_ESTATE, "%s version %s is %s, not READY: not "
                   "promoted", name, version, status);
  char was[32] = "none";
  mlflow_model_version old;
  memset(&old, 0, sizeof old);
  if (mlflow_alias_get(c, name, alias, &old, &me) == MLFLOW_OK && old.version)
    snprintf(was, sizeof was, "%s", old.version);
  mlflow_model_version_free(&old);
  if (mlflow_alias_set(c, name, alias, version, &me) != MLFLOW_OK)
    return from_mlflow(&me, err);
  fprintf(out, "%s@%s -> version %s (was %s)\n", name, alias, version, was);
  return GF_OK;
}

gf_status gf_cli_promote_if_better(mlflow_client *c, const char *name,
                                   const char *version, const char *alias,
                                   const char *metric_spec, FILE *out,
                                   int *promoted, gf_err *err) {
  *promoted = 0;
  if (!mlflow_alias_is_valid(alias))
    return gf_fail(err, GF_EINVAL, "--alias '%s': use letters, digits, _ and "
                   "-; 'latest' and v<number> are reserved", alias);
  mlflow_error me;
  memset(&me, 0, sizeof me);
  char metric[256];
  mlflow_gate_goal goal;
  if (mlflow_gate_metric_parse(metric_spec, metric, sizeof metric, &goal,
                               &me) != MLFLOW_OK)
    return gf_fail(err, GF_EINVAL, "--if-better: %s", me.message);
  mlflow_gate_result r;
  if (mlflow_alias_set_if_better(c, name, version, alias, metric, goal, &r,
                                 &me) != MLFLOW_OK) {
    if (r.message[0]) fprintf(out, "%s\n", r.message);
    return from_mlflow(&me, err);
  }
  fprintf(out, "%s\n", r.message);
  *promoted = mlflow_gate_promoted(r.verdict);
  return GF_OK;
}

gf_status gf_cli_models(mlflow_client *c, const char *name, FILE *out,
                        gf_err *err) {
  mlflow_model_version_list l;
  mlflow_error me;
  memset(&me, 0, sizeof me);
  if (mlflow_model_versions_search(c, name, &l, &me) != MLFLOW_OK)
    return from_mlflow(&me, err);
  if (l.count == 0) {
    if (name) {
      mlflow_model_version_list_free(&l);
      return gf_fail(err, GF_ENOTFOUND, "no versions of model '%s'", name);
    }
    fprintf(out, "no registered model versions\n");
  } else {
    fprintf(out, "%-24s %7s  %-20s %-24s %-32s %s\n", "MODEL", "VERSION",
            "STATUS", "ALIASES", "RUN", "CREATED (UTC)");
  }
  for (size_t i = 0; i < l.count; i++) {
    const mlflow_model_version *v = &l.items[i];
    /* model-versions/search leaves aliases out; model-versions/get has
     * them. */
    mlflow_model_version full;
    memset(&full, 0, sizeof full);
    if (v->n_aliases == 0 && v->name && v->version &&
        mlflow_model_version_get(c, v->name, v->version, &full, &me) ==
            MLFLOW_OK)
      v = &full;
    char aliases[256] = "-";
    size_t len = 0;
    for (size_t a = 0; a < v->n_aliases && len < sizeof aliases - 1; a++)
      len += (size_t)snprintf(aliases + len, sizeof aliases - len, "%s@%s",
                              a ? "," : "", v->aliases[a]);
    char when[32] = "-";
    if (v->creation_time_ms > 0) {
      time_t t = (time_t)(v->creation_time_ms / 1000);
      struct tm tm;
      gmtime_r(&t, &tm);
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    fprintf(out, "%-24s %7s  %-20s %-24s %-32s %s\n",
            v->name ? v->name : "?", v->version ? v->version : "?",
            v->status ? v->status : "?", aliases,
            v->run_id ? v->run_id : "-", when);
    mlflow_model_version_free(&full);
  }
  mlflow_model_version_list_free(&l);
  return GF_OK;
}
