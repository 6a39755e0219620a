/* logger.c - the asynchronous metric logger; see mlflow/logger.h.
 *
 * Concurrency: one mutex guards the ring, the pending params/tags, the
 * counters and the flags. Callers hold it only to copy a point in; the
 * worker holds it only to read or move head and count, and copies a
 * batch's slots unlocked (they stay counted, so no caller reuses them until
 * the worker releases them). All HTTP and disk I/O happens in the worker,
 * unlocked. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outbox.h"
#include "parse.h"

typedef struct slot {
  double value;
  int64_t timestamp_ms;
  int64_t step;
  char key[MLFLOW_MAX_KEY_LEN + 1];
} slot;

typedef struct kv_item {
  char *key;
  char *value;
  int is_tag;
} kv_item;

struct mlflow_logger {
  mlflow_client *client;       /* the worker's own connection */
  char *run_id;
  char *outbox_path;           /* NULL: no outbox */
  mlflow_logger_options opts;

  pthread_mutex_t mu;
  pthread_cond_t wake;         /* worker: work, flush, close */
  pthread_cond_t room;         /* callers: the ring has room */
  pthread_cond_t done;         /* flushers: progress */
  pthread_t thread;
  int thread_started;

  /* Guarded by mu. */
  slot *ring;                  /* capacity opts.queue_capacity */
  size_t head;                 /* index of the oldest point */
  size_t count;                /* points in the ring */
  kv_item *kv;                 /* pending params and tags, FIFO */
  size_t n_kv, cap_kv;
  uint64_t kv_queued, kv_done; /* params/tags ever queued / handled */
  uint64_t points_done;        /* points sent, outboxed, rejected or lost */
  uint64_t flush_requests;     /* bumped by flush: send partial batches now */
  int closing;                 /* close() called: drain then exit */
  int give_up;                 /* close() timed out: stop retrying */
  mlflow_logger_stats stats;
  uint64_t lost;               /* points dropped with no outbox to keep them */
  mlflow_error last_error;     /* the latest send failure */
};

/* Internal batch size: the server's maximum. */
#define BATCH_POINTS MLFLOW_BATCH_MAX_METRICS

void mlflow_logger_options_init(mlflow_logger_options *o) {
  memset(o, 0, sizeof *o);
  o->queue_capacity = 65536;
  o->max_block_ms = 200;
  o->flush_interval_ms = 1000;
  o->outbox_path = NULL;
  o->send_retries = 3;
  o->retry_backoff_s = 0.25;
  o->probe_interval_s = 1.0;
}

static void deadline_after(struct timespec *ts, double seconds) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  time_t whole = (time_t)seconds;
  long frac = (long)((seconds - (double)whole) * 1e9);
  ts->tv_sec += whole;
  ts->tv_nsec += frac;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- caller side -------------------------------------------------------- */

mlflow_status mlflow_logger_log_metric(mlflow_logger *lg, const char *key,
                                       double value, int64_t timestamp_ms,
                                       int64_t step) {
  if (mlflow_validate_key(key, NULL) != MLFLOW_OK) return MLFLOW_E_INVALID;
  size_t klen = strlen(key);
  pthread_mutex_lock(&lg->mu);
  if (lg->count == lg->opts.queue_capacity) {
    struct timespec dl;
    deadline_after(&dl, lg->opts.max_block_ms / 1000.0);
    while (lg->count == lg->opts.queue_capacity && !lg->closing) {
      pthread_cond_signal(&lg->wake);
      if (pthread_cond_timedwait(&lg->room, &lg->mu, &dl) == ETIMEDOUT) break;
    }
  }
  mlflow_status st = MLFLOW_OK;
  if (lg->closing) {
    st = MLFLOW_E_STATE;
  } else if (lg->count == lg->opts.queue_capacity) {
    st = MLFLOW_E_FULL;
  } else {
    slot *s = &lg->ring[(lg->head + lg->count) % lg->opts.queue_capacity];
    s->value = value;
    s->timestamp_ms = timestamp_ms;
    s->step = step;
    memcpy(s->key, key, klen + 1);
    lg->count++;
    lg->stats.queued++;
    if (lg->count == BATCH_POINTS) pthread_cond_signal(&lg->wake);
  }
  pthread_mutex_unlock(&lg->mu);
  return st;
}

