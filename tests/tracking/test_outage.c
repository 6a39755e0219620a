/* test_outage.c - 10,000 metric points stream through the async logger
 * while the MLflow server is killed (SIGKILL to its process group) and
 * restarted on the same port. Afterwards the REST API must show every point
 * exactly once: none lost in the outage, none doubled by the retries and
 * the outbox replay. The server is this test's own (not the shared
 * fixture), since it is killed. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mlflow_test.h"

enum { N_POINTS = 10000, KILL_AT = 3000, AUX_EVERY = 10 };

typedef struct controller {
  mlflow_logger *lg;
  const char *state;
  int restarted_ok;     /* the server came back */
  int killed;           /* the kill happened */
} controller;

static double value_of(int step) { return 1.0 / (1.0 + step) + step * 1e-6; }

static void *kill_and_restart(void *arg) {
  controller *c = arg;
  mlflow_logger_stats st;
  for (;;) { /* wait until KILL_AT points were queued */
    mlflow_logger_get_stats(c->lg, &st);
    if (st.queued >= KILL_AT) break;
    mlflow_sleep(0.005);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/pid", c->state);
  char *pid = test_read_text(path);
  if (pid && atoi(pid) > 1) {
    kill(-atoi(pid), SIGKILL); /* the whole group: server and workers */
    c->killed = 1;
  }
  free(pid);
  mlflow_sleep(1.0); /* a real outage, however short */
  c->restarted_ok = test_server_cmd(c->state, "start", NULL) == 0;
  return NULL;
}

int main(void) {
  char state[600];
  char *uri = test_own_server_start(state, sizeof state, NULL);
  mlflow_error err;

  mlflow_config cfg;
  test_config(&cfg, uri);
  cfg.timeout_s = 10;
  mlflow_client *client;
  REQUIRE(mlflow_client_new(&client, &cfg, &err) == MLFLOW_OK);
  mlflow_experiment e;
  REQUIRE(mlflow_experiment_get_or_create(client, "outage", &e, &err) == MLFLOW_OK);
  mlflow_run_info run;
  REQUIRE(mlflow_run_create(client, e.experiment_id, "outage", 0, NULL, 0, &run, &err) ==
          MLFLOW_OK);

  char outbox[700];
  snprintf(outbox, sizeof outbox, "%s/run.outbox", GF_TEST_TMP);
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.outbox_path = outbox;
  o.send_retries = 2;
  o.retry_backoff_s = 0.1;
  o.probe_interval_s = 0.5;
  o.flush_interval_ms = 200;
  mlflow_logger *lg;
  REQUIRE(mlflow_logger_open(&lg, &cfg, run.run_id, &o, &err) == MLFLOW_OK);

  controller ctl = {.lg = lg, .state = state};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, kill_and_restart, &ctl) == 0);
  /* About 2,000 points a second: the stream outlasts the outage. */
  int64_t ts0 = mlflow_now_ms();
  int refused = 0;
  for (int i = 0; i < N_POINTS; i++) {
    refused += mlflow_logger_log_metric(lg, "loss", value_of(i), ts0 + i, i) != MLFLOW_OK;
    if (i % AUX_EVERY == 0)
      refused += mlflow_logger_log_metric(lg, "aux/lr", 0.0002, ts0 + i, i) != MLFLOW_OK;
    if (i % 10 == 9) mlflow_sleep(0.005);
  }
  pthread_join(th, NULL);
  CHECK_INT_EQ(refused, 0);
  CHECK(ctl.killed);
  CHECK(ctl.restarted_ok);

  mlflow_logger_stats st;
  mlflow_status cs = mlflow_logger_close(lg, 180, &st, &err);
  CHECKF(cs == MLFLOW_OK, "close: %s", err.message);
  fprintf(stderr, "queued %llu sent %llu outboxed %llu replayed %llu rejected %llu\n",
          (unsigned long long)st.queued, (unsigned long long)st.sent,
          (unsigned long long)st.outboxed, (unsigned long long)st.replayed,
          (unsigned long long)st.rejected);
  const uint64_t total = N_POINTS + N_POINTS / AUX_EVERY;
  CHECK_INT_EQ(st.queued, total);
  CHECK(st.outboxed > 0); /* the outage really hit the stream */
  CHECK_INT_EQ(st.sent + st.replayed, total);
  CHECK_INT_EQ(st.rejected, 0);
  CHECK(access(outbox, F_OK) != 0);

  /* What the server holds, through the REST API. */
  const char *keys[2] = {"loss", "aux/lr"};
  const int counts[2] = {N_POINTS, N_POINTS / AUX_EVERY};
  for (int k = 0; k < 2; k++) {
    mlflow_metric_list h;
    CHECK_INT_EQ(mlflow_metric_history(client, run.run_id, keys[k], &h, &err), MLFLOW_OK);
    CHECKF(h.count == (size_t)counts[k], "%s: %zu points, want %d", keys[k], h.count,
           counts[k]);
    char *seen = calloc(N_POINTS, 1);
    int dup = 0, wrong = 0;
    for (size_t i = 0; i < h.count; i++) {
      int64_t s = h.items[i].step;
      if (s < 0 || s >= N_POINTS) {
        wrong++;
        continue;
      }
      if (seen[s]++) dup++;
      double want = k == 0 ? value_of((int)s) : 0.0002;
      if (h.items[i].value != want || h.items[i].timestamp_ms != ts0 + s) wrong++;
    }
    CHECK_INT_EQ(dup, 0);
    CHECK_INT_EQ(wrong, 0);
    free(seen);
    mlflow_metric_list_free(&h);
  }

  mlflow_run_info_free(&run);
  mlflow_experiment_free(&e);
  mlflow_client_free(client);
  mlflow_config_free(&cfg);
  free(uri);
  test_server_cmd(state, "stop", NULL);
  return check_report();
}
