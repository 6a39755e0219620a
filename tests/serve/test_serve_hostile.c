/* test_serve_hostile.c - what a hostile or careless client can send, each
 * answered with its 4xx while the server stays up (DESIGN §2): malformed
 * query strings, n = 10^9, non-numeric seeds, unknown models and paths,
 * wrong methods, oversized and mistyped bodies, invalid JSON, missing or
 * wrong bearer tokens (health probes stay open), a client that sends half a
 * request and stalls (dropped after --conn-timeout while others are
 * served), raw garbage; then 429 with Retry-After beyond the queue. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define MODEL "hostile-mlp"
#define TOKEN "s3cret-token-for-tests"

static const char *const AUTH[] = {"Authorization: Bearer " TOKEN, NULL};
static const char *const AUTH_JSON[] = {"Authorization: Bearer " TOKEN,
                                        "Content-Type: application/json",
                                        NULL};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One request; checks the status and that a 4xx carries {"error": ...}. */
static void expect(const st_server *s, const char *method, const char *path,
                   const char *const *hdr, const char *body, long status) {
  char url[4400];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  st_http h;
  int rc = st_request(method, url, hdr, body, body ? strlen(body) : 0, 30, &h);
  CHECKF(rc == 0 && h.status == status, "%s %.80s: got %ld, want %ld (%s)",
         method, path, h.status, status, h.body ? h.body : "");
  if (status >= 400 && strcmp(method, "HEAD") != 0)
    CHECKF(strstr(h.body, "{\"error\": \"") == h.body &&
               strstr(h.ctype, "application/json"),
           "%s %s: error body %s", method, path, h.body);
  st_http_free(&h);
}

static int connect_raw(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  return fd;
}

/* Seconds until the server closes fd (reading and discarding), or -1
 * after limit_s. */
static double until_closed(int fd, double limit_s) {
  double t0 = now_s();
  char buf[4096];
  while (now_s() - t0 < limit_s) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return now_s() - t0;
    }
  }
  return -1;
}

static void test_half_sent(const st_server *s) {
  /* Headers cut short, and a body cut short: both dropped after the
   * 2 s connection timeout, while the server answers others meanwhile. */
  double t_start = now_s();
  int a = connect_raw(s->port);
  const char *part = "GET /v1/models/" MODEL "/generate?seed=1 HTTP/1.1\r\n"
                     "Host: 127.0.0.1\r\nAuthorization: Bearer " TOKEN "\r\n";
  REQUIRE(send(a, part, strlen(part), 0) > 0);
  int b = connect_raw(s->port);
  const char *body_part = "POST /v2/models/" MODEL "/infer HTTP/1.1\r\n"
                          "Host: 127.0.0.1\r\nAuthorization: Bearer " TOKEN
                          "\r\nContent-Type: application/json\r\n"
                          "Content-Length: 500\r\n\r\n{\"inputs\": [";
  REQUIRE(send(b, body_part, strlen(body_part), 0) > 0);
  expect(s, "GET", "/v1/models/" MODEL "/generate?seed=2", AUTH, NULL, 200);
  /* Seconds from the stall to each close. */
  double ta = until_closed(a, 10);
  if (ta >= 0) ta = now_s() - t_start;
  double tb = until_closed(b, 10);
  if (tb >= 0) tb = now_s() - t_start;
  CHECKF(ta > 1.0 && ta < 8, "half-sent headers closed after %.2f s", ta);
  CHECKF(tb > 1.0 && tb < 8, "half-sent body closed after %.2f s", tb);
  close(a);
  close(b);
  /* Garbage instead of HTTP: an error answer or a close, and the server
   * lives on. */
  int g = connect_raw(s->port);
  const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage"
                      "\r\n\r\n";
  REQUIRE(send(g, junk, sizeof junk - 1, 0) > 0);
  CHECK(until_closed(g, 10) >= 0);
  close(g);
  /* A header block past the connection's memory limit. */
  int h = connect_raw(s->port);
  char big[70000];
  int n = snprintf(big, sizeof big, "GET /ping HTTP/1.1\r\nHost: x\r\nX-Big: ");
  memset(big + n, 'a', sizeof big - (size_t)n - 5);
  memcpy(big + sizeof big - 5, "\r\n\r\n", 4);
  send(h, big, sizeof big - 1, MSG_NOSIGNAL);
  CHECK(until_closed(h, 10) >= 0);
  close(h);
}

