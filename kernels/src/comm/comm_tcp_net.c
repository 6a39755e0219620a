/* comm_tcp_net.c - the tcp engine's byte streams (comm_tcp.h): send
 * queues, receives matched by header, unexpected messages, the control
 * notices BYE, ABORT and LOST, and the one question the streams ask of the
 * requests (may an unmatched message still be for one of them?). Not here:
 * the wire format (comm_tcp_wire.c), the bootstrap (comm_tcp_boot.c), the
 * collectives (comm_tcp.c), sockets themselves (gf/sock.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comm_impl.h"
#include "comm_tcp.h"
#include "gf/sock.h"

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
            from, (unsigned long long)gf_be64_get(g), gf_tcp_kind_name(g[8]),
            gf_be32_get(g + 12), (unsigned long long)gf_be64_get(g + 16),
            c->rank);
  else
    gf_fail(&s->broken_err, GF_EINVAL,
            "tcp: rank %d sent op #%llu (%s, part %u, %llu bytes) where "
            "this rank (%d) expected op #%llu (%s, part %u, %llu bytes): "
            "the ranks called the collectives in different orders or with "
            "different counts",
            from, (unsigned long long)gf_be64_get(g), gf_tcp_kind_name(g[8]),
            gf_be32_get(g + 12), (unsigned long long)gf_be64_get(g + 16),
            c->rank, (unsigned long long)gf_be64_get(w), gf_tcp_kind_name(w[8]),
            gf_be32_get(w + 12), (unsigned long long)gf_be64_get(w + 16));
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
    int ms = gf_ms_left(deadline);
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
  double deadline = gf_mono_s() + LOST_FLUSH_S;
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
          peer, c->rank, (unsigned long long)gf_be64_get(m->hdr),
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
  uint32_t lost = gf_be32_get(h + 12);
  int reason = h[9];
  int64_t detail = (int64_t)gf_be64_get(h + 16);
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
      int64_t code = (int64_t)gf_be64_get(h + 16);
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
  uint64_t n = gf_be64_get(h + 16);
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

/* ---- what may still come ------------------------------------------------ */

int gf_tcp_may_come(const gf_comm *c, const tcp_state *s, int peer,
                    const unsigned char *h, unsigned char want[GF_TCP_HDR]) {
  uint64_t seq = gf_be64_get(h);
  int kind = h[8], scope = h[9], arg = h[10] << 8 | h[11];
  for (int i = 0; i < GF_COMM_SLOTS; i++) {
    const gf_comm_req *r = &c->reqs[i];
    if (!r->active || r->seq != seq) continue;
    int first = -1;
    for (int j = r->cur; !r->failed && j < r->nsteps; j++) {
      const gf_comm_step *st = &r->steps[j];
      if (!gf_comm_step_talks(st->kind)) continue;
      if (first < 0) first = j;
      if (st->kind == kind && st->scope == scope &&
          (gf_tcp_step_arg(st) & 0xffff) == arg)
        return 1; /* this step or a later one of the op: a later round */
    }
    if (first < 0) break; /* finished here */
    const tcp_slot *ts = &s->slots[i];
    if (first == r->cur && ts->live && ts->nrecv && ts->recv.peer == peer) {
      memcpy(want, ts->recv.hdr, GF_TCP_HDR);
    } else {
      const gf_comm_step *st = &r->steps[first];
      gf_tcp_put_hdr(want, seq, st->kind, st->scope, gf_tcp_step_arg(st), 0, 0);
    }
    return 0;
  }
  if (seq >= c->next_seq) return 1; /* a collective this rank has not
                                       called yet */
  gf_tcp_put_hdr(want, seq, 0xff, 0, 0, 0, 0);
  return 0;
}
