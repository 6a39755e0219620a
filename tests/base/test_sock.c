/* test_sock.c - gf/sock.h on the loopback only (no traffic leaves the host,
 * no name server is asked):
 *   - HOST:PORT and a HOST alone under the one address rule, on good and
 *     hostile input (the fuzz target tests/fuzz/fuzz_base_sock_split.c
 *     goes on from here), and the name written back;
 *   - listening on port 0 of 127.0.0.1 and of ::1 (skipped, saying why,
 *     only when the kernel has no IPv6), of every address (dual-stack: both
 *     families reach it) and of 0.0.0.0 (IPv4 only), and a port in use;
 *   - dialing a closed port (refused at once; until a deadline, a timeout
 *     naming the last refusal) and a listener that never accepts (the
 *     kernel connects; a read then meets its deadline);
 *   - reads and writes with a deadline: a peer that sends half a message
 *     (a timeout naming the bytes that came), then closes (GF_EIO), short
 *     reads and writes under a signal every millisecond (EINTR), and a peer
 *     that never reads (the write's deadline). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gf/clock.h"
#include "gf/sock.h"

/* ---- addresses ------------------------------------------------------------ */

typedef struct good_case {
  const char *in, *host;
  int port;
} good_case;

static void test_split_good(void) {
  static const good_case cases[] = {
      {"node-1:29500", "node-1", 29500},
      {"node-1.cluster.local:1", "node-1.cluster.local", 1},
      {"a_b:65535", "a_b", 65535},
      {"10.0.0.7:0", "10.0.0.7", 0},
      {"localhost:00080", "localhost", 80},
      {"[::1]:29500", "::1", 29500},
      {"[::]:8080", "::", 8080},
      {"[fe80::1%eth0]:22", "fe80::1%eth0", 22},
      {"[::ffff:10.1.2.3]:7", "::ffff:10.1.2.3", 7},
      {"[2001:db8::ab:cd]:443", "2001:db8::ab:cd", 443},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char host[GF_SOCK_HOST_MAX] = "x";
    int port = -1;
    gf_err e = {0};
    gf_status st = gf_sock_split("test", cases[i].in, host, sizeof host, &port,
                                 &e);
    CHECKF(st == GF_OK, "%s: %s", cases[i].in, e.msg);
    CHECK_STR_EQ(host, cases[i].host);
    CHECK_INT_EQ(port, cases[i].port);
    /* written back and split again: the same */
    char name[GF_SOCK_NAME_MAX], again[GF_SOCK_HOST_MAX];
    int port2 = -1;
    gf_sock_name(host, port, name, sizeof name);
    CHECKF(gf_sock_split("again", name, again, sizeof again, &port2, &e) ==
                   GF_OK &&
               strcmp(again, host) == 0 && port2 == port,
           "%s -> %s", cases[i].in, name);
  }
}

static void test_split_bad(void) {
  char big[400];
  memset(big, 'a', sizeof big);
  memcpy(big + 300, ":80", 4); /* a 300-byte name */
  /* clang-format off */
  static const char *const bad[] = {
      "",            ":80",          "host",          "host:",
      "host:65536",  "host:-1",      "host:+80",      "host: 80",
      "host:80 ",    "host:8x",      "host:123456",   "::1:80",
      "fe80::1:22",  "[::1]",        "[::1]80",       "[::1]:",
      "[]:80",       "[host]:80",    "[1.2.3.4]:80",  "[::1:80",
      "::1]:80",     "a]:80",        "[::1]:80]",     "ho st:80",
      "host\n:80",   "h\xc3\xb6:80", "[::1%]:80",     "[::1%e th]:80",
      "[::1%%x]:80", "[:::1]:80",    "[::g]:80",      "a:b:80",
      "host:80:80",  "-",            "[::1]]:80",     "[[::1]]:80",
  };
  /* clang-format on */

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char host[GF_SOCK_HOST_MAX] = "untouched";
    int port = -7;
    gf_err e = {0};
    gf_status st = gf_sock_split("--rdzv", bad[i], host, sizeof host, &port,
                                 &e);
    CHECKF(st == GF_EINVAL, "'%s' accepted as %s port %d", bad[i], host, port);
    CHECKF(strstr(e.msg, "--rdzv") != NULL, "%s", e.msg);
    CHECK_STR_EQ(host, "untouched");
    CHECK_INT_EQ(port, -7);
  }
  char host[GF_SOCK_HOST_MAX] = "untouched";
  int port = -7;
  gf_err e = {0};
  CHECK(gf_sock_split("x", big, host, sizeof host, &port, &e) == GF_EINVAL);
  CHECK(gf_sock_split("x", NULL, host, sizeof host, &port, &e) == GF_EINVAL);
  /* a host longer than the caller's room */
  CHECK(gf_sock_split("x", "abcdef:1", host, 4, &port, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "too long") != NULL, "%s", e.msg);
  /* a control character in the message comes out as '?' */
  CHECK(gf_sock_split("x", "a\x01:1", host, sizeof host, &port, &e) ==
        GF_EINVAL);
  CHECKF(strchr(e.msg, '\x01') == NULL && strstr(e.msg, "a?"), "%s", e.msg);
  CHECK_STR_EQ(host, "untouched");
}

