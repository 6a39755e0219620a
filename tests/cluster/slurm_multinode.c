/* slurm_multinode.c - deploy/slurm/ganflow.sbatch on a Slurm of two nodes,
 * and what happens when one of them is lost mid-training.
 *
 * The cluster: tests/support/cluster.sh, 2 hosts (network namespaces with
 * their own addresses, hostnames and /etc/hosts; the filesystem shared as
 * NFS would be, so the checkpoint folder is "shared storage"), and on it
 * tests/support/slurm_fixture.sh cluster-start: slurmctld in the hub's
 * namespace, `slurmd -N node0` and `slurmd -N node1` inside their hosts,
 * one munged for all (its socket is a file). Slurm's clients run in the
 * hub (cluster.sh exec hub). MLflow is the `mlflow` ctest fixture's server
 * on root-namespace loopback, relayed into the cluster (cluster.sh
 * gateway).
 *
 * Both jobs are `sbatch --nodes=2 --ntasks-per-node=1` of the script: 2
 * CPU ranks of mlp on Fashion-MNIST through `ganflow launch --launcher
 * srun`, --exact-reduce, a checkpoint every CKPT_EVERY steps.
 *
 *   ref   undisturbed: the job COMPLETED 0:0 on node[0-1]; its run FINISHED,
 *         the only one of its experiment, with world_size 2 and
 *         ganflow.hosts "node0,node1" (the ranks' hostnames: two hosts),
 *         each (key, step) once.
 *   lost  once a checkpoint exists and rank 1 (on node1) trains past it,
 *         `cluster.sh kill node1` (every process of the host: slurmd, its
 *         slurmstepd, rank 1). The test waits, each with a deadline, for
 *         Slurm to mark node1 DOWN and requeue the job (Restarts=1), gives
 *         node1 back (slurm_fixture.sh node-start: --nodes=2 needs two
 *         nodes, and a two-host cluster has no spare), and waits for the job
 *         to COMPLETE 0:0 on its second start. Then: one MLflow run in the
 *         experiment, FINISHED, the run id of the first start (the job log
 *         names it in both starts, the second "resuming from" the
 *         checkpoint), each (key, step) once over every key (the resource
 *         monitor samples every 0.5 s, so both starts log some), and the
 *         final checkpoint byte-identical to ref's. It prints the timeline
 *         (kill, DOWN, requeue, running again, done) and what ganflow launch
 *         did meanwhile.
 *
 * Skips (77) when not root or a cluster tool is missing (cluster.sh's
 * verdict), or Slurm or munge is not installed (the fixture's); Slurm
 * installed but failing, Fashion-MNIST or the MLflow fixture missing FAIL.
 * The Slurm daemons, munged and the cluster end on every exit path: at
 * exit and from a SIGTERM/SIGINT handler (fixture stop, then cluster down).
 * ~60 s. */
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cluster_util.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/heartbeat.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "train_test_util.h"
#include "wait_util.h"

#define STEPS 80       /* the jobs' steps; the final checkpoint is ckpt-<STEPS> */
#define CKPT_EVERY 20  /* --checkpoint-every */
#define SLURM_FIXTURE GF_SOURCE_DIR "/tests/support/slurm_fixture.sh"
#define SBATCH_SCRIPT GF_SOURCE_DIR "/deploy/slurm/ganflow.sbatch"

static char g_slurm_dir[512];     /* the fixture's folder */
static char g_slurm_conf[600];    /* "SLURM_CONF=<dir>/slurm.conf" */
static char *g_stop_argv[4];      /* slurm_fixture.sh stop DIR */

/* slurm_fixture.sh stop: fork, execv, waitpid (callable from a signal
 * handler). Its stop is idempotent. */
