/* net_sync.c - batch norm whose statistics span every rank of a
 * communicator (sync BN, gf_net_set_sync_bn), as PyTorch's SyncBatchNorm
 * computes it, over the kernels' ops and gf_comm.
 *
 * Forward (train mode), per channel c, rank r with m_r values:
 *   local mean_r and biased var_r   gf_batchnorm_fwd_train (running stats
 *                                   untouched; its output is overwritten)
 *   M = sum m_r, mean = sum m_r mean_r / M             all-reduce 1
 *   var = sum (m_r var_r + m_r (mean_r - mean)^2) / M  all-reduce 2
 *   y = gamma (x - mean) / sqrt(var + eps) + beta      gf_batchnorm_fwd_infer
 *   running stats: (1 - mom) r + mom mean, (1 - mom) r + mom var M/(M-1)
 * The two rounds are Chan's pairwise combination, so the variance is as
 * accurate as a two-pass one over the whole batch (no E[x^2] - mean^2).
 * Sums travel as doubles.
 * Backward: the local sums of dy and dy * xhat (gf_batchnorm_bwd without
 * dx) are the parameter gradients of gamma and beta on this rank (the
 * gradient all-reduce averages them); their all-reduced totals give dx
 * (gf_batchnorm_bwd_dx). With each rank's loss the mean over its own B/N
 * samples, dx is N times the one-rank-of-B gradient, which the average
 * over N ranks of the upstream parameter gradients divides out.
 *
 * Buffers in the comm's memory space: host buffers for the MPI backend;
 * for NCCL the doubles are staged through device memory. */
#include <stdlib.h>
#include <string.h>

#include "gf/comm.h"
#include "net_layers.h"

struct gf_net_sync {
  int64_t cmax;    /* channels of the widest BN layer */
  double *h;       /* host, 2 * cmax + 1 doubles */
  float *hf;       /* host, 4 * cmax floats */
  gf_arena dev;    /* on the net's device: the two below and the staging */
  float *tmp_g;    /* [cmax] local sum of dy * xhat */
  float *tmp_b;    /* [cmax] local sum of dy */
  float *stage;    /* 2 * (2 * cmax + 1) floats: doubles for a device comm */
};

void gf_net_sync_free(struct gf_net_sync *s) {
  if (!s) return;
  gf_arena_free(&s->dev);
  free(s->h);
  free(s->hf);
  free(s);
}

static gf_status carve_f(gf_arena *a, int64_t n, float **p, gf_err *err) {
  gf_tensor t;
  GF_TRY(gf_arena_tensor(a, &t, GF_F32, 1, &n, err));
  *p = t.data;
  return GF_OK;
}

gf_status gf_net_set_sync_bn(gf_net *net, gf_ctx *ctx, struct gf_comm *comm, gf_err *err) {
  if (!net || !net->layers || !ctx) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  net->bn_comm = NULL;
  if (!comm) return GF_OK;
  if (net->sync) {
    net->bn_comm = comm;
    return GF_OK;
  }
  int64_t cmax = 0;
  for (int i = 0; i < net->n_layers; i++)
    if (net->layers[i].kind == GF_L_BN && net->layers[i].out[0] > cmax)
      cmax = net->layers[i].out[0];
  if (cmax == 0) return GF_OK; /* no batch norm: nothing to synchronize */
  struct gf_net_sync *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "net: out of memory");
  net->sync = s; /* owned by net from here: gf_net_free releases it */
  s->cmax = cmax;
  s->h = malloc((size_t)(2 * cmax + 1) * sizeof(double));
  s->hf = malloc((size_t)(4 * cmax) * sizeof(float));
  if (!s->h || !s->hf) return gf_fail(err, GF_ENOMEM, "net: out of memory");
  int64_t nstage = 2 * (2 * cmax + 1);
  size_t bytes = 2 * gf_arena_slot_bytes((size_t)cmax * 4) +
                 gf_arena_slot_bytes((size_t)nstage * 4);
  GF_TRY(gf_arena_init_on(&s->dev, ctx->device, ctx->device_index, bytes, err));
  GF_TRY(carve_f(&s->dev, cmax, &s->tmp_g, err));
  GF_TRY(carve_f(&s->dev, cmax, &s->tmp_b, err));
  GF_TRY(carve_f(&s->dev, nstage, &s->stage, err));
  net->bn_comm = comm;
  return GF_OK;
}

