/* sg2_internal.h - the layers of gf_sg2_net (gf/sg2_net.h), shared by
 * sg2_params.c (names, arenas, init), sg2_layers.c (the equalized-lr fully
 * connected and conv layers, the modulated synthesis layer),
 * sg2_mapping.c, sg2_synthesis.c and sg2_disc.c.
 *
 * Calls go one way: sg2_net.c (init, free) -> sg2_synthesis.c /
 * sg2_disc.c -> sg2_mapping.c -> sg2_layers.c, sg2_layers_bwd.c ->
 * sg2_params.c.
 *
 * Building runs twice over the same code: a sizing pass (sg2_alloc.dry)
 * adds up the arena bytes, then the real pass carves the views. Layers
 * refer to their parameters by tensor index (net->tensors). Activation
 * views are carved for max_batch samples; a forward of n uses their first
 * n rows (sg2_rows). */
#ifndef GF_SG2_INTERNAL_H
#define GF_SG2_INTERNAL_H

#include "gf/ops.h"
#include "gf/sg2_net.h"

#define SG2_MAX_BLOCKS 9    /* 4 .. 1024 */
#define SG2_MAX_MAP 16      /* map_layers, d_map_layers */

/* Where a build pass puts tensors. */
typedef struct sg2_alloc {
  bool dry;                /* sizing pass: count bytes, carve nothing */
  size_t params, buffers, acts; /* bytes counted (dry) */
} sg2_alloc;

/* A fully connected layer (FullyConnectedLayer). */
typedef struct sg2_fc {
  int w, b;                /* tensor indices (b -1: no bias) */
  int64_t in, out;
  float wgain, bgain;      /* lr_mul / sqrt(in), lr_mul */
  int act;                 /* gf_bias_act_kind */
  float act_gain;          /* 1 (linear) or sqrt(2) (lrelu) */
  gf_tensor ws, bs;        /* scaled weight and bias of the last forward */
  gf_tensor y;             /* [max_batch, out] */
  gf_tensor dy;            /* training: dL/dy, then dL/d(pre-activation) */
  gf_tensor dws, dbs;      /* training: dL/d(scaled weight, bias) */
  gf_tensor ty, tdy;       /* training D, R1 (sg2_r1.c): the tangents of y
                              and of dy */
} sg2_fc;

/* A conv layer of D (Conv2dLayer): k 1 or 3, down 1 or 2. */
typedef struct sg2_conv {
  int w, b;                /* b -1: no bias */
  int64_t cin, cout;
  int k, down, res;        /* res: input side */
  float wgain;             /* 1 / sqrt(cin k k) */
  int act;
  float act_gain, clamp;   /* gain = def_gain * layer gain; clamp < 0 none */
  gf_tensor ws;            /* scaled weight */
  gf_tensor xf;            /* down 2: the filtered input */
  gf_tensor y;             /* [max_batch, cout, res / down, res / down] */
  gf_tensor dy, dws, dxf;  /* training: dL/dy, dL/dws, dL/dxf */
  gf_tensor ty, txf, tdy;  /* training, R1 (sg2_r1.c): the tangents of y,
                              xf and dy */
} sg2_conv;

/* normalize_2nd_moment over D features. */
typedef struct sg2_norm {
  int64_t d;
  gf_tensor wc;            /* constant [1, d, 1, 1] = 1 / sqrt(d) */
  gf_tensor wmod;          /* [max_batch, d, 1, 1] scratch */
  gf_tensor dcoef;         /* [max_batch, 1] = rsqrt(mean(x^2) + eps) */
  gf_tensor y;             /* [max_batch, d] */
  gf_tensor g;             /* training: dL/dwmod = dL/dy sqrt(d) */
} sg2_norm;

