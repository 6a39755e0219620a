/* test_comm_rdv.c - the TCP rendezvous that bootstraps NCCL under torchrun
 * (kernels/src/comm/comm_rdv.c), with forked processes on the loopback:
 * a world of 4 gets rank 0's blob even when the others start first (rank 0
 * listens only once every client has been refused at least once), and
 * every failure has its own answer: nobody comes (GF_ETIMEOUT at rank 0,
 * within the timeout), nobody listens (GF_ETIMEOUT at a client), a hello
 * from another world is rejected, a port already taken is GF_EIO naming
 * MASTER_PORT, bad arguments are GF_EINVAL. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm_impl.h"
#include "wait_util.h"

/* ---- refused connections, seen from inside a client -------------------
 * This program defines connect() and getsockopt(), so the rendezvous
 * (linked in from the static gf_kernels) calls these, which make the
 * system calls themselves and watch for ECONNREFUSED: from connect(), or,
 * for the non-blocking connect the rendezvous makes, from SO_ERROR once
 * poll says the attempt ended. A client child with refused_fd >= 0 writes
 * its rank there at its first refusal, so the parent knows it tried before
 * rank 0 listened. Everywhere else (refused_fd -1) they only pass through. */
static int refused_fd = -1;
static unsigned char refused_rank;

static void note_refused(void) {
  if (refused_fd < 0) return;
  (void)!write(refused_fd, &refused_rank, 1);
  close(refused_fd);
  refused_fd = -1;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  int rc = (int)syscall(SYS_connect, fd, addr, len), e = errno;
  if (rc != 0 && e == ECONNREFUSED) note_refused();
  errno = e;
  return rc;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
  int rc = (int)syscall(SYS_getsockopt, fd, level, name, val, len), e = errno;
  if (rc == 0 && level == SOL_SOCKET && name == SO_ERROR && val && len &&
      *len >= sizeof(int) && *(const int *)val == ECONNREFUSED)
    note_refused();
  errno = e;
  return rc;
}

/* A loopback port that was free a moment ago. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

static void fill_blob(unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 37 + 11);
}

/* Forks a client rank; its exit status is 0 when it got the blob, 10 +
 * (status) otherwise. With report_fd >= 0 it writes its rank there at its
 * first refused connection (the parent closes its copy of report_fd). */
static pid_t spawn_client(int port, int rank, int world, double timeout_s,
                          int report_fd) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid) return pid;
  refused_fd = report_fd;
  refused_rank = (unsigned char)rank;
  unsigned char blob[128], want[128];
  memset(blob, 0, sizeof blob);
  fill_blob(want, sizeof want);
  gf_err e = {0};
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, rank, world, blob,
                                   sizeof blob, timeout_s, &e);
  if (st) {
    fprintf(stderr, "client %d: %s\n", rank, e.msg);
    _exit(10 - (int)st);
  }
  _exit(memcmp(blob, want, sizeof blob) == 0 ? 0 : 2);
}

static int reap(pid_t pid) {
  int ws = 0;
  if (waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws)) return -1;
  return WEXITSTATUS(ws);
}

static void test_world4(void) {
  int port = free_port();
  pid_t kids[3];
  /* clients first: they retry until rank 0 listens. Rank 0 starts once
   * every client has reported a refused connection on the port. */
  int pfd[2];
  REQUIRE(pipe(pfd) == 0);
  for (int r = 1; r < 4; r++) {
    kids[r - 1] = spawn_client(port, r, 4, 10.0, pfd[1]);
  }
  close(pfd[1]);
  int refused[4] = {0}, nrefused = 0;
  tu_deadline d = tu_deadline_in(5.0);
  while (nrefused < 3 && tu_wait_fd(pfd[0], POLLIN, tu_deadline_left(&d))) {
    unsigned char r = 0;
    if (read(pfd[0], &r, 1) != 1) break; /* every client gone */
    if (r >= 1 && r < 4 && !refused[r]) refused[r] = 1, nrefused++;
  }
  close(pfd[0]);
  CHECKF(nrefused == 3,
         "only %d of 3 clients were refused before rank 0 started (within "
         "5 s; refused: 1 %d, 2 %d, 3 %d)",
         nrefused, refused[1], refused[2], refused[3]);
  unsigned char blob[128];
  fill_blob(blob, sizeof blob);
  gf_err e = {0};
  double t0 = gf_comm_now();
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, 0, 4, blob, sizeof blob,
                                   10.0, &e);
  CHECKF(st == GF_OK, "rank 0: %s", e.msg);
  CHECK(gf_comm_now() - t0 < 5.0);
  for (int i = 0; i < 3; i++) CHECK_INT_EQ(reap(kids[i]), 0);
}

