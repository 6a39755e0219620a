/* test_train_sg2_dist.c - ganflow-train --model stylegan2 on several CPU
 * ranks under the real mpirun (oversubscribed, one thread per rank),
 * against the `mlflow` fixture, with --exact-reduce: Fashion-MNIST at
 * 32x32, a tiny network, a global batch of 8 cut into 4 shards of 2, ADA
 * with its controller moving p, path length and R1 at steps 0 and 4.
 *   1. 1 rank, 2 ranks and 4 ranks: the final training states are
 *      byte-identical, tensor by tensor (G, D, G_ema, the Adam moments,
 *      w_avg, pl_mean, ADA's p and the image counter);
 *   2. 4 steps on 2 ranks, then a resume on 1 rank to the end: the same
 *      bytes again, and the second leg reports the world-size change;
 *   3. without --exact-reduce (the engine's all-reduce, --grad-accum 2):
 *      2 ranks finish with their states equal at every step.
 * The ranks check their digests every step (--check-every 1). Skips (77)
 * when this build has no MPI or mpirun is missing. ~1 min on 2 cores. */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "gf/checkpoint.h"
#include "gf/comm.h"
#include "gf/safetensors.h"
#include "gf/train.h"
#include "mlflow_test.h"
#include "train_test_util.h"

#define STEPS 8

static char g_uri[512];

/* job's command on `ranks` ranks (0: no mpirun), to `steps` steps, with
 * --exact-reduce or, when not exact, --grad-accum 2. */
static void sg2_cmd(tu_job *j, int ranks, long steps, bool exact) {
  static const char *const flags[] = {
      "--data", FASHION, "--model", "stylegan2", "--image-size", "32",
      "--cbase", "256", "--cmax", "16", "--z-dim", "16", "--map-layers", "2",
      "--batch", "8",
      "--ada-target", "0.01", "--ada-kimg", "0.05", "--r1-every", "4",
      "--sample-every", "0", "--eval-every", "0", "--threads", "1",
      "--check-every", "1", "--seed", "5", NULL};
  tu_mpirun(&j->c, GF_MPIEXEC, ranks, NULL);
  tu_add(&j->c, GF_TRAIN_BIN);
  tu_add_all(&j->c, flags);
  const char *ex[] = {"--exact-reduce", "--exact-shards", "4", NULL};
  const char *accum[] = {"--grad-accum", "2", NULL};
  tu_add_all(&j->c, exact ? ex : accum);
  tu_run_flags(&j->c, steps, 2, 4, j->dir, j->exp);
}

static bool run_ok(tu_job *j, const char *log) {
  int rc = tu_wait_child(tu_spawn_trainer(j->c.argv, log, g_uri, NULL), 300,
                         log);
  CHECKF(rc == 0, "%s: exit %d (log %s)", j->name, rc, log);
  if (rc != 0) dump_log(log);
  return rc == 0;
}

static void final_path(char *out, size_t cap, const tu_job *j) {
  snprintf(out, cap, "%s/" GF_CKPT_NAME_FMT, j->dir, (long long)STEPS);
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  const char *mpirun = GF_MPIEXEC;
  if (!gf_comm_built(GF_COMM_MPI) || !*mpirun || access(mpirun, X_OK) != 0) {
    fprintf(stderr, "SKIP: no MPI in this build or no mpirun\n");
    return 77;
  }
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_trainer_test_start(GF_TEST_TMP);
  double t0 = mono_s();
  tu_job one, many;
  tu_job_init(&one, GF_TEST_TMP, "sg2dist", "one-rank");
  sg2_cmd(&one, 0, STEPS, true);
  if (!run_ok(&one, one.log)) return check_report();
  char ref[1200], got[1200];
  final_path(ref, sizeof ref, &one);
  fprintf(stderr, "[1 rank] %.1f s\n", mono_s() - t0);
  static const int worlds[2] = {2, 4};
  for (int w = 0; w < 2; w++) {
    char name[32], what[64];
    snprintf(name, sizeof name, "ranks-%d", worlds[w]);
    t0 = mono_s();
    tu_job_init(&many, GF_TEST_TMP, "sg2dist", name);
    sg2_cmd(&many, worlds[w], STEPS, true);
    if (!run_ok(&many, many.log)) continue;
    final_path(got, sizeof got, &many);
    snprintf(what, sizeof what, "%d ranks vs 1 rank", worlds[w]);
    tu_compare_sg2_states(got, ref, what);
    fprintf(stderr, "[%d ranks] %.1f s\n", worlds[w], mono_s() - t0);
  }
  /* 2. another world size on resume */
  t0 = mono_s();
  tu_job legs;
  tu_job_init(&legs, GF_TEST_TMP, "sg2dist", "2-then-1");
  sg2_cmd(&legs, 2, STEPS / 2, true);
  if (run_ok(&legs, legs.log)) {
    char log2[1200];
    snprintf(log2, sizeof log2, "%s.leg2", legs.log);
    sg2_cmd(&legs, 0, STEPS, true);
    if (run_ok(&legs, log2)) {
      CHECKF(log_contains(log2, "resuming on"), "2-then-1: the second leg "
             "did not report the world-size change");
      final_path(got, sizeof got, &legs);
      tu_compare_sg2_states(got, ref, "4 steps on 2 ranks + 4 on 1 vs 1 rank");
    }
  }
  fprintf(stderr, "[2 then 1 rank] %.1f s\n", mono_s() - t0);
  /* 3. the engine's all-reduce: --check-every 1 fails a run whose ranks
   * drift apart */
  t0 = mono_s();
  tu_job eng;
  tu_job_init(&eng, GF_TEST_TMP, "sg2dist", "engine");
  sg2_cmd(&eng, 2, STEPS / 2, false);
  if (run_ok(&eng, eng.log))
    CHECKF(log_contains(eng.log, "step 4"), "engine: no step 4 in its log");
  fprintf(stderr, "[2 ranks, engine all-reduce] %.1f s\n", mono_s() - t0);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
