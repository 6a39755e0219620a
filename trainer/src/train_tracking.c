/* train_tracking.c - the MLflow side of one ganflow-train process
 * (DESIGN §4.4): create or resume the run, params and tags, the metric
 * logger with its on-disk outbox, exactly-once metrics across resumes,
 * artifact uploads (through train_upload.c), and at the end the MLflow
 * model directory and its registered version.
 *
 * Exactly-once, the invariant: every (key, step) the server holds was
 * logged by an earlier process of this run, and that process logged the
 * steps of a key in increasing order. On resume the previous process's
 * outbox is replayed first, so the server then holds everything that
 * process ever handed to its logger and did not lose in memory; runs/get
 * gives the latest step of every key, and a point at or below it is not
 * logged again. Steps above it are recomputed bit-identically by the
 * resumed loop (DESIGN §4.1) and logged once.
 *
 * The resource monitor's figures (system/..., perf/rss_megabytes and
 * perf/peak_rss_megabytes, and each rank's perf/rank_<r>/... and
 * system/rank_<r>/... in a multi-rank job) are numbered by sample, not by
 * training step: nothing recomputes them on resume, and each process
 * numbers its own samples from the step gf_tracker_monitor_first_step
 * gives. That step must be one no earlier process of the run can have sent
 * a point at, and the server's newest monitor step alone does not make
 * sure of it: a log-batch in flight when the previous process was killed
 * can land after this process read the run, and its samples would then
 * share steps with ours. So a monitor step is reserved on disk before the
 * first point at it goes to the logger: <checkpoint-dir>/monitor_step holds
 * "<run id> <first step not reserved>", atomically replaced, and a resumed
 * process starts at the larger of that and one past the server's newest
 * monitor step (the latter alone when the file is missing or names another
 * run, as after a resume through MLFLOW_RUN_ID from another directory).
 * Steps of samples a killed process never sent (its queue) stay unused:
 * a gap in the sample numbering, never a repeat. The system/ keys are
 * held to the same rule (MLflow's own monitor, resuming a run, starts at
 * one past the newest step, as the fallback here does).
 *
 * Not here: when to log what (train_loop.c). */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/atomic_file.h"
#include "gf/fs.h"
#include "gf/gan.h"
#include "gf/mlflow_status.h"
#include "gf/mlmodel.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"

#ifndef GF_GIT_COMMIT
#define GF_GIT_COMMIT ""
#endif

/* Latest step the server held for a key when this process started. */
typedef struct seen_metric {
  char *key; /* malloc'd */
  int64_t step;
} seen_metric;

struct gf_tracker {
  gf_train_config cfg;      /* copy */
  mlflow_config mcfg;       /* owned (strings) */
  mlflow_client *client;    /* owned; the training thread's connection */
  char run_id[64];
  char *artifact_uri;       /* owned; the run's artifact root */
  mlflow_logger *logger;    /* owned */
  gf_uploader *uploader;    /* owned */
  seen_metric *seen;        /* owned; sorted by key; read-only after start,
                               so the sampler thread may read it */
  size_t n_seen;
  int64_t monitor_first;    /* first monitor step of this process: no
                               earlier process of the run used it or any
                               later one (the header) */
  pthread_mutex_t monitor_mu; /* guards monitor_next */
  bool monitor_mu_ok;       /* monitor_mu initialized */
  int64_t monitor_next;     /* monitor steps below it are reserved in
                               monitor_file; >= monitor_first */
  char monitor_file[GF_PATH_MAX]; /* <checkpoint-dir>/monitor_step */
  bool model_logged;        /* the run already has ganflow.model_version */
  char model_version[32];   /* the version this process registered; "" */
  const char *const *class_names; /* borrowed (gf_tracker_set_class_names):
                               n_class_names names for a conditional
                               model's directory; NULL: none */
  int n_class_names;
  char outbox[GF_PATH_MAX];
  atomic_uint_fast64_t dropped; /* points the logger refused */
  atomic_uint_fast64_t skipped; /* points skipped as already on the server */
};

static int seen_cmp(const void *a, const void *b) {
  return strcmp(((const seen_metric *)a)->key, ((const seen_metric *)b)->key);
}

