/* test_cuda_host.c - the host side of the CUDA backend, on any machine
 * (label unit; runs in CI without a GPU): the backend module
 * (libganflow_cuda.so) loads from the build tree and its dispatch table is
 * complete;
 * workspace growth and layout; the algorithm filter under the
 * deterministic / TF32 rules; the bounded algorithm cache; device-string
 * parsing; and the error paths: without a GPU, a CUDA ctx, CUDA tensors,
 * arenas and copies fail with GF_EDEVICE and "no CUDA device: ..." and
 * leave nothing to free; with one, a missing ordinal does. The planning
 * functions (cuda/cuda_plan.c, host C inside the module) are compiled into
 * this test. */
#include <stdint.h>

#include "backend.h"
#include "check.h"
#include "cuda/cuda_plan.h"
#include "cuda_loader.h"
#include "gf/comm.h"
#include "kt_util.h"

static void test_table(void) {
  const gf_cuda_module *m = NULL;
  gf_err e = {0};
  gf_status st = gf_cuda_module_get(&m, &e);
  if (st != GF_OK) fprintf(stderr, "CUDA module: %s\n", e.msg);
  REQUIRE(st == GF_OK);
  CHECK(m->nccl != NULL || !gf_comm_built(GF_COMM_NCCL));
  const gf_backend_ops *o = m->backend;
  CHECK_STR_EQ(o->name, "cuda");
  const void *fns[] = {
      (const void *)o->init,         (const void *)o->fini,
      (const void *)o->stats,        (const void *)o->sync,
      (const void *)o->linear_fwd,   (const void *)o->linear_bwd,
      (const void *)o->conv2d_fwd,   (const void *)o->conv2d_bwd,
      (const void *)o->deconv2d_fwd, (const void *)o->deconv2d_bwd,
      (const void *)o->bn_fwd_train, (const void *)o->bn_fwd_infer,
      (const void *)o->bn_bwd,       (const void *)o->bn_bwd_dx,
      (const void *)o->act_fwd,      (const void *)o->act_bwd,
      (const void *)o->dropout,      (const void *)o->bce_fwd,
      (const void *)o->bce_bwd,      (const void *)o->adam,
      (const void *)o->pool_fwd,     (const void *)o->resize_bilinear,
      (const void *)o->copy_channels,
      (const void *)o->fill,         (const void *)o->copy,
      (const void *)o->hinge_fwd,    (const void *)o->hinge_bwd,
      (const void *)o->mean_fwd,     (const void *)o->lerp,
      (const void *)o->spectral_norm_fwd,
      (const void *)o->spectral_norm_bwd,
      (const void *)o->augment_fwd,  (const void *)o->augment_bwd,
      (const void *)o->embedding_fwd,
      (const void *)o->embedding_bwd,
      (const void *)o->channel_affine_fwd,
      (const void *)o->channel_affine_bwd,
      (const void *)o->rowdot_fwd,   (const void *)o->rowdot_bwd,
      (const void *)o->upsample_nearest2x_fwd,
      (const void *)o->upsample_nearest2x_bwd,
      (const void *)o->avgpool2d_bwd, (const void *)o->add,
      (const void *)o->upfirdn2d,
      (const void *)o->modconv_weight_fwd,
      (const void *)o->modconv_weight_bwd,
      (const void *)o->conv2d_batched_fwd,
      (const void *)o->conv2d_batched_bwd,
      (const void *)o->bias_act_fwd, (const void *)o->bias_act_bwd,
      (const void *)o->mbstd_fwd,    (const void *)o->mbstd_bwd,
      (const void *)o->noise_add_fwd, (const void *)o->noise_add_bwd,
      (const void *)o->pad_reflect_fwd, (const void *)o->pad_reflect_bwd,
      (const void *)o->affine_sample_fwd, (const void *)o->affine_sample_bwd,
      (const void *)o->color4_fwd, (const void *)o->color4_bwd,
      (const void *)o->mbstd_jvp, (const void *)o->mbstd_bwd_jvp,
      (const void *)o->modconv_demod_jvp};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    CHECKF(fns[i] != NULL, "entry %zu of the CUDA table is NULL", i);
  /* every op of the CPU table has a CUDA twin */
  CHECK(sizeof fns / sizeof fns[0] ==
        (sizeof(gf_backend_ops) - sizeof(const char *)) / sizeof(void (*)(void)));
}

