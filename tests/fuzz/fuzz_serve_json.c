/* fuzz_serve_json.c - fuzz target for the JSON bodies of POST
 * /v2/models/{name}/infer and POST /invocations: any bytes give an error
 * (nothing left allocated) or a request of 1..max images whose seeds or
 * finite latents are all there (both, with row_z, only for MLflow rows of
 * both kinds), classes, where given, are indices, bounded names or
 * marked absent, and the style's parameters are within their bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gfs/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const gfs_infer_req *r, int z_dim, int max) {
  if (r->n < 1 || r->n > max) __builtin_trap();
  if (r->row_z ? !(r->seeds && r->z) : !!r->seeds == !!r->z)
    __builtin_trap();
  if (r->row_z)
    for (int k = 0; k < r->n; k++)
      if (r->row_z[k] > 1) __builtin_trap();
  if (r->z)
    for (size_t i = 0; i < (size_t)r->n * (size_t)z_dim; i++)
      if (!isfinite(r->z[i])) __builtin_trap();
  if (strnlen(r->id, sizeof r->id) == sizeof r->id) __builtin_trap();
  /* classes: an index, -1 with a name of 1..GFS_CLASS_MAX bytes, or -2
   * (none) */
  for (int k = 0; r->cls && k < r->n; k++) {
    if (r->cls[k] < -2 || r->cls[k] > INT32_MAX) __builtin_trap();
    if (r->cls[k] == -1) {
      const char *nm = r->cls_name ? r->cls_name + (size_t)k *
                                         (GFS_CLASS_MAX + 1) : NULL;
      size_t len = nm ? strnlen(nm, GFS_CLASS_MAX + 1) : 0;
      if (len == 0 || len > GFS_CLASS_MAX) __builtin_trap();
    }
  }
  if (r->cls_name && !r->cls) __builtin_trap();
  /* the style's parameters within their bounds */
  const gfs_style *st = &r->style;
  if (!(st->psi >= -8.0 && st->psi <= 8.0) || st->trunc_cutoff < 0 ||
      st->trunc_cutoff > 64 || (unsigned)st->noise > GFS_NOISE_NONE ||
      st->has_mix != (st->mix_from > 0) || st->mix_from > 63)
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (!body) return 0;
  if (size) memcpy(body, data, size);
  gfs_infer_req r;
  gf_err err;
  if (gfs_v2_parse(body, size, 4, 8, &r, &err) == GF_OK) check(&r, 4, 8);
  else if (r.seeds || r.z || r.cls) __builtin_trap();
  gfs_infer_req_free(&r);
  if (gfs_invocations_parse(body, size, 4, 8, &r, &err) == GF_OK)
    check(&r, 4, 8);
  else if (r.seeds || r.z || r.row_z || r.cls || r.cls_name)
    __builtin_trap();
  gfs_infer_req_free(&r);
  free(body);
  return 0;
}