static const seen_metric *seen_find(const gf_tracker *t, const char *key) {
  seen_metric probe = {(char *)key, 0};
  return t->n_seen ? bsearch(&probe, t->seen, t->n_seen, sizeof *t->seen,
                             seen_cmp)
                   : NULL;
}

/* The keys the resource monitor emits with its own sample numbering:
 * system/... and its perf/ figures, "perf/rss_megabytes" or a rank's
 * "perf/rank_<r>/rss_megabytes" (gf_relay_node_name). */
static bool is_monitor_key(const char *key) {
  static const char *const perf[] = {"rss_megabytes", "peak_rss_megabytes"};
  if (strncmp(key, "system/", 7) == 0) return true;
  if (strncmp(key, "perf/", 5) != 0) return false;
  const char *leaf = key + 5;
  if (strncmp(leaf, "rank_", 5) == 0) {
    const char *slash = strchr(leaf, '/');
    if (!slash) return false;
    leaf = slash + 1;
  }
  for (size_t i = 0; i < sizeof perf / sizeof *perf; i++)
    if (strcmp(leaf, perf[i]) == 0) return true;
  return false;
}

/* The first monitor step no process of this run has reserved, from
 * monitor_file; -1 when the file is missing, unreadable or another run's. */
static int64_t monitor_reserved(const gf_tracker *t) {
  FILE *f = fopen(t->monitor_file, "r");
  if (!f) return -1;
  char id[64] = "";
  long long next = -1;
  int n = fscanf(f, "%63s %lld", id, &next);
  fclose(f);
  return n == 2 && next >= 0 && strcmp(id, t->run_id) == 0 ? (int64_t)next
                                                           : -1;
}

/* Makes sure that `step` (>= monitor_first) is reserved in monitor_file
 * before a point at it may leave: false when it cannot be (the point must
 * then not be logged). One atomic write per new step, none for the other
 * figures of a sample. Thread-safe. */
static bool monitor_reserve(gf_tracker *t, int64_t step) {
  bool ok = true;
  pthread_mutex_lock(&t->monitor_mu);
  if (step >= t->monitor_next) {
    char line[96];
    int n = snprintf(line, sizeof line, "%s %lld\n", t->run_id,
                     (long long)step + 1);
    gf_err e;
    ok = gf_atomic_write_file(t->monitor_file, line, (size_t)n, &e) == GF_OK;
    if (ok) t->monitor_next = step + 1;
  }
  pthread_mutex_unlock(&t->monitor_mu);
  return ok;
}

static gf_status mlfail(gf_err *err, const char *what, const mlflow_error *e) {
  return gf_fail_mlflow(err, e, "MLflow: %s", what);
}

static gf_status write_run_id(const gf_tracker *t, gf_err *err) {
  char path[GF_PATH_MAX], line[sizeof t->run_id + 1];
  GF_TRY(gf_path_join(path, sizeof path, t->cfg.checkpoint_dir, "run_id", err));
  GF_TRY(gf_format(line, sizeof line, err, "run id", "%s\n", t->run_id));
  return gf_atomic_write_file(path, line, strlen(line), err);
}

/* Reads the run's latest metric steps into t->seen and the monitor's first
 * step; logs the params the run lacks; warns about changed ones. */
