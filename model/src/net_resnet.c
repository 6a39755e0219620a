/* net_resnet.c - the `resnet` network of DESIGN §2: the residual generator
 * and discriminator of SNGAN (Miyato et al. 2018, their CIFAR/STL
 * networks) and BigGAN, at 28, 32 and 64 pixels. Every convolution is 3x3
 * with padding 1 and no bias unless said; the shortcut convolutions are 1x1.
 *
 *   G  z -> Linear(nz, w0 s0 s0) viewed [w0, s0, s0] (s0 = 7 at 28 px, else 4)
 *      -> GBlock(w_in, w_out) x B: h = conv(relu(bn(conv(up(relu(bn(x)))))))
 *                                  out = h + conv1x1(up(x))
 *      -> BN -> ReLU -> conv(w, nc) -> tanh.
 *      B = 2 (28 px: 7 -> 14 -> 28), 3 (32: 4 -> 32), 4 (64: 4 -> 64).
 *      Widths: ngf in every block at 28 and 32 px (SNGAN's CIFAR G); at
 *      64 px 8ngf -> 8, 4, 2, 1 ngf (BigGAN's halving).
 *      With classes, every BN is conditional (gf/net.h).
 *   D  DBlock0(nc, w): h = pool(conv(relu(conv(x)))), out = h + conv1x1(pool(x))
 *      -> DBlock(down): h = pool(conv(relu(conv(relu(x))))), out = h + pool(conv1x1(x))
 *      -> DBlock(same): h = conv(relu(conv(relu(x)))), out = h + x
 *      -> ReLU -> global average pool -> Linear(w, 1) (+ the projection
 *      <embed[y], h> of the pooled h with classes).
 *      28 px: down, down, same (28 -> 14 -> 7); 32: down, down, same, same
 *      (32 -> 16 -> 8, SNGAN's CIFAR D); 64: four down, one same (-> 4),
 *      widths ndf, 2, 4, 8, 8 ndf. ndf everywhere at 28 and 32 px.
 *      No batch norm in D (SNGAN's), spectral norm on every weight with
 *      spectral_norm. pool = 2x2 average pooling. SNGAN sums the last
 *      map where this D averages it: the logit's scale then does not grow
 *      with the image.
 * Initialisation as SNGAN's: Glorot (Xavier) uniform weights, biases 0,
 * BN gamma 1, beta 0 (SNGAN uses gain sqrt(2) on the blocks' 3x3
 * convolutions; here every weight has gain 1, as gf_mlp_init_params);
 * a conditional BN's gain and bias linears N(0, 0.02) as the dcgan's: with
 * the shared embedding's N(0, 1) rows, Glorot's U(+-0.18) there would
 * start every channel's gain 1 + e.w with a spread of about 1. */
#include "net_layers.h"

#define MAX_BLOCKS 5

typedef struct resnet_plan {
  int s0;                  /* G's first map size */
  int g_blocks;
  int g_width[MAX_BLOCKS + 1]; /* G: block b maps g_width[b] -> g_width[b+1] */
  int d_blocks;
  int d_width[MAX_BLOCKS]; /* D: block b's output width */
  bool d_down[MAX_BLOCKS];
} resnet_plan;

static void plan_of(const gf_model_config *c, resnet_plan *p) {
  int size = c->image_height, g = c->ngf, d = c->ndf;
  p->s0 = size == 28 ? 7 : 4;
  if (size == 64) {
    p->g_blocks = 4;
    const int gm[5] = {8, 8, 4, 2, 1};
    for (int b = 0; b < 5; b++) p->g_width[b] = gm[b] * g;
    p->d_blocks = 5;
    const int dm[5] = {1, 2, 4, 8, 8};
    for (int b = 0; b < 5; b++) {
      p->d_width[b] = dm[b] * d;
      p->d_down[b] = b < 4;
    }
    return;
  }
  p->g_blocks = size == 28 ? 2 : 3;
  for (int b = 0; b <= p->g_blocks; b++) p->g_width[b] = g;
  p->d_blocks = size == 28 ? 3 : 4;
  for (int b = 0; b < p->d_blocks; b++) {
    p->d_width[b] = d;
    p->d_down[b] = b < 2;
  }
}