static mlflow_status queue_kv(mlflow_logger *lg, const char *key,
                              const char *value, int is_tag, size_t limit,
                              mlflow_error *err) {
  mlflow_status st = mlflow_validate_key(key, err);
  if (st) return st;
  if (!value || strlen(value) > limit * 4)
    return mlflow_fail(err, MLFLOW_E_INVALID, "%s '%s': value missing or too long",
                       is_tag ? "tag" : "param", key);
  kv_item it = {strdup(key), strdup(value), is_tag};
  if (!it.key || !it.value) {
    free(it.key);
    free(it.value);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  pthread_mutex_lock(&lg->mu);
  if (lg->closing) {
    st = mlflow_fail(err, MLFLOW_E_STATE, "logger is closing");
  } else if (lg->n_kv == lg->cap_kv) {
    size_t cap = lg->cap_kv ? lg->cap_kv * 2 : 16;
    kv_item *n = realloc(lg->kv, cap * sizeof *n);
    if (!n) st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    else {
      lg->kv = n;
      lg->cap_kv = cap;
    }
  }
  if (st == MLFLOW_OK) {
    lg->kv[lg->n_kv++] = it;
    lg->kv_queued++;
    pthread_cond_signal(&lg->wake);
  } else {
    free(it.key);
    free(it.value);
  }
  pthread_mutex_unlock(&lg->mu);
  return st;
}

mlflow_status mlflow_logger_log_param(mlflow_logger *lg, const char *key,
                                      const char *value, mlflow_error *err) {
  return queue_kv(lg, key, value, 0, MLFLOW_MAX_PARAM_VALUE_LEN, err);
}

mlflow_status mlflow_logger_set_tag(mlflow_logger *lg, const char *key,
                                    const char *value, mlflow_error *err) {
  return queue_kv(lg, key, value, 1, MLFLOW_MAX_TAG_VALUE_LEN, err);
}

void mlflow_logger_get_stats(mlflow_logger *lg, mlflow_logger_stats *out) {
  pthread_mutex_lock(&lg->mu);
  *out = lg->stats;
  pthread_mutex_unlock(&lg->mu);
}

mlflow_status mlflow_logger_flush(mlflow_logger *lg, double timeout_s,
                                  mlflow_error *err) {
  struct timespec dl;
  deadline_after(&dl, timeout_s);
  pthread_mutex_lock(&lg->mu);
  uint64_t want_points = lg->stats.queued, want_kv = lg->kv_queued;
  lg->flush_requests++;
  pthread_cond_signal(&lg->wake);
  int timed_out = 0;
  while ((lg->points_done < want_points || lg->kv_done < want_kv) && !timed_out)
    timed_out = pthread_cond_timedwait(&lg->done, &lg->mu, &dl) == ETIMEDOUT;
  int ok = lg->points_done >= want_points && lg->kv_done >= want_kv;
  pthread_mutex_unlock(&lg->mu);
  if (!ok)
    return mlflow_fail(err, MLFLOW_E_TIMEOUT,
                       "logger flush: not everything was sent within %.1f s",
                       timeout_s);
  return MLFLOW_OK;
}

/* ---- worker ------------------------------------------------------------- */

/* The body of one log-batch call from the taken points and kvs. Returns a
 * malloc'd string or NULL. */
static char *build_body(const char *run_id, const slot *pts, size_t n,
                        const kv_item *kv, size_t nkv) {
  cJSON *b = cJSON_CreateObject();
  cJSON *jm = b ? cJSON_AddArrayToObject(b, "metrics") : NULL;
  cJSON *jp = b ? cJSON_AddArrayToObject(b, "params") : NULL;
  cJSON *jt = b ? cJSON_AddArrayToObject(b, "tags") : NULL;
  int ok = jm && jp && jt && cJSON_AddStringToObject(b, "run_id", run_id);
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON *v = mlflow_json_double(pts[i].value);
    cJSON *t = mlflow_json_int64(pts[i].timestamp_ms);
    cJSON *s = mlflow_json_int64(pts[i].step);
    ok = o && v && t && s && cJSON_AddStringToObject(o, "key", pts[i].key);
    if (ok) {
      cJSON_AddItemToObject(o, "value", v);
      cJSON_AddItemToObject(o, "timestamp", t);
      cJSON_AddItemToObject(o, "step", s);
      ok = cJSON_AddItemToArray(jm, o);
      if (!ok) cJSON_Delete(o);
    } else {
      cJSON_Delete(o);
      cJSON_Delete(v);
      cJSON_Delete(t);
      cJSON_Delete(s);
    }
  }
  for (size_t i = 0; ok && i < nkv; i++) {
    cJSON *o = cJSON_CreateObject();
    ok = o && cJSON_AddStringToObject(o, "key", kv[i].key) &&
         cJSON_AddStringToObject(o, "value", kv[i].value) &&
         cJSON_AddItemToArray(kv[i].is_tag ? jt : jp, o);
    if (!ok) cJSON_Delete(o);
  }
  char *out = ok ? mlflow_json_print(b) : NULL;
  cJSON_Delete(b);
  return out;
}

