/* test_nets.c - the networks of gf/net.h: parameter counts (DESIGN §2: the
 * paper's mlp, PyTorch's DCGAN example at 64x64x3), shapes of every dcgan
 * variant, state_dict names, arena layout, init as a pure function of the
 * seed with the papers' distributions, forward output ranges and modes,
 * backward plumbing and error paths; nets of weights alone (max_batch 0)
 * and nets sharing them (gf_net_init_shared): the same bytes as the net
 * that owns its weights, no copy, refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/net.h"

static gf_model_config cfg_of(gf_arch arch, int size, int ch, int z, int ngf, int ndf) {
  gf_model_config c;
  gf_model_config_default(&c, arch);
  c.image_height = c.image_width = size;
  c.image_channels = ch;
  c.z_dim = z;
  c.ngf = ngf;
  c.ndf = ndf;
  return c;
}

static void build(gf_net *net, gf_ctx *ctx, const gf_model_config *c, gf_net_role role,
                  int batch, bool training) {
  gf_err err = {0};
  gf_status st = gf_net_init(net, ctx, c, role, batch, training, &err);
  if (st != GF_OK) fprintf(stderr, "gf_net_init: %s\n", err.msg);
  REQUIRE(st == GF_OK);
}

static void test_counts(gf_ctx *ctx) {
  gf_net g, d;
  gf_model_config c = cfg_of(GF_ARCH_MLP, 28, 1, 50, 1, 1);
  build(&g, ctx, &c, GF_NET_G, 2, false);
  build(&d, ctx, &c, GF_NET_D, 2, false);
  CHECK_INT_EQ(gf_net_num_trainable(&g), 2051384);
  CHECK_INT_EQ(gf_net_num_trainable(&d), 233985);
  CHECK_INT_EQ(gf_net_num_bn_stats(&g), 4400);
  CHECK_INT_EQ(gf_net_num_bn_stats(&d), 0);
  CHECK_INT_EQ(gf_net_num_trainable(&g) + gf_net_num_trainable(&d) + gf_net_num_bn_stats(&g) +
                   gf_net_num_bn_stats(&d),
               2289769);
  /* The counts are what the arenas hold (padding aside). */
  CHECK(g.params.used >= 2051384u * 4 && g.params.used < 2051384u * 4 + 64u * 16);
  CHECK(g.bn_stats.used >= 4400u * 4);
  /* Not built for training: no gradient / moment arenas. */
  CHECK(g.grads.base == NULL && g.adam_m.base == NULL && g.adam_v.base == NULL);
  gf_net_free(&g);
  gf_net_free(&d);

  c = cfg_of(GF_ARCH_DCGAN, 64, 3, 100, 64, 64);
  build(&g, ctx, &c, GF_NET_G, 2, false);
  build(&d, ctx, &c, GF_NET_D, 2, false);
  CHECK_INT_EQ(gf_net_num_trainable(&g), 3576704);
  CHECK_INT_EQ(gf_net_num_trainable(&d), 2765568);
  /* BN running stats: G 2*(512+256+128+64), D 2*(128+256+512). */
  CHECK_INT_EQ(gf_net_num_bn_stats(&g), 1920);
  CHECK_INT_EQ(gf_net_num_bn_stats(&d), 1792);
  CHECK_INT_EQ(g.n_layers, 14);
  CHECK_INT_EQ(d.n_layers, 12);
  gf_net_free(&g);
  gf_net_free(&d);
}

/* Expected trainable counts of dcgan at 28 and 32 pixels, by formula. */
static void test_dcgan_variants(gf_ctx *ctx) {
  struct { int size, ch; int64_t g, d; } v[] = {
      /* 28: ConvT(nz,4ngf,7) BN ConvT(4ngf,2ngf,4) BN ConvT(2ngf,nc,4);
       *     Conv(nc,ndf,4) Conv(ndf,2ndf,4) BN Conv(2ndf,1,7) */
      {28, 1, 100 * 256 * 49 + 512 + 256 * 128 * 16 + 256 + 128 * 1 * 16,
       1 * 64 * 16 + 64 * 128 * 16 + 256 + 128 * 49},
      {28, 3, 100 * 256 * 49 + 512 + 256 * 128 * 16 + 256 + 128 * 3 * 16,
       3 * 64 * 16 + 64 * 128 * 16 + 256 + 128 * 49},
      /* 32: ConvT(nz,4ngf,4) BN ConvT(4ngf,2ngf) BN ConvT(2ngf,ngf) BN ConvT(ngf,nc) */
      {32, 3, 100 * 256 * 16 + 512 + 256 * 128 * 16 + 256 + 128 * 64 * 16 + 128 + 64 * 3 * 16,
       3 * 64 * 16 + 64 * 128 * 16 + 256 + 128 * 256 * 16 + 512 + 256 * 16},
      {32, 1, 100 * 256 * 16 + 512 + 256 * 128 * 16 + 256 + 128 * 64 * 16 + 128 + 64 * 1 * 16,
       1 * 64 * 16 + 64 * 128 * 16 + 256 + 128 * 256 * 16 + 512 + 256 * 16},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    gf_model_config c = cfg_of(GF_ARCH_DCGAN, v[i].size, v[i].ch, 100, 64, 64);
    gf_net g, d;
    build(&g, ctx, &c, GF_NET_G, 2, false);
    build(&d, ctx, &c, GF_NET_D, 2, false);
    CHECKF(gf_net_num_trainable(&g) == v[i].g, "size %d ch %d: G %lld != %lld", v[i].size,
           v[i].ch, (long long)gf_net_num_trainable(&g), (long long)v[i].g);
    CHECKF(gf_net_num_trainable(&d) == v[i].d, "size %d ch %d: D %lld != %lld", v[i].size,
           v[i].ch, (long long)gf_net_num_trainable(&d), (long long)v[i].d);
    /* G's first layer maps z to a 7x7 (28) or 4x4 (32) map. */
    gf_param *w0 = gf_net_find(&g, "g.main.0.weight");
    REQUIRE(w0 != NULL);
    CHECK_INT_EQ(w0->value.shape[0], 100);
    CHECK_INT_EQ(w0->value.shape[1], 256);
    CHECK_INT_EQ(w0->value.shape[2], v[i].size == 28 ? 7 : 4);
    gf_net_free(&g);
    gf_net_free(&d);
  }
}

