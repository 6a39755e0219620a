/* test_comm_mpi.c - gf_comm's mpi backend on 2 or 4 ranks (run it under
 * mpiexec -np 2 / -np 4; ctest does both, label mpi). Each rank computes
 * every rank's inputs itself, so each result is checked against a local
 * reference:
 *   - every algorithm x SUM/AVG x f32/f64, and i64 SUM, within rounding of
 *     the exact sum; the several-step algorithms leave identical bits on
 *     every rank;
 *   - tree: bit for bit the binary-tree sum in rank order, (v0+v1) and
 *     ((v0+v1)+(v2+v3)), on inputs where another order gives other bits
 *     (checked too, so the comparison can fail);
 *   - 8 outstanding non-blocking all-reduces on disjoint buckets with a
 *     blocking barrier among them, polled with gf_comm_test and waited in
 *     an order that differs between ranks; the 64-handle limit;
 *   - broadcast from rank 1 (f64, i64, u8), barrier, allgather of ranks and
 *     hostnames, topology (one host), statistics;
 *   - the timeout path: rank 0 (timeout 0.3 s) waits on an all-reduce rank
 *     1 has not called, gets GF_ETIMEOUT from gf_comm_wait, and the request
 *     stays outstanding; only then (a barrier on another communicator tells
 *     it) does rank 1 call, and a second wait with a longer timeout
 *     completes with the right sum;
 *   - init refusals: a launch MPI disagrees with, tree at world 3, local
 *     at world > 1;
 *   - f32-as-bf16 and bf16 (the comm's bf16 sum op): bf16 values within
 *     bf16 rounding, the same bits everywhere, bit for bit the reference at
 *     2 ranks and for the tree.
 * The first comm initializes MPI and is freed last (finalizing it).
 *
 * GF_COMM_BENCH=<n> in the environment replaces the checks by a timing:
 * the median of 20 blocking all-reduces of n floats per algorithm, printed
 * by rank 0. */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gf/comm.h"
#include "wait_util.h"

#define MAXW 64

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Rank r's input at element i: magnitudes 2^-20..2^20, mixed signs, so
 * that the order of the additions changes the rounded sum. */
static double val(int r, size_t i) {
  uint64_t h = mix((uint64_t)r * 1000003u + i);
  double m = 1.0 + (double)(h & 0xffffff) / 16777216.0;
  int ex = (int)((h >> 24) % 41) - 20;
  return ((h >> 40) & 1 ? -1.0 : 1.0) * ldexp(m, ex);
}
/* For the tree's bit-exact check: full 24-bit mantissas of close
 * magnitudes (2^-2..2^2) and mixed signs, where most sums round
 * differently in another order. */
static float valt(int r, size_t i) {
  uint64_t h = mix((uint64_t)r * 7777u + i + 0x5eed);
  float m = 1.0f + (float)(h & 0x7fffff) / 8388608.0f;
  int ex = (int)((h >> 23) % 5) - 2;
  return ((h >> 40) & 1 ? -1.0f : 1.0f) * ldexpf(m, ex);
}
static int64_t vali(int r, size_t i) {
  return (int64_t)(mix((uint64_t)r * 7919u + i) >> 6) - ((int64_t)1 << 57);
}

/* The tree's sum of v[0..world-1] in place, in rank order: lower + higher
 * at each level, level 0 first; `reversed` takes the levels the other way
 * round (a wrong tree). world is a power of two in 1..MAXW (the tree's
 * worlds); every element read is one of the world written, so the sum
 * ends in v[0]. */
static void tree_sum_f32(float *v, int world, int reversed) {
  if (!reversed) {
    for (int l = 1; l < world; l <<= 1)
      for (int r = 0; r + l < world; r += 2 * l) v[r] = v[r] + v[r + l];
    return;
  }
  for (int l = world / 2; l >= 1; l >>= 1)
    for (int r = 0; r < l; r++) v[r] = v[r] + v[r + l];
}

