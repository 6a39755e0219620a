/* test_comm_local.c - gf_comm without peers (runs in every build): the local
 * backend at world 1 under each algorithm (all-reduce leaves the bits
 * alone, AVG included; allgather copies; broadcast and barrier return),
 * handles (test, wait, stale and foreign handles refused, the 64-handle
 * limit), statistics, abort, and every argument and config refusal of
 * gf_comm_init and the collectives; GF_EUNSUPPORTED naming the backend a
 * build lacks; the f32 -> bf16 rounding (nearest, ties to even, NaN and
 * overflow) against a reference that rounds by distance, which cutting
 * and rounding half up both fail, and f32-as-bf16 at world 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/comm.h"

static const char *no_env(void *user, const char *name) {
  (void)user;
  (void)name;
  return NULL;
}

static gf_comm *local_comm(const gf_launch_info *li, gf_allreduce_algo a) {
  gf_comm_config cfg = {GF_COMM_LOCAL, a, 0, NULL, li};
  gf_comm *c = NULL;
  gf_err e = {0};
  gf_status st = gf_comm_init(&c, &cfg, &e);
  CHECKF(st == GF_OK, "%s", e.msg);
  REQUIRE(c);
  return c;
}

static void check_identity(const gf_launch_info *li, gf_allreduce_algo a) {
  gf_comm *c = local_comm(li, a);
  gf_err e = {0};
  CHECK(gf_comm_rank(c) == 0 && gf_comm_world(c) == 1);
  CHECK(gf_comm_local_rank(c) == 0 && gf_comm_local_world(c) == 1);
  CHECK(gf_comm_nodes(c) == 1 && gf_comm_device_buffers(c) == 0);
  CHECK(gf_comm_backend_of(c) == GF_COMM_LOCAL && gf_comm_algo_of(c) == a);
  CHECK(gf_comm_timeout(c) == 600.0);
  float f[5] = {1.5f, -0.0f, 3e-38f, 1e30f, -7.25f}, f0[5];
  double d[3] = {0.1, -2.5, 1e300}, d0[3];
  int64_t q[2] = {INT64_MAX, INT64_MIN}, q0[2];
  memcpy(f0, f, sizeof f);
  memcpy(d0, d, sizeof d);
  memcpy(q0, q, sizeof q);
  for (int op = 0; op < 2; op++) {
    CHECK(gf_comm_allreduce(c, f, 5, GF_CDT_F32, (gf_reduce_op)op, &e) ==
          GF_OK);
    CHECK(gf_comm_allreduce(c, d, 3, GF_CDT_F64, (gf_reduce_op)op, &e) ==
          GF_OK);
  }
  CHECK(gf_comm_allreduce(c, q, 2, GF_CDT_I64, GF_RED_SUM, &e) == GF_OK);
  CHECK(memcmp(f, f0, sizeof f) == 0 && memcmp(d, d0, sizeof d) == 0 &&
        memcmp(q, q0, sizeof q) == 0);
  int h = -1, done = 0;
  CHECK(gf_comm_iallreduce(c, f, 5, GF_CDT_F32, GF_RED_AVG, &h, &e) == GF_OK);
  CHECK(gf_comm_test(c, h, &done, &e) == GF_OK && done == 1);
  CHECK(gf_comm_wait(c, h, &e) == GF_OK);
  CHECK(memcmp(f, f0, sizeof f) == 0);
  CHECK(gf_comm_broadcast(c, d, 3, GF_CDT_F64, 0, &e) == GF_OK);
  CHECK(memcmp(d, d0, sizeof d) == 0);
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
  char mine[9] = "abcdefgh", all[9] = {0};
  CHECK(gf_comm_allgather(c, mine, 9, all, &e) == GF_OK);
  CHECK_STR_EQ(all, "abcdefgh");
  CHECK(gf_comm_allgather(c, mine, 9, mine, &e) == GF_OK); /* in place */
  CHECK_STR_EQ(mine, "abcdefgh");
  gf_comm_stats s;
  gf_comm_get_stats(c, &s);
  CHECK(s.allreduce_calls == 6);
  CHECK(s.allreduce_bytes == 3 * 5 * 4 + 2 * 3 * 8 + 2 * 8);
  CHECK(s.wait_s >= 0 && s.busy_s >= 0);
  gf_comm_free(c);
}

