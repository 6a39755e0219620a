/* test_auth.c - the client against `mlflow server --app-name basic-auth`:
 * no or wrong credentials give MLFLOW_E_AUTH (401); the admin's Basic
 * credentials work; a user without write permission gets 403 (a plain
 * text answer); no secret ever appears in an error message. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mlflow_test.h"

static mlflow_client *make_client(const char *uri, const char *user,
                                  const char *pass, const char *token) {
  mlflow_config cfg;
  test_config(&cfg, uri);
  cfg.username = user ? strdup(user) : NULL;
  cfg.password = pass ? strdup(pass) : NULL;
  cfg.token = token ? strdup(token) : NULL;
  mlflow_client *c;
  mlflow_error err;
  REQUIRE(mlflow_client_new(&c, &cfg, &err) == MLFLOW_OK);
  mlflow_config_free(&cfg);
  return c;
}

int main(void) {
  char state[600];
  char *uri = test_own_server_start(state, sizeof state, "GANFLOW_MLFLOW_AUTH=1");
  mlflow_error err;
  char path[700];
  snprintf(path, sizeof path, "%s/admin_password", state);
  char *admin_pw = test_read_text(path);
  REQUIRE(uri && admin_pw);

  mlflow_experiment e;
  /* No credentials, then a wrong password: 401. */
  mlflow_client *anon = make_client(uri, NULL, NULL, NULL);
  CHECK_INT_EQ(mlflow_experiment_get_or_create(anon, "auth-exp", &e, &err), MLFLOW_E_AUTH);
  CHECK_INT_EQ(err.http_status, 401);
  mlflow_client_free(anon);
  mlflow_client *wrong = make_client(uri, "admin", "not-the-password", NULL);
  CHECK_INT_EQ(mlflow_experiment_get_or_create(wrong, "auth-exp", &e, &err), MLFLOW_E_AUTH);
  CHECK_INT_EQ(err.http_status, 401);
  CHECK(strstr(err.message, "not-the-password") == NULL);
  mlflow_client_free(wrong);
  /* A bearer token the basic-auth app does not know: 401, token not shown. */
  mlflow_client *bearer = make_client(uri, NULL, NULL, "tok-1234567890secret");
  CHECK_INT_EQ(mlflow_experiment_get_or_create(bearer, "auth-exp", &e, &err), MLFLOW_E_AUTH);
  CHECK(strstr(err.message, "tok-1234567890secret") == NULL);
  mlflow_client_free(bearer);

  /* The admin works. */
  mlflow_client *admin = make_client(uri, "admin", admin_pw, NULL);
  CHECK_INT_EQ(mlflow_experiment_get_or_create(admin, "auth-exp", &e, &err), MLFLOW_OK);
  mlflow_run_info run;
  CHECK_INT_EQ(mlflow_run_create(admin, e.experiment_id, "r", 0, NULL, 0, &run, &err),
               MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_metric(admin, run.run_id, "m", 1, mlflow_now_ms(), 0, &err),
               MLFLOW_OK);

  /* A second user, with the default READ permission: reads, cannot write. */
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "username", "alice");
  cJSON_AddStringToObject(b, "password", "alice-pass-4711");
  CHECK_INT_EQ(mlflow_api(admin, "POST", "users/create", b, NULL, NULL, &err), MLFLOW_OK);
  cJSON_Delete(b);
  mlflow_client *alice = make_client(uri, "alice", "alice-pass-4711", NULL);
  mlflow_run got;
  CHECK_INT_EQ(mlflow_run_get(alice, run.run_id, &got, &err), MLFLOW_OK);
  mlflow_run_free(&got);
  CHECK_INT_EQ(mlflow_log_metric(alice, run.run_id, "m", 2, mlflow_now_ms(), 1, &err),
               MLFLOW_E_AUTH);
  CHECK_INT_EQ(err.http_status, 403);
  /* The auth app answers 403 with the plain text "Permission denied". */
  CHECKF(strstr(err.message, "Permission denied") != NULL, "%s", err.message);
  CHECK(strstr(err.message, "alice-pass-4711") == NULL);
  mlflow_client_free(alice);

  mlflow_run_info_free(&run);
  mlflow_experiment_free(&e);
  mlflow_client_free(admin);
  free(uri);
  free(admin_pw);
  test_server_cmd(state, "stop", NULL);
  return check_report();
}