/* The tree's sum of valt over the ranks of `world` (see tree_sum_f32).
 * v[0] is written before the loop: the result never depends on world >= 1
 * (-O3's maybe-uninitialized cannot know it). */
static float tree_valt(int world, size_t i, int reversed) {
  float v[MAXW];
  v[0] = valt(0, i);
  for (int r = 1; r < world; r++) v[r] = valt(r, i);
  tree_sum_f32(v, world, reversed);
  return v[0];
}

/* The same tree over val. */
static float tree_f32(int world, size_t i, int reversed) {
  float v[MAXW];
  v[0] = (float)val(0, i);
  for (int r = 1; r < world; r++) v[r] = (float)val(r, i);
  tree_sum_f32(v, world, reversed);
  return v[0];
}
static double tree_f64(int world, size_t i) {
  double v[MAXW];
  v[0] = val(0, i);
  for (int r = 1; r < world; r++) v[r] = val(r, i);
  for (int l = 1; l < world; l <<= 1)
    for (int r = 0; r + l < world; r += 2 * l) v[r] = v[r] + v[r + l];
  return v[0];
}

static uint64_t digest(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Every rank holds the same bytes. */
static int same_everywhere(gf_comm *c, const void *p, size_t n) {
  uint64_t mine = digest(p, n), all[MAXW];
  gf_err e = {0};
  if (gf_comm_allgather(c, &mine, sizeof mine, all, &e)) {
    fprintf(stderr, "allgather: %s\n", e.msg);
    return 0;
  }
  for (int r = 0; r < gf_comm_world(c); r++)
    if (all[r] != mine) return 0;
  return 1;
}

/* Compares buf (f32 or f64) with the rank-order sum (x 1/world for AVG):
 * within rounding for every algorithm, bit for bit the tree order for
 * tree. Returns the number of misses. */
static size_t compare_sum(gf_comm *c, gf_comm_dtype dt, gf_reduce_op op,
                          const void *buf, size_t off, size_t n) {
  int world = gf_comm_world(c), tree = gf_comm_algo_of(c) == GF_ALLREDUCE_TREE;
  size_t bad = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = off + k;
    double sum = 0, sabs = 0;
    for (int r = 0; r < world; r++) sum += val(r, i), sabs += fabs(val(r, i));
    double got, tol;
    int exact_ok = 1;
    if (dt == GF_CDT_F32) {
      got = ((const float *)buf)[k];
      tol = 4.0 * world * ldexp(sabs, -24);
      if (tree) {
        float want = tree_f32(world, i, 0);
        if (op == GF_RED_AVG) want *= (float)(1.0 / world);
        exact_ok = memcmp(&want, &((const float *)buf)[k], 4) == 0;
      }
    } else {
      got = ((const double *)buf)[k];
      tol = 4.0 * world * ldexp(sabs, -53);
      if (tree) {
        double want = tree_f64(world, i);
        if (op == GF_RED_AVG) want *= 1.0 / world;
        exact_ok = memcmp(&want, &((const double *)buf)[k], 8) == 0;
      }
    }
    if (op == GF_RED_AVG) sum /= world, tol /= world;
    if (fabs(got - sum) > tol || !exact_ok) {
      if (bad < 3)
        fprintf(stderr, "  [%zu] got %.17g want %.17g (tol %.3g)%s\n", i, got,
                sum, tol, exact_ok ? "" : " not the tree's bits");
      bad++;
    }
  }
  return bad;
}

static void fill(gf_comm_dtype dt, void *buf, int rank, size_t off, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (dt == GF_CDT_F32) ((float *)buf)[k] = (float)val(rank, off + k);
    else if (dt == GF_CDT_F64) ((double *)buf)[k] = val(rank, off + k);
    else ((int64_t *)buf)[k] = vali(rank, off + k);
  }
}

