/* cpu_lanes.c - the lane sums of kernels/src/reduce_order.h on the CPU,
 * shared by the CPU ops whose sums must give the CUDA twins' bits (the GAN
 * losses and spectral normalization, class conditioning, DiffAugment's
 * colour, ...): GF_RED_LANES lanes in double, lane j
 * adding the terms j, j + L, ... in order from 0.0 (a loop over blocks of
 * L terms, which vectorizes), then the tree. Single-threaded: callers
 * split independent sums (rows, planes) over their threads. */
#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES

double gf_cpu_lanes_tree(double *p) {
  for (int h = LANES / 2; h > 0; h >>= 1)
    for (int j = 0; j < h; j++) p[j] += p[j + h];
  return p[0];
}

double gf_cpu_lane_dot(const float *a, const float *b, int64_t n) {
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++)
      p[j] += (double)a[i0 + j] * (double)b[i0 + j];
  }
  return gf_cpu_lanes_tree(p);
}

double gf_cpu_lane_sum_d(const double *v, int64_t n, int64_t stride) {
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++) p[j] += v[(i0 + j) * stride];
  }
  return gf_cpu_lanes_tree(p);
}
