/* golden_util.c - see golden_util.h. */
#include "golden_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t lowbias32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

int gt_args(int argc, char **argv, const char *prog, const char *flag) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GOLDEN_DIR [%s]\n", prog, flag);
    exit(2);
  }
  return argc > 2 && strcmp(argv[2], flag) == 0;
}

void gt_cpu_ctx(gf_ctx *ctx) {
  gf_err err = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  if (gf_ctx_init(ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, "CPU ctx: %s\n", err.msg);
    exit(1);
  }
}

float gt_golden_value(uint32_t tid, uint32_t i) {
  uint32_t h = lowbias32(i ^ lowbias32(2 * tid + 1));
  return (float)((int32_t)(h & 0xffffu) - 32768) * 0x1p-20f;
}

void gt_load_formula(gf_net *net, uint32_t tid_base) {
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    if (!p->trainable) continue;
    float *d = p->value.data;
    int64_t n = gf_tensor_numel(&p->value);
    for (int64_t i = 0; i < n; i++) {
      float v = gt_golden_value(tid_base + (uint32_t)t, (uint32_t)i);
      d[i] = p->kind == GF_PARAM_BN_WEIGHT ? 1.0f + v : v;
    }
  }
}

const gf_st_tensor *gt_need(const gf_st_file *f, const char *name, gf_st_dtype dt,
                            size_t numel) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t || t->dtype != dt || t->numel != numel) {
    fprintf(stderr, "golden file: tensor %s missing or not %zu %s values\n", name, numel,
            gf_st_dtype_name(dt));
    exit(1);
  }
  return t;
}

double gt_f64_at(const gf_st_tensor *t, size_t i) {
  double v;
  memcpy(&v, (const char *)t->data + i * 8, 8);
  return v;
}

float gt_f32_at(const gf_st_tensor *t, size_t i) {
  float v;
  memcpy(&v, (const char *)t->data + i * 4, 4);
  return v;
}

size_t gt_sample_k(size_t n) { return n < 2048 ? n : 2048; }

size_t gt_sample_idx(size_t i, size_t n) {
  return (size_t)(((uint64_t)i * n) / gt_sample_k(n));
}

int gt_worst_add(gt_worst *w, const char *where, size_t i, double c, double t, double tol) {
  double d = fabs(c - t);
  double r = tol > 0 ? d / tol : (d == 0 ? 0 : INFINITY); /* tol 0: bit for bit */
  w->n++;
  if (!(r <= w->ratio) || w->n == 1) { /* NaN counts as worst */
    w->ratio = isnan(r) ? INFINITY : r;
    snprintf(w->where, sizeof w->where, "%s[%zu]", where, i);
  }
  return d <= tol;
}

void gt_print_worst(gt_worst *const *all, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (all[i]->n)
      fprintf(stderr, "  %-12s worst |d|/tol %.3g at %s\n", all[i]->what, all[i]->ratio,
              all[i]->where);
}

int gt_fires_verdict(const char *const *cases, const int *missed, size_t n) {
  int silent = 0;
  for (size_t i = 0; i < n; i++) {
    fprintf(stderr, "perturbed %s: %d checks failed: %s\n", cases[i], missed[i],
            missed[i] ? "mismatch detected (good)" : "NOT detected");
    silent += missed[i] == 0;
  }
  return silent ? 1 : 0;
}
