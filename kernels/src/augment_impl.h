/* augment_impl.h - what the CPU and the CUDA backend share of DiffAugment
 * (gf_augment_fwd / gf_augment_bwd in gf/ops.h): how a params row becomes
 * integer shifts and the cutout block. Private to kernels/; plain C and
 * CUDA C++ (included by cpu_augment.c and cuda_augment.cu), so both
 * backends read a row the same way. The sums follow reduce_order.h. */
#ifndef GF_AUGMENT_IMPL_H
#define GF_AUGMENT_IMPL_H

#include <stdint.h>

/* The columns of a params row, GF_AUG_P_* of gf/ops.h (which CUDA C++
 * does not include; cpu_augment.c checks that they agree), and the row
 * length GF_AUG_NPARAMS. */
#define GF_AUGI_B 0
#define GF_AUGI_S 1
#define GF_AUGI_C 2
#define GF_AUGI_TX 3
#define GF_AUGI_TY 4
#define GF_AUGI_OX 5
#define GF_AUGI_OY 6
#define GF_AUGI_NPARAMS 7

#ifdef __CUDACC__
#define GF_AUG_FN static inline __host__ __device__
#else
#define GF_AUG_FN static inline
#endif

/* Bound of a shift or offset entry: |v| beyond it (and NaN) is clamped,
 * so the integer arithmetic below cannot overflow. */
#define GF_AUG_INT_MAX 0x1p30f

/* A shift or offset entry as an integer: truncated toward zero after
 * clamping to [-2^30, 2^30] (NaN counts as +2^30). */
GF_AUG_FN int64_t gf_aug_int(float v) {
  float c = v < -GF_AUG_INT_MAX ? -GF_AUG_INT_MAX
                                : (v <= GF_AUG_INT_MAX ? v : GF_AUG_INT_MAX);
  return (int64_t)c;
}

GF_AUG_FN int64_t gf_aug_clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

/* One sample's geometry: the shifts, and the zeroed block of the cutout,
 * rows r0..r1 and columns c0..c1 inclusive. The official mask zeroes
 * (clamp(a + o - S/2, 0, n-1)) for a = 0..S-1: clamp is monotone and maps
 * consecutive integers to consecutive or equal ones, so that set is the
 * interval [clamp(o - S/2), clamp(o - S/2 + S - 1)] (edge rows repeat:
 * the block is clipped at the border). */
typedef struct gf_aug_geom {
  int64_t tx, ty;         /* y[i, j] = x[i + tx, j + ty] inside, else 0 */
  int64_t r0, r1, c0, c1; /* the cutout block */
} gf_aug_geom;

/* The geometry of params row p for an H x W image with cutout sizes S0
 * (rows), S1 (columns). */
GF_AUG_FN gf_aug_geom gf_aug_geom_of(const float *p, int64_t H, int64_t W,
                                     int64_t S0, int64_t S1) {
  gf_aug_geom g;
  g.tx = gf_aug_int(p[GF_AUGI_TX]);
  g.ty = gf_aug_int(p[GF_AUGI_TY]);
  int64_t lo = gf_aug_int(p[GF_AUGI_OX]) - S0 / 2;
  g.r0 = gf_aug_clamp(lo, 0, H - 1);
  g.r1 = gf_aug_clamp(lo + S0 - 1, 0, H - 1);
  lo = gf_aug_int(p[GF_AUGI_OY]) - S1 / 2;
  g.c0 = gf_aug_clamp(lo, 0, W - 1);
  g.c1 = gf_aug_clamp(lo + S1 - 1, 0, W - 1);
  return g;
}

/* True when (i, j) lies in g's cutout block. */
GF_AUG_FN int gf_aug_cut(const gf_aug_geom *g, int64_t i, int64_t j) {
  return i >= g->r0 && i <= g->r1 && j >= g->c0 && j <= g->c1;
}

#endif
