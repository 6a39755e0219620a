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
 * Not a general transport: one blob, one job, then the sockets close. The
 * sockets are gf/sock.h's. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"
#include "gf/sock.h"

static const char RDV_MAGIC[8] = {'g', 'f', 'r', 'd', 'v', '0', '1', '\n'};

static gf_status rdv_serve(int port, int world, const void *blob, size_t n,
                           double deadline, double timeout_s, gf_err *err) {
  int lfd = -1;
  GF_TRY(gf_comm_listen("rendezvous", port, &lfd, NULL, err));
  unsigned char *seen = calloc((size_t)world, 1);
  if (!seen) {
    close(lfd);
    return gf_fail(err, GF_ENOMEM, "rendezvous: cannot allocate %d flags",
                   world);
  }
  unsigned char head[16];
  memcpy(head, RDV_MAGIC, 8);
  gf_be32_put(head + 8, (uint32_t)n);
  int served = 0, rejected = 0;
  gf_status st = GF_OK;
  while (served < world - 1) {
    struct pollfd pf = {lfd, POLLIN, 0};
    int ms = gf_ms_left(deadline);
    if (ms == 0) {
      st = gf_fail(err, GF_ETIMEOUT,
                   "rendezvous: rank 0 heard from %d of %d ranks on port %d "
                   "within %.3g s (%d hellos rejected)",
                   served, world - 1, port, timeout_s, rejected);
      break;
    }
    int pr = poll(&pf, 1, ms);
    if (pr <= 0) continue;
    int fd = gf_sock_accept(lfd);
    if (fd < 0) continue;
    unsigned char hello[16];
    /* one slow client may not hold rank 0 past a few seconds */
    double hd = gf_mono_s() + 5.0;
    gf_err e;
    if (gf_sock_read_full(fd, hello, sizeof hello,
                          hd < deadline ? hd : deadline, NULL, &e) == GF_OK &&
        memcmp(hello, RDV_MAGIC, 8) == 0) {
      uint32_t r = gf_be32_get(hello + 8), w = gf_be32_get(hello + 12);
      if (w == (uint32_t)world && r >= 1 && r < (uint32_t)world && !seen[r] &&
          gf_sock_write_full(fd, head, sizeof head, deadline, &e) == GF_OK &&
          gf_sock_write_full(fd, blob, n, deadline, &e) == GF_OK) {
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

static gf_status rdv_fetch(const char *addr, int port, int rank, int world,
                           void *blob, size_t n, double deadline,
                           double timeout_s, gf_err *err) {
  unsigned char hello[16], head[16];
  memcpy(hello, RDV_MAGIC, 8);
  gf_be32_put(hello + 8, (uint32_t)rank);
  gf_be32_put(hello + 12, (uint32_t)world);
  gf_err why; /* the last failure, for the timeout's message */
  gf_fail(&why, GF_ETIMEOUT, "no attempt");
  while (gf_ms_left(deadline) > 0) {
    int fd = -1;
    gf_status st = gf_sock_dial_until(addr, port, deadline, 0.05, &fd, &why);
    if (st == GF_ETIMEOUT) break;
    if (st) return gf_fail(err, st, "rendezvous: MASTER_ADDR: %s", why.msg);
    char name[GF_SOCK_NAME_MAX];
    gf_sock_name(addr, port, name, sizeof name);
    gf_err e;
    st = gf_sock_write_full(fd, hello, sizeof hello, deadline, &e);
    if (!st) st = gf_sock_read_full(fd, head, sizeof head, deadline, NULL, &e);
    if (!st &&
        (memcmp(head, RDV_MAGIC, 8) != 0 || gf_be32_get(head + 8) != n)) {
      close(fd);
      return gf_fail(err, GF_EFORMAT,
                     "rendezvous: %s answered with something that is not "
                     "this job's rank 0 (wrong magic or length)",
                     name);
    }
    if (!st) st = gf_sock_read_full(fd, blob, n, deadline, NULL, &e);
    close(fd);
    if (!st) return GF_OK;
    gf_fail(&why, st, "%s: exchange: %s", name, e.msg);
    /* rank 0 went away mid-exchange: try again while time is left */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return gf_fail(err, GF_ETIMEOUT,
                 "rendezvous: rank %d got no answer from rank 0 within %.3g s "
                 "(last: %s)",
                 rank, timeout_s, why.msg);
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
  double deadline = gf_mono_s() + timeout_s;
  if (rank == 0)
    return rdv_serve(port, world, blob, n, deadline, timeout_s, err);
  return rdv_fetch(addr, port, rank, world, blob, n, deadline, timeout_s, err);
}
