/* ref_ops.c - nested-loop double-precision references; see ref_ops.h. */
#include "ref_ops.h"

#include <math.h>
#include <string.h>

#include "gf/philox.h"

void ref_linear_fwd(const double *x, const double *w, const double *b,
                    double *y, int N, int I, int O) {
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < I; i++) s += x[n * I + i] * w[o * I + i];
      y[n * O + o] = s;
    }
}

void ref_linear_bwd(const double *x, const double *w, const double *dy,
                    double *dx, double *dw, double *db, int N, int I, int O) {
  if (dx)
    for (int n = 0; n < N; n++)
      for (int i = 0; i < I; i++) {
        double s = 0.0;
        for (int o = 0; o < O; o++) s += dy[n * O + o] * w[o * I + i];
        dx[n * I + i] = s;
      }
  if (dw)
    for (int o = 0; o < O; o++)
      for (int i = 0; i < I; i++) {
        double s = 0.0;
        for (int n = 0; n < N; n++) s += dy[n * O + o] * x[n * I + i];
        dw[o * I + i] = s;
      }
  if (db)
    for (int o = 0; o < O; o++) {
      double s = 0.0;
      for (int n = 0; n < N; n++) s += dy[n * O + o];
      db[o] = s;
    }
}

void ref_conv_out(ref_conv *g) {
  g->OH = (g->H + 2 * g->ph - g->kh) / g->sh + 1;
  g->OW = (g->W + 2 * g->pw - g->kw) / g->sw + 1;
}

void ref_deconv_out(ref_conv *g) {
  g->OH = (g->H - 1) * g->sh - 2 * g->ph + g->kh + g->oph;
  g->OW = (g->W - 1) * g->sw - 2 * g->pw + g->kw + g->opw;
}

/* Index helpers. */
#define X4(a, b, c, d, B, C, D) ((((size_t)(a) * (B) + (b)) * (C) + (c)) * (D) + (d))

/* conv: y[n,co,oh,ow] = b[co] + sum x[n,ci,oh*s-p+i,ow*s-p+j] w[co,ci,i,j] */
void ref_conv2d_fwd(const ref_conv *g, const double *x, const double *w,
                    const double *b, double *y) {
  for (int n = 0; n < g->N; n++)
    for (int co = 0; co < g->Cout; co++)
      for (int oh = 0; oh < g->OH; oh++)
        for (int ow = 0; ow < g->OW; ow++) {
          double s = b ? b[co] : 0.0;
          for (int ci = 0; ci < g->Cin; ci++)
            for (int i = 0; i < g->kh; i++)
              for (int j = 0; j < g->kw; j++) {
                int ih = oh * g->sh - g->ph + i, iw = ow * g->sw - g->pw + j;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                s += x[X4(n, ci, ih, iw, g->Cin, g->H, g->W)] *
                     w[X4(co, ci, i, j, g->Cin, g->kh, g->kw)];
              }
          y[X4(n, co, oh, ow, g->Cout, g->OH, g->OW)] = s;
        }
}

void ref_conv2d_bwd(const ref_conv *g, const double *x, const double *w,
                    const double *dy, double *dx, double *dw, double *db) {
  size_t nx = (size_t)g->N * g->Cin * g->H * g->W;
  size_t nw = (size_t)g->Cout * g->Cin * g->kh * g->kw;
  if (dx) memset(dx, 0, nx * sizeof *dx);
  if (dw) memset(dw, 0, nw * sizeof *dw);
  if (db) memset(db, 0, (size_t)g->Cout * sizeof *db);
  for (int n = 0; n < g->N; n++)
    for (int co = 0; co < g->Cout; co++)
      for (int oh = 0; oh < g->OH; oh++)
        for (int ow = 0; ow < g->OW; ow++) {
          double d = dy[X4(n, co, oh, ow, g->Cout, g->OH, g->OW)];
          if (db) db[co] += d;
          for (int ci = 0; ci < g->Cin; ci++)
            for (int i = 0; i < g->kh; i++)
              for (int j = 0; j < g->kw; j++) {
                int ih = oh * g->sh - g->ph + i, iw = ow * g->sw - g->pw + j;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                size_t xi = X4(n, ci, ih, iw, g->Cin, g->H, g->W);
                size_t wi = X4(co, ci, i, j, g->Cin, g->kh, g->kw);
                if (dx) dx[xi] += d * w[wi];
                if (dw) dw[wi] += d * x[xi];
              }
        }
}