typedef enum { SENT, OUTBOXED, REJECTED, LOST } outcome;

static int retryable(mlflow_status st, const mlflow_error *e) {
  if (st == MLFLOW_E_CONNECT) return 1;
  if (st == MLFLOW_E_HTTP || st == MLFLOW_E_AUTH || st == MLFLOW_E_NOT_FOUND) {
    long s = e->http_status;
    return s == 408 || s == 429 || s >= 500;
  }
  return 0;
}

static void note_error(mlflow_logger *lg, const mlflow_error *e) {
  pthread_mutex_lock(&lg->mu);
  lg->last_error = *e;
  pthread_mutex_unlock(&lg->mu);
}

static int giving_up(mlflow_logger *lg) {
  pthread_mutex_lock(&lg->mu);
  int g = lg->give_up;
  pthread_mutex_unlock(&lg->mu);
  return g;
}

/* Tries to empty the outbox; 1 when it is empty afterwards. Worker only. */
static int try_replay(mlflow_logger *lg, off_t *off) {
  size_t batches = 0;
  uint64_t points = 0;
  mlflow_error e = {0};
  mlflow_status st = mlflow_outbox_replay_from(lg->client, lg->outbox_path, off,
                                               0, &batches, &points, &e);
  pthread_mutex_lock(&lg->mu);
  lg->stats.replayed += points;
  lg->stats.batches += batches;
  lg->stats.outbox_pending -= batches <= lg->stats.outbox_pending
                                  ? batches : lg->stats.outbox_pending;
  if (st == MLFLOW_OK) lg->stats.outbox_pending = 0;
  else lg->last_error = e;
  pthread_mutex_unlock(&lg->mu);
  return st == MLFLOW_OK;
}

/* Sends body, or keeps it in the outbox. Worker only, unlocked. */
static outcome deliver(mlflow_logger *lg, const char *body, uint32_t points,
                       int outbox_busy) {
  mlflow_error e = {0};
  if (!outbox_busy) {
    double wait = lg->opts.retry_backoff_s;
    for (int attempt = 0;; attempt++) {
      mlflow_status st =
          mlflow_post_batch_body(lg->client, body, strlen(body), 0, &e);
      if (st == MLFLOW_OK) return SENT;
      note_error(lg, &e);
      if (!retryable(st, &e)) return REJECTED;
      if (attempt >= lg->opts.send_retries && lg->outbox_path) break;
      if (giving_up(lg)) break;
      mlflow_sleep(wait);
      if (wait < lg->opts.probe_interval_s) wait *= 2;
    }
  }
  if (!lg->outbox_path) return LOST;
  if (mlflow_outbox_append(lg->outbox_path, body, strlen(body), points, &e) !=
      MLFLOW_OK) {
    note_error(lg, &e);
    return LOST;
  }
  return OUTBOXED;
}

