/* comm_tcp_net.c - sockets for gf_comm without MPI: the small helpers the
 * NCCL rendezvous (comm_rdv.c) and the tcp engine share (listen, dial,
 * exact reads and writes against a deadline), the tcp engine's bootstrap
 * wire format with its parsers (outside input: every field checked; fuzzed
 * by tests/fuzz/fuzz_comm_tcp_hello.c), and the bootstrap itself, which
 * leaves a full mesh of connected sockets. Not here: collectives (the
 * engine's steps are in comm_tcp.c). */
#include <arpa/inet.h>
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
                       double deadline, int *fd, char *why, size_t why_cap,
                       gf_err *err) {
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int tries = 0;
  snprintf(why, why_cap, "no attempt");
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
        snprintf(why, why_cap, "resolving: %s", gai_strerror(g));
        continue;
      }
    }
    int s = gf_comm_connect_once(ai, deadline);
    if (s >= 0) {
      freeaddrinfo(ai);
      *fd = s;
      return GF_OK;
    }
    snprintf(why, why_cap, "connect: %s", strerror(errno));
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

/* ---- bootstrap ----------------------------------------------------------- */

#define WHO "tcp"

/* "2, 5, 7 (and 3 more)": the ranks in [lo, hi) whose seen[] is 0. */
static void list_missing(const unsigned char *seen, int lo, int hi, char *buf,
                         size_t cap) {
  size_t o = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (int r = lo; r < hi; r++) {
    if (seen[r]) continue;
    if (shown == 16 || o + 16 > cap) {
      more++;
      continue;
    }
    o += (size_t)snprintf(buf + o, cap - o, "%s%d", shown ? ", " : "", r);
    shown++;
  }
  if (more && o + 24 < cap) snprintf(buf + o, cap - o, " (and %d more)", more);
}

static void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static gf_status send_msg(int fd, const gf_tcp_msg *m, double deadline,
                          const char *to, gf_err *err) {
  unsigned char b[GF_TCP_MSG_BYTES];
  gf_comm_tcp_put_msg(b, m);
  if (gf_comm_io_full(fd, b, sizeof b, 1, deadline) != 0)
    return gf_fail(err, errno == ETIMEDOUT ? GF_ETIMEOUT : GF_EIO,
                   WHO ": sending to %s: %s", to, strerror(errno));
  return GF_OK;
}

/* Reads and parses one message; `from` names the peer in messages. */
static gf_status recv_msg(int fd, gf_tcp_msg *m, double deadline,
                          double timeout_s, const char *from, gf_err *err) {
  unsigned char b[GF_TCP_MSG_BYTES];
  if (gf_comm_io_full(fd, b, sizeof b, 0, deadline) != 0) {
    if (errno == ETIMEDOUT)
      return gf_fail(err, GF_ETIMEOUT, WHO ": %s sent nothing within %.3g s",
                     from, timeout_s);
    return gf_fail(err, GF_EIO,
                   WHO ": %s closed the connection during the "
                       "bootstrap (%s; did it fail?)",
                   from, strerror(errno));
  }
  gf_err e;
  if (gf_comm_tcp_parse_msg(b, sizeof b, m, &e))
    return gf_fail(err, GF_EFORMAT, "%s (from %s)", e.msg, from);
  return GF_OK;
}

/* The address rank 0 saw for an accepted connection, as a table entry. */
static void entry_of(int fd, int port, unsigned char *e) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  memset(e, 0, GF_TCP_ENTRY_BYTES);
  gf_comm_put_u32(e + 20, (uint32_t)port);
  if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) return;
  if (ss.ss_family == AF_INET) {
    e[0] = 4;
    memcpy(e + 4, &((struct sockaddr_in *)&ss)->sin_addr, 4);
  } else if (ss.ss_family == AF_INET6) {
    const unsigned char *a =
        (const unsigned char *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0) {
      e[0] = 4;
      memcpy(e + 4, a + 12, 4);
    } else {
      e[0] = 6;
      memcpy(e + 4, a, 16);
    }
  }
}

static uint32_t make_token(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
               ((uint64_t)getpid() << 40);
  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull;
  uint32_t t = (uint32_t)(x >> 32);
  return t ? t : 1;
}

/* Rank 0: collects the hellos on MASTER_PORT (fds[r] = the connection of
 * rank r) and sends the table. */
