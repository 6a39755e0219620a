/* test_uri_limit.c - a tracking URI longer than MLFLOW_MAX_URI_LEN is
 * refused with an error that names it as too long, wherever it comes in
 * (MLFLOW_TRACKING_URI, mlflow_config_set_uri, a config filled by hand for
 * mlflow_client_new), and one of the longest accepted length is never cut
 * in the messages that name the server. No server needed: the one request
 * goes to a closed port. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mlflow/mlflow.h"

/* A malloc'd "PREFIX" followed by 'p' up to len bytes in all. */
static char *uri_of_length(const char *prefix, size_t len) {
  size_t n = strlen(prefix);
  REQUIRE(len >= n);
  char *u = malloc(len + 1);
  REQUIRE(u);
  memcpy(u, prefix, n);
  memset(u + n, 'p', len - n);
  u[len] = '\0';
  return u;
}

/* The error says "tracking URI", "too long" and the length. */
static void check_too_long(const mlflow_error *err, size_t len) {
  char num[32];
  snprintf(num, sizeof num, "%zu bytes", len);
  CHECKF(strstr(err->message, "tracking URI") != NULL &&
             strstr(err->message, "too long") != NULL &&
             strstr(err->message, num) != NULL,
         "message does not name the URI as too long: %s", err->message);
}

static void test_env(void) {
  mlflow_config cfg;
  mlflow_error err;
  /* Far over the limit, with credentials: refused, and the start shown
   * without the password. */
  char *u = uri_of_length("http://bob:s3cret@mlflow.example.com:5000/", 8192);
  setenv("MLFLOW_TRACKING_URI", u, 1);
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  check_too_long(&err, 8192);
  CHECK(strstr(err.message, "mlflow.example.com") != NULL);
  CHECK(strstr(err.message, "s3cret") == NULL);
  CHECK(cfg.tracking_uri == NULL); /* left freed */
  free(u);

  /* The boundary: MLFLOW_MAX_URI_LEN is accepted, one more byte is not. */
  u = uri_of_length("http://127.0.0.1:5000/", MLFLOW_MAX_URI_LEN);
  setenv("MLFLOW_TRACKING_URI", u, 1);
  CHECKF(mlflow_config_from_env(&cfg, &err) == MLFLOW_OK, "%s", err.message);
  CHECK_STR_EQ(cfg.tracking_uri, u);
  mlflow_config_free(&cfg);
  free(u);
  u = uri_of_length("http://127.0.0.1:5000/", MLFLOW_MAX_URI_LEN + 1);
  setenv("MLFLOW_TRACKING_URI", u, 1);
  CHECK_INT_EQ(mlflow_config_from_env(&cfg, &err), MLFLOW_E_INVALID);
  check_too_long(&err, MLFLOW_MAX_URI_LEN + 1);
  free(u);
  unsetenv("MLFLOW_TRACKING_URI");
}

static void test_set_uri(void) {
  mlflow_config cfg;
  mlflow_error err;
  REQUIRE(mlflow_config_init(&cfg, &err) == MLFLOW_OK);
  char *u = uri_of_length("https://mlflow.example.com/", 4 * MLFLOW_MAX_URI_LEN);
  CHECK_INT_EQ(mlflow_config_set_uri(&cfg, u, &err), MLFLOW_E_INVALID);
  check_too_long(&err, 4 * MLFLOW_MAX_URI_LEN);
  /* The configuration keeps the URI it had. */
  CHECK_STR_EQ(cfg.tracking_uri, "http://127.0.0.1:5000");
  mlflow_config_free(&cfg);
  free(u);
}

static void test_client_new(void) {
  mlflow_config cfg;
  mlflow_error err;
  REQUIRE(mlflow_config_init(&cfg, &err) == MLFLOW_OK);
  /* Filled by hand, past mlflow_config_set_uri's check. */
  free(cfg.tracking_uri);
  cfg.tracking_uri = uri_of_length("http://127.0.0.1:1/", 2 * MLFLOW_MAX_URI_LEN);
  mlflow_client *c = NULL;
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(mlflow_client_new(&c, &cfg, &err), MLFLOW_E_INVALID);
  CHECK(c == NULL);
  check_too_long(&err, 2 * MLFLOW_MAX_URI_LEN);
  mlflow_config_free(&cfg);
}

/* A URI of the longest accepted length stays whole in the message of a
 * failed request. */
static void test_message_keeps_uri(void) {
  mlflow_config cfg;
  mlflow_error err;
  REQUIRE(mlflow_config_init(&cfg, &err) == MLFLOW_OK);
  char *u = uri_of_length("http://127.0.0.1:1/", MLFLOW_MAX_URI_LEN);
  REQUIRE(mlflow_config_set_uri(&cfg, u, &err) == MLFLOW_OK);
  cfg.max_retries = 0;
  cfg.timeout_s = 5;
  mlflow_client *c = NULL;
  REQUIRE(mlflow_client_new(&c, &cfg, &err) == MLFLOW_OK);
  CHECK_INT_EQ(mlflow_ping(c, &err), MLFLOW_E_CONNECT);
  CHECKF(strstr(err.message, u) != NULL, "URI cut in: %s", err.message);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  free(u);
}

int main(void) {
  test_env();
  test_set_uri();
  test_client_new();
  test_message_keeps_uri();
  return check_report();
}