static void *worker(void *arg) {
  mlflow_logger *lg = arg;
  slot *batch = malloc(BATCH_POINTS * sizeof *batch);
  off_t replay_off = 0;
  double next_probe = 0;
  uint64_t flush_seen = 0;
  pthread_mutex_lock(&lg->mu);
  for (;;) {
    /* Wait for a full batch, a flush, close, the interval, or a probe. */
    struct timespec dl;
    double wait_s = lg->opts.flush_interval_ms / 1000.0;
    if (lg->stats.outbox_pending) {
      double until_probe = next_probe - mono_now();
      if (until_probe < wait_s) wait_s = until_probe > 0 ? until_probe : 0;
    }
    deadline_after(&dl, wait_s);
    while (lg->count < BATCH_POINTS && !lg->closing &&
           lg->flush_requests == flush_seen) {
      if (pthread_cond_timedwait(&lg->wake, &lg->mu, &dl) == ETIMEDOUT) break;
    }
    flush_seen = lg->flush_requests;

    /* The outbox goes first, so the server sees batches in order. */
    if (lg->stats.outbox_pending && lg->outbox_path && mono_now() >= next_probe) {
      pthread_mutex_unlock(&lg->mu);
      int empty = try_replay(lg, &replay_off);
      pthread_mutex_lock(&lg->mu);
      if (!empty) next_probe = mono_now() + lg->opts.probe_interval_s;
    }

    /* Params and tags travel in batches of their own: a param the server
     * refuses (a changed value) must not take metrics down with it. */
    size_t nkv = lg->n_kv < MLFLOW_BATCH_MAX_PARAMS ? lg->n_kv
                                                    : MLFLOW_BATCH_MAX_PARAMS;
    size_t n = nkv ? 0 : (lg->count < BATCH_POINTS ? lg->count : BATCH_POINTS);
    if (n == 0 && nkv == 0) {
      if (lg->closing) break;
      pthread_cond_broadcast(&lg->done);
      continue;
    }
    size_t head = lg->head;
    kv_item *kv = NULL;
    if (nkv) {
      kv = malloc(nkv * sizeof *kv);
      if (kv) {
        memcpy(kv, lg->kv, nkv * sizeof *kv);
        memmove(lg->kv, lg->kv + nkv, (lg->n_kv - nkv) * sizeof *kv);
        lg->n_kv -= nkv;
      } else {
        nkv = 0;
      }
    }
    int outbox_busy = lg->stats.outbox_pending > 0;
    pthread_mutex_unlock(&lg->mu);

    /* Copy the n oldest points without the lock: callers write only behind
     * head + count, and these slots stay counted until released below, so
     * a log call never waits for this copy. */
    if (batch)
      for (size_t i = 0; i < n; i++)
        batch[i] = lg->ring[(head + i) % lg->opts.queue_capacity];
    pthread_mutex_lock(&lg->mu);
    lg->head = (head + n) % lg->opts.queue_capacity;
    lg->count -= n;
    pthread_cond_broadcast(&lg->room);
    pthread_mutex_unlock(&lg->mu);

    char *body = batch ? build_body(lg->run_id, batch, n, kv, nkv) : NULL;
    outcome oc = body ? deliver(lg, body, (uint32_t)n, outbox_busy) : LOST;
    free(body);
    for (size_t i = 0; i < nkv; i++) {
      free(kv[i].key);
      free(kv[i].value);
    }
    free(kv);

    pthread_mutex_lock(&lg->mu);
    switch (oc) {
    case SENT:
      lg->stats.sent += n;
      lg->stats.batches++;
      break;
    case OUTBOXED:
      lg->stats.outboxed += n;
      if (lg->stats.outbox_pending++ == 0)
        next_probe = mono_now() + lg->opts.probe_interval_s;
      break;
    case REJECTED:
      lg->stats.rejected += n;
      break;
    case LOST:
      lg->lost += n;
      break;
    }
    lg->points_done += n;
    lg->kv_done += nkv;
    pthread_cond_broadcast(&lg->done);
  }
  pthread_mutex_unlock(&lg->mu);
  /* Last chance for the outbox before the process goes away. */
  if (lg->outbox_path && lg->stats.outbox_pending && !lg->give_up)
    try_replay(lg, &replay_off);
  free(batch);
  return NULL;
}

/* ---- open / close ------------------------------------------------------- */

static void logger_free(mlflow_logger *lg) {
  if (!lg) return;
  mlflow_client_free(lg->client);
  free(lg->run_id);
  free(lg->outbox_path);
  free(lg->ring);
  for (size_t i = 0; i < lg->n_kv; i++) {
    free(lg->kv[i].key);
    free(lg->kv[i].value);
  }
  free(lg->kv);
  pthread_mutex_destroy(&lg->mu);
  pthread_cond_destroy(&lg->wake);
  pthread_cond_destroy(&lg->room);
  pthread_cond_destroy(&lg->done);
  free(lg);
}

