/* launch_events.c - what the supervisor tells the MLflow run and its log:
 * the run's id (from a checkpoint, the run_id file or rank 0's heartbeat),
 * the step a new attempt resumes from, the launch tag, each restart (tag, sys/restarts, its recovery time) and
 * the run's end when the ranks could not set it. Shared by the one-node
 * supervisor (launch_run.c) and the node agents (launch_node.c). */
#define _GNU_SOURCE
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/checkpoint.h"
#include "gf/fs.h"
#include "gf/parse.h"
#include "gf/text.h"
#include "launch_internal.h"
#include "mlflow/mlflow.h"

void launch_say(launch_sup *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ganflow launch: ", s->log);
  vfprintf(s->log, fmt, ap);
  fputc('\n', s->log);
  fflush(s->log);
  va_end(ap);
}

/* ---- MLflow ------------------------------------------------------------ */

/* The client, made once from the environment; NULL when it cannot be
 * (the events then stay in the log). Short retries: the supervisor must
 * keep watching. */
static mlflow_client *launch_client(launch_sup *s) {
  if (s->mc_tried) return s->mc;
  s->mc_tried = true;
  mlflow_config cfg;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_config_from_env(&cfg, &e) != MLFLOW_OK) {
    launch_say(s, "warning: MLflow settings: %s (restarts are only logged here)",
        e.message);
    return NULL;
  }
  /* at most ~11 s per call while a server is down: a restart event not
   * sent is kept and sent with the next one */
  cfg.max_retries = 1;
  cfg.backoff_factor = 0.5;
  cfg.backoff_jitter = 0.2;
  cfg.timeout_s = 5;
  if (mlflow_client_new(&s->mc, &cfg, &e) != MLFLOW_OK) {
    launch_say(s, "warning: MLflow client: %s", e.message);
    s->mc = NULL;
  }
  mlflow_config_free(&cfg);
  return s->mc;
}

/* Keeps id as the run's id. Its sources (a checkpoint's run_id, a
 * heartbeat's run, a run_id file's line checked against GF_HB_RUN_MAX) are
 * no longer than run_id holds; one that were would be kept as no id at all
 * (the run is then found again from the next source), never cut. */
void launch_keep_run_id(launch_sup *s, const char *id) {
  _Static_assert(sizeof ((gf_ckpt_meta *)0)->run_id <= sizeof s->run_id &&
                     sizeof ((gf_heartbeat_rec *)0)->run <= sizeof s->run_id,
                 "run ids fit sup.run_id");
  gf_status st = gf_format(s->run_id, sizeof s->run_id, NULL, "run id", "%s",
                           id);
  assert(st == GF_OK);
  (void)st;
}

/* The run id from the newest good checkpoint, else <ckpt-dir>/run_id. */
void launch_find_run_id(launch_sup *s) {
  if (s->run_id[0]) return;
  char path[GF_PATH_MAX];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(s->o->train.checkpoint_dir, path, sizeof path,
                                &meta, NULL, NULL, 0, &e) == GF_OK &&
      meta.run_id[0]) {
    launch_keep_run_id(s, meta.run_id);
    return;
  }
  if (gf_path_join(path, sizeof path, s->o->train.checkpoint_dir, "run_id",
                   &e) != GF_OK) {
    launch_say(s, "warning: the run id file: %s", e.msg);
    return;
  }
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[128] = "";
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, " \r\n")] = '\0';
    if (strlen(line) <= GF_HB_RUN_MAX) launch_keep_run_id(s, line);
  }
  fclose(f);
}

/* The step the next attempt resumes from (0 without a checkpoint). */
int64_t launch_resume_step(launch_sup *s) {
  char path[GF_PATH_MAX];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(s->o->train.checkpoint_dir, path, sizeof path,
                                &meta, NULL, NULL, 0, &e) != GF_OK)
    return 0;
  if (!s->run_id[0] && meta.run_id[0]) launch_keep_run_id(s, meta.run_id);
  return meta.step;
}

const char *launch_launcher_name(gf_launcher l) {
  return l == GF_LAUNCHER_MPIRUN ? "mpirun" : l == GF_LAUNCHER_SRUN ? "srun" : "local";
}

/* s->base from the run's sys/restarts (its newest step is the number of
 * the run's last logged restart) and s->cap_base from its tag
 * ganflow.capacity.changes; false when the run cannot be read. */
