/* test_comm_nccl.c - gf_comm's nccl backend at world 1 on a GPU (label
 * gpu; exits 77 where this build has no NCCL or the machine no GPU):
 * communicator init with every algorithm, all-reduce (sum and avg of f32
 * and f64, i64 sum: the buffer itself at world 1, AVG multiplies by 1/1),
 * non-blocking all-reduce with test/wait, broadcast, barrier, allgather
 * from host and from device memory, host buffers refused, statistics,
 * f32-as-bf16 and bf16 (the device's rounding equal to the host twin's,
 * gf_comm_bf16_from_f32; written for the GPU machines, not yet run); the
 * timeout path: a host function holding the legacy stream (which the ctx's
 * blocking stream waits for) keeps an all-reduce from starting, the wait
 * gives GF_ETIMEOUT within the timeout, and a later wait completes it;
 * then gf_comm_abort on the idle communicator (ncclCommAbort) leaves every
 * collective GF_ESTATE and gf_comm_free still works. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gf/comm.h"
#include "kt_cuda.h"

static const char *no_env(void *user, const char *name) {
  (void)user;
  (void)name;
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void CUDART_CB hold_stream(void *arg) {
  (void)arg;
  usleep(1500 * 1000);
}

static void *dev_copy(const void *h, size_t bytes) {
  void *d = NULL;
  REQUIRE(cudaMalloc(&d, bytes) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  return d;
}

static int dev_equals(const void *d, const void *h, size_t bytes) {
  unsigned char buf[4096];
  REQUIRE(bytes <= sizeof buf);
  REQUIRE(cudaMemcpy(buf, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  return memcmp(buf, h, bytes) == 0;
}

static void check_algo(gf_ctx *ctx, const gf_launch_info *li,
                       gf_allreduce_algo a) {
  const char *an = gf_allreduce_algo_name(a);
  gf_comm_config cfg = {GF_COMM_NCCL, a, 30.0, ctx, li};
  gf_comm *c = NULL;
  gf_err e = {0};
  gf_status st = gf_comm_init(&c, &cfg, &e);
  CHECKF(st == GF_OK, "%s: init: %s", an, e.msg);
  if (st) return;
  CHECK(gf_comm_world(c) == 1 && gf_comm_rank(c) == 0);
  CHECK(gf_comm_device_buffers(c) == 1 && gf_comm_nodes(c) == 1);

  float hf[300];
  double hd[300];
  int64_t hi[300];
  for (int i = 0; i < 300; i++) {
    hf[i] = 0.1f * (float)i - 7.0f;
    hd[i] = 1e-3 * i + 1e9;
    hi[i] = ((int64_t)1 << 50) + i;
  }
  float *df = dev_copy(hf, sizeof hf);
  double *dd = dev_copy(hd, sizeof hd);
  int64_t *di = dev_copy(hi, sizeof hi);
  for (int op = 0; op < 2; op++) {
    CHECKF(gf_comm_allreduce(c, df, 300, GF_CDT_F32, (gf_reduce_op)op, &e) ==
               GF_OK,
           "%s: %s", an, e.msg);
    CHECKF(dev_equals(df, hf, sizeof hf), "%s f32 op %d", an, op);
    CHECK(gf_comm_allreduce(c, dd, 300, GF_CDT_F64, (gf_reduce_op)op, &e) ==
          GF_OK);
    CHECKF(dev_equals(dd, hd, sizeof hd), "%s f64 op %d", an, op);
  }
  CHECK(gf_comm_allreduce(c, di, 300, GF_CDT_I64, GF_RED_SUM, &e) == GF_OK);
  CHECK(dev_equals(di, hi, sizeof hi));
  int h = -1, done = 0;
  CHECK(gf_comm_iallreduce(c, df, 300, GF_CDT_F32, GF_RED_SUM, &h, &e) ==
        GF_OK);
  double t0 = now_s();
  while (!done && now_s() - t0 < 10)
    CHECK(gf_comm_test(c, h, &done, &e) == GF_OK);
  CHECK(done);
  CHECK(gf_comm_wait(c, h, &e) == GF_OK);
  CHECK(dev_equals(df, hf, sizeof hf));
  CHECK(gf_comm_broadcast(c, dd, 300, GF_CDT_F64, 0, &e) == GF_OK);
  CHECK(dev_equals(dd, hd, sizeof hd));
  CHECK(gf_comm_barrier(c, &e) == GF_OK);

  /* allgather takes host memory, and device memory too */
  char mine[40] = "rank 0 says hello", all[40];
  memset(all, 0, sizeof all);
  CHECKF(gf_comm_allgather(c, mine, sizeof mine, all, &e) == GF_OK, "%s",
         e.msg);
  CHECK(memcmp(all, mine, sizeof mine) == 0);
  void *dmine = dev_copy(mine, sizeof mine), *dall = NULL;
  REQUIRE(cudaMalloc(&dall, sizeof mine) == cudaSuccess);
  CHECK(gf_comm_allgather(c, dmine, sizeof mine, dall, &e) == GF_OK);
  CHECK(dev_equals(dall, mine, sizeof mine));

  /* host buffers are refused with a message saying so */
  CHECK(gf_comm_allreduce(c, hf, 300, GF_CDT_F32, GF_RED_SUM, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "host memory") != NULL, "%s", e.msg);

  gf_comm_stats s;
  gf_comm_get_stats(c, &s);
  CHECK(s.allreduce_calls == 6);
  CHECK(s.allreduce_bytes == 3 * 300 * 4 + 2 * 300 * 8 + 300 * 8);

  /* f32-as-bf16 at world 1: the device's rounding (and the tree's bf16
   * add, a no-op here) leaves the host twin's bf16 values, AVG too; bf16
   * buffers move as they are */
  float hb[300], hr[300];
  uint16_t h16[300];
  for (int i = 0; i < 300; i++) hb[i] = hf[i] * 1.0001f + 1e-3f * (float)i;
  hb[0] = 1.00390625f; /* a tie: to even, 1 */
  hb[1] = 1.01171875f; /* a tie: to even, 1.015625 */
  gf_comm_bf16_from_f32(h16, hb, 300);
  gf_comm_bf16_to_f32(hr, h16, 300);
  float *db = dev_copy(hb, sizeof hb);
  for (int op = 0; op < 2; op++) {
    CHECKF(gf_comm_allreduce(c, db, 300, GF_CDT_F32_AS_BF16, (gf_reduce_op)op,
                             &e) == GF_OK,
           "%s f32-as-bf16: %s", an, e.msg);
    CHECKF(dev_equals(db, hr, sizeof hr), "%s f32-as-bf16 op %d", an, op);
  }
  uint16_t *d16 = dev_copy(h16, sizeof h16);
  CHECK(gf_comm_allreduce(c, d16, 300, GF_CDT_BF16, GF_RED_SUM, &e) == GF_OK);
  CHECK(dev_equals(d16, h16, sizeof h16));
  cudaFree(db);
  cudaFree(d16);

  cudaFree(df);
  cudaFree(dd);
  cudaFree(di);
  cudaFree(dmine);
  cudaFree(dall);
  gf_comm_free(c);
}

