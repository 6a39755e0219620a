/* server_internal.h - the server's private state shared by its parts:
 * server.c (start, stop, workers, watcher), http.c (libmicrohttpd
 * callbacks, routing, limits, auth), handlers.c (what each endpoint
 * answers), answer.c (what a generation job answers), page.c (the HTML
 * page), queue.c (the job queue and the batcher), reply.c (setting an
 * answer and queueing its response). */
#ifndef GFS_SERVER_INTERNAL_H
#define GFS_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "gf/strbuf.h"
#include "gfs/metrics.h"
#include "gfs/request.h"
#include "gfs/server.h"
#include "gfs/slot.h"

typedef enum gfs_route {
  GFS_R_NONE = 0,
  GFS_R_GENERATE,     /* GET  /v1/models/{name}/generate   (worker) */
  GFS_R_INFER,        /* POST /v2/models/{name}[/versions/{v}]/infer
                         (worker) */
  GFS_R_INVOCATIONS,  /* POST /invocations                 (worker) */
  GFS_R_PING,         /* GET  /ping */
  GFS_R_HEALTH,       /* GET  /health */
  GFS_R_VERSION,      /* GET  /version */
  GFS_R_LIVE,         /* GET  /v2/health/live */
  GFS_R_READY,        /* GET  /v2/health/ready */
  GFS_R_SERVER_META,  /* GET  /v2 */
  GFS_R_MODEL_META,   /* GET  /v2/models/{name}[/versions/{v}] */
  GFS_R_MODEL_READY,  /* GET  /v2/models/{name}[/versions/{v}]/ready */
  GFS_R_METRICS,      /* GET  /metrics */
  GFS_R_PAGE,         /* GET  / */
  GFS_R_FAVICON,      /* GET  /favicon.ico: 204, no icon (no token needed) */
} gfs_route;

/* Per-request state (*req_cls): created on the first callback, freed in
 * the completed callback (STYLE habit 12). */
typedef struct gfs_req {
  struct gfs_req *next;        /* queue link */
  struct MHD_Connection *conn;
  double t0;                   /* monotonic seconds at the headers */
  gfs_route route;
  gfs_endpoint ep;
  gfs_slot *slot;              /* borrowed from the server; NULL if none */
  char want_version[32];       /* /versions/{v}: the version asked; "" =
                                  whichever is loaded */
  char ihcl[24];               /* request's Inference-Header-Content-Length
                                  (checked digits); "" = none */
  char *body;                  /* POST body (malloc'd), body_len bytes */
  size_t body_len, body_cap;
  int too_big;                 /* body passed max_body */
  gfs_gen_args args;           /* GET generate's query */
  int max_images;              /* the server's --max-images */
  /* The answer, filled on the polling thread or by a worker. */
  int status;                  /* 0 = not decided yet */
  char *resp;                  /* malloc'd body, handed to MHD */
  size_t resp_len;
  size_t resp_header_len;      /* binary tensor data answer: its JSON
                                  header's length, sent as Inference-Header-
                                  Content-Length; 0 = not binary */
  const char *ctype;           /* static string */
  const char *allow;           /* Allow header for 405, static */
  int retry_after;             /* seconds; 0 = no header */
  int auth_header;             /* add WWW-Authenticate */
  char model[GFS_NAME_MAX + 1]; /* X-Model-Name ("" = none) */
  char version[32];            /* X-Model-Version (a gfs_model_ref's) */
  char alias[GFS_NAME_MAX + 1]; /* X-Model-Alias ("" = none) */
  int queued;                  /* handed to the workers, connection suspended */
  atomic_int done;             /* a worker has filled the answer */
  int answered;                /* response queued to MHD */
} gfs_req;

struct gfs_server {
  gfs_config cfg;              /* copy; strings below replace its pointers */
  char *cache_dir;             /* malloc'd */
  char *token;                 /* malloc'd bearer token, or NULL */
  mlflow_config mcfg;          /* copy */
  gfs_slot slots[GFS_MAX_MODELS];
  int n_slots;
  gfs_metrics metrics;
  atomic_size_t body_bytes;    /* request body bytes held, all connections */
  size_t body_budget;          /* limit of body_bytes: max(64 MiB, max_body) */
  struct MHD_Daemon *daemon;
  int port;
  pthread_mutex_t qlock;       /* guards the queue and stopping */
  pthread_cond_t qcond;
  gfs_req *qhead, *qtail;
  int qlen;                    /* jobs waiting */
  int admitted;                /* jobs waiting or running */
  int busy;                    /* workers running jobs */
  int stopping;
  pthread_t workers[64];
  int n_workers;
  pthread_mutex_t wlock;       /* guards wstop */
  pthread_cond_t wcond;
  int wstop;
  pthread_t watcher;
  int watcher_started;
};

