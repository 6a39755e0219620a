/* mlflow_test.h - helpers for tests that talk to a real MLflow server.
 *
 * The ctest fixture `mlflow` starts `mlflow server` (deploy/mlflow-local.sh,
 * SQLite backend, temporary artifact directory, free loopback port) and
 * passes its state folder in GF_TEST_MLFLOW_STATE; the URI is in
 * STATE/uri. A test that needs the server and does not find it FAILS: an
 * integration test never skips silently. Tests that need their own server
 * (outage, auth) start one with test_server_start. */
#ifndef GF_TEST_MLFLOW_TEST_H
#define GF_TEST_MLFLOW_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdbool.h>

#include "check.h"
#include "file_util.h"
#include "mlflow/mlflow.h"

/* Reads a whole small text file, trailing newline removed; malloc'd. */
static inline char *test_read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
  return strdup(buf);
}

/* The fixture server's URI; exits 1 (a failure, not a skip) without it. */
static inline char *test_mlflow_uri(void) {
  const char *state = getenv("GF_TEST_MLFLOW_STATE");
  if (!state) {
    fprintf(stderr, "GF_TEST_MLFLOW_STATE is not set: run through ctest, "
                    "which starts the MLflow fixture\n");
    exit(1);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/uri", state);
  char *uri = test_read_text(path);
  if (!uri) {
    fprintf(stderr, "no MLflow server: %s missing (did the fixture start?)\n",
            path);
    exit(1);
  }
  return uri;
}

/* A config for uri with short retries so failing tests stay fast. */
static inline void test_config(mlflow_config *cfg, const char *uri) {
  mlflow_error err;
  if (mlflow_config_init(cfg, &err) || mlflow_config_set_uri(cfg, uri, &err)) {
    fprintf(stderr, "config: %s\n", err.message);
    exit(1);
  }
  cfg->max_retries = 3;
  cfg->backoff_factor = 0.2;
  cfg->backoff_jitter = 0.1;
  cfg->timeout_s = 60;
}

/* A client for cfg (test_config); exits 1 when it cannot be made. */
static inline mlflow_client *test_client(const mlflow_config *cfg) {
  mlflow_client *c = NULL;
  mlflow_error err;
  if (mlflow_client_new(&c, cfg, &err) != MLFLOW_OK) {
    fprintf(stderr, "client: %s\n", err.message);
    exit(1);
  }
  return c;
}

/* The run id ganflow-train left in dir/run_id (32 characters, REQUIREd)
 * into out[cap] (cap >= 33). */
static inline void test_run_id_file(const char *dir, char *out, size_t cap) {
  char path[4200];
  snprintf(path, sizeof path, "%s/run_id", dir);
  char *id = test_read_text(path);
  REQUIRE(id && strlen(id) == 32 && cap > 32);
  snprintf(out, cap, "%s", id);
  free(id);
}

/* The tracking environment the test's ganflow processes inherit:
 * MLFLOW_TRACKING_URI=uri (left as it is when uri is NULL), and no
 * MLFLOW_RUN_ID or MLFLOW_EXPERIMENT_NAME from the shell that ran ctest. */
static inline void test_tracking_env(const char *uri) {
  if (uri) setenv("MLFLOW_TRACKING_URI", uri, 1);
  unsetenv("MLFLOW_RUN_ID");
  unsetenv("MLFLOW_EXPERIMENT_NAME");
}

/* A client of the server at uri with test_config's settings (the client
 * keeps its own copy of them); exits 1 when it cannot be made. The caller
 * owns the client (mlflow_client_free). */
static inline mlflow_client *test_client_of(const char *uri) {
  mlflow_config cfg;
  test_config(&cfg, uri);
  mlflow_client *c = test_client(&cfg);
  mlflow_config_free(&cfg);
  return c;
}

/* Runs deploy/mlflow-local.sh CMD with its state in `state` and extra
 * environment assignments (e.g. "GANFLOW_MLFLOW_AUTH=1"); returns the exit
 * status. */
static inline int test_server_cmd(const char *state, const char *cmd,
                                  const char *extra_env) {
  char line[4096];
  snprintf(line, sizeof line,
           "env GANFLOW_MLFLOW_STATE='%s' GANFLOW_MLFLOW_PORT=0 %s "
           "'%s/deploy/mlflow-local.sh' %s",
           state, extra_env ? extra_env : "", GF_SOURCE_DIR, cmd);
  int rc = system(line);
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* Starts a server of the test's own in GF_TEST_TMP/server (a fresh temp
 * folder) with extra_env (may be NULL) and returns its URI (malloc'd);
 * exits 1 when it cannot. Copies the state folder's path to state. */
static inline char *test_own_server_start(char *state, size_t cap,
                                          const char *extra_env) {
  snprintf(state, cap, "%s/server", GF_TEST_TMP);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", GF_TEST_TMP,
           GF_TEST_TMP);
  if (system(cmd) != 0 || test_server_cmd(state, "start", extra_env) != 0) {
    fprintf(stderr, "could not start an MLflow server in %s\n", state);
    exit(1);
  }
  char path[1200];
  snprintf(path, sizeof path, "%s/uri", state);
  char *uri = test_read_text(path);
  if (!uri) {
    fprintf(stderr, "no URI in %s\n", path);
    exit(1);
  }
  return uri;
}

/* A fresh unique name: prefix + pid + counter, for experiments and models. */
static inline void test_unique(char *out, size_t cap, const char *prefix) {
  static int counter; /* test-process local */
  snprintf(out, cap, "%s-%d-%d-%lld", prefix, (int)getpid(), ++counter,
           (long long)mlflow_now_ms());
}

/* Disk the suite holds on to: ganflow-train uploads every checkpoint as a
 * run artifact (an mlp checkpoint is 27 MB), so a test that trains frees, once
 * every check so far has passed, what it left on the fixture server and in
 * its scratch folder; on a failure everything stays for the diagnosis.
 *
 * test_drop_artifacts removes the artifact folder of experiment `name` on the
 * fixture server (STATE/artifacts/<experiment id>, the layout of mlflow
 * server --artifacts-destination); runs, metrics and registry entries stay.
 * test_drop_tmp removes dir. */
static inline void test_drop_artifacts(mlflow_client *c, const char *name) {
  const char *state = getenv("GF_TEST_MLFLOW_STATE");
  if (check_failures_ || !state) return;
  mlflow_experiment x;
  mlflow_error e;
  if (mlflow_experiment_get_by_name(c, name, &x, &e) != MLFLOW_OK) return;
  char dir[2048];
  int n = snprintf(dir, sizeof dir, "%s/artifacts/%s", state,
                   x.experiment_id);
  /* Experiment ids are digits; anything else is not a folder of ours. */
  if (n > 0 && (size_t)n < sizeof dir && x.experiment_id[0] &&
      strspn(x.experiment_id, "0123456789") == strlen(x.experiment_id))
    tu_rmdir(dir);
  mlflow_experiment_free(&x);
}

static inline void test_drop_tmp(const char *dir) {
  if (!check_failures_) tu_rmdir(dir);
}

/* The one run of experiment `exp`, checked FINISHED (a failed CHECK for
 * anything else: no experiment, not one run, another status); when it is
 * there, its runs/get into *r (caller frees with mlflow_run_free) and
 * true. */
static inline bool test_the_finished_run(mlflow_client *mc, const char *exp,
                                         mlflow_run *r) {
  mlflow_experiment x;
  mlflow_error e;
  mlflow_status ms = mlflow_experiment_get_by_name(mc, exp, &x, &e);
  CHECKF(ms == MLFLOW_OK, "experiment %s: %s", exp, e.message);
  if (ms != MLFLOW_OK) return false;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  ms = mlflow_runs_search(mc, ids, 1, NULL, NULL, 0, NULL, &l, &e);
  mlflow_experiment_free(&x);
  CHECKF(ms == MLFLOW_OK, "runs/search: %s", e.message);
  if (ms != MLFLOW_OK) return false;
  CHECKF(l.count == 1, "%zu runs in %s, want 1", l.count, exp);
  char id[64] = "";
  if (l.count >= 1) {
    CHECKF(l.runs[0].info.status == MLFLOW_RUN_FINISHED, "%s: run is %s", exp,
           mlflow_run_status_name(l.runs[0].info.status));
    snprintf(id, sizeof id, "%s", l.runs[0].info.run_id);
  }
  mlflow_run_list_free(&l);
  if (!id[0]) return false;
  ms = mlflow_run_get(mc, id, r, &e);
  CHECKF(ms == MLFLOW_OK, "runs/get %s: %s", id, e.message);
  return ms == MLFLOW_OK;
}

#endif
