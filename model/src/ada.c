/* ada.c - the ADA pipeline's execution (gf/ada.h): the matrices of
 * ada_matrix.c uploaded to the ctx, then the kernel ops in the official
 * order: reflect padding, 2x upsampling by the sym6 filter (upfirdn2d, gain
 * 4), the affine bilinear resampling, 2x downsampling (flipped filter,
 * cropped by 6 on each side), the colour matrix; the backward runs their
 * transposes in reverse. Scratch is sized once per batch shape for the
 * largest margin (side - 1 on every side) and reused through views. */
#include <string.h>

#include "gf/ada.h"
#include "gf/ops.h"

#define FIR_TAPS 12
#define HZ_PAD 3

enum { B_PAD, B_UP, B_SAMPLE, B_GEOM };

gf_status gf_ada_init(gf_ada *a, gf_ctx *ctx, gf_err *err) {
  memset(a, 0, sizeof *a);
  if (!ctx) return gf_fail(err, GF_EINVAL, "ada: NULL ctx");
  a->ctx = ctx;
  float f[FIR_TAPS], f2[FIR_TAPS * FIR_TAPS];
  gf_ada_sym6(f);
  for (int i = 0; i < FIR_TAPS; i++)
    for (int j = 0; j < FIR_TAPS; j++) f2[i * FIR_TAPS + j] = f[i] * f[j];
  const int64_t fs[2] = {FIR_TAPS, FIR_TAPS};
  gf_tensor h;
  GF_TRY(gf_tensor_view(&h, f2, GF_F32, GF_DEV_CPU, 2, fs, err));
  gf_status st = gf_tensor_init_on(&a->filt, GF_F32, ctx->device,
                                   ctx->device_index, 2, fs, err);
  if (!st) st = gf_tensor_copy(&a->filt, &h, err);
  if (st) gf_ada_free(a);
  return st;
}

void gf_ada_free(gf_ada *a) {
  if (!a) return;
  gf_tensor_free(&a->filt);
  gf_tensor_free(&a->theta);
  gf_tensor_free(&a->color);
  gf_tensor_free(&a->host);
  for (int k = 0; k < 4; k++) gf_tensor_free(&a->buf[k]);
  memset(a, 0, sizeof *a);
}

/* Allocates a 1-D f32 tensor of numel elements on a's device into *t. */
static gf_status dev_alloc(gf_ada *a, gf_tensor *t, int64_t numel,
                           gf_err *err) {
  return gf_tensor_init_on(t, GF_F32, a->ctx->device, a->ctx->device_index,
                           1, &numel, err);
}

/* Sizes a's scratch for x's shape (nothing when it already fits). */
static gf_status fit(gf_ada *a, const int64_t s[4], gf_err *err) {
  if (!memcmp(a->shape, s, sizeof a->shape)) return GF_OK;
  for (int k = 0; k < 4; k++) gf_tensor_free(&a->buf[k]);
  gf_tensor_free(&a->theta);
  gf_tensor_free(&a->color);
  gf_tensor_free(&a->host);
  memset(a->shape, 0, sizeof a->shape);
  a->ready = 0;
  int64_t nc = s[0] * s[1], H = s[2], W = s[3];
  int64_t hp = 3 * H - 2, wp = 3 * W - 2; /* the largest margin */
  int64_t n[4] = {nc * hp * wp, nc * 4 * hp * wp,
                  nc * 4 * (H + 2 * HZ_PAD) * (W + 2 * HZ_PAD), nc * H * W};
  for (int k = 0; k < 4; k++) GF_TRY(dev_alloc(a, &a->buf[k], n[k], err));
  const int64_t ts[3] = {s[0], 2, 3}, cs[3] = {s[0], 4, 4};
  const int64_t hs[2] = {s[0], 22};
  GF_TRY(gf_tensor_init_on(&a->theta, GF_F32, a->ctx->device,
                           a->ctx->device_index, 3, ts, err));
  GF_TRY(gf_tensor_init_on(&a->color, GF_F32, a->ctx->device,
                           a->ctx->device_index, 3, cs, err));
  GF_TRY(gf_tensor_init(&a->host, GF_F32, GF_DEV_CPU, 2, hs, err));
  memcpy(a->shape, s, sizeof a->shape);
  return GF_OK;
}

