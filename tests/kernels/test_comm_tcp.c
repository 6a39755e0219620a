/* test_comm_tcp.c - gf_comm's tcp engine (kernels/src/comm/comm_tcp*.c) on
 * real processes: the binary forks and execs itself once per rank with
 * torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port) and collects the ranks'
 * exit statuses. argv[1] is the world (2 or 4). Each rank computes every
 * rank's inputs itself and checks its results against a CPU reference:
 *   - every algorithm (ring, reduce-bcast, hierarchical on one host and on
 *     two fake hosts, tree) x SUM/AVG x f32/f64, and i64 SUM, within
 *     rounding of the exact sum, identical bits on every rank, and 4 MB
 *     (more than the socket buffers) exactly;
 *   - tree: bit for bit the sum in the fixed tree order, on inputs where
 *     the reversed order gives other bits (checked, so the test can fail);
 *   - f32-as-bf16 and bf16 (every algorithm, SUM and AVG): bf16 values,
 *     within bf16 rounding of the exact sum, the same bits on every rank,
 *     bit for bit the reference where the order is known (2 ranks, tree);
 *   - 8 overlapping iallreduce requests with a barrier among them,
 *     completed with test/wait in an order that differs between ranks,
 *     bit for bit the results of the same all-reduces one at a time;
 *   - (3 ranks, run with argv 2) requests in flight together: a later
 *     request's first chunk leaves while an earlier one cannot finish;
 *   - allgather, broadcast from rank 1 (f64, i64, u8), barrier, topology;
 *   - ranks that call different collectives: GF_EINVAL on both sides;
 *   - a rank that never calls: GF_ETIMEOUT within the timeout + 1 s;
 *   - a rank that _exit()s in the middle of an all-reduce: GF_EIO naming it
 *     within 2 s on every other rank;
 *   - (3 ranks, run with argv 2) a rank whose loss only its node's leader
 *     sees: the leader's LOST notice fails the other host's rank, which
 *     waits on the leader, within 1 s under a 60 s timeout - after a
 *     SIGKILL, and after a connection shut down while the rank lives on
 *     (where only the notice can tell);
 *   - a rank with another WORLD_SIZE: rejected at bootstrap with a message
 *     saying so;
 * and in this process: MASTER_PORT in use (GF_EIO naming the port), a
 * bootstrap where nobody comes (GF_ETIMEOUT naming the missing ranks), the
 * wire parsers on good and bad messages.
 * The ranks order their events through marks in a folder the parent makes
 * (wait_util.h), never by sleeping: "every other rank's all-reduce
 * returned", "every other rank calls the all-reduce" plus "the ring
 * neighbour's first chunk waits here, unread" (in the socket, or read
 * ahead by the comm, which drains every stream it polls), "every survivor saw
 * the death"; the parent sleeps in sigtimedwait until a rank ends.
 *
 * GF_COMM_BENCH=<n>: instead, rank 0 prints the median of 20 blocking
 * all-reduces of n floats per algorithm. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm_impl.h"
#include "comm/comm_tcp.h"
#include "file_util.h"
#include "gf/comm.h"
#include "wait_util.h"

#define MAXW 8

/* The ranks' marks folder (tu_mark), made by the parent for each spawn of
 * the world and passed in this variable. */
#define MARKS_ENV "GF_TEST_COMM_MARKS"
/* Deadline of every wait of a rank for another rank's event: far beyond
 * what any of them takes (milliseconds), far below spawn_world's limit. */
#define EVENT_WAIT_S 15.0

/* ---- inputs and references ---------------------------------------------- */

static uint64_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* Rank r's element i: full mantissas, exponents -3..3, both signs, so the
 * order of additions shows in the rounded sums. */
static double input(int r, size_t i) {
  uint64_t h = hash64(((uint64_t)r << 40) + i + 17);
  double m = 1.0 + (double)(h & 0xfffffffffffffull) / 4503599627370496.0;
  return ((h >> 63) ? -1.0 : 1.0) * ldexp(m, (int)((h >> 52) % 7) - 3);
}
static int64_t input_i(int r, size_t i) {
  return (int64_t)(hash64(((uint64_t)r << 40) ^ (i * 31 + 5)) >> 3);
}

/* The tree's sum in rank order (lower + higher, level 0 first); reversed:
 * pairs half a world apart first (a wrong tree). world is 1..MAXW; v[0] is
 * written before the loop, so the result never depends on world >= 1
 * (which -O3's maybe-uninitialized cannot know). */
static float tree_f(int world, size_t i, int reversed) {
  float v[MAXW];
  v[0] = (float)input(0, i);
  for (int r = 1; r < world; r++) v[r] = (float)input(r, i);
  if (reversed) {
    for (int h = world / 2; h >= 1; h /= 2)
      for (int r = 0; r < h; r++) v[r] = v[r] + v[r + h];
  } else {
    for (int l = 1; l < world; l *= 2)
      for (int r = 0; r + l < world; r += 2 * l) v[r] = v[r] + v[r + l];
  }
  return v[0];
}
static double tree_d(int world, size_t i) {
  double v[MAXW];
  v[0] = input(0, i);
  for (int r = 1; r < world; r++) v[r] = input(r, i);
  for (int l = 1; l < world; l *= 2)
    for (int r = 0; r + l < world; r += 2 * l) v[r] = v[r] + v[r + l];
  return v[0];
}

static void fill_in(gf_comm_dtype dt, void *buf, int rank, size_t off,
                    size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (dt == GF_CDT_F32) ((float *)buf)[k] = (float)input(rank, off + k);
    else if (dt == GF_CDT_F64) ((double *)buf)[k] = input(rank, off + k);
    else ((int64_t *)buf)[k] = input_i(rank, off + k);
  }
}

/* Misses of buf against the exact sum (x 1/world for AVG): within rounding
 * for every algorithm; the tree's bits for the tree. */
