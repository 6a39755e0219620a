/* philox.h - the Philox-4x32-10 counter-based generator (Salmon et al.,
 * SC'11, "Parallel random numbers: as easy as 1, 2, 3") and the streams of
 * uniform and normal floats built on it.
 *
 * Every random number in ganflow comes from here (DESIGN §4.1): a value is a
 * pure function of (key, counter), so nothing keeps RNG state and any element
 * can be regenerated on its own (dropout's backward regenerates its mask).
 * Pure functions of their arguments: no allocation, thread-safe. */
#ifndef GF_PHILOX_H
#define GF_PHILOX_H

#include <stddef.h>
#include <stdint.h>

/* One Philox-4x32-10 block: out = philox(ctr, key). out may alias ctr. */
void gf_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]);

/* A stream of 32-bit words. Word w (w = offset + i for the i-th value asked
 * for) is lane w % 4 of the block for counter
 *   { (uint32_t)(w / 4), (uint32_t)((w / 4) >> 32), ctr_hi[0], ctr_hi[1] }
 * under key. A caller keys streams by purpose, e.g. key = seed halves,
 * ctr_hi = {purpose, step}, offset = rank/index base. */
typedef struct gf_philox_stream {
  uint32_t key[2];
  uint32_t ctr_hi[2]; /* counter words 2 and 3, fixed for the stream */
  uint64_t offset;    /* index of the first word used */
} gf_philox_stream;

/* out[i] = word offset + i of the stream. */
void gf_philox_u32(const gf_philox_stream *s, uint32_t *out, size_t n);

/* out[i] = (word(offset + i) >> 8) * 2^-24: uniform on [0, 1) with 24 bits,
 * exactly representable in f32. */
void gf_philox_uniform(const gf_philox_stream *s, float *out, size_t n);

/* out[i] = mean + stddev * z_k with k = offset + i, standard normals by
 * Box-Muller: pair p = k / 2 uses words 2p and 2p+1 (u1 = (w0>>8 + 1) 2^-24
 * in (0, 1], u2 = (w1>>8) 2^-24), z = sqrt(-2 ln u1) * (k even ? cos : sin)
 * (2 pi u2), evaluated in double and rounded to f32. */
void gf_philox_normal(const gf_philox_stream *s, float *out, size_t n,
                      float mean, float stddev);

#endif
