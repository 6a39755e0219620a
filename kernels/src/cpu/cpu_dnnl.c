/* cpu_dnnl.c - the CPU ops that run as oneDNN primitives: linear (inner
 * product), conv2d, transposed conv2d (deconvolution) and batch norm, forward
 * and backward. Plain NCHW / PyTorch weight layouts are given to oneDNN
 * explicitly, so no reorders happen; primitives are cached per shape in the
 * ctx (cpu_ctx.c). Argument checking happened in ops.c. */
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_conv.h"

static void key_init(gf_prim_key *k, int kind, int n, const int64_t *v) {
  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->n = n;
  memcpy(k->v, v, sizeof(int64_t) * (size_t)n);
}

/* Where a parameter-gradient primitive writes: straight into the caller's
 * tensor when overwriting, else into ctx scratch (at *tmp_off) that is added
 * to the tensor afterwards. */
static float *grad_target(gf_tensor *g, gf_accum accum, float *tmp,
                          size_t *tmp_off) {
  if (g && accum == GF_OVERWRITE) return (float *)g->data;
  float *t = tmp + *tmp_off;
  *tmp_off += (size_t)(g ? gf_tensor_numel(g) : 0);
  return t;
}

/* ---- linear ---------------------------------------------------------------- */

typedef struct lin_mds {
  dnnl_memory_desc_t src, wt, bias, dst;
} lin_mds;

static gf_status lin_mds_init(lin_mds *m, int64_t N, int64_t IC, int64_t OC,
                              gf_err *err) {
  int64_t s[2] = {N, IC}, w[2] = {OC, IC}, d[2] = {N, OC};
  DNNL_TRY(gf_md(&m->src, 2, s, dnnl_nc));
  DNNL_TRY(gf_md(&m->wt, 2, w, dnnl_oi));
  DNNL_TRY(gf_md(&m->bias, 1, &OC, dnnl_a));
  DNNL_TRY(gf_md(&m->dst, 2, d, dnnl_nc));
  return GF_OK;
}

gf_status gf_cpu_linear_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            gf_tensor *y, gf_err *err) {
  /* frozen inference: oneDNN's GEMM sums one row in another order than
   * several, so the rows go through a kernel of ours */
  if (ctx->frozen_batch > 0)
    return gf_cpu_linear_fwd_rows(ctx, x, w, b, y, err);
  int64_t N = x->shape[0], IC = x->shape[1], OC = w->shape[0];
  int64_t kv[4] = {N, IC, OC, b != NULL};
  gf_prim_key key;
  key_init(&key, GF_PK_LIN_FWD, 4, kv);
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    lin_mds m;
    gf_status rc = lin_mds_init(&m, N, IC, OC, err);
    if (rc) return rc;
    dnnl_inner_product_desc_t d;
    DNNL_TRY(dnnl_inner_product_forward_desc_init(
        &d, dnnl_forward_training, &m.src, &m.wt, b ? &m.bias : NULL, &m.dst));
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                   DNNL_ARG_BIAS};
    dnnl_memory_desc_t mds[4] = {m.src, m.wt, m.dst, m.bias};
    int prev = gf_cpu_threads_begin(ctx);
    rc = gf_cpu_prim_add(ctx, &key, &d, NULL, b ? 4 : 3, args, mds, &p, err);
    gf_cpu_threads_end(prev);
    if (rc) return rc;
  }
  void *ptr[4] = {x->data, w->data, y->data, b ? b->data : NULL};
  return gf_cpu_prim_exec(ctx, p, ptr, err);
}

