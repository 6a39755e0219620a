/* train_upload.c - run artifacts (sample grids, checkpoints) uploaded on a
 * background thread, so the training loop never waits for the MLflow
 * server: a bounded FIFO of files drained by one thread with its own
 * client. A failed upload is reported and dropped (artifacts are copies of
 * files the checkpoint dir keeps); it never fails the run. Not here: the
 * model directory at the end of a run, which is uploaded synchronously
 * because registration needs it (train_tracking.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/log.h"
#include "gf/mlflow_status.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"

#define UPLOAD_QUEUE 16

typedef struct upload_job {
  char *local_path; /* malloc'd */
  char *dest;       /* malloc'd; relative artifact path */
  bool owned;       /* delete local_path afterwards */
} upload_job;

struct gf_uploader {
  mlflow_client *client;  /* owned; used by the thread only */
  char *artifact_uri;     /* owned copy */
  const gf_log *log;      /* borrowed; may be NULL */
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* signals: job queued, job done, stop */
  upload_job q[UPLOAD_QUEUE]; /* ring; [head, head + count) */
  int head, count;
  bool busy;              /* the thread is uploading a job taken off q */
  bool stop;
  int n_ok, n_failed;
  pthread_t thread;
};

static void job_release(upload_job *j) {
  if (j->owned && j->local_path) unlink(j->local_path);
  free(j->local_path);
  free(j->dest);
  memset(j, 0, sizeof *j);
}

static void *upload_thread(void *arg) {
  gf_uploader *u = arg;
  pthread_mutex_lock(&u->mu);
  for (;;) {
    while (u->count == 0 && !u->stop) pthread_cond_wait(&u->cv, &u->mu);
    if (u->count == 0 && u->stop) break;
    upload_job j = u->q[u->head];
    u->head = (u->head + 1) % UPLOAD_QUEUE;
    u->count--;
    u->busy = true;
    pthread_mutex_unlock(&u->mu);

    mlflow_error e;
    memset(&e, 0, sizeof e);
    mlflow_status st = mlflow_artifact_upload_file(u->client, u->artifact_uri,
                                                   j.local_path, j.dest, &e);
    if (st != MLFLOW_OK && u->log)
      gf_logf(u->log, GF_LOG_WARN,
              "ganflow-train: upload of artifact %s failed (skipped; "
              "the local file stays in the checkpoint dir unless it was a "
              "staging copy): %s",
              j.dest, e.message);
    job_release(&j);

    pthread_mutex_lock(&u->mu);
    if (st == MLFLOW_OK) u->n_ok++;
    else u->n_failed++;
    u->busy = false;
    pthread_cond_broadcast(&u->cv);
  }
  pthread_mutex_unlock(&u->mu);
  return NULL;
}

gf_status gf_uploader_start(gf_uploader **out, const mlflow_config *cfg,
                            const char *artifact_uri, const gf_log *log,
                            gf_err *err) {
  *out = NULL;
  gf_uploader *u = calloc(1, sizeof *u);
  if (!u) return gf_fail(err, GF_ENOMEM, "uploader: out of memory");
  mlflow_config c;
  mlflow_error e;
  if (mlflow_config_copy(&c, cfg, &e) != MLFLOW_OK) {
    free(u);
    return gf_fail_mlflow(err, &e, "uploader");
  }
  if (c.max_retries > 2) c.max_retries = 2;
  mlflow_status st = mlflow_client_new(&u->client, &c, &e);
  mlflow_config_free(&c);
  if (st != MLFLOW_OK) {
    free(u);
    return gf_fail_mlflow(err, &e, "uploader");
  }
  u->artifact_uri = strdup(artifact_uri);
  u->log = log;
  pthread_mutex_init(&u->mu, NULL);
  pthread_cond_init(&u->cv, NULL);
  if (!u->artifact_uri || pthread_create(&u->thread, NULL, upload_thread, u)) {
    mlflow_client_free(u->client);
    free(u->artifact_uri);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
    return gf_fail(err, GF_EIO, "uploader: cannot start its thread");
  }
  *out = u;
  return GF_OK;
}

bool gf_uploader_push(gf_uploader *u, const char *local_path, const char *dest,
                      bool take_ownership) {
  upload_job j = {strdup(local_path), strdup(dest), take_ownership};
  pthread_mutex_lock(&u->mu);
  bool ok = j.local_path && j.dest && u->count < UPLOAD_QUEUE && !u->stop;
  if (ok) {
    u->q[(u->head + u->count) % UPLOAD_QUEUE] = j;
    u->count++;
    pthread_cond_broadcast(&u->cv);
  }
  pthread_mutex_unlock(&u->mu);
  if (!ok) {
    if (u->log)
      gf_logf(u->log, GF_LOG_WARN,
              "ganflow-train: upload queue full; artifact %s "
              "skipped",
              dest);
    if (take_ownership) unlink(local_path);
    free(j.local_path);
    free(j.dest);
  }
  return ok;
}

void gf_uploader_wait(gf_uploader *u) {
  if (!u) return;
  pthread_mutex_lock(&u->mu);
  while (u->count > 0 || u->busy) pthread_cond_wait(&u->cv, &u->mu);
  pthread_mutex_unlock(&u->mu);
}

void gf_uploader_counts(gf_uploader *u, int *ok, int *failed) {
  pthread_mutex_lock(&u->mu);
  if (ok) *ok = u->n_ok;
  if (failed) *failed = u->n_failed;
  pthread_mutex_unlock(&u->mu);
}

void gf_uploader_free(gf_uploader *u) {
  if (!u) return;
  pthread_mutex_lock(&u->mu);
  u->stop = true;
  pthread_cond_broadcast(&u->cv);
  pthread_mutex_unlock(&u->mu);
  pthread_join(u->thread, NULL);
  mlflow_client_free(u->client);
  free(u->artifact_uri);
  pthread_mutex_destroy(&u->mu);
  pthread_cond_destroy(&u->cv);
  free(u);
}
