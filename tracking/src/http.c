/* http.c - the client: one libcurl easy handle (one keep-alive connection),
 * retries as the official MLflow client does them, auth, and JSON calls to
 * the REST API. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "parse.h"

/* Bodies kept in memory: JSON answers up to 256 MiB, error bodies 64 KiB. */
#define MAX_JSON_BODY ((size_t)256 << 20)
#define MAX_ERROR_BODY ((size_t)64 << 10)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init_once(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

mlflow_status mlflow_client_new(mlflow_client **out, const mlflow_config *cfg,
                                mlflow_error *err) {
  *out = NULL;
  if (!cfg || !cfg->tracking_uri)
    return mlflow_fail(err, MLFLOW_E_INVALID, "no tracking URI configured");
  mlflow_status st = mlflow_uri_check_length(cfg->tracking_uri, err);
  if (st) return st;
  pthread_once(&curl_once, curl_init_once);
  if (curl_init_rc != CURLE_OK)
    return mlflow_fail(err, MLFLOW_E_CONNECT, "libcurl init failed: %s",
                       curl_easy_strerror(curl_init_rc));
  mlflow_client *c = calloc(1, sizeof *c);
  if (!c) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  st = mlflow_config_copy(&c->cfg, cfg, err);
  if (st) {
    free(c);
    return st;
  }
  c->curl = curl_easy_init();
  if (!c->curl) {
    mlflow_client_free(c);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "curl_easy_init failed");
  }
  if (!(c->cfg.username && c->cfg.password) && c->cfg.token) {
    mlflow_buf b = {0};
    if (mlflow_buf_appendf(&b, "Authorization: Bearer %s", c->cfg.token)) {
      mlflow_buf_free(&b);
      mlflow_client_free(c);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
    c->bearer = b.data;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  c->rng = (unsigned)ts.tv_nsec ^ (unsigned)getpid() ^ (unsigned)(uintptr_t)c;
  *out = c;
  return MLFLOW_OK;
}

void mlflow_client_free(mlflow_client *c) {
  if (!c) return;
  if (c->curl) curl_easy_cleanup(c->curl);
  if (c->bearer) {
    volatile char *p = c->bearer;
    while (*p) *p++ = 0;
    free(c->bearer);
  }
  mlflow_config_free(&c->cfg);
  free(c);
}

const mlflow_config *mlflow_client_config(const mlflow_client *c) {
  return &c->cfg;
}

uint64_t mlflow_client_attempts(const mlflow_client *c) { return c->attempts; }

void mlflow_http_resp_free(mlflow_http_resp *r) {
  if (!r) return;
  mlflow_buf_free(&r->body);
}

/* ---- one attempt -------------------------------------------------------- */

typedef struct attempt_ctx {
  CURL *curl;
  mlflow_http_resp *resp;
  FILE *download;
  int download_failed;   /* fwrite to the download file failed */
  double retry_after_s;  /* from a Retry-After header; < 0 when none */
} attempt_ctx;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  attempt_ctx *a = ud;
  size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
  if (a->download && status >= 200 && status < 300) {
    if (fwrite(p, 1, bytes, a->download) != bytes) {
      a->download_failed = 1;
      return 0;
    }
    return bytes;
  }
  a->resp->body.limit =
      (status >= 200 && status < 300) ? MAX_JSON_BODY : MAX_ERROR_BODY;
  if (mlflow_buf_append(&a->resp->body, p, bytes) != 0) {
    /* Error bodies are only read for their message: keep the start. */
    if (!(status >= 200 && status < 300)) return bytes;
    return 0;
  }
  return bytes;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  attempt_ctx *a = ud;
  size_t bytes = size * n;
  static const char name[] = "retry-after:";
  if (bytes > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
    char v[256]; /* mlflow_parse_retry_after reads 127 bytes at most */
    size_t vl = bytes - (sizeof name - 1);
    if (vl >= sizeof v) { /* no Retry-After is that long: not understood */
      a->retry_after_s = -1;
      return bytes;
    }
    memcpy(v, p + sizeof name - 1, vl);
    v[vl] = '\0';
    a->retry_after_s = mlflow_parse_retry_after(v, time(NULL));
  }
  return bytes;
}

