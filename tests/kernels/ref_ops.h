/* ref_ops.h - plain nested-loop reference versions of every kernels op, in
 * double precision, written straight from the PyTorch definitions. Used by
 * the tests only: the CPU (and later CUDA) ops are compared with these, and
 * these are themselves checked against finite differences
 * (test_gradcheck_ref.c). Slow on purpose; no threads, no tricks.
 * All arrays are dense row-major; every output array is overwritten. */
#ifndef GF_TEST_REF_OPS_H
#define GF_TEST_REF_OPS_H

#include <stddef.h>
#include <stdint.h>

/* y[N,O] = x[N,I] w[O,I]^T + b[O] (b may be NULL). */
void ref_linear_fwd(const double *x, const double *w, const double *b,
                    double *y, int N, int I, int O);
/* dx[N,I], dw[O,I], db[O] (any may be NULL). */
void ref_linear_bwd(const double *x, const double *w, const double *dy,
                    double *dx, double *dw, double *db, int N, int I, int O);

typedef struct ref_conv {
  int N, Cin, H, W;  /* input */
  int Cout, kh, kw;  /* kernel */
  int sh, sw, ph, pw, oph, opw; /* stride, pad, output padding (deconv) */
  int OH, OW;        /* output, filled by ref_conv_out / ref_deconv_out */
} ref_conv;
void ref_conv_out(ref_conv *g);   /* conv:   (H + 2p - k) / s + 1 */
void ref_deconv_out(ref_conv *g); /* deconv: (H - 1) s - 2p + k + op */

/* conv2d: x[N,Cin,H,W], w[Cout,Cin,kh,kw], b[Cout] or NULL, y[N,Cout,OH,OW] */
void ref_conv2d_fwd(const ref_conv *g, const double *x, const double *w,
                    const double *b, double *y);
void ref_conv2d_bwd(const ref_conv *g, const double *x, const double *w,
                    const double *dy, double *dx, double *dw, double *db);
/* ConvTranspose2d: x[N,Cin,H,W], w[Cin,Cout,kh,kw], y[N,Cout,OH,OW] */
void ref_deconv2d_fwd(const ref_conv *g, const double *x, const double *w,
                      const double *b, double *y);
void ref_deconv2d_bwd(const ref_conv *g, const double *x, const double *w,
                      const double *dy, double *dx, double *dw, double *db);

/* Batch norm on x[N,C,S] (S = H*W, 1 for BatchNorm1d); gamma/beta NULL means
 * affine=False. Training: mean/var (biased) out. */
void ref_bn_fwd_train(const double *x, const double *gamma,
                      const double *beta, int N, int C, int S, double eps,
                      double *y, double *mean, double *var);
/* PyTorch's running-stat update: rm = (1-mom) rm + mom mean,
 * rv = (1-mom) rv + mom var m/(m-1), m = N*S. */
void ref_bn_update_running(double *rm, double *rv, const double *mean,
                           const double *var, int C, int m, double momentum);
void ref_bn_fwd_infer(const double *x, const double *gamma,
                      const double *beta, const double *rm, const double *rv,
                      int N, int C, int S, double eps, double *y);
/* Backward through the batch statistics (recomputed from x). */
void ref_bn_bwd(const double *x, const double *gamma, const double *dy, int N,
                int C, int S, double eps, double *dx, double *dgamma,
                double *dbeta);

enum { REF_RELU, REF_LEAKY, REF_TANH, REF_SIGMOID };
void ref_act_fwd(int kind, double slope, const double *x, double *y, size_t n);
/* Derivative from the forward INPUT x (unlike the ops, which take the
 * output for tanh and sigmoid). */
void ref_act_bwd(int kind, double slope, const double *x, const double *dy,
                 double *dx, size_t n);

/* Dropout with its own Philox word indexing (block (offset+i)/4, lane
 * (offset+i)%4, counter {lo, hi, ctr_hi0, ctr_hi1}), keep iff u >= p. */
void ref_dropout(const double *x, double p, const uint32_t key[2],
                 const uint32_t ctr_hi[2], uint64_t offset, double *y,
                 size_t n);

double ref_bce_fwd(const double *x, const double *t, size_t n);
void ref_bce_bwd(const double *x, const double *t, double dloss, double *dx,
                 size_t n);

/* mean_i max(0, 1 + sign x_i) and its gradient dloss sign / n where
 * 1 + sign x_i > 0, else 0. */
double ref_hinge_fwd(const double *x, double sign, size_t n);
void ref_hinge_bwd(const double *x, double sign, double dloss, double *dx,
                   size_t n);
double ref_mean(const double *x, size_t n);
/* avg = x + beta (avg - x). */
void ref_lerp(double *avg, const double *x, double beta, size_t n);
/* Spectral normalization of w [R, K] (torch.nn.utils.spectral_norm, dim 0):
 * n_iter times v = W^T u / max(|W^T u|, eps), u = W v / max(|W v|, eps)
 * (u [R], v [K] updated in place); *sigma = u . W v, w_sn = w / sigma. */
void ref_spectral_norm_fwd(const double *w, double *u, double *v, int R,
                           int K, int n_iter, double eps, double *sigma,
                           double *w_sn);
/* dw = g / sigma - (sum(g w) / sigma^2) u v^T, the gradient of
 * sum(g * w / sigma(w)) with u, v held constant. */
void ref_spectral_norm_bwd(const double *w, const double *u, const double *v,
                           double sigma, const double *g, double *dw, int R,
                           int K);

/* torch.optim.Adam single-tensor step, in double. */
void ref_adam(double *p, const double *g, double *m, double *v, size_t n,
              double lr, double b1, double b2, double eps, double wd,
              long step);

#endif