static void check_allreduce(gf_comm *c, const char *an) {
  const size_t n = 1037;
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  int identical = gf_comm_algo_of(c) != GF_ALLREDUCE_ENGINE;
  double *buf = malloc(n * 8);
  REQUIRE(buf);
  gf_err e = {0};
  const gf_comm_dtype dts[] = {GF_CDT_F32, GF_CDT_F64};
  for (int d = 0; d < 2; d++) {
    for (int o = 0; o < 2; o++) {
      gf_comm_dtype dt = dts[d];
      gf_reduce_op op = o ? GF_RED_AVG : GF_RED_SUM;
      fill(dt, buf, rank, 0, n);
      gf_status st = gf_comm_allreduce(c, buf, n, dt, op, &e);
      CHECKF(st == GF_OK, "%s: %s", an, e.msg);
      size_t bad = compare_sum(c, dt, op, buf, 0, n);
      CHECKF(bad == 0, "%s %s %s: %zu of %zu wrong", an,
             dt == GF_CDT_F32 ? "f32" : "f64", o ? "avg" : "sum", bad, n);
      if (identical)
        CHECKF(same_everywhere(c, buf, n * (dt == GF_CDT_F32 ? 4 : 8)),
               "%s: ranks hold different bits", an);
    }
  }
  int64_t *ib = (int64_t *)buf;
  fill(GF_CDT_I64, ib, rank, 0, n);
  CHECKF(gf_comm_allreduce(c, ib, n, GF_CDT_I64, GF_RED_SUM, &e) == GF_OK,
         "%s i64: %s", an, e.msg);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t want = 0;
    for (int r = 0; r < world; r++) want += vali(r, i);
    bad += ib[i] != want;
  }
  CHECKF(bad == 0, "%s i64: %zu wrong", an, bad);
  free(buf);

  /* tree: bit for bit the rank-order tree; and the inputs are such that
   * the other order of levels gives other bits (else the check is blind) */
  if (gf_comm_algo_of(c) == GF_ALLREDUCE_TREE) {
    float f[256];
    for (size_t i = 0; i < 256; i++) f[i] = valt(rank, i);
    CHECK(gf_comm_allreduce(c, f, 256, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
    size_t miss = 0, other_tree = 0, other_seq = 0;
    for (size_t i = 0; i < 256; i++) {
      float want = tree_valt(world, i, 0);
      miss += memcmp(&want, &f[i], 4) != 0;
      if (world == 2) {
        /* (v0 + v1) in that order, as a sum written out */
        float v0 = valt(0, i), v1 = valt(1, i), s = v0 + v1;
        miss += memcmp(&s, &f[i], 4) != 0;
      } else if (world == 4) {
        float v0 = valt(0, i), v1 = valt(1, i);
        float v2 = valt(2, i), v3 = valt(3, i);
        float s = (v0 + v1) + (v2 + v3), wrong = tree_valt(world, i, 1);
        float seq = ((v0 + v1) + v2) + v3;
        miss += memcmp(&s, &f[i], 4) != 0;
        other_tree += memcmp(&wrong, &s, 4) != 0;
        other_seq += memcmp(&seq, &s, 4) != 0;
      }
    }
    CHECKF(miss == 0, "tree: %zu of 256 not the rank-order tree's bits", miss);
    if (world == 4)
      CHECKF(other_tree > 64 && other_seq > 64,
             "tree inputs too tame: only %zu (%zu) of 256 differ in "
             "(v0+v2)+(v1+v3) (((v0+v1)+v2)+v3)",
             other_tree, other_seq);
  }

  /* count 0 is a no-op; u8, AVG of i64 and NULL are refused */
  CHECK(gf_comm_allreduce(c, NULL, 0, GF_CDT_F32, GF_RED_SUM, &e) == GF_OK);
  unsigned char u8[4] = {0};
  CHECK(gf_comm_allreduce(c, u8, 4, GF_CDT_U8, GF_RED_SUM, &e) == GF_EINVAL);
  int64_t i1 = 1;
  CHECK(gf_comm_allreduce(c, &i1, 1, GF_CDT_I64, GF_RED_AVG, &e) == GF_EINVAL);
  CHECK(gf_comm_allreduce(c, NULL, 3, GF_CDT_F32, GF_RED_SUM, &e) == GF_EINVAL);
}

static void check_nonblocking(gf_comm *c, const char *an) {
  enum { NB = 8, BUCKET = 5003 };
  int rank = gf_comm_rank(c);
  float *buf = malloc(sizeof(float) * NB * BUCKET);
  REQUIRE(buf);
  fill(GF_CDT_F32, buf, rank, 0, NB * BUCKET);
  gf_err e = {0};
  int req[NB], waited[NB] = {0};
  for (int b = 0; b < NB; b++) {
    gf_reduce_op op = GF_RED_SUM;
    CHECKF(gf_comm_iallreduce(c, buf + (size_t)b * BUCKET, BUCKET, GF_CDT_F32,
                              op, &req[b], &e) == GF_OK,
           "%s: iallreduce %d: %s", an, b, e.msg);
    if (b == 3) /* a blocking call among the outstanding ones */
      CHECKF(gf_comm_barrier(c, &e) == GF_OK, "%s: barrier: %s", an, e.msg);
  }
  /* poll with test, in an order that differs between ranks, until every
   * request has completed; between rounds only a yield (more ranks than
   * cores): MPI advances the collectives inside MPI_Test alone */
  const double limit_s = 60;
  tu_deadline limit = tu_deadline_in(limit_s);
  int left = NB;
  while (left && !tu_deadline_passed(&limit)) {
    for (int k = 0; k < NB; k++) {
      int b = rank % 2 ? NB - 1 - k : k;
      int done = 0;
      if (waited[b]) continue;
      CHECK(gf_comm_test(c, req[b], &done, &e) == GF_OK);
      if (done) {
        CHECKF(gf_comm_wait(c, req[b], &e) == GF_OK, "%s: wait: %s", an, e.msg);
        waited[b] = 1;
        left--;
      }
    }
    sched_yield();
  }
  if (left) {
    fprintf(stderr, "%s: rank %d: requests of buckets", an, rank);
    for (int b = 0; b < NB; b++)
      if (!waited[b]) fprintf(stderr, " %d", b);
    fprintf(stderr, " not completed within %.0f s\n", limit_s);
  }
  CHECKF(left == 0, "%s: %d requests never completed", an, left);
  for (int b = 0; b < NB; b++) {
    size_t bad = compare_sum(c, GF_CDT_F32, GF_RED_SUM,
                             buf + (size_t)b * BUCKET, (size_t)b * BUCKET,
                             BUCKET);
    CHECKF(bad == 0, "%s: bucket %d: %zu wrong", an, b, bad);
  }
  /* released handles are gone */
  int done = 0;
  CHECK(gf_comm_wait(c, req[0], &e) == GF_EINVAL);
  CHECK(gf_comm_test(c, req[NB - 1], &done, &e) == GF_EINVAL);
  CHECK(gf_comm_wait(c, -1, &e) == GF_EINVAL);
  free(buf);
}

/* 64 handles at once; the 65th is refused (on every rank alike). */
static void check_limit(gf_comm *c, const char *an) {
  double x[65];
  int h[65];
  gf_err e = {0};
  int world = gf_comm_world(c);
  for (int i = 0; i < 65; i++) x[i] = i + 1;
  for (int i = 0; i < 64; i++)
    CHECKF(gf_comm_iallreduce(c, &x[i], 1, GF_CDT_F64, GF_RED_SUM, &h[i], &e) ==
               GF_OK,
           "%s: handle %d: %s", an, i, e.msg);
  CHECK(gf_comm_iallreduce(c, &x[64], 1, GF_CDT_F64, GF_RED_SUM, &h[64], &e) ==
        GF_ESTATE);
  for (int i = 63; i >= 0; i--)
    CHECKF(gf_comm_wait(c, h[i], &e) == GF_OK, "%s: wait %d: %s", an, i, e.msg);
  for (int i = 0; i < 64; i++) CHECK(x[i] == (double)(i + 1) * world);
}

/* Rank 1 is late: rank 0 calls an all-reduce rank 1 has not called yet,
 * waits with 0.3 s, times out and keeps the request (still not done: rank
 * 1 has not called); then it joins a barrier on `owner`, which rank 1 waits
 * at before it calls - another communicator, so c's collectives and
 * statistics see nothing of it. The ranks above 1 call at once and pass
 * the barrier with their request outstanding. The second wait completes
 * the request. */
static void check_timeout(gf_comm *c, gf_comm *owner, const char *an) {
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  gf_err e = {0};
  float x[4];
  for (int i = 0; i < 4; i++) x[i] = (float)(rank + 1) * (float)(i + 1);
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
  double old = gf_comm_timeout(c);
  int h = -1;
  if (rank == 0) {
    gf_comm_set_timeout(c, 0.3);
    CHECK(gf_comm_iallreduce(c, x, 4, GF_CDT_F32, GF_RED_SUM, &h, &e) ==
          GF_OK);
    double t0 = now_s();
    gf_status st = gf_comm_wait(c, h, &e);
    double dt = now_s() - t0;
    CHECKF(st == GF_ETIMEOUT, "%s: wait gave %s", an, gf_status_name(st));
    CHECKF(dt >= 0.29 && dt < 1.5, "%s: timed out after %.3f s", an, dt);
    CHECKF(strstr(e.msg, "allreduce") && strstr(e.msg, "0.3 s"), "%s: %s", an,
           e.msg);
    int done = 1;
    CHECK(gf_comm_test(c, h, &done, &e) == GF_OK && done == 0);
    gf_comm_set_timeout(c, 30);
    CHECKF(gf_comm_barrier(owner, &e) == GF_OK, "%s: go barrier: %s", an,
           e.msg);
  } else {
    if (rank > 1)
      CHECK(gf_comm_iallreduce(c, x, 4, GF_CDT_F32, GF_RED_SUM, &h, &e) ==
            GF_OK);
    /* rank 1: until rank 0 has timed out */
    CHECKF(gf_comm_barrier(owner, &e) == GF_OK, "%s: go barrier: %s", an,
           e.msg);
    if (rank == 1)
      CHECK(gf_comm_iallreduce(c, x, 4, GF_CDT_F32, GF_RED_SUM, &h, &e) ==
            GF_OK);
  }
  gf_status st = gf_comm_wait(c, h, &e);
  CHECKF(st == GF_OK, "%s: second wait: %s", an, e.msg);
  float tot = (float)(world * (world + 1) / 2);
  for (int i = 0; i < 4; i++) CHECK(x[i] == tot * (float)(i + 1));
  gf_comm_set_timeout(c, old);
}

/* `owner` (the first comm) only carries check_timeout's go barrier. */
static float bf16_round(float f) {
  uint16_t h;
  float g;
  gf_comm_bf16_from_f32(&h, &f, 1);
  gf_comm_bf16_to_f32(&g, &h, 1);
  return g;
}

/* f32-as-bf16 (MPI_UINT16_T with the comm's bf16 sum op): bf16 values,
 * within bf16 rounding of the exact sum, the same bits on every rank; bit
 * for bit bf16(bf16(v0) + bf16(v1)) at 2 ranks and the tree's order at
 * any; AVG = the sums x 1/world in f32; bf16 buffers give the same sums. */
static void check_bf16(gf_comm *c, const char *an) {
  const size_t n = 1037;
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  int tree = gf_comm_algo_of(c) == GF_ALLREDUCE_TREE;
  float *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g);
  uint16_t *h = malloc(n * sizeof *h);
  REQUIRE(f && g && h);
  gf_err e = {0};
  for (size_t i = 0; i < n; i++) f[i] = g[i] = valt(rank, i);
  CHECKF(gf_comm_allreduce(c, f, n, GF_CDT_F32_AS_BF16, GF_RED_SUM, &e) ==
             GF_OK,
         "%s bf16: %s", an, e.msg);
  int hg = -1;
  CHECK(gf_comm_iallreduce(c, g, n, GF_CDT_F32_AS_BF16, GF_RED_AVG, &hg, &e) ==
        GF_OK);
  CHECKF(gf_comm_wait(c, hg, &e) == GF_OK, "%s bf16 avg: %s", an, e.msg);
  size_t far = 0, notbf16 = 0, miss = 0, avg_miss = 0;
  for (size_t i = 0; i < n; i++) {
    double exact = 0, mag = 0;
    float v[MAXW];
    for (int r = 0; r < world; r++) {
      v[r] = bf16_round(valt(r, i));
      exact += valt(r, i);
      mag += fabs((double)valt(r, i));
    }
    far += !(fabs((double)f[i] - exact) <= 2.0 * world * ldexp(mag, -8));
    uint32_t u;
    memcpy(&u, &f[i], 4);
    notbf16 += (u & 0xffffu) != 0;
    if (world == 2 || tree) {
      for (int l = 1; l < world; l *= 2)
        for (int r = 0; r + l < world; r += 2 * l)
          v[r] = bf16_round(v[r] + v[r + l]);
      miss += memcmp(&v[0], &f[i], 4) != 0;
    }
    float want = f[i] * (float)(1.0 / world);
    avg_miss += memcmp(&want, &g[i], 4) != 0;
  }
  CHECKF(far == 0 && notbf16 == 0 && miss == 0 && avg_miss == 0,
         "%s f32-as-bf16: %zu beyond rounding, %zu not bf16, %zu not the "
         "reference's bits, %zu AVG misses",
         an, far, notbf16, miss, avg_miss);
  CHECKF(same_everywhere(c, f, n * 4), "%s bf16: ranks differ", an);
  for (size_t i = 0; i < n; i++) {
    float x = valt(rank, i);
    gf_comm_bf16_from_f32(&h[i], &x, 1);
  }
  CHECKF(gf_comm_allreduce(c, h, n, GF_CDT_BF16, GF_RED_SUM, &e) == GF_OK,
         "%s bf16 buffers: %s", an, e.msg);
  gf_comm_bf16_to_f32(g, h, n);
  CHECKF(world > 2 && !tree ? same_everywhere(c, g, n * 4)
                            : memcmp(g, f, n * 4) == 0,
         "%s bf16 buffers: other sums", an);
  free(f);
  free(g);
  free(h);
}

