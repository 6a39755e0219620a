/* ada_draw.c - the per-sample random draws of ADA (gf/ada.h): Philox words
 * of (seed, GF_RNG_ADA, step, pass) keyed by the global sample index,
 * turned into the params rows the pipeline gates by p. No state, no
 * allocation. */
#include "gf/ada.h"

#include "gf/philox.h"
#include "gf/rng.h"

/* The gate columns, in the order of gf/ada.h's GF_ADA_NGATES. */
static const int kGates[GF_ADA_NGATES] = {
    GF_ADA_P_XFLIP_GATE,  GF_ADA_P_ROT90_GATE,    GF_ADA_P_XINT_GATE,
    GF_ADA_P_SCALE_GATE,  GF_ADA_P_ROT_PRE_GATE,  GF_ADA_P_ANISO_GATE,
    GF_ADA_P_ROT_POST_GATE, GF_ADA_P_XFRAC_GATE,  GF_ADA_P_BRIGHT_GATE,
    GF_ADA_P_CONTRAST_GATE, GF_ADA_P_LUMA_GATE,   GF_ADA_P_HUE_GATE,
    GF_ADA_P_SAT_GATE};

int gf_ada_gate_column(int k) {
  return k >= 0 && k < GF_ADA_NGATES ? kGates[k] : -1;
}

int gf_ada_column_is_normal(int c) {
  switch (c) {
    case GF_ADA_P_SCALE:
    case GF_ADA_P_ANISO:
    case GF_ADA_P_XFRAC_X:
    case GF_ADA_P_XFRAC_Y:
    case GF_ADA_P_BRIGHT:
    case GF_ADA_P_CONTRAST:
    case GF_ADA_P_SAT:
      return 1;
    default:
      return 0;
  }
}

_Static_assert(GF_ADA_WORDS >= 32 + GF_ADA_NPARAMS + 1,
               "a sample's words cover its uniform and normal columns");

gf_status gf_ada_draw(float *params, int64_t n, uint64_t seed, int64_t step,
                      int pass, int64_t sample0, gf_err *err) {
  if (n < 0 || (n > 0 && !params))
    return gf_fail(err, GF_EINVAL, "ada: %lld rows into %s", (long long)n,
                   params ? "params" : "NULL");
  if (pass < 0 || (uint32_t)pass > GF_RNG_SUB_MAX)
    return gf_fail(err, GF_EINVAL, "ada: pass %d outside [0, %u]", pass,
                   (unsigned)GF_RNG_SUB_MAX);
  if (step < 0 || sample0 < 0)
    return gf_fail(err, GF_EINVAL, "ada: step %lld, sample0 %lld < 0",
                   (long long)step, (long long)sample0);
  if (sample0 > ((int64_t)1 << 56) - n)
    return gf_fail(err, GF_EINVAL, "ada: sample indices past 2^56");
  for (int64_t i = 0; i < n; i++) {
    gf_philox_stream s = gf_rng_sample_stream(seed, GF_RNG_ADA, step,
                                              (uint32_t)pass, sample0 + i,
                                              GF_ADA_WORDS);
    float u[GF_ADA_NPARAMS], z[GF_ADA_NPARAMS];
    gf_philox_uniform(&s, u, GF_ADA_NPARAMS);
    gf_philox_stream sz = s;
    sz.offset += 32; /* normals on words 32 .. 32 + NPARAMS (pairs) */
    gf_philox_normal(&sz, z, GF_ADA_NPARAMS, 0.0f, 1.0f);
    float *row = params + i * GF_ADA_NPARAMS;
    for (int c = 0; c < GF_ADA_NPARAMS; c++)
      row[c] = gf_ada_column_is_normal(c) ? z[c] : u[c];
  }
  return GF_OK;
}
