/* test_serve_class.c - class-conditional serving against the `mlflow`
 * fixture: an mlp generator with 3 named classes (and an unconditional one)
 * registered and served; the same generator written locally and loaded
 * in-process (gf_generator_load) gives the reference bytes.
 *  - GET .../generate?class=: PNGs equal gf_generator_png of
 *    gf_generator_run_labeled (one class for all, one per image, one per
 *    equal run), deterministic per (seed, class), classes that differ
 *    (decoded with libpng); the HTML page shows one row per class;
 *  - V2 infer with a class input (JSON [n] and [n, 1], binary INT64 and
 *    INT32) and /invocations with a class column (dataframe_split,
 *    dataframe_records, inputs columns; indices, digit strings and the
 *    model directory's class names): the floats of the generator run
 *    directly;
 *  - bad classes (missing on the conditional model, given to the
 *    unconditional one, out of range, malformed, list lengths that do not
 *    divide n, mismatched V2 rows) answered 400 naming the range, the
 *    server still serving;
 *  - 16 client threads at once, mixed (seed, class): every answer has the
 *    bytes of the same request alone;
 *  - `ganflow generate --class` writes the server's bytes, and refuses a
 *    missing or unknown class; `ganflow eval` scores the registered
 *    conditional version class-balanced (SWD on Fashion-MNIST, where the
 *    machine has it). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "gf/generator.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "model_dir_util.h"
#include "serve_test_util.h"

#define COND "class-mlp"
#define UNCOND "class-uncond"
#define K 3
#define INIT_SEED 707
/* the model directory's class names ("2" spells the index of another
 * class: a name wins) */
static const char *const NAMES[K] = {"top", "Ankle boot", "2"};

static gf_generator *g_ref; /* the same weights, in-process */

static void post(const st_server *s, const char *path, const char *body,
                 size_t len, const char *ihcl, st_http *h) {
  char url[512], hl[96];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  snprintf(hl, sizeof hl, "Inference-Header-Content-Length: %s",
           ihcl ? ihcl : "");
  const char *hdr[] = {"Content-Type: application/json", ihcl ? hl : NULL,
                       NULL};
  REQUIRE(st_request("POST", url, hdr, body, len, 60, h) == 0);
}

static void get(const st_server *s, const char *query, st_http *h) {
  char url[1400];
  snprintf(url, sizeof url, "%s/v1/models/%s/generate?%s", s->base, COND,
           query);
  REQUIRE(st_get(url, h) == 0);
}

/* The reference images: latents of seeds (per_image) or of seeds[0]
 * (sample k), classes lab; malloc'd n images. */
static float *ref_images(const uint64_t *seeds, int per_image,
                         const int32_t *lab, int n) {
  gf_err e;
  float *z = malloc((size_t)n * (size_t)g_ref->cfg.z_dim * sizeof *z);
  float *img = malloc((size_t)n * g_ref->image_numel * sizeof *img);
  REQUIRE(z && img);
  REQUIRE(gf_generator_latents(g_ref, seeds, n, per_image, z, &e) == GF_OK);
  REQUIRE(gf_generator_run_labeled(g_ref, 0, z, lab, n, img, &e) == GF_OK);
  free(z);
  return img;
}

/* GET seed&n&class: the PNG of the reference run of those labels. */
static void check_get_png(const st_server *s, uint64_t seed, int n,
                          const char *cls, const int32_t *lab) {
  char q[256];
  snprintf(q, sizeof q, "seed=%llu&n=%d&class=%s", (unsigned long long)seed,
           n, cls);
  st_http h;
  get(s, q, &h);
  CHECKF(h.status == 200, "%s: %ld %s", q, h.status, h.body);
  float *img = ref_images(&seed, 0, lab, n);
  uint8_t *png = NULL;
  size_t len = 0;
  gf_err e;
  REQUIRE(gf_generator_png(g_ref, img, n, &png, &len, &e) == GF_OK);
  CHECKF(h.len == len && memcmp(h.body, png, len) == 0,
         "%s: not the PNG of the generator run directly", q);
  free(png);
  free(img);
  st_http_free(&h);
}

