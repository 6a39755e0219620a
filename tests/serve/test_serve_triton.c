/* test_serve_triton.c - ganflow-serve as KServe V2 and MLflow scoring
 * clients speak to it, against the `mlflow` fixture: a dcgan generator
 * (64x64x3, built by the model library) registered and served, then
 *  - plain HTTP (libcurl): JSON without Content-Type on /v2 infer and
 *    /invocations, 415 for other types; every body form MLflow's scoring
 *    server takes answered {"predictions": [n][C][H][W]} with the values
 *    V2 gives for the same seeds and latents; the binary tensor data
 *    extension by hand (Inference-Header-Content-Length in and out, FP32 and
 *    UINT8); bad Inference-Header-Content-Length values (larger than the
 *    body, negative, non-numeric, past --max-body) answered 400 with the
 *    server alive; the /versions/{v} routes; GET /v2;
 *  - NVIDIA's own client: tests/serve/tritonclient_check.py run by the
 *    checkout's .venv python must exit 0, and exit 1 with one failed check
 *    when told a wrong --max-images (its checks fire). Without .venv, or
 *    with tritonclient not installed there, the test exits 77 (skipped)
 *    after the checks above, its `SKIP: ...` line saying why; tritonclient
 *    installed but failing to import is a failure. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "proc_util.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define MODEL "triton-dcgan"
#define MAX_IMAGES "8"
#define MAX_BODY "65536"

static const char *const NO_CT[] = {"Content-Type:", NULL};

static int g_c, g_h, g_w, g_zdim;

static void post(const st_server *s, const char *path,
                 const char *const *hdr, const void *body, size_t len,
                 st_http *h) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  REQUIRE(st_request("POST", url, hdr, body, len, 60, h) == 0);
}

static long get_status(const st_server *s, const char *path, st_http *h) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  REQUIRE(st_get(url, h) == 0);
  return h->status;
}

/* The V2 FP32 image data of a JSON answer, malloc'd (n * C*H*W floats). */
static float *v2_floats(const st_http *h, int n) {
  cJSON *j = cJSON_Parse(h->body);
  cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0);
  cJSON *d = cJSON_GetObjectItem(o, "data");
  size_t count = (size_t)n * (size_t)(g_c * g_h * g_w);
  float *v = NULL;
  if (d && (size_t)cJSON_GetArraySize(d) == count) {
    v = malloc(count * sizeof *v);
    size_t i = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, d) v[i++] = (float)e->valuedouble;
  }
  cJSON_Delete(j);
  return v;
}

/* Checks that predictions are n images nested [C][H][W] and equal to
 * ref (n images, flat). */
static void check_predictions(const char *what, const st_http *h, int n,
                              const float *ref) {
  CHECKF(h->status == 200, "%s: %ld %.200s", what, h->status, h->body);
  cJSON *j = cJSON_Parse(h->body);
  cJSON *p = cJSON_GetObjectItem(j, "predictions");
  CHECKF(cJSON_GetArraySize(p) == n, "%s: %d predictions", what,
         cJSON_GetArraySize(p));
  int shape_ok = 1, diff = 0;
  size_t i = 0;
  for (int k = 0; k < n && shape_ok; k++) {
    cJSON *img = cJSON_GetArrayItem(p, k);
    shape_ok = cJSON_GetArraySize(img) == g_c;
    for (int c = 0; c < g_c && shape_ok; c++) {
      cJSON *plane = cJSON_GetArrayItem(img, c);
      shape_ok = cJSON_GetArraySize(plane) == g_h;
      for (int y = 0; y < g_h && shape_ok; y++) {
        cJSON *row = cJSON_GetArrayItem(plane, y);
        shape_ok = cJSON_IsArray(row) && cJSON_GetArraySize(row) == g_w;
        cJSON *e;
        if (shape_ok)
          cJSON_ArrayForEach(e, row) {
            if (!cJSON_IsNumber(e) || (float)e->valuedouble != ref[i]) diff++;
            i++;
          }
      }
    }
  }
  CHECKF(shape_ok, "%s: predictions not nested [%d][%d][%d][%d]", what, n,
         g_c, g_h, g_w);
  CHECKF(diff == 0, "%s: %d values differ from V2's", what, diff);
  cJSON_Delete(j);
}

