/* philox.c - Philox-4x32-10 and the word/uniform/normal streams over it; see
 * gf/philox.h. Written from the algorithm's description (Salmon et al. 2011),
 * checked against the Random123 known-answer vectors in
 * tests/kernels/test_philox.c. */
#include "gf/philox.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void gf_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

static void block_for(const gf_philox_stream *s, uint64_t block,
                      uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->ctr_hi[0],
                     s->ctr_hi[1]};
  gf_philox4x32_10(ctr, s->key, out);
}

void gf_philox_u32(const gf_philox_stream *s, uint32_t *out, size_t n) {
  uint64_t w = s->offset;
  size_t i = 0;
  while (i < n) {
    uint32_t blk[4];
    block_for(s, w >> 2, blk);
    for (unsigned lane = (unsigned)(w & 3); lane < 4 && i < n; lane++, i++, w++)
      out[i] = blk[lane];
  }
}

void gf_philox_uniform(const gf_philox_stream *s, float *out, size_t n) {
  uint64_t w = s->offset;
  size_t i = 0;
  while (i < n) {
    uint32_t blk[4];
    block_for(s, w >> 2, blk);
    for (unsigned lane = (unsigned)(w & 3); lane < 4 && i < n; lane++, i++, w++)
      out[i] = (float)(blk[lane] >> 8) * 0x1p-24f;
  }
}

void gf_philox_normal(const gf_philox_stream *s, float *out, size_t n,
                      float mean, float stddev) {
  const double two_pi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < n; i++) {
    uint64_t k = s->offset + i;
    uint64_t w = (k >> 1) * 2; /* even, so both words share one block */
    uint32_t blk[4];
    block_for(s, w >> 2, blk);
    unsigned lane = (unsigned)(w & 3);
    double u1 = ((double)(blk[lane] >> 8) + 1.0) * 0x1p-24;
    double u2 = (double)(blk[lane + 1] >> 8) * 0x1p-24;
    double r = sqrt(-2.0 * log(u1));
    double z = (k & 1) ? r * sin(two_pi * u2) : r * cos(two_pi * u2);
    out[i] = (float)((double)mean + (double)stddev * z);
  }
}