/* The floats of a V2 binary FP32 answer equal want (n images). */
static void check_v2_binary(const st_http *h, const float *want, int n,
                            const char *what) {
  CHECKF(h->status == 200, "%s: %ld %.300s", what, h->status, h->body);
  if (h->status != 200) return;
  size_t jl = (size_t)atol(h->ihcl), bytes = (size_t)n *
                                             g_ref->image_numel * 4;
  CHECKF(h->len == jl + bytes && memcmp(h->body + jl, want, bytes) == 0,
         "%s: other floats than the generator's", what);
}

/* The numbers of {"predictions": ..} read with strtof, in order, equal
 * want (n images). */
static void check_predictions(const st_http *h, const float *want, int n,
                              const char *what) {
  CHECKF(h->status == 200, "%s: %ld %.300s", what, h->status, h->body);
  if (h->status != 200) return;
  size_t count = (size_t)n * g_ref->image_numel, got = 0;
  int same = 1;
  for (const char *p = strchr(h->body, '['); p && *p;) {
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      char *end;
      float v = strtof(p, &end);
      if (got >= count || v != want[got]) same = 0;
      got++;
      p = end;
    } else {
      p++;
    }
  }
  CHECKF(same && got == count, "%s: %zu values, %s", what, got,
         same ? "equal" : "other than the generator's");
}

static void v2_tests(const st_server *s) {
  uint64_t seeds[3] = {3, 4, 5};
  int32_t lab[3] = {2, 0, 1};
  float *want = ref_images(seeds, 1, lab, 3);
  char path[128];
  snprintf(path, sizeof path, "/v2/models/%s/infer", COND);
  const char *bodies[] = {
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [3], \"datatype\": "
      "\"INT64\", \"data\": [3, 4, 5]}, {\"name\": \"class\", \"shape\": [3], "
      "\"datatype\": \"INT64\", \"data\": [2, 0, 1]}], \"parameters\": "
      "{\"binary_data_output\": true}}",
      "{\"inputs\": [{\"name\": \"class\", \"shape\": [3, 1], \"datatype\": "
      "\"INT64\", \"data\": [[2], [0], [1]]}, {\"name\": \"seed\", \"shape\": "
      "[3], \"datatype\": \"INT64\", \"data\": [3, 4, 5]}], \"parameters\": "
      "{\"binary_data_output\": true}}"};
  for (int i = 0; i < 2; i++) {
    st_http h;
    post(s, path, bodies[i], strlen(bodies[i]), NULL, &h);
    check_v2_binary(&h, want, 3, i ? "V2 class [n, 1] first" : "V2 JSON");
    st_http_free(&h);
  }
  /* binary inputs: seed INT64 then class INT32 */
  char body[1024];
  int jl = snprintf(body, sizeof body,
                    "{\"inputs\": [{\"name\": \"seed\", \"shape\": [3], "
                    "\"datatype\": \"INT64\", \"parameters\": "
                    "{\"binary_data_size\": 24}}, {\"name\": \"class\", "
                    "\"shape\": [3], \"datatype\": \"INT32\", \"parameters\": "
                    "{\"binary_data_size\": 12}}], \"parameters\": "
                    "{\"binary_data_output\": true}}");
  size_t at = (size_t)jl;
  for (int k = 0; k < 3; k++)
    for (int b = 0; b < 8; b++) body[at++] = (char)(seeds[k] >> (8 * b));
  for (int k = 0; k < 3; k++)
    for (int b = 0; b < 4; b++)
      body[at++] = (char)((uint32_t)lab[k] >> (8 * b));
  char ihcl[16];
  snprintf(ihcl, sizeof ihcl, "%d", jl);
  st_http h;
  post(s, path, body, at, ihcl, &h);
  check_v2_binary(&h, want, 3, "V2 binary seed + class");
  st_http_free(&h);

  /* /invocations: class column in three forms (an index as a string of
   * digits is a class's text, as a name would be) */
  const char *inv[] = {
      "{\"dataframe_split\": {\"columns\": [\"seed\", \"class\"], \"data\": "
      "[[3, 2], [4, 0], [5, \"1\"]]}}",
      "{\"dataframe_records\": [{\"seed\": 3, \"class\": 2}, {\"class\": 0, "
      "\"seed\": 4}, {\"seed\": 5, \"class\": 1}]}",
      "{\"inputs\": {\"seed\": [3, 4, 5], \"class\": [2, \"0\", 1]}}",
      "{\"dataframe_records\": [{\"seed\": 3, \"class\": \"2\"}, "
      "{\"seed\": 4, \"class\": \"top\"}, {\"seed\": 5, \"class\": "
      "\"Ankle boot\"}]}"};
  for (int i = 0; i < 4; i++) {
    post(s, "/invocations", inv[i], strlen(inv[i]), NULL, &h);
    check_predictions(&h, want, 3, inv[i]);
    st_http_free(&h);
  }
  free(want);
}

