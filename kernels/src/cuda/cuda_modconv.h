/* cuda_modconv.h - launchers of the modulated convolution's weight kernels
 * (cuda_modconv.cu), callable from C: the per-sample modulation and
 * demodulation of a weight and its gradient (ops.h, "modulated
 * convolution"). Each queues its kernels on stream and returns
 * cudaGetLastError() of the last launch (cudaSuccess when there was
 * nothing to do); none synchronizes. Pointers are device pointers to dense
 * f32 data. Every result is the CPU backend's (cpu_modconv.c) bits: the
 * same sums in the same order (reduce_order.h's double lanes for the row
 * sums and ds, n in order for dw), the same f32 and double roundings
 * (explicit __f*_rn / __d*_rn intrinsics: nothing is contracted into an
 * FMA). Shapes: w [Cout, K] with K = Cin khw, s [N, Cin], wmod / dwmod /
 * gws [N Cout, K], dcoef [N, Cout]. Not a public header. */
#ifndef GF_CUDA_MODCONV_H
#define GF_CUDA_MODCONV_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* wmod[r, k] = (w[o, k] s[n, k / khw]) d[r] for r = n Cout + o, d[r] = 1
 * when !demodulate, else (float)(1 / sqrt(S + eps)) with S the lane sum
 * of the squared products; dcoef[r] = d[r] (dcoef NULL: not written). One
 * block of GF_RED_LANES threads per row. */
cudaError_t gf_cuk_modconv_weight_fwd(cudaStream_t s, const float *w,
                                      const float *st, float *wmod,
                                      float *dcoef, int64_t N, int64_t Cout,
                                      int64_t Cin, int64_t khw, int demodulate,
                                      float eps);
/* Demodulating only: gws[r, k] = g d - ws c, c = (float)(((d d) d) G), G
 * the lane sum over k of g ws (ws = w s recomputed, d = dcoef[r], g =
 * dwmod). One block of GF_RED_LANES threads per row. */
cudaError_t gf_cuk_modconv_ws_grad(cudaStream_t s, const float *w,
                                   const float *st, const float *dcoef,
                                   const float *dwmod, float *gws, int64_t N,
                                   int64_t Cout, int64_t Cin, int64_t khw);
/* dw[o, k] = (accumulate ? dw + t : t), t = (float) of the double sum over
 * n = 0, 1, ... of gws[n Cout + o, k] s[n, k / khw]; one thread per
 * element (N may be 0: t = 0). dsv (if non-NULL) [N, Cin]: ds[n, i] the
 * lane sum over j = (o, ab) of gws[n Cout + o, i khw + ab] w[o, i khw +
 * ab], one block per (n, i). dw NULL: skipped. */
cudaError_t gf_cuk_modconv_weight_grads(cudaStream_t s, const float *w,
                                        const float *st, const float *gws,
                                        float *dw, float *ds, int64_t N,
                                        int64_t Cout, int64_t Cin, int64_t khw,
                                        int accumulate);

/* gf_modconv_demod_jvp over rows (n, o) of K = Cin khw: wmd (may be NULL)
 * and, with g non-NULL, gw and gwd ([N Cout, K] each); one thread per row.
 * N may be 0. */
cudaError_t gf_cuk_modconv_demod_jvp(cudaStream_t s, const float *w,
                                     const float *st, const float *sd,
                                     const float *dcoef, const float *g,
                                     const float *gd, float *wmd, float *gw,
                                     float *gwd, int64_t N, int64_t Cout,
                                     int64_t Cin, int64_t khw);

#ifdef __cplusplus
}
#endif

#endif
