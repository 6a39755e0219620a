/* ops.c - the public op entry points: argument validation shared by every
 * backend, then dispatch through ctx->ops (backend.h). No arithmetic here. */
#include "gf/ops.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "gf/text.h"

/* Checks that ctx is initialized and provides fn. */
#define NEED_OP(ctx, fn, opname)                                           \
  do {                                                                     \
    if (!(ctx) || !(ctx)->ops)                                             \
      return gf_fail(err, GF_EINVAL, "%s: ctx not initialized", opname);   \
    if (!(ctx)->ops->fn)                                                   \
      return gf_fail(err, GF_EUNSUPPORTED, "%s: not in the %s backend",    \
                     opname, (ctx)->ops->name);                            \
  } while (0)

/* A tensor an op reads or writes: present, f32, on the ctx's device, with
 * data when it has elements. */
static gf_status check_t(const gf_ctx *ctx, const gf_tensor *t,
                         const char *op, const char *what, gf_err *err) {
  if (!t) return gf_fail(err, GF_EINVAL, "%s: %s is NULL", op, what);
  if (t->ndim < 1 || t->ndim > GF_MAX_DIMS)
    return gf_fail(err, GF_EINVAL, "%s: %s has ndim %d", op, what, t->ndim);
  if (t->dtype != GF_F32)
    return gf_fail(err, GF_EUNSUPPORTED, "%s: %s has dtype %s (only f32)", op,
                   what, gf_dtype_name(t->dtype));
  if (t->device != ctx->device || t->device_index != ctx->device_index)
    return gf_fail(err, GF_EINVAL, "%s: %s is not on the ctx's device", op,
                   what);
  if (!t->data && gf_tensor_numel(t) > 0)
    return gf_fail(err, GF_EINVAL, "%s: %s has no data", op, what);
  return GF_OK;
}

/* Room for "d0,d1,d2,d3": GF_MAX_DIMS int64 of at most 20 characters and
 * their commas, and the NUL: 84 bytes. */
#define DIMS_TEXT_CAP 96

/* The first min(n, GF_MAX_DIMS) dims as "d0,d1,...", "" for none. */
static const char *dims_text(const int64_t *dims, int n,
                             char buf[DIMS_TEXT_CAP]) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && i < GF_MAX_DIMS; i++) {
    GF_FORMAT_FITS(buf + o, DIMS_TEXT_CAP - o, "%s%lld", i ? "," : "",
                   (long long)dims[i]);
    o += strlen(buf + o);
  }
  return buf;
}

static gf_status check_shape(const gf_tensor *t, const char *op,
                             const char *what, int ndim, const int64_t *dims,
                             gf_err *err) {
  bool ok = t->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == dims[i];
  if (ok) return GF_OK;
  char want[DIMS_TEXT_CAP], got[DIMS_TEXT_CAP];
  return gf_fail(err, GF_EINVAL, "%s: %s has shape [%s], expected [%s]", op,
                 what, dims_text(t->shape, t->ndim, got),
                 dims_text(dims, ndim, want));
}

static gf_status check_accum(gf_accum a, const char *op, gf_err *err) {
  if (a != GF_OVERWRITE && a != GF_ACCUMULATE)
    return gf_fail(err, GF_EINVAL, "%s: bad accum mode %d", op, (int)a);
  return GF_OK;
}

/* ---- linear -------------------------------------------------------------- */

static gf_status linear_check(const gf_ctx *ctx, const char *op,
                              const gf_tensor *x, const gf_tensor *w,
                              gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, w, op, "w", err));
  if (x->ndim != 2 || w->ndim != 2)
    return gf_fail(err, GF_EINVAL, "%s: x and w must be 2-D ([N,in], [out,in])",
                   op);
  if (x->shape[1] != w->shape[1])
    return gf_fail(err, GF_EINVAL, "%s: x has %lld features, w expects %lld",
                   op, (long long)x->shape[1], (long long)w->shape[1]);
  return GF_OK;
}

gf_status gf_linear_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *b, gf_tensor *y, gf_err *err) {
  const char *op = "linear_fwd";
  NEED_OP(ctx, linear_fwd, op);
  GF_TRY(linear_check(ctx, op, x, w, err));
  int64_t ys[2] = {x->shape[0], w->shape[0]};
  if (b) {
    GF_TRY(check_t(ctx, b, op, "b", err));
    GF_TRY(check_shape(b, op, "b", 1, &w->shape[0], err));
  }
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", 2, ys, err));
  return ctx->ops->linear_fwd(ctx, x, w, b, y, err);
}

gf_status gf_linear_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *dy, gf_tensor *dx, gf_tensor *dw,
                        gf_tensor *db, gf_accum accum, gf_err *err) {
  const char *op = "linear_bwd";
  NEED_OP(ctx, linear_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(linear_check(ctx, op, x, w, err));
  int64_t ys[2] = {x->shape[0], w->shape[0]};
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_shape(dy, op, "dy", 2, ys, err));
  if (dx) {
    GF_TRY(check_t(ctx, dx, op, "dx", err));
    GF_TRY(check_shape(dx, op, "dx", 2, x->shape, err));
  }
  if (dw) {
    GF_TRY(check_t(ctx, dw, op, "dw", err));
    GF_TRY(check_shape(dw, op, "dw", 2, w->shape, err));
  }
  if (db) {
    GF_TRY(check_t(ctx, db, op, "db", err));
    GF_TRY(check_shape(db, op, "db", 1, &w->shape[0], err));
  }
  if (!dx && !dw && !db) return GF_OK;
  return ctx->ops->linear_bwd(ctx, x, w, dy, dx, dw, db, accum, err);
}

/* ---- conv / deconv ---------------------------------------------------------
 * transposed: w is [Cin,Cout,kh,kw] instead of [Cout,Cin,kh,kw]. */

static gf_status conv_shape(const gf_tensor *x, const gf_tensor *w,
                            const gf_conv_params *p, bool transposed,
                            int64_t out[4], const char *op, gf_err *err) {
  if (!x || !w || !p)
    return gf_fail(err, GF_EINVAL, "%s: NULL x, w or params", op);
  if (x->ndim != 4 || w->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x and w must be 4-D", op);
  int64_t cin = transposed ? w->shape[0] : w->shape[1];
  int64_t cout = transposed ? w->shape[1] : w->shape[0];
  if (x->shape[1] != cin)
    return gf_fail(err, GF_EINVAL, "%s: x has %lld channels, w expects %lld",
                   op, (long long)x->shape[1], (long long)cin);
  out[0] = x->shape[0];
  out[1] = cout;
  for (int d = 0; d < 2; d++) {
    int s = p->stride[d], pad = p->pad[d], op_ = p->out_pad[d];
    int64_t in = x->shape[2 + d], k = w->shape[2 + d];
    if (s < 1 || pad < 0 || k < 1)
      return gf_fail(err, GF_EINVAL, "%s: stride %d, pad %d, kernel %lld", op,
                     s, pad, (long long)k);
    if (!transposed) {
      if (op_ != 0)
        return gf_fail(err, GF_EINVAL, "%s: out_pad must be 0 for conv2d", op);
      int64_t span = in + 2 * (int64_t)pad - k;
      if (span < 0)
        return gf_fail(err, GF_EINVAL,
                       "%s: kernel %lld larger than padded input %lld", op,
                       (long long)k, (long long)(in + 2 * pad));
      out[2 + d] = span / s + 1;
    } else {
      if (op_ < 0 || op_ >= s)
        return gf_fail(err, GF_EINVAL,
                       "%s: out_pad %d must be in [0, stride %d)", op, op_, s);
      out[2 + d] = (in - 1) * s - 2 * (int64_t)pad + k + op_;
      if (out[2 + d] < 1)
        return gf_fail(err, GF_EINVAL, "%s: empty output", op);
    }
  }
  return GF_OK;
}

gf_status gf_conv2d_out_shape(const gf_tensor *x, const gf_tensor *w,
                              const gf_conv_params *p, int64_t out[4],
                              gf_err *err) {
  return conv_shape(x, w, p, false, out, "conv2d", err);
}

gf_status gf_deconv2d_out_shape(const gf_tensor *x, const gf_tensor *w,
                                const gf_conv_params *p, int64_t out[4],
                                gf_err *err) {
  return conv_shape(x, w, p, true, out, "deconv2d", err);
}

static gf_status conv_check(const gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            const gf_conv_params *p, bool transposed,
                            const gf_tensor *y, const char *yname,
                            const char *op, gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, w, op, "w", err));
  int64_t ys[4];
  GF_TRY(conv_shape(x, w, p, transposed, ys, op, err));
  if (b) {
    GF_TRY(check_t(ctx, b, op, yname[0] == 'd' ? "db" : "b", err));
    GF_TRY(check_shape(b, op, yname[0] == 'd' ? "db" : "b", 1, &ys[1], err));
  }
  GF_TRY(check_t(ctx, y, op, yname, err));
  GF_TRY(check_shape(y, op, yname, 4, ys, err));
  return GF_OK;
}

gf_status gf_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *b, const gf_conv_params *p,
                        gf_tensor *y, gf_err *err) {
  NEED_OP(ctx, conv2d_fwd, "conv2d_fwd");
  GF_TRY(conv_check(ctx, x, w, b, p, false, y, "y", "conv2d_fwd", err));
  return ctx->ops->conv2d_fwd(ctx, x, w, b, p, y, err);
}

static gf_status conv_bwd_check(const gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *w, const gf_tensor *dy,
                                const gf_conv_params *p, bool transposed,
                                const gf_tensor *dx, const gf_tensor *dw,
                                const gf_tensor *db, gf_accum accum,
                                const char *op, gf_err *err) {
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(conv_check(ctx, x, w, db, p, transposed, dy, "dy", op, err));
  if (dx) {
    GF_TRY(check_t(ctx, dx, op, "dx", err));
    GF_TRY(check_shape(dx, op, "dx", 4, x->shape, err));
  }
  if (dw) {
    GF_TRY(check_t(ctx, dw, op, "dw", err));
    GF_TRY(check_shape(dw, op, "dw", 4, w->shape, err));
  }
  return GF_OK;
}

gf_status gf_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                        const gf_tensor *dy, const gf_conv_params *p,
                        gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                        gf_accum accum, gf_err *err) {
  NEED_OP(ctx, conv2d_bwd, "conv2d_bwd");
  GF_TRY(conv_bwd_check(ctx, x, w, dy, p, false, dx, dw, db, accum,
                        "conv2d_bwd", err));
  if (!dx && !dw && !db) return GF_OK;
  return ctx->ops->conv2d_bwd(ctx, x, w, dy, p, dx, dw, db, accum, err);
}

gf_status gf_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *b, const gf_conv_params *p,
                          gf_tensor *y, gf_err *err) {
  NEED_OP(ctx, deconv2d_fwd, "deconv2d_fwd");
  GF_TRY(conv_check(ctx, x, w, b, p, true, y, "y", "deconv2d_fwd", err));
  return ctx->ops->deconv2d_fwd(ctx, x, w, b, p, y, err);
}

gf_status gf_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *dy, const gf_conv_params *p,
                          gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                          gf_accum accum, gf_err *err) {
  NEED_OP(ctx, deconv2d_bwd, "deconv2d_bwd");
  GF_TRY(conv_bwd_check(ctx, x, w, dy, p, true, dx, dw, db, accum,
                        "deconv2d_bwd", err));
  if (!dx && !dw && !db) return GF_OK;
  return ctx->ops->deconv2d_bwd(ctx, x, w, dy, p, dx, dw, db, accum, err);
}

/* ---- batch norm ------------------------------------------------------------ */

