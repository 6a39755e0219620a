/* sock.c - TCP sockets and HOST:PORT for the gf_ libraries; see gf/sock.h
 * (the address rule is written there). Not here: any wire format. */
#define _GNU_SOURCE /* accept4 */
#include "gf/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/text.h"

/* The longest an address with more addresses after it waits for its
 * connect. */
#define NEXT_ADDR_S 1.0
/* Longest name of DNS (RFC 1035: 253 characters written out). */
#define NAME_MAX_CHARS 253

/* ---- addresses ----------------------------------------------------------- */

/* s[0..n) for a message: at most 64 bytes, anything but printable ASCII
 * as '?', into q[72]. */
static const char *shown(const char *s, size_t n, char q[72]) {
  size_t k = n < 64 ? n : 64, o = 0;
  for (size_t i = 0; i < k; i++)
    q[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  if (k < n) q[o++] = '.', q[o++] = '.', q[o++] = '.';
  q[o] = '\0';
  return q;
}

static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/* An IPv6 address with an optional %zone (letters, digits, ".-_"). */
static int v6_literal(const char *s, size_t n) {
  const char *pct = memchr(s, '%', n);
  size_t an = pct ? (size_t)(pct - s) : n;
  if (an == 0 || an >= INET6_ADDRSTRLEN) return 0;
  if (pct) {
    size_t zn = n - an - 1;
    if (zn == 0 || zn > 64) return 0;
    for (size_t i = 0; i < zn; i++)
      if (!name_char(pct[1 + i])) return 0;
  }
  char a[INET6_ADDRSTRLEN];
  memcpy(a, s, an);
  a[an] = '\0';
  unsigned char bin[16];
  return inet_pton(AF_INET6, a, bin) == 1;
}

/* The host s[0..n) under the rule: its text without brackets into
 * host[cap]. */
static gf_status host_of(const char *what, const char *s, size_t n, char *host,
                         size_t cap, gf_err *err) {
  char q[72];
  const char *h = s;
  size_t hn = n;
  const char *why = NULL;
  if (n == 0) {
    why = "the host is empty";
  } else if (s[0] == '[' || s[n - 1] == ']') {
    if (n < 3 || s[0] != '[' || s[n - 1] != ']' || !v6_literal(s + 1, n - 2))
      why = "brackets hold an IPv6 address and nothing else";
    h = s + 1;
    hn = n - 2;
  } else if (memchr(s, ':', n)) {
    if (!v6_literal(s, n)) why = "not an IPv6 address";
  } else {
    int ok = n <= NAME_MAX_CHARS;
    for (size_t i = 0; ok && i < n; i++) ok = name_char(s[i]);
    if (!ok)
      why = "not a host name or address (letters, digits, '.', '-', '_'; "
            "an IPv6 address may be in brackets)";
  }
  if (!why && hn >= cap) why = "too long";
  if (why) {
    if (cap) host[0] = '\0';
    return gf_fail(err, GF_EINVAL, "%s: \"%s\": %s", what, shown(s, n, q), why);
  }
  memcpy(host, h, hn);
  host[hn] = '\0';
  return GF_OK;
}

gf_status gf_sock_host(const char *what, const char *s, char *host, size_t cap,
                       gf_err *err) {
  if (!s) return gf_fail(err, GF_EINVAL, "%s: no host", what);
  return host_of(what, s, strlen(s), host, cap, err);
}

gf_status gf_sock_split(const char *what, const char *s, char *host, size_t cap,
                        int *port, gf_err *err) {
  char q[72];
  if (!s) return gf_fail(err, GF_EINVAL, "%s: no HOST:PORT", what);
  size_t n = strlen(s);
  const char *colon;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    colon = close ? close + 1 : NULL;
    if (!colon || *colon != ':')
      return gf_fail(err, GF_EINVAL,
                     "%s: \"%s\" is not [IPv6]:PORT (a ']' and then ':PORT')",
                     what, shown(s, n, q));
  } else {
    colon = strrchr(s, ':');
    if (!colon)
      return gf_fail(err, GF_EINVAL, "%s: \"%s\" is not HOST:PORT (no port)",
                     what, shown(s, n, q));
    if (memchr(s, ':', (size_t)(colon - s)))
      return gf_fail(err, GF_EINVAL,
                     "%s: \"%s\": an IPv6 address with a port goes in "
                     "brackets, [ADDRESS]:PORT",
                     what, shown(s, n, q));
  }
  const char *p = colon + 1;
  size_t pn = n - (size_t)(p - s);
  long v = 0;
  int ok = pn >= 1 && pn <= 5;
  for (size_t i = 0; ok && i < pn; i++) {
    ok = p[i] >= '0' && p[i] <= '9';
    v = v * 10 + (p[i] - '0');
  }
  if (!ok || v > 65535)
    return gf_fail(err, GF_EINVAL,
                   "%s: \"%s\": the port is not a number in 0..65535", what,
                   shown(s, n, q));
  char h[GF_SOCK_HOST_MAX];
  GF_TRY(host_of(what, s, (size_t)(colon - s), h,
                 sizeof h < cap ? sizeof h : cap, err));
  memcpy(host, h, strlen(h) + 1);
  *port = (int)v;
  return GF_OK;
}

