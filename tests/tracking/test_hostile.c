/* test_hostile.c - the tracking library against answers the real MLflow
 * server never gives: HTML with 200, JSON of the wrong shape, plain-text and
 * empty error bodies, 5xx that clear up or never do, a body cut mid-way, a
 * server that never answers, artifact listings with unsafe names, huge
 * answers. Each must give a clear error with the right mlflow_status, and
 * never a crash, a hang, or a file written outside its target directory.
 * It also checks what the library sends: log-batch split to the server's
 * limits, NaN/Inf as strings, auth headers, Content-Type, no Origin, and
 * that no password or token ends up in an error message.
 *
 * The server is the scripted fixture of hostile_server.h on 127.0.0.1:0,
 * one per test case; the library is driven through its public API only.
 * What this does not cover: the real server's behaviour (the integration
 * tests do that). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "hostile_server.h"
#include "mlflow/mlflow.h"

#ifndef GF_TEST_TMP
#define GF_TEST_TMP "/tmp/gf-test-hostile"
#endif

#define RUN_ID "0123456789abcdef0123456789abcdef"
#define HOST_CHECK_TEXT "Invalid Host header - possible DNS rebinding attack detected"

/* ---- helpers ------------------------------------------------------------- */

typedef struct fixture {
  hs_server *s;
  mlflow_client *c;
  mlflow_error err;
} fixture;

typedef struct fx_auth {
  const char *username, *password, *token;
  const char *uri_userinfo; /* "user:pass" put into the tracking URI */
} fx_auth;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts a fixture server and a client for it; exits on failure (nothing
 * else can run without them). */
static void fx_open_auth(fixture *f, int max_retries, double timeout_s,
                         const fx_auth *auth) {
  memset(f, 0, sizeof *f);
  f->s = hs_start();
  REQUIRE(f->s != NULL);
  mlflow_config cfg;
  mlflow_error e;
  REQUIRE(mlflow_config_init(&cfg, &e) == MLFLOW_OK);
  char url[256];
  if (auth && auth->uri_userinfo)
    snprintf(url, sizeof url, "http://%s@127.0.0.1:%d", auth->uri_userinfo,
             hs_port(f->s));
  else
    hs_url(f->s, url, sizeof url);
  REQUIRE(mlflow_config_set_uri(&cfg, url, &e) == MLFLOW_OK);
  cfg.max_retries = max_retries;
  cfg.backoff_factor = 0.01;
  cfg.backoff_jitter = 0;
  cfg.timeout_s = timeout_s;
  if (auth) {
    if (auth->username) cfg.username = strdup(auth->username);
    if (auth->password) cfg.password = strdup(auth->password);
    if (auth->token) cfg.token = strdup(auth->token);
  }
  REQUIRE(mlflow_client_new(&f->c, &cfg, &e) == MLFLOW_OK);
  mlflow_config_free(&cfg);
}

static void fx_open(fixture *f, int max_retries) {
  fx_open_auth(f, max_retries, 5, NULL);
}

static void fx_close(fixture *f) {
  mlflow_client_free(f->c);
  hs_stop(f->s);
  memset(f, 0, sizeof *f);
}

static int contains(const char *hay, const char *needle) {
  return hay && needle && strstr(hay, needle) != NULL;
}

/* A valid runs/get answer, as the real server (MLflow 3.x) sends it. */
static const char *run_answer(void) {
  return "{\"run\":{\"info\":{\"run_uuid\":\"" RUN_ID "\",\"experiment_id\":\"1\","
         "\"run_name\":\"r1\",\"user_id\":\"\",\"status\":\"RUNNING\","
         "\"start_time\":1700000000000,\"artifact_uri\":"
         "\"mlflow-artifacts:/1/" RUN_ID "/artifacts\",\"lifecycle_stage\":"
         "\"active\",\"run_id\":\"" RUN_ID "\"},\"data\":{\"tags\":[{\"key\":"
         "\"mlflow.runName\",\"value\":\"r1\"}]},\"inputs\":{}}}";
}

/* mlflow_run_get against the fixture; frees the run. */
static mlflow_status get_run(fixture *f) {
  mlflow_run run;
  mlflow_status st = mlflow_run_get(f->c, RUN_ID, &run, &f->err);
  if (st == MLFLOW_OK) {
    CHECK_STR_EQ(run.info.run_id, RUN_ID);
    CHECK_STR_EQ(mlflow_run_tag(&run, "mlflow.runName"), "r1");
  }
  mlflow_run_free(&run);
  return st;
}

#define CHECK_STATUS(got, want)                                            \
  CHECKF((got) == (want), "%s, want %s: %s", mlflow_status_name(got),      \
         mlflow_status_name(want), f.err.message)

/* Directory helpers for the path-safety tests. */
static void rm_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        rm_tree(child);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Names in dir (not . and ..), sorted, joined by ','; "" when empty,
 * "(missing)" when dir does not exist. */
static void list_dir(const char *dir, char *out, size_t cap) {
  out[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(out, cap, "(missing)");
    return;
  }
  char *names[256];
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 256) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (names[i] && names[j] && strcmp(names[i], names[j]) > 0) {
        char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    if (names[i]) {
      int w = snprintf(out + len, cap - len, "%s%s", i ? "," : "", names[i]);
      if (w > 0 && (size_t)w < cap - len) len += (size_t)w;
    }
    free(names[i]);
  }
}

static char tmp_root[512];

/* A fresh empty directory under the test's temporary root. */
static void make_tmp(char *out, size_t cap, const char *tag) {
  snprintf(out, cap, "%s/%s-XXXXXX", tmp_root, tag);
  REQUIRE(mkdtemp(out) != NULL);
}

/* ---- answers that are not what was asked for ---------------------------- */

static void test_non_json_200(void) {
  fixture f;
  fx_open(&f, 2);
  hs_push(f.s, 200, "text/html; charset=utf-8", NULL,
          "<!doctype html>\n<html><title>Login</title><h1>Sign in</h1></html>",
          (hs_opts){0});
  mlflow_status st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_PROTOCOL);
  CHECK_INT_EQ(f.err.status, MLFLOW_E_PROTOCOL);
  CHECKF(contains(f.err.message, "not a JSON"), "%s", f.err.message);
  CHECKF(contains(f.err.message, "runs/get"), "%s", f.err.message);
  CHECKF(contains(f.err.message, "<!doctype html>"), "%s", f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 1); /* a 200 is not retried */
  fx_close(&f);
}

