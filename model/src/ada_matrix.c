/* ada_matrix.c - ADA's per-sample matrices (gf/ada.h): the params rows
 * gated by p and composed, in the official AugmentPipe's order (bgc), into
 * the inverse geometric transform of each sample, the batch's reflect
 * margin, the normalised resampling matrix that gf_affine_sample_fwd takes
 * and the 4x4 colour matrix. Host arithmetic only: the scalar transforms of
 * the draws in f32 as the official code has them (torch f32 tensors), the
 * matrix products in double. Pure functions. */
#include <math.h>
#include <string.h>

#include "gf/ada.h"

/* The sym6 scaling (low-pass decomposition) filter of Daubechies' least
 * asymmetric wavelets with 6 vanishing moments, as PyWavelets 1.8.0
 * publishes it: pywt.Wavelet('sym6').dec_lo. */
static const double kSym6[12] = {
    0.015404109327027373,  0.0034907120842174702, -0.11799011114819057,
    -0.048311742585633,    0.4910559419267466,    0.787641141030194,
    0.3379294217276218,    -0.07263752278646252,  -0.021060292512300564,
    0.04472490177066578,   0.0017677118642428036, -0.007800708325034148};

void gf_ada_sym6(float taps[12]) {
  /* setup_filter: an f32 tensor divided by its f32 sum */
  float f[12], sum = 0.0f;
  for (int k = 0; k < 12; k++) {
    f[k] = (float)kSym6[k];
    sum += f[k];
  }
  for (int k = 0; k < 12; k++) taps[k] = f[k] / sum;
}

typedef struct m3 {
  double a[3][3];
} m3;

static m3 m3_mul(m3 x, m3 y) {
  m3 r;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      r.a[i][j] = x.a[i][0] * y.a[0][j] + x.a[i][1] * y.a[1][j] +
                  x.a[i][2] * y.a[2][j];
  return r;
}

static m3 m3_affine(double a, double b, double c, double d, double e,
                    double f) {
  m3 r = {{{a, b, c}, {d, e, f}, {0, 0, 1}}};
  return r;
}
static m3 translate2(double tx, double ty) {
  return m3_affine(1, 0, tx, 0, 1, ty);
}
static m3 scale2(double sx, double sy) { return m3_affine(sx, 0, 0, 0, sy, 0); }
static m3 rotate2(double t) {
  return m3_affine(cos(t), -sin(t), 0, sin(t), cos(t), 0);
}

typedef struct m4 {
  double a[4][4];
} m4;

static m4 m4_mul(m4 x, m4 y) {
  m4 r;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double s = 0.0;
      for (int k = 0; k < 4; k++) s += x.a[i][k] * y.a[k][j];
      r.a[i][j] = s;
    }
  return r;
}

static m4 m4_eye(void) {
  m4 r;
  memset(&r, 0, sizeof r);
  for (int i = 0; i < 4; i++) r.a[i][i] = 1.0;
  return r;
}

/* The official constants of bgc. */
#define XINT_MAX 0.125f
#define SCALE_STD 0.2f
#define ANISO_STD 0.2f
#define XFRAC_STD 0.125f
#define BRIGHT_STD 0.2f
#define CONTRAST_STD 0.5f
#define SAT_STD 1.0f
#define HZ_PAD 3 /* the 12-tap filter's len / 4 */

/* (2 u - 1) pi in f32: torch's (rand * 2 - 1) * np.pi on an f32 tensor. */
static float angle(float u) { return (u * 2.0f - 1.0f) * (float)M_PI; }

/* The inverse geometric transform of one sample (pixel_out -> pixel_in,
 * pixel units about the image centre). */