static gf_status absorb_run(gf_tracker *t, const gf_log *log, gf_err *err) {
  mlflow_run run;
  mlflow_error e;
  memset(&run, 0, sizeof run);
  if (mlflow_run_get(t->client, t->run_id, &run, &e) != MLFLOW_OK)
    return mlfail(err, "runs/get", &e);
  gf_status st = GF_OK;
  t->seen = calloc(run.n_metrics ? run.n_metrics : 1, sizeof *t->seen);
  if (!t->seen) {
    mlflow_run_free(&run);
    return gf_fail(err, GF_ENOMEM, "out of memory");
  }
  int64_t mon = -1;
  for (size_t i = 0; i < run.n_metrics; i++) {
    t->seen[i].key = strdup(run.metrics[i].key);
    t->seen[i].step = run.metrics[i].step;
    t->n_seen++;
    if (!t->seen[i].key) {
      st = gf_fail(err, GF_ENOMEM, "out of memory");
      break;
    }
    if (is_monitor_key(run.metrics[i].key) && run.metrics[i].step > mon)
      mon = run.metrics[i].step;
  }
  qsort(t->seen, t->n_seen, sizeof *t->seen, seen_cmp);
  t->monitor_first = mon + 1;
  int64_t reserved = monitor_reserved(t);
  if (reserved > t->monitor_first) t->monitor_first = reserved;
  t->model_logged = mlflow_run_tag(&run, "ganflow.model_version") != NULL;

  gf_train_param params[GF_TRAIN_MAX_PARAMS];
  mlflow_kv kv[GF_TRAIN_MAX_PARAMS];
  size_t np = gf_train_config_params(&t->cfg, params, GF_TRAIN_MAX_PARAMS);
  size_t nk = 0;
  for (size_t i = 0; i < np && st == GF_OK; i++) {
    const char *old = mlflow_run_param(&run, params[i].key);
    if (!old) {
      kv[nk++] = (mlflow_kv){params[i].key, params[i].value};
    } else if (strcmp(old, params[i].value) != 0 && log) {
      gf_logf(log, GF_LOG_INFO,
              "ganflow-train: param %s was %s in this run, now %s (MLflow "
              "params are write-once: the run keeps %s)",
              params[i].key, old, params[i].value, old);
    }
  }
  if (st == GF_OK && nk &&
      mlflow_log_batch(t->client, t->run_id, NULL, 0, kv, nk, NULL, 0, &e) !=
          MLFLOW_OK)
    st = mlfail(err, "log params", &e);
  mlflow_run_free(&run);
  return st;
}

static gf_status resume_run(gf_tracker *t, const gf_log *log, gf_err *err) {
  mlflow_error e;
  size_t n_batches = 0;
  if (mlflow_outbox_replay(t->client, t->outbox, &n_batches, &e) != MLFLOW_OK)
    return mlfail(err, "replaying the outbox of the previous process", &e);
  if (n_batches && log)
    gf_logf(log, GF_LOG_INFO,
            "ganflow-train: replayed %zu metric batches from %s", n_batches,
            t->outbox);
  mlflow_run_info info;
  memset(&info, 0, sizeof info);
  if (mlflow_run_resume(t->client, t->run_id, &info, &e) != MLFLOW_OK)
    return mlfail(err, "resuming the run", &e);
  t->artifact_uri = strdup(info.artifact_uri ? info.artifact_uri : "");
  mlflow_run_info_free(&info);
  if (!t->artifact_uri) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status st = absorb_run(t, log, err);
  if (st != GF_OK) return st;
  return write_run_id(t, err);
}