static void test_wrong_json_shape(void) {
  static const char *answers[] = {
      "[1,2,3]",                                  /* an array */
      "\"run\"",                                  /* a string */
      "{\"runs\":[]}",                            /* no "run" */
      "{\"run\":[]}",                             /* "run" not an object */
      "{\"run\":{\"data\":{}}}",                  /* no info */
      "{\"run\":{\"info\":{\"run_id\":\"\"}}}",   /* empty run_id */
      "{\"run\":{\"info\":{\"run_id\":7}}}",      /* run_id not a string */
      "{\"run\":{\"info\":{\"run_id\":\"x\"},\"data\":[]}}",
      "{\"run\":{\"info\":{\"run_id\":\"x\"},\"data\":{\"metrics\":{}}}}",
      "{\"run\":{\"info\":{\"run_id\":\"x\"},\"data\":{\"metrics\":[{\"key\":\"m\"}]}}}",
      "{\"run\":{\"info\":{\"run_id\":\"x\"},\"data\":{\"params\":\"p\"}}}",
      "{\"run\":{\"info\":{\"run_id\":\"x\"}}", /* truncated JSON */
  };
  for (size_t i = 0; i < sizeof answers / sizeof *answers; i++) {
    fixture f;
    fx_open(&f, 0);
    hs_push_json(f.s, 200, answers[i]);
    mlflow_status st = get_run(&f);
    CHECKF(st == MLFLOW_E_PROTOCOL, "answer %zu '%s': %s (%s)", i, answers[i],
           mlflow_status_name(st), f.err.message);
    CHECKF(f.err.message[0] != '\0', "answer %zu: empty message", i);
    fx_close(&f);
  }
  /* Other calls: an experiment answer without the experiment. */
  fixture f;
  fx_open(&f, 0);
  hs_push_json(f.s, 200, "{}");
  mlflow_experiment e;
  mlflow_status st = mlflow_experiment_get_by_name(f.c, "x", &e, &f.err);
  CHECK_STATUS(st, MLFLOW_E_PROTOCOL);
  CHECKF(contains(f.err.message, "experiment"), "%s", f.err.message);
  mlflow_experiment_free(&e);
  /* A download URI answer without artifact_uri. */
  hs_push_json(f.s, 200, "{\"artifact_uri\":5}");
  char *uri = NULL;
  st = mlflow_model_version_download_uri(f.c, "m", "1", &uri, &f.err);
  CHECK_STATUS(st, MLFLOW_E_PROTOCOL);
  CHECK(uri == NULL);
  free(uri);
  fx_close(&f);
}

/* ---- error answers ------------------------------------------------------- */

static void test_403_host_check(void) {
  /* As the real server sends it: text/plain, chunked. */
  static const char chunked[] =
      "HTTP/1.1 403 Forbidden\r\nserver: uvicorn\r\ncontent-type: text/plain\r\n"
      "Transfer-Encoding: chunked\r\n\r\n3c\r\n" HOST_CHECK_TEXT "\r\n0\r\n\r\n";
  for (int variant = 0; variant < 2; variant++) {
    fixture f;
    fx_open(&f, 3);
    if (variant == 0)
      hs_push(f.s, 403, "text/plain", NULL, HOST_CHECK_TEXT, (hs_opts){0});
    else
      hs_push_raw(f.s, chunked, sizeof chunked - 1, (hs_opts){0});
    mlflow_status st = get_run(&f);
    CHECK_STATUS(st, MLFLOW_E_AUTH);
    CHECK_INT_EQ(f.err.status, MLFLOW_E_AUTH);
    CHECK_INT_EQ(f.err.http_status, 403);
    CHECKF(contains(f.err.message, HOST_CHECK_TEXT), "variant %d: %s", variant,
           f.err.message);
    CHECK_STR_EQ(f.err.error_code, "");
    CHECK_INT_EQ(hs_request_count(f.s), 1); /* 403 is not retried */
    fx_close(&f);
  }
}

static void test_401_empty(void) {
  fixture f;
  fx_open(&f, 3);
  hs_push(f.s, 401, NULL, "WWW-Authenticate: Basic realm=\"mlflow\"\r\n", NULL,
          (hs_opts){0});
  mlflow_status st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_AUTH);
  CHECK_INT_EQ(f.err.http_status, 401);
  CHECKF(contains(f.err.message, "401"), "%s", f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 1);
  fx_close(&f);
}

static void test_404_not_found(void) {
  fixture f;
  fx_open(&f, 3);
  hs_push_json(f.s, 404,
               "{\"error_code\": \"RESOURCE_DOES_NOT_EXIST\", \"message\": "
               "\"Run with id=" RUN_ID " not found\", \"sqlstate\": \"KAM00\", "
               "\"error_class\": \"RESOURCE_NOT_FOUND\"}");
  mlflow_status st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(f.err.http_status, 404);
  CHECK_STR_EQ(f.err.error_code, "RESOURCE_DOES_NOT_EXIST");
  CHECKF(contains(f.err.message, "Run with id=" RUN_ID " not found"), "%s",
         f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 1);
  /* A bare 404 with an HTML page (an unknown endpoint, a proxy). */
  hs_push(f.s, 404, "text/html; charset=utf-8", NULL,
          "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n"
          "<h1>Not Found</h1>\n",
          (hs_opts){0});
  st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(f.err.http_status, 404);
  CHECK_STR_EQ(f.err.error_code, "");
  CHECKF(!strchr(f.err.message, '\n'), "newline kept in '%s'", f.err.message);
  fx_close(&f);
}

static void test_400_invalid_parameter(void) {
  fixture f;
  fx_open(&f, 3);
  hs_push_json(f.s, 400,
               "{\"error_code\": \"INVALID_PARAMETER_VALUE\", \"message\": "
               "\"Changing param values is not allowed.\"}");
  mlflow_status st =
      mlflow_log_param(f.c, RUN_ID, "lr", "0.01", &f.err);
  CHECK_STATUS(st, MLFLOW_E_HTTP);
  CHECK_INT_EQ(f.err.status, MLFLOW_E_HTTP);
  CHECK_INT_EQ(f.err.http_status, 400);
  CHECK_STR_EQ(f.err.error_code, "INVALID_PARAMETER_VALUE");
  CHECKF(contains(f.err.message, "Changing param values is not allowed."), "%s",
         f.err.message);
  CHECKF(contains(f.err.message, "runs/log-batch"), "%s", f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 1); /* 400 is not retried */
  /* A 10 MB error body: kept short, still an HTTP error. */
  size_t big = (size_t)10 << 20;
  char *junk = malloc(big + 1);
  REQUIRE(junk);
  for (size_t i = 0; i < big; i++) junk[i] = (char)('a' + i % 26);
  junk[big] = '\0';
  hs_push(f.s, 400, "text/plain", NULL, junk, (hs_opts){0});
  free(junk);
  st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_HTTP);
  CHECK_INT_EQ(f.err.http_status, 400);
  CHECK(strlen(f.err.message) < sizeof f.err.message);
  fx_close(&f);
}

