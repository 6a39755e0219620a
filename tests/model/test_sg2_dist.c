/* test_sg2_dist.c - the StyleGAN2-ADA step at several ranks
 * (gf_sg2_gan_distribute, gf/sg2_gan.h) under the real mpirun, 2 or 4
 * ranks of one thread. Each rank also trains the one-rank reference on the
 * WHOLE global batch itself, so every comparison is local. Every phase
 * runs: Gmain and Dmain each step, Greg (path length) and Dreg (R1) at
 * steps 0 and 2, style mixing, random noise, ADA with its controller
 * moving p every step.
 *
 *   1. exact: 8 rounds of 2 images in all. After 3 steps every rank's
 *      state (G, D, G_ema, Adam moments, w_avg, pl_mean, p, counters:
 *      gf_sg2_gan_digest) and its step reports are byte-identical to the
 *      one-rank exact reference's.
 *   2. it fires: ranks that all claim sample_base 0 draw the wrong
 *      latents and noise, and their state is not the reference's.
 *   3. the engine's all-reduce (one round per rank): every rank holds the
 *      same state, within TOL of the one-rank reference with the same
 *      rounds (the sum's order is the only difference).
 *   4. refusals: exact over a non-tree all-reduce; path length without a
 *      lazy interval at several ranks.
 *
 * Run by ctest through mpirun (-np 2 and -np 4); skips (77) when run
 * alone or without MPI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/comm.h"
#include "gf/sg2_gan.h"
#include "sg2_test_util.h"

#define BATCH 16
#define ROUND 2
#define STEPS 3
#define TOL 1e-4 /* 3 Adam steps of lr 0.0025: rounding stays far below */

static int g_rank, g_world;
static gf_ctx g_ctx;

static void die(const char *what, const gf_err *err) {
  fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, err->msg);
  exit(1);
}

static gf_sg2_gan_hp every_phase_hp(void) {
  gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(NULL);
  hp.style_mixing = 0.9f;
  hp.pl_weight = 2;
  hp.r1_gamma = 1;
  hp.g_reg_interval = 2;
  hp.d_reg_interval = 2;
  hp.ada_p0 = 0.2f;
  hp.ada_kimg = 1; /* p moves visibly, 0.016 a step, and stays > 0 */
  hp.ada_interval = 1;
  hp.noise = GF_SG2_NOISE_RANDOM;
  return hp;
}

/* Rows [row0, row0 + n) of the global batch of step `step`. */
static void fill_real(gf_tensor *real, int64_t row0, int64_t step) {
  float *v = real->data;
  int64_t n = gf_tensor_numel(real), per = n / real->shape[0];
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)sin(0.37 * (double)(row0 * per + i) + 1.3 * (double)step);
}

/* A gan of `batch` images per step in rounds of `round`, distributed as
 * d says (NULL: one rank, sequential rounds). */
static void make_gan(gf_sg2_gan *gan, const gf_sg2_gan_hp *hp, int batch,
                     int round, const gf_sg2_gan_dist *d) {
  gf_sg2_config cfg = sg2t_tiny_config();
  gf_err err;
  if (gf_sg2_gan_init(gan, &g_ctx, &cfg, hp, batch, round, 5, &err))
    die("gan init", &err);
  if (gf_sg2_gan_distribute(gan, &g_ctx, d, &err)) die("distribute", &err);
}

/* STEPS steps on this gan's rows of the global batch from row0. */
static void run(gf_sg2_gan *gan, int64_t row0, gf_sg2_step_out *outs) {
  const int64_t rs[4] = {gan->batch, 3, 32, 32};
  gf_tensor real;
  gf_err err;
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  for (int i = 0; i < STEPS; i++) {
    fill_real(&real, row0, gan->step);
    gf_sg2_step_in in = {.real = &real};
    if (gf_sg2_gan_step(gan, &g_ctx, &in, 99, &outs[i], &err))
      die("step", &err);
  }
  gf_tensor_free(&real);
}

