/* text.h - small text helpers of gf_base: UTF-8 validation (the safetensors
 * reader and writer, the MLmodel writer) and formatting into a fixed buffer
 * that refuses to truncate (gf_format) or that is sized so that it cannot
 * (GF_FORMAT_FITS).
 *
 * Not a string library: a growable buffer is gf/strbuf.h; a message that
 * may be cut, and shows it, is gf/note.h. */
#ifndef GF_TEXT_H
#define GF_TEXT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gf/status.h"

/* 1 when the n bytes at p are valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF), else 0. */
int gf_utf8_valid(const uint8_t *p, size_t n);

/* Writes the n bytes at p as 2n lowercase hex digits and a NUL into out
 * (2n + 1 bytes). */
void gf_hex_encode(const void *p, size_t n, char *out);

/* 1 when n, what snprintf returned for a buffer of cap bytes, says the whole
 * text fit (n >= 0 and n < cap), else 0. For checking an snprintf at its
 * call when the error message wants more context than gf_format gives. */
static inline int gf_fits(int n, size_t cap) {
  return n >= 0 && (size_t)n < cap;
}

/* GF_FORMAT_FITS(buf, cap, fmt, ...): snprintf into buf[cap] of a text
 * that fits by construction: the caller sized buf for what fmt can make
 * (literals, ints, texts of a bounded length), so that it fits is an
 * invariant, asserted, not an error to report. Text from outside (flags,
 * files, servers) goes through gf_format, which refuses what does not fit.
 * A statement; cap is evaluated twice (give it no side effects).
 * The length written, when wanted, is strlen(buf). */
#define GF_FORMAT_FITS(buf, cap, ...)                       \
  do {                                                      \
    int gf_fits_n_ = snprintf((buf), (cap), __VA_ARGS__);  \
    assert(gf_fits(gf_fits_n_, (cap)));                     \
    (void)gf_fits_n_;                                       \
  } while (0)

/* The line of text[len] that starts at *pos (call while *pos < len):
 * returns its start, puts its length without the '\n' in *n, and moves
 * *pos past the '\n' (to len after a last line that has none). Bytes are
 * taken as they are: a NUL or a '\r' is the caller's to refuse or strip. */
static inline const char *gf_next_line(const char *text, size_t len,
                                       size_t *pos, size_t *n) {
  const char *l = text + *pos;
  const char *nl = memchr(l, '\n', len - *pos);
  *n = nl ? (size_t)(nl - l) : len - *pos;
  *pos += *n + (nl ? 1 : 0);
  return l;
}

/* s as an error message shows a value from outside: cut after
 * GF_TEXT_SHOW_BYTES bytes ("..." added), its control, non-ASCII, quote
 * and backslash bytes escaped (\xHH, \', \\), into out[GF_TEXT_SHOW_MAX]
 * for the caller to put between quotes ('%s'). */
#define GF_TEXT_SHOW_BYTES 48
#define GF_TEXT_SHOW_MAX (GF_TEXT_SHOW_BYTES * 4 + 4)
void gf_text_show(const char *s, char out[GF_TEXT_SHOW_MAX]);

/* snprintf into buf[cap] that never hands back a truncated text: when the
 * result does not fit, buf holds "" and err says so, naming `what` (e.g.
 * "--checkpoint-dir path", "artifact path"), the start of the text and the
 * room there was; returns GF_EINVAL. cap must be > 0. */
gf_status gf_format(char *buf, size_t cap, gf_err *err, const char *what,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