/* ---- retries ------------------------------------------------------------- */

static void test_retries(void) {
  fixture f;
  /* 500 then success. */
  fx_open(&f, 3);
  hs_push_json(f.s, 500, "{\"error_code\":\"INTERNAL_ERROR\",\"message\":\"boom\"}");
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  CHECK_INT_EQ(mlflow_client_attempts(f.c), 2);
  fx_close(&f);

  /* 503 with Retry-After: 0 then success. */
  fx_open(&f, 3);
  hs_push(f.s, 503, "text/plain", "Retry-After: 0\r\n", "busy", (hs_opts){0});
  hs_push_json(f.s, 200, run_answer());
  double t0 = now_s();
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  CHECK(now_s() - t0 < 2.0);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  fx_close(&f);

  /* 503 with Retry-After: 1 is honoured (the backoff alone would be 0). */
  fx_open(&f, 3);
  hs_push(f.s, 503, NULL, "Retry-After: 1\r\n", NULL, (hs_opts){0});
  hs_push_json(f.s, 200, run_answer());
  t0 = now_s();
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  double dt = now_s() - t0;
  CHECKF(dt >= 0.9 && dt < 4.0, "Retry-After: 1 took %.3f s", dt);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  fx_close(&f);

  /* 500 forever with max_retries=2: exactly 3 requests, then HTTP. */
  fx_open(&f, 2);
  hs_push_json(f.s, 500, "{\"error_code\":\"INTERNAL_ERROR\",\"message\":\"down\"}");
  hs_repeat_last(f.s, 1);
  mlflow_status st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_HTTP);
  CHECK_INT_EQ(f.err.http_status, 500);
  CHECK_STR_EQ(f.err.error_code, "INTERNAL_ERROR");
  CHECKF(contains(f.err.message, "down"), "%s", f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 3);
  fx_close(&f);

  /* 502/504/429 are retried too; 501 is not. */
  fx_open(&f, 5);
  hs_push(f.s, 502, "text/html", NULL, "<html>bad gateway</html>", (hs_opts){0});
  hs_push(f.s, 504, NULL, NULL, NULL, (hs_opts){0});
  hs_push(f.s, 429, NULL, "Retry-After: 0\r\n", NULL, (hs_opts){0});
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  CHECK_INT_EQ(hs_request_count(f.s), 4);
  hs_push(f.s, 501, NULL, NULL, NULL, (hs_opts){0});
  CHECK_STATUS(get_run(&f), MLFLOW_E_HTTP);
  CHECK_INT_EQ(hs_request_count(f.s), 5);
  fx_close(&f);
}

/* ---- broken connections -------------------------------------------------- */

static void push_cut(hs_server *s, size_t cut_after) {
  char head[128];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Content-Length: 1000\r\n\r\n");
  char buf[1200];
  memcpy(buf, head, (size_t)n);
  memset(buf + n, ' ', 1000);
  memcpy(buf + n, "{\"run\":{\"info\":{\"run_id\":\"", 26);
  hs_opts o = {0};
  o.cut_after = (size_t)n + cut_after; /* headers, then cut_after body bytes */
  hs_push_raw(s, buf, (size_t)n + 1000, o);
}

static void test_cut_mid_body(void) {
  fixture f;
  /* Cut once, then a whole answer: retried and fine. */
  fx_open(&f, 3);
  push_cut(f.s, 100);
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  fx_close(&f);

  /* Cut every time: a clear error after 1 + max_retries tries. */
  fx_open(&f, 2);
  push_cut(f.s, 100);
  hs_repeat_last(f.s, 1);
  mlflow_status st = get_run(&f);
  CHECKF(st == MLFLOW_E_CONNECT || st == MLFLOW_E_PROTOCOL, "%s: %s",
         mlflow_status_name(st), f.err.message);
  CHECK(f.err.message[0] != '\0');
  CHECKF(contains(f.err.message, "runs/get"), "%s", f.err.message);
  CHECK_INT_EQ(hs_request_count(f.s), 3);
  fx_close(&f);

  /* Cut inside the status line: no answer came, so it is retried. */
  fx_open(&f, 1);
  static const char partial_status[] = "HTTP/1.1 20";
  hs_push_raw(f.s, partial_status, sizeof partial_status - 1,
              (hs_opts){0, 0, 1, 0});
  hs_repeat_last(f.s, 1);
  st = get_run(&f);
  CHECKF(st == MLFLOW_E_CONNECT || st == MLFLOW_E_PROTOCOL, "%s: %s",
         mlflow_status_name(st), f.err.message);
  CHECKF(hs_request_count(f.s) == 2, "%zu tries: %s", hs_request_count(f.s),
         f.err.message);
  fx_close(&f);

  /* Cut inside the headers, after "200 OK": libcurl takes the close as the
   * end of an empty answer, so runs/get finds no run. Any clear error will
   * do; what matters is no crash and no success. */
  fx_open(&f, 1);
  static const char partial[] = "HTTP/1.1 200 OK\r\nContent-Ty";
  hs_push_raw(f.s, partial, sizeof partial - 1, (hs_opts){0, 0, 1, 0});
  hs_repeat_last(f.s, 1);
  st = get_run(&f);
  CHECKF(st == MLFLOW_E_CONNECT || st == MLFLOW_E_PROTOCOL, "%s: %s",
         mlflow_status_name(st), f.err.message);
  CHECK(f.err.message[0] != '\0');
  CHECK(hs_request_count(f.s) >= 1 && hs_request_count(f.s) <= 2);
  fx_close(&f);

  /* Closed with no answer at all. */
  fx_open(&f, 1);
  hs_push_raw(f.s, "", 0, (hs_opts){0, 0, 1, 0});
  hs_repeat_last(f.s, 1);
  st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_CONNECT);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  fx_close(&f);

  /* Not HTTP at all. */
  fx_open(&f, 0);
  static const char garbage[] = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
  hs_push_raw(f.s, garbage, sizeof garbage - 1, (hs_opts){0, 0, 1, 0});
  st = get_run(&f);
  CHECKF(st == MLFLOW_E_CONNECT || st == MLFLOW_E_PROTOCOL, "%s: %s",
         mlflow_status_name(st), f.err.message);
  fx_close(&f);
}

