/* cpu_backend.c - the CPU backend as gf_ctx sees it: its state made
 * (oneDNN engine and stream, the primitive cache, the frozen-weight store)
 * and freed, its counters, and its dispatch table, the one place that
 * names the functions of every file of the backend. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

/* Conv/deconv layout policy when GF_ONEDNN_LAYOUT is unset. */
#define GF_CPU_BLOCKED_DEFAULT true

static void cpu_fini(gf_ctx *ctx);

static gf_status cpu_init(gf_ctx *ctx, gf_err *err) {
  gf_cpu_state *st = calloc(1, sizeof *st);
  if (!st) return gf_fail(err, GF_ENOMEM, "cpu: backend state");
  /* GF_ONEDNN_LAYOUT=plain|blocked overrides the default layout policy
   * of a ctx whose config says AUTO (read once here; for comparing the
   * two, e.g. in bench/kernels). */
  const char *lay = getenv("GF_ONEDNN_LAYOUT");
  st->blocked = GF_CPU_BLOCKED_DEFAULT;
  if (lay && !strcmp(lay, "plain")) st->blocked = false;
  if (lay && !strcmp(lay, "blocked")) st->blocked = true;
  /* a layout the caller chose wins over the variable */
  if (ctx->cpu_layout == GF_CPU_LAYOUT_PLAIN) st->blocked = false;
  if (ctx->cpu_layout == GF_CPU_LAYOUT_BLOCKED) st->blocked = true;
  gf_status rc = gf_cpu_frozen_init(&st->own, err);
  if (rc != GF_OK) {
    free(st);
    return rc;
  }
  st->cache = calloc(GF_PRIM_CACHE_MAX, sizeof *st->cache);
  dnnl_status_t s = dnnl_success;
  if (!st->cache) rc = gf_fail(err, GF_ENOMEM, "cpu: primitive cache");
  if (rc == GF_OK) {
    s = dnnl_engine_create(&st->engine, dnnl_cpu, 0);
    rc = gf_dnnl_check(s, "dnnl_engine_create", __FILE__, __LINE__, err);
  }
  if (rc == GF_OK) {
    s = dnnl_stream_create(&st->stream, st->engine,
                           dnnl_stream_default_flags);
    rc = gf_dnnl_check(s, "dnnl_stream_create", __FILE__, __LINE__, err);
  }
  ctx->impl = st;
  if (rc) {
    cpu_fini(ctx);
    return rc;
  }
  return GF_OK;
}

static void cpu_fini(gf_ctx *ctx) {
  gf_cpu_state *st = gf_cpu(ctx);
  if (!st) return;
  gf_cpu_cache_free(st);
  gf_cpu_frozen_fini(&st->own);
  if (st->stream) dnnl_stream_destroy(st->stream);
  if (st->engine) dnnl_engine_destroy(st->engine);
  free(st);
  ctx->impl = NULL;
}

static void cpu_stats(const gf_ctx *ctx, gf_ctx_stats *out) {
  const gf_cpu_state *st = (const gf_cpu_state *)ctx->impl;
  if (!st) return;
  out->primitives_created = st->created;
  out->primitive_hits = st->hits;
  out->cached_primitives = st->ncache;
  out->scratch_bytes = st->scratchpad_cap + st->tmp_cap * sizeof(float);
}

const gf_backend_ops gf_cpu_backend_ops = {
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .stats = cpu_stats,
    .linear_fwd = gf_cpu_linear_fwd,
    .linear_bwd = gf_cpu_linear_bwd,
    .conv2d_fwd = gf_cpu_conv2d_fwd,
    .conv2d_bwd = gf_cpu_conv2d_bwd,
    .deconv2d_fwd = gf_cpu_deconv2d_fwd,
    .deconv2d_bwd = gf_cpu_deconv2d_bwd,
    .bn_fwd_train = gf_cpu_bn_fwd_train,
    .bn_fwd_infer = gf_cpu_bn_fwd_infer,
    .bn_bwd = gf_cpu_bn_bwd,
    .bn_bwd_dx = gf_cpu_bn_bwd_dx,
    .act_fwd = gf_cpu_act_fwd,
    .act_bwd = gf_cpu_act_bwd,
    .dropout = gf_cpu_dropout,
    .bce_fwd = gf_cpu_bce_fwd,
    .bce_bwd = gf_cpu_bce_bwd,
    .adam = gf_cpu_adam,
    .pool_fwd = gf_cpu_pool_fwd,
    .resize_bilinear = gf_cpu_resize_bilinear,
    .copy_channels = gf_cpu_copy_channels,
    .fill = gf_cpu_fill,
    .copy = gf_cpu_copy,
    .hinge_fwd = gf_cpu_hinge_fwd,
    .hinge_bwd = gf_cpu_hinge_bwd,
    .mean_fwd = gf_cpu_mean_fwd,
    .lerp = gf_cpu_lerp,
    .spectral_norm_fwd = gf_cpu_spectral_norm_fwd,
    .spectral_norm_bwd = gf_cpu_spectral_norm_bwd,
    .augment_fwd = gf_cpu_augment_fwd,
    .augment_bwd = gf_cpu_augment_bwd,
    .embedding_fwd = gf_cpu_embedding_fwd,
    .embedding_bwd = gf_cpu_embedding_bwd,
    .channel_affine_fwd = gf_cpu_channel_affine_fwd,
    .channel_affine_bwd = gf_cpu_channel_affine_bwd,
    .rowdot_fwd = gf_cpu_rowdot_fwd,
    .rowdot_bwd = gf_cpu_rowdot_bwd,
    .upsample_nearest2x_fwd = gf_cpu_upsample_nearest2x_fwd,
    .upsample_nearest2x_bwd = gf_cpu_upsample_nearest2x_bwd,
    .avgpool2d_bwd = gf_cpu_avgpool2d_bwd,
    .add = gf_cpu_add,
    .upfirdn2d = gf_cpu_upfirdn2d,
    .modconv_weight_fwd = gf_cpu_modconv_weight_fwd,
    .modconv_weight_bwd = gf_cpu_modconv_weight_bwd,
    .conv2d_batched_fwd = gf_cpu_conv2d_batched_fwd,
    .conv2d_batched_bwd = gf_cpu_conv2d_batched_bwd,
    .bias_act_fwd = gf_cpu_bias_act_fwd,
    .bias_act_bwd = gf_cpu_bias_act_bwd,
    .mbstd_fwd = gf_cpu_mbstd_fwd,
    .mbstd_bwd = gf_cpu_mbstd_bwd,
    .mbstd_jvp = gf_cpu_mbstd_jvp,
    .mbstd_bwd_jvp = gf_cpu_mbstd_bwd_jvp,
    .modconv_demod_jvp = gf_cpu_modconv_demod_jvp,
    .noise_add_fwd = gf_cpu_noise_add_fwd,
    .noise_add_bwd = gf_cpu_noise_add_bwd,
    .pad_reflect_fwd = gf_cpu_pad_reflect_fwd,
    .pad_reflect_bwd = gf_cpu_pad_reflect_bwd,
    .affine_sample_fwd = gf_cpu_affine_sample_fwd,
    .affine_sample_bwd = gf_cpu_affine_sample_bwd,
    .color4_fwd = gf_cpu_color4_fwd,
    .color4_bwd = gf_cpu_color4_bwd,
};
