/* comm_tcp_net.c - sockets for gf_comm without MPI: the small helpers the
 * NCCL rendezvous (comm_rdv.c) and the tcp engine share (listen, dial,
 * exact reads and writes against a deadline), the tcp engine's bootstrap
 * wire format with its parsers (outside input: every field checked;
 * fuzzed by tests/fuzz/fuzz_comm_tcp_hello.c), and the engine's byte
 * streams (comm_tcp.h): send queues, receives matched by header,
 * unexpected messages, the control notices BYE, ABORT and LOST. Not here:
 * the bootstrap itself (comm_tcp_boot.c) and the collectives
 * (comm_tcp.c). */
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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"
#include "comm_tcp.h"
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

/* ---- streams of the tcp engine (comm_tcp.h) ------------------------------ */

#define HDR GF_TCP_HDR
/* The most a failing rank spends finishing half-sent messages and sending
 * LOST notices, over all peers together. */
#define LOST_FLUSH_S 1.0
/* Messages gathered into one sendmsg (two iovecs each). */
#define SEND_BATCH 8

gf_status gf_tcp_broke(tcp_state *s, gf_err *err) {
  s->broken = s->broken_err.code;
  if (err) *err = s->broken_err;
  return s->broken;
}

void gf_tcp_put_hdr(unsigned char *h, uint64_t seq, int kind, int scope,
                    int arg, uint32_t part, uint64_t bytes) {
  gf_comm_put_u32(h, (uint32_t)(seq >> 32));
  gf_comm_put_u32(h + 4, (uint32_t)seq);
  h[8] = (unsigned char)kind;
  h[9] = (unsigned char)scope;
  h[10] = (unsigned char)((unsigned)arg >> 8);
  h[11] = (unsigned char)arg;
  gf_comm_put_u32(h + 12, part);
  gf_comm_put_u32(h + 16, (uint32_t)(bytes >> 32));
  gf_comm_put_u32(h + 20, (uint32_t)bytes);
}

static uint64_t hdr_u64(const unsigned char *p) {
  return (uint64_t)gf_comm_get_u32(p) << 32 | gf_comm_get_u32(p + 4);
}

const char *gf_tcp_kind_name(int k) {
  switch (k) {
  case GF_STEP_ALLREDUCE: return "all-reduce";
  case GF_STEP_REDUCE: return "reduce";
  case GF_STEP_BCAST: return "broadcast";
  case GF_STEP_XADD: return "tree exchange";
  case GF_STEP_BARRIER: return "barrier";
  case GF_STEP_ALLGATHER: return "allgather";
  }
  return "unknown";
}

/* The header h of a message from `from` fits none of this rank's receives:
 * want is the one this rank expected (kind 0xff: it has finished op #seq
 * of h). */
static gf_status mismatch(const gf_comm *c, tcp_state *s, int from,
                          const unsigned char *g, const unsigned char *w,
                          gf_err *err) {
  if (w[8] == 0xff)
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent op #%llu (%s, part %u, %llu bytes), which this "
            "rank (%d) has finished: the ranks called the collectives in "
            "different orders or with different counts",
            from, (unsigned long long)hdr_u64(g), gf_tcp_kind_name(g[8]),
            gf_comm_get_u32(g + 12), (unsigned long long)hdr_u64(g + 16),
            c->rank);
  else
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent op #%llu (%s, part %u, %llu bytes) where "
            "this rank (%d) expected op #%llu (%s, part %u, %llu bytes): "
            "the ranks called the collectives in different orders or with "
            "different counts",
            from, (unsigned long long)hdr_u64(g), gf_tcp_kind_name(g[8]),
            gf_comm_get_u32(g + 12), (unsigned long long)hdr_u64(g + 16),
            c->rank, (unsigned long long)hdr_u64(w), gf_tcp_kind_name(w[8]),
            gf_comm_get_u32(w + 12), (unsigned long long)hdr_u64(w + 16));
  return gf_tcp_broke(s, err);
}

/* Sends n bytes on non-blocking fd, waiting for room until the deadline
 * (one try is made even after it). Returns 0, or -1 (error or deadline:
 * the stream may hold part of the bytes). */
