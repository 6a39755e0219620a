/* test_sg2_config.c - the StyleGAN2 sizes and presets (gf/sg2_config.h):
 * each preset's numbers as stylegan2-ada-pytorch's train.py documents them
 * (its --cfg table, and 'auto' at 32, 256, 512 and 1024 px on 1 and 8
 * ranks), the channel rule, num_ws, and every invalid field named. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gf/sg2_config.h"

static void expect(gf_sg2_preset p, int res, int ranks, int batch, int mbstd,
                   int channel_base, float lr, float gamma, float ema,
                   float ramp, int map, int resnet, float plw) {
  gf_sg2_config c;
  gf_sg2_recipe r;
  gf_err err = {0};
  CHECKF(gf_sg2_config_preset(&c, &r, p, res, 3, 0, ranks, &err) == GF_OK,
         "%s at %d: %s", gf_sg2_preset_name(p), res, err.msg);
  CHECKF(r.batch == batch && c.mbstd_group == mbstd,
         "%s %d px %d ranks: batch %d group %d, want %d %d",
         gf_sg2_preset_name(p), res, ranks, r.batch, c.mbstd_group, batch,
         mbstd);
  CHECKF(c.channel_base == channel_base && c.channel_max == 512,
         "%s: channel_base %d, want %d", gf_sg2_preset_name(p),
         c.channel_base, channel_base);
  CHECKF(r.lr == lr && fabsf(r.r1_gamma - gamma) <= 1e-6f * gamma &&
             r.ema_kimg == ema && r.ema_rampup == ramp,
         "%s %d px: lr %g gamma %g ema %g ramp %g", gf_sg2_preset_name(p),
         res, (double)r.lr, (double)r.r1_gamma, (double)r.ema_kimg,
         (double)r.ema_rampup);
  CHECKF(c.map_layers == map && c.d_resnet == resnet && r.pl_weight == plw,
         "%s: map %d resnet %d pl %g", gf_sg2_preset_name(p), c.map_layers,
         c.d_resnet, (double)r.pl_weight);
  CHECK(c.z_dim == 512 && c.w_dim == 512 && c.conv_clamp == 256.0f);
  CHECK(c.map_lr_mul == 0.01f && c.w_avg_beta == 0.995f && c.d_map_layers == 8);
}

int main(void) {
  /* The fixed presets (train.py's cfg_specs). */
  expect(GF_SG2_STYLEGAN2, 1024, 8, 32, 4, 32768, 0.002f, 10.0f, 10.0f, 0.0f, 8, 1, 2.0f);
  expect(GF_SG2_PAPER256, 256, 8, 64, 8, 16384, 0.0025f, 1.0f, 20.0f, 0.0f, 8, 1, 2.0f);
  expect(GF_SG2_PAPER512, 512, 8, 64, 8, 32768, 0.0025f, 0.5f, 20.0f, 0.0f, 8, 1, 2.0f);
  expect(GF_SG2_PAPER1024, 1024, 8, 32, 4, 65536, 0.002f, 2.0f, 10.0f, 0.0f, 8, 1, 2.0f);
  expect(GF_SG2_CIFAR, 32, 2, 64, 32, 32768, 0.0025f, 0.01f, 500.0f, 0.05f, 2, 0, 0.0f);
  /* auto: batch max(min(gpus min(4096/res, 32), 64), gpus), group
   * min(batch/gpus, 4), fmaps 0.5 below 512, gamma 0.0002 res^2 / batch,
   * ema batch 10/32. */
  expect(GF_SG2_AUTO, 32, 1, 32, 4, 16384, 0.0025f, 0.0002f * 1024 / 32, 10.0f, 0.05f, 2, 1, 2.0f);
  expect(GF_SG2_AUTO, 256, 1, 16, 4, 16384, 0.0025f, 0.0002f * 65536 / 16, 5.0f, 0.05f, 2, 1, 2.0f);
  expect(GF_SG2_AUTO, 256, 8, 64, 4, 16384, 0.0025f, 0.0002f * 65536 / 64, 20.0f, 0.05f, 2, 1, 2.0f);
  expect(GF_SG2_AUTO, 512, 8, 64, 4, 32768, 0.0025f, 0.0002f * 262144 / 64, 20.0f, 0.05f, 2, 1, 2.0f);
  expect(GF_SG2_AUTO, 1024, 8, 32, 4, 32768, 0.002f, 0.0002f * 1048576 / 32, 10.0f, 0.05f, 2, 1, 2.0f);
  expect(GF_SG2_AUTO, 1024, 1, 4, 4, 32768, 0.002f, 0.0002f * 1048576 / 4, 1.25f, 0.05f, 2, 1, 2.0f);

  /* Names round-trip; an unknown one lists the choices. */
  gf_err err = {0};
  for (int i = 0; i < GF_SG2_N_PRESETS; i++) {
    gf_sg2_preset p;
    CHECK(gf_sg2_preset_parse(gf_sg2_preset_name((gf_sg2_preset)i), &p, &err) == GF_OK &&
          p == (gf_sg2_preset)i);
  }
  gf_sg2_preset p;
  CHECK(gf_sg2_preset_parse("paper2048", &p, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "paper2048") && strstr(err.msg, "cifar"));
  CHECK(gf_sg2_preset_parse(NULL, &p, &err) == GF_EINVAL);

  /* Channels min(base / res, max), num_ws 2 log2(res) - 2. */
  gf_sg2_config c;
  REQUIRE(gf_sg2_config_preset(&c, NULL, GF_SG2_PAPER256, 256, 3, 0, 8, &err) == GF_OK);
  CHECK(gf_sg2_channels(&c, 4) == 512 && gf_sg2_channels(&c, 32) == 512 &&
        gf_sg2_channels(&c, 64) == 256 && gf_sg2_channels(&c, 256) == 64);
  CHECK(gf_sg2_num_ws(&c) == 14 && gf_sg2_log2_res(&c) == 8);
  c.img_resolution = 32;
  CHECK(gf_sg2_num_ws(&c) == 8);
  c.img_resolution = 1024;
  CHECK(gf_sg2_num_ws(&c) == 18);

  /* Sizes outside the supported ones, and every field named. */
  CHECK(gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 16, 3, 0, 1, &err) == GF_EINVAL);
  CHECK(gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 48, 3, 0, 1, &err) == GF_EINVAL);
  CHECK(gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 2048, 3, 0, 1, &err) == GF_EINVAL);
  CHECK(gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 64, 3, 0, 0, &err) == GF_EINVAL);
  CHECK(gf_sg2_config_preset(&c, NULL, GF_SG2_N_PRESETS, 64, 3, 0, 1, &err) == GF_EINVAL);
#define SPOIL(field, value)                                                  \
  do {                                                                       \
    REQUIRE(gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 64, 3, 0, 1, &err) == GF_OK); \
    c.field = value;                                                         \
    CHECKF(gf_sg2_config_validate(&c, &err) == GF_EINVAL &&                  \
               strstr(err.msg, #field) != NULL,                              \
           "%s = %s: %s", #field, #value, err.msg);                          \
  } while (0)
  SPOIL(z_dim, 0);
  SPOIL(w_dim, 5000);
  SPOIL(c_dim, -1);
  SPOIL(img_channels, 5);
  SPOIL(img_resolution, 96);
  SPOIL(map_layers, 0);
  SPOIL(d_map_layers, 0);
  SPOIL(channel_max, 0);
  SPOIL(channel_base, 32);
  SPOIL(mbstd_group, 0);
  SPOIL(mbstd_channels, -1);
  SPOIL(d_resnet, 2);
  SPOIL(map_lr_mul, 0.0f);
  SPOIL(map_lr_mul, NAN);
  SPOIL(w_avg_beta, 1.5f);
  SPOIL(conv_clamp, -1.0f);
  SPOIL(conv_clamp, INFINITY);
#undef SPOIL
  return check_report();
}
