/* fuzz_sg2_state.c - fuzz target for the StyleGAN2 training-state reader
 * (gf_sg2_gan_load_buffer, gf/sg2_gan.h) on a small config (FUZZ_CONFIG
 * below; the seed corpus was saved from it): any input must give GF_OK or
 * an error with a message, and a refused input must leave the state as it
 * was (its step, image count and p). The digest check is off so that
 * mutated inputs reach the reader's own checks. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gf/sg2_gan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The gan every input loads into, built on the first call (the harness's
 * state; library code keeps none). */
static gf_ctx g_ctx;
static gf_sg2_gan g_gan;
static int g_ready;

static void build(void) {
  gf_err err;
  gf_ctx_config cc = {.backend = GF_BACKEND_CPU, .nthreads = 1};
  gf_sg2_config c;
  if (gf_ctx_init(&g_ctx, &cc, &err) ||
      gf_sg2_config_preset(&c, NULL, GF_SG2_AUTO, 32, 1, 0, 1, &err))
    __builtin_trap();
  /* FUZZ_CONFIG */
  c.z_dim = c.w_dim = 4;
  c.channel_base = 64;
  c.channel_max = 2;
  c.map_layers = c.d_map_layers = 1;
  c.mbstd_group = 2;
  gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(NULL);
  if (gf_sg2_gan_init(&g_gan, &g_ctx, &c, &hp, 2, 2, 1, &err))
    __builtin_trap();
  g_ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_ready) build();
  gf_err err;
  err.msg[0] = '\0';
  int64_t step = g_gan.step, nimg = g_gan.cur_nimg;
  float p = g_gan.ctl.p;
  gf_status st = gf_sg2_gan_load_buffer(&g_gan, data, size, 0, &err);
  if (st != GF_OK) {
    if (err.msg[0] == '\0') __builtin_trap();
    if (g_gan.step != step || g_gan.cur_nimg != nimg ||
        memcmp(&g_gan.ctl.p, &p, sizeof p) != 0)
      __builtin_trap();
  } else if (g_gan.step < 0 || g_gan.cur_nimg < 0 || !(g_gan.ctl.p >= 0)) {
    __builtin_trap();
  }
  return 0;
}
