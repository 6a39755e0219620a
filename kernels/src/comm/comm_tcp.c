/* comm_tcp.c - the tcp engine: host buffers over a full mesh of TCP
 * connections bootstrapped from MASTER_ADDR:MASTER_PORT (comm_tcp_boot.c),
 * for CPU ranks without MPI (a torchrun-style launch, like PyTorch's gloo).
 *
 * Every step is a short list of rounds; a round is a set of sends and at
 * most one receive, each a message of a 24-byte header and its bytes. The
 * messages move on per-peer streams (comm_tcp_net.c, comm_tcp.h): each
 * peer's sends go out in queue order, and each received message is
 * matched by its header against the receives posted for that peer, or
 * kept aside until its receive is posted. So the steps of several requests
 * are in flight at once (the comm's `tagged` engine: no issue order
 * between requests), and bucket k+1's rounds move while bucket k waits on
 * a slow peer; within a request the rounds, and so the additions, run in
 * the one fixed order below, whatever the interleaving: the same bits as
 * one request at a time. Nothing waits inside step_test (non-blocking
 * sockets); bytes move only inside gf_comm_* calls (no thread: one was
 * tried and measured no better, bench/dist/results-hosts-vm.md), and a
 * wait sleeps in poll() on the sockets (the `poll_set` hook).
 *   ALLREDUCE  ring: reduce-scatter then allgather in world-size chunks (a
 *              fixed order of additions for a given world; every rank ends
 *              with the same bits)
 *   REDUCE     linear: the root adds the others' buffers in scope order
 *   BCAST      linear: the root sends to every member
 *   XADD       exchange with `peer`, then lower rank's + higher rank's
 *   BARRIER    dissemination, ceil(log2 P) rounds of empty messages
 *   ALLGATHER  ring
 * The messages' header and the control headers (BYE, ABORT, LOST) are in
 * comm_tcp_wire.h.
 *
 * A dead peer is found at once, not at the timeout: every stream is read
 * whenever a request is in flight, so a recv of 0 bytes or a reset shows
 * on any peer, in the round or not. The rank that finds it (or that
 * receives a peer's ABORT) tells every other peer at once with a LOST
 * notice before it returns GF_EIO, finishing first a message it was
 * half-way through sending to that peer (at most 1 s in all): so a rank
 * whose own step waits on a live peer (rank 0 waiting on rank 1, which
 * waits on the dead rank 2) fails within milliseconds too, with "rank 2 is
 * gone (seen by rank 1: connection closed)", instead of at the timeout. A
 * LOST notice is not passed on again. Any such failure breaks the comm
 * (later steps fail with the same error). A peer that vanishes without a
 * FIN or reset (a partition) is found by the timeout only. Not here: the
 * choice of steps (comm.c). */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_impl.h"
#include "comm_tcp.h"

#define HDR GF_TCP_HDR

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
static void msg_set(const gf_comm_req *r, tcp_msg *m, int peer, void *data,
                    size_t n, int part) {
  const gf_comm_step *st = &r->steps[r->cur];
  memset(m, 0, sizeof *m);
  m->peer = peer;
  m->data = data;
  m->n = n;
  gf_tcp_put_hdr(m->hdr, r->seq, st->kind, st->scope, gf_tcp_step_arg(st),
                 (uint32_t)part, n);
}

static void add_send(const gf_comm_req *r, tcp_slot *ts, int peer, void *data,
                     size_t n, int part) {
  msg_set(r, &ts->sends[ts->nsend++], peer, data, n, part);
}

static void set_recv(const gf_comm_req *r, tcp_slot *ts, int peer, void *data,
                     size_t n, int part) {
  ts->nrecv = 1;
  msg_set(r, &ts->recv, peer, data, n, part);
}

/* The step in flight of a slot, its scope and round. */
typedef struct round_ctx {
  const gf_comm_req *r;
  const gf_comm_step *st;
  tcp_slot *ts;
  const int *m; /* world ranks of the scope */
  int p, q, t;  /* scope size, this rank's position, round */
} round_ctx;

static round_ctx round_of(const gf_comm *c, tcp_state *s, int slot) {
  round_ctx x;
  x.r = &c->reqs[slot];
  x.st = &x.r->steps[x.r->cur];
  x.ts = &s->slots[slot];
  x.t = x.ts->round;
  scope_of(c, s, x.st->scope, &x.m, &x.p, &x.q);
  return x;
}

/* Sets up round ts->round of a slot's step and hands its messages to the
 * streams. */
