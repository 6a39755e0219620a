/* launch_rdzv.c - the rendezvous' wire: one TCP connection from each node
 * agent to node 0's, carrying text lines ('\n'-terminated, at most
 * RDZV_LINE bytes) both ways over non-blocking sockets, so that one thread
 * watches its ranks, its connection and (on node 0) every agent's at once.
 * What the lines say is in launch_node.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/text.h"
#include "launch_internal.h"

void rdzv_init(rdzv_conn *c) {
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

void rdzv_close(rdzv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  rdzv_init(c);
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

gf_status rdzv_listen(int port, int *fd, gf_err *err) {
  int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = s >= 0;
  if (!v6) s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return gf_fail(err, GF_EIO, "rendezvous: socket: %s",
                            strerror(errno));
  int one = 1, zero = 0;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  if (v6) { /* every address, IPv4 ones too */
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    a->sin6_port = htons((uint16_t)port);
    len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons((uint16_t)port);
    len = sizeof *a;
  }
  if (bind(s, (struct sockaddr *)&ss, len) != 0 || listen(s, 64) != 0) {
    int e = errno;
    close(s);
    return gf_fail(err, GF_EIO, "rendezvous: cannot listen on port %d: %s%s",
                   port, strerror(e), e == EADDRINUSE ? " (another job's "
                   "rendezvous, or a previous one not ended yet?)" : "");
  }
  tune(s);
  *fd = s;
  return GF_OK;
}

int rdzv_accept(int lfd) {
  int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd >= 0) tune(fd);
  return fd;
}

gf_status rdzv_dial(rdzv_conn *c, const char *host, int port,
                    double timeout_s, gf_err *err) {
  rdzv_close(c);
  char ps[16];
  GF_TRY(gf_format(ps, sizeof ps, err, "port", "%d", port));
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo(host, ps, &hints, &res);
  if (g != 0)
    return gf_fail(err, GF_EIO, "rendezvous %s:%d: %s", host, port,
                   gai_strerror(g));
  gf_status st = GF_EIO;
  int last = 0;
  for (struct addrinfo *ai = res; ai && st != GF_OK; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = errno;
      continue;
    }
    tune(fd);
    int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      struct pollfd p = {fd, POLLOUT, 0};
      int ms = (int)(timeout_s * 1000);
      r = poll(&p, 1, ms < 1 ? 1 : ms);
      int so = 0;
      socklen_t sl = sizeof so;
      if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 &&
          so == 0)
        r = 0;
      else
        errno = r == 0 ? ETIMEDOUT : so ? so : errno, r = -1;
    }
    if (r == 0) {
      c->fd = fd;
      c->t_heard = gf_mono_s();
      st = GF_OK;
    } else {
      last = errno;
      close(fd);
    }
  }
  freeaddrinfo(res);
  if (st != GF_OK)
    return gf_fail(err, GF_EIO, "rendezvous %s:%d: %s", host, port,
                   strerror(last));
  return GF_OK;
}

/* Writes what is queued; false when the connection broke. */
static bool flush_out(rdzv_conn *c) {
  while (c->nout) {
    ssize_t n = send(c->fd, c->out, c->nout, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    memmove(c->out, c->out + n, c->nout - (size_t)n);
    c->nout -= (size_t)n;
  }
  return true;
}

bool rdzv_send(rdzv_conn *c, const char *fmt, ...) {
  if (c->fd < 0) return false;
  char line[RDZV_LINE];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return false;
  if ((size_t)n >= sizeof line - 1) n = (int)sizeof line - 2; /* cut text */
  for (int i = 0; i < n; i++)
    if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
  line[n++] = '\n';
  if (c->nout + (size_t)n > sizeof c->out) return false; /* peer stuck */
  memcpy(c->out + c->nout, line, (size_t)n);
  c->nout += (size_t)n;
  return flush_out(c);
}

int rdzv_pump(rdzv_conn *c, double now) {
  if (c->fd < 0) return -1;
  if (!flush_out(c)) return -1;
  for (;;) {
    if (c->nin == sizeof c->in) return -1; /* a line longer than allowed */
    ssize_t n = recv(c->fd, c->in + c->nin, sizeof c->in - c->nin, 0);
    if (n == 0) return -1;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
      return -1;
    }
    c->nin += (size_t)n;
    c->t_heard = now;
  }
}

bool rdzv_line(rdzv_conn *c, char *line, size_t cap) {
  char *nl = memchr(c->in, '\n', c->nin);
  if (!nl) return false;
  size_t n = (size_t)(nl - c->in);
  size_t k = n < cap - 1 ? n : cap - 1;
  memcpy(line, c->in, k);
  line[k] = '\0';
  memmove(c->in, nl + 1, c->nin - n - 1);
  c->nin -= n + 1;
  return true;
}

