/* cpu_fir.c - the CPU backend's FIR resampling, upfirdn2d (ops.h, "FIR
 * resampling"): upsampling by zero insertion, padding, a 2-D FIR filter
 * and downsampling in one pass, without forming the upsampled or padded
 * plane. The backward is the same op with derived parameters (ops.c), so
 * this is the only loop. Plain C with OpenMP threads (no oneDNN).
 *
 * Each output element is computed from its own inputs exactly as ops.h
 * states: acc starts at +0.0f, the window's taps that land on samples of
 * the upsampled input (fir_taps.h; zero-inserted and padded taps are
 * skipped) are added in row-major window order, each by one fmaf, and the
 * sum is multiplied by gain once. fmaf is one IEEE operation, so neither
 * the compiler's contraction nor the thread count changes the bits, and
 * the CUDA twin (cuda_fir.cu, __fmaf_rn) gives the same. The loops split
 * whole output rows of the stacked planes (N C OH rows) over the threads.
 * Argument checking happened in ops.c. */
/* The FMA clones must fuse only the fmaf's written: clang would contract
 * a * b + c within an expression where the target has FMA (gcc's ISO C
 * mode, -std=c11, does not). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include <math.h>

#include "../fir_taps.h"
#include "cpu_backend.h"

/* One call's geometry, and its column classes (see fir_row). */
typedef struct fir_job {
  const float *X, *F;
  float *Y;
  int64_t H, W, OH, OW;
  int fh, fw, uy, ux, vy, vx, x0, y0, flip;
  float gain;
  int64_t P, D;        /* period of the columns' tap pattern and the input
                          columns it advances by */
  int64_t jlo, jhi;    /* interior columns: the whole window inside */
} fir_job;

#define FIR_CHUNK 256 /* columns of one class accumulated at once */

/* Output element (r, j) alone: the loop ops.h states. */
static GF_ALWAYS_INLINE float fir_one(const fir_job *jb, const float *xp,
                                      gf_fir_taps ty, int64_t j) {
  int fw = jb->fw, fh = jb->fh, uy = jb->uy, ux = jb->ux;
  const float *F = jb->F;
  gf_fir_taps tx = gf_fir_axis_taps(j, jb->W, ux, jb->vx, jb->x0, fw);
  float acc = 0.0f;
  int64_t sr = ty.src0;
  for (int64_t pp = ty.first; pp < ty.end; pp += uy, sr++) {
    const float *xrow = xp + sr * jb->W;
    /* window row pp's weights: f's row pp (flip 1), else row fh-1-pp
     * read backwards */
    const float *fr = jb->flip ? F + pp * fw : F + (fh - 1 - pp) * fw;
    int64_t sc = tx.src0;
    for (int64_t q = tx.first; q < tx.end; q += ux, sc++) {
      float w = jb->flip ? fr[q] : fr[fw - 1 - q];
      acc = fmaf(xrow[sc], w, acc);
    }
  }
  return acc * jb->gain;
}

/* Output row r (of the stacked planes' N C OH rows). Border columns one
 * by one; the interior ones class by class: the columns j = c, c + P, ...
 * share their taps, the input column moving D per member, so the window's
 * taps run outermost, in ops.h's order, over a chunk of members at once.
 * Each element still starts at +0.0f and takes its taps in row-major
 * window order by one fmaf each: the same bits as fir_one (test_fir.c
 * checks both against plain loops). */
