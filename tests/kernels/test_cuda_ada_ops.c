/* test_cuda_ada_ops.c - the CUDA ADA resampling ops (gf_pad_reflect_*,
 * gf_affine_sample_*, gf_color4_*) against the CPU backend bit for bit
 * (ops.h: both evaluate kernels/src/ada_math.h in the same order) and
 * against PyTorch's numbers (golden/ada_ops.safetensors) within the
 * tolerances of test_ada_ops.c; the golden cases and larger random ones
 * (several blocks, a resampling reaching outside the image). Each
 * comparison with the CPU is shown to fire: one bit flipped in the CPU's
 * result must be noticed. Label gpu: exits 77 without a GPU or a CUDA
 * backend. Argument 1: the golden file (default GF_ADA_OPS_GOLDEN). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_ada.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_ADA_OPS_GOLDEN
#define GF_ADA_OPS_GOLDEN "ada_ops.safetensors"
#endif

/* One op in one direction on both backends: in -> out (out's host half
 * gives the shape); the CUDA result equals the CPU's bits, and the
 * comparison fires on a flipped bit. want (may be NULL): PyTorch's. */
static void both(gf_ctx *cpu, gf_ctx *gpu, const char *what, int op, int bwd,
                 const int *pad, kt_twin *m, kt_twin *in, kt_twin *out,
                 const gf_tensor *want, double srel) {
  gf_err e = {0};
  CHECKF(kt_ada_run(cpu, op, bwd, pad, &m->h, &in->h, &out->h, &e) == GF_OK,
         "%s cpu: %s", what, e.msg);
  CHECKF(kt_ada_run(gpu, op, bwd, pad, &m->d, &in->d, &out->d, &e) == GF_OK,
         "%s cuda: %s", what, e.msg);
  CHECKF(gf_ctx_sync(gpu, &e) == GF_OK, "%s", e.msg);
  KT_SAME(what, out);
  float *p = out->h.data;
  size_t i = (size_t)gf_tensor_numel(&out->h) / 2;
  uint32_t u;
  memcpy(&u, &p[i], 4);
  u ^= 1u;
  memcpy(&p[i], &u, 4);
  CHECKF(kt_diff_bytes(&out->d, &out->h) > 0, "%s: a flipped bit unnoticed",
         what);
  if (want) {
    gf_tensor h = kt_to_host(&out->d);
    double atol = srel < 0 ? -1.0 : 0.0;
    KT_VS_TORCH(what, &h, want, atol, 0.0, srel < 0 ? 0.0 : srel, NULL);
    gf_tensor_free(&h);
  }
}

static void golden(gf_ctx *cpu, gf_ctx *gpu, const gf_st_file *f,
                   const char *name, int op, double srel) {
  gf_tensor x = kt_gold_at(f, name, "x", 0);
  gf_tensor y = kt_gold_at(f, name, "y", 0);
  gf_tensor g = kt_gold_at(f, name, "g", 0);
  gf_tensor dx = kt_gold_at(f, name, "dx", 0);
  gf_tensor mh = kt_tensor(1, 1, 1, 1, 1), padt = {0};
  const int *pad = NULL;
  if (op == OP_REFLECT) {
    padt = kt_gold_at(f, name, "pad", KT_GOLD_I32);
    pad = padt.data;
  } else {
    gf_tensor_free(&mh);
    mh = kt_gold_at(f, name, "m", 0);
  }
  kt_twin m = kt_twin_of(&mh), tx = kt_twin_of(&x), tg = kt_twin_of(&g);
  kt_twin ty = kt_twin_of(&y), tdx = kt_twin_of(&dx);
  char what[64];
  snprintf(what, sizeof what, "cuda %s.y", name);
  both(cpu, gpu, what, op, 0, pad, &m, &tx, &ty, &y, srel);
  snprintf(what, sizeof what, "cuda %s.dx", name);
  both(cpu, gpu, what, op, 1, pad, &m, &tg, &tdx, &dx, srel);
  kt_twin *tw[] = {&m, &tx, &tg, &ty, &tdx};
  for (size_t k = 0; k < 5; k++) kt_twin_free(tw[k]);
  gf_tensor *all[] = {&x, &y, &g, &dx, &mh, &padt};
  for (size_t k = 0; k < 6; k++) gf_tensor_free(all[k]);
}

