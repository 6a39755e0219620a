/* cuda_launch.cuh - the launch geometry the CUDA kernels share (the
 * backend's .cu files and the nccl engine's): threads per block and the
 * grid of a grid-stride loop over n elements.
 *
 * Not for kernels that size their blocks to their own work (a block per
 * row or plane, GF_RED_LANES threads for a sum): those say so where they
 * launch. Device code only includes it from .cu files. */
#ifndef GF_CUDA_LAUNCH_CUH
#define GF_CUDA_LAUNCH_CUH

#include <stdint.h>

/* Threads per block of the element-wise (grid-stride) kernels. */
constexpr int kThreads = 256;

/* The most blocks a grid-stride launch asks for: past it the threads loop
 * (and a launch never nears the grid's limit). */
constexpr int64_t kMaxBlocks = 65536;

/* Blocks for n elements at kThreads each, at least 1 and at most
 * kMaxBlocks. N: the caller's count type (int64_t or size_t). */
template <typename N>
static inline unsigned blocks_for(N n) {
  N b = (n + kThreads - 1) / kThreads;
  if (b > (N)kMaxBlocks) b = (N)kMaxBlocks;
  return b < 1 ? 1u : (unsigned)b;
}

#endif