static size_t misses(gf_comm *c, gf_comm_dtype dt, gf_reduce_op op,
                     const void *buf, size_t off, size_t n) {
  int world = gf_comm_world(c);
  int tree = gf_comm_algo_of(c) == GF_ALLREDUCE_TREE;
  size_t bad = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = off + k;
    double exact = 0, mag = 0;
    for (int r = 0; r < world; r++) {
      double x = dt == GF_CDT_F32 ? (double)(float)input(r, i) : input(r, i);
      exact += x;
      mag += fabs(x);
    }
    int bits_ok = 1;
    double got, tol;
    if (dt == GF_CDT_F32) {
      got = ((const float *)buf)[k];
      tol = 2.0 * world * ldexp(mag, -24);
      if (tree) {
        float want = tree_f(world, i, 0);
        if (op == GF_RED_AVG) want *= (float)(1.0 / world);
        bits_ok = memcmp(&want, (const float *)buf + k, 4) == 0;
      }
    } else {
      got = ((const double *)buf)[k];
      tol = 2.0 * world * ldexp(mag, -53);
      if (tree) {
        double want = tree_d(world, i);
        if (op == GF_RED_AVG) want *= 1.0 / world;
        bits_ok = memcmp(&want, (const double *)buf + k, 8) == 0;
      }
    }
    if (op == GF_RED_AVG) exact /= world, tol /= world;
    if (!(fabs(got - exact) <= tol) || !bits_ok) {
      if (bad < 3)
        fprintf(stderr, "  [%zu] %.17g, want %.17g +- %.3g%s\n", i, got, exact,
                tol, bits_ok ? "" : " (not the tree's bits)");
      bad++;
    }
  }
  return bad;
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static int identical_everywhere(gf_comm *c, const void *p, size_t n) {
  uint64_t mine = fnv(p, n), all[MAXW];
  gf_err e = {0};
  if (gf_comm_allgather(c, &mine, sizeof mine, all, &e)) return 0;
  for (int r = 0; r < gf_comm_world(c); r++)
    if (all[r] != mine) return 0;
  return 1;
}

static double now_s(void) { return gf_comm_now(); }

/* ---- the ranks' checks --------------------------------------------------- */