static void test_host_alone(void) {
  static const char *const good[][2] = {
      {"node-1", "node-1"},
      {"10.0.0.7", "10.0.0.7"},
      {"::1", "::1"},
      {"[::1]", "::1"},
      {"fe80::1%eth0", "fe80::1%eth0"},
      {"[fe80::1%eth0]", "fe80::1%eth0"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char h[GF_SOCK_HOST_MAX];
    gf_err e = {0};
    CHECKF(gf_sock_host("MASTER_ADDR", good[i][0], h, sizeof h, &e) == GF_OK,
           "%s: %s", good[i][0], e.msg);
    CHECK_STR_EQ(h, good[i][1]);
  }
  static const char *const bad[] = {"",       "a:b",   "[node]",  "[::1",
                                    "::1]",   "no de", "1::2::3", "[]",
                                    "node:1", "::1%",  "[::1]x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char h[GF_SOCK_HOST_MAX] = "x";
    gf_err e = {0};
    CHECKF(gf_sock_host("MASTER_ADDR", bad[i], h, sizeof h, &e) == GF_EINVAL,
           "'%s' accepted as %s", bad[i], h);
    CHECKF(strstr(e.msg, "MASTER_ADDR") != NULL, "%s", e.msg);
    CHECK_STR_EQ(h, "");
  }
  char name[GF_SOCK_NAME_MAX];
  CHECK_STR_EQ(gf_sock_name("::1", 80, name, sizeof name), "[::1]:80");
  CHECK_STR_EQ(gf_sock_name("node", 1, name, sizeof name), "node:1");
  CHECK_STR_EQ(gf_sock_name("node-long", 8080, name, 8), "node...");
}

/* ---- helpers --------------------------------------------------------------- */

/* Whether this kernel has IPv6 on the loopback; why not into why[]. */
static int have_ipv6(char *why, size_t cap) {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) {
    snprintf(why, cap, "socket(AF_INET6): %s", strerror(errno));
    return 0;
  }
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (!ok) snprintf(why, cap, "bind(::1): %s", strerror(errno));
  close(fd);
  return ok;
}

/* That a wait begun at t0 with a deadline `limit` seconds later ended at
 * the deadline: not before it, and not long after. */
static void check_took(double t0, double limit) {
  double dt = gf_mono_s() - t0;
  CHECKF(dt >= limit - 0.01 && dt < limit + 1.0, "%.3f s for a %.3g s deadline",
         dt, limit);
}

/* The connection a dial made, accepted on lfd within 2 s. */
static int accept_within(int lfd) {
  double end = gf_mono_s() + 2.0;
  int fd = -1;
  while ((fd = gf_sock_accept(lfd)) < 0 && gf_mono_s() < end) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return fd;
}

/* Dials host:port, accepts, and sends 100 bytes each way. */
static void round_trip(int lfd, const char *host, int port) {
  int c = -1;
  gf_err e = {0};
  gf_status st = gf_sock_dial(host, port, gf_mono_s() + 2.0, &c, &e);
  CHECKF(st == GF_OK, "dial %s %d: %s", host, port, e.msg);
  if (st) return;
  int s = accept_within(lfd);
  CHECKF(s >= 0, "no connection from %s", host);
  if (s < 0) {
    close(c);
    return;
  }
  unsigned char out[100], in[100];
  for (int i = 0; i < 100; i++) out[i] = (unsigned char)(i * 7 + 1);
  double dl = gf_mono_s() + 2.0;
  CHECK(gf_sock_write_full(c, out, sizeof out, dl, &e) == GF_OK);
  CHECK(gf_sock_read_full(s, in, sizeof in, dl, NULL, &e) == GF_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);
  CHECK(gf_sock_write_full(s, out, sizeof out, dl, &e) == GF_OK);
  memset(in, 0, sizeof in);
  CHECK(gf_sock_read_full(c, in, sizeof in, dl, NULL, &e) == GF_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);
  close(s);
  close(c);
}

/* ---- listen and dial -------------------------------------------------------- */