/* x is [N,C] or [N,C,H,W]; every per-channel tensor given must be [C]. */
static gf_status bn_check(const gf_ctx *ctx, const gf_tensor *x,
                          const gf_tensor *const *per_c,
                          const char *const *names, int n_per_c,
                          const char *op, gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  if (x->ndim != 2 && x->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x must be [N,C] or [N,C,H,W]", op);
  for (int i = 0; i < n_per_c; i++) {
    if (!per_c[i]) continue;
    GF_TRY(check_t(ctx, per_c[i], op, names[i], err));
    GF_TRY(check_shape(per_c[i], op, names[i], 1, &x->shape[1], err));
  }
  return GF_OK;
}

static gf_status check_eps(float eps, const char *op, gf_err *err) {
  if (!(eps > 0.0f) || !isfinite(eps))
    return gf_fail(err, GF_EINVAL, "%s: eps must be > 0", op);
  return GF_OK;
}

gf_status gf_batchnorm_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *gamma, const gf_tensor *beta,
                                 gf_tensor *running_mean,
                                 gf_tensor *running_var,
                                 const gf_bn_params *p, gf_tensor *y,
                                 gf_tensor *save_mean, gf_tensor *save_var,
                                 gf_err *err) {
  const char *op = "batchnorm_fwd_train";
  NEED_OP(ctx, bn_fwd_train, op);
  if (!p) return gf_fail(err, GF_EINVAL, "%s: NULL params", op);
  GF_TRY(check_eps(p->eps, op, err));
  if (!(p->momentum >= 0.0f && p->momentum <= 1.0f))
    return gf_fail(err, GF_EINVAL, "%s: momentum must be in [0,1]", op);
  if (!gamma != !beta)
    return gf_fail(err, GF_EINVAL, "%s: gamma and beta go together", op);
  if (!running_mean != !running_var)
    return gf_fail(err, GF_EINVAL, "%s: running mean and var go together", op);
  const gf_tensor *pc[] = {gamma, beta, running_mean, running_var, save_mean,
                           save_var};
  const char *nm[] = {"gamma", "beta", "running_mean", "running_var",
                      "save_mean", "save_var"};
  GF_TRY(bn_check(ctx, x, pc, nm, 6, op, err));
  if (!save_mean || !save_var)
    return gf_fail(err, GF_EINVAL, "%s: save_mean and save_var are required",
                   op);
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", x->ndim, x->shape, err));
  int64_t m = gf_tensor_numel(x) / (x->shape[1] ? x->shape[1] : 1);
  if (m < 2)
    return gf_fail(err, GF_EINVAL,
                   "%s: need more than 1 value per channel (got %lld)", op,
                   (long long)m);
  return ctx->ops->bn_fwd_train(ctx, x, gamma, beta, running_mean,
                                running_var, p, y, save_mean, save_var, err);
}

gf_status gf_batchnorm_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *gamma, const gf_tensor *beta,
                                 const gf_tensor *running_mean,
                                 const gf_tensor *running_var, float eps,
                                 gf_tensor *y, gf_err *err) {
  const char *op = "batchnorm_fwd_infer";
  NEED_OP(ctx, bn_fwd_infer, op);
  GF_TRY(check_eps(eps, op, err));
  if (!gamma != !beta)
    return gf_fail(err, GF_EINVAL, "%s: gamma and beta go together", op);
  if (!running_mean || !running_var)
    return gf_fail(err, GF_EINVAL, "%s: running stats are required", op);
  const gf_tensor *pc[] = {gamma, beta, running_mean, running_var};
  const char *nm[] = {"gamma", "beta", "running_mean", "running_var"};
  GF_TRY(bn_check(ctx, x, pc, nm, 4, op, err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", x->ndim, x->shape, err));
  return ctx->ops->bn_fwd_infer(ctx, x, gamma, beta, running_mean,
                                running_var, eps, y, err);
}

gf_status gf_batchnorm_bwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *gamma, const gf_tensor *save_mean,
                           const gf_tensor *save_var, float eps,
                           const gf_tensor *dy, gf_tensor *dx,
                           gf_tensor *dgamma, gf_tensor *dbeta,
                           gf_accum accum, gf_err *err) {
  const char *op = "batchnorm_bwd";
  NEED_OP(ctx, bn_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(check_eps(eps, op, err));
  if (!save_mean || !save_var)
    return gf_fail(err, GF_EINVAL, "%s: save_mean and save_var are required",
                   op);
  if (!gamma && (dgamma || dbeta))
    return gf_fail(err, GF_EINVAL, "%s: dgamma/dbeta need gamma", op);
  const gf_tensor *pc[] = {gamma, save_mean, save_var, dgamma, dbeta};
  const char *nm[] = {"gamma", "save_mean", "save_var", "dgamma", "dbeta"};
  GF_TRY(bn_check(ctx, x, pc, nm, 5, op, err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_shape(dy, op, "dy", x->ndim, x->shape, err));
  if (dx) {
    GF_TRY(check_t(ctx, dx, op, "dx", err));
    GF_TRY(check_shape(dx, op, "dx", x->ndim, x->shape, err));
  }
  if (!dx && !dgamma && !dbeta) return GF_OK;
  return ctx->ops->bn_bwd(ctx, x, gamma, save_mean, save_var, eps, dy, dx,
                          dgamma, dbeta, accum, err);
}

/* dx may be dy or x (the backends compute element by element), but must not
 * overlap either of them in any other way. */
gf_status gf_batchnorm_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *mean,
                              const gf_tensor *var, float eps,
                              const gf_tensor *dy, const gf_tensor *sum_dy,
                              const gf_tensor *sum_dy_xhat, double count,
                              gf_tensor *dx, gf_err *err) {
  const char *op = "batchnorm_bwd_dx";
  NEED_OP(ctx, bn_bwd_dx, op);
  GF_TRY(check_eps(eps, op, err));
  if (!(count >= 1.0) || !isfinite(count))
    return gf_fail(err, GF_EINVAL, "%s: count must be >= 1 (got %g)", op,
                   count);
  if (!mean || !var)
    return gf_fail(err, GF_EINVAL, "%s: mean and var are required", op);
  if (!sum_dy || !sum_dy_xhat)
    return gf_fail(err, GF_EINVAL, "%s: sum_dy and sum_dy_xhat are required",
                   op);
  if (!dx) return gf_fail(err, GF_EINVAL, "%s: dx is NULL", op);
  const gf_tensor *pc[] = {gamma, mean, var, sum_dy, sum_dy_xhat};
  const char *nm[] = {"gamma", "mean", "var", "sum_dy", "sum_dy_xhat"};
  GF_TRY(bn_check(ctx, x, pc, nm, 5, op, err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_shape(dy, op, "dy", x->ndim, x->shape, err));
  GF_TRY(check_t(ctx, dx, op, "dx", err));
  GF_TRY(check_shape(dx, op, "dx", x->ndim, x->shape, err));
  uintptr_t nb = (uintptr_t)gf_tensor_nbytes(x), d = (uintptr_t)dx->data;
  const gf_tensor *ins[2] = {x, dy};
  for (int i = 0; i < 2 && nb > 0; i++) {
    uintptr_t a = (uintptr_t)ins[i]->data;
    if (a != d && a < d + nb && d < a + nb)
      return gf_fail(err, GF_EINVAL, "%s: dx partly overlaps %s", op,
                     i ? "dy" : "x");
  }
  return ctx->ops->bn_bwd_dx(ctx, x, gamma, mean, var, eps, dy, sum_dy,
                             sum_dy_xhat, count, dx, err);
}

/* ---- element-wise ---------------------------------------------------------- */

/* a and b (and c when non-NULL) are valid and hold the same numel; shapes
 * must match exactly. */
static gf_status same3(const gf_ctx *ctx, const char *op, const gf_tensor *a,
                       const char *an, const gf_tensor *b, const char *bn,
                       const gf_tensor *c, const char *cn, gf_err *err) {
  GF_TRY(check_t(ctx, a, op, an, err));
  GF_TRY(check_t(ctx, b, op, bn, err));
  GF_TRY(check_shape(b, op, bn, a->ndim, a->shape, err));
  if (c) {
    GF_TRY(check_t(ctx, c, op, cn, err));
    GF_TRY(check_shape(c, op, cn, a->ndim, a->shape, err));
  }
  return GF_OK;
}

static gf_status act_fwd(gf_ctx *ctx, int kind, float alpha, const gf_tensor *x,
                         gf_tensor *y, const char *op, gf_err *err) {
  NEED_OP(ctx, act_fwd, op);
  GF_TRY(same3(ctx, op, x, "x", y, "y", NULL, NULL, err));
  return ctx->ops->act_fwd(ctx, kind, alpha, x, y, err);
}

static gf_status act_bwd(gf_ctx *ctx, int kind, float alpha,
                         const gf_tensor *in, const gf_tensor *dy,
                         gf_tensor *dx, const char *op, gf_err *err) {
  NEED_OP(ctx, act_bwd, op);
  GF_TRY(same3(ctx, op, in, kind <= GF_ACT_LEAKY_RELU ? "x" : "y", dy, "dy", dx,
               "dx", err));
  if (!dx) return gf_fail(err, GF_EINVAL, "%s: dx is NULL", op);
  return ctx->ops->act_bwd(ctx, kind, alpha, in, dy, dx, err);
}

gf_status gf_relu_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                      gf_err *err) {
  return act_fwd(ctx, GF_ACT_RELU, 0.0f, x, y, "relu_fwd", err);
}
gf_status gf_relu_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *dy,
                      gf_tensor *dx, gf_err *err) {
  return act_bwd(ctx, GF_ACT_RELU, 0.0f, x, dy, dx, "relu_bwd", err);
}
gf_status gf_leaky_relu_fwd(gf_ctx *ctx, const gf_tensor *x, float slope,
                            gf_tensor *y, gf_err *err) {
  if (!isfinite(slope))
    return gf_fail(err, GF_EINVAL, "leaky_relu_fwd: slope not finite");
  return act_fwd(ctx, GF_ACT_LEAKY_RELU, slope, x, y, "leaky_relu_fwd", err);
}
gf_status gf_leaky_relu_bwd(gf_ctx *ctx, const gf_tensor *x, float slope,
                            const gf_tensor *dy, gf_tensor *dx, gf_err *err) {
  if (!isfinite(slope))
    return gf_fail(err, GF_EINVAL, "leaky_relu_bwd: slope not finite");
  return act_bwd(ctx, GF_ACT_LEAKY_RELU, slope, x, dy, dx, "leaky_relu_bwd",
                 err);
}
gf_status gf_tanh_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                      gf_err *err) {
  return act_fwd(ctx, GF_ACT_TANH, 0.0f, x, y, "tanh_fwd", err);
}
gf_status gf_tanh_bwd(gf_ctx *ctx, const gf_tensor *y, const gf_tensor *dy,
                      gf_tensor *dx, gf_err *err) {
  return act_bwd(ctx, GF_ACT_TANH, 0.0f, y, dy, dx, "tanh_bwd", err);
}
gf_status gf_sigmoid_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                         gf_err *err) {
  return act_fwd(ctx, GF_ACT_SIGMOID, 0.0f, x, y, "sigmoid_fwd", err);
}
gf_status gf_sigmoid_bwd(gf_ctx *ctx, const gf_tensor *y, const gf_tensor *dy,
                         gf_tensor *dx, gf_err *err) {
  return act_bwd(ctx, GF_ACT_SIGMOID, 0.0f, y, dy, dx, "sigmoid_bwd", err);
}

static gf_status dropout(gf_ctx *ctx, const gf_tensor *x, float p,
                         const gf_philox_stream *s, gf_tensor *y,
                         const char *op, const char *xn, const char *yn,
                         gf_err *err) {
  NEED_OP(ctx, dropout, op);
  if (!(p >= 0.0f && p <= 1.0f))
    return gf_fail(err, GF_EINVAL, "%s: p must be in [0,1]", op);
  if (!s) return gf_fail(err, GF_EINVAL, "%s: NULL Philox stream", op);
  GF_TRY(same3(ctx, op, x, xn, y, yn, NULL, NULL, err));
  return ctx->ops->dropout(ctx, x, p, s, y, err);
}

gf_status gf_dropout_fwd(gf_ctx *ctx, const gf_tensor *x, float p,
                         const gf_philox_stream *s, gf_tensor *y,
                         gf_err *err) {
  return dropout(ctx, x, p, s, y, "dropout_fwd", "x", "y", err);
}