static double arena_diff(const gf_arena *a, const gf_arena *b) {
  REQUIRE(a->used == b->used);
  const float *x = a->base, *y = b->base;
  double worst = 0;
  for (size_t i = 0; i < a->used / 4; i++) {
    double d = fabs((double)x[i] - (double)y[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

static double state_diff(const gf_sg2_gan *a, const gf_sg2_gan *b) {
  const gf_arena *pa[5] = {&a->g.params, &a->d.params, &a->g_ema.params,
                           &a->g.buffers, &a->g_ema.buffers};
  const gf_arena *pb[5] = {&b->g.params, &b->d.params, &b->g_ema.params,
                           &b->g.buffers, &b->g_ema.buffers};
  double worst = 0;
  for (int i = 0; i < 5; i++) {
    double d = arena_diff(pa[i], pb[i]);
    if (d > worst) worst = d;
  }
  return worst;
}

static bool same_out(const gf_sg2_step_out *a, const gf_sg2_step_out *b) {
  return a->loss_g == b->loss_g && a->loss_d == b->loss_d &&
         a->scores_fake == b->scores_fake &&
         a->scores_real == b->scores_real &&
         a->real_sign_sum == b->real_sign_sum &&
         a->real_sign_count == b->real_sign_count && a->ada_p == b->ada_p &&
         a->pl_penalty == b->pl_penalty && a->r1_penalty == b->r1_penalty &&
         a->pl_mean == b->pl_mean && a->ran_greg == b->ran_greg &&
         a->ran_dreg == b->ran_dreg;
}

static void digest(const gf_sg2_gan *gan, char hex[65]) {
  gf_err err;
  if (gf_sg2_gan_digest(gan, hex, &err)) die("digest", &err);
}

/* Whether every rank's hex equals rank 0's. */
static bool ranks_agree(gf_comm *c, const char hex[65]) {
  char *all = calloc((size_t)g_world, 65);
  gf_err err;
  REQUIRE(all && gf_comm_allgather(c, hex, 65, all, &err) == GF_OK);
  bool same = true;
  for (int r = 1; r < g_world; r++)
    same = same && memcmp(all, all + (size_t)r * 65, 65) == 0;
  free(all);
  return same;
}

static void test_exact(gf_comm *tree) {
  gf_sg2_gan_hp hp = every_phase_hp();
  int lb = BATCH / g_world;
  gf_sg2_gan ref, mine;
  gf_sg2_step_out ro[STEPS], mo[STEPS];
  gf_sg2_gan_dist one = {NULL, true, 0};
  make_gan(&ref, &hp, BATCH, ROUND, &one);
  run(&ref, 0, ro);
  gf_sg2_gan_dist d = {tree, true, (int64_t)g_rank * lb};
  make_gan(&mine, &hp, lb, ROUND, &d);
  run(&mine, (int64_t)g_rank * lb, mo);
  char hr[65], hm[65];
  digest(&ref, hr);
  digest(&mine, hm);
  CHECKF(strcmp(hr, hm) == 0, "rank %d: exact state after %d steps is not "
         "the one-rank reference's (%.12s vs %.12s; worst param diff %.3g)",
         g_rank, STEPS, hm, hr, state_diff(&mine, &ref));
  for (int i = 0; i < STEPS; i++)
    CHECKF(same_out(&mo[i], &ro[i]), "rank %d: step %d's report differs "
           "(loss_g %.9g vs %.9g, pl_mean %.9g vs %.9g)", g_rank, i,
           mo[i].loss_g, ro[i].loss_g, mo[i].pl_mean, ro[i].pl_mean);
  /* what the comparison covers moved: every phase ran, p and pl_mean
   * left their start */
  CHECK(ro[0].ran_greg && ro[0].ran_dreg && ro[2].ran_greg && !ro[1].ran_greg);
  CHECK(ref.ctl.p != hp.ada_p0 && ref.pl_mean != 0.0f);
  CHECK_INT_EQ(mine.cur_nimg, (int64_t)STEPS * BATCH);
  CHECK_INT_EQ(ro[0].real_sign_count, 2 * BATCH); /* Dmain's and Dreg's */
  CHECK_INT_EQ(mo[0].real_sign_count, 2 * BATCH);
  if (g_rank == 0)
    printf("exact: %d ranks x %d rounds of %d = 1 rank x %d rounds, %d "
           "steps: state %.16s... %s; p %.6f, pl_mean %.6f, loss_g %.6f\n",
           g_world, lb / ROUND, ROUND, BATCH / ROUND, STEPS, hm,
           strcmp(hr, hm) == 0 ? "identical" : "DIFFERENT",
           (double)mine.ctl.p, (double)mine.pl_mean, mo[STEPS - 1].loss_g);
  gf_sg2_gan_free(&mine);

  /* 2. it fires: every rank drawing as if it held the first rows */
  gf_sg2_gan_dist wrong = {tree, true, 0};
  make_gan(&mine, &hp, lb, ROUND, &wrong);
  run(&mine, (int64_t)g_rank * lb, mo);
  digest(&mine, hm);
  CHECKF(strcmp(hr, hm) != 0, "rank %d: draws keyed by the wrong samples "
         "went unnoticed", g_rank);
  gf_sg2_gan_free(&mine);
  gf_sg2_gan_free(&ref);
}

static void test_engine(gf_comm *ring) {
  gf_sg2_gan_hp hp = every_phase_hp();
  int lb = BATCH / g_world;
  gf_sg2_gan ref, mine;
  gf_sg2_step_out ro[STEPS], mo[STEPS];
  make_gan(&ref, &hp, BATCH, lb, NULL); /* one round per rank's slice */
  run(&ref, 0, ro);
  gf_sg2_gan_dist d = {ring, false, (int64_t)g_rank * lb};
  make_gan(&mine, &hp, lb, lb, &d);
  run(&mine, (int64_t)g_rank * lb, mo);
  char hm[65];
  digest(&mine, hm);
  CHECKF(ranks_agree(ring, hm), "rank %d: the ranks' states differ after "
         "the engine's all-reduce", g_rank);
  double worst = state_diff(&mine, &ref);
  CHECKF(worst < TOL, "rank %d: %g from the one-rank reference", g_rank,
         worst);
  CHECK(mine.ctl.p == ref.ctl.p); /* the signs' sums are whole numbers */
  CHECK(fabs((double)mine.pl_mean - (double)ref.pl_mean) < TOL);
  if (g_rank == 0)
    printf("engine all-reduce: ranks agree; worst diff from one rank %.3g "
           "(tolerance %g)\n", worst, TOL);
  gf_sg2_gan_free(&mine);
  gf_sg2_gan_free(&ref);
}

static void test_refusals(gf_comm *ring, gf_comm *tree) {
  gf_sg2_gan_hp hp = every_phase_hp();
  gf_sg2_config cfg = sg2t_tiny_config();
  gf_sg2_gan gan;
  gf_err err;
  int lb = BATCH / g_world;
  REQUIRE(gf_sg2_gan_init(&gan, &g_ctx, &cfg, &hp, lb, ROUND, 5, &err) ==
          GF_OK);
  gf_sg2_gan_dist d = {ring, true, (int64_t)g_rank * lb};
  CHECK_INT_EQ(gf_sg2_gan_distribute(&gan, &g_ctx, &d, &err), GF_EINVAL);
  if (g_rank == 0) printf("refused: %s\n", err.msg);
  d.comm = tree;
  d.sample_base = 1;
  CHECK_INT_EQ(gf_sg2_gan_distribute(&gan, &g_ctx, &d, &err), GF_EINVAL);
  gf_sg2_gan_free(&gan);
  hp.g_reg_interval = 0;
  REQUIRE(gf_sg2_gan_init(&gan, &g_ctx, &cfg, &hp, lb, ROUND, 5, &err) ==
          GF_OK);
  d.sample_base = (int64_t)g_rank * lb;
  CHECK_INT_EQ(gf_sg2_gan_distribute(&gan, &g_ctx, &d, &err),
               GF_EUNSUPPORTED);
  if (g_rank == 0) printf("refused: %s\n", err.msg);
  CHECK(gan.world == 1 && gan.dist.comm == NULL);
  gf_sg2_gan_free(&gan);
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
  REQUIRE(gf_ctx_init(&g_ctx, &cc, &err) == GF_OK);
  gf_comm *ring = NULL, *tree = NULL;
  gf_comm_config c1 = {GF_COMM_MPI, GF_ALLREDUCE_ENGINE, 120, NULL, &li};
  gf_comm_config c2 = {GF_COMM_MPI, GF_ALLREDUCE_TREE, 120, NULL, &li};
  if (gf_comm_init(&ring, &c1, &err)) die("comm", &err);
  if (gf_comm_init(&tree, &c2, &err)) die("comm", &err);
  g_rank = gf_comm_rank(ring);
  g_world = gf_comm_world(ring);
  REQUIRE(BATCH % (ROUND * g_world) == 0);
  test_exact(tree);
  test_engine(ring);
  test_refusals(ring, tree);
  gf_comm_free(tree);
  gf_comm_free(ring); /* the first made initialized MPI: freed last */
  gf_ctx_free(&g_ctx);
  return check_report();
}
