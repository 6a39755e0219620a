/* fuzz_base_parse.c - fuzz target for the one number reader (gf/parse.h):
 * the same bytes through gf_parse_i64, gf_parse_u64 and gf_parse_f64, and
 * the three answers checked against each other: what u64 takes, i64 takes
 * with the same value when it fits (and f64 with the nearest double); what
 * i64 takes, f64 takes; a refusal always names `what`; an accepted double
 * written by gf_f64_text reads back as itself. Never a crash or a read
 * past the input. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void named(gf_status st, const gf_err *e) {
  if (st != GF_OK && (e->code != GF_EINVAL || strncmp(e->msg, "--v: ", 5) != 0))
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Text ends at the first NUL, as a flag value or variable does. */
  char *s = malloc(size + 1);
  if (!s) return 0;
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  gf_err ei, eu, ed;
  gf_status si = gf_parse_i64("--v", s, INT64_MIN, INT64_MAX, &i, &ei);
  gf_status su = gf_parse_u64("--v", s, 0, UINT64_MAX, &u, &eu);
  gf_status sd = gf_parse_f64("--v", s, -DBL_MAX, DBL_MAX, &d, &ed);
  named(si, &ei);
  named(su, &eu);
  named(sd, &ed);
  if (su == GF_OK) {
    if (s[0] == '-') __builtin_trap();
    if (u <= (uint64_t)INT64_MAX && (si != GF_OK || (uint64_t)i != u))
      __builtin_trap();
    if (u > (uint64_t)INT64_MAX && si == GF_OK) __builtin_trap();
    if (sd != GF_OK || d != (double)u) __builtin_trap();
  }
  if (si == GF_OK) {
    if (sd != GF_OK || d != (double)i) __builtin_trap();
    if (i >= 0 && s[0] != '-' && (su != GF_OK || u != (uint64_t)i))
      __builtin_trap();
  }
  if (sd == GF_OK) {
    if (!isfinite(d) || signbit(d) != (d < 0)) __builtin_trap();
    char t[GF_F64_TEXT_MAX];
    gf_f64_text(d, t);
    double back = 1;
    if (gf_parse_f64("--v", t, -DBL_MAX, DBL_MAX, &back, NULL) != GF_OK ||
        back != d)
      __builtin_trap();
    /* what f64 takes has no byte outside its grammar's alphabet */
    if (strspn(s, "0123456789.eE+-") != strlen(s)) __builtin_trap();
  }
  free(s);
  return 0;
}