/* A modulated layer (SynthesisLayer or ToRGBLayer). */
typedef struct sg2_slayer {
  sg2_fc affine;           /* w -> styles [n, cin] */
  int w, b, noise_const, noise_strength; /* noise -1 for toRGB */
  int64_t cin, cout;
  int k, up, res;          /* res: output side */
  bool torgb;              /* no demodulation, styles * 1/sqrt(cin), linear */
  int w_index;             /* which w of ws */
  int layer_no;            /* index among the noisy layers (noise stream) */
  float clamp;             /* < 0: none */
  gf_tensor wrow;          /* [max_batch, w_dim]: ws[:, w_index] */
  gf_tensor wf;            /* up 2: the flipped weight */
  gf_tensor wmod, dcoef;   /* [max_batch cout, cin, k, k], [max_batch, cout] */
  gf_tensor xu;            /* up 2: the up-sampled input */
  gf_tensor noise;         /* [max_batch, 1, res, res] */
  gf_tensor y;             /* [max_batch, cout, res, res] */
  bool noise_used;         /* the last forward added noise */
  /* training: dL/dy (then dL/d(pre-activation)), dL/dxu, dL/dwmod, the
   * flipped weight's gradient and its flip back, dL/dwrow */
  gf_tensor dy, dxu, dwmod, dwf, dwback, dwrow;
  /* training, path length (sg2_pl.c): tangents of wrow, xu, y and of dy
   * (the layer's own); tangents of wmod (recomputed where needed), dxu,
   * dwmod, dwrow, gws and its tangent, scratch for the second half of a
   * bilinear product (y, dx of the conv input, dwmod): views of the
   * impl's shared pl_s* scratch */
  gf_tensor twrow, txu, ty, tdy;
  gf_tensor twmod, tdxu, tdwmod, tdwrow, gws, gwsdot, tmp_y, tmp_dx, tmp_wm;
} sg2_slayer;

typedef struct sg2_gblock {
  int res;
  int64_t cin, cout;       /* cin 0: the 4x4 block (const input) */
  int p_const;
  sg2_slayer conv0, conv1, torgb;
  gf_tensor x0;            /* b4: const repeated */
  gf_tensor img_up;        /* the previous image up-sampled */
  gf_tensor img;           /* [max_batch, img_channels, res, res] */
  gf_tensor dimg;          /* training: dL/dimg (not the last block's) */
  gf_tensor dx0;           /* training, b4: dL/d(const repeated) */
  gf_tensor dxin;          /* training, k > 0: dL/d(block input) */
  gf_tensor timg, tdimg, tdx0, tdxin; /* training, path length: tangents */
} sg2_gblock;

typedef struct sg2_dblock {
  int res;
  int64_t cin, ctmp, cout; /* cin 0: the first block (fromrgb) */
  sg2_conv fromrgb, conv0, conv1, skip;
  gf_tensor x;             /* output [max_batch, cout, res/2, res/2] */
  gf_tensor dx;            /* training: dL/dx */
  gf_tensor dt0, dt1;      /* training: input gradients of conv0, skip */
  gf_tensor tx, tdx;       /* training, R1: the tangents of x and dx */
} sg2_dblock;

typedef struct sg2_mapping {
  int64_t z_dim, c_dim, embed, w_dim;
  int n_layers;
  sg2_fc embed_fc;
  sg2_fc fc[SG2_MAX_MAP];
  sg2_norm nz, nc;
  gf_tensor x;             /* [max_batch, z_dim + embed] the fc0 input */
  int p_w_avg;             /* -1: none (D) */
  int num_ws;              /* 0: no broadcast (D) */
  gf_tensor ws;            /* [max_batch, num_ws, w_dim] */
  gf_tensor wavg_rep;      /* [1, num_ws w_dim]: w_avg repeated */
  gf_tensor mean;          /* [1, w_dim] */
  gf_tensor zeros_i32;     /* [max_batch] GF_I32 zeros (the mean's sum) */
  int fwd_batch;           /* 0: no forward yet */
  float fwd_psi;           /* psi of the last forward */
  gf_tensor c_in;          /* the last forward's c (a borrowed view) */
  gf_tensor rowid_i32;     /* G: [max_batch num_ws] GF_I32, row (i, j) = i */
  gf_tensor dx, dxc;       /* training, z and c: dL/d(fc0 input), its c part */
} sg2_mapping;

