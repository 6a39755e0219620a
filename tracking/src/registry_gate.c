/* registry_gate.c - the promotion gate: move an alias to a version only when
 * the version's metric beats the holder's (see mlflow/registry.h for the
 * decisions). Reads versions and their runs; knows no metric's meaning. */
#include <assert.h>
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

/* Copies an id the server sent (a version number, a run id) into one of
 * the result's fields; MLFLOW_E_PROTOCOL naming it when it does not fit
 * (dst is then ""). NULL copies as "". */
static mlflow_status copy_id(char *dst, size_t cap, const char *src,
                             const char *what, mlflow_error *err) {
  return mlflow_format(dst, cap, err, MLFLOW_E_PROTOCOL, what, "%s",
                       src ? src : "");
}

/* Appends "alias A stays on version V" or "alias A stays unset". */
static int append_stays(mlflow_buf *b, int has_holder, const char *alias,
                        const char *holder_version) {
  if (has_holder)
    return mlflow_buf_appendf(b, "alias %s stays on version %s", alias,
                              holder_version);
  return mlflow_buf_appendf(b, "alias %s stays unset", alias);
}

/* Sets out->message to the line built in b (freed here). When it could not
 * be built, or is longer than out->message holds (a long metric key and a
 * long alias can make it so), a shorter line that always fits is set
 * instead, never a cut one; the versions, runs and values stay in out's
 * fields. */
static void set_message(mlflow_gate_result *out, mlflow_buf *b, int failed,
                        const char *metric) {
  if (!failed && b->data && b->len < sizeof out->message) {
    memcpy(out->message, b->data, b->len + 1);
  } else {
    /* metric is a valid key: at most MLFLOW_MAX_KEY_LEN bytes */
    int n = snprintf(out->message, sizeof out->message,
                     "%s: %s (the full comparison is in the result's fields)",
                     metric, mlflow_gate_verdict_name(out->verdict));
    assert(n >= 0 && (size_t)n < sizeof out->message);
    (void)n;
  }
  mlflow_buf_free(b);
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
  st = copy_id(out->candidate_run_id, sizeof out->candidate_run_id,
               cand.run_id, "the server's run id of the candidate version",
               err);
  mlflow_model_version_free(&cand);
  if (st) return st;

  mlflow_model_version holder;
  mlflow_error e2;
  memset(&e2, 0, sizeof e2);
  st = mlflow_alias_get(c, name, alias, &holder, &e2);
  if (st && st != MLFLOW_E_NOT_FOUND) {
    if (err) *err = e2;
    return st;
  }
  int has_holder = st == MLFLOW_OK && holder.version;
  st = MLFLOW_OK;
  if (has_holder &&
      !(st = copy_id(out->holder_version, sizeof out->holder_version,
                     holder.version, "the server's version number of the "
                     "alias holder", err)))
    st = copy_id(out->holder_run_id, sizeof out->holder_run_id,
                 holder.run_id, "the server's run id of the alias holder",
                 err);
  mlflow_model_version_free(&holder);
  if (st) return st;
  mlflow_buf msg = {0};
  int failed = 0; /* an append of msg failed (out of memory) */
  if (has_holder && !strcmp(out->holder_version, version)) {
    out->verdict = MLFLOW_GATE_PROMOTED_ALREADY;
    failed |= mlflow_buf_appendf(&msg, "%s: alias %s is already on version %s",
                                 metric, alias, version);
    set_message(out, &msg, failed, metric);
    return MLFLOW_OK;
  }

  if ((st = run_metric(c, out->candidate_run_id, metric,
                       &out->candidate_has_value, &out->candidate_value, err)))
    return st;
  if (!out->candidate_has_value) {
    out->verdict = MLFLOW_GATE_REFUSED_MISSING;
    if (!out->candidate_run_id[0])
      failed |= mlflow_buf_appendf(&msg, "%s: version %s has no run to read "
                                   "it from: refused, ", metric, version);
    else
      failed |= mlflow_buf_appendf(&msg, "%s: version %s (run %s) has no "
                                   "value (absent or NaN): refused, ", metric,
                                   version, out->candidate_run_id);
    failed |= append_stays(&msg, has_holder, alias, out->holder_version);
    set_message(out, &msg, failed, metric);
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
  /* "METRIC (higher is better): version V = X (run R) vs HOLDER: VERDICT,
   * TAIL" */
  failed |= mlflow_buf_appendf(&msg, "%s (%s is better): version %s = %.10g "
                               "(run %s) vs ", metric,
                               goal == MLFLOW_GATE_MAX ? "higher" : "lower",
                               version, out->candidate_value,
                               out->candidate_run_id);
  if (!has_holder)
    failed |= mlflow_buf_appendf(&msg, "no version holds alias %s", alias);
  else if (!out->holder_has_value)
    failed |= mlflow_buf_appendf(&msg, "version %s without a value (run %s)",
                                 out->holder_version,
                                 out->holder_run_id[0] ? out->holder_run_id
                                                       : "none");
  else
    failed |= mlflow_buf_appendf(&msg, "version %s = %.10g (run %s)",
                                 out->holder_version, out->holder_value,
                                 out->holder_run_id);
  failed |= mlflow_buf_appendf(&msg, ": %s, ", verdict_text);
  if (mlflow_gate_promoted(out->verdict))
    failed |= mlflow_buf_appendf(&msg, "alias %s -> %s", alias, version);
  else
    failed |= append_stays(&msg, has_holder, alias, out->holder_version);
  set_message(out, &msg, failed, metric);
  if (!mlflow_gate_promoted(out->verdict)) return MLFLOW_OK;
  return mlflow_alias_set(c, name, alias, version, err);
}
