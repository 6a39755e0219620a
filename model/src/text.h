/* text.h - internal to gf_model: a growable byte buffer, UTF-8 validation
 * and JSON string escaping, shared by the safetensors writer and reader and
 * the MLmodel writer. Not installed, not part of the public API. */
#ifndef GF_MODEL_TEXT_H
#define GF_MODEL_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Growable buffer; `data` is malloc'd and owned by the buffer, always
 * NUL-terminated once anything was appended. `failed` latches the first
 * allocation failure so callers check once at the end. */
typedef struct gf_strbuf {
  char *data;
  size_t len, cap;
  int failed;
} gf_strbuf;

void gf_strbuf_init(gf_strbuf *b);
void gf_strbuf_free(gf_strbuf *b); /* accepts NULL */
void gf_strbuf_append(gf_strbuf *b, const void *p, size_t n);
void gf_strbuf_puts(gf_strbuf *b, const char *s);
void gf_strbuf_printf(gf_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s (n bytes) as a quoted JSON string: ", \ and control characters
 * escaped, other bytes (valid UTF-8 is the caller's duty) copied. */
void gf_strbuf_json_string(gf_strbuf *b, const char *s, size_t n);

/* 1 when the n bytes at p are valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF), else 0. */
int gf_utf8_valid(const uint8_t *p, size_t n);

#endif
