/* comm_tcp.c - the tcp engine: host buffers over a full mesh of TCP
 * connections bootstrapped from MASTER_ADDR:MASTER_PORT (comm_tcp_net.c),
 * for CPU ranks without MPI (a torchrun-style launch, like PyTorch's gloo).
 *
 * Every step is a short list of rounds; a round is a set of sends and at
 * most one receive, each a message of a 24-byte header and its bytes, moved
 * with non-blocking send/recv so that step_test (and so gf_comm_test)
 * advances whatever the sockets allow and never waits. lanes = 1 and
 * serial_issue = 1: one communicating step in flight per comm, so every
 * per-peer byte stream holds the messages in the order both sides expect.
 *   ALLREDUCE  ring: reduce-scatter then allgather in world-size chunks (a
 *              fixed order of additions for a given world; every rank ends
 *              with the same bits)
 *   REDUCE     linear: the root adds the others' buffers in scope order
 *   BCAST      linear: the root sends to every member
 *   XADD       exchange with `peer`, then lower rank's + higher rank's
 *   BARRIER    dissemination, ceil(log2 P) rounds of empty messages
 *   ALLGATHER  ring
 * Message header, integers big-endian: op seq u64 | step kind u8 | scope u8
 * | arg u16 (tree level, root) | part u32 (round; REDUCE: the sender's
 * position) | bytes u64. The receiver checks
 * it against its own, so ranks that call collectives in another order fail
 * with GF_EINVAL instead of reading garbage. Three control headers, each
 * sent only between two messages of a stream, with seq 0 and no payload:
 *   BYE    sent by gf_comm_free; the rest zero
 *   ABORT  gf_comm_abort; bytes = the code (two's complement)
 *   LOST   "rank L is gone": part = L, scope = the reason (LOST_CLOSED: its
 *          stream ended without a BYE; LOST_ERROR: a socket error, bytes =
 *          the errno; LOST_ABORTED: it sent ABORT, bytes = its code), arg 0
 *
 * A dead peer is found at once, not at the timeout: a recv of 0 bytes or a
 * reset on a peer of the round, and on every other peer a poll that finds
 * the stream closed without a BYE. The rank that finds it (or that receives
 * a peer's ABORT) tells every other peer at once with a LOST notice before
 * it returns GF_EIO, finishing first a message it was half-way through
 * sending to that peer (at most LOST_FLUSH_S in all): so a rank whose own
 * step waits on a live peer (rank 0 waiting on rank 1, which waits on the
 * dead rank 2) fails within milliseconds too, with "rank 2 is gone (seen
 * by rank 1: connection closed)", instead of at the timeout. A LOST notice
 * is not passed on again. Any such failure breaks the comm (later steps
 * fail with the same error). A peer that vanishes without a FIN or reset
 * (a partition) is found by the timeout only. Not here: the choice of
 * steps (comm.c). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comm_impl.h"

#define HDR 24
enum { K_BYE = 0xf0, K_ABORT = 0xf1, K_LOST = 0xf2 };
/* LOST reasons (the scope byte of a LOST header) */
enum { LOST_CLOSED = 1, LOST_ERROR = 2, LOST_ABORTED = 3 };
/* The most a failing rank spends finishing half-sent messages and sending
 * LOST notices, over all peers together. */
#define LOST_FLUSH_S 1.0

typedef struct tcp_xfer {
  int peer;               /* world rank */
  unsigned char *data;    /* send: source; recv: destination (n bytes) */
  size_t n;               /* payload bytes */
  size_t done;            /* bytes moved so far, 0..HDR + n */
  unsigned char hdr[HDR]; /* send: the header sent; recv: the one expected */
  unsigned char got[HDR]; /* recv: the header as it arrives */
} tcp_xfer;

