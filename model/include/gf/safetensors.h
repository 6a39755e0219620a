/* safetensors.h - strict reader and atomic writer of the safetensors format
 * (https://github.com/huggingface/safetensors):
 *
 *   [8 bytes: N, little-endian u64][N bytes: UTF-8 JSON header][data buffer]
 *   header = {"__metadata__": {str: str},
 *             "<name>": {"dtype": "F32", "shape": [..],
 *                        "data_offsets": [begin, end]}, ...}
 *   offsets are relative to the start of the data buffer.
 *
 * Used for checkpoints (DESIGN §4.2) and generator weights (§4.3); files
 * written here load with Python's safetensors.numpy. The reader trusts
 * nothing: header length bounds, JSON validity, known dtypes, shape × dtype
 * size = byte length (overflow-checked), offsets inside the buffer, tensors
 * covering the buffer exactly with neither gaps nor overlaps, unique names,
 * string-only metadata. It is not a tensor library: it hands out bytes. */
#ifndef GF_SAFETENSORS_H
#define GF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "gf/sha256.h"
#include "gf/status.h"

typedef enum gf_st_dtype {
  GF_ST_F32,
  GF_ST_F16,
  GF_ST_BF16,
  GF_ST_F64,
  GF_ST_I64,
  GF_ST_I32,
  GF_ST_I16,
  GF_ST_I8,
  GF_ST_U8,
  GF_ST_BOOL,
  GF_ST_DTYPE_COUNT
} gf_st_dtype;

#define GF_ST_MAX_DIMS 8                    /* deeper shapes: GF_EUNSUPPORTED */
#define GF_ST_MAX_HEADER (100u * 1000u * 1000u) /* bytes, as upstream */
/* Metadata key under which the writer stores, on request, the SHA-256 (hex)
 * of the whole data buffer; checked by GF_ST_VERIFY_SHA256. */
#define GF_ST_DATA_SHA256_KEY "ganflow.data_sha256"

/* Static name ("F32"); "?" for an out-of-range value. */
const char *gf_st_dtype_name(gf_st_dtype dt);
/* Bytes per element (BOOL: 1); 0 for an out-of-range value. */
size_t gf_st_dtype_size(gf_st_dtype dt);

/* Room for gf_st_shape_text: "[", GF_ST_MAX_DIMS int64s of at most 20
 * characters and the ", " between them, "]" and the NUL. */
#define GF_ST_SHAPE_TEXT_MAX (GF_ST_MAX_DIMS * 22 + 3)
/* "[d0, d1, ...]" of the first min(ndim, GF_ST_MAX_DIMS) dims into buf, for
 * messages and listings; returns buf. */
const char *gf_st_shape_text(const int64_t *shape, int ndim,
                             char buf[GF_ST_SHAPE_TEXT_MAX]);
/* Parses a dtype name; GF_EUNSUPPORTED for anything outside the list. */
gf_status gf_st_dtype_parse(const char *name, gf_st_dtype *out, gf_err *err);

/* One metadata entry. Strings are borrowed (writer input) or owned by the
 * gf_st_file they belong to (reader output). */
typedef struct gf_st_kv {
  const char *key;
  const char *value;
} gf_st_kv;

/* ---- writing ------------------------------------------------------------ */

/* A tensor to write. Everything is borrowed for the duration of the call;
 * data holds prod(shape) * dtype size bytes in row-major order (may be NULL
 * when that is 0). */
typedef struct gf_st_tensor_desc {
  const char *name;      /* non-empty UTF-8, unique, not "__metadata__" */
  gf_st_dtype dtype;
  int ndim;              /* 0 (scalar) .. GF_ST_MAX_DIMS */
  const int64_t *shape;  /* ndim entries, each >= 0 */
  const void *data;
} gf_st_tensor_desc;

enum {
  /* Writer: add GF_ST_DATA_SHA256_KEY to the metadata.
   * Reader: require that key and check it against the data buffer. */
  GF_ST_DATA_SHA256 = 1u << 0,
};
#define GF_ST_VERIFY_SHA256 GF_ST_DATA_SHA256

