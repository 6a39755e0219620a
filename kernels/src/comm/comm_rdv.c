/* comm_rdv.c - the TCP rendezvous that hands rank 0's bootstrap blob (the
 * NCCL unique id) to every other rank when there is no MPI to broadcast it:
 * torchrun-style launches (MASTER_ADDR, MASTER_PORT). Rank 0 listens on
 * MASTER_PORT, every other rank connects (retrying until rank 0 is up) and
 * says hello; rank 0 answers each with the blob. Everything polls against
 * one CLOCK_MONOTONIC deadline, so a missing rank is GF_ETIMEOUT.
 *
 * Wire format, integers big-endian:
 *   hello  "gfrdv01\n" (8) | rank u32 | world u32
 *   answer "gfrdv01\n" (8) | n u32 | blob (n bytes)
 * Not a general transport: one blob, one job, then the sockets close. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"

static const char RDV_MAGIC[8] = {'g', 'f', 'r', 'd', 'v', '0', '1', '\n'};

static int ms_left(double deadline) {
  double left = deadline - gf_comm_now();
  if (left <= 0) return 0;
  return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* Moves exactly n bytes over non-blocking fd before the deadline. Returns
 * 0, or -1 with errno (ETIMEDOUT at the deadline, EPIPE for a closed
 * peer). */
static int io_full(int fd, void *buf, size_t n, int out, double deadline) {
  unsigned char *p = buf;
  while (n) {
    struct pollfd pf = {fd, (short)(out ? POLLOUT : POLLIN), 0};
    int ms = ms_left(deadline);
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

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL, 0);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A listening socket on `port` of every address (IPv6 dual-stack, else
 * IPv4). */
static gf_status rdv_listen(int port, int *out, gf_err *err) {
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
      return gf_fail(err, GF_EIO, "rendezvous: socket: %s", strerror(errno));
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    a4.sin_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    rc = bind(fd, (struct sockaddr *)&a4, sizeof a4);
  }
  if (rc != 0 || listen(fd, 256) != 0 || set_nonblock(fd) != 0) {
    int e = errno;
    close(fd);
    return gf_fail(err, GF_EIO,
                   "rendezvous: rank 0 cannot listen on MASTER_PORT %d: %s%s",
                   port, strerror(e),
                   e == EADDRINUSE ? " (another process holds the port: "
                                     "pick a free MASTER_PORT)"
                                   : "");
  }
  *out = fd;
  return GF_OK;
}

static gf_status rdv_serve(int port, int world, const void *blob, size_t n,
                           double deadline, double timeout_s, gf_err *err) {
  int lfd = -1;
  GF_TRY(rdv_listen(port, &lfd, err));
  unsigned char *seen = calloc((size_t)world, 1);
  if (!seen) {
    close(lfd);
    return gf_fail(err, GF_ENOMEM, "rendezvous: cannot allocate %d flags",
                   world);
  }
  unsigned char head[16];
  memcpy(head, RDV_MAGIC, 8);
  put_u32(head + 8, (uint32_t)n);
  int served = 0, rejected = 0;
  gf_status st = GF_OK;
  while (served < world - 1) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = ms_left(deadline);
    if (ms == 0) {
      st = gf_fail(err, GF_ETIMEOUT,
                   "rendezvous: rank 0 heard from %d of %d ranks on port %d "
                   "within %.3g s (%d hellos rejected)",
                   served, world - 1, port, timeout_s, rejected);
      break;
    }
    int pr = poll(&pf, 1, ms);
    if (pr <= 0) continue;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    if (set_nonblock(fd) != 0) {
      close(fd);
      continue;
    }
    unsigned char hello[16];
    /* one slow client may not hold rank 0 past a few seconds */
    double hd = gf_comm_now() + 5.0;
    if (io_full(fd, hello, sizeof hello, 0, hd < deadline ? hd : deadline) ==
            0 &&
        memcmp(hello, RDV_MAGIC, 8) == 0) {
      uint32_t r = get_u32(hello + 8), w = get_u32(hello + 12);
      if (w == (uint32_t)world && r >= 1 && r < (uint32_t)world && !seen[r] &&
          io_full(fd, head, sizeof head, 1, deadline) == 0 &&
          io_full(fd, (void *)blob, n, 1, deadline) == 0) {
        seen[r] = 1;
        served++;
      } else {
        rejected++;
      }
    } else {
      rejected++;
    }
    close(fd);
  }
  free(seen);
  close(lfd);
  return st;
}

