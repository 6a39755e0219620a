/* serve_test_util.c - see serve_test_util.h. */
#define _GNU_SOURCE
#include "serve_test_util.h"

#include <curl/curl.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/kernels.h"
#include "gf/mlmodel.h"
#include "gf/net.h"
#include "model_dir_util.h"

static void die(const char *what) {
  fprintf(stderr, "serve test setup: %s\n", what);
  exit(1);
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg) {
  st_http *h = arg;
  size_t k = sz * n;
  char *b = realloc(h->body, h->len + k + 1);
  if (!b) return 0;
  memcpy(b + h->len, p, k);
  h->body = b;
  h->len += k;
  b[h->len] = '\0';
  return k;
}

static void copy_header(const char *line, size_t n, const char *name,
                        char *dst, size_t cap) {
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0) return;
  const char *v = line + k;
  size_t m = n - k;
  while (m && (*v == ' ')) v++, m--;
  while (m && (v[m - 1] == '\r' || v[m - 1] == '\n' || v[m - 1] == ' ')) m--;
  if (m >= cap) m = cap - 1;
  memcpy(dst, v, m);
  dst[m] = '\0';
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg) {
  st_http *h = arg;
  size_t k = sz * n;
  copy_header(p, k, "X-Model-Version:", h->version, sizeof h->version);
  copy_header(p, k, "Content-Type:", h->ctype, sizeof h->ctype);
  copy_header(p, k, "Retry-After:", h->retry_after, sizeof h->retry_after);
  copy_header(p, k, "Allow:", h->allow, sizeof h->allow);
  copy_header(p, k, "Inference-Header-Content-Length:", h->ihcl,
              sizeof h->ihcl);
  return k;
}

int st_request(const char *method, const char *url, const char *const *headers,
            const void *body, size_t len, double timeout_s, st_http *out) {
  memset(out, 0, sizeof *out);
  CURL *c = curl_easy_init();
  if (!c) return -1;
  struct curl_slist *hl = NULL;
  for (int i = 0; headers && headers[i]; i++)
    hl = curl_slist_append(hl, headers[i]);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (strcmp(method, "HEAD") == 0) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  if (!out->body) out->body = calloc(1, 1);
  return rc == CURLE_OK ? 0 : -1;
}

void st_http_free(st_http *h) {
  if (!h) return;
  free(h->body);
  memset(h, 0, sizeof *h);
}

int st_get(const char *url, st_http *out) {
  return st_request("GET", url, NULL, NULL, 0, 30, out);
}

void st_print_log(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[1024];
  fprintf(stderr, "---- %s ----\n", path);
  while (fgets(line, sizeof line, f)) fputs(line, stderr);
  fprintf(stderr, "----\n");
  fclose(f);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void st_server_start(st_server *s, const char *dir, const char *mlflow_uri,
                     const char *const *extra, int wait_ready) {
  memset(s, 0, sizeof *s);
  char port_file[600], cache[600];
  snprintf(port_file, sizeof port_file, "%s/port", dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(s->log, sizeof s->log, "%s/serve.log", dir);
  unlink(port_file);
  const char *argv[64];
  int n = 0;
  argv[n++] = GF_SERVE_BIN;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  argv[n++] = "--port-file";
  argv[n++] = port_file;
  argv[n++] = "--cache-dir";
  argv[n++] = cache;
  for (int i = 0; extra && extra[i] && n < 62; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  s->pid = fork();
  if (s->pid < 0) die("fork");
  if (s->pid == 0) {
    FILE *f = freopen(s->log, "w", stderr);
    if (!f) _exit(126);
    setenv("MLFLOW_TRACKING_URI", mlflow_uri, 1);
    setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2", 1);
    execv(GF_SERVE_BIN, (char *const *)argv);
    _exit(127);
  }
  double t0 = now_s();
  while (now_s() - t0 < 60) {
    FILE *f = fopen(port_file, "r");
    if (f) {
      int ok = fscanf(f, "%d", &s->port) == 1;
      fclose(f);
      if (ok && s->port > 0) break;
    }
    if (!st_server_alive(s)) break;
    usleep(20000);
  }
  if (s->port <= 0) {
    st_print_log(s->log);
    die("ganflow-serve did not start");
  }
  snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
  if (!wait_ready) return;
  char url[128];
  snprintf(url, sizeof url, "%s/v2/health/ready", s->base);
  while (now_s() - t0 < 60) {
    st_http h;
    int ok = st_get(url, &h) == 0 && h.status == 200;
    st_http_free(&h);
    if (ok) return;
    usleep(50000);
  }
  st_print_log(s->log);
  die("ganflow-serve never became ready");
}

int st_server_alive(st_server *s) {
  if (s->pid <= 0) return 0;
  int status;
  return waitpid(s->pid, &status, WNOHANG) == 0;
}

int st_server_stop(st_server *s) {
  if (s->pid <= 0) return -1;
  kill(s->pid, SIGTERM);
  int status = 0;
  double t0 = now_s();
  for (;;) {
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == s->pid) break;
    if (r < 0) return -1;
    if (now_s() - t0 > 10) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, &status, 0);
      break;
    }
    usleep(20000);
  }
  s->pid = 0;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}


