/* test_launch_capacity.c - `ganflow launch --elastic-capacity`
 * (launch/src/launch_capacity.c). Two levels, one binary:
 *
 *   unit  the capacity parser (each error names its line), WHEN (Unix
 *         seconds, RFC 3339 with Z or an offset), the slots counted at a
 *         time, the planner's decisions (keep, grow, shrink on a notice,
 *         slots lost, the world and --grad-accum planned), the flags.
 *   e2e   one job of mlp on Fashion-MNIST with --exact-reduce under the
 *         local launcher (2 CPU ranks at most), against the MLflow server
 *         of the `mlflow` fixture, whose capacity file the test rewrites:
 *         1 slot; a line that does not parse (kept going on the last good
 *         capacity); 2 slots (a planned grow); a spot notice for the
 *         second host a few seconds ahead (the ranks checkpoint before
 *         the deadline and go on at 1); 2 slots; the second host's line
 *         gone without notice (its rank killed, a counted restart). The
 *         final checkpoint is byte-identical to a job at fixed size 1;
 *         the run FINISHED, tags ganflow.capacity.1..4 and one restart,
 *         sys/world_size 1,2,1,2,1 at the steps the attempts began, one
 *         point per (key, step). Also: a missing capacity file is a usage
 *         error (exit 2) before any rank starts.
 * Each wait is on an event (a heartbeat, a log line) with a deadline. The
 * e2e FAILS when Fashion-MNIST is missing. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/heartbeat.h"
#include "gf/launch.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"


/* ---- unit ---------------------------------------------------------------- */

static gf_status parse(const char *text, gf_cap_kind kind, gf_capacity *c,
                       char *msg, size_t cap) {
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_capacity_parse(text, strlen(text), kind, c, &e);
  snprintf(msg, cap, "%s", e.msg);
  return st;
}

