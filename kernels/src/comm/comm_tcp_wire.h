/* comm_tcp_wire.h - private to the tcp engine: the bytes it puts on the
 * wire, and their writers and parsers (comm_tcp_wire.c). Two formats, every
 * integer big-endian:
 *
 * Bootstrap (comm_tcp_boot.c), messages of GF_TCP_MSG_BYTES:
 *   "gfTC" | version u16 (GF_TCP_VERSION) | kind u16 | rank u32 | world u32
 *   | port u32 | token u32
 * kinds: HELLO (rank -> rank 0: its rank, world and listening port),
 * TABLE (rank 0 -> rank: rank = the recipient, token = this job's nonce;
 * followed by world GF_TCP_ENTRY_BYTES entries), REJECT (rank 0 -> rank:
 * port = the reason, world = rank 0's world), MESH (rank j -> rank i < j
 * over j's new connection: j, the token) and MESH_ACK (i -> j). A table
 * entry: family u8 (0 for rank 0, which everyone reaches at MASTER_ADDR; 4
 * or 6) | 3 zero bytes | address (16 bytes; IPv4 in the first 4, the rest
 * zero) | port u32.
 *
 * Streams (comm_tcp_net.c, comm_tcp.c): every message is a GF_TCP_HDR-byte
 * header and its payload. Header: op seq u64 | step kind u8 | scope u8 |
 * arg u16 (tree level, root) | part u32 (round; REDUCE: the sender's
 * position) | bytes u64. The first GF_TCP_ID bytes identify the message;
 * the receiver checks the byte count against its own, and a message that
 * can belong to none of its collectives (another kind of step under the
 * same op number, an op it has finished) fails with GF_EINVAL instead of
 * being read as garbage. Three control headers, each sent only between two
 * messages of a stream, with seq 0 and no payload (kind >= GF_TCP_K_BYE):
 *   BYE    sent by gf_comm_free; the rest zero
 *   ABORT  gf_comm_abort; bytes = the code (two's complement)
 *   LOST   "rank L is gone": part = L, scope = the reason (LOST_CLOSED: its
 *          stream ended without a BYE; LOST_ERROR: a socket error, bytes =
 *          the errno; LOST_ABORTED: it sent ABORT, bytes = its code), arg 0
 *
 * Not here: the engines' shared state (comm_impl.h), the tcp engine's
 * (comm_tcp.h), sockets (gf/sock.h). */
#ifndef GF_COMM_TCP_WIRE_H
#define GF_COMM_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

/* ---- bootstrap ----------------------------------------------------------- */

#define GF_TCP_VERSION 1
#define GF_TCP_MSG_BYTES 24
#define GF_TCP_ENTRY_BYTES 24
#define GF_TCP_MAX_WORLD 65536
enum {
  GF_TCP_HELLO = 1,
  GF_TCP_TABLE = 2,
  GF_TCP_REJECT = 3,
  GF_TCP_MESH = 4,
  GF_TCP_MESH_ACK = 5
};
/* REJECT reasons */
enum { GF_TCP_R_WORLD = 1, GF_TCP_R_TWICE = 2, GF_TCP_R_VERSION = 3 };
typedef struct gf_tcp_msg {
  int kind;       /* GF_TCP_HELLO..GF_TCP_MESH_ACK */
  int rank;       /* 0 <= rank < world */
  int world;      /* 1..GF_TCP_MAX_WORLD */
  int port;       /* HELLO: 1..65535; REJECT: the reason; else 0 */
  uint32_t token; /* TABLE, MESH, MESH_ACK: != 0; else 0 */
} gf_tcp_msg;
typedef struct gf_tcp_entry {
  int family;             /* 0 (rank 0), 4 or 6 */
  unsigned char addr[16]; /* family 4: first 4 bytes */
  int port;               /* 1..65535; 0 for rank 0 */
} gf_tcp_entry;
/* Writes m as GF_TCP_MSG_BYTES bytes (m is not checked). */
void gf_comm_tcp_put_msg(unsigned char *p, const gf_tcp_msg *m);
/* Parses n bytes from a peer (outside input): magic, version, kind, and
 * every field against the kind's range above. GF_EFORMAT with a message
 * naming the field otherwise; *out written only on success. Fuzzed by
 * tests/fuzz/fuzz_comm_tcp_hello.c. */
gf_status gf_comm_tcp_parse_msg(const unsigned char *p, size_t n,
                                gf_tcp_msg *out, gf_err *err);
/* Parses the n bytes of a table of `world` entries (n must be world *
 * GF_TCP_ENTRY_BYTES): entry 0 all zero, the others family 4 or 6 with
 * zero padding, a non-zero address and a port 1..65535. out has world
 * entries (caller-owned); GF_EFORMAT naming the entry otherwise. */
gf_status gf_comm_tcp_parse_table(const unsigned char *p, size_t n, int world,
                                  gf_tcp_entry *out, gf_err *err);

/* ---- streams ------------------------------------------------------------- */

#define GF_TCP_HDR 24
/* Bytes of a header that identify a message (all but the byte count). */
#define GF_TCP_ID 16

/* Control kinds (the step-kind byte) */
enum { GF_TCP_K_BYE = 0xf0, GF_TCP_K_ABORT = 0xf1, GF_TCP_K_LOST = 0xf2 };
/* LOST reasons (the scope byte of a LOST header) */
enum { GF_TCP_LOST_CLOSED = 1, GF_TCP_LOST_ERROR = 2, GF_TCP_LOST_ABORTED = 3 };

/* Writes a header: op seq | kind | scope | arg | part | bytes. */
void gf_tcp_put_hdr(unsigned char *h, uint64_t seq, int kind, int scope,
                    int arg, uint32_t part, uint64_t bytes);
/* "all-reduce", "tree exchange", ... for a step kind; "unknown" else. */
const char *gf_tcp_kind_name(int kind);

#endif
