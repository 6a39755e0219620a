/* test_cluster_mpirun.c - ganflow-train on 2 hosts x 2 ranks under the
 * real mpirun of Open MPI, on the test cluster of tests/support/cluster.sh
 * (network namespaces with their own addresses, hostnames and /etc/hosts;
 * the filesystem shared as NFS would be), against the MLflow server of the
 * `mlflow` ctest fixture.
 *
 *   mpirun runs inside node0 (from the root namespace the remote daemons
 *   could not connect back to it) with a host file naming node0 and node1,
 *   slots=2 each, and `cluster.sh rsh` as its rsh agent, which starts
 *   orted inside node1; 10 steps of mlp on Fashion-MNIST, --exact-reduce.
 *   The server listens on root-namespace loopback: `cluster.sh gateway`
 *   relays it into the cluster.
 *
 * Checks: the job exits 0; its MLflow run is FINISHED with param
 * world_size 4 and tag ganflow.hosts "node0,node1" (one entry per host, in
 * rank order); the final checkpoint's tensors are byte-identical to a
 * 1-rank --exact-reduce run of the same flags in the root namespace.
 *
 * No MCA setting is needed across the namespaces: each host has its own
 * hostname, so Open MPI sees two nodes and joins them over TCP on the
 * bridge (with one shared hostname it would take the ranks for local ones).
 *
 * Skips (77) when not root or a tool is missing (cluster.sh's verdict), or
 * when this build has no MPI or mpirun is missing; FAILS when Fashion-MNIST
 * is missing. The cluster is taken down on every exit path: at exit, and
 * from a SIGTERM/SIGINT handler. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cluster_util.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/comm.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"

#define STEPS 10 /* the job's steps; its final checkpoint is ckpt-<STEPS> */
#define STEPS_S "10"

typedef struct cmd {
  char *argv[64];
  int n;
} cmd;

static void add(cmd *c, const char *a) {
  REQUIRE(c->n < 63);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

/* The trainer and its flags: mlp on Fashion-MNIST, --exact-reduce,
 * checkpoints only at the end (STEPS), ranks compared every step. */
static void trainer(cmd *c, const char *dir, const char *exp) {
  const char *flags[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                         "--batch", "16", "--threads", "1", "--seed", "7",
                         "--steps", STEPS_S, "--log-every", "5",
                         "--sample-every", "0", "--eval-every", "0",
                         "--register-model", "", "--check-every", "1",
                         "--checkpoint-every", "0", "--exact-reduce",
                         "--checkpoint-dir", dir, "--experiment", exp};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) add(c, flags[i]);
}

/* Runs c in a process group of its own, MLFLOW_TRACKING_URI=uri, output
 * into log; its exit status, -1 (group killed) after timeout_s. */
static int run_job(const cmd *c, const char *uri, const char *log,
                   double timeout_s) {
  pid_t pid = tu_spawn_log(log, c->argv, "MLFLOW_TRACKING_URI", uri, 1);
  tc_track(0, pid);
  int rc = wait_group(pid, timeout_s, log);
  tc_track(0, 0);
  return rc;
}

