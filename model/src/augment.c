/* augment.c - the per-sample random draws of DiffAugment (gf/augment.h):
 * Philox words of (seed, GF_RNG_AUGMENT, step, pass) keyed by the global
 * sample index, turned into the params rows gf_augment_fwd applies. No
 * state, no allocation. The op itself is kernels/'s. */
#include "gf/augment.h"

#include "gf/philox.h"

_Static_assert(GF_AUG_WORDS >= GF_AUG_NPARAMS,
               "a sample's words cover its params row");

/* u = (w >> 8) 2^-24, gf_philox_uniform's float. */
static float unif(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

/* floor(w m / 2^32): uniform on [0, m) up to m / 2^32 relative. */
static int64_t below(uint32_t w, uint32_t m) {
  return (int64_t)(((uint64_t)w * m) >> 32);
}

gf_status gf_augment_draw(float *params, int64_t n, int H, int W,
                          unsigned policy, uint64_t seed, int64_t step,
                          int pass, int64_t sample0, gf_err *err) {
  if (n < 0 || (n > 0 && !params))
    return gf_fail(err, GF_EINVAL, "augment: %lld rows into %s", (long long)n,
                   params ? "params" : "NULL");
  if (H < 1 || W < 1)
    return gf_fail(err, GF_EINVAL, "augment: image %d x %d", H, W);
  if (policy & ~(unsigned)GF_AUG_ALL)
    return gf_fail(err, GF_EINVAL, "augment: unknown policy bits 0x%x",
                   policy & ~(unsigned)GF_AUG_ALL);
  if (pass < 0 || (uint32_t)pass > GF_RNG_SUB_MAX)
    return gf_fail(err, GF_EINVAL, "augment: pass %d outside [0, %u]", pass,
                   (unsigned)GF_RNG_SUB_MAX);
  if (step < 0 || sample0 < 0)
    return gf_fail(err, GF_EINVAL, "augment: step %lld, sample0 %lld < 0",
                   (long long)step, (long long)sample0);
  if (sample0 > ((int64_t)1 << 60) - n)
    return gf_fail(err, GF_EINVAL, "augment: sample indices past 2^60");
  int color = (policy & GF_AUG_COLOR) != 0;
  int trans = (policy & GF_AUG_TRANSLATION) != 0;
  int cut = (policy & GF_AUG_CUTOUT) != 0;
  int64_t shx = gf_augment_shift(H), shy = gf_augment_shift(W);
  int64_t s0 = gf_augment_cutout_size(H), s1 = gf_augment_cutout_size(W);
  uint32_t mtx = (uint32_t)(2 * shx + 1), mty = (uint32_t)(2 * shy + 1);
  uint32_t mox = (uint32_t)(H + 1 - s0 % 2), moy = (uint32_t)(W + 1 - s1 % 2);
  for (int64_t i = 0; i < n; i++) {
    gf_philox_stream s = gf_rng_sample_stream(seed, GF_RNG_AUGMENT, step,
                                              (uint32_t)pass, sample0 + i,
                                              GF_AUG_WORDS);
    uint32_t w[GF_AUG_WORDS];
    gf_philox_u32(&s, w, GF_AUG_WORDS);
    float *p = params + i * GF_AUG_NPARAMS;
    p[GF_AUG_P_BRIGHTNESS] = color ? unif(w[GF_AUG_P_BRIGHTNESS]) - 0.5f : 0.0f;
    p[GF_AUG_P_SATURATION] = color ? unif(w[GF_AUG_P_SATURATION]) * 2.0f : 1.0f;
    p[GF_AUG_P_CONTRAST] = color ? unif(w[GF_AUG_P_CONTRAST]) + 0.5f : 1.0f;
    p[GF_AUG_P_TX] = trans ? (float)(below(w[GF_AUG_P_TX], mtx) - shx) : 0.0f;
    p[GF_AUG_P_TY] = trans ? (float)(below(w[GF_AUG_P_TY], mty) - shy) : 0.0f;
    p[GF_AUG_P_OX] = cut ? (float)below(w[GF_AUG_P_OX], mox) : 0.0f;
    p[GF_AUG_P_OY] = cut ? (float)below(w[GF_AUG_P_OY], moy) : 0.0f;
  }
  return GF_OK;
}
