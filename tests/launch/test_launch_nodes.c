/* test_launch_nodes.c - `ganflow launch --nnodes`: two node agents on this
 * host's loopback (the paths that need no second host; failures between
 * hosts are in tests/cluster), each running one rank of mlp on
 * Fashion-MNIST, against the MLflow server of the `mlflow` ctest fixture.
 *
 *   usage   node1's command differs from node0's (--seed): its rank and
 *           rank 0 refuse to train together (exit 2), and both agents end
 *           2 at once instead of restarting
 *   nproc   node1's agent has another --nproc: node 0 refuses it at the
 *           rendezvous (exit 2, the reason on its stderr) and its own
 *           agent goes on waiting for a node that fits (--nnodes 2)
 *   term    SIGTERM to node1's agent mid-training: every rank checkpoints
 *           at the same step and both agents end 143; the same two
 *           commands resume the job to its end: FINISHED, one point per
 *           (key, step)
 *   alone   node1 without node 0: exit 1 after --start-timeout, naming
 *           the rendezvous it could not reach
 *   badnode node1's rank cannot start (a wrapper exits 3 before
 *           ganflow-train), --nnodes 1:2: node 1 is left out and the job
 *           ends on node 0 alone, FINISHED
 * FAILS when Fashion-MNIST is missing. */
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"
#include "wait_util.h"


typedef struct cmd {
  char *argv[64];
  int n;
} cmd;

static void add(cmd *c, const char *a) {
  REQUIRE(c->n < 63);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

typedef struct agent_spec {
  int node;
  const char *nnodes, *nproc, *seed, *steps, *start_timeout;
  const char *wrapper; /* a script before ganflow-train, or NULL */
} agent_spec;

/* ganflow launch for one node, its rendezvous on 127.0.0.1:port. */
static pid_t start_agent(const agent_spec *a, int port, const char *dir,
                         const char *exp, const char *uri, const char *log) {
  static char node_s[4][8], rdzv[4][32]; /* argv strings live to the exec */
  int k = a->node;
  snprintf(node_s[k], sizeof node_s[k], "%d", k);
  snprintf(rdzv[k], sizeof rdzv[k], "127.0.0.1:%d", port);
  cmd c = {.n = 0};
  const char *pre[] = {GF_GANFLOW_BIN, "launch", "--nnodes", a->nnodes,
                       "--node-rank", node_s[k], "--rdzv", rdzv[k],
                       "--nproc", a->nproc, "--hang-timeout", "10",
                       "--start-timeout", a->start_timeout, "--"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) add(&c, pre[i]);
  if (a->wrapper) add(&c, a->wrapper);
  const char *job[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                       "--batch", "32", "--threads", "1", "--seed", a->seed,
                       "--steps", a->steps, "--log-every", "10",
                       "--checkpoint-every", "10", "--sample-every", "0",
                       "--eval-every", "0", "--register-model", "",
                       "--exact-reduce", "--comm-timeout", "30",
                       "--checkpoint-dir", dir, "--experiment", exp};
  for (size_t i = 0; i < sizeof job / sizeof *job; i++) add(&c, job[i]);
  return tu_spawn_log(log, c.argv, "MLFLOW_TRACKING_URI", uri, 1);
}

static int free_port(void) {
  /* the rendezvous port: any free one, from the kernel */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
          getsockname(s, (struct sockaddr *)&a, &len) == 0);
  close(s);
  return ntohs(a.sin_port);
}

static void paths(const char *name, char *dir, char *log0, char *log1,
                  char *exp, size_t cap) {
  snprintf(dir, cap, "%s/%s", GF_TEST_TMP, name);
  tu_fresh_dir(dir);
  snprintf(log0, cap, "%s/node0.log", dir);
  snprintf(log1, cap, "%s/node1.log", dir);
  char u[96];
  test_unique(u, sizeof u, "launch-nodes");
  snprintf(exp, cap, "%s-%s", u, name);
}

