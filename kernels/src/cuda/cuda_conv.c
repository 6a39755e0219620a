/* cuda_conv.c - convolution and transposed convolution on cuDNN (NCHW,
 * f32). A transposed convolution is the adjoint of a convolution, so each
 * of its passes is one of the three convolution passes with the roles of
 * input and output swapped:
 *   conv:    fwd = Forward,        dx = BackwardData, dw = BackwardFilter
 *   deconv:  fwd = BackwardData,   dx = Forward,      dw = BackwardFilter
 *            (the conv "input" is the deconv output, its filter [K=Cin,
 *            C=Cout, kh, kw] is exactly the deconv weight layout).
 * Algorithms come from cuDNN's heuristics (no timing runs, so the choice is
 * reproducible), filtered by gf_cuda_pick_algo: deterministic ones only
 * under ctx->deterministic, FMA math unless ctx->allow_tf32; cached per
 * shape in the ctx. Biases and their gradients use the fixed-order kernels
 * of cuda_kernels.cu. */
#include "cuda_backend.h"

enum { K_FWD = 1, K_BWD_DATA, K_BWD_FILTER };

/* Geometry of one convolution: input [n,c,h,w] -> output [n,k,oh,ow] with
 * filter [k,c/groups,r,s]. groups > 1: the batched convolution (ops.h
 * gf_conv2d_batched_*) of `groups` samples as one sample (n = 1) of that
 * many groups: x [G,Cin,H,W] is [1,G Cin,H,W] in memory, y [G,Cout,..]
 * [1,G Cout,..], and wmod [G Cout,Cin,r,s] is cuDNN's grouped filter. */
typedef struct geom {
  int n, c, h, w, k, r, s, oh, ow, groups;
  const gf_conv_params *p;
} geom;

static gf_status to_int(int64_t v, int *out, gf_err *err) {
  if (v < 0 || v > INT32_MAX)
    return gf_fail(err, GF_EUNSUPPORTED, "cuda: conv dim %lld beyond int32",
                   (long long)v);
  *out = (int)v;
  return GF_OK;
}

/* in: the conv input tensor, out: the conv output tensor, f: the filter
 * tensor laid out [k, c, r, s] ([groups k, c, r, s] for groups > 1, in
 * and out then [groups, c, ...] and [groups, k, ...]). */
static gf_status make_geom(const gf_tensor *in, const gf_tensor *out,
                           const gf_tensor *f, const gf_conv_params *p,
                           int64_t groups, geom *g, gf_err *err) {
  gf_status st;
  if ((st = to_int(groups, &g->groups, err)) ||
      (st = to_int(groups > 1 ? 1 : in->shape[0], &g->n, err)) ||
      (st = to_int(groups * in->shape[1], &g->c, err)) ||
      (st = to_int(in->shape[2], &g->h, err)) ||
      (st = to_int(in->shape[3], &g->w, err)) ||
      (st = to_int(groups * out->shape[1], &g->k, err)) ||
      (st = to_int(out->shape[2], &g->oh, err)) ||
      (st = to_int(out->shape[3], &g->ow, err)) ||
      (st = to_int(f->shape[2], &g->r, err)) ||
      (st = to_int(f->shape[3], &g->s, err)))
    return st;
  g->p = p;
  return GF_OK;
}