typedef struct tcp_state {
  int *fd;                /* [world] socket to each peer; -1 for this rank
                             and after abort */
  unsigned char *bye;     /* [world] the peer said BYE (freed its comm) */
  int *all;               /* [world] 0..world-1: the WORLD scope */
  int *node, nnode;       /* hier: world ranks of this host, ascending */
  int *leaders, nleaders; /* hier: the lowest rank of every host */
  struct pollfd *pfd;     /* [world] scratch of the dead-peer watch */
  int *pfd_peer;          /* [world] peer of each pfd entry */
  tcp_xfer *sends;        /* [world] sends of the current round */
  int nsend;
  tcp_xfer recv; /* the current round's receive when nrecv == 1 */
  int nrecv;
  int slot;               /* request whose communicating step is in flight;
                         -1 when none */
  int round, nrounds;     /* of that step: round in 0..nrounds */
  unsigned char *scratch; /* received operands; owned, grown as needed */
  size_t scratch_cap;
  gf_status broken; /* a failure that ended the streams (then broken_err) */
  gf_err broken_err;
} tcp_state;

/* ---- headers ------------------------------------------------------------- */

static void put_hdr(unsigned char *h, uint64_t seq, int kind, int scope,
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

static const char *kind_name(int k) {
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

/* Records the failure just written into s->broken_err (with gf_fail) as
 * the one that left the streams unusable; every later step fails with it
 * too. Copies it into err and returns its code. */
static gf_status broke(tcp_state *s, gf_err *err) {
  s->broken = s->broken_err.code;
  if (err) *err = s->broken_err;
  return s->broken;
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
 * is gone for `reason` (LOST_*, with `detail`): a LOST header, after the
 * rest of any message this rank was half-way through sending to that peer
 * (the stream must stay framed). At most LOST_FLUSH_S over all peers; best
 * effort: a peer whose socket takes nothing in time learns from its own
 * watch or its timeout. */
static void tell_lost(const gf_comm *c, tcp_state *s, int lost, int reason,
                      int64_t detail) {
  double deadline = gf_comm_now() + LOST_FLUSH_S;
  unsigned char h[HDR];
  put_hdr(h, 0, K_LOST, reason, 0, (uint32_t)lost, (uint64_t)detail);
  for (int p = 0; p < c->world; p++) {
    if (p == c->rank || p == lost || s->fd[p] < 0 || s->bye[p]) continue;
    int ok = 1;
    for (int i = 0; ok && i < s->nsend; i++) {
      tcp_xfer *x = &s->sends[i];
      if (x->peer != p || x->done == 0 || x->done == HDR + x->n) continue;
      if (x->done < HDR)
        ok = send_by(s->fd[p], x->hdr + x->done, HDR - x->done, deadline) == 0;
      size_t d = x->done > HDR ? x->done - HDR : 0;
      if (ok && x->n > d)
        ok = send_by(s->fd[p], x->data + d, x->n - d, deadline) == 0;
      if (ok) x->done = HDR + x->n;
    }
    if (ok) (void)send_by(s->fd[p], h, HDR, deadline);
  }
}

/* The reason of a LOST notice as words ("connection closed"). */
static void lost_reason(int reason, int64_t detail, char *buf, size_t cap) {
  int n;
  if (reason == LOST_CLOSED)
    n = snprintf(buf, cap, "connection closed");
  else if (reason == LOST_ABORTED)
    n = snprintf(buf, cap, "it aborted the job, code %lld", (long long)detail);
  else if (detail > 0 && detail < 4096)
    n = snprintf(buf, cap, "%s", strerror((int)detail));
  else
    n = snprintf(buf, cap, "socket error %lld", (long long)detail);
  if (n < 0 && cap) buf[0] = '\0'; /* cut short is fine: it is a message */
}

/* Peer `peer`'s stream ended (e = 0) or failed with errno e. Without a BYE
 * from it the peer is gone: every other peer is told (tell_lost). */
static gf_status peer_gone(const gf_comm *c, tcp_state *s, int peer, int e,
                           gf_err *err) {
  if (s->bye[peer]) {
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %d freed its communicator while this rank (%d) "
            "still expected data from it (the ranks called different "
            "collectives?)",
            peer, c->rank);
    return broke(s, err);
  }
  gf_fail(&s->broken_err, GF_EIO,
          "tcp: rank %d closed its connection (did it die?)%s%s", peer,
          e ? ": " : "", e ? strerror(e) : "");
  tell_lost(c, s, peer, e ? LOST_ERROR : LOST_CLOSED, e);
  return broke(s, err);
}

/* A LOST header h from `from`. */
static gf_status lost_notice(const gf_comm *c, tcp_state *s, int from,
                             const unsigned char *h, gf_err *err) {
  uint32_t lost = gf_comm_get_u32(h + 12);
  int reason = h[9];
  int64_t detail = (int64_t)hdr_u64(h + 16);
  if (lost >= (uint32_t)c->world || (int)lost == from || reason < LOST_CLOSED ||
      reason > LOST_ABORTED) {
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent a malformed LOST notice (rank %u, reason %d)",
            from, lost, reason);
    return broke(s, err);
  }
  char why[128];
  lost_reason(reason, detail, why, sizeof why);
  if ((int)lost == c->rank)
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %d lost its connection to this rank (%d): %s", from,
            c->rank, why);
  else
    gf_fail(&s->broken_err, GF_EIO, "tcp: rank %u is gone (seen by rank %d: %s)",
            lost, from, why);
  return broke(s, err);
}

