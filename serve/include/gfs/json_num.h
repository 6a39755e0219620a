/* json_num.h - numbers of ganflow-serve's JSON answers, written without
 * printf (which costs ~110 ns a float: half the time of a 16-image JSON
 * answer). Pure functions; the caller owns the buffers. */
#ifndef GFS_JSON_NUM_H
#define GFS_JSON_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Longest text gfs_json_write_float writes, "-1.23456789e-45" and NUL. */
#define GFS_JSON_FLOAT_MAX 24

/* Writes x into out as a JSON number with 9 significant digits, so that
 * strtof reads back exactly x (what %.9g gives, trailing zeros dropped);
 * NaN and infinities, which JSON cannot carry, as 0. Returns the length
 * (out is NUL-terminated). */
size_t gfs_json_write_float(float x, char out[GFS_JSON_FLOAT_MAX]);

/* Writes v (0..255 and beyond) in decimal; returns the length (no NUL). */
size_t gfs_json_write_uint(unsigned v, char *out);

#endif
