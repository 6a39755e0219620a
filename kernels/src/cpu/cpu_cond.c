/* cpu_cond.c - the CPU backend's class-conditioning ops (ops.h, "class
 * conditioning"): the embedding lookup and its gradient, the per-sample
 * per-channel affine of conditional batch norm and its gradient, and the
 * row-wise dot product of the projection discriminator. Plain C loops with
 * OpenMP threads; every result is the same bits at any thread count and
 * the same bits as the CUDA twins (cuda_cond.cu):
 *  - the embedding gradient sums each dtable element in f32 over the
 *    matching samples in increasing n, from 0.0f (the order of PyTorch's
 *    CPU index_add_, so its bits too);
 *  - the other sums (dgain, dbias, rowdot) are lane sums in double as
 *    reduce_order.h defines them, rounded to f32 once;
 *  - element-wise arithmetic is one f32 rounding per operation (the build's
 *    ISO C mode turns FMA contraction off; one operation per statement all
 *    the same).
 * Labels are GF_I32; ops.c rejects out-of-range labels of a CPU ctx
 * before these run, but the loops do not rely on it: a label outside
 * [0, K) reads and writes nothing (a NaN row forward, no contribution
 * backward), as on CUDA. Not for the generic element-wise ops
 * (cpu_eltwise.c). */
#include <string.h>

#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES
/* Columns of dtable one task sums at a time (stack accumulators). */
#define EMB_COLS 64

/* The quiet NaN a row of an out-of-range label gets (CUDA's too). */
static float qnan(void) {
  uint32_t u = 0x7fc00000u;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- embedding --------------------------------------------------------- */

gf_status gf_cpu_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                               const gf_tensor *labels, gf_tensor *y,
                               gf_err *err) {
  (void)err;
  int64_t K = table->shape[0], D = table->shape[1], N = labels->shape[0];
  const float *T = table->data;
  const int32_t *L = labels->data;
  float *Y = y->data;
  float nan = qnan();
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * D >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < N; n++) {
    int64_t k = L[n];
    float *yr = Y + n * D;
    if (k >= 0 && k < K) memcpy(yr, T + k * D, (size_t)D * sizeof(float));
    else
      for (int64_t d = 0; d < D; d++) yr[d] = nan;
  }
  return GF_OK;
}

/* A stable counting sort of the samples by label in the scratch
 * (int32: start[K + 1], cursor[K], order[N]): the samples of class k are
 * order[start[k] .. start[k+1]) in increasing n. Then each class's rows
 * are summed column block by column block, in that order. */
gf_status gf_cpu_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                               const gf_tensor *dy, gf_tensor *dtable,
                               gf_accum accum, gf_err *err) {
  int64_t K = dtable->shape[0], D = dtable->shape[1], N = labels->shape[0];
  size_t words = (size_t)(2 * K + 1 + N);
  _Static_assert(sizeof(float) == sizeof(int32_t), "scratch words");
  float *tmp = gf_cpu_tmp(ctx, words, err);
  if (!tmp) return err ? err->code : GF_ENOMEM;
  int32_t *start = (int32_t *)(void *)tmp, *cursor = start + K + 1;
  int32_t *order = cursor + K;
  const int32_t *L = labels->data;
  memset(start, 0, (size_t)(K + 1) * sizeof(int32_t));
  for (int64_t n = 0; n < N; n++)
    if (L[n] >= 0 && L[n] < K) start[L[n] + 1]++;
  for (int64_t k = 0; k < K; k++) {
    start[k + 1] += start[k];
    cursor[k] = start[k];
  }
  for (int64_t n = 0; n < N; n++)
    if (L[n] >= 0 && L[n] < K) order[cursor[L[n]]++] = (int32_t)n;

  const float *G = dy->data;
  float *O = dtable->data;
  int acc = accum == GF_ACCUMULATE;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (K * D + N * D >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t k = 0; k < K; k++) {
    const int32_t *lst = order + start[k];
    int64_t cnt = start[k + 1] - start[k];
    float *orow = O + k * D;
    for (int64_t d0 = 0; d0 < D; d0 += EMB_COLS) {
      int64_t len = D - d0 < EMB_COLS ? D - d0 : EMB_COLS;
      float s[EMB_COLS];
      for (int64_t j = 0; j < len; j++) s[j] = 0.0f;
      for (int64_t i = 0; i < cnt; i++) {
        const float *row = G + (int64_t)lst[i] * D + d0;
        for (int64_t j = 0; j < len; j++) s[j] += row[j];
      }
      for (int64_t j = 0; j < len; j++) {
        float v = s[j];
        orow[d0 + j] = acc ? orow[d0 + j] + v : v;
      }
    }
  }
  return GF_OK;
}

