/* strbuf.c - growable text buffer, JSON and HTML escaping; see
 * gf/strbuf.h. */
#include "gf/strbuf.h"

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

/* Makes room for extra more bytes and the NUL; 0 (and failed latched) when
 * that cannot be allocated or its size overflows. */
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

void gf_strbuf_vprintf(gf_strbuf *b, const char *fmt, va_list ap) {
  if (b->failed) return;
  /* Most texts are short: format once into tmp, twice only when longer. */
  char tmp[512];
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n < 0) {
    b->failed = 1;
  } else if ((size_t)n < sizeof tmp) {
    gf_strbuf_append(b, tmp, (size_t)n);
  } else if (reserve(b, (size_t)n)) {
    int m = vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    if (m == n) {
      b->len += (size_t)n;
    } else { /* the same format twice gave another length */
      b->data[b->len] = '\0';
      b->failed = 1;
    }
  }
  va_end(again);
}

void gf_strbuf_printf(gf_strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gf_strbuf_vprintf(b, fmt, ap);
  va_end(ap);
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

void gf_strbuf_json_cstr(gf_strbuf *b, const char *s) {
  gf_strbuf_json_string(b, s, strlen(s));
}

void gf_strbuf_html(gf_strbuf *b, const char *s) {
  size_t run = 0; /* start of the pending run of plain bytes */
  size_t i = 0;
  for (; s[i]; i++) {
    const char *esc;
    switch (s[i]) {
    case '&': esc = "&amp;"; break;
    case '<': esc = "&lt;"; break;
    case '>': esc = "&gt;"; break;
    case '"': esc = "&quot;"; break;
    case '\'': esc = "&#39;"; break;
    default: continue;
    }
    gf_strbuf_append(b, s + run, i - run);
    gf_strbuf_puts(b, esc);
    run = i + 1;
  }
  gf_strbuf_append(b, s + run, i - run);
}

char *gf_strbuf_take(gf_strbuf *b, size_t *len) {
  if (!b->data) gf_strbuf_append(b, "", 0);
  if (b->failed) {
    gf_strbuf_free(b);
    return NULL;
  }
  char *p = b->data;
  if (len) *len = b->len;
  gf_strbuf_init(b);
  return p;
}