static int send_by(int fd, const unsigned char *p, size_t n, double deadline) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return -1;
    int ms = gf_comm_ms_left(deadline);
    if (ms == 0) return -1;
    struct pollfd pf = {fd, POLLOUT, 0};
    (void)poll(&pf, 1, ms);
  }
  return 0;
}

/* Tells every peer but `lost` (and those that said BYE) that rank `lost`
 * is gone for `reason` (GF_TCP_LOST_*, with `detail`): a LOST header,
 * after the rest of a message this rank was half-way through sending to
 * that peer (the stream must stay framed). At most LOST_FLUSH_S over all
 * peers; best effort: a peer whose socket takes nothing in time learns
 * from its own streams or its timeout. */
static void tell_lost(const gf_comm *c, tcp_state *s, int lost, int reason,
                      int64_t detail) {
  double deadline = gf_comm_now() + LOST_FLUSH_S;
  unsigned char h[HDR];
  gf_tcp_put_hdr(h, 0, GF_TCP_K_LOST, reason, 0, (uint32_t)lost,
                 (uint64_t)detail);
  for (int p = 0; p < c->world; p++) {
    tcp_peer *P = &s->peer[p];
    if (p == c->rank || p == lost || P->fd < 0 || P->bye) continue;
    int ok = 1;
    tcp_msg *m = P->sq;
    if (m && m->done > 0 && m->done < HDR + m->n) {
      if (m->done < HDR)
        ok = send_by(P->fd, m->hdr + m->done, HDR - m->done, deadline) == 0;
      size_t d = m->done > HDR ? m->done - HDR : 0;
      if (ok && m->n > d)
        ok = send_by(P->fd, m->data + d, m->n - d, deadline) == 0;
      if (ok) m->done = HDR + m->n;
    }
    if (ok) (void)send_by(P->fd, h, HDR, deadline);
  }
}

/* The reason of a LOST notice as words ("connection closed"). */
static void lost_reason(int reason, int64_t detail, char *buf, size_t cap) {
  int n;
  if (reason == GF_TCP_LOST_CLOSED)
    n = snprintf(buf, cap, "connection closed");
  else if (reason == GF_TCP_LOST_ABORTED)
    n = snprintf(buf, cap, "it aborted the job, code %lld", (long long)detail);
  else if (detail > 0 && detail < 4096)
    n = snprintf(buf, cap, "%s", strerror((int)detail));
  else
    n = snprintf(buf, cap, "socket error %lld", (long long)detail);
  if (n < 0 && cap) buf[0] = '\0'; /* cut short is fine: it is a message */
}

/* Rank `peer` freed its comm (BYE) while receive m still waited on it. */
static gf_status freed_early(const gf_comm *c, tcp_state *s, int peer,
                             const tcp_msg *m, gf_err *err) {
  gf_fail(&s->broken_err, GF_EIO,
          "tcp: rank %d freed its communicator while this rank (%d) "
          "expected op #%llu (%s) from it",
          peer, c->rank, (unsigned long long)hdr_u64(m->hdr),
          gf_tcp_kind_name(m->hdr[8]));
  return gf_tcp_broke(s, err);
}

/* Peer `peer`'s stream ended (e = 0) or failed with errno e. Without a BYE
 * from it the peer is gone: every other peer is told (tell_lost). */
static gf_status peer_gone(const gf_comm *c, tcp_state *s, int peer, int e,
                           gf_err *err) {
  if (s->peer[peer].bye) {
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %d freed its communicator while this rank (%d) "
            "still had data for it or expected data from it (the ranks "
            "called different collectives?)",
            peer, c->rank);
    return gf_tcp_broke(s, err);
  }
  gf_fail(&s->broken_err, GF_EIO,
          "tcp: rank %d closed its connection (did it die?)%s%s", peer,
          e ? ": " : "", e ? strerror(e) : "");
  tell_lost(c, s, peer, e ? GF_TCP_LOST_ERROR : GF_TCP_LOST_CLOSED, e);
  return gf_tcp_broke(s, err);
}