static gf_status round_setup(gf_comm *c, tcp_state *s, int slot, gf_err *err) {
  round_ctx x = round_of(c, s, slot);
  const gf_comm_req *r = x.r;
  const gf_comm_step *st = x.st;
  tcp_slot *ts = x.ts;
  const int *m = x.m;
  int p = x.p, q = x.q, t = x.t;
  unsigned char *buf = r->wbuf;
  size_t es = r->welem, bytes = r->count * es;
  ts->nsend = 0;
  ts->nrecv = 0;
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
    add_send(r, ts, right, buf + so * es, sn * es, t);
    set_recv(r, ts, left, t < p - 1 ? ts->scratch : buf + ro * es, rn * es,
             t);
    break;
  }
  case GF_STEP_REDUCE:
    if (q == st->peer) {
      int from = t < st->peer ? t : t + 1;
      set_recv(r, ts, m[from], ts->scratch, bytes, from);
    } else {
      add_send(r, ts, m[st->peer], buf, bytes, q);
    }
    break;
  case GF_STEP_BCAST:
    if (q == st->peer) {
      for (int i = 0; i < p; i++)
        if (i != q) add_send(r, ts, m[i], buf, bytes, 0);
    } else {
      set_recv(r, ts, m[st->peer], buf, bytes, 0);
    }
    break;
  case GF_STEP_XADD:
    add_send(r, ts, st->peer, buf, bytes, 0);
    set_recv(r, ts, st->peer, ts->scratch, bytes, 0);
    break;
  case GF_STEP_BARRIER:
    add_send(r, ts, m[mod(q + (1 << t), p)], NULL, 0, t);
    set_recv(r, ts, m[mod(q - (1 << t), p)], NULL, 0, t);
    break;
  case GF_STEP_ALLGATHER: {
    size_t n = r->count;
    int sb = mod(q - t, p), rb = mod(q - t - 1, p);
    add_send(r, ts, m[mod(q + 1, p)], buf + (size_t)sb * n, n, t);
    set_recv(r, ts, m[mod(q - 1, p)], buf + (size_t)rb * n, n, t);
    break;
  }
  }
  for (int i = 0; i < ts->nsend; i++) gf_tcp_send(s, &ts->sends[i]);
  if (ts->nrecv) return gf_tcp_recv(c, s, &ts->recv, err);
  return GF_OK;
}

/* The local part of a finished round: the additions. */
static void round_finish(const gf_comm *c, tcp_state *s, int slot) {
  round_ctx x = round_of(c, s, slot);
  const gf_comm_req *r = x.r;
  int p = x.p, q = x.q, t = x.t;
  unsigned char *buf = r->wbuf, *scratch = x.ts->scratch;
  switch (x.st->kind) {
  case GF_STEP_ALLREDUCE:
    if (t < p - 1) {
      int rc = mod(q - t - 1, p);
      size_t ro = chunk_off(r->count, p, rc);
      size_t rn = chunk_off(r->count, p, rc + 1) - ro;
      unsigned char *dst = buf + ro * r->welem;
      gf_comm_host_add(r->wdt, dst, scratch, dst, rn);
    }
    break;
  case GF_STEP_REDUCE:
    if (q == x.st->peer)
      gf_comm_host_add(r->wdt, buf, buf, scratch, r->count);
    break;
  case GF_STEP_XADD:
    /* lower rank's value + higher rank's, whichever side this rank is */
    if (c->rank < x.st->peer)
      gf_comm_host_add(r->wdt, buf, buf, scratch, r->count);
    else gf_comm_host_add(r->wdt, buf, scratch, buf, r->count);
    break;
  }
}

static int round_done(const tcp_slot *ts) {
  for (int i = 0; i < ts->nsend; i++)
    if (ts->sends[i].done < HDR + ts->sends[i].n) return 0;
  return !ts->nrecv || ts->recv.done == HDR + ts->recv.n;
}

/* ---- engine -------------------------------------------------------------- */

static void close_all(gf_comm *c, tcp_state *s, int hard) {
  for (int p = 0; p < c->world; p++) {
    tcp_peer *P = &s->peer[p];
    if (P->fd < 0) continue;
    if (hard) {
      shutdown(P->fd, SHUT_RDWR);
    } else {
      /* read what is left so that close sends FIN, not a reset that could
       * drop our last bytes on their way */
      unsigned char sink[4096];
      for (int i = 0; i < 64; i++)
        if (recv(P->fd, sink, sizeof sink, MSG_DONTWAIT) <= 0) break;
    }
    close(P->fd);
    P->fd = -1;
  }
}