static gf_status create_run(gf_tracker *t, const gf_tracker_start_info *si,
                            const gf_log *log, gf_err *err) {
  mlflow_error e;
  mlflow_experiment exp;
  memset(&exp, 0, sizeof exp);
  if (mlflow_experiment_get_or_create(t->client, t->cfg.experiment, &exp,
                                      &e) != MLFLOW_OK)
    return mlfail(err, "experiment", &e);
  /* Without this tag MLflow 3's UI opens the experiment in its GenAI view;
   * a failure only costs the UI's default view, so it is not fatal. */
  if (mlflow_experiment_set_tag(t->client, exp.experiment_id,
                                "mlflow.experimentKind",
                                "custom_model_development", &e) != MLFLOW_OK)
    gf_logf(log, GF_LOG_WARN,
            "ganflow-train: warning: cannot tag the experiment: %s", e.message);
  char host[256] = "", world[16];
  gethostname(host, sizeof host - 1);
  GF_FORMAT_FITS(world, sizeof world, "%d", t->cfg.world_size);
  const char *user = getenv("USER");
  mlflow_kv tags[] = {
    {"ganflow.version", GF_TRAIN_VERSION},
    {"ganflow.git_commit", GF_GIT_COMMIT},
    {"mlflow.source.name", "ganflow-train"},
    {"mlflow.source.type", "LOCAL"},
    {"mlflow.user", user && *user ? user : "unknown"},
    {"ganflow.host", host},
    {"ganflow.device", si->device_desc},
    {"ganflow.world_size", world},
    {"ganflow.hosts", si->hosts && *si->hosts ? si->hosts : host},
  };
  size_t n_tags = sizeof tags / sizeof *tags;
  if (!GF_GIT_COMMIT[0]) { /* unknown commit: leave the tag out */
    tags[1] = tags[n_tags - 1];
    n_tags--;
  }
  mlflow_run_info info;
  memset(&info, 0, sizeof info);
  mlflow_status ms = mlflow_run_create(t->client, exp.experiment_id,
                                       t->cfg.run_name[0] ? t->cfg.run_name
                                                          : NULL,
                                       mlflow_now_ms(), tags, n_tags, &info,
                                       &e);
  mlflow_experiment_free(&exp);
  if (ms != MLFLOW_OK) return mlfail(err, "runs/create", &e);
  gf_status rs = gf_format(t->run_id, sizeof t->run_id, err,
                           "run id from the MLflow server", "%s", info.run_id);
  if (rs != GF_OK) {
    mlflow_run_info_free(&info);
    return rs;
  }
  t->artifact_uri = strdup(info.artifact_uri ? info.artifact_uri : "");
  mlflow_run_info_free(&info);
  if (!t->artifact_uri) return gf_fail(err, GF_ENOMEM, "out of memory");
  /* Before anything else can fail: a kill from here on resumes this run. */
  gf_status st = write_run_id(t, err);
  if (st != GF_OK) return st;

  gf_train_param params[GF_TRAIN_MAX_PARAMS];
  mlflow_kv kv[GF_TRAIN_MAX_PARAMS];
  size_t np = gf_train_config_params(&t->cfg, params, GF_TRAIN_MAX_PARAMS);
  for (size_t i = 0; i < np; i++)
    kv[i] = (mlflow_kv){params[i].key, params[i].value};
  if (mlflow_log_batch(t->client, t->run_id, NULL, 0, kv, np, NULL, 0, &e) !=
      MLFLOW_OK)
    return mlfail(err, "log params", &e);
  t->monitor_first = 0;
  return GF_OK;
}

static gf_status tracker_connect(gf_tracker *t, const gf_tracker_start_info *si,
                                 const gf_log *log, gf_err *err) {
  mlflow_error e;
  if (mlflow_config_from_env(&t->mcfg, &e) != MLFLOW_OK)
    return gf_fail_mlflow(err, &e, "MLflow configuration");
  if (mlflow_client_new(&t->client, &t->mcfg, &e) != MLFLOW_OK)
    return mlfail(err, "client", &e);
  const char *run_id = si->run_id;
  const char *env_id = getenv("MLFLOW_RUN_ID");
  if (env_id && !*env_id) env_id = NULL;
  if (run_id && env_id && strcmp(run_id, env_id) != 0)
    return gf_fail(err, GF_EINVAL, "MLFLOW_RUN_ID=%s but the checkpoint dir "
                   "belongs to run %s: unset it or use another "
                   "--checkpoint-dir", env_id, run_id);
  if (!run_id) run_id = env_id;
  gf_status st;
  if (run_id) {
    GF_TRY(gf_format(t->run_id, sizeof t->run_id, err, "run id", "%s", run_id));
    st = resume_run(t, log, err);
  } else {
    st = create_run(t, si, log, err);
  }
  if (st != GF_OK) return st;

  mlflow_logger_options lo;
  mlflow_logger_options_init(&lo);
  lo.outbox_path = t->outbox;
  if (mlflow_logger_open(&t->logger, &t->mcfg, t->run_id, &lo, &e) !=
      MLFLOW_OK)
    return mlfail(err, "metric logger", &e);
  t->monitor_next = t->monitor_first;
  return gf_uploader_start(&t->uploader, &t->mcfg, t->artifact_uri, log, err);
}

static void tracker_free(gf_tracker *t) {
  if (!t) return;
  gf_uploader_free(t->uploader);
  if (t->logger) mlflow_logger_close(t->logger, 10, NULL, NULL);
  mlflow_client_free(t->client);
  mlflow_config_free(&t->mcfg);
  if (t->monitor_mu_ok) pthread_mutex_destroy(&t->monitor_mu);
  free(t->artifact_uri);
  for (size_t i = 0; i < t->n_seen; i++) free(t->seen[i].key);
  free(t->seen);
  free(t);
}