static void expect_400(long status, const char *body, const char *what,
                       const char *needle) {
  CHECKF(status == 400, "%s: %ld (expected 400)", what, status);
  CHECKF(!needle || (body && strstr(body, needle)), "%s: '%.300s' does not "
         "say '%s'", what, body ? body : "", needle);
}

static void bad_inputs(const st_server *s) {
  struct {
    const char *query, *needle;
  } gets[] = {
      {"seed=1", "class-conditional"},
      {"seed=1&class=3", "0..2"},
      {"seed=1&class=-1", "0..2"},
      {"seed=1&class=cat", "Ankle boot"},
      {"seed=1&class=ankle%20boot", "did you mean"},
      {"seed=1&class=01", "0..2"},
      {"seed=1&class=", "class"},
      {"seed=1&n=4&class=0,1,2", "divides"},
      {"seed=1&n=2&class=0,1,2", "divides"},
      {"seed=1&n=2&class=0,,1", "class"},
      {"seed=1&class=0&class=1", "twice"},
  };
  for (size_t i = 0; i < sizeof gets / sizeof *gets; i++) {
    st_http h;
    get(s, gets[i].query, &h);
    expect_400(h.status, h.body, gets[i].query, gets[i].needle);
    st_http_free(&h);
  }
  char url[512];
  snprintf(url, sizeof url, "%s/v1/models/%s/generate?seed=1&class=0",
           s->base, UNCOND);
  st_http h;
  REQUIRE(st_get(url, &h) == 0);
  expect_400(h.status, h.body, "class on the unconditional model",
             "not class-conditional");
  st_http_free(&h);

  char cpath[128], upath[128];
  snprintf(cpath, sizeof cpath, "/v2/models/%s/infer", COND);
  snprintf(upath, sizeof upath, "/v2/models/%s/infer", UNCOND);
  const char *seed2 = "{\"name\": \"seed\", \"shape\": [2], \"datatype\": "
                      "\"INT64\", \"data\": [1, 2]}";
  struct {
    const char *path, *cls, *needle;
  } v2[] = {
      {cpath, NULL, "class-conditional"},
      {cpath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"INT64\", \"data\": [0, 3]}", "0..2"},
      {cpath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"INT64\", \"data\": [0, -1]}", "class[1]"},
      {cpath, "{\"name\": \"class\", \"shape\": [3], \"datatype\": "
              "\"INT64\", \"data\": [0, 1, 2]}", "rows"},
      {cpath, "{\"name\": \"class\", \"shape\": [2, 2], \"datatype\": "
              "\"INT64\", \"data\": [0, 1, 2, 0]}", "[n, 1]"},
      {cpath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"FP32\", \"data\": [0, 1]}", "INT64"},
      {cpath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"INT64\", \"data\": [0, \"a\"]}", "class[1]"},
      {cpath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"INT64\", \"data\": [0]}", "shape"},
      {upath, "{\"name\": \"class\", \"shape\": [2], \"datatype\": "
              "\"INT64\", \"data\": [0, 1]}", "not class-conditional"},
  };
  for (size_t i = 0; i < sizeof v2 / sizeof *v2; i++) {
    char body[1024];
    snprintf(body, sizeof body, "{\"inputs\": [%s%s%s]}", seed2,
             v2[i].cls ? ", " : "", v2[i].cls ? v2[i].cls : "");
    post(s, v2[i].path, body, strlen(body), NULL, &h);
    expect_400(h.status, h.body, body, v2[i].needle);
    st_http_free(&h);
  }
  const char *twice = "{\"inputs\": [{\"name\": \"class\", \"shape\": [1], "
                      "\"datatype\": \"INT64\", \"data\": [0]}, {\"name\": "
                      "\"class\", \"shape\": [1], \"datatype\": \"INT64\", "
                      "\"data\": [0]}]}";
  post(s, cpath, twice, strlen(twice), NULL, &h);
  expect_400(h.status, h.body, "two class inputs", NULL);
  st_http_free(&h);

  const char *inv[] = {
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1]]}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\", \"class\"], \"data\": "
      "[[1, 0], [2, null]]}}",
      "{\"dataframe_records\": [{\"seed\": 1, \"class\": 7}]}",
      "{\"dataframe_records\": [{\"seed\": 1, \"class\": \"dog\"}]}",
      "{\"dataframe_records\": [{\"seed\": 1, \"class\": \"03\"}]}",
      "{\"dataframe_records\": [{\"seed\": 1, \"class\": 1.5}]}",
      "{\"dataframe_records\": [{\"seed\": 1, \"class\": [1]}]}",
      "{\"inputs\": {\"seed\": [1, 2], \"class\": [0]}}",
      "{\"inputs\": {\"class\": [0]}}",
      "{\"dataframe_split\": {\"columns\": [\"class\", \"class\"], \"data\": "
      "[[1, 1]]}}"};
  for (size_t i = 0; i < sizeof inv / sizeof *inv; i++) {
    post(s, "/invocations", inv[i], strlen(inv[i]), NULL, &h);
    expect_400(h.status, h.body, inv[i], NULL);
    st_http_free(&h);
  }
  /* a class column on the unconditional model's invocations: the server
   * serves both, so /invocations (one model) is the conditional one here;
   * covered by V2 above. The server is still serving: */
  check_get_png(s, 11, 1, "2", (const int32_t[]){2});
  CHECK(st_server_alive((st_server *)s));
}