gf_status gf_dropout_bwd(gf_ctx *ctx, const gf_tensor *dy, float p,
                         const gf_philox_stream *s, gf_tensor *dx,
                         gf_err *err) {
  return dropout(ctx, dy, p, s, dx, "dropout_bwd", "dy", "dx", err);
}

gf_status gf_bce_logits_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *target, gf_tensor *loss,
                            gf_err *err) {
  const char *op = "bce_logits_fwd";
  NEED_OP(ctx, bce_fwd, op);
  GF_TRY(same3(ctx, op, x, "x", target, "target", NULL, NULL, err));
  GF_TRY(check_t(ctx, loss, op, "loss", err));
  if (gf_tensor_numel(loss) != 1)
    return gf_fail(err, GF_EINVAL, "%s: loss must have 1 element", op);
  if (gf_tensor_numel(x) < 1)
    return gf_fail(err, GF_EINVAL, "%s: empty input", op);
  return ctx->ops->bce_fwd(ctx, x, target, loss, err);
}

gf_status gf_bce_logits_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *target, float dloss,
                            gf_tensor *dx, gf_err *err) {
  const char *op = "bce_logits_bwd";
  NEED_OP(ctx, bce_bwd, op);
  GF_TRY(same3(ctx, op, x, "x", target, "target", dx, "dx", err));
  if (!dx) return gf_fail(err, GF_EINVAL, "%s: dx is NULL", op);
  if (gf_tensor_numel(x) < 1)
    return gf_fail(err, GF_EINVAL, "%s: empty input", op);
  return ctx->ops->bce_bwd(ctx, x, target, dloss, dx, err);
}

/* ---- the other GAN losses, EMA, spectral normalization -------------------- */

/* True when the bytes of a and b (valid tensors, or NULL) overlap. */
static bool overlaps(const gf_tensor *a, const gf_tensor *b) {
  if (!a || !b) return false;
  uintptr_t pa = (uintptr_t)a->data, pb = (uintptr_t)b->data;
  uintptr_t na = (uintptr_t)gf_tensor_nbytes(a);
  uintptr_t nb = (uintptr_t)gf_tensor_nbytes(b);
  return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

/* A 1-element loss tensor and a non-empty x. */
static gf_status loss_check(const gf_ctx *ctx, const char *op,
                            const gf_tensor *x, const gf_tensor *loss,
                            gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, loss, op, "loss", err));
  if (gf_tensor_numel(loss) != 1)
    return gf_fail(err, GF_EINVAL, "%s: loss must have 1 element", op);
  if (gf_tensor_numel(x) < 1)
    return gf_fail(err, GF_EINVAL, "%s: empty input", op);
  if (overlaps(x, loss))
    return gf_fail(err, GF_EINVAL, "%s: loss overlaps x", op);
  return GF_OK;
}

static gf_status check_sign(float sign, const char *op, gf_err *err) {
  if (sign != 1.0f && sign != -1.0f)
    return gf_fail(err, GF_EINVAL, "%s: sign must be +1 or -1 (got %g)", op,
                   (double)sign);
  return GF_OK;
}

gf_status gf_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                       gf_tensor *loss, gf_err *err) {
  const char *op = "hinge_fwd";
  NEED_OP(ctx, hinge_fwd, op);
  GF_TRY(check_sign(sign, op, err));
  GF_TRY(loss_check(ctx, op, x, loss, err));
  return ctx->ops->hinge_fwd(ctx, x, sign, loss, err);
}

gf_status gf_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                       float dloss, gf_tensor *dx, gf_err *err) {
  const char *op = "hinge_bwd";
  NEED_OP(ctx, hinge_bwd, op);
  GF_TRY(check_sign(sign, op, err));
  if (!dx) return gf_fail(err, GF_EINVAL, "%s: dx is NULL", op);
  GF_TRY(same3(ctx, op, x, "x", dx, "dx", NULL, NULL, err));
  if (gf_tensor_numel(x) < 1)
    return gf_fail(err, GF_EINVAL, "%s: empty input", op);
  if (x->data != dx->data && overlaps(x, dx))
    return gf_fail(err, GF_EINVAL, "%s: dx partly overlaps x", op);
  return ctx->ops->hinge_bwd(ctx, x, sign, dloss, dx, err);
}

gf_status gf_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                      gf_err *err) {
  const char *op = "mean_fwd";
  NEED_OP(ctx, mean_fwd, op);
  GF_TRY(loss_check(ctx, op, x, loss, err));
  return ctx->ops->mean_fwd(ctx, x, loss, err);
}

gf_status gf_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x,
                  double beta, gf_err *err) {
  const char *op = "lerp";
  NEED_OP(ctx, lerp, op);
  if (!(beta >= 0.0 && beta <= 1.0))
    return gf_fail(err, GF_EINVAL, "%s: beta must be in [0,1] (got %g)", op,
                   beta);
  GF_TRY(check_t(ctx, avg, op, "avg", err));
  GF_TRY(check_t(ctx, x, op, "x", err));
  if (gf_tensor_numel(avg) != gf_tensor_numel(x))
    return gf_fail(err, GF_EINVAL, "%s: avg has %lld elements, x %lld", op,
                   (long long)gf_tensor_numel(avg),
                   (long long)gf_tensor_numel(x));
  if (avg->data != x->data && overlaps(avg, x))
    return gf_fail(err, GF_EINVAL, "%s: avg partly overlaps x", op);
  if (gf_tensor_numel(avg) == 0) return GF_OK;
  return ctx->ops->lerp(ctx, avg, x, (float)beta, err);
}

/* w [R, ...] with R >= 1 and numel >= 1; *K = numel / R. u, v (when
 * non-NULL) and sigma have R, K and 1 elements. */
static gf_status sn_check(const gf_ctx *ctx, const char *op,
                          const gf_tensor *w, const gf_tensor *u,
                          const gf_tensor *v, const gf_tensor *sigma,
                          int64_t *K, gf_err *err) {
  GF_TRY(check_t(ctx, w, op, "w", err));
  int64_t n = gf_tensor_numel(w), R = w->shape[0];
  if (n < 1)
    return gf_fail(err, GF_EINVAL, "%s: w is empty", op);
  *K = n / R;
  const gf_tensor *t[3] = {u, v, sigma};
  const char *nm[3] = {"u", "v", "sigma"};
  int64_t want[3] = {R, *K, 1};
  for (int i = 0; i < 3; i++) {
    GF_TRY(check_t(ctx, t[i], op, nm[i], err));
    if (gf_tensor_numel(t[i]) != want[i])
      return gf_fail(err, GF_EINVAL, "%s: %s has %lld elements, expected "
                     "%lld", op, nm[i], (long long)gf_tensor_numel(t[i]),
                     (long long)want[i]);
  }
  return GF_OK;
}

gf_status gf_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w, gf_tensor *u,
                               gf_tensor *v, int n_iter, float eps,
                               gf_tensor *sigma, gf_tensor *w_sn,
                               gf_err *err) {
  const char *op = "spectral_norm_fwd";
  NEED_OP(ctx, spectral_norm_fwd, op);
  if (n_iter < 0)
    return gf_fail(err, GF_EINVAL, "%s: n_iter must be >= 0 (got %d)", op,
                   n_iter);
  GF_TRY(check_eps(eps, op, err));
  int64_t K = 0;
  GF_TRY(sn_check(ctx, op, w, u, v, sigma, &K, err));
  GF_TRY(check_t(ctx, w_sn, op, "w_sn", err));
  GF_TRY(check_shape(w_sn, op, "w_sn", w->ndim, w->shape, err));
  const gf_tensor *all[5] = {w, u, v, sigma, w_sn};
  const char *nm[5] = {"w", "u", "v", "sigma", "w_sn"};
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (overlaps(all[i], all[j]))
        return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, nm[i],
                       nm[j]);
  return ctx->ops->spectral_norm_fwd(ctx, w, u, v, n_iter, eps, sigma, w_sn,
                                     err);
}