static void run_algo(const gf_launch_info *li, gf_allreduce_algo a,
                     gf_comm *owner) {
  const char *an = gf_allreduce_algo_name(a);
  gf_comm_config cfg = {GF_COMM_MPI, a, 30.0, NULL, li};
  gf_comm *c = NULL;
  gf_err e = {0};
  gf_status st = gf_comm_init(&c, &cfg, &e);
  int pow2 = (li->world_size & (li->world_size - 1)) == 0;
  if (a == GF_ALLREDUCE_TREE && !pow2) {
    CHECKF(st == GF_EINVAL && c == NULL, "%s: %s", an, e.msg);
    return;
  }
  CHECKF(st == GF_OK, "%s: init: %s", an, e.msg);
  if (st) return;
  CHECK(gf_comm_algo_of(c) == a);
  gf_comm_stats s;
  gf_comm_get_stats(c, &s);
  CHECK(s.allreduce_calls == 0 && s.allreduce_bytes == 0);

  check_allreduce(c, an);
  gf_comm_get_stats(c, &s);
  const size_t n = 1037;
  uint64_t calls = 5 + (a == GF_ALLREDUCE_TREE) + 1;
  uint64_t bytes = n * (4 + 4 + 8 + 8 + 8) +
                   (a == GF_ALLREDUCE_TREE ? 256 * 4 : 0);
  CHECKF(s.allreduce_calls == calls && s.allreduce_bytes == bytes,
         "%s: stats %llu calls %llu bytes, want %llu %llu", an,
         (unsigned long long)s.allreduce_calls,
         (unsigned long long)s.allreduce_bytes, (unsigned long long)calls,
         (unsigned long long)bytes);
  CHECKF(s.busy_s > 0 && s.wait_s > 0, "%s: busy %g wait %g", an, s.busy_s,
         s.wait_s);

  check_nonblocking(c, an);
  check_limit(c, an);
  check_timeout(c, owner, an);
  gf_comm_get_stats(c, &s);
  CHECKF(s.allreduce_calls == calls + 8 + 64 + 1, "%s: %llu calls", an,
         (unsigned long long)s.allreduce_calls);
  CHECK(gf_comm_rank(c) != 0 || s.wait_s >= 0.3);
  check_bf16(c, an);
  gf_comm_free(c);
}

