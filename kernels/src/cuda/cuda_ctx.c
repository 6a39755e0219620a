/* cuda_ctx.c - what every file of the CUDA backend uses: the CUDA, cuBLAS
 * and cuDNN error checks, entering the ctx's device, and the ctx's
 * workspace. The state itself (stream, handles, descriptors, algorithm
 * cache) is made and freed, and the dispatch table filled, in
 * cuda_backend.c, above the files that do the work, so none of them calls
 * back into a file that calls it. One stream per ctx; nothing global. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "cuda_mem.h"

gf_status gf_cuda_check(cudaError_t e, const char *call, const char *file,
                        int line, gf_err *err) {
  if (e == cudaSuccess) return GF_OK;
  (void)cudaGetLastError();
  return gf_fail(err, e == cudaErrorMemoryAllocation ? GF_ENOMEM : GF_EDEVICE,
                 "cuda: %s failed at %s:%d: %s (%s)", call, file, line,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

gf_status gf_cublas_check(cublasStatus_t s, const char *call,
                          const char *file, int line, gf_err *err) {
  if (s == CUBLAS_STATUS_SUCCESS) return GF_OK;
  return gf_fail(err, s == CUBLAS_STATUS_ALLOC_FAILED ? GF_ENOMEM : GF_EDEVICE,
                 "cublas: %s failed at %s:%d: %s", call, file, line,
                 cublasGetStatusString(s));
}

gf_status gf_cudnn_check(cudnnStatus_t s, const char *call, const char *file,
                         int line, gf_err *err) {
  if (s == CUDNN_STATUS_SUCCESS) return GF_OK;
  return gf_fail(err, s == CUDNN_STATUS_ALLOC_FAILED ? GF_ENOMEM : GF_EDEVICE,
                 "cudnn: %s failed at %s:%d: %s", call, file, line,
                 cudnnGetErrorString(s));
}

gf_status gf_cuda_enter(gf_ctx *ctx, gf_err *err) {
  CU_TRY(cudaSetDevice(ctx->device_index));
  return GF_OK;
}

gf_status gf_cuda_ws(gf_ctx *ctx, size_t bytes, void **out, gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  *out = NULL;
  if (bytes > s->ws_cap || !s->ws) {
    size_t cap = gf_cuda_ws_grow(s->ws_cap, bytes ? bytes : 1);
    if (s->ws) {
      CU_TRY(cudaStreamSynchronize(s->stream));
      CU_TRY(cudaFree(s->ws));
      s->ws = NULL;
      s->ws_cap = 0;
    }
    CU_TRY(cudaMalloc(&s->ws, cap));
    s->ws_cap = cap;
  }
  *out = s->ws;
  return GF_OK;
}