/* ---- per-sample, per-channel affine ------------------------------------ */

gf_status gf_cpu_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *gain,
                                    const gf_tensor *bias, gf_tensor *y,
                                    gf_err *err) {
  (void)err;
  int64_t NC = gf_tensor_numel(gain), S = gf_tensor_numel(x) / NC;
  const float *X = x->data, *g = gain->data;
  const float *b = bias ? bias->data : NULL;
  float *Y = y->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (NC * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t p = 0; p < NC; p++) {
    const float *xr = X + p * S;
    float *yr = Y + p * S;
    float gp = g[p];
    if (b) {
      float bp = b[p];
      for (int64_t s = 0; s < S; s++) {
        float t = xr[s] * gp;
        yr[s] = t + bp;
      }
    } else {
      for (int64_t s = 0; s < S; s++) yr[s] = xr[s] * gp;
    }
  }
  return GF_OK;
}

/* Per plane p = (n, c): dx = dy gain[p] element-wise (dx may be dy: each
 * element is read before it is written), and the lane sums of dy x and of
 * dy over the plane. */
gf_status gf_cpu_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *gain, const gf_tensor *dy,
                                    gf_tensor *dx, gf_tensor *dgain,
                                    gf_tensor *dbias, gf_err *err) {
  (void)err;
  int64_t NC = gf_tensor_numel(gain), S = gf_tensor_numel(x) / NC;
  const float *X = x->data, *g = gain->data, *G = dy->data;
  float *DX = dx ? dx->data : NULL;
  float *dg = dgain ? dgain->data : NULL, *db = dbias ? dbias->data : NULL;
  int sums = dg || db;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (NC * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t p = 0; p < NC; p++) {
    const float *xr = X + p * S, *gr = G + p * S;
    if (sums) {
      double pg[LANES] = {0}, pb[LANES] = {0};
      for (int64_t i0 = 0; i0 < S; i0 += LANES) {
        int64_t len = S - i0 < LANES ? S - i0 : LANES;
        for (int64_t j = 0; j < len; j++) {
          double t = (double)gr[i0 + j];
          pg[j] += t * (double)xr[i0 + j];
          pb[j] += t;
        }
      }
      if (dg) dg[p] = (float)gf_cpu_lanes_tree(pg);
      if (db) db[p] = (float)gf_cpu_lanes_tree(pb);
    }
    if (DX) {
      float *o = DX + p * S;
      float gp = g[p];
      for (int64_t s = 0; s < S; s++) o[s] = gr[s] * gp;
    }
  }
  return GF_OK;
}

/* ---- row-wise dot product ---------------------------------------------- */

gf_status gf_cpu_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                            gf_tensor *y, gf_accum accum, gf_err *err) {
  (void)err;
  int64_t N = a->shape[0], D = a->shape[1];
  const float *A = a->data, *B = b->data;
  float *Y = y->data;
  int acc = accum == GF_ACCUMULATE;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * D >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < N; n++) {
    float r = (float)gf_cpu_lane_dot(A + n * D, B + n * D, D);
    Y[n] = acc ? Y[n] + r : r;
  }
  return GF_OK;
}

/* out[n, d] (+)= dy[n] v[n, d], one rounding for the product and one for
 * the sum. */
static void rowdot_grad(const gf_ctx *ctx, const float *dyv, const float *v,
                        float *out, int64_t N, int64_t D, int acc) {
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * D >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < N; n++) {
    float g = dyv[n];
    const float *vr = v + n * D;
    float *o = out + n * D;
    if (acc) {
      for (int64_t d = 0; d < D; d++) {
        float t = g * vr[d];
        o[d] = o[d] + t;
      }
    } else {
      for (int64_t d = 0; d < D; d++) o[d] = g * vr[d];
    }
  }
}

gf_status gf_cpu_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                            const gf_tensor *dy, gf_tensor *da, gf_tensor *db,
                            gf_accum accum, gf_err *err) {
  (void)err;
  int64_t N = a->shape[0], D = a->shape[1];
  int acc = accum == GF_ACCUMULATE;
  if (da) rowdot_grad(ctx, dy->data, b->data, da->data, N, D, acc);
  if (db) rowdot_grad(ctx, dy->data, a->data, db->data, N, D, acc);
  return GF_OK;
}