static void test_stall(void) {
  fixture f;
  fx_open_auth(&f, 1, 1.0, NULL);
  hs_push_stall(f.s);
  hs_repeat_last(f.s, 1);
  double t0 = now_s();
  mlflow_status st = get_run(&f);
  double dt = now_s() - t0;
  CHECK_STATUS(st, MLFLOW_E_CONNECT);
  CHECKF(dt >= 1.5 && dt < 6.0, "two 1 s tries took %.3f s", dt);
  CHECK_INT_EQ(hs_request_count(f.s), 2);
  CHECKF(contains(f.err.message, "runs/get"), "%s", f.err.message);
  CHECK_INT_EQ(f.err.http_status, 0);
  fx_close(&f);

  /* Headers sent, then the body never comes. */
  fx_open_auth(&f, 0, 1.0, NULL);
  static const char head_only[] =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: 50\r\n\r\n{\"run\":";
  hs_opts o = {0};
  o.delay_ms = 0;
  hs_push_raw(f.s, head_only, sizeof head_only - 1, o);
  t0 = now_s();
  st = get_run(&f);
  dt = now_s() - t0;
  CHECK_STATUS(st, MLFLOW_E_CONNECT);
  CHECKF(dt < 4.0, "a 1 s timeout took %.3f s", dt);
  fx_close(&f);
}

/* What test_connection_refused's on_retry saw. */
typedef struct retry_log {
  int calls, last_retry, max;
  double waited;
  char why[256];
} retry_log;

static void log_retry(void *ctx, const mlflow_error *why, int retry,
                      int max_retries, double wait_s) {
  retry_log *l = ctx;
  l->calls++;
  l->last_retry = retry;
  l->max = max_retries;
  l->waited += wait_s;
  snprintf(l->why, sizeof l->why, "%.255s", why ? why->message : "(none)");
}

static void test_connection_refused(void) {
  /* A port nobody listens on: start a fixture, note its port, stop it. */
  hs_server *s = hs_start();
  REQUIRE(s);
  char url[64];
  hs_url(s, url, sizeof url);
  hs_stop(s);
  mlflow_config cfg;
  mlflow_error err;
  REQUIRE(mlflow_config_init(&cfg, &err) == MLFLOW_OK);
  REQUIRE(mlflow_config_set_uri(&cfg, url, &err) == MLFLOW_OK);
  cfg.max_retries = 2;
  cfg.backoff_factor = 0.01;
  cfg.backoff_jitter = 0;
  cfg.timeout_s = 5;
  retry_log rl = {0};
  cfg.on_retry = log_retry;
  cfg.on_retry_ctx = &rl;
  mlflow_client *c;
  REQUIRE(mlflow_client_new(&c, &cfg, &err) == MLFLOW_OK);
  mlflow_run run;
  double t0 = now_s();
  mlflow_status st = mlflow_run_get(c, RUN_ID, &run, &err);
  CHECKF(st == MLFLOW_E_CONNECT, "%s: %s", mlflow_status_name(st), err.message);
  CHECK(now_s() - t0 < 5.0);
  CHECK_INT_EQ(mlflow_client_attempts(c), 3);
  CHECKF(contains(err.message, "127.0.0.1"), "%s", err.message);
  /* told before each of the 2 waits, with the failure and the wait */
  CHECK_INT_EQ(rl.calls, 2);
  CHECK_INT_EQ(rl.last_retry, 2);
  CHECK_INT_EQ(rl.max, 2);
  CHECKF(rl.waited > 0 && rl.waited < 1, "waited %.3f s", rl.waited);
  CHECKF(contains(rl.why, "127.0.0.1"), "%s", rl.why);
  mlflow_run_free(&run);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
}

/* ---- unsafe artifact paths ----------------------------------------------- */

static const char *const unsafe_names[] = {"../evil", "/abs", "a\\b", ".",
                                           "..", "", "dir/", "a\nb"};
#define N_UNSAFE (sizeof unsafe_names / sizeof *unsafe_names)

/* {"files":[{"path":"MLmodel",...},{"path":NAME,...}]} */
static char *listing_with(const char *name, int is_dir) {
  cJSON *o = cJSON_CreateObject();
  cJSON *files = cJSON_AddArrayToObject(o, "files");
  cJSON *good = cJSON_CreateObject();
  cJSON_AddStringToObject(good, "path", "MLmodel");
  cJSON_AddFalseToObject(good, "is_dir");
  cJSON_AddNumberToObject(good, "file_size", 6);
  cJSON_AddItemToArray(files, good);
  cJSON *bad = cJSON_CreateObject();
  cJSON_AddStringToObject(bad, "path", name);
  cJSON_AddBoolToObject(bad, "is_dir", is_dir);
  if (!is_dir) cJSON_AddNumberToObject(bad, "file_size", 6);
  cJSON_AddItemToArray(files, bad);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  REQUIRE(s);
  return s;
}

static void test_unsafe_listing(void) {
  const char *uri = "mlflow-artifacts:/1/" RUN_ID "/artifacts";
  for (size_t i = 0; i < N_UNSAFE; i++) {
    for (int is_dir = 0; is_dir < 2; is_dir++) {
      const char *name = unsafe_names[i];
      char *listing = listing_with(name, is_dir);
      fixture f;
      /* mlflow_artifact_list, one level and recursive. */
      for (int recursive = 0; recursive < 2; recursive++) {
        fx_open(&f, 0);
        hs_push_json(f.s, 200, listing);
        hs_push(f.s, 200, "application/octet-stream", NULL, "pwned\n",
                (hs_opts){0});
        hs_repeat_last(f.s, 1);
        mlflow_file_list list;
        mlflow_status st =
            mlflow_artifact_list(f.c, uri, NULL, recursive, &list, &f.err);
        CHECKF(st == MLFLOW_E_UNSAFE_PATH,
               "list '%s' (is_dir %d, recursive %d): %s: %s", name, is_dir,
               recursive, mlflow_status_name(st), f.err.message);
        CHECK(list.count == 0 && list.items == NULL);
        mlflow_file_list_free(&list);
        fx_close(&f);
      }
      /* mlflow_artifact_download_dir: nothing outside the target. */
      char base[600], parent[700], target[800];
      make_tmp(base, sizeof base, "unsafe");
      snprintf(parent, sizeof parent, "%s/parent", base);
      REQUIRE(mkdir(parent, 0777) == 0);
      snprintf(target, sizeof target, "%s/target", parent);
      fx_open(&f, 0);
      hs_push_json(f.s, 200, listing);
      hs_push(f.s, 200, "application/octet-stream", NULL, "pwned\n",
              (hs_opts){0});
      hs_repeat_last(f.s, 1);
      mlflow_status st = mlflow_artifact_download_dir(f.c, uri, NULL, target,
                                                      &f.err);
      CHECKF(st == MLFLOW_E_UNSAFE_PATH,
             "download_dir '%s' (is_dir %d): %s: %s", name, is_dir,
             mlflow_status_name(st), f.err.message);
      char names[2048];
      list_dir(parent, names, sizeof names);
      CHECKF(!strcmp(names, "") || !strcmp(names, "target"),
             "'%s': parent holds '%s'", name, names);
      list_dir(base, names, sizeof names);
      CHECKF(!strcmp(names, "parent"), "'%s': base holds '%s'", name, names);
      /* No file was fetched once the listing was refused. */
      for (size_t k = 0; k < hs_request_count(f.s); k++) {
        const hs_request *r = hs_request_get(f.s, k);
        CHECKF(contains(r->target, "/mlflow-artifacts/artifacts?"),
               "'%s': fetched %s after an unsafe listing", name, r->target);
      }
      fx_close(&f);
      rm_tree(base);
      free(listing);
    }
  }

  /* A nested directory whose listing is unsafe (the recursion checks too). */
  fixture f;
  fx_open(&f, 0);
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"sub\",\"is_dir\":true}]}");
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"..\",\"is_dir\":true}]}");
  hs_push_json(f.s, 200, "{}");
  mlflow_file_list list;
  mlflow_status st = mlflow_artifact_list(f.c, uri, NULL, 1, &list, &f.err);
  CHECK_STATUS(st, MLFLOW_E_UNSAFE_PATH);
  CHECK(list.count == 0);
  mlflow_file_list_free(&list);
  fx_close(&f);

  /* Control: a safe nested listing is accepted, and paths come back
   * relative to the root (the fixture can produce a passing answer). */
  fx_open(&f, 0);
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"MLmodel\",\"is_dir\":false,"
               "\"file_size\":6},{\"path\":\"data\",\"is_dir\":true}]}");
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"w.bin\",\"is_dir\":false,"
               "\"file_size\":6}]}");
  st = mlflow_artifact_list(f.c, uri, NULL, 1, &list, &f.err);
  CHECK_STATUS(st, MLFLOW_OK);
  CHECK_INT_EQ(list.count, 3);
  if (list.count == 3) {
    CHECK_STR_EQ(list.items[0].path, "MLmodel");
    CHECK_INT_EQ(list.items[0].file_size, 6);
    CHECK_STR_EQ(list.items[1].path, "data");
    CHECK(list.items[1].is_dir);
    CHECK_STR_EQ(list.items[2].path, "data/w.bin");
  }
  mlflow_file_list_free(&list);
  const hs_request *r = hs_request_get(f.s, 1);
  CHECKF(r && contains(r->target, "path=1%2F" RUN_ID "%2Fartifacts%2Fdata"),
         "second listing asked for %s", r ? r->target : "(none)");
  fx_close(&f);
}

