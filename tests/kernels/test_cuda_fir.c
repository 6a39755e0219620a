/* test_cuda_fir.c - FIR resampling on the CUDA backend (label gpu; exits 77
 * where there is no GPU): gf_upfirdn2d_fwd / _bwd against the CPU twin,
 * bit for bit, and against PyTorch's numbers (golden/fir.safetensors, the
 * tolerance of test_fir.c: 2 (taps + 2) ulp of each element's |gain|
 * sum |terms|). Both backends visit the same taps (kernels/src/fir_taps.h)
 * in ops.h's order with one fmaf per tap and one multiply by the gain
 * (__fmaf_rn / __fmul_rn on the GPU), so any difference is a bug.
 * Cases, each run twice for identical bits: the five golden cases; 120
 * random geometries (factors 1..3, pads -3..4, filters 1..5 a side, flip
 * 0 / 1, random gain); StyleGAN-sized planes: 2x upsampling of
 * [8,64,64,64] (8M outputs: several grid-stride rounds), 2x downsampling
 * of [8,64,128,128], a blur of [4,32,67,61] and the backward of each; an
 * infinite filter tap that meets only inserted zeros (the other outputs
 * stay finite, as on the CPU). A host tensor on the CUDA ctx is refused.
 * No NaN in the data: NaN payloads may differ between the CPU and the
 * GPU without either being wrong.
 * Argument 1: the golden file (default GF_FIR_GOLDEN, the source tree's,
 * from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_fir.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_FIR_GOLDEN
#define GF_FIR_GOLDEN "fir.safetensors"
#endif

static gf_ctx cpu, gpu;
static kt_rng rng = {7373};

/* An owned twin of the output shape of upfirdn2d(x, f, p), filled with a
 * value no op produces. */
static kt_twin out_twin(const gf_tensor *x, const gf_tensor *f,
                        const gf_fir_params *p) {
  int64_t os[4];
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_out_shape(x, f, p, os, &e) == GF_OK);
  return kt_twin_rnd(&rng, 4, os[0], os[1], os[2], os[3], 5, 6);
}

/* Forward and backward (of a random upstream gradient) of x by f on both
 * backends, twice on the GPU: the same bits as the CPU each time. */
static void run(const char *what, const kt_twin *x, const kt_twin *f,
                const gf_fir_params *p) {
  kt_twin y = out_twin(&x->h, &f->h, p);
  kt_twin g = kt_twin_rnd(&rng, 4, y.h.shape[0], y.h.shape[1], y.h.shape[2],
                          y.h.shape[3], -1, 1);
  kt_twin dx = kt_twin_rnd(&rng, 4, x->h.shape[0], x->h.shape[1], x->h.shape[2],
                           x->h.shape[3], 5, 6);
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_fwd(&cpu, &x->h, &f->h, p, &y.h, &e) == GF_OK);
  char label[96];
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_upfirdn2d_fwd(&gpu, &x->d, &f->d, p, &y.d, &e) == GF_OK, "%s: %s",
           what, e.msg);
    snprintf(label, sizeof label, "%s y", what);
    KT_SAME(label, &y);
  }
  REQUIRE(gf_upfirdn2d_bwd(&cpu, &f->h, p, &g.h, &dx.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_upfirdn2d_bwd(&gpu, &f->d, p, &g.d, &dx.d, &e) == GF_OK, "%s: %s",
           what, e.msg);
    snprintf(label, sizeof label, "%s dx", what);
    KT_SAME(label, &dx);
  }
  kt_twin_free(&y);
  kt_twin_free(&g);
  kt_twin_free(&dx);
}

/* ---- golden -------------------------------------------------------------- */

/* out's device half against its host half (the CPU's, bit for bit),
 * against the loops' ref (bit for bit) and against PyTorch's want (within
 * kt_fir_torch_tol of absum, the elements' |gain| sum |terms|). */
static void check_out(const char *what, const kt_twin *out,
                      const gf_tensor *ref, const gf_tensor *want,
                      const double *absum, int taps) {
  KT_SAME(what, out);
  CHECKF(kt_diff_bytes(&out->d, ref) == 0, "%s: not the loops' bits", what);
  double *tol = kt_fir_torch_tol(absum, (size_t)gf_tensor_numel(want), taps);
  KT_VS_TORCH(what, &out->d, want, 0.0, 0.0, 0.0, tol);
  free(tol);
}