static bool read_base(launch_sup *s, mlflow_client *c) {
  if (s->base >= 0) return true;
  mlflow_run run;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (mlflow_run_get(c, s->run_id, &run, &e) != MLFLOW_OK) {
    launch_say(s, "warning: MLflow: restarts not logged yet: %s", e.message);
    return false;
  }
  s->base = 0;
  const char *nc = mlflow_run_tag(&run, "ganflow.capacity.changes");
  int changes = 0; /* a tag this supervisor wrote: a count, else none */
  s->cap_base = nc && gf_parse_int(NULL, nc, 1, INT_MAX / 2 - 1, &changes,
                                   NULL) == GF_OK ? changes : 0;
  for (size_t i = 0; i < run.n_metrics; i++)
    if (strcmp(run.metrics[i].key, "sys/restarts") == 0 &&
        run.metrics[i].step > 0 && run.metrics[i].step < INT_MAX / 2)
      s->base = (int)run.metrics[i].step;
  mlflow_run_free(&run);
  return true;
}

/* Capacity events (tags) and sys/world_size points not sent yet; false
 * when MLflow refused one (said; retried at the next call). */
static bool flush_capacity(launch_sup *s, mlflow_client *c) {
  mlflow_error e;
  memset(&e, 0, sizeof e);
  for (int i = 0; i < s->n_cev; i++) {
    capacity_event *ev = &s->cev[i];
    if (ev->logged) continue;
    int number = s->cap_base + ev->n;
    char key[64], n[16]; /* a literal and an int; an int */
    GF_FORMAT_FITS(key, sizeof key, "ganflow.capacity.%d", number);
    GF_FORMAT_FITS(n, sizeof n, "%d", number);
    mlflow_kv tags[2] = {{key, ev->text}, {"ganflow.capacity.changes", n}};
    if (mlflow_log_batch(c, s->run_id, NULL, 0, NULL, 0, tags, 2, &e) !=
        MLFLOW_OK) {
      launch_say(s, "warning: MLflow: capacity change %d not logged yet: %s",
          ev->n, e.message);
      return false;
    }
    ev->logged = true;
  }
  for (int i = 0; i < s->n_ws; i++) {
    world_point *w = &s->ws[i];
    if (w->logged) continue;
    if (mlflow_log_metric(c, s->run_id, "sys/world_size", (double)w->world,
                          mlflow_now_ms(), w->step, &e) != MLFLOW_OK) {
      launch_say(s, "warning: MLflow: sys/world_size not logged yet: %s",
          e.message);
      return false;
    }
    w->logged = true;
  }
  return true;
}

/* Sends what the run lacks: the launch tag, then every restart event not
 * logged yet and its recovery time. Failures are reported and retried at
 * the next call. */
void launch_flush_events(launch_sup *s) {
  if (!s->run_id[0]) return;
  mlflow_client *c = launch_client(s);
  if (!c) return;
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if (!s->tagged) {
    const gf_launch_opts *o = s->o;
    char v[512]; /* names, ints, %g and a host name (< 256): they fit */
    if (o->nnodes_max)
      GF_FORMAT_FITS(v, sizeof v, "nodes, %d..%d nodes of %d rank%s, "
                     "rendezvous %s:%d (%s), up to %d restarts, hang timeout "
                     "%gs", o->nnodes_min, o->nnodes_max, o->nproc,
                     o->nproc == 1 ? "" : "s", o->rdzv_host, o->rdzv_port,
                     o->conv, o->max_restarts, o->hang_timeout);
    else
      GF_FORMAT_FITS(v, sizeof v, "%s, %d ranks (at least %d), up to %d "
                     "restarts, hang timeout %gs",
                     launch_launcher_name(o->launcher), o->nproc, o->nproc_min,
                     o->max_restarts, o->hang_timeout);
    if (mlflow_set_tag(c, s->run_id, "ganflow.launch", v, &e) == MLFLOW_OK)
      s->tagged = true;
    else
      launch_say(s, "warning: MLflow: %s", e.message);
  }
  if ((s->n_ev || s->n_cev) && !read_base(s, c)) return;
  if (!flush_capacity(s, c)) return;
  for (int i = 0; i < s->n_ev; i++) {
    restart_event *ev = &s->ev[i];
    int number = s->base + ev->n;
    if (!ev->logged) {
      char key[64], n[16]; /* a literal and an int; an int */
      GF_FORMAT_FITS(key, sizeof key, "ganflow.restart.%d", number);
      GF_FORMAT_FITS(n, sizeof n, "%d", number);
      mlflow_metric m = {"sys/restarts", (double)number, mlflow_now_ms(), number};
      mlflow_kv tags[2] = {{key, ev->text}, {"ganflow.restarts", n}};
      if (mlflow_log_batch(c, s->run_id, &m, 1, NULL, 0, tags, 2, &e) != MLFLOW_OK) {
        launch_say(s, "warning: MLflow: restart %d not logged yet: %s", ev->n, e.message);
        return;
      }
      ev->logged = true;
    }
    if (ev->recovery_s >= 0 && !ev->recovery_logged) {
      if (mlflow_log_metric(c, s->run_id, "sys/restart_recovery_s",
                            ev->recovery_s, mlflow_now_ms(), number, &e) !=
          MLFLOW_OK) {
        launch_say(s, "warning: MLflow: %s", e.message);
        return;
      }
      ev->recovery_logged = true;
    }
  }
}

