/* test_serve_e2e.c - the whole loop against the `mlflow` fixture: train
 * mlp on Fashion-MNIST for 20 steps with ganflow-train (registered, alias
 * candidate), `ganflow promote` to @production, `ganflow models`, then
 * ganflow-serve on a free port: valid PNGs (libpng), the same seed gives
 * the same bytes and different seeds differ, a 4x4 grid, `ganflow
 * generate` writes the very bytes the server answers, JSON / V2 / MLflow
 * scoring answers agree with each other, metadata and /metrics. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "fashion.h"
#include "proc_util.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define MODEL "e2e-fashion-mlp"

/* Runs argv (NULL-terminated) with output into log; returns exit status. */
static int run(char *const *argv, const char *log, const char *uri) {
  return tu_run_log(log, argv, "MLFLOW_TRACKING_URI", uri);
}

static void get(const st_server *s, const char *path, st_http *h) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  REQUIRE(st_get(url, h) == 0);
}

static void check_png(const st_http *h, int w_expect, int h_expect) {
  int w = 0, hh = 0, c = 0;
  uint8_t *pix = NULL;
  CHECK_INT_EQ(h->status, 200);
  CHECK_STR_EQ(h->ctype, "image/png");
  CHECKF(st_png_decode(h->body, h->len, &w, &hh, &c, &pix) == 0,
         "libpng could not decode %zu bytes", h->len);
  CHECK_INT_EQ(w, w_expect);
  CHECK_INT_EQ(hh, h_expect);
  CHECK_INT_EQ(c, 1);
  /* A generator's output, not a blank: several distinct gray levels. */
  int seen[256] = {0}, distinct = 0;
  for (int i = 0; pix && i < w * hh; i++)
    if (!seen[pix[i]]++) distinct++;
  CHECKF(distinct > 16, "only %d gray levels", distinct);
  free(pix);
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  char log[600], ck[600];
  snprintf(log, sizeof log, "%s/train.log", GF_TEST_TMP);
  snprintf(ck, sizeof ck, "%s/ck", GF_TEST_TMP);

  /* 1. train and register (alias candidate) */
  char *train[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                   "--steps", "20", "--batch", "32", "--threads", "2",
                   "--sample-every", "0", "--eval-every", "0",
                   "--checkpoint-every", "20", "--checkpoint-dir", ck,
                   "--experiment", "serve-e2e", "--register-model", MODEL,
                   "--alias", "candidate", NULL};
  int rc = run(train, log, uri);
  if (rc != 0) st_print_log(log);
  REQUIRE(rc == 0);

  /* 2. promote with the CLI; a missing version is refused */
  char *promote[] = {GF_CLI_BIN, "promote", MODEL, "1", "--alias",
                     "production", NULL};
  rc = run(promote, log, uri);
  if (rc != 0) st_print_log(log);
  CHECK_INT_EQ(rc, 0);
  char *promote_bad[] = {GF_CLI_BIN, "promote", MODEL, "99", "--alias",
                         "production", NULL};
  CHECK_INT_EQ(run(promote_bad, log, uri), 1);
  char *promote_usage[] = {GF_CLI_BIN, "promote", MODEL, "1", NULL};
  CHECK_INT_EQ(run(promote_usage, log, uri), 2);
  char *models[] = {GF_CLI_BIN, "models", MODEL, NULL};
  CHECK_INT_EQ(run(models, log, uri), 0);
  size_t len = 0;
  char *text = st_slurp(log, &len);
  CHECKF(text && strstr(text, "@production") && strstr(text, "@candidate") &&
             strstr(text, "READY"), "models output:\n%s", text ? text : "");
  free(text);
  /* a server nobody answers (port 1 on loopback): a line before each
   * retry, then the error, exit 1 (short waits here) */
  REQUIRE(setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2", 1) == 0 &&
          setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0.01", 1) == 0 &&
          setenv("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0", 1) == 0);
  CHECK_INT_EQ(run(models, log, "http://127.0.0.1:1"), 1);
  unsetenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES");
  unsetenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR");
  unsetenv("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER");
  text = st_slurp(log, &len);
  CHECKF(text && strstr(text, "ganflow models: ") &&
             strstr(text, "retry 1 of 2 in ") && strstr(text, "retry 2 of 2 in ") &&
             strstr(text, "ganflow models: error: ") &&
             strstr(text, "127.0.0.1:1"),
         "models against a closed port:\n%s", text ? text : "");
  free(text);

  /* 3. serve @production */
  st_server s;
  const char *extra[] = {"--model", "models:/" MODEL "@production", "--poll",
                         "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);

  st_http a, b, c, grid;
  get(&s, "/v1/models/" MODEL "/generate?seed=7", &a);
  check_png(&a, 28, 28);
  CHECK_STR_EQ(a.version, "1");
  get(&s, "/v1/models/" MODEL "/generate?seed=7", &b);
  CHECK(a.len == b.len && memcmp(a.body, b.body, a.len) == 0);
  get(&s, "/v1/models/" MODEL "/generate?seed=8", &c);
  check_png(&c, 28, 28);
  CHECK(!(a.len == c.len && memcmp(a.body, c.body, a.len) == 0));
  get(&s, "/v1/models/" MODEL "/generate?seed=7&n=16", &grid);
  check_png(&grid, 4 * 30 + 2, 4 * 30 + 2);

  /* 4. `ganflow generate` (no server) writes the same bytes */
  char out[600], cache[600];
  snprintf(out, sizeof out, "%s/cli.png", GF_TEST_TMP);
  snprintf(cache, sizeof cache, "%s/cli-cache", GF_TEST_TMP);
  char *gen[] = {GF_CLI_BIN, "generate", "--model", "models:/" MODEL "/1",
                 "--seed", "7", "-n", "16", "-o", out, "--cache-dir", cache,
                 NULL};
  rc = run(gen, log, uri);
  if (rc != 0) st_print_log(log);
  CHECK_INT_EQ(rc, 0);
  char *file = st_slurp(out, &len);
  CHECKF(file && len == grid.len && memcmp(file, grid.body, len) == 0,
         "ganflow generate wrote %zu bytes, the server %zu", len, grid.len);
  free(file);

  /* 5. JSON pixels, V2 floats and MLflow predictions agree */
  st_http js, v2, inv;
  get(&s, "/v1/models/" MODEL "/generate?seed=7&format=json", &js);
  CHECK_INT_EQ(js.status, 200);
  cJSON *jp = cJSON_Parse(js.body);
  cJSON *pix = cJSON_GetObjectItem(jp, "data");
  CHECK_INT_EQ(cJSON_GetArraySize(pix), 784);
  char url[512];
  snprintf(url, sizeof url, "%s/v2/models/" MODEL "/infer", s.base);
  const char *hdr[] = {"Content-Type: application/json", NULL};
  const char *body = "{\"id\": \"q1\", \"inputs\": [{\"name\": \"seed\", "
                     "\"shape\": [1], \"datatype\": \"INT64\", \"data\": "
                     "[7]}]}";
  REQUIRE(st_request("POST", url, hdr, body, strlen(body), 30, &v2) == 0);
  CHECK_INT_EQ(v2.status, 200);
  CHECK_STR_EQ(v2.version, "1");
  cJSON *jv = cJSON_Parse(v2.body);
  CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(jv, "id")), "q1");
  cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(jv, "outputs"), 0);
  cJSON *vd = cJSON_GetObjectItem(o0, "data");
  CHECK_INT_EQ(cJSON_GetArraySize(vd), 784);
  int mism = 0;
  for (int i = 0; i < 784 && pix && vd; i++) {
    double x = cJSON_GetArrayItem(vd, i)->valuedouble;
    x = x < -1 ? -1 : x > 1 ? 1 : x;
    int p = (int)lrint((x + 1) * 0.5 * 255);
    if (abs(p - cJSON_GetArrayItem(pix, i)->valueint) > 1) mism++;
  }
  CHECK_INT_EQ(mism, 0);
  snprintf(url, sizeof url, "%s/invocations", s.base);
  const char *ibody = "{\"inputs\": {\"seed\": [7]}}";
  REQUIRE(st_request("POST", url, hdr, ibody, strlen(ibody), 30, &inv) == 0);
  CHECK_INT_EQ(inv.status, 200);
  cJSON *ji = cJSON_Parse(inv.body);
  /* MLflow's shape: predictions[n][C][H][W] */
  cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(ji, "predictions"), 0);
  CHECK_INT_EQ(cJSON_GetArraySize(p0), 1);
  cJSON *plane = cJSON_GetArrayItem(p0, 0);
  CHECK_INT_EQ(cJSON_GetArraySize(plane), 28);
  CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetArrayItem(plane, 27)), 28);
  for (int i = 0; i < 784 && plane && vd; i += 97)
    CHECK_NEAR(cJSON_GetArrayItem(cJSON_GetArrayItem(plane, i / 28), i % 28)
                   ->valuedouble,
               cJSON_GetArrayItem(vd, i)->valuedouble, 1e-5);
  cJSON_Delete(jp);
  cJSON_Delete(jv);
  cJSON_Delete(ji);

  /* 6. probes, metadata, metrics */
  st_http h;
  get(&s, "/v2/models/" MODEL, &h);
  CHECK_INT_EQ(h.status, 200);
  CHECK(strstr(h.body, "\"production\"") && strstr(h.body, "[-1, 50]") &&
        strstr(h.body, "[-1, 1, 28, 28]"));
  st_http_free(&h);
  const char *ok_paths[] = {"/ping", "/health", "/version", "/v2/health/live",
                            "/v2/health/ready", "/v2/models/" MODEL "/ready"};
  for (size_t i = 0; i < sizeof ok_paths / sizeof ok_paths[0]; i++) {
    get(&s, ok_paths[i], &h);
    CHECKF(h.status == 200, "%s: %ld", ok_paths[i], h.status);
    st_http_free(&h);
  }
  get(&s, "/metrics", &h);
  CHECK_INT_EQ(h.status, 200);
  char series[256];
  snprintf(series, sizeof series, "ganflow_serve_model_version{model=\"%s\","
           "uri=\"models:/%s@production\"}", MODEL, MODEL);
  CHECK_NEAR(st_metric(h.body, series), 1, 0);
  CHECK(st_metric(h.body, "ganflow_serve_images_total") >= 20);
  CHECK(st_metric(h.body, "ganflow_serve_requests_total{endpoint=\"generate"
                          "\"}") >= 5);
  st_http_free(&h);

  CHECK(st_server_alive(&s));
  CHECK_INT_EQ(st_server_stop(&s), 0);
  st_http_free(&a);
  st_http_free(&b);
  st_http_free(&c);
  st_http_free(&grid);
  st_http_free(&js);
  st_http_free(&v2);
  st_http_free(&inv);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
