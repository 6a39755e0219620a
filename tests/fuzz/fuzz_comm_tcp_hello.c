/* fuzz_comm_tcp_hello.c - fuzz target for the tcp engine's bootstrap
 * parsers (kernels/src/comm/comm_tcp_wire.c), which read what peers send:
 * the first GF_TCP_MSG_BYTES bytes are one message (hello, table header,
 * reject, mesh), the rest a table of entries for the world the header
 * names (any other message: the world the length implies, at most 64).
 * Any input gives GF_EFORMAT with a NUL-terminated message, or values
 * inside the documented ranges. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fail(gf_status st, const gf_err *e) {
  if (st != GF_EFORMAT || e->code != GF_EFORMAT || !e->msg[0] ||
      !memchr(e->msg, '\0', sizeof e->msg))
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_tcp_msg m;
  gf_err e;
  memset(&e, 0, sizeof e);
  size_t head = size < GF_TCP_MSG_BYTES ? size : GF_TCP_MSG_BYTES;
  gf_status st = gf_comm_tcp_parse_msg(data, head, &m, &e);
  int world = 0;
  if (st) {
    check_fail(st, &e);
  } else {
    if (m.kind < GF_TCP_HELLO || m.kind > GF_TCP_MESH_ACK || m.world < 1 ||
        m.world > GF_TCP_MAX_WORLD || m.rank < 0 || m.rank >= m.world ||
        m.port < 0 || m.port > 65535)
      __builtin_trap();
    if (m.kind == GF_TCP_HELLO && (m.rank == 0 || m.port == 0 || m.token))
      __builtin_trap();
    if ((m.kind == GF_TCP_TABLE || m.kind == GF_TCP_MESH ||
         m.kind == GF_TCP_MESH_ACK) != (m.token != 0))
      __builtin_trap();
    if (m.kind == GF_TCP_TABLE) world = m.world;
  }
  if (size <= GF_TCP_MSG_BYTES) return 0;
  const uint8_t *rest = data + GF_TCP_MSG_BYTES;
  size_t n = size - GF_TCP_MSG_BYTES;
  if (!world) {
    size_t w = n / GF_TCP_ENTRY_BYTES;
    world = w < 1 ? 1 : w > 64 ? 64 : (int)w;
  }
  gf_tcp_entry *t = malloc((size_t)world * sizeof *t);
  if (!t) return 0;
  memset(&e, 0, sizeof e);
  st = gf_comm_tcp_parse_table(rest, n, world, t, &e);
  if (st) {
    check_fail(st, &e);
  } else {
    if (t[0].family != 0 || t[0].port != 0) __builtin_trap();
    for (int r = 1; r < world; r++)
      if ((t[r].family != 4 && t[r].family != 6) || t[r].port < 1 ||
          t[r].port > 65535)
        __builtin_trap();
  }
  free(t);
  return 0;
}