static void test_ws(void) {
  CHECK_INT_EQ(gf_cuda_ws_grow(0, 1), GF_CUDA_WS_MIN);
  CHECK_INT_EQ(gf_cuda_ws_grow(4 << 20, 100), 4 << 20); /* enough: kept */
  CHECK_INT_EQ(gf_cuda_ws_grow(4 << 20, (4 << 20) + 1), 6 << 20); /* 1.5x */
  CHECK_INT_EQ(gf_cuda_ws_grow(1 << 20, 10 << 20), 10 << 20); /* need */
  CHECK(gf_cuda_ws_grow(0, SIZE_MAX - 3) >= SIZE_MAX - 3);
  size_t sizes[4] = {10, 0, 256, 257}, off[4];
  size_t total = 1;
  CHECK_INT_EQ(gf_cuda_ws_layout(sizes, 4, off, &total), 0);
  CHECK_INT_EQ(off[0], 0);
  CHECK_INT_EQ(off[1], 256);
  CHECK_INT_EQ(off[2], 256);
  CHECK_INT_EQ(off[3], 512);
  CHECK_INT_EQ(total, 512 + 512);
  for (int i = 0; i < 4; i++) CHECK(off[i] % GF_CUDA_WS_ALIGN == 0);
  size_t big[2] = {SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1};
  CHECK_INT_EQ(gf_cuda_ws_layout(big, 2, off, &total), -1); /* overflow */
  CHECK_INT_EQ(gf_cuda_ws_layout(sizes, 0, off, &total), 0);
  CHECK_INT_EQ(total, 0);
  /* Nothing needed (affine batch norm at inference) is no overflow. */
  size_t none[2] = {0, 0};
  total = 1;
  CHECK_INT_EQ(gf_cuda_ws_layout(none, 2, off, &total), 0);
  CHECK_INT_EQ(total, 0);
}

static void test_pick(void) {
  /* best first: nondeterministic fast, TF32, too big, deterministic FMA */
  gf_cuda_algo_cand c[5] = {
      {7, 1, 0, 0, 100},    {6, 1, 1, 1, 100}, {5, 1, 1, 0, 1 << 30},
      {4, 0, 1, 0, 0},      {1, 1, 1, 0, 4096}};
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 5, false, false, 1 << 20), 0);
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 5, true, false, 1 << 20), 4);
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 5, true, true, 1 << 20), 1);
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 5, true, false, SIZE_MAX), 2);
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 1, true, false, SIZE_MAX), -1);
  CHECK_INT_EQ(gf_cuda_pick_algo(c, 0, false, true, SIZE_MAX), -1);
}

static void test_cache(void) {
  static gf_cuda_algo_cache c; /* large: not on the stack */
  memset(&c, 0, sizeof c);
  gf_cuda_key k1, k2;
  int64_t v1[] = {64, 3, 28, 28, 1}, v2[] = {64, 3, 28, 28, 0};
  gf_cuda_key_make(&k1, 1, v1, 5);
  gf_cuda_key_make(&k2, 1, v2, 5);
  CHECK(gf_cuda_cache_find(&c, &k1) == NULL);
  gf_cuda_choice ch = {k1, 3, 0, 4096};
  gf_cuda_cache_put(&c, &ch);
  const gf_cuda_choice *f = gf_cuda_cache_find(&c, &k1);
  CHECK(f && f->algo == 3 && f->ws_bytes == 4096);
  CHECK(gf_cuda_cache_find(&c, &k2) == NULL); /* the flag is in the key */
  gf_cuda_key k3;
  gf_cuda_key_make(&k3, 2, v1, 5); /* same dims, other kind */
  CHECK(gf_cuda_cache_find(&c, &k3) == NULL);
  CHECK_INT_EQ(c.hits, 1);
  CHECK_INT_EQ(c.misses, 3);
  /* bounded: the oldest goes first */
  for (int i = 0; i < GF_CUDA_ALGO_CACHE_MAX; i++) {
    int64_t v[] = {i, 99};
    gf_cuda_choice e;
    gf_cuda_key_make(&e.key, 5, v, 2);
    e.algo = i;
    e.math = 0;
    e.ws_bytes = 0;
    gf_cuda_cache_put(&c, &e);
  }
  CHECK_INT_EQ(c.n, GF_CUDA_ALGO_CACHE_MAX);
  CHECK(gf_cuda_cache_find(&c, &k1) == NULL);
  int64_t vl[] = {GF_CUDA_ALGO_CACHE_MAX - 1, 99};
  gf_cuda_key kl;
  gf_cuda_key_make(&kl, 5, vl, 2);
  f = gf_cuda_cache_find(&c, &kl);
  CHECK(f && f->algo == GF_CUDA_ALGO_CACHE_MAX - 1);
  /* keys longer than the key holds are cut, not overrun */
  int64_t many[40] = {0};
  gf_cuda_key_make(&kl, 1, many, 40);
  CHECK_INT_EQ(kl.n, GF_CUDA_KEY_MAX);
}