int main(void) {
  double t_all = mono_s();
  const char *mpirun = GF_MPIEXEC;
  if (!gf_comm_built(GF_COMM_MPI) || !*mpirun || access(mpirun, X_OK) != 0) {
    fprintf(stderr, "SKIP: no MPI in this build or no mpirun (%s)\n", mpirun);
    return 77;
  }
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/cluster", GF_TEST_TMP);
  test_tracking_env(NULL);
  /* The cluster and the way in for MLflow. */
  int rc = tc_up(GF_CLUSTER_SH, dir, 2);
  if (rc) return rc;
  char cluster_uri[256];
  tc_gateway_uri(GF_CLUSTER_SH, uri, cluster_uri, sizeof cluster_uri);
  fprintf(stderr, "MLflow %s reaches the cluster as %s\n", uri, cluster_uri);

  char hosts[1024], agent[1200];
  snprintf(hosts, sizeof hosts, "%s/hosts", GF_TEST_TMP);
  static const char host_lines[] = "node0 slots=2\nnode1 slots=2\n";
  tu_write(hosts, host_lines, sizeof host_lines - 1);
  /* Open MPI splits the agent at spaces into a command and its
   * arguments, and calls it as AGENT HOST CMD... */
  snprintf(agent, sizeof agent, "%s rsh", GF_CLUSTER_SH);

  char dir4[1024], dir1[1024], log4[1024], log1[1024], u[128], exp4[256],
      exp1[256];
  snprintf(dir4, sizeof dir4, "%s/ranks4", GF_TEST_TMP);
  snprintf(dir1, sizeof dir1, "%s/rank1", GF_TEST_TMP);
  snprintf(log4, sizeof log4, "%s/ranks4.log", GF_TEST_TMP);
  snprintf(log1, sizeof log1, "%s/rank1.log", GF_TEST_TMP);
  test_unique(u, sizeof u, "cluster");
  snprintf(exp4, sizeof exp4, "%s-4ranks", u);
  snprintf(exp1, sizeof exp1, "%s-1rank", u);

  /* 2 hosts x 2 ranks. */
  cmd c = {.n = 0};
  const char *pre[] = {GF_CLUSTER_SH, "exec", "node0", mpirun,
                       "--allow-run-as-root", "--oversubscribe", "--bind-to",
                       "none", "--mca", "plm_rsh_agent", agent, "--hostfile",
                       hosts, "-np", "4", "-x", "MLFLOW_TRACKING_URI"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) add(&c, pre[i]);
  trainer(&c, dir4, exp4);
  double t0 = mono_s();
  rc = run_job(&c, cluster_uri, log4, 180);
  fprintf(stderr, "2 hosts x 2 ranks: exit %d after %.1f s\n", rc,
          mono_s() - t0);
  CHECKF(rc == 0, "mpirun across 2 hosts exited %d (log %s)", rc, log4);
  if (rc != 0) dump_log(log4);
  CHECKF(log_contains(log4, "x 4 ranks"), "the job does not say it ran on 4 "
         "ranks");

  /* The same on 1 rank in the root namespace. */
  cmd c1 = {.n = 0};
  trainer(&c1, dir1, exp1);
  t0 = mono_s();
  int rc1 = run_job(&c1, uri, log1, 180);
  fprintf(stderr, "1 rank: exit %d after %.1f s\n", rc1, mono_s() - t0);
  CHECKF(rc1 == 0, "the 1-rank run exited %d (log %s)", rc1, log1);
  if (rc1 != 0) dump_log(log1);

  mlflow_client *mc = test_client_of(uri);
  mlflow_run r;
  if (rc == 0 && test_the_finished_run(mc, exp4, &r)) {
    const char *ws = mlflow_run_param(&r, "world_size");
    const char *hs = mlflow_run_tag(&r, "ganflow.hosts");
    CHECKF(ws && strcmp(ws, "4") == 0, "param world_size %s, want 4",
           ws ? ws : "-");
    CHECKF(hs && strcmp(hs, "node0,node1") == 0, "tag ganflow.hosts '%s', "
           "want 'node0,node1'", hs ? hs : "-");
    fprintf(stderr, "run %s: world_size %s, ganflow.hosts %s\n",
            r.info.run_id, ws ? ws : "-", hs ? hs : "-");
    mlflow_run_free(&r);
  }
  mlflow_client_free(mc);

  if (rc == 0 && rc1 == 0) {
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/ckpt-%012d.safetensors", dir4, STEPS);
    snprintf(b, sizeof b, "%s/ckpt-%012d.safetensors", dir1, STEPS);
    compare_ckpts(a, b, "2 hosts x 2 ranks vs 1 rank");
  }
  free(uri);
  fprintf(stderr, "test_cluster_mpirun: %.1f s\n", mono_s() - t_all);
  return check_report();
}
