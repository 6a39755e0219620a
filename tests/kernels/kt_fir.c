/* kt_fir.c - helpers of the upfirdn2d tests; see kt_fir.h. */
#include "kt_fir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kt_golden.h"
#include "kt_util.h"

kt_fir_case kt_fir_case_load(const gf_st_file *file, const char *name) {
  kt_fir_case c = {0};
  const char *sfx[7] = {"x", "f", "y", "g", "dx", "p", "gain"};
  gf_tensor t[7];
  for (int k = 0; k < 7; k++) {
    char nm[48];
    int n = snprintf(nm, sizeof nm, "%s.%s", name, sfx[k]);
    if (n <= 0 || n >= (int)sizeof nm) exit(1);
    t[k] = kt_gold(file, nm, k == 5 ? KT_GOLD_I32 : 0);
  }
  if (t[5].dtype != GF_I32 || gf_tensor_numel(&t[5]) != 9 ||
      gf_tensor_numel(&t[6]) != 1) {
    fprintf(stderr, "golden: %s.p is not 9 int32 or %s.gain not 1 float\n",
            name, name);
    exit(1);
  }
  const int32_t *q = t[5].data;
  c.p = (gf_fir_params){{q[0], q[1]},
                        {q[2], q[3]},
                        {q[4], q[5], q[6], q[7]},
                        q[8],
                        ((const float *)t[6].data)[0]};
  c.x = t[0];
  c.f = t[1];
  c.y = t[2];
  c.g = t[3];
  c.dx = t[4];
  gf_tensor_free(&t[5]);
  gf_tensor_free(&t[6]);
  return c;
}

void kt_fir_case_free(kt_fir_case *c) {
  gf_tensor *all[] = {&c->x, &c->f, &c->y, &c->g, &c->dx};
  for (int k = 0; k < 5; k++) gf_tensor_free(all[k]);
}

/* One output's sum: the f32 fmaf chain and the double sum of |terms|. */
typedef struct sum {
  float acc;
  double abs;
} sum;

static void add_term(sum *t, float u, float w) {
  t->acc = fmaf(u, w, t->acc);
  t->abs += fabs((double)u * w);
}

/* out[o] = acc * gain, absum[o] (when not NULL) = |gain| sum |terms|. */
static void store(sum t, float gain, float *out, double *absum, int64_t o) {
  out[o] = t.acc * gain;
  if (absum) absum[o] = t.abs * fabs((double)gain);
}

/* The sizes of one upfirdn2d: input planes P of H x W (x or dx), output
 * planes of OH x OW (y or dy), filter fh x fw. */
typedef struct geom {
  int64_t P, H, W, OH, OW;
  int fh, fw;
} geom;

static geom geom_of(const gf_tensor *in, const gf_tensor *out,
                    const gf_tensor *f) {
  geom g = {in->shape[0] * in->shape[1],
            in->shape[2],
            in->shape[3],
            out->shape[2],
            out->shape[3],
            (int)f->shape[0],
            (int)f->shape[1]};
  return g;
}

/* ops.h's window weight w[p][q]. */
static float weight(const float *f, int fh, int fw, int flip, int p, int q) {
  return flip ? f[p * fw + q] : f[(fh - 1 - p) * fw + (fw - 1 - q)];
}

void kt_fir_ref(const gf_tensor *x, const gf_tensor *f, const gf_fir_params *p,
                gf_tensor *y, double *absum) {
  geom g = geom_of(x, y, f);
  int uy = p->up[0], ux = p->up[1];
  const float *X = x->data, *F = f->data;
  for (int64_t pl = 0; pl < g.P; pl++)
    for (int64_t i = 0; i < g.OH; i++)
      for (int64_t j = 0; j < g.OW; j++) {
        sum t = {0.0f, 0.0};
        for (int a = 0; a < g.fh; a++) {
          int64_t r = i * p->down[0] + a - p->pad[2]; /* upsampled row */
          if (r < 0 || r >= g.H * uy || r % uy != 0) continue;
          for (int b = 0; b < g.fw; b++) {
            int64_t c = j * p->down[1] + b - p->pad[0]; /* upsampled col */
            if (c < 0 || c >= g.W * ux || c % ux != 0) continue;
            add_term(&t, X[(pl * g.H + r / uy) * g.W + c / ux],
                     weight(F, g.fh, g.fw, p->flip, a, b));
          }
        }
        store(t, p->gain, y->data, absum, (pl * g.OH + i) * g.OW + j);
      }
}

void kt_fir_ref_adj(const gf_tensor *dy, const gf_tensor *f,
                    const gf_fir_params *p, gf_tensor *dx, double *absum) {
  geom g = geom_of(dx, dy, f);
  const float *G = dy->data, *F = f->data;
  for (int64_t pl = 0; pl < g.P; pl++)
    for (int64_t h = 0; h < g.H; h++)
      for (int64_t v = 0; v < g.W; v++) {
        sum t = {0.0f, 0.0};
        for (int64_t i = 0; i < g.OH; i++) {
          int64_t a = h * p->up[0] + p->pad[2] - i * p->down[0];
          if (a < 0 || a >= g.fh) continue;
          for (int64_t j = 0; j < g.OW; j++) {
            int64_t b = v * p->up[1] + p->pad[0] - j * p->down[1];
            if (b < 0 || b >= g.fw) continue;
            add_term(&t, G[(pl * g.OH + i) * g.OW + j],
                     weight(F, g.fh, g.fw, p->flip, (int)a, (int)b));
          }
        }
        store(t, p->gain, dx->data, absum, (pl * g.H + h) * g.W + v);
      }
}

double *kt_fir_torch_tol(const double *absum, size_t n, int taps) {
  double *t = kt_dzeros(n);
  for (size_t i = 0; i < n; i++) t[i] = absum[i] * 2.0 * (taps + 2) * 0x1p-24;
  return t;
}
