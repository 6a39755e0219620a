/* cpu_pool.c - the CPU backend's parameter-free forward ops of a feature
 * extractor: max / average pooling, bilinear resize (TF1 legacy
 * resize_bilinear) and the channel copy of a concatenation. Not for
 * training: there is no backward. Argument checking happened in ops.c.
 *
 * Pooling runs as a oneDNN pooling primitive on the plain NCHW tensors
 * (cached per shape in the ctx like the convolutions) where oneDNN has a
 * jit kernel for the shape: at Inception-v3's sizes that was 3-10x faster
 * than the loops below. Where oneDNN would fall back to its reference or
 * "simple_nchw" code (slower than the loops: 94 ms against 8 ms for
 * [8,64,147,147] 3x3 s2), or where the windows skip the last rows or
 * columns (oneDNN would need a negative right padding), the plain loops
 * run. Both give the max exactly; average sums may differ in the last bit
 * (summation order, multiply by 1/count).
 *
 * The loops use the separability of pooling: a window's max (or sum) is
 * the max (sum) over its columns of the max (sum) down each column. Each
 * output row first reduces its kh input rows into one row of W values (a
 * contiguous loop the compiler vectorizes), then reduces kw neighbours of
 * that row per output. Resize and the channel copy are plain loops too,
 * threaded as cpu_eltwise.c. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

/* The rows [*lo, *hi) of an input of size n that the window starting at
 * `start` (may be negative: padding) of size k covers. */
static void window(int64_t start, int k, int64_t n, int64_t *lo,
                   int64_t *hi) {
  int64_t e = start + k;
  *lo = start < 0 ? 0 : start;
  *hi = e > n ? n : e;
}

/* PyTorch's max: a NaN wins (max_pool2d propagates NaN). */
static inline float max_nan(float m, float v) {
  return (v > m || isnan(v)) ? v : m;
}

/* One output row of pooling: rows [hs, he) of the plane xp [H, W] are
 * reduced into col [W], then kw-windows of col into yrow [OW]. */
static void pool_row(int kind, const float *xp, int64_t W, int64_t hs,
                     int64_t he, const gf_pool_params *p, int64_t OW,
                     float *col, float *yrow) {
  const float *r0 = xp + hs * W;
  memcpy(col, r0, (size_t)W * sizeof *col);
  for (int64_t h = hs + 1; h < he; h++) {
    const float *r = xp + h * W;
    if (kind == GF_POOL_MAX)
      for (int64_t w = 0; w < W; w++) col[w] = max_nan(col[w], r[w]);
    else
      for (int64_t w = 0; w < W; w++) col[w] += r[w];
  }
  int kw = p->kernel[1], sw = p->stride[1], pw = p->pad[1];
  float full = (float)(p->kernel[0] * kw);
  for (int64_t ow = 0; ow < OW; ow++) {
    int64_t ws, we;
    window(ow * sw - pw, kw, W, &ws, &we);
    float acc = col[ws];
    if (kind == GF_POOL_MAX) {
      for (int64_t w = ws + 1; w < we; w++) acc = max_nan(acc, col[w]);
      yrow[ow] = acc;
    } else {
      for (int64_t w = ws + 1; w < we; w++) acc += col[w];
      float cnt = kind == GF_POOL_AVG_INCLUDE_PAD
                      ? full
                      : (float)((he - hs) * (we - ws));
      yrow[ow] = acc / cnt;
    }
  }
}

/* Runs the pooling as a cached oneDNN primitive when oneDNN has a jit
 * kernel for it (*done = true); else leaves *done false for the loops. */
static gf_status pool_dnnl(gf_ctx *ctx, int kind, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y, bool *done,
                           gf_err *err) {
  *done = false;
  int64_t pad_r[2];
  for (int d = 0; d < 2; d++) {
    pad_r[d] = (y->shape[2 + d] - 1) * p->stride[d] + p->kernel[d] -
               x->shape[2 + d] - p->pad[d];
    if (pad_r[d] < 0) return GF_OK;
  }
  int64_t kv[13] = {x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                    y->shape[2], y->shape[3], p->kernel[0], p->kernel[1],
                    p->stride[0], p->stride[1], p->pad[0], p->pad[1], kind};
  gf_prim_key key;
  memset(&key, 0, sizeof key);
  key.kind = GF_PK_POOL_FWD;
  key.n = 13;
  memcpy(key.v, kv, sizeof kv);
  gf_prim *pr = gf_cpu_prim_find(ctx, &key);
  if (!pr) {
    dnnl_memory_desc_t md[2];
    DNNL_TRY(gf_md(&md[0], 4, x->shape, dnnl_nchw));
    DNNL_TRY(gf_md(&md[1], 4, y->shape, dnnl_nchw));
    dnnl_dims_t st = {p->stride[0], p->stride[1]};
    dnnl_dims_t k = {p->kernel[0], p->kernel[1]};
    dnnl_dims_t pl = {p->pad[0], p->pad[1]}, pr_ = {pad_r[0], pad_r[1]};
    dnnl_alg_kind_t alg = kind == GF_POOL_MAX ? dnnl_pooling_max
                          : kind == GF_POOL_AVG_INCLUDE_PAD
                              ? dnnl_pooling_avg_include_padding
                              : dnnl_pooling_avg_exclude_padding;
    dnnl_pooling_desc_t d;
    DNNL_TRY(dnnl_pooling_forward_desc_init(&d, dnnl_forward_inference, alg,
                                            &md[0], &md[1], st, k, pl, pr_));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int prev = gf_cpu_threads_begin(ctx);
    gf_status rc = gf_cpu_prim_add(ctx, &key, &d, NULL, 2, args, md, &pr,
                                   err);
    gf_cpu_threads_end(prev);
    if (rc) return rc;
  }
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pr->pd, dnnl_query_impl_info_str, 0,
                                (void *)&impl) != dnnl_success ||
      !impl || strncmp(impl, "jit", 3) != 0)
    return GF_OK; /* reference code: the loops are faster */
  void *ptr[2] = {x->data, y->data};
  GF_TRY(gf_cpu_prim_exec(ctx, pr, ptr, err));
  *done = true;
  return GF_OK;
}

