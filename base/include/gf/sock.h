/* sock.h - TCP for the gf_ libraries: listening, dialing with a deadline,
 * exact reads and writes with a deadline, and HOST:PORT. gf_comm's tcp
 * engine and NCCL rendezvous (kernels/src/comm) and the rendezvous of
 * `ganflow launch --nnodes` (launch/src/launch_rdzv.c) open their sockets
 * here and nowhere else.
 *
 * Every socket it hands out is non-blocking and close-on-exec; dialed and
 * accepted ones have TCP_NODELAY. Deadlines are CLOCK_MONOTONIC seconds
 * (gf_mono_s() + a timeout). Not here: what travels (each caller's wire
 * format), HTTP (serve/ and tracking/ have their libraries), TLS, UDP.
 *
 * Addresses: one rule for every caller, the rule of URLs (RFC 3986) and of
 * torchrun's --rdzv-endpoint:
 *   - HOST:PORT, where HOST is a name ("node-1", "node-1.cluster"), an IPv4
 *     address ("10.0.0.7") or an IPv6 address in brackets ("[::1]",
 *     "[fe80::1%eth0]"). A bare IPv6 address with a port ("::1:29500") is
 *     refused, not guessed: its last group could be the port.
 *   - A HOST alone (MASTER_ADDR, the host of --rdzv) may be an IPv6
 *     address bare ("fe80::1%eth0", as torchrun's MASTER_ADDR takes it) or
 *     in brackets; both mean the same, and the brackets are dropped before
 *     the address is used.
 *   - A name resolves with AF_UNSPEC: every address getaddrinfo gives, IPv6
 *     and IPv4, in its order (RFC 6724, /etc/gai.conf), tried one after
 *     the other.
 *   - Listening on every address (host NULL, "", "*" or "::") is one IPv6
 *     socket with IPV6_V6ONLY off, so IPv4 peers arrive on it too (as
 *     ::ffff:a.b.c.d) whatever net.ipv6.bindv6only says, as PyTorch's
 *     TCPStore listens; a kernel without IPv6 gets 0.0.0.0 instead.
 *     "0.0.0.0" listens on IPv4 only, any other address on that address
 *     only, a name on its first address that binds. */
#ifndef GF_SOCK_H
#define GF_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

/* Bytes of a host, NUL included (a DNS name has at most 253). */
#define GF_SOCK_HOST_MAX 256
/* Bytes of "[host]:port", NUL included. */
#define GF_SOCK_NAME_MAX (GF_SOCK_HOST_MAX + 8)

/* ---- addresses ----------------------------------------------------------- */

/* Checks a HOST alone (a name or IPv4 address: 1..253 bytes of letters,
 * digits, '.', '-', '_'; an IPv6 address, with an optional %zone, bare or
 * in brackets) and writes it without brackets into host[cap]. GF_EINVAL,
 * naming `what` ("MASTER_ADDR") and the reason, for anything else or a
 * host longer than cap - 1 bytes; host is then "". */
gf_status gf_sock_host(const char *what, const char *s, char *host, size_t cap,
                       gf_err *err);

/* Splits "HOST:PORT" or "[IPv6]:PORT" (the rule above): the host, checked
 * as gf_sock_host checks it and without brackets, into host[cap]; the port,
 * 1 to 5 decimal digits worth 0..65535, into *port (0 is for listening:
 * a caller that dials refuses it). GF_EINVAL naming `what` and the reason
 * otherwise; host and *port are then untouched. */
gf_status gf_sock_split(const char *what, const char *s, char *host, size_t cap,
                        int *port, gf_err *err);

/* host:port as it is written back: "[::1]:29500" for an IPv6 address,
 * "node-1:29500" else, into out[cap] (GF_SOCK_NAME_MAX holds any host
 * gf_sock_host accepts; a longer one is cut and ends "..."). For messages.
 * Returns out. */
const char *gf_sock_name(const char *host, int port, char *out, size_t cap);

/* ---- connections --------------------------------------------------------- */

/* Listens on host:port (every address for host NULL, "", "*" or "::", as
 * above); port 0: one the kernel picks. *fd: non-blocking, close-on-exec,
 * SO_REUSEADDR, backlog SOMAXCONN; the caller closes it. *bound (may be
 * NULL): the port it is bound to. GF_EINVAL for a bad host or port;
 * GF_EIO with "HOST:PORT: bind: <cause>", and errno left at the cause
 * (EADDRINUSE: another socket holds the port). */
gf_status gf_sock_listen(const char *host, int port, int *fd, int *bound,
                         gf_err *err);

/* The next connection waiting on listening socket lfd: non-blocking,
 * close-on-exec, TCP_NODELAY; the caller closes it. -1 when none waits
 * (errno EAGAIN) or on an error (errno). Never blocks. */
int gf_sock_accept(int lfd);

/* Connects to host:port (host as gf_sock_host takes it; port 1..65535): one
 * pass over every address getaddrinfo gives, in order, each a
 * non-blocking connect polled until the deadline (an address with others
 * after it waits at most 1 s, so that one that never answers leaves time
 * for the rest). GF_OK with *fd (the caller closes it); else *fd = -1 and
 * err says "HOST:PORT: <step>: <the last cause>": GF_EINVAL when host is
 * not a host or does not resolve, GF_ETIMEOUT when the deadline passed,
 * GF_EIO when every address refused or failed. */
gf_status gf_sock_dial(const char *host, int port, double deadline, int *fd,
                       gf_err *err);

/* gf_sock_dial again every retry_s seconds until it connects or the
 * deadline passes, for a peer that may not listen yet. GF_EINVAL at once
 * as gf_sock_dial; GF_ETIMEOUT at the deadline with err the last
 * failure's. */
gf_status gf_sock_dial_until(const char *host, int port, double deadline,
                             double retry_s, int *fd, gf_err *err);

/* Reads exactly n bytes from non-blocking fd before the deadline, across
 * short reads and EINTR. GF_OK; GF_ETIMEOUT ("timed out after K of N
 * bytes"); GF_EIO ("the peer closed the connection after K of N bytes", or
 * the socket's error). *got (may be NULL): the bytes in buf, also on
 * failure. The caller's message names the peer. */
gf_status gf_sock_read_full(int fd, void *buf, size_t n, double deadline,
                            size_t *got, gf_err *err);

/* Writes exactly n bytes to non-blocking fd before the deadline, across
 * short writes and EINTR, without SIGPIPE. GF_OK; GF_ETIMEOUT ("timed out
 * after K of N bytes"); GF_EIO ("the peer closed the connection", or the
 * socket's error). */
gf_status gf_sock_write_full(int fd, const void *buf, size_t n, double deadline,
                             gf_err *err);

/* ---- byte order of the wire formats -------------------------------------- */

static inline void gf_be32_put(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static inline uint32_t gf_be32_get(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

static inline void gf_be64_put(unsigned char *p, uint64_t v) {
  gf_be32_put(p, (uint32_t)(v >> 32));
  gf_be32_put(p + 4, (uint32_t)v);
}

static inline uint64_t gf_be64_get(const unsigned char *p) {
  return (uint64_t)gf_be32_get(p) << 32 | gf_be32_get(p + 4);
}

#endif
