/* registry_gate.c - the promotion gate: move an alias to a version only when
 * the version's metric beats the holder's (see mlflow/registry.h for the
 * decisions). Reads versions and their runs; knows no metric's meaning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlflow/tracking.h"
#include "parse.h"

int mlflow_gate_promoted(mlflow_gate_verdict v) {
  return v == MLFLOW_GATE_PROMOTED_BETTER ||
         v == MLFLOW_GATE_PROMOTED_NO_HOLDER ||
         v == MLFLOW_GATE_PROMOTED_HOLDER_MISSING ||
         v == MLFLOW_GATE_PROMOTED_ALREADY;
}

const char *mlflow_gate_verdict_name(mlflow_gate_verdict v) {
  switch (v) {
    case MLFLOW_GATE_PROMOTED_BETTER: return "better";
    case MLFLOW_GATE_PROMOTED_NO_HOLDER: return "no holder";
    case MLFLOW_GATE_PROMOTED_HOLDER_MISSING: return "holder unmeasured";
    case MLFLOW_GATE_PROMOTED_ALREADY: return "already";
    case MLFLOW_GATE_REFUSED_WORSE: return "worse";
    case MLFLOW_GATE_REFUSED_EQUAL: return "equal";
    case MLFLOW_GATE_REFUSED_MISSING: return "missing";
  }
  return "?";
}

mlflow_status mlflow_gate_metric_parse(const char *spec, char *metric,
                                       size_t metric_size,
                                       mlflow_gate_goal *goal,
                                       mlflow_error *err) {
  if (metric_size) metric[0] = '\0';
  *goal = MLFLOW_GATE_MIN;
  if (!spec || !*spec)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "metric: empty (expected METRIC[:min|max])");
  size_t n = strlen(spec);
  if (n >= 4 && (!strcmp(spec + n - 4, ":min") || !strcmp(spec + n - 4, ":max"))) {
    *goal = spec[n - 2] == 'a' ? MLFLOW_GATE_MAX : MLFLOW_GATE_MIN;
    n -= 4;
  }
  if (n + 1 > metric_size)
    return mlflow_fail(err, MLFLOW_E_INVALID, "metric '%.64s...': too long",
                       spec);
  memcpy(metric, spec, n);
  metric[n] = '\0';
  mlflow_error e2;
  if (mlflow_validate_key(metric, &e2) != MLFLOW_OK) {
    mlflow_status st = mlflow_fail(err, MLFLOW_E_INVALID,
                                   "metric '%.300s' (expected "
                                   "METRIC[:min|max]): %s", spec, e2.message);
    metric[0] = '\0';
    return st;
  }
  return MLFLOW_OK;
}

/* The latest value of metric in run_id: *has 1 and *value when present and
 * not NaN, *has 0 when the run lacks it or the run does not exist (any
 * other failure is returned). */
static mlflow_status run_metric(mlflow_client *c, const char *run_id,
                                const char *metric, int *has, double *value,
                                mlflow_error *err) {
  *has = 0;
  *value = NAN;
  if (!run_id || !*run_id) return MLFLOW_OK;
  mlflow_run run;
  mlflow_error e2;
  memset(&e2, 0, sizeof e2);
  mlflow_status st = mlflow_run_get(c, run_id, &run, &e2);
  if (st == MLFLOW_E_NOT_FOUND) return MLFLOW_OK;
  if (st) {
    if (err) *err = e2;
    return st;
  }
  for (size_t i = 0; i < run.n_metrics; i++)
    if (run.metrics[i].key && !strcmp(run.metrics[i].key, metric)) {
      *value = run.metrics[i].value;
      *has = !isnan(*value);
      break;
    }
  mlflow_run_free(&run);
  return MLFLOW_OK;
}