gf_status gf_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                               const gf_tensor *u, const gf_tensor *v,
                               const gf_tensor *sigma,
                               const gf_tensor *dw_sn, gf_tensor *dw,
                               gf_accum accum, gf_err *err) {
  const char *op = "spectral_norm_bwd";
  NEED_OP(ctx, spectral_norm_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  int64_t K = 0;
  GF_TRY(sn_check(ctx, op, w, u, v, sigma, &K, err));
  GF_TRY(check_t(ctx, dw_sn, op, "dw_sn", err));
  GF_TRY(check_shape(dw_sn, op, "dw_sn", w->ndim, w->shape, err));
  if (!dw) return GF_OK;
  GF_TRY(check_t(ctx, dw, op, "dw", err));
  GF_TRY(check_shape(dw, op, "dw", w->ndim, w->shape, err));
  const gf_tensor *ins[5] = {w, u, v, sigma, dw_sn};
  const char *nm[5] = {"w", "u", "v", "sigma", "dw_sn"};
  for (int i = 0; i < 5; i++)
    if (overlaps(dw, ins[i]) && !(i == 4 && dw->data == dw_sn->data))
      return gf_fail(err, GF_EINVAL, "%s: dw overlaps %s", op, nm[i]);
  return ctx->ops->spectral_norm_bwd(ctx, w, u, v, sigma, dw_sn, dw, accum,
                                     err);
}

gf_status gf_adam_step(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                       gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                       gf_tensor *v, gf_err *err) {
  const char *op = "adam_step";
  NEED_OP(ctx, adam, op);
  if (!p) return gf_fail(err, GF_EINVAL, "%s: NULL params", op);
  if (step < 1) return gf_fail(err, GF_EINVAL, "%s: step must be >= 1", op);
  if (!(p->beta1 >= 0.0 && p->beta1 < 1.0) ||
      !(p->beta2 >= 0.0 && p->beta2 < 1.0))
    return gf_fail(err, GF_EINVAL, "%s: betas must be in [0,1)", op);
  if (!(p->lr >= 0.0) || !(p->eps >= 0.0) || !(p->weight_decay >= 0.0) ||
      !isfinite(p->lr) || !isfinite(p->eps) || !isfinite(p->weight_decay))
    return gf_fail(err, GF_EINVAL, "%s: lr, eps, weight_decay must be >= 0",
                   op);
  GF_TRY(same3(ctx, op, param, "param", grad, "grad", m, "m", err));
  if (!m) return gf_fail(err, GF_EINVAL, "%s: m is NULL", op);
  GF_TRY(same3(ctx, op, param, "param", v, "v", NULL, NULL, err));
  return ctx->ops->adam(ctx, p, step, param, grad, m, v, err);
}

/* ---- pooling, resize, channel concatenation -------------------------------- */

static gf_status pool_shape(const gf_tensor *x, const gf_pool_params *p,
                            int64_t out[4], const char *op, gf_err *err) {
  if (!x || !p) return gf_fail(err, GF_EINVAL, "%s: NULL x or params", op);
  if (x->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x must be [N,C,H,W] (ndim %d)", op,
                   x->ndim);
  if (p->count_include_pad != 0 && p->count_include_pad != 1)
    return gf_fail(err, GF_EINVAL, "%s: count_include_pad must be 0 or 1",
                   op);
  out[0] = x->shape[0];
  out[1] = x->shape[1];
  for (int d = 0; d < 2; d++) {
    int k = p->kernel[d], s = p->stride[d], pad = p->pad[d];
    if (k < 1 || s < 1 || pad < 0)
      return gf_fail(err, GF_EINVAL, "%s: kernel %d, stride %d, pad %d "
                     "(need >= 1, >= 1, >= 0)", op, k, s, pad);
    if (pad > k / 2)
      return gf_fail(err, GF_EINVAL,
                     "%s: pad %d larger than half the kernel %d", op, pad, k);
    int64_t span = x->shape[2 + d] + 2 * (int64_t)pad - k;
    if (span < 0)
      return gf_fail(err, GF_EINVAL,
                     "%s: kernel %d larger than padded input %lld", op, k,
                     (long long)(x->shape[2 + d] + 2 * (int64_t)pad));
    out[2 + d] = span / s + 1;
  }
  return GF_OK;
}

gf_status gf_pool2d_out_shape(const gf_tensor *x, const gf_pool_params *p,
                              int64_t out[4], gf_err *err) {
  return pool_shape(x, p, out, "pool2d", err);
}

static gf_status pool_fwd(gf_ctx *ctx, int kind, const gf_tensor *x,
                          const gf_pool_params *p, gf_tensor *y,
                          const char *op, gf_err *err) {
  NEED_OP(ctx, pool_fwd, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  int64_t ys[4];
  GF_TRY(pool_shape(x, p, ys, op, err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", 4, ys, err));
  if (x->data == y->data && gf_tensor_numel(y) > 0)
    return gf_fail(err, GF_EINVAL, "%s: y must not be x", op);
  return ctx->ops->pool_fwd(ctx, kind, x, p, y, err);
}

gf_status gf_maxpool2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err) {
  return pool_fwd(ctx, GF_POOL_MAX, x, p, y, "maxpool2d_fwd", err);
}

gf_status gf_avgpool2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err) {
  int kind = p && p->count_include_pad == 0 ? GF_POOL_AVG_EXCLUDE_PAD
                                            : GF_POOL_AVG_INCLUDE_PAD;
  return pool_fwd(ctx, kind, x, p, y, "avgpool2d_fwd", err);
}

gf_status gf_resize_bilinear_fwd(gf_ctx *ctx, const gf_tensor *x,
                                 gf_tensor *y, gf_err *err) {
  const char *op = "resize_bilinear_fwd";
  NEED_OP(ctx, resize_bilinear, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  if (x->ndim != 4 || y->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x and y must be [N,C,H,W]", op);
  int64_t want[4] = {x->shape[0], x->shape[1], y->shape[2], y->shape[3]};
  GF_TRY(check_shape(y, op, "y", 4, want, err));
  for (int d = 2; d < 4; d++)
    if (x->shape[d] < 1 || y->shape[d] < 1)
      return gf_fail(err, GF_EINVAL, "%s: empty image (%lldx%lld -> %lldx%lld)",
                     op, (long long)x->shape[2], (long long)x->shape[3],
                     (long long)y->shape[2], (long long)y->shape[3]);
  if (x->data == y->data && gf_tensor_numel(y) > 0)
    return gf_fail(err, GF_EINVAL, "%s: y must not be x", op);
  return ctx->ops->resize_bilinear(ctx, x, y, err);
}

gf_status gf_copy_channels(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                           int64_t offset, gf_err *err) {
  const char *op = "copy_channels";
  NEED_OP(ctx, copy_channels, op);
  GF_TRY(check_t(ctx, src, op, "src", err));
  GF_TRY(check_t(ctx, dst, op, "dst", err));
  if ((src->ndim != 4 && src->ndim != 2) || dst->ndim != src->ndim)
    return gf_fail(err, GF_EINVAL,
                   "%s: src and dst must both be [N,C,H,W] or both [N,C] "
                   "(ndim %d, %d)", op, src->ndim, dst->ndim);
  int64_t want[4] = {src->shape[0], dst->shape[1], 1, 1};
  if (src->ndim == 4) {
    want[2] = src->shape[2];
    want[3] = src->shape[3];
  }
  GF_TRY(check_shape(dst, op, "dst", dst->ndim, want, err));
  int64_t cs = src->shape[1], cd = dst->shape[1];
  if (offset < 0 || offset > cd - cs)
    return gf_fail(err, GF_EINVAL,
                   "%s: %lld channels at offset %lld do not fit in dst's %lld",
                   op, (long long)cs, (long long)offset, (long long)cd);
  uintptr_t s = (uintptr_t)src->data, d = (uintptr_t)dst->data;
  uintptr_t ns = (uintptr_t)gf_tensor_nbytes(src);
  uintptr_t nd = (uintptr_t)gf_tensor_nbytes(dst);
  if (ns > 0 && s < d + nd && d < s + ns)
    return gf_fail(err, GF_EINVAL, "%s: src overlaps dst", op);
  if (ns == 0) return GF_OK;
  return ctx->ops->copy_channels(ctx, src, dst, offset, err);
}

gf_status gf_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err) {
  NEED_OP(ctx, fill, "fill");
  GF_TRY(check_t(ctx, t, "fill", "t", err));
  return ctx->ops->fill(ctx, t, value, err);
}

gf_status gf_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                  gf_err *err) {
  NEED_OP(ctx, copy, "copy");
  GF_TRY(check_t(ctx, src, "copy", "src", err));
  GF_TRY(check_t(ctx, dst, "copy", "dst", err));
  if (gf_tensor_numel(src) != gf_tensor_numel(dst))
    return gf_fail(err, GF_EINVAL, "copy: %lld elements into %lld",
                   (long long)gf_tensor_numel(src),
                   (long long)gf_tensor_numel(dst));
  return ctx->ops->copy(ctx, src, dst, err);
}

/* ---- DiffAugment ----------------------------------------------------------- */

/* in [N,C,H,W] (C, H, W >= 1), out the same shape, params
 * [N, GF_AUG_NPARAMS], a known policy; out is in or does not overlap it,
 * params does not overlap out. ins/outs name the tensors. */
static gf_status augment_check(const gf_ctx *ctx, const char *op,
                               const gf_tensor *params, unsigned policy,
                               const gf_tensor *in, const char *ins,
                               const gf_tensor *out, const char *outs,
                               gf_err *err) {
  if (policy & ~(unsigned)GF_AUG_ALL)
    return gf_fail(err, GF_EINVAL, "%s: unknown policy bits 0x%x", op,
                   policy & ~(unsigned)GF_AUG_ALL);
  GF_TRY(same3(ctx, op, in, ins, out, outs, NULL, NULL, err));
  if (in->ndim != 4 || in->shape[1] < 1 || in->shape[2] < 1 ||
      in->shape[3] < 1)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,H,W] with C, H, W >= "
                   "1", op, ins);
  GF_TRY(check_t(ctx, params, op, "params", err));
  int64_t pdims[2] = {in->shape[0], GF_AUG_NPARAMS};
  GF_TRY(check_shape(params, op, "params", 2, pdims, err));
  if (out->data != in->data && overlaps(in, out))
    return gf_fail(err, GF_EINVAL, "%s: %s partly overlaps %s", op, outs, ins);
  if (overlaps(params, out))
    return gf_fail(err, GF_EINVAL, "%s: params overlaps %s", op, outs);
  return GF_OK;
}

gf_status gf_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *params, unsigned policy,
                         gf_tensor *y, gf_err *err) {
  const char *op = "augment_fwd";
  NEED_OP(ctx, augment_fwd, op);
  GF_TRY(augment_check(ctx, op, params, policy, x, "x", y, "y", err));
  if (gf_tensor_numel(x) == 0) return GF_OK;
  return ctx->ops->augment_fwd(ctx, x, params, policy, y, err);
}

gf_status gf_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                         unsigned policy, const gf_tensor *dy, gf_tensor *dx,
                         gf_err *err) {
  const char *op = "augment_bwd";
  NEED_OP(ctx, augment_bwd, op);
  GF_TRY(augment_check(ctx, op, params, policy, dy, "dy", dx, "dx", err));
  if (gf_tensor_numel(dy) == 0) return GF_OK;
  return ctx->ops->augment_bwd(ctx, params, policy, dy, dx, err);
}

/* ---- class conditioning ---------------------------------------------------- */

/* Every value of the host labels (N of them) in [0, K); op names the
 * caller in the message. */
static gf_status labels_values(const gf_tensor *labels, int64_t K,
                               const char *op, gf_err *err) {
  const int32_t *L = labels->data;
  for (int64_t n = 0; n < labels->shape[0]; n++)
    if (L[n] < 0 || L[n] >= K)
      return gf_fail(err, GF_EINVAL,
                     "%s: labels[%lld] = %d is outside [0, %lld)", op,
                     (long long)n, (int)L[n], (long long)K);
  return GF_OK;
}

gf_status gf_labels_check(const gf_tensor *labels, int64_t K, gf_err *err) {
  if (!labels || labels->dtype != GF_I32 || labels->ndim != 1)
    return gf_fail(err, GF_EINVAL, "labels: not an i32 [N] tensor");
  if (labels->device != GF_DEV_CPU)
    return gf_fail(err, GF_EINVAL, "labels: not in host memory");
  if (labels->shape[0] > 0 && !labels->data)
    return gf_fail(err, GF_EINVAL, "labels: no data");
  return labels_values(labels, K, "labels", err);
}

/* labels: present, GF_I32, 1-D [N] with N <= INT32_MAX, on the ctx's
 * device, with data when N > 0; in host memory every value in [0, K). */
static gf_status labels_check(const gf_ctx *ctx, const gf_tensor *labels,
                              int64_t K, const char *op, gf_err *err) {
  if (!labels) return gf_fail(err, GF_EINVAL, "%s: labels is NULL", op);
  if (labels->dtype != GF_I32)
    return gf_fail(err, GF_EINVAL, "%s: labels has dtype %s (must be i32)", op,
                   gf_dtype_name(labels->dtype));
  if (labels->ndim != 1)
    return gf_fail(err, GF_EINVAL, "%s: labels must be 1-D [N] (ndim %d)", op,
                   labels->ndim);
  if (labels->shape[0] > INT32_MAX)
    return gf_fail(err, GF_EINVAL, "%s: more than INT32_MAX labels", op);
  if (labels->device != ctx->device ||
      labels->device_index != ctx->device_index)
    return gf_fail(err, GF_EINVAL, "%s: labels is not on the ctx's device", op);
  if (!labels->data && labels->shape[0] > 0)
    return gf_fail(err, GF_EINVAL, "%s: labels has no data", op);
  if (labels->device == GF_DEV_CPU) return labels_values(labels, K, op, err);
  return GF_OK;
}

/* table / dtable: 2-D [K, D] with 1 <= K <= INT32_MAX. */
static gf_status table_check(const gf_ctx *ctx, const gf_tensor *t,
                             const char *op, const char *what, gf_err *err) {
  GF_TRY(check_t(ctx, t, op, what, err));
  if (t->ndim != 2 || t->shape[0] < 1 || t->shape[0] > INT32_MAX)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [K, D], 1 <= K <= 2^31-1",
                   op, what);
  return GF_OK;
}