static int math_for(const gf_ctx *ctx) {
  return ctx->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

/* Sets xd (input), yd (output), wd (filter), cd (conv) for g. */
static gf_status set_descs(gf_ctx *ctx, const geom *g, gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  DNN_TRY(cudnnSetTensor4dDescriptor(s->xd, CUDNN_TENSOR_NCHW,
                                     CUDNN_DATA_FLOAT, g->n, g->c, g->h,
                                     g->w));
  DNN_TRY(cudnnSetTensor4dDescriptor(s->yd, CUDNN_TENSOR_NCHW,
                                     CUDNN_DATA_FLOAT, g->n, g->k, g->oh,
                                     g->ow));
  DNN_TRY(cudnnSetFilter4dDescriptor(s->wd, CUDNN_DATA_FLOAT,
                                     CUDNN_TENSOR_NCHW, g->k,
                                     g->c / g->groups, g->r, g->s));
  DNN_TRY(cudnnSetConvolution2dDescriptor(
      s->cd, g->p->pad[0], g->p->pad[1], g->p->stride[0], g->p->stride[1], 1,
      1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  /* every op sets it: the descriptor is the ctx's, shared by all convs */
  DNN_TRY(cudnnSetConvolutionGroupCount(s->cd, g->groups));
  DNN_TRY(cudnnSetConvolutionMathType(s->cd, (cudnnMathType_t)math_for(ctx)));
  return GF_OK;
}

#define CAND_MAX 16

/* Math types that run f32 data on tensor cores (TF32); DEFAULT_MATH
 * entries are run with FMA_MATH when TF32 is off (see prepare). */
static int is_tensor_op(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH ||
         m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* Heuristic candidates for kind, as gf_cuda_algo_cand, best first. */
static gf_status candidates(gf_ctx *ctx, int kind, gf_cuda_algo_cand *c,
                            int *n, gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  int got = 0;
  *n = 0;
  if (kind == K_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CAND_MAX];
    DNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(s->dnn, s->xd, s->wd,
                                                   s->cd, s->yd, CAND_MAX,
                                                   &got, perf));
    for (int i = 0; i < got; i++)
      c[i] = (gf_cuda_algo_cand){(int)perf[i].algo,
                                 perf[i].status == CUDNN_STATUS_SUCCESS,
                                 perf[i].determinism == CUDNN_DETERMINISTIC,
                                 is_tensor_op(perf[i].mathType),
                                 perf[i].memory};
  } else if (kind == K_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CAND_MAX];
    DNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        s->dnn, s->wd, s->yd, s->cd, s->xd, CAND_MAX, &got, perf));
    for (int i = 0; i < got; i++)
      c[i] = (gf_cuda_algo_cand){(int)perf[i].algo,
                                 perf[i].status == CUDNN_STATUS_SUCCESS,
                                 perf[i].determinism == CUDNN_DETERMINISTIC,
                                 is_tensor_op(perf[i].mathType),
                                 perf[i].memory};
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CAND_MAX];
    DNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        s->dnn, s->xd, s->yd, s->cd, s->wd, CAND_MAX, &got, perf));
    for (int i = 0; i < got; i++)
      c[i] = (gf_cuda_algo_cand){(int)perf[i].algo,
                                 perf[i].status == CUDNN_STATUS_SUCCESS,
                                 perf[i].determinism == CUDNN_DETERMINISTIC,
                                 is_tensor_op(perf[i].mathType),
                                 perf[i].memory};
  }
  *n = got < CAND_MAX ? got : CAND_MAX;
  return GF_OK;
}

/* Workspace of algo for kind with the descriptors as set. */
static gf_status ws_size(gf_ctx *ctx, int kind, int algo, size_t *bytes,
                         gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  if (kind == K_FWD)
    DNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(
        s->dnn, s->xd, s->wd, s->cd, s->yd, (cudnnConvolutionFwdAlgo_t)algo,
        bytes));
  else if (kind == K_BWD_DATA)
    DNN_TRY(cudnnGetConvolutionBackwardDataWorkspaceSize(
        s->dnn, s->wd, s->yd, s->cd, s->xd,
        (cudnnConvolutionBwdDataAlgo_t)algo, bytes));
  else
    DNN_TRY(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        s->dnn, s->xd, s->yd, s->cd, s->wd,
        (cudnnConvolutionBwdFilterAlgo_t)algo, bytes));
  return GF_OK;
}

/* Sets the descriptors for g and picks (or recalls) the algorithm for
 * kind; the workspace it needs is made available in *ws. */
