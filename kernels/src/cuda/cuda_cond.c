/* cuda_cond.c - the CUDA backend's class-conditioning ops (embedding,
 * per-sample per-channel affine, row-wise dot product): launches of the
 * kernels in cuda_cond.cu on the ctx's stream. No synchronization, no
 * device-to-host copy and no scratch; in particular the labels' values are
 * not checked here (that would need a copy to the host and a sync): the
 * kernels never read or write outside table / dtable for a label outside
 * [0, K) (a NaN row forward, nothing backward; see ops.h). */
#include "cuda_cond.h"
#include "cuda_backend.h"

gf_status gf_cuda_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                                const gf_tensor *labels, gf_tensor *y,
                                gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_embedding_fwd(gf_cu(ctx)->stream, table->data, labels->data,
                              y->data, table->shape[0], table->shape[1],
                              labels->shape[0]));
  return GF_OK;
}

gf_status gf_cuda_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                                const gf_tensor *dy, gf_tensor *dtable,
                                gf_accum accum, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_embedding_bwd(gf_cu(ctx)->stream, labels->data, dy->data,
                              dtable->data, dtable->shape[0], dtable->shape[1],
                              labels->shape[0], accum == GF_ACCUMULATE));
  return GF_OK;
}

gf_status gf_cuda_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *gain,
                                     const gf_tensor *bias, gf_tensor *y,
                                     gf_err *err) {
  CU_ENTER();
  int64_t planes = gf_tensor_numel(gain), S = gf_tensor_numel(x) / planes;
  CU_TRY(gf_cuk_channel_affine_fwd(gf_cu(ctx)->stream, x->data, gain->data,
                                   bias ? bias->data : NULL, y->data, planes,
                                   S));
  return GF_OK;
}

gf_status gf_cuda_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *gain, const gf_tensor *dy,
                                     gf_tensor *dx, gf_tensor *dgain,
                                     gf_tensor *dbias, gf_err *err) {
  CU_ENTER();
  int64_t planes = gf_tensor_numel(gain), S = gf_tensor_numel(x) / planes;
  CU_TRY(gf_cuk_channel_affine_bwd(gf_cu(ctx)->stream, x->data, gain->data,
                                   dy->data, dx ? dx->data : NULL,
                                   dgain ? dgain->data : NULL,
                                   dbias ? dbias->data : NULL, planes, S));
  return GF_OK;
}

gf_status gf_cuda_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a,
                             const gf_tensor *b, gf_tensor *y, gf_accum accum,
                             gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_rowdot_fwd(gf_cu(ctx)->stream, a->data, b->data, y->data,
                           a->shape[0], a->shape[1], accum == GF_ACCUMULATE));
  return GF_OK;
}

gf_status gf_cuda_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a,
                             const gf_tensor *b, const gf_tensor *dy,
                             gf_tensor *da, gf_tensor *db, gf_accum accum,
                             gf_err *err) {
  CU_ENTER();
  int64_t N = a->shape[0], D = a->shape[1];
  int acc = accum == GF_ACCUMULATE;
  if (da)
    CU_TRY(gf_cuk_rowdot_grad(gf_cu(ctx)->stream, dy->data, b->data, da->data,
                              N, D, acc));
  if (db)
    CU_TRY(gf_cuk_rowdot_grad(gf_cu(ctx)->stream, dy->data, a->data, db->data,
                              N, D, acc));
  return GF_OK;
}