static void check_owner(gf_comm *c, const gf_launch_info *li) {
  int rank = gf_comm_rank(c), world = gf_comm_world(c);
  gf_err e = {0};
  CHECK(rank == li->rank && world == li->world_size);
  CHECK(gf_comm_backend_of(c) == GF_COMM_MPI);
  CHECK(gf_comm_device_buffers(c) == 0);
  /* one host here: every rank is local */
  CHECK_INT_EQ(gf_comm_nodes(c), 1);
  CHECK_INT_EQ(gf_comm_local_world(c), world);
  CHECK_INT_EQ(gf_comm_local_rank(c), rank);

  char host[256] = {0};
  snprintf(host, sizeof host, "%s", li->hostname);
  char *hosts = calloc((size_t)world, 256);
  REQUIRE(hosts);
  CHECKF(gf_comm_allgather(c, host, 256, hosts, &e) == GF_OK, "%s", e.msg);
  for (int r = 0; r < world; r++)
    CHECKF(strcmp(hosts + 256 * r, host) == 0, "host of %d: %s", r,
           hosts + 256 * r);
  free(hosts);
  int me = rank * 10 + 1, all[MAXW];
  CHECK(gf_comm_allgather(c, &me, sizeof me, all, &e) == GF_OK);
  for (int r = 0; r < world; r++) CHECK_INT_EQ(all[r], r * 10 + 1);

  /* broadcast from rank 1 */
  double d[100];
  int64_t q[7];
  unsigned char u[33];
  for (int i = 0; i < 100; i++) d[i] = rank == 1 ? val(1, i) : -1.0;
  for (int i = 0; i < 7; i++) q[i] = rank == 1 ? vali(1, i) : 0;
  for (int i = 0; i < 33; i++) u[i] = (unsigned char)(rank == 1 ? i * 7 : 0);
  CHECKF(gf_comm_broadcast(c, d, 100, GF_CDT_F64, 1, &e) == GF_OK, "%s", e.msg);
  CHECK(gf_comm_broadcast(c, q, 7, GF_CDT_I64, 1, &e) == GF_OK);
  CHECK(gf_comm_broadcast(c, u, 33, GF_CDT_U8, 1, &e) == GF_OK);
  for (int i = 0; i < 100; i++) CHECK(d[i] == val(1, i));
  for (int i = 0; i < 7; i++) CHECK(q[i] == vali(1, i));
  for (int i = 0; i < 33; i++) CHECK(u[i] == (unsigned char)(i * 7));
  CHECK(gf_comm_broadcast(c, d, 1, GF_CDT_F64, world, &e) == GF_EINVAL);
  CHECK(gf_comm_barrier(c, &e) == GF_OK);
}