static gf_status prepare(gf_ctx *ctx, int kind, const geom *g,
                         gf_cuda_choice *out, void **ws, gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  gf_status st = set_descs(ctx, g, err);
  if (st) return st;
  int64_t v[] = {g->n, g->c, g->h, g->w, g->k, g->r, g->s, g->oh, g->ow,
                 g->p->pad[0], g->p->pad[1], g->p->stride[0],
                 g->p->stride[1], ctx->deterministic ? 1 : 0,
                 ctx->allow_tf32 ? 1 : 0, g->groups};
  gf_cuda_key key;
  gf_cuda_key_make(&key, kind, v, (int)(sizeof v / sizeof v[0]));
  const gf_cuda_choice *hit = gf_cuda_cache_find(&s->algos, &key);
  gf_cuda_choice ch = {0};
  if (hit) {
    ch = *hit;
  } else {
    gf_cuda_algo_cand cand[CAND_MAX];
    int n = 0;
    if ((st = candidates(ctx, kind, cand, &n, err))) return st;
    int i = gf_cuda_pick_algo(cand, n, ctx->deterministic != 0,
                              ctx->allow_tf32 != 0, s->ws_max);
    ch.key = key;
    if (i >= 0) {
      ch.algo = cand[i].algo;
      /* TF32 off: FMA math whatever the heuristics listed (it forbids
       * TF32 for f32 data); on: the math type they listed. */
      ch.math = !ctx->allow_tf32 ? CUDNN_FMA_MATH
                : cand[i].tensor_op ? CUDNN_TENSOR_OP_MATH
                                    : CUDNN_DEFAULT_MATH;
    }
    /* The pick must also run with the chosen math type; otherwise (or with
     * no pick) implicit GEMM: deterministic, FMA, little workspace. The
     * probe reports to no one: a refusal here is not an error. */
    bool usable = i >= 0 &&
                  cudnnSetConvolutionMathType(s->cd, (cudnnMathType_t)ch.math) ==
                      CUDNN_STATUS_SUCCESS &&
                  ws_size(ctx, kind, ch.algo, &ch.ws_bytes, NULL) == GF_OK;
    if (!usable) {
      ch.algo = kind == K_FWD ? (int)CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
                : kind == K_BWD_DATA ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
                                     : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
      ch.math = CUDNN_FMA_MATH;
      DNN_TRY(cudnnSetConvolutionMathType(s->cd, (cudnnMathType_t)ch.math));
      if ((st = ws_size(ctx, kind, ch.algo, &ch.ws_bytes, err))) return st;
    }
    gf_cuda_cache_put(&s->algos, &ch);
  }
  DNN_TRY(cudnnSetConvolutionMathType(s->cd, (cudnnMathType_t)ch.math));
  *out = ch;
  *ws = NULL;
  if (ch.ws_bytes) return gf_cuda_ws(ctx, ch.ws_bytes, ws, err);
  return GF_OK;
}

/* out = conv(in, f) (+ beta out). */
static gf_status run_fwd(gf_ctx *ctx, const geom *g, const void *in,
                         const void *f, void *out, float beta, gf_err *err) {
  gf_cuda_choice ch;
  void *ws;
  gf_status st = prepare(ctx, K_FWD, g, &ch, &ws, err);
  if (st) return st;
  gf_cuda_state *s = gf_cu(ctx);
  const float one = 1.0f;
  DNN_TRY(cudnnConvolutionForward(s->dnn, &one, s->xd, in, s->wd, f, s->cd,
                                  (cudnnConvolutionFwdAlgo_t)ch.algo, ws,
                                  ch.ws_bytes, &beta, s->yd, out));
  return GF_OK;
}

/* din = conv^T(dout, f) (+ beta din). */
static gf_status run_bwd_data(gf_ctx *ctx, const geom *g, const void *f,
                              const void *dout, void *din, float beta,
                              gf_err *err) {
  gf_cuda_choice ch;
  void *ws;
  gf_status st = prepare(ctx, K_BWD_DATA, g, &ch, &ws, err);
  if (st) return st;
  gf_cuda_state *s = gf_cu(ctx);
  const float one = 1.0f;
  DNN_TRY(cudnnConvolutionBackwardData(
      s->dnn, &one, s->wd, f, s->yd, dout, s->cd,
      (cudnnConvolutionBwdDataAlgo_t)ch.algo, ws, ch.ws_bytes, &beta, s->xd,
      din));
  return GF_OK;
}

/* df = d conv / d f from (in, dout) (+ beta df). */
static gf_status run_bwd_filter(gf_ctx *ctx, const geom *g, const void *in,
                                const void *dout, void *df, float beta,
                                gf_err *err) {
  gf_cuda_choice ch;
  void *ws;
  gf_status st = prepare(ctx, K_BWD_FILTER, g, &ch, &ws, err);
  if (st) return st;
  gf_cuda_state *s = gf_cu(ctx);
  const float one = 1.0f;
  DNN_TRY(cudnnConvolutionBackwardFilter(
      s->dnn, &one, s->xd, in, s->yd, dout, s->cd,
      (cudnnConvolutionBwdFilterAlgo_t)ch.algo, ws, ch.ws_bytes, &beta,
      s->wd, df));
  return GF_OK;
}

static gf_status add_bias(gf_ctx *ctx, gf_tensor *y, const gf_tensor *b,
                          gf_err *err) {
  if (!b) return GF_OK;
  CU_TRY(gf_cuk_bias_add(gf_cu(ctx)->stream, y->data, b->data, y->shape[0],
                         y->shape[1], y->shape[2] * y->shape[3]));
  return GF_OK;
}

static gf_status bias_grad(gf_ctx *ctx, const gf_tensor *dy, gf_tensor *db,
                           gf_accum accum, gf_err *err) {
  if (!db) return GF_OK;
  CU_TRY(gf_cuk_bias_grad(gf_cu(ctx)->stream, dy->data, dy->shape[0],
                          dy->shape[1], dy->shape[2] * dy->shape[3],
                          db->data, accum == GF_ACCUMULATE));
  return GF_OK;
}

