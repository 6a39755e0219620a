/* queue.c - the bounded job queue between the polling thread and the
 * workers, and the dynamic batcher: admitting a generation job (429 past
 * workers + --queue, 503 while stopping), a worker taking the next job
 * with the queued jobs that may share its passes (--preferred-batch,
 * --max-queue-delay-us), jobs past their deadline answered 503, and each
 * job handed back to the polling thread with its answer. Not here: what a
 * job answers (handlers.c), the worker threads (server.c). */
#include <time.h>

#include "gf/clock.h"
#include "server_internal.h"

int gfs_enqueue(gfs_server *s, gfs_req *r) {
  pthread_mutex_lock(&s->qlock);
  if (s->stopping) {
    pthread_mutex_unlock(&s->qlock);
    r->retry_after = 1;
    gfs_error(r, 503, "server is shutting down");
    return -1;
  }
  /* Admitted jobs (waiting or running) are bounded by workers + queue. */
  if (s->admitted >= s->cfg.workers + s->cfg.queue) {
    pthread_mutex_unlock(&s->qlock);
    atomic_fetch_add(&s->metrics.rejected, 1);
    r->retry_after = 1;
    gfs_error(r, 429, "too many requests: %d waiting", s->cfg.queue);
    return -1;
  }
  r->queued = 1;
  /* Suspended under the queue lock: no worker can resume it first. */
  MHD_suspend_connection(r->conn);
  r->next = NULL;
  if (s->qtail) s->qtail->next = r;
  else s->qhead = r;
  s->qtail = r;
  s->qlen++;
  s->admitted++;
  atomic_fetch_add(&s->metrics.queue_depth, 1);
  atomic_fetch_add(&s->metrics.in_flight, 1);
  pthread_cond_signal(&s->qcond);
  pthread_mutex_unlock(&s->qlock);
  return 0;
}

/* Rows a queued job asks for, as far as is known before it is parsed:
 * a GET's n, 1 for a body. */
static int job_rows(const gfs_req *q) {
  return q->route == GFS_R_GENERATE ? q->args.n : 1;
}

/* Under qlock: moves from the queue to out[] (room for `room`) the jobs
 * that may share r's passes (same model slot) while their job_rows fit in
 * `rows`; returns how many. */
static int take_more(gfs_server *s, gfs_req *r, int rows, gfs_req **out,
                     int room) {
  int n = 0, images = 0;
  gfs_req **link = &s->qhead, *prev = NULL;
  while (*link && images < rows && n < room) {
    gfs_req *q = *link;
    int qi = job_rows(q);
    if (q->slot != r->slot || images + qi > rows) {
      prev = q;
      link = &q->next;
      continue;
    }
    *link = q->next; /* unlink q */
    if (s->qtail == q) s->qtail = prev;
    s->qlen--;
    atomic_fetch_sub(&s->metrics.queue_depth, 1);
    out[n++] = q;
    images += qi;
  }
  return n;
}

/* r in out[0], then the queued jobs that may share its passes; returns
 * the count, r included. */
static int take_sharers(gfs_server *s, gfs_req *r, int rows, gfs_req **out) {
  int images = job_rows(r);
  out[0] = r;
  if (images >= rows) return 1;
  return 1 + take_more(s, r, rows - images, out + 1, GFS_MAX_SHARED - 1);
}

/* Whether requests for slot sl may share passes: its version now loaded
 * is batch-invariant (checked again per group when the jobs run). */
static int slot_shares(gfs_slot *sl) {
  gf_generator *m = sl ? gfs_slot_acquire(sl) : NULL;
  int yes = m && m->batch_invariant;
  gf_generator_unref(m);
  return yes;
}

/* The dynamic batcher, under qlock: r (just taken from the queue) and the
 * queued requests that may share its passes, in out[]; returns their
 * count. While the rows fall short of --preferred-batch and every worker
 * is busy (a request arriving now would wait anyway), it waits for more
 * until --max-queue-delay-us after r arrived. An idle worker or an idle
 * server never delays a request. */
static int gather(gfs_server *s, gfs_req *r, gfs_req **out) {
  int rows = s->cfg.preferred_batch;
  out[0] = r;
  if (rows <= 1 || !slot_shares(r->slot)) return 1;
  int n = take_sharers(s, r, rows, out);
  double until = r->t0 + s->cfg.max_queue_delay_us * 1e-6;
  for (;;) {
    int images = 0;
    for (int i = 0; i < n; i++) images += job_rows(out[i]);
    double left = until - gf_mono_s();
    if (images >= rows || n >= GFS_MAX_SHARED || left <= 0 || s->stopping ||
        s->busy < s->n_workers)
      break;
    struct timespec ts;
    gf_deadline_after(&ts, CLOCK_REALTIME, left);
    pthread_cond_timedwait(&s->qcond, &s->qlock, &ts);
    n += take_more(s, r, rows - images, out + n, GFS_MAX_SHARED - n);
    /* a job this pass cannot take is left for another worker */
    if (s->qhead) pthread_cond_signal(&s->qcond);
  }
  return n;
}

/* Hands r back to the polling thread with its answer. */
static void finish_job(gfs_server *s, gfs_req *r) {
  atomic_fetch_sub(&s->metrics.in_flight, 1);
  pthread_mutex_lock(&s->qlock);
  s->admitted--;
  pthread_mutex_unlock(&s->qlock);
  struct MHD_Connection *conn = r->conn;
  atomic_store(&r->done, 1);
  MHD_resume_connection(conn); /* r belongs to the polling thread now */
}

int gfs_queue_take(gfs_server *s, gfs_req **batch) {
  pthread_mutex_lock(&s->qlock);
  while (!s->qhead && !s->stopping) pthread_cond_wait(&s->qcond, &s->qlock);
  gfs_req *r = s->qhead;
  if (!r) { /* stopping and drained */
    pthread_mutex_unlock(&s->qlock);
    return -1;
  }
  s->qhead = r->next;
  if (!s->qhead) s->qtail = NULL;
  s->qlen--;
  atomic_fetch_sub(&s->metrics.queue_depth, 1);
  s->busy++;
  int n = gather(s, r, batch);
  pthread_mutex_unlock(&s->qlock);
  /* Jobs past their deadline are answered 503; the rest run. */
  int k = 0;
  double now = gf_mono_s();
  for (int i = 0; i < n; i++) {
    gfs_req *q = batch[i];
    if (now - q->t0 > s->cfg.deadline_s) {
      atomic_fetch_add(&s->metrics.deadline_exceeded, 1);
      q->retry_after = 1;
      gfs_error(q, 503, "deadline of %g s passed while queued",
                s->cfg.deadline_s);
      finish_job(s, q);
    } else {
      batch[k++] = q;
    }
  }
  return k;
}

void gfs_queue_done(gfs_server *s, gfs_req **batch, int n) {
  for (int i = 0; i < n; i++) finish_job(s, batch[i]);
  pthread_mutex_lock(&s->qlock);
  s->busy--;
  pthread_mutex_unlock(&s->qlock);
}
