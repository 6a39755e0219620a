/* rng.c - the (seed, purpose, step, rank, sub) -> Philox stream mapping of
 * gf/rng.h. The numbers themselves come from kernels/ (gf/philox.h). */
#include "gf/rng.h"

gf_philox_stream gf_rng_stream(uint64_t seed, gf_rng_purpose purpose,
                               int64_t step, int rank, uint32_t sub) {
  gf_philox_stream s;
  s.key[0] = (uint32_t)(seed & 0xffffffffu);
  s.key[1] = (uint32_t)(seed >> 32);
  s.ctr_hi[0] = ((uint32_t)purpose & 0xffu) | ((sub & GF_RNG_SUB_MAX) << 8);
  s.ctr_hi[1] = (uint32_t)((uint64_t)step & 0xffffffffu);
  s.offset = (uint64_t)(uint32_t)rank << GF_RNG_RANK_SHIFT;
  return s;
}
