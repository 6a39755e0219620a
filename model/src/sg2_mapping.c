/* sg2_mapping.c - the mapping network (MappingNetwork): G's z (and c) to
 * ws with the tracked w_avg and truncation, and D's c to cmap. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gf/text.h"
#include "sg2_internal.h"

gf_status sg2_mapping_build(gf_sg2_net *net, sg2_alloc *a, sg2_mapping *m,
                            int64_t z_dim, int64_t c_dim, int64_t w_dim,
                            int n_layers, int num_ws, gf_err *err) {
  memset(m, 0, sizeof *m);
  m->z_dim = z_dim;
  m->c_dim = c_dim;
  m->embed = c_dim > 0 ? w_dim : 0;
  m->w_dim = w_dim;
  m->n_layers = n_layers;
  m->num_ws = num_ws;
  m->p_w_avg = -1;
  int mb = net->max_batch;
  float lr = net->cfg.map_lr_mul;
  if (c_dim > 0)
    GF_TRY(sg2_fc_build(net, a, &m->embed_fc, "mapping.embed", c_dim, m->embed,
                        GF_BIAS_ACT_LINEAR, 1.0f, err));
  for (int i = 0; i < n_layers; i++) {
    char nm[32];
    GF_FORMAT_FITS(nm, sizeof nm, "mapping.fc%d", i);
    int64_t in = i == 0 ? z_dim + m->embed : w_dim;
    GF_TRY(sg2_fc_build(net, a, &m->fc[i], nm, in, w_dim, GF_BIAS_ACT_LRELU,
                        lr, err));
  }
  if (z_dim > 0) GF_TRY(sg2_norm_build(net, a, &m->nz, z_dim, err));
  if (c_dim > 0) GF_TRY(sg2_norm_build(net, a, &m->nc, m->embed, err));
  if (z_dim > 0 && c_dim > 0) {
    const int64_t xs[2] = {mb, z_dim + m->embed};
    GF_TRY(sg2_act(net, a, &m->x, 2, xs, err));
    GF_TRY(sg2_dact(net, a, &m->dx, 2, xs, err));
  }
  if (c_dim > 0) {
    const int64_t cs[2] = {mb, m->embed};
    GF_TRY(sg2_dact(net, a, &m->dxc, 2, cs, err));
  }
  if (num_ws > 0) {
    const int64_t wa[1] = {w_dim}, ws[3] = {mb, num_ws, w_dim},
                  rep[2] = {1, (int64_t)num_ws * w_dim}, mean[2] = {1, w_dim};
    GF_TRY(sg2_add_param(net, a, false, GF_PARAM_BIAS, 1, wa, &m->p_w_avg,
                         err, "mapping.w_avg"));
    GF_TRY(sg2_act(net, a, &m->ws, 3, ws, err));
    GF_TRY(sg2_act(net, a, &m->wavg_rep, 2, rep, err));
    GF_TRY(sg2_act(net, a, &m->mean, 2, mean, err));
    /* GF_I32 zeros: an f32 slot of the same size, never written (the
     * arena is zero where nothing was handed out) */
    const int64_t zs[1] = {mb};
    GF_TRY(sg2_act(net, a, &m->zeros_i32, 1, zs, err));
    m->zeros_i32.dtype = GF_I32;
    const int64_t rs[1] = {(int64_t)mb * num_ws};
    GF_TRY(sg2_dact(net, a, &m->rowid_i32, 1, rs, err));
    m->rowid_i32.dtype = GF_I32;
  }
  return GF_OK;
}

gf_status sg2_mapping_run(gf_sg2_net *net, gf_ctx *ctx, sg2_mapping *m,
                          const gf_tensor *z, const gf_tensor *c, int64_t n,
                          const gf_tensor **w, gf_err *err) {
  if (m->z_dim > 0 && (!z || z->ndim != 2 || z->shape[0] != n ||
                       z->shape[1] != m->z_dim))
    return gf_fail(err, GF_EINVAL, "sg2 mapping: z must be [%lld, %lld]",
                   (long long)n, (long long)m->z_dim);
  if (m->c_dim > 0 && (!c || c->ndim != 2 || c->shape[0] != n ||
                       c->shape[1] != m->c_dim))
    return gf_fail(err, GF_EINVAL, "sg2 mapping: c must be [%lld, %lld]",
                   (long long)n, (long long)m->c_dim);
  gf_tensor nz = sg2_rows(&m->nz.y, n), nc = sg2_rows(&m->nc.y, n);
  if (c) m->c_in = *c;
  if (m->z_dim > 0) GF_TRY(sg2_norm_fwd(ctx, &m->nz, z, n, err));
  if (m->c_dim > 0) {
    GF_TRY(sg2_fc_fwd(net, ctx, &m->embed_fc, c, n, err));
    gf_tensor e = sg2_rows(&m->embed_fc.y, n);
    GF_TRY(sg2_norm_fwd(ctx, &m->nc, &e, n, err));
  }
  gf_tensor x = m->z_dim > 0 ? nz : nc;
  if (m->z_dim > 0 && m->c_dim > 0) {
    x = sg2_rows(&m->x, n);
    GF_TRY(gf_copy_channels(ctx, &nz, &x, 0, err));
    GF_TRY(gf_copy_channels(ctx, &nc, &x, m->z_dim, err));
  }
  for (int i = 0; i < m->n_layers; i++) {
    GF_TRY(sg2_fc_fwd(net, ctx, &m->fc[i], &x, n, err));
    x = sg2_rows(&m->fc[i].y, n);
  }
  *w = &m->fc[m->n_layers - 1].y;
  m->fwd_batch = (int)n;
  m->fwd_psi = 1.0f;
  return GF_OK;
}

