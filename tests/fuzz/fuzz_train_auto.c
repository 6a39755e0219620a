/* fuzz_train_auto.c - fuzz target for train_auto_parse, the reader of a
 * run's --auto choice, <checkpoint-dir>/auto (trainer/src/train_auto.c;
 * a file on disk that may be damaged or edited by hand). Any input gives
 * GF_EFORMAT with a NUL-terminated message, or a choice whose fields keep
 * their documented ranges and which writes back and reads again the
 * same. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  train_auto_choice c, back;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = train_auto_parse((const char *)data, size, &c, &err);
  if (st != GF_OK) {
    if (st != GF_EFORMAT || !memchr(err.msg, '\0', sizeof err.msg)) abort();
    return 0;
  }
  if (c.threads < 1 || c.threads > 4096 || c.bucket_kb < 4 ||
      c.bucket_kb > (1 << 20) || c.allreduce < 0 ||
      c.allreduce > GF_ALLREDUCE_TREE ||
      !memchr(c.measured, '\0', sizeof c.measured) || !c.measured[0])
    abort();
  char text[8192];
  if (train_auto_format(&c, text, sizeof text, &err) != GF_OK) abort();
  if (train_auto_parse(text, strlen(text), &back, &err) != GF_OK ||
      memcmp(&c, &back, sizeof c) != 0)
    abort();
  return 0;
}
