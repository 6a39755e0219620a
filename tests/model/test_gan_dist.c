/* test_gan_dist.c - the distributed GAN step (gf_gan_distribute,
 * gf/gan.h) under the real mpirun, 2 or 4 ranks of one thread. Each rank
 * also trains a one-rank reference on the WHOLE global batch itself, so
 * every comparison is local:
 *
 *   1. exact mode (8 micro-batches in all): the ranks' G and D (params,
 *      Adam moments, BN running statistics) after 6 steps are byte-identical
 *      to the one-rank exact reference, for mlp (dropout masks keyed by the
 *      global sample) and dcgan (batch norm).
 *   2. sync BN, ring / reduce-bcast / hierarchical / tree all-reduce, and
 *      gradient accumulation (2 micro-batches per rank against a reference
 *      whose batch is cut the same way): parameters within TOL of the
 *      reference after 6 steps (rounding only: see test_train_dist.c for
 *      the Adam bound), BN running statistics too.
 *   3. per-rank BN (no --sync-bn) differs from the sync-BN reference by more
 *      than TOL: the comparison in 2 can fail.
 *   4. every rank's digest of its parameters is the same (gf_gan_digest
 *      through an allgather); a parameter changed on one rank changes it.
 *   5. the seams counted their buckets and all-reduced bytes; with small
 *      buckets, the first starts before the backward ends (overlap > 0).
 *   6. bf16 gradient compression with every algorithm: the ranks agree,
 *      the result differs from the f32 all-reduce's and stays within
 *      Adam's bound of the one-rank reference; exact mode refuses it.
 *
 * Run by ctest through mpirun (-np 2 and -np 4); skips (77) when run
 * alone or without MPI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/comm.h"
#include "gf/gan.h"

#define STEPS 6
#define TOL 2e-4 /* 6 Adam steps of lr 2e-4 bound any divergence by 2.4e-3 */

static int g_rank, g_world;

static void fill_real(float *p, int64_t n, int64_t step) {
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)(((i * 2654435761u + (uint64_t)step * 97u) >> 7) % 255) / 127.0f - 1.0f;
}