/* Refusals that come before any collective (every rank sees the same). */
static void check_refusals(const gf_launch_info *li) {
  gf_err e = {0};
  gf_comm *c = NULL;
  gf_launch_info other = *li;
  other.rank = (li->rank + 1) % li->world_size;
  gf_comm_config cfg = {GF_COMM_MPI, GF_ALLREDUCE_ENGINE, 5, NULL, &other};
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL && c == NULL);
  CHECKF(strstr(e.msg, "MPI says") != NULL, "%s", e.msg);
  gf_launch_info three = *li;
  three.world_size = 3;
  three.rank = 0;
  cfg.launch = &three;
  cfg.algo = GF_ALLREDUCE_TREE;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "power-of-two") != NULL, "%s", e.msg);
  cfg.backend = GF_COMM_LOCAL;
  cfg.algo = GF_ALLREDUCE_ENGINE;
  cfg.launch = li;
  CHECK(gf_comm_init(&c, &cfg, &e) == GF_EINVAL && c == NULL);
  cfg.backend = GF_COMM_NCCL;
  gf_status st = gf_comm_init(&c, &cfg, &e);
  CHECK(st == (gf_comm_built(GF_COMM_NCCL) ? GF_EINVAL : GF_EUNSUPPORTED));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench(gf_comm *owner, const gf_launch_info *li, size_t n) {
  float *buf = malloc(n * sizeof(float));
  REQUIRE(buf);
  gf_err e = {0};
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++) {
    gf_comm_config cfg = {GF_COMM_MPI, (gf_allreduce_algo)a, 60, NULL, li};
    gf_comm *c = NULL;
    if (gf_comm_init(&c, &cfg, &e)) continue; /* tree at a world of 3 */
    double t[20];
    for (int k = -3; k < 20; k++) {
      for (size_t i = 0; i < n; i++) buf[i] = (float)(i % 7);
      REQUIRE(gf_comm_barrier(owner, &e) == GF_OK);
      double t0 = now_s();
      REQUIRE(gf_comm_allreduce(c, buf, n, GF_CDT_F32, GF_RED_SUM, &e) ==
              GF_OK);
      if (k >= 0) t[k] = now_s() - t0;
    }
    qsort(t, 20, sizeof t[0], cmp_double);
    if (li->rank == 0)
      printf("allreduce %-12s %zu f32 x %d ranks: median %.3f ms "
             "(min %.3f, max %.3f), %.2f GB/s of buffer\n",
             gf_allreduce_algo_name((gf_allreduce_algo)a), n, li->world_size,
             1e3 * t[10], 1e3 * t[0], 1e3 * t[19],
             (double)(n * sizeof(float)) / t[10] / 1e9);
    gf_comm_free(c);
  }
  free(buf);
  return 0;
}