static void test_parse(void) {
  static gf_capacity c;
  char msg[600];
  const char *good = "# the pool\n"
                     "node-a slots=4\n"
                     "\n"
                     "  10.0.0.7\tslots=2 leaving=1800000000  # spot\r\n"
                     "node-c leaving=2026-11-26T15:30:00Z slots=0\n"
                     "node-d";
  CHECKF(parse(good, GF_CAP_FILE, &c, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(c.n == 4);
  CHECK(strcmp(c.h[0].name, "node-a") == 0 && c.h[0].slots == 4 &&
        c.h[0].leaving == -1 && c.h[0].line == 2);
  CHECK(strcmp(c.h[1].name, "10.0.0.7") == 0 && c.h[1].slots == 2 &&
        c.h[1].leaving == 1800000000 && c.h[1].line == 4);
  CHECK(c.h[2].slots == 0 && c.h[2].leaving == 1795707000);
  CHECK(c.h[3].slots == 1 && c.h[3].leaving == -1 && c.h[3].line == 6);
  CHECK(parse("", GF_CAP_FILE, &c, msg, sizeof msg) == GF_OK && c.n == 0);
  CHECK(parse("# nothing\n\n", GF_CAP_FILE, &c, msg, sizeof msg) == GF_OK &&
        c.n == 0);

  /* an Open MPI host file: other keys ignored, a host repeated */
  const char *hf = "h1 slots=2 max_slots=4\nh1 slots=1\nh2 # one slot\n";
  CHECKF(parse(hf, GF_CAP_HOSTFILE, &c, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(c.n == 3 && c.h[0].slots == 2 && c.h[2].slots == 1);
  /* leaving= is the capacity file's */
  CHECK(parse("h1 leaving=5\n", GF_CAP_HOSTFILE, &c, msg, sizeof msg) ==
        GF_OK && c.h[0].leaving == -1);

  struct {
    const char *text;
    const char *want;
  } bad[] = {
      {"a slots=1\nb slots=x\n", "line 2: slots='x'"},
      {"a slots=1\n\nb slots=257\n", "line 3: slots='257'"},
      {"a slots=-1\n", "line 1: slots='-1'"},
      {"a slots=\n", "line 1: slots=''"},
      {"a slots=1 slots=2\n", "line 1: slots= twice"},
      {"a\nb leaving=tomorrow\n", "line 2: leaving=: 'tomorrow'"},
      {"a leaving=1 leaving=2\n", "line 1: leaving= twice"},
      {"a max_slots=3\n", "line 1: 'max_slots=3' is not slots=N"},
      {"a slots=1\nbad/host slots=1\n", "line 2: 'bad/host' is not a host"},
      {"-a slots=1\n", "line 1: '-a' is not a host"},
      {"a slots=1\n# c\na slots=2\n", "line 3: host a is already on line 1"},
      {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
       "line 1: host name longer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_status st = parse(bad[i].text, GF_CAP_FILE, &c, msg, sizeof msg);
    CHECKF(st == GF_EFORMAT && strstr(msg, bad[i].want),
           "bad %zu: %s (want '%s')", i, msg, bad[i].want);
  }
  /* a NUL byte, and too many hosts */
  gf_err e;
  CHECK(gf_capacity_parse("a\nb\0c\n", 6, GF_CAP_FILE, &c, &e) == GF_EFORMAT &&
        strstr(e.msg, "line 2: a NUL byte"));
  static char many[GF_CAP_MAX_HOSTS * 8 + 16];
  size_t n = 0;
  for (int i = 0; i <= GF_CAP_MAX_HOSTS; i++)
    n += (size_t)snprintf(many + n, sizeof many - n, "h%d\n", i);
  CHECK(gf_capacity_parse(many, n, GF_CAP_FILE, &c, &e) == GF_EFORMAT &&
        strstr(e.msg, "line 257: more than 256 hosts"));
  CHECK(gf_capacity_parse(many, GF_CAP_FILE_MAX + 1, GF_CAP_FILE, &c, &e) ==
        GF_EFORMAT);
}

static void test_when(void) {
  struct {
    const char *v;
    int64_t want; /* -2: an error */
  } cases[] = {
      {"0", 0},
      {"1800000000", 1800000000},
      {"2026-11-26T15:30:00Z", 1795707000},
      {"2026-11-26t15:30:00z", 1795707000},
      {"2026-11-26T15:30:00.999Z", 1795707000},
      {"2026-11-26T17:30:00+02:00", 1795707000},
      {"2026-11-26T10:00:00-05:30", 1795707000},
      {"1970-01-01T00:00:00Z", 0},
      {"2024-02-29T00:00:00Z", 1709164800},
      {"2016-12-31T23:59:60Z", 1483228799},
      {"2023-02-29T00:00:00Z", -2},
      {"2026-13-01T00:00:00Z", -2},
      {"2026-11-26T24:00:00Z", -2},
      {"2026-11-26T15:30:00", -2},
      {"2026-11-26 15:30:00Z", -2},
      {"2026-11-26T15:30:00Zjunk", -2},
      {"2026-11-26T15:30:00.Z", -2},
      {"2026-11-26T15:30:00+2:00", -2},
      {"1969-12-31T23:59:59Z", -2},
      {"999999999999", -2},
      {"", -2},
      {"-5", -2},
      {"soon", -2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t t = -7;
    gf_err e;
    memset(&e, 0, sizeof e);
    gf_status st = gf_capacity_parse_when(cases[i].v, &t, &e);
    if (cases[i].want == -2)
      CHECKF(st == GF_EFORMAT && e.msg[0], "'%s' accepted as %lld", cases[i].v,
             (long long)t);
    else
      CHECKF(st == GF_OK && t == cases[i].want, "'%s': %lld, want %lld (%s)",
             cases[i].v, (long long)t, (long long)cases[i].want, e.msg);
  }
}

static gf_launch_opts make(int nproc, int batch, bool exact) {
  gf_launch_opts o;
  memset(&o, 0, sizeof o);
  gf_train_config_default(&o.train);
  o.nproc = nproc;
  o.nproc_min = 1;
  o.train.batch = batch;
  o.train.grad_accum = 1;
  o.train.exact_reduce = exact;
  o.train.exact_shards = 8;
  o.cap_kind = GF_CAP_FILE;
  o.cap_margin = 30;
  return o;
}

static void cap_of(gf_capacity *c, const char *text) {
  gf_err e;
  REQUIRE(gf_capacity_parse(text, strlen(text), GF_CAP_FILE, c, &e) == GF_OK);
}

static void test_plan(void) {
  static gf_capacity prev, c;
  gf_launch_opts o = make(4, 64, false);
  gf_cap_plan p;
  const double now = 1800000000;
  int present, usable;

  cap_of(&c, "a slots=2\nb slots=1 leaving=1800000020\n"
             "c slots=1 leaving=1800000100\nd slots=3 leaving=1799999999\n");
  gf_capacity_slots(&c, now, 30, &present, &usable);
  CHECKF(present == 4 && usable == 3, "present %d usable %d", present, usable);
  gf_capacity_slots(&c, now, 0, &present, &usable);
  CHECK(present == 4 && usable == 4);

  /* keep: the world fits */
  cap_of(&c, "a slots=2\n");
  gf_capacity_plan(&o, NULL, &c, 2, 4, now, &p);
  CHECKF(p.act == GF_CAP_KEEP && p.world == 2 && !p.text[0], "keep: %d %d",
         p.act, p.world);
  /* grow: 2 -> 4, --grad-accum keeps the micro-batch of 4 ranks */
  cap_of(&c, "a slots=2\nb slots=2\n");
  gf_capacity_plan(&o, NULL, &c, 2, 4, now, &p);
  CHECKF(p.act == GF_CAP_GROW && p.world == 4 && p.grad_accum == 1 &&
         strstr(p.text, "2 -> 4 slots"), "grow: %d %d %s", p.act, p.world,
         p.text);
  /* ... bounded by the other slots (a slot left out) and by --nproc */
  gf_capacity_plan(&o, NULL, &c, 2, 2, now, &p);
  CHECK(p.act == GF_CAP_KEEP);
  cap_of(&c, "a slots=8\n");
  gf_capacity_plan(&o, NULL, &c, 4, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP && p.world == 4);
  /* a grow the batch cannot split is no grow: 3 usable of batch 64, exact
   * mode (a power of two) */
  gf_launch_opts x = make(4, 64, true);
  cap_of(&c, "a slots=3\n");
  gf_capacity_plan(&x, NULL, &c, 2, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP && p.world == 2);
  /* default mode at 1 rank of 4: --grad-accum 4 */
  cap_of(&c, "a slots=1\n");
  gf_capacity_plan(&o, NULL, &c, 0, 4, now, &p);
  CHECKF(p.act == GF_CAP_KEEP && p.world == 1 && p.grad_accum == 4,
         "one rank: world %d ga %d", p.world, p.grad_accum);

  /* shrink: a notice within the margin, the deadline named */
  cap_of(&c, "a slots=2\nspot-1 slots=2 leaving=1800000010\n");
  gf_capacity_plan(&o, NULL, &c, 4, 4, now, &p);
  CHECKF(p.act == GF_CAP_SHRINK && p.world == 2 && p.deadline == 1800000010 &&
         strstr(p.text, "4 -> 2 slots: spot notice for host spot-1 (2 slots), "
                "deadline 2027-01-15T08:00:10Z, in 10 s"),
         "shrink: %d %d %s", p.act, p.world, p.text);
  /* a notice beyond the margin changes nothing yet */
  cap_of(&c, "a slots=2\nspot-1 slots=2 leaving=1800000031\n");
  gf_capacity_plan(&o, NULL, &c, 4, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP);
  gf_capacity_plan(&o, NULL, &c, 4, 4, now + 2, &p);
  CHECK(p.act == GF_CAP_SHRINK && p.world == 2);
  /* a notice on slots the job does not use: no shrink */
  cap_of(&c, "a slots=2\nspot-1 slots=2 leaving=1800000010\n");
  gf_capacity_plan(&o, NULL, &c, 2, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP);
  /* the whole capacity on notice: world 0 (the next attempt waits) */
  cap_of(&c, "a slots=2 leaving=1800000005\n");
  gf_capacity_plan(&o, NULL, &c, 2, 4, now, &p);
  CHECK(p.act == GF_CAP_SHRINK && p.world == 0);

  /* lost: a host gone without notice, named from the previous capacity */
  cap_of(&prev, "a slots=2\nb slots=2\n");
  cap_of(&c, "a slots=2\n");
  gf_capacity_plan(&o, &prev, &c, 4, 4, now, &p);
  CHECKF(p.act == GF_CAP_LOST && p.world == 2 &&
         strstr(p.text, "4 -> 2 slots: 2 slots gone without notice (host b "
                "2 -> 0)"), "lost: %d %s", p.act, p.text);
  /* ... or past its deadline (the stop did not finish in time) */
  cap_of(&c, "a slots=2\nb slots=2 leaving=1800000000\n");
  gf_capacity_plan(&o, &prev, &c, 4, 4, now, &p);
  CHECKF(p.act == GF_CAP_LOST && strstr(p.text, "host b past its deadline"),
         "deadline passed: %s", p.text);
  /* lost comes before a notice */
  cap_of(&c, "a slots=1 leaving=1800000010\n");
  gf_capacity_plan(&o, &prev, &c, 4, 4, now, &p);
  CHECK(p.act == GF_CAP_LOST && p.world == 0);
  /* fewer slots than before but still the running world: keep */
  cap_of(&prev, "a slots=4\n");
  cap_of(&c, "a slots=2\n");
  gf_capacity_plan(&o, &prev, &c, 2, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP);
  /* a planner that always kept would fail the checks above: break it on
   * purpose by asking about a world that is not running */
  gf_capacity_plan(&o, &prev, &c, 0, 4, now, &p);
  CHECK(p.act == GF_CAP_KEEP && p.world == 2);
}

static gf_status parse_argv(gf_launch_opts *o, int argc, const char *const *argv,
                            char *msg, size_t cap) {
  static char *copy[64];
  for (int i = 0; i < argc; i++) copy[i] = (char *)argv[i];
  bool help = false;
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_launch_parse(o, argc, copy, NULL, NULL, &help, &e);
  snprintf(msg, cap, "%s", e.msg);
  return st;
}

static void test_flags(void) {
  static gf_launch_opts o;
  char msg[512];
  const char *good[] = {"launch", "--nproc", "4", "--elastic-capacity",
                        "file:/run/cap", "--capacity-notice-margin", "12",
                        "--", "ganflow-train", "--data", "x"};
  CHECKF(parse_argv(&o, 11, good, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(o.cap_kind == GF_CAP_FILE && strcmp(o.cap_path, "/run/cap") == 0 &&
        o.cap_margin == 12 && o.nproc_min == 1);
  const char *hf[] = {"launch", "--nproc", "4", "--nproc-min", "2",
                      "--elastic-capacity=hostfile:h", "--launcher", "mpirun",
                      "--", "ganflow-train", "--data", "x"};
  CHECKF(parse_argv(&o, 12, hf, msg, sizeof msg) == GF_OK, "%s", msg);
  CHECK(o.cap_kind == GF_CAP_HOSTFILE && o.nproc_min == 2 &&
        o.cap_margin == GF_CAP_MARGIN_DEFAULT);
  struct {
    const char *argv[14];
    int argc;
    const char *want;
  } bad[] = {
      {{"launch", "--nproc", "2", "--elastic-capacity", "slurm", "--",
        "ganflow-train", "--data", "x"}, 9, "SLURM_JOB_ID is not set"},
      {{"launch", "--nproc", "2", "--elastic-capacity", "/a/file", "--",
        "ganflow-train", "--data", "x"}, 9, "is not file:PATH"},
      {{"launch", "--nproc", "2", "--elastic-capacity", "file:", "--",
        "ganflow-train", "--data", "x"}, 9, "empty"},
      {{"launch", "--nproc", "2", "--elastic-capacity", "file:c", "--nnodes",
        "2", "--rdzv", "h:1", "--", "ganflow-train", "--data", "x"}, 13,
       "is for one supervisor"},
      {{"launch", "--nproc", "2", "--elastic-capacity", "file:c",
        "--launcher", "srun", "--", "ganflow-train", "--data", "x"}, 11,
       "fixed Slurm allocation"},
      {{"launch", "--nproc", "2", "--elastic-capacity", "file:c",
        "--launcher", "mpirun", "--hostfile", "h", "--", "ganflow-train",
        "--data", "x"}, 13, "replaces --hostfile"},
      {{"launch", "--nproc", "2", "--capacity-notice-margin", "0", "--",
        "ganflow-train", "--data", "x"}, 9, "--capacity-notice-margin"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_status st = parse_argv(&o, bad[i].argc, bad[i].argv, msg, sizeof msg);
    CHECKF(st == GF_EINVAL && strstr(msg, bad[i].want), "flags %zu: %s", i,
           msg);
  }
}

static const char *slurm_env(void *user, const char *name) {
  return strcmp(name, "SLURM_JOB_ID") == 0 ? (const char *)user : NULL;
}

/* --elastic-capacity slurm: the job id from SLURM_JOB_ID; the allocation
 * from scontrol's answers (gf_capacity_from_slurm), in UTC here. */
static void test_slurm(void) {
  static gf_launch_opts o;
  char *argv[] = {"launch", "--nproc", "4", "--elastic-capacity", "slurm",
                  "--", "ganflow-train", "--data", "x"};
  bool help = false;
  gf_err e;
  memset(&e, 0, sizeof e);
  CHECKF(gf_launch_parse(&o, 9, argv, slurm_env, "4242", &help, &e) == GF_OK,
         "%s", e.msg);
  CHECK(o.cap_kind == GF_CAP_SLURM && strcmp(o.cap_path, "4242") == 0);
  CHECK(gf_launch_parse(&o, 9, argv, slurm_env, "12;rm -rf", &help, &e) ==
            GF_EINVAL && strstr(e.msg, "not a job id"));
  setenv("TZ", "UTC", 1);
  tzset();
  const char job[] = "JobId=7 JobName=wrap JobState=RUNNING Reason=None "
                     "TimeLimit=00:05:00 EndTime=2026-11-26T15:38:47 "
                     "NodeList=n[1-3] NumNodes=3 NumCPUs=5 NumTasks=5 "
                     "CPUs/Task=1\n";
  const char hosts[] = "n1\nn2\nn3\n";
  char out[512];
  CHECKF(gf_capacity_from_slurm(job, strlen(job), hosts, strlen(hosts), out,
                                sizeof out, &e) == GF_OK, "%s", e.msg);
  CHECK_STR_EQ(out, "n1 slots=2 leaving=1795707527\n"
                    "n2 slots=2 leaving=1795707527\n"
                    "n3 slots=1 leaving=1795707527\n");
  gf_capacity c;
  CHECK(gf_capacity_parse(out, strlen(out), GF_CAP_FILE, &c, &e) == GF_OK &&
        c.n == 3 && c.h[2].slots == 1);
  /* no time limit: no notice; a job that ended: no slots */
  const char nolimit[] = "JobState=RUNNING EndTime=Unknown NumNodes=1 "
                         "NumTasks=2 NodeList=vm";
  CHECK(gf_capacity_from_slurm(nolimit, strlen(nolimit), "vm\n", 3, out,
                               sizeof out, &e) == GF_OK);
  CHECK_STR_EQ(out, "vm slots=2\n");
  const char done[] = "JobState=COMPLETING NumNodes=1 NumTasks=2";
  CHECK(gf_capacity_from_slurm(done, strlen(done), "", 0, out, sizeof out,
                               &e) == GF_OK && out[0] == '\0');
  const char *bad[][2] = {
      {"JobState=RUNNING NumNodes=2 NumTasks=2 EndTime=Unknown", "vm\n"},
      {"JobState=RUNNING NumNodes=1 NumTasks=x EndTime=Unknown", "vm\n"},
      {"JobState=RUNNING NumTasks=2", "vm\n"},
      {"NumNodes=1 NumTasks=2", "vm\n"},
      {"JobState=RUNNING NumNodes=1 NumTasks=2", "vm\nvm2\n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&e, 0, sizeof e);
    CHECKF(gf_capacity_from_slurm(bad[i][0], strlen(bad[i][0]), bad[i][1],
                                  strlen(bad[i][1]), out, sizeof out, &e) ==
               GF_EFORMAT && strstr(e.msg, "scontrol"),
           "slurm answer %zu: %s", i, e.msg);
  }
}

/* ---- e2e ----------------------------------------------------------------- */

#define STEPS 60
#define EVERY 5
static char g_uri[512];
static mlflow_client *g_mc;

typedef struct job {
  char name[32];
  char dir[512], hb[600], log[600], exp[160], cap[600];
} job;

static void job_init(job *j, const char *name) {
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->dir, sizeof j->dir, "%s/%s", GF_TEST_TMP, name);
  snprintf(j->hb, sizeof j->hb, "%s/heartbeat", j->dir);
  snprintf(j->log, sizeof j->log, "%s/%s.log", GF_TEST_TMP, name);
  snprintf(j->cap, sizeof j->cap, "%s/%s.capacity", GF_TEST_TMP, name);
  char u[128];
  test_unique(u, sizeof u, name);
  snprintf(j->exp, sizeof j->exp, "capacity-%s", u);
}

typedef struct cmd {
  char *argv[64];
  int n;
  char store[8][700];
  int ns;
} cmd;

static void add(cmd *c, const char *a) {
  REQUIRE(c->n < 63);
  c->argv[c->n++] = (char *)a;
  c->argv[c->n] = NULL;
}

/* "--elastic-capacity=file:PATH", kept in c. */
static const char *cap_flag(cmd *c, const char *path) {
  REQUIRE(c->ns < 8);
  snprintf(c->store[c->ns], sizeof c->store[c->ns],
           "--elastic-capacity=file:%s", path);
  return c->store[c->ns++];
}

/* ganflow launch --nproc N [--elastic-capacity file:CAP] -- ganflow-train */
static void build(cmd *c, const job *j, int nproc, bool elastic) {
  c->n = c->ns = 0;
  const char *pre[] = {GF_GANFLOW_BIN, "launch", "--nproc", nproc == 1 ? "1"
                       : "2", "--max-restarts", "3", "--hang-timeout", "20",
                       "--start-timeout", "120"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) add(c, pre[i]);
  if (elastic) add(c, cap_flag(c, j->cap));
  add(c, "--");
  const char *t[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                     "--batch", "32", "--threads", "1", "--seed", "7",
                     "--exact-reduce", "--sample-every", "0", "--eval-every",
                     "0", "--register-model", "", "--keep", "20",
                     "--comm-timeout", "60", "--steps", "60", "--log-every",
                     "5", "--checkpoint-every", "5", "--checkpoint-dir"};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) add(c, t[i]);
  add(c, j->dir);
  add(c, "--experiment");
  add(c, j->exp);
}

static void write_cap(const job *j, const char *text) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp", j->cap);
  FILE *f = fopen(tmp, "w");
  REQUIRE(f);
  fputs(text, f);
  REQUIRE(fclose(f) == 0);
  REQUIRE(rename(tmp, j->cap) == 0); /* as an autoscaler would replace it */
}

static bool beat(const job *j, int r, gf_heartbeat_rec *out) {
  gf_err e;
  return gf_heartbeat_read(j->hb, r, out, &e) == GF_OK;
}

/* Waits until rank r beats in training at step >= step, from a process
 * other than not_pid; its record in *out. */
static bool wait_rank(const job *j, int r, long not_pid, int64_t step,
                      double timeout_s, gf_heartbeat_rec *out) {
  double t0 = mono_s();
  while (mono_s() - t0 < timeout_s) {
    if (beat(j, r, out) && out->pid != not_pid && out->phase == GF_HB_TRAIN &&
        out->step >= step)
      return true;
    sleep_s(0.01);
  }
  fprintf(stderr, "%s: rank %d did not reach step %lld (pid not %ld) in "
          "%.0f s\n", j->name, r, (long long)step, not_pid, timeout_s);
  dump_log(j->log);
  return false;
}

/* As wait_rank, then two steps more: the first TRAIN beat of an attempt
 * carries the step it resumed from, before it trained any (the supervisor
 * logs an attempt's sys/world_size only once it trained one). */
static bool wait_trained(const job *j, int r, long not_pid, int64_t step,
                         double timeout_s, gf_heartbeat_rec *out) {
  return wait_rank(j, r, not_pid, step, timeout_s, out) &&
         wait_rank(j, r, not_pid, out->step + 2, timeout_s, out);
}

static bool wait_log(const job *j, const char *needle, double timeout_s) {
  double t0 = mono_s();
  while (mono_s() - t0 < timeout_s) {
    if (log_contains(j->log, needle)) return true;
    sleep_s(0.02);
  }
  fprintf(stderr, "%s: no '%s' in the log within %.0f s\n", j->name, needle,
          timeout_s);
  return false;
}

static char *run_of(const job *j) {
  char path[1024];
  gf_ckpt_meta meta;
  gf_err e;
  if (gf_checkpoint_find_latest(j->dir, path, sizeof path, &meta, NULL, NULL,
                                0, &e) != GF_OK)
    return NULL;
  return strdup(meta.run_id);
}

static pid_t start(const job *j, cmd *c) {
  return tu_spawn_log(j->log, c->argv, "MLFLOW_TRACKING_URI", g_uri, 1);
}

static void e2e_missing(void) {
  job j;
  job_init(&j, "missing");
  cmd c;
  build(&c, &j, 2, true);
  unlink(j.cap);
  double t0 = mono_s();
  int rc = wait_group(start(&j, &c), 60, j.log);
  CHECKF(rc == 2, "missing: exit %d, want 2", rc);
  CHECKF(log_contains(j.log, "--elastic-capacity") &&
         log_contains(j.log, "No such file"), "missing: no reason in the log");
  CHECKF(!log_contains(j.log, "starting"), "missing: ranks were started");
  fprintf(stderr, "missing: exit %d after %.2f s\n", rc, mono_s() - t0);
}

static void e2e_follow(const job *ref) {
  job j;
  job_init(&j, "follow");
  write_cap(&j, "# one slot\nnode-a slots=1\n");
  cmd c;
  build(&c, &j, 2, true);
  double t0 = mono_s();
  pid_t sup = start(&j, &c);
  gf_heartbeat_rec h0, h1;
  bool ok = wait_rank(&j, 0, -1, 6, 60, &h0);
  CHECKF(ok && !beat(&j, 1, &h1), "follow: a second rank runs on 1 slot");
  /* a bad line: the job goes on with the last good capacity */
  if (ok) {
    write_cap(&j, "node-a slots=one\n");
    ok = wait_log(&j, "keeping the last good capacity", 10);
    CHECK(ok);
  }
  /* 1 -> 2: a planned grow */
  if (ok) {
    write_cap(&j, "node-a slots=1\nnode-b slots=1\n");
    ok = wait_rank(&j, 1, -1, 0, 60, &h1) &&
         wait_trained(&j, 0, h0.pid, h0.step + 8, 60, &h0);
    CHECKF(ok, "follow: no grow to 2 ranks");
  }
  /* 2 -> 1: node-b announced leaving in 6 s (inside the 30 s margin) */
  time_t deadline = 0;
  if (ok) {
    char text[256];
    deadline = time(NULL) + 6;
    snprintf(text, sizeof text, "node-a slots=1\nnode-b slots=1 leaving=%lld\n",
             (long long)deadline);
    write_cap(&j, text);
    long old0 = h0.pid;
    ok = wait_rank(&j, 0, old0, h0.step + 1, 60, &h0);
    CHECKF(ok && !beat(&j, 1, &h1), "follow: the job did not shrink to 1");
    ok = ok && wait_trained(&j, 0, old0, h0.step + 8, 60, &h0);
  }
  /* the host has gone: its line goes; back to 2, then node-b vanishes
   * without notice */
  if (ok) {
    write_cap(&j, "node-a slots=1\nnode-b slots=1\n");
    ok = wait_rank(&j, 1, -1, 0, 60, &h1) &&
         wait_trained(&j, 0, h0.pid, h0.step + 8, 60, &h0);
    CHECKF(ok, "follow: no second grow");
  }
  if (ok) {
    write_cap(&j, "node-a slots=1\n");
    ok = wait_log(&j, "gone without notice", 10);
    CHECK(ok);
  }
  int rc = wait_group(sup, 120, j.log);
  double took = mono_s() - t0;
  CHECKF(rc == 0, "follow: exit %d", rc);
  if (rc != 0 || !ok) dump_log(j.log);
  fprintf(stderr, "follow: the job took %.1f s\n", took);

  char got[1024], want[1024];
  snprintf(got, sizeof got, "%s/ckpt-%012d.safetensors", j.dir, STEPS);
  snprintf(want, sizeof want, "%s/ckpt-%012d.safetensors", ref->dir, STEPS);
  compare_ckpts(got, want, "follow (1,2,1,2,1 ranks) vs 1 rank");

  char *run = run_of(&j);
  REQUIRE(run);
  mlflow_run r;
  mlflow_error e;
  REQUIRE(mlflow_run_get(g_mc, run, &r, &e) == MLFLOW_OK);
  CHECKF(r.info.status == MLFLOW_RUN_FINISHED, "follow: run %s",
         mlflow_run_status_name(r.info.status));
  const char *want_tag[4] = {"1 -> 2 slots", "2 -> 1 slots: spot notice for "
                             "host node-b", "1 -> 2 slots",
                             "2 -> 1 slots: 1 slot gone without notice (host "
                             "node-b 1 -> 0)"};
  for (int i = 0; i < 4; i++) {
    char key[64];
    snprintf(key, sizeof key, "ganflow.capacity.%d", i + 1);
    const char *v = mlflow_run_tag(&r, key);
    CHECKF(v && strstr(v, want_tag[i]), "follow: %s = %s (want '%s')", key,
           v ? v : "(none)", want_tag[i]);
    if (v) fprintf(stderr, "follow: %s = %s\n", key, v);
  }
  const char *nc = mlflow_run_tag(&r, "ganflow.capacity.changes");
  CHECKF(nc && strcmp(nc, "4") == 0, "follow: ganflow.capacity.changes %s",
         nc ? nc : "-");
  CHECK(!mlflow_run_tag(&r, "ganflow.capacity.5"));
  /* the notice: the checkpoint was written before the deadline */
  const char *shrink = mlflow_run_tag(&r, "ganflow.capacity.2");
  const char *at = shrink ? strstr(shrink, "checkpoint of step ") : NULL;
  if (at) {
    long step = atol(at + strlen("checkpoint of step "));
    char ck[1024];
    struct stat sb;
    snprintf(ck, sizeof ck, "%s/ckpt-%012ld.safetensors", j.dir, step);
    CHECKF(stat(ck, &sb) == 0 && sb.st_mtime <= deadline, "follow: the "
           "checkpoint of step %ld (%s) is not older than the deadline %lld",
           step, ck, (long long)deadline);
    CHECK(strstr(shrink, "s before the deadline") && !strstr(shrink, "written -"));
  } else {
    CHECKF(0, "follow: the shrink tag names no checkpoint: %s",
           shrink ? shrink : "-");
  }
  /* one restart: the slot lost without notice; planned ones not counted */
  const char *nr = mlflow_run_tag(&r, "ganflow.restarts");
  const char *r1 = mlflow_run_tag(&r, "ganflow.restart.1");
  CHECKF(nr && strcmp(nr, "1") == 0, "follow: ganflow.restarts %s",
         nr ? nr : "-");
  CHECKF(r1 && strstr(r1, "capacity: 2 -> 1 slots"), "follow: restart 1: %s",
         r1 ? r1 : "-");
  mlflow_run_free(&r);
  mlflow_metric_list hist;
  if (mlflow_metric_history(g_mc, run, "sys/world_size", &hist, &e) ==
      MLFLOW_OK) {
    static const int want_ws[5] = {1, 2, 1, 2, 1};
    CHECKF(hist.count == 5, "follow: sys/world_size has %zu points",
           hist.count);
    /* the history comes in the server's order: by step */
    for (size_t i = 0; i < hist.count && i < 5; i++) {
      fprintf(stderr, "follow: sys/world_size %g at step %lld\n",
              hist.items[i].value, (long long)hist.items[i].step);
      CHECKF(hist.items[i].value == want_ws[i] &&
             (i == 0 ? hist.items[i].step == 0
                     : hist.items[i].step > hist.items[i - 1].step),
             "follow: sys/world_size point %zu: %g at step %lld", i,
             hist.items[i].value, (long long)hist.items[i].step);
    }
    mlflow_metric_list_free(&hist);
  } else {
    CHECKF(0, "follow: sys/world_size: %s", e.message);
  }
  check_history(g_mc, run, "loss/d", EVERY, STEPS, "follow");
  check_exactly_once(g_mc, run, "follow", NULL);
  free(run);
}

static int e2e(void) {
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  g_mc = test_client_of(g_uri);
  signal(SIGPIPE, SIG_IGN);
  tu_fresh_dir(GF_TEST_TMP);

  e2e_missing();
  job ref;
  job_init(&ref, "fixed");
  cmd c;
  build(&c, &ref, 1, false);
  double t0 = mono_s();
  int rc = wait_group(start(&ref, &c), 120, ref.log);
  CHECKF(rc == 0, "fixed: exit %d", rc);
  fprintf(stderr, "fixed: 1 rank, %d steps in %.1f s\n", STEPS, mono_s() - t0);
  if (rc == 0) e2e_follow(&ref);
  mlflow_client_free(g_mc);
  return check_report();
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "e2e") == 0) return e2e();
  test_parse();
  test_when();
  test_plan();
  test_flags();
  test_slurm();
  return check_report();
}