static int status_retryable(long s) {
  return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static int curl_retryable(CURLcode rc) {
  switch (rc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_WEIRD_SERVER_REPLY:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
    return 1;
  default:
    return 0;
  }
}

static CURLcode attempt(mlflow_client *c, const mlflow_http_req *req,
                        attempt_ctx *a, struct curl_slist *hdrs) {
  CURL *h = c->curl;
  curl_easy_reset(h); /* keeps the live connection */
  curl_easy_setopt(h, CURLOPT_URL, req->url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ganflow-mlflow-c/0.1");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
  long timeout_ms = (long)(c->cfg.timeout_s * 1000.0);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   timeout_ms < 30000 ? (timeout_ms > 0 ? timeout_ms : 1L)
                                      : 30000L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (c->cfg.username && c->cfg.password) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERNAME, c->cfg.username);
    curl_easy_setopt(h, CURLOPT_PASSWORD, c->cfg.password);
  }
  if (c->cfg.insecure_tls) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (c->cfg.server_cert_path)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg.server_cert_path);
  if (c->cfg.client_cert_path)
    curl_easy_setopt(h, CURLOPT_SSLCERT, c->cfg.client_cert_path);

  if (req->upload) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READDATA, req->upload);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->upload_size);
    if (strcmp(req->method, "PUT") != 0)
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  } else if (req->body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    if (strcmp(req->method, "POST") != 0)
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  } else if (strcmp(req->method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  }
  c->attempts++;
  return curl_easy_perform(h);
}

static double backoff_wait(mlflow_client *c, int retry_no, double retry_after) {
  const mlflow_config *cfg = &c->cfg;
  double w;
  if (retry_after >= 0) {
    w = retry_after;
  } else if (retry_no <= 1) {
    w = 0; /* like urllib3: the first retry goes at once */
  } else {
    w = cfg->backoff_factor * pow(2.0, retry_no - 1);
    if (cfg->backoff_jitter > 0)
      w += cfg->backoff_jitter * ((double)rand_r(&c->rng) / ((double)RAND_MAX + 1.0));
  }
  if (w > cfg->backoff_max_s) w = cfg->backoff_max_s;
  return w < 0 ? 0 : w;
}

mlflow_status mlflow_http_do(mlflow_client *c, const mlflow_http_req *req,
                             mlflow_http_resp *resp, mlflow_error *err) {
  memset(resp, 0, sizeof *resp);
  struct curl_slist *hdrs = NULL, *tmp;
  mlflow_buf ct = {0}; /* "Content-Type: ...", any length */
#define ADD_HDR(s)                                                   \
  do {                                                               \
    if (!(tmp = curl_slist_append(hdrs, (s)))) goto nomem;           \
    hdrs = tmp;                                                      \
  } while (0)
  ADD_HDR("Accept: application/json");
  ADD_HDR("Expect:"); /* no 100-continue round trip on uploads */
  if (req->body || req->upload) {
    if (mlflow_buf_appendf(&ct, "Content-Type: %s",
                           req->content_type ? req->content_type
                           : (req->upload ? "application/octet-stream"
                                          : "application/json")))
      goto nomem;
    ADD_HDR(ct.data);
  }
  if (c->bearer) ADD_HDR(c->bearer);
#undef ADD_HDR

  int max_retries = req->max_retries >= 0 ? req->max_retries : c->cfg.max_retries;
  mlflow_status st = MLFLOW_OK;
  for (int try_no = 0;; try_no++) {
    attempt_ctx a = {.curl = c->curl, .resp = resp, .download = req->download,
                     .retry_after_s = -1};
    mlflow_buf_free(&resp->body);
    resp->status = 0;
    resp->content_type = NULL;
    if (req->upload && fseek(req->upload, 0, SEEK_SET) != 0) {
      st = mlflow_fail(err, MLFLOW_E_IO, "%s: cannot rewind upload", req->what);
      break;
    }
    if (req->download) {
      if (fflush(req->download) != 0 || fseek(req->download, 0, SEEK_SET) != 0 ||
          ftruncate(fileno(req->download), 0) != 0) {
        st = mlflow_fail(err, MLFLOW_E_IO, "%s: cannot reset download file",
                         req->what);
        break;
      }
    }
    CURLcode rc = attempt(c, req, &a, hdrs);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    char *ctype = NULL;
    curl_easy_getinfo(c->curl, CURLINFO_CONTENT_TYPE, &ctype);
    resp->content_type = ctype;

    int retry = 0;
    if (rc != CURLE_OK) {
      if (a.download_failed) {
        st = mlflow_fail(err, MLFLOW_E_IO, "%s: writing the download failed",
                         req->what);
        break;
      }
      if (rc == CURLE_WRITE_ERROR) {
        st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                         "%s: answer larger than %zu bytes", req->what,
                         (size_t)MAX_JSON_BODY);
        break;
      }
      char shown[MLFLOW_MAX_URI_LEN + 1]; /* fits: mlflow_client_new checked */
      mlflow_uri_redact(c->cfg.tracking_uri, shown, sizeof shown);
      st = mlflow_fail(err, MLFLOW_E_CONNECT, "%s %s: %s", req->what, shown,
                       curl_easy_strerror(rc));
      if (err) err->http_status = resp->status;
      retry = curl_retryable(rc);
    } else if (resp->status >= 200 && resp->status < 300) {
      st = MLFLOW_OK;
      break;
    } else {
      st = mlflow_error_from_answer(req->what, resp->status, resp->content_type,
                                    resp->body.data, resp->body.len, err);
      retry = status_retryable(resp->status);
    }
    if (!retry || try_no >= max_retries) break;
    double ra = (resp->status == 429 || resp->status == 503 ||
                 resp->status == 413) ? a.retry_after_s : -1;
    double wait_s = backoff_wait(c, try_no + 1, ra);
    if (c->cfg.on_retry)
      c->cfg.on_retry(c->cfg.on_retry_ctx, err, try_no + 1, max_retries,
                      wait_s);
    mlflow_sleep(wait_s);
  }
  curl_slist_free_all(hdrs);
  mlflow_buf_free(&ct);
  return st;