/* Scripts the registry answers of mlflow_model_download("models:/m/1"). */
static void push_registry(hs_server *s) {
  hs_push_json(s, 200,
               "{\"model_version\":{\"name\":\"m\",\"version\":\"1\","
               "\"creation_timestamp\":1795350112179,\"current_stage\":\"None\","
               "\"source\":\"mlflow-artifacts:/1/" RUN_ID "/artifacts/model\","
               "\"run_id\":\"" RUN_ID "\",\"status\":\"READY\"}}");
  hs_push_json(s, 200,
               "{\"artifact_uri\":\"mlflow-artifacts:/1/" RUN_ID
               "/artifacts/model\"}");
}

static void test_registry_download(void) {
  char base[600], dest[700], names[2048];

  /* Control: a good download lands in dest_dir. */
  make_tmp(base, sizeof base, "registry");
  snprintf(dest, sizeof dest, "%s/model", base);
  fixture f;
  fx_open(&f, 0);
  push_registry(f.s);
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"MLmodel\",\"is_dir\":false,"
               "\"file_size\":6},{\"path\":\"data\",\"is_dir\":true}]}");
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"w.bin\",\"is_dir\":false,"
               "\"file_size\":3}]}");
  hs_push(f.s, 200, "application/octet-stream", NULL, "flavor", (hs_opts){0});
  hs_push(f.s, 200, "application/octet-stream", NULL, "abc", (hs_opts){0});
  mlflow_model_version mv;
  mlflow_status st = mlflow_model_download(f.c, "models:/m/1", dest, &mv, &f.err);
  CHECK_STATUS(st, MLFLOW_OK);
  if (st == MLFLOW_OK) CHECK_STR_EQ(mv.version, "1");
  mlflow_model_version_free(&mv);
  list_dir(dest, names, sizeof names);
  CHECK_STR_EQ(names, "MLmodel,data");
  list_dir(base, names, sizeof names);
  CHECK_STR_EQ(names, "model");
  fx_close(&f);
  rm_tree(base);

  /* A listing with "../x": refused, nothing created, no temp dir left. */
  static const char *const bad[] = {"../x", "..", "/x", "x\\..\\..\\y"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    make_tmp(base, sizeof base, "registry");
    snprintf(dest, sizeof dest, "%s/model", base);
    fx_open(&f, 0);
    push_registry(f.s);
    char *listing = listing_with(bad[i], 0);
    hs_push_json(f.s, 200, listing);
    free(listing);
    hs_push(f.s, 200, "application/octet-stream", NULL, "pwned\n", (hs_opts){0});
    hs_repeat_last(f.s, 1);
    st = mlflow_model_download(f.c, "models:/m/1", dest, &mv, &f.err);
    CHECKF(st == MLFLOW_E_UNSAFE_PATH, "'%s': %s: %s", bad[i],
           mlflow_status_name(st), f.err.message);
    CHECK(mv.name == NULL && mv.version == NULL);
    mlflow_model_version_free(&mv);
    struct stat sb;
    CHECKF(lstat(dest, &sb) != 0, "'%s': dest_dir was created", bad[i]);
    list_dir(base, names, sizeof names);
    CHECKF(!strcmp(names, ""), "'%s': left behind '%s'", bad[i], names);
    fx_close(&f);
    rm_tree(base);
  }

  /* The second file is cut every time: CONNECT, and again nothing left. */
  make_tmp(base, sizeof base, "registry");
  snprintf(dest, sizeof dest, "%s/model", base);
  fx_open(&f, 1);
  push_registry(f.s);
  hs_push_json(f.s, 200,
               "{\"files\":[{\"path\":\"MLmodel\",\"is_dir\":false,"
               "\"file_size\":6},{\"path\":\"weights.bin\",\"is_dir\":false,"
               "\"file_size\":1000}]}");
  hs_push(f.s, 200, "application/octet-stream", NULL, "flavor", (hs_opts){0});
  {
    char blob[1200];
    int n = snprintf(blob, sizeof blob,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream"
                     "\r\nContent-Length: 1000\r\n\r\n");
    memset(blob + n, 'w', 1000);
    hs_opts o = {0};
    o.cut_after = (size_t)n + 100;
    hs_push_raw(f.s, blob, (size_t)n + 1000, o);
  }
  hs_repeat_last(f.s, 1);
  st = mlflow_model_download(f.c, "models:/m/1", dest, &mv, &f.err);
  CHECKF(st == MLFLOW_E_CONNECT || st == MLFLOW_E_PROTOCOL, "%s: %s",
         mlflow_status_name(st), f.err.message);
  mlflow_model_version_free(&mv);
  list_dir(base, names, sizeof names);
  CHECKF(!strcmp(names, ""), "a failed download left '%s'", names);
  CHECK_INT_EQ(hs_request_count(f.s), 6); /* get, uri, list, file, 2 cut tries */
  fx_close(&f);
  rm_tree(base);
}

