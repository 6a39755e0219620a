/* parse.c - the one reader of numbers given as text (gf/parse.h): the
 * grammar is checked here byte by byte, the digits are summed with an
 * overflow check (integers) or handed to strtod once the text is known to
 * be a plain decimal (f64). Not a flag parser (flags.c) and no file
 * format. */
#include "gf/parse.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"

static gf_status not_a(gf_err *err, const char *what, const char *s,
                       const char *kind) {
  char t[GF_TEXT_SHOW_MAX];
  gf_text_show(s, t);
  return gf_fail(err, GF_EINVAL, "%s: '%s' is not %s", what ? what : "value",
                 t, kind);
}

/* "%s: TEXT is outside [lo, hi]" with the bounds already written. */
static gf_status outside(gf_err *err, const char *what, const char *s,
                         char open_c, const char *lo, const char *hi,
                         char close_c) {
  char t[GF_TEXT_SHOW_MAX];
  gf_text_show(s, t);
  return gf_fail(err, GF_EINVAL, "%s: %s is outside %c%s, %s%c",
                 what ? what : "value", t, open_c, lo, hi, close_c);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The magnitude of D+ at s into *mag; false when s is not D+ alone.
 * *overflow set when it does not fit 64 bits. */
static bool digits_u64(const char *s, uint64_t *mag, bool *overflow) {
  uint64_t v = 0;
  *overflow = false;
  if (!is_digit(*s)) return false;
  for (; *s; s++) {
    if (!is_digit(*s)) return false;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) *overflow = true;
    else v = v * 10 + d;
  }
  *mag = v;
  return true;
}

gf_status gf_parse_i64(const char *what, const char *s, int64_t lo,
                       int64_t hi, int64_t *out, gf_err *err) {
  assert(lo <= hi);
  if (!s) s = "";
  bool neg = s[0] == '-', over = false;
  uint64_t mag = 0;
  if (!digits_u64(s + neg, &mag, &over)) return not_a(err, what, s, "an integer");
  int64_t v = 0;
  if (!neg && mag > (uint64_t)INT64_MAX) over = true;
  if (neg && mag > (uint64_t)INT64_MAX + 1u) over = true;
  if (neg && lo >= 0) over = true; /* no negatives asked for: "-0" too */
  if (!over) v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  if (over || v < lo || v > hi) {
    char l[24], h[24];
    int a = snprintf(l, sizeof l, "%lld", (long long)lo);
    int b = snprintf(h, sizeof h, "%lld", (long long)hi);
    assert(gf_fits(a, sizeof l) && gf_fits(b, sizeof h));
    (void)a, (void)b;
    return outside(err, what, s, '[', l, h, ']');
  }
  *out = v;
  return GF_OK;
}

gf_status gf_parse_int(const char *what, const char *s, int lo, int hi,
                       int *out, gf_err *err) {
  int64_t v;
  GF_TRY(gf_parse_i64(what, s, lo, hi, &v, err));
  *out = (int)v;
  return GF_OK;
}

gf_status gf_parse_u64(const char *what, const char *s, uint64_t lo,
                       uint64_t hi, uint64_t *out, gf_err *err) {
  assert(lo <= hi);
  if (!s) s = "";
  bool over = false;
  uint64_t v = 0;
  if (!digits_u64(s, &v, &over))
    return not_a(err, what, s, "an unsigned integer");
  if (over || v < lo || v > hi) {
    char l[24], h[24];
    int a = snprintf(l, sizeof l, "%llu", (unsigned long long)lo);
    int b = snprintf(h, sizeof h, "%llu", (unsigned long long)hi);
    assert(gf_fits(a, sizeof l) && gf_fits(b, sizeof h));
    (void)a, (void)b;
    return outside(err, what, s, '[', l, h, ']');
  }
  *out = v;
  return GF_OK;
}

/* Whether s is -?D+(.D+)?([eE][+-]?D+)? and nothing else. */
static bool decimal_f64(const char *s) {
  if (*s == '-') s++;
  if (!is_digit(*s)) return false;
  while (is_digit(*s)) s++;
  if (*s == '.') {
    s++;
    if (!is_digit(*s)) return false;
    while (is_digit(*s)) s++;
  }
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!is_digit(*s)) return false;
    while (is_digit(*s)) s++;
  }
  return *s == '\0';
}

gf_status gf_parse_f64x(const char *what, const char *s, double lo,
                        double hi, unsigned open, double *out, gf_err *err) {
  assert(lo <= hi);
  if (!s) s = "";
  if (!decimal_f64(s)) return not_a(err, what, s, "a number");
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  /* The grammar is strtod's own subset: all of it is read (C locale). */
  if (end != s + strlen(s)) return not_a(err, what, s, "a number");
  bool over = (errno == ERANGE && isinf(v)) || (s[0] == '-' && lo >= 0);
  if (v == 0) v = 0.0; /* "-0" */
  bool lo_ok = (open & GF_PARSE_LO_OPEN) ? v > lo : v >= lo;
  bool hi_ok = (open & GF_PARSE_HI_OPEN) ? v < hi : v <= hi;
  if (over || !isfinite(v) || !lo_ok || !hi_ok) {
    char l[GF_F64_TEXT_MAX], h[GF_F64_TEXT_MAX];
    gf_f64_text(lo, l);
    gf_f64_text(hi, h);
    return outside(err, what, s, (open & GF_PARSE_LO_OPEN) ? '(' : '[', l, h,
                   (open & GF_PARSE_HI_OPEN) ? ')' : ']');
  }
  *out = v;
  return GF_OK;
}

gf_status gf_parse_f64(const char *what, const char *s, double lo, double hi,
                       double *out, gf_err *err) {
  return gf_parse_f64x(what, s, lo, hi, 0, out, err);
}

void gf_f64_text(double v, char out[GF_F64_TEXT_MAX]) {
  /* The shortest exact form, without an exponent where one as short as 17
   * digits exists ("10", not "1e+01"; "1e-05" stays). */
  char first[GF_F64_TEXT_MAX] = "";
  for (int prec = 1; prec <= 17; prec++) {
    int n = snprintf(out, GF_F64_TEXT_MAX, "%.*g", prec, v);
    assert(gf_fits(n, GF_F64_TEXT_MAX));
    (void)n;
    if (strtod(out, NULL) != v) continue;
    if (!strchr(out, 'e')) return;
    if (!first[0]) memcpy(first, out, strlen(out) + 1);
  }
  if (first[0]) memcpy(out, first, strlen(first) + 1);
}