void launch_set_run_id(launch_sup *s, const char *id) {
  if (!id[0] || strcmp(s->run_id, id) == 0) return;
  launch_keep_run_id(s, id);
  launch_flush_events(s);
}

/* The job's end in MLflow when the ranks could not set it themselves. */
void launch_end_run(launch_sup *s, mlflow_run_status st, const char *reason) {
  launch_find_run_id(s);
  if (!s->run_id[0]) return;
  mlflow_client *c = launch_client(s);
  if (!c) return;
  launch_flush_events(s);
  mlflow_error e;
  memset(&e, 0, sizeof e);
  if ((reason && mlflow_set_tag(c, s->run_id, "ganflow.launch.failure", reason,
                                &e) != MLFLOW_OK) ||
      mlflow_run_update(c, s->run_id, st, mlflow_now_ms(), &e) != MLFLOW_OK)
    launch_say(s, "warning: MLflow: cannot mark run %s %s: %s", s->run_id,
        mlflow_run_status_name(st), e.message);
}


restart_event *launch_add_event(launch_sup *s, int64_t from) {
  if (s->n_ev == LAUNCH_MAX_EVENTS) { /* keep the newest */
    memmove(s->ev, s->ev + 1, sizeof s->ev[0] * (LAUNCH_MAX_EVENTS - 1));
    s->n_ev--;
  }
  restart_event *ev = &s->ev[s->n_ev++];
  memset(ev, 0, sizeof *ev);
  ev->n = s->restarts;
  ev->step = from;
  ev->recovery_s = -1;
  return ev;
}

void launch_add_capacity_event(launch_sup *s, const char *text) {
  if (s->n_cev == LAUNCH_MAX_EVENTS) { /* keep the newest */
    memmove(s->cev, s->cev + 1, sizeof s->cev[0] * (LAUNCH_MAX_EVENTS - 1));
    s->n_cev--;
  }
  capacity_event *ev = &s->cev[s->n_cev++];
  memset(ev, 0, sizeof *ev);
  ev->n = ++s->n_cap;
  /* cut to the tag's room: the text is a summary */
  size_t n = strnlen(text, sizeof ev->text - 1);
  memcpy(ev->text, text, n);
  ev->text[n] = '\0';
}

void launch_add_world_point(launch_sup *s, int64_t step, int world) {
  if (world == s->ws_last) return;
  /* an attempt that began from the same checkpoint as the one before it
   * (which failed before writing another): a step later, so that each
   * step holds one point */
  if (s->ws_last && step <= s->ws_last_step) step = s->ws_last_step + 1;
  s->ws_last = world;
  s->ws_last_step = step;
  if (s->n_ws == LAUNCH_MAX_EVENTS) {
    memmove(s->ws, s->ws + 1, sizeof s->ws[0] * (LAUNCH_MAX_EVENTS - 1));
    s->n_ws--;
  }
  world_point *w = &s->ws[s->n_ws++];
  w->step = step;
  w->world = world;
  w->logged = false;
}

void launch_sup_init(launch_sup *s, const gf_launch_opts *o, FILE *log) {
  s->o = o;
  s->log = log;
  s->base = -1;
  s->cap_base = -1;
  s->cap_deadline = -1;
  sigemptyset(&s->sigs);
  sigaddset(&s->sigs, SIGTERM);
  sigaddset(&s->sigs, SIGINT);
  sigaddset(&s->sigs, SIGHUP);
  sigaddset(&s->sigs, SIGCHLD);
  sigprocmask(SIG_BLOCK, &s->sigs, NULL);
}