typedef struct gf_sg2_impl {
  gf_tensor filt;          /* [4, 4] setup_filter([1,3,3,1]) */
  gf_tensor perm;          /* [9, 9]: the 3x3 flip as a linear map */
  sg2_mapping map;         /* G's mapping, or D's of c */
  int nblocks;
  sg2_gblock gb[SG2_MAX_BLOCKS]; /* G: 4, 8, ... */
  sg2_dblock db[SG2_MAX_BLOCKS]; /* D: res, res / 2, ..., 8 */
  sg2_conv econv;          /* D epilogue */
  sg2_fc efc, eout;
  gf_tensor mbstd;         /* [max_batch, C + F, 4, 4] */
  gf_tensor logits;        /* [max_batch, 1] */
  gf_tensor one;           /* [1, 1] = 1: a crop is an upfirdn2d by it */
  gf_tensor dws;           /* training, G: [max_batch, num_ws, w_dim] */
  gf_tensor dmbstd, dlg;   /* training, D */
  /* training D, R1 (sg2_r1.c): the tangents of mbstd's output and its
   * gradient, dL/dimg (the R1 gradient), its tangent seed, the penalties */
  gf_tensor tmbstd, tdmbstd, r1_g, r1_t, r1_pen;
  /* training G, path length (sg2_pl.c): the tangent of dws (dloss/dws), per-sample lengths
   * and coefficients */
  gf_tensor pl_v, pl_tdws, pl_len, pl_c;
  gf_tensor pl_swm[5], pl_sy, pl_sx[2], pl_swr; /* shared transients */
  bool no_pgrads;          /* R1's first backward: the D backward leaves
                              every parameter gradient alone */
  gf_tensor img_in;        /* D: the last forward's img (a borrowed view) */
  float *host_noise;       /* owned: host staging of random noise */
  size_t host_noise_n;
  int synth_batch, d_batch; /* last forwards' n; 0 none */
} gf_sg2_impl;

/* ---- sg2_params.c ---- */
/* Adds tensor `name` (printf format) to net: trainable in params (and
 * grads / adam moments when training), else in buffers. Returns its index
 * in *idx. */
gf_status sg2_add_param(gf_sg2_net *net, sg2_alloc *a, bool trainable,
                        gf_param_kind kind, int ndim, const int64_t *shape,
                        int *idx, gf_err *err, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
/* An f32 activation / scratch view in acts (dry: the shape only). */
gf_status sg2_act(gf_sg2_net *net, sg2_alloc *a, gf_tensor *t, int ndim,
                  const int64_t *shape, gf_err *err);
/* sg2_act for a net built for training; else *t is left empty. */
gf_status sg2_dact(gf_sg2_net *net, sg2_alloc *a, gf_tensor *t, int ndim,
                   const int64_t *shape, gf_err *err);
/* A view of t's first n rows (dim 0 = n). */
gf_tensor sg2_rows(const gf_tensor *t, int64_t n);
/* A view of t's memory as shape (same numel or fewer elements from the
 * start, contiguous). */
gf_tensor sg2_as(const gf_tensor *t, int ndim, const int64_t *shape);
/* The value of tensor idx. */
const gf_tensor *sg2_val(const gf_sg2_net *net, int idx);
/* Copies host floats (t's numel) into t, wherever t lives. */
gf_status sg2_put_host(gf_tensor *t, const float *v, gf_err *err);

/* ---- sg2_layers.c ---- */
gf_status sg2_fc_build(gf_sg2_net *net, sg2_alloc *a, sg2_fc *l,
                       const char *name, int64_t in, int64_t out, int act,
                       float lr_mul, gf_err *err);
/* y[:n] = act(x W' + b') (x [n, in]). */
gf_status sg2_fc_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_fc *l,
                     const gf_tensor *x, int64_t n, gf_err *err);
gf_status sg2_conv_build(gf_sg2_net *net, sg2_alloc *a, sg2_conv *l,
                         const char *name, int64_t cin, int64_t cout, int k,
                         int down, int res, bool bias, int act, float gain,
                         float conv_clamp, gf_err *err);
gf_status sg2_conv_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                       const gf_tensor *x, int64_t n, gf_err *err);
gf_status sg2_norm_build(gf_sg2_net *net, sg2_alloc *a, sg2_norm *l,
                         int64_t d, gf_err *err);
