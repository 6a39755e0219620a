/* sg2_net.c - building a gf_sg2_net: the two build passes over the
 * synthesis / discriminator builders (sizing, then carving), its arenas,
 * the constants (resample filter, the 3x3 flip, normalize_2nd_moment's
 * weight) and freeing. */
#include <stdlib.h>
#include <string.h>

#include "sg2_internal.h"

#define SG2_ARENA_SLACK 4096

/* The constants every net carries: the resample filter (setup_filter's
 * outer product of [1,3,3,1] with itself, / 64: sum 1, exact), the 3x3
 * flip and normalize_2nd_moment's weights. */
static gf_status fill_consts(gf_sg2_net *net, gf_ctx *ctx, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  const float t[4] = {1, 3, 3, 1};
  float f[16], p[81];
  for (int i = 0; i < 16; i++) f[i] = t[i / 4] * t[i % 4] / 64.0f;
  /* wf[r, j] = sum_k w[r, k] perm[j, k] = w[r, 8 - j] */
  for (int j = 0; j < 9; j++)
    for (int k = 0; k < 9; k++) p[j * 9 + k] = (k == 8 - j) ? 1.0f : 0.0f;
  GF_TRY(sg2_put_host(&im->filt, f, err));
  GF_TRY(sg2_put_host(&im->perm, p, err));
  GF_TRY(gf_fill(ctx, &im->one, 1.0f, err));
  sg2_mapping *m = &im->map;
  if (m->rowid_i32.data) {
    int64_t k = gf_tensor_numel(&m->rowid_i32);
    int32_t *r = malloc((size_t)k * sizeof *r);
    if (!r) return gf_fail(err, GF_ENOMEM, "sg2: row ids");
    for (int64_t i = 0; i < k; i++) r[i] = (int32_t)(i / m->num_ws);
    gf_tensor h;
    gf_status st = gf_tensor_view(&h, r, GF_I32, GF_DEV_CPU, 1,
                                  m->rowid_i32.shape, err);
    if (st == GF_OK) st = gf_tensor_copy(&m->rowid_i32, &h, err);
    free(r);
    GF_TRY(st);
  }
  GF_TRY(sg2_norm_consts(ctx, &im->map.nz, err));
  return sg2_norm_consts(ctx, &im->map.nc, err);
}

static gf_status build(gf_sg2_net *net, sg2_alloc *a, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  net->n_tensors = 0;
  net->n_trainable = 0;
  const int64_t fs[2] = {4, 4}, ps[2] = {9, 9};
  GF_TRY(sg2_act(net, a, &im->filt, 2, fs, err));
  GF_TRY(sg2_act(net, a, &im->perm, 2, ps, err));
  const int64_t os[2] = {1, 1};
  GF_TRY(sg2_act(net, a, &im->one, 2, os, err));
  if (net->role == GF_SG2_G) return sg2_synthesis_build(net, a, err);
  return sg2_disc_build(net, a, err);
}

void gf_sg2_net_free(gf_sg2_net *net) {
  if (!net) return;
  gf_arena_free(&net->params);
  gf_arena_free(&net->grads);
  gf_arena_free(&net->adam_m);
  gf_arena_free(&net->adam_v);
  gf_arena_free(&net->buffers);
  gf_arena_free(&net->acts);
  if (net->impl) free(net->impl->host_noise);
  free(net->impl);
  memset(net, 0, sizeof *net);
}

static gf_status arena(gf_arena *ar, gf_device dev, int idx, size_t bytes,
                       gf_err *err) {
  return gf_arena_init_on(ar, dev, idx, bytes + SG2_ARENA_SLACK, err);
}

gf_status gf_sg2_net_init(gf_sg2_net *net, gf_ctx *ctx,
                          const gf_sg2_config *cfg, gf_sg2_role role,
                          int max_batch, bool training, gf_err *err) {
  memset(net, 0, sizeof *net);
  if (!ctx || !cfg)
    return gf_fail(err, GF_EINVAL, "sg2: NULL ctx or config");
  GF_TRY(gf_sg2_config_validate(cfg, err));
  if (role != GF_SG2_G && role != GF_SG2_D)
    return gf_fail(err, GF_EINVAL, "sg2: role %d is neither G nor D", role);
  if (max_batch < 1)
    return gf_fail(err, GF_EINVAL, "sg2: max_batch %d < 1", max_batch);
  net->cfg = *cfg;
  net->role = role;
  net->max_batch = max_batch;
  net->training = training;
  net->device = ctx->device;
  net->impl = calloc(1, sizeof *net->impl);
  if (!net->impl) return gf_fail(err, GF_ENOMEM, "sg2: impl");
  sg2_alloc a = {.dry = true};
  gf_status st = build(net, &a, err);
  int di = ctx->device == GF_DEV_CPU ? 0 : ctx->device_index;
  if (st == GF_OK) st = arena(&net->params, ctx->device, di, a.params, err);
  if (st == GF_OK) st = arena(&net->buffers, ctx->device, di, a.buffers, err);
  if (st == GF_OK) st = arena(&net->acts, ctx->device, di, a.acts, err);
  if (st == GF_OK && training) {
    st = arena(&net->grads, ctx->device, di, a.params, err);
    if (st == GF_OK) st = arena(&net->adam_m, ctx->device, di, a.params, err);
    if (st == GF_OK) st = arena(&net->adam_v, ctx->device, di, a.params, err);
  }
  if (st == GF_OK) {
    memset(net->impl, 0, sizeof *net->impl);
    a.dry = false;
    st = build(net, &a, err);
  }
  if (st == GF_OK) st = fill_consts(net, ctx, err);
  if (st == GF_OK && role == GF_SG2_G && ctx->device != GF_DEV_CPU) {
    size_t n = (size_t)max_batch * (size_t)cfg->img_resolution *
               (size_t)cfg->img_resolution;
    net->impl->host_noise = malloc(n * sizeof(float));
    net->impl->host_noise_n = n;
    if (!net->impl->host_noise)
      st = gf_fail(err, GF_ENOMEM, "sg2: host noise staging");
  }
  if (st != GF_OK) gf_sg2_net_free(net);
  return st;
}