static void test_listen_port0(int v6) {
  int lfd = -1, port = 0;
  gf_err e = {0};
  REQUIRE(gf_sock_listen("127.0.0.1", 0, &lfd, &port, &e) == GF_OK);
  CHECK(port > 0 && port <= 65535);
  round_trip(lfd, "127.0.0.1", port);
  round_trip(lfd, "localhost", port); /* /etc/hosts, in its order */
  /* an IPv4 listener: ::1 finds nobody */
  if (v6) {
    int c = -1;
    CHECK(gf_sock_dial("::1", port, gf_mono_s() + 1.0, &c, &e) == GF_EIO);
  }
  close(lfd);
  if (!v6) return;
  REQUIRE(gf_sock_listen("::1", 0, &lfd, &port, &e) == GF_OK);
  CHECK(port > 0);
  round_trip(lfd, "::1", port);
  round_trip(lfd, "[::1]", port);
  close(lfd);
  REQUIRE(gf_sock_listen("[::1]", 0, &lfd, &port, &e) == GF_OK);
  round_trip(lfd, "::1", port);
  close(lfd);
}

/* Every address: one socket both families reach; "0.0.0.0": IPv4 only. */
static void test_every_address(int v6) {
  const char *every[] = {NULL, "", "*", "::", "[::]"};
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) {
    int lfd = -1, port = 0;
    gf_err e = {0};
    REQUIRE(gf_sock_listen(every[i], 0, &lfd, &port, &e) == GF_OK);
    round_trip(lfd, "127.0.0.1", port);
    if (v6) round_trip(lfd, "::1", port);
    close(lfd);
  }
  int lfd = -1, port = 0;
  gf_err e = {0};
  REQUIRE(gf_sock_listen("0.0.0.0", 0, &lfd, &port, &e) == GF_OK);
  round_trip(lfd, "127.0.0.1", port);
  if (v6) {
    int c = -1;
    CHECK(gf_sock_dial("::1", port, gf_mono_s() + 1.0, &c, &e) == GF_EIO);
  }
  close(lfd);
}

static void test_port_in_use(void) {
  int lfd = -1, port = 0, again = -1;
  gf_err e = {0};
  REQUIRE(gf_sock_listen(NULL, 0, &lfd, &port, &e) == GF_OK);
  errno = 0;
  CHECK(gf_sock_listen(NULL, port, &again, NULL, &e) == GF_EIO);
  CHECK(errno == EADDRINUSE);
  CHECK(again == -1);
  char want[64];
  snprintf(want, sizeof want, ":%d: bind: ", port);
  CHECKF(strstr(e.msg, want) && strstr(e.msg, "in use"), "%s", e.msg);
  errno = 0;
  CHECK(gf_sock_listen("127.0.0.1", port, &again, NULL, &e) == GF_EIO);
  CHECK(errno == EADDRINUSE);
  close(lfd);
  CHECK(gf_sock_listen(NULL, 65536, &again, NULL, &e) == GF_EINVAL);
  CHECK(gf_sock_listen("no host", 0, &again, NULL, &e) == GF_EINVAL);
}

/* A port nobody listens on (one the kernel gave, then closed). */
static int closed_port(void) {
  int lfd = -1, port = 0;
  gf_err e = {0};
  REQUIRE(gf_sock_listen("127.0.0.1", 0, &lfd, &port, &e) == GF_OK);
  close(lfd);
  return port;
}