/* ---- big answers ---------------------------------------------------------- */

static void test_big_answers(void) {
  /* 5 MB of valid JSON: one tag value of 5,000,000 characters. */
  size_t vlen = 5000000;
  const char *head = "{\"run\":{\"info\":{\"run_id\":\"" RUN_ID
                     "\",\"status\":\"FINISHED\"},\"data\":{\"tags\":"
                     "[{\"key\":\"big\",\"value\":\"";
  const char *tail = "\"}]}}}";
  size_t hl = strlen(head), tl = strlen(tail);
  char *json = malloc(hl + vlen + tl + 1);
  REQUIRE(json);
  memcpy(json, head, hl);
  for (size_t i = 0; i < vlen; i++) json[hl + i] = (char)('a' + i % 26);
  memcpy(json + hl + vlen, tail, tl + 1);
  fixture f;
  fx_open(&f, 0);
  hs_push_json(f.s, 200, json);
  free(json);
  mlflow_run run;
  mlflow_status st = mlflow_run_get(f.c, RUN_ID, &run, &f.err);
  CHECK_STATUS(st, MLFLOW_OK);
  if (st == MLFLOW_OK) {
    const char *v = mlflow_run_tag(&run, "big");
    CHECK(v && strlen(v) == vlen);
    CHECK_INT_EQ(run.info.status, MLFLOW_RUN_FINISHED);
  }
  mlflow_run_free(&run);

  /* 10 MB of garbage with 200: a clean PROTOCOL error. */
  size_t glen = (size_t)10 << 20;
  char *garbage = malloc(glen + 1);
  REQUIRE(garbage);
  unsigned x = 12345;
  for (size_t i = 0; i < glen; i++) {
    x = x * 1103515245u + 12345u;
    garbage[i] = (char)(1 + (x >> 16) % 255); /* no NUL: hs_push uses strlen */
  }
  garbage[0] = '{';
  garbage[glen] = '\0';
  hs_push(f.s, 200, "application/json", NULL, garbage, (hs_opts){0});
  free(garbage);
  st = get_run(&f);
  CHECK_STATUS(st, MLFLOW_E_PROTOCOL);
  CHECKF(contains(f.err.message, "not a JSON"), "%s", f.err.message);
  CHECK(strlen(f.err.message) < 300);
  fx_close(&f);
}

/* ---- what the library sends ---------------------------------------------- */

/* Counts the items of one array in a log-batch body; -1 when malformed. */
static int array_len(const cJSON *body, const char *name) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(body, name);
  if (!a) return 0;
  return cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
}