static double mean_of(const gf_tensor *t, double *sd) {
  const float *x = t->data;
  int64_t n = gf_tensor_numel(t);
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; i++) s += x[i], s2 += (double)x[i] * x[i];
  double m = s / n;
  *sd = sqrt(s2 / n - m * m);
  return m;
}

/* resnet (model/src/net_resnet.c): SNGAN's CIFAR pair at 32x32x3 and
 * width 64 counted by formula, the layer plan, a residual add's shortcut
 * weight, and every size builds (64 pixels: the deepest nets). */
static void test_resnet(gf_ctx *ctx) {
  gf_model_config c = cfg_of(GF_ARCH_RESNET, 32, 3, 128, 64, 64);
  gf_net g, d;
  build(&g, ctx, &c, GF_NET_G, 2, true);
  build(&d, ctx, &c, GF_NET_D, 2, true);
  /* G: Linear(128, 64*4*4) + 3 x [BN 128, conv 64*64*9 x 2, BN 128,
   * shortcut 64*64] + BN 128 + conv 64*3*9 */
  int64_t blk = 128 + 2 * 64 * 64 * 9 + 128 + 64 * 64;
  CHECK_INT_EQ(gf_net_num_trainable(&g), 128 * 1024 + 1024 + 3 * blk + 128 + 64 * 3 * 9);
  /* D: [conv 3->64, conv 64->64, shortcut 3*64] + [2 convs, shortcut
   * 64*64] + 2 x [2 convs] + Linear(64, 1) */
  int64_t conv = 64 * 64 * 9;
  CHECK_INT_EQ(gf_net_num_trainable(&d), (3 * 64 * 9 + conv + 3 * 64) + (2 * conv + 64 * 64) +
                                             2 * (2 * conv) + 65);
  CHECK_INT_EQ(g.n_layers, 1 + 3 * 8 + 4);
  CHECK_INT_EQ(d.n_layers, 5 + 6 + 5 + 5 + 3);
  CHECK_INT_EQ(gf_net_num_bn_stats(&d), 0); /* no batch norm in D */
  gf_param *sc = gf_net_find(&g, "g.main.8.weight"); /* block 0's shortcut */
  REQUIRE(sc != NULL);
  CHECK(sc->value.ndim == 4 && sc->value.shape[0] == 64 && sc->value.shape[1] == 64 &&
        sc->value.shape[2] == 1 && sc->value.shape[3] == 1);
  gf_param *lin = gf_net_find(&g, "g.main.0.weight");
  REQUIRE(lin != NULL);
  CHECK(lin->value.shape[0] == 1024 && lin->value.shape[1] == 128);
  gf_net_free(&g);
  gf_net_free(&d);
  const int sizes[3] = {28, 32, 64};
  for (int i = 0; i < 3; i++) {
    c = cfg_of(GF_ARCH_RESNET, sizes[i], 1, 16, 8, 8);
    c.spectral_norm = 1;
    c.num_classes = 10;
    build(&g, ctx, &c, GF_NET_G, 2, true);
    build(&d, ctx, &c, GF_NET_D, 2, true);
    CHECK(g.out_shape[1] == sizes[i] && d.in_shape[1] == sizes[i]);
    CHECK(gf_net_find(&d, "d.main.4.weight_orig") != NULL); /* block 0's shortcut, SN */
    gf_net_free(&g);
    gf_net_free(&d);
  }
  /* init: Glorot uniform weights, a conditional BN's linears N(0, 0.02) */
  gf_err err = {0};
  c = cfg_of(GF_ARCH_RESNET, 28, 1, 16, 32, 32);
  c.num_classes = 10;
  build(&g, ctx, &c, GF_NET_G, 2, true);
  REQUIRE(gf_net_init_params(&g, 3, &err) == GF_OK);
  const char *cbn[2] = {"g.main.1.gain.weight", "g.main.5.bias.weight"};
  for (int k = 0; k < 2; k++) {
    gf_param *p = gf_net_find(&g, cbn[k]);
    REQUIRE(p != NULL);
    double sd, m = mean_of(&p->value, &sd);
    CHECKF(fabs(m) < 0.002 && fabs(sd - 0.02) < 0.002, "%s mean %g sd %g", cbn[k], m, sd);
  }
  gf_param *cv = gf_net_find(&g, "g.main.4.weight"); /* 3x3, 32 -> 32 */
  REQUIRE(cv != NULL);
  double sd, m = mean_of(&cv->value, &sd), lim = sqrt(6.0 / (32 * 9 + 32 * 9));
  CHECKF(fabs(m) < 0.01 * lim * 6 && fabs(sd - lim / sqrt(3.0)) < 0.03 * lim, "conv sd %g", sd);
  gf_net_free(&g);
  c = cfg_of(GF_ARCH_RESNET, 48, 3, 16, 8, 8);
  CHECK(gf_net_init(&g, ctx, &c, GF_NET_G, 2, false, &err) == GF_EINVAL);
  gf_net_free(&g);
}