static double arena_diff(const gf_arena *a, const gf_arena *b) {
  REQUIRE(a->used == b->used);
  if (a->used == 0) return 0;
  const float *x = a->base, *y = b->base;
  double worst = 0;
  for (size_t i = 0; i < a->used / 4; i++) {
    double d = fabs((double)x[i] - (double)y[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

static bool same_arena(const gf_arena *a, const gf_arena *b) {
  return a->used == b->used && (a->used == 0 || memcmp(a->base, b->base, a->used) == 0);
}

typedef struct job {
  gf_arch arch;
  gf_allreduce_algo algo;
  int global_batch;
  int micro;     /* per rank; exact: the global count / world */
  bool exact, sync_bn;
  size_t bucket_bytes;
  bool compress; /* gradients all-reduced as bf16 on the wire */
} job;

static gf_model_config config_of(gf_arch arch) {
  gf_model_config c;
  gf_model_config_default(&c, arch);
  c.image_height = c.image_width = 28;
  c.image_channels = 1;
  if (arch == GF_ARCH_DCGAN) c.ngf = c.ndf = 8;
  return c;
}

/* Trains `gan` STEPS steps on its slice of the global batches. */
static void train(gf_gan *gan, gf_ctx *ctx, gf_comm *comm, const job *j, int rank,
                  int world, bool exact, bool sync_bn, int micro) {
  gf_err err;
  gf_gan_dist d = {world > 1 ? comm : NULL, micro, exact, sync_bn, j->bucket_bytes,
                   world > 1 && j->compress};
  gf_status st = gf_gan_distribute(gan, ctx, &d, &err);
  CHECKF(st == GF_OK, "distribute: %s", err.msg);
  REQUIRE(st == GF_OK);
  const gf_model_config *c = &gan->cfg;
  int64_t per = (int64_t)c->image_channels * c->image_height * c->image_width;
  int local = j->global_batch / world;
  float *all = malloc((size_t)j->global_batch * per * sizeof(float));
  REQUIRE(all);
  for (int s = 0; s < STEPS; s++) {
    fill_real(all, j->global_batch * per, s);
    gf_tensor real;
    int64_t shape[4] = {local, c->image_channels, c->image_height, c->image_width};
    REQUIRE(gf_tensor_view(&real, all + (size_t)rank * local * per, GF_F32, GF_DEV_CPU, 4,
                           shape, &err) == GF_OK);
    st = gf_gan_step(gan, ctx, &real, NULL, 11, s, (int64_t)rank * local, NULL, &err);
    CHECKF(st == GF_OK, "step %d: %s", s, err.msg);
    REQUIRE(st == GF_OK);
  }
  free(all);
}

static void build(gf_gan *gan, gf_ctx *ctx, gf_arch arch, int max_batch) {
  gf_err err;
  gf_model_config c = config_of(arch);
  REQUIRE(gf_gan_init(gan, ctx, &c, NULL, max_batch, &err) == GF_OK);
  REQUIRE(gf_gan_init_params(gan, 5, &err) == GF_OK);
}

/* Runs job j on all ranks and on a local one-rank reference; returns the
 * largest parameter / BN statistic difference, or -1 when byte-identical. */
static double compare_job(gf_ctx *ctx, gf_comm *comm, const job *j, const char *what,
                          bool ref_sync_bn) {
  gf_gan dist, ref;
  build(&dist, ctx, j->arch, j->global_batch / g_world);
  build(&ref, ctx, j->arch, j->global_batch);
  train(&dist, ctx, comm, j, g_rank, g_world, j->exact, j->sync_bn, j->micro);
  /* The reference: one rank, the whole batch, cut into as many
   * micro-batches as all ranks together use (exact mode), or into the
   * same micro-batch size as the ranks (accumulation without sync BN). */
  int ref_micro = j->exact ? j->micro * g_world : (j->sync_bn ? 1 : j->micro * g_world);
  train(&ref, ctx, NULL, j, 0, 1, j->exact, ref_sync_bn, ref_micro);
  const gf_net *dn[2] = {&dist.g, &dist.d}, *rn[2] = {&ref.g, &ref.d};
  bool identical = true;
  double worst = 0;
  for (int i = 0; i < 2; i++) {
    identical = identical && same_arena(&dn[i]->params, &rn[i]->params) &&
                same_arena(&dn[i]->adam_m, &rn[i]->adam_m) &&
                same_arena(&dn[i]->adam_v, &rn[i]->adam_v) &&
                same_arena(&dn[i]->bn_stats, &rn[i]->bn_stats);
    double d = arena_diff(&dn[i]->params, &rn[i]->params);
    if (d > worst) worst = d;
    if (j->sync_bn || j->exact) { /* running statistics agree too */
      d = arena_diff(&dn[i]->bn_stats, &rn[i]->bn_stats);
      if (d > worst) worst = d;
    }
  }
  if (g_rank == 0)
    fprintf(stderr, "%s: %d ranks vs 1 rank: %s, largest difference %.3g\n", what, g_world,
            identical ? "byte-identical" : "not identical", worst);
  gf_gan_free(&dist);
  gf_gan_free(&ref);
  return identical ? -1 : worst;
}

static void digest_check(gf_ctx *ctx, gf_comm *comm) {
  gf_gan g;
  build(&g, ctx, GF_ARCH_DCGAN, 8);
  job j = {GF_ARCH_DCGAN, GF_ALLREDUCE_ENGINE, 8 * g_world, 1, false, false, 0, false};
  train(&g, ctx, comm, &j, g_rank, g_world, false, false, 1);
  gf_err err;
  char mine[GF_SHA256_HEX_LEN + 1], *all = calloc((size_t)g_world, sizeof mine);
  REQUIRE(all && gf_gan_digest(&g, false, mine, &err) == GF_OK);
  REQUIRE(gf_comm_allgather(comm, mine, sizeof mine, all, &err) == GF_OK);
  for (int r = 1; r < g_world; r++)
    CHECKF(memcmp(all, all + r * sizeof mine, sizeof mine) == 0,
           "rank %d's parameters differ from rank 0's after per-rank-BN steps", r);
  /* The seams measured something. */
  gf_gan_sync_stats ss;
  gf_gan_sync_stats_get(&g, &ss);
  CHECKF(ss.steps == 2 * STEPS && ss.buckets >= 2 * STEPS && ss.bytes > 0,
         "seams: %llu seams, %llu buckets, %llu bytes", (unsigned long long)ss.steps,
         (unsigned long long)ss.buckets, (unsigned long long)ss.bytes);
  CHECK(ss.allreduce_s > 0 && ss.exposed_s <= ss.allreduce_s + 1e-9);
  /* One changed float on the last rank changes its digest. */
  if (g_rank == g_world - 1) ((float *)g.d.params.base)[3] += 1.0f;
  REQUIRE(gf_gan_digest(&g, false, mine, &err) == GF_OK);
  REQUIRE(gf_comm_allgather(comm, mine, sizeof mine, all, &err) == GF_OK);
  CHECKF(memcmp(all, all + (size_t)(g_world - 1) * sizeof mine, sizeof mine) != 0,
         "a changed parameter left the digest alike");
  free(all);
  gf_gan_free(&g);
}

static void small_buckets_overlap(gf_ctx *ctx, gf_comm *comm) {
  gf_gan g;
  build(&g, ctx, GF_ARCH_DCGAN, 16);
  job j = {GF_ARCH_DCGAN, GF_ALLREDUCE_ENGINE, 16 * g_world, 1, false, false, 4096, false};
  train(&g, ctx, comm, &j, g_rank, g_world, false, false, 1);
  gf_gan_sync_stats ss;
  gf_gan_sync_stats_get(&g, &ss);
  if (g_rank == 0)
    fprintf(stderr, "4 KiB buckets: %llu buckets in %llu seams, all-reduce %.3f ms of "
            "which exposed %.3f ms\n", (unsigned long long)ss.buckets,
            (unsigned long long)ss.steps, ss.allreduce_s * 1e3, ss.exposed_s * 1e3);
  /* dcgan-28 with 8 filters: 1 MiB buckets make one per seam, 4 KiB two
   * (the tensors after the first conv come to 33 KiB). */
  CHECKF(ss.buckets >= 2 * ss.steps, "4 KiB buckets: only %llu buckets in %llu seams",
         (unsigned long long)ss.buckets, (unsigned long long)ss.steps);
  CHECKF(ss.allreduce_s > ss.exposed_s, "no bucket started before the backward ended");
  gf_gan_free(&g);
  /* Many steps of many small buckets, most of them complete during the
   * backward: every request handle must come back to the comm (it holds
   * 64), or a step fails after a few dozen. */
  gf_gan m;
  build(&m, ctx, GF_ARCH_MLP, 16);
  job jm = {GF_ARCH_MLP, GF_ALLREDUCE_ENGINE, 16 * g_world, 1, false, false, 4096, false};
  for (int round = 0; round < 8; round++)
    train(&m, ctx, comm, &jm, g_rank, g_world, false, false, 1);
  gf_gan_sync_stats_get(&m, &ss);
  CHECKF(ss.buckets >= 48, "mlp, 4 KiB buckets: only %llu buckets in the last round",
         (unsigned long long)ss.buckets);
  gf_gan_free(&m);
}

/* 6. bf16 gradient compression (sync BN, so that the one-rank reference
 * computes the same function): every rank holds the same parameters, Adam
 * moments and BN statistics (the digest); they differ from the f32
 * all-reduce's (the compression took effect) but stay within Adam's bound
 * of the one-rank f32 reference (2 x lr x steps: bf16's rounding of the
 * gradient can flip the sign of near-zero components, as in
 * test_train_dist.c's note, and no further). Exact mode refuses it. */
#define ADAM_BOUND (2 * 2e-4 * STEPS)
static void compressed_check(gf_ctx *ctx, gf_comm *comm) {
  const char *an = gf_allreduce_algo_name(gf_comm_algo_of(comm));
  job jc = {GF_ARCH_DCGAN, gf_comm_algo_of(comm), 8 * g_world, 1, false, true, 16384, true};
  job jf = jc;
  jf.compress = false;
  gf_gan c, f, ref;
  build(&c, ctx, GF_ARCH_DCGAN, 8);
  build(&f, ctx, GF_ARCH_DCGAN, 8);
  build(&ref, ctx, GF_ARCH_DCGAN, 8 * g_world);
  train(&c, ctx, comm, &jc, g_rank, g_world, false, true, 1);
  train(&f, ctx, comm, &jf, g_rank, g_world, false, true, 1);
  train(&ref, ctx, NULL, &jf, 0, 1, false, true, 1);
  gf_err err;
  char mine[GF_SHA256_HEX_LEN + 1], *all = calloc((size_t)g_world, sizeof mine);
  REQUIRE(all && gf_gan_digest(&c, true, mine, &err) == GF_OK);
  REQUIRE(gf_comm_allgather(comm, mine, sizeof mine, all, &err) == GF_OK);
  for (int r = 1; r < g_world; r++)
    CHECKF(memcmp(all, all + r * sizeof mine, sizeof mine) == 0,
           "bf16 %s: rank %d's state differs from rank 0's", an, r);
  double vs_f32 = arena_diff(&c.g.params, &f.g.params) + arena_diff(&c.d.params, &f.d.params);
  double vs_ref = arena_diff(&c.g.params, &ref.g.params);
  double d_ref = arena_diff(&c.d.params, &ref.d.params);
  if (d_ref > vs_ref) vs_ref = d_ref;
  if (g_rank == 0)
    fprintf(stderr, "bf16 %s: vs the f32 all-reduce %.3g, vs one rank %.3g\n", an, vs_f32,
            vs_ref);
  CHECKF(vs_f32 > 0, "bf16 %s: the same parameters as the f32 all-reduce", an);
  CHECKF(vs_ref <= ADAM_BOUND, "bf16 %s: %.3g from one rank, beyond Adam's bound %g", an,
         vs_ref, ADAM_BOUND);
  gf_gan_sync_stats ss;
  gf_gan_sync_stats_get(&c, &ss);
  CHECK(ss.buckets > 0 && ss.bytes > 0);
  free(all);
  gf_gan_free(&c);
  gf_gan_free(&f);
  gf_gan_free(&ref);
  gf_gan x;
  build(&x, ctx, GF_ARCH_MLP, 8);
  gf_gan_dist d = {comm, 2, true, false, 0, true};
  CHECK(gf_gan_distribute(&x, ctx, &d, &err) == GF_EINVAL);
  gf_gan_free(&x);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  gf_launch_info li;
  gf_err err;
  if (!gf_comm_built(GF_COMM_MPI)) {
    fprintf(stderr, "SKIP: no MPI in this build\n");
    return 77;
  }
  REQUIRE(gf_launch_detect(&li, gf_launch_getenv, NULL, &err) == GF_OK);
  if (li.world_size < 2) {
    fprintf(stderr, "SKIP: run me under mpirun -np 2 (or 4)\n");
    return 77;
  }
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_ctx ctx;
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  static const gf_allreduce_algo algos[] = {GF_ALLREDUCE_ENGINE, GF_ALLREDUCE_REDUCE_BCAST,
                                            GF_ALLREDUCE_HIER, GF_ALLREDUCE_TREE};
  gf_comm *comms[4] = {NULL};
  for (int a = 0; a < 4; a++) {
    gf_comm_config c = {GF_COMM_MPI, algos[a], 120, NULL, &li};
    gf_status st = gf_comm_init(&comms[a], &c, &err);
    CHECKF(st == GF_OK, "comm %s: %s", gf_allreduce_algo_name(algos[a]), err.msg);
    REQUIRE(st == GF_OK);
  }
  g_rank = gf_comm_rank(comms[0]);
  g_world = gf_comm_world(comms[0]);
  gf_comm *tree = comms[3];

  /* 1. exact mode: 8 micro-batches of 2 in all. */
  job ex = {GF_ARCH_MLP, GF_ALLREDUCE_TREE, 16, 8 / g_world, true, false, 0, false};
  CHECKF(compare_job(&ctx, tree, &ex, "exact mlp", false) < 0,
         "exact mode (mlp): not byte-identical to one rank");
  ex.arch = GF_ARCH_DCGAN;
  CHECKF(compare_job(&ctx, tree, &ex, "exact dcgan", false) < 0,
         "exact mode (dcgan): not byte-identical to one rank");

  /* 2. sync BN with every algorithm. */
  for (int a = 0; a < 4; a++) {
    job sb = {GF_ARCH_DCGAN, algos[a], 8 * g_world, 1, false, true, 16384, false};
    char what[64];
    snprintf(what, sizeof what, "sync-bn %s", gf_allreduce_algo_name(algos[a]));
    double d = compare_job(&ctx, comms[a], &sb, what, true);
    CHECKF(d <= TOL, "%s: differs from one rank by %.3g > %g", what, d, TOL);
  }
  /* Gradient accumulation: 2 micro-batches of 4 per rank, per-micro-batch
   * BN; the reference cuts its batch into micro-batches of 4 too. */
  job acc = {GF_ARCH_DCGAN, GF_ALLREDUCE_ENGINE, 8 * g_world, 2, false, false, 0, false};
  double d = compare_job(&ctx, comms[0], &acc, "grad-accum 2", false);
  CHECKF(d <= TOL, "grad-accum: differs from one rank by %.3g > %g", d, TOL);

  /* 3. per-rank BN is not the global batch's BN. */
  job pr = {GF_ARCH_DCGAN, GF_ALLREDUCE_ENGINE, 8 * g_world, 1, false, false, 0, false};
  gf_gan a, b;
  build(&a, &ctx, GF_ARCH_DCGAN, 8);
  build(&b, &ctx, GF_ARCH_DCGAN, 8 * g_world);
  train(&a, &ctx, comms[0], &pr, g_rank, g_world, false, false, 1);
  train(&b, &ctx, NULL, &pr, 0, 1, false, false, 1);
  double dpr = arena_diff(&a.g.params, &b.g.params);
  if (g_rank == 0) fprintf(stderr, "per-rank BN vs global BN: %.3g\n", dpr);
  CHECKF(dpr > TOL, "per-rank BN within %.3g of the global batch's (> %g expected)", dpr,
         TOL);
  gf_gan_free(&a);
  gf_gan_free(&b);

  /* 4, 5. */
  digest_check(&ctx, comms[0]);
  small_buckets_overlap(&ctx, comms[0]);

  /* 6. */
  for (int k = 0; k < 4; k++) compressed_check(&ctx, comms[k]);

  for (int i = 3; i >= 0; i--) gf_comm_free(comms[i]);
  gf_ctx_free(&ctx);
  return check_report();
}