static void test_dial_closed(void) {
  int port = closed_port(), fd = 7;
  gf_err e = {0};
  double t0 = gf_mono_s();
  CHECK_INT_EQ(gf_sock_dial("127.0.0.1", port, t0 + 2.0, &fd, &e), GF_EIO);
  CHECK(fd == -1);
  CHECK(gf_mono_s() - t0 < 1.0); /* refused at once */
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1:%d: connect: ", port);
  CHECKF(strstr(e.msg, want) && strstr(e.msg, "refused"), "%s", e.msg);
  /* again and again until the deadline: a timeout naming the refusal */
  t0 = gf_mono_s();
  CHECK_INT_EQ(gf_sock_dial_until("127.0.0.1", port, t0 + 0.3, 0.02, &fd, &e),
               GF_ETIMEOUT);
  check_took(t0, 0.3);
  CHECK(e.code == GF_ETIMEOUT);
  CHECKF(strstr(e.msg, want) && strstr(e.msg, "refused"), "%s", e.msg);
  /* a peer that comes late is reached */
  pid_t kid = fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int lfd = -1, p = 0;
    if (gf_sock_listen("127.0.0.1", port, &lfd, &p, NULL) != GF_OK) _exit(3);
    int s = accept_within(lfd);
    unsigned char b = 0;
    if (s < 0 || gf_sock_read_full(s, &b, 1, gf_mono_s() + 3.0, NULL, NULL))
      _exit(4);
    _exit(b == 42 ? 0 : 5);
  }
  CHECK_INT_EQ(gf_sock_dial_until("127.0.0.1", port, gf_mono_s() + 3.0, 0.02,
                                  &fd, &e),
               GF_OK);
  unsigned char b = 42;
  CHECK(fd >= 0 && gf_sock_write_full(fd, &b, 1, gf_mono_s() + 1, &e) == 0);
  int ws = 0;
  REQUIRE(waitpid(kid, &ws, 0) == kid);
  CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  if (fd >= 0) close(fd);
  /* arguments refused before any socket or name server */
  CHECK(gf_sock_dial("127.0.0.1", 0, gf_mono_s() + 1, &fd, &e) == GF_EINVAL);
  CHECK(gf_sock_dial("127.0.0.1", 65536, gf_mono_s() + 1, &fd, &e) ==
        GF_EINVAL);
  CHECK(gf_sock_dial("no host", port, gf_mono_s() + 1, &fd, &e) == GF_EINVAL);
  CHECK(gf_sock_dial("1::2::3", port, gf_mono_s() + 1, &fd, &e) == GF_EINVAL);
  CHECK(gf_sock_dial_until("no host", port, gf_mono_s() + 1, 0.01, &fd, &e) ==
        GF_EINVAL);
  /* no time left: no attempt */
  CHECK(gf_sock_dial("127.0.0.1", port, gf_mono_s() - 1, &fd, &e) ==
        GF_ETIMEOUT);
  CHECK(gf_sock_dial_until("127.0.0.1", port, gf_mono_s() - 1, 0.01, &fd, &e) ==
        GF_ETIMEOUT);
}

/* The kernel completes a connection to a listener that never accepts; a
 * read from it then meets its deadline. */
static void test_never_accepts(void) {
  int lfd = -1, port = 0, c = -1;
  gf_err e = {0};
  REQUIRE(gf_sock_listen("127.0.0.1", 0, &lfd, &port, &e) == GF_OK);
  CHECK(gf_sock_dial("127.0.0.1", port, gf_mono_s() + 2.0, &c, &e) == GF_OK);
  unsigned char b[16];
  size_t got = 99;
  double t0 = gf_mono_s();
  CHECK_INT_EQ(gf_sock_read_full(c, b, sizeof b, t0 + 0.2, &got, &e),
               GF_ETIMEOUT);
  check_took(t0, 0.2);
  CHECK(got == 0);
  CHECKF(strstr(e.msg, "timed out after 0 of 16 bytes"), "%s", e.msg);
  close(c);
  close(lfd);
}

/* ---- reads and writes ------------------------------------------------------- */

/* A connected pair over the loopback: *a dialed, *b accepted. */
static void pair(int *a, int *b) {
  int lfd = -1, port = 0;
  gf_err e = {0};
  REQUIRE(gf_sock_listen("127.0.0.1", 0, &lfd, &port, &e) == GF_OK);
  REQUIRE(gf_sock_dial("127.0.0.1", port, gf_mono_s() + 2.0, a, &e) == GF_OK);
  *b = accept_within(lfd);
  REQUIRE(*b >= 0);
  close(lfd);
}

static void test_half_message(void) {
  int a = -1, b = -1;
  pair(&a, &b);
  unsigned char msg[24], in[24];
  for (int i = 0; i < 24; i++) msg[i] = (unsigned char)(0xa0 + i);
  gf_err e = {0};
  REQUIRE(write(a, msg, 10) == 10);
  size_t got = 0;
  double t0 = gf_mono_s();
  CHECK_INT_EQ(gf_sock_read_full(b, in, sizeof in, t0 + 0.3, &got, &e),
               GF_ETIMEOUT);
  check_took(t0, 0.3);
  CHECK_INT_EQ(got, 10);
  CHECK(memcmp(in, msg, 10) == 0);
  CHECKF(strstr(e.msg, "after 10 of 24 bytes"), "%s", e.msg);
  /* the rest comes: it completes the message */
  REQUIRE(write(a, msg + 10, 14) == 14);
  CHECK(gf_sock_read_full(b, in + 10, 14, gf_mono_s() + 1, &got, &e) == GF_OK);
  CHECK(got == 14 && memcmp(in, msg, 24) == 0);
  /* half a message, then the peer closes */
  REQUIRE(write(a, msg, 5) == 5);
  close(a);
  CHECK_INT_EQ(gf_sock_read_full(b, in, 10, gf_mono_s() + 1, &got, &e), GF_EIO);
  CHECK_INT_EQ(got, 5);
  CHECKF(strstr(e.msg, "closed the connection after 5 of 10 bytes"), "%s",
         e.msg);
  /* writing to a closed peer: GF_EIO, no SIGPIPE */
  unsigned char big[1 << 16];
  memset(big, 1, sizeof big);
  gf_status st = GF_OK;
  for (int i = 0; i < 64 && st == GF_OK; i++)
    st = gf_sock_write_full(b, big, sizeof big, gf_mono_s() + 1, &e);
  CHECK_INT_EQ(st, GF_EIO);
  CHECKF(strstr(e.msg, "closed") || strstr(e.msg, "reset"), "%s", e.msg);
  close(b);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
  (void)sig;
  alarms++;
}

