/* cpu_augment.c - the CPU backend's DiffAugment (gf_augment_fwd / _bwd of
 * gf/ops.h): colour (brightness, saturation, contrast), translation and
 * cutout, forward and transpose. Plain C loops; OpenMP threads take whole
 * samples, and each sample is computed by one thread in a fixed order, so
 * the bits do not depend on the thread count. Each thread stages its
 * sample in its own slice of the ctx scratch (which is also what lets y
 * be x and dx be dy). The sums follow the op's contract: a pixel's
 * channel sum in f32 in channel order, a sample's sum in double lanes by
 * reduce_order.h; cuda_augment.cu computes the same bits. Each f32
 * operation is its own statement (the ISO C build does not contract them
 * into FMAs). Not for the draws of the params (model/src/augment.c). */
#include <omp.h>
#include <string.h>

#include "../augment_impl.h"
#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES

_Static_assert(GF_AUGI_B == GF_AUG_P_BRIGHTNESS &&
                   GF_AUGI_S == GF_AUG_P_SATURATION &&
                   GF_AUGI_C == GF_AUG_P_CONTRAST &&
                   GF_AUGI_TX == GF_AUG_P_TX && GF_AUGI_TY == GF_AUG_P_TY &&
                   GF_AUGI_OX == GF_AUG_P_OX && GF_AUGI_OY == GF_AUG_P_OY &&
                   GF_AUGI_NPARAMS == GF_AUG_NPARAMS,
               "augment_impl.h's columns are gf/ops.h's");

/* One sample's shape: C channels of H x W. */
typedef struct aug_shape {
  int64_t C, H, W, HW, n; /* n = C H W */
  int64_t S0, S1;         /* cutout sizes (rows, columns) */
} aug_shape;

/* A thread's scratch: the staged sample (n floats) and two per-pixel rows
 * (HW floats each), the slice padded to a cache line. */
static size_t slice_floats(const aug_shape *s) {
  size_t f = (size_t)s->n + 2 * (size_t)s->HW;
  return (f + 15) / 16 * 16;
}

/* The sum of a[n] by the lanes of reduce_order.h, in double. */
static double lane_sum(const float *a, int64_t n) {
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++) p[j] += (double)a[i0 + j];
  }
  return gf_cpu_lanes_tree(p);
}

/* The same of the f32 products a[i] * f. */
static double lane_sum_scaled(const float *a, float f, int64_t n) {
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++) {
      float t = a[i0 + j] * f;
      p[j] += (double)t;
    }
  }
  return gf_cpu_lanes_tree(p);
}

/* dst = contrast(saturation(src + b)) for one sample; dst may be src.
 * acc: HW floats. */
static void color_fwd(const aug_shape *sh, const float *prow, const float *src,
                      float *dst, float *acc) {
  float b = prow[GF_AUG_P_BRIGHTNESS], s = prow[GF_AUG_P_SATURATION];
  float c = prow[GF_AUG_P_CONTRAST];
  int64_t C = sh->C, HW = sh->HW, n = sh->n;
  float fc = (float)C;
  /* saturation: m = (sum over channels in order, f32) / C per pixel */
  for (int64_t p = 0; p < HW; p++) acc[p] = 0.0f;
  for (int64_t ch = 0; ch < C; ch++) {
    const float *xs = src + ch * HW;
    for (int64_t p = 0; p < HW; p++) {
      float t = xs[p] + b;
      acc[p] = acc[p] + t;
    }
  }
  for (int64_t p = 0; p < HW; p++) acc[p] = acc[p] / fc;
  for (int64_t ch = 0; ch < C; ch++) {
    const float *xs = src + ch * HW;
    float *ys = dst + ch * HW;
    for (int64_t p = 0; p < HW; p++) {
      float t = xs[p] + b;
      float d = t - acc[p];
      float e = d * s;
      ys[p] = e + acc[p];
    }
  }
  /* contrast: M = (f32)(lane sum) / n */
  float sum = (float)lane_sum(dst, n);
  float M = sum / (float)n;
  for (int64_t i = 0; i < n; i++) {
    float d = dst[i] - M;
    float e = d * c;
    dst[i] = e + M;
  }
}

