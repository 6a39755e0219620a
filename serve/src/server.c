/* server.c - starting and stopping ganflow-serve: configuration checks,
 * the token, the cache directory, the registry watcher thread, the worker
 * threads (each running the jobs queue.c hands it through handlers.c),
 * the libmicrohttpd daemon (its callbacks are http.c's). The top of the
 * server's files: nothing below calls back into it. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/file.h"
#include "gf/fs.h"
#include "gf/mlflow_status.h"
#include "gf/text.h"
#include "server_internal.h"

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  gfs_server *s = cls;
  if (!s->cfg.log) return;
  /* fmt and its arguments come from libmicrohttpd's own log calls. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  char *line = gfs_vformat(fmt, ap);
#pragma GCC diagnostic pop
  if (line) {
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n') line[--n] = '\0';
    gfs_log(s, "http: %s", line);
  } else {
    gfs_log_text(s, NULL);
  }
  free(line);
}

/* ---- workers -------------------------------------------------------- */

typedef struct worker_arg {
  gfs_server *s;
  int index;
} worker_arg;

/* Worker `index`: takes jobs from the queue (with the jobs that may
 * share their passes) and runs them until the server stops and the
 * queue is drained. */
static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  gfs_server *s = wa.s;
  gfs_req *batch[GFS_MAX_SHARED];
  for (;;) {
    int n = gfs_queue_take(s, batch);
    if (n < 0) return NULL; /* stopping and drained */
    if (n) gfs_handle_jobs(s, batch, n, wa.index);
    gfs_queue_done(s, batch, n);
  }
}

/* ---- registry watcher ------------------------------------------------- */

int gfs_server_ready(gfs_server *s) {
  return gfs_slots_ready(s->slots, s->n_slots);
}

static void *watcher_main(void *arg) {
  gfs_server *s = arg;
  mlflow_client *c = NULL;
  mlflow_error me;
  /* The poll is itself the retry: a registry call fails after a couple of
   * short retries rather than after the client's default back-off (7
   * retries, up to minutes), so an alias moved once the registry is back
   * is seen within a poll period or two. Strings stay s->mcfg's
   * (mlflow_client_new copies them). */
  mlflow_config wcfg = s->mcfg;
  double cap = s->cfg.poll_s > 1.0 ? s->cfg.poll_s : 1.0;
  if (wcfg.max_retries > 2) wcfg.max_retries = 2;
  if (wcfg.backoff_factor > 0.5) wcfg.backoff_factor = 0.5;
  if (wcfg.backoff_jitter > 0.25) wcfg.backoff_jitter = 0.25;
  if (wcfg.backoff_max_s > cap) wcfg.backoff_max_s = cap;
  if (mlflow_client_new(&c, &wcfg, &me) != MLFLOW_OK) {
    gfs_log(s, "watcher: %s", me.message);
    return NULL;
  }
  /* Passes never exceed the preferred batch: a request of more images
   * runs several, so the activations are sized for it, not --max-images. */
  gf_generator_opts o = {s->cfg.backend, s->cfg.device_index, s->cfg.workers,
                         s->cfg.threads, s->cfg.preferred_batch,
                         &s->metrics.resident, s->cfg.precision};
  for (;;) {
    for (int i = 0; i < s->n_slots; i++) {
      gfs_slot *sl = &s->slots[i];
      int changed = 0;
      gf_err e;
      memset(&e, 0, sizeof e);
      double t0 = gf_mono_s();
      gf_status st = gfs_slot_sync(sl, c, s->cache_dir, &o, &changed, &e);
      if (st != GF_OK && st != GF_ENOTFOUND) {
        gf_generator *cur = gfs_slot_acquire(sl);
        if (cur)
          gfs_log(s, "model %s: reload failed, version %s keeps serving: %s",
                  sl->uri, cur->version, e.msg);
        else
          gfs_log(s, "model %s: load failed (nothing served yet; retrying "
                     "each second): %s", sl->uri, e.msg);
        gf_generator_unref(cur);
      } else if (st == GF_ENOTFOUND) {
        gfs_log(s, "model %s: %s", sl->uri, e.msg);
      } else if (changed) {
        gf_generator *m = gfs_slot_acquire(sl);
        gfs_log(s, "model %s: version %s loaded in %.2f s from %s", sl->uri,
                m ? m->version : "?", gf_mono_s() - t0, m ? m->dir : "?");
        if (m && !m->batch_invariant)
          gfs_log(s, "model %s: version %s: requests do not share passes "
                  "(%s)", sl->uri, m->version, m->invariance_note);
        gf_generator_unref(m);
      }
    }
    int ready = gfs_server_ready(s);
    /* Until every model is loaded, retry each second. */
    double wait = ready ? s->cfg.poll_s : 1.0;
    pthread_mutex_lock(&s->wlock);
    if (!s->wstop && wait > 0) {
      /* wcond is a default condvar: its deadline is on CLOCK_REALTIME. */
      struct timespec ts;
      gf_deadline_after(&ts, CLOCK_REALTIME, wait);
      while (!s->wstop &&
             pthread_cond_timedwait(&s->wcond, &s->wlock, &ts) != ETIMEDOUT) {
      }
    }
    int stop = s->wstop || (ready && s->cfg.poll_s <= 0);
    pthread_mutex_unlock(&s->wlock);
    if (stop) break;
  }
  mlflow_client_free(c);
  return NULL;
}