static void test_log_batch_split(void) {
  enum { NM = 2500, NP = 150, NT = 120 };
  static char mkeys[NM][16], pkeys[NP][16], tkeys[NT][16];
  mlflow_metric *m = calloc(NM, sizeof *m);
  mlflow_kv *p = calloc(NP, sizeof *p);
  mlflow_kv *t = calloc(NT, sizeof *t);
  REQUIRE(m && p && t);
  /* Values big enough that the 1 MB body limit splits too: params 5,000
   * ASCII characters, tags 4,000 two-byte characters (8,000 bytes). */
  char *pval = malloc(5001), *tval = malloc(8001);
  REQUIRE(pval && tval);
  memset(pval, 'p', 5000);
  pval[5000] = '\0';
  for (int i = 0; i < 4000; i++) {
    tval[2 * i] = (char)0xC3;
    tval[2 * i + 1] = (char)0xA9; /* é */
  }
  tval[8000] = '\0';
  for (int i = 0; i < NM; i++) {
    snprintf(mkeys[i], sizeof mkeys[i], "m/%d", i % 50);
    m[i].key = mkeys[i];
    m[i].value = i * 0.5;
    m[i].timestamp_ms = 1700000000000LL + i;
    m[i].step = i / 50;
  }
  m[7].value = NAN;
  m[8].value = INFINITY;
  m[9].value = -INFINITY;
  for (int i = 0; i < NP; i++) {
    snprintf(pkeys[i], sizeof pkeys[i], "p%d", i);
    p[i].key = pkeys[i];
    p[i].value = pval;
  }
  for (int i = 0; i < NT; i++) {
    snprintf(tkeys[i], sizeof tkeys[i], "t%d", i);
    t[i].key = tkeys[i];
    t[i].value = tval;
  }

  fixture f;
  fx_open(&f, 0);
  hs_push_json(f.s, 200, "{}");
  hs_repeat_last(f.s, 1);
  mlflow_status st =
      mlflow_log_batch(f.c, RUN_ID, m, NM, p, NP, t, NT, &f.err);
  CHECK_STATUS(st, MLFLOW_OK);
  size_t nreq = hs_request_count(f.s);
  CHECKF(nreq >= 3 && nreq < 20, "%zu requests", nreq);
  CHECKF(hs_connection_count(f.s) == 1, "%zu connections for %zu requests",
         hs_connection_count(f.s), nreq);

  static unsigned char seen_m[NM], seen_p[NP], seen_t[NT];
  memset(seen_m, 0, sizeof seen_m);
  memset(seen_p, 0, sizeof seen_p);
  memset(seen_t, 0, sizeof seen_t);
  int bad_items = 0, nan_ok = 0, inf_ok = 0, ninf_ok = 0;
  for (size_t k = 0; k < nreq; k++) {
    const hs_request *r = hs_request_get(f.s, k);
    CHECK_STR_EQ(r->method, "POST");
    CHECK_STR_EQ(r->target, "/api/2.0/mlflow/runs/log-batch");
    CHECKF(r->body_len < 1000000, "request %zu: %zu bytes", k, r->body_len);
    char ct[128];
    CHECKF(hs_header(r, "Content-Type", ct, sizeof ct) &&
               !strcmp(ct, "application/json"),
           "request %zu has no Content-Type: application/json", k);
    CHECKF(!hs_header(r, "Origin", ct, sizeof ct), "request %zu sent Origin", k);
    cJSON *b = cJSON_ParseWithLength(r->body, r->body_len);
    CHECKF(b != NULL, "request %zu: body is not JSON", k);
    if (!b) continue;
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(b, "run_id")), RUN_ID);
    int nm = array_len(b, "metrics"), np = array_len(b, "params"),
        nt = array_len(b, "tags");
    CHECKF(nm >= 0 && nm <= 1000, "request %zu: %d metrics", k, nm);
    CHECKF(np >= 0 && np <= 100, "request %zu: %d params", k, np);
    CHECKF(nt >= 0 && nt <= 100, "request %zu: %d tags", k, nt);
    CHECKF(nm + np + nt <= 1000, "request %zu: %d items", k, nm + np + nt);
    CHECKF(nm + np + nt > 0, "request %zu is empty", k);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(b, "metrics")) {
      const cJSON *ts = cJSON_GetObjectItem(e, "timestamp");
      int i = cJSON_IsNumber(ts) ? (int)(ts->valuedouble - 1700000000000.0) : -1;
      if (i < 0 || i >= NM || seen_m[i]) {
        bad_items++;
        continue;
      }
      seen_m[i] = 1;
      const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(e, "key"));
      const cJSON *v = cJSON_GetObjectItem(e, "value");
      const cJSON *sp = cJSON_GetObjectItem(e, "step");
      if (!key || strcmp(key, m[i].key) || !cJSON_IsNumber(sp) ||
          sp->valuedouble != (double)m[i].step)
        bad_items++;
      if (i == 7) nan_ok = cJSON_IsString(v) && !strcmp(v->valuestring, "NaN");
      else if (i == 8)
        inf_ok = cJSON_IsString(v) && !strcmp(v->valuestring, "Infinity");
      else if (i == 9)
        ninf_ok = cJSON_IsString(v) && !strcmp(v->valuestring, "-Infinity");
      else if (!cJSON_IsNumber(v) || v->valuedouble != m[i].value)
        bad_items++;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(b, "params")) {
      const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(e, "key"));
      const char *val = cJSON_GetStringValue(cJSON_GetObjectItem(e, "value"));
      int i = key && key[0] == 'p' ? atoi(key + 1) : -1;
      if (i < 0 || i >= NP || seen_p[i] || strcmp(key, pkeys[i]) || !val ||
          strcmp(val, pval)) {
        bad_items++;
        continue;
      }
      seen_p[i] = 1;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(b, "tags")) {
      const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(e, "key"));
      const char *val = cJSON_GetStringValue(cJSON_GetObjectItem(e, "value"));
      int i = key && key[0] == 't' ? atoi(key + 1) : -1;
      if (i < 0 || i >= NT || seen_t[i] || strcmp(key, tkeys[i]) || !val ||
          strcmp(val, tval)) {
        bad_items++;
        continue;
      }
      seen_t[i] = 1;
    }
    cJSON_Delete(b);
  }
  CHECKF(bad_items == 0, "%d duplicated, unknown or altered items", bad_items);
  int missing_m = 0, missing_p = 0, missing_t = 0;
  for (int i = 0; i < NM; i++) missing_m += !seen_m[i];
  for (int i = 0; i < NP; i++) missing_p += !seen_p[i];
  for (int i = 0; i < NT; i++) missing_t += !seen_t[i];
  CHECKF(missing_m == 0 && missing_p == 0 && missing_t == 0,
         "missing: %d metrics, %d params, %d tags", missing_m, missing_p,
         missing_t);
  CHECK(nan_ok);
  CHECK(inf_ok);
  CHECK(ninf_ok);
  /* And as raw text, not only after a lenient parse. */
  int raw_nan = 0, raw_inf = 0, raw_ninf = 0, raw_null = 0;
  for (size_t k = 0; k < nreq; k++) {
    const hs_request *r = hs_request_get(f.s, k);
    raw_nan |= contains(r->body, "\"value\":\"NaN\"");
    raw_inf |= contains(r->body, "\"value\":\"Infinity\"");
    raw_ninf |= contains(r->body, "\"value\":\"-Infinity\"");
    raw_null |= contains(r->body, "null");
  }
  CHECK(raw_nan && raw_inf && raw_ninf);
  CHECK(!raw_null);
  fx_close(&f);
  free(pval);
  free(tval);
  free(m);
  free(p);
  free(t);
}

/* Runs failing calls of several kinds and checks no message holds secret. */
static void check_no_secret_in_errors(fixture *f, const char *secret) {
  const char *what[] = {"401", "403 echo", "500", "cut", "html 200"};
  for (int k = 0; k < 5; k++) {
    switch (k) {
    case 0: hs_push(f->s, 401, "text/plain", NULL, "Unauthorized", (hs_opts){0}); break;
    case 1: hs_push(f->s, 403, "text/plain", NULL, "Permission denied", (hs_opts){0}); break;
    case 2: hs_push_json(f->s, 500, "{\"error_code\":\"INTERNAL_ERROR\"}"); break;
    case 3: push_cut(f->s, 10); break;
    case 4: hs_push(f->s, 200, "text/html", NULL, "<html>", (hs_opts){0}); break;
    }
    mlflow_run run;
    memset(&f->err, 0, sizeof f->err);
    mlflow_status st = mlflow_run_get(f->c, RUN_ID, &run, &f->err);
    mlflow_run_free(&run);
    CHECKF(st != MLFLOW_OK, "%s: the call succeeded", what[k]);
    CHECKF(!contains(f->err.message, secret), "%s: secret in '%s'", what[k],
           f->err.message);
  }
}