gf_status gf_cpu_linear_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *dy,
                            gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                            gf_accum accum, gf_err *err) {
  int64_t N = x->shape[0], IC = x->shape[1], OC = w->shape[0];
  lin_mds m;
  gf_status rc = lin_mds_init(&m, N, IC, OC, err);
  if (rc) return rc;
  if (dx) {
    int64_t kv[3] = {N, IC, OC};
    gf_prim_key key;
    key_init(&key, GF_PK_LIN_BWD_D, 3, kv);
    gf_prim *p = gf_cpu_prim_find(ctx, &key);
    if (!p) {
      dnnl_inner_product_desc_t fd, d;
      dnnl_primitive_desc_t hint = NULL;
      DNNL_TRY(dnnl_inner_product_forward_desc_init(
          &fd, dnnl_forward_training, &m.src, &m.wt, NULL, &m.dst));
      DNNL_TRY(dnnl_inner_product_backward_data_desc_init(&d, &m.src, &m.wt,
                                                          &m.dst));
      int args[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
      dnnl_memory_desc_t mds[3] = {m.dst, m.wt, m.src};
      int prev = gf_cpu_threads_begin(ctx);
      rc = gf_cpu_pd_create(ctx, &fd, NULL, &hint, err);
      if (rc == GF_OK)
        rc = gf_cpu_prim_add(ctx, &key, &d, hint, 3, args, mds, &p, err);
      gf_cpu_threads_end(prev);
      if (hint) dnnl_primitive_desc_destroy(hint);
      if (rc) return rc;
    }
    void *ptr[3] = {dy->data, w->data, dx->data};
    rc = gf_cpu_prim_exec(ctx, p, ptr, err);
    if (rc) return rc;
  }
  if (!dw) {
    if (db) gf_cpu_bias_grad(ctx, dy->data, N, OC, 1, db->data, accum);
    return GF_OK;
  }
  bool with_b = db != NULL;
  int64_t kv[4] = {N, IC, OC, with_b};
  gf_prim_key key;
  key_init(&key, GF_PK_LIN_BWD_W, 4, kv);
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    dnnl_inner_product_desc_t fd, d;
    dnnl_primitive_desc_t hint = NULL;
    DNNL_TRY(dnnl_inner_product_forward_desc_init(
        &fd, dnnl_forward_training, &m.src, &m.wt, with_b ? &m.bias : NULL,
        &m.dst));
    DNNL_TRY(dnnl_inner_product_backward_weights_desc_init(
        &d, &m.src, &m.wt, with_b ? &m.bias : NULL, &m.dst));
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS,
                   DNNL_ARG_DIFF_BIAS};
    dnnl_memory_desc_t mds[4] = {m.src, m.dst, m.wt, m.bias};
    int prev = gf_cpu_threads_begin(ctx);
    rc = gf_cpu_pd_create(ctx, &fd, NULL, &hint, err);
    if (rc == GF_OK)
      rc = gf_cpu_prim_add(ctx, &key, &d, hint, with_b ? 4 : 3, args, mds,
                           &p, err);
    gf_cpu_threads_end(prev);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (rc) return rc;
  }
  float *tmp = NULL;
  size_t off = 0;
  if (accum == GF_ACCUMULATE) {
    tmp = gf_cpu_tmp(ctx, (size_t)(OC * IC + OC), err);
    if (!tmp) return err ? err->code : GF_ENOMEM;
  }
  float *wt = grad_target(dw, accum, tmp, &off);
  float *bt = with_b ? grad_target(db, accum, tmp, &off) : NULL;
  void *ptr[4] = {x->data, dy->data, wt, bt};
  rc = gf_cpu_prim_exec(ctx, p, ptr, err);
  if (rc) return rc;
  if (accum == GF_ACCUMULATE) {
    gf_cpu_add_inplace(ctx, dw->data, wt, (size_t)(OC * IC));
    if (with_b) gf_cpu_add_inplace(ctx, db->data, bt, (size_t)OC);
  }
  return GF_OK;
}

/* ---- conv2d and transposed conv2d -------------------------------------------
 * oneDNN's deconvolution is the exact transpose of its convolution and takes
 * weights {OC, IC, kh, kw}; PyTorch's ConvTranspose2d weight [Cin, Cout, kh,
 * kw] is that tensor in iohw memory order, so it is passed as is.
 * The batched convolution (groups G > 1, not transposed) is one grouped
 * convolution of one sample: x [G, Cin, H, W] and y [G, Cout, OH, OW] are,
 * in memory, [1, G Cin, H, W] and [1, G Cout, OH, OW], and w [G Cout, Cin,
 * kh, kw] is oneDNN's goihw {G, Cout, Cin, kh, kw}. */

