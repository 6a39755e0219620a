/* cpu_int8.c - what frozen int8 inference (gf_ctx.frozen_int8) needs
 * besides oneDNN's int8 convolutions: the ranges the calibration records
 * (one per layer, keyed by its weight buffer, in the ctx's frozen tables
 * or its store's) and the quantisation scales.
 * The convolution itself is built in cpu_frozen.c, the processor check is
 * gf_cpu_lowp_check (cpu_ctx.c). */
#include <math.h>
#include <stdlib.h>

#include "cpu_backend.h"

gf_status gf_cpu_range_note(gf_cpu_frozen *fz, const void *w, const float *x,
                            size_t n, gf_err *err) {
  float lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  gf_status st = GF_OK;
  pthread_mutex_lock(&fz->lock);
  size_t i = 0;
  while (i < fz->nranges && fz->ranges[i].w != w) i++;
  if (i < fz->nranges) {
    if (lo < fz->ranges[i].lo) fz->ranges[i].lo = lo;
    if (hi > fz->ranges[i].hi) fz->ranges[i].hi = hi;
  } else {
    gf_cpu_range *t = realloc(fz->ranges, (fz->nranges + 1) * sizeof *t);
    if (t) {
      fz->ranges = t;
      t[fz->nranges++] = (gf_cpu_range){w, lo, hi};
    } else {
      st = gf_fail(err, GF_ENOMEM, "cpu: int8 calibration table");
    }
  }
  pthread_mutex_unlock(&fz->lock);
  return st;
}

bool gf_cpu_range_get(gf_cpu_frozen *fz, const void *w, float *lo,
                      float *hi) {
  bool found = false;
  pthread_mutex_lock(&fz->lock);
  for (size_t i = 0; i < fz->nranges && !found; i++)
    if (fz->ranges[i].w == w) {
      *lo = fz->ranges[i].lo;
      *hi = fz->ranges[i].hi;
      found = true;
    }
  pthread_mutex_unlock(&fz->lock);
  return found;
}

void gf_cpu_int8_scales(const float *w, bool transposed, int64_t OC,
                        int64_t IC, int64_t khw, float lo, float hi,
                        float *sx, float *sw, float *osc) {
  float amax = fmaxf(fabsf(lo), fabsf(hi));
  if (!(amax > 0.0f) || !isfinite(amax)) amax = 1.0f;
  *sx = (lo >= 0.0f ? 255.0f : 127.0f) / amax;
  for (int64_t oc = 0; oc < OC; oc++) {
    float m = 0.0f;
    for (int64_t ic = 0; ic < IC; ic++) {
      const float *k = transposed ? w + (ic * OC + oc) * khw
                                  : w + (oc * IC + ic) * khw;
      for (int64_t j = 0; j < khw; j++) m = fmaxf(m, fabsf(k[j]));
    }
    sw[oc] = m > 0.0f ? 127.0f / m : 1.0f;
    osc[oc] = 1.0f / (*sx * sw[oc]);
  }
}
