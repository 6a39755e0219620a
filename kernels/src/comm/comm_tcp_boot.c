/* comm_tcp_boot.c - the tcp engine's bootstrap: rank 0 listens on
 * MASTER_PORT and gathers every rank's hello (rank, world, its own
 * listening port), answers each with the table of addresses, then every
 * pair of ranks connects (the higher rank dials the lower), leaving a full
 * mesh of sockets. Messages and their parsers are in comm_tcp_wire.c,
 * sockets in gf/sock.h; the collectives over the mesh in comm_tcp.c. */
#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_tcp.h"
#include "gf/sock.h"
#include "gf/text.h"

/* ---- bootstrap ----------------------------------------------------------- */

#define WHO "tcp"

/* Room for list_missing's text, whatever the ints: 16 ranks of at most 13
 * bytes (", " and 11 characters), " (and N more)" in at most 23, and the
 * NUL: 232 bytes. */
#define MISSING_CAP 256

/* "2, 5, 7 (and 3 more)": the ranks in [lo, hi) whose seen[] is 0, the
 * first 16 by number and the rest counted. */
static void list_missing(const unsigned char *seen, int lo, int hi,
                         char buf[MISSING_CAP]) {
  size_t o = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (int r = lo; r < hi; r++) {
    if (seen[r]) continue;
    if (shown == 16) {
      more++;
      continue;
    }
    GF_FORMAT_FITS(buf + o, MISSING_CAP - o, "%s%d", shown ? ", " : "", r);
    o += strlen(buf + o);
    shown++;
  }
  if (more) GF_FORMAT_FITS(buf + o, MISSING_CAP - o, " (and %d more)", more);
}

/* "rank R" into buf, for messages: an int and a fixed word, so it fits. */
#define RANK_NAME_CAP 32
static const char *rank_name(int r, char buf[RANK_NAME_CAP]) {
  GF_FORMAT_FITS(buf, RANK_NAME_CAP, "rank %d", r);
  return buf;
}

/* Keeps the start of an ignored connection's error for the timeout's
 * message: 150 characters at most, so that the message keeps its own. */
#define LAST_CAP 160
static void note_ignored(char last[LAST_CAP], const gf_err *e) {
  GF_FORMAT_FITS(last, LAST_CAP, "%.150s", e->msg);
}

static gf_status send_msg(int fd, const gf_tcp_msg *m, double deadline,
                          const char *to, gf_err *err) {
  unsigned char b[GF_TCP_MSG_BYTES];
  gf_comm_tcp_put_msg(b, m);
  gf_err e;
  gf_status st = gf_sock_write_full(fd, b, sizeof b, deadline, &e);
  if (st) return gf_fail(err, st, WHO ": sending to %s: %s", to, e.msg);
  return GF_OK;
}

/* Reads and parses one message; `from` names the peer in messages. */
static gf_status recv_msg(int fd, gf_tcp_msg *m, double deadline,
                          double timeout_s, const char *from, gf_err *err) {
  unsigned char b[GF_TCP_MSG_BYTES];
  gf_err e;
  gf_status st = gf_sock_read_full(fd, b, sizeof b, deadline, NULL, &e);
  if (st == GF_ETIMEOUT)
    return gf_fail(err, GF_ETIMEOUT, WHO ": %s sent nothing within %.3g s",
                   from, timeout_s);
  if (st)
    return gf_fail(err, GF_EIO,
                   WHO ": %s closed the connection during the "
                       "bootstrap (%s; did it fail?)",
                   from, e.msg);
  if (gf_comm_tcp_parse_msg(b, sizeof b, m, &e))
    return gf_fail(err, GF_EFORMAT, "%s (from %s)", e.msg, from);
  return GF_OK;
}

/* The address rank 0 saw for an accepted connection, as a table entry. */
static void entry_of(int fd, int port, unsigned char *e) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  memset(e, 0, GF_TCP_ENTRY_BYTES);
  gf_be32_put(e + 20, (uint32_t)port);
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

/* This job's token: differs between jobs (wall clock, monotonic
 * nanoseconds, pid) so that a stale rank of another job is told apart. */