/* A binary-extension body: json then raw; returns its length. */
static size_t bin_body(char *out, const char *json, const void *raw,
                       size_t raw_len) {
  size_t n = strlen(json);
  memcpy(out, json, n);
  memcpy(out + n, raw, raw_len);
  return n + raw_len;
}

static void test_content_types(const st_server *s, const char *infer) {
  const char *seed7 = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                      "\"datatype\": \"INT64\", \"data\": [7]}]}";
  const char *charset[] = {"Content-Type: application/json; charset=utf-8",
                           NULL};
  const char *html[] = {"Content-Type: text/html", NULL};
  const char *multi[] = {"Content-Type: multipart/form-data; boundary=x",
                         NULL};
  const char *octet[] = {"Content-Type: application/octet-stream", NULL};
  const char *gzip[] = {"Content-Type: application/json",
                        "Content-Encoding: gzip", NULL};
  st_http h;
  post(s, infer, charset, seed7, strlen(seed7), &h);
  CHECKF(h.status == 200, "charset=utf-8: %ld", h.status);
  st_http_free(&h);
  const char *const *bad[] = {html, multi, octet, gzip};
  for (size_t i = 0; i < 4; i++) {
    post(s, infer, bad[i], seed7, strlen(seed7), &h);
    CHECKF(h.status == 415, "%s: %ld", bad[i][0], h.status);
    st_http_free(&h);
    post(s, "/invocations", bad[i], "{\"instances\": [7]}", 18, &h);
    CHECKF(h.status == 415, "/invocations %s: %ld", bad[i][0], h.status);
    st_http_free(&h);
  }
}

static void test_invocations(const st_server *s, const float *ref7,
                             const float *ref_z0) {
  const char *forms[] = {
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[7]]}}",
      ("{\"dataframe_split\": {\"index\": [0], \"columns\": [\"z\", \"seed\"],"
       " \"data\": [[null, 7]]}}"),
      "{\"dataframe_records\": [{\"seed\": 7}]}",
      "{\"instances\": [{\"seed\": 7}]}",
      "{\"instances\": [7]}",
      "{\"inputs\": {\"seed\": [7]}}",
      "{\"inputs\": [{\"seed\": 7}], \"params\": {\"anything\": 1}}",
  };
  st_http h;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    post(s, "/invocations", NO_CT, forms[i], strlen(forms[i]), &h);
    check_predictions(forms[i], &h, 1, ref7);
    st_http_free(&h);
  }
  /* a seed row and a latent row together, each as V2 makes it alone */
  char body[4096];
  int n = snprintf(body, sizeof body,
                   "{\"dataframe_records\": [{\"seed\": 7}, {\"z\": [");
  for (int i = 0; i < g_zdim; i++)
    n += snprintf(body + n, sizeof body - (size_t)n, i ? ",0" : "0");
  snprintf(body + n, sizeof body - (size_t)n, "]}]}");
  size_t numel = (size_t)(g_c * g_h * g_w);
  float *both = malloc(2 * numel * sizeof *both);
  memcpy(both, ref7, numel * sizeof *both);
  memcpy(both + numel, ref_z0, numel * sizeof *both);
  post(s, "/invocations", NO_CT, body, strlen(body), &h);
  check_predictions("seed and z rows", &h, 2, both);
  st_http_free(&h);
  free(both);
  const char *bad[] = {"{\"dataframe_records\": [{\"seed\": 7, \"z\": null},"
                       " {}]}",
                       "{\"instances\": [7], \"inputs\": {\"seed\": [7]}}",
                       "{\"dataframe_split\": {\"columns\": [\"label\"], "
                       "\"data\": [[1]]}}"};
  for (size_t i = 0; i < 3; i++) {
    post(s, "/invocations", NO_CT, bad[i], strlen(bad[i]), &h);
    CHECKF(h.status == 400, "%s: %ld", bad[i], h.status);
    st_http_free(&h);
  }
}