/* An empty batch (N = 0, which the op layer accepts; cuDNN descriptors do
 * not): nothing to compute, and overwritten parameter gradients are 0. */
static gf_status empty_bwd(gf_ctx *ctx, gf_tensor *dw, gf_tensor *db,
                           gf_accum accum, gf_err *err) {
  if (accum == GF_ACCUMULATE) return GF_OK;
  cudaStream_t st = gf_cu(ctx)->stream;
  if (dw) CU_TRY(cudaMemsetAsync(dw->data, 0, gf_tensor_nbytes(dw), st));
  if (db) CU_TRY(cudaMemsetAsync(db->data, 0, gf_tensor_nbytes(db), st));
  return GF_OK;
}

gf_status gf_cuda_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *b,
                             const gf_conv_params *p, gf_tensor *y,
                             gf_err *err) {
  CU_ENTER();
  if (x->shape[0] == 0) return GF_OK;
  geom g = {0};
  GF_TRY(make_geom(x, y, w, p, 1, &g, err));
  GF_TRY(run_fwd(ctx, &g, x->data, w->data, y->data, 0.0f, err));
  return add_bias(ctx, y, b, err);
}

gf_status gf_cuda_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *dy,
                             const gf_conv_params *p, gf_tensor *dx,
                             gf_tensor *dw, gf_tensor *db, gf_accum accum,
                             gf_err *err) {
  CU_ENTER();
  if (x->shape[0] == 0) return empty_bwd(ctx, dw, db, accum, err);
  geom g = {0};
  GF_TRY(make_geom(x, dy, w, p, 1, &g, err));
  if (dx) GF_TRY(run_bwd_data(ctx, &g, w->data, dy->data, dx->data, 0.0f, err));
  if (dw)
    GF_TRY(run_bwd_filter(ctx, &g, x->data, dy->data, dw->data,
                       accum == GF_ACCUMULATE ? 1.0f : 0.0f, err));
  return bias_grad(ctx, dy, db, accum, err);
}

gf_status gf_cuda_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *w, const gf_tensor *b,
                               const gf_conv_params *p, gf_tensor *y,
                               gf_err *err) {
  CU_ENTER();
  if (x->shape[0] == 0) return GF_OK;
  geom g = {0}; /* conv from y (Cout channels) to x (Cin channels) */
  GF_TRY(make_geom(y, x, w, p, 1, &g, err));
  GF_TRY(run_bwd_data(ctx, &g, w->data, x->data, y->data, 0.0f, err));
  return add_bias(ctx, y, b, err);
}

gf_status gf_cuda_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *w, const gf_tensor *dy,
                               const gf_conv_params *p, gf_tensor *dx,
                               gf_tensor *dw, gf_tensor *db, gf_accum accum,
                               gf_err *err) {
  CU_ENTER();
  if (x->shape[0] == 0) return empty_bwd(ctx, dw, db, accum, err);
  geom g = {0};
  GF_TRY(make_geom(dy, x, w, p, 1, &g, err));
  if (dx) GF_TRY(run_fwd(ctx, &g, dy->data, w->data, dx->data, 0.0f, err));
  if (dw)
    GF_TRY(run_bwd_filter(ctx, &g, dy->data, x->data, dw->data,
                       accum == GF_ACCUMULATE ? 1.0f : 0.0f, err));
  return bias_grad(ctx, dy, db, accum, err);
}

/* The batched convolution: one grouped convolution of x->shape[0] groups
 * (ops.c passes N >= 1). dwmod is overwritten. */
gf_status gf_cuda_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *wmod,
                                     const gf_conv_params *p, gf_tensor *y,
                                     gf_err *err) {
  CU_ENTER();
  geom g = {0};
  GF_TRY(make_geom(x, y, wmod, p, x->shape[0], &g, err));
  return run_fwd(ctx, &g, x->data, wmod->data, y->data, 0.0f, err);
}

gf_status gf_cuda_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *wmod,
                                     const gf_tensor *dy,
                                     const gf_conv_params *p, gf_tensor *dx,
                                     gf_tensor *dwmod, gf_err *err) {
  CU_ENTER();
  geom g = {0};
  GF_TRY(make_geom(x, dy, wmod, p, x->shape[0], &g, err));
  if (dx)
    GF_TRY(run_bwd_data(ctx, &g, wmod->data, dy->data, dx->data, 0.0f, err));
  if (dwmod)
    GF_TRY(run_bwd_filter(ctx, &g, x->data, dy->data, dwmod->data, 0.0f,
                          err));
  return GF_OK;
}
