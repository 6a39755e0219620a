/* strbuf.h - a growable text buffer with JSON and HTML escaping, for the
 * writers in model/ (safetensors header, MLmodel YAML) and the server's
 * answers in serve/ (JSON, HTML, Prometheus text).
 *
 * Not a general string library: append-only, no search or edit. An
 * allocation failure latches `failed` and later appends do nothing, so
 * callers build the whole text and check once at the end. */
#ifndef GF_STRBUF_H
#define GF_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Owned by the caller (often on the stack); pair gf_strbuf_init with
 * gf_strbuf_free or gf_strbuf_take. All-zero bytes are a valid empty
 * buffer. */
typedef struct gf_strbuf {
  char *data; /* malloc'd, owned by the buffer; NULL until the first append,
                 then always NUL-terminated */
  size_t len; /* bytes before the NUL */
  size_t cap; /* bytes allocated at data; len + 1 <= cap once allocated */
  int failed; /* 1 after the first allocation failure; never cleared but by
                 init, free or take */
} gf_strbuf;

/* An empty buffer; allocates nothing. */
void gf_strbuf_init(gf_strbuf *b);
/* Frees data and leaves b empty (re-initialised); accepts NULL. */
void gf_strbuf_free(gf_strbuf *b);

/* The appends below copy their input and (re)allocate data, which the
 * buffer owns; pointers into data are invalid after any append. */
void gf_strbuf_append(gf_strbuf *b, const void *p, size_t n);
void gf_strbuf_puts(gf_strbuf *b, const char *s);
void gf_strbuf_printf(gf_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* gf_strbuf_printf with a va_list (read, not ended: the caller va_ends). */
void gf_strbuf_vprintf(gf_strbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Appends s (n bytes) as a quoted JSON string: ", \ and control characters
 * escaped (\n, \r, \t by name, the others as \u00XX), other bytes copied;
 * valid UTF-8 is the caller's duty. */
void gf_strbuf_json_string(gf_strbuf *b, const char *s, size_t n);
/* gf_strbuf_json_string over the NUL-terminated s. */
void gf_strbuf_json_cstr(gf_strbuf *b, const char *s);
/* Appends the NUL-terminated s with &, <, >, " and ' escaped, for HTML text
 * and attribute values. */
void gf_strbuf_html(gf_strbuf *b, const char *s);

/* Hands the text over: returns data (NUL-terminated, "" when nothing was
 * appended) and its length in *len (len may be NULL); the caller frees it
 * with free(). Returns NULL, freeing what was built, when an allocation
 * failed. Either way b is left empty (re-initialised). */
char *gf_strbuf_take(gf_strbuf *b, size_t *len);

#endif
