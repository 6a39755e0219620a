/* json_num.c - float and integer text for JSON answers; see gfs/json_num.h.
 *
 * A float x != 0 has a decimal exponent e (10^e <= |x| < 10^(e+1)); the
 * nine digits are round(|x| * 10^(8-e)) computed in double. The product
 * carries at most two roundings of double (the power of ten and the
 * product: ~2e-16 relative), against the half unit of the ninth digit
 * (>= 5e-9 relative) and the half ulp of float32 (>= 3e-8 relative): the
 * digits may differ from correctly rounded ones only on a tie within
 * 2e-16, and always read back as x. tests/serve/test_serve_unit.c checks
 * the round trip on every exponent and a million random floats. */
#include "gfs/json_num.h"

#include <math.h>
#include <string.h>

/* 10^0 .. 10^53: |x| * 10^(8-e) for the smallest subnormal (e = -45). */
static const double pow10_tab[54] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10,
    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
    1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32,
    1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43,
    1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53};

static double scaled(double a, int e) { /* a * 10^(8-e) */
  int k = 8 - e;
  return k >= 0 ? a * pow10_tab[k] : a / pow10_tab[-k];
}

size_t gfs_json_write_uint(unsigned v, char *out) {
  char tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

size_t gfs_json_write_float(float x, char out[GFS_JSON_FLOAT_MAX]) {
  char *p = out;
  if (!isfinite(x) || x == 0.0f) {
    if (x == 0.0f && signbit(x)) *p++ = '-';
    *p++ = '0';
    *p = '\0';
    return (size_t)(p - out);
  }
  if (x < 0) *p++ = '-';
  double a = fabs((double)x);
  int e = (int)floor(log10(a));
  double m = scaled(a, e);
  /* log10 may land one off near a power of ten */
  if (m >= 999999999.5) m = scaled(a, ++e);
  else if (m < 99999999.5) m = scaled(a, --e);
  unsigned long d = (unsigned long)llrint(m);
  if (d >= 1000000000ul) { /* 999999999.5 rounded up */
    d /= 10;
    e++;
  }
  char dig[9];
  for (int i = 8; i >= 0; i--) {
    dig[i] = (char)('0' + d % 10);
    d /= 10;
  }
  int nd = 9;
  while (nd > 1 && dig[nd - 1] == '0') nd--;
  if (e >= -5 && e < 0) { /* 0.000ddd */
    *p++ = '0';
    *p++ = '.';
    for (int i = 0; i < -e - 1; i++) *p++ = '0';
    memcpy(p, dig, (size_t)nd);
    p += nd;
  } else if (e >= 0 && e < 9) { /* ddd.ddd or ddd */
    for (int i = 0; i <= e; i++) *p++ = i < nd ? dig[i] : '0';
    if (nd > e + 1) {
      *p++ = '.';
      memcpy(p, dig + e + 1, (size_t)(nd - e - 1));
      p += nd - e - 1;
    }
  } else { /* d.ddde[-]XX */
    *p++ = dig[0];
    if (nd > 1) {
      *p++ = '.';
      memcpy(p, dig + 1, (size_t)(nd - 1));
      p += nd - 1;
    }
    *p++ = 'e';
    if (e < 0) *p++ = '-';
    p += gfs_json_write_uint((unsigned)(e < 0 ? -e : e), p);
  }
  *p = '\0';
  return (size_t)(p - out);
}
