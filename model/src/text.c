/* text.c - growable buffer, UTF-8 validation, JSON escaping; see text.h. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gf_strbuf_init(gf_strbuf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = 0;
}

void gf_strbuf_free(gf_strbuf *b) {
  if (!b) return;
  free(b->data);
  gf_strbuf_init(b);
}

static int reserve(gf_strbuf *b, size_t extra) {
  if (b->failed) return 0;
  if (extra > (size_t)-1 - b->len - 1) {
    b->failed = 1;
    return 0;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap = cap > (size_t)-1 / 2 ? need : cap * 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void gf_strbuf_append(gf_strbuf *b, const void *p, size_t n) {
  if (!reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void gf_strbuf_puts(gf_strbuf *b, const char *s) {
  gf_strbuf_append(b, s, strlen(s));
}

void gf_strbuf_printf(gf_strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if (!reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void gf_strbuf_json_string(gf_strbuf *b, const char *s, size_t n) {
  gf_strbuf_append(b, "\"", 1);
  size_t run = 0; /* start of the pending run of plain bytes */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c != '"' && c != '\\' && c >= 0x20) continue;
    gf_strbuf_append(b, s + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': gf_strbuf_puts(b, "\\\""); break;
    case '\\': gf_strbuf_puts(b, "\\\\"); break;
    case '\n': gf_strbuf_puts(b, "\\n"); break;
    case '\r': gf_strbuf_puts(b, "\\r"); break;
    case '\t': gf_strbuf_puts(b, "\\t"); break;
    default: gf_strbuf_printf(b, "\\u%04x", c); break;
    }
  }
  gf_strbuf_append(b, s + run, n - run);
  gf_strbuf_append(b, "\"", 1);
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
