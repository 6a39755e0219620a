/* test_cluster_launch.c - `ganflow launch --nnodes`, one agent per test
 * host of tests/support/cluster.sh, through the failures that only happen
 * between hosts, against the MLflow server of the `mlflow` ctest fixture
 * (relayed into the cluster by `cluster.sh gateway`).
 *
 *   test_cluster_launch ref     the undisturbed job on 1 rank in the root
 *                               namespace (the fixture the others compare
 *                               their final checkpoint with)
 *   test_cluster_launch kill    3 hosts x 1 rank, --nnodes 1:3: rounds of 2
 *                               ranks (--exact-reduce wants a power of
 *                               two), node2 a spare; node1 killed whole
 *                               mid-step: node0 and node2 go on
 *   test_cluster_launch cut     2 hosts, --nnodes 1:2: node1's link cut in
 *                               the middle of the all-reduces (packets
 *                               vanish, no RST): node0 goes on alone; the
 *                               link healed: node1 joins again
 *   test_cluster_launch stall   2 hosts, the node settings from Kubeflow
 *                               Trainer's PET_* variables: every process
 *                               of node1 SIGSTOPped: node0 goes on alone;
 *                               SIGCONT: node1 joins again
 *
 * Every job runs mlp on Fashion-MNIST with --exact-reduce, whose result
 * does not depend on the world size. Checks, for each failure: node 0's
 * agent exits 0; the rounds' world sizes (the restart tags of the run);
 * the failure detected and training resumed within generous bounds (the
 * figures are printed; bench/launch/cluster.sh collects them); one MLflow
 * run, FINISHED, with one point per (key, step); the final checkpoint
 * byte-identical to `ref`'s.
 *
 * Skips (77) only when not root or a tool of cluster.sh is missing; FAILS
 * when Fashion-MNIST is missing. The cluster is taken down on every exit
 * path. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cluster_util.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"
#include "wait_util.h"

#define STEPS 300
#define STEPS_S "300"
#define HANG "5"        /* --hang-timeout of the agents */
#define HANG_S 5.0
#define COMM "10"       /* --comm-timeout of the ranks */
#define RDZV_PORT "29400"

typedef struct cmd {
  char *argv[96];
  int n;
} cmd;

static void add(cmd *c, const char *a) {
  REQUIRE(c->n < 95);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

/* ganflow-train and the job's flags. */
static void trainer(cmd *c, const char *dir, const char *exp) {
  const char *flags[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                         "--batch", "32", "--threads", "1", "--seed", "11",
                         "--steps", STEPS_S, "--log-every", "10",
                         "--sample-every", "0", "--eval-every", "0",
                         "--register-model", "", "--check-every", "10",
                         "--checkpoint-every", "10", "--keep", "3",
                         "--exact-reduce", "--comm-timeout", COMM,
                         "--checkpoint-dir", dir, "--experiment", exp};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) add(c, flags[i]);
}

/* The world sizes of the rounds, from the run's restart tags ("restarted
 * on N ranks ..."), after `first`: "2>1>2" into out. */
static void trajectory(mlflow_client *mc, const char *run_id, int first,
                       char *out, size_t cap) {
  mlflow_run r;
  mlflow_error e;
  snprintf(out, cap, "%d", first);
  if (mlflow_run_get(mc, run_id, &r, &e) != MLFLOW_OK) return;
  const char *how = mlflow_run_tag(&r, "ganflow.launch");
  CHECKF(how && strncmp(how, "nodes, 1..", 10) == 0, "tag ganflow.launch "
         "'%s', want the node agents' ('nodes, 1..N nodes of ...')",
         how ? how : "-");
  for (int n = 1; n < 50; n++) {
    char key[64];
    snprintf(key, sizeof key, "ganflow.restart.%d", n);
    const char *t = mlflow_run_tag(&r, key);
    if (!t) break;
    const char *p = strstr(t, "restarted on ");
    size_t len = strlen(out);
    snprintf(out + len, cap - len, ">%d", p ? atoi(p + 13) : -1);
    fprintf(stderr, "  %s: %s\n", key, t);
  }
  mlflow_run_free(&r);
}

typedef struct log_cond {
  const char *log, *needle;
} log_cond;

static int log_has(void *arg) {
  const log_cond *c = arg;
  return log_contains(c->log, c->needle);
}

/* Waits until log holds needle; the seconds since t0, or -1 at timeout. */
static double wait_log(const char *log, const char *needle, double t0,
                       double timeout_s) {
  log_cond c = {log, needle};
  if (!tu_wait_for(log_has, &c, timeout_s, 0.02)) return -1;
  return tu_mono_s() - t0;
}

typedef struct ckpt_cond {
  const char *dir;
  long step;
} ckpt_cond;

static int ckpt_at(void *arg) {
  const ckpt_cond *c = arg;
  return newest_ckpt_on_disk(c->dir) >= c->step;
}

