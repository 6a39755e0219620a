/* test_logger.c - the asynchronous logger against the real MLflow server:
 * everything logged arrives once, params and tags ride along, bad keys are
 * refused at the call, and an outbox written while the server is
 * unreachable (a dead port) is replayed later, in order, exactly once,
 * including by a separate replay (what `ganflow sync` does). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mlflow_test.h"

static mlflow_client *client;
static mlflow_config cfg;
static char exp_id[64];
static char tmpdir[512];

static char *new_run(void) {
  mlflow_error err;
  mlflow_run_info info;
  REQUIRE(mlflow_run_create(client, exp_id, NULL, 0, NULL, 0, &info, &err) == MLFLOW_OK);
  char *id = strdup(info.run_id);
  mlflow_run_info_free(&info);
  return id;
}

/* Checks key's history holds steps 0..n-1 once each with value v(step). */
static void check_history(const char *run_id, const char *key, int n, double scale) {
  mlflow_error err;
  mlflow_metric_list h;
  CHECK_INT_EQ(mlflow_metric_history(client, run_id, key, &h, &err), MLFLOW_OK);
  CHECKF(h.count == (size_t)n, "%s: %zu points, want %d", key, h.count, n);
  char *seen = calloc((size_t)n, 1);
  int bad = 0;
  for (size_t i = 0; i < h.count; i++) {
    int64_t s = h.items[i].step;
    if (s < 0 || s >= n || seen[s] || h.items[i].value != scale * (double)s) bad++;
    else seen[s] = 1;
  }
  CHECKF(bad == 0, "%s: %d points duplicated or wrong", key, bad);
  free(seen);
  mlflow_metric_list_free(&h);
}

