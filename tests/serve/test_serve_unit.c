/* test_serve_unit.c - unit tests of the serve library without a network:
 * the generate query parser, the V2 and MLflow JSON body parsers, the
 * command line, the metrics text, and the checker proving it fires. */
#include <stdarg.h>
#include <string.h>

#include "check.h"
#include "gfs/metrics.h"
#include "gfs/request.h"
#include "gfs/server.h"

static gf_status q(const char *s, gfs_gen_args *a) {
  gf_err e;
  return gfs_query_parse(s, strlen(s), 16, a, &e);
}

static void test_query(void) {
  gfs_gen_args a;
  CHECK_INT_EQ(q("", &a), GF_OK);
  CHECK_INT_EQ(a.n, 1);
  CHECK_INT_EQ(a.seed, 0);
  CHECK_INT_EQ(q("seed=42&n=16&format=json", &a), GF_OK);
  CHECK(a.seed == 42 && a.n == 16 && a.format == GFS_FORMAT_JSON);
  CHECK_INT_EQ(q("seed=18446744073709551615", &a), GF_OK);
  CHECK(a.seed == UINT64_MAX);
  CHECK_INT_EQ(q("seed=%34%32&&n=2", &a), GF_OK); /* %34%32 = "42" */
  CHECK(a.seed == 42 && a.n == 2);
  CHECK_INT_EQ(q("class=3", &a), GF_OK);
  CHECK(a.has_class && a.cls == 3);
  /* Every malformed or out-of-range form is refused. */
  const char *bad[] = {"seed=18446744073709551616", "seed=-1", "seed=abc",
                       "seed=", "seed=1e3", "seed= 1", "n=0", "n=17",
                       "n=1000000000", "n=99999999999999999999999", "n=-1",
                       "seed=1&seed=2", "=5", "bogus=1", "seed=%zz",
                       "seed=%4", "format=gif", "class=-1", "seed=%00"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(q(bad[i], &a) != GF_OK, "accepted '%s'", bad[i]);
  char big[GFS_QUERY_MAX + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(q(big, &a) != GF_OK);
}

static gf_status v2(const char *body, gfs_infer_req *r) {
  gf_err e;
  return gfs_v2_parse(body, strlen(body), 3, 4, r, &e);
}

static void test_v2(void) {
  gfs_infer_req r;
  CHECK_INT_EQ(v2("{\"id\": \"a1\", \"inputs\": [{\"name\": \"seed\", "
                  "\"shape\": [2], \"datatype\": \"INT64\", \"data\": [7, "
                  "\"18446744073709551615\"]}]}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && r.seeds[0] == 7 &&
        r.seeds[1] == UINT64_MAX && !r.z);
  CHECK_STR_EQ(r.id, "a1");
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], "
                  "\"datatype\": \"FP32\", \"data\": [[1, 2, 3], [4, 5, "
                  "6.5]]}]}", &r), GF_OK);
  CHECK(r.n == 2 && r.z && r.z[5] == 6.5f && !r.seeds);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], "
                  "\"datatype\": \"FP32\", \"data\": [1, 2, 3]}]}", &r),
               GF_OK);
  gfs_infer_req_free(&r);
  const char *bad[] = {
      "", "{", "[]", "null", "{\"inputs\": 3}", "{\"inputs\": []}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [5], \"datatype\": "
      "\"INT64\", \"data\": [1,2,3,4,5]}]}", /* n > max 4 */
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1000000000], "
      "\"datatype\": \"INT64\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [2], \"datatype\": "
      "\"INT64\", \"data\": [1]}]}", /* shape != data */
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [-1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1.5]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"FP32\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 2], \"datatype\": "
      "\"FP32\", \"data\": [1, 2]}]}", /* z_dim 3 */
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, 3, 4]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, \"x\"]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, 1e300]}]}",
      "{\"inputs\": [{\"name\": \"w\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1]}, {\"name\": \"seed\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [1]}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECKF(v2(bad[i], &r) != GF_OK, "accepted [%zu] %s", i, bad[i]);
    CHECK(r.seeds == NULL && r.z == NULL);
  }
}