/* One connection attempt to each address of addr:port; returns a
 * connected non-blocking fd or -1 (errno of the last failure). */
static int rdv_connect_once(const struct addrinfo *ai, double deadline) {
  int e = ECONNREFUSED;
  for (; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
    if (fd < 0) {
      e = errno;
      continue;
    }
    if (set_nonblock(fd) != 0) {
      e = errno;
      close(fd);
      continue;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      struct pollfd pf = {fd, POLLOUT, 0};
      int ms = ms_left(deadline);
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

static gf_status rdv_fetch(const char *addr, int port, int rank, int world,
                           void *blob, size_t n, double deadline,
                           double timeout_s, gf_err *err) {
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  unsigned char hello[16], head[16];
  memcpy(hello, RDV_MAGIC, 8);
  put_u32(hello + 8, (uint32_t)rank);
  put_u32(hello + 12, (uint32_t)world);
  int last = 0, tries = 0;
  char why[128] = "no attempt";
  while (ms_left(deadline) > 0) {
    if (tries++) {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (!ai) {
      int g = getaddrinfo(addr, ps, &hints, &ai);
      if (g == EAI_NONAME)
        return gf_fail(err, GF_EINVAL,
                       "rendezvous: cannot resolve MASTER_ADDR \"%.100s\"",
                       addr);
      if (g != 0) {
        ai = NULL;
        snprintf(why, sizeof why, "resolving: %s", gai_strerror(g));
        continue;
      }
    }
    int fd = rdv_connect_once(ai, deadline);
    if (fd < 0) {
      last = errno;
      snprintf(why, sizeof why, "connect: %s", strerror(last));
      continue;
    }
    int ok = io_full(fd, hello, sizeof hello, 1, deadline) == 0 &&
             io_full(fd, head, sizeof head, 0, deadline) == 0;
    if (ok && (memcmp(head, RDV_MAGIC, 8) != 0 || get_u32(head + 8) != n)) {
      close(fd);
      freeaddrinfo(ai);
      return gf_fail(err, GF_EFORMAT,
                     "rendezvous: %s:%d answered with something that is not "
                     "this job's rank 0 (wrong magic or length)",
                     addr, port);
    }
    ok = ok && io_full(fd, blob, n, 0, deadline) == 0;
    if (!ok) snprintf(why, sizeof why, "exchange: %s", strerror(errno));
    close(fd);
    if (ok) {
      freeaddrinfo(ai);
      return GF_OK;
    }
  }
  if (ai) freeaddrinfo(ai);
  return gf_fail(err, GF_ETIMEOUT,
                 "rendezvous: rank %d got no answer from rank 0 at %.100s:%d "
                 "within %.3g s (last: %s)",
                 rank, addr, port, timeout_s, why);
}

gf_status gf_comm_rdv_share(const char *addr, int port, int rank, int world,
                            void *blob, size_t n, double timeout_s,
                            gf_err *err) {
  if (world < 1 || rank < 0 || rank >= world || port < 1 || port > 65535 ||
      (n && !blob) || n > (1u << 20))
    return gf_fail(err, GF_EINVAL,
                   "rendezvous: bad arguments (rank %d, world %d, port %d, "
                   "%zu bytes)",
                   rank, world, port, n);
  if (world == 1) return GF_OK;
  if (rank != 0 && (!addr || !addr[0]))
    return gf_fail(err, GF_EINVAL, "rendezvous: MASTER_ADDR is empty");
  double deadline = gf_comm_now() + timeout_s;
  if (rank == 0)
    return rdv_serve(port, world, blob, n, deadline, timeout_s, err);
  return rdv_fetch(addr, port, rank, world, blob, n, deadline, timeout_s, err);
}