static void test_nobody_comes(void) {
  int port = free_port();
  unsigned char blob[16] = {1};
  gf_err e = {0};
  double t0 = gf_comm_now();
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, 0, 2, blob, sizeof blob,
                                   0.3, &e);
  double dt = gf_comm_now() - t0;
  CHECK_INT_EQ(st, GF_ETIMEOUT);
  CHECKF(dt >= 0.29 && dt < 2.0, "waited %.3f s", dt);
  CHECKF(strstr(e.msg, "0 of 1") != NULL, "%s", e.msg);
}

static void test_nobody_listens(void) {
  int port = free_port();
  unsigned char blob[16];
  gf_err e = {0};
  double t0 = gf_comm_now();
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, 1, 2, blob, sizeof blob,
                                   0.3, &e);
  double dt = gf_comm_now() - t0;
  CHECK_INT_EQ(st, GF_ETIMEOUT);
  CHECKF(dt >= 0.29 && dt < 2.0, "waited %.3f s", dt);
  CHECKF(strstr(e.msg, "rank 1") && strstr(e.msg, "connect"), "%s", e.msg);
}

/* A client of a world of 3 talks to a rank 0 of a world of 2: rank 0
 * rejects it and times out; the client gets nothing either. */
static void test_wrong_world(void) {
  int port = free_port();
  pid_t kid = spawn_client(port, 1, 3, 1.0, -1);
  unsigned char blob[128];
  fill_blob(blob, sizeof blob);
  gf_err e = {0};
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, 0, 2, blob, sizeof blob,
                                   0.8, &e);
  CHECK_INT_EQ(st, GF_ETIMEOUT);
  CHECKF(strstr(e.msg, "rejected") && !strstr(e.msg, "(0 hellos"), "%s", e.msg);
  CHECK_INT_EQ(reap(kid), 10 - GF_ETIMEOUT);
}

static void test_port_taken(void) {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  int zero = 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  REQUIRE(listen(fd, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
  int port = ntohs(a.sin6_port);
  unsigned char blob[8] = {0};
  gf_err e = {0};
  gf_status st = gf_comm_rdv_share("127.0.0.1", port, 0, 2, blob, sizeof blob,
                                   0.5, &e);
  CHECK_INT_EQ(st, GF_EIO);
  CHECKF(strstr(e.msg, "MASTER_PORT") != NULL, "%s", e.msg);
  close(fd);
}

static void test_bad_args(void) {
  unsigned char blob[8] = {0};
  gf_err e = {0};
  CHECK(gf_comm_rdv_share("h", 0, 0, 2, blob, 8, 1, &e) == GF_EINVAL);
  CHECK(gf_comm_rdv_share("h", 1, 2, 2, blob, 8, 1, &e) == GF_EINVAL);
  CHECK(gf_comm_rdv_share("h", 1, 0, 0, blob, 8, 1, &e) == GF_EINVAL);
  CHECK(gf_comm_rdv_share("h", 1, 0, 2, NULL, 8, 1, &e) == GF_EINVAL);
  CHECK(gf_comm_rdv_share("", 1, 1, 2, blob, 8, 1, &e) == GF_EINVAL);
  /* world 1: nothing to share, no socket */
  CHECK(gf_comm_rdv_share(NULL, 1, 0, 1, blob, 8, 1, &e) == GF_OK);
}

int main(void) {
  test_bad_args();
  test_world4();
  test_nobody_comes();
  test_nobody_listens();
  test_wrong_world();
  test_port_taken();
  return check_report();
}