/* The received header differs from the expected one. */
static gf_status mismatch(const gf_comm *c, tcp_state *s, const tcp_xfer *x,
                          gf_err *err) {
  const unsigned char *g = x->got, *w = x->hdr;
  if (g[8] == K_LOST) return lost_notice(c, s, x->peer, g, err);
  if (g[8] == K_ABORT) {
    int64_t code = (int64_t)hdr_u64(g + 16);
    gf_fail(&s->broken_err, GF_EIO, "tcp: rank %d aborted the job (code %lld)",
            x->peer, (long long)code);
    tell_lost(c, s, x->peer, LOST_ABORTED, code);
  } else if (g[8] == K_BYE) {
    s->bye[x->peer] = 1;
    gf_fail(&s->broken_err, GF_EIO,
            "tcp: rank %d freed its communicator while this rank (%d) "
            "expected op #%llu (%s) from it",
            x->peer, c->rank, (unsigned long long)hdr_u64(w), kind_name(w[8]));
  } else {
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent op #%llu (%s, part %u, %llu bytes) where "
            "this rank (%d) expected op #%llu (%s, part %u, %llu bytes): "
            "the ranks called the collectives in different orders or with "
            "different counts",
            x->peer, (unsigned long long)hdr_u64(g), kind_name(g[8]),
            gf_comm_get_u32(g + 12), (unsigned long long)hdr_u64(g + 16),
            c->rank, (unsigned long long)hdr_u64(w), kind_name(w[8]),
            gf_comm_get_u32(w + 12), (unsigned long long)hdr_u64(w + 16));
  }
  return broke(s, err);
}

/* ---- scopes and rounds --------------------------------------------------- */

static void scope_of(const gf_comm *c, const tcp_state *s, int scope,
                     const int **m, int *p, int *q) {
  *m = s->all;
  *p = c->world;
  if (scope == GF_SCOPE_NODE) *m = s->node, *p = s->nnode;
  else if (scope == GF_SCOPE_LEADERS) *m = s->leaders, *p = s->nleaders;
  *q = -1;
  for (int i = 0; i < *p; i++)
    if ((*m)[i] == c->rank) *q = i;
}

static int mod(int x, int p) { return ((x % p) + p) % p; }

/* Chunk k of the ring: elements [off(k), off(k + 1)). */
static size_t chunk_off(size_t count, int p, int k) {
  size_t per = count / (size_t)p, extra = count % (size_t)p;
  return per * (size_t)k + ((size_t)k < extra ? (size_t)k : extra);
}