static gf_status need_g(const gf_sg2_net *net, gf_ctx *ctx, const char *op,
                        gf_err *err) {
  if (!net || !net->impl || !ctx)
    return gf_fail(err, GF_EINVAL, "%s: NULL or unbuilt net", op);
  if (net->role != GF_SG2_G)
    return gf_fail(err, GF_EINVAL, "%s: not a generator", op);
  return GF_OK;
}

gf_status gf_sg2_mapping_fwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *z,
                             const gf_tensor *c, float psi, int cutoff,
                             gf_net_mode mode, gf_tensor *ws, gf_err *err) {
  GF_TRY(need_g(net, ctx, "gf_sg2_mapping_fwd", err));
  sg2_mapping *m = &net->impl->map;
  int64_t n = z ? z->shape[0] : 0;
  if (n < 1 || n > net->max_batch)
    return gf_fail(err, GF_EINVAL, "gf_sg2_mapping_fwd: batch %lld outside "
                   "[1, %d]", (long long)n, net->max_batch);
  if (!isfinite(psi))
    return gf_fail(err, GF_EINVAL, "gf_sg2_mapping_fwd: psi %g", (double)psi);
  const gf_tensor *w;
  GF_TRY(sg2_mapping_run(net, ctx, m, z, c, n, &w, err));
  gf_tensor wn = sg2_rows(w, n);
  int64_t wd = m->w_dim, nws = m->num_ws;
  const int64_t flat[2] = {n, nws * wd};
  gf_tensor out = sg2_rows(&m->ws, n), out2 = sg2_as(&out, 2, flat);
  for (int64_t j = 0; j < nws; j++)
    GF_TRY(gf_copy_channels(ctx, &wn, &out2, j * wd, err));
  if (psi != 1.0f) {
    int64_t cut = cutoff <= 0 || cutoff > nws ? nws : cutoff;
    const int64_t a1[2] = {1, wd}, cs[1] = {cut * wd};
    gf_tensor avg = sg2_as(sg2_val(net, m->p_w_avg), 2, a1);
    for (int64_t j = 0; j < cut; j++)
      GF_TRY(gf_copy_channels(ctx, &avg, &m->wavg_rep, j * wd, err));
    gf_tensor rep = sg2_as(&m->wavg_rep, 1, cs);
    for (int64_t i = 0; i < n; i++) {
      gf_tensor row = sg2_as(&out, 1, cs);
      row.data = (float *)out.data + i * nws * wd;
      /* torch.lerp(w_avg, ws, psi) */
      GF_TRY(gf_lerp(ctx, &row, &rep, (double)psi, err));
    }
  }
  m->fwd_psi = psi;
  net->fwd_mode = mode;
  *ws = out;
  return GF_OK;
}

/* m->mean = the batch mean of the last mapping forward's w. */
static gf_status w_mean(gf_sg2_net *net, gf_ctx *ctx, const char *who,
                        gf_err *err) {
  GF_TRY(need_g(net, ctx, who, err));
  sg2_mapping *m = &net->impl->map;
  if (m->fwd_batch < 1)
    return gf_fail(err, GF_ESTATE, "%s: no mapping forward", who);
  int64_t n = m->fwd_batch;
  gf_tensor w = sg2_rows(&m->fc[m->n_layers - 1].y, n);
  gf_tensor zeros = sg2_rows(&m->zeros_i32, n);
  /* the batch sum as the gradient of a one-row embedding */
  GF_TRY(gf_embedding_bwd(ctx, &zeros, &w, &m->mean, GF_OVERWRITE, err));
  return gf_bias_act_fwd(ctx, &m->mean, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                         (float)(1.0 / (double)n), -1.0f, &m->mean, err);
}

static gf_status w_lerp(gf_sg2_net *net, gf_ctx *ctx, gf_err *err) {
  sg2_mapping *m = &net->impl->map;
  gf_tensor *avg = &net->tensors[m->p_w_avg].value;
  return gf_lerp(ctx, avg, &m->mean, (double)net->cfg.w_avg_beta, err);
}

gf_status gf_sg2_w_avg_update(gf_sg2_net *net, gf_ctx *ctx, gf_err *err) {
  GF_TRY(w_mean(net, ctx, "gf_sg2_w_avg_update", err));
  return w_lerp(net, ctx, err);
}