const char *gf_sock_name(const char *host, int port, char *out, size_t cap) {
  if (!cap) return out;
  int v6 = strchr(host, ':') != NULL;
  int n = snprintf(out, cap, v6 ? "[%s]:%d" : "%s:%d", host, port);
  if (!gf_fits(n, cap) && cap >= 4) memcpy(out + cap - 4, "...", 4);
  return out;
}

/* ---- connections --------------------------------------------------------- */

/* TCP_NODELAY: the callers' messages are small and answered. */
static void nodelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int every_address(const char *host) {
  return !host || !host[0] || strcmp(host, "*") == 0 ||
         strcmp(host, "::") == 0 || strcmp(host, "[::]") == 0;
}

/* socket + SO_REUSEADDR (+ V6ONLY off for dual) + bind + listen on sa;
 * the fd, or -1 with errno and *step the call that failed. */
static int bind_listen(const struct sockaddr *sa, socklen_t len, int dual,
                       const char **step) {
  *step = "socket";
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1, zero = 0;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (dual) (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  *step = "bind";
  if (bind(fd, sa, len) == 0) {
    *step = "listen";
    if (listen(fd, SOMAXCONN) == 0) return fd;
  }
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

gf_status gf_sock_listen(const char *host, int port, int *fd, int *bound,
                         gf_err *err) {
  *fd = -1;
  if (port < 0 || port > 65535)
    return gf_fail(err, GF_EINVAL, "listen: port %d not in 0..65535", port);
  const char *step = "socket";
  int s = -1;
  char name[GF_SOCK_NAME_MAX];
  if (every_address(host)) {
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_any;
    a6.sin6_port = htons((uint16_t)port);
    gf_sock_name("::", port, name, sizeof name);
    s = bind_listen((struct sockaddr *)&a6, sizeof a6, 1, &step);
    if (s < 0 && errno != EADDRINUSE) { /* no IPv6 here */
      struct sockaddr_in a4;
      memset(&a4, 0, sizeof a4);
      a4.sin_family = AF_INET;
      a4.sin_addr.s_addr = htonl(INADDR_ANY);
      a4.sin_port = htons((uint16_t)port);
      gf_sock_name("0.0.0.0", port, name, sizeof name);
      s = bind_listen((struct sockaddr *)&a4, sizeof a4, 0, &step);
    }
  } else {
    char h[GF_SOCK_HOST_MAX], ps[8];
    GF_TRY(gf_sock_host("listen", host, h, sizeof h, err));
    int pn = snprintf(ps, sizeof ps, "%d", port);
    if (!gf_fits(pn, sizeof ps)) /* 0..65535 always fits */
      return gf_fail(err, GF_EINVAL, "listen: port %d", port);
    gf_sock_name(h, port, name, sizeof name);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(h, ps, &hints, &res);
    if (g != 0)
      return gf_fail(err, GF_EINVAL, "%s: resolve: %s", name,
                     g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    errno = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai && s < 0; ai = ai->ai_next)
      s = bind_listen(ai->ai_addr, ai->ai_addrlen, 0, &step);
    int e = errno;
    freeaddrinfo(res);
    errno = e;
  }
  if (s < 0) {
    int e = errno;
    gf_fail(err, GF_EIO, "%s: %s: %s", name, step, strerror(e));
    errno = e;
    return GF_EIO;
  }
  if (bound) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *bound = port;
    if (getsockname(s, (struct sockaddr *)&ss, &len) == 0)
      *bound = ss.ss_family == AF_INET6
                   ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                   : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  *fd = s;
  return GF_OK;
}

int gf_sock_accept(int lfd) {
  int fd;
  do {
    fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) nodelay(fd);
  return fd;
}

/* One non-blocking connect to ai, polled until `until` (seconds). Returns
 * the fd, or -1 with errno (ETIMEDOUT when `until` passed). */
static int connect_one(const struct addrinfo *ai, double until) {
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  ai->ai_protocol);
  if (fd < 0) return -1;
  int e = 0;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    e = errno;
    while (e == EINPROGRESS || e == EINTR) {
      struct pollfd pf = {fd, POLLOUT, 0};
      int ms = gf_ms_left(until);
      int pr = ms ? poll(&pf, 1, ms) : 0;
      if (pr < 0 && errno == EINTR) continue;
      if (pr < 0) {
        e = errno;
      } else if (pr == 0) {
        e = ETIMEDOUT;
      } else {
        socklen_t len = sizeof e;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
      }
      break;
    }
  }
  if (e) {
    close(fd);
    errno = e;
    return -1;
  }
  nodelay(fd);
  return fd;
}