/* The four stages' tensors for the current margin: views of a's buffers
 * (v[B_PAD] padded, v[B_UP] upsampled, v[B_SAMPLE] resampled, v[B_GEOM]
 * the geometric result). */
static gf_status views(gf_ada *a, gf_tensor v[4], gf_err *err) {
  int64_t N = a->shape[0], C = a->shape[1], H = a->shape[2], W = a->shape[3];
  int64_t hp = H + a->pad[2] + a->pad[3], wp = W + a->pad[0] + a->pad[1];
  int64_t s[4][4] = {{N, C, hp, wp},
                     {N, C, 2 * hp, 2 * wp},
                     {N, C, 2 * (H + 2 * HZ_PAD), 2 * (W + 2 * HZ_PAD)},
                     {N, C, H, W}};
  for (int k = 0; k < 4; k++)
    GF_TRY(gf_tensor_view(&v[k], a->buf[k].data, GF_F32, a->ctx->device, 4,
                          s[k], err));
  for (int k = 0; k < 4; k++) v[k].device_index = a->ctx->device_index;
  return GF_OK;
}

/* The upfirdn2d parameters: 2x upsampling (official upsample2d: pads 6, 5,
 * gain 4) and 2x downsampling (downsample2d with padding -6, flipped
 * filter: pads -1, -1). */
static gf_fir_params fir_up(void) {
  gf_fir_params p = {.up = {2, 2}, .down = {1, 1}, .pad = {6, 5, 6, 5},
                     .flip = 0, .gain = 4.0f};
  return p;
}
static gf_fir_params fir_down(void) {
  gf_fir_params p = {.up = {1, 1}, .down = {2, 2}, .pad = {-1, -1, -1, -1},
                     .flip = 1, .gain = 1.0f};
  return p;
}

static gf_status check_img(const gf_ada *a, const gf_tensor *t,
                           const char *what, gf_err *err) {
  if (!t || t->ndim != 4)
    return gf_fail(err, GF_EINVAL, "ada: %s must be [N,C,H,W]", what);
  if (t->shape[1] != 1 && t->shape[1] != 3)
    return gf_fail(err, GF_EINVAL, "ada: %s has %lld channels (RGB 3 or "
                   "luminance 1)", what, (long long)t->shape[1]);
  if (t->device != a->ctx->device)
    return gf_fail(err, GF_EINVAL, "ada: %s is not on the ctx's device",
                   what);
  return GF_OK;
}

/* The geometric steps of the last forward's draws on x into v[B_GEOM]. */
static gf_status geom_fwd(gf_ada *a, const gf_tensor *x, gf_tensor v[4],
                          gf_err *err) {
  GF_TRY(views(a, v, err));
  gf_fir_params up = fir_up(), down = fir_down();
  gf_ctx *ctx = a->ctx;
  GF_TRY(gf_pad_reflect_fwd(ctx, x, a->pad, &v[B_PAD], err));
  GF_TRY(gf_upfirdn2d_fwd(ctx, &v[B_PAD], &a->filt, &up, &v[B_UP], err));
  GF_TRY(gf_affine_sample_fwd(ctx, &v[B_UP], &a->theta, &v[B_SAMPLE], err));
  return gf_upfirdn2d_fwd(ctx, &v[B_SAMPLE], &a->filt, &down, &v[B_GEOM],
                          err);
}

gf_status gf_ada_fwd(gf_ada *a, const gf_tensor *x, const float *params,
                     float p, gf_tensor *y, gf_err *err) {
  if (!a || !a->ctx) return gf_fail(err, GF_EINVAL, "ada: not initialized");
  GF_TRY(check_img(a, x, "x", err));
  GF_TRY(check_img(a, y, "y", err));
  if (!gf_tensor_same_shape(x, y))
    return gf_fail(err, GF_EINVAL, "ada: y's shape is not x's");
  if (x->shape[0] == 0) return GF_OK;
  GF_TRY(fit(a, x->shape, err));
  a->ready = 0;
  int64_t N = x->shape[0];
  float *th = a->host.data, *co = th + N * 6;
  GF_TRY(gf_ada_matrices(params, N, x->shape[1], x->shape[2], x->shape[3], p,
                         th, co, a->pad, err));
  gf_tensor ht, hc;
  const int64_t ts[3] = {N, 2, 3}, cs[3] = {N, 4, 4};
  GF_TRY(gf_tensor_view(&ht, th, GF_F32, GF_DEV_CPU, 3, ts, err));
  GF_TRY(gf_tensor_view(&hc, co, GF_F32, GF_DEV_CPU, 3, cs, err));
  GF_TRY(gf_tensor_copy(&a->theta, &ht, err));
  GF_TRY(gf_tensor_copy(&a->color, &hc, err));
  gf_tensor v[4];
  GF_TRY(geom_fwd(a, x, v, err));
  GF_TRY(gf_color4_fwd(a->ctx, &v[B_GEOM], &a->color, y, err));
  a->ready = 1;
  return GF_OK;
}