static void tcp_fini(gf_comm *c, int quiet) {
  tcp_state *s = c->impl;
  if (!s) return;
  (void)quiet; /* nothing here waits: a BYE is sent without waiting */
  if (s->peer) {
    gf_tcp_notify_all(c, s, GF_TCP_K_BYE, 0);
    close_all(c, s, 0);
    gf_tcp_drop_unexpected(c, s);
  }
  for (int i = 0; i < GF_COMM_SLOTS; i++) {
    free(s->slots[i].sends);
    free(s->slots[i].scratch);
    free(s->slots[i].stage);
  }
  free(s->peer);
  free(s->all);
  free(s->node);
  free(s->leaders);
  free(s->pfd);
  free(s->pfd_peer);
  free(s);
  c->impl = NULL;
}

/* Allocates c->impl (freed by tcp_fini) and connects the mesh. */
static gf_status tcp_init(gf_comm *c, gf_err *err) {
  tcp_state *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate the state");
  size_t w = (size_t)c->world;
  int *fd = malloc(w * sizeof *fd);
  s->peer = calloc(w, sizeof *s->peer);
  s->all = malloc(w * sizeof *s->all);
  s->pfd = malloc(w * sizeof *s->pfd);
  s->pfd_peer = malloc(w * sizeof *s->pfd_peer);
  c->impl = s;
  if (!fd || !s->peer || !s->all || !s->pfd || !s->pfd_peer) {
    free(fd);
    free(s->peer);
    s->peer = NULL;
    tcp_fini(c, 1);
    return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate the state of %d ranks",
                   c->world);
  }
  for (int r = 0; r < c->world; r++) s->all[r] = r;
  gf_status st = gf_comm_tcp_bootstrap(&c->launch, c->timeout_s, fd, err);
  if (st) {
    free(fd); /* the bootstrap closed them */
    free(s->peer);
    s->peer = NULL;
    tcp_fini(c, 1);
    return st;
  }
  for (int r = 0; r < c->world; r++) s->peer[r].fd = fd[r];
  free(fd);
  return GF_OK;
}

/* The node and leader scopes from every rank's node (c->node_of). */
static gf_status tcp_init_hier(gf_comm *c, gf_err *err) {
  tcp_state *s = c->impl;
  size_t w = (size_t)c->world;
  s->node = malloc(w * sizeof *s->node);
  s->leaders = malloc(w * sizeof *s->leaders);
  if (!s->node || !s->leaders)
    return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate the scopes");
  s->nnode = s->nleaders = 0;
  for (int r = 0; r < c->world; r++) {
    int first = 1;
    for (int q = 0; q < r && first; q++) first = c->node_of[q] != c->node_of[r];
    if (first) s->leaders[s->nleaders++] = r;
    if (c->node_of[r] == c->node_index) s->node[s->nnode++] = r;
  }
  /* node_of and the counts come from the same hostnames (comm.c) */
  assert(s->nnode == c->local_world && s->nleaders == c->nodes &&
         s->node[c->local_rank] == c->rank);
  return GF_OK;
}

static void tcp_abort(gf_comm *c, int code) {
  tcp_state *s = c->impl;
  if (!s || !s->peer) return;
  gf_tcp_notify_all(c, s, GF_TCP_K_ABORT, code);
  close_all(c, s, 1);
  if (!s->broken) {
    gf_fail(&s->broken_err, GF_ESTATE, "tcp: the communicator was aborted");
    gf_tcp_broke(s, NULL);
  }
}

/* Grows *buf (owned, *cap bytes) to at least need bytes. */
static gf_status grow(void **buf, size_t *cap, size_t need, const char *what,
                      gf_err *err) {
  if (need <= *cap) return GF_OK;
  void *nb = malloc(need);
  if (!nb)
    return gf_fail(err, GF_ENOMEM, "tcp: cannot allocate %zu bytes of %s",
                   need, what);
  free(*buf);
  *buf = nb;
  *cap = need;
  return GF_OK;
}