static void test_usage(const char *uri) {
  char dir[1024], log0[1024], log1[1024], exp[1024], ck[1100];
  paths("usage", dir, log0, log1, exp, sizeof dir);
  snprintf(ck, sizeof ck, "%s/ckpt", dir);
  int port = free_port();
  agent_spec a0 = {0, "2", "1", "11", "40", "60", NULL};
  agent_spec a1 = {1, "2", "1", "12", "40", "60", NULL};
  pid_t p0 = start_agent(&a0, port, ck, exp, uri, log0);
  pid_t p1 = start_agent(&a1, port, ck, exp, uri, log1);
  int rc0 = wait_group(p0, 120, log0), rc1 = wait_group(p1, 60, log1);
  CHECKF(rc0 == 2 && rc1 == 2, "usage: agents exited %d and %d, want 2", rc0,
         rc1);
  CHECKF(log_contains(log0, "refused their configuration"), "usage: node 0 "
         "does not say the ranks refused their configuration");
  CHECK(!log_contains(log0, "restart 1"));
  if (check_failures_) dump_log(log0), dump_log(log1);
}

static void test_nproc(const char *uri) {
  char dir[1024], log0[1024], log1[1024], exp[1024], ck[1100];
  paths("nproc", dir, log0, log1, exp, sizeof dir);
  snprintf(ck, sizeof ck, "%s/ckpt", dir);
  int port = free_port();
  agent_spec a0 = {0, "2", "1", "11", "20", "4", NULL};
  agent_spec a1 = {1, "2", "2", "11", "20", "60", NULL};
  pid_t p0 = start_agent(&a0, port, ck, exp, uri, log0);
  pid_t p1 = start_agent(&a1, port, ck, exp, uri, log1);
  int rc1 = wait_group(p1, 60, log1);
  CHECKF(rc1 == 2, "nproc: node1's agent exited %d, want 2", rc1);
  CHECKF(log_contains(log1, "--nproc 1"), "nproc: node1 is not told node "
         "0's --nproc");
  /* node 0 waits for a second node that fits, then gives up */
  int rc0 = wait_group(p0, 60, log0);
  CHECKF(rc0 == 1 && log_contains(log0, "within --start-timeout"),
         "nproc: node 0 exited %d", rc0);
  if (check_failures_) dump_log(log0), dump_log(log1);
}

static int hb_step(const char *dir) {
  char path[1200];
  snprintf(path, sizeof path, "%s/heartbeat/node-1/rank-1.hb", dir);
  char *t = test_read_text(path);
  if (!t) return -1;
  const char *p = strstr(t, " step=");
  int step = p ? atoi(p + 6) : -1;
  free(t);
  return step;
}

static void test_term(const char *uri) {
  char dir[1024], log0[1024], log1[1024], exp[1024], ck[1100];
  paths("term", dir, log0, log1, exp, sizeof dir);
  snprintf(ck, sizeof ck, "%s/ckpt", dir);
  int port = free_port();
  agent_spec a0 = {0, "2", "1", "11", "200", "60", NULL};
  agent_spec a1 = {1, "2", "1", "11", "200", "60", NULL};
  pid_t p0 = start_agent(&a0, port, ck, exp, uri, log0);
  pid_t p1 = start_agent(&a1, port, ck, exp, uri, log1);
  tu_deadline d = tu_deadline_in(120);
  while (hb_step(ck) < 20 && !tu_deadline_passed(&d)) tu_pause_s(0.02);
  REQUIRE(hb_step(ck) >= 20);
  kill(p1, SIGTERM);
  int rc1 = wait_group(p1, 60, log1), rc0 = wait_group(p0, 60, log0);
  CHECKF(rc0 == 143 && rc1 == 143, "term: agents exited %d and %d, want 143",
         rc0, rc1);
  long stopped = newest_ckpt_on_disk(ck);
  CHECKF(stopped >= 20 && stopped < 200, "term: newest checkpoint %ld",
         stopped);
  /* the same commands resume it */
  char log0b[1100], log1b[1100];
  snprintf(log0b, sizeof log0b, "%s.again", log0);
  snprintf(log1b, sizeof log1b, "%s.again", log1);
  p0 = start_agent(&a0, port, ck, exp, uri, log0b);
  p1 = start_agent(&a1, port, ck, exp, uri, log1b);
  rc0 = wait_group(p0, 180, log0b);
  rc1 = wait_group(p1, 60, log1b);
  CHECKF(rc0 == 0 && rc1 == 0, "term: resumed agents exited %d and %d", rc0,
         rc1);
  CHECK(newest_ckpt_on_disk(ck) == 200);
  mlflow_client *mc = test_client_of(uri);
  mlflow_experiment x;
  mlflow_error e;
  if (mlflow_experiment_get_by_name(mc, exp, &x, &e) == MLFLOW_OK) {
    const char *ids[1] = {x.experiment_id};
    mlflow_run_list l;
    if (mlflow_runs_search(mc, ids, 1, NULL, NULL, 0, NULL, &l, &e) ==
        MLFLOW_OK) {
      CHECKF(l.count == 1, "term: %zu runs, want 1", l.count);
      if (l.count == 1) {
        CHECKF(l.runs[0].info.status == MLFLOW_RUN_FINISHED, "term: run %s",
               mlflow_run_status_name(l.runs[0].info.status));
        CHECK(check_exactly_once(mc, l.runs[0].info.run_id, "term", NULL) > 0);
      }
      mlflow_run_list_free(&l);
    }
    mlflow_experiment_free(&x);
  } else {
    CHECKF(0, "term: experiment %s: %s", exp, e.message);
  }
  mlflow_client_free(mc);
  if (check_failures_) dump_log(log0b), dump_log(log1b);
}