gf_status gf_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                           const gf_tensor *labels, gf_tensor *y, gf_err *err) {
  const char *op = "embedding_fwd";
  NEED_OP(ctx, embedding_fwd, op);
  GF_TRY(table_check(ctx, table, op, "table", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(labels_check(ctx, labels, table->shape[0], op, err));
  int64_t ys[2] = {labels->shape[0], table->shape[1]};
  GF_TRY(check_shape(y, op, "y", 2, ys, err));
  if (overlaps(y, table) || overlaps(y, labels))
    return gf_fail(err, GF_EINVAL, "%s: y overlaps table or labels", op);
  if (gf_tensor_numel(y) == 0) return GF_OK;
  return ctx->ops->embedding_fwd(ctx, table, labels, y, err);
}

gf_status gf_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                           const gf_tensor *dy, gf_tensor *dtable,
                           gf_accum accum, gf_err *err) {
  const char *op = "embedding_bwd";
  NEED_OP(ctx, embedding_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(table_check(ctx, dtable, op, "dtable", err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(labels_check(ctx, labels, dtable->shape[0], op, err));
  int64_t ds[2] = {labels->shape[0], dtable->shape[1]};
  GF_TRY(check_shape(dy, op, "dy", 2, ds, err));
  if (overlaps(dtable, dy) || overlaps(dtable, labels))
    return gf_fail(err, GF_EINVAL, "%s: dtable overlaps dy or labels", op);
  if (gf_tensor_numel(dtable) == 0) return GF_OK;
  return ctx->ops->embedding_bwd(ctx, labels, dy, dtable, accum, err);
}

/* x [N, C, ...] (ndim >= 2) and gain [N, C]. */
static gf_status affine_check(const gf_ctx *ctx, const char *op,
                              const gf_tensor *x, const gf_tensor *gain,
                              gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, gain, op, "gain", err));
  if (x->ndim < 2)
    return gf_fail(err, GF_EINVAL, "%s: x must be [N, C, ...]", op);
  return check_shape(gain, op, "gain", 2, x->shape, err);
}

gf_status gf_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *gain, const gf_tensor *bias,
                                gf_tensor *y, gf_err *err) {
  const char *op = "channel_affine_fwd";
  NEED_OP(ctx, channel_affine_fwd, op);
  GF_TRY(affine_check(ctx, op, x, gain, err));
  if (bias) {
    GF_TRY(check_t(ctx, bias, op, "bias", err));
    GF_TRY(check_shape(bias, op, "bias", 2, x->shape, err));
  }
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", x->ndim, x->shape, err));
  if (y->data != x->data && overlaps(y, x))
    return gf_fail(err, GF_EINVAL, "%s: y partly overlaps x", op);
  if (overlaps(y, gain) || overlaps(y, bias))
    return gf_fail(err, GF_EINVAL, "%s: y overlaps gain or bias", op);
  if (gf_tensor_numel(x) == 0) return GF_OK;
  return ctx->ops->channel_affine_fwd(ctx, x, gain, bias, y, err);
}

gf_status gf_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *gain, const gf_tensor *dy,
                                gf_tensor *dx, gf_tensor *dgain,
                                gf_tensor *dbias, gf_err *err) {
  const char *op = "channel_affine_bwd";
  NEED_OP(ctx, channel_affine_bwd, op);
  GF_TRY(affine_check(ctx, op, x, gain, err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_shape(dy, op, "dy", x->ndim, x->shape, err));
  const gf_tensor *outs[3] = {dx, dgain, dbias};
  const char *on[3] = {"dx", "dgain", "dbias"};
  for (int i = 0; i < 3; i++) {
    if (!outs[i]) continue;
    GF_TRY(check_t(ctx, outs[i], op, on[i], err));
    int nd = i == 0 ? x->ndim : 2; /* dx: x's shape; dgain, dbias [N, C] */
    GF_TRY(check_shape(outs[i], op, on[i], nd, x->shape, err));
    const gf_tensor *ins[3] = {x, gain, dy};
    const char *in[3] = {"x", "gain", "dy"};
    for (int j = 0; j < 3; j++)
      if (overlaps(outs[i], ins[j]) &&
          !(i == 0 && j == 2 && dx->data == dy->data))
        return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, on[i], in[j]);
    for (int j = 0; j < i; j++)
      if (overlaps(outs[i], outs[j]))
        return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, on[i], on[j]);
  }
  if (!dx && !dgain && !dbias) return GF_OK;
  if (gf_tensor_numel(gain) == 0) return GF_OK;
  return ctx->ops->channel_affine_bwd(ctx, x, gain, dy, dx, dgain, dbias, err);
}

/* a and b [N, D]; t (y or dy) has N elements, shape [N] or [N, 1]. */
static gf_status rowdot_check(const gf_ctx *ctx, const char *op,
                              const gf_tensor *a, const gf_tensor *b,
                              const gf_tensor *t, const char *tn, gf_err *err) {
  GF_TRY(check_t(ctx, a, op, "a", err));
  if (a->ndim != 2) return gf_fail(err, GF_EINVAL, "%s: a must be [N, D]", op);
  GF_TRY(check_t(ctx, b, op, "b", err));
  GF_TRY(check_shape(b, op, "b", 2, a->shape, err));
  GF_TRY(check_t(ctx, t, op, tn, err));
  int64_t n1[2] = {a->shape[0], 1};
  if (t->ndim == 1) return check_shape(t, op, tn, 1, n1, err);
  return check_shape(t, op, tn, 2, n1, err);
}

gf_status gf_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                        gf_tensor *y, gf_accum accum, gf_err *err) {
  const char *op = "rowdot_fwd";
  NEED_OP(ctx, rowdot_fwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(rowdot_check(ctx, op, a, b, y, "y", err));
  if (overlaps(y, a) || overlaps(y, b))
    return gf_fail(err, GF_EINVAL, "%s: y overlaps a or b", op);
  if (a->shape[0] == 0) return GF_OK;
  return ctx->ops->rowdot_fwd(ctx, a, b, y, accum, err);
}

gf_status gf_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                        const gf_tensor *dy, gf_tensor *da, gf_tensor *db,
                        gf_accum accum, gf_err *err) {
  const char *op = "rowdot_bwd";
  NEED_OP(ctx, rowdot_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(rowdot_check(ctx, op, a, b, dy, "dy", err));
  const gf_tensor *outs[2] = {da, db};
  const char *on[2] = {"da", "db"};
  for (int i = 0; i < 2; i++) {
    if (!outs[i]) continue;
    GF_TRY(check_t(ctx, outs[i], op, on[i], err));
    GF_TRY(check_shape(outs[i], op, on[i], 2, a->shape, err));
    if (overlaps(outs[i], a) || overlaps(outs[i], b) || overlaps(outs[i], dy))
      return gf_fail(err, GF_EINVAL, "%s: %s overlaps an input", op, on[i]);
  }
  if (overlaps(da, db))
    return gf_fail(err, GF_EINVAL, "%s: da overlaps db", op);
  if ((!da && !db) || gf_tensor_numel(a) == 0) return GF_OK;
  return ctx->ops->rowdot_bwd(ctx, a, b, dy, da, db, accum, err);
}

/* ---- residual networks ----------------------------------------------------- */

/* x (or dx): a 4-D [N,C,H,W] tensor; *big gets [N,C,2H,2W]. */
static gf_status up2_shape(const gf_tensor *x, const char *op, const char *xn,
                           int64_t big[4], gf_err *err) {
  if (x->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,H,W] (ndim %d)", op,
                   xn, x->ndim);
  if (x->shape[2] > INT64_MAX / 2 || x->shape[3] > INT64_MAX / 2)
    return gf_fail(err, GF_EINVAL, "%s: %s is too large to upsample", op, xn);
  big[0] = x->shape[0];
  big[1] = x->shape[1];
  big[2] = 2 * x->shape[2];
  big[3] = 2 * x->shape[3];
  return GF_OK;
}

gf_status gf_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    gf_tensor *y, gf_err *err) {
  const char *op = "upsample_nearest2x_fwd";
  NEED_OP(ctx, upsample_nearest2x_fwd, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  int64_t ys[4];
  GF_TRY(up2_shape(x, op, "x", ys, err));
  GF_TRY(check_shape(y, op, "y", 4, ys, err));
  if (overlaps(x, y))
    return gf_fail(err, GF_EINVAL, "%s: y overlaps x", op);
  if (gf_tensor_numel(x) == 0) return GF_OK;
  return ctx->ops->upsample_nearest2x_fwd(ctx, x, y, err);
}

gf_status gf_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                    gf_tensor *dx, gf_err *err) {
  const char *op = "upsample_nearest2x_bwd";
  NEED_OP(ctx, upsample_nearest2x_bwd, op);
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_t(ctx, dx, op, "dx", err));
  int64_t ds[4];
  GF_TRY(up2_shape(dx, op, "dx", ds, err));
  GF_TRY(check_shape(dy, op, "dy", 4, ds, err));
  if (overlaps(dx, dy))
    return gf_fail(err, GF_EINVAL, "%s: dx overlaps dy", op);
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  return ctx->ops->upsample_nearest2x_bwd(ctx, dy, dx, err);
}

gf_status gf_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                           const gf_pool_params *p, gf_tensor *dx,
                           gf_err *err) {
  const char *op = "avgpool2d_bwd";
  NEED_OP(ctx, avgpool2d_bwd, op);
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_t(ctx, dx, op, "dx", err));
  int64_t ys[4];
  GF_TRY(pool_shape(dx, p, ys, op, err));
  if (p->kernel[0] != p->stride[0] || p->kernel[1] != p->stride[1] ||
      p->pad[0] != 0 || p->pad[1] != 0 || dx->shape[2] % p->kernel[0] != 0 ||
      dx->shape[3] % p->kernel[1] != 0)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "%s: only non-overlapping windows that tile the input "
                   "(kernel == stride, pad 0, H and W multiples of the "
                   "kernel); got kernel %dx%d, stride %dx%d, pad %dx%d on "
                   "%lldx%lld", op, p->kernel[0], p->kernel[1], p->stride[0],
                   p->stride[1], p->pad[0], p->pad[1],
                   (long long)dx->shape[2], (long long)dx->shape[3]);
  GF_TRY(check_shape(dy, op, "dy", 4, ys, err));
  if (overlaps(dx, dy))
    return gf_fail(err, GF_EINVAL, "%s: dx overlaps dy", op);
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  return ctx->ops->avgpool2d_bwd(ctx, dy, p, dx, err);
}

gf_status gf_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                 gf_tensor *y, gf_err *err) {
  const char *op = "add";
  NEED_OP(ctx, add, op);
  GF_TRY(check_t(ctx, a, op, "a", err));
  GF_TRY(check_t(ctx, b, op, "b", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  int64_t n = gf_tensor_numel(y);
  if (gf_tensor_numel(a) != n || gf_tensor_numel(b) != n)
    return gf_fail(err, GF_EINVAL, "%s: a, b, y have %lld, %lld, %lld "
                   "elements", op, (long long)gf_tensor_numel(a),
                   (long long)gf_tensor_numel(b), (long long)n);
  if (y->data != a->data && overlaps(y, a))
    return gf_fail(err, GF_EINVAL, "%s: y partly overlaps a", op);
  if (y->data != b->data && overlaps(y, b))
    return gf_fail(err, GF_EINVAL, "%s: y partly overlaps b", op);
  if (n == 0) return GF_OK;
  return ctx->ops->add(ctx, a, b, y, err);
}

/* ---- FIR resampling (upfirdn2d) -------------------------------------------- */

/* The factors, flip and gain of p. */
static gf_status fir_params_check(const gf_fir_params *p, const char *op,
                                  gf_err *err) {
  for (int d = 0; d < 2; d++)
    if (p->up[d] < 1 || p->down[d] < 1)
      return gf_fail(err, GF_EINVAL, "%s: up [%d,%d] and down [%d,%d] must "
                     "be >= 1", op, p->up[0], p->up[1], p->down[0],
                     p->down[1]);
  if (p->flip != 0 && p->flip != 1)
    return gf_fail(err, GF_EINVAL, "%s: flip must be 0 or 1 (got %d)", op,
                   p->flip);
  if (!isfinite(p->gain))
    return gf_fail(err, GF_EINVAL, "%s: gain %g is not finite", op,
                   (double)p->gain);
  return GF_OK;
}

/* out = the output shape of upfirdn2d of x (its shape only) by f and p. */
static gf_status fir_shape(const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, int64_t out[4],
                           const char *op, const char *xn, gf_err *err) {
  if (!x || !f || !p)
    return gf_fail(err, GF_EINVAL, "%s: NULL %s, f or params", op, xn);
  GF_TRY(fir_params_check(p, op, err));
  if (x->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,H,W] (ndim %d)", op,
                   xn, x->ndim);
  if (f->ndim != 2 || f->shape[0] < 1 || f->shape[1] < 1)
    return gf_fail(err, GF_EINVAL, "%s: f must be a non-empty 2-D [fh,fw] "
                   "filter (ndim %d)", op, f->ndim);
  out[0] = x->shape[0];
  out[1] = x->shape[1];
  for (int d = 0; d < 2; d++) {
    /* axis d: 0 rows (y, pads [2], [3]), 1 columns (x, pads [0], [1]) */
    int64_t n = x->shape[2 + d], k = f->shape[d];
    int up = p->up[d], down = p->down[d];
    int pad0 = p->pad[2 - 2 * d], pad1 = p->pad[3 - 2 * d];
    if (n < 1)
      return gf_fail(err, GF_EINVAL, "%s: %s has %s side %lld (need >= 1)",
                     op, xn, d ? "W" : "H", (long long)n);
    if (n > (INT64_MAX / 4) / up || k > INT_MAX)
      return gf_fail(err, GF_EINVAL, "%s: %s or f is too large", op, xn);
    int64_t span = n * up + pad0 + pad1 - k; /* |pads| < 2^32: no overflow */
    if (span < 0)
      return gf_fail(err, GF_EINVAL, "%s: the %s side of the output is < 1 "
                     "(%lld up %d + pads %d, %d is below the filter's %lld)",
                     op, d ? "W" : "H", (long long)n, up, pad0, pad1,
                     (long long)k);
    out[2 + d] = span / down + 1;
  }
  return GF_OK;
}

gf_status gf_upfirdn2d_out_shape(const gf_tensor *x, const gf_tensor *f,
                                 const gf_fir_params *p, int64_t out[4],
                                 gf_err *err) {
  return fir_shape(x, f, p, out, "upfirdn2d", "x", err);
}

/* The checks of both directions, from in (x or dy) to out (y or dx): every
 * tensor f32 on the ctx's device; the forward's output shape, of x (or of
 * dx for the backward), into ys, which y (or dy) must have; out
 * overlapping neither in nor f. */
static gf_status fir_check(const gf_ctx *ctx, const gf_tensor *in,
                           const gf_tensor *f, const gf_fir_params *p,
                           const gf_tensor *out, bool backward,
                           int64_t ys[4], const char *op, gf_err *err) {
  const char *inn = backward ? "dy" : "x", *outn = backward ? "dx" : "y";
  const gf_tensor *big = backward ? out : in, *small = backward ? in : out;
  GF_TRY(check_t(ctx, big, op, backward ? outn : inn, err));
  GF_TRY(fir_shape(big, f, p, ys, op, backward ? outn : inn, err));
  GF_TRY(check_t(ctx, in, op, inn, err));
  GF_TRY(check_t(ctx, f, op, "f", err));
  GF_TRY(check_t(ctx, out, op, outn, err));
  if (overlaps(out, in))
    return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, outn, inn);
  if (overlaps(out, f))
    return gf_fail(err, GF_EINVAL, "%s: %s overlaps f", op, outn);
  return check_shape(small, op, backward ? inn : outn, 4, ys, err);
}