void st_register_synthetic(mlflow_client *c, const char *name,
                           uint64_t init_seed, int corrupt, const char *dir,
                           char *version) {
  st_register_synthetic_arch(c, name, GF_ARCH_MLP, init_seed, corrupt, dir,
                             version);
}

void st_register_synthetic_arch(mlflow_client *c, const char *name,
                                gf_arch arch, uint64_t init_seed, int corrupt,
                                const char *dir, char *version) {
  gf_model_config cfg;
  gf_model_config_default(&cfg, arch);
  st_register_synthetic_cfg(c, name, &cfg, init_seed, corrupt, dir, version);
}

static void register_synthetic(mlflow_client *c, const char *name,
                               const gf_model_config *cfg, uint64_t init_seed,
                               int corrupt, const char *const *class_names,
                               const char *dir, char *version);

void st_register_synthetic_cfg(mlflow_client *c, const char *name,
                               const gf_model_config *cfg, uint64_t init_seed,
                               int corrupt, const char *dir, char *version) {
  register_synthetic(c, name, cfg, init_seed, corrupt, NULL, dir, version);
}

void st_register_synthetic_names(mlflow_client *c, const char *name,
                                 const gf_model_config *cfg,
                                 uint64_t init_seed,
                                 const char *const *class_names,
                                 const char *dir, char *version) {
  register_synthetic(c, name, cfg, init_seed, 0, class_names, dir, version);
}

static void register_synthetic(mlflow_client *c, const char *name,
                               const gf_model_config *cfg, uint64_t init_seed,
                               int corrupt, const char *const *class_names,
                               const char *dir, char *version) {
  char mdir[600];
  snprintf(mdir, sizeof mdir, "%s/synthetic-%d-%d-%llu-%d-%ld", dir,
           (int)cfg->architecture, cfg->image_height,
           (unsigned long long)init_seed, corrupt, (long)time(NULL));
  mkdir(mdir, 0755);
  gf_err err;
  if (tu_write_model_dir_names(mdir, cfg, init_seed, corrupt, class_names,
                               &err) != 0)
    die(err.msg);
  mlflow_error me;
  mlflow_experiment exp;
  memset(&exp, 0, sizeof exp);
  if (mlflow_experiment_get_or_create(c, "serve-tests", &exp, &me) !=
      MLFLOW_OK)
    die(me.message);
  const char *exp_id = exp.experiment_id;
  mlflow_run_info run;
  memset(&run, 0, sizeof run);
  if (mlflow_run_create(c, exp_id, "synthetic", mlflow_now_ms(), NULL, 0,
                        &run, &me) != MLFLOW_OK ||
      mlflow_artifact_upload_dir(c, run.artifact_uri, mdir, "model", &me) !=
          MLFLOW_OK ||
      mlflow_registered_model_create(c, name, &me) != MLFLOW_OK)
    die(me.message);
  char source[1024];
  snprintf(source, sizeof source, "%s/model", run.artifact_uri);
  mlflow_model_version mv;
  memset(&mv, 0, sizeof mv);
  if (mlflow_model_version_create(c, name, source, run.run_id, &mv, &me) !=
          MLFLOW_OK ||
      mlflow_model_version_wait_ready(c, name, mv.version, 60, NULL, &me) !=
          MLFLOW_OK)
    die(me.message);
  snprintf(version, 32, "%s", mv.version);
  mlflow_model_version_free(&mv);
  mlflow_run_update(c, run.run_id, MLFLOW_RUN_FINISHED, mlflow_now_ms(), &me);
  mlflow_run_info_free(&run);
  mlflow_experiment_free(&exp);
}

int st_png_decode(const void *data, size_t len, int *w, int *h, int *c,
                  uint8_t **pix) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, data, len)) return -1;
  img.format = (img.format & PNG_FORMAT_FLAG_COLOR) ? PNG_FORMAT_RGB
                                                     : PNG_FORMAT_GRAY;
  size_t n = PNG_IMAGE_SIZE(img);
  *pix = malloc(n);
  if (!*pix || !png_image_finish_read(&img, NULL, *pix, 0, NULL)) {
    free(*pix);
    *pix = NULL;
    png_image_free(&img);
    return -1;
  }
  *w = (int)img.width;
  *h = (int)img.height;
  *c = PNG_IMAGE_PIXEL_CHANNELS(img.format);
  return 0;
}

double st_metric(const char *text, const char *series) {
  size_t k = strlen(series);
  for (const char *p = text; p && *p;) {
    if (strncmp(p, series, k) == 0 && p[k] == ' ') return atof(p + k + 1);
    p = strchr(p, '\n');
    if (p) p++;
  }
  return -1;
}

double st_server_metric(const st_server *s, const char *series) {
  char url[128];
  snprintf(url, sizeof url, "%s/metrics", s->base);
  st_http h;
  double v = -1;
  if (st_get(url, &h) == 0 && h.status == 200) v = st_metric(h.body, series);
  st_http_free(&h);
  return v;
}

char *st_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = b ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  if (b) b[got] = '\0';
  *len = got;
  return b;
}