static GF_ALWAYS_INLINE void fir_row(const fir_job *jb, int64_t r) {
  int64_t H = jb->H, W = jb->W, OH = jb->OH, OW = jb->OW;
  int fh = jb->fh, fw = jb->fw, uy = jb->uy, ux = jb->ux;
  const float *F = jb->F;
  int64_t plane = r / OH, i = r - plane * OH;
  const float *xp = jb->X + plane * H * W;
  float *yr = jb->Y + r * OW;
  gf_fir_taps ty = gf_fir_axis_taps(i, H, uy, jb->vy, jb->y0, fh);
  int64_t jlo = jb->jlo, jhi = jb->jhi, P = jb->P, D = jb->D;
  for (int64_t j = 0; j < OW && j < jlo; j++) yr[j] = fir_one(jb, xp, ty, j);
  for (int64_t j = jhi > jlo ? jhi : jlo; j < OW; j++)
    yr[j] = fir_one(jb, xp, ty, j);
  float acc[FIR_CHUNK];
  for (int64_t c = jlo; c < jlo + P && c < jhi; c++) {
    gf_fir_taps tx = gf_fir_axis_taps(c, W, ux, jb->vx, jb->x0, fw);
    int64_t members = (jhi - c + P - 1) / P;
    for (int64_t m0 = 0; m0 < members; m0 += FIR_CHUNK) {
      int64_t mn = members - m0 < FIR_CHUNK ? members - m0 : FIR_CHUNK;
      for (int64_t m = 0; m < mn; m++) acc[m] = 0.0f;
      int64_t sr = ty.src0;
      for (int64_t pp = ty.first; pp < ty.end; pp += uy, sr++) {
        const float *fr = jb->flip ? F + pp * fw : F + (fh - 1 - pp) * fw;
        int64_t sc = tx.src0 + m0 * D;
        for (int64_t q = tx.first; q < tx.end; q += ux, sc++) {
          float w = jb->flip ? fr[q] : fr[fw - 1 - q];
          const float *xs = xp + sr * W + sc;
          if (D == 1)
            for (int64_t m = 0; m < mn; m++) acc[m] = fmaf(xs[m], w, acc[m]);
          else
            for (int64_t m = 0; m < mn; m++)
              acc[m] = fmaf(xs[m * D], w, acc[m]);
        }
      }
      float *yc = yr + c + m0 * P;
      for (int64_t m = 0; m < mn; m++) yc[m * P] = acc[m] * jb->gain;
    }
  }
}

static void fir_rows_plain(const void *jb, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; r++) fir_row(jb, r);
}

#if GF_HAVE_FMA_CLONE
GF_TARGET_FMA static void fir_rows_fma(const void *jb, int64_t r0,
                                       int64_t r1) {
  for (int64_t r = r0; r < r1; r++) fir_row(jb, r);
}
#endif

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The columns whose whole window lies inside the upsampled input:
 * a0 = j vx - x0 >= 0 and W ux - a0 >= fw, as [jlo, jhi); the period P of
 * the tap pattern (a0 mod ux) and the input columns D it moves by. */
static void fir_classes(fir_job *jb) {
  int64_t vx = jb->vx, ux = jb->ux;
  jb->P = ux / gcd64(vx, ux);
  jb->D = jb->P * vx / ux;
  int64_t lo = jb->x0 > 0 ? (jb->x0 + vx - 1) / vx : 0; /* a0 >= 0 */
  int64_t top = jb->W * ux - jb->fw + jb->x0;            /* j vx <= top */
  int64_t hi = top < 0 ? 0 : top / vx + 1;
  if (hi > jb->OW) hi = jb->OW;
  if (lo > hi) lo = hi;
  jb->jlo = lo;
  jb->jhi = hi;
}

gf_status gf_cpu_upfirdn2d(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, gf_tensor *y, gf_err *err) {
  (void)err;
  fir_job jb = {x->data, f->data, y->data, x->shape[2], x->shape[3],
                y->shape[2], y->shape[3], (int)f->shape[0], (int)f->shape[1],
                p->up[0], p->up[1], p->down[0], p->down[1], p->pad[0],
                p->pad[2], p->flip, p->gain, 1, 1, 0, 0};
  fir_classes(&jb);
  int64_t rows = y->shape[0] * y->shape[1] * jb.OH; /* all planes' rows */
  /* Work: output elements times the taps of a window, the most it reads. */
  int64_t work = rows * jb.OW *
                 ((int64_t)jb.fh * jb.fw / ((int64_t)jb.uy * jb.ux) + 1);
  gf_cpu_run_ranges(fir_rows_plain, GF_FMA_FN(fir_rows_fma), &jb, rows, work,
                    ctx->nthreads);
  return GF_OK;
}