static void slurm_stop(void) {
  if (!g_stop_argv[0]) return;
  pid_t pid = fork();
  if (pid == 0) {
    execv(g_stop_argv[0], g_stop_argv);
    _exit(127);
  }
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* Signals: the fixture first (its scancel goes through the hub), then the
 * tracked groups and the cluster. At exit the same order: atexit handlers
 * run last-registered first, and this one is registered after tc_up's. */
static void on_signal(int sig) {
  slurm_stop();
  tc_end_all();
  _exit(128 + sig);
}

/* Runs a Slurm client in the hub: `cluster.sh exec hub env SLURM_CONF=...
 * CMD ARGS...` (NULL-terminated); stdout into out[cap]; exit status. */
static int slurm_cmd(char *out, size_t cap, const char *cmd, ...) {
  char *argv[64];
  int n = 0;
  argv[n++] = GF_CLUSTER_SH;
  argv[n++] = "exec";
  argv[n++] = "hub";
  argv[n++] = "env";
  argv[n++] = g_slurm_conf;
  argv[n++] = (char *)cmd;
  va_list ap;
  va_start(ap, cmd);
  const char *a;
  while ((a = va_arg(ap, const char *)) != NULL) {
    REQUIRE(n < 63);
    argv[n++] = (char *)a;
  }
  va_end(ap);
  argv[n] = NULL;
  char sink[4096];
  return tc_capture(argv, out ? out : sink, out ? cap : sizeof sink);
}

/* The value of KEY=VALUE in `scontrol -o show job ID` (one line), into
 * val[cap]; false when the job or the key is not there. */
static bool job_field(const char *job, const char *key, char *val, size_t cap) {
  char out[8192];
  val[0] = '\0';
  if (slurm_cmd(out, sizeof out, "scontrol", "-o", "show", "job", job, NULL) != 0)
    return false;
  size_t kl = strlen(key);
  for (char *p = out; (p = strstr(p, key)) != NULL; p += kl) {
    if ((p == out || p[-1] == ' ') && p[kl] == '=') {
      size_t n = strcspn(p + kl + 1, " \n");
      if (n >= cap) n = cap - 1;
      memcpy(val, p + kl + 1, n);
      val[n] = '\0';
      return true;
    }
  }
  return false;
}

/* Node state as sinfo reports it ("idle", "down*", "mixed*", ...). */
static void node_state(const char *node, char *out, size_t cap) {
  if (slurm_cmd(out, cap, "sinfo", "-h", "-N", "-n", node, "-o", "%T", NULL) != 0)
    snprintf(out, cap, "?");
}

typedef struct job {
  const char *name;
  char id[32];        /* Slurm's job id */
  char dir[512];      /* --checkpoint-dir (its heartbeat/ below) */
  char log[512];      /* the job's output (--output, appended to) */
  char exp[256];      /* its MLflow experiment */
} job;

static void job_init(job *j, const char *name, const char *u) {
  memset(j, 0, sizeof *j);
  j->name = name;
  snprintf(j->dir, sizeof j->dir, "%s/%s", GF_TEST_TMP, name);
  snprintf(j->log, sizeof j->log, "%s/%s.out", GF_TEST_TMP, name);
  snprintf(j->exp, sizeof j->exp, "%s-%s", u, name);
}

/* sbatch of the script for j (not waiting); its id into j->id. */
static void submit(job *j, const char *bin_dir, const char *cluster_uri) {
  char out_opt[600], chdir_opt[600], export_opt[1200], name_opt[64];
  snprintf(out_opt, sizeof out_opt, "--output=%s", j->log);
  snprintf(chdir_opt, sizeof chdir_opt, "--chdir=%s", GF_TEST_TMP);
  snprintf(name_opt, sizeof name_opt, "--job-name=gf-%s", j->name);
  /* the monitor samples twice a second: each start of the job logs some,
   * and the exactly-once check covers them */
  snprintf(export_opt, sizeof export_opt,
           "--export=ALL,GANFLOW_BIN_DIR=%s,MLFLOW_TRACKING_URI=%s,"
           "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=0.5", bin_dir, cluster_uri);
  char steps[16], every[16];
  snprintf(steps, sizeof steps, "%d", STEPS);
  snprintf(every, sizeof every, "%d", CKPT_EVERY);
  char out[256];
  int rc = slurm_cmd(out, sizeof out, "sbatch", "--parsable", "--nodes=2",
                     "--ntasks-per-node=1", "--cpus-per-task=1", "--time=5",
                     name_opt, out_opt, chdir_opt, export_opt, SBATCH_SCRIPT,
                     "--data", FASHION, "--model", "mlp", "--batch", "16",
                     "--seed", "7", "--steps", steps, "--log-every", "5",
                     "--sample-every", "0", "--eval-every", "0",
                     "--checkpoint-every", every, "--check-every", "5",
                     "--exact-reduce", "--register-model", "",
                     "--checkpoint-dir", j->dir, "--experiment", j->exp, NULL);
  REQUIRE(rc == 0);
  snprintf(j->id, sizeof j->id, "%.*s", (int)strcspn(out, ";\n"), out);
  REQUIRE(j->id[0]);
  fprintf(stderr, "%s: job %s submitted\n", j->name, j->id);
}

/* Waits until the job has ended (COMPLETED, FAILED, CANCELLED, ...: not
 * PENDING, RUNNING, COMPLETING, CONFIGURING, REQUEUED, ...); its state
 * into state[cap]; false at the deadline. */
static bool wait_job_end(const job *j, double timeout_s, char *state, size_t cap) {
  tu_deadline d = tu_deadline_in(timeout_s);
  static const char *const live[] = {"PENDING", "RUNNING", "COMPLETING",
                                     "CONFIGURING", "REQUEUED", "REQUEUE_FED",
                                     "REQUEUE_HOLD", "RESIZING", "SUSPENDED",
                                     "SIGNALING", "STAGE_OUT"};
  for (;;) {
    bool alive = true;
    if (job_field(j->id, "JobState", state, cap)) {
      alive = false;
      for (size_t i = 0; i < sizeof live / sizeof *live; i++)
        if (strcmp(state, live[i]) == 0) alive = true;
    }
    if (!alive) return true;
    if (tu_deadline_passed(&d)) return false;
    tu_pause_s(0.2);
  }
}

/* The job ended COMPLETED 0:0 on both nodes; its run as promised (one,
 * FINISHED, on two hosts, each (key, step) once); the run's id into
 * run_id[cap] (empty when there is none). */
static void check_job(const job *j, mlflow_client *mc, const char *state,
                      int want_restarts, char *run_id, size_t cap) {
  char v[256];
  run_id[0] = '\0';
  CHECKF(strcmp(state, "COMPLETED") == 0, "%s: job %s ended %s", j->name,
         j->id, state);
  CHECKF(job_field(j->id, "ExitCode", v, sizeof v) && strcmp(v, "0:0") == 0,
         "%s: job exit code %s, want 0:0", j->name, v);
  CHECKF(job_field(j->id, "Restarts", v, sizeof v) && atoi(v) == want_restarts,
         "%s: Slurm restarts %s, want %d", j->name, v, want_restarts);
  CHECKF(job_field(j->id, "NodeList", v, sizeof v) &&
         strcmp(v, "node[0-1]") == 0, "%s: NodeList %s, want node[0-1]",
         j->name, v);
  CHECKF(log_contains(j->log, "ganflow launch exited 0"), "%s: the job log "
         "lacks 'ganflow launch exited 0'", j->name);
  mlflow_run r;
  if (!test_the_finished_run(mc, j->exp, &r)) {
    dump_log(j->log);
    return;
  }
  snprintf(run_id, cap, "%s", r.info.run_id);
  const char *ws = mlflow_run_param(&r, "world_size");
  const char *hs = mlflow_run_tag(&r, "ganflow.hosts");
  CHECKF(ws && strcmp(ws, "2") == 0, "%s: param world_size %s, want 2",
         j->name, ws ? ws : "-");
  /* one entry per rank's host, in rank order: two distinct hosts */
  CHECKF(hs && strcmp(hs, "node0,node1") == 0, "%s: tag ganflow.hosts '%s', "
         "want 'node0,node1'", j->name, hs ? hs : "-");
  fprintf(stderr, "%s: run %s FINISHED, world_size %s, ganflow.hosts %s\n",
          j->name, r.info.run_id, ws ? ws : "-", hs ? hs : "-");
  mlflow_run_free(&r);
  long points = 0;
  int keys = check_exactly_once(mc, run_id, j->name, &points);
  int rss = run_keys_ending(mc, run_id, "rss_megabytes");
  CHECKF(rss > 0, "%s: no resource-monitor sample in the run", j->name);
  fprintf(stderr, "%s: exactly-once: %d keys, %ld points\n", j->name, keys,
          points);
}

/* Rank r's newest heartbeat in j's folder; false when there is none. */
static bool beat(const job *j, int r, gf_heartbeat_rec *out) {
  char hb[600];
  gf_err e;
  snprintf(hb, sizeof hb, "%s/heartbeat", j->dir);
  return gf_heartbeat_read(hb, r, out, &e) == GF_OK;
}

/* The lines of the job log that say what the script and ganflow launch
 * did (not the ranks' step lines). */
static void print_story(const char *log) {
  size_t len = 0;
  char *text = read_all(log, &len);
  if (!text) return;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (strncmp(line, "ganflow", 7) == 0 || strncmp(line, "srun", 4) == 0 ||
        strncmp(line, "slurmstepd", 10) == 0)
      fprintf(stderr, "  | %s\n", line);
  free(text);
}

/* How often a line holds needle. */
static int count_lines(const char *log, const char *needle) {
  size_t len = 0;
  char *text = read_all(log, &len);
  if (!text) return 0;
  int n = 0;
  for (char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  free(text);
  return n;
}

int main(void) {
  double t_all = mono_s();
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  test_tracking_env(NULL);
  unsetenv("SLURM_CONF");
  char cdir[1024];
  snprintf(cdir, sizeof cdir, "%s/cluster", GF_TEST_TMP);
  int rc = tc_up(GF_CLUSTER_SH, cdir, 2);
  if (rc) return rc;

  /* The fixture's folder goes into a unix socket name: short, under
   * /tmp. Its stop runs on every exit path from here on. */
  snprintf(g_slurm_dir, sizeof g_slurm_dir, "%s/gfslurm.XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  REQUIRE(mkdtemp(g_slurm_dir) != NULL);
  snprintf(g_slurm_conf, sizeof g_slurm_conf, "SLURM_CONF=%s/slurm.conf",
           g_slurm_dir);
  g_stop_argv[0] = SLURM_FIXTURE;
  g_stop_argv[1] = "stop";
  g_stop_argv[2] = g_slurm_dir;
  g_stop_argv[3] = NULL;
  atexit(slurm_stop);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  double t0 = mono_s();
  char out[4096];
  char *start_argv[] = {SLURM_FIXTURE, "cluster-start", g_slurm_dir, NULL};
  rc = tc_capture(start_argv, out, sizeof out);
  if (rc == 77) {
    fprintf(stderr, "SKIP: Slurm or munge is not installed (the fixture's "
                    "reason above)\n");
    return 77;
  }
  if (rc != 0) {
    fprintf(stderr, "Slurm is installed but the fixture could not start it "
            "(exit %d, reason above; logs in %s/log)\n", rc, g_slurm_dir);
    g_stop_argv[0] = NULL; /* keep its logs: stop only the daemons */
    char *stop_argv[] = {SLURM_FIXTURE, "stop", g_slurm_dir, NULL};
    tc_capture(stop_argv, out, sizeof out);
    return 1;
  }
  slurm_cmd(out, sizeof out, "sinfo", "-h", "-N", "-o", "%N %T", NULL);
  fprintf(stderr, "Slurm up on 2 nodes in %.1f s: %s\n", mono_s() - t0, out);

  char cluster_uri[256];
  tc_gateway_uri(GF_CLUSTER_SH, uri, cluster_uri, sizeof cluster_uri);
  fprintf(stderr, "MLflow %s reaches the cluster as %s\n", uri, cluster_uri);
  /* The binaries under one folder, as an install has them. */
  char bin[600], link_path[700];
  snprintf(bin, sizeof bin, "%s/bin", GF_TEST_TMP);
  REQUIRE(mkdir(bin, 0755) == 0);
  snprintf(link_path, sizeof link_path, "%s/ganflow", bin);
  REQUIRE(symlink(GF_GANFLOW_BIN, link_path) == 0);
  snprintf(link_path, sizeof link_path, "%s/ganflow-train", bin);
  REQUIRE(symlink(GF_TRAIN_BIN, link_path) == 0);

  mlflow_client *mc = test_client_of(uri);
  char u[128];
  test_unique(u, sizeof u, "slurm-multi");

  /* ---- ref: undisturbed ------------------------------------------------ */
  job ref, lost;
  job_init(&ref, "ref", u);
  job_init(&lost, "lost", u);
  char state[64], ref_run[64] = "", lost_run[64] = "";
  t0 = mono_s();
  submit(&ref, bin, cluster_uri);
  bool ended = wait_job_end(&ref, 120, state, sizeof state);
  fprintf(stderr, "ref: job %s %s after %.1f s\n", ref.id,
          ended ? state : "still running", mono_s() - t0);
  CHECKF(ended, "ref: job %s did not end within 120 s", ref.id);
  if (ended) check_job(&ref, mc, state, 0, ref_run, sizeof ref_run);
  if (!ended || check_failures_) {
    dump_log(ref.log);
    goto done;
  }

  /* ---- lost: node1 killed mid-training --------------------------------- */
  t0 = mono_s();
  submit(&lost, bin, cluster_uri);
  /* A checkpoint on disk, and rank 1 on node1 training past it. */
  gf_heartbeat_rec hb1;
  long ck = -1;
  bool ready = false;
  for (tu_deadline d = tu_deadline_in(90); !tu_deadline_passed(&d);
       tu_pause_s(0.02)) {
    ck = newest_ckpt_on_disk(lost.dir);
    if (ck >= CKPT_EVERY && beat(&lost, 1, &hb1) && hb1.phase == GF_HB_TRAIN &&
        hb1.step > ck && strcmp(hb1.host, "node1") == 0) {
      ready = true;
      break;
    }
  }
  CHECKF(ready, "lost: no checkpoint with rank 1 training past it on node1 "
         "within 90 s (newest checkpoint %ld)", ck);
  if (!ready) {
    dump_log(lost.log);
    goto done;
  }
  double t_kill = mono_s();
  fprintf(stderr, "lost: checkpoint %ld on disk, rank 1 (pid %ld on %s) at "
          "step %lld: killing node1 (%.1f s after submission)\n", ck,
          hb1.pid, hb1.host, (long long)hb1.step, t_kill - t0);
  REQUIRE(tc_verb(GF_CLUSTER_SH, "kill", "node1", NULL, 0) == 0);

  /* Slurm notices: node1 DOWN, the job requeued. */
  char ns[64] = "", v[64] = "";
  double t_down = -1, t_requeue = -1, t_back = -1, t_run = -1;
  for (tu_deadline d = tu_deadline_in(60); !tu_deadline_passed(&d);
       tu_pause_s(0.2)) {
    node_state("node1", ns, sizeof ns);
    if (t_down < 0 && strncmp(ns, "down", 4) == 0) t_down = mono_s();
    if (t_requeue < 0 && job_field(lost.id, "Restarts", v, sizeof v) &&
        atoi(v) >= 1)
      t_requeue = mono_s();
    if (t_down >= 0 && t_requeue >= 0) break;
  }
  CHECKF(t_down >= 0, "lost: node1 not DOWN within 60 s of the kill (state %s)",
         ns);
  CHECKF(t_requeue >= 0, "lost: job %s not requeued within 60 s of the kill "
         "(Restarts=%s)", lost.id, v);
  if (t_down < 0 || t_requeue < 0) {
    dump_log(lost.log);
    goto done;
  }
  /* The run between the two starts (for the log: rank 0 ends it when its
   * peer vanishes, the next start resumes it). */
  char rid_path[700];
  snprintf(rid_path, sizeof rid_path, "%s/run_id", lost.dir);
  char *rid = test_read_text(rid_path);
  if (rid) {
    mlflow_run mid;
    mlflow_error me;
    if (mlflow_run_get(mc, rid, &mid, &me) == MLFLOW_OK) {
      fprintf(stderr, "lost: run %s is %s while the job waits\n", rid,
              mlflow_run_status_name(mid.info.status));
      mlflow_run_free(&mid);
    }
    free(rid);
  }
  /* --nodes=2 waits for two nodes: node1 comes back (its slurmd again). */
  char *back_argv[] = {SLURM_FIXTURE, "node-start", g_slurm_dir, "node1", NULL};
  rc = tc_capture(back_argv, out, sizeof out);
  CHECKF(rc == 0, "lost: node-start node1 exited %d", rc);
  t_back = mono_s();
  /* Running again, and to its end. */
  for (tu_deadline d = tu_deadline_in(60); !tu_deadline_passed(&d);
       tu_pause_s(0.2)) {
    if (job_field(lost.id, "JobState", state, sizeof state) &&
        strcmp(state, "RUNNING") == 0 &&
        job_field(lost.id, "Restarts", v, sizeof v) && atoi(v) >= 1) {
      t_run = mono_s();
      break;
    }
    if (strcmp(state, "COMPLETED") == 0) break;
  }
  ended = wait_job_end(&lost, 120, state, sizeof state);
  double t_end = mono_s();
  CHECKF(ended, "lost: job %s did not end within 120 s of its requeue", lost.id);
  fprintf(stderr, "lost: timeline from the kill of node1: DOWN +%.1f s, "
          "requeued +%.1f s, node1 back +%.1f s, running again +%.1f s, %s "
          "+%.1f s\n", t_down - t_kill, t_requeue - t_kill, t_back - t_kill,
          t_run >= 0 ? t_run - t_kill : -1.0, ended ? state : "not ended",
          t_end - t_kill);
  fprintf(stderr, "lost: what the job log says (both starts):\n");
  print_story(lost.log);
  if (ended) check_job(&lost, mc, state, 1, lost_run, sizeof lost_run);

  /* One run across both starts: the second resumed the first's. */
  char *kept = NULL, path[700];
  snprintf(path, sizeof path, "%s/run_id", lost.dir);
  kept = test_read_text(path);
  CHECKF(kept && strcmp(kept, lost_run) == 0, "lost: %s names run %s, the "
         "experiment's run is %s", path, kept ? kept : "-", lost_run);
  char run_line[128];
  snprintf(run_line, sizeof run_line, "ganflow-train: run %s,", lost_run);
  CHECKF(count_lines(lost.log, run_line) >= 2, "lost: '%s' %d times, want "
         "it from both starts (the first, and the requeued one)", run_line,
         count_lines(lost.log, run_line));
  CHECKF(count_lines(lost.log, "restart count 1)") == 1 &&
         log_contains(lost.log, "resuming from"), "lost: the job log lacks "
         "the second start resuming from a checkpoint");
  CHECKF(log_contains(lost.log, "ganflow.sbatch: Slurm requeued job"),
         "lost: the script did not say that Slurm requeued the job");
  free(kept);

  if (ended && strcmp(state, "COMPLETED") == 0) {
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/ckpt-%012d.safetensors", lost.dir, STEPS);
    snprintf(b, sizeof b, "%s/ckpt-%012d.safetensors", ref.dir, STEPS);
    compare_ckpts(a, b, "node1 lost and the job requeued vs undisturbed");
  }
  if (check_failures_) dump_log(lost.log);

done:
  mlflow_client_free(mc);
  free(uri);
  /* The daemons end here (and again, harmlessly, at exit). */
  slurm_stop();
  if (!check_failures_) {
    tu_rmdir(g_slurm_dir);
  } else {
    fprintf(stderr, "Slurm logs kept in %s/log\n", g_slurm_dir);
  }
  fprintf(stderr, "slurm_multinode: %.1f s\n", mono_s() - t_all);
  return check_report();
}