/* deconv: y[n,co,ih*s-p+i,iw*s-p+j] += x[n,ci,ih,iw] w[ci,co,i,j] */
void ref_deconv2d_fwd(const ref_conv *g, const double *x, const double *w,
                      const double *b, double *y) {
  for (int n = 0; n < g->N; n++)
    for (int co = 0; co < g->Cout; co++)
      for (int oh = 0; oh < g->OH; oh++)
        for (int ow = 0; ow < g->OW; ow++)
          y[X4(n, co, oh, ow, g->Cout, g->OH, g->OW)] = b ? b[co] : 0.0;
  for (int n = 0; n < g->N; n++)
    for (int ci = 0; ci < g->Cin; ci++)
      for (int ih = 0; ih < g->H; ih++)
        for (int iw = 0; iw < g->W; iw++) {
          double v = x[X4(n, ci, ih, iw, g->Cin, g->H, g->W)];
          for (int co = 0; co < g->Cout; co++)
            for (int i = 0; i < g->kh; i++)
              for (int j = 0; j < g->kw; j++) {
                int oh = ih * g->sh - g->ph + i, ow = iw * g->sw - g->pw + j;
                if (oh < 0 || oh >= g->OH || ow < 0 || ow >= g->OW) continue;
                y[X4(n, co, oh, ow, g->Cout, g->OH, g->OW)] +=
                    v * w[X4(ci, co, i, j, g->Cout, g->kh, g->kw)];
              }
        }
}

void ref_deconv2d_bwd(const ref_conv *g, const double *x, const double *w,
                      const double *dy, double *dx, double *dw, double *db) {
  size_t nw = (size_t)g->Cin * g->Cout * g->kh * g->kw;
  if (dw) memset(dw, 0, nw * sizeof *dw);
  if (db)
    for (int co = 0; co < g->Cout; co++) {
      double s = 0.0;
      for (int n = 0; n < g->N; n++)
        for (int k = 0; k < g->OH * g->OW; k++)
          s += dy[((size_t)n * g->Cout + co) * g->OH * g->OW + k];
      db[co] = s;
    }
  for (int n = 0; n < g->N; n++)
    for (int ci = 0; ci < g->Cin; ci++)
      for (int ih = 0; ih < g->H; ih++)
        for (int iw = 0; iw < g->W; iw++) {
          size_t xi = X4(n, ci, ih, iw, g->Cin, g->H, g->W);
          double sx = 0.0;
          for (int co = 0; co < g->Cout; co++)
            for (int i = 0; i < g->kh; i++)
              for (int j = 0; j < g->kw; j++) {
                int oh = ih * g->sh - g->ph + i, ow = iw * g->sw - g->pw + j;
                if (oh < 0 || oh >= g->OH || ow < 0 || ow >= g->OW) continue;
                double d = dy[X4(n, co, oh, ow, g->Cout, g->OH, g->OW)];
                size_t wi = X4(ci, co, i, j, g->Cout, g->kh, g->kw);
                sx += d * w[wi];
                if (dw) dw[wi] += d * x[xi];
              }
          if (dx) dx[xi] = sx;
        }
}

static void bn_stats(const double *x, int N, int C, int S, double *mean,
                     double *var) {
  double m = (double)N * S;
  for (int c = 0; c < C; c++) {
    double s = 0.0;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < S; k++) s += x[((size_t)n * C + c) * S + k];
    double mu = s / m, q = 0.0;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < S; k++) {
        double d = x[((size_t)n * C + c) * S + k] - mu;
        q += d * d;
      }
    mean[c] = mu;
    var[c] = q / m;
  }
}