static void test_hostile(const st_server *s) {
  const char *g = "/v1/models/" MODEL "/generate";
  char p[4200];
  /* auth: everything but the probes needs the token */
  expect(s, "GET", g, NULL, NULL, 401);
  const char *wrong[] = {"Authorization: Bearer nope", NULL};
  expect(s, "GET", g, wrong, NULL, 401);
  const char *basic[] = {"Authorization: Basic " TOKEN, NULL};
  expect(s, "GET", g, basic, NULL, 401);
  expect(s, "GET", "/metrics", NULL, NULL, 401);
  expect(s, "GET", "/", NULL, NULL, 401);
  /* the icon a browser asks for by itself, without the token: no icon,
   * no 401 or 404 (counted below as an answered page request) */
  expect(s, "GET", "/favicon.ico", NULL, NULL, 204);
  expect(s, "HEAD", "/favicon.ico", NULL, NULL, 204);
  expect(s, "POST", "/favicon.ico", NULL, "x", 405);
  expect(s, "GET", "/v2/health/live", NULL, NULL, 200);
  expect(s, "GET", "/v2/health/ready", NULL, NULL, 200);
  expect(s, "GET", "/ping", NULL, NULL, 200);
  expect(s, "GET", g, AUTH, NULL, 200);
  /* malformed queries and values */
  const char *bad_q[] = {"seed=%zz", "seed=%4", "=5", "seed=1&seed=2",
                         "bogus=1", "seed=abc", "seed=-3", "seed=1.5",
                         "seed=99999999999999999999", "n=1000000000", "n=0",
                         "n=17", "n=-1", "n=", "format=gif", "class=3",
                         "class=x", "seed=%00"};
  for (size_t i = 0; i < sizeof bad_q / sizeof bad_q[0]; i++) {
    snprintf(p, sizeof p, "%s?%s", g, bad_q[i]);
    expect(s, "GET", p, AUTH, NULL, 400);
  }
  char longq[4100];
  memset(longq, 'a', sizeof longq - 1);
  longq[sizeof longq - 1] = '\0';
  snprintf(p, sizeof p, "%s?seed=%.4000s", g, longq);
  expect(s, "GET", p, AUTH, NULL, 400);
  /* unknown things */
  expect(s, "GET", "/v1/models/nope/generate?seed=1", AUTH, NULL, 404);
  expect(s, "GET", "/v1/models//generate", AUTH, NULL, 404);
  expect(s, "GET", "/v2/models/nope", AUTH, NULL, 404);
  expect(s, "GET", "/v3/anything", AUTH, NULL, 404);
  expect(s, "GET", "/../../etc/passwd", AUTH, NULL, 404);
  /* methods */
  expect(s, "DELETE", g, AUTH, NULL, 405);
  expect(s, "POST", g, AUTH_JSON, "{}", 405);
  expect(s, "GET", "/v2/models/" MODEL "/infer", AUTH, NULL, 405);
  expect(s, "PUT", "/invocations", AUTH_JSON, "{}", 405);
  /* bodies */
  const char *infer = "/v2/models/" MODEL "/infer";
  char *huge = malloc(9000);
  memset(huge, ' ', 8999);
  huge[8999] = '\0';
  huge[0] = '{';
  huge[8998] = '}';
  expect(s, "POST", infer, AUTH_JSON, huge, 413);
  free(huge);
  const char *text_hdr[] = {"Authorization: Bearer " TOKEN,
                            "Content-Type: text/plain", NULL};
  expect(s, "POST", infer, text_hdr, "{}", 415);
  expect(s, "POST", "/invocations", text_hdr, "{}", 415);
  expect(s, "POST", infer, AUTH_JSON, "{\"inputs\": [", 400);
  expect(s, "POST", infer, AUTH_JSON, "not json at all", 400);
  expect(s, "POST", infer, AUTH_JSON, "", 400);
  expect(s, "POST", infer, AUTH_JSON, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 400);
  expect(s, "POST", infer, AUTH_JSON,
         "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1000000000], "
         "\"datatype\": \"INT64\", \"data\": [1]}]}", 400);
  expect(s, "POST", infer, AUTH_JSON,
         "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 50], "
         "\"datatype\": \"FP32\", \"data\": [1, 2]}]}", 400);
  expect(s, "POST", "/invocations", AUTH_JSON, "{\"instances\": 5}", 400);
  expect(s, "POST", infer, AUTH_JSON,
         "{\"inputs\": [{\"name\": \"seed\", \"shape\": [2], \"datatype\": "
         "\"INT64\", \"data\": [1, 2]}]}", 200);
  test_half_sent(s);
}

