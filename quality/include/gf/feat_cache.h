/* feat_cache.h - the cache of a dataset's features and moments for FID and
 * KID: computed once per (network, dataset, preprocessing, count) and found
 * again by digest.
 *
 * A cache file is a safetensors file (gf/safetensors.h) holding
 *   features  F32 [count, dim]  the feature vectors, in the data's order (KID)
 *   mean      F64 [dim]         their mean        (gf_feat_moments.mean)
 *   cov       F64 [dim, dim]    their covariance  (gf_feat_moments.cov)
 * and the string metadata
 *   format "ganflow-fid-features", version "1",
 *   network_sha256  hex SHA-256 of the network's weights file,
 *   data_sha256     hex SHA-256 of the exact image bytes the features came
 *                   from (the caller computes it),
 *   preprocess      how images became network input (e.g.
 *                   "u8-rgb299-nvbilinear-tf"), as the caller names it,
 *   count, dim      decimal integers,
 *   ganflow.data_sha256  digest of the tensor bytes (GF_ST_DATA_SHA256),
 *                   checked on every read.
 * Files load with Python's safetensors.numpy.
 *
 * Not the feature extractor, and not a store with eviction: files stay until
 * someone deletes them. Writers replace files atomically; two writers of one
 * key write the same bytes. */
#ifndef GF_FEAT_CACHE_H
#define GF_FEAT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "gf/fid.h"
#include "gf/status.h"

#define GF_FEAT_CACHE_FORMAT "ganflow-fid-features"
#define GF_FEAT_CACHE_VERSION "1"
/* The longest preprocess string, in bytes. */
#define GF_FEAT_CACHE_PREPROCESS_MAX 256

/* What a cache file is for. Strings are borrowed. A key is valid when both
 * digests are 64 lowercase hex digits, preprocess is 1 to
 * GF_FEAT_CACHE_PREPROCESS_MAX printable ASCII characters (0x20-0x7e),
 * count >= 2 and dim >= 1; every function below refuses an invalid key
 * with GF_EINVAL naming the field. */
typedef struct gf_feat_cache_key {
  const char *network_sha256; /* hex SHA-256 of the network weights file */
  const char *data_sha256;    /* hex SHA-256 of the images' bytes */
  const char *preprocess;     /* the preprocessing's name */
  int64_t count;              /* feature vectors (images) */
  int dim;                    /* feature length (2048 for pool3) */
} gf_feat_cache_key;

/* Writes "<dir>/<h>.safetensors" into buf[cap], h = the first 16 hex digits
 * of SHA-256 over "ganflow-fid-features/1\n" network_sha256 "\n" data_sha256
 * "\n" preprocess "\n" count "\n" dim (decimal). GF_EINVAL for an invalid
 * key or when the path does not fit (buf then ""). Allocates nothing. */
gf_status gf_feat_cache_path(const char *dir, const gf_feat_cache_key *key,
                             char *buf, size_t cap, gf_err *err);

/* Writes the cache file at path atomically (gf/atomic_file.h), creating
 * its directory and missing parents (gf_mkdir_p, 0755). feats is row-major
 * [key->count, key->dim]; m must have m->n == key->count and
 * m->dim == key->dim. Reads feats and m; copies nothing it keeps. GF_EINVAL
 * for a bad argument, GF_EIO when the directory or file cannot be written
 * (the destination is then untouched), GF_ENOMEM. */
gf_status gf_feat_cache_write(const char *path, const gf_feat_cache_key *key,
                              const float *feats, const gf_feat_moments *m,
                              gf_err *err);

/* Reads the cache file at path and checks it against key (key NULL: no key
 * check, the file only has to be consistent with itself). Every failure
 * names the file and, where there is one, the field:
 *   GF_ENOTFOUND   no file at path (base has no GF_ENOENT);
 *   GF_EIO         it cannot be read;
 *   GF_EFORMAT     not a valid safetensors file (truncated, garbled), or not
 *                  a consistent cache file (format, version, tensors
 *                  missing, extra, of another dtype or shape, count/dim
 *                  metadata disagreeing with the shapes, non-finite values);
 *   GF_EINTEGRITY  the tensor bytes do not match their stored digest;
 *   GF_EINVAL      a valid cache file for another key (network, data,
 *                  preprocess, count or dim), or a bad argument;
 *   GF_ENOMEM.
 * On success *feats is a malloc'd row-major [count, dim] copy that the
 * caller frees with free(), and *m holds malloc'd moments that the caller
 * frees with gf_feat_moments_free; on failure *feats is NULL and *m empty.
 * feats may be NULL when the caller wants only the moments. The whole file
 * is in memory while it is checked (features twice, briefly). */
gf_status gf_feat_cache_read(const char *path, const gf_feat_cache_key *key,
                             float **feats, gf_feat_moments *m, gf_err *err);

/* gf_feat_cache_read over len bytes at buf (a cache file's contents), with
 * `name` standing for the file in messages. Reads buf only; the same
 * results and ownership as gf_feat_cache_read. For tests and fuzzing. */
gf_status gf_feat_cache_parse(const void *buf, size_t len, const char *name,
                              const gf_feat_cache_key *key, float **feats,
                              gf_feat_moments *m, gf_err *err);

/* The default cache directory into buf[cap]: $GANFLOW_CACHE_DIR/fid, else
 * $XDG_CACHE_HOME/ganflow/fid, else $HOME/.cache/ganflow/fid. An empty
 * variable counts as unset, and so does a relative XDG_CACHE_HOME (the XDG
 * spec says to ignore it). GF_ENOTFOUND when none is set; GF_EINVAL when
 * the path does not fit (buf then ""). Creates nothing; reads the
 * environment only. */
gf_status gf_feat_cache_default_dir(char *buf, size_t cap, gf_err *err);

#endif
