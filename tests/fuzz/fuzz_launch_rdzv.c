/* fuzz_launch_rdzv.c - fuzz target for rdzv_parse, the parser of the lines
 * `ganflow launch --nnodes` agents and node 0 send each other over the
 * network (launch/src/launch_rdzv.c). The input is cut at '\n' into lines, as
 * rdzv_line does. Any line gives GF_EFORMAT with a NUL-terminated message,
 * or a message whose fields keep the documented bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launch_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *line) {
  rdzv_msg m;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = rdzv_parse(line, &m, &err);
  if (st != GF_OK) {
    if (st != GF_EFORMAT || !memchr(err.msg, '\0', sizeof err.msg)) abort();
    return;
  }
  if (!memchr(m.text, '\0', sizeof m.text) || !memchr(m.host, '\0', sizeof m.host))
    abort();
  switch (m.kind) {
  case RDZV_HELLO:
    if (m.node < 0 || m.node >= GF_LAUNCH_MAX_NODES || m.nproc < 1 ||
        m.nproc > GF_LAUNCH_MAX_RANKS || !m.host[0] || strchr(m.host, ' '))
      abort();
    break;
  case RDZV_GO:
    if (m.world < 1 || m.world > GF_LAUNCH_MAX_RANKS || m.base < 0 ||
        m.base >= m.world || m.ga < 1 || m.port < 1 || m.port > 65535 ||
        (m.resume != 0 && m.resume != 1))
      abort();
    break;
  case RDZV_ENDED:
    if (m.ended < RDZV_END_DONE || m.ended > RDZV_END_USAGE) abort();
    break;
  case RDZV_EXIT:
    if (m.code < 0 || m.code > 255) abort();
    break;
  default:
    if (m.round < 0) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  for (char *p = text, *nl; p;) {
    nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    one(p);
    p = nl ? nl + 1 : NULL;
  }
  free(text);
  return 0;
}
