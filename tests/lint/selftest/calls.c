/* calls.c - input of lint_snprintf_selftest, never compiled: each call
 * marked DROPPED must be reported by unchecked_snprintf.py, and no other. */
#include <stdio.h>

int f(char *b, size_t n, int x, const char *s) {
  snprintf(b, n, "%d", x); /* DROPPED */
  if (x) snprintf(b, n, "%s", s); /* DROPPED */
  if (x) {
    (void)snprintf(b, n, "x"); /* DROPPED */
  } else
    snprintf(b, n, "y"); /* DROPPED */
  switch (x) {
  case 1: snprintf(b, n, "z"); break; /* DROPPED */
  }
  int k = snprintf(b, n, "%d", x);
  if (snprintf(b, n, "%s", s) >= (int)n) return -1;
  k += snprintf(b, n, "w");
  GF_FORMAT_FITS(b, n, "%d", x); /* gf/text.h's: it asserts the fit */
  if (x) GF_FORMAT_FITS(b, n, "%s", s);
  /* snprintf(b, n, "in a comment"); */
  const char *t = "snprintf(b, n, \"in a string\");";
  (void)t;
  return k > 0 ? snprintf(b, n, "v") : vsnprintf(b, n, "u", NULL);
}