/* A 1-D view of n floats at p on the net's device. */
static gf_status dvec(const gf_net *net, gf_tensor *t, float *p, int64_t n, gf_err *err) {
  GF_TRY(gf_tensor_view(t, p, GF_F32, net->acts.device, 1, &n, err));
  t->device_index = net->acts.device_index;
  return GF_OK;
}

/* host[0..n) = device floats at p (a plain copy on the CPU). */
static gf_status get_f(const gf_net *net, float *host, float *p, int64_t n, gf_err *err) {
  if (net->acts.device == GF_DEV_CPU) {
    memcpy(host, p, (size_t)n * sizeof(float));
    return GF_OK;
  }
  gf_tensor d, h;
  GF_TRY(dvec(net, &d, p, n, err));
  GF_TRY(gf_tensor_view(&h, host, GF_F32, GF_DEV_CPU, 1, &n, err));
  return gf_tensor_copy(&h, &d, err);
}

/* Device floats at p = host[0..n). */
static gf_status put_f(const gf_net *net, float *p, const float *host, int64_t n, gf_err *err) {
  if (net->acts.device == GF_DEV_CPU) {
    memcpy(p, host, (size_t)n * sizeof(float));
    return GF_OK;
  }
  gf_tensor d, h;
  GF_TRY(dvec(net, &d, p, n, err));
  GF_TRY(gf_tensor_view(&h, (void *)host, GF_F32, GF_DEV_CPU, 1, &n, err));
  return gf_tensor_copy(&d, &h, err);
}

/* Sums buf[0..n) over every rank, in the comm's memory space. */
static gf_status allreduce_sum(gf_net *net, double *buf, int64_t n, gf_err *err) {
  struct gf_comm *c = net->bn_comm;
  if (!gf_comm_device_buffers(c))
    return gf_comm_allreduce(c, buf, (size_t)n, GF_CDT_F64, GF_RED_SUM, err);
  struct gf_net_sync *s = net->sync;
  GF_TRY(put_f(net, s->stage, (const float *)buf, 2 * n, err));
  GF_TRY(gf_comm_allreduce(c, s->stage, (size_t)n, GF_CDT_F64, GF_RED_SUM, err));
  return get_f(net, (float *)buf, s->stage, 2 * n, err);
}

static gf_tensor *pv(gf_net *net, int i) { return i < 0 ? NULL : &net->tensors[i].value; }

static gf_status stat_views(gf_net *net, gf_layer *l, gf_tensor *mean, gf_tensor *var,
                            gf_err *err) {
  GF_TRY(dvec(net, mean, l->save_mean, l->out[0], err));
  return dvec(net, var, l->save_var, l->out[0], err);
}

