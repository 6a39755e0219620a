/* fuzz_tracking_outbox.c - fuzz target for mlflow_outbox_decode, the reader
 * of the on-disk outbox that a dead process may have left half-written (or
 * that someone corrupted). The input is the whole file; it is decoded from
 * the start record by record, as replay does, until the end, a torn tail
 * or corruption.
 * Checks: a decoded record lies inside the buffer, its payload is the
 * header's length, the walk always advances and ends; a torn tail (0) is
 * only reported for a prefix of a record. Touches every payload byte so the
 * sanitizers see any read past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "outbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = 0, records = 0;
  volatile unsigned sum = 0;
  for (;;) {
    const char *payload = NULL;
    size_t plen = 0, used = 0;
    uint32_t points = 0;
    int r = mlflow_outbox_decode(data + off, size - off, &payload, &plen,
                                 &points, &used);
    if (r == 1) {
      if (used != MLFLOW_OUTBOX_HEADER + plen) abort();
      if (used > size - off) abort();
      if ((const uint8_t *)payload != data + off + MLFLOW_OUTBOX_HEADER) abort();
      if (plen > MLFLOW_OUTBOX_MAX_PAYLOAD) abort();
      for (size_t i = 0; i < plen; i++) sum += (unsigned char)payload[i];
      off += used;
      records++;
      if (records > size) abort(); /* every record takes >= 16 bytes */
      continue;
    }
    if (r == 0) {
      /* A torn tail: shorter than its header says, or than a header. */
      size_t left = size - off;
      if (left >= MLFLOW_OUTBOX_HEADER) {
        const uint8_t *h = data + off;
        uint32_t n = (uint32_t)h[4] | (uint32_t)h[5] << 8 |
                     (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
        if (memcmp(h, "GFOB", 4) != 0 || left - MLFLOW_OUTBOX_HEADER >= n)
          abort();
      } else if (left && memcmp(data + off, "GFOB", left < 4 ? left : 4)) {
        abort();
      }
    } else if (r != -1) {
      abort();
    }
    break;
  }
  (void)sum;
  return 0;
}