static void bn_apply(const double *x, const double *gamma, const double *beta,
                     const double *mean, const double *var, int N, int C,
                     int S, double eps, double *y) {
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++) {
      double inv = 1.0 / sqrt(var[c] + eps);
      double ga = gamma ? gamma[c] : 1.0, be = beta ? beta[c] : 0.0;
      for (int k = 0; k < S; k++) {
        size_t i = ((size_t)n * C + c) * S + k;
        y[i] = ga * (x[i] - mean[c]) * inv + be;
      }
    }
}

void ref_bn_fwd_train(const double *x, const double *gamma,
                      const double *beta, int N, int C, int S, double eps,
                      double *y, double *mean, double *var) {
  bn_stats(x, N, C, S, mean, var);
  bn_apply(x, gamma, beta, mean, var, N, C, S, eps, y);
}

void ref_bn_update_running(double *rm, double *rv, const double *mean,
                           const double *var, int C, int m, double momentum) {
  for (int c = 0; c < C; c++) {
    rm[c] = (1.0 - momentum) * rm[c] + momentum * mean[c];
    rv[c] = (1.0 - momentum) * rv[c] + momentum * var[c] * m / (m - 1.0);
  }
}

void ref_bn_fwd_infer(const double *x, const double *gamma,
                      const double *beta, const double *rm, const double *rv,
                      int N, int C, int S, double eps, double *y) {
  bn_apply(x, gamma, beta, rm, rv, N, C, S, eps, y);
}

void ref_bn_bwd(const double *x, const double *gamma, const double *dy, int N,
                int C, int S, double eps, double *dx, double *dgamma,
                double *dbeta) {
  double m = (double)N * S;
  for (int c = 0; c < C; c++) {
    double mu = 0.0, var = 0.0;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < S; k++) mu += x[((size_t)n * C + c) * S + k];
    mu /= m;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < S; k++) {
        double d = x[((size_t)n * C + c) * S + k] - mu;
        var += d * d;
      }
    var /= m;
    double inv = 1.0 / sqrt(var + eps);
    double sdy = 0.0, sdyx = 0.0;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < S; k++) {
        size_t i = ((size_t)n * C + c) * S + k;
        sdy += dy[i];
        sdyx += dy[i] * (x[i] - mu) * inv;
      }
    if (dgamma) dgamma[c] = sdyx;
    if (dbeta) dbeta[c] = sdy;
    double ga = gamma ? gamma[c] : 1.0;
    if (dx)
      for (int n = 0; n < N; n++)
        for (int k = 0; k < S; k++) {
          size_t i = ((size_t)n * C + c) * S + k;
          double xh = (x[i] - mu) * inv;
          dx[i] = ga * inv / m * (m * dy[i] - sdy - xh * sdyx);
        }
  }
}

void ref_act_fwd(int kind, double slope, const double *x, double *y,
                 size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v = x[i];
    switch (kind) {
    case REF_RELU: y[i] = v > 0 ? v : 0.0; break;
    case REF_LEAKY: y[i] = v > 0 ? v : slope * v; break;
    case REF_TANH: y[i] = tanh(v); break;
    default: y[i] = 1.0 / (1.0 + exp(-v)); break;
    }
  }
}

void ref_act_bwd(int kind, double slope, const double *x, const double *dy,
                 double *dx, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v = x[i], d;
    switch (kind) {
    case REF_RELU: d = v > 0 ? 1.0 : 0.0; break;
    case REF_LEAKY: d = v > 0 ? 1.0 : slope; break;
    case REF_TANH: d = 1.0 / (cosh(v) * cosh(v)); break;
    default: {
      double s = 1.0 / (1.0 + exp(-v));
      d = s * (1.0 - s);
    }
    }
    dx[i] = dy[i] * d;
  }
}