/* The transpose of color_fwd applied to src into dst (may be src): the
 * contrast's, then the saturation's (brightness passes through). acc1,
 * acc2: HW floats each. */
static void color_bwd(const aug_shape *sh, const float *prow, const float *src,
                      float *dst, float *acc1, float *acc2) {
  float s = prow[GF_AUG_P_SATURATION], c = prow[GF_AUG_P_CONTRAST];
  int64_t C = sh->C, HW = sh->HW, n = sh->n;
  /* contrast: every sum reads src before the loop below writes dst */
  float s1 = (float)lane_sum(src, n);
  float s2 = (float)lane_sum_scaled(src, c, n);
  float gm = s1 - s2;
  float gg = gm / (float)n;
  for (int64_t i = 0; i < n; i++) {
    float t = src[i] * c;
    dst[i] = t + gg;
  }
  /* saturation, per pixel over the channels of dst */
  for (int64_t p = 0; p < HW; p++) acc1[p] = acc2[p] = 0.0f;
  for (int64_t ch = 0; ch < C; ch++) {
    const float *g = dst + ch * HW;
    for (int64_t p = 0; p < HW; p++) {
      float t = g[p] * s;
      acc1[p] = acc1[p] + g[p];
      acc2[p] = acc2[p] + t;
    }
  }
  float fc = (float)C;
  for (int64_t p = 0; p < HW; p++) {
    float d = acc1[p] - acc2[p];
    acc1[p] = d / fc;
  }
  for (int64_t ch = 0; ch < C; ch++) {
    float *g = dst + ch * HW;
    for (int64_t p = 0; p < HW; p++) {
      float t = g[p] * s;
      g[p] = t + acc1[p];
    }
  }
}

/* y = cutout(translate(src)) for one sample (each step when its flag is
 * set); y must not overlap src unless translation is off (then the map is
 * element-wise and y may be src). */
static void geom_fwd(const aug_shape *sh, const gf_aug_geom *g, int trans,
                     int cut, const float *src, float *y) {
  int64_t H = sh->H, W = sh->W;
  for (int64_t ch = 0; ch < sh->C; ch++) {
    const float *xs = src + ch * sh->HW;
    float *ys = y + ch * sh->HW;
    for (int64_t i = 0; i < H; i++) {
      int64_t si = trans ? i + g->tx : i;
      int row_in = si >= 0 && si < H;
      int row_cut = cut && i >= g->r0 && i <= g->r1;
      for (int64_t j = 0; j < W; j++) {
        int64_t sj = trans ? j + g->ty : j;
        float v = row_in && sj >= 0 && sj < W ? xs[si * W + sj] : 0.0f;
        if (cut) {
          float m = row_cut && j >= g->c0 && j <= g->c1 ? 0.0f : 1.0f;
          v = v * m;
        }
        ys[i * W + j] = v;
      }
    }
  }
}

/* The transpose of geom_fwd: dx = translate^T(dy * mask), the scatter of
 * the translation adding into zeros (0 + v: a -0 becomes +0, as PyTorch's
 * index_put_ with accumulate). Same overlap rule as geom_fwd. */