nomem:
  curl_slist_free_all(hdrs);
  mlflow_buf_free(&ct);
  return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
}

mlflow_status mlflow_api(mlflow_client *c, const char *method,
                         const char *endpoint, const cJSON *body,
                         const char *query, cJSON **out, mlflow_error *err) {
  if (out) *out = NULL;
  mlflow_buf url = {0}, what = {0};
  char *payload = NULL;
  mlflow_status st;
  if (mlflow_buf_appendf(&url, "%s/api/2.0/mlflow/%s%s%s", c->cfg.tracking_uri,
                         endpoint, query && *query ? "?" : "",
                         query ? query : "") ||
      mlflow_buf_appendf(&what, "%s %s", method, endpoint)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto done;
  }
  if (body && !(payload = mlflow_json_print(body))) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto done;
  }
  mlflow_http_req req = {.method = method, .url = url.data, .what = what.data,
                         .body = payload,
                         .body_len = payload ? strlen(payload) : 0,
                         .max_retries = -1};
  mlflow_http_resp resp;
  st = mlflow_http_do(c, &req, &resp, err);
  if (st == MLFLOW_OK && out) {
    st = mlflow_parse_json_object(what.data, resp.body.data, resp.body.len,
                                  out, err);
  }
  mlflow_http_resp_free(&resp);
done:
  free(payload);
  mlflow_buf_free(&url);
  mlflow_buf_free(&what);
  return st;
}

mlflow_status mlflow_need(const char *v, const char *what, mlflow_error *err) {
  if (!v || !*v) return mlflow_fail(err, MLFLOW_E_INVALID, "%s is empty", what);
  return MLFLOW_OK;
}

mlflow_status mlflow_api_fields(mlflow_client *c, const char *method,
                                const char *endpoint, cJSON **out,
                                mlflow_error *err, ...) {
  int is_get = strcmp(method, "GET") == 0;
  mlflow_buf q = {0};
  cJSON *body = is_get ? NULL : cJSON_CreateObject();
  int ok = is_get || body != NULL;
  va_list ap;
  va_start(ap, err);
  for (const char *k; ok && (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    if (!v) continue;
    ok = is_get ? mlflow_query_add(&q, k, v) == 0
                : cJSON_AddStringToObject(body, k, v) != NULL;
  }
  va_end(ap);
  mlflow_status st = ok ? mlflow_api(c, method, endpoint, body, q.data, out, err)
                        : mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  cJSON_Delete(body);
  mlflow_buf_free(&q);
  return st;
}

static mlflow_status get_plain(mlflow_client *c, const char *path,
                               char **text_out, mlflow_error *err) {
  mlflow_buf url = {0};
  if (mlflow_buf_appendf(&url, "%s%s", c->cfg.tracking_uri, path))
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  mlflow_http_req req = {.method = "GET", .url = url.data, .what = path,
                         .max_retries = 0};
  mlflow_http_resp resp;
  mlflow_status st = mlflow_http_do(c, &req, &resp, err);
  if (st == MLFLOW_OK && text_out) {
    *text_out = strdup(resp.body.data ? resp.body.data : "");
    if (!*text_out) st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  mlflow_http_resp_free(&resp);
  mlflow_buf_free(&url);
  return st;
}

mlflow_status mlflow_ping(mlflow_client *c, mlflow_error *err) {
  return get_plain(c, "/health", NULL, err);
}

mlflow_status mlflow_server_version(mlflow_client *c, char **version_out,
                                    mlflow_error *err) {
  mlflow_status st = get_plain(c, "/version", version_out, err);
  if (st == MLFLOW_OK) {
    char *v = *version_out;
    size_t n = strlen(v);
    while (n && isspace((unsigned char)v[n - 1])) v[--n] = '\0';
  }
  return st;
}