static void test_binary(const st_server *s, const char *infer,
                        const float *ref7) {
  const char *js = "{\"id\": \"bin\", \"inputs\": [{\"name\": \"seed\", "
                   "\"shape\": [1], \"datatype\": \"INT64\", \"parameters\": "
                   "{\"binary_data_size\": 8}}], \"outputs\": [{\"name\": "
                   "\"image\", \"parameters\": {\"binary_data\": true}}]}";
  const char *js8 = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                    "\"datatype\": \"INT64\", \"parameters\": "
                    "{\"binary_data_size\": 8}}], \"parameters\": "
                    "{\"binary_data_output\": true, \"image_datatype\": "
                    "\"UINT8\"}}";
  unsigned char seed[8] = {7, 0, 0, 0, 0, 0, 0, 0};
  char body[1024], hl[64], hl8[64];
  size_t len = bin_body(body, js, seed, 8);
  snprintf(hl, sizeof hl, "Inference-Header-Content-Length: %zu",
           strlen(js));
  const char *hdr[] = {"Content-Type: application/octet-stream", hl, NULL};
  const char *hdr_none[] = {"Content-Type:", hl, NULL};
  size_t numel = (size_t)(g_c * g_h * g_w);
  for (int variant = 0; variant < 2; variant++) {
    st_http h;
    post(s, infer, variant ? hdr_none : hdr, body, len, &h);
    CHECKF(h.status == 200, "binary request: %ld %.200s", h.status, h.body);
    CHECK_STR_EQ(h.ctype, "application/octet-stream");
    size_t jl = (size_t)atol(h.ihcl);
    CHECKF(jl > 0 && h.len == jl + numel * 4,
           "binary answer: header %zu, body %zu", jl, h.len);
    if (jl > 0 && h.len == jl + numel * 4) {
      cJSON *j = cJSON_ParseWithLength(h.body, jl);
      cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0);
      cJSON *p = cJSON_GetObjectItem(o, "parameters");
      CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")), "bin");
      CHECK(cJSON_GetObjectItem(o, "data") == NULL);
      CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(
                     p, "binary_data_size")), (double)(numel * 4), 0);
      cJSON_Delete(j);
      int diff = 0;
      for (size_t i = 0; i < numel; i++) {
        float f;
        memcpy(&f, h.body + jl + i * 4, 4); /* little-endian host */
        if (f != ref7[i]) diff++;
      }
      CHECKF(diff == 0, "binary FP32: %d values differ from JSON", diff);
    }
    st_http_free(&h);
  }
  /* UINT8 by request-level parameters */
  len = bin_body(body, js8, seed, 8);
  snprintf(hl8, sizeof hl8, "Inference-Header-Content-Length: %zu",
           strlen(js8));
  const char *hdr8[] = {"Content-Type: application/octet-stream", hl8, NULL};
  st_http h;
  post(s, infer, hdr8, body, len, &h);
  CHECKF(h.status == 200, "binary UINT8: %ld %.200s", h.status, h.body);
  size_t jl = (size_t)atol(h.ihcl);
  CHECKF(jl > 0 && h.len == jl + numel, "UINT8 answer: %zu + %zu", jl,
         h.len);
  int diff = 0;
  for (size_t i = 0; jl > 0 && h.len == jl + numel && i < numel; i++) {
    double x = ref7[i] < -1 ? -1 : ref7[i] > 1 ? 1 : ref7[i];
    if ((unsigned char)h.body[jl + i] != (int)floor((x + 1) * 0.5 * 255 + 0.5))
      diff++;
  }
  CHECKF(diff == 0, "UINT8: %d pixels off the PNG mapping", diff);
  st_http_free(&h);

  /* Inference-Header-Content-Length that cannot be right: 400 */
  len = bin_body(body, js, seed, 8);
  char big[64];
  snprintf(big, sizeof big, "Inference-Header-Content-Length: %zu", len + 1);
  const char *values[] = {big, "Inference-Header-Content-Length: -5",
                          "Inference-Header-Content-Length: abc",
                          "Inference-Header-Content-Length: 100000000",
                          "Inference-Header-Content-Length: 10",
                          "Inference-Header-Content-Length: "
                          "99999999999999999999999"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    const char *bh[] = {"Content-Type: application/octet-stream", values[i],
                        NULL};
    post(s, infer, bh, body, len, &h);
    CHECKF(h.status == 400 && strstr(h.body, "{\"error\": "),
           "%s: %ld %s", values[i], h.status, h.body);
    st_http_free(&h);
  }
  CHECK(st_server_alive((st_server *)s));
  post(s, infer, hdr, body, len, &h);
  CHECKF(h.status == 200, "good binary request after bad ones: %ld",
         h.status);
  st_http_free(&h);
}

