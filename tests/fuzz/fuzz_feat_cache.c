/* fuzz_feat_cache.c - fuzz target for the FID feature-cache reader
 * (gf_feat_cache_parse, the buffer form of gf_feat_cache_read): any input
 * must give GF_OK or an error with empty outputs; on GF_OK the moments and
 * features must have the shapes the key (or the file) says, with finite
 * values. Read twice: against the seed corpus's key (network 64 x 'a', data
 * 64 x 'b', preprocess "fuzz", count 3, dim 2; see test_feat_cache.c
 * --write-corpus) and with no key. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gf/feat_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(const uint8_t *data, size_t size,
                      const gf_feat_cache_key *key) {
  float *feats = NULL;
  gf_feat_moments m;
  gf_err err;
  gf_status st = gf_feat_cache_parse(data, size, "fuzz", key, &feats, &m, &err);
  if (st != GF_OK) {
    if (feats || m.mean || m.cov) __builtin_trap();
    return;
  }
  if (!feats || !m.mean || !m.cov || m.dim < 1 || m.n < 2) __builtin_trap();
  if (key && (m.dim != key->dim || m.n != key->count)) __builtin_trap();
  const size_t d = (size_t)m.dim;
  volatile double sum = 0;
  for (size_t i = 0; i < d; i++) sum += m.mean[i];
  for (size_t i = 0; i < d * d; i++) sum += m.cov[i];
  for (size_t i = 0; i < (size_t)m.n * d; i++) sum += feats[i];
  (void)sum; /* every byte read: ASan sees an out-of-bounds shape */
  free(feats);
  gf_feat_moments_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const gf_feat_cache_key key = {
      .network_sha256 =
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      .data_sha256 =
          "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
      .preprocess = "fuzz",
      .count = 3,
      .dim = 2,
  };
  check_one(data, size, &key);
  check_one(data, size, NULL);
  return 0;
}