static void test_alone(const char *uri) {
  char dir[1024], log0[1024], log1[1024], exp[1024], ck[1100];
  paths("alone", dir, log0, log1, exp, sizeof dir);
  snprintf(ck, sizeof ck, "%s/ckpt", dir);
  agent_spec a1 = {1, "2", "1", "11", "20", "2", NULL};
  double t0 = tu_mono_s();
  pid_t p1 = start_agent(&a1, free_port(), ck, exp, uri, log1);
  int rc1 = wait_group(p1, 60, log1);
  CHECKF(rc1 == 1 && log_contains(log1, "unreachable"), "alone: exit %d", rc1);
  CHECKF(tu_mono_s() - t0 < 30, "alone: %.1f s", tu_mono_s() - t0);
}

static void test_badnode(const char *uri) {
  char dir[1024], log0[1024], log1[1024], exp[1024], ck[1100], wrap[1100];
  paths("badnode", dir, log0, log1, exp, sizeof dir);
  snprintf(ck, sizeof ck, "%s/ckpt", dir);
  snprintf(wrap, sizeof wrap, "%s/broken-node.sh", dir);
  static const char script[] = "#!/bin/sh\necho 'no device here' >&2\nexit 3\n";
  tu_write(wrap, script, sizeof script - 1);
  REQUIRE(chmod(wrap, 0755) == 0);
  int port = free_port();
  agent_spec a0 = {0, "1:2", "1", "11", "40", "60", NULL};
  agent_spec a1 = {1, "1:2", "1", "11", "40", "60", wrap};
  pid_t p0 = start_agent(&a0, port, ck, exp, uri, log0);
  pid_t p1 = start_agent(&a1, port, ck, exp, uri, log1);
  int rc0 = wait_group(p0, 120, log0), rc1 = wait_group(p1, 60, log1);
  CHECKF(rc0 == 0 && rc1 == 0, "badnode: agents exited %d and %d", rc0, rc1);
  CHECKF(log_contains(log0, "node 1 (") && log_contains(log0, "is left out"),
         "badnode: node 0 does not say node 1 is left out");
  CHECKF(log_contains(log0, "restarted on 1 ranks on 1 node (was 2)"),
         "badnode: no round of 1 rank");
  CHECK(newest_ckpt_on_disk(ck) == 40);
  if (check_failures_) dump_log(log0), dump_log(log1);
}

int main(int argc, char **argv) {
  if (!tu_have_fashion()) return 1;
  test_tracking_env(NULL);
  unsetenv("PET_NNODES");
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  const char *only = argc > 1 ? argv[1] : "";
  if (!*only || !strcmp(only, "usage")) test_usage(uri);
  if (!*only || !strcmp(only, "nproc")) test_nproc(uri);
  if (!*only || !strcmp(only, "term")) test_term(uri);
  if (!*only || !strcmp(only, "alone")) test_alone(uri);
  if (!*only || !strcmp(only, "badnode")) test_badnode(uri);
  free(uri);
  return check_report();
}