static void check_handles(const gf_launch_info *li) {
  gf_comm *c = local_comm(li, GF_ALLREDUCE_ENGINE);
  gf_err e = {0};
  double x[65];
  int h[65], done = 0;
  for (int i = 0; i < 64; i++)
    CHECK(gf_comm_iallreduce(c, &x[i], 1, GF_CDT_F64, GF_RED_SUM, &h[i], &e) ==
          GF_OK);
  CHECK(gf_comm_iallreduce(c, &x[64], 1, GF_CDT_F64, GF_RED_SUM, &h[64], &e) ==
        GF_ESTATE);
  CHECKF(strstr(e.msg, "64") != NULL, "%s", e.msg);
  CHECK(h[64] == -1);
  /* a blocking call still has a slot of its own */
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
  for (int i = 0; i < 64; i++) CHECK(gf_comm_wait(c, h[i], &e) == GF_OK);
  /* released: waiting again, or on a reused slot's old handle, is refused */
  CHECK(gf_comm_wait(c, h[5], &e) == GF_EINVAL);
  int h2 = -1;
  CHECK(gf_comm_iallreduce(c, x, 1, GF_CDT_F64, GF_RED_SUM, &h2, &e) == GF_OK);
  CHECK(h2 != h[0]);
  CHECK(gf_comm_test(c, h[0], &done, &e) == GF_EINVAL);
  CHECK(gf_comm_wait(c, h2, &e) == GF_OK);
  CHECK(gf_comm_wait(c, 1 << 20, &e) == GF_EINVAL);
  CHECK(gf_comm_wait(c, -5, &e) == GF_EINVAL);
  CHECK(gf_comm_test(c, h2, NULL, &e) == GF_EINVAL);
  CHECK(gf_comm_iallreduce(c, x, 1, GF_CDT_F64, GF_RED_SUM, NULL, &e) ==
        GF_EINVAL);
  gf_comm_free(c);
}

static void check_refusals(const gf_launch_info *li) {
  gf_comm *c = local_comm(li, GF_ALLREDUCE_ENGINE);
  gf_err e = {0};
  float f[2] = {1, 2};
  unsigned char u[2] = {1, 2};
  int64_t q = 1;
  CHECK(gf_comm_allreduce(c, u, 2, GF_CDT_U8, GF_RED_SUM, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "u8") != NULL);
  CHECK(gf_comm_allreduce(c, &q, 1, GF_CDT_I64, GF_RED_AVG, &e) == GF_EINVAL);
  CHECK(gf_comm_allreduce(c, NULL, 2, GF_CDT_F32, GF_RED_SUM, &e) == GF_EINVAL);
  CHECK(gf_comm_allreduce(c, NULL, 0, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  CHECK(gf_comm_allreduce(c, f, 2, (gf_comm_dtype)7, GF_RED_SUM, &e) ==
        GF_EINVAL);
  CHECK(gf_comm_allreduce(c, f, 2, GF_CDT_F32, (gf_reduce_op)5, &e) ==
        GF_EINVAL);
  CHECK(gf_comm_allreduce(c, f, SIZE_MAX / 2, GF_CDT_F32, GF_RED_SUM, &e) ==
        GF_EINVAL);
  CHECK(gf_comm_broadcast(c, u, 2, GF_CDT_U8, 1, &e) == GF_EINVAL);
  CHECK(gf_comm_broadcast(c, u, 2, GF_CDT_U8, -1, &e) == GF_EINVAL);
  CHECK(gf_comm_broadcast(c, u, 2, GF_CDT_U8, 0, &e) == GF_OK);
  CHECK(gf_comm_allgather(c, NULL, 4, f, &e) == GF_EINVAL);
  CHECK(gf_comm_allgather(c, f, 4, NULL, &e) == GF_EINVAL);
  CHECK(gf_comm_allreduce(NULL, f, 2, GF_CDT_F32, GF_RED_SUM, &e) == GF_EINVAL);
  gf_comm_set_timeout(c, -1);
  CHECK(gf_comm_timeout(c) == 600.0);
  gf_comm_set_timeout(c, 0.25);
  CHECK(gf_comm_timeout(c) == 0.25);

  /* after abort every collective is refused; free still frees */
  gf_comm_abort(c, 1);
  CHECK(gf_comm_allreduce(c, f, 2, GF_CDT_F32, GF_RED_SUM, &e) == GF_ESTATE);
  CHECK(strstr(e.msg, "aborted") != NULL);
  CHECK(gf_comm_barrier(c, &e) == GF_ESTATE);
  int h = 0;
  CHECK(gf_comm_iallreduce(c, f, 2, GF_CDT_F32, GF_RED_SUM, &h, &e) ==
        GF_ESTATE);
  gf_comm_free(c);
  gf_comm_free(NULL);
  gf_comm_abort(NULL, 1);
  CHECK(gf_comm_world(NULL) == 1 && gf_comm_rank(NULL) == 0);
}

static void check_init_refusals(const gf_launch_info *li) {
  static int not_a_comm;
  gf_comm *c = (gf_comm *)&not_a_comm; /* must come back NULL */
  gf_err e = {0};
  gf_comm_config cfg = {GF_COMM_LOCAL, GF_ALLREDUCE_ENGINE, 1, NULL, NULL};
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL && c == NULL);
  CHECK(gf_comm_init(&c, NULL, &e) == GF_EINVAL);
  CHECK(gf_comm_init(NULL, &cfg, &e) == GF_EINVAL);
  gf_launch_info two = *li;
  two.world_size = 2;
  cfg.launch = &two;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL && c == NULL);
  CHECKF(strstr(e.msg, "world 2") != NULL, "%s", e.msg);
  gf_launch_info bad = *li;
  bad.rank = 1;
  cfg.launch = &bad;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL);
  cfg.launch = li;
  cfg.backend = (gf_comm_backend)9;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL);
  cfg.backend = GF_COMM_LOCAL;
  cfg.algo = (gf_allreduce_algo)9;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL);
  /* tree needs a power-of-two world: refused before any engine runs */
  gf_launch_info six = *li;
  six.world_size = 6;
  cfg.launch = &six;
  cfg.algo = GF_ALLREDUCE_TREE;
  cfg.backend = GF_COMM_MPI;
  gf_status st = gf_comm_init(&c, &cfg, &e);
  CHECK(st == (gf_comm_built(GF_COMM_MPI) ? GF_EINVAL : GF_EUNSUPPORTED));
  /* backends this build lacks say so */
  for (int b = GF_COMM_MPI; b <= GF_COMM_NCCL; b++) {
    if (gf_comm_built((gf_comm_backend)b)) continue;
    gf_comm_config nb = {(gf_comm_backend)b, GF_ALLREDUCE_ENGINE, 1, NULL, li};
    CHECK(gf_comm_init(&c, &nb, &e) == GF_EUNSUPPORTED && c == NULL);
    CHECKF(strstr(e.msg, gf_comm_backend_name((gf_comm_backend)b)) &&
               strstr(e.msg, "not built"),
           "%s", e.msg);
  }
  if (gf_comm_built(GF_COMM_NCCL)) {
    gf_comm_config nb = {GF_COMM_NCCL, GF_ALLREDUCE_ENGINE, 1, NULL, li};
    CHECK(gf_comm_init(&c, &nb, &e) == GF_EINVAL); /* no ctx */
  }
}