gf_status gf_syncbn_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx, gf_layer_io *io, gf_err *err) {
  struct gf_net_sync *s = net->sync;
  int64_t c = l->out[0];
  double m = (double)(gf_tensor_numel(&io->x) / c); /* values per channel here */
  gf_tensor mean, var;
  GF_TRY(stat_views(net, l, &mean, &var, err));
  gf_bn_params p = {GF_BN_EPS, GF_BN_MOMENTUM};
  GF_TRY(gf_batchnorm_fwd_train(ctx, &io->x, pv(net, l->p_gamma), pv(net, l->p_beta), NULL,
                                NULL, &p, &io->y, &mean, &var, err));
  float *lm = s->hf, *lv = s->hf + c; /* local mean, biased var */
  GF_TRY(get_f(net, lm, l->save_mean, c, err));
  GF_TRY(get_f(net, lv, l->save_var, c, err));
  double *h = s->h;
  for (int64_t i = 0; i < c; i++) h[i] = m * (double)lm[i];
  h[c] = m;
  GF_TRY(allreduce_sum(net, h, c + 1, err));
  double total = h[c];
  float *gm = s->hf + 2 * c, *gv = s->hf + 3 * c; /* global mean, var */
  double *mean_d = s->h + c + 1;                 /* c doubles after the count */
  for (int64_t i = 0; i < c; i++) mean_d[i] = h[i] / total;
  for (int64_t i = 0; i < c; i++) {
    double d = (double)lm[i] - mean_d[i];
    h[i] = m * (double)lv[i] + m * d * d;
  }
  GF_TRY(allreduce_sum(net, h, c, err));
  for (int64_t i = 0; i < c; i++) {
    gm[i] = (float)mean_d[i];
    gv[i] = (float)(h[i] / total);
  }
  l->sync_count = total;
  GF_TRY(put_f(net, l->save_mean, gm, c, err));
  GF_TRY(put_f(net, l->save_var, gv, c, err));
  GF_TRY(gf_batchnorm_fwd_infer(ctx, &io->x, pv(net, l->p_gamma), pv(net, l->p_beta), &mean,
                                &var, GF_BN_EPS, &io->y, err));
  if (net->bn_frozen || l->p_rmean < 0) return GF_OK;
  /* Running statistics from the global batch, as one rank of it would. */
  float *rm = s->hf, *rv = s->hf + c; /* the local stats are no longer needed */
  float *prm = net->tensors[l->p_rmean].value.data, *prv = net->tensors[l->p_rvar].value.data;
  GF_TRY(get_f(net, rm, prm, c, err));
  GF_TRY(get_f(net, rv, prv, c, err));
  const float mom = GF_BN_MOMENTUM;
  double unbias = total > 1 ? total / (total - 1) : 1.0;
  for (int64_t i = 0; i < c; i++) {
    rm[i] = (1.0f - mom) * rm[i] + mom * gm[i];
    rv[i] = (1.0f - mom) * rv[i] + mom * (float)((double)gv[i] * unbias);
  }
  GF_TRY(put_f(net, prm, rm, c, err));
  return put_f(net, prv, rv, c, err);
}

gf_status gf_syncbn_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx, gf_layer_io *io, bool pg,
                        gf_accum accum, gf_err *err) {
  struct gf_net_sync *s = net->sync;
  int64_t c = l->out[0];
  gf_tensor mean, var, tg, tb;
  GF_TRY(stat_views(net, l, &mean, &var, err));
  GF_TRY(dvec(net, &tg, s->tmp_g, c, err));
  GF_TRY(dvec(net, &tb, s->tmp_b, c, err));
  gf_tensor *gamma = pv(net, l->p_gamma);
  if (!gamma) return gf_fail(err, GF_EUNSUPPORTED, "net: sync BN needs an affine batch norm");
  GF_TRY(gf_batchnorm_bwd(ctx, &io->x, gamma, &mean, &var, GF_BN_EPS, &io->dy, NULL, &tg, &tb,
                          GF_OVERWRITE, err));
  float *lg = s->hf, *lb = s->hf + c;
  GF_TRY(get_f(net, lg, s->tmp_g, c, err));
  GF_TRY(get_f(net, lb, s->tmp_b, c, err));
  if (pg) { /* this rank's gamma/beta gradients: its local sums */
    float *gg = s->hf + 2 * c, *gb = s->hf + 3 * c;
    float *pgg = net->tensors[l->p_gamma].grad.data, *pgb = net->tensors[l->p_beta].grad.data;
    if (accum == GF_ACCUMULATE) {
      GF_TRY(get_f(net, gg, pgg, c, err));
      GF_TRY(get_f(net, gb, pgb, c, err));
      for (int64_t i = 0; i < c; i++) gg[i] += lg[i], gb[i] += lb[i];
    } else {
      memcpy(gg, lg, (size_t)c * sizeof(float));
      memcpy(gb, lb, (size_t)c * sizeof(float));
    }
    GF_TRY(put_f(net, pgg, gg, c, err));
    GF_TRY(put_f(net, pgb, gb, c, err));
  }
  if (!io->dx.data) return GF_OK;
  double *h = s->h;
  for (int64_t i = 0; i < c; i++) h[i] = lb[i], h[c + i] = lg[i];
  GF_TRY(allreduce_sum(net, h, 2 * c, err));
  for (int64_t i = 0; i < c; i++) lb[i] = (float)h[i], lg[i] = (float)h[c + i];
  GF_TRY(put_f(net, s->tmp_g, lg, c, err));
  GF_TRY(put_f(net, s->tmp_b, lb, c, err));
  return gf_batchnorm_bwd_dx(ctx, &io->x, gamma, &mean, &var, GF_BN_EPS, &io->dy, &tb, &tg,
                             l->sync_count, &io->dx, err);
}