/* A LOST header h from `from`. */
static gf_status lost_notice(const gf_comm *c, tcp_state *s, int from,
                             const unsigned char *h, gf_err *err) {
  uint32_t lost = gf_comm_get_u32(h + 12);
  int reason = h[9];
  int64_t detail = (int64_t)hdr_u64(h + 16);
  if (lost >= (uint32_t)c->world || (int)lost == from ||
      reason < GF_TCP_LOST_CLOSED || reason > GF_TCP_LOST_ABORTED) {
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent a malformed LOST notice (rank %u, reason %d)",
            from, lost, reason);
    return gf_tcp_broke(s, err);
  }
  char why[128];
  lost_reason(reason, detail, why, sizeof why);
  if ((int)lost == c->rank)
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %d lost its connection to this rank (%d): %s", from,
            c->rank, why);
  else
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %u is gone (seen by rank %d: %s)", lost, from, why);
  return gf_tcp_broke(s, err);
}

void gf_tcp_send(tcp_state *s, tcp_msg *m) {
  tcp_peer *P = &s->peer[m->peer];
  m->done = 0;
  m->next = NULL;
  m->linked = 1;
  if (P->sq_tail) P->sq_tail->next = m;
  else P->sq = m;
  P->sq_tail = m;
}

static void posted_remove(tcp_peer *P, tcp_msg *m) {
  for (tcp_msg **pp = &P->posted; *pp; pp = &(*pp)->next) {
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  }
  m->next = NULL;
  m->linked = 0;
}

gf_status gf_tcp_recv(gf_comm *c, tcp_state *s, tcp_msg *m, gf_err *err) {
  tcp_peer *P = &s->peer[m->peer];
  m->done = 0;
  m->next = NULL;
  for (tcp_unx **pu = &P->unx; *pu; pu = &(*pu)->next) {
    tcp_unx *u = *pu;
    if (memcmp(u->hdr, m->hdr, GF_TCP_ID) != 0) continue;
    if (memcmp(u->hdr + GF_TCP_ID, m->hdr + GF_TCP_ID, HDR - GF_TCP_ID) != 0)
      return mismatch(c, s, m->peer, u->hdr, m->hdr, err);
    if (u->got) memcpy(m->data, u->data, u->got);
    if (P->in_unx == u) {
      /* still arriving: the rest goes straight to m */
      P->in_unx = NULL;
      P->in_msg = m;
      m->done = HDR + u->got;
    } else {
      m->done = HDR + m->n;
    }
    *pu = u->next;
    free(u->data);
    free(u);
    return GF_OK;
  }
  if (P->bye) return freed_early(c, s, m->peer, m, err);
  m->linked = 2;
  m->next = P->posted;
  P->posted = m;
  return GF_OK;
}

void gf_tcp_unlink(tcp_state *s, tcp_msg *m) {
  tcp_peer *P = &s->peer[m->peer];
  if (P->in_msg == m) P->in_msg = NULL;
  if (m->linked == 2) {
    posted_remove(P, m);
  } else if (m->linked == 1) {
    tcp_msg *prev = NULL;
    for (tcp_msg *q = P->sq; q; prev = q, q = q->next) {
      if (q != m) continue;
      if (prev) prev->next = q->next;
      else P->sq = q->next;
      if (P->sq_tail == q) P->sq_tail = prev;
      break;
    }
  }
  m->next = NULL;
  m->linked = 0;
}

