/* net_dcgan.c - the `dcgan` network of DESIGN §2 (Radford et al., laid out
 * as PyTorch's DCGAN example, every convolution without bias):
 *   64x64: G  ConvT(nz, 8ngf, 4, 1, 0) 4x4 -> 8ngf..ngf by ConvT(4, 2, 1)
 *             8 -> 16 -> 32 -> ConvT(ngf, nc) 64, BN + ReLU between, tanh;
 *          D  Conv(nc, ndf, 4, 2, 1) LReLU -> ndf..8ndf by Conv(4, 2, 1)
 *             + BN + LReLU -> Conv(8ndf, 1, 4, 1, 0): a logit.
 *   32x32: one stage fewer (G starts at 4ngf, D ends at 4ndf).
 *   28x28: G ConvT(nz, 4ngf, 7, 1, 0) 7x7 -> 2ngf 14x14 -> nc 28x28;
 *          D nc -> ndf 14x14 -> 2ndf 7x7 -> Conv(2ndf, 1, 7, 1, 0)
 *          (the variant bench/kernels measures).
 * With spectral_norm, D's convolutions are spectrally normalized and its
 * batch norms are left out (SNGAN's discriminator); G is the same.
 * Initialisation as the example's weights_init: conv weights N(0, 0.02),
 * BN gamma N(1, 0.02), beta 0. */
#include "net_layers.h"

/* Number of stride-2 stages, the size of the first/last feature map and
 * G's first width in units of ngf. */
static void geometry(int size, int *stages, int *k0, int *g_mult) {
  switch (size) {
  case 64: *stages = 4; *k0 = 4; *g_mult = 8; break;
  case 32: *stages = 3; *k0 = 4; *g_mult = 4; break;
  default: *stages = 2; *k0 = 7; *g_mult = 4; break; /* 28, the only other valid size */
  }
}

gf_status gf_dcgan_build(gf_net *net, gf_err *err) {
  const gf_model_config *c = &net->cfg;
  int stages, k0, g_mult;
  geometry(c->image_height, &stages, &k0, &g_mult);
  if (net->role == GF_NET_G) {
    int64_t ch = (int64_t)c->ngf * g_mult;
    GF_TRY(gf_nb_conv(net, true, ch, k0, 1, 0, err));
    GF_TRY(gf_nb_bn(net, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    for (int s = 1; s < stages; s++) {
      ch /= 2;
      GF_TRY(gf_nb_conv(net, true, ch, 4, 2, 1, err));
      GF_TRY(gf_nb_bn(net, err));
      GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    }
    GF_TRY(gf_nb_conv(net, true, c->image_channels, 4, 2, 1, err));
    GF_TRY(gf_nb_act(net, GF_L_TANH, 0.0f, err));
    return GF_OK;
  }
  int64_t ch = c->ndf;
  GF_TRY(gf_nb_conv(net, false, ch, 4, 2, 1, err));
  GF_TRY(gf_nb_act(net, GF_L_LRELU, GF_DCGAN_LRELU_SLOPE, err));
  for (int s = 1; s < stages; s++) {
    ch *= 2;
    GF_TRY(gf_nb_conv(net, false, ch, 4, 2, 1, err));
    if (!c->spectral_norm) GF_TRY(gf_nb_bn(net, err)); /* SNGAN's D has none */
    GF_TRY(gf_nb_act(net, GF_L_LRELU, GF_DCGAN_LRELU_SLOPE, err));
  }
  GF_TRY(gf_nb_conv(net, false, 1, k0, 1, 0, err));
  return GF_OK;
}

/* Tensor t draws normals 0.. of stream (seed, INIT_G/INIT_D, 0, 0, t).
 * The params arena is zero on entry (beta stays 0). */
gf_status gf_dcgan_init_params(gf_net *net, uint64_t seed, gf_err *err) {
  (void)err;
  gf_rng_purpose purpose = net->role == GF_NET_G ? GF_RNG_INIT_G : GF_RNG_INIT_D;
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    gf_philox_stream s = gf_rng_stream(seed, purpose, 0, (uint32_t)t);
    size_t n = (size_t)gf_tensor_numel(&p->value);
    if (p->kind == GF_PARAM_WEIGHT) gf_philox_normal(&s, p->value.data, n, 0.0f, 0.02f);
    else if (p->kind == GF_PARAM_BN_WEIGHT) gf_philox_normal(&s, p->value.data, n, 1.0f, 0.02f);
  }
  return GF_OK;
}