static int step_rounds(const gf_comm_step *st, int p, int q) {
  if (p <= 1 && st->kind != GF_STEP_XADD) return 0;
  switch (st->kind) {
  case GF_STEP_ALLREDUCE: return 2 * (p - 1);
  case GF_STEP_REDUCE: return q == st->peer ? p - 1 : 1;
  case GF_STEP_BCAST: return 1;
  case GF_STEP_XADD: return 1;
  case GF_STEP_BARRIER: {
    int n = 0;
    while ((1 << n) < p) n++;
    return n;
  }
  case GF_STEP_ALLGATHER: return p - 1;
  }
  return 0;
}

/* A message of the current round; `part` tells it apart within the step
 * (the round, or for REDUCE the sender's position, which the root
 * receives in turn). */
static void xfer_set(const gf_comm_req *r, tcp_xfer *x, int peer, void *data,
                     size_t n, int part) {
  const gf_comm_step *st = &r->steps[r->cur];
  x->peer = peer;
  x->data = data;
  x->n = n;
  x->done = 0;
  put_hdr(x->hdr, r->seq, st->kind, st->scope,
          st->kind == GF_STEP_XADD ? st->level : st->peer, (uint32_t)part, n);
}

static void add_send(const gf_comm_req *r, tcp_state *s, int peer, void *data,
                     size_t n, int part) {
  xfer_set(r, &s->sends[s->nsend++], peer, data, n, part);
}

static void set_recv(const gf_comm_req *r, tcp_state *s, int peer, void *data,
                     size_t n, int part) {
  s->nrecv = 1;
  xfer_set(r, &s->recv, peer, data, n, part);
}

/* The step in flight, its scope and round. */
typedef struct round_ctx {
  const gf_comm_req *r;
  const gf_comm_step *st;
  const int *m; /* world ranks of the scope */
  int p, q, t;  /* scope size, this rank's position, round */
} round_ctx;

static round_ctx round_of(const gf_comm *c, const tcp_state *s) {
  round_ctx x;
  x.r = &c->reqs[s->slot];
  x.st = &x.r->steps[x.r->cur];
  x.t = s->round;
  scope_of(c, s, x.st->scope, &x.m, &x.p, &x.q);
  return x;
}

/* Sets up round s->round of the step in flight. */
static void round_setup(const gf_comm *c, tcp_state *s) {
  round_ctx x = round_of(c, s);
  const gf_comm_req *r = x.r;
  const gf_comm_step *st = x.st;
  const int *m = x.m;
  int p = x.p, q = x.q, t = x.t;
  unsigned char *buf = r->buf;
  size_t es = r->elem, bytes = r->count * es;
  s->nsend = 0;
  s->nrecv = 0;
  switch (st->kind) {
  case GF_STEP_ALLREDUCE: {
    int right = m[mod(q + 1, p)], left = m[mod(q - 1, p)];
    int sc, rc;
    if (t < p - 1) sc = mod(q - t, p), rc = mod(q - t - 1, p);
    else sc = mod(q + 1 - (t - p + 1), p), rc = mod(q - (t - p + 1), p);
    size_t so = chunk_off(r->count, p, sc),
           sn = chunk_off(r->count, p, sc + 1) - so;
    size_t ro = chunk_off(r->count, p, rc),
           rn = chunk_off(r->count, p, rc + 1) - ro;
    add_send(r, s, right, buf + so * es, sn * es, t);
    set_recv(r, s, left, t < p - 1 ? s->scratch : buf + ro * es, rn * es, t);
    break;
  }
  case GF_STEP_REDUCE:
    if (q == st->peer) {
      int from = t < st->peer ? t : t + 1;
      set_recv(r, s, m[from], s->scratch, bytes, from);
    } else {
      add_send(r, s, m[st->peer], buf, bytes, q);
    }
    break;
  case GF_STEP_BCAST:
    if (q == st->peer) {
      for (int i = 0; i < p; i++)
        if (i != q) add_send(r, s, m[i], buf, bytes, 0);
    } else {
      set_recv(r, s, m[st->peer], buf, bytes, 0);
    }
    break;
  case GF_STEP_XADD:
    add_send(r, s, st->peer, buf, bytes, 0);
    set_recv(r, s, st->peer, s->scratch, bytes, 0);
    break;
  case GF_STEP_BARRIER:
    add_send(r, s, m[mod(q + (1 << t), p)], NULL, 0, t);
    set_recv(r, s, m[mod(q - (1 << t), p)], NULL, 0, t);
    break;
  case GF_STEP_ALLGATHER: {
    size_t n = r->count;
    int sb = mod(q - t, p), rb = mod(q - t - 1, p);
    add_send(r, s, m[mod(q + 1, p)], buf + (size_t)sb * n, n, t);
    set_recv(r, s, m[mod(q - 1, p)], buf + (size_t)rb * n, n, t);
    break;
  }
  }
}

