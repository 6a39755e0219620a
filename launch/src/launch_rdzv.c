/* launch_rdzv.c - the rendezvous' wire: one TCP connection from each node
 * agent to node 0's, carrying text lines ('\n'-terminated, at most
 * RDZV_LINE bytes) both ways over non-blocking sockets, so that one thread
 * watches its ranks, its connection and (on node 0) every agent's at once.
 * The sockets are gf/sock.h's (its address rule holds for --rdzv); what the
 * lines say is in launch_node.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/sock.h"
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

gf_status rdzv_listen(int port, int *fd, gf_err *err) {
  gf_err e;
  if (gf_sock_listen(NULL, port, fd, NULL, &e) == GF_OK) return GF_OK;
  return gf_fail(err, GF_EIO, "rendezvous: cannot listen on port %d: %s%s",
                 port, e.msg,
                 errno == EADDRINUSE ? " (another job's rendezvous, or a "
                                       "previous one not ended yet?)"
                                     : "");
}

int rdzv_accept(int lfd) { return gf_sock_accept(lfd); }

gf_status rdzv_dial(rdzv_conn *c, const char *host, int port,
                    double timeout_s, gf_err *err) {
  rdzv_close(c);
  gf_err e;
  int fd = -1;
  gf_status st = gf_sock_dial(host, port, gf_mono_s() + timeout_s, &fd, &e);
  if (st != GF_OK) return gf_fail(err, st, "rendezvous %s", e.msg);
  c->fd = fd;
  c->t_heard = gf_mono_s();
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