/* Sends what peer p's queue holds until its socket takes no more. */
static gf_status push_peer(gf_comm *c, tcp_state *s, int p, int *moved,
                           gf_err *err) {
  tcp_peer *P = &s->peer[p];
  while (P->sq) {
    struct iovec iov[2 * SEND_BATCH];
    int n = 0, k = 0;
    for (tcp_msg *m = P->sq; m && k < SEND_BATCH; m = m->next, k++) {
      if (m->done < HDR) {
        iov[n].iov_base = m->hdr + m->done;
        iov[n++].iov_len = HDR - m->done;
      }
      size_t d = m->done > HDR ? m->done - HDR : 0;
      if (m->n > d) {
        iov[n].iov_base = m->data + d;
        iov[n++].iov_len = m->n - d;
      }
    }
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = iov;
    mh.msg_iovlen = (size_t)n;
    ssize_t w = sendmsg(P->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return GF_OK;
    if (w < 0 && errno != EPIPE && errno != ECONNRESET) {
      gf_fail(&s->broken_err, GF_EIO, "tcp: sending to rank %d: %s", p,
              strerror(errno));
      return gf_tcp_broke(s, err);
    }
    if (w <= 0) return peer_gone(c, s, p, w < 0 ? errno : 0, err);
    *moved = 1;
    size_t left = (size_t)w;
    while (P->sq && (left || P->sq->done == HDR + P->sq->n)) {
      tcp_msg *m = P->sq;
      size_t take = HDR + m->n - m->done;
      if (take > left) take = left;
      m->done += take;
      left -= take;
      if (m->done < HDR + m->n) break;
      P->sq = m->next;
      if (!P->sq) P->sq_tail = NULL;
      m->next = NULL;
      m->linked = 0;
    }
  }
  return GF_OK;
}

/* A whole header from peer p is in P->in: a control notice, or a data
 * message for a posted receive or set aside as unexpected. */
static gf_status dispatch(gf_comm *c, tcp_state *s, int p, gf_err *err) {
  tcp_peer *P = &s->peer[p];
  const unsigned char *h = P->in;
  if (h[8] >= GF_TCP_K_BYE) {
    P->in_done = 0;
    if (h[8] == GF_TCP_K_BYE) {
      P->bye = 1;
      return P->posted ? freed_early(c, s, p, P->posted, err) : GF_OK;
    }
    if (h[8] == GF_TCP_K_LOST) return lost_notice(c, s, p, h, err);
    if (h[8] == GF_TCP_K_ABORT) {
      int64_t code = (int64_t)hdr_u64(h + 16);
      gf_fail(&s->broken_err, GF_EIO,
              "tcp: rank %d aborted the job (code %lld)", p, (long long)code);
      tell_lost(c, s, p, GF_TCP_LOST_ABORTED, code);
      return gf_tcp_broke(s, err);
    }
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent an unknown control message (kind %u)", p,
            h[8]);
    return gf_tcp_broke(s, err);
  }
  for (tcp_msg *m = P->posted; m; m = m->next) {
    if (memcmp(m->hdr, h, GF_TCP_ID) != 0) continue;
    if (memcmp(m->hdr + GF_TCP_ID, h + GF_TCP_ID, HDR - GF_TCP_ID) != 0)
      return mismatch(c, s, p, h, m->hdr, err);
    posted_remove(P, m);
    m->done = HDR;
    if (m->n) P->in_msg = m;
    else P->in_done = 0;
    return GF_OK;
  }
  unsigned char want[HDR];
  if (!gf_tcp_may_come(c, s, p, h, want))
    return mismatch(c, s, p, h, want, err);
  uint64_t n = hdr_u64(h + 16);
  tcp_unx *u = calloc(1, sizeof *u);
  if (u && n) u->data = n <= SIZE_MAX ? malloc((size_t)n) : NULL;
  if (!u || (n && !u->data)) {
    free(u);
    gf_fail(&s->broken_err, GF_ENOMEM,
            "tcp: cannot keep the %llu bytes rank %d sent ahead of this "
            "rank's receive",
            (unsigned long long)n, p);
    return gf_tcp_broke(s, err);
  }
  memcpy(u->hdr, h, HDR);
  u->n = (size_t)n;
  tcp_unx **tail = &P->unx;
  while (*tail) tail = &(*tail)->next;
  *tail = u;
  if (n) P->in_unx = u;
  else P->in_done = 0;
  return GF_OK;
}

/* The stream of p ended (k == 0) or failed (errno) while reading. */
static gf_status stream_end(gf_comm *c, tcp_state *s, int p, ssize_t k,
                            gf_err *err) {
  tcp_peer *P = &s->peer[p];
  if (P->bye && P->in_done == 0) {
    P->eof = 1; /* after its goodbye: the usual end */
    return P->posted ? freed_early(c, s, p, P->posted, err) : GF_OK;
  }
  if (k < 0 && errno != ECONNRESET) {
    gf_fail(&s->broken_err, GF_EIO, "tcp: receiving from rank %d: %s", p,
            strerror(errno));
    return gf_tcp_broke(s, err);
  }
  return peer_gone(c, s, p, k < 0 ? errno : 0, err);
}