gf_status gf_ada_jvp(gf_ada *a, const gf_tensor *xdot, gf_tensor *ydot,
                     gf_err *err) {
  if (!a || !a->ctx) return gf_fail(err, GF_EINVAL, "ada: not initialized");
  GF_TRY(check_img(a, xdot, "xdot", err));
  GF_TRY(check_img(a, ydot, "ydot", err));
  if (!gf_tensor_same_shape(xdot, ydot))
    return gf_fail(err, GF_EINVAL, "ada: ydot's shape is not xdot's");
  if (xdot->shape[0] == 0) return GF_OK;
  if (!a->ready || memcmp(a->shape, xdot->shape, sizeof a->shape))
    return gf_fail(err, GF_EINVAL, "ada: jvp without a forward of this "
                   "shape");
  /* the colour matrices without their translation column */
  int64_t N = xdot->shape[0];
  const int64_t cs[3] = {N, 4, 4};
  gf_tensor lin, hc;
  GF_TRY(gf_tensor_init(&hc, GF_F32, GF_DEV_CPU, 3, cs, err));
  memcpy(hc.data, (const float *)a->host.data + N * 6,
         (size_t)(N * 16) * sizeof(float));
  for (int64_t i = 0; i < N * 4; i++) ((float *)hc.data)[i * 4 + 3] = 0.0f;
  gf_status st = gf_tensor_init_on(&lin, GF_F32, a->ctx->device,
                                   a->ctx->device_index, 3, cs, err);
  if (st == GF_OK) {
    st = gf_tensor_copy(&lin, &hc, err);
    gf_tensor v[4];
    if (st == GF_OK) st = geom_fwd(a, xdot, v, err);
    if (st == GF_OK) st = gf_color4_fwd(a->ctx, &v[B_GEOM], &lin, ydot, err);
    gf_tensor_free(&lin);
  }
  gf_tensor_free(&hc);
  return st;
}

gf_status gf_ada_bwd(gf_ada *a, const gf_tensor *dy, gf_tensor *dx,
                     gf_err *err) {
  if (!a || !a->ctx) return gf_fail(err, GF_EINVAL, "ada: not initialized");
  GF_TRY(check_img(a, dy, "dy", err));
  GF_TRY(check_img(a, dx, "dx", err));
  if (!gf_tensor_same_shape(dy, dx))
    return gf_fail(err, GF_EINVAL, "ada: dx's shape is not dy's");
  if (dy->shape[0] == 0) return GF_OK;
  if (!a->ready || memcmp(a->shape, dy->shape, sizeof a->shape))
    return gf_fail(err, GF_EINVAL, "ada: backward without a forward of "
                   "this shape");
  gf_tensor v[4];
  GF_TRY(views(a, v, err));
  gf_fir_params up = fir_up(), down = fir_down();
  gf_ctx *ctx = a->ctx;
  GF_TRY(gf_color4_bwd(ctx, &a->color, dy, &v[B_GEOM], err));
  GF_TRY(gf_upfirdn2d_bwd(ctx, &a->filt, &down, &v[B_GEOM], &v[B_SAMPLE],
                          err));
  GF_TRY(gf_affine_sample_bwd(ctx, &a->theta, &v[B_SAMPLE], &v[B_UP], err));
  GF_TRY(gf_upfirdn2d_bwd(ctx, &a->filt, &up, &v[B_UP], &v[B_PAD], err));
  return gf_pad_reflect_bwd(ctx, a->pad, &v[B_PAD], dx, err);
}
