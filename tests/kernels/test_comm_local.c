/* test_comm_local.c - gf_comm without peers (runs in every build): the local
 * backend at world 1 under each algorithm (all-reduce leaves the bits
 * alone, AVG included; allgather copies; broadcast and barrier return),
 * handles (test, wait, stale and foreign handles refused, the 64-handle
 * limit), statistics, abort, and every argument and config refusal of
 * gf_comm_init and the collectives; GF_EUNSUPPORTED naming the backend a
 * build lacks. */
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

int main(void) {
  gf_launch_info li;
  gf_err e = {0};
  REQUIRE(gf_launch_detect(&li, no_env, NULL, &e) == GF_OK);
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++)
    check_identity(&li, (gf_allreduce_algo)a);
  check_handles(&li);
  check_refusals(&li);
  check_init_refusals(&li);
  return check_report();
}