/* Reads what peer p's socket holds. */
static gf_status pull_peer(gf_comm *c, tcp_state *s, int p, int *moved,
                           gf_err *err) {
  tcp_peer *P = &s->peer[p];
  while (!P->eof) {
    unsigned char *dst;
    size_t want;
    if (P->in_done < HDR) {
      dst = P->in + P->in_done;
      want = HDR - P->in_done;
    } else if (P->in_msg) {
      tcp_msg *m = P->in_msg;
      dst = m->data + (m->done - HDR);
      want = HDR + m->n - m->done;
    } else {
      tcp_unx *u = P->in_unx;
      dst = u->data + u->got;
      want = u->n - u->got;
    }
    ssize_t k = recv(P->fd, dst, want, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return GF_OK;
    if (k <= 0) return stream_end(c, s, p, k, err);
    *moved = 1;
    if (P->in_done < HDR) {
      P->in_done += (size_t)k;
      if (P->in_done == HDR) GF_TRY(dispatch(c, s, p, err));
    } else if (P->in_msg) {
      P->in_msg->done += (size_t)k;
      if (P->in_msg->done == HDR + P->in_msg->n) {
        P->in_msg = NULL;
        P->in_done = 0;
      }
    } else {
      P->in_unx->got += (size_t)k;
      if (P->in_unx->got == P->in_unx->n) {
        P->in_unx = NULL;
        P->in_done = 0;
      }
    }
  }
  return GF_OK;
}

gf_status gf_tcp_pump(gf_comm *c, tcp_state *s, int *moved, gf_err *err) {
  if (s->broken) {
    if (err) *err = s->broken_err;
    return s->broken;
  }
  for (int p = 0; p < c->world; p++)
    if (s->peer[p].sq) GF_TRY(push_peer(c, s, p, moved, err));
  int n = 0;
  for (int p = 0; p < c->world; p++) {
    const tcp_peer *P = &s->peer[p];
    if (P->fd < 0 || P->eof) continue;
    s->pfd[n].fd = P->fd;
    s->pfd[n].events = POLLIN;
    s->pfd[n].revents = 0;
    s->pfd_peer[n++] = p;
  }
  if (n == 0 || poll(s->pfd, (nfds_t)n, 0) <= 0) return GF_OK;
  for (int i = 0; i < n; i++)
    if (s->pfd[i].revents) GF_TRY(pull_peer(c, s, s->pfd_peer[i], moved, err));
  return GF_OK;
}

int gf_tcp_poll_set(gf_comm *c, const tcp_state *s, struct pollfd *pfd) {
  int n = 0;
  for (int p = 0; p < c->world && !s->broken; p++) {
    const tcp_peer *P = &s->peer[p];
    if (P->fd < 0 || P->eof) continue;
    pfd[n].fd = P->fd;
    pfd[n].events = (short)(POLLIN | (P->sq ? POLLOUT : 0));
    pfd[n++].revents = 0;
  }
  return n;
}

void gf_tcp_notify_all(gf_comm *c, tcp_state *s, int kind, int64_t code) {
  unsigned char h[HDR];
  gf_tcp_put_hdr(h, 0, kind, 0, 0, 0, (uint64_t)code);
  for (int p = 0; p < c->world; p++) {
    const tcp_peer *P = &s->peer[p];
    if (P->fd < 0 || (P->sq && P->sq->done > 0)) continue;
    (void)!send(P->fd, h, HDR, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

void gf_tcp_drop_unexpected(gf_comm *c, tcp_state *s) {
  for (int p = 0; p < c->world; p++) {
    tcp_peer *P = &s->peer[p];
    while (P->unx) {
      tcp_unx *u = P->unx;
      P->unx = u->next;
      free(u->data);
      free(u);
    }
    P->in_unx = NULL;
  }
}
