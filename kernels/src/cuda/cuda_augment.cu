/* cuda_augment.cu - the CUDA backend's DiffAugment kernels (see
 * cuda_augment.h for the launchers' contracts): colour forward and
 * transpose, one block of GF_RED_LANES threads per sample; translation and
 * cutout forward and transpose, one thread per element. Every sum and
 * every f32 operation is the CPU backend's (cpu_augment.c): a pixel's
 * channel sum in f32 in channel order, a sample's sum by the double lanes
 * and tree of reduce_order.h, each step one explicitly rounded __f*_rn
 * operation (nvcc contracts nothing into an FMA), the geometry from
 * augment_impl.h: results are the CPU's bits. No __restrict__ on data
 * pointers where the API lets y be x or dx be dy. */
#include "../augment_impl.h"
#include "../reduce_order.h"
#include "cuda_augment.h"
#include "cuda_lanes.cuh"
#include "cuda_launch.cuh"

namespace {

constexpr int kLanes = GF_RED_LANES;

/* One block of kLanes threads per sample (blockIdx.x): y = contrast(
 * saturation(x + b)); y may be x (a thread reads and writes only its own
 * pixels' channels before the barrier, and the contrast's elements after
 * it). */
__global__ void color_fwd_k(const float *x, const float *__restrict__ params,
                            int64_t C, int64_t HW, float *y) {
  __shared__ double part[kLanes];
  int64_t k = blockIdx.x, n = C * HW;
  const float *pr = params + k * GF_AUGI_NPARAMS;
  float b = pr[GF_AUGI_B], s = pr[GF_AUGI_S], c = pr[GF_AUGI_C];
  const float *xs = x + k * n;
  float *ys = y + k * n;
  float fc = (float)C;
  for (int64_t p = threadIdx.x; p < HW; p += kLanes) {
    float acc = 0.0f;
    for (int64_t ch = 0; ch < C; ch++)
      acc = __fadd_rn(acc, __fadd_rn(xs[ch * HW + p], b));
    float m = __fdiv_rn(acc, fc);
    for (int64_t ch = 0; ch < C; ch++) {
      float t = __fadd_rn(xs[ch * HW + p], b);
      ys[ch * HW + p] = __fadd_rn(__fmul_rn(__fsub_rn(t, m), s), m);
    }
  }
  __syncthreads();
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kLanes) sum += (double)ys[i];
  part[threadIdx.x] = sum;
  float M = __fdiv_rn((float)lanes_tree(part), (float)n);
  for (int64_t i = threadIdx.x; i < n; i += kLanes)
    ys[i] = __fadd_rn(__fmul_rn(__fsub_rn(ys[i], M), c), M);
}

/* One block of kLanes threads per sample: dx = the transpose of the colour
 * map applied to g (contrast's, then saturation's); dx may be g (the sums
 * read all of g before the tree's barriers, then each thread writes). */
__global__ void color_bwd_k(const float *g, const float *__restrict__ params,
                            int64_t C, int64_t HW, float *dx) {
  __shared__ double part[kLanes];
  int64_t k = blockIdx.x, n = C * HW;
  const float *pr = params + k * GF_AUGI_NPARAMS;
  float s = pr[GF_AUGI_S], c = pr[GF_AUGI_C];
  const float *gs = g + k * n;
  float *os = dx + k * n;
  double s1 = 0.0, s2 = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kLanes) {
    float v = gs[i];
    s1 += (double)v;
    s2 += (double)__fmul_rn(v, c);
  }
  part[threadIdx.x] = s1;
  float f1 = (float)lanes_tree(part);
  part[threadIdx.x] = s2;
  float f2 = (float)lanes_tree(part);
  float gg = __fdiv_rn(__fsub_rn(f1, f2), (float)n);
  for (int64_t i = threadIdx.x; i < n; i += kLanes)
    os[i] = __fadd_rn(__fmul_rn(gs[i], c), gg);
  __syncthreads();
  float fc = (float)C;
  for (int64_t p = threadIdx.x; p < HW; p += kLanes) {
    float a1 = 0.0f, a2 = 0.0f;
    for (int64_t ch = 0; ch < C; ch++) {
      float v = os[ch * HW + p];
      a1 = __fadd_rn(a1, v);
      a2 = __fadd_rn(a2, __fmul_rn(v, s));
    }
    float gp = __fdiv_rn(__fsub_rn(a1, a2), fc);
    for (int64_t ch = 0; ch < C; ch++) {
      float v = os[ch * HW + p];
      os[ch * HW + p] = __fadd_rn(__fmul_rn(v, s), gp);
    }
  }
}