int main(void) {
  if (!gf_comm_built(GF_COMM_MPI)) SKIP_TEST("this build has no MPI");
  gf_launch_info li;
  gf_err e = {0};
  REQUIRE(gf_launch_detect(&li, gf_launch_getenv, NULL, &e) == GF_OK);
  if (li.world_size < 2 || li.world_size > MAXW)
    SKIP_TEST("run under mpiexec -np 2 (or 4); this is rank %d of %d", li.rank,
              li.world_size);

  gf_comm *owner = NULL;
  gf_comm_config cfg = {GF_COMM_MPI, GF_ALLREDUCE_ENGINE, 30.0, NULL, &li};
  REQUIRE(gf_comm_init(&owner, &cfg, &e) == GF_OK);
  const char *nb = getenv("GF_COMM_BENCH");
  if (nb && atol(nb) > 0) {
    int rc = bench(owner, &li, (size_t)atol(nb));
    gf_comm_free(owner);
    return rc;
  }
  check_owner(owner, &li);
  check_refusals(&li);
  for (int a = GF_ALLREDUCE_ENGINE; a <= GF_ALLREDUCE_TREE; a++)
    run_algo(&li, (gf_allreduce_algo)a, owner);
  CHECK(gf_comm_barrier(owner, &e) == GF_OK);
  gf_comm_free(owner); /* finalizes MPI */
  int rc = check_report();
  if (rc) fprintf(stderr, "rank %d of %d failed\n", li.rank, li.world_size);
  return rc;
}
