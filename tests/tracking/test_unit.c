/* test_unit.c - tracking library logic that needs no server: configuration
 * from the environment, URI and key validation, path safety, models:/ URIs,
 * error-answer and Retry-After parsing, JSON number printing, answer
 * parsers, and the outbox record format. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mlflow/mlflow.h"
#include "outbox.h"
#include "parse.h"

static void clear_env(void) {
  const char *vars[] = {"MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME",
                        "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                        "MLFLOW_TRACKING_INSECURE_TLS",
                        "MLFLOW_TRACKING_SERVER_CERT_PATH",
                        "MLFLOW_TRACKING_CLIENT_CERT_PATH",
                        "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
                        "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER",
                        "MLFLOW_HTTP_REQUEST_TIMEOUT"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

static void test_config_env(void) {
  mlflow_config cfg;
  mlflow_error err;
  clear_env();
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_OK);
  CHECK_STR_EQ(cfg.tracking_uri, "http://127.0.0.1:5000");
  CHECK_INT_EQ(cfg.max_retries, 7);
  CHECK_NEAR(cfg.backoff_factor, 2.0, 0);
  CHECK_NEAR(cfg.timeout_s, 120.0, 0);
  CHECK(cfg.username == NULL && cfg.token == NULL);
  mlflow_config_free(&cfg);

  setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com:8443/prefix//", 1);
  setenv("MLFLOW_TRACKING_USERNAME", "alice", 1);
  setenv("MLFLOW_TRACKING_PASSWORD", "s3cret", 1);
  setenv("MLFLOW_TRACKING_INSECURE_TLS", "true", 1);
  setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2", 1);
  setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "7.5", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_OK);
  CHECK_STR_EQ(cfg.tracking_uri, "https://mlflow.example.com:8443/prefix");
  CHECK_STR_EQ(cfg.username, "alice");
  CHECK_STR_EQ(cfg.password, "s3cret");
  CHECK_INT_EQ(cfg.insecure_tls, 1);
  CHECK_INT_EQ(cfg.max_retries, 2);
  CHECK_NEAR(cfg.timeout_s, 7.5, 0);
  mlflow_config copy;
  CHECK_INT_EQ(mlflow_config_copy(&copy, &cfg, &err), MLFLOW_OK);
  CHECK(copy.password != cfg.password);
  CHECK_STR_EQ(copy.password, "s3cret");
  mlflow_config_free(&copy);
  mlflow_config_free(&cfg);
  mlflow_config_free(&cfg); /* a freed config frees again safely */

  /* Malformed values are errors naming the variable. */
  clear_env();
  setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "many", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  CHECK(strstr(err.message, "MLFLOW_HTTP_REQUEST_MAX_RETRIES") != NULL);
  clear_env();
  setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "-1", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  clear_env();
  setenv("MLFLOW_TRACKING_INSECURE_TLS", "maybe", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  CHECK(strstr(err.message, "MLFLOW_TRACKING_INSECURE_TLS") != NULL);
  clear_env();
  setenv("MLFLOW_TRACKING_URI", "file:///tmp/mlruns", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_UNSUPPORTED);
  CHECK(strstr(err.message, "http") != NULL);
  clear_env();
  setenv("MLFLOW_TRACKING_URI", "databricks", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_UNSUPPORTED);
  clear_env();
  setenv("MLFLOW_TRACKING_URI", "http://", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  clear_env();
  setenv("MLFLOW_TRACKING_URI", "http://host/a b", 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  clear_env();
}

static void test_keys(void) {
  mlflow_error err;
  const char *good[] = {"loss/d", "system/gpu_0_utilization_percentage",
                        "a.b-c d:e_f", "x"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    CHECKF(mlflow_validate_key(good[i], &err) == MLFLOW_OK, "%s", good[i]);
  char long_key[300];
  memset(long_key, 'k', sizeof long_key);
  long_key[251] = '\0';
  const char *bad[] = {"", "/lead", "a/../b", "semi;colon", "tab\tkey",
                       "quote\"", long_key, "ünïcode"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECKF(mlflow_validate_key(bad[i], &err) == MLFLOW_E_INVALID, "%s", bad[i]);
  long_key[250] = '\0';
  CHECK_INT_EQ(mlflow_validate_key(long_key, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_validate_key(NULL, NULL), MLFLOW_E_INVALID);
}

static void test_paths(void) {
  const char *safe[] = {"a", "a/b", "model/MLmodel", "x y/z.bin", "..a", "a..",
                        ".hidden"};
  for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
    CHECKF(mlflow_path_is_safe(safe[i]), "%s", safe[i]);
  const char *unsafe[] = {"", "/etc/passwd", "..", "../x", "a/../b", "a/..",
                          ".", "./a", "a//b", "a/", "a\\b", "a\nb", NULL};
  for (size_t i = 0; i < sizeof unsafe / sizeof *unsafe; i++)
    CHECKF(!mlflow_path_is_safe(unsafe[i]), "%s",
           unsafe[i] ? unsafe[i] : "(null)");
}

static void test_model_uris(void) {
  mlflow_model_uri u;
  mlflow_error err;
  CHECK_INT_EQ(mlflow_model_uri_parse("models:/gan@production", &u, &err), MLFLOW_OK);
  CHECK_STR_EQ(u.name, "gan");
  CHECK_STR_EQ(u.alias, "production");
  CHECK(u.version == NULL && !u.latest);
  mlflow_model_uri_free(&u);
  CHECK_INT_EQ(mlflow_model_uri_parse("models:/my model/12", &u, &err), MLFLOW_OK);
  CHECK_STR_EQ(u.name, "my model");
  CHECK_STR_EQ(u.version, "12");
  mlflow_model_uri_free(&u);
  CHECK_INT_EQ(mlflow_model_uri_parse("models:/gan/latest", &u, &err), MLFLOW_OK);
  CHECK(u.latest && u.version == NULL);
  mlflow_model_uri_free(&u);
  const char *bad[] = {"models:/", "models:/gan", "models:/gan/", "models:/gan/x1",
                       "models:/@prod", "models:/gan@", "models:/gan@v3",
                       "models:/gan@latest", "models:/a/b/3", "runs:/abc/model",
                       "models:/gan@pro duction", "models:/a@b/3x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECKF(mlflow_model_uri_parse(bad[i], &u, &err) == MLFLOW_E_INVALID, "%s",
           bad[i]);
    mlflow_model_uri_free(&u);
  }
  CHECK(mlflow_alias_is_valid("production"));
  CHECK(mlflow_alias_is_valid("v1x"));
  CHECK(!mlflow_alias_is_valid("v12"));
  CHECK(!mlflow_alias_is_valid("latest"));
  CHECK(!mlflow_alias_is_valid("a.b"));
}

static void test_error_answers(void) {
  mlflow_error err;
  const char *j = "{\"error_code\": \"RESOURCE_DOES_NOT_EXIST\", \"message\": "
                  "\"Run 'x' not found\"}";
  CHECK_INT_EQ(mlflow_error_from_answer("GET runs/get", 404, "application/json",
                                        j, strlen(j), &err),
               MLFLOW_E_NOT_FOUND);
  CHECK_STR_EQ(err.error_code, "RESOURCE_DOES_NOT_EXIST");
  CHECK_INT_EQ(err.http_status, 404);
  CHECK(strstr(err.message, "Run 'x' not found") != NULL);
  CHECK(strstr(err.message, "GET runs/get") != NULL);

  const char *t = "Invalid Host header - possible DNS rebinding attack detected";
  CHECK_INT_EQ(mlflow_error_from_answer("POST runs/create", 403, "text/plain", t,
                                        strlen(t), &err),
               MLFLOW_E_AUTH);
  CHECK(strstr(err.message, "DNS rebinding") != NULL);
  CHECK_STR_EQ(err.error_code, "");

  CHECK_INT_EQ(mlflow_error_from_answer("X", 503, NULL, NULL, 0, &err), MLFLOW_E_HTTP);
  CHECK(strstr(err.message, "HTTP 503") != NULL);
  const char *binary = "\x01\x02\x1b[31mred\n\r";
  CHECK_INT_EQ(mlflow_error_from_answer("X", 500, NULL, binary, strlen(binary), &err),
               MLFLOW_E_HTTP);
  for (const char *p = err.message; *p; p++) CHECK((unsigned char)*p >= 0x20);

  CHECK_NEAR(mlflow_parse_retry_after("  7 ", 0), 7, 0);
  CHECK_NEAR(mlflow_parse_retry_after("0", 0), 0, 0);
  CHECK_NEAR(mlflow_parse_retry_after("soon", 0), -1, 0);
  CHECK_NEAR(mlflow_parse_retry_after("", 0), -1, 0);
  time_t now = 1700000000;
  /* Tue, 14 Nov 2023 22:13:20 GMT is 1700000000 */
  CHECK_NEAR(mlflow_parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT\r\n", now), 30, 0.5);
}

static void test_json_numbers(void) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "nan", mlflow_json_double(NAN));
  cJSON_AddItemToObject(o, "inf", mlflow_json_double(INFINITY));
  cJSON_AddItemToObject(o, "ninf", mlflow_json_double(-INFINITY));
  cJSON_AddItemToObject(o, "pi", mlflow_json_double(3.141592653589793));
  cJSON_AddItemToObject(o, "tiny", mlflow_json_double(1e-310));
  cJSON_AddItemToObject(o, "ts", mlflow_json_int64(1795349634111LL));
  cJSON_AddItemToObject(o, "big", mlflow_json_int64(9007199254740993LL));
  char *s = mlflow_json_print(o);
  CHECK(strstr(s, "\"nan\":\"NaN\"") != NULL);
  CHECK(strstr(s, "\"inf\":\"Infinity\"") != NULL);
  CHECK(strstr(s, "\"ninf\":\"-Infinity\"") != NULL);
  CHECK(strstr(s, "\"ts\":1795349634111") != NULL);
  CHECK(strstr(s, "\"big\":9007199254740993") != NULL);
  CHECK(strstr(s, "null") == NULL);
  cJSON *back = cJSON_Parse(s);
  double v;
  CHECK(mlflow_json_get_double(back, "pi", &v) == 0 && v == 3.141592653589793);
  CHECK(mlflow_json_get_double(back, "tiny", &v) == 0 && v == 1e-310);
  CHECK(mlflow_json_get_double(back, "nan", &v) == 0 && isnan(v));
  CHECK(mlflow_json_get_double(back, "ninf", &v) == 0 && isinf(v) && v < 0);
  int64_t i64;
  CHECK(mlflow_json_get_int64(back, "ts", &i64) == 0 && i64 == 1795349634111LL);
  cJSON_Delete(back);
  free(s);
  cJSON_Delete(o);
}

static void test_parsers(void) {
  mlflow_error err;
  const char *run_json =
      "{\"run\":{\"info\":{\"run_id\":\"abc\",\"experiment_id\":\"1\","
      "\"status\":\"KILLED\",\"start_time\":1700000000000,\"end_time\":\"1700000000500\","
      "\"artifact_uri\":\"mlflow-artifacts:/1/abc/artifacts\",\"lifecycle_stage\":\"active\"},"
      "\"data\":{\"metrics\":[{\"key\":\"loss\",\"value\":\"NaN\",\"timestamp\":5,\"step\":3}],"
      "\"params\":[{\"key\":\"lr\",\"value\":\"0.0002\"}],"
      "\"tags\":[{\"key\":\"t\",\"value\":\"v\"},{\"value\":\"nokey\"}]}}}";
  cJSON *j = cJSON_Parse(run_json);
  mlflow_run run;
  CHECK_INT_EQ(mlflow_parse_run(cJSON_GetObjectItem(j, "run"), &run, &err), MLFLOW_OK);
  CHECK_STR_EQ(run.info.run_id, "abc");
  CHECK_INT_EQ(run.info.status, MLFLOW_RUN_KILLED);
  CHECK_INT_EQ(run.info.end_time_ms, 1700000000500LL);
  CHECK_INT_EQ(run.n_metrics, 1);
  CHECK(isnan(run.metrics[0].value) && run.metrics[0].step == 3);
  CHECK_STR_EQ(mlflow_run_param(&run, "lr"), "0.0002");
  CHECK_INT_EQ(run.n_tags, 1);
  CHECK(mlflow_run_tag(&run, "missing") == NULL);
  mlflow_run_free(&run);
  cJSON_Delete(j);

  j = cJSON_Parse("{\"run\":{\"info\":{\"experiment_id\":\"1\"}}}");
  CHECK_INT_EQ(mlflow_parse_run(cJSON_GetObjectItem(j, "run"), &run, &err),
               MLFLOW_E_PROTOCOL);
  CHECK(strstr(err.message, "run_id") != NULL);
  cJSON_Delete(j);

  j = cJSON_Parse("{\"files\":[{\"path\":\"MLmodel\",\"file_size\":\"120\"},"
                  "{\"path\":\"sub\",\"is_dir\":true}]}");
  mlflow_file_list fl = {0};
  CHECK_INT_EQ(mlflow_parse_file_list(j, "model/", &fl, &err), MLFLOW_OK);
  CHECK_INT_EQ(fl.count, 2);
  CHECK_STR_EQ(fl.items[0].path, "model/MLmodel");
  CHECK_INT_EQ(fl.items[0].file_size, 120);
  CHECK(fl.items[1].is_dir && fl.items[1].file_size == -1);
  mlflow_file_list_free(&fl);
  cJSON_Delete(j);
  const char *evil[] = {"{\"files\":[{\"path\":\"..\"}]}",
                        "{\"files\":[{\"path\":\"a/..\"}]}",
                        "{\"files\":[{\"path\":\"/\"}]}",
                        "{\"files\":[{\"path\":\"x\\\\..\\\\y\"}]}"};
  for (size_t i = 0; i < sizeof evil / sizeof *evil; i++) {
    j = cJSON_Parse(evil[i]);
    CHECKF(mlflow_parse_file_list(j, "", &fl, &err) == MLFLOW_E_UNSAFE_PATH, "%s",
           evil[i]);
    mlflow_file_list_free(&fl);
    cJSON_Delete(j);
  }

  j = cJSON_Parse("{\"model_version\":{\"name\":\"g\",\"version\":\"3\","
                  "\"status\":\"READY\",\"aliases\":[\"prod\",7,\"canary\"]}}");
  mlflow_model_version mv;
  CHECK_INT_EQ(mlflow_parse_model_version(cJSON_GetObjectItem(j, "model_version"),
                                          &mv, &err), MLFLOW_OK);
  CHECK_STR_EQ(mv.version, "3");
  CHECK_INT_EQ(mv.n_aliases, 2);
  mlflow_model_version_free(&mv);
  cJSON_Delete(j);

  cJSON *o;
  CHECK_INT_EQ(mlflow_parse_json_object("X", "<html>oops</html>", 17, &o, &err),
               MLFLOW_E_PROTOCOL);
  CHECK(strstr(err.message, "not a JSON object") != NULL);
  CHECK_INT_EQ(mlflow_parse_json_object("X", "[1,2]", 5, &o, &err), MLFLOW_E_PROTOCOL);
  CHECK_INT_EQ(mlflow_parse_json_object("X", "  ", 2, &o, &err), MLFLOW_E_PROTOCOL);
  CHECK(strstr(err.message, "empty") != NULL);
  char shown[128];
  CHECK_INT_EQ(mlflow_uri_redact("https://bob:pw@host:8/x@y", shown, sizeof shown), 0);
  CHECK_STR_EQ(shown, "https://host:8/x@y");
  CHECK_INT_EQ(mlflow_uri_redact("http://127.0.0.1:5000", shown, sizeof shown), 0);
  CHECK_STR_EQ(shown, "http://127.0.0.1:5000");
  /* Too small a buffer: the start, visibly cut, never the password. */
  char small[16];
  CHECK_INT_EQ(mlflow_uri_redact("http://bob:pw@127.0.0.1:5000", small, sizeof small), -1);
  CHECK_STR_EQ(small, "http://127.0...");
}

/* The helpers that keep texts from being cut silently. */
static void test_no_silent_cut(void) {
  mlflow_error err;
  char buf[8];
  /* mlflow_format refuses, naming what did not fit, and keeps nothing. */
  CHECK_INT_EQ(mlflow_format(buf, sizeof buf, &err, MLFLOW_E_PROTOCOL, "run id",
                             "%s", "0123456789abcdef"), MLFLOW_E_PROTOCOL);
  CHECK_STR_EQ(buf, "");
  CHECK_INT_EQ(err.status, MLFLOW_E_PROTOCOL);
  CHECKF(strstr(err.message, "run id too long (16 bytes, at most 7)") != NULL &&
             strstr(err.message, "0123456") != NULL, "%s", err.message);
  CHECK_INT_EQ(mlflow_format(buf, sizeof buf, &err, MLFLOW_E_PROTOCOL, "run id",
                             "%s", "0123456"), MLFLOW_OK);
  CHECK_STR_EQ(buf, "0123456");
  /* Messages cannot be refused: a long one keeps its start and shows the
   * cut. */
  char msg[12];
  CHECK_INT_EQ(mlflow_message_format(msg, sizeof msg, "%s", "short"), 0);
  CHECK_STR_EQ(msg, "short");
  CHECK_INT_EQ(mlflow_message_format(msg, sizeof msg, "%s", "0123456789abcdef"), -1);
  CHECK_STR_EQ(msg, "01234567...");
  char big[3000];
  memset(big, 'm', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK_INT_EQ(mlflow_fail(&err, MLFLOW_E_INVALID, "x %s", big), MLFLOW_E_INVALID);
  CHECK_INT_EQ(strlen(err.message), sizeof err.message - 1);
  CHECK_STR_EQ(err.message + sizeof err.message - 4, "...");
  /* A server's error answer longer than a message: its start, cut
   * visibly; an error_code longer than the field, too. */
  char *answer = malloc(5000);
  REQUIRE(answer);
  int n = snprintf(answer, 5000, "{\"error_code\": \"%0100d\", \"message\": \"%s\"}",
                   0, big);
  REQUIRE(n > 0 && n < 5000);
  CHECK_INT_EQ(mlflow_error_from_answer("GET runs/get", 400, NULL, answer,
                                        (size_t)n, &err), MLFLOW_E_HTTP);
  CHECK_INT_EQ(strlen(err.error_code), sizeof err.error_code - 1);
  CHECK_STR_EQ(err.error_code + sizeof err.error_code - 4, "...");
  CHECK(strstr(err.message, "GET runs/get: HTTP 400") == err.message);
  CHECK(strstr(err.message, "mmm...") != NULL);
  free(answer);
}

static void test_outbox_format(void) {
  char dir[] = "/tmp/gf-outbox-XXXXXX";
  REQUIRE(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/run.outbox", dir);
  mlflow_error err;
  CHECK_INT_EQ(mlflow_outbox_count(path), 0);
  CHECK_INT_EQ(mlflow_outbox_append(path, "{\"a\":1}", 7, 1, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_outbox_append(path, "{\"b\":22}", 8, 2, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_outbox_count(path), 2);
  /* A torn tail (the writer died mid-record) is not a record. */
  int fd = open(path, O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  CHECK(write(fd, "GFOB\x40\x00\x00\x00\x01", 9) == 9);
  close(fd);
  CHECK_INT_EQ(mlflow_outbox_count(path), 2);

  FILE *f = fopen(path, "rb");
  uint8_t buf[256];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  const char *p;
  size_t pl, used;
  uint32_t pts;
  CHECK_INT_EQ(mlflow_outbox_decode(buf, n, &p, &pl, &pts, &used), 1);
  CHECK(pl == 7 && memcmp(p, "{\"a\":1}", 7) == 0 && pts == 1);
  CHECK_INT_EQ(mlflow_outbox_decode(buf + used, n - used, &p, &pl, &pts, &used), 1);
  CHECK(pl == 8 && pts == 2);
  /* One flipped payload byte: the CRC catches it. */
  buf[MLFLOW_OUTBOX_HEADER + 2] ^= 0x20;
  CHECK_INT_EQ(mlflow_outbox_decode(buf, n, &p, &pl, &pts, &used), -1);
  CHECK_INT_EQ(mlflow_outbox_decode((const uint8_t *)"XXXX", 4, &p, &pl, &pts, &used), -1);
  CHECK_INT_EQ(mlflow_outbox_decode((const uint8_t *)"GF", 2, &p, &pl, &pts, &used), 0);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  test_config_env();
  test_keys();
  test_paths();
  test_model_uris();
  test_error_answers();
  test_json_numbers();
  test_parsers();
  test_no_silent_cut();
  test_outbox_format();
  return check_report();
}
