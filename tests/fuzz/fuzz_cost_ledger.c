/* fuzz_cost_ledger.c - fuzz target for gf_cost_ledger_parse, the reader of
 * <checkpoint-dir>/cost.ledger (gf/cost.h), a file that a crash, a full
 * disk or a person may have damaged. Any input gives GF_EFORMAT with a
 * NUL-terminated message, or a ledger whose fields keep their documented
 * ranges and that formats and parses back to the same values. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_cost_ledger l;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_cost_ledger_parse((const char *)data, size, &l, &err);
  if (st != GF_OK) {
    if (st != GF_EFORMAT || !memchr(err.msg, '\0', sizeof err.msg)) abort();
    return 0;
  }
  const double v[] = {l.t.cpu_joules, l.t.gpu_joules, l.t.usd,
                      l.t.slot_seconds};
  for (size_t i = 0; i < 4; i++)
    if (!isfinite(v[i]) || v[i] < 0) abort();
  if (l.t.processes < 0 || !memchr(l.run_id, '\0', sizeof l.run_id) ||
      !l.run_id[0])
    abort();
  char text[GF_COST_LEDGER_MAX];
  gf_cost_ledger back;
  if (gf_cost_ledger_format(&l, text, sizeof text, &err) != GF_OK ||
      gf_cost_ledger_parse(text, strlen(text), &back, &err) != GF_OK ||
      memcmp(&back.t, &l.t, sizeof l.t) != 0 ||
      strcmp(back.run_id, l.run_id) != 0)
    abort();
  return 0;
}