static uint32_t make_token(void) {
  uint64_t x = gf_mono_ns() ^ ((uint64_t)gf_unix_ms() << 20) ^
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
  char last[LAST_CAP] = "";
  while (!st && arrived < world) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = gf_ms_left(deadline);
    if (ms == 0) {
      char miss[MISSING_CAP];
      list_missing(seen, 1, world, miss);
      st = gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank 0 heard from %d of %d ranks on MASTER_PORT %d "
                       "within %.3g s; missing: %s%s%s",
                   arrived - 1, world - 1, li->master_port, timeout_s, miss,
                   ignored ? "; ignored: " : "", ignored ? last : "");
      break;
    }
    if (poll(&pf, 1, ms) <= 0) continue;
    int fd = gf_sock_accept(lfd);
    if (fd < 0) continue;
    /* one slow client may not hold rank 0 past a few seconds */
    double hd = gf_mono_s() + 5.0;
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
      note_ignored(last, &e);
      close(fd);
      continue;
    }
    int reason = m.world != world ? GF_TCP_R_WORLD
                 : seen[m.rank]   ? GF_TCP_R_TWICE
                                  : 0;
    if (reason) {
      gf_tcp_msg rj = {GF_TCP_REJECT, 0, world, reason, 0};
      send_msg(fd, &rj, gf_mono_s() + 1.0, "the rejected rank", &e);
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
    fds[m.rank] = fd;
    seen[m.rank] = 1;
    entry_of(fd, m.port, table + (size_t)m.rank * GF_TCP_ENTRY_BYTES);
    arrived++;
  }
  close(lfd);
  uint32_t token = make_token();
  for (int r = 1; !st && r < world; r++) {
    char to[RANK_NAME_CAP];
    gf_tcp_msg t = {GF_TCP_TABLE, r, world, 0, token};
    st = send_msg(fds[r], &t, deadline, rank_name(r, to), err);
    gf_err e;
    if (!st && (st = gf_sock_write_full(fds[r], table, tbytes, deadline, &e)))
      gf_fail(err, st, WHO ": sending the table to rank %d: %s", r, e.msg);
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
  gf_err e; /* the last failure, for the message */
  gf_status st = gf_sock_dial_until(li->master_addr, li->master_port, deadline,
                                    0.05, &fd, &e);
  if (st == GF_ETIMEOUT)
    return gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank %d could not reach rank 0 within %.3g s "
                       "(last: %s)",
                   li->rank, timeout_s, e.msg);
  if (st) return gf_fail(err, st, WHO ": MASTER_ADDR: %s", e.msg);
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
  if ((st = gf_sock_read_full(fd, raw, tbytes, deadline, NULL, &e)))
    gf_fail(err, st, WHO ": receiving the table from rank 0: %s", e.msg);
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
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, host, sizeof host);
  gf_err why;
  if (gf_sock_dial_until(host, e->port, deadline, 0.02, out, &why) == GF_OK)
    return GF_OK;
  return gf_fail(err, GF_ETIMEOUT,
                 WHO ": rank %d could not connect to rank %d within %.3g s "
                     "(last: %s)",
                 me, i, timeout_s, why.msg);
}

/* The mesh among ranks 1..world-1 (rank 0 is linked by the hellos). */
static gf_status mesh(const gf_launch_info *li, int lfd,
                      const gf_tcp_entry *tab, uint32_t token, int *fds,
                      double deadline, double timeout_s, gf_err *err) {
  int me = li->rank, world = li->world_size;
  char who[RANK_NAME_CAP];
  /* connect to every lower rank but 0 and identify; their listening sockets
   * exist since before their hello, so the kernel completes these
   * connections even before they accept */
  for (int i = 1; i < me; i++) {
    GF_TRY(dial_peer(&tab[i], i, me, deadline, timeout_s, &fds[i], err));
    gf_tcp_msg m = {GF_TCP_MESH, me, world, 0, token};
    GF_TRY(send_msg(fds[i], &m, deadline, rank_name(i, who), err));
  }
  /* accept every higher rank */
  unsigned char *seen = calloc((size_t)world, 1);
  if (!seen)
    return gf_fail(err, GF_ENOMEM, WHO ": cannot allocate %d flags", world);
  int left = world - 1 - me, ignored = 0;
  gf_status st = GF_OK;
  char last[LAST_CAP] = "";
  while (left > 0) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = gf_ms_left(deadline);
    if (ms == 0) {
      char miss[MISSING_CAP];
      list_missing(seen, me + 1, world, miss);
      st = gf_fail(err, GF_ETIMEOUT,
                   WHO ": rank %d got no connection from ranks %s within "
                       "%.3g s%s%s",
                   me, miss, timeout_s, ignored ? "; ignored: " : "",
                   ignored ? last : "");
      break;
    }
    if (poll(&pf, 1, ms) <= 0) continue;
    int fd = gf_sock_accept(lfd);
    if (fd < 0) continue;
    gf_tcp_msg m;
    gf_err e;
    double hd = gf_mono_s() + 5.0;
    gf_status ms_st = recv_msg(fd, &m, hd < deadline ? hd : deadline, timeout_s,
                               "a peer", &e);
    if (!ms_st && (m.kind != GF_TCP_MESH || m.token != token ||
                   m.world != world || m.rank <= me || seen[m.rank]))
      ms_st = gf_fail(&e, GF_EFORMAT,
                      "a message of kind %d from rank %d of %d (token %s)",
                      m.kind, m.rank, m.world,
                      m.token == token ? "ours" : "another job's");
    if (ms_st) {
      ignored++;
      note_ignored(last, &e);
      close(fd);
      continue;
    }
    fds[m.rank] = fd;
    seen[m.rank] = 1;
    left--;
    gf_tcp_msg ack = {GF_TCP_MESH_ACK, me, world, 0, token};
    st = send_msg(fd, &ack, deadline, rank_name(m.rank, who), err);
    if (st) break;
  }
  free(seen);
  /* every lower rank confirms */
  for (int i = 1; !st && i < me; i++) {
    gf_tcp_msg m;
    st = recv_msg(fds[i], &m, deadline, timeout_s, rank_name(i, who), err);
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
  double deadline = gf_mono_s() + timeout_s;
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
