/* sha256.h - SHA-256 digests as lowercase hex, over buffers, streams and
 * files (OpenSSL libcrypto, EVP API).
 *
 * Used for the checkpoint data digest (DESIGN §4.2) and the file digests of
 * the MLflow model directory (§4.3). Not a general crypto API: only SHA-256,
 * only hex output. */
#ifndef GF_SHA256_H
#define GF_SHA256_H

#include <stddef.h>

#include "gf/status.h"

#define GF_SHA256_HEX_LEN 64 /* hex digits; buffers hold one more for NUL */

/* Streaming hasher. `impl` is owned by the hasher: gf_sha256_init allocates
 * it, gf_sha256_final and gf_sha256_free release it. */
typedef struct gf_sha256 {
  void *impl; /* EVP_MD_CTX *, NULL when not initialised */
} gf_sha256;

/* Allocates the digest context; pair with gf_sha256_final or gf_sha256_free. */
gf_status gf_sha256_init(gf_sha256 *h, gf_err *err);
gf_status gf_sha256_update(gf_sha256 *h, const void *data, size_t len,
                           gf_err *err);
/* Writes 64 hex digits and a NUL into hex[65] and frees the context (also
 * on failure). */
gf_status gf_sha256_final(gf_sha256 *h, char hex[GF_SHA256_HEX_LEN + 1],
                          gf_err *err);
/* Frees the context; accepts NULL and an already-finalised hasher. */
void gf_sha256_free(gf_sha256 *h);

/* One-shot digest of a buffer (len 0 allowed, data may then be NULL). */
gf_status gf_sha256_buf(const void *data, size_t len,
                        char hex[GF_SHA256_HEX_LEN + 1], gf_err *err);
/* Digest of a whole file, read in chunks. GF_EIO names the path. */
gf_status gf_sha256_file(const char *path, char hex[GF_SHA256_HEX_LEN + 1],
                         gf_err *err);

/* 1 when s is exactly 64 lowercase hex digits, else 0. */
int gf_sha256_hex_valid(const char *s);

#endif
