/* net_layers.h - the private layer type of gf_net (gf/net.h): one record per
 * nn.Sequential module, a small table of forward/backward functions per
 * layer kind (net_layers.c), and the builder calls the network files
 * (net_mlp.c, net_dcgan.c, net_resnet.c) use to describe their layers before net.c sizes
 * and carves the arenas. Internal to gf_model. */
#ifndef GF_NET_LAYERS_H
#define GF_NET_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

#include "gf/net.h"

typedef enum gf_layer_kind {
  GF_L_LINEAR,  /* y = x W^T (+ b); in [F_in] (input flattened), out [F] */
  GF_L_CONV,    /* nn.Conv2d, no bias; in [C,H,W], out [C',H',W'] */
  GF_L_DECONV,  /* nn.ConvTranspose2d, no bias; in [C,H,W] (G's first
                   layer sees z [nz] as [nz,1,1]) */
  GF_L_BN,      /* BatchNorm1d ([F]) or BatchNorm2d ([C,H,W]) */
  GF_L_RELU,    /* in place */
  GF_L_LRELU,   /* in place */
  GF_L_TANH,    /* in place */
  GF_L_DROPOUT, /* in place; identity in GF_MODE_INFER */
  GF_L_UPSAMPLE, /* nearest-neighbour 2x: [C,H,W] -> [C,2H,2W] */
  GF_L_AVGPOOL, /* average pool, window = stride = pool_k, no padding */
  GF_L_RESADD,  /* in place: y = x + shortcut(s), s the input of layer
                   skip_from (the residual block's input) */
  GF_L_KIND_COUNT
} gf_layer_kind;

/* The shortcut of a residual block (GF_L_RESADD), SNGAN's three kinds. */
typedef enum gf_shortcut {
  GF_SC_IDENTITY,  /* s itself (same shape as the block's output) */
  GF_SC_UP_CONV,   /* conv1x1(upsample2x(s)): G's blocks */
  GF_SC_POOL_CONV, /* conv1x1(avgpool2(s)): D's first block */
  GF_SC_CONV_POOL, /* avgpool2(conv1x1(s)): D's other downsampling blocks */
} gf_shortcut;

typedef struct gf_layer {
  gf_layer_kind kind;
  int in_ndim;           /* per-sample dims of the input as this op sees it */
  int64_t in[3];
  int out_ndim;          /* per-sample dims of the output */
  int64_t out[3];
  int64_t in_numel, out_numel; /* per sample */
  bool in_place;         /* output overwrites the input buffer: element-wise
                            layers. Invariant that makes this safe: every
                            element-wise backward only needs the SIGN of its
                            input (relu, leaky relu; a later in-place dropout
                            keeps signs or zeroes an element whose incoming
                            gradient is then zero) or its own output (tanh,
                            always the last layer) */
  int p_w, p_b;          /* indices into net->tensors, or -1 */
  int p_gamma, p_beta, p_rmean, p_rvar;
  int p_u, p_v;          /* spectral norm's vectors, or -1 (no SN) */
  int p_gw, p_gb, p_bw, p_bb; /* BN of a conditional G: the gain and bias
                            linears' weights [C, E] and biases [C]; -1 */
  float *xhat;           /* conditional BN: the normalized input of the last
                            train forward [max_batch, C, ...], in acts */
  float *cgain, *cbias;  /* conditional BN: [max_batch, C] gain and bias */
  float *w_sn;           /* SN: weight / sigma of the last forward, in acts */
  float *sigma;          /* SN: [1] its sigma, in acts */
  gf_conv_params conv;   /* CONV/DECONV */
  int pool_k;            /* AVGPOOL: window and stride */
  int skip_from;         /* RESADD: layer whose input is the block's */
  gf_shortcut sc;        /* RESADD: its shortcut; the 1x1 convolution's
                            weight is p_w (with p_u/p_v under SN), its
                            params `conv` */
  int64_t skip_numel;    /* RESADD: per-sample numel of the block's input */
  int64_t mid_numel;     /* RESADD: of the shortcut's intermediate */
  float *sc_mid;         /* RESADD: [max_batch, mid] intermediate, in acts
                            (NULL for GF_SC_IDENTITY) */
  float *sc_out;         /* RESADD: [max_batch, out] the shortcut (NULL
                            for identity) */
  float *sc_dmid;        /* RESADD, training: gradient wrt sc_mid */
  float *skip_grad;      /* RESADD, training: [max_batch, skip_numel] the
                            gradient the shortcut sends to the block's
                            input; the backward adds it there */
  float slope;           /* LRELU */
  float drop_p;          /* DROPOUT probability of zeroing */
  float *act;            /* output buffer, max_batch * out_numel floats in
                            the acts arena; the input's buffer when
                            in_place (layer 0 is never in place) */
  float *save_mean;      /* BN: [C] batch mean / biased var of the last */
  float *save_var;       /*     train forward, in the acts arena */
  double sync_count;     /* BN, sync BN: values per channel over all
                            ranks in the last train forward */
  gf_philox_stream drop_stream; /* DROPOUT: stream of the last forward */
  bool drop_applied;     /* DROPOUT: the last forward applied a mask */
} gf_layer;

