/* ada_math.h - the per-element arithmetic of the ADA resampling ops (ops.h,
 * "adaptive discriminator augmentation"), shared by the CPU loops
 * (cpu/cpu_ada.c) and the CUDA kernels (cuda/cuda_ada.cu) so that both do
 * the same operations in the same order: reflect indices, the bilinear
 * sample point and weights of an affine resampling, and the colour
 * matrix's per-pixel products. Private to kernels/; plain C and CUDA C++
 * (static inline, host and device there). Every multiply-add is an
 * explicit fma / fmaf (C99's; CUDA's device functions of the same names are
 * the same single IEEE operations), every other operation stands alone, so
 * no compiler contraction (nvcc -fmad, clang -ffp-contract=on) changes the
 * bits. */
#ifndef GF_ADA_MATH_H
#define GF_ADA_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GF_ADA_FN static inline __host__ __device__
#else
#define GF_ADA_FN static inline
#endif

/* The source index of padded index k (k - pad0) along an axis of n
 * samples under reflection (|pad| < n, so one reflection suffices). */
GF_ADA_FN int64_t gf_ada_reflect(int64_t k, int64_t n) {
  if (k < 0) k = -k;
  if (k >= n) k = 2 * (n - 1) - k;
  return k;
}

/* The padded indices (ascending, into out[0..2]) whose reflection is input
 * index h along an axis of n samples with pads p0 (before), p1 (after);
 * returns their count (1 to 3). */
GF_ADA_FN int gf_ada_reflect_srcs(int64_t h, int64_t n, int p0, int p1,
                                  int64_t out[3]) {
  int c = 0;
  if (h >= 1 && h <= p0) out[c++] = p0 - h;       /* mirrored before */
  out[c++] = p0 + h;                              /* itself */
  if (n - 1 - h >= 1 && n - 1 - h <= p1)          /* mirrored after */
    out[c++] = p0 + 2 * (n - 1) - h;
  return c;
}

/* One output pixel's bilinear footprint: the top-left corner (x0, y0) and
 * the weights of nw, ne, sw, se. x0 = y0 = -2 (no corner inside) for a
 * coordinate outside (-2, side + 1) or NaN. */
typedef struct gf_ada_tap {
  int64_t x0, y0;
  float w[4]; /* nw, ne, sw, se */
} gf_ada_tap;

/* Output pixel (i, j) of an OH x OW grid through t (2x3, row-major) onto
 * an H x W input (ops.h's formula). */
GF_ADA_FN gf_ada_tap gf_ada_bilinear(const float *t, int64_t i, int64_t j,
                                     int64_t OH, int64_t OW, int64_t H,
                                     int64_t W) {
  gf_ada_tap r;
  double xb = (double)(2 * j + 1) / (double)OW - 1.0;
  double yb = (double)(2 * i + 1) / (double)OH - 1.0;
  double gx = fma((double)t[0], xb, fma((double)t[1], yb, (double)t[2]));
  double gy = fma((double)t[3], xb, fma((double)t[4], yb, (double)t[5]));
  float ix = (float)fma(gx + 1.0, (double)W * 0.5, -0.5);
  float iy = (float)fma(gy + 1.0, (double)H * 0.5, -0.5);
  if (!(ix > -2.0f && ix < (float)W + 1.0f && iy > -2.0f &&
        iy < (float)H + 1.0f)) {
    r.x0 = r.y0 = -2;
    r.w[0] = r.w[1] = r.w[2] = r.w[3] = 0.0f;
    return r;
  }
  float fx0 = floorf(ix), fy0 = floorf(iy);
  float fx = ix - fx0, fy = iy - fy0;
  float ex = 1.0f - fx, ey = 1.0f - fy;
  r.x0 = (int64_t)fx0;
  r.y0 = (int64_t)fy0;
  r.w[0] = ex * ey;
  r.w[1] = fx * ey;
  r.w[2] = ex * fy;
  r.w[3] = fx * fy;
  return r;
}

/* One f32 product that no later add fuses into an fma (CUDA: __fmul_rn;
 * C: a separate statement's product, which ISO C11 never contracts with
 * another statement's add). */
GF_ADA_FN float gf_ada_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/* The 1-channel rule (ops.h): s and a_3 of the mean of rows 0..2 of m. */
GF_ADA_FN void gf_ada_luma_coef(const float *m, float *s, float *t) {
  float a[4];
  for (int k = 0; k < 4; k++) a[k] = ((m[k] + m[4 + k]) + m[8 + k]) / 3.0f;
  *s = (a[0] + a[1]) + a[2];
  *t = a[3];
}

/* Row c of a 3x3 product: fmaf(r[2], v2, fmaf(r[1], v1, r[0] v0)), the
 * entries r[0], r[stride], r[2 stride]. */
GF_ADA_FN float gf_ada_dot3(const float *r, int stride, float v0, float v1,
                            float v2) {
  float p = gf_ada_mul(r[0], v0);
  return fmaf(r[2 * stride], v2, fmaf(r[stride], v1, p));
}

#endif
