/* fuzz_serve_v2_binary.c - fuzz target for a KServe V2 infer request with
 * the binary tensor data extension: the bytes up to the first newline are
 * the Inference-Header-Content-Length value ("-" alone: no header), the
 * rest is the body (JSON header, then raw tensor bytes). Any input gives an
 * error (nothing left allocated) or a request of 1..max rows of seeds or
 * of finite latents (never both: V2 takes one of them), an optional class
 * index per row, with a datatype and output mode that exist. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gfs/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { Z_DIM = 4, MAX = 8 };

static void check(const gfs_infer_req *r) {
  if (r->n < 1 || r->n > MAX) __builtin_trap();
  if (!!r->seeds == !!r->z || r->row_z) __builtin_trap();
  if (r->z)
    for (size_t i = 0; i < (size_t)r->n * Z_DIM; i++)
      if (!isfinite(r->z[i]) || fabsf(r->z[i]) > 1e6f) __builtin_trap();
  if (r->binary_out != 0 && r->binary_out != 1) __builtin_trap();
  if (r->dtype != GFS_IMAGE_FP32 && r->dtype != GFS_IMAGE_UINT8)
    __builtin_trap();
  if (strnlen(r->id, sizeof r->id) == sizeof r->id) __builtin_trap();
  /* a class input: n indices 0..INT32_MAX, never names */
  if (r->cls_name) __builtin_trap();
  for (int k = 0; r->cls && k < r->n; k++)
    if (r->cls[k] < 0 || r->cls[k] > INT32_MAX) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size < 64 ? size : 64);
  if (!nl) return 0;
  size_t hlen = (size_t)(nl - data);
  char hdr[65];
  memcpy(hdr, data, hlen);
  hdr[hlen] = '\0';
  size_t blen = size - hlen - 1;
  /* The body in a buffer of its own size, so that ASan sees any read
   * past it. */
  char *body = malloc(blen ? blen : 1);
  if (!body) return 0;
  if (blen) memcpy(body, nl + 1, blen);
  gfs_infer_req r;
  gf_err err;
  const char *h = strcmp(hdr, "-") == 0 ? NULL : hdr;
  if (gfs_v2_parse_request(body, blen, h, Z_DIM, MAX, &r, &err) == GF_OK)
    check(&r);
  else if (r.seeds || r.z || r.row_z || r.cls)
    __builtin_trap();
  gfs_infer_req_free(&r);
  free(body);
  return 0;
}
