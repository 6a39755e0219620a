/* fuzz_heartbeat.c - fuzz target for gf_heartbeat_parse, the supervisor's
 * reader of a rank's heartbeat file (written by another process, possibly
 * caught half-written). Any input gives GF_EFORMAT with a NUL-terminated
 * message, or a record whose fields keep their documented ranges. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/heartbeat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_heartbeat_rec rec;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_heartbeat_parse((const char *)data, size, &rec, &err);
  if (st != GF_OK) {
    if (st != GF_EFORMAT || !memchr(err.msg, '\0', sizeof err.msg)) abort();
    return 0;
  }
  if (rec.rank < 0 || rec.rank > 65536 || rec.pid < 1 || rec.seq < 1 ||
      rec.step < -1 || (unsigned)rec.phase >= GF_HB_N_PHASES)
    abort();
  if (!memchr(rec.run, '\0', sizeof rec.run) ||
      !memchr(rec.host, '\0', sizeof rec.host))
    abort();
  return 0;
}
