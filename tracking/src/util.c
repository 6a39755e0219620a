/* util.c - buffers, error filling, JSON printing, small helpers (paths:
 * mkdir -p, removing a tree, the safety check of relative paths). */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int mlflow_buf_append(mlflow_buf *b, const void *p, size_t n) {
  if (b->limit && b->len + n > b->limit) return -1;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int mlflow_buf_appendf(mlflow_buf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if ((size_t)n < sizeof small) return mlflow_buf_append(b, small, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big) return -1;
  va_start(ap, fmt);
  int m = vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  if (m != n) { /* the same arguments gave another length: refuse */
    free(big);
    return -1;
  }
  int rc = mlflow_buf_append(b, big, (size_t)n);
  free(big);
  return rc;
}

void mlflow_buf_free(mlflow_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* The same cut as gf_vnote (gf/note.h), written again on purpose: the
 * MLflow client ships on its own and links nothing of gf_base. */
int mlflow_message_vformat(char *dst, size_t cap, const char *fmt,
                           va_list ap) {
  if (!cap) return -1;
  int n = vsnprintf(dst, cap, fmt, ap);
  if (n >= 0 && (size_t)n < cap) return 0;
  if (n < 0) {
    static const char bad[] = "(message could not be formatted)";
    size_t k = sizeof bad < cap ? sizeof bad : cap;
    memcpy(dst, bad, k - 1);
    dst[k - 1] = '\0';
    return -1;
  }
  /* dst holds the first cap - 1 bytes: end them with a visible cut. */
  if (cap >= 4) memcpy(dst + cap - 4, "...", 4);
  return -1;
}

int mlflow_message_format(char *dst, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = mlflow_message_vformat(dst, cap, fmt, ap);
  va_end(ap);
  return rc;
}

mlflow_status mlflow_fail(mlflow_error *err, mlflow_status st, const char *fmt,
                          ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    mlflow_message_vformat(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = st;
    err->http_status = 0;
    err->error_code[0] = '\0';
  }
  return st;
}

mlflow_status mlflow_format(char *buf, size_t cap, mlflow_error *err,
                            mlflow_status st, const char *what,
                            const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < cap) return MLFLOW_OK;
  if (n < 0) {
    buf[0] = '\0';
    return mlflow_fail(err, st, "%s: cannot be formatted", what);
  }
  /* buf holds the first cap - 1 bytes: enough to name the culprit. */
  mlflow_status r = mlflow_fail(err, st,
                                "%s too long (%d bytes, at most %zu): "
                                "'%.64s...'", what, n, cap - 1, buf);
  buf[0] = '\0';
  return r;
}

int mlflow_uri_redact(const char *uri, char *out, size_t cap) {
  if (!cap) return -1;
  const char *host = strstr(uri, "://");
  host = host ? host + 3 : uri;
  size_t auth_len = strcspn(host, "/?#");
  const char *at = NULL;
  for (size_t i = 0; i < auth_len; i++)
    if (host[i] == '@') at = host + i;
  if (!at) return mlflow_message_format(out, cap, "%s", uri);
  return mlflow_message_format(out, cap, "%.*s%s", (int)(host - uri), uri,
                               at + 1);
}

mlflow_status mlflow_uri_check_length(const char *uri, mlflow_error *err) {
  size_t n = strlen(uri);
  if (n <= MLFLOW_MAX_URI_LEN) return MLFLOW_OK;
  char start[80]; /* the start, redacted, for the message */
  mlflow_uri_redact(uri, start, sizeof start);
  return mlflow_fail(err, MLFLOW_E_INVALID,
                     "tracking URI too long (%zu bytes, at most %d): '%s'", n,
                     MLFLOW_MAX_URI_LEN, start);
}

char *mlflow_strdup(const char *s) { return s ? strdup(s) : NULL; }

const char *mlflow_status_name(mlflow_status s) {
  switch (s) {
  case MLFLOW_OK: return "MLFLOW_OK";
  case MLFLOW_E_INVALID: return "MLFLOW_E_INVALID";
  case MLFLOW_E_NOMEM: return "MLFLOW_E_NOMEM";
  case MLFLOW_E_CONNECT: return "MLFLOW_E_CONNECT";
  case MLFLOW_E_HTTP: return "MLFLOW_E_HTTP";
  case MLFLOW_E_PROTOCOL: return "MLFLOW_E_PROTOCOL";
  case MLFLOW_E_IO: return "MLFLOW_E_IO";
  case MLFLOW_E_UNSAFE_PATH: return "MLFLOW_E_UNSAFE_PATH";
  case MLFLOW_E_TIMEOUT: return "MLFLOW_E_TIMEOUT";
  case MLFLOW_E_NOT_FOUND: return "MLFLOW_E_NOT_FOUND";
  case MLFLOW_E_UNSUPPORTED: return "MLFLOW_E_UNSUPPORTED";
  case MLFLOW_E_FULL: return "MLFLOW_E_FULL";
  case MLFLOW_E_STATE: return "MLFLOW_E_STATE";
  case MLFLOW_E_AUTH: return "MLFLOW_E_AUTH";
  }
  return "MLFLOW_E_UNKNOWN";
}

int64_t mlflow_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mlflow_sleep(double seconds) {
  if (seconds <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

cJSON *mlflow_json_int64(int64_t v) {
  char s[32]; /* an int64 is at most 20 characters */
  int n = snprintf(s, sizeof s, "%" PRId64, v);
  assert(n >= 0 && (size_t)n < sizeof s);
  (void)n;
  return cJSON_CreateRaw(s);
}

cJSON *mlflow_json_double(double v) {
  if (isnan(v)) return cJSON_CreateString("NaN");
  if (isinf(v)) return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
  char s[40]; /* "%.17g" of a finite double is at most 24 characters */
  int n = snprintf(s, sizeof s, "%.17g", v);
  assert(n >= 0 && (size_t)n < sizeof s);
  (void)n;
  return cJSON_CreateRaw(s);
}

char *mlflow_json_print(const cJSON *j) {
  /* Numbers that need care are built as raw JSON (mlflow_json_int64 and
   * _double); a plain cJSON number that is NaN/Inf would print as null, so
   * callers never create those. */
  return cJSON_PrintUnformatted(j);
}

int mlflow_query_add(mlflow_buf *q, const char *key, const char *value) {
  char *k = curl_easy_escape(NULL, key, 0);
  char *v = curl_easy_escape(NULL, value ? value : "", 0);
  int rc = -1;
  if (k && v) rc = mlflow_buf_appendf(q, "%s%s=%s", q->len ? "&" : "", k, v);
  curl_free(k);
  curl_free(v);
  return rc;
}

mlflow_status mlflow_mkdirs(const char *path, mlflow_error *err) {
  size_t n = strlen(path);
  char *p = malloc(n + 1);
  if (!p) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  memcpy(p, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char saved = p[i];
    p[i] = '\0';
    struct stat st;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      mlflow_status s = mlflow_fail(err, MLFLOW_E_IO,
                                    "cannot create directory %s: %s", p,
                                    strerror(errno));
      free(p);
      return s;
    }
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
      mlflow_status s =
          mlflow_fail(err, MLFLOW_E_IO, "%s is not a directory", p);
      free(p);
      return s;
    }
    p[i] = saved;
  }
  free(p);
  return MLFLOW_OK;
}

void mlflow_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        mlflow_buf child = {0};
        if (mlflow_buf_appendf(&child, "%s/%s", path, e->d_name) == 0)
          mlflow_remove_tree(child.data);
        mlflow_buf_free(&child);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Declared in mlflow/artifacts.h: the check of every relative path the
 * library takes or is sent (artifact paths, listed names). */
int mlflow_path_is_safe(const char *path) {
  if (!path || !*path || path[0] == '/') return 0;
  const char *p = path;
  for (;;) {
    size_t n = strcspn(p, "/");
    if (n == 0) return 0;                          /* "//" or trailing '/' */
    if (n == 1 && p[0] == '.') return 0;
    if (n == 2 && p[0] == '.' && p[1] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)p[i];
      if (ch < 0x20 || ch == 0x7f || ch == '\\') return 0;
    }
    if (!p[n]) return 1;
    p += n + 1;
  }
}