static void copy_id(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

mlflow_status mlflow_alias_set_if_better(mlflow_client *c, const char *name,
                                         const char *version,
                                         const char *alias,
                                         const char *metric,
                                         mlflow_gate_goal goal,
                                         mlflow_gate_result *out,
                                         mlflow_error *err) {
  memset(out, 0, sizeof *out);
  out->candidate_value = NAN;
  out->holder_value = NAN;
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) ||
      (st = mlflow_need(version, "model version", err)) ||
      (st = mlflow_validate_key(metric, err)))
    return st;
  if (!mlflow_alias_is_valid(alias))
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "alias '%s': use letters, digits, _ and -; 'latest' "
                       "and v<number> are reserved", alias ? alias : "");

  mlflow_model_version cand;
  if ((st = mlflow_model_version_get(c, name, version, &cand, err))) return st;
  if (!cand.status || strcmp(cand.status, "READY")) {
    st = mlflow_fail(err, MLFLOW_E_STATE, "%s version %s is %s, not READY: "
                     "not promoted", name, version,
                     cand.status ? cand.status : "of unknown status");
    mlflow_model_version_free(&cand);
    return st;
  }
  copy_id(out->candidate_run_id, sizeof out->candidate_run_id, cand.run_id);
  mlflow_model_version_free(&cand);

  mlflow_model_version holder;
  mlflow_error e2;
  memset(&e2, 0, sizeof e2);
  st = mlflow_alias_get(c, name, alias, &holder, &e2);
  if (st && st != MLFLOW_E_NOT_FOUND) {
    if (err) *err = e2;
    return st;
  }
  int has_holder = st == MLFLOW_OK && holder.version;
  if (has_holder) {
    copy_id(out->holder_version, sizeof out->holder_version, holder.version);
    copy_id(out->holder_run_id, sizeof out->holder_run_id, holder.run_id);
  }
  mlflow_model_version_free(&holder);
  if (has_holder && !strcmp(out->holder_version, version)) {
    out->verdict = MLFLOW_GATE_PROMOTED_ALREADY;
    snprintf(out->message, sizeof out->message,
             "%s: alias %s is already on version %s", metric, alias, version);
    return MLFLOW_OK;
  }

  if ((st = run_metric(c, out->candidate_run_id, metric,
                       &out->candidate_has_value, &out->candidate_value, err)))
    return st;
  char stays[128];
  if (has_holder)
    snprintf(stays, sizeof stays, "alias %s stays on version %s", alias,
             out->holder_version);
  else
    snprintf(stays, sizeof stays, "alias %s stays unset", alias);
  if (!out->candidate_has_value) {
    out->verdict = MLFLOW_GATE_REFUSED_MISSING;
    if (!out->candidate_run_id[0])
      snprintf(out->message, sizeof out->message,
               "%s: version %s has no run to read it from: refused, %s",
               metric, version, stays);
    else
      snprintf(out->message, sizeof out->message,
               "%s: version %s (run %s) has no value (absent or NaN): "
               "refused, %s", metric, version, out->candidate_run_id, stays);
    return MLFLOW_OK;
  }

  const char *verdict_text;
  if (!has_holder) {
    out->verdict = MLFLOW_GATE_PROMOTED_NO_HOLDER;
  } else {
    if ((st = run_metric(c, out->holder_run_id, metric, &out->holder_has_value,
                         &out->holder_value, err)))
      return st;
    if (!out->holder_has_value)
      out->verdict = MLFLOW_GATE_PROMOTED_HOLDER_MISSING;
    else if (out->candidate_value == out->holder_value)
      out->verdict = MLFLOW_GATE_REFUSED_EQUAL;
    else if (goal == MLFLOW_GATE_MAX ? out->candidate_value > out->holder_value
                                     : out->candidate_value < out->holder_value)
      out->verdict = MLFLOW_GATE_PROMOTED_BETTER;
    else
      out->verdict = MLFLOW_GATE_REFUSED_WORSE;
  }
  switch (out->verdict) {
    case MLFLOW_GATE_PROMOTED_NO_HOLDER: verdict_text = "promoted"; break;
    case MLFLOW_GATE_PROMOTED_HOLDER_MISSING: verdict_text = "promoted anyway"; break;
    case MLFLOW_GATE_REFUSED_EQUAL: verdict_text = "equal, not better: refused"; break;
    case MLFLOW_GATE_REFUSED_WORSE: verdict_text = "worse: refused"; break;
    default: verdict_text = "better"; break;
  }
  char cand_part[256], holder_part[256], tail[160];
  snprintf(cand_part, sizeof cand_part, "version %s = %.10g (run %s)", version,
           out->candidate_value, out->candidate_run_id);
  if (!has_holder)
    snprintf(holder_part, sizeof holder_part, "no version holds alias %s",
             alias);
  else if (!out->holder_has_value)
    snprintf(holder_part, sizeof holder_part, "version %s without a value "
             "(run %s)", out->holder_version,
             out->holder_run_id[0] ? out->holder_run_id : "none");
  else
    snprintf(holder_part, sizeof holder_part, "version %s = %.10g (run %s)",
             out->holder_version, out->holder_value, out->holder_run_id);
  if (mlflow_gate_promoted(out->verdict))
    snprintf(tail, sizeof tail, "alias %s -> %s", alias, version);
  else
    snprintf(tail, sizeof tail, "%s", stays);
  snprintf(out->message, sizeof out->message, "%s (%s is better): %s vs %s: "
           "%s, %s", metric, goal == MLFLOW_GATE_MAX ? "higher" : "lower",
           cand_part, holder_part, verdict_text, tail);
  if (!mlflow_gate_promoted(out->verdict)) return MLFLOW_OK;
  return mlflow_alias_set(c, name, alias, version, err);
}