gf_status gf_upfirdn2d_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, gf_tensor *y, gf_err *err) {
  const char *op = "upfirdn2d_fwd";
  NEED_OP(ctx, upfirdn2d, op);
  int64_t ys[4];
  GF_TRY(fir_check(ctx, x, f, p, y, false, ys, op, err));
  if (gf_tensor_numel(y) == 0) return GF_OK;
  return ctx->ops->upfirdn2d(ctx, x, f, p, y, err);
}

gf_status gf_upfirdn2d_bwd(gf_ctx *ctx, const gf_tensor *f,
                           const gf_fir_params *p, const gf_tensor *dy,
                           gf_tensor *dx, gf_err *err) {
  const char *op = "upfirdn2d_bwd";
  NEED_OP(ctx, upfirdn2d, op);
  int64_t ys[4];
  GF_TRY(fir_check(ctx, dy, f, p, dx, true, ys, op, err));
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  /* The adjoint as an upfirdn2d of dy (ops.h): factors swapped, window
   * reversed, pads derived (and checked to fit an int). */
  gf_fir_params q = *p;
  q.up[0] = p->down[0];
  q.up[1] = p->down[1];
  q.down[0] = p->up[0];
  q.down[1] = p->up[1];
  q.flip = !p->flip;
  for (int d = 0; d < 2; d++) {
    int64_t n = dx->shape[2 + d], on = ys[2 + d], k = f->shape[d];
    int pad0 = p->pad[2 - 2 * d];
    int64_t a = k - 1 - pad0;
    int64_t b = (n - 1) * p->up[d] - on * p->down[d] + pad0 + 1;
    if (a < INT_MIN || a > INT_MAX || b < INT_MIN || b > INT_MAX)
      return gf_fail(err, GF_EINVAL, "%s: the adjoint's padding does not fit "
                     "an int (sides too large)", op);
    q.pad[2 - 2 * d] = (int)a;
    q.pad[3 - 2 * d] = (int)b;
  }
  return ctx->ops->upfirdn2d(ctx, dy, f, &q, dx, err);
}

/* ---- modulated convolution ------------------------------------------------- */

/* GF_EINVAL naming the first of the n tensors ins[] (NULLs skipped) whose
 * bytes out overlaps. */
static gf_status none_overlap(const char *op, const gf_tensor *out,
                              const char *oname, const gf_tensor *const *ins,
                              const char *const *inames, int n, gf_err *err) {
  for (int i = 0; i < n; i++)
    if (overlaps(out, ins[i]))
      return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, oname,
                     inames[i]);
  return GF_OK;
}

/* w [Cout,Cin,kh,kw] (every dim >= 1), s [N,Cin], demodulate 0 or 1 (with
 * 1, eps > 0); wm gets wmod's shape [N Cout,Cin,kh,kw], dc dcoef's
 * [N,Cout]. */
static gf_status modw_check(const gf_ctx *ctx, const char *op,
                            const gf_tensor *w, const gf_tensor *s,
                            int demodulate, float eps, int64_t wm[4],
                            int64_t dc[2], gf_err *err) {
  GF_TRY(check_t(ctx, w, op, "w", err));
  GF_TRY(check_t(ctx, s, op, "s", err));
  if (w->ndim != 4 || w->shape[0] < 1 || w->shape[1] < 1 ||
      w->shape[2] < 1 || w->shape[3] < 1)
    return gf_fail(err, GF_EINVAL, "%s: w must be [Cout,Cin,kh,kw], each "
                   ">= 1", op);
  if (s->ndim != 2 || s->shape[1] != w->shape[1])
    return gf_fail(err, GF_EINVAL, "%s: s must be [N,Cin] with Cin = %lld "
                   "(w's)", op, (long long)w->shape[1]);
  if (demodulate != 0 && demodulate != 1)
    return gf_fail(err, GF_EINVAL, "%s: demodulate must be 0 or 1, not %d",
                   op, demodulate);
  if (demodulate) GF_TRY(check_eps(eps, op, err));
  int64_t N = s->shape[0], Cout = w->shape[0];
  if (N > INT64_MAX / Cout)
    return gf_fail(err, GF_EINVAL, "%s: N Cout is too large", op);
  wm[0] = N * Cout;
  wm[1] = w->shape[1];
  wm[2] = w->shape[2];
  wm[3] = w->shape[3];
  dc[0] = N;
  dc[1] = Cout;
  return GF_OK;
}

gf_status gf_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                const gf_tensor *s, int demodulate, float eps,
                                gf_tensor *wmod, gf_tensor *dcoef,
                                gf_err *err) {
  const char *op = "modconv_weight_fwd";
  NEED_OP(ctx, modconv_weight_fwd, op);
  int64_t wm[4], dc[2];
  GF_TRY(modw_check(ctx, op, w, s, demodulate, eps, wm, dc, err));
  GF_TRY(check_t(ctx, wmod, op, "wmod", err));
  GF_TRY(check_shape(wmod, op, "wmod", 4, wm, err));
  if (dcoef || demodulate) {
    GF_TRY(check_t(ctx, dcoef, op, "dcoef", err));
    GF_TRY(check_shape(dcoef, op, "dcoef", 2, dc, err));
  }
  const gf_tensor *in[3] = {w, s, dcoef};
  const char *names[3] = {"w", "s", "dcoef"};
  GF_TRY(none_overlap(op, wmod, "wmod", in, names, 3, err));
  GF_TRY(none_overlap(op, dcoef, "dcoef", in, names, 2, err));
  if (dc[0] == 0) return GF_OK;
  return ctx->ops->modconv_weight_fwd(ctx, w, s, demodulate, eps, wmod, dcoef,
                                      err);
}

gf_status gf_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                const gf_tensor *s, int demodulate, float eps,
                                const gf_tensor *dcoef, const gf_tensor *dwmod,
                                gf_tensor *dw, gf_tensor *ds, gf_accum accum,
                                gf_err *err) {
  const char *op = "modconv_weight_bwd";
  NEED_OP(ctx, modconv_weight_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  int64_t wm[4], dc[2];
  GF_TRY(modw_check(ctx, op, w, s, demodulate, eps, wm, dc, err));
  GF_TRY(check_t(ctx, dwmod, op, "dwmod", err));
  GF_TRY(check_shape(dwmod, op, "dwmod", 4, wm, err));
  if (demodulate) {
    GF_TRY(check_t(ctx, dcoef, op, "dcoef", err));
    GF_TRY(check_shape(dcoef, op, "dcoef", 2, dc, err));
  } else {
    dcoef = NULL; /* not read */
  }
  if (dw) {
    GF_TRY(check_t(ctx, dw, op, "dw", err));
    GF_TRY(check_shape(dw, op, "dw", 4, w->shape, err));
  }
  if (ds) {
    GF_TRY(check_t(ctx, ds, op, "ds", err));
    GF_TRY(check_shape(ds, op, "ds", 2, s->shape, err));
  }
  const gf_tensor *in[5] = {w, s, dcoef, dwmod, ds};
  const char *names[5] = {"w", "s", "dcoef", "dwmod", "ds"};
  GF_TRY(none_overlap(op, dw, "dw", in, names, 5, err));
  GF_TRY(none_overlap(op, ds, "ds", in, names, 4, err));
  if (!dw && !ds) return GF_OK;
  return ctx->ops->modconv_weight_bwd(ctx, w, s, demodulate, eps, dcoef,
                                      dwmod, dw, ds, accum, err);
}

/* x [N,Cin,H,W], y (or dy) [N,Cout,OH,OW] with Cout >= 1, wmod
 * [N Cout,Cin,kh,kw], p a convolution's (out_pad 0); ys gets y's shape. */
static gf_status batched_check(const gf_ctx *ctx, const char *op,
                               const gf_tensor *x, const gf_tensor *wmod,
                               const gf_conv_params *p, const gf_tensor *y,
                               const char *yname, gf_err *err) {
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, wmod, op, "wmod", err));
  GF_TRY(check_t(ctx, y, op, yname, err));
  if (x->ndim != 4 || wmod->ndim != 4 || y->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x, wmod and %s must be 4-D", op,
                   yname);
  int64_t N = x->shape[0], Cout = y->shape[1];
  if (Cout < 1 || N > INT64_MAX / Cout)
    return gf_fail(err, GF_EINVAL, "%s: %s has %lld channels", op, yname,
                   (long long)Cout);
  if (wmod->shape[0] != N * Cout)
    return gf_fail(err, GF_EINVAL, "%s: wmod has %lld rows, expected N Cout "
                   "= %lld x %lld (x's N, %s's C)", op,
                   (long long)wmod->shape[0], (long long)N, (long long)Cout,
                   yname);
  gf_tensor w1 = *wmod; /* one sample's weights, for the output shape */
  w1.shape[0] = Cout;
  int64_t ys[4];
  GF_TRY(conv_shape(x, &w1, p, false, ys, op, err));
  return check_shape(y, op, yname, 4, ys, err);
}

gf_status gf_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *wmod,
                                const gf_conv_params *p, gf_tensor *y,
                                gf_err *err) {
  const char *op = "conv2d_batched_fwd";
  NEED_OP(ctx, conv2d_batched_fwd, op);
  GF_TRY(batched_check(ctx, op, x, wmod, p, y, "y", err));
  const gf_tensor *in[2] = {x, wmod};
  const char *names[2] = {"x", "wmod"};
  GF_TRY(none_overlap(op, y, "y", in, names, 2, err));
  if (x->shape[0] == 0) return GF_OK;
  return ctx->ops->conv2d_batched_fwd(ctx, x, wmod, p, y, err);
}

