/* test_gan_step.c - gf_gan_step (gf/gan.h): two GANs built and initialised
 * alike and fed the same batches end bit-identical after several steps
 * (every arena compared byte for byte), for mlp (dropout) and dcgan; the
 * step depends on (seed, step): another step index draws other latents
 * and masks; losses are sane at init; the Adam step counts advance. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gf/gan.h"

static void fill_real(gf_tensor *x, int64_t step) {
  float *p = x->data;
  int64_t n = gf_tensor_numel(x);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)(((i * 2654435761u + (uint64_t)step * 97u) >> 7) % 255) / 127.0f - 1.0f;
}

static int same_arena(const gf_arena *a, const gf_arena *b) {
  return a->used == b->used && (a->used == 0 || memcmp(a->base, b->base, a->used) == 0);
}

static int same_net(const gf_net *a, const gf_net *b) {
  return same_arena(&a->params, &b->params) && same_arena(&a->grads, &b->grads) &&
         same_arena(&a->adam_m, &b->adam_m) && same_arena(&a->adam_v, &b->adam_v) &&
         same_arena(&a->bn_stats, &b->bn_stats);
}

static void run(gf_ctx *ctx, const gf_model_config *c, int n, const char *what) {
  gf_err err = {0};
  gf_gan a, b;
  gf_status st = gf_gan_init(&a, ctx, c, NULL, n, &err);
  if (st) fprintf(stderr, "%s: %s\n", what, err.msg);
  REQUIRE(st == GF_OK);
  REQUIRE(gf_gan_init(&b, ctx, c, NULL, n, &err) == GF_OK);
  REQUIRE(gf_gan_init_params(&a, 2024, &err) == GF_OK);
  REQUIRE(gf_gan_init_params(&b, 2024, &err) == GF_OK);
  CHECK(same_net(&a.g, &b.g) && same_net(&a.d, &b.d));
  gf_tensor real;
  int64_t rs[4] = {n, c->image_channels, c->image_height, c->image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  gf_gan_stats sa, sb;
  for (int64_t step = 0; step < 3; step++) {
    fill_real(&real, step);
    st = gf_gan_step(&a, ctx, &real, NULL, 99, step, 0, &sa, &err);
    if (st) fprintf(stderr, "%s: %s\n", what, err.msg);
    REQUIRE(st == GF_OK);
    REQUIRE(gf_gan_step(&b, ctx, &real, NULL, 99, step, 0, &sb, &err) == GF_OK);
    CHECKF(memcmp(&sa, &sb, sizeof sa) == 0, "%s step %lld: stats differ", what, (long long)step);
    CHECKF(same_net(&a.g, &b.g), "%s step %lld: G differs", what, (long long)step);
    CHECKF(same_net(&a.d, &b.d), "%s step %lld: D differs", what, (long long)step);
    CHECK(isfinite(sa.loss_d) && isfinite(sa.loss_g) && sa.loss_d > 0 && sa.loss_g > 0);
    CHECK(sa.d_real > 0 && sa.d_real < 1 && sa.d_fake > 0 && sa.d_fake < 1);
    CHECK(sa.d_fake_after > 0 && sa.d_fake_after < 1);
    CHECK(fabs(sa.loss_d - sa.loss_d_real - sa.loss_d_fake) < 1e-12);
    if (step == 0) {
      /* At init D knows nothing: both terms near ln 2 (loose: init
       * logits are not exactly 0). */
      CHECKF(sa.loss_d_real > 0.2 && sa.loss_d_real < 2.5, "%s loss_d_real %g", what,
             sa.loss_d_real);
      CHECKF(sa.loss_g > 0.2 && sa.loss_g < 3, "%s loss_g %g", what, sa.loss_g);
    }
  }
  CHECK_INT_EQ(a.adam_step_g, 3);
  CHECK_INT_EQ(a.adam_step_d, 3);
  /* The same state with another step index (other z and masks) diverges;
   * an explicit z equal to the drawn one reproduces the drawn run. */
  fill_real(&real, 3);
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 3, 0, &sa, &err) == GF_OK);
  gf_tensor z;
  int64_t zs[2] = {n, c->z_dim};
  REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  memcpy(z.data, a.z, gf_tensor_nbytes(&z));
  REQUIRE(gf_gan_step(&b, ctx, &real, &z, 99, 3, 0, &sb, &err) == GF_OK);
  CHECKF(same_net(&a.g, &b.g) && same_net(&a.d, &b.d), "%s: explicit z differs", what);
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 4, 0, &sa, &err) == GF_OK);
  REQUIRE(gf_gan_step(&b, ctx, &real, NULL, 99, 5, 0, &sb, &err) == GF_OK);
  CHECKF(!same_arena(&a.g.params, &b.g.params), "%s: step index ignored", what);
  /* Latents are keyed by the global sample index: a slice that starts at
   * sample 1 draws the whole batch's rows shifted by one. */
  gf_gan_stats s0, s1;
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 6, 0, &s0, &err) == GF_OK);
  float z0 = a.z[0], z1 = a.z[c->z_dim];
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 6, 1, &s1, &err) == GF_OK);
  CHECK(a.z[0] != z0);
  CHECK(a.z[0] == z1);
  /* Bad batches are refused. */
  int64_t one[4] = {1, c->image_channels, c->image_height, c->image_width};
  gf_tensor small;
  REQUIRE(gf_tensor_init(&small, GF_F32, GF_DEV_CPU, 4, one, &err) == GF_OK);
  CHECK(gf_gan_step(&a, ctx, &small, NULL, 1, 0, 0, NULL, &err) == GF_EINVAL);
  gf_tensor_free(&small);
  gf_tensor_free(&z);
  gf_tensor_free(&real);
  gf_gan_free(&a);
  gf_gan_free(&b);
  gf_gan_free(&b);
  gf_gan_free(NULL);
}

int main(void) {
  gf_ctx ctx;
  gf_err err = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_MLP);
  c.z_dim = 50;
  run(&ctx, &c, 8, "mlp");
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  c.image_height = c.image_width = 28;
  c.image_channels = 1;
  c.z_dim = 16;
  c.ngf = c.ndf = 8;
  run(&ctx, &c, 4, "dcgan28");
  c.image_height = c.image_width = 32;
  c.image_channels = 3;
  run(&ctx, &c, 4, "dcgan32");
  gf_ctx_free(&ctx);
  return check_report();
}