static gf_status conv_geom_init(conv_geom *g, bool transposed, bool any,
                                int64_t groups, const gf_tensor *x,
                                const gf_tensor *w, const gf_tensor *y,
                                const gf_conv_params *p, gf_err *err) {
  memset(g, 0, sizeof *g);
  g->transposed = transposed;
  g->groups = groups;
  g->N = groups > 1 ? 1 : x->shape[0];
  g->Cin = groups * x->shape[1];
  g->H = x->shape[2];
  g->W = x->shape[3];
  g->Cout = groups * y->shape[1];
  g->kh = w->shape[2];
  g->kw = w->shape[3];
  g->OH = y->shape[2];
  g->OW = y->shape[3];
  int64_t in[2] = {g->H, g->W}, out[2] = {g->OH, g->OW}, k[2] = {g->kh, g->kw};
  for (int d = 0; d < 2; d++) {
    g->stride[d] = p->stride[d];
    g->pad_l[d] = p->pad[d];
    /* The right/bottom padding that makes oneDNN's size relation exact:
     * conv: (in + l + r - k) / s + 1 = out (rows a strided window skips at
     * the end make r smaller than l); deconv: r = pad - out_pad. */
    if (!transposed)
      g->pad_r[d] = (out[d] - 1) * p->stride[d] + k[d] - in[d] - p->pad[d];
    else
      g->pad_r[d] = (int64_t)p->pad[d] - p->out_pad[d];
  }
  int64_t sd[4] = {g->N, g->Cin, g->H, g->W};
  int64_t wd[5] = {g->Cout, g->Cin, g->kh, g->kw, 0};
  int wn = 4; /* wd's dims */
  dnnl_format_tag_t wtag = transposed ? dnnl_iohw : dnnl_oihw;
  if (groups > 1) {
    int64_t wg[5] = {groups, y->shape[1], x->shape[1], g->kh, g->kw};
    memcpy(wd, wg, sizeof wd);
    wn = 5;
    wtag = dnnl_goihw;
  }
  int64_t dd[4] = {g->N, g->Cout, g->OH, g->OW};
  DNNL_TRY(gf_md(&g->src, 4, sd, dnnl_nchw));
  DNNL_TRY(gf_md(&g->wt, wn, wd, wtag));
  DNNL_TRY(gf_md(&g->bias, 1, &g->Cout, dnnl_a));
  DNNL_TRY(gf_md(&g->dst, 4, dd, dnnl_nchw));
  if (any) {
    DNNL_TRY(gf_md(&g->src_p, 4, sd, dnnl_format_tag_any));
    DNNL_TRY(gf_md(&g->wt_p, wn, wd, dnnl_format_tag_any));
    DNNL_TRY(gf_md(&g->dst_p, 4, dd, dnnl_format_tag_any));
  } else {
    g->src_p = g->src;
    g->wt_p = g->wt;
    g->dst_p = g->dst;
  }
  return GF_OK;
}

static void conv_key(gf_prim_key *k, int kind, const conv_geom *g,
                     bool with_bias) {
  int64_t v[17] = {g->N,        g->Cin,       g->H,        g->W,
                   g->Cout,     g->kh,        g->kw,       g->OH,
                   g->OW,       g->stride[0], g->stride[1], g->pad_l[0],
                   g->pad_l[1], g->pad_r[0],  g->pad_r[1], with_bias,
                   g->groups};
  key_init(k, kind, 17, v);
}

static gf_status conv_fwd(gf_ctx *ctx, bool transposed, int64_t groups,
                          const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *b, const gf_conv_params *cp,
                          gf_tensor *y, gf_err *err) {
  conv_geom g;
  /* Frozen inference runs a layer of fewer than 16 output channels (an
   * image's last layer) on plain layouts: the blocked kernels pad channels
   * to 16, sixteen times the work for a grey image. */
  bool frozen = ctx->frozen_batch > 0;
  bool any = gf_cpu(ctx)->blocked && !(frozen && y->shape[1] < 16);
  gf_status rc = conv_geom_init(&g, transposed, any, groups, x, w, y, cp,
                                err);
  if (rc) return rc;
  bool int8 = frozen && ctx->frozen_int8 == GF_INT8_RUN;
  if (frozen && ctx->frozen_int8 == GF_INT8_CALIBRATE)
    GF_TRY(gf_cpu_range_note(gf_cpu_frozen_of(ctx), w->data, x->data,
                             (size_t)gf_tensor_numel(x), err));
  gf_prim_key key;
  conv_key(&key, transposed ? GF_PK_DECONV_FWD : GF_PK_CONV_FWD, &g, b);
  /* int8 primitives hold their layer's scales, so they belong to one
   * weight buffer; a calibrating ctx's f32 primitives stay apart */
  key.v[key.n++] = int8 ? (int64_t)(intptr_t)w->data : 0;
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    dnnl_convolution_desc_t d;
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                   DNNL_ARG_BIAS};
    dnnl_memory_desc_t mds[4] = {g.src, g.wt, g.dst, g.bias};
    int prev = gf_cpu_threads_begin(ctx);
    if (frozen) {
      dnnl_primitive_desc_t pd = NULL;
      gf_prim_scales rsc[4] = {{0, 0, NULL}, {0, 0, NULL}, {0, 0, NULL},
                               {0, 0, NULL}};
      float *scales = NULL;
      rc = gf_cpu_conv_frozen_pd(ctx, &g, any, w, b != NULL, &d, &pd, rsc,
                                 &scales, err);
      if (rc == GF_OK)
        rc = gf_cpu_prim_add_pd(ctx, &key, pd, b ? 4 : 3, args, mds,
                                scales ? rsc : NULL, &p, err);
      free(scales);
    } else {
      rc = gf_cpu_conv_fwd_desc(&g, b != NULL, dnnl_forward_training, &d, err);
      if (rc == GF_OK)
        rc = gf_cpu_prim_add(ctx, &key, &d, NULL, b ? 4 : 3, args, mds, &p,
                             err);
    }
    gf_cpu_threads_end(prev);
    if (rc) return rc;
  }
  void *ptr[4] = {x->data, w->data, y->data, b ? b->data : NULL};
  return gf_cpu_prim_exec(ctx, p, ptr, err);
}