static void test_names_and_layout(gf_ctx *ctx) {
  gf_model_config c = cfg_of(GF_ARCH_DCGAN, 64, 3, 100, 8, 8);
  gf_net g, d;
  build(&g, ctx, &c, GF_NET_G, 2, true);
  build(&d, ctx, &c, GF_NET_D, 2, true);
  /* PyTorch DCGAN example state_dict keys, prefixed. */
  const char *gnames[] = {"g.main.0.weight", "g.main.1.weight", "g.main.1.bias",
                          "g.main.1.running_mean", "g.main.1.running_var", "g.main.3.weight",
                          "g.main.4.running_var", "g.main.12.weight"};
  for (size_t i = 0; i < sizeof gnames / sizeof gnames[0]; i++)
    CHECKF(gf_net_find(&g, gnames[i]) != NULL, "%s missing", gnames[i]);
  CHECK(gf_net_find(&g, "g.main.0.bias") == NULL); /* convs have no bias */
  CHECK(gf_net_find(&g, "g.main.2.weight") == NULL); /* ReLU has none */
  const char *dnames[] = {"d.main.0.weight", "d.main.2.weight", "d.main.3.weight",
                          "d.main.3.running_mean", "d.main.11.weight"};
  for (size_t i = 0; i < sizeof dnames / sizeof dnames[0]; i++)
    CHECKF(gf_net_find(&d, dnames[i]) != NULL, "%s missing", dnames[i]);
  CHECK(gf_net_find(&d, "d.main.1.weight") == NULL); /* no BN on D's first layer */
  gf_param *last = gf_net_find(&g, "g.main.12.weight");
  REQUIRE(last != NULL);
  CHECK_INT_EQ(last->value.shape[0], 8); /* [Cin = ngf, Cout = 3, 4, 4] */
  CHECK_INT_EQ(last->value.shape[1], 3);
  /* grads / moments mirror params byte for byte; stats live apart. */
  for (int i = 0; i < g.n_tensors; i++) {
    gf_param *p = &g.tensors[i];
    if (!p->trainable) {
      CHECK((char *)p->value.data >= (char *)g.bn_stats.base &&
            (char *)p->value.data < (char *)g.bn_stats.base + g.bn_stats.used);
      CHECK(p->grad.data == NULL);
      continue;
    }
    ptrdiff_t off = (char *)p->value.data - (char *)g.params.base;
    CHECK(off >= 0 && (size_t)off < g.params.used);
    CHECK((char *)p->grad.data - (char *)g.grads.base == off);
    CHECK((char *)p->adam_m.data - (char *)g.adam_m.base == off);
    CHECK((char *)p->adam_v.data - (char *)g.adam_v.base == off);
  }
  CHECK(gf_net_arena_bytes(&g) >= 4 * g.params.used + g.bn_stats.used);
  gf_net_free(&g);
  gf_net_free(&d);
  gf_net_free(NULL);
  gf_net_free(&g); /* twice is harmless */
}


static void test_init(gf_ctx *ctx) {
  gf_err err = {0};
  gf_model_config c = cfg_of(GF_ARCH_DCGAN, 64, 3, 100, 16, 16);
  gf_net a, b;
  build(&a, ctx, &c, GF_NET_G, 2, true);
  build(&b, ctx, &c, GF_NET_G, 2, true);
  REQUIRE(gf_net_init_params(&a, 42, &err) == GF_OK);
  REQUIRE(gf_net_init_params(&b, 42, &err) == GF_OK);
  CHECK(memcmp(a.params.base, b.params.base, a.params.used) == 0);
  CHECK(memcmp(a.bn_stats.base, b.bn_stats.base, a.bn_stats.used) == 0);
  /* A different seed gives different weights; re-init restores them. */
  REQUIRE(gf_net_init_params(&b, 43, &err) == GF_OK);
  CHECK(memcmp(a.params.base, b.params.base, a.params.used) != 0);
  REQUIRE(gf_net_init_params(&b, 42, &err) == GF_OK);
  CHECK(memcmp(a.params.base, b.params.base, a.params.used) == 0);
  /* DCGAN weights_init: conv N(0, 0.02), gamma N(1, 0.02), beta 0, stats 0/1. */
  for (int i = 0; i < a.n_tensors; i++) {
    gf_param *p = &a.tensors[i];
    double sd, m = mean_of(&p->value, &sd);
    int64_t n = gf_tensor_numel(&p->value);
    double se = 0.02 / sqrt((double)n) * 6 + 1e-9;
    switch (p->kind) {
    case GF_PARAM_WEIGHT:
      CHECKF(fabs(m) < se && fabs(sd - 0.02) < 0.02 * 6 / sqrt((double)n) + 1e-3,
             "%s mean %g sd %g", p->name, m, sd);
      break;
    case GF_PARAM_BN_WEIGHT: CHECKF(fabs(m - 1) < se, "%s mean %g", p->name, m); break;
    case GF_PARAM_BN_BIAS:
    case GF_PARAM_BN_RUNNING_MEAN: CHECK(m == 0 && sd == 0); break;
    case GF_PARAM_BN_RUNNING_VAR: CHECK(m == 1 && sd == 0); break;
    case GF_PARAM_BIAS: CHECK(0); break;
    case GF_PARAM_SN_U:
    case GF_PARAM_SN_V: CHECK(0); break; /* G has no spectral norm */
    case GF_PARAM_EMBED:
    case GF_PARAM_CBN_GAIN_BIAS: CHECK(0); break; /* unconditional */
    }
  }
  /* D's stream differs from G's: compare first weights' leading values. */
  gf_net d;
  gf_model_config c1 = cfg_of(GF_ARCH_DCGAN, 64, 3, 100, 16, 16);
  build(&d, ctx, &c1, GF_NET_D, 2, false);
  REQUIRE(gf_net_init_params(&d, 42, &err) == GF_OK);
  CHECK(memcmp(d.tensors[0].value.data, a.tensors[0].value.data, 64) != 0);
  gf_net_free(&d);
  gf_net_free(&a);
  gf_net_free(&b);

  /* mlp: Keras glorot_uniform weights, zero biases, gamma 1, beta 0. */
  c = cfg_of(GF_ARCH_MLP, 28, 1, 50, 1, 1);
  build(&a, ctx, &c, GF_NET_G, 2, false);
  REQUIRE(gf_net_init_params(&a, 7, &err) == GF_OK);
  for (int i = 0; i < a.n_tensors; i++) {
    gf_param *p = &a.tensors[i];
    const float *x = p->value.data;
    int64_t n = gf_tensor_numel(&p->value);
    double sd, m = mean_of(&p->value, &sd);
    if (p->kind == GF_PARAM_WEIGHT) {
      double lim = sqrt(6.0 / (double)(p->fan_in + p->fan_out));
      float mx = 0;
      for (int64_t j = 0; j < n; j++) mx = fabsf(x[j]) > mx ? fabsf(x[j]) : mx;
      CHECKF(mx <= lim && mx > 0.99 * lim, "%s max %g limit %g", p->name, mx, lim);
      CHECKF(fabs(sd - lim / sqrt(3.0)) < 0.02 * lim, "%s sd %g", p->name, sd);
    } else if (p->kind == GF_PARAM_BN_WEIGHT || p->kind == GF_PARAM_BN_RUNNING_VAR) {
      CHECK(m == 1 && sd == 0);
    } else {
      CHECK(m == 0 && sd == 0);
    }
  }
  gf_param *w0 = gf_net_find(&a, "g.main.0.weight");
  REQUIRE(w0 != NULL);
  CHECK_INT_EQ(w0->fan_in, 50);
  CHECK_INT_EQ(w0->fan_out, 1200);
  gf_net_free(&a);
}

