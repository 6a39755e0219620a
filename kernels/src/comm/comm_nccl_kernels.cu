/* comm_nccl_kernels.cu - device kernels of the nccl engine: the ordered add
 * of the tree all-reduce (lower rank's value + higher rank's, so every rank
 * holds the same bits as the host engine), AVG's scale by 1/world, and the
 * f32 <-> bf16 conversions of F32_AS_BF16 (the host's bit operations);
 * see comm_nccl_kernels.h. Grid-stride loops; explicit _rn intrinsics so that
 * nothing is contracted or reassociated. */
#include <stdint.h>

#include "../cuda/cuda_launch.cuh"
#include "comm_nccl_kernels.h"

namespace {

__global__ void add_f32(float *d, const float *a, const float *b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = __fadd_rn(a[i], b[i]);
}

__global__ void add_f64(double *d, const double *a, const double *b,
                        size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = __dadd_rn(a[i], b[i]);
}

__global__ void add_i64(int64_t *d, const int64_t *a, const int64_t *b,
                        size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
}

__global__ void scale_f32(float *p, float s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = __fmul_rn(p[i], s);
}

__global__ void scale_f64(double *p, double s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = __dmul_rn(p[i], s);
}

/* The bit operations of comm.c's bf16_of / f32_of (gf_comm_bf16_from_f32),
 * so that device and host round alike. */
__device__ __forceinline__ uint16_t bf16_of(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

__device__ __forceinline__ float f32_of(uint16_t h) {
  return __uint_as_float((uint32_t)h << 16);
}

__global__ void add_bf16(uint16_t *d, const uint16_t *a, const uint16_t *b,
                         size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = bf16_of(__fadd_rn(f32_of(a[i]), f32_of(b[i])));
}

__global__ void to_bf16(uint16_t *d, const float *s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = bf16_of(s[i]);
}

__global__ void from_bf16(float *d, const uint16_t *s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = f32_of(s[i]);
}

}  // namespace

/* gf_comm_dtype values (gf/comm.h); kept in step by hand, the header is C */
enum { CDT_F32 = 0, CDT_F64 = 1, CDT_I64 = 2, CDT_BF16 = 4 };

extern "C" {

cudaError_t gf_comm_cuk_add(cudaStream_t s, int dt, void *dst,
                            const void *lower, const void *higher,
                            size_t n) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
  case CDT_F32:
    add_f32<<<blocks_for(n), kThreads, 0, s>>>(
        (float *)dst, (const float *)lower, (const float *)higher, n);
    break;
  case CDT_F64:
    add_f64<<<blocks_for(n), kThreads, 0, s>>>(
        (double *)dst, (const double *)lower, (const double *)higher, n);
    break;
  case CDT_I64:
    add_i64<<<blocks_for(n), kThreads, 0, s>>>(
        (int64_t *)dst, (const int64_t *)lower, (const int64_t *)higher, n);
    break;
  case CDT_BF16:
    add_bf16<<<blocks_for(n), kThreads, 0, s>>>(
        (uint16_t *)dst, (const uint16_t *)lower, (const uint16_t *)higher, n);
    break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t gf_comm_cuk_to_bf16(cudaStream_t s, void *dst, const void *src,
                                size_t n) {
  if (n == 0) return cudaSuccess;
  to_bf16<<<blocks_for(n), kThreads, 0, s>>>((uint16_t *)dst,
                                            (const float *)src, n);
  return cudaGetLastError();
}

cudaError_t gf_comm_cuk_from_bf16(cudaStream_t s, void *dst, const void *src,
                                  size_t n) {
  if (n == 0) return cudaSuccess;
  from_bf16<<<blocks_for(n), kThreads, 0, s>>>((float *)dst,
                                              (const uint16_t *)src, n);
  return cudaGetLastError();
}

cudaError_t gf_comm_cuk_scale(cudaStream_t s, int dt, void *buf, size_t n,
                              int world) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
  case CDT_F32:
    scale_f32<<<blocks_for(n), kThreads, 0, s>>>(
        (float *)buf, (float)(1.0 / world), n);
    break;
  case CDT_F64:
    scale_f64<<<blocks_for(n), kThreads, 0, s>>>((double *)buf, 1.0 / world,
                                                 n);
    break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // extern "C"