static gf_status conv_bwd(gf_ctx *ctx, bool transposed, int64_t groups,
                          const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *dy, const gf_conv_params *cp,
                          gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                          gf_accum accum, gf_err *err) {
  conv_geom g;
  gf_status rc = conv_geom_init(&g, transposed, gf_cpu(ctx)->blocked, groups,
                                x, w, dy, cp, err);
  if (rc) return rc;
  if (dx) {
    gf_prim_key key;
    conv_key(&key, transposed ? GF_PK_DECONV_BWD_D : GF_PK_CONV_BWD_D, &g,
             false);
    gf_prim *p = gf_cpu_prim_find(ctx, &key);
    if (!p) {
      dnnl_convolution_desc_t fd, d;
      rc = gf_cpu_conv_fwd_desc(&g, false, dnnl_forward_training, &fd, err);
      if (rc) return rc;
      if (transposed)
        DNNL_TRY(dnnl_deconvolution_backward_data_desc_init(
            &d, dnnl_deconvolution_direct, &g.src_p, &g.wt_p, &g.dst_p,
            g.stride, g.pad_l, g.pad_r));
      else
        DNNL_TRY(dnnl_convolution_backward_data_desc_init(
            &d, dnnl_convolution_direct, &g.src_p, &g.wt_p, &g.dst_p,
            g.stride, g.pad_l, g.pad_r));
      int args[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
      dnnl_memory_desc_t mds[3] = {g.dst, g.wt, g.src};
      dnnl_primitive_desc_t hint = NULL;
      int prev = gf_cpu_threads_begin(ctx);
      rc = gf_cpu_pd_create(ctx, &fd, NULL, &hint, err);
      if (rc == GF_OK)
        rc = gf_cpu_prim_add(ctx, &key, &d, hint, 3, args, mds, &p, err);
      gf_cpu_threads_end(prev);
      if (hint) dnnl_primitive_desc_destroy(hint);
      if (rc) return rc;
    }
    void *ptr[3] = {dy->data, w->data, dx->data};
    rc = gf_cpu_prim_exec(ctx, p, ptr, err);
    if (rc) return rc;
  }
  if (!dw) {
    if (db)
      gf_cpu_bias_grad(ctx, dy->data, g.N, g.Cout, g.OH * g.OW, db->data,
                       accum);
    return GF_OK;
  }
  bool with_b = db != NULL;
  gf_prim_key key;
  conv_key(&key, transposed ? GF_PK_DECONV_BWD_W : GF_PK_CONV_BWD_W, &g,
           with_b);
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    dnnl_convolution_desc_t fd, d;
    rc = gf_cpu_conv_fwd_desc(&g, with_b, dnnl_forward_training, &fd, err);
    if (rc) return rc;
    if (transposed)
      DNNL_TRY(dnnl_deconvolution_backward_weights_desc_init(
          &d, dnnl_deconvolution_direct, &g.src_p, &g.wt_p,
          with_b ? &g.bias : NULL, &g.dst_p, g.stride, g.pad_l, g.pad_r));
    else
      DNNL_TRY(dnnl_convolution_backward_weights_desc_init(
          &d, dnnl_convolution_direct, &g.src_p, &g.wt_p,
          with_b ? &g.bias : NULL, &g.dst_p, g.stride, g.pad_l, g.pad_r));
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS,
                   DNNL_ARG_DIFF_BIAS};
    dnnl_memory_desc_t mds[4] = {g.src, g.dst, g.wt, g.bias};
    dnnl_primitive_desc_t hint = NULL;
    int prev = gf_cpu_threads_begin(ctx);
    rc = gf_cpu_pd_create(ctx, &fd, NULL, &hint, err);
    if (rc == GF_OK)
      rc = gf_cpu_prim_add(ctx, &key, &d, hint, with_b ? 4 : 3, args, mds,
                           &p, err);
    gf_cpu_threads_end(prev);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (rc) return rc;
  }
  size_t wn = (size_t)gf_tensor_numel(w);
  float *tmp = NULL;
  size_t off = 0;
  if (accum == GF_ACCUMULATE) {
    tmp = gf_cpu_tmp(ctx, wn + (size_t)g.Cout, err);
    if (!tmp) return err ? err->code : GF_ENOMEM;
  }
  float *wt = grad_target(dw, accum, tmp, &off);
  float *bt = with_b ? grad_target(db, accum, tmp, &off) : NULL;
  void *ptr[4] = {x->data, dy->data, wt, bt};
  rc = gf_cpu_prim_exec(ctx, p, ptr, err);
  if (rc) return rc;
  if (accum == GF_ACCUMULATE) {
    gf_cpu_add_inplace(ctx, dw->data, wt, wn);
    if (with_b) gf_cpu_add_inplace(ctx, db->data, bt, (size_t)g.Cout);
  }
  return GF_OK;
}