static void test_forward_backward(gf_ctx *ctx) {
  gf_err err = {0};
  const int n = 4;
  gf_model_config c = cfg_of(GF_ARCH_DCGAN, 28, 1, 16, 8, 8);
  gf_net g, d;
  build(&g, ctx, &c, GF_NET_G, n, true);
  build(&d, ctx, &c, GF_NET_D, n, true);
  REQUIRE(gf_net_init_params(&g, 1, &err) == GF_OK);
  REQUIRE(gf_net_init_params(&d, 1, &err) == GF_OK);
  gf_tensor z, y, logits, dy, dx;
  int64_t zs[2] = {n, 16};
  REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  REQUIRE(gf_latent_sample(&z, 5, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
  /* Latent k is the same whatever the batch size. */
  gf_tensor z1;
  int64_t z1s[2] = {1, 16};
  REQUIRE(gf_tensor_init(&z1, GF_F32, GF_DEV_CPU, 2, z1s, &err) == GF_OK);
  REQUIRE(gf_latent_sample(&z1, 5, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
  CHECK(memcmp(z1.data, z.data, 16 * 4) == 0);

  gf_status st = gf_net_forward(&g, ctx, &z, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  REQUIRE(st == GF_OK);
  CHECK(y.ndim == 4 && y.shape[0] == n && y.shape[1] == 1 && y.shape[2] == 28 && y.shape[3] == 28);
  const float *yp = y.data;
  int in_range = 1;
  for (int64_t i = 0; i < gf_tensor_numel(&y); i++) in_range &= yp[i] >= -1 && yp[i] <= 1;
  CHECK(in_range);
  /* Train mode moved the running stats by momentum * batch statistic. */
  gf_param *rm = gf_net_find(&g, "g.main.1.running_mean");
  REQUIRE(rm != NULL);
  double sd;
  mean_of(&rm->value, &sd);
  CHECK(sd > 0);
  /* Infer mode uses running stats: a different output, stats unchanged. */
  float first = yp[0];
  float rm0 = ((float *)rm->value.data)[0];
  REQUIRE(gf_net_forward(&g, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y, &err) == GF_OK);
  CHECK(((float *)y.data)[0] != first);
  CHECK(((float *)rm->value.data)[0] == rm0);
  /* Backward needs a train-mode forward. */
  int64_t ls[2] = {n, 1};
  REQUIRE(gf_tensor_init(&dy, GF_F32, GF_DEV_CPU, 4, y.shape, &err) == GF_OK);
  CHECK(gf_net_backward(&g, ctx, &dy, NULL, true, GF_OVERWRITE, &err) == GF_ESTATE);

  /* D on G's output; grads of a train pass are written and accumulate. */
  REQUIRE(gf_net_forward(&g, ctx, &z, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_OK);
  REQUIRE(gf_net_forward(&d, ctx, &y, GF_MODE_TRAIN, 0, 0, 0, 0, &logits, &err) == GF_OK);
  CHECK(logits.ndim == 2 && logits.shape[0] == n && logits.shape[1] == 1);
  gf_tensor dl;
  REQUIRE(gf_tensor_init(&dl, GF_F32, GF_DEV_CPU, 2, ls, &err) == GF_OK);
  for (int i = 0; i < n; i++) ((float *)dl.data)[i] = 0.25f;
  REQUIRE(gf_tensor_init(&dx, GF_F32, GF_DEV_CPU, 4, y.shape, &err) == GF_OK);
  REQUIRE(gf_net_backward(&d, ctx, &dl, &dx, true, GF_OVERWRITE, &err) == GF_OK);
  gf_param *dw = gf_net_find(&d, "d.main.0.weight");
  REQUIRE(dw != NULL);
  float g1 = ((float *)dw->grad.data)[3];
  CHECK(g1 != 0);
  REQUIRE(gf_net_backward(&d, ctx, &dl, NULL, true, GF_ACCUMULATE, &err) == GF_OK);
  CHECK(((float *)dw->grad.data)[3] == 2 * g1);
  /* param_grads false leaves the grads alone but still yields dx. */
  memset(dx.data, 0, gf_tensor_nbytes(&dx));
  REQUIRE(gf_net_backward(&d, ctx, &dl, &dx, false, GF_OVERWRITE, &err) == GF_OK);
  CHECK(((float *)dw->grad.data)[3] == 2 * g1);
  double dsd;
  mean_of(&dx, &dsd);
  CHECK(dsd > 0);
  REQUIRE(gf_net_backward(&g, ctx, &dx, NULL, true, GF_OVERWRITE, &err) == GF_OK);
  gf_param *gw = gf_net_find(&g, "g.main.0.weight");
  REQUIRE(gw != NULL);
  double gsd;
  mean_of(&gw->grad, &gsd);
  CHECK(gsd > 0);
  /* Adam moves every parameter with a non-zero gradient. */
  float before = ((float *)gw->value.data)[0];
  gf_adam_params ap = {2e-4, 0.5, 0.999, 1e-8, 0};
  REQUIRE(gf_net_adam(&g, ctx, &ap, 1, &err) == GF_OK);
  CHECK(((float *)gw->value.data)[0] != before);
  CHECK(gf_net_adam(&g, ctx, &ap, 0, &err) == GF_EINVAL);

  /* Error paths name the problem instead of crashing. */
  gf_tensor big;
  int64_t bs[2] = {n + 1, 16};
  REQUIRE(gf_tensor_init(&big, GF_F32, GF_DEV_CPU, 2, bs, &err) == GF_OK);
  CHECK(gf_net_forward(&g, ctx, &big, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "batch") != NULL);
  CHECK(gf_net_forward(&d, ctx, &z, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_EINVAL);
  gf_net gi;
  gf_model_config cm = cfg_of(GF_ARCH_MLP, 28, 1, 16, 1, 1);
  build(&gi, ctx, &cm, GF_NET_G, 2, false);
  REQUIRE(gf_net_forward(&gi, ctx, &z1, GF_MODE_INFER, 0, 0, 0, 0, &y, &err) == GF_OK);
  /* BatchNorm1d cannot take batch statistics of one sample. */
  CHECK(gf_net_forward(&gi, ctx, &z1, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) != GF_OK);
  gf_net_free(&gi);
  gf_model_config bad = c;
  bad.image_height = 30;
  CHECK(gf_net_init(&gi, ctx, &bad, GF_NET_G, 2, false, &err) == GF_EINVAL);
  gf_net_free(&gi);
  gf_net_free(&gi);
  gf_tensor_free(&big);
  gf_tensor_free(&z);
  gf_tensor_free(&z1);
  gf_tensor_free(&dy);
  gf_tensor_free(&dl);
  gf_tensor_free(&dx);
  gf_net_free(&g);
  gf_net_free(&d);
}

/* mlp D in train mode draws dropout masks: keyed by (seed, step, pass). */
static void test_dropout_keys(gf_ctx *ctx) {
  gf_err err = {0};
  gf_model_config c = cfg_of(GF_ARCH_MLP, 28, 1, 50, 1, 1);
  gf_net d;
  build(&d, ctx, &c, GF_NET_D, 4, true);
  REQUIRE(gf_net_init_params(&d, 3, &err) == GF_OK);
  gf_tensor x, y;
  int64_t xs[4] = {4, 1, 28, 28};
  REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
  float *xp = x.data;
  for (int i = 0; i < 4 * 784; i++) xp[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  float out[5][4];
  struct { uint64_t seed; int64_t step; int pass; gf_net_mode mode; } k[5] = {
      {1, 0, 0, GF_MODE_TRAIN}, {1, 0, 0, GF_MODE_TRAIN}, {1, 1, 0, GF_MODE_TRAIN},
      {1, 0, 1, GF_MODE_TRAIN}, {1, 0, 0, GF_MODE_INFER}};
  for (int i = 0; i < 5; i++) {
    REQUIRE(gf_net_forward(&d, ctx, &x, k[i].mode, k[i].seed, k[i].step, 0, k[i].pass, &y,
                           &err) == GF_OK);
    memcpy(out[i], y.data, sizeof out[i]);
  }
  CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
  CHECK(memcmp(out[0], out[2], sizeof out[0]) != 0);
  CHECK(memcmp(out[0], out[3], sizeof out[0]) != 0);
  CHECK(memcmp(out[0], out[4], sizeof out[0]) != 0);
  gf_tensor_free(&x);
  gf_net_free(&d);
}

/* Spectral norm (cfg.spectral_norm): D's layout (weight_orig + u + v, no
 * batch norm), unit vectors at init, a forward that does not depend on the
 * scale of the weights, power iterations only in gf_net_sn_iterate, and the
 * gradient wrt weight_orig against central differences (u, v fixed). */
static double d_out_dot(gf_net *d, gf_ctx *ctx, const gf_tensor *x, const float *gv) {
  gf_err err = {0};
  gf_tensor y;
  REQUIRE(gf_net_forward(d, ctx, x, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_OK);
  double s = 0;
  for (int64_t i = 0; i < gf_tensor_numel(&y); i++) s += (double)((float *)y.data)[i] * gv[i];
  return s;
}

static void test_spectral_norm(gf_ctx *ctx) {
  gf_err err = {0};
  const int n = 3;
  for (int arch = 0; arch < 2; arch++) {
    gf_model_config c = arch ? cfg_of(GF_ARCH_DCGAN, 28, 1, 16, 4, 4)
                             : cfg_of(GF_ARCH_MLP, 8, 1, 8, 1, 1);
    gf_model_config plain = c;
    c.spectral_norm = 1;
    gf_net d, dp, g;
    build(&d, ctx, &c, GF_NET_D, n, true);
    build(&dp, ctx, &plain, GF_NET_D, n, true);
    build(&g, ctx, &c, GF_NET_G, n, false);
    /* G is untouched; D loses its batch norms and gains u and v. */
    CHECK(g.n_bn_stats > 0 && gf_net_find(&g, "g.main.0.weight") != NULL);
    int bn = 0, sn = 0;
    for (int i = 0; i < d.n_tensors; i++) {
      bn += d.tensors[i].kind == GF_PARAM_BN_RUNNING_MEAN;
      sn += d.tensors[i].kind == GF_PARAM_SN_U;
    }
    CHECKF(bn == 0 && sn == 3, "arch %d: %d BN, %d SN layers", arch, bn, sn);
    REQUIRE(gf_net_find(&d, "d.main.0.weight_orig") != NULL);
    gf_param *u0 = gf_net_find(&d, "d.main.0.weight_u"), *v0 = gf_net_find(&d, "d.main.0.weight_v");
    REQUIRE(u0 && v0 && !u0->trainable && !v0->trainable);
    gf_param *w0 = gf_net_find(&d, "d.main.0.weight_orig");
    CHECK(u0->value.shape[0] == w0->value.shape[0] &&
          v0->value.shape[0] == gf_tensor_numel(&w0->value) / w0->value.shape[0]);
    CHECK(gf_net_num_trainable(&d) < gf_net_num_trainable(&dp) || arch == 0);
    REQUIRE(gf_net_init_params(&d, 9, &err) == GF_OK);
    for (int t = 0; t < d.n_tensors; t++) {
      gf_param *p = &d.tensors[t];
      if (p->kind != GF_PARAM_SN_U && p->kind != GF_PARAM_SN_V) continue;
      double sd, m = mean_of(&p->value, &sd), nn = 0;
      (void)m;
      for (int64_t i = 0; i < gf_tensor_numel(&p->value); i++)
        nn += (double)((float *)p->value.data)[i] * ((float *)p->value.data)[i];
      CHECKF(fabs(nn - 1) < 1e-5, "%s: |.|^2 = %g", p->name, nn);
    }
    gf_tensor x;
    int64_t xs[4] = {n, c.image_channels, c.image_height, c.image_width};
    REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
    REQUIRE(gf_latent_sample(&x, 3, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
    float gv[3] = {0.5f, -1.0f, 0.25f};
    /* Forwards leave u and v alone; gf_net_sn_iterate moves them. */
    float u_before = ((float *)u0->value.data)[0];
    double f0 = d_out_dot(&d, ctx, &x, gv);
    CHECK(((float *)u0->value.data)[0] == u_before && d_out_dot(&d, ctx, &x, gv) == f0);
    for (int it = 0; it < 30; it++) REQUIRE(gf_net_sn_iterate(&d, ctx, &err) == GF_OK);
    CHECK(((float *)u0->value.data)[0] != u_before);
    /* W / sigma(W): scaling every weight by 4 changes nothing but rounding */
    double f1 = d_out_dot(&d, ctx, &x, gv);
    for (int t = 0; t < d.n_tensors; t++)
      if (d.tensors[t].kind == GF_PARAM_WEIGHT)
        for (int64_t i = 0; i < gf_tensor_numel(&d.tensors[t].value); i++)
          ((float *)d.tensors[t].value.data)[i] *= 4.0f;
    double f4 = d_out_dot(&d, ctx, &x, gv);
    CHECKF(fabs(f4 - f1) <= 1e-5 * (fabs(f1) + 1e-3), "arch %d: %g vs %g", arch, f4, f1);
    /* The backward against central differences of the same forward. */
    gf_tensor dy;
    int64_t ds[2] = {n, 1};
    REQUIRE(gf_tensor_init(&dy, GF_F32, GF_DEV_CPU, 2, ds, &err) == GF_OK);
    memcpy(dy.data, gv, sizeof gv);
    d_out_dot(&d, ctx, &x, gv);
    REQUIRE(gf_net_backward(&d, ctx, &dy, NULL, true, GF_OVERWRITE, &err) == GF_OK);
    float *w = w0->value.data, *gw = w0->grad.data;
    int64_t wn = gf_tensor_numel(&w0->value);
    double worst = 0, gmax = 0;
    for (int64_t i = 0; i < wn; i++) gmax = fmax(gmax, fabs(gw[i]));
    for (int64_t k = 0; k < 12; k++) {
      int64_t i = (k * 7919) % wn;
      float keep = w[i];
      float h = 1e-4f;
      w[i] = keep + h;
      double fp = d_out_dot(&d, ctx, &x, gv);
      w[i] = keep - h;
      double fm = d_out_dot(&d, ctx, &x, gv);
      w[i] = keep;
      double num = (fp - fm) / (2.0 * (double)h);
      worst = fmax(worst, fabs(num - gw[i]) / (gmax + 1e-12));
    }
    CHECKF(worst < 2e-2, "arch %d: SN weight gradient off by %g of its largest entry", arch,
           worst);
    /* GF_ACCUMULATE adds the same gradient again. */
    float g_first = gw[0];
    d_out_dot(&d, ctx, &x, gv);
    REQUIRE(gf_net_backward(&d, ctx, &dy, NULL, true, GF_ACCUMULATE, &err) == GF_OK);
    CHECKF(fabsf(gw[0] - 2 * g_first) <= 1e-6f * fabsf(g_first) + 1e-12f, "accumulate %g vs %g",
           gw[0], 2 * g_first);
    gf_tensor_free(&dy);
    gf_tensor_free(&x);
    gf_net_free(&d);
    gf_net_free(&dp);
    gf_net_free(&g);
  }
}

/* Class conditioning (cfg.num_classes): G's conditional batch norms and
 * shared embedding, D's projection; labels required; every conditioning
 * parameter's gradient against central differences; the class changes
 * the output. */
static double g_out_dot(gf_net *g, gf_ctx *ctx, const gf_tensor *z, const float *gv) {
  gf_err err = {0};
  gf_tensor y;
  REQUIRE(gf_net_forward(g, ctx, z, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_OK);
  double s = 0;
  for (int64_t i = 0; i < gf_tensor_numel(&y); i++) s += (double)((float *)y.data)[i] * gv[i];
  return s;
}

/* Worst |numeric - analytic| / max|analytic| over a few entries of p. */
static double fd_check(gf_net *net, gf_ctx *ctx, const gf_tensor *in, const float *gv,
                       gf_param *p, bool is_g) {
  float *w = p->value.data, *gw = p->grad.data;
  int64_t wn = gf_tensor_numel(&p->value);
  double worst = 0, gmax = 0;
  for (int64_t i = 0; i < wn; i++) gmax = fmax(gmax, fabs(gw[i]));
  for (int64_t k = 0; k < 8; k++) {
    int64_t i = (k * 7919 + 3) % wn;
    float keep = w[i];
    const float h = 1e-3f;
    w[i] = keep + h;
    double fp = is_g ? g_out_dot(net, ctx, in, gv) : d_out_dot(net, ctx, in, gv);
    w[i] = keep - h;
    double fm = is_g ? g_out_dot(net, ctx, in, gv) : d_out_dot(net, ctx, in, gv);
    w[i] = keep;
    double num = (fp - fm) / (2.0 * (double)h);
    worst = fmax(worst, fabs(num - gw[i]) / (gmax + 1e-12));
  }
  return worst;
}

static void test_conditional(gf_ctx *ctx) {
  gf_err err = {0};
  const int n = 4, K = 3;
  for (int arch = 0; arch < 3; arch++) { /* mlp, dcgan, resnet */
    gf_model_config c = arch == 2 ? cfg_of(GF_ARCH_RESNET, 28, 1, 8, 4, 4)
                        : arch    ? cfg_of(GF_ARCH_DCGAN, 28, 1, 8, 4, 4)
                                  : cfg_of(GF_ARCH_MLP, 8, 1, 8, 1, 1);
    c.num_classes = K;
    gf_net g, d;
    build(&g, ctx, &c, GF_NET_G, n, true);
    build(&d, ctx, &c, GF_NET_D, n, true);
    REQUIRE(gf_net_init_params(&g, 5, &err) == GF_OK);
    REQUIRE(gf_net_init_params(&d, 5, &err) == GF_OK);
    gf_param *shared = gf_net_find(&g, "g.shared.weight"), *embed = gf_net_find(&d, "d.embed.weight");
    gf_param *gain_b = gf_net_find(&g, "g.main.1.gain.bias"), *gain_w = gf_net_find(&g, "g.main.1.gain.weight");
    gf_param *bias_w = gf_net_find(&g, "g.main.1.bias.weight");
    REQUIRE(shared && embed && gain_b && gain_w && bias_w);
    CHECK(shared->value.shape[0] == K && shared->value.shape[1] == GF_COND_EMBED_DIM);
    CHECK(gf_net_find(&g, "g.main.1.weight") == NULL); /* no plain BN affine */
    CHECK(((float *)gain_b->value.data)[0] == 1.0f);
    gf_tensor z, x, lab;
    int64_t zs[2] = {n, c.z_dim}, xs[4] = {n, c.image_channels, c.image_height, c.image_width};
    int64_t ls = n;
    REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
    REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
    REQUIRE(gf_tensor_init(&lab, GF_I32, GF_DEV_CPU, 1, &ls, &err) == GF_OK);
    REQUIRE(gf_latent_sample(&z, 1, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
    REQUIRE(gf_latent_sample(&x, 2, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
    int32_t *lp = lab.data;
    for (int i = 0; i < n; i++) lp[i] = (i * 2 + 1) % K;
    gf_tensor y;
    /* without labels: refused */
    CHECK(gf_net_forward(&g, ctx, &z, GF_MODE_TRAIN, 0, 0, 0, 0, &y, &err) == GF_ESTATE);
    lp[0] = K;
    CHECK(gf_net_set_labels(&g, &lab, &err) == GF_EINVAL); /* out of range */
    lp[0] = 1;
    REQUIRE(gf_net_set_labels(&g, &lab, &err) == GF_OK);
    REQUIRE(gf_net_set_labels(&d, &lab, &err) == GF_OK);
    /* gradients of sum(G(z) gv) and sum(D(x) dv) */
    int64_t gn = n * c.image_channels * c.image_height * c.image_width;
    float *gv = malloc((size_t)gn * sizeof(float));
    REQUIRE(gv != NULL);
    for (int64_t i = 0; i < gn; i++) gv[i] = (float)((i * 37) % 11) / 11.0f - 0.45f;
    gf_tensor dy;
    REQUIRE(gf_tensor_init(&dy, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
    memcpy(dy.data, gv, (size_t)gn * sizeof(float));
    g_out_dot(&g, ctx, &z, gv);
    REQUIRE(gf_net_backward(&g, ctx, &dy, NULL, true, GF_OVERWRITE, &err) == GF_OK);
    gf_param *gp[3] = {shared, gain_w, bias_w};
    for (int k = 0; k < 3; k++) {
      double w = fd_check(&g, ctx, &z, gv, gp[k], true);
      CHECKF(w < 2e-2, "arch %d: %s gradient off by %g of its largest entry", arch,
             gp[k]->name, w);
    }
    float dv[4] = {0.5f, -1.0f, 0.25f, 0.75f};
    gf_tensor dd;
    int64_t ds[2] = {n, 1};
    REQUIRE(gf_tensor_init(&dd, GF_F32, GF_DEV_CPU, 2, ds, &err) == GF_OK);
    memcpy(dd.data, dv, sizeof dv);
    d_out_dot(&d, ctx, &x, dv);
    gf_tensor dx;
    REQUIRE(gf_tensor_init(&dx, GF_F32, GF_DEV_CPU, 4, xs, &err) == GF_OK);
    REQUIRE(gf_net_backward(&d, ctx, &dd, &dx, true, GF_OVERWRITE, &err) == GF_OK);
    double w = fd_check(&d, ctx, &x, dv, embed, false);
    CHECKF(w < 2e-2, "arch %d: d.embed gradient off by %g", arch, w);
    /* dx through the projection: central differences on x */
    float *xp = x.data, *dxp = dx.data;
    double worst = 0, gmax = 0;
    for (int64_t i = 0; i < gn; i++) gmax = fmax(gmax, fabs(dxp[i]));
    for (int64_t k = 0; k < 8; k++) {
      int64_t i = (k * 613 + 5) % gn;
      float keep = xp[i];
      xp[i] = keep + 1e-3f;
      double fp = d_out_dot(&d, ctx, &x, dv);
      xp[i] = keep - 1e-3f;
      double fm = d_out_dot(&d, ctx, &x, dv);
      xp[i] = keep;
      worst = fmax(worst, fabs((fp - fm) / 2e-3 - dxp[i]) / (gmax + 1e-12));
    }
    CHECKF(worst < 2e-2, "arch %d: D's dx off by %g", arch, worst);
    /* the class matters: other labels, other images and logits */
    gf_tensor y1;
    REQUIRE(gf_net_forward(&g, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y1, &err) == GF_OK);
    float first = ((float *)y1.data)[0];
    lp[0] = (lp[0] + 1) % K;
    REQUIRE(gf_net_forward(&g, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y1, &err) == GF_OK);
    CHECK(((float *)y1.data)[0] != first);
    /* R1 takes a conditional D (its projection term) without batch norm */
    CHECK(gf_net_r1(&d, ctx, &x, 1.0f, 0, 0, 0, 3, NULL, &err) ==
          (arch == 1 ? GF_EUNSUPPORTED : GF_OK));
    free(gv);
    gf_tensor_free(&dy);
    gf_tensor_free(&dd);
    gf_tensor_free(&dx);
    gf_tensor_free(&z);
    gf_tensor_free(&x);
    gf_tensor_free(&lab);
    gf_net_free(&g);
    gf_net_free(&d);
  }
}

/* Weights alone and nets that share them: each shared net's forward gives
 * the bytes of a net that owns the same values, its tensors are views of
 * the weights' (a change there shows in every sharer), it holds only its
 * activations, and what would write the weights or read missing
 * activations is refused. */
static void test_shared(gf_ctx *ctx) {
  gf_err err = {0};
  for (int arch = 0; arch < 2; arch++) {
    gf_model_config c = arch ? cfg_of(GF_ARCH_DCGAN, 28, 1, 8, 4, 4)
                             : cfg_of(GF_ARCH_MLP, 8, 1, 8, 1, 1);
    const int n = 3;
    gf_net own, w, a, b;
    build(&own, ctx, &c, GF_NET_G, n, false);
    REQUIRE(gf_net_init_params(&own, 9, &err) == GF_OK);
    build(&w, ctx, &c, GF_NET_G, 0, false); /* weights alone */
    CHECK_INT_EQ(w.acts.cap, 0);
    CHECK_INT_EQ(w.params.cap, own.params.cap);
    REQUIRE(gf_net_init_params(&w, 9, &err) == GF_OK);
    REQUIRE(gf_net_init_shared(&a, ctx, &w, n, &err) == GF_OK);
    REQUIRE(gf_net_init_shared(&b, ctx, &w, 1, &err) == GF_OK);
    CHECK_INT_EQ(a.n_tensors, w.n_tensors);
    for (int i = 0; i < w.n_tensors; i++) {
      CHECK(a.tensors[i].value.data == w.tensors[i].value.data);
      CHECK(b.tensors[i].value.data == w.tensors[i].value.data);
      CHECK(!a.tensors[i].value.owns);
    }
    CHECK_INT_EQ(a.params.cap + a.bn_stats.cap, 0); /* no copy of them */
    CHECK(gf_net_arena_bytes(&a) == a.acts.cap && a.acts.cap > 0);
    CHECK_INT_EQ(gf_net_arena_bytes(&a), gf_net_arena_bytes(&own) - own.params.cap -
                                             own.bn_stats.cap);
    gf_tensor z, y0, y1;
    int64_t zs[2] = {n, c.z_dim};
    REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
    REQUIRE(gf_latent_sample(&z, 4, GF_RNG_SAMPLE, 0, 0, &err) == GF_OK);
    REQUIRE(gf_net_forward(&own, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y0, &err) == GF_OK);
    REQUIRE(gf_net_forward(&a, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y1, &err) == GF_OK);
    size_t bytes = (size_t)gf_tensor_numel(&y0) * sizeof(float);
    CHECKF(memcmp(y0.data, y1.data, bytes) == 0, "arch %d: a sharing net's forward "
           "differs from the owning net's", arch);
    /* the values are the weights': a change shows in the sharer */
    ((float *)w.tensors[0].value.data)[0] += 0.5f;
    REQUIRE(gf_net_forward(&a, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y1, &err) == GF_OK);
    CHECK(memcmp(y0.data, y1.data, bytes) != 0);
    /* refusals */
    CHECK_INT_EQ(gf_net_forward(&w, ctx, &z, GF_MODE_INFER, 0, 0, 0, 0, &y1, &err),
                 GF_ESTATE);
    CHECK_INT_EQ(gf_net_init_params(&a, 1, &err), GF_ESTATE);
    gf_net c2;
    CHECK_INT_EQ(gf_net_init_shared(&c2, ctx, &a, 1, &err), GF_EINVAL); /* a sharer */
    CHECK_INT_EQ(gf_net_init_shared(&c2, ctx, &w, 0, &err), GF_EINVAL);
    CHECK_INT_EQ(gf_net_init(&c2, ctx, &c, GF_NET_G, 0, true, &err), GF_EINVAL);
    gf_net_free(&c2);
    gf_tensor_free(&z);
    gf_net_free(&a);
    gf_net_free(&b);
    /* the sharers are gone, the weights untouched */
    CHECK(((float *)w.tensors[0].value.data)[0] ==
          ((float *)own.tensors[0].value.data)[0] + 0.5f);
    gf_net_free(&w);
    gf_net_free(&own);
  }
}

int main(void) {
  gf_ctx ctx;
  gf_err err = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  test_counts(&ctx);
  test_dcgan_variants(&ctx);
  test_resnet(&ctx);
  test_names_and_layout(&ctx);
  test_init(&ctx);
  test_forward_backward(&ctx);
  test_dropout_keys(&ctx);
  test_spectral_norm(&ctx);
  test_conditional(&ctx);
  test_shared(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
