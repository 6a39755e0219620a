/* hostile_server.c - the scripted HTTP/1.1 test server of hostile_server.h.
 *
 * One thread polls the listening socket and up to HS_MAX_CONNS connections
 * every HS_POLL_MS, so it notices hs_stop (and its own deadline) quickly.
 * A connection's bytes gather in a buffer until a whole request (headers
 * plus Content-Length bytes of body) is there; the request is recorded, the
 * next scripted response is written with blocking sends bounded by
 * SO_SNDTIMEO, and the connection is kept, cut or closed as scripted.
 * A test fixture: not for production, and not a model of a real server. */
#include "hostile_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HS_MAX_CONNS 16
#define HS_POLL_MS 20
#define HS_SOCK_TIMEOUT_S 5
#define HS_MAX_HEADER ((size_t)64 << 10)
#define HS_MAX_BODY ((size_t)64 << 20)
#define HS_MAX_RECORDS 100000
#define HS_MAX_DELAY_MS 10000

typedef struct hs_script_entry {
  char *data; /* owned; stable until hs_stop */
  size_t len;
  hs_opts opts;
} hs_script_entry;

typedef struct hs_conn {
  int fd;        /* -1 when the slot is free */
  int stalled;   /* answer withheld: read and discard until the peer closes */
  char *buf;     /* bytes received and not yet consumed */
  size_t len, cap;
} hs_conn;

struct hs_server {
  int listen_fd;
  int port;
  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;       /* guards everything below */
  int stop;
  hs_script_entry *script;  /* n_script entries, next one at script_next */
  size_t n_script, cap_script, script_next;
  int repeat_last;
  size_t n_accepted;        /* connections accepted so far */
  hs_request **records;     /* n_records pointers, each record immutable */
  size_t n_records, cap_records;
  hs_conn conns[HS_MAX_CONNS]; /* touched by the server thread only */
  char default_answer[256];    /* DEFAULT_BODY as a whole 404 answer */
  size_t default_len;
};

