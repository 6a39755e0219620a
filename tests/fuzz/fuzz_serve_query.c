/* fuzz_serve_query.c - fuzz target for the generate query parser
 * (gfs_query_parse): any bytes give an error or arguments within their
 * bounds (the style's psi, trunc_cutoff, noise, mix, mix_from included),
 * never a crash or a read past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gfs/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that a read past the end is caught by ASan. */
  char *q = malloc(size ? size : 1);
  if (!q) return 0;
  if (size) memcpy(q, data, size);
  gfs_gen_args a;
  gf_err err;
  if (gfs_query_parse(q, size, 64, &a, &err) == GF_OK) {
    if (a.n < 1 || a.n > 64) __builtin_trap();
    if (a.format != GFS_FORMAT_PNG && a.format != GFS_FORMAT_JSON)
      __builtin_trap();
    if (a.has_class && (a.n_cls < 1 || a.n_cls > 64 || !a.cls[0] ||
                        strlen(a.cls) > GFS_CLASS_SPEC_MAX))
      __builtin_trap();
    const gfs_style *st = &a.style;
    if (!(st->psi >= -8.0 && st->psi <= 8.0) || st->trunc_cutoff < 0 ||
        st->trunc_cutoff > 64 ||
        (st->noise != GFS_NOISE_CONST && st->noise != GFS_NOISE_RANDOM &&
         st->noise != GFS_NOISE_NONE) ||
        st->has_mix != (st->mix_from > 0) ||
        (st->has_mix && (st->mix_from < 1 || st->mix_from > 63)))
      __builtin_trap();
  } else if (strnlen(err.msg, sizeof err.msg) == 0) {
    __builtin_trap();
  }
  free(q);
  return 0;
}
