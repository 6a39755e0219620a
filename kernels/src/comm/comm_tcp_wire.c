/* comm_tcp_wire.c - the tcp engine's wire format (comm_tcp_wire.h): the
 * bootstrap messages and table with their parsers (outside input: every
 * field checked; fuzzed by tests/fuzz/fuzz_comm_tcp_hello.c) and the
 * header of a stream message. Not here: moving the bytes (comm_tcp_boot.c,
 * comm_tcp_net.c). */
#include <string.h>

#include "comm_impl.h"
#include "comm_tcp_wire.h"
#include "gf/sock.h"

/* ---- bootstrap ----------------------------------------------------------- */

static const unsigned char TCP_MAGIC[4] = {'g', 'f', 'T', 'C'};

void gf_comm_tcp_put_msg(unsigned char *p, const gf_tcp_msg *m) {
  memcpy(p, TCP_MAGIC, 4);
  gf_be32_put(p + 4, (uint32_t)GF_TCP_VERSION << 16 | (uint32_t)m->kind);
  gf_be32_put(p + 8, (uint32_t)m->rank);
  gf_be32_put(p + 12, (uint32_t)m->world);
  gf_be32_put(p + 16, (uint32_t)m->port);
  gf_be32_put(p + 20, m->token);
}

gf_status gf_comm_tcp_parse_msg(const unsigned char *p, size_t n,
                                gf_tcp_msg *out, gf_err *err) {
  if (!p || n != GF_TCP_MSG_BYTES)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: a bootstrap message of %zu bytes, "
                   "not %d",
                   n, GF_TCP_MSG_BYTES);
  if (memcmp(p, TCP_MAGIC, 4) != 0)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: the peer is not a ganflow tcp rank (magic %02x%02x"
                   "%02x%02x)",
                   p[0], p[1], p[2], p[3]);
  uint32_t vk = gf_be32_get(p + 4);
  uint32_t version = vk >> 16, kind = vk & 0xffffu;
  uint32_t rank = gf_be32_get(p + 8), world = gf_be32_get(p + 12);
  uint32_t port = gf_be32_get(p + 16), token = gf_be32_get(p + 20);
  if (version != GF_TCP_VERSION)
    return gf_fail(err, GF_EFORMAT,
                   "tcp: the peer speaks protocol version %u, this build %d "
                   "(mixed ganflow versions in one job?)",
                   version, GF_TCP_VERSION);
  if (kind < GF_TCP_HELLO || kind > GF_TCP_MESH_ACK)
    return gf_fail(err, GF_EFORMAT, "tcp: unknown message kind %u", kind);
  if (world < 1 || world > GF_TCP_MAX_WORLD)
    return gf_fail(err, GF_EFORMAT, "tcp: world %u not in [1, %d]", world,
                   GF_TCP_MAX_WORLD);
  if (rank >= world)
    return gf_fail(err, GF_EFORMAT, "tcp: rank %u not below world %u", rank,
                   world);
  int needs_token = kind == GF_TCP_TABLE || kind == GF_TCP_MESH ||
                    kind == GF_TCP_MESH_ACK;
  if (needs_token ? token == 0 : token != 0)
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u with token %u", kind,
                   token);
  if (kind == GF_TCP_HELLO) {
    if (rank < 1) return gf_fail(err, GF_EFORMAT, "tcp: a hello from rank 0");
    if (port < 1 || port > 65535)
      return gf_fail(err, GF_EFORMAT, "tcp: hello port %u not in [1, 65535]",
                     port);
  } else if (kind == GF_TCP_REJECT) {
    if (port < GF_TCP_R_WORLD || port > GF_TCP_R_VERSION)
      return gf_fail(err, GF_EFORMAT, "tcp: unknown reject reason %u", port);
  } else if (port != 0) {
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u with port %u", kind,
                   port);
  }
  if ((kind == GF_TCP_TABLE || kind == GF_TCP_MESH) && rank < 1)
    return gf_fail(err, GF_EFORMAT, "tcp: message kind %u for rank 0", kind);
  out->kind = (int)kind;
  out->rank = (int)rank;
  out->world = (int)world;
  out->port = (int)port;
  out->token = token;
  return GF_OK;
}

gf_status gf_comm_tcp_parse_table(const unsigned char *p, size_t n, int world,
                                  gf_tcp_entry *out, gf_err *err) {
  if (world < 1 || world > GF_TCP_MAX_WORLD || !p ||
      n != (size_t)world * GF_TCP_ENTRY_BYTES)
    return gf_fail(err, GF_EFORMAT, "tcp: a table of %zu bytes for world %d", n,
                   world);
  static const unsigned char zero[GF_TCP_ENTRY_BYTES];
  if (memcmp(p, zero, GF_TCP_ENTRY_BYTES) != 0)
    return gf_fail(err, GF_EFORMAT, "tcp: table entry of rank 0 is not empty");
  for (int r = 1; r < world; r++) {
    const unsigned char *e = p + (size_t)r * GF_TCP_ENTRY_BYTES;
    int fam = e[0];
    uint32_t port = gf_be32_get(e + 20);
    int pad = e[1] | e[2] | e[3];
    int tail = 0, any = 0;
    for (int i = 0; i < 16; i++) any |= e[4 + i];
    for (int i = 4; i < 16; i++) tail |= e[4 + i];
    if ((fam != 4 && fam != 6) || pad || (fam == 4 && tail) || !any)
      return gf_fail(err, GF_EFORMAT,
                     "tcp: table entry of rank %d: family %d, not an IPv4 or "
                     "IPv6 address",
                     r, fam);
    if (port < 1 || port > 65535)
      return gf_fail(err, GF_EFORMAT,
                     "tcp: table entry of rank %d: port %u not in [1, 65535]",
                     r, port);
  }
  for (int r = 0; r < world; r++) {
    const unsigned char *e = p + (size_t)r * GF_TCP_ENTRY_BYTES;
    out[r].family = e[0];
    memcpy(out[r].addr, e + 4, 16);
    out[r].port = (int)gf_be32_get(e + 20);
  }
  return GF_OK;
}

/* ---- streams ------------------------------------------------------------- */

void gf_tcp_put_hdr(unsigned char *h, uint64_t seq, int kind, int scope,
                    int arg, uint32_t part, uint64_t bytes) {
  gf_be64_put(h, seq);
  h[8] = (unsigned char)kind;
  h[9] = (unsigned char)scope;
  h[10] = (unsigned char)((unsigned)arg >> 8);
  h[11] = (unsigned char)arg;
  gf_be32_put(h + 12, part);
  gf_be64_put(h + 16, bytes);
}

const char *gf_tcp_kind_name(int k) {
  switch (k) {
  case GF_STEP_ALLREDUCE: return "all-reduce";
  case GF_STEP_REDUCE: return "reduce";
  case GF_STEP_BCAST: return "broadcast";
  case GF_STEP_XADD: return "tree exchange";
  case GF_STEP_BARRIER: return "barrier";
  case GF_STEP_ALLGATHER: return "allgather";
  }
  return "unknown";
}