/* Fills the norm's constant (after the real build pass). */
gf_status sg2_norm_consts(gf_ctx *ctx, sg2_norm *l, gf_err *err);
/* y[:n] = normalize_2nd_moment(x) (x [n, d]). */
gf_status sg2_norm_fwd(gf_ctx *ctx, sg2_norm *l, const gf_tensor *x,
                       int64_t n, gf_err *err);
gf_status sg2_slayer_build(gf_sg2_net *net, sg2_alloc *a, sg2_slayer *l,
                           const char *name, int64_t cin, int64_t cout,
                           int res, int up, bool torgb, int w_index,
                           int layer_no, gf_err *err);
/* The layer's w rows: row[i] = ws[i, w_index] (add_back: ws[i, w_index]
 * += row[i]) for ws [n, num_ws, w_dim], row [n, w_dim]. */
gf_status sg2_ws_row(gf_sg2_net *net, gf_ctx *ctx, const sg2_slayer *l,
                     const gf_tensor *ws, const gf_tensor *row, int64_t n,
                     bool add_back, gf_err *err);
/* The layer on x [n, cin, res / up, res / up] with w rows of ws. */
gf_status sg2_slayer_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                         const gf_tensor *x, const gf_tensor *ws, int64_t n,
                         gf_sg2_noise noise, uint64_t seed, int64_t step,
                         int64_t sample0, gf_err *err);

/* ---- sg2_layers_bwd.c: the backward of each layer of the last forward,
 * from its dy (filled by the caller); dx (may be NULL) receives dL/dx;
 * parameter gradients are written (GF_OVERWRITE) or added (GF_ACCUMULATE)
 * ---- */
gf_status sg2_fc_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_fc *l,
                     const gf_tensor *x, int64_t n, gf_tensor *dx,
                     gf_accum accum, gf_err *err);
gf_status sg2_conv_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                       const gf_tensor *x, int64_t n, gf_tensor *dx,
                       gf_accum accum, gf_err *err);
/* dx[:n] from dy [n, d] of normalize_2nd_moment(x). */
gf_status sg2_norm_bwd(gf_ctx *ctx, sg2_norm *l, const gf_tensor *x,
                       const gf_tensor *dy, int64_t n, gf_tensor *dx,
                       gf_err *err);
/* dst (+)= src * gain (one f32 rounding); src is scratch (scaled in place
 * when adding). Both are seen as [1, numel]. */
gf_status sg2_scale_into(gf_ctx *ctx, gf_tensor *src, float gain,
                         gf_tensor *dst, gf_accum accum, gf_err *err);
/* The up-sampling layer's weight gradient from the flipped weight's dwf
 * (the flip is its own inverse), written or added as accum says. */
gf_status sg2_flip_into(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                        const gf_tensor *dwf, gf_accum accum, gf_err *err);
/* Adds dL/dws of the layer's w row to dws [n, num_ws, w_dim]. */
gf_status sg2_slayer_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                         const gf_tensor *x, int64_t n, gf_tensor *dx,
                         gf_tensor *dws, gf_accum accum, gf_err *err);

/* ---- sg2_mapping.c ---- */
/* prefix "mapping"; num_ws 0 and no w_avg for D's. */
gf_status sg2_mapping_build(gf_sg2_net *net, sg2_alloc *a, sg2_mapping *m,
                            int64_t z_dim, int64_t c_dim, int64_t w_dim,
                            int n_layers, int num_ws, gf_err *err);
/* The fc layers' output w [n, w_dim] (before the broadcast). */
gf_status sg2_mapping_run(gf_sg2_net *net, gf_ctx *ctx, sg2_mapping *m,
                          const gf_tensor *z, const gf_tensor *c, int64_t n,
                          const gf_tensor **w, gf_err *err);
/* The backward of sg2_mapping_run from dL/dw in the last fc's dy. */
gf_status sg2_mapping_back(gf_sg2_net *net, gf_ctx *ctx, sg2_mapping *m,
                           const gf_tensor *c, int64_t n, gf_accum accum,
                           gf_err *err);

/* ---- sg2_synthesis.c / sg2_disc.c ---- */
gf_status sg2_synthesis_build(gf_sg2_net *net, sg2_alloc *a, gf_err *err);
gf_status sg2_disc_build(gf_sg2_net *net, sg2_alloc *a, gf_err *err);

#endif
