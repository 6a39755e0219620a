/* metrics_test_data.h - feature sets made from a formula, shared by the
 * metrics tests and identical to feature_set() in make_fid_goldens.py:
 * the same uint64 integer hash, the same double operations and one
 * rounding to float, so both sides hold the same float32 bits without a
 * data file. Test code only. */
#ifndef GF_METRICS_TEST_DATA_H
#define GF_METRICS_TEST_DATA_H

#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static inline double td_u(uint64_t s, uint64_t i, uint64_t j) {
  uint64_t h = (s * UINT64_C(73856093)) ^ (i * UINT64_C(19349663)) ^
               (j * UINT64_C(83492791));
  h %= UINT64_C(1) << 32;
  h = (h * UINT64_C(2654435761)) % (UINT64_C(1) << 32);
  return (double)(h % 10007u) / 10007.0 - 0.5;
}

/* malloc'd float [n, dim] (the caller frees it):
 * u(i, j) + mix * u(i, (5 j + 1) % dim) + shift. */
static inline float *td_feature_set(int s, int n, int dim, double mix,
                                    double shift) {
  float *x = malloc((size_t)n * (size_t)dim * sizeof *x);
  REQUIRE(x != NULL);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < dim; j++) {
      uint64_t jm = (5u * (uint64_t)j + 1u) % (uint64_t)dim;
      double v = td_u((uint64_t)s, (uint64_t)i, (uint64_t)j) +
                 mix * td_u((uint64_t)s, (uint64_t)i, jm) + shift;
      x[(size_t)i * (size_t)dim + (size_t)j] = (float)v;
    }
  return x;
}

/* A small splitmix64 for test data that needs no Python twin. */
static inline uint64_t td_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
/* Uniform in [0, 1). */
static inline double td_uniform(uint64_t *state) {
  return (double)(td_next(state) >> 11) * 0x1.0p-53;
}
/* Standard normal (Box-Muller). */
static inline double td_normal(uint64_t *state) {
  double u1 = td_uniform(state), u2 = td_uniform(state);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

#endif
