/* uuid.c - random version 4 UUIDs; see gf/uuid.h. */
#include "gf/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "gf/text.h"

/* Fills n bytes from fd's reads (fd open) or getrandom (fd < 0); 0 when
 * all came, else the errno of the failure. */
static int fill(int fd, uint8_t *b, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = fd < 0 ? getrandom(b + got, n - got, 0)
                       : read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EIO;
    got += (size_t)r;
  }
  return 0;
}

/* 16 random bytes with the version (4) and variant (RFC 4122) bits set. */
static gf_status uuid4_bytes(uint8_t b[16], gf_err *err) {
  int e = fill(-1, b, 16);
  if (e) { /* an old kernel without getrandom: the device */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    e = fd < 0 ? errno : fill(fd, b, 16);
    if (fd >= 0) close(fd);
  }
  if (e)
    return gf_fail(err, GF_EIO, "no random bytes for a UUID: %s", strerror(e));
  b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);
  b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);
  return GF_OK;
}

gf_status gf_uuid4_hex(char out[GF_UUID_HEX_LEN + 1], gf_err *err) {
  uint8_t b[16];
  out[0] = '\0';
  GF_TRY(uuid4_bytes(b, err));
  gf_hex_encode(b, sizeof b, out);
  return GF_OK;
}

gf_status gf_uuid4(char out[GF_UUID_LEN + 1], gf_err *err) {
  uint8_t b[16];
  out[0] = '\0';
  GF_TRY(uuid4_bytes(b, err));
  /* Groups of 4, 2, 2, 2 and 6 bytes, a dash between them. */
  static const int group[] = {4, 2, 2, 2, 6};
  size_t i = 0, o = 0;
  for (int g = 0; g < 5; g++) {
    if (g) out[o++] = '-';
    gf_hex_encode(b + i, (size_t)group[g], out + o);
    i += (size_t)group[g];
    o += 2 * (size_t)group[g];
  }
  return GF_OK;
}
