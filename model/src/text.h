/* text.h - internal to gf_model: UTF-8 validation, shared by the
 * safetensors writer and reader and the MLmodel writer. Not installed, not
 * part of the public API; the text buffer is gf/strbuf.h. */
#ifndef GF_MODEL_TEXT_H
#define GF_MODEL_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* 1 when the n bytes at p are valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF), else 0. */
int gf_utf8_valid(const uint8_t *p, size_t n);

#endif
