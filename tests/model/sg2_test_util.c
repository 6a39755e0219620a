/* sg2_test_util.c - what test_sg2_nets.c and test_sg2_reg.c share to read
 * the StyleGAN2 goldens (sg2_test_util.h). Test code: exits on failure. */
#include "sg2_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An owned CPU f32 copy of golden tensor name; exits when missing. */
gf_tensor sg2t_gold(const gf_st_file *f, const char *name) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t || t->dtype != GF_ST_F32) {
    fprintf(stderr, "golden %s missing or not f32\n", name);
    exit(1);
  }
  int64_t shape[4] = {1, 1, 1, 1};
  int nd = t->ndim > 0 ? t->ndim : 1;
  for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
  gf_tensor g;
  gf_err err;
  if (gf_tensor_init(&g, GF_F32, GF_DEV_CPU, nd, shape, &err) != GF_OK) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  memcpy(g.data, t->data, t->nbytes);
  return g;
}

/* An owned copy of t (any device) on dev. */
gf_tensor sg2t_on_dev(const gf_tensor *t, gf_device dev) {
  gf_tensor d;
  gf_err err;
  if (gf_tensor_init(&d, GF_F32, dev, t->ndim, t->shape, &err) ||
      gf_tensor_copy(&d, t, &err)) {
    fprintf(stderr, "copy: %s\n", err.msg);
    exit(1);
  }
  return d;
}

void sg2t_ctx_cpu(gf_ctx *ctx, int threads) {
  gf_ctx_config cc = {.backend = GF_BACKEND_CPU, .nthreads = threads};
  gf_err err;
  if (gf_ctx_init(ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, "ctx: %s\n", err.msg);
    exit(1);
  }
}

int sg2t_ctx_cuda(gf_ctx *ctx) {
  gf_err err;
  if (gf_cuda_device_check(0, &err) != GF_OK) {
    printf("skipped: %s\n", err.msg);
    return 77;
  }
  gf_ctx_config cc = {.backend = GF_BACKEND_CUDA};
  if (gf_ctx_init(ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, "cuda ctx: %s\n", err.msg);
    exit(1);
  }
  return 0;
}

int sg2t_meta_int(const gf_st_file *f, const char *k) {
  const char *v = gf_st_meta_get(f, k);
  if (!v) {
    fprintf(stderr, "golden metadata %s missing\n", k);
    exit(1);
  }
  return atoi(v);
}

gf_sg2_config sg2t_tiny_config(void) {
  gf_sg2_config c;
  gf_err err;
  if (gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 32, 3, 0, 1, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  c.z_dim = c.w_dim = 32;
  c.channel_base = 256;
  c.channel_max = 16;
  c.map_layers = c.d_map_layers = 2;
  c.mbstd_group = 2;
  c.mbstd_channels = 1;
  c.conv_clamp = 0;
  c.d_resnet = 1;
  return c;
}

gf_sg2_config sg2t_case_config(const gf_st_file *f) {
  gf_sg2_config c;
  gf_err err;
  if (gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 32, 3, 0, 1, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  c.z_dim = sg2t_meta_int(f, "z_dim");
  c.w_dim = sg2t_meta_int(f, "w_dim");
  c.c_dim = sg2t_meta_int(f, "c_dim");
  c.img_resolution = sg2t_meta_int(f, "img_resolution");
  c.img_channels = sg2t_meta_int(f, "img_channels");
  c.channel_base = sg2t_meta_int(f, "channel_base");
  c.channel_max = sg2t_meta_int(f, "channel_max");
  c.map_layers = sg2t_meta_int(f, "map_layers");
  c.d_map_layers = sg2t_meta_int(f, "d_map_layers");
  c.mbstd_group = sg2t_meta_int(f, "mbstd_group");
  c.mbstd_channels = sg2t_meta_int(f, "mbstd_channels");
  c.conv_clamp = (float)atof(gf_st_meta_get(f, "conv_clamp"));
  const char *r = gf_st_meta_get(f, "d_resnet");
  c.d_resnet = r ? atoi(r) : 1;
  return c;
}