static gf_status build_g(gf_net *net, const resnet_plan *p, gf_err *err) {
  GF_TRY(gf_nb_linear_map(net, p->g_width[0], p->s0, p->s0, err));
  for (int b = 0; b < p->g_blocks; b++) {
    int start = net->n_layers;
    GF_TRY(gf_nb_bn(net, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    GF_TRY(gf_nb_upsample(net, err));
    GF_TRY(gf_nb_conv(net, false, p->g_width[b + 1], 3, 1, 1, err));
    GF_TRY(gf_nb_bn(net, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    GF_TRY(gf_nb_conv(net, false, p->g_width[b + 1], 3, 1, 1, err));
    GF_TRY(gf_nb_resadd(net, start, GF_SC_UP_CONV, err));
  }
  GF_TRY(gf_nb_bn(net, err));
  GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
  GF_TRY(gf_nb_conv(net, false, net->cfg.image_channels, 3, 1, 1, err));
  return gf_nb_act(net, GF_L_TANH, 0.0f, err);
}

static gf_status build_d(gf_net *net, const resnet_plan *p, gf_err *err) {
  int w = p->d_width[0];
  GF_TRY(gf_nb_conv(net, false, w, 3, 1, 1, err)); /* block 0 starts at layer 0 */
  GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
  GF_TRY(gf_nb_conv(net, false, w, 3, 1, 1, err));
  GF_TRY(gf_nb_avgpool(net, 2, err));
  GF_TRY(gf_nb_resadd(net, 0, GF_SC_POOL_CONV, err));
  for (int b = 1; b < p->d_blocks; b++) {
    int start = net->n_layers;
    w = p->d_width[b];
    GF_TRY(gf_nb_act_copy(net, GF_L_RELU, 0.0f, err)); /* the input stays for the shortcut */
    GF_TRY(gf_nb_conv(net, false, w, 3, 1, 1, err));
    GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
    GF_TRY(gf_nb_conv(net, false, w, 3, 1, 1, err));
    if (p->d_down[b]) GF_TRY(gf_nb_avgpool(net, 2, err));
    GF_TRY(gf_nb_resadd(net, start, p->d_down[b] ? GF_SC_CONV_POOL : GF_SC_IDENTITY, err));
  }
  GF_TRY(gf_nb_act(net, GF_L_RELU, 0.0f, err));
  const gf_layer *last = &net->layers[net->n_layers - 1];
  GF_TRY(gf_nb_avgpool(net, (int)last->out[1], err));
  return gf_nb_linear(net, 1, true, err);
}

gf_status gf_resnet_build(gf_net *net, gf_err *err) {
  resnet_plan p;
  plan_of(&net->cfg, &p);
  return net->role == GF_NET_G ? build_g(net, &p, err) : build_d(net, &p, err);
}

gf_status gf_resnet_init_params(gf_net *net, uint64_t seed, gf_err *err) {
  GF_TRY(gf_mlp_init_params(net, seed, err)); /* Glorot uniform, BN gamma 1 */
  gf_rng_purpose purpose = net->role == GF_NET_G ? GF_RNG_INIT_G : GF_RNG_INIT_D;
  for (int i = 0; i < net->n_layers; i++) {
    const gf_layer *l = &net->layers[i];
    const int lin[2] = {l->p_gw, l->p_bw};
    for (int k = 0; k < 2; k++) {
      if (lin[k] < 0) continue;
      gf_param *p = &net->tensors[lin[k]];
      gf_philox_stream s = gf_rng_stream(seed, purpose, 0, (uint32_t)lin[k]);
      gf_philox_normal(&s, p->value.data, (size_t)gf_tensor_numel(&p->value), 0.0f, 0.02f);
    }
  }
  return GF_OK;
}
