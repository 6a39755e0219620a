/* test_serve_import.c - integration: `ganflow import stylegan2-ada` against
 * the `mlflow` fixture, then ganflow-serve on what it registered.
 *   - a truncated snapshot: exit 1, nothing written, nothing registered;
 *   - sg2_tiny.pkl with --register NAME --alias prod: exit 0; the run of
 *     the import ended FINISHED, the alias points at version 1;
 *   - ganflow-serve on models:/NAME@prod: GET ...?seed=3&psi=0.7 a PNG
 *     (decoded by libpng, 32x32 RGB), the same request the same bytes,
 *     psi=1 and noise=random other bytes, V2 parameters {"psi": 0.7}
 *     answered; hostile style values a 400 naming them; psi on an mlp
 *     model a 400;
 *   - `ganflow generate --psi 0.7` writes the server's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "serve_test_util.h"

#define NAME "sg2-imported"
#define MLP "sg2-import-mlp"

static void get(const st_server *s, const char *model, const char *query,
                st_http *h) {
  char url[1400];
  snprintf(url, sizeof url, "%s/v1/models/%s/generate?%s", s->base, model,
           query);
  REQUIRE(st_get(url, h) == 0);
}

static size_t versions_of(mlflow_client *c, const char *name) {
  mlflow_model_version_list l;
  memset(&l, 0, sizeof l);
  mlflow_error e;
  if (mlflow_model_versions_search(c, name, &l, &e) != MLFLOW_OK) return 0;
  size_t n = l.count;
  mlflow_model_version_list_free(&l);
  return n;
}

static void refusals(mlflow_client *c, const char *uri) {
  char trunc[600], out[600], log[600];
  snprintf(trunc, sizeof trunc, "%s/trunc.pkl", GF_TEST_TMP);
  snprintf(out, sizeof out, "%s/trunc-out", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/trunc.log", GF_TEST_TMP);
  size_t len = 0;
  char *pkl = st_slurp(GF_SOURCE_DIR "/tests/model/data/sg2_tiny.pkl", &len);
  REQUIRE(pkl && len > 5000);
  FILE *f = fopen(trunc, "wb");
  REQUIRE(f && fwrite(pkl, 1, len - 100, f) == len - 100);
  fclose(f);
  free(pkl);
  char *argv[] = {GF_CLI_BIN, "import", "stylegan2-ada", trunc, "--out", out,
                  "--register", NAME "-bad", "--alias", "prod", NULL};
  int rc = tu_run_log(log, argv, "MLFLOW_TRACKING_URI", uri);
  CHECK_INT_EQ(rc, 1);
  struct stat sb;
  CHECK(stat(out, &sb) != 0); /* nothing written */
  CHECK_INT_EQ(versions_of(c, NAME "-bad"), 0); /* nothing registered */
  char *text = st_slurp(log, &len);
  CHECKF(text && strstr(text, "truncated"), "%s", text ? text : "(no log)");
  free(text);
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  refusals(c, uri);

  char log[600], v[32];
  snprintf(log, sizeof log, "%s/import.log", GF_TEST_TMP);
  char *imp[] = {GF_CLI_BIN, "import", "stylegan2-ada",
                 GF_SOURCE_DIR "/tests/model/data/sg2_tiny.pkl", "--register",
                 NAME, "--alias", "prod", NULL};
  int rc = tu_run_log(log, imp, "MLFLOW_TRACKING_URI", uri);
  if (rc != 0) st_print_log(log);
  REQUIRE(rc == 0);
  mlflow_model_version mv;
  mlflow_error me;
  REQUIRE(mlflow_alias_get(c, NAME, "prod", &mv, &me) == MLFLOW_OK);
  CHECK_STR_EQ(mv.version, "1");
  mlflow_run run;
  REQUIRE(mv.run_id && mlflow_run_get(c, mv.run_id, &run, &me) == MLFLOW_OK);
  CHECK(run.info.status == MLFLOW_RUN_FINISHED);
  mlflow_run_free(&run);
  mlflow_model_version_free(&mv);
  st_register_synthetic(c, MLP, 9, 0, GF_TEST_TMP, v);

  st_server s;
  const char *extra[] = {"--model", "models:/" NAME "@prod", "--model",
                         "models:/" MLP "/1", "--poll", "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);
  st_http a, b, p1, nr;
  get(&s, NAME, "seed=3&psi=0.7", &a);
  get(&s, NAME, "seed=3&psi=0.7", &b);
  get(&s, NAME, "seed=3", &p1);
  get(&s, NAME, "seed=3&psi=0.7&noise=random", &nr);
  REQUIRE(a.status == 200 && b.status == 200 && p1.status == 200 &&
          nr.status == 200);
  int w = 0, h = 0, ch = 0;
  uint8_t *pix = NULL;
  CHECK(st_png_decode(a.body, a.len, &w, &h, &ch, &pix) == 0);
  CHECK(w == 32 && h == 32 && ch == 3);
  free(pix);
  CHECK(a.len == b.len && memcmp(a.body, b.body, a.len) == 0);
  CHECK(a.len != p1.len || memcmp(a.body, p1.body, a.len) != 0);
  CHECK(a.len != nr.len || memcmp(a.body, nr.body, a.len) != 0);

  /* hostile values, and a model that cannot honour them */
  const struct { const char *model, *q, *name; } bad[] = {
      {NAME, "seed=1&psi=nan", "psi"}, {NAME, "seed=1&noise=loud", "noise"},
      {NAME, "seed=1&trunc_cutoff=99", "trunc_cutoff"},
      {NAME, "seed=1&mix=2", "mix"}, {NAME, "mix=2&mix_from=40", "mix_from"},
      {MLP, "seed=1&psi=0.7", "psi"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    st_http e;
    get(&s, bad[i].model, bad[i].q, &e);
    CHECKF(e.status == 400 && e.body && strstr(e.body, bad[i].name),
           "%s?%s: %ld %.*s", bad[i].model, bad[i].q, (long)e.status, (int)e.len,
           e.body ? e.body : "");
    st_http_free(&e);
  }
  /* V2: the same names in the request's parameters */
  char url[600];
  snprintf(url, sizeof url, "%s/v2/models/%s/infer", s.base, NAME);
  const char *body = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                     "\"datatype\": \"INT64\", \"data\": [3]}], "
                     "\"parameters\": {\"psi\": 0.7, \"mix\": 4, "
                     "\"mix_from\": 3}}";
  const char *hdr[] = {"Content-Type: application/json", NULL};
  st_http v2;
  REQUIRE(st_request("POST", url, hdr, body, strlen(body), 60, &v2) == 0);
  CHECKF(v2.status == 200, "%ld %.*s", (long)v2.status, (int)v2.len,
         v2.body ? v2.body : "");
  st_http_free(&v2);

  /* ganflow generate --psi 0.7: the server's bytes */
  char out[600], cache[600];
  snprintf(out, sizeof out, "%s/cli.png", GF_TEST_TMP);
  snprintf(cache, sizeof cache, "%s/cli-cache", GF_TEST_TMP);
  char *gen[] = {GF_CLI_BIN, "generate", "--model", "models:/" NAME "@prod",
                 "--seed", "3", "--psi", "0.7", "-o", out, "--cache-dir",
                 cache, NULL};
  rc = tu_run_log(log, gen, "MLFLOW_TRACKING_URI", uri);
  if (rc != 0) st_print_log(log);
  CHECK_INT_EQ(rc, 0);
  size_t len = 0;
  char *file = st_slurp(out, &len);
  CHECK(file && len == a.len && memcmp(file, a.body, len) == 0);
  free(file);
  st_http_free(&a);
  st_http_free(&b);
  st_http_free(&p1);
  st_http_free(&nr);
  CHECK_INT_EQ(st_server_stop(&s), 0);
  mlflow_client_free(c);
  free(uri);
  return check_report();
}
