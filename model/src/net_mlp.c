/* net_mlp.c - the `mlp` network of DESIGN §2 (the paper's Keras model):
 *   G: z -> Linear 1200 -> BN -> ReLU -> Linear 1000 -> BN -> ReLU
 *        -> Linear C*H*W -> tanh            (module indices 0..7)
 *   D: C*H*W -> Linear 256 -> LeakyReLU 0.2 -> Dropout 0.3 -> Linear 128
 *        -> LeakyReLU 0.2 -> Dropout 0.3 -> Linear 1 (a logit; 0..6)
 * and its initialisation with Keras' defaults. Sizes are fixed (the
 * config's ngf/ndf do not apply); z_dim and the image size come from the
 * config (z 50 at 28x28x1 gives the paper's counts). */
#include <math.h>
#include <string.h>

#include "net_layers.h"

gf_status gf_mlp_build(gf_net *net, gf_err *err) {
  const gf_model_config *c = &net->cfg;
  if (net->role == GF_NET_G) {
    int64_t out = (int64_t)c->image_channels * c->image_height * c->image_width;
    GF_TRY(gf_nb_linear(net, GF_MLP_G_HIDDEN1, true, err));
    GF_TRY(gf_nb_bn(net, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    GF_TRY(gf_nb_linear(net, GF_MLP_G_HIDDEN2, true, err));
    GF_TRY(gf_nb_bn(net, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    GF_TRY(gf_nb_linear(net, out, true, err));
    GF_TRY(gf_nb_act(net, GF_L_TANH, 0.0f, err));
    return GF_OK;
  }
  GF_TRY(gf_nb_linear(net, GF_MLP_D_HIDDEN1, true, err));
  GF_TRY(gf_nb_act(net, GF_L_LRELU, GF_MLP_LRELU_SLOPE, err));
  GF_TRY(gf_nb_act(net, GF_L_DROPOUT, GF_MLP_DROPOUT, err));
  GF_TRY(gf_nb_linear(net, GF_MLP_D_HIDDEN2, true, err));
  GF_TRY(gf_nb_act(net, GF_L_LRELU, GF_MLP_LRELU_SLOPE, err));
  GF_TRY(gf_nb_act(net, GF_L_DROPOUT, GF_MLP_DROPOUT, err));
  GF_TRY(gf_nb_linear(net, 1, true, err));
  return GF_OK;
}

/* Keras defaults: Dense kernels glorot_uniform, biases zeros, BN gamma
 * ones, beta zeros. Weight t takes uniform words 0.. of stream
 * (seed, INIT_G/INIT_D, 0, 0, t); w = (2u - 1) l rounded once to f32. The
 * params arena is zero on entry. */
gf_status gf_mlp_init_params(gf_net *net, uint64_t seed, gf_err *err) {
  (void)err;
  gf_rng_purpose purpose = net->role == GF_NET_G ? GF_RNG_INIT_G : GF_RNG_INIT_D;
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    float *d = p->value.data;
    int64_t n = gf_tensor_numel(&p->value);
    if (p->kind == GF_PARAM_WEIGHT) {
      gf_philox_stream s = gf_rng_stream(seed, purpose, 0, (uint32_t)t);
      gf_philox_uniform(&s, d, (size_t)n);
      double limit = sqrt(6.0 / (double)(p->fan_in + p->fan_out));
      for (int64_t i = 0; i < n; i++) d[i] = (float)((2.0 * (double)d[i] - 1.0) * limit);
    } else if (p->kind == GF_PARAM_BN_WEIGHT) {
      for (int64_t i = 0; i < n; i++) d[i] = 1.0f;
    }
  }
  return GF_OK;
}
