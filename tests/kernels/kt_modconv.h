/* kt_modconv.h - what test_modconv.c and test_cuda_modconv.c share of the
 * golden cases of golden/modconv.safetensors (make_modconv_golden.py): the
 * names of a case's tensors and its configuration. Test code only. */
#ifndef GF_TEST_KT_MODCONV_H
#define GF_TEST_KT_MODCONV_H

#include "gf/kernels.h"

/* The tensors of a case P, golden names "P.<kt_mc_names[i]>". */
enum {
  MC_W, MC_S, MC_X, MC_G, MC_WMOD, MC_DCOEF, MC_Y, MC_DX, MC_DWMOD, MC_DW,
  MC_DS, MC_CFG, MC_NT
};
static const char *const kt_mc_names[MC_NT] = {
    "w", "s", "x", "g", "wmod", "dcoef", "y", "dx", "dwmod", "dw", "ds",
    "cfg"};

/* A case's configuration. */
typedef struct kt_mc_cfg {
  int demod;        /* 0 or 1 */
  float eps;        /* of the demodulation */
  gf_conv_params p; /* of the batched convolution */
} kt_mc_cfg;

/* From P.cfg [7]: demodulate, stride h, w, pad h, w, eps, 0. */
static inline kt_mc_cfg kt_mc_cfg_of(const float *cfg) {
  kt_mc_cfg c = {cfg[0] != 0.0f,
                 cfg[5],
                 {{(int)cfg[1], (int)cfg[2]}, {(int)cfg[3], (int)cfg[4]},
                  {0, 0}}};
  return c;
}

#endif
