/* comm_tcp.h - private to the tcp engine: its state and the byte streams
 * between the ranks of a full mesh. comm_tcp.c runs the collectives (the
 * steps and their rounds); comm_tcp_net.c moves their messages;
 * comm_tcp_boot.c connects the mesh; the bytes on the wire are in
 * comm_tcp_wire.h.
 *
 * A message is a GF_TCP_HDR-byte header and its payload. Each peer's outgoing stream is a queue
 * of messages sent in queue order; each incoming stream is read whenever
 * bytes are there and every message is matched by its header's identity
 * (op seq, step kind, scope, arg, part) against the receives this rank has
 * posted for that peer, whatever their order: messages of several requests
 * interleave on a stream. A message that arrives before its receive is
 * posted is read into a buffer of its own (unexpected, as MPI's eager
 * protocol keeps them) and copied when the receive comes, so every stream
 * is always drained and no wait on one request can block another's bytes.
 * Single-threaded: bytes move only inside gf_comm_* calls. */
#ifndef GF_COMM_TCP_H
#define GF_COMM_TCP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "comm_impl.h"
#include "comm_tcp_wire.h"

/* One message of a round. Owned by its request's slot; linked into a
 * peer's send queue or posted receives while it moves. */
typedef struct tcp_msg {
  int peer;                      /* world rank */
  unsigned char *data;           /* send: source; recv: destination (n
                                    bytes; borrowed: the request's buffer or
                                    the slot's scratch) */
  size_t n;                      /* payload bytes */
  size_t done;                   /* bytes moved, 0..GF_TCP_HDR + n */
  unsigned char hdr[GF_TCP_HDR]; /* send: the header sent; recv: the one
                                    expected */
  int linked;                    /* in a send queue or the posted list */
  struct tcp_msg *next;          /* that list */
} tcp_msg;

/* A message that came before its receive was posted. */
typedef struct tcp_unx {
  unsigned char hdr[GF_TCP_HDR];
  unsigned char *data;  /* owned: n bytes (NULL when n is 0) */
  size_t n, got;        /* got: payload bytes read so far */
  struct tcp_unx *next; /* the peer's list, in arrival order */
} tcp_unx;

typedef struct tcp_peer {
  int fd;                      /* socket; -1 for this rank, after abort */
  int bye;                     /* it sent BYE (freed its comm) */
  int eof;                     /* its stream ended after the BYE */
  tcp_msg *sq, *sq_tail;       /* sends in order; sq may be half-sent */
  tcp_msg *posted;             /* receives posted for it, any order */
  tcp_unx *unx;                /* unexpected messages, arrival order */
  unsigned char in[GF_TCP_HDR]; /* the header being read */
  size_t in_done;              /* 0..GF_TCP_HDR (GF_TCP_HDR: a payload is
                                  being read into in_msg or in_unx) */
  tcp_msg *in_msg;             /* payload destination: a posted receive */
  tcp_unx *in_unx;             /* ... or an unexpected message */
} tcp_peer;

/* A request's communicating step in flight (one per comm slot). */
typedef struct tcp_slot {
  int live;               /* a communicating step is in flight */
  int round, nrounds;     /* round in 0..nrounds */
  tcp_msg *sends;         /* [send_cap] this round's sends; owned */
  int nsend, send_cap;
  tcp_msg recv;           /* this round's receive when nrecv == 1 */
  int nrecv;
  unsigned char *scratch; /* received operands; owned, grown as needed */
  size_t scratch_cap;
  void *stage;            /* F32_AS_BF16: the bf16 copy that travels;
                             owned, grown as needed */
  size_t stage_cap;
} tcp_slot;

typedef struct tcp_state {
  tcp_peer *peer;         /* [world]; peer[rank].fd == -1 */
  int *all;               /* [world] 0..world-1: the WORLD scope */
  int *node, nnode;       /* hier: world ranks of this host, ascending */
  int *leaders, nleaders; /* hier: the lowest rank of every host */
  struct pollfd *pfd;     /* [world] scratch of the polls */
  int *pfd_peer;          /* [world] peer of each pfd entry */
  tcp_slot slots[GF_COMM_SLOTS];
  gf_status broken;       /* a failure that ended the streams (then
                             broken_err); every later step fails with it */
  gf_err broken_err;
} tcp_state;

