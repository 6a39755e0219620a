/* cpu_conv.c - the forward op descriptor of a convolution or transposed
 * convolution (cpu_conv.h), which cpu_dnnl.c (training and plain
 * inference) and cpu_frozen.c (frozen inference) both build: below the
 * two, so neither calls into the other for it. */
#include "cpu_conv.h"

gf_status gf_cpu_conv_fwd_desc(const conv_geom *g, bool with_bias,
                               dnnl_prop_kind_t prop,
                               dnnl_convolution_desc_t *d, gf_err *err) {
  if (g->transposed)
    DNNL_TRY(dnnl_deconvolution_forward_desc_init(
        d, prop, dnnl_deconvolution_direct, &g->src_p,
        &g->wt_p, with_bias ? &g->bias : NULL, &g->dst_p, g->stride, g->pad_l,
        g->pad_r));
  else
    DNNL_TRY(dnnl_convolution_forward_desc_init(
        d, prop, dnnl_convolution_direct, &g->src_p,
        &g->wt_p, with_bias ? &g->bias : NULL, &g->dst_p, g->stride, g->pad_l,
        g->pad_r));
  return GF_OK;
}