static void test_auth_headers(void) {
  char h[512];
  /* Basic: username and password. */
  fixture f;
  fx_auth basic = {"alice", "s3cr3t-pw", "tok-should-not-be-used", NULL};
  fx_open_auth(&f, 0, 5, &basic);
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  const hs_request *r = hs_request_get(f.s, 0);
  REQUIRE(r);
  CHECKF(hs_header(r, "Authorization", h, sizeof h) &&
             !strcmp(h, "Basic YWxpY2U6czNjcjN0LXB3"),
         "Authorization: '%s'", h);
  CHECKF(!hs_header(r, "Origin", h, sizeof h), "Origin: %s", h);
  CHECK(!contains(r->headers, "tok-should-not-be-used"));
  check_no_secret_in_errors(&f, "s3cr3t-pw");
  check_no_secret_in_errors(&f, "YWxpY2U6czNjcjN0LXB3");
  fx_close(&f);

  /* Bearer: only a token. */
  fx_auth bearer = {NULL, NULL, "tok-XYZ-123", NULL};
  fx_open_auth(&f, 0, 5, &bearer);
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  r = hs_request_get(f.s, 0);
  REQUIRE(r);
  CHECKF(hs_header(r, "Authorization", h, sizeof h) &&
             !strcmp(h, "Bearer tok-XYZ-123"),
         "Authorization: '%s'", h);
  check_no_secret_in_errors(&f, "tok-XYZ-123");
  fx_close(&f);

  /* Only a username: no auth header at all. */
  fx_auth user_only = {"alice", NULL, NULL, NULL};
  fx_open_auth(&f, 0, 5, &user_only);
  hs_push_json(f.s, 200, run_answer());
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  r = hs_request_get(f.s, 0);
  CHECK(r && !hs_header(r, "Authorization", h, sizeof h));
  fx_close(&f);

  /* Credentials in the tracking URI (http://user:pass@host, which MLflow
   * clients accept): still never in a message, a connection error included. */
  fx_auth in_uri = {NULL, NULL, NULL, "bob:hunter2-pw"};
  fx_open_auth(&f, 0, 1.0, &in_uri);
  check_no_secret_in_errors(&f, "hunter2-pw");
  hs_push_stall(f.s);
  mlflow_run run;
  mlflow_status st = mlflow_run_get(f.c, RUN_ID, &run, &f.err);
  mlflow_run_free(&run);
  CHECK_STATUS(st, MLFLOW_E_CONNECT);
  CHECKF(!contains(f.err.message, "hunter2-pw"), "secret in '%s'",
         f.err.message);
  fx_close(&f);
}

static void test_request_headers(void) {
  fixture f;
  fx_open(&f, 0);
  hs_push_json(f.s, 200, "{\"experiment_id\":\"7\"}");
  hs_push_json(f.s, 200, run_answer());
  char *id = NULL;
  mlflow_status st = mlflow_experiment_create(f.c, "exp", &id, &f.err);
  CHECK_STATUS(st, MLFLOW_OK);
  CHECK_STR_EQ(id, "7");
  free(id);
  CHECK_STATUS(get_run(&f), MLFLOW_OK);
  char h[256];
  const hs_request *post = hs_request_get(f.s, 0);
  REQUIRE(post);
  CHECK_STR_EQ(post->method, "POST");
  CHECK_STR_EQ(post->target, "/api/2.0/mlflow/experiments/create");
  CHECKF(hs_header(post, "Content-Type", h, sizeof h) &&
             !strcmp(h, "application/json"),
         "POST Content-Type '%s'", h);
  cJSON *b = cJSON_ParseWithLength(post->body, post->body_len);
  CHECK_STR_EQ(b ? cJSON_GetStringValue(cJSON_GetObjectItem(b, "name")) : NULL,
               "exp");
  cJSON_Delete(b);
  const hs_request *get = hs_request_get(f.s, 1);
  REQUIRE(get);
  CHECK_STR_EQ(get->method, "GET");
  CHECK_STR_EQ(get->target, "/api/2.0/mlflow/runs/get?run_id=" RUN_ID);
  for (size_t k = 0; k < 2; k++) {
    const hs_request *r = hs_request_get(f.s, k);
    CHECKF(!hs_header(r, "Origin", h, sizeof h), "request %zu sent Origin: %s",
           k, h);
    CHECKF(hs_header(r, "Host", h, sizeof h) && !strncmp(h, "127.0.0.1:", 10),
           "Host '%s'", h);
  }
  CHECK_INT_EQ(hs_connection_count(f.s), 1); /* keep-alive */
  fx_close(&f);
}

int main(void) {
  double t0 = now_s();
  snprintf(tmp_root, sizeof tmp_root, "%s", GF_TEST_TMP);
  rm_tree(tmp_root);
  mkdir(tmp_root, 0777); /* its parent is the build directory */
  struct stat sb;
  REQUIRE(stat(tmp_root, &sb) == 0 && S_ISDIR(sb.st_mode));

  struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
      {"non_json_200", test_non_json_200},
      {"wrong_json_shape", test_wrong_json_shape},
      {"403_host_check", test_403_host_check},
      {"401_empty", test_401_empty},
      {"404_not_found", test_404_not_found},
      {"400_invalid_parameter", test_400_invalid_parameter},
      {"retries", test_retries},
      {"cut_mid_body", test_cut_mid_body},
      {"stall", test_stall},
      {"connection_refused", test_connection_refused},
      {"unsafe_listing", test_unsafe_listing},
      {"registry_download", test_registry_download},
      {"big_answers", test_big_answers},
      {"log_batch_split", test_log_batch_split},
      {"auth_headers", test_auth_headers},
      {"request_headers", test_request_headers},
  };
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    int before = check_failures_;
    double ts = now_s();
    tests[i].fn();
    fprintf(stderr, "%-24s %s (%.2f s)\n", tests[i].name,
            check_failures_ == before ? "ok" : "FAILED", now_s() - ts);
  }
  rm_tree(tmp_root);
  double total = now_s() - t0;
  fprintf(stderr, "total %.2f s\n", total);
  CHECKF(total < 30.0, "the hostile tests took %.1f s", total);
  return check_report();
}
