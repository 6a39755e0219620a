/* sbuf.h - a growing text buffer for the server's answers (JSON, HTML,
 * Prometheus text). Private to serve/. An allocation failure sets `oom`
 * and later appends do nothing, so callers check once at the end. */
#ifndef GFS_SBUF_H
#define GFS_SBUF_H

#include <stddef.h>

typedef struct gfs_sbuf {
  char *p;     /* NUL-terminated text (malloc'd), NULL until the first append */
  size_t len;  /* bytes before the NUL */
  size_t cap;  /* bytes allocated */
  int oom;     /* an append failed */
} gfs_sbuf;

void gfs_sbuf_init(gfs_sbuf *b);
void gfs_sbuf_free(gfs_sbuf *b); /* accepts NULL */
void gfs_sbuf_append(gfs_sbuf *b, const char *s, size_t n);
void gfs_sbuf_puts(gfs_sbuf *b, const char *s);
void gfs_sbuf_printf(gfs_sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a quoted JSON string (", \ and control bytes escaped). */
void gfs_sbuf_json_str(gfs_sbuf *b, const char *s);
/* s with &, <, >, " and ' escaped for HTML text and attributes. */
void gfs_sbuf_html(gfs_sbuf *b, const char *s);
/* Hands the text over (caller frees with free()); b is re-initialised.
 * NULL when an append failed. */
char *gfs_sbuf_take(gfs_sbuf *b, size_t *len);

#endif