static m3 geom_inv(const float *r, float p, float prot, int64_t H,
                   int64_t W) {
  m3 G = scale2(1, 1);
  if (r[GF_ADA_P_XFLIP_GATE] < p) {
    float i = floorf(r[GF_ADA_P_XFLIP] * 2.0f);
    G = m3_mul(G, scale2(1.0 / (1.0 - 2.0 * i), 1));
  }
  if (r[GF_ADA_P_ROT90_GATE] < p) {
    float i = floorf(r[GF_ADA_P_ROT90] * 4.0f);
    float ang = (float)(M_PI / 2) * i; /* f32, as -pi/2 * i there */
    G = m3_mul(G, rotate2(ang));
  }
  if (r[GF_ADA_P_XINT_GATE] < p) {
    float tx = (r[GF_ADA_P_XINT_X] * 2.0f - 1.0f) * XINT_MAX;
    float ty = (r[GF_ADA_P_XINT_Y] * 2.0f - 1.0f) * XINT_MAX;
    G = m3_mul(G, translate2(-nearbyintf(tx * (float)W),
                             -nearbyintf(ty * (float)H)));
  }
  if (r[GF_ADA_P_SCALE_GATE] < p) {
    float s = exp2f(r[GF_ADA_P_SCALE] * SCALE_STD);
    G = m3_mul(G, scale2(1.0 / s, 1.0 / s));
  }
  if (r[GF_ADA_P_ROT_PRE_GATE] < prot)
    G = m3_mul(G, rotate2(angle(r[GF_ADA_P_ROT_PRE])));
  if (r[GF_ADA_P_ANISO_GATE] < p) {
    float s = exp2f(r[GF_ADA_P_ANISO] * ANISO_STD);
    G = m3_mul(G, scale2(1.0 / s, s));
  }
  if (r[GF_ADA_P_ROT_POST_GATE] < prot)
    G = m3_mul(G, rotate2(angle(r[GF_ADA_P_ROT_POST])));
  if (r[GF_ADA_P_XFRAC_GATE] < p) {
    float tx = r[GF_ADA_P_XFRAC_X] * XFRAC_STD;
    float ty = r[GF_ADA_P_XFRAC_Y] * XFRAC_STD;
    G = m3_mul(G, translate2(-(double)(tx * (float)W),
                             -(double)(ty * (float)H)));
  }
  return G;
}

/* The colour matrix of one sample (color_in -> color_out). */
static m4 color_mat(const float *r, float p, int64_t C) {
  m4 M = m4_eye();
  const double v = 1.0 / sqrt(3.0); /* the luma axis (1, 1, 1, 0) / sqrt 3 */
  if (r[GF_ADA_P_BRIGHT_GATE] < p) {
    float b = r[GF_ADA_P_BRIGHT] * BRIGHT_STD;
    m4 T = m4_eye();
    for (int i = 0; i < 3; i++) T.a[i][3] = b;
    M = m4_mul(T, M);
  }
  if (r[GF_ADA_P_CONTRAST_GATE] < p) {
    float c = exp2f(r[GF_ADA_P_CONTRAST] * CONTRAST_STD);
    m4 S = m4_eye();
    for (int i = 0; i < 3; i++) S.a[i][i] = c;
    M = m4_mul(S, M);
  }
  if (r[GF_ADA_P_LUMA_GATE] < p && floorf(r[GF_ADA_P_LUMA] * 2.0f) == 1.0f) {
    m4 F = m4_eye(); /* Householder reflection I - 2 v v^T */
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) F.a[i][j] -= 2.0 * v * v;
    M = m4_mul(F, M);
  }
  if (C > 1 && r[GF_ADA_P_HUE_GATE] < p) {
    double t = angle(r[GF_ADA_P_HUE]), s = sin(t), c = cos(t), cc = 1 - c;
    /* rotation by t about v (Rodrigues), all v components equal */
    m4 R = m4_eye();
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double cross = 0.0; /* the [v]_x term: +-v s off the diagonal */
        if ((j - i + 3) % 3 == 1) cross = -v * s;
        if ((j - i + 3) % 3 == 2) cross = v * s;
        R.a[i][j] = v * v * cc + (i == j ? c : cross);
      }
    M = m4_mul(R, M);
  }
  if (C > 1 && r[GF_ADA_P_SAT_GATE] < p) {
    double s = exp2f(r[GF_ADA_P_SAT] * SAT_STD);
    m4 S = m4_eye(); /* v v^T + (I - v v^T) s */
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        S.a[i][j] = v * v + ((i == j ? 1.0 : 0.0) - v * v) * s;
    M = m4_mul(S, M);
  }
  return M;
}