/* Serialises tensors and metadata into a malloc'd buffer (*out, *out_len;
 * the caller frees *out with free()). Layout: tensors sorted by dtype size
 * (largest first, so every tensor is aligned to its element size) then by
 * name; header keys in the same order with __metadata__ (keys sorted) first;
 * header padded with spaces to a multiple of 8. Nothing is written on
 * failure. Metadata keys must be unique and must not be the digest key when
 * GF_ST_DATA_SHA256 is set. */
gf_status gf_st_write_buffer(const gf_st_tensor_desc *tensors, size_t n,
                             const gf_st_kv *meta, size_t n_meta,
                             unsigned flags, uint8_t **out, size_t *out_len,
                             gf_err *err);
/* The same bytes written to path through gf/atomic_file.h (temporary file,
 * fsync, rename, directory fsync); tensor data is streamed, not copied. */
gf_status gf_st_write_file(const char *path, const gf_st_tensor_desc *tensors,
                           size_t n, const gf_st_kv *meta, size_t n_meta,
                           unsigned flags, gf_err *err);

/* ---- reading ------------------------------------------------------------ */

/* A tensor of a parsed file. Owned by the gf_st_file; `data` points into the
 * file's bytes and lives as long as the file. */
typedef struct gf_st_tensor {
  char *name;
  gf_st_dtype dtype;
  int ndim;
  int64_t shape[GF_ST_MAX_DIMS]; /* entries past ndim are 0 */
  uint64_t begin, end;           /* offsets in the data buffer, end-begin=nbytes */
  size_t nbytes;                 /* prod(shape) * dtype size */
  size_t numel;                  /* prod(shape); 1 for a scalar */
  const void *data;              /* data buffer + begin; unaligned in general */
} gf_st_tensor;

/* A parsed file. Fields are read-only to the caller. */
typedef struct gf_st_file {
  uint8_t *owned;             /* file bytes read by gf_st_open; NULL after gf_st_parse */
  const uint8_t *bytes;       /* the whole file (owned or borrowed) */
  size_t size;                /* bytes in `bytes` */
  const uint8_t *data;        /* data buffer = bytes + 8 + header length */
  size_t data_len;
  size_t header_len;          /* N */
  gf_st_tensor *tensors;      /* n_tensors entries sorted by name (strcmp) */
  size_t n_tensors;
  gf_st_kv *meta;             /* n_meta entries sorted by key; strings owned */
  size_t n_meta;
} gf_st_file;

/* Sets every field to empty, so gf_st_file_free is always safe. */
void gf_st_file_init(gf_st_file *f);
/* Parses len bytes at buf. Borrows buf: it must outlive f and stay
 * unchanged. Allocates names, metadata and tables, freed by
 * gf_st_file_free (also on failure, f is left freed). flags:
 * GF_ST_VERIFY_SHA256 also checks the data digest (GF_EINTEGRITY). */
gf_status gf_st_parse(gf_st_file *f, const void *buf, size_t len,
                      unsigned flags, gf_err *err);
/* Reads the whole file at path into memory owned by f, then parses it as
 * gf_st_parse does. */
gf_status gf_st_open(gf_st_file *f, const char *path, unsigned flags,
                     gf_err *err);
/* Frees what f owns and re-initialises it; accepts NULL. */
void gf_st_file_free(gf_st_file *f);

/* Tensor by exact name (binary search), or NULL. */
const gf_st_tensor *gf_st_find(const gf_st_file *f, const char *name);
/* Metadata value by key, or NULL. */
const char *gf_st_meta_get(const gf_st_file *f, const char *key);

/* SHA-256 (hex) of the data buffer. */
gf_status gf_st_data_sha256(const gf_st_file *f, char hex[GF_SHA256_HEX_LEN + 1],
                            gf_err *err);
/* Compares the data buffer with the digest stored under
 * GF_ST_DATA_SHA256_KEY: GF_ENOTFOUND when absent, GF_EFORMAT when not a
 * digest, GF_EINTEGRITY on mismatch. */
gf_status gf_st_verify_data_sha256(const gf_st_file *f, gf_err *err);

#endif