/* `ganflow generate --class`: the bytes of GET with the same class= */
static void cli_generate(const st_server *s, const char *uri) {
  char out[600], cache[600], log[600];
  snprintf(out, sizeof out, "%s/cli.png", GF_TEST_TMP);
  snprintf(cache, sizeof cache, "%s/cli-cache", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/cli.log", GF_TEST_TMP);
  char *gen[] = {GF_CLI_BIN, "generate", "--model", "models:/" COND "/1",
                 "--seed", "5", "-n", "4", "--class", "Ankle boot,2", "-o",
                 out, "--cache-dir", cache, NULL};
  int rc = tu_run_log(log, gen, "MLFLOW_TRACKING_URI", uri);
  if (rc != 0) st_print_log(log);
  CHECK_INT_EQ(rc, 0);
  st_http h;
  get(s, "seed=5&n=4&class=Ankle%20boot,2", &h);
  REQUIRE(h.status == 200);
  size_t len = 0;
  char *file = st_slurp(out, &len);
  CHECKF(file && len == h.len && memcmp(file, h.body, len) == 0,
         "ganflow generate --class wrote %zu bytes, the server %zu", len,
         h.len);
  free(file);
  st_http_free(&h);
  /* no class, an unknown one: refused naming the classes */
  char *nocls[] = {GF_CLI_BIN, "generate", "--model", "models:/" COND "/1",
                   "--seed", "5", "-o", out, "--cache-dir", cache, NULL};
  CHECK(tu_run_log(log, nocls, "MLFLOW_TRACKING_URI", uri) != 0);
  char *bad[] = {GF_CLI_BIN, "generate", "--model", "models:/" COND "/1",
                 "--seed", "5", "--class", "Sandal", "-o", out,
                 "--cache-dir", cache, NULL};
  CHECK(tu_run_log(log, bad, "MLFLOW_TRACKING_URI", uri) != 0);
  char *text = st_slurp(log, &len);
  CHECKF(text && strstr(text, "Ankle boot"), "ganflow generate --class "
         "Sandal: %s", text ? text : "(no log)");
  free(text);

  /* ganflow eval of the registered conditional version */
  struct stat sb;
  if (stat("/usr/share/datasets/fashion-mnist", &sb) != 0) {
    printf("ganflow eval: no /usr/share/datasets/fashion-mnist, not run\n");
    return;
  }
  char *ev[] = {GF_CLI_BIN, "eval", "models:/" COND "/1", "--data",
                "/usr/share/datasets/fashion-mnist", "--metrics", "swd",
                "--images", "16", "--batch", "4", "--threads", "2",
                "--cache-dir", "", "--model-cache-dir", cache, NULL};
  rc = tu_run_log(log, ev, "MLFLOW_TRACKING_URI", uri);
  text = st_slurp(log, &len);
  CHECKF(rc == 0 && text && strstr(text, "swd/avg "), "ganflow eval of the "
         "conditional version: exit %d\n%s", rc, text ? text : "");
  free(text);
}

/* Concurrency: each thread asks (seed, class, n) requests whose lone
 * answers were taken first. */
#define N_REQ 12
#define N_THREADS 16
typedef struct shared {
  const st_server *s;
  char query[N_REQ][64];
  st_http lone[N_REQ];
  atomic_long failures, mismatches;
} shared;

static void *client(void *arg) {
  shared *sh = arg;
  static atomic_int next;
  int id = atomic_fetch_add(&next, 1);
  for (int i = 0; i < N_REQ; i++) {
    int r = (id * 5 + i) % N_REQ;
    st_http h;
    char url[512];
    snprintf(url, sizeof url, "%s/v1/models/%s/generate?%s", sh->s->base,
             COND, sh->query[r]);
    if (st_get(url, &h) != 0 || h.status != 200)
      atomic_fetch_add(&sh->failures, 1);
    else if (h.len != sh->lone[r].len ||
             memcmp(h.body, sh->lone[r].body, h.len) != 0)
      atomic_fetch_add(&sh->mismatches, 1);
    st_http_free(&h);
  }
  return NULL;
}

static void concurrency(const st_server *s) {
  static shared sh;
  sh.s = s;
  for (int r = 0; r < N_REQ; r++) {
    snprintf(sh.query[r], sizeof sh.query[r], "seed=%d&n=%d&class=%d",
             r % 4, r % 3 + 1, r % K);
    get(s, sh.query[r], &sh.lone[r]);
    REQUIRE(sh.lone[r].status == 200);
  }
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++)
    REQUIRE(pthread_create(&th[i], NULL, client, &sh) == 0);
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  double shared_jobs = st_server_metric(s, "ganflow_serve_shared_jobs_total");
  printf("class concurrency: %d requests, %ld failed, %ld other bytes; %g "
         "requests shared a pass\n", N_THREADS * N_REQ,
         atomic_load(&sh.failures), atomic_load(&sh.mismatches),
         shared_jobs);
  CHECK_INT_EQ(atomic_load(&sh.failures), 0);
  CHECK_INT_EQ(atomic_load(&sh.mismatches), 0);
  for (int r = 0; r < N_REQ; r++) st_http_free(&sh.lone[r]);
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  gf_model_config mc;
  gf_model_config_default(&mc, GF_ARCH_MLP);
  mc.num_classes = K;
  char v[32], local[600];
  st_register_synthetic_names(c, COND, &mc, INIT_SEED, NAMES, GF_TEST_TMP,
                              v);
  st_register_synthetic(c, UNCOND, 708, 0, GF_TEST_TMP, v);
  snprintf(local, sizeof local, "%s/local-cond", GF_TEST_TMP);
  tu_fresh_dir(local);
  gf_err e;
  REQUIRE(tu_write_model_dir_names(local, &mc, INIT_SEED, 0, NAMES, &e) ==
          0);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 2, 16, NULL, GF_GEN_FP32};
  REQUIRE(gf_generator_load(local, COND, "1", &o, &g_ref, &e) == GF_OK);
  REQUIRE(g_ref->num_classes == K && g_ref->batch_invariant);

  st_server s;
  const char *extra[] = {"--model", "models:/" COND "/1", "--model",
                         "models:/" UNCOND "/1", "--poll", "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);

  /* GET: one class for all, one per image, one per equal run */
  check_get_png(&s, 5, 1, "1", (const int32_t[]){1});
  check_get_png(&s, 5, 4, "2", (const int32_t[]){2, 2, 2, 2});
  check_get_png(&s, 5, 4, "0,1,2,1", (const int32_t[]){0, 1, 2, 1});
  check_get_png(&s, 5, 4, "2,0", (const int32_t[]){2, 2, 0, 0});
  /* names (percent-encoded), mixed with indices */
  check_get_png(&s, 6, 4, "Ankle%20boot,top", (const int32_t[]){1, 1, 0, 0});
  check_get_png(&s, 6, 2, "Ankle+boot,0", (const int32_t[]){1, 0});
  /* deterministic per (seed, class), classes differ (decoded) */
  st_http a, b, d;
  get(&s, "seed=5&n=4&class=1", &a);
  get(&s, "seed=5&n=4&class=1", &b);
  get(&s, "seed=5&n=4&class=2", &d);
  REQUIRE(a.status == 200 && b.status == 200 && d.status == 200);
  CHECK(a.len == b.len && memcmp(a.body, b.body, a.len) == 0);
  int w1, h1, c1, w2, h2, c2;
  uint8_t *p1 = NULL, *p2 = NULL;
  REQUIRE(st_png_decode(a.body, a.len, &w1, &h1, &c1, &p1) == 0);
  REQUIRE(st_png_decode(d.body, d.len, &w2, &h2, &c2, &p2) == 0);
  CHECK(w1 == w2 && h1 == h2 && c1 == c2);
  size_t differ = 0;
  for (size_t i = 0; i < (size_t)w1 * h1 * c1; i++) differ += p1[i] != p2[i];
  printf("class 1 vs class 2, seed 5, 4 images: %zu of %zu bytes differ\n",
         differ, (size_t)w1 * h1 * c1);
  CHECK(differ > 0);
  free(p1);
  free(p2);
  st_http_free(&a);
  st_http_free(&b);
  st_http_free(&d);

  v2_tests(&s);
  bad_inputs(&s);
  concurrency(&s);
  cli_generate(&s, uri);

  /* the page: one row per class */
  char url[256];
  snprintf(url, sizeof url, "%s/", s.base);
  st_http pg;
  REQUIRE(st_get(url, &pg) == 0 && pg.status == 200);
  for (int k = 0; k < K; k++) {
    char want[128];
    snprintf(want, sizeof want, "<span>%d: %s</span>", k, NAMES[k]);
    CHECKF(strstr(pg.body, want) != NULL, "page: no row for class %d", k);
  }
  CHECK(strstr(pg.body, "/v1/models/" COND "/generate?seed=7&amp;class=2") !=
        NULL);
  CHECK(strstr(pg.body, "/v1/models/" UNCOND "/generate?seed=0&amp;n=16") !=
        NULL);
  st_http_free(&pg);
  /* the model metadata names the class input */
  snprintf(url, sizeof url, "%s/v2/models/%s", s.base, COND);
  REQUIRE(st_get(url, &pg) == 0 && pg.status == 200);
  CHECK(strstr(pg.body, "\"name\": \"class\"") != NULL);
  CHECK(strstr(pg.body, "\"num_classes\": 3") != NULL);
  CHECK(strstr(pg.body, "\"class_names\": [\"top\", \"Ankle boot\", \"2\"]}") !=
        NULL);
  st_http_free(&pg);

  CHECK_INT_EQ(st_server_stop(&s), 0);
  gf_generator_unref(g_ref);
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