gf_status gf_tracker_start(gf_tracker **out, const gf_tracker_start_info *si,
                           const gf_log *log, gf_err *err) {
  *out = NULL;
  gf_tracker *t = calloc(1, sizeof *t);
  if (!t) return gf_fail(err, GF_ENOMEM, "out of memory");
  t->cfg = *si->cfg;
  atomic_init(&t->dropped, 0);
  atomic_init(&t->skipped, 0);
  gf_status js = gf_path_join(t->outbox, sizeof t->outbox,
                              si->cfg->checkpoint_dir, "mlflow.outbox", err);
  if (js == GF_OK)
    js = gf_path_join(t->monitor_file, sizeof t->monitor_file,
                      si->cfg->checkpoint_dir, "monitor_step", err);
  if (js != GF_OK) {
    free(t);
    return js;
  }
  if (pthread_mutex_init(&t->monitor_mu, NULL) != 0) {
    free(t);
    return gf_fail(err, GF_ENOMEM, "cannot make a mutex");
  }
  t->monitor_mu_ok = true;
  gf_status st = tracker_connect(t, si, log, err);
  if (st != GF_OK) {
    /* A run that exists but could not be set up properly is marked FAILED
     * so the UI does not show it RUNNING forever. */
    if (t->run_id[0] && t->client)
      mlflow_run_update(t->client, t->run_id, MLFLOW_RUN_FAILED,
                        mlflow_now_ms(), NULL);
    tracker_free(t);
    return st;
  }
  *out = t;
  return GF_OK;
}

const char *gf_tracker_run_id(const gf_tracker *t) { return t->run_id; }

int64_t gf_tracker_monitor_first_step(const gf_tracker *t) {
  return t->monitor_first;
}

void gf_tracker_metric(gf_tracker *t, const char *key, double value,
                       int64_t timestamp_ms, int64_t step) {
  const seen_metric *s = seen_find(t, key);
  bool monitor = is_monitor_key(key);
  if ((s && step <= s->step) || (monitor && step < t->monitor_first)) {
    atomic_fetch_add(&t->skipped, 1);
    return;
  }
  if (monitor && !monitor_reserve(t, step)) {
    atomic_fetch_add(&t->dropped, 1);
    return;
  }
  if (mlflow_logger_log_metric(t->logger, key, value, timestamp_ms, step) !=
      MLFLOW_OK)
    atomic_fetch_add(&t->dropped, 1);
}

gf_status gf_tracker_flush(gf_tracker *t, double timeout_s, gf_err *err) {
  mlflow_error e;
  if (mlflow_logger_flush(t->logger, timeout_s, &e) != MLFLOW_OK)
    return mlfail(err, "flushing metrics", &e);
  return GF_OK;
}

void gf_tracker_upload(gf_tracker *t, const char *local_path, const char *dest,
                       bool take_ownership) {
  gf_uploader_push(t->uploader, local_path, dest, take_ownership);
}

void gf_tracker_uploads_wait(gf_tracker *t) { gf_uploader_wait(t->uploader); }

/* Removes the model directory we wrote (its files and the code/ folder of
 * the python_function flavor); best effort. */
static void rm_tree(const char *dir) { gf_rm_tree(dir); }

/* The run's final SWD, FID and KID points linked to the logged model: the
 * same (key, value, timestamp, step) as the run holds, so its history keeps
 * one point each (the server links it to the model). */
static void link_final_metrics(gf_tracker *t, const char *model_id,
                               const gf_log *log) {
  mlflow_run run;
  mlflow_error e;
  if (mlflow_run_get(t->client, t->run_id, &run, &e) != MLFLOW_OK) {
    if (log)
      gf_logf(log, GF_LOG_WARN,
              "ganflow-train: warning: final metrics not linked to the "
              "logged model: %s",
              e.message);
    return;
  }
  mlflow_metric pick[64];
  size_t n = 0;
  for (size_t i = 0; i < run.n_metrics && n < 64; i++)
    if (strncmp(run.metrics[i].key, "swd/", 4) == 0 ||
        strcmp(run.metrics[i].key, "fid") == 0 ||
        strcmp(run.metrics[i].key, "kid") == 0 ||
        strcmp(run.metrics[i].key, "kid_std") == 0)
      pick[n++] = run.metrics[i];
  if (n && mlflow_log_metrics_for_model(t->client, t->run_id, model_id, pick, n,
                                        &e) != MLFLOW_OK && log)
    gf_logf(log, GF_LOG_WARN,
            "ganflow-train: warning: final metrics not linked to the "
            "logged model: %s",
            e.message);
  mlflow_run_free(&run);
}