gf_status gf_cpu_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            const gf_conv_params *p, gf_tensor *y,
                            gf_err *err) {
  return conv_fwd(ctx, false, 1, x, w, b, p, y, err);
}

gf_status gf_cpu_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *dy,
                            const gf_conv_params *p, gf_tensor *dx,
                            gf_tensor *dw, gf_tensor *db, gf_accum accum,
                            gf_err *err) {
  return conv_bwd(ctx, false, 1, x, w, dy, p, dx, dw, db, accum, err);
}

gf_status gf_cpu_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *w, const gf_tensor *b,
                              const gf_conv_params *p, gf_tensor *y,
                              gf_err *err) {
  return conv_fwd(ctx, true, 1, x, w, b, p, y, err);
}

gf_status gf_cpu_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *w, const gf_tensor *dy,
                              const gf_conv_params *p, gf_tensor *dx,
                              gf_tensor *dw, gf_tensor *db, gf_accum accum,
                              gf_err *err) {
  return conv_bwd(ctx, true, 1, x, w, dy, p, dx, dw, db, accum, err);
}

/* Batched (per-sample weights): x [N,Cin,H,W], wmod [N Cout,Cin,kh,kw] as
 * one grouped convolution of N groups; N = 1 is a plain convolution. */
gf_status gf_cpu_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *wmod,
                                    const gf_conv_params *p, gf_tensor *y,
                                    gf_err *err) {
  if (ctx->frozen_batch > 0)
    return gf_fail(err, GF_EUNSUPPORTED, "conv2d_batched_fwd: not in frozen "
                   "inference (frozen weights are laid out once per address; "
                   "wmod changes every pass)");
  return conv_fwd(ctx, false, x->shape[0], x, wmod, NULL, p, y, err);
}

gf_status gf_cpu_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *wmod, const gf_tensor *dy,
                                    const gf_conv_params *p, gf_tensor *dx,
                                    gf_tensor *dwmod, gf_err *err) {
  return conv_bwd(ctx, false, x->shape[0], x, wmod, dy, p, dx, dwmod, NULL,
                  GF_OVERWRITE, err);
}

/* ---- batch norm -------------------------------------------------------------
 * x is seen as {N, C, S, 1} in nchw (S = H*W, 1 for BatchNorm1d). oneDNN
 * computes the batch mean and biased variance; the running statistics are
 * updated here, in double, exactly as PyTorch's CPU kernel does. */