typedef struct scenario {
  const char *name;
  int hosts;
  const char *nnodes;   /* --nnodes */
  bool pet;             /* the node settings from PET_* instead of flags */
  const char *fault;    /* cluster.sh verb on node1 */
  const char *undo;     /* after detection: heal / cont; NULL none */
  const char *want;     /* the world sizes of the rounds */
  double detect_max;    /* generous bounds, seconds from the fault */
} scenario;

static const scenario scenarios[] = {
    {"kill", 3, "1:3", false, "kill", NULL, "2>2", 10},
    {"cut", 2, "1:2", false, "cut", "heal", "2>1>2", HANG_S + 10},
    {"stall", 2, "1:2", true, "stop", "cont", "2>1>2", HANG_S + 10},
};

static int run_ref(const char *tmp, const char *uri) {
  char dir[1024], log[1024], u[96], exp[160];
  snprintf(dir, sizeof dir, "%s/ref", tmp);
  snprintf(log, sizeof log, "%s/ref.log", tmp);
  tu_fresh_dir(dir);
  test_unique(u, sizeof u, "cluster-launch");
  snprintf(exp, sizeof exp, "%s-ref", u);
  cmd c = {.n = 0};
  trainer(&c, dir, exp);
  pid_t pid = tu_spawn_log(log, c.argv, "MLFLOW_TRACKING_URI", uri, 1);
  int rc = wait_group(pid, 300, log);
  CHECKF(rc == 0, "the 1-rank reference exited %d (log %s)", rc, log);
  if (rc) dump_log(log);
  return check_report();
}