typedef struct flood {
  char url[256];
  atomic_long ok, busy, other, retry_after;
} flood;

static void *flood_main(void *arg) {
  flood *f = arg;
  for (int i = 0; i < 15; i++) {
    st_http h;
    int rc = st_request("GET", f->url, NULL, NULL, 0, 30, &h);
    if (rc == 0 && h.status == 200) atomic_fetch_add(&f->ok, 1);
    else if (rc == 0 && h.status == 429) {
      atomic_fetch_add(&f->busy, 1);
      if (atoi(h.retry_after) >= 1) atomic_fetch_add(&f->retry_after, 1);
    } else atomic_fetch_add(&f->other, 1);
    st_http_free(&h);
  }
  return NULL;
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  mlflow_error me;
  char v[32];
  st_register_synthetic(c, MODEL, 7, 0, GF_TEST_TMP, v);
  REQUIRE(mlflow_alias_set(c, MODEL, "prod", v, &me) == MLFLOW_OK);
  char token[600];
  snprintf(token, sizeof token, "%s/token", GF_TEST_TMP);
  FILE *f = fopen(token, "w");
  REQUIRE(f && fputs(TOKEN "\n", f) >= 0 && fclose(f) == 0);

  st_server s;
  const char *extra[] = {"--model", "models:/" MODEL "@prod", "--poll", "0",
                         "--token-file", token, "--max-images", "16",
                         "--max-body", "4096", "--conn-timeout", "2", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);
  test_hostile(&s);
  CHECK(st_server_alive(&s));
  char url[128];
  snprintf(url, sizeof url, "%s/metrics", s.base);
  st_http h;
  const char *const *auth = AUTH;
  REQUIRE(st_request("GET", url, auth, NULL, 0, 30, &h) == 0);
  CHECK(st_metric(h.body, "ganflow_serve_responses_total{code=\"400\"}") >= 20);
  CHECK(st_metric(h.body, "ganflow_serve_responses_total{code=\"401\"}") >= 5);
  CHECK(st_metric(h.body, "ganflow_serve_responses_total{code=\"413\"}") >= 1);
  CHECK(st_metric(h.body, "ganflow_serve_responses_total{code=\"204\"}") == 2);
  /* the page's requests: GET / without the token and the POST to the icon
   * failed, the two icon requests did not */
  CHECK(st_metric(h.body, "ganflow_serve_requests_total{endpoint=\"page\"}") -
            st_metric(h.body, "ganflow_serve_request_failures_total{endpoint=\"page\"}") ==
        2);
  st_http_free(&h);
  CHECK_INT_EQ(st_server_stop(&s), 0);

  /* One worker, no queue: concurrent requests beyond it get 429. */
  const char *extra2[] = {"--model", "models:/" MODEL "@prod", "--poll", "0",
                          "--workers", "1", "--queue", "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra2, 1);
  flood fl;
  memset(&fl, 0, sizeof fl);
  snprintf(fl.url, sizeof fl.url, "%s/v1/models/" MODEL "/generate?seed=1&"
           "n=64", s.base);
  pthread_t th[8];
  for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, flood_main, &fl);
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "flood: %ld ok, %ld 429, %ld other\n", atomic_load(&fl.ok),
          atomic_load(&fl.busy), atomic_load(&fl.other));
  CHECK(atomic_load(&fl.ok) > 0);
  CHECK(atomic_load(&fl.busy) > 0);
  CHECK_INT_EQ(atomic_load(&fl.other), 0);
  CHECK_INT_EQ(atomic_load(&fl.retry_after), atomic_load(&fl.busy));
  CHECK(st_server_alive(&s));
  CHECK_INT_EQ(st_server_stop(&s), 0);
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
