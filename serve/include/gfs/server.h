/* server.h - ganflow-serve as a library: the configuration (and its
 * command line), starting and stopping the HTTP server (libmicrohttpd),
 * the worker pool with its bounded queue, and the registry watcher.
 *
 * Threads: one libmicrohttpd polling thread answers cheap endpoints and
 * queues generation jobs (suspending their connections); `workers` threads
 * run them, worker k on executor k of the model; one watcher thread polls
 * the registry every poll_s seconds. A full queue is answered 429 with
 * Retry-After; a job still waiting after deadline_s is answered 503.
 * Endpoints and errors: DESIGN §2. Nothing here exits or prints: log lines
 * go to cfg->log. */
#ifndef GFS_SERVER_H
#define GFS_SERVER_H

#include <stddef.h>
#include <stdio.h>

#include "gf/kernels.h"
#include "gf/generator.h"
#include "gf/status.h"
#include "mlflow/mlflow.h"

#define GFS_VERSION "0.1.0"
#define GFS_MAX_MODELS 16
/* Most rows of one generator pass (--preferred-batch). */
#define GFS_MAX_PASS_ROWS 64

typedef void (*gfs_log_fn)(void *arg, const char *line);

typedef struct gfs_config {
  const char *models[GFS_MAX_MODELS]; /* models:/ URIs (borrowed) */
  int n_models;
  char host[64];          /* IPv4 literal or "localhost" ("127.0.0.1") */
  int port;               /* 0 = any free port (see gfs_server_port) */
  double poll_s;          /* registry poll period; 0 = load once */
  const char *cache_dir;  /* download cache (borrowed) */
  gf_backend backend;     /* --device cpu | cuda[:N] */
  int device_index;
  int max_images;         /* images per request, 1..1024 */
  const char *token_file; /* bearer token file, or NULL (borrowed) */
  int workers;            /* generation threads (= executors per model) */
  int threads;            /* op threads per worker */
  int preferred_batch;    /* rows of one generator pass, 1..64: queued
                             requests for one model version share a pass
                             up to this many rows, and a request of more
                             images runs several (--preferred-batch) */
  gf_gen_precision precision; /* --precision fp32 | bf16 (every model) */
  int max_queue_delay_us; /* a pass that is not full waits up to this long
                             for more rows while other passes are running
                             (--max-queue-delay-us; 0: never waits) */
  int queue;              /* jobs that may wait beyond the running ones:
                             more than workers + queue at once get 429 */
  size_t max_body;        /* request body bytes; all bodies held at once
                             are bounded by max(64 MiB, max_body) (503) */
  double deadline_s;      /* longest a job may wait for a worker */
  unsigned conn_timeout_s;/* idle connection (half-sent request) timeout */
  unsigned max_conns;     /* open connections */
  const char *port_file;  /* the bound port is written here, or NULL */
  gfs_log_fn log;         /* may be NULL */
  void *log_arg;
} gfs_config;

/* Defaults: 127.0.0.1:8080, poll 10 s, cache ~/.cache/ganflow-serve (or
 * ./.ganflow-cache without HOME), cpu, max_images 64, 2 workers, 1 thread
 * each, preferred batch 16, queue delay 500 us, queue 64, body 1 MiB, deadline 10 s, connection timeout 10 s,
 * 512 connections. */
void gfs_config_default(gfs_config *c);

/* Parses ganflow-serve's command line into c (defaults first) through its
 * flag table (numbers through gf/parse.h), then checks the MLflow client's
 * numeric variables (gf/mlflow_env.h). Strings point into argv. GF_EINVAL
 * with a message naming the flag or variable on a usage error; *help is
 * set (and GF_OK returned) for --help. */
gf_status gfs_config_parse_args(gfs_config *c, int argc, char **argv,
                                int *help, gf_err *err);
/* Writes the --help text, every flag with its default, to out. */
void gfs_usage(FILE *out);
/* The flag table (gf/flags.h rows over gfs_config; static), for the
 * tests that walk it. */
struct gf_flag_table;
const struct gf_flag_table *gfs_flags(void);

typedef struct gfs_server gfs_server;

/* Validates cfg, reads the token file, creates the cache directory, starts
 * the watcher (first load at once, in the background: /v2/health/ready
 * says 503 until every model is loaded), the workers and the HTTP daemon.
 * mcfg is copied. Memory: *out is owned by the caller: gfs_server_stop. */
gf_status gfs_server_start(const gfs_config *cfg, const mlflow_config *mcfg,
                           gfs_server **out, gf_err *err);
/* The bound TCP port. */
int gfs_server_port(const gfs_server *s);
/* 1 when every model has a version loaded. */
int gfs_server_ready(gfs_server *s);
/* Finishes queued jobs, stops every thread, frees everything; accepts
 * NULL. */
void gfs_server_stop(gfs_server *s);

#endif