static void check_timeout_and_abort(gf_ctx *ctx, const gf_launch_info *li) {
  gf_comm_config cfg = {GF_COMM_NCCL, GF_ALLREDUCE_ENGINE, 0.3, ctx, li};
  gf_comm *c = NULL;
  gf_err e = {0};
  REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
  float h[64];
  for (int i = 0; i < 64; i++) h[i] = (float)i;
  float *d = dev_copy(h, sizeof h);
  /* the legacy stream is busy for 1.5 s; the ctx's blocking stream, and so
   * the all-reduce ordered after it, waits for it */
  REQUIRE(cudaLaunchHostFunc(0, hold_stream, NULL) == cudaSuccess);
  int r = -1;
  CHECK(gf_comm_iallreduce(c, d, 64, GF_CDT_F32, GF_RED_SUM, &r, &e) == GF_OK);
  double t0 = now_s();
  gf_status st = gf_comm_wait(c, r, &e);
  double dt = now_s() - t0;
  CHECKF(st == GF_ETIMEOUT, "wait gave %s: %s", gf_status_name(st), e.msg);
  CHECKF(dt >= 0.29 && dt < 1.4, "timed out after %.3f s", dt);
  gf_comm_set_timeout(c, 30);
  CHECKF(gf_comm_wait(c, r, &e) == GF_OK, "second wait: %s", e.msg);
  CHECK(dev_equals(d, h, sizeof h));

  /* abort an idle communicator: collectives refuse, free still frees */
  gf_comm_abort(c, 3);
  CHECK(gf_comm_allreduce(c, d, 64, GF_CDT_F32, GF_RED_SUM, &e) == GF_ESTATE);
  CHECK(gf_comm_barrier(c, &e) == GF_ESTATE);
  gf_comm_free(c);
  cudaFree(d);
}

int main(void) {
  if (!gf_comm_built(GF_COMM_NCCL)) SKIP_TEST("this build has no NCCL");
  gf_ctx ctx;
  kt_cuda_ctx_or_skip(&ctx);
  gf_launch_info li;
  gf_err e = {0};
  REQUIRE(gf_launch_detect(&li, no_env, NULL, &e) == GF_OK);
  gf_comm_config bad = {GF_COMM_NCCL, GF_ALLREDUCE_ENGINE, 1, NULL, &li};
  gf_comm *c = NULL;
  CHECK(gf_comm_init(&c, &bad, &e) == GF_EINVAL && c == NULL);
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++)
    check_algo(&ctx, &li, (gf_allreduce_algo)a);
  check_timeout_and_abort(&ctx, &li);
  gf_ctx_free(&ctx);
  return check_report();
}
