/* cuda_lanes.cuh - the tree of reduce_order.h's lane sums on CUDA, for the
 * kernels that take a sum in one block of GF_RED_LANES threads (the hinge
 * mean and spectral normalization, DiffAugment's colour), so that they
 * combine the lanes as the CPU backend does.
 *
 * Not the two-sum tree of the conditioning kernels (cuda_cond.cu), which
 * syncs differently. Included by .cu files only. */
#ifndef GF_CUDA_LANES_CUH
#define GF_CUDA_LANES_CUH

#include "../reduce_order.h"

static_assert((GF_RED_LANES & (GF_RED_LANES - 1)) == 0,
              "lanes: a power of two");

/* The tree over p[GF_RED_LANES] (shared), run by a block of GF_RED_LANES
 * threads that each stored their lane and did NOT yet sync; returns the
 * sum to every thread and syncs again, so that p may be reused (and every
 * read a thread made before the call is done before any write after it). */
static __device__ double lanes_tree(double *p) {
  __syncthreads();
  for (int h = GF_RED_LANES / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) p[threadIdx.x] += p[threadIdx.x + h];
    __syncthreads();
  }
  double s = p[0];
  __syncthreads();
  return s;
}

#endif
