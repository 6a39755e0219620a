/* data_loader.c - the loader thread: prepares one rank's batches (indices
 * from a gf_data_iter, uint8 -> float from the cache) ahead of the training
 * step into a bounded ring, and measures how long the consumer waits for
 * them ("data wait", DESIGN §4.7). One producer thread, one consumer.
 *
 * Ring protocol: batch k (k = 0, 1, ... from the first step) lives in slot
 * k % nslots, nslots = depth + 1. The producer may fill batch k once
 * k < released + nslots, i.e. its slot is neither queued nor held by the
 * consumer; `produced` and `released` only grow. All three counters are
 * guarded by mu. */
#include "gf/data.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"

#define LOADER_MAX_DEPTH 8

struct gf_data_loader {
  gf_data_iter it;          /* owned; used by the thread only once started */
  gf_batch slots[LOADER_MAX_DEPTH + 1];
  int nslots;
  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* signalled on every counter change and stop */
  uint64_t produced;        /* batches filled */
  uint64_t consumed;        /* batches handed out */
  uint64_t released;        /* batches given back (consumed or consumed-1) */
  int stop;                 /* set by gf_data_loader_free */
  gf_status failed;         /* producer failure, reported by next */
  gf_err fail_err;
  _Atomic uint64_t wait_ns; /* total blocking time of gf_data_loader_next */
};

static void *producer(void *arg) {
  gf_data_loader *ld = arg;
  for (;;) {
    pthread_mutex_lock(&ld->mu);
    while (!ld->stop && ld->produced >= ld->released + (uint64_t)ld->nslots) {
      pthread_cond_wait(&ld->cv, &ld->mu);
    }
    if (ld->stop) {
      pthread_mutex_unlock(&ld->mu);
      return NULL;
    }
    gf_batch *b = &ld->slots[ld->produced % (uint64_t)ld->nslots];
    pthread_mutex_unlock(&ld->mu);

    /* The slot is ours alone until produced is bumped. */
    gf_err e = {0};
    gf_status st = gf_data_iter_next_indices(&ld->it, b->indices, &b->step, &e);
    if (!st) gf_data_fill(ld->it.ds, b->indices, b->n, b->images, b->labels);

    pthread_mutex_lock(&ld->mu);
    if (st) {
      ld->failed = st;
      ld->fail_err = e;
      pthread_cond_broadcast(&ld->cv);
      pthread_mutex_unlock(&ld->mu);
      return NULL;
    }
    ld->produced++;
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
  }
}

static void free_slots(gf_data_loader *ld) {
  for (int k = 0; k < ld->nslots; k++) {
    free(ld->slots[k].images);
    free(ld->slots[k].labels);
    free(ld->slots[k].indices);
  }
}

gf_status gf_data_loader_start(gf_data_loader **out, const gf_dataset *ds,
                               const gf_data_order *order, uint64_t first_step,
                               int depth, gf_err *err) {
  *out = NULL;
  if (depth < 2 || depth > LOADER_MAX_DEPTH) {
    return gf_fail(err, GF_EINVAL, "data loader: queue depth %d (2..%d)", depth,
                   LOADER_MAX_DEPTH);
  }
  gf_data_loader *ld = calloc(1, sizeof *ld);
  if (!ld) return gf_fail(err, GF_ENOMEM, "data loader: out of memory");
  gf_status st = gf_data_iter_init(&ld->it, ds, order, err);
  if (st) {
    free(ld);
    return st;
  }
  gf_data_iter_seek(&ld->it, first_step);
  ld->nslots = depth + 1;
  const size_t n = (size_t)ld->it.count;
  const size_t stride = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
  for (int k = 0; k < ld->nslots; k++) {
    gf_batch *b = &ld->slots[k];
    b->n = n;
    b->c = ds->c;
    b->h = ds->h;
    b->w = ds->w;
    b->images = malloc(n * stride * sizeof *b->images);
    b->labels = malloc(n * sizeof *b->labels);
    b->indices = malloc(n * sizeof *b->indices);
    if (!b->images || !b->labels || !b->indices) {
      free_slots(ld);
      gf_data_iter_free(&ld->it);
      free(ld);
      return gf_fail(err, GF_ENOMEM,
                     "data loader: out of memory for %d batches of %zu images",
                     depth + 1, n);
    }
  }
  atomic_init(&ld->wait_ns, 0);
  if (pthread_mutex_init(&ld->mu, NULL) != 0) {
    free_slots(ld);
    gf_data_iter_free(&ld->it);
    free(ld);
    return gf_fail(err, GF_EIO, "data loader: cannot create a mutex");
  }
  if (pthread_cond_init(&ld->cv, NULL) != 0) {
    pthread_mutex_destroy(&ld->mu);
    free_slots(ld);
    gf_data_iter_free(&ld->it);
    free(ld);
    return gf_fail(err, GF_EIO, "data loader: cannot create a condition variable");
  }
  int rc = pthread_create(&ld->thread, NULL, producer, ld);
  if (rc != 0) {
    pthread_cond_destroy(&ld->cv);
    pthread_mutex_destroy(&ld->mu);
    free_slots(ld);
    gf_data_iter_free(&ld->it);
    free(ld);
    return gf_fail(err, GF_EIO, "data loader: cannot start the thread: %s",
                   strerror(rc));
  }
  ld->thread_started = 1;
  *out = ld;
  return GF_OK;
}

gf_status gf_data_loader_next(gf_data_loader *ld, const gf_batch **batch,
                              gf_err *err) {
  *batch = NULL;
  pthread_mutex_lock(&ld->mu);
  if (ld->released < ld->consumed) { /* give back the batch handed out last */
    ld->released = ld->consumed;
    pthread_cond_broadcast(&ld->cv);
  }
  uint64_t t0 = gf_mono_ns();
  while (ld->produced <= ld->consumed && !ld->failed) {
    pthread_cond_wait(&ld->cv, &ld->mu);
  }
  uint64_t waited = gf_mono_ns() - t0;
  atomic_fetch_add(&ld->wait_ns, waited);
  if (ld->produced <= ld->consumed) { /* failed, nothing left */
    gf_status st = ld->failed;
    gf_err e = ld->fail_err;
    pthread_mutex_unlock(&ld->mu);
    if (err) *err = e;
    return st;
  }
  gf_batch *b = &ld->slots[ld->consumed % (uint64_t)ld->nslots];
  ld->consumed++;
  pthread_mutex_unlock(&ld->mu);
  b->wait_s = (double)waited * 1e-9;
  *batch = b;
  return GF_OK;
}

double gf_data_loader_wait_seconds(const gf_data_loader *ld) {
  gf_data_loader *m = (gf_data_loader *)ld; /* atomic_load takes non-const */
  return (double)atomic_load(&m->wait_ns) * 1e-9;
}

void gf_data_loader_free(gf_data_loader *ld) {
  if (!ld) return;
  pthread_mutex_lock(&ld->mu);
  ld->stop = 1;
  pthread_cond_broadcast(&ld->cv);
  pthread_mutex_unlock(&ld->mu);
  if (ld->thread_started) pthread_join(ld->thread, NULL);
  pthread_cond_destroy(&ld->cv);
  pthread_mutex_destroy(&ld->mu);
  free_slots(ld);
  gf_data_iter_free(&ld->it);
  free(ld);
}
