/* sbuf.c - growing text buffer; see sbuf.h. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gfs_sbuf_init(gfs_sbuf *b) { memset(b, 0, sizeof *b); }

void gfs_sbuf_free(gfs_sbuf *b) {
  if (!b) return;
  free(b->p);
  gfs_sbuf_init(b);
}

static int reserve(gfs_sbuf *b, size_t extra) {
  if (b->oom) return -1;
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

void gfs_sbuf_append(gfs_sbuf *b, const char *s, size_t n) {
  if (reserve(b, n) != 0) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void gfs_sbuf_puts(gfs_sbuf *b, const char *s) { gfs_sbuf_append(b, s, strlen(s)); }

void gfs_sbuf_printf(gfs_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[512];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    gfs_sbuf_append(b, tmp, (size_t)n);
    return;
  }
  if (reserve(b, (size_t)n) != 0) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void gfs_sbuf_json_str(gfs_sbuf *b, const char *s) {
  gfs_sbuf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      gfs_sbuf_append(b, esc, 2);
    } else if (*p < 0x20) {
      gfs_sbuf_printf(b, "\\u%04x", *p);
    } else {
      gfs_sbuf_append(b, (const char *)p, 1);
    }
  }
  gfs_sbuf_append(b, "\"", 1);
}

void gfs_sbuf_html(gfs_sbuf *b, const char *s) {
  for (const char *p = s; *p; p++) {
    switch (*p) {
      case '&': gfs_sbuf_puts(b, "&amp;"); break;
      case '<': gfs_sbuf_puts(b, "&lt;"); break;
      case '>': gfs_sbuf_puts(b, "&gt;"); break;
      case '"': gfs_sbuf_puts(b, "&quot;"); break;
      case '\'': gfs_sbuf_puts(b, "&#39;"); break;
      default: gfs_sbuf_append(b, p, 1);
    }
  }
}

char *gfs_sbuf_take(gfs_sbuf *b, size_t *len) {
  if (b->oom) {
    gfs_sbuf_free(b);
    return NULL;
  }
  if (!b->p) gfs_sbuf_append(b, "", 0);
  char *p = b->p;
  if (len) *len = b->len;
  if (b->oom) p = NULL;
  gfs_sbuf_init(b);
  return p;
}