gf_status gf_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *wmod, const gf_tensor *dy,
                                const gf_conv_params *p, gf_tensor *dx,
                                gf_tensor *dwmod, gf_err *err) {
  const char *op = "conv2d_batched_bwd";
  NEED_OP(ctx, conv2d_batched_bwd, op);
  GF_TRY(batched_check(ctx, op, x, wmod, p, dy, "dy", err));
  if (dx) {
    GF_TRY(check_t(ctx, dx, op, "dx", err));
    GF_TRY(check_shape(dx, op, "dx", 4, x->shape, err));
  }
  if (dwmod) {
    GF_TRY(check_t(ctx, dwmod, op, "dwmod", err));
    GF_TRY(check_shape(dwmod, op, "dwmod", 4, wmod->shape, err));
  }
  const gf_tensor *in[4] = {x, wmod, dy, dwmod};
  const char *names[4] = {"x", "wmod", "dy", "dwmod"};
  GF_TRY(none_overlap(op, dx, "dx", in, names, 4, err));
  GF_TRY(none_overlap(op, dwmod, "dwmod", in, names, 3, err));
  if ((!dx && !dwmod) || x->shape[0] == 0) return GF_OK;
  return ctx->ops->conv2d_batched_bwd(ctx, x, wmod, dy, p, dx, dwmod, err);
}

/* ---- StyleGAN2 layers ------------------------------------------------------ */

/* act, alpha, gain and clamp of gf_bias_act_*: what ops.h allows. */
static gf_status bias_act_params(int act, float alpha, float gain,
                                 float clamp, const char *op, gf_err *err) {
  if (act != GF_BIAS_ACT_LINEAR && act != GF_BIAS_ACT_LRELU)
    return gf_fail(err, GF_EINVAL, "%s: unknown activation %d", op, act);
  if (!isfinite(gain) || (act == GF_BIAS_ACT_LRELU && !(gain > 0.0f)))
    return gf_fail(err, GF_EINVAL, "%s: gain %g must be finite%s", op,
                   (double)gain, act == GF_BIAS_ACT_LRELU ? " and > 0" : "");
  if (act == GF_BIAS_ACT_LRELU && !(isfinite(alpha) && alpha >= 0.0f))
    return gf_fail(err, GF_EINVAL, "%s: alpha %g must be finite and >= 0", op,
                   (double)alpha);
  if (isnan(clamp) || clamp == INFINITY)
    return gf_fail(err, GF_EINVAL, "%s: clamp %g must be negative (none) or "
                   "finite", op, (double)clamp);
  return GF_OK;
}

/* t (x, y, dy or dx) is [N,C] or [N,C,H,W]; a valid tensor. */
static gf_status nc_or_nchw(const gf_tensor *t, const char *op,
                            const char *what, gf_err *err) {
  if (t->ndim != 2 && t->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C] or [N,C,H,W] "
                   "(ndim %d)", op, what, t->ndim);
  return GF_OK;
}

gf_status gf_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *b,
                          int act, float alpha, float gain, float clamp,
                          gf_tensor *y, gf_err *err) {
  const char *op = "bias_act_fwd";
  NEED_OP(ctx, bias_act_fwd, op);
  GF_TRY(bias_act_params(act, alpha, gain, clamp, op, err));
  GF_TRY(same3(ctx, op, x, "x", y, "y", NULL, NULL, err));
  GF_TRY(nc_or_nchw(x, op, "x", err));
  if (b) {
    GF_TRY(check_t(ctx, b, op, "b", err));
    GF_TRY(check_shape(b, op, "b", 1, &x->shape[1], err));
  }
  if (y->data != x->data && overlaps(y, x))
    return gf_fail(err, GF_EINVAL, "%s: y partly overlaps x", op);
  if (overlaps(y, b)) return gf_fail(err, GF_EINVAL, "%s: y overlaps b", op);
  if (gf_tensor_numel(x) == 0) return GF_OK;
  return ctx->ops->bias_act_fwd(ctx, x, b, act, alpha, gain, clamp, y, err);
}

gf_status gf_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                          float alpha, float gain, float clamp,
                          const gf_tensor *dy, gf_tensor *dx, gf_tensor *db,
                          gf_accum accum, gf_err *err) {
  const char *op = "bias_act_bwd";
  NEED_OP(ctx, bias_act_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(bias_act_params(act, alpha, gain, clamp, op, err));
  GF_TRY(same3(ctx, op, y, "y", dy, "dy", dx, "dx", err));
  GF_TRY(nc_or_nchw(y, op, "y", err));
  if (db) {
    GF_TRY(check_t(ctx, db, op, "db", err));
    GF_TRY(check_shape(db, op, "db", 1, &y->shape[1], err));
  }
  if (dx && overlaps(dx, y))
    return gf_fail(err, GF_EINVAL, "%s: dx overlaps y", op);
  if (dx && dx->data != dy->data && overlaps(dx, dy))
    return gf_fail(err, GF_EINVAL, "%s: dx partly overlaps dy", op);
  if (overlaps(db, y) || overlaps(db, dy) || overlaps(db, dx))
    return gf_fail(err, GF_EINVAL, "%s: db overlaps y, dy or dx", op);
  if (!dx && !db) return GF_OK;
  if (gf_tensor_numel(y) == 0) {
    /* no terms: db's sums are 0 (accumulate: unchanged); db is empty too
     * when C is 0 */
    if (!db || accum == GF_ACCUMULATE || y->shape[1] == 0) return GF_OK;
    NEED_OP(ctx, fill, op);
    return ctx->ops->fill(ctx, db, 0.0f, err);
  }
  return ctx->ops->bias_act_bwd(ctx, y, act, alpha, gain, clamp, dy, dx, db,
                                accum, err);
}

/* x [N,C,H,W] with C, H, W >= 1 and the group / slice arithmetic of
 * gf_mbstd_*: out gets [N, C+F, H, W]. */
static gf_status mbstd_shape(const gf_tensor *x, int group_size,
                             int num_channels, int64_t out[4], const char *op,
                             gf_err *err) {
  if (x->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: x must be [N,C,H,W] (ndim %d)", op,
                   x->ndim);
  int64_t N = x->shape[0], C = x->shape[1];
  if (C < 1 || x->shape[2] < 1 || x->shape[3] < 1)
    return gf_fail(err, GF_EINVAL, "%s: x has an empty C, H or W", op);
  if (group_size < 1 || num_channels < 1)
    return gf_fail(err, GF_EINVAL, "%s: group_size %d and num_channels %d "
                   "must be >= 1", op, group_size, num_channels);
  int64_t G = group_size < N ? group_size : N;
  if (G > 0 && N % G != 0)
    return gf_fail(err, GF_EINVAL, "%s: group size %lld does not divide the "
                   "batch %lld", op, (long long)G, (long long)N);
  if (C % num_channels != 0)
    return gf_fail(err, GF_EINVAL, "%s: num_channels %d does not divide the "
                   "%lld channels", op, num_channels, (long long)C);
  out[0] = N;
  out[1] = C + num_channels;
  out[2] = x->shape[2];
  out[3] = x->shape[3];
  return GF_OK;
}

gf_status gf_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                       int num_channels, gf_tensor *y, gf_err *err) {
  const char *op = "mbstd_fwd";
  NEED_OP(ctx, mbstd_fwd, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  int64_t ys[4];
  GF_TRY(mbstd_shape(x, group_size, num_channels, ys, op, err));
  GF_TRY(check_shape(y, op, "y", 4, ys, err));
  if (overlaps(x, y)) return gf_fail(err, GF_EINVAL, "%s: y overlaps x", op);
  if (x->shape[0] == 0) return GF_OK;
  return ctx->ops->mbstd_fwd(ctx, x, group_size, num_channels, y, err);
}

gf_status gf_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                       int num_channels, const gf_tensor *dy, gf_tensor *dx,
                       gf_err *err) {
  const char *op = "mbstd_bwd";
  NEED_OP(ctx, mbstd_bwd, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_t(ctx, dx, op, "dx", err));
  int64_t ys[4];
  GF_TRY(mbstd_shape(x, group_size, num_channels, ys, op, err));
  GF_TRY(check_shape(dy, op, "dy", 4, ys, err));
  GF_TRY(check_shape(dx, op, "dx", 4, x->shape, err));
  if (overlaps(dx, x) || overlaps(dx, dy))
    return gf_fail(err, GF_EINVAL, "%s: dx overlaps x or dy", op);
  if (x->shape[0] == 0) return GF_OK;
  return ctx->ops->mbstd_bwd(ctx, x, group_size, num_channels, dy, dx, err);
}

/* t (x or dy) [N,C,H,W], noise [N,1,H,W]. */
static gf_status noise_check(const gf_ctx *ctx, const char *op,
                             const gf_tensor *t, const char *tn,
                             const gf_tensor *noise, gf_err *err) {
  GF_TRY(check_t(ctx, t, op, tn, err));
  GF_TRY(check_t(ctx, noise, op, "noise", err));
  if (t->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,H,W] (ndim %d)", op,
                   tn, t->ndim);
  int64_t ns[4] = {t->shape[0], 1, t->shape[2], t->shape[3]};
  return check_shape(noise, op, "noise", 4, ns, err);
}

/* A one-element tensor (strength or dstrength). */
static gf_status one_elem(const gf_ctx *ctx, const gf_tensor *t,
                          const char *op, const char *what, gf_err *err) {
  GF_TRY(check_t(ctx, t, op, what, err));
  if (gf_tensor_numel(t) != 1)
    return gf_fail(err, GF_EINVAL, "%s: %s must have 1 element (has %lld)",
                   op, what, (long long)gf_tensor_numel(t));
  return GF_OK;
}

gf_status gf_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *noise, const gf_tensor *strength,
                           gf_tensor *y, gf_err *err) {
  const char *op = "noise_add_fwd";
  NEED_OP(ctx, noise_add_fwd, op);
  GF_TRY(noise_check(ctx, op, x, "x", noise, err));
  GF_TRY(one_elem(ctx, strength, op, "strength", err));
  GF_TRY(check_t(ctx, y, op, "y", err));
  GF_TRY(check_shape(y, op, "y", 4, x->shape, err));
  if (y->data != x->data && overlaps(y, x))
    return gf_fail(err, GF_EINVAL, "%s: y partly overlaps x", op);
  if (overlaps(y, noise) || overlaps(y, strength))
    return gf_fail(err, GF_EINVAL, "%s: y overlaps noise or strength", op);
  if (gf_tensor_numel(x) == 0) return GF_OK;
  return ctx->ops->noise_add_fwd(ctx, x, noise, strength, y, err);
}

gf_status gf_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                           const gf_tensor *dy, gf_tensor *dx,
                           gf_tensor *dstrength, gf_accum accum, gf_err *err) {
  const char *op = "noise_add_bwd";
  NEED_OP(ctx, noise_add_bwd, op);
  GF_TRY(check_accum(accum, op, err));
  GF_TRY(noise_check(ctx, op, dy, "dy", noise, err));
  if (dx) {
    GF_TRY(check_t(ctx, dx, op, "dx", err));
    GF_TRY(check_shape(dx, op, "dx", 4, dy->shape, err));
    if (dx->data != dy->data && overlaps(dx, dy))
      return gf_fail(err, GF_EINVAL, "%s: dx partly overlaps dy", op);
    if (overlaps(dx, noise))
      return gf_fail(err, GF_EINVAL, "%s: dx overlaps noise", op);
  }
  if (dstrength) {
    GF_TRY(one_elem(ctx, dstrength, op, "dstrength", err));
    if (overlaps(dstrength, noise) || overlaps(dstrength, dy) ||
        overlaps(dstrength, dx))
      return gf_fail(err, GF_EINVAL, "%s: dstrength overlaps noise, dy or dx",
                     op);
  }
  if (gf_tensor_numel(dy) == 0) {
    /* nothing to copy; no terms: dstrength's sum is 0 */
    if (!dstrength || accum == GF_ACCUMULATE) return GF_OK;
    NEED_OP(ctx, fill, op);
    return ctx->ops->fill(ctx, dstrength, 0.0f, err);
  }
  if (!dstrength && (!dx || dx->data == dy->data)) return GF_OK;
  return ctx->ops->noise_add_bwd(ctx, noise, dy, dx, dstrength, accum, err);
}

/* ---- ADA resampling (reflect pad, affine resampling, colour matrix) ------- */

/* x (or dx) [N,C,H,W] and the pads: each in [0, side - 1]; ys gets the
 * padded shape. */