/* ---- the messages --------------------------------------------------------- */

/* The next space-separated word of *p (at most cap - 1 bytes) into w;
 * false when there is none or it is longer. */
static bool word(const char **p, char *w, size_t cap) {
  const char *s = *p;
  size_t n = strcspn(s, " ");
  if (n == 0 || n >= cap) return false;
  memcpy(w, s, n);
  w[n] = '\0';
  s += n;
  if (*s == ' ') s++;
  *p = s;
  return true;
}

/* The next word as a decimal number in 0..max. */
static bool num(const char **p, int max, int *out) {
  char w[16];
  if (!word(p, w, sizeof w)) return false;
  long v = 0;
  for (const char *c = w; *c; c++) {
    if (*c < '0' || *c > '9') return false;
    v = v * 10 + (*c - '0');
    if (v > max) return false;
  }
  *out = (int)v;
  return true;
}

gf_status rdzv_parse(const char *line, rdzv_msg *m, gf_err *err) {
  static const struct {
    const char *name;
    rdzv_kind kind;
  } kinds[] = {{"HELLO", RDZV_HELLO}, {"BEAT", RDZV_BEAT}, {"FAIL", RDZV_FAIL},
               {"IDLE", RDZV_IDLE},   {"ENDED", RDZV_ENDED}, {"GO", RDZV_GO},
               {"WAIT", RDZV_WAIT},   {"STOP", RDZV_STOP}, {"DRAIN", RDZV_DRAIN},
               {"EXIT", RDZV_EXIT},   {"PING", RDZV_PING}};
  memset(m, 0, sizeof m[0]);
  const char *p = line;
  char w[8];
  int k = -1;
  if (word(&p, w, sizeof w))
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
      if (strcmp(w, kinds[i].name) == 0) k = (int)i;
  if (k < 0)
    return gf_fail(err, GF_EFORMAT, "rendezvous: unknown message '%.40s'",
                   line);
  m->kind = kinds[k].kind;
  const int big = 0x7fffffff;
  bool ok = true;
  switch (m->kind) {
  case RDZV_HELLO:
    ok = num(&p, GF_LAUNCH_MAX_NODES - 1, &m->node) &&
         num(&p, GF_LAUNCH_MAX_RANKS, &m->nproc) && m->nproc >= 1 &&
         word(&p, m->host, sizeof m->host) && !*p;
    break;
  case RDZV_BEAT:
  case RDZV_PING:
    ok = !*p;
    break;
  case RDZV_IDLE:
  case RDZV_WAIT:
  case RDZV_DRAIN:
    ok = num(&p, big, &m->round) && !*p;
    break;
  case RDZV_FAIL: {
    char w2[8];
    ok = num(&p, big, &m->round) && word(&p, w2, sizeof w2) &&
         (strcmp(w2, "start") == 0 || strcmp(w2, "train") == 0);
    m->at_start = ok && w2[0] == 's';
    break;
  }
  case RDZV_STOP:
    ok = num(&p, big, &m->round);
    break;
  case RDZV_ENDED: {
    char e[8];
    ok = num(&p, big, &m->round) && word(&p, e, sizeof e) && !*p;
    m->ended = !ok ? 0 : strcmp(e, "done") == 0 ? RDZV_END_DONE
               : strcmp(e, "stopped") == 0       ? RDZV_END_STOPPED
               : strcmp(e, "ok") == 0            ? RDZV_END_OK
               : strcmp(e, "usage") == 0         ? RDZV_END_USAGE : 0;
    ok = ok && m->ended;
    break;
  }
  case RDZV_GO:
    ok = num(&p, big, &m->round) && num(&p, GF_LAUNCH_MAX_RANKS, &m->world) &&
         num(&p, GF_LAUNCH_MAX_RANKS, &m->base) && num(&p, 1 << 20, &m->ga) &&
         num(&p, 65535, &m->port) && num(&p, 1, &m->resume) && !*p &&
         m->world >= 1 && m->base < m->world && m->ga >= 1 && m->port >= 1;
    break;
  case RDZV_EXIT:
    ok = num(&p, 255, &m->code);
    break;
  }
  if (!ok)
    return gf_fail(err, GF_EFORMAT, "rendezvous: malformed %s message "
                   "'%.60s'", kinds[k].name, line);
  size_t n = strlen(p); /* the rest: the text of FAIL, STOP, EXIT */
  if (n >= sizeof m->text) n = sizeof m->text - 1;
  memcpy(m->text, p, n);
  m->text[n] = '\0';
  return GF_OK;
}