static void test_versions(const st_server *s, const char *version) {
  char p[256];
  st_http h;
  snprintf(p, sizeof p, "/v2/models/" MODEL "/versions/%s", version);
  CHECKF(get_status(s, p, &h) == 200 && strstr(h.body, "\"inputs\""),
         "%s: %ld", p, h.status);
  st_http_free(&h);
  snprintf(p, sizeof p, "/v2/models/" MODEL "/versions/%s/ready", version);
  CHECKF(get_status(s, p, &h) == 200, "%s: %ld", p, h.status);
  st_http_free(&h);
  const char *missing[] = {"/v2/models/" MODEL "/versions/999",
                           "/v2/models/" MODEL "/versions/999/ready",
                           "/v2/models/" MODEL "/versions/",
                           "/v2/models/nope/versions/1"};
  for (size_t i = 0; i < 4; i++) {
    CHECKF(get_status(s, missing[i], &h) == 404, "%s: %ld", missing[i],
           h.status);
    st_http_free(&h);
  }
  const char *seed = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                     "\"datatype\": \"INT64\", \"data\": [1]}]}";
  snprintf(p, sizeof p, "/v2/models/" MODEL "/versions/%s/infer", version);
  post(s, p, NO_CT, seed, strlen(seed), &h);
  CHECKF(h.status == 200 && strcmp(h.version, version) == 0, "%s: %ld", p,
         h.status);
  st_http_free(&h);
  post(s, "/v2/models/" MODEL "/versions/999/infer", NO_CT, seed,
       strlen(seed), &h);
  CHECKF(h.status == 404 && strstr(h.body, "999"), "versions/999/infer: %ld "
         "%s", h.status, h.body);
  st_http_free(&h);
  CHECK(get_status(s, "/v2", &h) == 200 &&
        strstr(h.body, "\"binary_tensor_data\"") &&
        strstr(h.body, "\"ganflow-serve\""));
  st_http_free(&h);
}

/* Runs tritonclient_check.py telling it the server takes max_images
 * images; returns its exit status (77: not installed here, a `SKIP: ...`
 * line printed). Its output goes to log. */