gf_status gf_sock_dial(const char *host, int port, double deadline, int *fd,
                       gf_err *err) {
  *fd = -1;
  char h[GF_SOCK_HOST_MAX], name[GF_SOCK_NAME_MAX], ps[8];
  GF_TRY(gf_sock_host("dial", host, h, sizeof h, err));
  gf_sock_name(h, port, name, sizeof name);
  if (port < 1 || port > 65535)
    return gf_fail(err, GF_EINVAL, "%s: the port is not in 1..65535", name);
  int pn = snprintf(ps, sizeof ps, "%d", port);
  if (!gf_fits(pn, sizeof ps)) /* 1..65535 always fits */
    return gf_fail(err, GF_EINVAL, "%s: port", name);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int g = getaddrinfo(h, ps, &hints, &res);
  if (g == EAI_NONAME)
    return gf_fail(err, GF_EINVAL, "%s: resolve: %s", name, gai_strerror(g));
  if (g != 0) /* a name server that did not answer: may pass */
    return gf_fail(err, GF_EIO, "%s: resolve: %s", name,
                   g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
  int last = ETIMEDOUT;
  for (struct addrinfo *ai = res; ai && gf_ms_left(deadline);
       ai = ai->ai_next) {
    double until = deadline;
    if (ai->ai_next && gf_mono_s() + NEXT_ADDR_S < deadline)
      until = gf_mono_s() + NEXT_ADDR_S;
    int s = connect_one(ai, until);
    if (s >= 0) {
      freeaddrinfo(res);
      *fd = s;
      return GF_OK;
    }
    last = errno;
  }
  freeaddrinfo(res);
  gf_status st = gf_ms_left(deadline) ? GF_EIO : GF_ETIMEOUT;
  return gf_fail(err, st, "%s: connect: %s", name, strerror(last));
}

gf_status gf_sock_dial_until(const char *host, int port, double deadline,
                             double retry_s, int *fd, gf_err *err) {
  gf_err e;
  gf_status st = gf_fail(&e, GF_ETIMEOUT, "dial: no time left for an attempt");
  *fd = -1;
  for (int tries = 0; gf_ms_left(deadline); tries++) {
    if (tries) {
      double left = deadline - gf_mono_s();
      double nap = retry_s < left ? retry_s : left;
      if (nap > 0) {
        struct timespec ts = {(time_t)nap,
                              (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&ts, NULL);
      }
      if (!gf_ms_left(deadline)) break;
    }
    st = gf_sock_dial(host, port, deadline, fd, &e);
    if (st == GF_OK || st == GF_EINVAL) break;
  }
  if (st == GF_OK) return GF_OK;
  if (err) *err = e;
  if (st == GF_EINVAL) return st;
  if (err) err->code = GF_ETIMEOUT;
  return GF_ETIMEOUT;
}

/* Moves exactly n bytes (out: send from p, which is then only read; else
 * recv into p) before the deadline. */
static gf_status move_full(int fd, unsigned char *p, size_t n, int out,
                           double deadline, size_t *got, gf_err *err) {
  size_t done = 0;
  gf_status st = GF_OK;
  while (done < n) {
    ssize_t k = out ? send(fd, p + done, n - done, MSG_NOSIGNAL)
                    : recv(fd, p + done, n - done, 0);
    if (k > 0) {
      done += (size_t)k;
      continue;
    }
    if (k == 0 && !out) {
      st = gf_fail(err, GF_EIO,
                   "the peer closed the connection after %zu of %zu bytes",
                   done, n);
      break;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      int e = errno;
      if (e == EPIPE || (out && e == ECONNRESET))
        st = gf_fail(err, GF_EIO,
                     "the peer closed the connection after %zu of %zu bytes",
                     done, n);
      else
        st = gf_fail(err, GF_EIO, "%s after %zu of %zu bytes: %s",
                     out ? "send" : "recv", done, n, strerror(e));
      break;
    }
    if (k < 0 && errno == EINTR) continue;
    struct pollfd pf = {fd, (short)(out ? POLLOUT : POLLIN), 0};
    int ms = gf_ms_left(deadline);
    if (ms == 0) {
      st = gf_fail(err, GF_ETIMEOUT, "timed out after %zu of %zu bytes", done,
                   n);
      break;
    }
    if (poll(&pf, 1, ms) < 0 && errno != EINTR) {
      st = gf_fail(err, GF_EIO, "poll: %s", strerror(errno));
      break;
    }
  }
  if (got) *got = done;
  return st;
}

gf_status gf_sock_read_full(int fd, void *buf, size_t n, double deadline,
                            size_t *got, gf_err *err) {
  return move_full(fd, buf, n, 0, deadline, got, err);
}

gf_status gf_sock_write_full(int fd, const void *buf, size_t n, double deadline,
                             gf_err *err) {
  return move_full(fd, (unsigned char *)buf, n, 1, deadline, NULL, err);
}