/* ---- bf16 ----------------------------------------------------------------
 * The reference rounds by distance, not by bits: of the two bf16 values
 * around f (f's bits cut to 16, and the next one away from zero), the
 * nearer in exact arithmetic (doubles hold every difference of two floats
 * exactly), the one with an even last bit on a tie; the value after the
 * largest finite bf16 counts as 2^128, as IEEE rounding has it, so that
 * overflow gives infinity. */
static double bf16_value(uint16_t h) {
  if ((h & 0x7fffu) == 0x7f80u) return (h & 0x8000u) ? -ldexp(1, 128) : ldexp(1, 128);
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t bf16_reference(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
  if (isnan(f) || isinf(f) || (u & 0xffffu) == 0) return lo;
  double dl = fabs((double)f - bf16_value(lo)), dh = fabs((double)f - bf16_value(hi));
  if (dl != dh) return dl < dh ? lo : hi;
  return (lo & 1u) ? hi : lo;
}

static uint32_t xorshift(uint32_t *st) {
  uint32_t x = *st;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *st = x;
}

static void check_bf16(const gf_launch_info *li) {
  enum { NSPEC = 24, NRAND = 200000, N = NSPEC + NRAND };
  static const uint32_t spec[NSPEC] = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000, /* zeros, infinities */
      0x7fc00000, 0xffc00001, 0x7f80ffff, 0x7f800001, /* NaNs: must stay NaN
                                                         (the last two would
                                                         round to infinity) */
      0x3f808000, 0x3f818000, 0xbf808000, 0xbf818000, /* ties: to even */
      0x3f808001, 0x3f807fff,                         /* just off the tie */
      0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0xff7fffff, /* overflow to inf */
      0x00000001, 0x00008000, 0x00018000, 0x807fffff, /* denormals */
      0x3f800000, 0x40490fdb};                        /* 1, pi */
  float *f = malloc(N * sizeof *f), *back = malloc(N * sizeof *back);
  uint16_t *h = malloc(N * sizeof *h);
  REQUIRE(f && back && h);
  uint32_t st = 0x9e3779b9u;
  for (int i = 0; i < N; i++) {
    uint32_t u = i < NSPEC ? spec[i] : xorshift(&st);
    if (i >= NSPEC && i % 4 == 0) u = (u & 0xffff0000u) | 0x8000u; /* ties */
    memcpy(&f[i], &u, 4);
  }
  gf_comm_bf16_from_f32(h, f, N);
  gf_comm_bf16_to_f32(back, h, N);
  size_t bad = 0, trunc_differs = 0, halfup_differs = 0;
  for (int i = 0; i < N; i++) {
    uint16_t want = bf16_reference(f[i]);
    uint32_t u;
    memcpy(&u, &f[i], 4);
    int ok = isnan(f[i]) ? isnan(back[i]) && (h[i] & 0x8000u) == (want & 0x8000u)
                         : h[i] == want;
    uint32_t bu;
    memcpy(&bu, &back[i], 4);
    ok = ok && bu == (uint32_t)h[i] << 16; /* widening is exact */
    if (!ok && bad++ < 5)
      fprintf(stderr, "  bf16 of %08x: %04x, want %04x\n", u, h[i], want);
    if (!isnan(f[i])) {
      trunc_differs += (uint16_t)(u >> 16) != want;
      halfup_differs += (uint16_t)((u + 0x8000u) >> 16) != want;
    }
  }
  CHECKF(bad == 0, "bf16 conversion: %zu of %d wrong", bad, N);
  /* the reference can fail: cutting and rounding half up both differ
   * from it on these inputs (the second on ties only) */
  CHECKF(trunc_differs > N / 4 && halfup_differs > N / 16,
         "bf16 reference too tame: %zu, %zu", trunc_differs, halfup_differs);
  /* world 1: f32-as-bf16 leaves the bf16 values, AVG included; bf16 sums
   * are the buffer */
  gf_comm *c = local_comm(li, GF_ALLREDUCE_ENGINE);
  gf_err e = {0};
  float g[64];
  memcpy(g, f + NSPEC, sizeof g);
  CHECK(gf_comm_allreduce(c, g, 64, GF_CDT_F32_AS_BF16, GF_RED_SUM, &e) == GF_OK);
  CHECK(memcmp(g, back + NSPEC, sizeof g) == 0 || isnan(g[0]));
  memcpy(g, f + NSPEC + 64, sizeof g);
  int hd = -1;
  CHECK(gf_comm_iallreduce(c, g, 64, GF_CDT_F32_AS_BF16, GF_RED_AVG, &hd, &e) == GF_OK);
  CHECK(gf_comm_wait(c, hd, &e) == GF_OK);
  size_t diff = 0;
  for (int i = 0; i < 64; i++)
    diff += memcmp(&g[i], &back[NSPEC + 64 + i], 4) != 0 && !isnan(g[i]);
  CHECK(diff == 0);
  uint16_t hh[5] = {1, 0x3f80, 0x8000, 0x7f80, 0xffff}, h0[5];
  memcpy(h0, hh, sizeof hh);
  CHECK(gf_comm_allreduce(c, hh, 5, GF_CDT_BF16, GF_RED_SUM, &e) == GF_OK);
  CHECK(memcmp(hh, h0, sizeof hh) == 0);
  CHECK(gf_comm_broadcast(c, hh, 5, GF_CDT_BF16, 0, &e) == GF_OK);
  CHECK(gf_comm_allreduce(c, hh, 5, GF_CDT_BF16, GF_RED_AVG, &e) == GF_EINVAL);
  CHECK(gf_comm_broadcast(c, g, 5, GF_CDT_F32_AS_BF16, 0, &e) == GF_EINVAL);
  CHECK(gf_comm_allreduce(c, g, 5, (gf_comm_dtype)6, GF_RED_SUM, &e) == GF_EINVAL);
  gf_comm_free(c);
  free(f);
  free(back);
  free(h);
}

int main(void) {
  gf_launch_info li;
  gf_err e = {0};
  REQUIRE(gf_launch_detect(&li, no_env, NULL, &e) == GF_OK);
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++)
    check_identity(&li, (gf_allreduce_algo)a);
  check_handles(&li);
  check_refusals(&li);
  check_init_refusals(&li);
  check_bf16(&li);
  return check_report();
}