static int run_scenario(const scenario *sc, const char *tmp, const char *uri) {
  char base[1024], cdir[1100], ckpt[1100], ref[1200];
  snprintf(base, sizeof base, "%s/%s", tmp, sc->name);
  tu_fresh_dir(base);
  snprintf(cdir, sizeof cdir, "%s/cluster", base);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", base);
  snprintf(ref, sizeof ref, "%s/ref/ckpt-%012d.safetensors", tmp, STEPS);
  struct stat sb;
  if (stat(ref, &sb) != 0) {
    fprintf(stderr, "%s missing: run the cluster_launch_ref test first "
            "(a ctest fixture)\n", ref);
    return 1;
  }
  int up = tc_up(GF_CLUSTER_SH, cdir, sc->hosts);
  if (up) return up;
  char curi[256];
  tc_gateway_uri(GF_CLUSTER_SH, uri, curi, sizeof curi);
  char u[96], exp[160], env_uri[300];
  test_unique(u, sizeof u, "cluster-launch");
  snprintf(exp, sizeof exp, "%s-%s", u, sc->name);
  snprintf(env_uri, sizeof env_uri, "MLFLOW_TRACKING_URI=%s", curi);

  /* one agent per host, each in its own process group */
  char logs[4][1200], host[4][16], rank_s[4][48], pet[4][4][48];
  pid_t pid[4] = {0};
  for (int k = 0; k < sc->hosts; k++) {
    snprintf(logs[k], sizeof logs[k], "%s/node%d.log", base, k);
    snprintf(host[k], sizeof host[k], "node%d", k);
    cmd c = {.n = 0};
    add(&c, GF_CLUSTER_SH);
    add(&c, "exec");
    add(&c, host[k]);
    add(&c, "/usr/bin/env");
    add(&c, env_uri);
    if (sc->pet) {
      snprintf(pet[k][0], sizeof pet[k][0], "PET_NNODES=%s", sc->nnodes);
      snprintf(pet[k][1], sizeof pet[k][1], "PET_NODE_RANK=%d", k);
      snprintf(pet[k][2], sizeof pet[k][2], "PET_MASTER_ADDR=node0");
      snprintf(pet[k][3], sizeof pet[k][3], "PET_MASTER_PORT=%s", RDZV_PORT);
      for (int i = 0; i < 4; i++) add(&c, pet[k][i]);
      add(&c, "PET_NPROC_PER_NODE=1");
    }
    add(&c, GF_GANFLOW_BIN);
    add(&c, "launch");
    if (!sc->pet) {
      snprintf(rank_s[k], sizeof rank_s[k], "%d", k);
      add(&c, "--nnodes");
      add(&c, sc->nnodes);
      add(&c, "--node-rank");
      add(&c, rank_s[k]);
      add(&c, "--rdzv");
      add(&c, "node0:" RDZV_PORT);
      add(&c, "--nproc");
      add(&c, "1");
    }
    add(&c, "--hang-timeout");
    add(&c, HANG);
    add(&c, "--start-timeout");
    add(&c, "60");
    add(&c, "--max-restarts");
    add(&c, "3");
    add(&c, "--");
    trainer(&c, ckpt, exp);
    pid[k] = tu_spawn_log(logs[k], c.argv, NULL, NULL, 1);
    tc_track(k, pid[k]);
  }
  const char *log0 = logs[0];
  double t0 = tu_mono_s();
  CHECKF(wait_log(log0, "round 1: 2 ranks on 2 nodes", t0, 60) >= 0,
         "round 1 did not start on 2 nodes (log %s)", log0);
  /* a checkpoint to resume from, and training going on */
  ckpt_cond cc = {ckpt, 30};
  CHECKF(tu_wait_for(ckpt_at, &cc, 120, 0.05), "no checkpoint at step 30");
  if (check_failures_) {
    dump_log(log0);
    return check_report();
  }
  double t_fault = tu_mono_s();
  REQUIRE(tc_verb(GF_CLUSTER_SH, sc->fault, "node1", NULL, 0) == 0);
  double detect = wait_log(log0, "round 1 ends", t_fault, 60);
  /* node1 is given back once the round without it has started (so the
   * job is seen going on at a smaller world, however fast the machine
   * trains); it joins again at the drain that follows */
  double heal = -1, rejoin = -1;
  if (detect >= 0 && sc->undo) {
    CHECKF(wait_log(log0, "restarted on 1 ranks on 1 node", t_fault, 30) >= 0,
           "%s: no round without node1", sc->name);
    REQUIRE(tc_verb(GF_CLUSTER_SH, sc->undo, "node1", NULL, 0) == 0);
    heal = tu_mono_s() - t_fault;
  }
  double first = wait_log(log0, "s after the failure was seen", t_fault, 60);
  if (sc->undo)
    rejoin = wait_log(log0, "restarted on 2 ranks on 2 nodes (was 1)",
                      t_fault, 90);
  int rc0 = wait_group(pid[0], 240, log0);
  tc_track(0, 0);
  fprintf(stderr, "%s: fault at %.1f s; detected after %.2f s (bound %.0f), "
          "first new step %.2f s after the fault%s", sc->name, t_fault - t0,
          detect, sc->detect_max, first, sc->undo ? "" : "\n");
  if (sc->undo)
    fprintf(stderr, "; %s after %.2f s, back in a round of 2 after %.2f s\n",
            sc->undo, heal, rejoin);
  CHECKF(detect >= 0 && detect <= sc->detect_max, "%s: the failure was "
         "detected after %.2f s", sc->name, detect);
  CHECKF(first >= 0, "%s: no new step after the failure", sc->name);
  if (sc->undo) CHECKF(rejoin >= 0, "%s: node1 did not join again", sc->name);
  CHECKF(rc0 == 0, "node 0's agent exited %d (log %s)", rc0, log0);
  for (int k = 1; k < sc->hosts; k++) {
    int rc = wait_group(pid[k], 90, logs[k]);
    tc_track(k, 0);
    bool lost = k == 1 && strcmp(sc->fault, "kill") == 0;
    fprintf(stderr, "node%d's agent: exit %d%s\n", k, rc,
            lost ? " (killed with its host)" : "");
    if (!lost) CHECKF(rc == 0, "node%d's agent exited %d (log %s)", k, rc,
                      logs[k]);
  }
  if (check_failures_) {
    for (int k = 0; k < sc->hosts; k++) dump_log(logs[k]);
    return check_report();
  }
  char got[1200];
  snprintf(got, sizeof got, "%s/ckpt-%012d.safetensors", ckpt, STEPS);
  compare_ckpts(got, ref, sc->name);

  mlflow_client *mc = test_client_of(uri);
  char run_id[64] = "";
  mlflow_run the;
  if (test_the_finished_run(mc, exp, &the)) {
    snprintf(run_id, sizeof run_id, "%s", the.info.run_id);
    mlflow_run_free(&the);
    char traj[128];
    trajectory(mc, run_id, 2, traj, sizeof traj);
    fprintf(stderr, "%s: world sizes %s (want %s)\n", sc->name, traj, sc->want);
    CHECKF(strcmp(traj, sc->want) == 0, "%s: rounds of %s ranks, want %s",
           sc->name, traj, sc->want);
    long points = 0;
    int keys = check_exactly_once(mc, run_id, sc->name, &points);
    fprintf(stderr, "%s: run %s, %d keys, %ld points, each (key, step) "
            "once\n", sc->name, run_id, keys, points);
    CHECK(keys > 0);
  }
  mlflow_client_free(mc);
  return check_report();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ref|kill|cut|stall\n", argv[0]);
    return 2;
  }
  if (!tu_have_fashion()) return 1;
  test_tracking_env(NULL);
  char *uri = test_mlflow_uri();
  int rc = 2;
  if (strcmp(argv[1], "ref") == 0) {
    tu_fresh_dir(GF_TEST_TMP);
    rc = run_ref(GF_TEST_TMP, uri);
  } else {
    for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++)
      if (strcmp(argv[1], scenarios[i].name) == 0)
        rc = run_scenario(&scenarios[i], GF_TEST_TMP, uri);
    if (rc == 2) fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
  }
  free(uri);
  return rc;
}