static void test_golden(const gf_st_file *file, const char *name) {
  kt_fir_case c = kt_fir_case_load(file, name);
  int taps = (int)(c.f.shape[0] * c.f.shape[1]);
  kt_twin x = kt_twin_of(&c.x), f = kt_twin_of(&c.f), g = kt_twin_of(&c.g);
  kt_twin y = out_twin(&c.x, &c.f, &c.p);
  kt_twin dx = kt_twin_rnd(&rng, 4, c.x.shape[0], c.x.shape[1], c.x.shape[2],
                           c.x.shape[3], 5, 6);
  double *ys = kt_dzeros((size_t)gf_tensor_numel(&c.y));
  double *dxs = kt_dzeros((size_t)gf_tensor_numel(&c.x));
  gf_tensor ry = kt_clone(&c.y), rdx = kt_clone(&c.dx);
  kt_fir_ref(&c.x, &c.f, &c.p, &ry, ys);
  kt_fir_ref_adj(&c.g, &c.f, &c.p, &rdx, dxs);
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_fwd(&cpu, &x.h, &f.h, &c.p, &y.h, &e) == GF_OK);
  REQUIRE(gf_upfirdn2d_bwd(&cpu, &f.h, &c.p, &g.h, &dx.h, &e) == GF_OK);
  CHECKF(gf_upfirdn2d_fwd(&gpu, &x.d, &f.d, &c.p, &y.d, &e) == GF_OK, "%s",
         e.msg);
  CHECKF(gf_upfirdn2d_bwd(&gpu, &f.d, &c.p, &g.d, &dx.d, &e) == GF_OK, "%s",
         e.msg);
  char label[64];
  snprintf(label, sizeof label, "%s.y", name);
  check_out(label, &y, &ry, &c.y, ys, taps);
  snprintf(label, sizeof label, "%s.dx", name);
  check_out(label, &dx, &rdx, &c.dx, dxs, taps);
  free(ys);
  free(dxs);
  gf_tensor_free(&ry);
  gf_tensor_free(&rdx);
  kt_twin *tws[] = {&x, &f, &g, &y, &dx};
  for (int k = 0; k < 5; k++) kt_twin_free(tws[k]);
  kt_fir_case_free(&c);
}

/* ---- random and large cases against the CPU ------------------------------ */

static int rnd_int(int lo, int hi) { /* in [lo, hi] */
  int v = lo + (int)kt_uniform(&rng, 0.0, hi - lo + 1);
  return v > hi ? hi : v;
}

static void test_random(void) {
  int ran = 0;
  for (int t = 0; t < 120; t++) {
    gf_fir_params p;
    for (int d = 0; d < 2; d++) {
      p.up[d] = rnd_int(1, 3);
      p.down[d] = rnd_int(1, 3);
    }
    for (int k = 0; k < 4; k++) p.pad[k] = rnd_int(-3, 4);
    p.flip = rnd_int(0, 1);
    p.gain = (float)kt_uniform(&rng, -2.0, 2.0);
    kt_twin f = kt_twin_rnd(&rng, 2, rnd_int(1, 5), rnd_int(1, 5), 1, 1, -1, 1);
    kt_twin x = kt_twin_rnd(&rng, 4, rnd_int(1, 2), rnd_int(1, 3),
                            rnd_int(1, 9), rnd_int(1, 9), -2, 2);
    int64_t os[4];
    gf_err e = {0};
    if (gf_upfirdn2d_out_shape(&x.h, &f.h, &p, os, &e) == GF_OK) {
      char what[48];
      snprintf(what, sizeof what, "random %d", t);
      run(what, &x, &f, &p);
      ran++;
    }
    kt_twin_free(&f);
    kt_twin_free(&x);
  }
  printf("random geometries: %d of 120 with an output\n", ran);
  CHECK(ran > 80);
}