static gf_status pad_reflect_check(const gf_ctx *ctx, const char *op,
                                   const gf_tensor *in, const char *inn,
                                   const gf_tensor *out, const char *outn,
                                   const gf_tensor *small, const int pad[4],
                                   gf_err *err) {
  GF_TRY(check_t(ctx, in, op, inn, err));
  GF_TRY(check_t(ctx, out, op, outn, err));
  if (!pad) return gf_fail(err, GF_EINVAL, "%s: NULL pad", op);
  if (small->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: the image must be [N,C,H,W] (ndim "
                   "%d)", op, small->ndim);
  for (int k = 0; k < 4; k++) {
    int64_t side = small->shape[k < 2 ? 3 : 2];
    if (pad[k] < 0 || pad[k] >= side)
      return gf_fail(err, GF_EINVAL, "%s: pad[%d] = %d outside [0, %lld) "
                     "(reflection needs a pad below the side)", op, k,
                     pad[k], (long long)side);
  }
  const gf_tensor *big = small == in ? out : in;
  int64_t ys[4] = {small->shape[0], small->shape[1],
                   small->shape[2] + pad[2] + pad[3],
                   small->shape[3] + pad[0] + pad[1]};
  GF_TRY(check_shape(big, op, big == out ? outn : inn, 4, ys, err));
  if (overlaps(out, in))
    return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op, outn, inn);
  return GF_OK;
}

gf_status gf_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const int pad[4], gf_tensor *y, gf_err *err) {
  const char *op = "pad_reflect_fwd";
  NEED_OP(ctx, pad_reflect_fwd, op);
  GF_TRY(pad_reflect_check(ctx, op, x, "x", y, "y", x, pad, err));
  if (gf_tensor_numel(y) == 0) return GF_OK;
  return ctx->ops->pad_reflect_fwd(ctx, x, pad, y, err);
}

gf_status gf_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                             const gf_tensor *dy, gf_tensor *dx, gf_err *err) {
  const char *op = "pad_reflect_bwd";
  NEED_OP(ctx, pad_reflect_bwd, op);
  GF_TRY(pad_reflect_check(ctx, op, dy, "dy", dx, "dx", dx, pad, err));
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  return ctx->ops->pad_reflect_bwd(ctx, pad, dy, dx, err);
}

/* big ([N,C,H,W], x or dx) and small (y or dy: [N,C,OH,OW], any OH, OW)
 * with per-sample matrices mat [N, r, c]; out overlaps neither input. */
static gf_status ada_pair_check(const gf_ctx *ctx, const char *op,
                                const gf_tensor *img, const char *imgn,
                                const gf_tensor *other, const char *othern,
                                const gf_tensor *mat, const char *matn,
                                int64_t r, int64_t c, bool same_hw,
                                const gf_tensor *out, gf_err *err) {
  GF_TRY(check_t(ctx, img, op, imgn, err));
  GF_TRY(check_t(ctx, other, op, othern, err));
  GF_TRY(check_t(ctx, mat, op, matn, err));
  if (img->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,H,W] (ndim %d)", op,
                   imgn, img->ndim);
  int64_t os[4] = {img->shape[0], img->shape[1],
                   same_hw ? img->shape[2] : other->shape[2],
                   same_hw ? img->shape[3] : other->shape[3]};
  if (other->ndim != 4)
    return gf_fail(err, GF_EINVAL, "%s: %s must be [N,C,OH,OW] (ndim %d)",
                   op, othern, other->ndim);
  GF_TRY(check_shape(other, op, othern, 4, os, err));
  int64_t ms[3] = {img->shape[0], r, c};
  GF_TRY(check_shape(mat, op, matn, 3, ms, err));
  const gf_tensor *ins[2] = {out == img ? other : img, mat};
  const char *inames[2] = {out == img ? othern : imgn, matn};
  for (int i = 0; i < 2; i++)
    if (overlaps(out, ins[i]))
      return gf_fail(err, GF_EINVAL, "%s: %s overlaps %s", op,
                     out == img ? imgn : othern, inames[i]);
  return GF_OK;
}

gf_status gf_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *theta, gf_tensor *y,
                               gf_err *err) {
  const char *op = "affine_sample_fwd";
  NEED_OP(ctx, affine_sample_fwd, op);
  GF_TRY(ada_pair_check(ctx, op, x, "x", y, "y", theta, "theta", 2, 3, false,
                        y, err));
  if (gf_tensor_numel(y) == 0) return GF_OK;
  if (gf_tensor_numel(x) == 0) return gf_fill(ctx, y, 0.0f, err);
  return ctx->ops->affine_sample_fwd(ctx, x, theta, y, err);
}

gf_status gf_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_err *err) {
  const char *op = "affine_sample_bwd";
  NEED_OP(ctx, affine_sample_bwd, op);
  GF_TRY(ada_pair_check(ctx, op, dx, "dx", dy, "dy", theta, "theta", 2, 3,
                        false, dx, err));
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  if (gf_tensor_numel(dy) == 0) return gf_fill(ctx, dx, 0.0f, err);
  return ctx->ops->affine_sample_bwd(ctx, theta, dy, dx, err);
}

/* x [N,C,H,W] with C 1 or 3. */
static gf_status color4_channels(const gf_tensor *x, const char *op,
                                 const char *xn, gf_err *err) {
  if (x->ndim == 4 && x->shape[1] != 1 && x->shape[1] != 3)
    return gf_fail(err, GF_EINVAL, "%s: %s has %lld channels (RGB 3 or "
                   "luminance 1)", op, xn, (long long)x->shape[1]);
  return GF_OK;
}

gf_status gf_color4_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *m,
                        gf_tensor *y, gf_err *err) {
  const char *op = "color4_fwd";
  NEED_OP(ctx, color4_fwd, op);
  GF_TRY(ada_pair_check(ctx, op, x, "x", y, "y", m, "m", 4, 4, true, y,
                        err));
  GF_TRY(color4_channels(x, op, "x", err));
  if (gf_tensor_numel(y) == 0) return GF_OK;
  return ctx->ops->color4_fwd(ctx, x, m, y, err);
}

gf_status gf_color4_bwd(gf_ctx *ctx, const gf_tensor *m, const gf_tensor *dy,
                        gf_tensor *dx, gf_err *err) {
  const char *op = "color4_bwd";
  NEED_OP(ctx, color4_bwd, op);
  GF_TRY(ada_pair_check(ctx, op, dx, "dx", dy, "dy", m, "m", 4, 4, true, dx,
                        err));
  GF_TRY(color4_channels(dx, op, "dx", err));
  if (gf_tensor_numel(dx) == 0) return GF_OK;
  return ctx->ops->color4_bwd(ctx, m, dy, dx, err);
}

gf_status gf_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *xdot,
                       int group_size, int num_channels, gf_tensor *ydot,
                       gf_err *err) {
  const char *op = "mbstd_jvp";
  NEED_OP(ctx, mbstd_jvp, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, xdot, op, "xdot", err));
  GF_TRY(check_t(ctx, ydot, op, "ydot", err));
  int64_t ys[4];
  GF_TRY(mbstd_shape(x, group_size, num_channels, ys, op, err));
  GF_TRY(check_shape(xdot, op, "xdot", 4, x->shape, err));
  GF_TRY(check_shape(ydot, op, "ydot", 4, ys, err));
  if (overlaps(ydot, x) || overlaps(ydot, xdot))
    return gf_fail(err, GF_EINVAL, "%s: ydot overlaps x or xdot", op);
  if (x->shape[0] == 0) return GF_OK;
  return ctx->ops->mbstd_jvp(ctx, x, xdot, group_size, num_channels, ydot,
                             err);
}

gf_status gf_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *xdot, int group_size,
                           int num_channels, const gf_tensor *dy,
                           const gf_tensor *dydot, gf_tensor *dxdot,
                           gf_err *err) {
  const char *op = "mbstd_bwd_jvp";
  NEED_OP(ctx, mbstd_bwd_jvp, op);
  GF_TRY(check_t(ctx, x, op, "x", err));
  GF_TRY(check_t(ctx, xdot, op, "xdot", err));
  GF_TRY(check_t(ctx, dy, op, "dy", err));
  GF_TRY(check_t(ctx, dydot, op, "dydot", err));
  GF_TRY(check_t(ctx, dxdot, op, "dxdot", err));
  int64_t ys[4];
  GF_TRY(mbstd_shape(x, group_size, num_channels, ys, op, err));
  GF_TRY(check_shape(xdot, op, "xdot", 4, x->shape, err));
  GF_TRY(check_shape(dy, op, "dy", 4, ys, err));
  GF_TRY(check_shape(dydot, op, "dydot", 4, ys, err));
  GF_TRY(check_shape(dxdot, op, "dxdot", 4, x->shape, err));
  if (overlaps(dxdot, x) || overlaps(dxdot, xdot) || overlaps(dxdot, dy) ||
      overlaps(dxdot, dydot))
    return gf_fail(err, GF_EINVAL, "%s: dxdot overlaps an input", op);
  if (x->shape[0] == 0) return GF_OK;
  return ctx->ops->mbstd_bwd_jvp(ctx, x, xdot, group_size, num_channels, dy,
                                 dydot, dxdot, err);
}

gf_status gf_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
                               const gf_tensor *s, const gf_tensor *sdot,
                               const gf_tensor *dcoef, const gf_tensor *g,
                               const gf_tensor *gdot, gf_tensor *wmoddot,
                               gf_tensor *gws, gf_tensor *gwsdot,
                               gf_err *err) {
  const char *op = "modconv_demod_jvp";
  NEED_OP(ctx, modconv_demod_jvp, op);
  int64_t wm[4], dc[2];
  GF_TRY(modw_check(ctx, op, w, s, 1, 1e-8f, wm, dc, err));
  GF_TRY(check_t(ctx, sdot, op, "sdot", err));
  GF_TRY(check_shape(sdot, op, "sdot", 2, s->shape, err));
  GF_TRY(check_t(ctx, dcoef, op, "dcoef", err));
  GF_TRY(check_shape(dcoef, op, "dcoef", 2, dc, err));
  if (!gws != !gwsdot)
    return gf_fail(err, GF_EINVAL, "%s: gws and gwsdot go together", op);
  if (wmoddot) {
    GF_TRY(check_t(ctx, wmoddot, op, "wmoddot", err));
    GF_TRY(check_shape(wmoddot, op, "wmoddot", 4, wm, err));
  }
  if (gws) {
    gf_tensor *o2[2] = {gws, gwsdot};
    const gf_tensor *i2[2] = {g, gdot};
    const char *on[2] = {"gws", "gwsdot"}, *in2[2] = {"g", "gdot"};
    for (int k = 0; k < 2; k++) {
      GF_TRY(check_t(ctx, i2[k], op, in2[k], err));
      GF_TRY(check_shape(i2[k], op, in2[k], 4, wm, err));
      GF_TRY(check_t(ctx, o2[k], op, on[k], err));
      GF_TRY(check_shape(o2[k], op, on[k], 4, wm, err));
    }
  }
  const gf_tensor *in[7] = {w, s, sdot, dcoef, g, gdot, wmoddot};
  const char *names[7] = {"w", "s", "sdot", "dcoef", "g", "gdot", "wmoddot"};
  int nin = gws ? 6 : 4;
  if (wmoddot) GF_TRY(none_overlap(op, wmoddot, "wmoddot", in, names, nin,
                                   err));
  if (gws) {
    GF_TRY(none_overlap(op, gws, "gws", in, names, 7, err));
    GF_TRY(none_overlap(op, gwsdot, "gwsdot", in, names, 7, err));
    if (overlaps(gws, gwsdot))
      return gf_fail(err, GF_EINVAL, "%s: gws overlaps gwsdot", op);
  }
  if ((!wmoddot && !gws) || s->shape[0] == 0) return GF_OK;
  return ctx->ops->modconv_demod_jvp(ctx, w, s, sdot, dcoef, g, gdot, wmoddot,
                                     gws, gwsdot, err);
}