static void check_sums(gf_comm *c, const char *an) {
  const size_t n = 1031; /* not a multiple of any world: uneven chunks */
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  double *buf = malloc(n * 8);
  REQUIRE(buf);
  gf_err e = {0};
  for (int d = 0; d < 2; d++) {
    for (int o = 0; o < 2; o++) {
      gf_comm_dtype dt = d ? GF_CDT_F64 : GF_CDT_F32;
      gf_reduce_op op = o ? GF_RED_AVG : GF_RED_SUM;
      fill_in(dt, buf, rank, 0, n);
      CHECKF(gf_comm_allreduce(c, buf, n, dt, op, &e) == GF_OK, "%s: %s", an,
             e.msg);
      size_t bad = misses(c, dt, op, buf, 0, n);
      CHECKF(bad == 0, "%s %s %s: %zu of %zu wrong", an, d ? "f64" : "f32",
             o ? "avg" : "sum", bad, n);
      CHECKF(identical_everywhere(c, buf, n * (d ? 8 : 4)),
             "%s: ranks hold different bits", an);
    }
  }
  int64_t *ib = (int64_t *)buf;
  fill_in(GF_CDT_I64, ib, rank, 0, n);
  CHECKF(gf_comm_allreduce(c, ib, n, GF_CDT_I64, GF_RED_SUM, &e) == GF_OK,
         "%s i64: %s", an, e.msg);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t want = 0;
    for (int r = 0; r < world; r++) want += (uint64_t)input_i(r, i);
    bad += (uint64_t)ib[i] != want;
  }
  CHECKF(bad == 0, "%s i64: %zu wrong", an, bad);
  /* fewer elements than ranks: empty ring chunks */
  float small[3] = {1.0f + (float)rank, 2.0f, 3.0f};
  CHECK(gf_comm_allreduce(c, small, 3, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  CHECK(small[0] == (float)(world * (world + 1) / 2) &&
        small[2] == 3.0f * (float)world);
  CHECK(gf_comm_allreduce(c, NULL, 0, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  free(buf);
  /* a buffer larger than the socket buffers: messages move in pieces
   * (small integers, so every order of additions is exact) */
  const size_t big = (1u << 20) + 3;
  float *fb = malloc(big * sizeof *fb);
  REQUIRE(fb);
  for (size_t i = 0; i < big; i++)
    fb[i] = (float)((i % 13) * (size_t)(rank + 1));
  CHECKF(gf_comm_allreduce(c, fb, big, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK,
         "%s big: %s", an, e.msg);
  size_t wrong = 0;
  for (size_t i = 0; i < big; i++)
    wrong += fb[i] != (float)((i % 13) * (size_t)(world * (world + 1) / 2));
  CHECKF(wrong == 0, "%s big: %zu of %zu wrong", an, wrong, big);
  free(fb);

  if (gf_comm_algo_of(c) == GF_ALLREDUCE_TREE) {
    /* the reference must be able to fail: the reversed tree (at 4) or the
     * other operand order (at 2: the same bits, addition commutes, so the
     * proof is the reversed tree at 4 and the written-out sum at 2) */
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
      differ += tree_f(world, i, 0) != tree_f(world, i, 1);
    if (world == 4)
      CHECKF(differ > n / 8, "tree inputs too tame: %zu of %zu differ", differ,
             n);
    if (world == 2) {
      float v[64];
      fill_in(GF_CDT_F32, v, rank, 0, 64);
      CHECK(gf_comm_allreduce(c, v, 64, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
      size_t miss = 0;
      for (size_t i = 0; i < 64; i++) {
        float s = (float)input(0, i) + (float)input(1, i);
        miss += memcmp(&s, &v[i], 4) != 0;
      }
      CHECKF(miss == 0, "tree at 2: %zu not v0 + v1", miss);
    }
  }
}

/* bf16 helpers of the references (the library's own conversion is
 * checked against an independent one in test_comm_local.c). */
static float bf16_round(float f) {
  uint16_t h;
  float g;
  gf_comm_bf16_from_f32(&h, &f, 1);
  gf_comm_bf16_to_f32(&g, &h, 1);
  return g;
}

/* f32-as-bf16 and bf16 all-reduces: every result a bf16 value, the same
 * bits on every rank, within bf16 rounding of the exact sum (each input
 * and each partial sum rounded once: 2^-8 relative each, world of each);
 * at 2 ranks every algorithm gives bf16(bf16(v0) + bf16(v1)) exactly, and
 * the tree its own order at any world - both bit for bit. AVG scales the
 * bf16 sums in f32. */
static void check_bf16_sums(gf_comm *c, const char *an) {
  const size_t n = 1031;
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  int tree = gf_comm_algo_of(c) == GF_ALLREDUCE_TREE;
  float *buf = malloc(n * sizeof *buf), *avg = malloc(n * sizeof *avg);
  uint16_t *hb = malloc(n * sizeof *hb);
  REQUIRE(buf && avg && hb);
  gf_err e = {0};
  fill_in(GF_CDT_F32, buf, rank, 0, n);
  fill_in(GF_CDT_F32, avg, rank, 0, n);
  CHECKF(gf_comm_allreduce(c, buf, n, GF_CDT_F32_AS_BF16, GF_RED_SUM, &e) ==
             GF_OK,
         "%s bf16: %s", an, e.msg);
  int ha = -1;
  CHECK(gf_comm_iallreduce(c, avg, n, GF_CDT_F32_AS_BF16, GF_RED_AVG, &ha,
                           &e) == GF_OK);
  CHECKF(gf_comm_wait(c, ha, &e) == GF_OK, "%s bf16 avg: %s", an, e.msg);
  size_t bad = 0, notbf16 = 0, exact_miss = 0, avg_miss = 0;
  for (size_t i = 0; i < n; i++) {
    double exact = 0, mag = 0;
    float v[MAXW];
    for (int r = 0; r < world; r++) {
      v[r] = bf16_round((float)input(r, i));
      exact += (double)(float)input(r, i);
      mag += fabs((double)(float)input(r, i));
    }
    double tol = 2.0 * world * ldexp(mag, -8);
    bad += !(fabs((double)buf[i] - exact) <= tol);
    uint32_t u;
    memcpy(&u, &buf[i], 4);
    notbf16 += (u & 0xffffu) != 0;
    if (world == 2 || tree) {
      for (int l = 1; l < world; l *= 2)
        for (int r = 0; r + l < world; r += 2 * l)
          v[r] = bf16_round(v[r] + v[r + l]);
      exact_miss += memcmp(&v[0], &buf[i], 4) != 0;
    }
    float want_avg = buf[i] * (float)(1.0 / world);
    avg_miss += memcmp(&want_avg, &avg[i], 4) != 0;
  }
  CHECKF(bad == 0 && notbf16 == 0, "%s f32-as-bf16: %zu beyond rounding, %zu "
         "not bf16 values", an, bad, notbf16);
  CHECKF(exact_miss == 0, "%s f32-as-bf16: %zu not the reference's bits", an,
         exact_miss);
  CHECKF(avg_miss == 0, "%s f32-as-bf16 AVG: %zu not sum x 1/world", an,
         avg_miss);
  CHECKF(identical_everywhere(c, buf, n * 4), "%s bf16: ranks differ", an);
  /* bf16 buffers themselves */
  for (size_t i = 0; i < n; i++) {
    float x = (float)input(rank, i);
    gf_comm_bf16_from_f32(&hb[i], &x, 1);
  }
  CHECKF(gf_comm_allreduce(c, hb, n, GF_CDT_BF16, GF_RED_SUM, &e) == GF_OK,
         "%s bf16 buffers: %s", an, e.msg);
  gf_comm_bf16_to_f32(avg, hb, n);
  CHECK(memcmp(avg, buf, n * 4) == 0); /* the same sums */
  CHECK(identical_everywhere(c, hb, n * 2));
  /* the big buffer in pieces, and AVG refused for bf16 */
  CHECK(gf_comm_allreduce(c, hb, n, GF_CDT_BF16, GF_RED_AVG, &e) == GF_EINVAL);
  free(buf);
  free(avg);
  free(hb);
}

static void check_overlap(gf_comm *c, const char *an) {
  enum { NB = 8, LEN = 4099 };
  int rank = gf_comm_rank(c);
  float *buf = malloc(sizeof(float) * NB * LEN);
  REQUIRE(buf);
  fill_in(GF_CDT_F32, buf, rank, 0, (size_t)NB * LEN);
  gf_err e = {0};
  int h[NB], finished[NB] = {0};
  for (int b = 0; b < NB; b++) {
    CHECKF(gf_comm_iallreduce(c, buf + (size_t)b * LEN, LEN, GF_CDT_F32,
                              GF_RED_SUM, &h[b], &e) == GF_OK,
           "%s: iallreduce %d: %s", an, b, e.msg);
    if (b == 4) CHECKF(gf_comm_barrier(c, &e) == GF_OK, "%s: %s", an, e.msg);
  }
  int left = NB;
  double t0 = now_s();
  while (left && now_s() - t0 < 20) {
    for (int k = 0; k < NB; k++) {
      int b = rank % 2 ? k : NB - 1 - k, done = 0;
      if (finished[b]) continue;
      CHECK(gf_comm_test(c, h[b], &done, &e) == GF_OK);
      if (!done) continue;
      CHECKF(gf_comm_wait(c, h[b], &e) == GF_OK, "%s: %s", an, e.msg);
      finished[b] = 1;
      left--;
    }
  }
  CHECKF(left == 0, "%s: %d requests never finished", an, left);
  for (int b = 0; b < NB; b++) {
    size_t bad = misses(c, GF_CDT_F32, GF_RED_SUM, buf + (size_t)b * LEN,
                        (size_t)b * LEN, LEN);
    CHECKF(bad == 0, "%s: bucket %d: %zu wrong", an, b, bad);
  }
  /* the bits of the same all-reduces one at a time: each request's
   * additions keep their order whatever ran beside it */
  float *one = malloc(sizeof(float) * NB * LEN);
  REQUIRE(one);
  fill_in(GF_CDT_F32, one, rank, 0, (size_t)NB * LEN);
  for (int b = 0; b < NB; b++)
    CHECK(gf_comm_allreduce(c, one + (size_t)b * LEN, LEN, GF_CDT_F32,
                            GF_RED_SUM, &e) == GF_OK);
  CHECKF(memcmp(one, buf, sizeof(float) * NB * LEN) == 0,
         "%s: overlapped requests differ from the same one at a time", an);
  free(one);
  /* waited on out of order, before any test */
  for (int b = 0; b < NB; b++)
    CHECK(gf_comm_iallreduce(c, buf + (size_t)b * LEN, 16, GF_CDT_F32,
                             GF_RED_SUM, &h[b], &e) == GF_OK);
  for (int b = NB - 1; b >= 0; b--)
    CHECKF(gf_comm_wait(c, h[b], &e) == GF_OK, "%s: %s", an, e.msg);
  CHECK(gf_comm_wait(c, h[0], &e) == GF_EINVAL);
  free(buf);
}

static void run_algo(const gf_launch_info *li, gf_allreduce_algo a,
                     const char *hosts) {
  char an[64];
  snprintf(an, sizeof an, "%s%s", gf_allreduce_algo_name(a),
           hosts ? " (2 hosts)" : "");
  gf_launch_info l = *li;
  if (hosts)
    snprintf(l.hostname, sizeof l.hostname, "%s-%d", hosts, l.rank % 2);
  gf_comm_config cfg = {GF_COMM_TCP, a, 30.0, NULL, &l};
  gf_comm *c = NULL;
  gf_err e = {0};
  gf_status st = gf_comm_init(&c, &cfg, &e);
  CHECKF(st == GF_OK, "%s: init: %s", an, e.msg);
  if (st) return;
  if (hosts) {
    CHECK_INT_EQ(gf_comm_nodes(c), 2);
    CHECK_INT_EQ(gf_comm_local_rank(c), l.rank / 2);
  }
  check_sums(c, an);
  check_bf16_sums(c, an);
  check_overlap(c, an);
  gf_comm_stats s;
  gf_comm_get_stats(c, &s);
  CHECKF(s.allreduce_calls > 10 && s.busy_s > 0, "%s: stats", an);
  gf_comm_free(c);
}

static void check_basics(gf_comm *c, const gf_launch_info *li) {
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  gf_err e = {0};
  CHECK(rank == li->rank && world == li->world_size);
  CHECK(gf_comm_backend_of(c) == GF_COMM_TCP);
  CHECK(gf_comm_device_buffers(c) == 0);
  CHECK_INT_EQ(gf_comm_nodes(c), 1);
  CHECK_INT_EQ(gf_comm_local_world(c), world);
  CHECK_INT_EQ(gf_comm_local_rank(c), rank);
  int me[3] = {rank, rank * rank, -rank}, all[3 * MAXW];
  CHECKF(gf_comm_allgather(c, me, sizeof me, all, &e) == GF_OK, "%s", e.msg);
  for (int r = 0; r < world; r++)
    CHECK(all[3 * r] == r && all[3 * r + 1] == r * r && all[3 * r + 2] == -r);
  double d[300];
  int64_t q[5];
  unsigned char u[77];
  for (int i = 0; i < 300; i++) d[i] = rank == 1 ? input(1, i) : 0.0;
  for (int i = 0; i < 5; i++) q[i] = rank == 1 ? input_i(1, i) : 0;
  for (int i = 0; i < 77; i++) u[i] = (unsigned char)(rank == 1 ? i * 3 : 0);
  CHECKF(gf_comm_broadcast(c, d, 300, GF_CDT_F64, 1, &e) == GF_OK, "%s", e.msg);
  CHECK(gf_comm_broadcast(c, q, 5, GF_CDT_I64, 1, &e) == GF_OK);
  CHECK(gf_comm_broadcast(c, u, 77, GF_CDT_U8, 1, &e) == GF_OK);
  for (int i = 0; i < 300; i++) CHECK(d[i] == input(1, i));
  for (int i = 0; i < 5; i++) CHECK(q[i] == input_i(1, i));
  for (int i = 0; i < 77; i++) CHECK(u[i] == (unsigned char)(i * 3));
  for (int k = 0; k < 5; k++) CHECK(gf_comm_barrier(c, &e) == GF_OK);
  CHECK(gf_comm_broadcast(c, d, 1, GF_CDT_F64, world, &e) == GF_EINVAL);
}

/* Ranks that call different collectives fail with GF_EINVAL naming the
 * mismatch, on a comm of their own. */
static void check_mismatch(const gf_launch_info *li) {
  gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 10.0, NULL, li};
  gf_comm *c = NULL;
  gf_err e = {0};
  REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
  float x[40] = {0};
  gf_status st = gf_comm_allreduce(c, x, li->rank == 0 ? 40 : 20, GF_CDT_F32,
                                   GF_RED_SUM, &e);
  CHECKF(st == GF_EINVAL || st == GF_EIO, "mismatch gave %s: %s",
         gf_status_name(st), e.msg);
  /* the ranks next to rank 0 see its other count; farther ones may see
   * the rank that failed go */
  if (st == GF_EINVAL)
    CHECKF(strstr(e.msg, "different orders or with different counts"), "%s",
           e.msg);
  gf_comm_free(c);
}

/* ---- scenarios (one per spawn of the world) ------------------------------ */

/* The bytes that peer sent this rank that no receive has taken yet: those
 * unread in the socket (FIONREAD) and those the comm read ahead of their
 * receives (it drains every stream it polls). */
static long come_from(gf_comm *c, int peer) {
  int fd = gf_comm_tcp_peer_fd(c, peer), n = 0;
  if (fd < 0 || ioctl(fd, FIONREAD, &n) != 0) n = 0;
  return (long)n + (long)gf_comm_tcp_early_bytes(c, peer);
}

/* The most of that over the peers. */
static long most_unread(gf_comm *c) {
  long most = 0;
  for (int p = 0; p < gf_comm_world(c); p++) {
    long n = p == gf_comm_rank(c) ? 0 : come_from(c, p);
    if (n > most) most = n;
  }
  return most;
}

/* More unread bytes than any header or control message (24 bytes) or a
 * barrier's empty messages: part of a data chunk. */
#define CHUNK_UNREAD_MIN 16384

static int chunk_waiting(void *arg) {
  return most_unread(arg) >= CHUNK_UNREAD_MIN;
}

/* World 3, the hierarchical all-reduce on two fake hosts: rank 0 alone on
 * one, ranks 1 and 2 on the other, so rank 0's all-reduce waits on rank 1
 * (the leaders' ring) while rank 1 waits on rank 2 (its node's reduce).
 * Rank 2 goes once ranks 0 and 1 have called the all-reduce:
 *   lost  it kills itself (SIGKILL; the parent expects that): rank 1 sees
 *         its connection close, rank 0 either that on its own connection
 *         to rank 2 or rank 1's LOST notice, whichever comes first;
 *   cut   it shuts down only its connection to rank 1 and stays alive,
 *         quiet, so that rank 0 can learn of it from rank 1 alone: its
 *         message must be the forwarded one.
 * Both: ranks 0 and 1 fail with GF_EIO naming rank 2 within LOST_WITHIN_S
 * although their timeout is 60 s. */
#define LOST_WITHIN_S 1.0
static void lost_scenario(const gf_launch_info *li0, const char *marks,
                          int cut) {
  gf_launch_info li = *li0;
  gf_err e = {0};
  REQUIRE(li.world_size == 3);
  snprintf(li.hostname, sizeof li.hostname, "fake-%c", li.rank ? 'b' : 'a');
  gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_HIER, 60.0, NULL, &li};
  gf_comm *c = NULL;
  REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
  CHECK_INT_EQ(gf_comm_nodes(c), 2);
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
  size_t n = 1 << 16;
  float *x = calloc(n, sizeof *x);
  REQUIRE(x);
  if (li.rank == 2) {
    CHECKF(tu_wait_marks(marks, "in-allreduce", 3, 2, EVENT_WAIT_S),
           "rank 2: ranks 0 and 1 did not call the all-reduce");
    if (!cut) {
      fflush(NULL);
      raise(SIGKILL);
    }
    int fd = gf_comm_tcp_peer_fd(c, 1);
    CHECK(fd >= 0 && shutdown(fd, SHUT_WR) == 0);
    CHECKF(tu_wait_marks(marks, "saw-loss", 3, 2, EVENT_WAIT_S),
           "rank 2: ranks 0 and 1 did not both see the loss");
    gf_comm_free(c);
    free(x);
    return;
  }
  tu_mark(marks, "in-allreduce", li.rank);
  double t0 = now_s();
  gf_status st = gf_comm_allreduce(c, x, n, GF_CDT_F32, GF_RED_SUM, &e);
  double dt = now_s() - t0;
  fprintf(stderr, "%s: rank %d: %.3f s: %s\n", cut ? "cut" : "lost", li.rank,
          dt, e.msg);
  CHECKF(st == GF_EIO, "rank %d: %s: %s", li.rank, gf_status_name(st), e.msg);
  CHECKF(dt < LOST_WITHIN_S, "rank %d: the loss took %.3f s to reach it",
         li.rank, dt);
  if (li.rank == 1 || !cut)
    CHECKF(strstr(e.msg, "rank 2 closed") || strstr(e.msg, "rank 2 is gone"),
           "rank %d: %s", li.rank, e.msg);
  else
    CHECKF(strstr(e.msg, "rank 2 is gone (seen by rank 1: connection closed)"),
           "rank 0: %s", e.msg);
  /* a free sends BYE, which the other survivor would report instead if it
   * had not seen the loss yet */
  tu_mark(marks, "saw-loss", li.rank);
  CHECKF(tu_wait_marks(marks, "saw-loss", 3, 2, EVENT_WAIT_S),
         "rank %d: the other survivor did not see the loss", li.rank);
  gf_comm_free(c);
  free(x);
}

/* World 3, ring: rank 0 starts two all-reduces A and B while ranks 1 and
 * 2 have called nothing yet, so A cannot finish. B's first chunk must
 * still leave rank 0 at once: rank 1, calling nothing, waits until both
 * first chunks (A's and B's, with their headers) sit unread in its socket
 * from rank 0 - an engine that moves one request at a time never sends
 * B's. Then ranks 1 and 2 call A and B too, in the same order, and every
 * rank checks the sums and that they are the bits of the same all-reduces
 * run one at a time. */
static void ahead_scenario(const gf_launch_info *li, const char *marks) {
  enum { N = 3 * 2048 }; /* a chunk: 8 KiB, far below a socket's buffer */
  gf_err e = {0};
  REQUIRE(li->world_size == 3);
  gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 30.0, NULL, li};
  gf_comm *c = NULL;
  REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
  float *a = malloc(4 * N * sizeof *a), *b = a + N, *a1 = b + N, *b1 = a1 + N;
  REQUIRE(a);
  fill_in(GF_CDT_F32, a, li->rank, 0, N);
  fill_in(GF_CDT_F32, b, li->rank, N, N);
  memcpy(a1, a, 2 * N * sizeof *a);
  int ha = -1, hb = -1, done = 0;
  if (li->rank == 1) {
    /* nothing more read here until both chunks are in (the barrier's
     * last poll may have read the first ahead) */
    const long want = 2 * (long)(N / 3 * sizeof(float) + 24);
    int fd = gf_comm_tcp_peer_fd(c, 0);
    tu_deadline d = tu_deadline_in(EVENT_WAIT_S);
    long got = 0;
    while (!tu_deadline_passed(&d)) {
      got = come_from(c, 0);
      if (got >= want) break;
      tu_wait_fd(fd, POLLIN, 0.01);
    }
    CHECKF(got >= want,
           "rank 1: %ld bytes from rank 0 within %.3g s, not the %ld of both "
           "requests' first chunks: B waited for A",
           got, EVENT_WAIT_S, want);
    tu_mark(marks, "both-chunks", 1);
  } else if (li->rank == 2) {
    CHECKF(tu_wait_marks(marks, "both-chunks", 2, 0, EVENT_WAIT_S),
           "rank 2: rank 1 did not see both chunks");
  }
  REQUIRE(gf_comm_iallreduce(c, a, N, GF_CDT_F32, GF_RED_SUM, &ha, &e) == 0);
  REQUIRE(gf_comm_iallreduce(c, b, N, GF_CDT_F32, GF_RED_SUM, &hb, &e) == 0);
  if (li->rank == 0) {
    /* keeps testing (moving bytes) until rank 1 has both chunks */
    tu_deadline d = tu_deadline_in(EVENT_WAIT_S);
    while (!tu_has_mark(marks, "both-chunks", 1) && !tu_deadline_passed(&d)) {
      CHECK(gf_comm_test(c, hb, &done, &e) == GF_OK);
      CHECK(!done);
      tu_wait_fd(gf_comm_tcp_peer_fd(c, 1), POLLIN, 0.002);
    }
  }
  CHECKF(gf_comm_wait(c, hb, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_comm_wait(c, ha, &e) == GF_OK, "%s", e.msg);
  CHECK(misses(c, GF_CDT_F32, GF_RED_SUM, a, 0, N) == 0);
  CHECK(misses(c, GF_CDT_F32, GF_RED_SUM, b, N, N) == 0);
  CHECK(gf_comm_allreduce(c, a1, N, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  CHECK(gf_comm_allreduce(c, b1, N, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  CHECK(memcmp(a, a1, 2 * N * sizeof *a) == 0);
  gf_comm_free(c);
  free(a);
}

static int child_main(const char *scenario) {
  gf_launch_info li;
  gf_err e = {0};
  REQUIRE(gf_launch_detect(&li, gf_launch_getenv, NULL, &e) == GF_OK);
  int world = li.world_size, last = world - 1;
  const char *marks = getenv(MARKS_ENV);
  REQUIRE(marks && *marks);
  if (!strcmp(scenario, "main")) {
    gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 30.0, NULL, &li};
    gf_comm *c = NULL;
    REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
    check_basics(c, &li);
    for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++)
      run_algo(&li, (gf_allreduce_algo)a, NULL);
    run_algo(&li, GF_ALLREDUCE_HIER, "fakehost");
    check_mismatch(&li);
    CHECK(gf_comm_barrier(c, &e) == GF_OK);
    gf_comm_free(c);
  } else if (!strcmp(scenario, "timeout")) {
    gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 30.0, NULL, &li};
    gf_comm *c = NULL;
    REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
    CHECK(gf_comm_barrier(c, &e) == GF_OK);
    if (li.rank != last) {
      float x[8] = {1};
      gf_comm_set_timeout(c, 0.5);
      double t0 = now_s();
      gf_status st = gf_comm_allreduce(c, x, 8, GF_CDT_F32, GF_RED_SUM, &e);
      double dt = now_s() - t0;
      CHECKF(st == GF_ETIMEOUT, "rank %d: %s: %s", li.rank, gf_status_name(st),
             e.msg);
      CHECKF(dt >= 0.49 && dt < 1.5, "timed out after %.3f s", dt);
      CHECKF(strstr(e.msg, "0.5 s") != NULL, "%s", e.msg);
      tu_mark(marks, "allreduce-returned", li.rank);
    }
    /* A free sends BYE, which a rank still inside its all-reduce would
     * report as GF_EIO ("freed its communicator") instead of timing out;
     * so nobody frees - the last rank, which never calls, included -
     * before every other rank has timed out. */
    CHECKF(tu_wait_marks(marks, "allreduce-returned", world, last,
                         EVENT_WAIT_S),
           "rank %d: not every other rank's all-reduce returned", li.rank);
    gf_comm_free(c);
  } else if (!strcmp(scenario, "dead")) {
    gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 30.0, NULL, &li};
    gf_comm *c = NULL;
    REQUIRE(gf_comm_init(&c, &cfg, &e) == GF_OK);
    CHECK(gf_comm_barrier(c, &e) == GF_OK);
    size_t n = 1 << 20;
    float *x = calloc(n, sizeof *x);
    REQUIRE(x);
    if (li.rank == last) {
      /* dies while the others are in an all-reduce, with their first
       * chunks unread in its socket buffers: once every other rank has
       * marked that it calls the all-reduce, and its ring neighbour's
       * first chunk (1 MB / world) waits here unread */
      CHECKF(tu_wait_marks(marks, "in-allreduce", world, last, EVENT_WAIT_S),
             "rank %d: not every other rank called the all-reduce", last);
      CHECKF(tu_wait_for(chunk_waiting, c, EVENT_WAIT_S, 0.001),
             "rank %d: no chunk of the all-reduce arrived within %.3g s "
             "(most unread in a socket: %ld bytes)",
             last, EVENT_WAIT_S, most_unread(c));
      _exit(check_report());
    }
    tu_mark(marks, "in-allreduce", li.rank);
    double t0 = now_s();
    gf_status st = gf_comm_allreduce(c, x, n, GF_CDT_F32, GF_RED_SUM, &e);
    double dt = now_s() - t0;
    /* found on its own connection to the dead rank, or told by another
     * survivor that found it first */
    char name[32], gone[32];
    snprintf(name, sizeof name, "rank %d closed", last);
    snprintf(gone, sizeof gone, "rank %d is gone", last);
    CHECKF(st == GF_EIO &&
               ((strstr(e.msg, name) && strstr(e.msg, "die")) ||
                strstr(e.msg, gone)),
           "rank %d: %s: %s", li.rank, gf_status_name(st), e.msg);
    CHECKF(dt < 2.0, "rank %d: the death took %.3f s to notice", li.rank, dt);
    fprintf(stderr, "rank %d: %.3f s: %s\n", li.rank, dt, e.msg);
    /* the comm stays broken, at once */
    t0 = now_s();
    CHECK(gf_comm_barrier(c, &e) == GF_EIO && now_s() - t0 < 0.5);
    /* the abort's notice reaches every other survivor, and one that had
     * not seen the death yet would report the abort instead: abort only
     * once every survivor has seen it */
    tu_mark(marks, "saw-death", li.rank);
    CHECKF(tu_wait_marks(marks, "saw-death", world, last, EVENT_WAIT_S),
           "rank %d: not every survivor saw rank %d die", li.rank, last);
    gf_comm_abort(c, 3);
    CHECK(gf_comm_barrier(c, &e) == GF_ESTATE);
    gf_comm_free(c);
    free(x);
  } else if (!strcmp(scenario, "ahead")) {
    ahead_scenario(&li, marks);
  } else if (!strcmp(scenario, "lost") || !strcmp(scenario, "cut")) {
    lost_scenario(&li, marks, !strcmp(scenario, "cut"));
  } else if (!strcmp(scenario, "world")) {
    /* the last rank thinks the world is one larger */
    if (li.rank == last) li.world_size = world + 1;
    gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 3.0, NULL, &li};
    gf_comm *c = NULL;
    gf_status st = gf_comm_init(&c, &cfg, &e);
    CHECK(st != GF_OK && c == NULL);
    if (li.rank == 0)
      CHECKF(st == GF_EINVAL && strstr(e.msg, "WORLD_SIZE differs"), "%s: %s",
             gf_status_name(st), e.msg);
    else if (li.rank == last)
      CHECKF(st == GF_EINVAL && strstr(e.msg, "rejected") &&
                 strstr(e.msg, "world size differs"),
             "%s: %s", gf_status_name(st), e.msg);
    else
      CHECKF(st == GF_EIO || st == GF_ETIMEOUT, "%s: %s", gf_status_name(st),
             e.msg);
  } else if (!strcmp(scenario, "bench")) {
    size_t n = (size_t)atol(getenv("GF_COMM_BENCH"));
    float *buf = malloc(n * sizeof *buf);
    REQUIRE(buf);
    for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++) {
      gf_comm_config cfg = {GF_COMM_TCP, (gf_allreduce_algo)a, 60, NULL, &li};
      gf_comm *c = NULL;
      if (gf_comm_init(&c, &cfg, &e)) continue;
      double t[20];
      for (int k = -3; k < 20; k++) {
        for (size_t i = 0; i < n; i++) buf[i] = (float)(i % 7);
        REQUIRE(gf_comm_barrier(c, &e) == GF_OK);
        double t0 = now_s();
        REQUIRE(gf_comm_allreduce(c, buf, n, GF_CDT_F32, GF_RED_SUM, &e) == 0);
        if (k >= 0) t[k] = now_s() - t0;
      }
      for (int i = 1; i < 20; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
          double tmp = t[j];
          t[j] = t[j - 1];
          t[j - 1] = tmp;
        }
      if (li.rank == 0)
        printf("tcp allreduce %-12s %zu f32 x %d ranks: median %.3f ms "
               "(min %.3f, max %.3f)\n",
               gf_allreduce_algo_name((gf_allreduce_algo)a), n, world,
               1e3 * t[10], 1e3 * t[0], 1e3 * t[19]);
      gf_comm_free(c);
    }
    free(buf);
  } else {
    fprintf(stderr, "unknown scenario %s\n", scenario);
    return 2;
  }
  int rc = check_report();
  if (rc)
    fprintf(stderr, "%s: rank %d of %d failed\n", scenario, li.rank, world);
  return rc;
}

/* ---- the parent ---------------------------------------------------------- */

/* A port that was free a moment ago. */
static int free_port(void) {
  int fd = -1, port = 0;
  gf_err e = {0};
  REQUIRE(gf_comm_listen("test", 0, &fd, &port, &e) == GF_OK);
  close(fd);
  return port;
}

/* Runs `scenario` on `world` ranks; every rank must exit 0 within
 * limit_s (then the ones left are killed), but rank `killed` (-1: none),
 * which must end by SIGKILL. The ranks share a fresh marks
 * folder (MARKS_ENV), removed afterwards. The parent sleeps until a rank
 * ends (SIGCHLD, blocked and taken with sigtimedwait) or the limit. */
static void spawn_world(const char *scenario, int world, double limit_s,
                        int killed) {
  int port = free_port();
  char marks[512];
  tu_mkdtemp(marks, sizeof marks);
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  REQUIRE(sigprocmask(SIG_BLOCK, &chld, &old_mask) == 0);
  pid_t pid[MAXW];
  double t0 = now_s();
  for (int r = 0; r < world; r++) {
    pid[r] = fork();
    REQUIRE(pid[r] >= 0);
    if (pid[r] == 0) {
      sigprocmask(SIG_SETMASK, &old_mask, NULL);
      setenv(MARKS_ENV, marks, 1);
      char v[4][16];
      snprintf(v[0], 16, "%d", r);
      snprintf(v[1], 16, "%d", world);
      snprintf(v[2], 16, "%d", port);
      unsetenv("OMPI_COMM_WORLD_RANK");
      unsetenv("PMIX_RANK");
      unsetenv("SLURM_PROCID");
      setenv("RANK", v[0], 1);
      setenv("LOCAL_RANK", v[0], 1);
      setenv("WORLD_SIZE", v[1], 1);
      setenv("LOCAL_WORLD_SIZE", v[1], 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", v[2], 1);
      execl("/proc/self/exe", "test_kernels_comm_tcp", "--rank", scenario,
            (char *)NULL);
      _exit(127);
    }
  }
  int left = world, status[MAXW], kill_sent = 0;
  for (int r = 0; r < world; r++) status[r] = -1;
  tu_deadline limit = tu_deadline_in(limit_s);
  while (left) {
    int ws = 0;
    pid_t p = waitpid(-1, &ws, WNOHANG);
    REQUIRE(p >= 0);
    if (p > 0) {
      for (int r = 0; r < world; r++)
        if (pid[r] == p) {
          status[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
          pid[r] = 0;
          left--;
        }
      continue;
    }
    if (!kill_sent && tu_deadline_passed(&limit)) {
      fprintf(stderr, "%s: %d of %d ranks still running after %.0f s: "
                      "killed\n", scenario, left, world, limit_s);
      for (int r = 0; r < world; r++)
        if (pid[r] > 0) kill(pid[r], SIGKILL);
      kill_sent = 1;
      continue;
    }
    /* until a rank ends (SIGCHLD stays pending while blocked, so one that
     * ended since waitpid is not missed) or the limit */
    double wait_s = kill_sent ? 5.0 : tu_deadline_left(&limit) + 0.001;
    struct timespec ts = {(time_t)wait_s,
                          (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
    sigtimedwait(&chld, NULL, &ts);
  }
  REQUIRE(sigprocmask(SIG_SETMASK, &old_mask, NULL) == 0);
  double dt = now_s() - t0;
  for (int r = 0; r < world; r++)
    CHECKF(status[r] == (r == killed ? 128 + SIGKILL : 0),
           "%s: rank %d of %d exited with %d", scenario, r, world, status[r]);
  fprintf(stderr, "%s on %d ranks: %.2f s\n", scenario, world, dt);
  tu_rmdir(marks);
}

static void test_port_in_use(void) {
  /* another listener holds the port (the shared helper, port 0: any) */
  int fd = -1, held = 0;
  gf_err e = {0};
  REQUIRE(gf_comm_listen("test", 0, &fd, &held, &e) == GF_OK && held > 0);
  gf_launch_info li;
  memset(&li, 0, sizeof li);
  li.world_size = 2;
  li.local_world_size = 2;
  li.master_port = held;
  strcpy(li.master_addr, "127.0.0.1");
  strcpy(li.launcher, "torchrun");
  strcpy(li.hostname, "here");
  gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 1.0, NULL, &li};
  gf_comm *c = NULL;
  CHECK_INT_EQ(gf_comm_init(&c, &cfg, &e), GF_EIO);
  char port[32];
  snprintf(port, sizeof port, "MASTER_PORT %d", li.master_port);
  CHECKF(strstr(e.msg, port) && strstr(e.msg, "in use"), "%s", e.msg);
  CHECK(c == NULL);
  close(fd);
}

static void test_nobody_comes(void) {
  gf_launch_info li;
  memset(&li, 0, sizeof li);
  li.world_size = 4;
  li.local_world_size = 4;
  li.master_port = free_port();
  strcpy(li.master_addr, "127.0.0.1");
  strcpy(li.hostname, "here");
  gf_comm_config cfg = {GF_COMM_TCP, GF_ALLREDUCE_ENGINE, 0.3, NULL, &li};
  gf_comm *c = NULL;
  gf_err e = {0};
  double t0 = now_s();
  CHECK_INT_EQ(gf_comm_init(&c, &cfg, &e), GF_ETIMEOUT);
  CHECK(now_s() - t0 < 1.3);
  CHECKF(strstr(e.msg, "missing: 1, 2, 3"), "%s", e.msg);
  /* a rank > 0 that finds nobody at MASTER_PORT */
  li.rank = 2;
  t0 = now_s();
  CHECK_INT_EQ(gf_comm_init(&c, &cfg, &e), GF_ETIMEOUT);
  CHECK(now_s() - t0 < 1.3);
  CHECKF(strstr(e.msg, "could not reach rank 0"), "%s", e.msg);
  /* no MASTER_PORT */
  li.master_port = 0;
  CHECK_INT_EQ(gf_comm_init(&c, &cfg, &e), GF_EINVAL);
}

static void test_parsers(void) {
  unsigned char b[GF_TCP_MSG_BYTES];
  gf_tcp_msg m, hello = {GF_TCP_HELLO, 3, 4, 40000, 0};
  gf_err e = {0};
  gf_comm_tcp_put_msg(b, &hello);
  CHECK(gf_comm_tcp_parse_msg(b, sizeof b, &m, &e) == GF_OK);
  CHECK(m.kind == GF_TCP_HELLO && m.rank == 3 && m.world == 4 &&
        m.port == 40000 && m.token == 0);
  CHECK(gf_comm_tcp_parse_msg(b, sizeof b - 1, &m, &e) == GF_EFORMAT);
  const gf_tcp_msg bad[] = {
      {GF_TCP_HELLO, 4, 4, 1, 0},     /* rank = world */
      {GF_TCP_HELLO, 0, 4, 1, 0},     /* hello from 0 */
      {GF_TCP_HELLO, 1, 4, 0, 0},     /* port 0 */
      {GF_TCP_HELLO, 1, 4, 70000, 0}, /* port too big */
      {GF_TCP_HELLO, 1, 4, 5, 9},     /* token in a hello */
      {GF_TCP_TABLE, 1, 4, 0, 0},     /* table without a token */
      {GF_TCP_MESH, 1, 0, 0, 7},      /* world 0 */
      {GF_TCP_MESH, 1, 70000, 0, 7},  /* world too big */
      {GF_TCP_REJECT, 0, 2, 9, 0},    /* unknown reason */
      {9, 1, 2, 0, 0},                /* unknown kind */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_comm_tcp_put_msg(b, &bad[i]);
    CHECKF(gf_comm_tcp_parse_msg(b, sizeof b, &m, &e) == GF_EFORMAT,
           "bad message %zu accepted", i);
  }
  gf_comm_tcp_put_msg(b, &hello);
  b[0] = 'x';
  CHECK(gf_comm_tcp_parse_msg(b, sizeof b, &m, &e) == GF_EFORMAT);
  CHECK(strstr(e.msg, "magic") != NULL);
  gf_comm_tcp_put_msg(b, &hello);
  b[5] = 2; /* version 2 */
  CHECK(gf_comm_tcp_parse_msg(b, sizeof b, &m, &e) == GF_EFORMAT);
  CHECK(strstr(e.msg, "version") != NULL);

  unsigned char t[3 * GF_TCP_ENTRY_BYTES];
  gf_tcp_entry ent[3];
  memset(t, 0, sizeof t);
  t[24] = 4, t[28] = 127, t[31] = 1, t[47] = 80;         /* 127.0.0.1:80 */
  t[48] = 6, t[52 + 15] = 1, t[70] = 0x12, t[71] = 0x34; /* [::1]:4660 */
  CHECK(gf_comm_tcp_parse_table(t, sizeof t, 3, ent, &e) == GF_OK);
  CHECK(ent[1].family == 4 && ent[1].addr[0] == 127 && ent[1].port == 80);
  CHECK(ent[2].family == 6 && ent[2].addr[15] == 1 && ent[2].port == 0x1234);
  CHECK(gf_comm_tcp_parse_table(t, sizeof t - 1, 3, ent, &e) == GF_EFORMAT);
  t[40] = 1; /* IPv4 with bytes past the fourth */
  CHECK(gf_comm_tcp_parse_table(t, sizeof t, 3, ent, &e) == GF_EFORMAT);
  t[40] = 0;
  t[3] = 1; /* rank 0's entry not empty */
  CHECK(gf_comm_tcp_parse_table(t, sizeof t, 3, ent, &e) == GF_EFORMAT);
  t[3] = 0;
  t[47] = 0; /* port 0 */
  CHECK(gf_comm_tcp_parse_table(t, sizeof t, 3, ent, &e) == GF_EFORMAT);
  CHECK(strstr(e.msg, "rank 1") != NULL);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--rank")) return child_main(argv[2]);
  int world = argc > 1 ? atoi(argv[1]) : 2;
  REQUIRE(world >= 2 && world <= MAXW);
  CHECK(gf_comm_built(GF_COMM_TCP));
  if (getenv("GF_COMM_BENCH")) {
    spawn_world("bench", world, 300, -1);
    return check_report();
  }
  test_parsers();
  test_port_in_use();
  test_nobody_comes();
  spawn_world("main", world, 60, -1);
  spawn_world("timeout", world, 20, -1);
  spawn_world("dead", world, 20, -1);
  spawn_world("world", world, 20, -1);
  if (world == 2) { /* once (not again at 4): the scenarios of 3 ranks */
    spawn_world("ahead", 3, 30, -1);
    spawn_world("lost", 3, 20, 2);
    spawn_world("cut", 3, 20, -1);
  }
  return check_report();
}