gf_status gf_sg2_w_avg_mean(gf_sg2_net *net, gf_ctx *ctx, float *mean,
                            gf_err *err) {
  GF_TRY(w_mean(net, ctx, "gf_sg2_w_avg_mean", err));
  gf_tensor h, *d = &net->impl->map.mean;
  GF_TRY(gf_tensor_view(&h, mean, GF_F32, GF_DEV_CPU, d->ndim, d->shape, err));
  return gf_tensor_copy(&h, d, err);
}

gf_status gf_sg2_w_avg_apply(gf_sg2_net *net, gf_ctx *ctx, const float *mean,
                             gf_err *err) {
  GF_TRY(need_g(net, ctx, "gf_sg2_w_avg_apply", err));
  gf_tensor h, *d = &net->impl->map.mean;
  GF_TRY(gf_tensor_view(&h, (void *)mean, GF_F32, GF_DEV_CPU, d->ndim,
                        d->shape, err));
  GF_TRY(gf_tensor_copy(d, &h, err));
  return w_lerp(net, ctx, err);
}

gf_status sg2_mapping_back(gf_sg2_net *net, gf_ctx *ctx, sg2_mapping *m,
                           const gf_tensor *c, int64_t n, gf_accum accum,
                           gf_err *err) {
  for (int i = m->n_layers - 1; i >= 0; i--) {
    gf_tensor x, dx, *dxp = NULL;
    if (i > 0) {
      x = sg2_rows(&m->fc[i - 1].y, n);
      dx = sg2_rows(&m->fc[i - 1].dy, n);
      dxp = &dx;
    } else if (m->z_dim > 0 && m->c_dim > 0) {
      x = sg2_rows(&m->x, n);
      dx = sg2_rows(&m->dx, n);
      dxp = &dx;
    } else if (m->c_dim > 0) {
      x = sg2_rows(&m->nc.y, n);
      dx = sg2_rows(&m->dxc, n);
      dxp = &dx;
    } else {
      x = sg2_rows(&m->nz.y, n); /* dz is not needed */
    }
    GF_TRY(sg2_fc_bwd(net, ctx, &m->fc[i], &x, n, dxp, accum, err));
  }
  if (m->c_dim == 0) return GF_OK;
  gf_tensor dxc = sg2_rows(&m->dxc, n);
  if (m->z_dim > 0) {
    /* the c columns of dL/dx: a crop of the [n, z + e] plane */
    const int64_t p4[4] = {1, 1, n, m->z_dim + m->embed},
                  c4[4] = {1, 1, n, m->embed};
    gf_tensor dx = sg2_rows(&m->dx, n);
    gf_tensor src = sg2_as(&dx, 4, p4), dst = sg2_as(&dxc, 4, c4);
    gf_fir_params fp = {{1, 1}, {1, 1}, {-(int)m->z_dim, 0, 0, 0}, 0, 1.0f};
    GF_TRY(gf_upfirdn2d_fwd(ctx, &src, &net->impl->one, &fp, &dst, err));
  }
  gf_tensor e = sg2_rows(&m->embed_fc.y, n), de = sg2_rows(&m->embed_fc.dy, n);
  GF_TRY(sg2_norm_bwd(ctx, &m->nc, &e, &dxc, n, &de, err));
  return sg2_fc_bwd(net, ctx, &m->embed_fc, c, n, NULL, accum, err);
}

gf_status gf_sg2_mapping_bwd(gf_sg2_net *net, gf_ctx *ctx,
                             const gf_tensor *dws, gf_accum accum,
                             gf_err *err) {
  GF_TRY(need_g(net, ctx, "gf_sg2_mapping_bwd", err));
  sg2_mapping *m = &net->impl->map;
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "gf_sg2_mapping_bwd: not built for "
                   "training");
  if (m->fwd_batch < 1)
    return gf_fail(err, GF_ESTATE, "gf_sg2_mapping_bwd: no mapping forward");
  if (m->fwd_psi != 1.0f)
    return gf_fail(err, GF_EUNSUPPORTED, "gf_sg2_mapping_bwd: the last "
                   "forward truncated (psi %g); training maps with psi 1",
                   (double)m->fwd_psi);
  int64_t n = m->fwd_batch;
  if (!dws || dws->ndim != 3 || dws->shape[0] != n ||
      dws->shape[1] != m->num_ws || dws->shape[2] != m->w_dim)
    return gf_fail(err, GF_EINVAL, "gf_sg2_mapping_bwd: dws must be [%lld, "
                   "%d, %lld]", (long long)n, m->num_ws,
                   (long long)m->w_dim);
  /* dL/dw = the sum over the num_ws copies: rows (i, j) into row i */
  const int64_t flat[2] = {n * m->num_ws, m->w_dim};
  gf_tensor d2 = sg2_as(dws, 2, flat), ids = sg2_rows(&m->rowid_i32, flat[0]);
  gf_tensor dw = sg2_rows(&m->fc[m->n_layers - 1].dy, n);
  GF_TRY(gf_embedding_bwd(ctx, &ids, &d2, &dw, GF_OVERWRITE, err));
  return sg2_mapping_back(net, ctx, m, &m->c_in, n, accum, err);
}
