/* kt_ada.h - what the ADA resampling tests (test_ada_ops.c and its CUDA
 * twin test_cuda_ada_ops.c) share: the op selector and one call of an op
 * in either direction. Test code only. */
#ifndef GF_TEST_KT_ADA_H
#define GF_TEST_KT_ADA_H

#include "gf/kernels.h"

enum { OP_REFLECT, OP_SAMPLE, OP_COLOR };

/* fwd (bwd 0: in x, out y) or bwd (in dy, out dx) of op with pad (reflect)
 * or the matrices m (theta [N,2,3] or colour [N,4,4]). */
static inline gf_status kt_ada_run(gf_ctx *ctx, int op, int bwd,
                                   const int *pad, const gf_tensor *m,
                                   const gf_tensor *in, gf_tensor *out,
                                   gf_err *e) {
  switch (op) {
    case OP_REFLECT:
      return bwd ? gf_pad_reflect_bwd(ctx, pad, in, out, e)
                 : gf_pad_reflect_fwd(ctx, in, pad, out, e);
    case OP_SAMPLE:
      return bwd ? gf_affine_sample_bwd(ctx, m, in, out, e)
                 : gf_affine_sample_fwd(ctx, in, m, out, e);
    default:
      return bwd ? gf_color4_bwd(ctx, m, in, out, e)
                 : gf_color4_fwd(ctx, in, m, out, e);
  }
}

#endif