static void large(gf_ctx *cpu, gf_ctx *gpu) {
  kt_rng r = {77};
  kt_twin x = kt_twin_rnd(&r, 4, 3, 3, 40, 44, -1.0, 1.0);
  kt_twin th = kt_twin_rnd(&r, 3, 3, 2, 3, 1, -0.6, 0.6);
  float *t = th.h.data;
  for (int n = 0; n < 3; n++) {
    t[6 * n] += 1.0f;
    t[6 * n + 4] += 1.0f;
  }
  kt_twin_set(&th, &th.h);
  kt_twin y = kt_twin_rnd(&r, 4, 3, 3, 100, 97, 0.0, 1.0);
  kt_twin g = kt_twin_rnd(&r, 4, 3, 3, 100, 97, -1.0, 1.0);
  kt_twin dx = kt_twin_rnd(&r, 4, 3, 3, 40, 44, 0.0, 1.0);
  both(cpu, gpu, "cuda large sample.y", OP_SAMPLE, 0, NULL, &th, &x, &y, NULL,
       0);
  both(cpu, gpu, "cuda large sample.dx", OP_SAMPLE, 1, NULL, &th, &g, &dx,
       NULL, 0);
  const int pad[4] = {39, 5, 12, 39};
  kt_twin py = kt_twin_rnd(&r, 4, 3, 3, 91, 88, 0.0, 1.0);
  kt_twin pg = kt_twin_rnd(&r, 4, 3, 3, 91, 88, -1.0, 1.0);
  both(cpu, gpu, "cuda large reflect.y", OP_REFLECT, 0, pad, &th, &x, &py,
       NULL, 0);
  both(cpu, gpu, "cuda large reflect.dx", OP_REFLECT, 1, pad, &th, &pg, &dx,
       NULL, 0);
  kt_twin cm = kt_twin_rnd(&r, 3, 3, 4, 4, 1, -1.0, 1.0);
  kt_twin cy = kt_twin_rnd(&r, 4, 3, 3, 40, 44, 0.0, 1.0);
  both(cpu, gpu, "cuda large color.y", OP_COLOR, 0, NULL, &cm, &x, &cy, NULL,
       0);
  both(cpu, gpu, "cuda large color.dx", OP_COLOR, 1, NULL, &cm, &x, &cy, NULL,
       0);
  kt_twin *tw[] = {&x, &th, &y, &g, &dx, &py, &pg, &cm, &cy};
  for (size_t k = 0; k < sizeof tw / sizeof tw[0]; k++) kt_twin_free(tw[k]);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : GF_ADA_OPS_GOLDEN;
  gf_ctx gpu, cpu;
  kt_cuda_ctx_or_skip(&gpu);
  kt_cpu_ctx(&cpu, 4);
  gf_st_file f;
  kt_gold_open(&f, path);
  golden(&cpu, &gpu, &f, "reflect", OP_REFLECT, -1.0);
  golden(&cpu, &gpu, &f, "reflect1", OP_REFLECT, -1.0);
  golden(&cpu, &gpu, &f, "sample", OP_SAMPLE, 0x1p-18);
  golden(&cpu, &gpu, &f, "sample_up", OP_SAMPLE, 0x1p-18);
  golden(&cpu, &gpu, &f, "color3", OP_COLOR, 0x1p-22);
  golden(&cpu, &gpu, &f, "color1", OP_COLOR, 0x1p-22);
  large(&cpu, &gpu);
  gf_st_file_free(&f);
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  return check_report();
}
