/* parse.h - the one reader of numbers given as text from outside: flag
 * values, environment variables, the numbers of ganflow-serve's query
 * strings. Every caller accepts the same forms and words its refusals the
 * same way, naming what it read (`what`: "--batch", "PET_NNODES", "seed"):
 *
 *   --batch: ' 2' is not an integer
 *   --seed: '-1' is not an unsigned integer
 *   --lr-g: 'abc' is not a number
 *   --batch: 0 is outside [2, 65536]
 *   --lr-g: 2 is outside (0, 1]
 *
 * The acceptance rule (in the spirit of curl's lib/strparse.c):
 *   - plain decimal digits, at least one; leading zeros are fine ("007");
 *   - an optional '-' in front where negatives can be asked for: the type
 *     holds them (i64, f64; u64 takes none, "-0" included) and the range
 *     does (lo < 0); elsewhere a number with a '-' is outside the range
 *     ("-5", "-0" for [0, 10]). Where it is taken "-0" reads as 0 (f64:
 *     +0.0);
 *   - f64 adds a decimal fraction and an exponent: -?D+(.D+)?([eE][+-]?D+)?
 *     ("2e-4", "0.5", "1E+06"), digits on both sides of the point;
 *   - nothing else: no white space before or after, no '+', no 0x or any
 *     hex, no "nan" or "inf", no empty string, no full-width or other
 *     non-ASCII digits, nothing after the number ("2abc", "2\n");
 *   - a number the type cannot hold (20 digits, "1e999") is outside the
 *     range; an f64 too small to hold reads as its nearest double (0 or a
 *     subnormal), which is then checked against the range.
 * The bounds are inclusive unless said otherwise (gf_parse_f64x).
 * Text shown in a message is cut after 48 bytes ("...") and has its
 * control, non-ASCII, quote and backslash bytes escaped (\xHH, \', \\).
 * The programs never call setlocale: strtod reads '.' as the point.
 *
 * Not here: file formats with their own grammar (JSON, /proc, safetensors
 * headers) and the flag tables over these readers (gf/flags.h). */
#ifndef GF_PARSE_H
#define GF_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

/* A decimal integer in [lo, hi] into *out (untouched on failure). NULL s
 * reads as "". GF_EINVAL with err naming what. */
gf_status gf_parse_i64(const char *what, const char *s, int64_t lo,
                       int64_t hi, int64_t *out, gf_err *err);

/* gf_parse_i64 into an int; lo <= hi within int. */
gf_status gf_parse_int(const char *what, const char *s, int lo, int hi,
                       int *out, gf_err *err);

/* A decimal integer without a sign in [lo, hi]. */
gf_status gf_parse_u64(const char *what, const char *s, uint64_t lo,
                       uint64_t hi, uint64_t *out, gf_err *err);

/* A finite decimal number in [lo, hi]. */
gf_status gf_parse_f64(const char *what, const char *s, double lo, double hi,
                       double *out, gf_err *err);

/* gf_parse_f64 with either end of the range left out: open holds
 * GF_PARSE_LO_OPEN and/or GF_PARSE_HI_OPEN ("(0, 1]" for a rate). */
enum { GF_PARSE_LO_OPEN = 1u, GF_PARSE_HI_OPEN = 2u };
gf_status gf_parse_f64x(const char *what, const char *s, double lo,
                        double hi, unsigned open, double *out, gf_err *err);

/* The shortest text of v that gf_parse_f64 (and strtod) reads back as
 * exactly v, without an exponent where one of at most 17 digits exists
 * ("0.0002", "10", "1e-05", "-0" for -0.0) into out[GF_F64_TEXT_MAX]. For
 * the MLflow params and the messages; finite v. */
#define GF_F64_TEXT_MAX 32
void gf_f64_text(double v, char out[GF_F64_TEXT_MAX]);

#endif