/* ---- start / stop ----------------------------------------------------- */

/* The token is the first line of --token-file: at most TOKEN_MAX bytes
 * (a '\r' may follow them), in a file of at most TOKEN_FILE_MAX. */
#define TOKEN_MAX 511
#define TOKEN_FILE_MAX 65536

static gf_status read_token(gfs_server *s, const char *path, gf_err *err) {
  char *text = NULL;
  size_t len = 0;
  gf_err e;
  gf_status st = gf_read_file(path, TOKEN_FILE_MAX, &text, &len, &e);
  if (st != GF_OK)
    return gf_fail(err, st == GF_ENOTFOUND ? GF_EIO : st, "--token-file %s",
                   e.msg);
  size_t pos = 0, n = 0;
  const char *line = len ? gf_next_line(text, len, &pos, &n) : text;
  /* A first line longer than a token may be is refused, not cut. */
  if (n > TOKEN_MAX && line[TOKEN_MAX] != '\r') {
    free(text);
    return gf_fail(err, GF_EINVAL, "--token-file %s: the token is too long "
                   "(at most %d bytes)", path, TOKEN_MAX);
  }
  n = strnlen(line, n < TOKEN_MAX ? n : TOKEN_MAX);
  while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
  if (n < 8) {
    free(text);
    return gf_fail(err, GF_EINVAL, "--token-file %s: the token must be at "
                   "least 8 characters", path);
  }
  s->token = strndup(line, n);
  free(text);
  return s->token ? GF_OK : gf_fail(err, GF_ENOMEM, "out of memory");
}

/* The cache directory: --cache-dir, else $HOME/.cache/ganflow-serve, else
 * ./.ganflow-cache; checked for length (gfs_cache_dir_check) before
 * anything is created, then made with every missing level. */
static gf_status make_cache_dir(gfs_server *s, gf_err *err) {
  char path[GF_PATH_MAX];
  const char *what = "--cache-dir";
  if (s->cfg.cache_dir) {
    GF_TRY(gf_format(path, sizeof path, err, what, "%s", s->cfg.cache_dir));
  } else {
    const char *home = getenv("HOME");
    what = "the default cache directory ($HOME/.cache/ganflow-serve)";
    if (home && *home)
      GF_TRY(gf_format(path, sizeof path, err, what, "%s/.cache/ganflow-serve",
                       home));
    else
      GF_TRY(gf_format(path, sizeof path, err, what, ".ganflow-cache"));
  }
  GF_TRY(gfs_cache_dir_check(path, what, err));
  gf_err e;
  if (gf_mkdir_p(path, 0755, &e) != GF_OK)
    return gf_fail(err, e.code, "%s: %s", what, e.msg);
  s->cache_dir = strdup(path);
  return s->cache_dir ? GF_OK : gf_fail(err, GF_ENOMEM, "out of memory");
}

static gf_status check_device(const gfs_config *c, gf_err *err) {
  gf_ctx ctx;
  gf_ctx_config cc = {c->backend, 1, c->device_index, GF_CPU_LAYOUT_AUTO};
  gf_err e;
  gf_status st = gf_ctx_init(&ctx, &cc, &e);
  if (st != GF_OK)
    return gf_fail(err, st, "--device %s: %s", gf_backend_name(c->backend),
                   e.msg);
  if (c->precision == GF_GEN_BF16) st = gf_ctx_bf16_check(&ctx, &e);
  if (c->precision == GF_GEN_INT8) st = gf_ctx_int8_check(&ctx, &e);
  gf_ctx_free(&ctx);
  if (st != GF_OK)
    return gf_fail(err, st, "--precision %s: %s",
                   gf_gen_precision_name(c->precision), e.msg);
  return GF_OK;
}

static gf_status start_daemon(gfs_server *s, gf_err *err) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)s->cfg.port);
  const char *host = strcmp(s->cfg.host, "localhost") == 0 ? "127.0.0.1"
                                                           : s->cfg.host;
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
    return gf_fail(err, GF_EINVAL, "--listen: '%s' is not an IPv4 address",
                   s->cfg.host);
  s->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
          MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
      (uint16_t)s->cfg.port, NULL, NULL, gfs_on_access, s,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.conn_timeout_s,
      MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_conns,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
      MHD_OPTION_NOTIFY_COMPLETED, gfs_on_completed, s, MHD_OPTION_END);
  if (!s->daemon)
    return gf_fail(err, GF_EIO, "cannot listen on %s:%d (in use?)",
                   s->cfg.host, s->cfg.port);
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : s->cfg.port;
  return GF_OK;
}