static void test_parse(void) {
  int o = -2;
  gf_backend b = GF_BACKEND_CPU;
  gf_err e;
  CHECK(gf_device_parse("--device", "cuda", &b, &o, &e) == GF_OK &&
        b == GF_BACKEND_CUDA && o == -1);
  CHECK(gf_device_parse("--device", "cuda:3", &b, &o, &e) == GF_OK && o == 3);
  CHECK(gf_device_parse("--device", "cuda:1023", &b, &o, &e) == GF_OK &&
        o == 1023);
  CHECK(gf_device_parse("--device", "cpu", &b, &o, &e) == GF_OK &&
        b == GF_BACKEND_CPU && o == 0);
  const char *bad[] = {"gpu", "cuda:", "cuda:-1", "cuda:1x", "cudax",
                       "cuda:1024", "cuda: 1", "cuda:+1", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECKF(gf_device_parse("--device", bad[i], &b, &o, &e) == GF_EINVAL,
           "'%s' accepted", bad[i]);
    CHECKF(strncmp(e.msg, "--device: ", 10) == 0, "%s", e.msg);
  }
  CHECK(gf_device_parse("--device", NULL, &b, &o, &e) == GF_EINVAL);
}

/* Without a GPU every way into device memory fails cleanly; with one, an
 * ordinal that does not exist does. */
static void test_errors(void) {
  gf_err e = {0};
  gf_ctx ctx;
  gf_ctx_config cfg = {GF_BACKEND_CUDA, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_status st = gf_ctx_init(&ctx, &cfg, &e);
  int has_gpu = st == GF_OK;
  if (has_gpu) {
    gf_ctx_free(&ctx);
    cfg.device_index = 4096;
    st = gf_ctx_init(&ctx, &cfg, &e);
  }
  CHECK_INT_EQ(st, GF_EDEVICE);
  CHECKF(strncmp(e.msg, "no CUDA device: ", 16) == 0, "message: %s", e.msg);
  CHECK(ctx.ops == NULL && ctx.impl == NULL);
  gf_ctx_free(&ctx);
  printf("CUDA ctx without a device: %s\n", e.msg);

  int64_t shp[2] = {3, 4};
  gf_tensor t;
  gf_arena a;
  if (!has_gpu) {
    CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CUDA, 2, shp, &e) == GF_EDEVICE);
    CHECK(t.data == NULL && strstr(e.msg, "no CUDA device") != NULL);
    gf_tensor_free(&t);
    CHECK(gf_arena_init(&a, GF_DEV_CUDA, 1024, &e) == GF_EDEVICE);
    CHECK(a.base == NULL);
    gf_arena_free(&a);
  }
  CHECK(gf_tensor_init_on(&t, GF_F32, GF_DEV_CUDA, 4096, 2, shp, &e) ==
        GF_EDEVICE);
  CHECK(gf_arena_init_on(&a, GF_DEV_CUDA, 4096, 64, &e) == GF_EDEVICE);
  CHECK(gf_tensor_init_on(&t, GF_F32, GF_DEV_CPU, 1, 2, shp, &e) ==
        GF_EINVAL); /* the CPU has no ordinal 1 */

  /* copies: host to host works; a fake device tensor is refused on a
   * machine without a GPU (the copy goes through the CUDA runtime) */
  gf_tensor h1 = kt_tensor(2, 3, 4, 1, 1), h2 = kt_tensor(2, 4, 3, 1, 1);
  ((float *)h1.data)[5] = 2.5f;
  CHECK(gf_tensor_copy(&h2, &h1, &e) == GF_OK);
  CHECK(((float *)h2.data)[5] == 2.5f);
  gf_tensor h3 = kt_tensor(1, 5, 1, 1, 1);
  CHECK(gf_tensor_copy(&h3, &h1, &e) == GF_EINVAL); /* 12 vs 5 floats */
  if (!has_gpu) {
    gf_tensor fake = h2;
    fake.device = GF_DEV_CUDA;
    CHECK(gf_tensor_copy(&fake, &h1, &e) == GF_EDEVICE);
    CHECK(strstr(e.msg, "no CUDA device") != NULL ||
          strstr(e.msg, "cuda") != NULL);
  }
  /* a CUDA tensor given to a CPU ctx is refused before any backend code */
  gf_ctx cpu;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&cpu, &cc, &e) == GF_OK);
  gf_tensor dv = h2;
  dv.device = GF_DEV_CUDA;
  CHECK(gf_relu_fwd(&cpu, &h1, &dv, &e) == GF_EINVAL);
  CHECK(gf_ctx_sync(&cpu, &e) == GF_OK); /* CPU: nothing queued */
  gf_ctx_free(&cpu);
  gf_tensor_free(&h1);
  gf_tensor_free(&h2);
  gf_tensor_free(&h3);
}

int main(void) {
  CHECK(gf_cuda_built());
  test_table();
  test_ws();
  test_pick();
  test_cache();
  test_parse();
  test_errors();
  return check_report();
}
