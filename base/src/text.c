/* text.c - UTF-8 validation and checked formatting; see gf/text.h. */
#include "gf/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

gf_status gf_format(char *buf, size_t cap, gf_err *err, const char *what,
                    const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (gf_fits(n, cap)) return GF_OK;
  gf_status st;
  if (n < 0) {
    st = gf_fail(err, GF_EINVAL, "%s: cannot be formatted", what);
  } else {
    /* buf holds the first cap - 1 bytes: enough to name the culprit. */
    st = gf_fail(err, GF_EINVAL, "%s too long (%d bytes, at most %zu): %.64s...",
                 what, n, cap - 1, buf);
  }
  buf[0] = '\0';
  return st;
}

void gf_text_show(const char *s, char out[GF_TEXT_SHOW_MAX]) {
  size_t o = 0, i = 0;
  for (; s[i] && i < GF_TEXT_SHOW_BYTES; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\'' || ch == '\\') {
      out[o++] = '\\';
      out[o++] = (char)ch;
    } else if (ch >= 0x20 && ch < 0x7f) {
      out[o++] = (char)ch;
    } else {
      out[o++] = '\\';
      out[o++] = 'x';
      gf_hex_encode(&ch, 1, out + o);
      o += 2;
    }
  }
  if (s[i]) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

void gf_hex_encode(const void *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
}

int gf_utf8_valid(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k;          /* continuation bytes */
    uint32_t cp, min;  /* code point, smallest allowed for this length */
    if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return 0;
    }
    if (n - i <= k) return 0;
    for (size_t j = 1; j <= k; j++) {
      if ((p[i + j] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (p[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += k + 1;
  }
  return 1;
}