static gf_status serve(const gf_launch_info *li, int *fds, double deadline,
                       double timeout_s, gf_err *err) {
  int world = li->world_size, lfd = -1;
  GF_TRY(gf_comm_listen(WHO, li->master_port, &lfd, NULL, err));
  size_t tbytes = (size_t)world * GF_TCP_ENTRY_BYTES;
  unsigned char *seen = calloc((size_t)world, 1);
  unsigned char *table = calloc(1, tbytes);
  if (!seen || !table) {
    free(seen);
    free(table);
    close(lfd);
    return gf_fail(err, GF_ENOMEM, WHO ": cannot allocate a table of %d ranks",
                   world);
  }
  seen[0] = 1;
  int arrived = 1, ignored = 0;
  gf_status st = GF_OK;
  char last[160] = "";
  while (!st && arrived < world) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = gf_comm_ms_left(deadline);
    if (ms == 0) {
      char miss[200];
      list_missing(seen, 1, world, miss, sizeof miss);
      st = gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank 0 heard from %d of %d ranks on MASTER_PORT %d "
                       "within %.3g s; missing: %s%s%s",
                   arrived - 1, world - 1, li->master_port, timeout_s, miss,
                   ignored ? "; ignored: " : "", ignored ? last : "");
      break;
    }
    if (poll(&pf, 1, ms) <= 0) continue;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    if (gf_comm_set_nonblock(fd) != 0) {
      close(fd);
      continue;
    }
    /* one slow client may not hold rank 0 past a few seconds */
    double hd = gf_comm_now() + 5.0;
    gf_tcp_msg m;
    gf_err e;
    gf_status ms_st = recv_msg(fd, &m, hd < deadline ? hd : deadline, timeout_s,
                               "a connection to MASTER_PORT", &e);
    if (!ms_st && m.kind != GF_TCP_HELLO)
      ms_st = gf_fail(&e, GF_EFORMAT,
                      WHO ": a message of kind %d where a "
                          "hello belongs",
                      m.kind);
    if (ms_st) {
      /* not one of ours (a port scanner, a stale job): note and go on */
      ignored++;
      snprintf(last, sizeof last, "%.150s", e.msg);
      close(fd);
      continue;
    }
    int reason = m.world != world ? GF_TCP_R_WORLD
                 : seen[m.rank]   ? GF_TCP_R_TWICE
                                  : 0;
    if (reason) {
      gf_tcp_msg rj = {GF_TCP_REJECT, 0, world, reason, 0};
      send_msg(fd, &rj, gf_comm_now() + 1.0, "the rejected rank", &e);
      close(fd);
      if (reason == GF_TCP_R_WORLD)
        st = gf_fail(err, GF_EINVAL,
                     WHO ": rank %d says the world has %d ranks, rank 0 says "
                         "%d (WORLD_SIZE differs between ranks)",
                     m.rank, m.world, world);
      else
        st = gf_fail(err, GF_EINVAL,
                     WHO ": rank %d arrived twice at rank 0 (two processes "
                         "with RANK=%d?)",
                     m.rank, m.rank);
      break;
    }
    tune(fd);
    fds[m.rank] = fd;
    seen[m.rank] = 1;
    entry_of(fd, m.port, table + (size_t)m.rank * GF_TCP_ENTRY_BYTES);
    arrived++;
  }
  close(lfd);
  uint32_t token = make_token();
  for (int r = 1; !st && r < world; r++) {
    char to[32];
    snprintf(to, sizeof to, "rank %d", r);
    gf_tcp_msg t = {GF_TCP_TABLE, r, world, 0, token};
    st = send_msg(fds[r], &t, deadline, to, err);
    if (!st && gf_comm_io_full(fds[r], table, tbytes, 1, deadline) != 0)
      st = gf_fail(err, errno == ETIMEDOUT ? GF_ETIMEOUT : GF_EIO,
                   WHO ": sending the table to rank %d: %s", r,
                   strerror(errno));
  }
  free(seen);
  free(table);
  return st;
}

static const char *reject_why(int reason) {
  switch (reason) {
  case GF_TCP_R_WORLD: return "its world size differs from this rank's";
  case GF_TCP_R_TWICE: return "another process already came as this rank";
  default: return "the protocol versions differ";
  }
}

/* Rank j > 0: hello to rank 0 (fds[0]), the table into *tab (world
 * entries, caller frees) and the token. */
