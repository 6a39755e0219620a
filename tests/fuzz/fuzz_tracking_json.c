/* fuzz_tracking_json.c - fuzz target for the parsers of successful (2xx)
 * answers: the input goes through mlflow_parse_json_object, and the object
 * (and its usual wrapper member) through every parse_* function of parse.h:
 * experiment, run info, run, run list, model version, metric page, and the
 * artifact file list with and without a prefix.
 * Checks the documented contracts: on failure the output struct holds
 * nothing (all zero); on success every string is set where promised, every
 * listed artifact path is safe and starts with its prefix. Everything is
 * freed (LeakSanitizer-clean). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static void check_run(const mlflow_run *r) {
  if (!r->info.run_id || !r->info.run_id[0]) abort();
  for (size_t i = 0; i < r->n_metrics; i++)
    if (!r->metrics[i].key) abort();
  for (size_t i = 0; i < r->n_params; i++)
    if (!r->params[i].key || !r->params[i].value) abort();
  for (size_t i = 0; i < r->n_tags; i++)
    if (!r->tags[i].key || !r->tags[i].value) abort();
}

static void check_err(mlflow_status st, const mlflow_error *err) {
  if (err->status != st || strnlen(err->message, sizeof err->message) >=
                               sizeof err->message)
    abort();
}

static void run_parsers(const cJSON *j) {
  mlflow_error err;

  mlflow_experiment e;
  mlflow_status st = mlflow_parse_experiment(j, &e, &err);
  if (st == MLFLOW_OK) {
    if (!e.experiment_id) abort();
  } else {
    check_err(st, &err);
    if (!all_zero(&e, sizeof e)) abort();
  }
  mlflow_experiment_free(&e);

  mlflow_run_info ri;
  st = mlflow_parse_run_info(j, &ri, &err);
  if (st == MLFLOW_OK) {
    if (!ri.run_id || !ri.run_id[0]) abort();
  } else {
    check_err(st, &err);
    if (!all_zero(&ri, sizeof ri)) abort();
  }
  mlflow_run_info_free(&ri);

  mlflow_run run;
  st = mlflow_parse_run(j, &run, &err);
  if (st == MLFLOW_OK) {
    check_run(&run);
  } else {
    check_err(st, &err);
    if (!all_zero(&run, sizeof run)) abort();
  }
  mlflow_run_free(&run);

  mlflow_run_list rl;
  st = mlflow_parse_run_list(j, &rl, &err);
  if (st == MLFLOW_OK) {
    for (size_t i = 0; i < rl.count; i++) check_run(&rl.runs[i]);
    if (rl.next_page_token && !rl.next_page_token[0]) abort();
  } else {
    check_err(st, &err);
    if (!all_zero(&rl, sizeof rl)) abort();
  }
  mlflow_run_list_free(&rl);

  mlflow_model_version mv;
  st = mlflow_parse_model_version(j, &mv, &err);
  if (st == MLFLOW_OK) {
    if (!mv.name || !mv.version) abort();
    for (size_t i = 0; i < mv.n_aliases; i++)
      if (!mv.aliases[i]) abort();
  } else {
    check_err(st, &err);
    if (!all_zero(&mv, sizeof mv)) abort();
  }
  mlflow_model_version_free(&mv);

  /* Appends: what it holds on failure is the caller's to free. */
  mlflow_metric_list ml = {0};
  st = mlflow_parse_metric_page(j, &ml, &err);
  if (st != MLFLOW_OK) check_err(st, &err);
  for (size_t i = 0; i < ml.count; i++)
    if (!ml.items[i].key) abort();
  size_t first = ml.count;
  if (st == MLFLOW_OK) { /* a second page appends after the first */
    st = mlflow_parse_metric_page(j, &ml, &err);
    if (st == MLFLOW_OK && ml.count != 2 * first) abort();
  }
  mlflow_metric_list_free(&ml);

  static const char *const prefixes[] = {"", "dir/", "a/b/"};
  for (size_t k = 0; k < 3; k++) {
    mlflow_file_list fl = {0};
    st = mlflow_parse_file_list(j, prefixes[k], &fl, &err);
    if (st != MLFLOW_OK) check_err(st, &err);
    size_t pl = strlen(prefixes[k]);
    for (size_t i = 0; i < fl.count; i++) {
      const char *p = fl.items[i].path;
      if (!p || strncmp(p, prefixes[k], pl) != 0) abort();
      if (!mlflow_path_is_safe(p)) abort();
      if (fl.items[i].is_dir && fl.items[i].file_size != -1) abort();
    }
    mlflow_file_list_free(&fl);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cJSON *j = NULL;
  mlflow_error err;
  mlflow_status st =
      mlflow_parse_json_object("GET x", (const char *)data, size, &j, &err);
  if (st != MLFLOW_OK) {
    if (j || st != MLFLOW_E_PROTOCOL) abort();
    check_err(st, &err);
    return 0;
  }
  if (!cJSON_IsObject(j)) abort();
  run_parsers(j);
  /* The members the library's callers unwrap. */
  static const char *const wrappers[] = {"experiment", "run", "model_version"};
  for (size_t k = 0; k < 3; k++) {
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(j, wrappers[k]);
    if (inner) run_parsers(inner);
  }
  const cJSON *info = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(j, "run"), "info");
  if (info) run_parsers(info);
  /* Typed field access, as the callers use it. */
  int64_t i64;
  double d;
  (void)mlflow_json_get_int64(j, "start_time", &i64);
  (void)mlflow_json_get_double(j, "value", &d);
  (void)mlflow_json_str(j, "next_page_token");
  cJSON_Delete(j);
  return 0;
}
