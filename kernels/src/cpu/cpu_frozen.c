/* cpu_frozen.c - the primitives of frozen inference (gf_ctx.frozen_batch)
 * for convolutions and transposed convolutions: at every batch size, the
 * oneDNN implementation and memory layouts picked at the reference batch
 * (found by name among those oneDNN offers, the batch dimension re-set in
 * the chosen descriptors), in f32, bf16 (frozen_bf16) or int8
 * (frozen_int8; scales from cpu_int8.c). The linear layer's frozen forward
 * is cpu_linear_rows.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv.h"
#include "gf/text.h"

typedef gf_status (*fwd_desc_fn)(const void *geom, bool with_bias,
                                 dnnl_prop_kind_t prop, void *desc,
                                 gf_err *err);

/* Sets the batch (first, outermost and unblocked) dimension of a memory
 * descriptor oneDNN picked for another batch; false when md is not laid
 * out that way (its other strides then depend on the batch). */
static bool md_set_batch(dnnl_memory_desc_t *md, int64_t n) {
  if (md->format_kind != dnnl_blocked || md->ndims < 1) return false;
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  for (int i = 0; i < b->inner_nblks; i++)
    if (b->inner_idxs[i] == 0) return false;
  for (int d = 1; d < md->ndims; d++)
    if (md->dims[d] > 1 && b->strides[d] > b->strides[0]) return false;
  md->dims[0] = md->padded_dims[0] = n;
  return true;
}

/* Frozen inference (gf_ctx.frozen_batch = R): the primitive descriptor of
 * a forward at batch N that runs the implementation, with the layouts,
 * oneDNN picks for the same layer at batch R. make(geom, ..., desc) builds
 * the op desc from the descriptors src, wt and dst, which geom holds; they
 * are set to R's choices (batch N) before the second call. */
static gf_status frozen_pd(gf_ctx *ctx, int64_t N, const char *layer,
                           dnnl_memory_desc_t *src, dnnl_memory_desc_t *wt,
                           dnnl_memory_desc_t *dst, fwd_desc_fn make,
                           const void *geom, void *desc, bool with_bias,
                           const gf_prim_scales *osc,
                           dnnl_primitive_desc_t *out, gf_err *err) {
  int64_t R = ctx->frozen_batch;
  *out = NULL;
  GF_TRY(make(geom, with_bias, dnnl_forward_inference, desc, err));
  dnnl_primitive_desc_t ref = NULL;
  GF_TRY(gf_cpu_pd_create_impl(ctx, desc, NULL, osc, &ref, err));
  if (N == R) {
    *out = ref;
    return GF_OK;
  }
  const char *name = NULL;
  char impl[160];
  gf_status rc = GF_OK;
  if (dnnl_primitive_desc_query(ref, dnnl_query_impl_info_str, 0, &name) !=
          dnnl_success || !name)
    rc = gf_fail(err, GF_EDEVICE, "cpu: %s: no implementation name", layer);
  if (rc == GF_OK) rc = gf_format(impl, sizeof impl, err, "impl", "%s", name);
  if (rc == GF_OK) {
    *src = *dnnl_primitive_desc_query_md(ref, dnnl_query_src_md, 0);
    *wt = *dnnl_primitive_desc_query_md(ref, dnnl_query_weights_md, 0);
    *dst = *dnnl_primitive_desc_query_md(ref, dnnl_query_dst_md, 0);
  }
  dnnl_primitive_desc_destroy(ref);
  GF_TRY(rc);
  if (!md_set_batch(src, N) || !md_set_batch(dst, N))
    return gf_fail(err, GF_EUNSUPPORTED, "cpu: frozen inference: the %s at "
                   "batch %lld keeps its batch inside a block", layer,
                   (long long)R);
  GF_TRY(make(geom, with_bias, dnnl_forward_inference, desc, err));
  rc = gf_cpu_pd_create_impl(ctx, desc, impl, osc, out, err);
  if (rc == GF_EUNSUPPORTED)
    return gf_fail(err, GF_EUNSUPPORTED, "cpu: frozen inference: the %s's "
                   "implementation at batch %lld (%s) has no twin at batch "
                   "%lld", layer, (long long)R, impl, (long long)N);
  return rc;
}

static const char *layer_name(const conv_geom *g) {
  return g->transposed ? "transposed convolution" : "convolution";
}

static gf_status conv_desc_fn(const void *geom, bool with_bias,
                              dnnl_prop_kind_t prop, void *desc,
                              gf_err *err) {
  return gf_cpu_conv_fwd_desc(geom, with_bias, prop, desc, err);
}

/* r = g with the descriptors a frozen primitive is made with: batch
 * frozen_batch, input of type `in`, weights of type `wt`, f32 output,
 * oneDNN's choice of layout (any) or plain ones. */
static dnnl_status_t frozen_geom(const gf_ctx *ctx, const conv_geom *g,
                                 bool any, dnnl_data_type_t in,
                                 dnnl_data_type_t wt, conv_geom *r) {
  *r = *g;
  int64_t sd[4] = {ctx->frozen_batch, g->Cin, g->H, g->W};
  int64_t wd[4] = {g->Cout, g->Cin, g->kh, g->kw};
  int64_t dd[4] = {ctx->frozen_batch, g->Cout, g->OH, g->OW};
  dnnl_format_tag_t tag = any ? dnnl_format_tag_any : dnnl_nchw;
  dnnl_format_tag_t wtag = any ? dnnl_format_tag_any
                         : g->transposed ? dnnl_iohw : dnnl_oihw;
  dnnl_status_t s = gf_md_t(&r->src_p, 4, sd, in, tag);
  if (s == dnnl_success) s = gf_md_t(&r->wt_p, 4, wd, wt, wtag);
  if (s == dnnl_success) s = gf_md_t(&r->dst_p, 4, dd, dnnl_f32, tag);
  return s;
}