static void test_invocations(void) {
  gfs_infer_req r;
  gf_err e;
  const char *a = "{\"inputs\": {\"seed\": [1, 2, 3]}}";
  CHECK_INT_EQ(gfs_invocations_parse(a, strlen(a), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 3 && r.seeds[2] == 3);
  gfs_infer_req_free(&r);
  const char *b = "{\"instances\": [{\"seed\": 5}, {\"seed\": 6}]}";
  CHECK_INT_EQ(gfs_invocations_parse(b, strlen(b), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 2 && r.seeds[1] == 6);
  gfs_infer_req_free(&r);
  const char *c = "{\"inputs\": [[0, 0, 0]]}";
  CHECK_INT_EQ(gfs_invocations_parse(c, strlen(c), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 1 && r.z);
  gfs_infer_req_free(&r);
  const char *bad[] = {"{}", "{\"inputs\": {}}",
                       "{\"inputs\": {\"seed\": [1], \"z\": [[1,2,3]]}}",
                       "{\"instances\": [1,2,3,4,5]}", "{\"inputs\": [[1]]}",
                       "{\"instances\": [{\"x\": 1}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(gfs_invocations_parse(bad[i], strlen(bad[i]), 3, 4, &r, &e) !=
               GF_OK, "accepted %s", bad[i]);
}

static gf_status args(gfs_config *c, int *help, gf_err *e, int n, ...) {
  char *argv[32] = {"ganflow-serve"};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) argv[i + 1] = va_arg(ap, char *);
  va_end(ap);
  return gfs_config_parse_args(c, n + 1, argv, help, e);
}

static void test_config(void) {
  gfs_config c;
  gf_err e;
  int help;
  CHECK_INT_EQ(args(&c, &help, &e, 7, "--model", "models:/a@prod", "--listen",
                    "0.0.0.0:0", "--max-images=8", "--device", "cuda:1"),
               GF_OK);
  CHECK(c.n_models == 1 && c.port == 0 && c.max_images == 8 &&
        c.backend == GF_BACKEND_CUDA && c.device_index == 1);
  CHECK_STR_EQ(c.host, "0.0.0.0");
  CHECK_INT_EQ(args(&c, &help, &e, 1, "--help"), GF_OK);
  CHECK(help == 1);
  CHECK_INT_EQ(args(&c, &help, &e, 0), GF_EINVAL); /* no --model */
  CHECK(strstr(e.msg, "--model") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--max-images", "0"), GF_EINVAL);
  CHECK(strstr(e.msg, "--max-images") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p", "--device",
                    "tpu"), GF_EINVAL);
  CHECK(strstr(e.msg, "--device") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p", "--listen",
                    "nohost"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 2, "--model", "runs:/x"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 3, "--model", "models:/a@p", "--poll"),
               GF_EINVAL);
  CHECK(strstr(e.msg, "--poll") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--batch-rows", "8"), GF_OK);
  CHECK_INT_EQ(c.batch_rows, 8);
  CHECK_INT_EQ(args(&c, &help, &e, 2, "--model", "models:/a@p"), GF_OK);
  CHECK_INT_EQ(c.batch_rows, 0); /* default: no shared passes */
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--batch-rows", "-1"), GF_EINVAL);
  CHECK(strstr(e.msg, "--batch-rows") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--batch-rows", "4096"), GF_EINVAL);
}

static void test_metrics(void) {
  gfs_metrics m;
  gfs_metrics_init(&m);
  gfs_metrics_observe(&m, GFS_EP_GENERATE, 200, 0.0015);
  gfs_metrics_observe(&m, GFS_EP_GENERATE, 429, 0.0001);
  char *text = NULL;
  size_t len = 0;
  gf_err e;
  REQUIRE(gfs_metrics_render(&m, NULL, 0, &text, &len, &e) == GF_OK);
  CHECK(strstr(text, "ganflow_serve_requests_total{endpoint=\"generate\"} 2"));
  CHECK(strstr(text, "ganflow_serve_request_failures_total{endpoint="
                     "\"generate\"} 1"));
  CHECK(strstr(text, "ganflow_serve_responses_total{code=\"429\"} 1"));
  CHECK(strstr(text, "ganflow_serve_forward_passes_total 0\n"));
  CHECK(strstr(text, "ganflow_serve_shared_jobs_total 0\n"));
  /* cumulative buckets: 0.0001 <= 0.0005, 0.0015 <= 0.002 */
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.0005\"} 1\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.001\"} 1\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.002\"} 2\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"+Inf\"} 2\n"));
  CHECK(len == strlen(text));
  free(text);
}

/* The checker fires: a miss is counted (then forgiven here). */
static void test_checker_fires(void) {
  int before = check_failures_;
  gfs_gen_args a;
  fprintf(stderr, "(the next CHECK failure is intended)\n");
  CHECK(q("n=17", &a) == GF_OK); /* must fail: 17 > max 16 */
  int fired = check_failures_ == before + 1;
  check_failures_ = before;
  CHECK(fired);
}

int main(void) {
  test_query();
  test_v2();
  test_invocations();
  test_config();
  test_metrics();
  test_checker_fires();
  return check_report();
}
