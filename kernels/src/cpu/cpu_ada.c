/* cpu_ada.c - the CPU backend's ADA resampling ops (ops.h, "adaptive
 * discriminator augmentation"): reflect padding, per-sample affine
 * bilinear resampling and the 4x4 colour matrix, forward and transpose.
 * The per-element arithmetic is ada_math.h's, shared with the CUDA twin
 * (cuda/cuda_ada.cu), so the bits match it at any thread count: OpenMP
 * splits whole output elements (forwards, reflect backward: gathers) or
 * whole (n, c) planes (the resampling's backward: a sequential scatter per
 * plane). Argument checking happened in ops.c. */
/* The FMA clones must fuse only the fmaf's written: clang would contract
 * a * b + c within an expression where the target has FMA (gcc's ISO C
 * mode, -std=c11, does not). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include <string.h>

#include "../ada_math.h"
#include "cpu_backend.h"

gf_status gf_cpu_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                                 const int pad[4], gf_tensor *y, gf_err *err) {
  (void)err;
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t OH = y->shape[2], OW = y->shape[3];
  int64_t rows = y->shape[0] * y->shape[1] * OH;
  const float *X = x->data;
  float *Y = y->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (rows * OW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t plane = r / OH, i = r - plane * OH;
    const float *xr = X + (plane * H + gf_ada_reflect(i - pad[2], H)) * W;
    float *yr = Y + r * OW;
    for (int64_t j = 0; j < OW; j++) yr[j] = xr[gf_ada_reflect(j - pad[0], W)];
  }
  return GF_OK;
}

gf_status gf_cpu_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                                 const gf_tensor *dy, gf_tensor *dx,
                                 gf_err *err) {
  (void)err;
  int64_t H = dx->shape[2], W = dx->shape[3];
  int64_t OH = dy->shape[2], OW = dy->shape[3];
  int64_t rows = dx->shape[0] * dx->shape[1] * H;
  const float *G = dy->data;
  float *D = dx->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (rows * W >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t plane = r / H, h = r - plane * H;
    int64_t si[3], sj[3];
    int ni = gf_ada_reflect_srcs(h, H, pad[2], pad[3], si);
    const float *gp = G + plane * OH * OW;
    for (int64_t w = 0; w < W; w++) {
      int nj = gf_ada_reflect_srcs(w, W, pad[0], pad[1], sj);
      float acc = 0.0f;
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) acc += gp[si[a] * OW + sj[b]];
      D[r * W + w] = acc;
    }
  }
  return GF_OK;
}

/* One affine_sample call: x (fwd) or dx (bwd) [N, C, H, W], y or dy
 * [N, C, OH, OW], theta [N, 6]. */
typedef struct as_job {
  const float *T, *in;
  float *out;
  int64_t C, H, W, OH, OW;
} as_job;

/* Forward rows [r0, r1) of the N C OH output rows. */
static GF_ALWAYS_INLINE void as_fwd_rows(const as_job *jb, int64_t r0,
                                         int64_t r1) {
  int64_t C = jb->C, H = jb->H, W = jb->W, OH = jb->OH, OW = jb->OW;
  for (int64_t r = r0; r < r1; r++) {
    int64_t plane = r / OH, i = r - plane * OH, n = plane / C;
    const float *xp = jb->in + plane * H * W;
    for (int64_t j = 0; j < OW; j++) {
      gf_ada_tap tp = gf_ada_bilinear(jb->T + n * 6, i, j, OH, OW, H, W);
      float acc = 0.0f;
      for (int k = 0; k < 4; k++) {
        int64_t cx = tp.x0 + (k & 1), cy = tp.y0 + (k >> 1);
        if (cx >= 0 && cx < W && cy >= 0 && cy < H)
          acc = fmaf(xp[cy * W + cx], tp.w[k], acc);
      }
      jb->out[r * OW + j] = acc;
    }
  }
}

/* Backward planes [p0, p1) of the N C input planes: each scatters its
 * output's gradient in the forward's order. */