typedef struct bn_geom {
  int64_t N, C, S;
  dnnl_memory_desc_t data, stat;
} bn_geom;

static gf_status bn_geom_init(bn_geom *g, const gf_tensor *x, gf_err *err) {
  g->N = x->shape[0];
  g->C = x->shape[1];
  g->S = x->ndim == 4 ? x->shape[2] * x->shape[3] : 1;
  int64_t dd[4] = {g->N, g->C, g->S, 1};
  DNNL_TRY(gf_md(&g->data, 4, dd, dnnl_nchw));
  DNNL_TRY(gf_md(&g->stat, 1, &g->C, dnnl_a));
  return GF_OK;
}

static int64_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (int64_t)u;
}

static void bn_key(gf_prim_key *k, int kind, const bn_geom *g, unsigned flags,
                   float eps) {
  int64_t v[5] = {g->N, g->C, g->S, (int64_t)flags, float_bits(eps)};
  key_init(k, kind, 5, v);
}

static gf_status bn_fwd_train_prim(gf_ctx *ctx, const bn_geom *g,
                                   unsigned flags, float eps, gf_prim **out,
                                   gf_err *err) {
  gf_prim_key key;
  bn_key(&key, GF_PK_BN_FWD_TRAIN, g, flags, eps);
  *out = gf_cpu_prim_find(ctx, &key);
  if (*out) return GF_OK;
  dnnl_batch_normalization_desc_t d;
  DNNL_TRY(dnnl_batch_normalization_forward_desc_init(
      &d, dnnl_forward_training, &g->data, eps, flags));
  int args[6] = {DNNL_ARG_SRC,      DNNL_ARG_DST,   DNNL_ARG_MEAN,
                 DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
  dnnl_memory_desc_t mds[6] = {g->data, g->data, g->stat,
                               g->stat, g->stat, g->stat};
  int prev = gf_cpu_threads_begin(ctx);
  gf_status rc = gf_cpu_prim_add(ctx, &key, &d, NULL, flags ? 6 : 4, args,
                                 mds, out, err);
  gf_cpu_threads_end(prev);
  return rc;
}

gf_status gf_cpu_bn_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *beta,
                              gf_tensor *running_mean, gf_tensor *running_var,
                              const gf_bn_params *bp, gf_tensor *y,
                              gf_tensor *save_mean, gf_tensor *save_var,
                              gf_err *err) {
  bn_geom g;
  gf_status rc = bn_geom_init(&g, x, err);
  if (rc) return rc;
  unsigned flags = gamma ? (dnnl_use_scale | dnnl_use_shift) : 0u;
  gf_prim *p = NULL;
  rc = bn_fwd_train_prim(ctx, &g, flags, bp->eps, &p, err);
  if (rc) return rc;
  void *ptr[6] = {x->data,         y->data,
                  save_mean->data, save_var->data,
                  gamma ? gamma->data : NULL, beta ? beta->data : NULL};
  rc = gf_cpu_prim_exec(ctx, p, ptr, err);
  if (rc || !running_mean) return rc;
  const float *mean = save_mean->data, *var = save_var->data;
  float *rm = running_mean->data, *rv = running_var->data;
  double mom = bp->momentum, m = (double)(g.N * g.S);
  for (int64_t c = 0; c < g.C; c++) {
    double unbiased = (double)var[c] * m / (m - 1.0);
    rm[c] = (float)(mom * mean[c] + (1.0 - mom) * rm[c]);
    rv[c] = (float)(mom * unbiased + (1.0 - mom) * rv[c]);
  }
  return GF_OK;
}

gf_status gf_cpu_bn_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *beta,
                              const gf_tensor *running_mean,
                              const gf_tensor *running_var, float eps,
                              gf_tensor *y, gf_err *err) {
  bn_geom g;
  gf_status rc = bn_geom_init(&g, x, err);
  if (rc) return rc;
  unsigned flags = dnnl_use_global_stats |
                   (gamma ? (dnnl_use_scale | dnnl_use_shift) : 0u);
  gf_prim_key key;
  bn_key(&key, GF_PK_BN_FWD_INFER, &g, flags, eps);
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    dnnl_batch_normalization_desc_t d;
    DNNL_TRY(dnnl_batch_normalization_forward_desc_init(
        &d, dnnl_forward_inference, &g.data, eps, flags));
    int args[6] = {DNNL_ARG_SRC,      DNNL_ARG_DST,   DNNL_ARG_MEAN,
                   DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    dnnl_memory_desc_t mds[6] = {g.data, g.data, g.stat,
                                 g.stat, g.stat, g.stat};
    int prev = gf_cpu_threads_begin(ctx);
    rc = gf_cpu_prim_add(ctx, &key, &d, NULL, gamma ? 6 : 4, args, mds, &p,
                         err);
    gf_cpu_threads_end(prev);
    if (rc) return rc;
  }
  void *ptr[6] = {x->data,           y->data,
                  running_mean->data, running_var->data,
                  gamma ? gamma->data : NULL, beta ? beta->data : NULL};
  return gf_cpu_prim_exec(ctx, p, ptr, err);
}