gf_status gf_ada_matrices(const float *params, int64_t n, int64_t C,
                          int64_t H, int64_t W, float p, float *theta,
                          float *color, int pad[4], gf_err *err) {
  if (n < 0 || (n > 0 && (!params || !theta || !color)) || !pad)
    return gf_fail(err, GF_EINVAL, "ada: NULL params, theta, color or pad");
  if (C != 1 && C != 3)
    return gf_fail(err, GF_EINVAL, "ada: %lld channels (RGB 3 or "
                   "luminance 1)", (long long)C);
  if (H < 1 || W < 1 || H > (1 << 24) || W > (1 << 24))
    return gf_fail(err, GF_EINVAL, "ada: image %lld x %lld", (long long)H,
                   (long long)W);
  if (!isfinite(p) || p < 0.0f)
    return gf_fail(err, GF_EINVAL, "ada: p %g is not a finite value >= 0",
                   (double)p);
  /* p_rot = 1 - sqrt(clamp(1 - p, 0, 1)): P(pre or post) = p */
  float q = 1.0f - p;
  q = q < 0.0f ? 0.0f : q > 1.0f ? 1.0f : q;
  float prot = 1.0f - sqrtf(q);
  /* the margin: the corners' reach over the batch */
  double cx = (double)(W - 1) / 2, cy = (double)(H - 1) / 2;
  double reach[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; i++) {
    m3 G = geom_inv(params + i * GF_ADA_NPARAMS, p, prot, H, W);
    const double cs[4][2] = {{-cx, -cy}, {cx, -cy}, {cx, cy}, {-cx, cy}};
    for (int k = 0; k < 4; k++) {
      double x = G.a[0][0] * cs[k][0] + G.a[0][1] * cs[k][1] + G.a[0][2];
      double y = G.a[1][0] * cs[k][0] + G.a[1][1] * cs[k][1] + G.a[1][2];
      reach[0] = fmax(reach[0], -x);
      reach[1] = fmax(reach[1], -y);
      reach[2] = fmax(reach[2], x);
      reach[3] = fmax(reach[3], y);
    }
  }
  int m[4]; /* [x0, y0, x1, y1] as the official margin vector */
  for (int k = 0; k < 4; k++) {
    double side = k % 2 ? (double)H : (double)W;
    double c = k % 2 ? cy : cx;
    double v = n > 0 ? reach[k] + HZ_PAD * 2 - c : 0.0;
    v = fmin(fmax(v, 0.0), side - 1);
    m[k] = (int)ceil((float)v);
  }
  pad[0] = m[0];
  pad[1] = m[2];
  pad[2] = m[1];
  pad[3] = m[3];
  /* the padded, upsampled input and the resampled output sides */
  double Wu = 2.0 * (double)(W + m[0] + m[2]), Hu = 2.0 * (double)(H + m[1] + m[3]);
  double Wo = 2.0 * (double)(W + HZ_PAD * 2), Ho = 2.0 * (double)(H + HZ_PAD * 2);
  for (int64_t i = 0; i < n; i++) {
    const float *r = params + i * GF_ADA_NPARAMS;
    m3 G = geom_inv(r, p, prot, H, W);
    G = m3_mul(translate2((m[0] - m[2]) / 2.0, (m[1] - m[3]) / 2.0), G);
    G = m3_mul(m3_mul(scale2(2, 2), G), scale2(0.5, 0.5));
    G = m3_mul(m3_mul(translate2(-0.5, -0.5), G), translate2(0.5, 0.5));
    G = m3_mul(m3_mul(scale2(2.0 / Wu, 2.0 / Hu), G),
               scale2(Wo / 2.0, Ho / 2.0));
    float *t = theta + i * 6;
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 3; b++) t[a * 3 + b] = (float)G.a[a][b];
    m4 M = color_mat(r, p, C);
    float *c = color + i * 16;
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++) c[a * 4 + b] = (float)M.a[a][b];
  }
  return GF_OK;
}