/* Views of one layer's input, output and gradients for n samples. */
typedef struct gf_layer_io {
  gf_tensor x;   /* input (for in-place layers: the buffer after forward) */
  gf_tensor y;   /* output */
  gf_tensor dy;  /* backward: gradient wrt y */
  gf_tensor dx;  /* backward: gradient wrt x; data NULL = not needed */
} gf_layer_io;

typedef struct gf_layer_ops {
  const char *name;
  gf_status (*fwd)(gf_net *net, gf_layer *l, gf_ctx *ctx, gf_layer_io *io,
                   gf_net_mode mode, const gf_philox_stream *drop,
                   gf_err *err);
  gf_status (*bwd)(gf_net *net, gf_layer *l, gf_ctx *ctx, gf_layer_io *io,
                   bool param_grads, gf_accum accum, gf_err *err);
} gf_layer_ops;

/* The function table entry of a layer kind. */
const gf_layer_ops *gf_layer_ops_of(gf_layer_kind kind);

/* ---- builder (net.c): append a layer after the current last one. The
 * shapes follow from the previous layer (or the net's input shape).
 * Parameters are registered with their shapes; net.c carves them later. */
/* Registers tensor "<g|d>.<module>.<suffix>" (module "main.<n_layers>",
 * the layer being added, when NULL); *index receives its index. */
gf_status gf_nb_tensor(gf_net *net, const char *module, const char *suffix,
                       gf_param_kind kind, int ndim, const int64_t *shape,
                       int *index, gf_err *err);
gf_status gf_nb_linear(gf_net *net, int64_t out_features, bool bias,
                       gf_err *err);
gf_status gf_nb_conv(gf_net *net, bool transposed, int64_t out_channels,
                     int k, int stride, int pad, gf_err *err);
gf_status gf_nb_bn(gf_net *net, gf_err *err);
gf_status gf_nb_act(gf_net *net, gf_layer_kind kind, float arg, gf_err *err);
/* An element-wise layer that writes a new buffer instead of its input
 * (the input is still read later: a residual block's input). */
gf_status gf_nb_act_copy(gf_net *net, gf_layer_kind kind, float arg,
                         gf_err *err);
/* A linear whose output is seen as [c, h, w] (G's first layer of the
 * resnet: nn.Linear followed by a view). */
gf_status gf_nb_linear_map(gf_net *net, int64_t c, int64_t h, int64_t w,
                           gf_err *err);
gf_status gf_nb_upsample(gf_net *net, gf_err *err);
gf_status gf_nb_avgpool(gf_net *net, int k, gf_err *err);
/* Closes a residual block that began at layer skip_from: adds the shortcut
 * of the block's input (the input of layer skip_from) to the current last
 * output. The layers from skip_from on must not write over that input
 * (none in place directly after it). */
gf_status gf_nb_resadd(gf_net *net, int skip_from, gf_shortcut sc,
                       gf_err *err);

/* Sync BN (net_sync.c): the train-mode forward and the backward of BN
 * layer l when net->bn_comm is set. */
gf_status gf_syncbn_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                        gf_layer_io *io, gf_err *err);
gf_status gf_syncbn_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                        gf_layer_io *io, bool param_grads, gf_accum accum,
                        gf_err *err);
/* Class conditioning (net.c calls it; net_layers.c): the backward of D's
 * projection term after its last layer l's own backward: dh (io->dx, when
 * wanted) += dy embed[y], and with param_grads the embedding's gradient. */
gf_status gf_net_projection_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                                gf_layer_io *io, bool param_grads,
                                gf_accum accum, gf_err *err);

/* The average pooling of the resnet: a k x k window, stride k, no padding
 * (an AVGPOOL layer's k = pool_k; a residual block's shortcut pools 2x2). */
static inline gf_pool_params gf_net_pool(int k) {
  return (gf_pool_params){{k, k}, {k, k}, {0, 0}, 1};
}

/* A residual add's per-sample shapes (net_layers.c): s its block's input
 * (layer skip_from's input), m its shortcut's intermediate (sc_mid; s for
 * an identity shortcut). */
void gf_resadd_shapes(const gf_net *net, const gf_layer *l, int64_t s[3], int64_t m[3]);

/* The backward of residual blocks that begin at layer i (net.c): their
 * shortcuts' gradients (each GF_L_RESADD's skip_grad, written by its
 * backward) added to dx, the gradient wrt layer i's input. */
gf_status gf_net_add_skip_grads(gf_net *net, gf_ctx *ctx, int i, gf_tensor *dx, gf_err *err);

/* Frees the sync scratch; NULL is fine. */
void gf_net_sync_free(struct gf_net_sync *s);
/* Frees gf_net_r1's scratch (net_r1_scratch.c); NULL is fine. */
void gf_net_r1_free(struct gf_net_r1 *r);

/* The network descriptions (net_mlp.c, net_dcgan.c): set net->in_* and
 * append the layers of net->role for net->cfg. */
gf_status gf_mlp_build(gf_net *net, gf_err *err);
gf_status gf_dcgan_build(gf_net *net, gf_err *err);
gf_status gf_resnet_build(gf_net *net, gf_err *err);
/* Their initialisations (see gf_net_init_params). */
gf_status gf_mlp_init_params(gf_net *net, uint64_t seed, gf_err *err);
gf_status gf_dcgan_init_params(gf_net *net, uint64_t seed, gf_err *err);
gf_status gf_resnet_init_params(gf_net *net, uint64_t seed, gf_err *err);

#endif