mlflow_status mlflow_logger_open(mlflow_logger **out, const mlflow_config *cfg,
                                 const char *run_id,
                                 const mlflow_logger_options *opts,
                                 mlflow_error *err) {
  *out = NULL;
  if (!run_id || !*run_id)
    return mlflow_fail(err, MLFLOW_E_INVALID, "logger needs a run id");
  mlflow_logger_options o;
  if (opts) o = *opts;
  else mlflow_logger_options_init(&o);
  if (o.queue_capacity < BATCH_POINTS) o.queue_capacity = BATCH_POINTS;
  if (o.flush_interval_ms <= 0) o.flush_interval_ms = 1000;
  if (o.probe_interval_s <= 0) o.probe_interval_s = 1.0;
  if (o.max_block_ms < 0) o.max_block_ms = 0;
  if (o.send_retries < 0) o.send_retries = 0;

  mlflow_logger *lg = calloc(1, sizeof *lg);
  if (!lg) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&lg->mu, NULL);
  pthread_cond_init(&lg->wake, &ca);
  pthread_cond_init(&lg->room, &ca);
  pthread_cond_init(&lg->done, &ca);
  pthread_condattr_destroy(&ca);
  lg->opts = o;
  lg->opts.outbox_path = NULL;
  lg->run_id = strdup(run_id);
  lg->outbox_path = o.outbox_path ? strdup(o.outbox_path) : NULL;
  /* Touched now, so no log call pays a page fault on a fresh slot. */
  lg->ring = malloc(o.queue_capacity * sizeof *lg->ring);
  if (lg->ring) memset(lg->ring, 0, o.queue_capacity * sizeof *lg->ring);
  mlflow_status st;
  if (!lg->run_id || !lg->ring || (o.outbox_path && !lg->outbox_path)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto fail;
  }
  if ((st = mlflow_client_new(&lg->client, cfg, err))) goto fail;
  if (lg->outbox_path)
    lg->stats.outbox_pending = mlflow_outbox_count(lg->outbox_path);
  if (pthread_create(&lg->thread, NULL, worker, lg) != 0) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "cannot start the logger thread");
    goto fail;
  }
  lg->thread_started = 1;
  *out = lg;
  return MLFLOW_OK;
fail:
  logger_free(lg);
  return st;
}

mlflow_status mlflow_logger_close(mlflow_logger *lg, double timeout_s,
                                  mlflow_logger_stats *stats,
                                  mlflow_error *err) {
  if (!lg) return MLFLOW_OK;
  mlflow_status st = mlflow_logger_flush(lg, timeout_s, err);
  pthread_mutex_lock(&lg->mu);
  lg->closing = 1;
  if (st != MLFLOW_OK) lg->give_up = 1;
  pthread_cond_broadcast(&lg->wake);
  pthread_cond_broadcast(&lg->room);
  pthread_mutex_unlock(&lg->mu);
  if (lg->thread_started) pthread_join(lg->thread, NULL);
  if (stats) *stats = lg->stats;
  if (st == MLFLOW_OK && lg->stats.outbox_pending)
    st = mlflow_fail(err, MLFLOW_E_CONNECT,
                     "%llu batches could not reach the server and are kept "
                     "in the outbox %s; replay them with `ganflow sync` (last "
                     "error: %s)",
                     (unsigned long long)lg->stats.outbox_pending,
                     lg->outbox_path, lg->last_error.message);
  else if (st == MLFLOW_OK && lg->lost)
    st = mlflow_fail(err, MLFLOW_E_CONNECT,
                     "%llu points could not be sent and no outbox was set "
                     "(last error: %s)",
                     (unsigned long long)lg->lost, lg->last_error.message);
  else if (st == MLFLOW_OK && lg->stats.rejected)
    st = mlflow_fail(err, MLFLOW_E_HTTP,
                     "the server refused %llu points: %s",
                     (unsigned long long)lg->stats.rejected,
                     lg->last_error.message);
  logger_free(lg);
  return st;
}