gf_status gf_cpu_bn_bwd(gf_ctx *ctx, const gf_tensor *x,
                        const gf_tensor *gamma, const gf_tensor *save_mean,
                        const gf_tensor *save_var, float eps,
                        const gf_tensor *dy, gf_tensor *dx, gf_tensor *dgamma,
                        gf_tensor *dbeta, gf_accum accum, gf_err *err) {
  bn_geom g;
  gf_status rc = bn_geom_init(&g, x, err);
  if (rc) return rc;
  bool affine = gamma != NULL;
  unsigned flags = affine ? (dnnl_use_scale | dnnl_use_shift) : 0u;
  gf_prim_key key;
  bn_key(&key, GF_PK_BN_BWD, &g, flags, eps);
  gf_prim *p = gf_cpu_prim_find(ctx, &key);
  if (!p) {
    gf_prim *fwd = NULL; /* the hint; cached too, forward runs it anyway */
    rc = bn_fwd_train_prim(ctx, &g, flags, eps, &fwd, err);
    if (rc) return rc;
    dnnl_batch_normalization_desc_t d;
    DNNL_TRY(dnnl_batch_normalization_backward_desc_init(
        &d, affine ? dnnl_backward : dnnl_backward_data, &g.data, &g.data,
        eps, flags));
    /* oneDNN 2.6 lists SHIFT as an input of the backward too, although the
     * gradient does not depend on it; gamma's buffer stands in for it. */
    int args[9] = {DNNL_ARG_SRC,      DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,
                   DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC,   DNNL_ARG_SCALE,
                   DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_SHIFT};
    dnnl_memory_desc_t mds[9] = {g.data, g.stat, g.stat, g.data, g.data,
                                 g.stat, g.stat, g.stat, g.stat};
    int prev = gf_cpu_threads_begin(ctx);
    rc = gf_cpu_prim_add(ctx, &key, &d, fwd->pd, affine ? 9 : 5, args, mds,
                         &p, err);
    gf_cpu_threads_end(prev);
    if (rc) return rc;
  }
  size_t need = (dx ? 0 : (size_t)gf_tensor_numel(x));
  if (affine) {
    if (!dgamma || accum == GF_ACCUMULATE) need += (size_t)g.C;
    if (!dbeta || accum == GF_ACCUMULATE) need += (size_t)g.C;
  }
  float *tmp = NULL;
  if (need) {
    tmp = gf_cpu_tmp(ctx, need, err);
    if (!tmp) return err ? err->code : GF_ENOMEM;
  }
  size_t off = 0;
  float *dxt = dx ? (float *)dx->data : tmp;
  if (!dx) off += (size_t)gf_tensor_numel(x);
  float *gt = NULL, *bt = NULL;
  if (affine) {
    if (dgamma && accum == GF_OVERWRITE) gt = dgamma->data;
    else { gt = tmp + off; off += (size_t)g.C; }
    if (dbeta && accum == GF_OVERWRITE) bt = dbeta->data;
    else { bt = tmp + off; off += (size_t)g.C; }
  }
  void *ptr[9] = {x->data,  save_mean->data, save_var->data,
                  dy->data, dxt,
                  affine ? gamma->data : NULL, gt, bt,
                  affine ? gamma->data : NULL};
  rc = gf_cpu_prim_exec(ctx, p, ptr, err);
  if (rc) return rc;
  if (affine && accum == GF_ACCUMULATE) {
    if (dgamma) gf_cpu_add_inplace(ctx, dgamma->data, gt, (size_t)g.C);
    if (dbeta) gf_cpu_add_inplace(ctx, dbeta->data, bt, (size_t)g.C);
  }
  return GF_OK;
}