static void test_direct(void) {
  mlflow_error err;
  char *run_id = new_run();
  char outbox[600];
  snprintf(outbox, sizeof outbox, "%s/direct.outbox", tmpdir);
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.outbox_path = outbox;
  mlflow_logger *lg;
  REQUIRE(mlflow_logger_open(&lg, &cfg, run_id, &o, &err) == MLFLOW_OK);
  int64_t ts = mlflow_now_ms();
  int fails = 0;
  for (int i = 0; i < 2500; i++) {
    fails += mlflow_logger_log_metric(lg, "loss/g", 0.5 * i, ts + i, i) != MLFLOW_OK;
    fails += mlflow_logger_log_metric(lg, "loss/d", 0.25 * i, ts + i, i) != MLFLOW_OK;
  }
  CHECK_INT_EQ(fails, 0);
  CHECK_INT_EQ(mlflow_logger_log_metric(lg, "bad key!", 1, ts, 0), MLFLOW_E_INVALID);
  CHECK_INT_EQ(mlflow_logger_log_metric(lg, "../up", 1, ts, 0), MLFLOW_E_INVALID);
  CHECK_INT_EQ(mlflow_logger_log_param(lg, "batch", "64", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_logger_set_tag(lg, "phase", "train", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_logger_log_metric(lg, "nan", NAN, ts, 0), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_logger_flush(lg, 60, &err), MLFLOW_OK);
  mlflow_logger_stats st;
  mlflow_logger_get_stats(lg, &st);
  CHECK_INT_EQ(st.queued, 5001);
  CHECK_INT_EQ(st.sent, 5001);
  CHECK_INT_EQ(st.outboxed, 0);
  CHECK_INT_EQ(mlflow_logger_close(lg, 60, &st, &err), MLFLOW_OK);
  CHECK(access(outbox, F_OK) != 0); /* nothing was ever outboxed */
  check_history(run_id, "loss/g", 2500, 0.5);
  check_history(run_id, "loss/d", 2500, 0.25);
  mlflow_run run;
  CHECK_INT_EQ(mlflow_run_get(client, run_id, &run, &err), MLFLOW_OK);
  CHECK_STR_EQ(mlflow_run_param(&run, "batch"), "64");
  CHECK_STR_EQ(mlflow_run_tag(&run, "phase"), "train");
  mlflow_run_free(&run);
  free(run_id);
}

/* The logger points at a port nobody listens on: everything goes to the
 * outbox and close() says so; a later replay delivers it exactly once. */
static void test_outbox_replay(void) {
  mlflow_error err;
  char *run_id = new_run();
  char outbox[600];
  snprintf(outbox, sizeof outbox, "%s/dead.outbox", tmpdir);
  mlflow_config dead;
  REQUIRE(mlflow_config_copy(&dead, &cfg, &err) == MLFLOW_OK);
  REQUIRE(mlflow_config_set_uri(&dead, "http://127.0.0.1:9", &err) == MLFLOW_OK);
  dead.timeout_s = 2;
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.outbox_path = outbox;
  o.send_retries = 1;
  o.retry_backoff_s = 0.01;
  mlflow_logger *lg;
  REQUIRE(mlflow_logger_open(&lg, &dead, run_id, &o, &err) == MLFLOW_OK);
  int64_t ts = mlflow_now_ms();
  for (int i = 0; i < 2600; i++)
    CHECK_INT_EQ(mlflow_logger_log_metric(lg, "m", 2.0 * i, ts + i, i), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_logger_log_param(lg, "p", "v", &err), MLFLOW_OK);
  mlflow_logger_stats st;
  CHECK_INT_EQ(mlflow_logger_close(lg, 30, &st, &err), MLFLOW_E_CONNECT);
  CHECK(strstr(err.message, outbox) != NULL);
  CHECK_INT_EQ(st.outboxed, 2600);
  CHECK_INT_EQ(st.sent, 0);
  CHECK(st.outbox_pending >= 3);
  CHECK(access(outbox, F_OK) == 0);

  /* A torn record at the end (a writer killed mid-write) is ignored. */
  FILE *f = fopen(outbox, "ab");
  REQUIRE(f);
  fwrite("GFOB\x10\x00\x00", 1, 7, f);
  fclose(f);

  size_t batches = 0;
  CHECK_INT_EQ(mlflow_outbox_replay(client, outbox, &batches, &err), MLFLOW_OK);
  CHECK_INT_EQ(batches, st.outbox_pending);
  CHECK(access(outbox, F_OK) != 0);
  check_history(run_id, "m", 2600, 2.0);
  mlflow_run run;
  CHECK_INT_EQ(mlflow_run_get(client, run_id, &run, &err), MLFLOW_OK);
  CHECK_STR_EQ(mlflow_run_param(&run, "p"), "v");
  mlflow_run_free(&run);
  /* Nothing left: a second replay is a no-op. */
  CHECK_INT_EQ(mlflow_outbox_replay(client, outbox, &batches, &err), MLFLOW_OK);
  CHECK_INT_EQ(batches, 0);

  /* An outbox left behind is replayed by the next logger that opens it,
   * before anything new, and each point still arrives once. */
  char *run2 = new_run();
  REQUIRE(mlflow_logger_open(&lg, &dead, run2, &o, &err) == MLFLOW_OK);
  for (int i = 0; i < 1500; i++) mlflow_logger_log_metric(lg, "k", 1.0 * i, ts + i, i);
  CHECK_INT_EQ(mlflow_logger_close(lg, 30, &st, &err), MLFLOW_E_CONNECT);
  REQUIRE(mlflow_logger_open(&lg, &cfg, run2, &o, &err) == MLFLOW_OK);
  for (int i = 1500; i < 3000; i++) mlflow_logger_log_metric(lg, "k", 1.0 * i, ts + i, i);
  CHECK_INT_EQ(mlflow_logger_close(lg, 60, &st, &err), MLFLOW_OK);
  CHECK_INT_EQ(st.replayed, 1500);
  CHECK_INT_EQ(st.sent, 1500);
  CHECK(access(outbox, F_OK) != 0);
  check_history(run2, "k", 3000, 1.0);

  /* A corrupt record in the middle: replay stops there, keeps the file. */
  REQUIRE(mlflow_logger_open(&lg, &dead, run2, &o, &err) == MLFLOW_OK);
  for (int i = 0; i < 2000; i++) mlflow_logger_log_metric(lg, "c", 1.0, ts + i, i);
  mlflow_logger_close(lg, 30, &st, &err);
  f = fopen(outbox, "r+b");
  REQUIRE(f);
  fseek(f, 100, SEEK_SET);
  fputc('#', f);
  fclose(f);
  CHECK_INT_EQ(mlflow_outbox_replay(client, outbox, &batches, &err), MLFLOW_E_PROTOCOL);
  CHECK(strstr(err.message, "corrupt") != NULL);
  CHECK(access(outbox, F_OK) == 0);
  unlink(outbox);
  mlflow_config_free(&dead);
  free(run_id);
  free(run2);
}

/* No outbox and a dead server: close reports what was lost, within its
 * timeout; log calls never block longer than max_block_ms. */
static void test_no_outbox_full(void) {
  mlflow_error err;
  mlflow_config dead;
  REQUIRE(mlflow_config_copy(&dead, &cfg, &err) == MLFLOW_OK);
  REQUIRE(mlflow_config_set_uri(&dead, "http://127.0.0.1:9", &err) == MLFLOW_OK);
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.queue_capacity = 1000;
  o.max_block_ms = 20;
  o.retry_backoff_s = 0.05;
  mlflow_logger *lg;
  REQUIRE(mlflow_logger_open(&lg, &dead, "deadbeef", &o, &err) == MLFLOW_OK);
  int full = 0;
  int64_t t0 = mlflow_now_ms();
  for (int i = 0; i < 3000; i++)
    full += mlflow_logger_log_metric(lg, "x", 1, t0, i) == MLFLOW_E_FULL;
  int64_t spent = mlflow_now_ms() - t0;
  CHECK(full > 0);
  CHECKF(spent < 3000 * 20 + 2000, "log calls took %lld ms", (long long)spent);
  t0 = mlflow_now_ms();
  CHECK(mlflow_logger_close(lg, 1.0, NULL, &err) != MLFLOW_OK);
  CHECK(mlflow_now_ms() - t0 < 10000);
  mlflow_config_free(&dead);
}

int main(void) {
  char *uri = test_mlflow_uri();
  test_config(&cfg, uri);
  mlflow_error err;
  REQUIRE(mlflow_client_new(&client, &cfg, &err) == MLFLOW_OK);
  snprintf(tmpdir, sizeof tmpdir, "%s", GF_TEST_TMP);
  mlflow_remove_tree(tmpdir);
  REQUIRE(mlflow_mkdirs(tmpdir, &err) == MLFLOW_OK);
  char name[128];
  test_unique(name, sizeof name, "logger");
  mlflow_experiment e;
  REQUIRE(mlflow_experiment_get_or_create(client, name, &e, &err) == MLFLOW_OK);
  snprintf(exp_id, sizeof exp_id, "%s", e.experiment_id);
  mlflow_experiment_free(&e);

  test_direct();
  test_outbox_replay();
  test_no_outbox_full();

  mlflow_client_free(client);
  mlflow_config_free(&cfg);
  free(uri);
  return check_report();
}