void ref_dropout(const double *x, double p, const uint32_t key[2],
                 const uint32_t ctr_hi[2], uint64_t offset, double *y,
                 size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t word = offset + i, blk = word / 4;
    uint32_t ctr[4] = {(uint32_t)(blk & 0xffffffffu), (uint32_t)(blk >> 32),
                       ctr_hi[0], ctr_hi[1]};
    uint32_t out[4];
    gf_philox4x32_10(ctr, key, out);
    double u = (double)(out[word % 4] >> 8) / 16777216.0;
    y[i] = (u >= p && p < 1.0) ? x[i] / (1.0 - p) : 0.0;
  }
}

double ref_bce_fwd(const double *x, const double *t, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) {
    /* -(t log sigmoid(x) + (1-t) log(1 - sigmoid(x))), computed stably */
    double lsp = x[i] >= 0 ? -log1p(exp(-x[i])) : x[i] - log1p(exp(x[i]));
    double lsn = lsp - x[i]; /* log(1 - sigmoid(x)) = log sigmoid(x) - x */
    s += -(t[i] * lsp + (1.0 - t[i]) * lsn);
  }
  return s / (double)n;
}

void ref_bce_bwd(const double *x, const double *t, double dloss, double *dx,
                 size_t n) {
  for (size_t i = 0; i < n; i++)
    dx[i] = dloss * (1.0 / (1.0 + exp(-x[i])) - t[i]) / (double)n;
}

double ref_hinge_fwd(const double *x, double sign, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += fmax(0.0, 1.0 + sign * x[i]);
  return s / (double)n;
}

void ref_hinge_bwd(const double *x, double sign, double dloss, double *dx,
                   size_t n) {
  for (size_t i = 0; i < n; i++)
    dx[i] = 1.0 + sign * x[i] > 0.0 ? dloss * sign / (double)n : 0.0;
}

double ref_mean(const double *x, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return s / (double)n;
}

void ref_lerp(double *avg, const double *x, double beta, size_t n) {
  for (size_t i = 0; i < n; i++) avg[i] = x[i] + beta * (avg[i] - x[i]);
}

/* a[n] /= max(|a|, eps) */
static void ref_normalize(double *a, int n, double eps) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += a[i] * a[i];
  double d = fmax(sqrt(s), eps);
  for (int i = 0; i < n; i++) a[i] /= d;
}

void ref_spectral_norm_fwd(const double *w, double *u, double *v, int R,
                           int K, int n_iter, double eps, double *sigma,
                           double *w_sn) {
  for (int it = 0; it < n_iter; it++) {
    for (int k = 0; k < K; k++) {
      double s = 0.0;
      for (int r = 0; r < R; r++) s += w[r * K + k] * u[r];
      v[k] = s;
    }
    ref_normalize(v, K, eps);
    for (int r = 0; r < R; r++) {
      double s = 0.0;
      for (int k = 0; k < K; k++) s += w[r * K + k] * v[k];
      u[r] = s;
    }
    ref_normalize(u, R, eps);
  }
  double sg = 0.0;
  for (int r = 0; r < R; r++) {
    double s = 0.0;
    for (int k = 0; k < K; k++) s += w[r * K + k] * v[k];
    sg += u[r] * s;
  }
  *sigma = sg;
  for (int i = 0; i < R * K; i++) w_sn[i] = w[i] / sg;
}

void ref_spectral_norm_bwd(const double *w, const double *u, const double *v,
                           double sigma, const double *g, double *dw, int R,
                           int K) {
  double c = 0.0;
  for (int i = 0; i < R * K; i++) c += g[i] * w[i];
  for (int r = 0; r < R; r++)
    for (int k = 0; k < K; k++)
      dw[r * K + k] =
          g[r * K + k] / sigma - c / (sigma * sigma) * u[r] * v[k];
}

void ref_adam(double *p, const double *g, double *m, double *v, size_t n,
              double lr, double b1, double b2, double eps, double wd,
              long step) {
  double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
  for (size_t i = 0; i < n; i++) {
    double gi = g[i] + wd * p[i];
    m[i] = b1 * m[i] + (1.0 - b1) * gi;
    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
    double mhat = m[i] / bc1, vhat = v[i] / bc2;
    p[i] -= lr * mhat / (sqrt(vhat) + eps);
  }
}