static int run_tritonclient(const st_server *s, const char *version,
                            const char *max_images, char *log, size_t cap) {
  const char *py = GF_SOURCE_DIR "/.venv/bin/python";
  if (access(py, X_OK) != 0) {
    fprintf(stderr, "SKIP: %s not found, so no tritonclient "
            "(deploy/install-deps.sh makes .venv)\n", py);
    return 77;
  }
  char url[64];
  snprintf(url, sizeof url, "127.0.0.1:%d", s->port);
  snprintf(log, cap, "%s/tritonclient-%s.log", GF_TEST_TMP, max_images);
  char *argv[] = {(char *)py, GF_SOURCE_DIR "/tests/serve/tritonclient_check.py",
                  "--url", url, "--model", MODEL, "--version", (char *)version,
                  "--max-images", (char *)max_images, NULL};
  int rc = tu_run_log(log, argv, NULL, NULL);
  st_print_log(log);
  return rc;
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  mlflow_error me;
  char v[32];
  st_register_synthetic_arch(c, MODEL, GF_ARCH_DCGAN, 11, 0, GF_TEST_TMP, v);
  REQUIRE(mlflow_alias_set(c, MODEL, "prod", v, &me) == MLFLOW_OK);
  st_server s;
  const char *extra[] = {"--model", "models:/" MODEL "@prod", "--poll", "0",
                         "--max-images", MAX_IMAGES, "--max-body", MAX_BODY,
                         NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);

  /* the shapes, from the model's V2 metadata */
  st_http h;
  REQUIRE(get_status(&s, "/v2/models/" MODEL, &h) == 200);
  cJSON *meta = cJSON_Parse(h.body);
  cJSON *oshape = cJSON_GetObjectItem(
      cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "outputs"), 0), "shape");
  cJSON *zshape = cJSON_GetObjectItem(
      cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "inputs"), 1), "shape");
  g_c = cJSON_GetArrayItem(oshape, 1)->valueint;
  g_h = cJSON_GetArrayItem(oshape, 2)->valueint;
  g_w = cJSON_GetArrayItem(oshape, 3)->valueint;
  g_zdim = cJSON_GetArrayItem(zshape, 1)->valueint;
  cJSON_Delete(meta);
  st_http_free(&h);
  REQUIRE(g_c == 3 && g_h == 64 && g_w == 64 && g_zdim == 100);

  /* JSON without Content-Type, as tritonclient sends it */
  const char *infer = "/v2/models/" MODEL "/infer";
  const char *seed7 = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                      "\"datatype\": \"INT64\", \"data\": [7]}]}";
  post(&s, infer, NO_CT, seed7, strlen(seed7), &h);
  CHECKF(h.status == 200, "no Content-Type: %ld %s", h.status, h.body);
  float *ref7 = v2_floats(&h, 1);
  REQUIRE(ref7 != NULL);
  st_http_free(&h);
  char zbody[4096];
  int n = snprintf(zbody, sizeof zbody, "{\"inputs\": [{\"name\": \"z\", "
                   "\"shape\": [1, %d], \"datatype\": \"FP32\", \"data\": [",
                   g_zdim);
  for (int i = 0; i < g_zdim; i++)
    n += snprintf(zbody + n, sizeof zbody - (size_t)n, i ? ",0" : "0");
  snprintf(zbody + n, sizeof zbody - (size_t)n, "]}]}");
  post(&s, infer, NO_CT, zbody, strlen(zbody), &h);
  CHECKF(h.status == 200, "z: %ld %s", h.status, h.body);
  float *ref_z0 = v2_floats(&h, 1);
  REQUIRE(ref_z0 != NULL);
  st_http_free(&h);

  test_content_types(&s, infer);
  test_invocations(&s, ref7, ref_z0);
  test_binary(&s, infer, ref7);
  test_versions(&s, v);
  CHECK(st_server_alive(&s));
  char log[600];
  int rc = check_failures_ ? 0
                           : run_tritonclient(&s, v, MAX_IMAGES, log,
                                              sizeof log);
  if (rc == 77)
    fprintf(stderr, "the tritonclient part did not run (the SKIP line above "
            "says why)\n");
  else
    CHECKF(rc == 0, "tritonclient_check.py exited %d", rc);
  if (rc == 0) {
    /* Its checks fire: told the limit is 1, it sees the metadata's
     * max_images differ, expects 2 seeds to be refused, sees them served,
     * and fails those two checks. */
    fprintf(stderr, "(the next run is meant to fail two checks)\n");
    int bad = run_tritonclient(&s, v, "1", log, sizeof log);
    char *text = test_read_text(log);
    CHECKF(bad == 1 && text && strstr(text, "FAIL: max_images 8") &&
               strstr(text, "FAIL: batch over --max-images") &&
               strstr(text, "2 checks failed"),
           "tritonclient_check.py with a wrong limit exited %d", bad);
    free(text);
  }
  CHECK(st_server_alive(&s));
  CHECK_INT_EQ(st_server_stop(&s), 0);
  free(ref7);
  free(ref_z0);
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  if (rc == 77 && check_failures_ == 0) return 77;
  return check_report();
}