/* Given when the script is exhausted (and repeat_last is off). */
#define DEFAULT_BODY \
  "{\"error_code\":\"ENDPOINT_NOT_FOUND\",\"message\":\"hostile server: no script\"}"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void set_timeouts(int fd) {
  struct timeval tv = {HS_SOCK_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static void conn_close(hs_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->buf);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* Writes all of p (bounded: each send progresses or fails within
 * SO_SNDTIMEO). 0 on success. */
static int send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Position of "\r\n\r\n" in buf[0..len), or -1. */
static long find_header_end(const char *buf, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
        buf[i + 3] == '\n')
      return (long)i;
  return -1;
}

static char *dup_n(const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

int hs_header(const hs_request *r, const char *name, char *buf, size_t cap) {
  if (!r || !r->headers || !cap) return 0;
  size_t nl = strlen(name);
  const char *p = r->headers;
  while (*p) {
    const char *eol = strstr(p, "\r\n");
    size_t ll = eol ? (size_t)(eol - p) : strlen(p);
    if (ll > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
      const char *v = p + nl + 1;
      const char *end = p + ll;
      while (v < end && (*v == ' ' || *v == '\t')) v++;
      while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
      size_t vl = (size_t)(end - v);
      if (vl >= cap) vl = cap - 1;
      memcpy(buf, v, vl);
      buf[vl] = '\0';
      return 1;
    }
    if (!eol) break;
    p = eol + 2;
  }
  return 0;
}

/* Records a request; the record is built before taking the lock. */
static void record(hs_server *s, hs_request *r) {
  pthread_mutex_lock(&s->mu);
  if (s->n_records < HS_MAX_RECORDS) {
    if (s->n_records == s->cap_records) {
      size_t cap = s->cap_records ? s->cap_records * 2 : 64;
      hs_request **nr = realloc(s->records, cap * sizeof *nr);
      if (nr) {
        s->records = nr;
        s->cap_records = cap;
      }
    }
    if (s->n_records < s->cap_records) {
      s->records[s->n_records++] = r;
      r = NULL;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (r) { /* no room: drop it (the count then shows the loss) */
    free(r->target);
    free(r->headers);
    free(r->body);
    free(r);
  }
}

/* The next scripted response, by value (its data stays owned by s). */
static hs_script_entry next_response(hs_server *s) {
  hs_script_entry e = {s->default_answer, s->default_len, {0, 0, 0, 0}};
  pthread_mutex_lock(&s->mu);
  if (s->script_next < s->n_script)
    e = s->script[s->script_next++];
  else if (s->repeat_last && s->n_script)
    e = s->script[s->n_script - 1];
  pthread_mutex_unlock(&s->mu);
  return e;
}

/* Handles the whole requests in c's buffer. Returns 0 to keep the
 * connection, -1 to close it. */
static int serve_buffered(hs_server *s, hs_conn *c) {
  for (int guard = 0; guard < 1000 && !c->stalled; guard++) {
    long he = find_header_end(c->buf, c->len);
    if (he < 0) return c->len > HS_MAX_HEADER ? -1 : 0;
    size_t head_len = (size_t)he + 4;
    /* Request line. */
    const char *line_end = strstr(c->buf, "\r\n");
    if (!line_end || (size_t)(line_end - c->buf) > (size_t)he) return -1;
    char method[16] = "";
    const char *sp1 = memchr(c->buf, ' ', (size_t)(line_end - c->buf));
    if (!sp1 || (size_t)(sp1 - c->buf) >= sizeof method) return -1;
    memcpy(method, c->buf, (size_t)(sp1 - c->buf));
    const char *tgt = sp1 + 1;
    const char *sp2 = memchr(tgt, ' ', (size_t)(line_end - tgt));
    if (!sp2) return -1;
    hs_request probe = {.headers = dup_n(line_end + 2,
                                         (size_t)(c->buf + head_len - 2 -
                                                  (line_end + 2)))};
    if (!probe.headers) return -1;
    char cl[32];
    size_t body_len = 0;
    if (hs_header(&probe, "Content-Length", cl, sizeof cl)) {
      char *end;
      unsigned long long v = strtoull(cl, &end, 10);
      if (*end || v > HS_MAX_BODY) {
        free(probe.headers);
        return -1;
      }
      body_len = (size_t)v;
    }
    if (c->len < head_len + body_len) {
      free(probe.headers);
      return 0; /* wait for the rest of the body */
    }
    hs_request *r = calloc(1, sizeof *r);
    if (!r) {
      free(probe.headers);
      return -1;
    }
    memcpy(r->method, method, sizeof method);
    r->headers = probe.headers;
    r->target = dup_n(tgt, (size_t)(sp2 - tgt));
    r->body = dup_n(c->buf + head_len, body_len);
    r->body_len = body_len;
    if (!r->target || !r->body) {
      free(r->target);
      free(r->headers);
      free(r->body);
      free(r);
      return -1;
    }
    memmove(c->buf, c->buf + head_len + body_len,
            c->len - head_len - body_len);
    c->len -= head_len + body_len;
    c->buf[c->len] = '\0';
    record(s, r);

    hs_script_entry e = next_response(s);
    if (e.opts.stall) {
      c->stalled = 1;
      return 0;
    }
    if (e.opts.delay_ms > 0)
      sleep_ms(e.opts.delay_ms < HS_MAX_DELAY_MS ? e.opts.delay_ms
                                                 : HS_MAX_DELAY_MS);
    size_t n = e.len;
    if (e.opts.cut_after > 0 && e.opts.cut_after < n) n = e.opts.cut_after;
    if (send_all(c->fd, e.data, n) != 0) return -1;
    if (e.opts.cut_after > 0 || e.opts.close_after) return -1;
  }
  return 0;
}

/* Reads what c has; returns -1 when the connection should be closed. */
static int conn_read(hs_server *s, hs_conn *c) {
  char tmp[65536];
  ssize_t r = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (r <= 0) return -1;
  if (c->stalled) return 0; /* discard: this request is never answered */
  if (c->len + (size_t)r + 1 > c->cap) {
    size_t cap = c->cap ? c->cap : 65536;
    while (cap < c->len + (size_t)r + 1) cap *= 2;
    if (cap > HS_MAX_HEADER + HS_MAX_BODY + 65536) return -1;
    char *nb = realloc(c->buf, cap);
    if (!nb) return -1;
    c->buf = nb;
    c->cap = cap;
  }
  memcpy(c->buf + c->len, tmp, (size_t)r);
  c->len += (size_t)r;
  c->buf[c->len] = '\0';
  return serve_buffered(s, c);
}

static void *server_main(void *arg) {
  hs_server *s = arg;
  double deadline = now_s() + HS_MAX_LIFETIME_S;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    if (stop || now_s() > deadline) break;
    struct pollfd pfd[1 + HS_MAX_CONNS];
    int idx[1 + HS_MAX_CONNS];
    nfds_t n = 0;
    pfd[n].fd = s->listen_fd;
    pfd[n].events = POLLIN;
    idx[n++] = -1;
    for (int i = 0; i < HS_MAX_CONNS; i++) {
      if (s->conns[i].fd < 0) continue;
      pfd[n].fd = s->conns[i].fd;
      pfd[n].events = POLLIN;
      idx[n++] = i;
    }
    int pr = poll(pfd, n, HS_POLL_MS);
    if (pr <= 0) continue;
    for (nfds_t k = 1; k < n; k++) {
      if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      hs_conn *c = &s->conns[idx[k]];
      if (conn_read(s, c) != 0) conn_close(c);
    }
    if (pfd[0].revents & POLLIN) {
      int fd = accept(s->listen_fd, NULL, NULL);
      if (fd >= 0) {
        set_timeouts(fd);
        int slot = -1;
        for (int i = 0; i < HS_MAX_CONNS && slot < 0; i++)
          if (s->conns[i].fd < 0) slot = i;
        if (slot < 0) {
          close(fd); /* too many connections: refuse this one */
        } else {
          s->conns[slot].fd = fd;
          pthread_mutex_lock(&s->mu);
          s->n_accepted++;
          pthread_mutex_unlock(&s->mu);
        }
      }
    }
  }
  for (int i = 0; i < HS_MAX_CONNS; i++) conn_close(&s->conns[i]);
  return NULL;
}

hs_server *hs_start(void) {
  hs_server *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  for (int i = 0; i < HS_MAX_CONNS; i++) s->conns[i].fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  int dl = snprintf(s->default_answer, sizeof s->default_answer,
                    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json"
                    "\r\nContent-Length: %zu\r\n\r\n%s",
                    sizeof DEFAULT_BODY - 1, DEFAULT_BODY);
  s->default_len = dl > 0 ? (size_t)dl : 0;
  s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (s->listen_fd < 0) goto fail;
  int one = 1;
  setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t al = sizeof a;
  if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(s->listen_fd, 16) != 0 ||
      getsockname(s->listen_fd, (struct sockaddr *)&a, &al) != 0)
    goto fail;
  s->port = ntohs(a.sin_port);
  if (pthread_create(&s->thread, NULL, server_main, s) != 0) goto fail;
  s->thread_started = 1;
  return s;
fail:
  hs_stop(s);
  return NULL;
}

void hs_stop(hs_server *s) {
  if (!s) return;
  if (s->thread_started) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
  } else {
    for (int i = 0; i < HS_MAX_CONNS; i++) conn_close(&s->conns[i]);
  }
  if (s->listen_fd >= 0) close(s->listen_fd);
  for (size_t i = 0; i < s->n_script; i++) free(s->script[i].data);
  free(s->script);
  for (size_t i = 0; i < s->n_records; i++) {
    free(s->records[i]->target);
    free(s->records[i]->headers);
    free(s->records[i]->body);
    free(s->records[i]);
  }
  free(s->records);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int hs_port(const hs_server *s) { return s->port; }

void hs_url(const hs_server *s, char *buf, size_t cap) {
  snprintf(buf, cap, "http://127.0.0.1:%d", s->port);
}

int hs_push_raw(hs_server *s, const void *data, size_t len, hs_opts opts) {
  char *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  if (len) memcpy(copy, data, len);
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (s->n_script == s->cap_script) {
    size_t cap = s->cap_script ? s->cap_script * 2 : 16;
    hs_script_entry *ns = realloc(s->script, cap * sizeof *ns);
    if (ns) {
      s->script = ns;
      s->cap_script = cap;
    } else {
      rc = -1;
    }
  }
  if (rc == 0) s->script[s->n_script++] = (hs_script_entry){copy, len, opts};
  pthread_mutex_unlock(&s->mu);
  if (rc) free(copy);
  return rc;
}

static const char *reason_of(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 500: return "Internal Server Error";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  default: return "Status";
  }
}

int hs_push(hs_server *s, int status, const char *ctype, const char *extra,
            const char *body, hs_opts opts) {
  size_t bl = body ? strlen(body) : 0;
  char head[1024];
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.1 %d %s\r\n%s%s%sContent-Length: %zu\r\n%s\r\n",
                    status, reason_of(status), ctype ? "Content-Type: " : "",
                    ctype ? ctype : "", ctype ? "\r\n" : "", bl,
                    extra ? extra : "");
  if (hl < 0 || (size_t)hl >= sizeof head) return -1;
  char *all = malloc((size_t)hl + bl + 1);
  if (!all) return -1;
  memcpy(all, head, (size_t)hl);
  if (bl) memcpy(all + hl, body, bl);
  int rc = hs_push_raw(s, all, (size_t)hl + bl, opts);
  free(all);
  return rc;
}

int hs_push_json(hs_server *s, int status, const char *json) {
  hs_opts o = {0, 0, 0, 0};
  return hs_push(s, status, "application/json", NULL, json, o);
}

int hs_push_stall(hs_server *s) {
  hs_opts o = {0, 1, 0, 0};
  return hs_push_raw(s, "", 0, o);
}

void hs_repeat_last(hs_server *s, int on) {
  pthread_mutex_lock(&s->mu);
  s->repeat_last = on;
  pthread_mutex_unlock(&s->mu);
}

size_t hs_request_count(hs_server *s) {
  pthread_mutex_lock(&s->mu);
  size_t n = s->n_records;
  pthread_mutex_unlock(&s->mu);
  return n;
}

const hs_request *hs_request_get(hs_server *s, size_t i) {
  pthread_mutex_lock(&s->mu);
  const hs_request *r = i < s->n_records ? s->records[i] : NULL;
  pthread_mutex_unlock(&s->mu);
  return r;
}

size_t hs_connection_count(hs_server *s) {
  pthread_mutex_lock(&s->mu);
  size_t n = s->n_accepted;
  pthread_mutex_unlock(&s->mu);
  return n;
}
