/* cli_registry.c - `ganflow promote` and `ganflow models`; see gf/cli.h. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/cli.h"
#include "gf/mlflow_status.h"
#include "gf/strbuf.h"

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
  if (!mv.status || strcmp(mv.status, "READY") != 0) {
    gf_status st = gf_fail(err, GF_ESTATE, "%s version %s is %s, not READY: "
                           "not promoted", name, version,
                           mv.status ? mv.status : "unknown");
    mlflow_model_version_free(&mv);
    return st;
  }
  mlflow_model_version_free(&mv);
  /* The version the alias held: the registry's string, kept (not copied)
   * until it is printed. */
  mlflow_model_version old;
  memset(&old, 0, sizeof old);
  if (mlflow_alias_get(c, name, alias, &old, &me) != MLFLOW_OK)
    mlflow_model_version_free(&old);
  if (mlflow_alias_set(c, name, alias, version, &me) != MLFLOW_OK) {
    mlflow_model_version_free(&old);
    return from_mlflow(&me, err);
  }
  fprintf(out, "%s@%s -> version %s (was %s)\n", name, alias, version,
          old.version ? old.version : "none");
  mlflow_model_version_free(&old);
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
    /* "@a,@b": every alias, however long ("-" when none) */
    gf_strbuf ab;
    gf_strbuf_init(&ab);
    for (size_t a = 0; a < v->n_aliases; a++) {
      gf_strbuf_puts(&ab, a ? ",@" : "@");
      gf_strbuf_puts(&ab, v->aliases[a]);
    }
    char *aliases = v->n_aliases ? gf_strbuf_take(&ab, NULL) : NULL;
    char when[32] = "-";
    if (v->creation_time_ms > 0) {
      time_t t = (time_t)(v->creation_time_ms / 1000);
      struct tm tm;
      gmtime_r(&t, &tm);
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    if (v->n_aliases && !aliases) {
      mlflow_model_version_free(&full);
      mlflow_model_version_list_free(&l);
      return gf_fail(err, GF_ENOMEM, "out of memory");
    }
    fprintf(out, "%-24s %7s  %-20s %-24s %-32s %s\n",
            v->name ? v->name : "?", v->version ? v->version : "?",
            v->status ? v->status : "?", aliases ? aliases : "-",
            v->run_id ? v->run_id : "-", when);
    free(aliases);
    mlflow_model_version_free(&full);
  }
  mlflow_model_version_list_free(&l);
  return GF_OK;
}