/* Writes the model directory into dir for artifact_path (the run's "model"
 * or a logged model's artifact URI). */
static gf_status write_model_dir(gf_tracker *t, const gf_tracker_model *gm,
                                 const char *dir, const char *artifact_path,
                                 gf_err *err) {
  char steps[32];
  GF_FORMAT_FITS(steps, sizeof steps, "%lld", (long long)gm->adam_step_g);
  gf_st_kv meta[] = {{"ganflow.run_id", t->run_id},
                     {"ganflow.adam_step", steps},
                     {"ganflow.generator", gm->generator}};
  mlflow_error e;
  char *mlflow_version = NULL;
  if (mlflow_server_version(t->client, &mlflow_version, &e) != MLFLOW_OK)
    return mlfail(err, "server version", &e);
  /* a conditional model's class names, when they are the GAN's classes */
  const gf_model_config *cfg = gm->cfg;
  const char *const *names =
      cfg->num_classes > 0 && t->n_class_names == cfg->num_classes ? t->class_names
                                                                   : NULL;
  gf_mlmodel_info info = {artifact_path, t->run_id, mlflow_version,
                          GF_TRAIN_VERSION, names};
  gf_status st = gf_mlmodel_write(dir, cfg, gm->tensors, gm->n_tensors, meta,
                                  sizeof meta / sizeof *meta, &info, NULL, err);
  free(mlflow_version);
  return st;
}

/* MLflow 3: the generator as a logged model of the run (the experiment's
 * Models tab), its files at the model's own artifact location, the final
 * SWD linked to it. *lm receives it (caller frees). GF_EUNSUPPORTED when
 * the server predates logged models: nothing was created. */
static gf_status log_logged_model(gf_tracker *t, const gf_tracker_model *gm,
                                  const char *dir, mlflow_logged_model *lm,
                                  const gf_log *log, gf_err *err) {
  mlflow_error e;
  mlflow_run run;
  if (mlflow_run_get(t->client, t->run_id, &run, &e) != MLFLOW_OK)
    return mlfail(err, "runs/get", &e);
  /* Integers only: every buffer holds its largest. */
  char z[16], hw[32], ch[16];
  const gf_model_config *cfg = gm->cfg;
  GF_FORMAT_FITS(z, sizeof z, "%d", cfg->z_dim);
  GF_FORMAT_FITS(hw, sizeof hw, "%dx%d", cfg->image_height,
                 cfg->image_width);
  GF_FORMAT_FITS(ch, sizeof ch, "%d", cfg->image_channels);
  mlflow_kv params[] = {{"architecture", gf_arch_name(cfg->architecture)},
                        {"z_dim", z}, {"image_size", hw}, {"channels", ch}};
  mlflow_kv tags[] = {{"ganflow.version", GF_TRAIN_VERSION}};
  mlflow_status ms = mlflow_logged_model_create(
      t->client, run.info.experiment_id, "generator", t->run_id, "ganflow",
      tags, 1, params, sizeof params / sizeof *params, lm, &e);
  mlflow_run_free(&run);
  if (ms == MLFLOW_E_UNSUPPORTED) {
    if (log)
      gf_logf(log, GF_LOG_INFO,
              "ganflow-train: %s; the model goes to the run's model/ "
              "artifacts",
              e.message);
    return GF_EUNSUPPORTED;
  }
  if (ms != MLFLOW_OK) return mlfail(err, "logged-models/create", &e);
  gf_status st = write_model_dir(t, gm, dir, lm->artifact_uri, err);
  if (st == GF_OK &&
      mlflow_run_log_model_output(t->client, t->run_id, lm->model_id,
                                  gm->adam_step_g, &e) != MLFLOW_OK)
    st = mlfail(err, "runs/outputs", &e);
  if (st == GF_OK && mlflow_artifact_upload_dir(t->client, lm->artifact_uri,
                                                dir, NULL, &e) != MLFLOW_OK)
    st = mlfail(err, "uploading the logged model", &e);
  if (mlflow_logged_model_finalize(t->client, lm->model_id, st == GF_OK, &e) !=
          MLFLOW_OK &&
      st == GF_OK)
    st = mlfail(err, "logged-models/finalize", &e);
  if (st == GF_OK) link_final_metrics(t, lm->model_id, log);
  return st;
}