gf_status gfs_server_start(const gfs_config *cfg, const mlflow_config *mcfg,
                           gfs_server **out, gf_err *err) {
  *out = NULL;
  if (!cfg || cfg->n_models < 1 || cfg->n_models > GFS_MAX_MODELS ||
      cfg->workers < 1 || cfg->workers > 64 || cfg->max_images < 1 ||
      cfg->threads < 1 || cfg->queue < 0)
    return gf_fail(err, GF_EINVAL, "server configuration out of range");
  gf_status st = check_device(cfg, err);
  if (st != GF_OK) return st;
  gfs_server *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "out of memory");
  s->cfg = *cfg;
  gfs_metrics_init(&s->metrics);
  atomic_init(&s->body_bytes, 0);
  s->body_budget = cfg->max_body > ((size_t)64 << 20) ? cfg->max_body
                                                        : (size_t)64 << 20;
  pthread_mutex_init(&s->qlock, NULL);
  pthread_cond_init(&s->qcond, NULL);
  pthread_mutex_init(&s->wlock, NULL);
  pthread_cond_init(&s->wcond, NULL);
  mlflow_error me;
  if (mlflow_config_copy(&s->mcfg, mcfg, &me) != MLFLOW_OK) {
    st = gf_fail_mlflow(err, &me, NULL);
    goto fail;
  }
  for (int i = 0; i < cfg->n_models; i++) {
    if ((st = gfs_slot_init(&s->slots[i], cfg->models[i], err))) {
      gfs_slot_free(&s->slots[i]);
      goto fail;
    }
    s->n_slots = i + 1;
    for (int j = 0; j < i; j++)
      if (strcmp(s->slots[j].name, s->slots[i].name) == 0) {
        st = gf_fail(err, GF_EINVAL, "--model: %s is given twice",
                     s->slots[i].name);
        goto fail;
      }
  }
  if (cfg->token_file && (st = read_token(s, cfg->token_file, err))) goto fail;
  if ((st = make_cache_dir(s, err))) goto fail;
  for (int i = 0; i < cfg->workers; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) {
      st = gf_fail(err, GF_ENOMEM, "out of memory");
      goto fail;
    }
    *wa = (worker_arg){s, i};
    if (pthread_create(&s->workers[i], NULL, worker_main, wa) != 0) {
      free(wa);
      st = gf_fail(err, GF_EIO, "cannot start worker thread");
      goto fail;
    }
    s->n_workers = i + 1;
  }
  if ((st = start_daemon(s, err))) goto fail;
  if (pthread_create(&s->watcher, NULL, watcher_main, s) != 0) {
    st = gf_fail(err, GF_EIO, "cannot start the watcher thread");
    goto fail;
  }
  s->watcher_started = 1;
  if (cfg->port_file) {
    FILE *f = fopen(cfg->port_file, "w");
    if (!f || fprintf(f, "%d\n", s->port) < 0 || fclose(f) != 0) {
      st = gf_fail(err, GF_EIO, "--port-file %s: cannot write",
                   cfg->port_file);
      goto fail;
    }
  }
  gfs_log(s, "listening on http://%s:%d (%d model%s, %d workers, cache %s)",
          s->cfg.host, s->port, s->n_slots, s->n_slots == 1 ? "" : "s",
          s->n_workers, s->cache_dir);
  *out = s;
  return GF_OK;
fail:
  gfs_server_stop(s);
  return st;
}

int gfs_server_port(const gfs_server *s) { return s->port; }

void gfs_server_stop(gfs_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->wlock);
  s->wstop = 1;
  pthread_cond_broadcast(&s->wcond);
  pthread_mutex_unlock(&s->wlock);
  if (s->watcher_started) pthread_join(s->watcher, NULL);
  /* Workers finish every queued job (resuming its connection) first. */
  pthread_mutex_lock(&s->qlock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->qcond);
  pthread_mutex_unlock(&s->qlock);
  for (int i = 0; i < s->n_workers; i++) pthread_join(s->workers[i], NULL);
  if (s->daemon) MHD_stop_daemon(s->daemon);
  for (int i = 0; i < s->n_slots; i++) gfs_slot_free(&s->slots[i]);
  mlflow_config_free(&s->mcfg);
  free(s->cache_dir);
  free(s->token);
  pthread_mutex_destroy(&s->qlock);
  pthread_cond_destroy(&s->qcond);
  pthread_mutex_destroy(&s->wlock);
  pthread_cond_destroy(&s->wcond);
  free(s);
}
