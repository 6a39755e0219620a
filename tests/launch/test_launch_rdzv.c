/* test_launch_rdzv.c - the rendezvous wire of `ganflow launch --nnodes`
 * (launch/src/launch_rdzv.c): every message parsed and refused as it should
 * be, and lines carried over a real loopback connection, including the last
 * lines before the peer closes and a line longer than allowed. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gf/clock.h"
#include "launch_internal.h"
#include "wait_util.h"

static void test_parse(void) {
  rdzv_msg m;
  gf_err e;
  REQUIRE(rdzv_parse("HELLO 3 2 node3", &m, &e) == GF_OK);
  CHECK(m.kind == RDZV_HELLO && m.node == 3 && m.nproc == 2 &&
        strcmp(m.host, "node3") == 0);
  REQUIRE(rdzv_parse("GO 4 6 2 1 29501 1", &m, &e) == GF_OK);
  CHECK(m.kind == RDZV_GO && m.round == 4 && m.world == 6 && m.base == 2 &&
        m.ga == 1 && m.port == 29501 && m.resume == 1);
  REQUIRE(rdzv_parse("FAIL 2 train rank 1 (slot 1, pid 9) was killed", &m,
                     &e) == GF_OK);
  CHECK(m.kind == RDZV_FAIL && m.round == 2 && !m.at_start &&
        strcmp(m.text, "rank 1 (slot 1, pid 9) was killed") == 0);
  REQUIRE(rdzv_parse("FAIL 3 start cannot start", &m, &e) == GF_OK);
  CHECK(m.at_start && m.round == 3 && strcmp(m.text, "cannot start") == 0);
  REQUIRE(rdzv_parse("ENDED 7 stopped", &m, &e) == GF_OK);
  CHECK(m.kind == RDZV_ENDED && m.ended == RDZV_END_STOPPED);
  REQUIRE(rdzv_parse("ENDED 7 usage", &m, &e) == GF_OK);
  CHECK(m.ended == RDZV_END_USAGE);
  REQUIRE(rdzv_parse("EXIT 143 stopped by a signal", &m, &e) == GF_OK);
  CHECK(m.kind == RDZV_EXIT && m.code == 143 &&
        strcmp(m.text, "stopped by a signal") == 0);
  CHECK(rdzv_parse("PING", &m, &e) == GF_OK && m.kind == RDZV_PING);
  CHECK(rdzv_parse("BEAT", &m, &e) == GF_OK && m.kind == RDZV_BEAT);
  CHECK(rdzv_parse("DRAIN 3", &m, &e) == GF_OK && m.round == 3);
  const char *bad[] = {
      "", "HELLO", "HELLO 64 1 h", "HELLO 1 0 h", "HELLO 1 1", "HELLO 1 1 h x",
      "HELLO -1 1 h", "GO 1 2 2 1 5 0", "GO 1 2 0 0 5 0", "GO 1 2 0 1 0 0",
      "GO 1 2 0 1 70000 0", "GO 1 2 0 1 5 2", "GO 1 2 0 1 5", "GO 1 2 0 1 5 0 9",
      "ENDED 1 maybe", "ENDED 1", "EXIT 256 x", "EXIT x", "IDLE", "IDLE 1 2",
      "WAIT 99999999999", "PING now", "go 1 2 0 1 5 0", "HELLO  1 1 h",
      "STOP", "FAIL x y", "FAIL 2 rank 1 died", "FAIL 2", "FAIL 2 begin x",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(rdzv_parse(bad[i], &m, &e) == GF_EFORMAT, "'%s'", bad[i]);
}

static void test_wire(void) {
  int port = 0, lfd = -1;
  gf_err e;
  REQUIRE(launch_free_port(&port, &e) == GF_OK);
  REQUIRE(rdzv_listen(port, &lfd, &e) == GF_OK);
  rdzv_conn a, b;
  rdzv_init(&a);
  rdzv_init(&b);
  REQUIRE(rdzv_dial(&a, "127.0.0.1", port, 2.0, &e) == GF_OK);
  double end = gf_mono_s() + 10;
  while (b.fd < 0 && gf_mono_s() < end) b.fd = rdzv_accept(lfd);
  REQUIRE(b.fd >= 0);
  CHECK(rdzv_send(&a, "HELLO %d %d %s", 1, 2, "h\nx")); /* newline -> space */
  CHECK(rdzv_send(&a, "EXIT 0 done"));
  rdzv_close(&a); /* the lines sent before the close still arrive */
  char line[RDZV_LINE];
  int got = 0, closed = 0;
  while (gf_mono_s() < end && !closed) {
    closed = rdzv_pump(&b, gf_mono_s()) != 0;
    while (rdzv_line(&b, line, sizeof line)) {
      if (got == 0) CHECKF(strcmp(line, "HELLO 1 2 h x") == 0, "%s", line);
      if (got == 1) CHECK(strcmp(line, "EXIT 0 done") == 0);
      got++;
    }
  }
  CHECK(closed && got == 2);
  rdzv_close(&b);
  /* a line longer than the buffer holds breaks the connection */
  REQUIRE(rdzv_dial(&a, "127.0.0.1", port, 2.0, &e) == GF_OK);
  while (b.fd < 0 && gf_mono_s() < end) b.fd = rdzv_accept(lfd);
  REQUIRE(b.fd >= 0);
  char big[3 * RDZV_LINE];
  memset(big, 'x', sizeof big);
  REQUIRE(write(a.fd, big, sizeof big) == (ssize_t)sizeof big);
  int r = 0;
  while (r == 0 && gf_mono_s() < end) r = rdzv_pump(&b, gf_mono_s());
  CHECK(r == -1);
  rdzv_close(&a);
  rdzv_close(&b);
  /* nobody listening: a clear error */
  close(lfd);
  CHECK(rdzv_dial(&a, "127.0.0.1", port, 1.0, &e) == GF_EIO &&
        strstr(e.msg, "rendezvous 127.0.0.1"));
}

int main(void) {
  test_parse();
  test_wire();
  return check_report();
}