void gf_tracker_set_class_names(gf_tracker *t, const char *const *names, int n) {
  if (!t) return;
  t->class_names = names && n > 0 ? names : NULL;
  t->n_class_names = names && n > 0 ? n : 0;
}

gf_status gf_tracker_log_model(gf_tracker *t, const gf_gan *gan,
                               const gf_log *log, gf_err *err) {
  /* generator.safetensors: G's tensors under their nn.Module names
   * ("main.0.weight": the state_dict name without "g."). */
  gf_st_tensor_desc desc[GF_NET_MAX_TENSORS];
  size_t n = 0;
  const gf_net *g = gf_gan_generator_const(gan, t->cfg.export_raw);
  for (int i = 0; i < g->n_tensors; i++) {
    const gf_param *p = &g->tensors[i];
    const char *name = strncmp(p->name, "g.", 2) == 0 ? p->name + 2 : p->name;
    desc[n++] = (gf_st_tensor_desc){name, GF_ST_F32, p->value.ndim,
                                    p->value.shape, p->value.data};
  }
  gf_tracker_model gm = {&gan->cfg, desc, n, gan->adam_step_g,
                         g == &gan->g ? "raw" : "ema"};
  return gf_tracker_log_model_tensors(t, &gm, log, err);
}

gf_status gf_tracker_log_model_tensors(gf_tracker *t, const gf_tracker_model *gan,
                                       const gf_log *log, gf_err *err) {
  if (t->model_logged) {
    if (log)
      gf_logf(log, GF_LOG_INFO,
              "ganflow-train: run %s already holds its registered model "
              "(tag ganflow.model_version); not registering again",
              t->run_id);
    return GF_OK;
  }
  char dir[GF_PATH_MAX];
  GF_TRY(
      gf_path_join(dir, sizeof dir, t->cfg.checkpoint_dir, ".model-tmp", err));
  rm_tree(dir);
  mlflow_logged_model lm;
  memset(&lm, 0, sizeof lm);
  mlflow_error e;
  gf_status st = log_logged_model(t, gan, dir, &lm, log, err);
  if (st == GF_EUNSUPPORTED) {
    /* an MLflow 2 server: the model directory as the run's model/ */
    rm_tree(dir);
    st = write_model_dir(t, gan, dir, "model", err);
    if (st == GF_OK && mlflow_artifact_upload_dir(t->client, t->artifact_uri,
                                                  dir, "model", &e) != MLFLOW_OK)
      st = mlfail(err, "uploading model/", &e);
  }
  rm_tree(dir);
  if (st != GF_OK || !t->cfg.register_model[0]) {
    mlflow_logged_model_free(&lm);
    return st;
  }

  const char *name = t->cfg.register_model;
  if (mlflow_registered_model_create(t->client, name, &e) != MLFLOW_OK) {
    mlflow_logged_model_free(&lm);
    return mlfail(err, "registered-models/create", &e);
  }
  mlflow_model_version mv;
  memset(&mv, 0, sizeof mv);
  mlflow_status ms;
  if (lm.model_id) {
    ms = mlflow_model_version_create_from_model(t->client, name, lm.model_id,
                                                t->run_id, &mv, &e);
  } else {
    char *source = gf_path_join_alloc(t->artifact_uri, "model");
    if (!source) return gf_fail(err, GF_ENOMEM, "out of memory");
    ms = mlflow_model_version_create(t->client, name, source, t->run_id, &mv, &e);
    free(source);
  }
  if (ms != MLFLOW_OK) {
    mlflow_logged_model_free(&lm);
    return mlfail(err, "model-versions/create", &e);
  }
  if (mlflow_model_version_wait_ready(t->client, name, mv.version, 300, NULL,
                                      &e) != MLFLOW_OK)
    st = mlfail(err, "waiting for the model version", &e);
  if (st == GF_OK && t->cfg.alias[0] &&
      mlflow_alias_set(t->client, name, t->cfg.alias, mv.version, &e) !=
          MLFLOW_OK)
    st = mlfail(err, "setting the alias", &e);
  if (st == GF_OK && lm.model_id) {
    /* the logged model's page links to its registry versions */
    if (mlflow_logged_model_link_version(t->client, lm.model_id, name,
                                         mv.version, &e) != MLFLOW_OK)
      st = mlfail(err, "tagging the logged model", &e);
  }
  if (st == GF_OK) {
    char tag[GF_TRAIN_NAME_MAX + 32];
    st = gf_format(tag, sizeof tag, err,
                   "registered version from the MLflow "
                   "server",
                   "%s/%s", name, mv.version);
    if (st == GF_OK &&
        mlflow_set_tag(t->client, t->run_id, "ganflow.model_version", tag,
                       &e) != MLFLOW_OK)
      st = mlfail(err, "tagging the run", &e);
    else if (log)
      gf_logf(log, GF_LOG_INFO,
              "ganflow-train: registered models:/%s/%s%s%s%s%s", name,
              mv.version, t->cfg.alias[0] ? " as @" : "", t->cfg.alias,
              lm.model_id ? " from logged model " : "",
              lm.model_id ? lm.model_id : "");
  }
  if (st == GF_OK)
    st = gf_format(t->model_version, sizeof t->model_version, err,
                   "registered version from the MLflow server", "%s",
                   mv.version);
  mlflow_model_version_free(&mv);
  mlflow_logged_model_free(&lm);
  return st;
}