gf_status gf_cpu_pool_fwd(gf_ctx *ctx, int kind, const gf_tensor *x,
                          const gf_pool_params *p, gf_tensor *y,
                          gf_err *err) {
  if (kind < GF_POOL_MAX || kind > GF_POOL_AVG_EXCLUDE_PAD)
    return gf_fail(err, GF_EINVAL, "cpu: unknown pooling kind %d", kind);
  if (gf_tensor_numel(y) == 0) return GF_OK;
  bool done = false;
  GF_TRY(pool_dnnl(ctx, kind, x, p, y, &done, err));
  if (done) return GF_OK;
  int64_t planes = x->shape[0] * x->shape[1];
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t OH = y->shape[2], OW = y->shape[3];
  int64_t rows = planes * OH;
  if (rows == 0) return GF_OK;
  int nt = ctx->nthreads;
  /* one column buffer of W floats per thread, owned by the ctx */
  float *tmp = gf_cpu_tmp(ctx, (size_t)nt * (size_t)W, err);
  if (!tmp) return err ? err->code : GF_ENOMEM;
  const float *xp = x->data;
  float *yp = y->data;
  int kh = p->kernel[0], sh = p->stride[0], ph = p->pad[0];
#pragma omp parallel num_threads(nt) if (rows * OW * kh >= GF_PAR_MIN)
  {
    float *col = tmp + (size_t)omp_get_thread_num() * (size_t)W;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      int64_t pl = r / OH, oh = r % OH, hs, he;
      window(oh * sh - ph, kh, H, &hs, &he);
      pool_row(kind, xp + pl * H * W, W, hs, he, p, OW, col,
               yp + pl * OH * OW + oh * OW);
    }
  }
  return GF_OK;
}

/* Source index pair and weight of one output coordinate, TF1 legacy
 * resize_bilinear: s = i * (in / out) in float, clamped to [0, in - 1]. */
typedef struct rs_tap {
  int64_t i0, i1; /* i0 = floor(s), i1 = min(i0 + 1, in - 1) */
  float f;        /* s - i0, in [0, 1) */
} rs_tap;

static void rs_taps(int64_t in, int64_t out, rs_tap *t) {
  float scale = (float)in / (float)out;
  float top = (float)(in - 1);
  for (int64_t i = 0; i < out; i++) {
    float s = (float)i * scale;
    s = s < 0.0f ? 0.0f : (s > top ? top : s);
    float fl = floorf(s);
    int64_t i0 = (int64_t)fl;
    t[i].i0 = i0;
    t[i].i1 = i0 + 1 < in ? i0 + 1 : in - 1;
    t[i].f = s - fl;
  }
}

/* The taps of the rows and columns are computed once per call into a
 * malloc'd block freed before returning. Threads split the N*C*OH output
 * rows (not only the N*C planes: N*C is 3 for one RGB image). */
gf_status gf_cpu_resize_bilinear(gf_ctx *ctx, const gf_tensor *x,
                                 gf_tensor *y, gf_err *err) {
  int64_t planes = x->shape[0] * x->shape[1];
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t OH = y->shape[2], OW = y->shape[3];
  int64_t rows = planes * OH;
  if (rows == 0) return GF_OK;
  rs_tap *ty = malloc((size_t)(OH + OW) * sizeof *ty);
  if (!ty) return gf_fail(err, GF_ENOMEM, "cpu: resize taps");
  rs_tap *tx = ty + OH;
  rs_taps(H, OH, ty);
  rs_taps(W, OW, tx);
  const float *xp = x->data;
  float *yp = y->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (rows * OW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t pl = r / OH, i = r % OH;
    const float *r0 = xp + (pl * H + ty[i].i0) * W;
    const float *r1 = xp + (pl * H + ty[i].i1) * W;
    float fy = ty[i].f, gy = 1.0f - fy;
    float *o = yp + r * OW;
    for (int64_t j = 0; j < OW; j++) {
      int64_t a = tx[j].i0, b = tx[j].i1;
      float fx = tx[j].f, gx = 1.0f - fx;
      float top = gx * r0[a] + fx * r0[b];
      float bot = gx * r1[a] + fx * r1[b];
      o[j] = gy * top + fy * bot;
    }
  }
  free(ty);
  return GF_OK;
}

gf_status gf_cpu_copy_channels(gf_ctx *ctx, const gf_tensor *src,
                               gf_tensor *dst, int64_t offset, gf_err *err) {
  (void)err;
  int64_t N = src->shape[0], cs = src->shape[1], cd = dst->shape[1];
  int64_t S = src->ndim == 4 ? src->shape[2] * src->shape[3] : 1;
  const float *sp = src->data;
  float *dp = dst->data;
  size_t piece = (size_t)(cs * S) * sizeof(float);
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * cs * S >= 8 * GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < N; n++)
    memcpy(dp + (n * cd + offset) * S, sp + n * cs * S, piece);
  return GF_OK;
}