static gf_status tcp_start(gf_comm *c, int slot, gf_err *err) {
  tcp_state *s = c->impl;
  gf_comm_req *r = &c->reqs[slot];
  tcp_slot *ts = &s->slots[slot];
  const gf_comm_step *st = &r->steps[r->cur];
  if (st->kind == GF_STEP_SCALE) {
    gf_comm_host_scale(r->dt, r->buf, r->count, c->world);
    return GF_OK;
  }
  if (st->kind == GF_STEP_PACK)
    return gf_comm_host_pack(r, &ts->stage, &ts->stage_cap, err);
  if (st->kind == GF_STEP_UNPACK) {
    gf_comm_host_unpack(r);
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
                   c->rank, gf_tcp_kind_name(st->kind));
  size_t need = 0;
  if (st->kind == GF_STEP_ALLREDUCE)
    need = (r->count / (size_t)p + 1) * r->welem;
  else if (st->kind == GF_STEP_REDUCE || st->kind == GF_STEP_XADD)
    need = r->count * r->welem;
  GF_TRY(grow((void **)&ts->scratch, &ts->scratch_cap, need, "scratch", err));
  int sends = st->kind == GF_STEP_BCAST && q == st->peer ? p - 1 : 1;
  if (sends > ts->send_cap) {
    size_t cap = (size_t)ts->send_cap * sizeof *ts->sends;
    void *b = ts->sends;
    GF_TRY(grow(&b, &cap, (size_t)sends * sizeof *ts->sends, "send state",
                err));
    ts->sends = b;
    ts->send_cap = sends;
  }
  if (st->kind == GF_STEP_ALLGATHER && r->count) {
    unsigned char *mine = (unsigned char *)r->buf + (size_t)q * r->count;
    if (mine != r->sendbuf) memmove(mine, r->sendbuf, r->count);
  }
  ts->live = 1;
  ts->round = 0;
  ts->nsend = ts->nrecv = 0;
  ts->nrounds = step_rounds(st, p, q);
  if (ts->nrounds) return round_setup(c, s, slot, err);
  return GF_OK;
}

static gf_status tcp_test(gf_comm *c, int slot, int *done, gf_err *err) {
  tcp_state *s = c->impl;
  const gf_comm_req *r = &c->reqs[slot];
  tcp_slot *ts = &s->slots[slot];
  *done = 0;
  if (!gf_comm_step_talks(r->steps[r->cur].kind)) {
    *done = 1;
    return GF_OK;
  }
  if (s->broken) {
    if (err) *err = s->broken_err;
    return s->broken;
  }
  if (!ts->live)
    return gf_fail(err, GF_ESTATE, "tcp: request %d has no step in flight",
                   slot);
  for (;;) {
    while (ts->round < ts->nrounds && round_done(ts)) {
      round_finish(c, s, slot);
      ts->nsend = ts->nrecv = 0;
      if (++ts->round < ts->nrounds) GF_TRY(round_setup(c, s, slot, err));
    }
    if (ts->round == ts->nrounds) {
      ts->live = 0;
      *done = 1;
      return GF_OK;
    }
    int moved = 0;
    GF_TRY(gf_tcp_pump(c, s, &moved, err));
    if (!moved && !round_done(ts)) return GF_OK;
  }
}

/* A request given up with messages still on the streams (after a failure
 * or an abort) leaves them out of frame: the comm stays broken. */
static void tcp_release(gf_comm *c, int slot) {
  tcp_state *s = c->impl;
  if (!s || !s->peer) return;
  tcp_slot *ts = &s->slots[slot];
  int linked = 0;
  for (int i = 0; i < ts->nsend; i++) {
    linked |= ts->sends[i].linked;
    gf_tcp_unlink(s, &ts->sends[i]);
  }
  if (ts->nrecv) {
    linked |= ts->recv.linked || s->peer[ts->recv.peer].in_msg == &ts->recv;
    gf_tcp_unlink(s, &ts->recv);
  }
  if (linked && !s->broken) {
    gf_fail(&s->broken_err, GF_ESTATE,
            "tcp: a collective was given up with its messages in flight; "
            "the streams are out of step");
    gf_tcp_broke(s, NULL);
  }
  ts->live = 0;
  ts->nsend = ts->nrecv = 0;
}

static int tcp_poll_set(gf_comm *c, struct pollfd *pfd) {
  const tcp_state *s = c->impl;
  return s && s->peer ? gf_tcp_poll_set(c, s, pfd) : 0;
}

int gf_comm_tcp_peer_fd(const gf_comm *c, int peer) {
  if (!c || c->ops != &gf_comm_tcp_ops || peer < 0 || peer >= c->world)
    return -1;
  const tcp_state *s = c->impl;
  return s && s->peer ? s->peer[peer].fd : -1;
}

size_t gf_comm_tcp_early_bytes(const gf_comm *c, int peer) {
  if (!c || c->ops != &gf_comm_tcp_ops || peer < 0 || peer >= c->world)
    return 0;
  const tcp_state *s = c->impl;
  size_t n = 0;
  if (s && s->peer)
    for (const tcp_unx *u = s->peer[peer].unx; u; u = u->next)
      n += HDR + u->got;
  return n;
}

const gf_comm_ops gf_comm_tcp_ops = {
    .name = "tcp",
    .device_buffers = 0,
    .lanes = 1,
    .serial_issue = 0,
    .tagged = 1,
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
    .poll_set = tcp_poll_set,
};