static gf_status join(const gf_launch_info *li, int my_port, int *fds,
                      gf_tcp_entry **tab, uint32_t *token, double deadline,
                      double timeout_s, gf_err *err) {
  int world = li->world_size, fd = -1;
  char why[128];
  gf_status st = gf_comm_dial(WHO, li->master_addr, li->master_port, deadline,
                              &fd, why, sizeof why, err);
  if (st == GF_ETIMEOUT)
    return gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank %d could not reach rank 0 at %.100s:%d within "
                       "%.3g s (last: %s)",
                   li->rank, li->master_addr, li->master_port, timeout_s, why);
  if (st) return st;
  tune(fd);
  fds[0] = fd;
  gf_tcp_msg h = {GF_TCP_HELLO, li->rank, world, my_port, 0}, m;
  GF_TRY(send_msg(fd, &h, deadline, "rank 0", err));
  st = recv_msg(fd, &m, deadline, timeout_s, "rank 0", err);
  if (st == GF_ETIMEOUT)
    return gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank %d: rank 0 did not send the table within %.3g s "
                       "(other ranks missing? see rank 0's error)",
                   li->rank, timeout_s);
  if (st) return st;
  if (m.kind == GF_TCP_REJECT)
    return gf_fail(err, GF_EINVAL,
                   WHO ": rank 0 (world %d) rejected rank %d of world %d: %s",
                   m.world, li->rank, world, reject_why(m.port));
  if (m.kind != GF_TCP_TABLE || m.rank != li->rank || m.world != world)
    return gf_fail(err, GF_EFORMAT,
                   WHO ": rank 0 answered rank %d of %d with a message of "
                       "kind %d for rank %d of %d",
                   li->rank, world, m.kind, m.rank, m.world);
  size_t tbytes = (size_t)world * GF_TCP_ENTRY_BYTES;
  unsigned char *raw = malloc(tbytes);
  gf_tcp_entry *t = malloc((size_t)world * sizeof *t);
  if (!raw || !t) {
    free(raw);
    free(t);
    return gf_fail(err, GF_ENOMEM, WHO ": cannot allocate a table of %d ranks",
                   world);
  }
  if (gf_comm_io_full(fd, raw, tbytes, 0, deadline) != 0)
    st = gf_fail(err, errno == ETIMEDOUT ? GF_ETIMEOUT : GF_EIO,
                 WHO ": receiving the table from rank 0: %s", strerror(errno));
  if (!st) st = gf_comm_tcp_parse_table(raw, tbytes, world, t, err);
  free(raw);
  if (st) {
    free(t);
    return st;
  }
  *tab = t;
  *token = m.token;
  return GF_OK;
}

/* Rank j connects to rank i (0 < i < j) at the table's address. */
static gf_status dial_peer(const gf_tcp_entry *e, int i, int me,
                           double deadline, double timeout_s, int *out,
                           gf_err *err) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct addrinfo ai;
  memset(&ai, 0, sizeof ai);
  ai.ai_socktype = SOCK_STREAM;
  ai.ai_addr = (struct sockaddr *)&ss;
  if (e->family == 4) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)e->port);
    memcpy(&a->sin_addr, e->addr, 4);
    ai.ai_family = AF_INET;
    ai.ai_addrlen = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)e->port);
    memcpy(&a->sin6_addr, e->addr, 16);
    ai.ai_family = AF_INET6;
    ai.ai_addrlen = sizeof *a;
  }
  int last = 0;
  while (gf_comm_ms_left(deadline) > 0) {
    int fd = gf_comm_connect_once(&ai, deadline);
    if (fd >= 0) {
      *out = fd;
      return GF_OK;
    }
    last = errno;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, host, sizeof host);
  return gf_fail(err, GF_ETIMEOUT,
                 WHO ": rank %d could not connect to rank %d at %s port %d "
                     "within %.3g s (last: %s)",
                 me, i, host, e->port, timeout_s, strerror(last));
}