/* The local part of a finished round: the additions. */
static void round_finish(const gf_comm *c, tcp_state *s) {
  round_ctx x = round_of(c, s);
  const gf_comm_req *r = x.r;
  int p = x.p, q = x.q, t = x.t;
  unsigned char *buf = r->buf;
  switch (x.st->kind) {
  case GF_STEP_ALLREDUCE:
    if (t < p - 1) {
      int rc = mod(q - t - 1, p);
      size_t ro = chunk_off(r->count, p, rc);
      size_t rn = chunk_off(r->count, p, rc + 1) - ro;
      unsigned char *dst = buf + ro * r->elem;
      gf_comm_host_add(r->dt, dst, s->scratch, dst, rn);
    }
    break;
  case GF_STEP_REDUCE:
    if (q == x.st->peer)
      gf_comm_host_add(r->dt, buf, buf, s->scratch, r->count);
    break;
  case GF_STEP_XADD:
    /* lower rank's value + higher rank's, whichever side this rank is */
    if (c->rank < x.st->peer)
      gf_comm_host_add(r->dt, buf, buf, s->scratch, r->count);
    else gf_comm_host_add(r->dt, buf, s->scratch, buf, r->count);
    break;
  }
}

/* ---- moving bytes -------------------------------------------------------- */

static gf_status push(const gf_comm *c, tcp_state *s, tcp_xfer *x, int *moved,
                      gf_err *err) {
  struct iovec iov[2];
  int n = 0;
  if (x->done < HDR) {
    iov[n].iov_base = x->hdr + x->done;
    iov[n++].iov_len = HDR - x->done;
  }
  size_t d = x->done > HDR ? x->done - HDR : 0;
  if (x->n > d) {
    iov[n].iov_base = x->data + d;
    iov[n++].iov_len = x->n - d;
  }
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = iov;
  mh.msg_iovlen = (size_t)n;
  ssize_t k = sendmsg(s->fd[x->peer], &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (k > 0) {
    x->done += (size_t)k;
    *moved = 1;
    return GF_OK;
  }
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return GF_OK;
  if (k < 0 && errno != EPIPE && errno != ECONNRESET) {
    gf_fail(&s->broken_err, GF_EIO, "tcp: sending to rank %d: %s", x->peer,
            strerror(errno));
    return broke(s, err);
  }
  return peer_gone(c, s, x->peer, k < 0 ? errno : 0, err);
}

static gf_status pull(const gf_comm *c, tcp_state *s, tcp_xfer *x, int *moved,
                      gf_err *err) {
  ssize_t k;
  if (x->done < HDR)
    k = recv(s->fd[x->peer], x->got + x->done, HDR - x->done, MSG_DONTWAIT);
  else
    k = recv(s->fd[x->peer], x->data + (x->done - HDR), x->n - (x->done - HDR),
             MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return GF_OK;
  if (k < 0 && errno != ECONNRESET) {
    gf_fail(&s->broken_err, GF_EIO, "tcp: receiving from rank %d: %s",
            x->peer, strerror(errno));
    return broke(s, err);
  }
  if (k <= 0) return peer_gone(c, s, x->peer, k < 0 ? errno : 0, err);
  int had_hdr = x->done >= HDR;
  x->done += (size_t)k;
  *moved = 1;
  if (!had_hdr && x->done == HDR && memcmp(x->got, x->hdr, HDR) != 0)
    return mismatch(c, s, x, err);
  return GF_OK;
}

/* Peers outside the round: a stream that ended without BYE is a dead
 * peer; a BYE at the front is consumed; an ABORT ends this comm too. Data
 * waiting for a later round is left alone. */
static gf_status watch(const gf_comm *c, tcp_state *s, gf_err *err) {
  int n = 0;
  for (int p = 0; p < c->world; p++) {
    if (p == c->rank || s->fd[p] < 0 || s->bye[p]) continue;
    if (s->nrecv && s->recv.peer == p && s->recv.done < HDR + s->recv.n)
      continue; /* pull sees what happens there */
    s->pfd[n].fd = s->fd[p];
    s->pfd[n].events = POLLIN;
    s->pfd[n].revents = 0;
    s->pfd_peer[n++] = p;
  }
  if (n == 0 || poll(s->pfd, (nfds_t)n, 0) <= 0) return GF_OK;
  for (int i = 0; i < n; i++) {
    if (!s->pfd[i].revents) continue;
    int p = s->pfd_peer[i];
    unsigned char h[HDR];
    ssize_t k = recv(s->fd[p], h, HDR, MSG_PEEK | MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      continue;
    if (k <= 0) return peer_gone(c, s, p, k < 0 ? errno : 0, err);
    if (k < HDR) continue; /* the rest is on its way */
    if (h[8] == K_BYE) {
      if (recv(s->fd[p], h, HDR, MSG_DONTWAIT) == HDR) s->bye[p] = 1;
    } else if (h[8] == K_ABORT || h[8] == K_LOST) {
      tcp_xfer x;
      memset(&x, 0, sizeof x);
      x.peer = p;
      memcpy(x.got, h, HDR);
      return mismatch(c, s, &x, err);
    }
  }
  return GF_OK;
}

/* Moves bytes until the sockets take or give no more; *done when the step
 * in flight has finished its last round. */
static gf_status pump(gf_comm *c, tcp_state *s, int *done, gf_err *err) {
  for (;;) {
    int moved = 0, busy = 0;
    for (int i = 0; i < s->nsend; i++) {
      tcp_xfer *x = &s->sends[i];
      if (x->done == HDR + x->n) continue;
      GF_TRY(push(c, s, x, &moved, err));
      busy |= x->done < HDR + x->n;
    }
    if (s->nrecv && s->recv.done < HDR + s->recv.n) {
      GF_TRY(pull(c, s, &s->recv, &moved, err));
      busy |= s->recv.done < HDR + s->recv.n;
    }
    if (!busy) {
      round_finish(c, s);
      s->nsend = s->nrecv = 0;
      if (++s->round == s->nrounds) {
        *done = 1;
        return GF_OK;
      }
      round_setup(c, s);
      continue;
    }
    if (!moved) break;
  }
  return watch(c, s, err);
}

/* ---- engine -------------------------------------------------------------- */

/* Sends a control header to every peer not in the middle of a message
 * (best effort, never waits). */
static void notify_all(gf_comm *c, tcp_state *s, int kind, int64_t code) {
  unsigned char h[HDR];
  put_hdr(h, 0, kind, 0, 0, 0, (uint64_t)code);
  for (int p = 0; p < c->world; p++) {
    if (s->fd[p] < 0) continue;
    int mid = 0;
    for (int i = 0; i < s->nsend; i++)
      mid |= s->sends[i].peer == p && s->sends[i].done > 0 &&
             s->sends[i].done < HDR + s->sends[i].n;
    if (!mid) (void)!send(s->fd[p], h, HDR, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

static void close_all(gf_comm *c, tcp_state *s, int hard) {
  for (int p = 0; p < c->world; p++) {
    if (s->fd[p] < 0) continue;
    if (hard) {
      shutdown(s->fd[p], SHUT_RDWR);
    } else {
      /* read what is left so that close sends FIN, not a reset that could
       * drop our last bytes on their way */
      unsigned char sink[4096];
      for (int i = 0; i < 64; i++)
        if (recv(s->fd[p], sink, sizeof sink, MSG_DONTWAIT) <= 0) break;
    }
    close(s->fd[p]);
    s->fd[p] = -1;
  }
}

static void tcp_fini(gf_comm *c, int quiet) {
  tcp_state *s = c->impl;
  if (!s) return;
  (void)quiet; /* nothing here waits: a BYE is sent without waiting */
  if (s->fd) {
    notify_all(c, s, K_BYE, 0);
    close_all(c, s, 0);
  }
  free(s->fd);
  free(s->bye);
  free(s->all);
  free(s->node);
  free(s->leaders);
  free(s->pfd);
  free(s->pfd_peer);
  free(s->sends);
  free(s->scratch);
  free(s);
  c->impl = NULL;
}

/* Allocates c->impl (freed by tcp_fini) and connects the mesh. */
static gf_status tcp_init(gf_comm *c, gf_err *err) {
  tcp_state *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate the state");
  size_t w = (size_t)c->world;
  s->slot = -1;
  s->fd = malloc(w * sizeof *s->fd);
  s->bye = calloc(w, 1);
  s->all = malloc(w * sizeof *s->all);
  s->pfd = malloc(w * sizeof *s->pfd);
  s->pfd_peer = malloc(w * sizeof *s->pfd_peer);
  s->sends = calloc(w, sizeof *s->sends);
  c->impl = s;
  if (!s->fd || !s->bye || !s->all || !s->pfd || !s->pfd_peer || !s->sends) {
    free(s->fd);
    s->fd = NULL;
    tcp_fini(c, 1);
    return gf_fail(err, GF_ENOMEM,
                   "tcp: cannot allocate the state of %d "
                   "ranks",
                   c->world);
  }
  for (int r = 0; r < c->world; r++) s->all[r] = r;
  gf_status st = gf_comm_tcp_bootstrap(&c->launch, c->timeout_s, s->fd, err);
  if (st) {
    free(s->fd);
    s->fd = NULL; /* the bootstrap closed them */
    tcp_fini(c, 1);
  }
  return st;
}

/* The node and leader scopes from every rank's node index. */
static gf_status tcp_init_hier(gf_comm *c, gf_err *err) {
  tcp_state *s = c->impl;
  size_t w = (size_t)c->world;
  int *idx = malloc(w * sizeof *idx);
  s->node = malloc(w * sizeof *s->node);
  s->leaders = malloc(w * sizeof *s->leaders);
  if (!idx || !s->node || !s->leaders) {
    free(idx);
    return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate the scopes");
  }
  gf_status st = gf_comm_allgather(c, &c->node_index, sizeof(int), idx, err);
  s->nnode = s->nleaders = 0;
  for (int r = 0; !st && r < c->world; r++) {
    int first = 1;
    for (int q = 0; q < r && first; q++) first = idx[q] != idx[r];
    if (first) s->leaders[s->nleaders++] = r;
    if (idx[r] == c->node_index) s->node[s->nnode++] = r;
  }
  free(idx);
  if (!st && (s->nnode != c->local_world || s->nleaders != c->nodes ||
              s->node[c->local_rank] != c->rank))
    st = gf_fail(err, GF_ESTATE,
                 "tcp: the node indices disagree with the hostnames (%d "
                 "ranks here, %d hosts)",
                 s->nnode, s->nleaders);
  return st;
}

static void tcp_abort(gf_comm *c, int code) {
  tcp_state *s = c->impl;
  if (!s || !s->fd) return;
  notify_all(c, s, K_ABORT, code);
  close_all(c, s, 1);
  if (!s->broken) {
    gf_fail(&s->broken_err, GF_ESTATE, "tcp: the communicator was aborted");
    broke(s, NULL);
  }
}

static gf_status tcp_start(gf_comm *c, int slot, gf_err *err) {
  tcp_state *s = c->impl;
  gf_comm_req *r = &c->reqs[slot];
  const gf_comm_step *st = &r->steps[r->cur];
  if (st->kind == GF_STEP_SCALE) {
    gf_comm_host_scale(r->dt, r->buf, r->count, c->world);
    return GF_OK;
  }
  if (!gf_comm_step_talks(st->kind))
    return gf_fail(err, GF_EINVAL, "tcp: step kind %d is not mine", st->kind);
  if (s->broken) {
    if (err) *err = s->broken_err;
    return s->broken;
  }
  const int *m;
  int p, q;
  scope_of(c, s, st->scope, &m, &p, &q);
  if (q < 0 || (st->kind == GF_STEP_XADD &&
                (st->peer < 0 || st->peer >= c->world || st->peer == c->rank)))
    return gf_fail(err, GF_ESTATE, "tcp: rank %d has no part in this %s",
                   c->rank, kind_name(st->kind));
  size_t need = 0;
  if (st->kind == GF_STEP_ALLREDUCE)
    need = (r->count / (size_t)p + 1) * r->elem;
  else if (st->kind == GF_STEP_REDUCE || st->kind == GF_STEP_XADD)
    need = r->count * r->elem;
  if (need > s->scratch_cap) {
    void *nb = malloc(need);
    if (!nb)
      return gf_fail(err, GF_ENOMEM,
                     "tcp: cannot allocate %zu bytes of "
                     "scratch",
                     need);
    free(s->scratch);
    s->scratch = nb;
    s->scratch_cap = need;
  }
  if (st->kind == GF_STEP_ALLGATHER && r->count) {
    unsigned char *mine = (unsigned char *)r->buf + (size_t)q * r->count;
    if (mine != r->sendbuf) memmove(mine, r->sendbuf, r->count);
  }
  s->slot = slot;
  s->round = 0;
  s->nsend = s->nrecv = 0;
  s->nrounds = step_rounds(st, p, q);
  if (s->nrounds) round_setup(c, s);
  return GF_OK;
}

static gf_status tcp_test(gf_comm *c, int slot, int *done, gf_err *err) {
  tcp_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  *done = 0;
  if (!gf_comm_step_talks(r->steps[r->cur].kind)) {
    *done = 1;
    return GF_OK;
  }
  if (s->broken) {
    if (err) *err = s->broken_err;
    return s->broken;
  }
  if (s->slot != slot)
    return gf_fail(err, GF_ESTATE, "tcp: request %d has no step in flight",
                   slot);
  if (s->round < s->nrounds) GF_TRY(pump(c, s, done, err));
  else *done = 1;
  if (*done) s->slot = -1;
  return GF_OK;
}

static void tcp_release(gf_comm *c, int slot) {
  tcp_state *s = c->impl;
  if (s && s->slot == slot) {
    s->slot = -1;
    s->nsend = s->nrecv = 0;
  }
}

int gf_comm_tcp_peer_fd(const gf_comm *c, int peer) {
  if (!c || c->ops != &gf_comm_tcp_ops || peer < 0 || peer >= c->world)
    return -1;
  const tcp_state *s = c->impl;
  return s && s->fd ? s->fd[peer] : -1;
}

const gf_comm_ops gf_comm_tcp_ops = {
    .name = "tcp",
    .device_buffers = 0,
    .lanes = 1,
    .serial_issue = 1,
    .fence = 0,
    .init = tcp_init,
    .init_hier = tcp_init_hier,
    .fini = tcp_fini,
    .abort = tcp_abort,
    .check_buf = NULL,
    .begin = NULL,
    .step_start = tcp_start,
    .step_test = tcp_test,
    .release = tcp_release,
};
