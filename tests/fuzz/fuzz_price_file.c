/* fuzz_price_file.c - fuzz target for gf_price_parse, the reader of the
 * price file a user passes to ganflow-train (gf/energy.h). Any input gives
 * GF_EFORMAT (or GF_EINVAL past the size cap) with a NUL-terminated message
 * naming a line, or a table whose entries keep their documented ranges: a
 * kind of 1..63 allowed characters, a known market and unit, a finite
 * price >= 0, increasing line numbers, no (kind, market) twice; and each
 * entry is what gf_price_lookup finds for its (kind, market). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/energy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int kind_ok(const char *k) {
  size_t n = strnlen(k, GF_PRICE_KIND_MAX);
  if (n == 0 || n >= GF_PRICE_KIND_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789._:/-",
                k[i]))
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_price_table t;
  gf_price_table_init(&t);
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_status st = gf_price_parse((const char *)data, size, "fuzz", &t, &err);
  if (st != GF_OK) {
    if ((st != GF_EFORMAT && st != GF_EINVAL) ||
        !memchr(err.msg, '\0', sizeof err.msg) || t.entries || t.n)
      abort();
    if (st == GF_EFORMAT && !strstr(err.msg, "fuzz: line ")) abort();
    return 0;
  }
  if (t.n > GF_PRICE_MAX_ENTRIES || (t.n == 0) != (t.entries == NULL))
    abort();
  int last_line = 0;
  for (size_t i = 0; i < t.n; i++) {
    const gf_price_entry *e = &t.entries[i];
    if (!kind_ok(e->kind) || e->line <= last_line ||
        (e->market != GF_MARKET_ON_DEMAND && e->market != GF_MARKET_SPOT) ||
        (e->unit != GF_PRICE_PER_NODE && e->unit != GF_PRICE_PER_GPU) ||
        !isfinite(e->usd_per_hour) || !(e->usd_per_hour >= 0))
      abort();
    last_line = e->line;
    const gf_price_entry *found = NULL;
    if (gf_price_lookup(&t, e->kind, e->market, &found, &err) != GF_OK ||
        found != e)
      abort();
  }
  gf_price_table_free(&t);
  return 0;
}
