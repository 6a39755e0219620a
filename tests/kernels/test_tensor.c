/* test_tensor.c - tensor descriptors, views, arenas and the ctx life cycle:
 * allocation and alignment, shape checks, free accepting NULL and views,
 * arena carving/alignment/exhaustion/reset/whole view, ctx init with
 * default and explicit thread counts, unsupported backends and dtypes,
 * errors filled in the caller's gf_err; i32 (label) tensors: size, name,
 * allocation, views, reshape, copy, arena slots, and the f32 ops refusing
 * them. */
#include "check.h"
#include "kt_util.h"

static void test_tensor(void) {
  gf_tensor t;
  gf_err e = {0};
  int64_t shp[4] = {2, 3, 5, 7};
  REQUIRE(gf_tensor_init(&t, GF_F32, GF_DEV_CPU, 4, shp, &e) == GF_OK);
  CHECK(t.owns && t.data && ((uintptr_t)t.data % GF_ALIGN) == 0);
  CHECK_INT_EQ(gf_tensor_numel(&t), 210);
  CHECK_INT_EQ(gf_tensor_nbytes(&t), 840);
  const float *p = t.data;
  int zero = 1;
  for (int i = 0; i < 210; i++) zero &= p[i] == 0.0f;
  CHECK(zero);
  gf_tensor v;
  int64_t flat[2] = {6, 35};
  CHECK(gf_tensor_reshape_view(&v, &t, 2, flat, &e) == GF_OK);
  CHECK(!v.owns && v.data == t.data && v.shape[2] == 1 && v.shape[3] == 1);
  int64_t bad[2] = {6, 36};
  CHECK(gf_tensor_reshape_view(&v, &t, 2, bad, &e) == GF_EINVAL);
  CHECK(e.code == GF_EINVAL && strstr(e.msg, "210") != NULL);
  gf_tensor_free(&v); /* a view: only the descriptor */
  gf_tensor_free(&t);
  CHECK(t.data == NULL && t.ndim == 0);
  gf_tensor_free(&t); /* twice */
  gf_tensor_free(NULL);
  CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CPU, 5, shp, &e) == GF_EINVAL);
  CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CPU, 0, shp, &e) == GF_EINVAL);
  int64_t neg[1] = {-3};
  CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CPU, 1, neg, &e) == GF_EINVAL);
  int64_t huge[4] = {1ll << 40, 1ll << 40, 1, 1};
  CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CPU, 2, huge, &e) == GF_EINVAL);
  CHECK(gf_tensor_init(&t, (gf_dtype)9, GF_DEV_CPU, 1, shp, &e) == GF_EINVAL);
  if (!gf_cuda_built()) {
    CHECK(gf_tensor_init(&t, GF_F32, GF_DEV_CUDA, 1, shp, &e) ==
          GF_EUNSUPPORTED);
    CHECK(t.data == NULL);
  } else { /* CUDA built: allocates on a GPU, or says there is none */
    gf_status st = gf_tensor_init(&t, GF_F32, GF_DEV_CUDA, 1, shp, &e);
    CHECK(st == GF_OK || (st == GF_EDEVICE && t.data == NULL &&
                          strstr(e.msg, "no CUDA device") != NULL));
    gf_tensor_free(&t);
  }
  CHECK(gf_tensor_view(&t, NULL, GF_F32, GF_DEV_CPU, 1, shp, &e) ==
        GF_EINVAL);
  CHECK(gf_dtype_size(GF_BF16) == 2 && gf_dtype_size(GF_F16) == 2 &&
        gf_dtype_size(GF_F32) == 4);
  CHECK_STR_EQ(gf_dtype_name(GF_BF16), "bf16");
}

static void test_arena(void) {
  gf_arena a;
  gf_err e = {0};
  size_t need = gf_arena_slot_bytes(3 * 4) + gf_arena_slot_bytes(100 * 4);
  CHECK_INT_EQ(need, 64 + 448);
  REQUIRE(gf_arena_init(&a, GF_DEV_CPU, need, &e) == GF_OK);
  gf_tensor t1, t2, t3;
  int64_t s1 = 3, s2 = 100;
  CHECK(gf_arena_tensor(&a, &t1, GF_F32, 1, &s1, &e) == GF_OK);
  CHECK(gf_arena_tensor(&a, &t2, GF_F32, 1, &s2, &e) == GF_OK);
  CHECK(!t1.owns && (char *)t2.data == (char *)t1.data + 64);
  CHECK(((uintptr_t)t2.data % GF_ALIGN) == 0);
  CHECK(gf_arena_tensor(&a, &t3, GF_F32, 1, &s1, &e) == GF_ENOMEM);
  CHECK(strstr(e.msg, "arena") != NULL);
  gf_tensor all;
  CHECK(gf_arena_view_all(&a, &all, &e) == GF_OK);
  CHECK_INT_EQ(gf_tensor_numel(&all), (64 + 448) / 4);
  gf_tensor_free(&t1); /* views: the arena still owns the memory */
  gf_arena_reset(&a);
  CHECK(gf_arena_tensor(&a, &t3, GF_F32, 1, &s1, &e) == GF_OK);
  CHECK(t3.data == a.base);
  gf_arena_free(&a);
  CHECK(a.base == NULL);
  gf_arena_free(&a);
  gf_arena_free(NULL);
  CHECK(gf_arena_tensor(&a, &t3, GF_F32, 1, &s1, &e) == GF_EINVAL);
}