/* Short reads and writes (the peer moves 1 MB in small pieces with pauses,
 * and reads 4 MB slowly) while a signal without SA_RESTART interrupts
 * every millisecond. */
static void test_short_and_eintr(void) {
  enum { IN = 1 << 20, OUT = 4 << 20 };
  int a = -1, b = -1;
  pair(&a, &b);
  pid_t kid = fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    close(b);
    static unsigned char buf[OUT];
    for (size_t i = 0; i < IN; i++) buf[i] = (unsigned char)(i * 31 + 5);
    for (size_t o = 0; o < IN;) { /* 1 MB, 3000 bytes at a time */
      size_t k = IN - o < 3000 ? IN - o : 3000;
      if (gf_sock_write_full(a, buf + o, k, gf_mono_s() + 10, NULL)) _exit(3);
      o += k;
      if (o % 300000 < 3000) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
      }
    }
    for (size_t o = 0; o < OUT;) { /* 4 MB, read 4000 bytes at a time */
      size_t k = OUT - o < 4000 ? OUT - o : 4000;
      if (gf_sock_read_full(a, buf + o, k, gf_mono_s() + 10, NULL, NULL))
        _exit(4);
      o += k;
    }
    for (size_t i = 0; i < OUT; i++)
      if (buf[i] != (unsigned char)(i * 13 + 3)) _exit(5);
    _exit(0);
  }
  close(a);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm; /* no SA_RESTART: calls see EINTR */
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
  static unsigned char in[IN], out[OUT];
  gf_err e = {0};
  size_t got = 0;
  CHECKF(gf_sock_read_full(b, in, IN, gf_mono_s() + 20, &got, &e) == GF_OK,
         "%s", e.msg);
  int ok = got == IN;
  for (size_t i = 0; ok && i < IN; i++)
    ok = in[i] == (unsigned char)(i * 31 + 5);
  CHECK(ok);
  for (size_t i = 0; i < OUT; i++) out[i] = (unsigned char)(i * 13 + 3);
  CHECKF(gf_sock_write_full(b, out, OUT, gf_mono_s() + 20, &e) == GF_OK, "%s",
         e.msg);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  CHECKF(alarms > 5, "%d signals", (int)alarms);
  int ws = 0;
  while (waitpid(kid, &ws, 0) < 0 && errno == EINTR) {
  }
  CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "peer: status %#x", ws);
  close(b);
}

/* A peer that never reads: the write stops at its deadline, saying how
 * far it got. */
static void test_write_deadline(void) {
  int a = -1, b = -1;
  pair(&a, &b);
  enum { N = 64 << 20 };
  unsigned char *big = calloc(1, N);
  REQUIRE(big);
  gf_err e = {0};
  double t0 = gf_mono_s();
  CHECK_INT_EQ(gf_sock_write_full(a, big, N, t0 + 0.3, &e), GF_ETIMEOUT);
  check_took(t0, 0.3);
  CHECKF(strstr(e.msg, "timed out after ") && strstr(e.msg, " of 67108864"),
         "%s", e.msg);
  free(big);
  close(a);
  close(b);
}

int main(void) {
  signal(SIGPIPE, SIG_DFL); /* a write without MSG_NOSIGNAL would kill us */
  test_split_good();
  test_split_bad();
  test_host_alone();
  char why[160] = "";
  int v6 = have_ipv6(why, sizeof why);
  if (!v6)
    printf("IPv6 parts skipped: this kernel has no IPv6 on the loopback "
           "(%s)\n",
           why);
  test_listen_port0(v6);
  test_every_address(v6);
  test_port_in_use();
  test_dial_closed();
  test_never_accepts();
  test_half_message();
  test_short_and_eintr();
  test_write_deadline();
  return check_report();
}
