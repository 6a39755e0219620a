/* serve_test_util.h - what the ganflow-serve tests share: an HTTP client
 * (libcurl, one easy handle per call, timeouts), the ganflow-serve binary
 * started on a free port and stopped, model versions registered in the
 * fixture's MLflow server (synthetic generators from the model library,
 * optionally with corrupted weights), and PNG decoding with libpng. Test
 * code: failures that make the rest meaningless exit(1). */
#ifndef GF_SERVE_TEST_UTIL_H
#define GF_SERVE_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gf/model_config.h"
#include "mlflow/mlflow.h"

typedef struct st_http {
  long status;            /* HTTP status; 0 when no answer came */
  char *body;             /* malloc'd, NUL-terminated (len bytes before it) */
  size_t len;
  char version[32];       /* X-Model-Version ("" when absent) */
  char ctype[96];         /* Content-Type */
  char retry_after[16];   /* Retry-After */
  char allow[64];         /* Allow */
  char ihcl[24];          /* Inference-Header-Content-Length */
} st_http;

/* One request; body may be NULL. headers: NULL-terminated "K: V" list or
 * NULL. Returns 0 when an answer came (any status). */
int st_request(const char *method, const char *url, const char *const *headers,
            const void *body, size_t len, double timeout_s, st_http *out);
void st_http_free(st_http *h);
/* GET with no headers, 30 s timeout. */
int st_get(const char *url, st_http *out);

typedef struct st_server {
  pid_t pid;
  int port;
  char base[64];   /* "http://127.0.0.1:PORT" */
  char log[600];   /* its stderr */
} st_server;

/* Starts GF_SERVE_BIN with MLFLOW_TRACKING_URI=mlflow_uri, --listen
 * 127.0.0.1:0, --port-file and --cache-dir under dir, plus extra (NULL-
 * terminated); waits for the port and, when wait_ready, for
 * /v2/health/ready 200 (60 s). Exits 1 on failure (log printed). */
void st_server_start(st_server *s, const char *dir, const char *mlflow_uri,
                     const char *const *extra, int wait_ready);
/* 1 while the process runs. */
int st_server_alive(st_server *s);
/* SIGTERM and wait (10 s, then SIGKILL); returns its exit status or
 * 128 + signal. */
int st_server_stop(st_server *s);
void st_print_log(const char *path);

/* Registers a version of `name` holding a generator built by the model
 * library (cfg = mlp default, parameters from init_seed); with corrupt the
 * generator.safetensors bytes are damaged after the MLmodel digests were
 * written. Uploads under a new run of experiment "serve-tests". The
 * version string goes to version (32 bytes). Exits 1 on failure. */
void st_register_synthetic(mlflow_client *c, const char *name,
                           uint64_t init_seed, int corrupt, const char *dir,
                           char *version);
/* The same with configuration cfg (its architecture and image size). */
void st_register_synthetic_cfg(mlflow_client *c, const char *name,
                               const gf_model_config *cfg, uint64_t init_seed,
                               int corrupt, const char *dir, char *version);
/* The same with class names (cfg->num_classes of them, label k's at [k])
 * in the model directory. */
void st_register_synthetic_names(mlflow_client *c, const char *name,
                                 const gf_model_config *cfg,
                                 uint64_t init_seed,
                                 const char *const *class_names,
                                 const char *dir, char *version);
/* The same with the default configuration of arch (mlp, or dcgan 64x64x3). */
void st_register_synthetic_arch(mlflow_client *c, const char *name,
                                gf_arch arch, uint64_t init_seed, int corrupt,
                                const char *dir, char *version);

/* A whole file (NUL appended, not counted in *len), malloc'd; NULL when it
 * cannot be read. */
char *st_slurp(const char *path, size_t *len);

/* Decodes a PNG; *pix is malloc'd (w * h * c bytes, c 1 or 3 or 4). 0 on
 * success. */
int st_png_decode(const void *data, size_t len, int *w, int *h, int *c,
                  uint8_t **pix);

/* A metric's value from Prometheus text ("name{labels}" as written, or a
 * bare name); -1 when absent. */
double st_metric(const char *text, const char *series);
/* The same series read from the running server's /metrics; -1 when absent
 * or when /metrics does not answer 200. */
double st_server_metric(const st_server *s, const char *series);

#endif
