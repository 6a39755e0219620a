/* cuda_blas.c - linear layers on cuBLAS. Tensors are row-major; cuBLAS is
 * column-major, so each product is written for the transposes:
 *   y[N,out]  = x W^T   ->  y^T  = W x^T        (gemm T,N; m=out n=N k=in)
 *   dx[N,in]  = dy W    ->  dx^T = W^T dy^T     (gemm N,N; m=in n=N k=out)
 *   dw[out,in]= dy^T x  ->  dw^T = x^T dy       (gemm N,T; m=in n=out k=N)
 * FP32 math (no TF32) unless ctx->allow_tf32. cuBLAS GEMMs are run to run
 * reproducible on one GPU (no atomics mode), so determinism needs nothing
 * more here. The biases use the fixed-order kernels of cuda_kernels.cu. */
#include "cuda_backend.h"

static gf_status set_math(gf_ctx *ctx, gf_err *err) {
  BLAS_TRY(cublasSetMathMode(gf_cu(ctx)->blas,
                             ctx->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                             : CUBLAS_DEFAULT_MATH));
  return GF_OK;
}

static gf_status dims_int(const gf_tensor *x, const gf_tensor *w, int *N,
                          int *in, int *out, gf_err *err) {
  if (x->shape[0] > INT32_MAX || w->shape[0] > INT32_MAX ||
      w->shape[1] > INT32_MAX)
    return gf_fail(err, GF_EUNSUPPORTED, "cuda: linear dims beyond int32");
  *N = (int)x->shape[0];
  *out = (int)w->shape[0];
  *in = (int)w->shape[1];
  return GF_OK;
}

gf_status gf_cuda_linear_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *b,
                             gf_tensor *y, gf_err *err) {
  gf_status st = gf_cuda_enter(ctx, err);
  if (st) return st;
  int N = 0, in = 0, out = 0;
  if ((st = dims_int(x, w, &N, &in, &out, err))) return st;
  if ((st = set_math(ctx, err))) return st;
  const float one = 1.0f, zero = 0.0f;
  if (N > 0 && out > 0) {
    if (in == 0) {
      CU_TRY(gf_cuk_fill(gf_cu(ctx)->stream, y->data, 0.0f,
                         (int64_t)N * out));
    } else {
      BLAS_TRY(cublasSgemm(gf_cu(ctx)->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, N,
                           in, &one, w->data, in, x->data, in, &zero, y->data,
                           out));
    }
  }
  if (b) CU_TRY(gf_cuk_bias_add(gf_cu(ctx)->stream, y->data, b->data, N, out, 1));
  return GF_OK;
}

gf_status gf_cuda_linear_bwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *dy,
                             gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                             gf_accum accum, gf_err *err) {
  gf_status st = gf_cuda_enter(ctx, err);
  if (st) return st;
  int N = 0, in = 0, out = 0;
  if ((st = dims_int(x, w, &N, &in, &out, err))) return st;
  if ((st = set_math(ctx, err))) return st;
  cublasHandle_t h = gf_cu(ctx)->blas;
  cudaStream_t s = gf_cu(ctx)->stream;
  const float one = 1.0f, zero = 0.0f;
  const float *beta_w = accum == GF_ACCUMULATE ? &one : &zero;
  if (dx && N > 0 && in > 0) {
    if (out == 0)
      CU_TRY(gf_cuk_fill(s, dx->data, 0.0f, (int64_t)N * in));
    else
      BLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, in, N, out, &one,
                           w->data, in, dy->data, out, &zero, dx->data, in));
  }
  if (dw && in > 0 && out > 0) {
    if (N == 0) {
      if (accum != GF_ACCUMULATE)
        CU_TRY(gf_cuk_fill(s, dw->data, 0.0f, (int64_t)out * in));
    } else {
      BLAS_TRY(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, N, &one,
                           x->data, in, dy->data, out, beta_w, dw->data, in));
    }
  }
  if (db)
    CU_TRY(gf_cuk_bias_grad(s, dy->data, N, out, 1, db->data,
                            accum == GF_ACCUMULATE));
  return GF_OK;
}