static void geom_bwd(const aug_shape *sh, const gf_aug_geom *g, int trans,
                     int cut, const float *dy, float *dx) {
  int64_t H = sh->H, W = sh->W;
  for (int64_t ch = 0; ch < sh->C; ch++) {
    const float *gs = dy + ch * sh->HW;
    float *os = dx + ch * sh->HW;
    for (int64_t i = 0; i < H; i++) {
      /* dx[i, j] receives dy[i - tx, j - ty] */
      int64_t si = trans ? i - g->tx : i;
      int row_in = si >= 0 && si < H;
      int row_cut = cut && si >= g->r0 && si <= g->r1;
      for (int64_t j = 0; j < W; j++) {
        int64_t sj = trans ? j - g->ty : j;
        float v = 0.0f;
        if (row_in && sj >= 0 && sj < W) {
          v = gs[si * W + sj];
          if (cut) {
            float m = row_cut && sj >= g->c0 && sj <= g->c1 ? 0.0f : 1.0f;
            v = v * m;
          }
          if (trans) v = 0.0f + v;
        }
        os[i * W + j] = v;
      }
    }
  }
}

static aug_shape shape_of(const gf_tensor *x) {
  aug_shape s;
  s.C = x->shape[1];
  s.H = x->shape[2];
  s.W = x->shape[3];
  s.HW = s.H * s.W;
  s.n = s.C * s.HW;
  s.S0 = gf_augment_cutout_size(s.H);
  s.S1 = gf_augment_cutout_size(s.W);
  return s;
}

/* Runs the forward (bwd 0) or the transpose (bwd 1) of every sample. */
static gf_status augment(gf_ctx *ctx, const gf_tensor *params, unsigned policy,
                         const gf_tensor *in, gf_tensor *out, int bwd,
                         gf_err *err) {
  int64_t N = in->shape[0];
  aug_shape sh = shape_of(in);
  int color = (policy & GF_AUG_COLOR) != 0;
  int trans = (policy & GF_AUG_TRANSLATION) != 0;
  int cut = (policy & GF_AUG_CUTOUT) != 0;
  const float *src = in->data, *pp = params->data;
  float *dst = out->data;
  if (!color && !trans && !cut) {
    if (dst != src) memcpy(dst, src, (size_t)gf_tensor_nbytes(in));
    return GF_OK;
  }
  int nt = ctx->nthreads < 1 ? 1 : ctx->nthreads;
  size_t slice = slice_floats(&sh);
  float *tmp = gf_cpu_tmp(ctx, slice * (size_t)nt, err);
  if (!tmp) return err ? err->code : GF_ENOMEM;
  int64_t n = sh.n;
#pragma omp parallel num_threads(nt) if (N * n >= GF_PAR_MIN)
  {
    float *w = tmp + slice * (size_t)omp_get_thread_num();
    float *acc1 = w + n, *acc2 = acc1 + sh.HW;
#pragma omp for schedule(static)
    for (int64_t k = 0; k < N; k++) {
      const float *prow = pp + k * GF_AUG_NPARAMS;
      const float *xs = src + k * n;
      float *ys = dst + k * n;
      gf_aug_geom g = gf_aug_geom_of(prow, sh.H, sh.W, sh.S0, sh.S1);
      int geom = trans || cut;
      if (!bwd) {
        if (color) {
          /* colour into the slice when a translation follows, else in y */
          float *cw = trans ? w : ys;
          color_fwd(&sh, prow, xs, cw, acc1);
          xs = cw;
        } else if (trans && xs == ys) {
          memcpy(w, xs, (size_t)n * sizeof(float));
          xs = w;
        }
        if (geom) geom_fwd(&sh, &g, trans, cut, xs, ys);
      } else {
        if (geom) {
          if (trans && xs == ys) {
            memcpy(w, xs, (size_t)n * sizeof(float));
            xs = w;
          }
          geom_bwd(&sh, &g, trans, cut, xs, ys);
          xs = ys;
        }
        if (color) color_bwd(&sh, prow, xs, ys, acc1, acc2);
      }
    }
  }
  return GF_OK;
}

gf_status gf_cpu_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *params, unsigned policy,
                             gf_tensor *y, gf_err *err) {
  return augment(ctx, params, policy, x, y, 0, err);
}

gf_status gf_cpu_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                             unsigned policy, const gf_tensor *dy,
                             gf_tensor *dx, gf_err *err) {
  return augment(ctx, params, policy, dy, dx, 1, err);
}