static GF_ALWAYS_INLINE void as_bwd_planes(const as_job *jb, int64_t p0,
                                           int64_t p1) {
  int64_t C = jb->C, H = jb->H, W = jb->W, OH = jb->OH, OW = jb->OW;
  for (int64_t plane = p0; plane < p1; plane++) {
    int64_t n = plane / C;
    float *dp = jb->out + plane * H * W;
    const float *gp = jb->in + plane * OH * OW;
    memset(dp, 0, (size_t)(H * W) * sizeof(float));
    for (int64_t i = 0; i < OH; i++)
      for (int64_t j = 0; j < OW; j++) {
        gf_ada_tap tp = gf_ada_bilinear(jb->T + n * 6, i, j, OH, OW, H, W);
        float g = gp[i * OW + j];
        for (int k = 0; k < 4; k++) {
          int64_t cx = tp.x0 + (k & 1), cy = tp.y0 + (k >> 1);
          if (cx >= 0 && cx < W && cy >= 0 && cy < H)
            dp[cy * W + cx] = fmaf(g, tp.w[k], dp[cy * W + cx]);
        }
      }
  }
}

static void as_fwd_plain(const void *jb, int64_t a, int64_t b) {
  as_fwd_rows(jb, a, b);
}
static void as_bwd_plain(const void *jb, int64_t a, int64_t b) {
  as_bwd_planes(jb, a, b);
}
#if GF_HAVE_FMA_CLONE /* the fma() and fmaf() of the taps inlined */
GF_TARGET_FMA static void as_fwd_fma(const void *jb, int64_t a, int64_t b) {
  as_fwd_rows(jb, a, b);
}
GF_TARGET_FMA static void as_bwd_fma(const void *jb, int64_t a, int64_t b) {
  as_bwd_planes(jb, a, b);
}
#endif

gf_status gf_cpu_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                                   const gf_tensor *theta, gf_tensor *y,
                                   gf_err *err) {
  (void)err;
  as_job jb = {theta->data, x->data, y->data, x->shape[1], x->shape[2],
               x->shape[3], y->shape[2], y->shape[3]};
  int64_t rows = y->shape[0] * jb.C * jb.OH;
  gf_cpu_run_ranges(as_fwd_plain, GF_FMA_FN(as_fwd_fma), &jb, rows,
                    rows * jb.OW * 4, ctx->nthreads);
  return GF_OK;
}

gf_status gf_cpu_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                                   const gf_tensor *dy, gf_tensor *dx,
                                   gf_err *err) {
  (void)err;
  as_job jb = {theta->data, dy->data, dx->data, dx->shape[1], dx->shape[2],
               dx->shape[3], dy->shape[2], dy->shape[3]};
  int64_t planes = dx->shape[0] * jb.C;
  gf_cpu_run_ranges(as_bwd_plain, GF_FMA_FN(as_bwd_fma), &jb, planes,
                    planes * jb.OH * jb.OW * 4, ctx->nthreads);
  return GF_OK;
}

/* The colour matrix forward (bwd 0: in x, out y) or its transpose (bwd 1:
 * in dy, out dx), per pixel as ada_math.h forms it. */
static void color4(gf_ctx *ctx, const gf_tensor *in, const gf_tensor *m,
                   gf_tensor *out, int bwd) {
  int64_t N = in->shape[0], C = in->shape[1];
  int64_t S = in->shape[2] * in->shape[3];
  const float *X = in->data, *M = m->data;
  float *Y = out->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * C * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < N; n++) {
    const float *mn = M + n * 16;
    const float *xn = X + n * C * S;
    float *yn = Y + n * C * S;
    if (C == 1) {
      float s, t;
      gf_ada_luma_coef(mn, &s, &t);
      for (int64_t k = 0; k < S; k++) {
        float p = gf_ada_mul(xn[k], s);
        yn[k] = bwd ? p : p + t;
      }
      continue;
    }
    for (int64_t k = 0; k < S; k++) {
      float v0 = xn[k], v1 = xn[S + k], v2 = xn[2 * S + k];
      for (int c = 0; c < 3; c++)
        yn[c * S + k] = bwd ? gf_ada_dot3(mn + c, 4, v0, v1, v2)
                            : gf_ada_dot3(mn + 4 * c, 1, v0, v1, v2) +
                                  mn[4 * c + 3];
    }
  }
}

gf_status gf_cpu_color4_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *m, gf_tensor *y, gf_err *err) {
  (void)err;
  color4(ctx, x, m, y, 0);
  return GF_OK;
}

gf_status gf_cpu_color4_bwd(gf_ctx *ctx, const gf_tensor *m,
                            const gf_tensor *dy, gf_tensor *dx, gf_err *err) {
  (void)err;
  color4(ctx, dy, m, dx, 1);
  return GF_OK;
}
