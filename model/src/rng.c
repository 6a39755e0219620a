/* rng.c - the (seed, purpose, step, sub) -> Philox stream mapping of
 * gf/rng.h. The numbers themselves come from kernels/ (gf/philox.h). */
#include "gf/rng.h"

gf_philox_stream gf_rng_stream(uint64_t seed, gf_rng_purpose purpose,
                               int64_t step, uint32_t sub) {
  gf_philox_stream s;
  s.key[0] = (uint32_t)(seed & 0xffffffffu);
  s.key[1] = (uint32_t)(seed >> 32);
  s.ctr_hi[0] = ((uint32_t)purpose & 0xffu) | ((sub & GF_RNG_SUB_MAX) << 8);
  s.ctr_hi[1] = (uint32_t)((uint64_t)step & 0xffffffffu);
  s.offset = 0;
  return s;
}

gf_philox_stream gf_rng_sample_stream(uint64_t seed, gf_rng_purpose purpose,
                                      int64_t step, uint32_t sub,
                                      int64_t sample0,
                                      int64_t words_per_sample) {
  gf_philox_stream s = gf_rng_stream(seed, purpose, step, sub);
  s.offset = (uint64_t)sample0 * (uint64_t)words_per_sample;
  return s;
}
