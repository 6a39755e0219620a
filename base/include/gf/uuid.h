/* uuid.h - random (version 4) UUIDs in the two forms MLflow writes: the
 * 8-4-4-4-12 form of str(uuid.uuid4()) (log_image's artifact names) and the
 * 32 hex digits of uuid.uuid4().hex (an MLmodel's model_uuid). The bytes
 * come from getrandom(2), or /dev/urandom where it is missing. */
#ifndef GF_UUID_H
#define GF_UUID_H

#include "gf/status.h"

#define GF_UUID_LEN 36     /* 8-4-4-4-12 hex digits */
#define GF_UUID_HEX_LEN 32 /* the same digits without the dashes */

/* Writes a new UUID, lowercase, NUL-terminated. GF_EIO (out "") when no
 * random bytes can be had. */
gf_status gf_uuid4(char out[GF_UUID_LEN + 1], gf_err *err);
gf_status gf_uuid4_hex(char out[GF_UUID_HEX_LEN + 1], gf_err *err);

#endif