/* The mesh among ranks 1..world-1 (rank 0 is linked by the hellos). */
static gf_status mesh(const gf_launch_info *li, int lfd,
                      const gf_tcp_entry *tab, uint32_t token, int *fds,
                      double deadline, double timeout_s, gf_err *err) {
  int me = li->rank, world = li->world_size;
  char who[32];
  /* connect to every lower rank but 0 and identify; their listening sockets
   * exist since before their hello, so the kernel completes these
   * connections even before they accept */
  for (int i = 1; i < me; i++) {
    GF_TRY(dial_peer(&tab[i], i, me, deadline, timeout_s, &fds[i], err));
    tune(fds[i]);
    snprintf(who, sizeof who, "rank %d", i);
    gf_tcp_msg m = {GF_TCP_MESH, me, world, 0, token};
    GF_TRY(send_msg(fds[i], &m, deadline, who, err));
  }
  /* accept every higher rank */
  unsigned char *seen = calloc((size_t)world, 1);
  if (!seen)
    return gf_fail(err, GF_ENOMEM, WHO ": cannot allocate %d flags", world);
  int left = world - 1 - me, ignored = 0;
  gf_status st = GF_OK;
  char last[160] = "";
  while (left > 0) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = gf_comm_ms_left(deadline);
    if (ms == 0) {
      char miss[200];
      list_missing(seen, me + 1, world, miss, sizeof miss);
      st = gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank %d got no connection from ranks %s within "
                       "%.3g s%s%s",
                   me, miss, timeout_s, ignored ? "; ignored: " : "",
                   ignored ? last : "");
      break;
    }
    if (poll(&pf, 1, ms) <= 0) continue;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    gf_tcp_msg m;
    gf_err e;
    double hd = gf_comm_now() + 5.0;
    gf_status ms_st = gf_comm_set_nonblock(fd) != 0
                          ? gf_fail(&e, GF_EIO, "fcntl: %s", strerror(errno))
                          : recv_msg(fd, &m, hd < deadline ? hd : deadline,
                                     timeout_s, "a peer", &e);
    if (!ms_st && (m.kind != GF_TCP_MESH || m.token != token ||
                   m.world != world || m.rank <= me || seen[m.rank]))
      ms_st = gf_fail(&e, GF_EFORMAT,
                      "a message of kind %d from rank %d of %d (token %s)",
                      m.kind, m.rank, m.world,
                      m.token == token ? "ours" : "another job's");
    if (ms_st) {
      ignored++;
      snprintf(last, sizeof last, "%.150s", e.msg);
      close(fd);
      continue;
    }
    tune(fd);
    fds[m.rank] = fd;
    seen[m.rank] = 1;
    left--;
    snprintf(who, sizeof who, "rank %d", m.rank);
    gf_tcp_msg ack = {GF_TCP_MESH_ACK, me, world, 0, token};
    st = send_msg(fd, &ack, deadline, who, err);
    if (st) break;
  }
  free(seen);
  /* every lower rank confirms */
  for (int i = 1; !st && i < me; i++) {
    gf_tcp_msg m;
    snprintf(who, sizeof who, "rank %d", i);
    st = recv_msg(fds[i], &m, deadline, timeout_s, who, err);
    if (!st && (m.kind != GF_TCP_MESH_ACK || m.rank != i || m.token != token ||
                m.world != world))
      st = gf_fail(err, GF_EFORMAT,
                   WHO ": rank %d answered with kind %d for rank %d of %d", i,
                   m.kind, m.rank, m.world);
  }
  return st;
}

gf_status gf_comm_tcp_bootstrap(const gf_launch_info *li, double timeout_s,
                                int *fds, gf_err *err) {
  int world = li->world_size;
  for (int r = 0; r < world; r++) fds[r] = -1;
  if (world == 1) return GF_OK;
  if (li->master_port < 1 || li->master_port > 65535 ||
      (li->rank > 0 && !li->master_addr[0]))
    return gf_fail(err, GF_EINVAL,
                   WHO ": needs MASTER_ADDR and MASTER_PORT (launch %s gave "
                       "\"%.100s\" and %d)",
                   li->launcher, li->master_addr, li->master_port);
  double deadline = gf_comm_now() + timeout_s;
  gf_status st;
  if (li->rank == 0) {
    st = serve(li, fds, deadline, timeout_s, err);
  } else {
    int lfd = -1, port = 0;
    gf_tcp_entry *tab = NULL;
    uint32_t token = 0;
    st = gf_comm_listen(WHO, 0, &lfd, &port, err);
    if (!st) st = join(li, port, fds, &tab, &token, deadline, timeout_s, err);
    if (!st) st = mesh(li, lfd, tab, token, fds, deadline, timeout_s, err);
    if (lfd >= 0) close(lfd);
    free(tab);
  }
  if (st) {
    for (int r = 0; r < world; r++) {
      if (fds[r] >= 0) close(fds[r]);
      fds[r] = -1;
    }
  }
  return st;
}