/* Translation and cutout, one thread per output element: forward
 * y[i, j] = x[i + tx, j + ty] (inside, else 0) times the mask at (i, j);
 * transpose dx[i, j] = 0 + dy[i - tx, j - ty] mask(i - tx, j - ty)
 * (inside, else 0), cpu_augment.c's geom_fwd / geom_bwd. in and out must
 * not overlap when trans is set; else out may be in. */
__global__ void geom_k(const float *in, const float *__restrict__ params,
                       int64_t N, int64_t C, int64_t H, int64_t W, int64_t S0,
                       int64_t S1, int trans, int cut, int bwd, float *out) {
  int64_t HW = H * W, total = N * C * HW;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t k = e / (C * HW), q = e % HW, i = q / W, j = q - i * W;
    int64_t plane = e - q; /* start of this (sample, channel) plane */
    gf_aug_geom g = gf_aug_geom_of(params + k * GF_AUGI_NPARAMS, H, W, S0, S1);
    int64_t dir = bwd ? -1 : 1;
    int64_t si = trans ? i + dir * g.tx : i, sj = trans ? j + dir * g.ty : j;
    float v = 0.0f;
    if (si >= 0 && si < H && sj >= 0 && sj < W) {
      v = in[plane + si * W + sj];
      if (cut) {
        /* the mask at the output position (fwd) or at the dy position
         * the value came from (bwd) */
        int64_t mi = bwd ? si : i, mj = bwd ? sj : j;
        v = __fmul_rn(v, gf_aug_cut(&g, mi, mj) ? 0.0f : 1.0f);
      }
      if (bwd && trans) v = __fadd_rn(0.0f, v);
    }
    out[e] = v;
  }
}

cudaError_t launch_geom(cudaStream_t s, const gf_cuk_aug_args *a,
                        const float *in, const float *params, int bwd,
                        float *out) {
  int64_t total = a->N * a->C * a->H * a->W;
  geom_k<<<blocks_for(total), kThreads, 0, s>>>(in, params, a->N, a->C, a->H,
                                                a->W, a->S0, a->S1, a->trans,
                                                a->cut, bwd, out);
  return cudaGetLastError();
}

size_t bytes_of(const gf_cuk_aug_args *a) {
  return (size_t)(a->N * a->C * a->H * a->W) * sizeof(float);
}

}  // namespace

extern "C" {

size_t gf_cuk_augment_scratch(const gf_cuk_aug_args *a, int bwd, int inplace) {
  int need = a->trans && (inplace || (!bwd && a->color));
  return need ? bytes_of(a) : 0;
}

cudaError_t gf_cuk_augment_fwd(cudaStream_t s, const gf_cuk_aug_args *a,
                               const float *x, const float *params, float *y,
                               void *scratch) {
  if (a->N <= 0) return cudaSuccess;
  int geom = a->trans || a->cut;
  if (!a->color && !geom)
    return x == y ? cudaSuccess
                  : cudaMemcpyAsync(y, x, bytes_of(a), cudaMemcpyDeviceToDevice,
                                    s);
  const float *src = x;
  cudaError_t e;
  if (a->color) {
    /* colour into the scratch when a translation follows, else into y */
    float *dst = a->trans ? (float *)scratch : y;
    color_fwd_k<<<(unsigned)a->N, kLanes, 0, s>>>(x, params, a->C, a->H * a->W,
                                                  dst);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    src = dst;
  } else if (a->trans && x == y) {
    e = cudaMemcpyAsync(scratch, x, bytes_of(a), cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess) return e;
    src = (const float *)scratch;
  }
  if (!geom) return cudaSuccess;
  return launch_geom(s, a, src, params, 0, y);
}

cudaError_t gf_cuk_augment_bwd(cudaStream_t s, const gf_cuk_aug_args *a,
                               const float *params, const float *dy, float *dx,
                               void *scratch) {
  if (a->N <= 0) return cudaSuccess;
  int geom = a->trans || a->cut;
  if (!a->color && !geom)
    return dy == dx ? cudaSuccess
                    : cudaMemcpyAsync(dx, dy, bytes_of(a),
                                      cudaMemcpyDeviceToDevice, s);
  const float *src = dy;
  cudaError_t e;
  if (geom) {
    if (a->trans && dy == dx) {
      e = cudaMemcpyAsync(scratch, dy, bytes_of(a), cudaMemcpyDeviceToDevice,
                          s);
      if (e != cudaSuccess) return e;
      src = (const float *)scratch;
    }
    if ((e = launch_geom(s, a, src, params, 1, dx)) != cudaSuccess) return e;
    src = dx;
  }
  if (!a->color) return cudaSuccess;
  color_bwd_k<<<(unsigned)a->N, kLanes, 0, s>>>(src, params, a->C, a->H * a->W,
                                                dx);
  return cudaGetLastError();
}

}  // extern "C"
