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
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/comm.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"

#define FASHION "/usr/share/datasets/fashion-mnist"
#define STEPS 10 /* the job's steps; its final checkpoint is ckpt-<STEPS> */
#define STEPS_S "10"

/* What the exit paths need to take the cluster down. The one piece of
 * process-wide state here, because a signal handler reads it: written once
 * in main() before the handlers are installed, except `child`. */
typedef struct cluster_exit {
  char *down_argv[3];      /* cluster.sh down (GF_CLUSTER_DIR is in environ) */
  volatile pid_t child;    /* the process group running now, 0 when none */
} cluster_exit;
static cluster_exit g_exit;

/* Runs `cluster.sh down` and waits for it (fork, execv, waitpid: callable
 * from the signal handler). */
static void cluster_down(void) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 1);
    execv(g_exit.down_argv[0], g_exit.down_argv);
    _exit(127);
  }
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

static void end_all(void) {
  if (g_exit.child > 0) {
    kill(-g_exit.child, SIGKILL);
    waitpid(g_exit.child, NULL, 0);
    g_exit.child = 0;
  }
  cluster_down();
}

static void on_signal(int sig) {
  end_all();
  _exit(128 + sig);
}

/* Runs argv (argv[0] a path) to the end with stdout into out (at most
 * cap - 1 bytes, trailing newlines removed) and stderr into the test's;
 * returns its exit status (128 + signal), -1 when it could not start. */
static int capture(char *const *argv, char *out, size_t cap) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  char sink[256];
  while ((r = read(p[0], n + 1 < cap ? out + n : sink,
                   n + 1 < cap ? cap - 1 - n : sizeof sink)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n + 1 < cap) n += (size_t)r;
  }
  close(p[0]);
  out[n] = '\0';
  while (n && out[n - 1] == '\n') out[--n] = '\0';
  return tu_wait_rc(pid);
}

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
  g_exit.child = pid;
  int rc = wait_group(pid, timeout_s, log);
  g_exit.child = 0;
  return rc;
}

/* The experiment's one run (FINISHED) into r; false when it is not so. */
static bool the_run(mlflow_client *mc, const char *exp, mlflow_run *r) {
  mlflow_experiment x;
  mlflow_error e;
  mlflow_status ms = mlflow_experiment_get_by_name(mc, exp, &x, &e);
  CHECKF(ms == MLFLOW_OK, "experiment %s: %s", exp, e.message);
  if (ms != MLFLOW_OK) return false;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  ms = mlflow_runs_search(mc, ids, 1, NULL, NULL, 0, NULL, &l, &e);
  mlflow_experiment_free(&x);
  CHECKF(ms == MLFLOW_OK, "runs/search: %s", e.message);
  if (ms != MLFLOW_OK) return false;
  CHECKF(l.count == 1, "%zu runs in %s, want 1", l.count, exp);
  char id[64] = "";
  if (l.count >= 1) {
    CHECKF(l.runs[0].info.status == MLFLOW_RUN_FINISHED, "run is %s",
           mlflow_run_status_name(l.runs[0].info.status));
    snprintf(id, sizeof id, "%s", l.runs[0].info.run_id);
  }
  mlflow_run_list_free(&l);
  if (!id[0]) return false;
  ms = mlflow_run_get(mc, id, r, &e);
  CHECKF(ms == MLFLOW_OK, "runs/get %s: %s", id, e.message);
  return ms == MLFLOW_OK;
}

int main(void) {
  double t_all = mono_s();
  const char *mpirun = GF_MPIEXEC;
  if (!gf_comm_built(GF_COMM_MPI) || !*mpirun || access(mpirun, X_OK) != 0) {
    fprintf(stderr, "SKIP: no MPI in this build or no mpirun (%s)\n", mpirun);
    return 77;
  }
  struct stat sb;
  if (stat(FASHION "/train-images-idx3-ubyte.gz", &sb) != 0) {
    fprintf(stderr, "%s missing: install dataset-fashion-mnist\n", FASHION);
    return 1;
  }
  tu_fresh_dir(GF_TEST_TMP);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/cluster", GF_TEST_TMP);
  REQUIRE(setenv("GF_CLUSTER_DIR", dir, 1) == 0);
  unsetenv("MLFLOW_RUN_ID");
  unsetenv("MLFLOW_EXPERIMENT_NAME");
  signal(SIGPIPE, SIG_IGN);

  g_exit.down_argv[0] = GF_CLUSTER_SH;
  g_exit.down_argv[1] = "down";
  g_exit.down_argv[2] = NULL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  atexit(end_all);

  /* The cluster and the way in for MLflow. */
  char out[512];
  char *up[] = {GF_CLUSTER_SH, "up", "2", NULL};
  int rc = capture(up, out, sizeof out);
  if (rc == 77) {
    fprintf(stderr, "SKIP: cluster.sh up: not root or a tool missing (its "
                    "reason above)\n");
    return 77;
  }
  REQUIRE(rc == 0);
  fprintf(stderr, "%s\n", out);
  char *uri = test_mlflow_uri();
  const char *colon = strrchr(uri, ':');
  int port = colon ? atoi(colon + 1) : 0;
  REQUIRE(strncmp(uri, "http://127.0.0.1:", 17) == 0 && port > 0);
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", port);
  char *gw[] = {GF_CLUSTER_SH, "gateway", port_s, NULL};
  char relay[64];
  rc = capture(gw, relay, sizeof relay);
  REQUIRE(rc == 0 && strncmp(relay, "hub:", 4) == 0);
  char *addr[] = {GF_CLUSTER_SH, "addr", "hub", NULL};
  char hub[64];
  REQUIRE(capture(addr, hub, sizeof hub) == 0 && hub[0]);
  /* The hub's address rather than its name: MLflow 3's server refuses a
   * Host header it does not know (DNS rebinding protection), and knows
   * loopback and the private ranges (10.*), not "hub". */
  char cluster_uri[256];
  snprintf(cluster_uri, sizeof cluster_uri, "http://%s:%s", hub, relay + 4);
  fprintf(stderr, "MLflow %s reaches the cluster as %s (%s)\n", uri,
          cluster_uri, relay);

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

  mlflow_config cfg;
  test_config(&cfg, uri);
  mlflow_client *mc = test_client(&cfg);
  mlflow_run r;
  if (rc == 0 && the_run(mc, exp4, &r)) {
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
  mlflow_config_free(&cfg);

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
