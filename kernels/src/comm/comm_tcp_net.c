/* comm_tcp_net.c - sockets for gf_comm without MPI: the small helpers the
 * NCCL rendezvous (comm_rdv.c) and the tcp engine share (listen, dial,
 * exact reads and writes against a deadline), and the tcp engine's
 * bootstrap wire format with its parsers (outside input: every field
 * checked; fuzzed by tests/fuzz/fuzz_comm_tcp_hello.c). Not here: the
 * bootstrap itself (comm_tcp_boot.c) and the collectives (comm_tcp.c). */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"
#include "gf/text.h"

/* ---- shared socket helpers ----------------------------------------------- */

int gf_comm_ms_left(double deadline) {
  double left = deadline - gf_comm_now();
  if (left <= 0) return 0;
  return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

void gf_comm_put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

uint32_t gf_comm_get_u32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

int gf_comm_set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL, 0);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int gf_comm_io_full(int fd, void *buf, size_t n, int out, double deadline) {
  unsigned char *p = buf;
  while (n) {
    struct pollfd pf = {fd, (short)(out ? POLLOUT : POLLIN), 0};
    int ms = gf_comm_ms_left(deadline);
    if (ms == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    int pr = poll(&pf, 1, ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return -1;
    if (pr == 0) continue;
    ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
      continue;
    if (k < 0) return -1;
    if (k == 0) {
      errno = EPIPE;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

gf_status gf_comm_listen(const char *who, int port, int *out, int *bound,
                         gf_err *err) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1, zero = 0, rc = -1;
  if (fd >= 0) {
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_any;
    a6.sin6_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    rc = bind(fd, (struct sockaddr *)&a6, sizeof a6);
    if (rc != 0 && errno != EADDRINUSE) {
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return gf_fail(err, GF_EIO, "%s: socket: %s", who, strerror(errno));
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    a4.sin_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    rc = bind(fd, (struct sockaddr *)&a4, sizeof a4);
  }
  if (rc != 0 || listen(fd, SOMAXCONN) != 0 || gf_comm_set_nonblock(fd) != 0) {
    int e = errno;
    close(fd);
    if (port == 0)
      return gf_fail(err, GF_EIO, "%s: cannot open a listening socket: %s", who,
                     strerror(e));
    return gf_fail(err, GF_EIO,
                   "%s: rank 0 cannot listen on MASTER_PORT %d: %s%s", who,
                   port, strerror(e),
                   e == EADDRINUSE ? " (another process holds the port: "
                                     "pick a free MASTER_PORT)"
                                   : "");
  }
  if (bound) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
      *bound = ss.ss_family == AF_INET6
                   ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                   : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  *out = fd;
  return GF_OK;
}

int gf_comm_connect_once(const struct addrinfo *ai, double deadline) {
  int e = ECONNREFUSED;
  for (; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
    if (fd < 0) {
      e = errno;
      continue;
    }
    if (gf_comm_set_nonblock(fd) != 0) {
      e = errno;
      close(fd);
      continue;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      struct pollfd pf = {fd, POLLOUT, 0};
      int ms = gf_comm_ms_left(deadline);
      if (poll(&pf, 1, ms < 1000 ? ms : 1000) == 1) {
        socklen_t len = sizeof e;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e == 0)
          rc = 0;
      } else {
        e = ETIMEDOUT;
      }
    } else if (rc != 0) {
      e = errno;
    }
    if (rc == 0) return fd;
    close(fd);
  }
  errno = e;
  return -1;
}

gf_status gf_comm_dial(const char *who, const char *addr, int port,
                       double deadline, int *fd, gf_err *why, gf_err *err) {
  char ps[16]; /* an int: 11 characters at most */
  int pn = snprintf(ps, sizeof ps, "%d", port);
  assert(gf_fits(pn, sizeof ps));
  (void)pn;
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int tries = 0;
  gf_fail(why, GF_ETIMEOUT, "no attempt");
  *fd = -1;
  while (gf_comm_ms_left(deadline) > 0) {
    if (tries++) {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (!ai) {
      int g = getaddrinfo(addr, ps, &hints, &ai);
      if (g == EAI_NONAME)
        return gf_fail(err, GF_EINVAL,
                       "%s: cannot resolve MASTER_ADDR \"%.100s\"", who, addr);
      if (g != 0) {
        ai = NULL;
        gf_fail(why, GF_ETIMEOUT, "resolving: %s", gai_strerror(g));
        continue;
      }
    }
    int s = gf_comm_connect_once(ai, deadline);
    if (s >= 0) {
      freeaddrinfo(ai);
      *fd = s;
      return GF_OK;
    }
    gf_fail(why, GF_ETIMEOUT, "connect: %s", strerror(errno));
  }
  if (ai) freeaddrinfo(ai);
  return GF_ETIMEOUT;
}

/* ---- wire format --------------------------------------------------------- */

static const unsigned char TCP_MAGIC[4] = {'g', 'f', 'T', 'C'};

void gf_comm_tcp_put_msg(unsigned char *p, const gf_tcp_msg *m) {
  memcpy(p, TCP_MAGIC, 4);
  gf_comm_put_u32(p + 4, (uint32_t)GF_TCP_VERSION << 16 | (uint32_t)m->kind);
  gf_comm_put_u32(p + 8, (uint32_t)m->rank);
  gf_comm_put_u32(p + 12, (uint32_t)m->world);
  gf_comm_put_u32(p + 16, (uint32_t)m->port);
  gf_comm_put_u32(p + 20, m->token);
}

gf_status gf_comm_tcp_parse_msg(const unsigned char *p, size_t n,
                                gf_tcp_msg *out, gf_err *err) {
  if (!p || n != GF_TCP_MSG_BYTES)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: a bootstrap message of %zu bytes, "
                   "not %d",
                   n, GF_TCP_MSG_BYTES);
  if (memcmp(p, TCP_MAGIC, 4) != 0)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: the peer is not a ganflow tcp rank (magic %02x%02x"
                   "%02x%02x)",
                   p[0], p[1], p[2], p[3]);
  uint32_t vk = gf_comm_get_u32(p + 4);
  uint32_t version = vk >> 16, kind = vk & 0xffffu;
  uint32_t rank = gf_comm_get_u32(p + 8), world = gf_comm_get_u32(p + 12);
  uint32_t port = gf_comm_get_u32(p + 16), token = gf_comm_get_u32(p + 20);
  if (version != GF_TCP_VERSION)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: the peer speaks protocol version %u, this build %d "
                   "(mixed ganflow versions in one job?)",
                   version, GF_TCP_VERSION);
  if (kind < GF_TCP_HELLO || kind > GF_TCP_MESH_ACK)
    return gf_fail(err, GF_EFORMAT, "tcp: unknown message kind %u", kind);
  if (world < 1 || world > GF_TCP_MAX_WORLD)
    return gf_fail(err, GF_EFORMAT, "tcp: world %u not in [1, %d]", world,
                   GF_TCP_MAX_WORLD);
  if (rank >= world)
    return gf_fail(err, GF_EFORMAT, "tcp: rank %u not below world %u", rank,
                   world);
  int needs_token = kind == GF_TCP_TABLE || kind == GF_TCP_MESH ||
                    kind == GF_TCP_MESH_ACK;
  if (needs_token ? token == 0 : token != 0)
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u with token %u", kind,
                   token);
  if (kind == GF_TCP_HELLO) {
    if (rank < 1) return gf_fail(err, GF_EFORMAT, "tcp: a hello from rank 0");
    if (port < 1 || port > 65535)
      return gf_fail(err, GF_EFORMAT, "tcp: hello port %u not in [1, 65535]",
                     port);
  } else if (kind == GF_TCP_REJECT) {
    if (port < GF_TCP_R_WORLD || port > GF_TCP_R_VERSION)
      return gf_fail(err, GF_EFORMAT, "tcp: unknown reject reason %u", port);
  } else if (port != 0) {
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u with port %u", kind,
                   port);
  }
  if ((kind == GF_TCP_TABLE || kind == GF_TCP_MESH) && rank < 1)
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u for rank 0", kind);
  out->kind = (int)kind;
  out->rank = (int)rank;
  out->world = (int)world;
  out->port = (int)port;
  out->token = token;
  return GF_OK;
}

gf_status gf_comm_tcp_parse_table(const unsigned char *p, size_t n, int world,
                                  gf_tcp_entry *out, gf_err *err) {
  if (world < 1 || world > GF_TCP_MAX_WORLD || !p ||
      n != (size_t)world * GF_TCP_ENTRY_BYTES)
    return gf_fail(err, GF_EFORMAT, "tcp: a table of %zu bytes for world %d", n,
                   world);
  static const unsigned char zero[GF_TCP_ENTRY_BYTES];
  if (memcmp(p, zero, GF_TCP_ENTRY_BYTES) != 0)
    return gf_fail(err, GF_EFORMAT, "tcp: table entry of rank 0 is not empty");
  for (int r = 1; r < world; r++) {
    const unsigned char *e = p + (size_t)r * GF_TCP_ENTRY_BYTES;
    int fam = e[0];
    uint32_t port = gf_comm_get_u32(e + 20);
    int pad = e[1] | e[2] | e[3];
    int tail = 0, any = 0;
    for (int i = 0; i < 16; i++) any |= e[4 + i];
    for (int i = 4; i < 16; i++) tail |= e[4 + i];
    if ((fam != 4 && fam != 6) || pad || (fam == 4 && tail) || !any)
      return gf_fail(err, GF_EFORMAT,
                     "tcp: table entry of rank %d: family %d, not an IPv4 or "
                     "IPv6 address",
                     r, fam);
    if (port < 1 || port > 65535)
      return gf_fail(err, GF_EFORMAT,
                     "tcp: table entry of rank %d: port %u not in [1, 65535]",
                     r, port);
  }
  for (int r = 0; r < world; r++) {
    const unsigned char *e = p + (size_t)r * GF_TCP_ENTRY_BYTES;
    out[r].family = e[0];
    memcpy(out[r].addr, e + 4, 16);
    out[r].port = (int)gf_comm_get_u32(e + 20);
  }
  return GF_OK;
}