/* ---- streams (comm_tcp_net.c) --------------------------------------------
 * Every function that fails breaks the comm (s->broken, s->broken_err) and
 * returns that error; a LOST notice has then gone to every other peer when
 * the failure was a peer gone. */

/* Records the failure written into s->broken_err as the one that broke the
 * comm; copies it into err (may be NULL) and returns its code. */
gf_status gf_tcp_broke(tcp_state *s, gf_err *err);

/* Queues m (header and payload set, done 0) behind the peer's other
 * sends. */
void gf_tcp_send(tcp_state *s, tcp_msg *m);
/* Posts receive m: completes it at once from an unexpected message with
 * the same identity (checking its byte count), else links it for the
 * stream to fill. */
gf_status gf_tcp_recv(gf_comm *c, tcp_state *s, tcp_msg *m, gf_err *err);
/* Moves bytes on every stream until the sockets take or give no more;
 * *moved = 1 when any byte moved. */
gf_status gf_tcp_pump(gf_comm *c, tcp_state *s, int *moved, gf_err *err);
/* Fills pfd (c->world entries at most) with the live sockets: POLLIN, and
 * POLLOUT where bytes wait in the queue; returns the count (0 for a broken
 * comm). */
int gf_tcp_poll_set(gf_comm *c, const tcp_state *s, struct pollfd *pfd);
/* Unlinks m from its peer's lists. Only for a broken comm or one being
 * freed (a half-moved message would leave the stream out of frame). */
void gf_tcp_unlink(tcp_state *s, tcp_msg *m);
/* Sends a control header (BYE or ABORT, bytes = code) to every peer whose
 * stream is between two messages; never waits. */
void gf_tcp_notify_all(gf_comm *c, tcp_state *s, int kind, int64_t code);
/* Frees every unexpected message (at fini). */
void gf_tcp_drop_unexpected(gf_comm *c, tcp_state *s);

/* May a data message with header h from `peer`, matching no posted
 * receive, be for a round, step or request this rank has still to come
 * to? 0 when it cannot (the ranks called different collectives): then
 * want holds the header this rank expected instead, for the message. Reads
 * the requests (c->reqs) and the slots' receives; changes nothing. */
int gf_tcp_may_come(const gf_comm *c, const tcp_state *s, int peer,
                    const unsigned char *h, unsigned char want[GF_TCP_HDR]);

/* The header arg of a step: the tree level, else the root. */
static inline int gf_tcp_step_arg(const gf_comm_step *st) {
  return st->kind == GF_STEP_XADD ? st->level : st->peer;
}

/* ---- bootstrap (comm_tcp_boot.c) ------------------------------------------
 * Rank 0 listens on MASTER_PORT and collects a HELLO from every rank,
 * checks world agreement and that each rank comes once, and sends
 * everyone the TABLE; then every rank j connects to every rank 0 < i < j
 * and identifies itself (MESH / MESH_ACK); the connection to rank 0 is the
 * one of the hello. fds (world entries, caller-owned) get one connected
 * non-blocking TCP_NODELAY socket per peer (fds[rank] = -1), which the
 * caller closes. Everything before one deadline: GF_ETIMEOUT names the
 * ranks that did not arrive; GF_EINVAL for a world or rank that disagrees;
 * GF_EIO for socket errors (a MASTER_PORT in use names it). On failure
 * every socket is closed and fds are all -1. */
gf_status gf_comm_tcp_bootstrap(const gf_launch_info *li, double timeout_s,
                                int *fds, gf_err *err);

/* ---- for tests (comm_tcp.c) ---------------------------------------------- */
/* For fault-injection tests: the socket of a tcp comm to world rank peer
 * (owned by the comm: the caller may shut it down, never close it), or -1
 * (another engine, this rank, a closed comm). */
int gf_comm_tcp_peer_fd(const gf_comm *c, int peer);
/* For tests: the bytes (headers included) of messages from peer that the
 * tcp comm has read ahead of their receives and holds; 0 for another
 * engine. */
size_t gf_comm_tcp_early_bytes(const gf_comm *c, int peer);

#endif
