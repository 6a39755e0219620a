/* mlflow/logger.h - asynchronous, loss-free metric logging for one run.
 *
 * The caller's thread only validates the key and copies the point into a
 * bounded in-memory queue (no I/O, no allocation). A background thread with
 * its own connection drains the queue as log-batch calls of up to 1000
 * metrics, retrying with exponential backoff and jitter on connection
 * errors, 408, 429 and 5xx. When the server stays down, batches are appended
 * to an fsync'd outbox file and, once the server answers again, replayed in
 * order before anything newer is sent. An outbox left by a process that died
 * is replayed by mlflow_outbox_replay (the `ganflow sync` command).
 *
 * Each (key, value, timestamp, step) reaches the server exactly once: a
 * batch re-sent after a lost answer is deduplicated by the server, which
 * drops a metric identical to one it holds. */
#ifndef MLFLOW_LOGGER_H
#define MLFLOW_LOGGER_H

#include "mlflow/client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlflow_logger_options {
  size_t queue_capacity;    /* points held in memory (65536) */
  int max_block_ms;         /* longest a log call waits for room (200) */
  int flush_interval_ms;    /* a partial batch waits at most this long (1000) */
  const char *outbox_path;  /* where unsendable batches go; NULL: no outbox,
                               batches are kept in memory while room lasts */
  int send_retries;         /* retries of one batch before it goes to the
                               outbox (3) */
  double retry_backoff_s;   /* first retry wait, doubled each time (0.25) */
  double probe_interval_s;  /* while batches wait in the outbox, how often
                               the server is tried again (1.0) */
} mlflow_logger_options;

/* The defaults above. */
void mlflow_logger_options_init(mlflow_logger_options *o);

typedef struct mlflow_logger_stats {
  uint64_t queued;          /* points accepted by log calls */
  uint64_t sent;            /* points the server acknowledged directly */
  uint64_t outboxed;        /* points written to the outbox */
  uint64_t replayed;        /* outbox points the server acknowledged */
  uint64_t rejected;        /* points in batches the server refused (4xx) */
  uint64_t batches;         /* log-batch calls that succeeded */
  uint64_t outbox_pending;  /* batches waiting in the outbox now */
} mlflow_logger_stats;

typedef struct mlflow_logger mlflow_logger;

/* Starts the background thread. cfg and run_id are copied; opts may be NULL
 * for the defaults. When an outbox from an earlier process exists at
 * outbox_path, it is replayed first. *out is owned by the caller and must
 * be released with mlflow_logger_close. */
mlflow_status mlflow_logger_open(mlflow_logger **out, const mlflow_config *cfg,
                                 const char *run_id,
                                 const mlflow_logger_options *opts,
                                 mlflow_error *err);

/* Queues one point. MLFLOW_E_INVALID for a bad key (nothing queued);
 * MLFLOW_E_FULL when no room appeared within max_block_ms. Thread-safe. */
mlflow_status mlflow_logger_log_metric(mlflow_logger *lg, const char *key,
                                       double value, int64_t timestamp_ms,
                                       int64_t step);

/* Queues a param or tag (copied); sent with the next batch. Thread-safe. */
mlflow_status mlflow_logger_log_param(mlflow_logger *lg, const char *key,
                                      const char *value, mlflow_error *err);
mlflow_status mlflow_logger_set_tag(mlflow_logger *lg, const char *key,
                                    const char *value, mlflow_error *err);

/* Waits until everything queued before the call has been sent or written to
 * the outbox. MLFLOW_E_TIMEOUT after timeout_s. */
mlflow_status mlflow_logger_flush(mlflow_logger *lg, double timeout_s,
                                  mlflow_error *err);

/* Counters so far. */
void mlflow_logger_get_stats(mlflow_logger *lg, mlflow_logger_stats *out);

/* Flushes, tries once more to empty the outbox, stops the thread and frees
 * the logger (NULL accepted). MLFLOW_OK when everything reached the server;
 * MLFLOW_E_CONNECT when batches remain in the outbox (the message names
 * the file; nothing is lost); MLFLOW_E_TIMEOUT when the flush did not
 * finish in timeout_s (the queue's remainder is written to the outbox when
 * there is one). stats (may be NULL) receives the final counters. */
mlflow_status mlflow_logger_close(mlflow_logger *lg, double timeout_s,
                                  mlflow_logger_stats *stats,
                                  mlflow_error *err);

/* Replays an outbox file in order and deletes it when every batch was
 * accepted. A torn record at the end (a crash mid-write) is ignored; a
 * corrupt record elsewhere is an error and the file is kept. *n_batches
 * (may be NULL) receives the number of batches sent. A missing file is
 * MLFLOW_OK with zero batches. */
mlflow_status mlflow_outbox_replay(mlflow_client *c, const char *path,
                                   size_t *n_batches, mlflow_error *err);

#ifdef __cplusplus
}
#endif
#endif
