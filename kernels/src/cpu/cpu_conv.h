/* cpu_conv.h - what cpu_dnnl.c (conv and transposed conv) and
 * cpu_frozen.c (their frozen-inference primitives) share: a layer's
 * geometry and its forward op descriptor. Private to the CPU backend. */
#ifndef GF_CPU_CONV_H
#define GF_CPU_CONV_H

#include "cpu_backend.h"

typedef struct conv_geom {
  bool transposed;
  int64_t groups; /* 1; G > 1: a batched convolution (ops.h
                     gf_conv2d_batched_*) of G samples, seen as one sample
                     (N = 1) of G groups: Cin and Cout count every group's
                     channels, wt is goihw [G, Cout/G, Cin/G, kh, kw] */
  int64_t N, Cin, H, W, Cout, kh, kw, OH, OW;
  dnnl_dims_t stride, pad_l, pad_r; /* [h, w]; oneDNN reads dnnl_dims_t */
  dnnl_memory_desc_t src, wt, bias, dst; /* the caller's plain layouts */
  /* what the primitives are created with: format_tag_any (oneDNN picks its
   * blocked layouts; cpu_ctx.c reorders) or the plain ones above */
  dnnl_memory_desc_t src_p, wt_p, dst_p;
} conv_geom;

/* The forward op descriptor of g with propagation kind prop, from g's
 * src_p, wt_p and dst_p (and g->bias when with_bias). */
gf_status gf_cpu_conv_fwd_desc(const conv_geom *g, bool with_bias,
                               dnnl_prop_kind_t prop,
                               dnnl_convolution_desc_t *d, gf_err *err);

/* The primitive descriptor of a frozen forward (gf_ctx.frozen_batch) of g
 * with weights w: int8 (frozen_int8 == GF_INT8_RUN) or bf16 (frozen_bf16)
 * where oneDNN has a kernel for the layer, else f32; at any batch, the
 * implementation and layouts oneDNN picks at batch frozen_batch. any:
 * oneDNN chooses the layouts (else plain). For int8, rsc[0] and rsc[1] are
 * the input's and weights' quantising reorder scales, whose values are in
 * *scales (malloc'd; the caller frees it once the primitive is made; NULL
 * when not int8). */
gf_status gf_cpu_conv_frozen_pd(gf_ctx *ctx, const conv_geom *g, bool any,
                                const gf_tensor *w, bool with_bias,
                                dnnl_convolution_desc_t *d,
                                dnnl_primitive_desc_t *pd,
                                gf_prim_scales *rsc, float **scales,
                                gf_err *err);

#endif
