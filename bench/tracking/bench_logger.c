/* bench_logger.c - throughput and caller-side cost of the async logger
 * against a live MLflow server (MLFLOW_TRACKING_URI).
 *
 *   bench_logger [POINTS]
 *
 * Phase 1 (caller cost): 50,000 calls into an empty queue, each timed;
 *   mean, p50, p99 and max nanoseconds per call.
 * Phase 2 (throughput): POINTS points (default 200,000) logged as fast as
 *   the queue accepts them, then flushed; points per second from the first
 *   call to the end of the flush, checked against the server's history. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlflow/mlflow.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int die(const char *what, const mlflow_error *err) {
  fprintf(stderr, "bench_logger: %s: %s\n", what, err->message);
  return 1;
}

int main(int argc, char **argv) {
  long points = argc > 1 ? atol(argv[1]) : 200000;
  if (points < 1000) points = 1000;
  mlflow_config cfg;
  mlflow_error err;
  if (mlflow_config_from_env(&cfg, &err)) return die("config", &err);
  mlflow_client *c;
  if (mlflow_client_new(&c, &cfg, &err)) return die("client", &err);
  mlflow_experiment e;
  if (mlflow_experiment_get_or_create(c, "bench-logger", &e, &err))
    return die("experiment", &err);
  mlflow_run_info run;
  if (mlflow_run_create(c, e.experiment_id, "c-logger", 0, NULL, 0, &run, &err))
    return die("run", &err);

  /* Phase 1: caller cost per call, queue never full. */
  enum { N1 = 50000 };
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.queue_capacity = 65536;
  o.max_block_ms = 5000;
  mlflow_logger *lg;
  if (mlflow_logger_open(&lg, &cfg, run.run_id, &o, &err)) return die("logger", &err);
  double *ns = malloc(N1 * sizeof *ns);
  int64_t t0 = mlflow_now_ms();
  double total = 0;
  for (int i = 0; i < N1; i++) {
    double a = now_s();
    mlflow_logger_log_metric(lg, "bench/caller", (double)i, t0 + i, i);
    double b = now_s();
    ns[i] = (b - a) * 1e9;
    total += ns[i];
  }
  qsort(ns, N1, sizeof *ns, cmp_d);
  printf("caller cost over %d calls: mean %.0f ns, p50 %.0f ns, p99 %.0f ns, "
         "max %.0f ns (each includes ~%s clock read)\n", N1, total / N1,
         ns[N1 / 2], ns[N1 * 99 / 100], ns[N1 - 1], "one");
  free(ns);
  if (mlflow_logger_flush(lg, 600, &err)) return die("flush", &err);

  /* Phase 2: sustained throughput. */
  double a = now_s();
  long refused = 0;
  for (long i = 0; i < points; i++)
    refused += mlflow_logger_log_metric(lg, "bench/throughput", (double)i,
                                        t0 + i, i) != MLFLOW_OK;
  double queued_at = now_s();
  if (mlflow_logger_flush(lg, 1800, &err)) return die("flush", &err);
  double b = now_s();
  mlflow_logger_stats st;
  mlflow_status cs = mlflow_logger_close(lg, 60, &st, &err);
  printf("throughput: %ld points in %.2f s = %.0f points/s (all queued after "
         "%.2f s; %ld refused; %llu batches; close %s)\n", points, b - a,
         points / (b - a), queued_at - a, refused,
         (unsigned long long)st.batches, mlflow_status_name(cs));

  mlflow_metric_list h;
  if (mlflow_metric_history(c, run.run_id, "bench/throughput", &h, &err))
    return die("history", &err);
  printf("server holds %zu of %ld points\n", h.count, points);
  int ok = h.count == (size_t)points;
  mlflow_metric_list_free(&h);
  mlflow_run_update(c, run.run_id, MLFLOW_RUN_FINISHED, mlflow_now_ms(), &err);
  mlflow_run_info_free(&run);
  mlflow_experiment_free(&e);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  return ok ? 0 : 1;
}