/* The frozen primitive descriptor of conv/deconv g with inputs and weights
 * of type `in` (f32 or bf16; the output is f32); GF_EUNSUPPORTED where
 * oneDNN has no such kernel. */
static gf_status conv_typed_pd(gf_ctx *ctx, const conv_geom *g, bool any,
                                dnnl_data_type_t in, bool with_bias,
                                dnnl_convolution_desc_t *d,
                                dnnl_primitive_desc_t *pd, gf_err *err) {
  conv_geom r;
  gf_err e;
  /* in f32 every failure is an error; in bf16, no kernel for the layer is
   * an answer, not an error: it stays f32 */
  gf_err *to = in == dnnl_f32 ? err : &e;
  gf_status rc = gf_dnnl_check(frozen_geom(ctx, g, any, in, in, &r),
                               "frozen_geom", __FILE__, __LINE__, to);
  if (rc == GF_OK)
    rc = frozen_pd(ctx, g->N, layer_name(g), &r.src_p, &r.wt_p, &r.dst_p,
                   conv_desc_fn, &r, d, with_bias, NULL, pd, to);
  return rc != GF_OK && in != dnnl_f32 ? GF_EUNSUPPORTED : rc;
}

/* The frozen int8 primitive descriptor of conv/deconv g with weights w,
 * and the scales of its input and weight reorders in rsc[0], rsc[1]
 * (their values in *scales, which the caller frees). GF_EUNSUPPORTED (the
 * layer stays f32) for a signed input, or where oneDNN has no int8 kernel
 * for the layer but a reference one; GF_ESTATE when the layer was not
 * calibrated. */
static gf_status conv_int8_pd(gf_ctx *ctx, const conv_geom *g, bool any,
                              const gf_tensor *w, bool with_bias,
                              dnnl_convolution_desc_t *d,
                              dnnl_primitive_desc_t *pd, gf_prim_scales *rsc,
                              float **scales, gf_err *err) {
  const char *layer = layer_name(g);
  float lo, hi;
  *scales = NULL;
  if (!gf_cpu_range_get(gf_cpu_frozen_of(ctx), w->data, &lo, &hi))
    return gf_fail(err, GF_ESTATE, "int8: a %s (%lld -> %lld channels) was "
                   "not calibrated", layer, (long long)g->Cin,
                   (long long)g->Cout);
  /* Signed inputs (a latent into the first layer) stay f32: oneDNN's
   * s8-input kernels add a weight compensation pass, and the one for a
   * transposed convolution of a 1x1 input ran 3-8x slower than f32 on
   * an AVX512_VNNI machine (2026-11-26). */
  if (lo < 0.0f) return GF_EUNSUPPORTED;
  int64_t OC = g->Cout;
  float *v = malloc(((size_t)OC * 2 + 1) * sizeof *v);
  if (!v) return gf_fail(err, GF_ENOMEM, "int8: scales");
  float *sw = v, *osc = v + OC, *sx = v + 2 * OC;
  gf_cpu_int8_scales(w->data, g->transposed, OC, g->Cin, g->kh * g->kw, lo,
                     hi, sx, sw, osc);
  conv_geom r;
  gf_status rc = frozen_geom(ctx, g, any, dnnl_u8, dnnl_s8, &r) ==
                         dnnl_success
                     ? GF_OK
                     : GF_EUNSUPPORTED;
  gf_prim_scales out = {(int)OC, 1 << 1, osc};
  gf_err e;
  /* no int8 kernel is an answer, not an error: the layer stays f32 */
  if (rc == GF_OK &&
      frozen_pd(ctx, g->N, layer, &r.src_p, &r.wt_p, &r.dst_p, conv_desc_fn,
                &r, d, with_bias, &out, pd, &e) != GF_OK)
    rc = GF_EUNSUPPORTED;
  const char *name = NULL;
  if (rc == GF_OK &&
      (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &name) !=
           dnnl_success || !name || strstr(name, "ref"))) {
    dnnl_primitive_desc_destroy(*pd); /* a reference kernel: slower */
    *pd = NULL;
    rc = GF_EUNSUPPORTED;
  }
  if (rc != GF_OK) {
    free(v);
    return rc;
  }
  rsc[0] = (gf_prim_scales){1, 0, sx};        /* input: one scale */
  rsc[1] = (gf_prim_scales){(int)OC, 1, sw};  /* weights: per OC (dim 0) */
  *scales = v;
  return GF_OK;
}

gf_status gf_cpu_conv_frozen_pd(gf_ctx *ctx, const conv_geom *g, bool any,
                                const gf_tensor *w, bool with_bias,
                                dnnl_convolution_desc_t *d,
                                dnnl_primitive_desc_t *pd,
                                gf_prim_scales *rsc, float **scales,
                                gf_err *err) {
  *scales = NULL;
  gf_status rc = GF_EUNSUPPORTED;
  if (ctx->frozen_int8 == GF_INT8_RUN)
    rc = conv_int8_pd(ctx, g, any, w, with_bias, d, pd, rsc, scales, err);
  if (rc == GF_EUNSUPPORTED && ctx->frozen_bf16)
    rc = conv_typed_pd(ctx, g, any, dnnl_bf16, with_bias, d, pd, err);
  if (rc == GF_EUNSUPPORTED)
    rc = conv_typed_pd(ctx, g, any, dnnl_f32, with_bias, d, pd, err);
  return rc;
}
