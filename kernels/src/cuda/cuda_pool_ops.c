/* cuda_pool_ops.c - the CUDA backend's pooling, bilinear resize and channel
 * copy: host-side geometry and launches of the kernels in cuda_pool.cu on
 * the ctx's stream (the channel copy is one strided cudaMemcpy2DAsync). No
 * synchronization: results are ready for the next op on the same stream. */
#include "cuda_backend.h"
#include "cuda_pool.h"

gf_status gf_cuda_pool_fwd(gf_ctx *ctx, int kind, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err) {
  if (kind < GF_POOL_MAX || kind > GF_POOL_AVG_EXCLUDE_PAD)
    return gf_fail(err, GF_EINVAL, "cuda: unknown pooling kind %d", kind);
  CU_ENTER();
  gf_cuk_pool_args a = {
      .kind = kind,
      .kh = p->kernel[0],
      .kw = p->kernel[1],
      .sh = p->stride[0],
      .sw = p->stride[1],
      .ph = p->pad[0],
      .pw = p->pad[1],
      .planes = x->shape[0] * x->shape[1],
      .H = x->shape[2],
      .W = x->shape[3],
      .OH = y->shape[2],
      .OW = y->shape[3],
  };
  CU_TRY(gf_cuk_pool_fwd(gf_cu(ctx)->stream, &a, x->data, y->data));
  return GF_OK;
}

gf_status gf_cuda_resize_bilinear(gf_ctx *ctx, const gf_tensor *x,
                                  gf_tensor *y, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_resize_bilinear(gf_cu(ctx)->stream, x->data, y->data,
                                x->shape[0] * x->shape[1], x->shape[2],
                                x->shape[3], y->shape[2], y->shape[3]));
  return GF_OK;
}

/* N rows of Cs*S floats, src rows dense, dst rows Cd*S floats apart and
 * starting offset*S floats in. */
gf_status gf_cuda_copy_channels(gf_ctx *ctx, const gf_tensor *src,
                                gf_tensor *dst, int64_t offset, gf_err *err) {
  CU_ENTER();
  int64_t N = src->shape[0], cs = src->shape[1], cd = dst->shape[1];
  int64_t S = src->ndim == 4 ? src->shape[2] * src->shape[3] : 1;
  size_t row = (size_t)(cs * S) * sizeof(float);
  size_t pitch = (size_t)(cd * S) * sizeof(float);
  float *d = (float *)dst->data + offset * S;
  CU_TRY(cudaMemcpy2DAsync(d, pitch, src->data, row, row, (size_t)N,
                           cudaMemcpyDeviceToDevice, gf_cu(ctx)->stream));
  return GF_OK;
}