/* Most requests that may share generator passes (--preferred-batch). */
#define GFS_MAX_SHARED GFS_MAX_PASS_ROWS

/* Calls go one way only (tests/lint/calls.py finds no ring): server.c
 * calls http.c, handlers.c and queue.c; http.c calls handlers.c and
 * queue.c; handlers.c calls answer.c and page.c; all of them call
 * reply.c, slot.c and metrics.c, which call none of them. */

/* ---- reply.c: a request's answer and its response -------------------- */

/* fmt and its arguments as a malloc'd text of any length (the caller frees
 * it); NULL when out of memory or when they cannot be formatted. For log
 * lines and error answers, which carry outside text: never cut short. */
char *gfs_vformat(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
/* One log line to cfg.log (nothing when it is NULL), of any length. */
void gfs_log(gfs_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* text as one log line (NULL: a line saying it could not be formatted). */
void gfs_log_text(gfs_server *s, const char *text);

/* Sets r's answer to {"error": msg} with status. */
void gfs_error(gfs_req *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets r's answer to a malloc'd body (ownership moves to r). */
void gfs_answer(gfs_req *r, int status, const char *ctype, char *body,
                size_t len);
/* Sets r's answer to a copy of text (500 when out of memory). */
void gfs_answer_text(gfs_req *r, int status, const char *ctype,
                     const char *text);
/* Sets r's answer to b's bytes, taken from b (500 when b ran out of
 * memory); b is left empty. */
void gfs_answer_strbuf(gfs_req *r, int status, const char *ctype,
                       gf_strbuf *b);
/* Queues r's answer (500 when none was set) to libmicrohttpd as the
 * response of conn, with its headers; r->resp passes to libmicrohttpd. */
enum MHD_Result gfs_reply_queue(struct MHD_Connection *conn, gfs_req *r);

/* ---- queue.c: the job queue and the batcher -------------------------- */

/* Queues r for the workers; 0 when queued (its connection suspended), -1
 * when full (429) or stopping (503), r answered. */
int gfs_enqueue(gfs_server *s, gfs_req *r);
/* A worker's next jobs: waits for a job, takes it with the queued jobs
 * that may share its passes (the batcher) into batch[GFS_MAX_SHARED],
 * answers 503 and hands back those past their deadline, and returns how
 * many are left to run in batch[0..n) (0 or more; the worker counts as
 * busy until gfs_queue_done), or -1 once the server stops and the queue
 * is empty. */
int gfs_queue_take(gfs_server *s, gfs_req **batch);
/* Hands the n jobs of batch, answered, back to the polling thread and
 * ends the worker's busy spell that gfs_queue_take began. */
void gfs_queue_done(gfs_server *s, gfs_req **batch, int n);

/* ---- handlers.c, answer.c, page.c: what each endpoint answers -------- */

/* Answers the cheap endpoints on the polling thread. */
void gfs_handle_inline(gfs_server *s, gfs_req *r);
/* Runs a generation job on worker `worker`. */
void gfs_handle_job(gfs_server *s, gfs_req *r, int worker);
/* Runs n <= GFS_MAX_SHARED generation jobs on worker `worker`: those that
 * get the same batch-invariant model version share forward passes of up
 * to cfg.preferred_batch rows; each gets its own answer. */
void gfs_handle_jobs(gfs_server *s, gfs_req **rs, int n, int worker);
/* Writes the answer of generation request r (parsed into ir; NULL for
 * GET generate) from its n images img, made by m. */
void gfs_answer_images(gfs_server *s, gfs_req *r, const gf_generator *m,
                       const gfs_infer_req *ir, const float *img, int n);
/* The HTML page of GET /. */
void gfs_handle_page(gfs_server *s, gfs_req *r);

/* ---- http.c: libmicrohttpd's callbacks ------------------------------- */

enum MHD_Result gfs_on_access(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls);
void gfs_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe);

#endif
