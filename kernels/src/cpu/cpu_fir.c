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
#include <math.h>

#include "../fir_taps.h"
#include "cpu_backend.h"

gf_status gf_cpu_upfirdn2d(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, gf_tensor *y, gf_err *err) {
  (void)err;
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t OH = y->shape[2], OW = y->shape[3];
  int64_t rows = y->shape[0] * y->shape[1] * OH; /* output rows, all planes */
  int fh = (int)f->shape[0], fw = (int)f->shape[1];
  int uy = p->up[0], ux = p->up[1], vy = p->down[0], vx = p->down[1];
  int x0 = p->pad[0], y0 = p->pad[2], flip = p->flip;
  float gain = p->gain;
  const float *X = x->data, *F = f->data;
  float *Y = y->data;
  int nt = ctx->nthreads;
  /* Work: output elements times the taps of a window, the most it reads. */
  int64_t work = rows * OW * ((int64_t)fh * fw / ((int64_t)uy * ux) + 1);
#pragma omp parallel for num_threads(nt) if (work >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t plane = r / OH, i = r - plane * OH;
    const float *xp = X + plane * H * W;
    float *yr = Y + r * OW;
    gf_fir_taps ty = gf_fir_axis_taps(i, H, uy, vy, y0, fh);
    for (int64_t j = 0; j < OW; j++) {
      gf_fir_taps tx = gf_fir_axis_taps(j, W, ux, vx, x0, fw);
      float acc = 0.0f;
      int64_t sr = ty.src0;
      for (int64_t pp = ty.first; pp < ty.end; pp += uy, sr++) {
        const float *xrow = xp + sr * W;
        /* window row pp's weights: f's row pp (flip 1), else row fh-1-pp
         * read backwards */
        const float *fr = flip ? F + pp * fw : F + (fh - 1 - pp) * fw;
        int64_t sc = tx.src0;
        for (int64_t q = tx.first; q < tx.end; q += ux, sc++) {
          float w = flip ? fr[q] : fr[fw - 1 - q];
          acc = fmaf(xrow[sc], w, acc);
        }
      }
      yr[j] = acc * gain;
    }
  }
  return GF_OK;
}
