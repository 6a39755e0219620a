/* text.c - UTF-8 validation; see text.h. */
#include "text.h"

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