int gf_tracker_finish(gf_tracker *t, int run_status, const gf_log *log) {
  if (!t) return 0;
  int rc = 0;
  gf_uploader_wait(t->uploader);
  int up_ok = 0, up_failed = 0;
  gf_uploader_counts(t->uploader, &up_ok, &up_failed);
  gf_uploader_free(t->uploader);
  t->uploader = NULL;

  mlflow_error e;
  mlflow_logger_stats ls;
  memset(&ls, 0, sizeof ls);
  mlflow_status ms = mlflow_logger_close(t->logger, 60, &ls, &e);
  t->logger = NULL;
  if (log) {
    if (ms != MLFLOW_OK)
      gf_logf(log, GF_LOG_WARN,
              "ganflow-train: %llu metric batches are still in the outbox "
              "%s (%s); nothing is lost: they are sent when this command runs "
              "again, or now with `ganflow sync %s`",
              (unsigned long long)ls.outbox_pending, t->outbox, e.message,
              t->cfg.checkpoint_dir);
    uint64_t dropped = atomic_load(&t->dropped);
    if (dropped)
      gf_logf(log, GF_LOG_WARN,
              "ganflow-train: %llu metric points could not be queued "
              "(logger full, invalid key, or a system-metric step that could "
              "not be reserved in %s)",
              (unsigned long long)dropped, t->monitor_file);
    if (up_failed)
      gf_logf(log, GF_LOG_WARN,
              "ganflow-train: %d of %d artifact uploads failed", up_failed,
              up_ok + up_failed);
  }
  if (run_status) {
    if (mlflow_run_update(t->client, t->run_id,
                          (mlflow_run_status)run_status, mlflow_now_ms(),
                          &e) != MLFLOW_OK) {
      if (log)
        gf_logf(log, GF_LOG_WARN,
                "ganflow-train: could not set run %s to %s: %s", t->run_id,
                mlflow_run_status_name((mlflow_run_status)run_status),
                e.message);
      rc = 1;
    }
  }
  tracker_free(t);
  return rc;
}

const char *gf_tracker_model_version(const gf_tracker *t) {
  return t ? t->model_version : "";
}

mlflow_client *gf_tracker_client(gf_tracker *t) { return t ? t->client : NULL; }

void gf_tracker_set_tag(gf_tracker *t, const char *key, const char *value) {
  if (!t) return;
  mlflow_error e;
  if (mlflow_logger_set_tag(t->logger, key, value, &e) != MLFLOW_OK)
    atomic_fetch_add(&t->dropped, 1);
}