static void test_large(void) {
  float k[4] = {1, 3, 3, 1};
  gf_tensor fb = kt_tensor(2, 4, 4, 1, 1);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      ((float *)fb.data)[a * 4 + b] = k[a] * k[b] / 64;
  kt_twin f = kt_twin_of(&fb);
  gf_fir_params up2 = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
  gf_fir_params down2 = {{1, 1}, {2, 2}, {1, 1, 1, 1}, 0, 1.0f};
  gf_fir_params blur = {{1, 1}, {1, 1}, {2, 1, 2, 1}, 1, 1.0f};
  kt_twin x1 = kt_twin_rnd(&rng, 4, 8, 64, 64, 64, -2, 2);
  run("large up2", &x1, &f, &up2);
  kt_twin x2 = kt_twin_rnd(&rng, 4, 8, 64, 128, 128, -2, 2);
  run("large down2", &x2, &f, &down2);
  kt_twin x3 = kt_twin_rnd(&rng, 4, 4, 32, 67, 61, -2, 2);
  run("large blur", &x3, &f, &blur);
  kt_twin *tws[] = {&f, &x1, &x2, &x3};
  for (int i = 0; i < 4; i++) kt_twin_free(tws[i]);
  gf_tensor_free(&fb);
}

/* test_fir.c's infinite tap on inserted zeros, on the GPU. */
static void test_skip_zero_taps(void) {
  gf_tensor xh = kt_tensor(4, 1, 1, 3, 3), fh = kt_tensor(2, 2, 2, 1, 1);
  float *xp = xh.data, *fp = fh.data;
  for (int i = 0; i < 9; i++) xp[i] = (float)(i + 1);
  fp[0] = INFINITY;
  fp[1] = fp[2] = fp[3] = 0.5f;
  kt_twin x = kt_twin_of(&xh), f = kt_twin_of(&fh);
  gf_fir_params p = {{2, 2}, {1, 1}, {1, 0, 1, 0}, 1, 1.0f};
  kt_twin y = out_twin(&xh, &fh, &p);
  gf_err e = {0};
  REQUIRE(gf_upfirdn2d_fwd(&cpu, &x.h, &f.h, &p, &y.h, &e) == GF_OK);
  CHECKF(gf_upfirdn2d_fwd(&gpu, &x.d, &f.d, &p, &y.d, &e) == GF_OK, "%s",
         e.msg);
  KT_SAME("infinite tap on zeros", &y);
  const float *yp = y.h.data;
  int finite = 0;
  for (int i = 0; i < 36; i++) finite += isfinite(yp[i]);
  CHECK(finite == 27);
  kt_twin *tws[] = {&x, &f, &y};
  for (int i = 0; i < 3; i++) kt_twin_free(tws[i]);
  gf_tensor_free(&xh);
  gf_tensor_free(&fh);
}

static void test_host_refused(void) {
  kt_twin x = kt_twin_rnd(&rng, 4, 1, 2, 3, 4, -1, 1);
  kt_twin f = kt_twin_rnd(&rng, 2, 4, 4, 1, 1, -1, 1);
  gf_fir_params p = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
  kt_twin y = out_twin(&x.h, &f.h, &p);
  gf_err e = {0};
  CHECK(gf_upfirdn2d_fwd(&gpu, &x.h, &f.d, &p, &y.d, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(&gpu, &x.d, &f.h, &p, &y.d, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(&gpu, &x.d, &f.d, &p, &y.h, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(&gpu, &f.h, &p, &y.d, &x.d, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(&gpu, &f.d, &p, &y.h, &x.d, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_bwd(&gpu, &f.d, &p, &y.d, &x.h, &e) == GF_EINVAL);
  CHECK(gf_upfirdn2d_fwd(&gpu, &x.d, &f.d, &p, &y.d, &e) == GF_OK);
  kt_twin *tws[] = {&x, &f, &y};
  for (int i = 0; i < 3; i++) kt_twin_free(tws[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file file;
  kt_gold_open(&file, argc > 1 ? argv[1] : GF_FIR_GOLDEN);
  kt_cpu_ctx(&cpu, 4);
  const char *cases[] = {"up2", "down2", "blur", "asym", "flip"};
  for (int k = 0; k < 5; k++) test_golden(&file, cases[k]);
  test_random();
  test_large();
  test_skip_zero_taps();
  test_host_refused();
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  gf_st_file_free(&file);
  return check_report();
}