static void test_ctx(void) {
  gf_ctx ctx;
  gf_err e = {0};
  REQUIRE(gf_ctx_init(&ctx, NULL, &e) == GF_OK);
  CHECK(ctx.nthreads >= 1 && ctx.backend == GF_BACKEND_CPU &&
        ctx.device == GF_DEV_CPU && ctx.ops && ctx.impl);
  gf_ctx_stats st = gf_ctx_get_stats(&ctx);
  CHECK(st.primitives_created == 0 && st.cached_primitives == 0);
  gf_ctx_free(&ctx);
  CHECK(ctx.impl == NULL && ctx.ops == NULL);
  gf_ctx_config cfg = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cfg, &e) == GF_OK);
  CHECK_INT_EQ(ctx.nthreads, 1);
  /* a tensor on another device is refused */
  gf_tensor x = kt_tensor(1, 4, 1, 1, 1), y = kt_tensor(1, 4, 1, 1, 1);
  y.device = GF_DEV_CUDA;
  CHECK(gf_relu_fwd(&ctx, &x, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "device") != NULL);
  y.device = GF_DEV_CPU;
  x.dtype = GF_F16;
  CHECK(gf_relu_fwd(&ctx, &x, &y, &e) == GF_EUNSUPPORTED);
  x.dtype = GF_F32;
  CHECK(gf_relu_fwd(&ctx, &x, &y, NULL) == GF_OK); /* err may be NULL */
  gf_tensor_free(&x);
  gf_tensor_free(&y);
  gf_ctx_free(&ctx);
  /* an uninitialized (zeroed) ctx is refused, not dereferenced */
  gf_ctx z;
  memset(&z, 0, sizeof z);
  gf_tensor a = kt_tensor(1, 2, 1, 1, 1);
  CHECK(gf_relu_fwd(&z, &a, &a, &e) == GF_EINVAL);
  gf_tensor_free(&a);
  cfg.backend = GF_BACKEND_CUDA;
  if (!gf_cuda_built()) {
    CHECK(gf_ctx_init(&ctx, &cfg, &e) == GF_EUNSUPPORTED);
    CHECK_STR_EQ(gf_status_name(e.code), "GF_EUNSUPPORTED");
  } else {
    cfg.device_index = 1 << 20; /* no machine has this ordinal */
    CHECK(gf_ctx_init(&ctx, &cfg, &e) == GF_EDEVICE);
    CHECK(strstr(e.msg, "no CUDA device") != NULL);
    CHECK(ctx.ops == NULL && ctx.impl == NULL);
    cfg.device_index = 0;
  }
  gf_ctx_free(&ctx); /* harmless after a failed init */
  cfg.backend = (gf_backend)17;
  CHECK(gf_ctx_init(&ctx, &cfg, &e) == GF_EINVAL);
  CHECK_STR_EQ(gf_backend_name(GF_BACKEND_CPU), "cpu");
}

/* GF_I32 is a storage dtype like any other: 4 bytes an element, zeroed at
 * init, carried through views, reshapes, copies and arenas; the f32 ops
 * refuse it (GF_EUNSUPPORTED). */
static void test_i32(void) {
  gf_err e = {0};
  CHECK_INT_EQ(gf_dtype_size(GF_I32), 4);
  CHECK_STR_EQ(gf_dtype_name(GF_I32), "i32");
  CHECK_STR_EQ(gf_dtype_name((gf_dtype)99), "?");
  gf_tensor a, b, v, r;
  int64_t n = 5, rs[2] = {1, 5};
  REQUIRE(gf_tensor_init(&a, GF_I32, GF_DEV_CPU, 1, &n, &e) == GF_OK);
  REQUIRE(gf_tensor_init(&b, GF_I32, GF_DEV_CPU, 1, &n, &e) == GF_OK);
  CHECK_INT_EQ(gf_tensor_nbytes(&a), 20);
  int32_t *pa = a.data, *pb = b.data;
  CHECK(pa[0] == 0 && pa[4] == 0);
  for (int i = 0; i < 5; i++) pa[i] = -2 + 3 * i;
  CHECK(gf_tensor_copy(&b, &a, &e) == GF_OK);
  CHECK(pb[0] == -2 && pb[4] == 10);
  REQUIRE(gf_tensor_reshape_view(&r, &a, 2, rs, &e) == GF_OK);
  CHECK(r.dtype == GF_I32 && r.data == a.data && !r.owns);
  int32_t raw[3] = {7, 8, 9};
  int64_t three = 3;
  REQUIRE(gf_tensor_view(&v, raw, GF_I32, GF_DEV_CPU, 1, &three, &e) ==
          GF_OK);
  CHECK_INT_EQ(gf_tensor_nbytes(&v), 12);
  CHECK(gf_tensor_copy(&a, &v, &e) == GF_EINVAL); /* 12 bytes into 20 */
  gf_arena ar;
  REQUIRE(gf_arena_init(&ar, GF_DEV_CPU, gf_arena_slot_bytes(20), &e) ==
          GF_OK);
  gf_tensor s;
  CHECK(gf_arena_tensor(&ar, &s, GF_I32, 1, &n, &e) == GF_OK);
  CHECK(s.dtype == GF_I32 && ar.used == 64);
  gf_ctx ctx;
  gf_ctx_config cfg = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cfg, &e) == GF_OK);
  CHECK(gf_relu_fwd(&ctx, &a, &a, &e) == GF_EUNSUPPORTED);
  CHECK(strstr(e.msg, "i32") != NULL);
  gf_ctx_free(&ctx);
  gf_arena_free(&ar);
  gf_tensor_free(&v);
  gf_tensor_free(&r);
  gf_tensor_free(&a);
  gf_tensor_free(&b);
}

int main(void) {
  test_tensor();
  test_i32();
  test_arena();
  test_ctx();
  return check_report();
}
