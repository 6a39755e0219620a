/* comm_nccl_kernels.h - launchers of the nccl engine's device kernels
 * (comm_nccl_kernels.cu), callable from C: the tree's ordered add, the
 * 1/world scale of AVG and the bf16 conversions of F32_AS_BF16. Each queues its kernel on stream s and returns
 * cudaGetLastError() of the launch (cudaSuccess when n is 0); it never
 * synchronizes. dt is a gf_comm_dtype value; pointers are device pointers.
 * Not a public header. */
#ifndef GF_COMM_NCCL_KERNELS_H
#define GF_COMM_NCCL_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = lower[i] + higher[i] (IEEE round-to-nearest, no contraction;
 * i64 wraps; bf16: the f32 sum rounded to bf16 as on the host); dst may
 * alias either input. */
cudaError_t gf_comm_cuk_add(cudaStream_t s, int dt, void *dst,
                            const void *lower, const void *higher, size_t n);
/* buf[i] *= 1/world (f32: the f32 nearest 1.0/world; f64: 1.0/world), as
 * gf_comm_host_scale does on the host. */
cudaError_t gf_comm_cuk_scale(cudaStream_t s, int dt, void *buf, size_t n,
                              int world);
/* dst[i] = the bf16 nearest src[i] (uint16_t bits), ties to even, NaN
 * quieted: the bit operations of gf_comm_bf16_from_f32. */
cudaError_t gf_comm_cuk_to_bf16(cudaStream_t s, void *dst, const void *src,
                                size_t n);
/* dst[i] = f32 of bf16 src[i] (exact). */
cudaError_t gf_comm_cuk_from_bf16(cudaStream_t s, void *dst, const void *src,
                                  size_t n);

#ifdef __cplusplus
}
#endif

#endif
