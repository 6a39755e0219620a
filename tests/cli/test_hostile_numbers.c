/* test_hostile_numbers.c - the same hostile number strings fed to every
 * numeric flag of every executable, and to the environment variables they
 * read as numbers: each must give exit 2 and a stderr naming the flag (or
 * variable) in the one wording of gf/parse.h, and must start no work (no
 * connection to the MLflow URI, nothing created in the working directory
 * or HOME).
 *
 * The flags are found by walking the tables themselves (gf_train_flags,
 * gf_launch_flags, gfs_flags, gf_cli_*_flags, the env tables), so a new
 * numeric row is covered without editing this test. Each value is first
 * refused in-process through its row (gf_flag_set), which gives the exact
 * message the executable must print. The variables gf_launch_detect and
 * `ganflow launch` read one by one are listed here with the companions
 * that make them read.
 *
 * It proves it can fail: an accepted value is accepted in-process, and a
 * run whose only refusal is another flag's is not taken as a refusal of
 * the number. Unit: no server, no data (about 2000 short processes, four
 * at a time). */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/cli.h"
#include "gf/cli_quality.h"
#include "gf/flags.h"
#include "gf/launch.h"
#include "gf/mlflow_env.h"
#include "gf/parse.h"
#include "gf/train.h"
#include "gfs/server.h"

#define JOBS 4
#define MAX_ARGS 24
#define MAX_ENV 6

static const char *const k_hostile[] = {
  "", " 2", "2 ", "+2", "0x10", "1e3", "2abc", "nan", "inf", "-", "--",
  "99999999999999999999", "-99999999999999999999",
  "\xef\xbc\x91", /* U+FF11 FULLWIDTH DIGIT ONE */
  "2\n",
};
#define N_HOSTILE (sizeof k_hostile / sizeof k_hostile[0])

static char g_tmp[512], g_work[600], g_home[600], g_uri[64];

/* One run: argv and extra environment, and the text its stderr must hold. */
typedef struct run_case {
  char *argv[MAX_ARGS];
  char *env[MAX_ENV]; /* "NAME=VALUE" */
  char want[600];     /* the refusal, exactly as gf/parse.h words it */
  char label[160];
} run_case;

static run_case *g_cases;
static size_t g_n, g_cap;

static char *dup_s(const char *s) {
  char *d = strdup(s);
  REQUIRE(d);
  return d;
}

static run_case *new_case(void) {
  if (g_n == g_cap) {
    g_cap = g_cap ? 2 * g_cap : 256;
    g_cases = realloc(g_cases, g_cap * sizeof *g_cases);
    REQUIRE(g_cases);
  }
  run_case *c = &g_cases[g_n++];
  memset(c, 0, sizeof *c);
  return c;
}

static void set_argv(run_case *c, const char *const *a) {
  int i = 0;
  for (; a[i]; i++) {
    REQUIRE(i + 1 < MAX_ARGS);
    c->argv[i] = dup_s(a[i]);
  }
  c->argv[i] = NULL;
}

static bool numeric(const gf_flag *r) {
  return r->kind == GF_FLAG_INT || r->kind == GF_FLAG_I64 ||
         r->kind == GF_FLAG_U64 || r->kind == GF_FLAG_F64;
}

/* Whether the hostile value v applies to row r: "1e3" is a number, so
 * only integers must refuse it. */
static bool applies(const gf_flag *r, const char *v) {
  return !(r->kind == GF_FLAG_F64 && strcmp(v, "1e3") == 0);
}

/* Whether msg is one of gf/parse.h's refusals of `what`. */
static bool one_wording(const char *msg, const char *what) {
  size_t n = strlen(what);
  if (strncmp(msg, what, n) != 0 || strncmp(msg + n, ": ", 2) != 0)
    return false;
  const char *rest = msg + n + 2;
  if (rest[0] == '\'')
    return strstr(rest, "' is not an integer") ||
           strstr(rest, "' is not an unsigned integer") ||
           strstr(rest, "' is not a number");
  return strstr(rest, " is outside [") || strstr(rest, " is outside (");
}

/* A zeroed struct big enough for any table's rows to write into. */
static void *scratch(void) {
  static max_align_t buf[65536 / sizeof(max_align_t)];
  memset(buf, 0, sizeof buf);
  return buf;
}

/* The message the row gives for v, refused in-process; false when it was
 * accepted or worded otherwise. */
static bool row_refusal(const gf_flag *r, const char *v, char *msg,
                        size_t cap) {
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_flag_set(r, scratch(), v, &e);
  CHECKF(st == GF_EINVAL, "%s '%s': accepted in-process", r->name, v);
  CHECKF(one_wording(e.msg, r->name), "%s '%s': '%s' is not the one wording",
         r->name, v, e.msg);
  snprintf(msg, cap, "%s", e.msg);
  return st == GF_EINVAL && one_wording(e.msg, r->name);
}

/* One case per numeric row of t and hostile value: the command is
 * pre[0..], the flag and its value, then post[0..]. */
static void flag_cases(const char *tag, const gf_flag_table *t,
                       const char *const *pre, const char *const *post) {
  size_t rows = 0;
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    if (!r->name || !numeric(r)) continue;
    rows++;
    for (size_t h = 0; h < N_HOSTILE; h++) {
      const char *v = k_hostile[h];
      if (!applies(r, v)) continue;
      char msg[600];
      if (!row_refusal(r, v, msg, sizeof msg)) continue;
      const char *a[MAX_ARGS];
      int k = 0;
      for (int j = 0; pre[j]; j++) a[k++] = pre[j];
      a[k++] = r->name;
      a[k++] = v;
      for (int j = 0; post && post[j]; j++) a[k++] = post[j];
      a[k] = NULL;
      run_case *c = new_case();
      set_argv(c, a);
      snprintf(c->want, sizeof c->want, "%s", msg);
      snprintf(c->label, sizeof c->label, "%s %s '%s'", tag, r->name, v);
    }
  }
  CHECKF(rows > 0, "%s: no numeric flag found in its table", tag);
}

/* The refusal gf/parse.h gives `what` for v when it is not a number of
 * its kind (exact), or its "outside" start when it is. */
static void env_want(const char *what, const char *v, bool f64, char *out,
                     size_t cap) {
  gf_err e;
  memset(&e, 0, sizeof e);
  int64_t i;
  double d;
  gf_status st = f64 ? gf_parse_f64(what, v, -DBL_MAX, DBL_MAX, &d, &e)
                     : gf_parse_i64(what, v, INT64_MIN, INT64_MAX, &i, &e);
  if (st != GF_OK && !strstr(e.msg, " is outside ")) {
    snprintf(out, cap, "%s", e.msg);
    return;
  }
  snprintf(out, cap, "%s: %s is outside ", what, v); /* bounds vary */
}

/* One case per hostile value of the variable `var` (with companions, the
 * other variables that make it read) for the command a. */
static void env_cases(const char *tag, const char *const *a, const char *var,
                      const char *const *companions, bool f64,
                      bool empty_unset) {
  for (size_t h = 0; h < N_HOSTILE; h++) {
    const char *v = k_hostile[h];
    if ((f64 && strcmp(v, "1e3") == 0) || (empty_unset && !*v)) continue;
    run_case *c = new_case();
    set_argv(c, a);
    int k = 0;
    for (; companions && companions[k]; k++) c->env[k] = dup_s(companions[k]);
    char kv[256];
    snprintf(kv, sizeof kv, "%s=%s", var, v);
    c->env[k] = dup_s(kv);
    env_want(var, v, f64, c->want, sizeof c->want);
    snprintf(c->label, sizeof c->label, "%s %s='%s'", tag, var, v);
  }
}

/* The rows of an env table as env_cases. */
static void env_table_cases(const char *tag, const char *const *a,
                            const gf_flag_table *t) {
  for (size_t i = 0; i < t->n; i++) {
    const gf_flag *r = &t->rows[i];
    if (r->name && numeric(r))
      env_cases(tag, a, r->name, NULL, r->kind == GF_FLAG_F64, true);
  }
}

/* ---- running ------------------------------------------------------------ */

typedef struct result {
  int rc;
  char err[8192]; /* the start of stderr */
} result;

static pid_t start(const run_case *c, int slot) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char log[700];
    snprintf(log, sizeof log, "%s/stderr-%d", g_tmp, slot);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int dn = open("/dev/null", O_RDWR);
    if (fd < 0 || dn < 0 || chdir(g_work) != 0) _exit(126);
    dup2(dn, 0);
    dup2(dn, 1);
    dup2(fd, 2);
    for (int k = 0; c->env[k]; k++) putenv(c->env[k]);
    execv(c->argv[0], c->argv);
    _exit(127);
  }
  return pid;
}

static void collect(int slot, int status, result *r) {
  r->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  char log[700];
  snprintf(log, sizeof log, "%s/stderr-%d", g_tmp, slot);
  r->err[0] = '\0';
  FILE *f = fopen(log, "rb");
  if (f) {
    size_t n = fread(r->err, 1, sizeof r->err - 1, f);
    r->err[n] = '\0';
    fclose(f);
  }
}

/* Whether r is the refusal of c: exit 2 and c->want in stderr. */
static bool refused(const run_case *c, const result *r) {
  return r->rc == 2 && strstr(r->err, c->want) != NULL;
}

/* Runs every case, JOBS at a time; the failures are reported. */
static void run_all(void) {
  pid_t pids[JOBS] = {0};
  size_t which[JOBS] = {0};
  size_t next = 0, busy = 0;
  static result r;
  while (next < g_n || busy) {
    for (int s = 0; s < JOBS && next < g_n; s++)
      if (!pids[s]) {
        which[s] = next;
        pids[s] = start(&g_cases[next++], s);
        busy++;
      }
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    REQUIRE(done > 0);
    for (int s = 0; s < JOBS; s++)
      if (pids[s] == done) {
        collect(s, status, &r);
        const run_case *c = &g_cases[which[s]];
        CHECKF(refused(c, &r), "%s: exit %d, stderr lacks \"%s\":\n%s",
               c->label, r.rc, c->want, r.err);
        pids[s] = 0;
        busy--;
      }
  }
}

static result run_one(run_case *c) {
  static result r;
  pid_t pid = start(c, 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  collect(0, status, &r);
  return r;
}

/* ---- the executables ---------------------------------------------------- */

static void build_cases(void) {
  char ck[700], data[700], a[700], b[700], png[700], src[700];
  snprintf(ck, sizeof ck, "%s/ck", g_work);
  snprintf(data, sizeof data, "%s/no-data", g_tmp);
  snprintf(a, sizeof a, "%s/a", g_tmp);
  snprintf(b, sizeof b, "%s/b", g_tmp);
  snprintf(png, sizeof png, "%s/x.png", g_work);
  snprintf(src, sizeof src, "%s/ckpt-1.safetensors", g_tmp);

  /* ganflow-train, and the same flags through `ganflow launch` */
  const char *train[] = {GF_TRAIN_BIN, "--data", data, "--checkpoint-dir",
                         ck, NULL};
  flag_cases("ganflow-train", gf_train_flags(), train, NULL);
  const char *ltrain[] = {GF_CLI_BIN, "launch", "--nproc", "1", "--",
                          GF_TRAIN_BIN, "--data", data, "--checkpoint-dir",
                          ck, NULL};
  flag_cases("ganflow launch -- ganflow-train", gf_train_flags(), ltrain,
             NULL);
  /* `ganflow launch`'s own flags */
  const char *launch[] = {GF_CLI_BIN, "launch", "--nproc", "1", NULL};
  const char *lpost[] = {"--", GF_TRAIN_BIN, "--data", data,
                         "--checkpoint-dir", ck, NULL};
  flag_cases("ganflow launch", gf_launch_flags(), launch, lpost);
  /* ganflow-serve */
  const char *serve[] = {GF_SERVE_BIN, "--model", "models:/m@prod", NULL};
  flag_cases("ganflow-serve", gfs_flags(), serve, NULL);
  /* ganflow generate, fid, eval, promote */
  const char *gen[] = {GF_CLI_BIN, "generate", "--model", "models:/m@prod",
                       "--seed", "1", "-o", png, NULL};
  flag_cases("ganflow generate", gf_cli_generate_flags(), gen, NULL);
  const char *fid[] = {GF_CLI_BIN, "fid", a, b, NULL};
  flag_cases("ganflow fid", gf_cli_fid_flags(), fid, NULL);
  const char *eval[] = {GF_CLI_BIN, "eval", src, "--data", data, NULL};
  flag_cases("ganflow eval", gf_cli_eval_flags(), eval, NULL);
  const char *promote[] = {GF_CLI_BIN, "promote", "m", "1", "--alias", "p",
                           NULL};
  for (size_t i = 0; i < gf_cli_promote_flags()->n; i++)
    if (numeric(&gf_cli_promote_flags()->rows[i]))
      flag_cases("ganflow promote", gf_cli_promote_flags(), promote, NULL);

  /* The MLflow client's variables, for every command that talks to it */
  const char *sync[] = {GF_CLI_BIN, "sync", g_tmp, NULL};
  const char *models[] = {GF_CLI_BIN, "models", NULL};
  const struct {
    const char *tag;
    const char *const *argv;
  } mlflow_cmds[] = {{"ganflow-train", train}, {"ganflow-serve", serve},
                     {"ganflow generate", gen}, {"ganflow sync", sync},
                     {"ganflow models", models}, {"ganflow promote", promote},
                     {"ganflow launch", ltrain}};
  for (size_t i = 0; i < sizeof mlflow_cmds / sizeof *mlflow_cmds; i++)
    env_table_cases(mlflow_cmds[i].tag, mlflow_cmds[i].argv,
                    gf_mlflow_env_table());
  /* ganflow-train's own */
  env_table_cases("ganflow-train", train, gf_train_env());
  /* the launcher's variables ganflow-train reads (gf_launch_detect) */
  static const struct {
    const char *var, *companions[3];
  } ranks[] = {
    {"RANK", {"WORLD_SIZE=1"}},
    {"WORLD_SIZE", {"RANK=0"}},
    {"LOCAL_RANK", {"RANK=0", "WORLD_SIZE=1"}},
    {"LOCAL_WORLD_SIZE", {"RANK=0", "WORLD_SIZE=1"}},
    {"MASTER_PORT", {"RANK=0", "WORLD_SIZE=1"}},
    {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE=1"}},
    {"OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_RANK=0"}},
    {"SLURM_PROCID", {"SLURM_NTASKS=1"}},
    {"SLURM_NTASKS", {"SLURM_PROCID=0"}},
    {"PMIX_RANK", {"SLURM_NTASKS=1"}},
  };
  for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++)
    env_cases("ganflow-train", train, ranks[i].var, ranks[i].companions,
              false, false);
  /* the node settings `ganflow launch` reads (gf_launch_parse_env) */
  const char *lbare[] = {GF_CLI_BIN, "launch", "--", GF_TRAIN_BIN, "--data",
                         data, "--checkpoint-dir", ck, NULL};
  static const struct {
    const char *var, *companions[4];
  } nodes[] = {
    {"PET_NNODES", {NULL}},
    {"PET_NPROC_PER_NODE", {"PET_NNODES=2", "PET_MASTER_ADDR=h"}},
    {"PET_NODE_RANK", {"PET_NNODES=2", "PET_MASTER_ADDR=h"}},
    {"PET_MASTER_PORT", {"PET_NNODES=2", "PET_MASTER_ADDR=h"}},
    {"WORLD_SIZE", {"MASTER_ADDR=h", "MASTER_PORT=1", "RANK=0"}},
    {"RANK", {"MASTER_ADDR=h", "MASTER_PORT=1", "WORLD_SIZE=2"}},
    {"MASTER_PORT", {"MASTER_ADDR=h", "WORLD_SIZE=2", "RANK=0"}},
  };
  for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++)
    env_cases("ganflow launch", i < 4 ? lbare : ltrain, nodes[i].var,
              nodes[i].companions, false, false);
}

/* ---- the checker fires -------------------------------------------------- */

static void test_checker_fires(void) {
  /* an accepted value is accepted through its row */
  const gf_flag *batch = gf_flags_find(gf_train_flags(), "--batch");
  REQUIRE(batch);
  gf_err e;
  CHECK(gf_flag_set(batch, scratch(), "2", &e) == GF_OK);
  CHECK(!one_wording("--batch: 2 is fine", "--batch"));
  CHECK(!one_wording("--batch2: ' 2' is not an integer", "--batch"));
  /* a run that refuses another flag is not a refusal of --batch */
  char data[700];
  snprintf(data, sizeof data, "%s/no-data", g_tmp);
  run_case c;
  memset(&c, 0, sizeof c);
  const char *a[] = {GF_TRAIN_BIN, "--data", data, "--batch", "2", "--device",
                     "gpu", NULL};
  set_argv(&c, a);
  snprintf(c.want, sizeof c.want, "--batch: ' 2' is not an integer");
  result r = run_one(&c);
  CHECKF(r.rc == 2 && strstr(r.err, "--device"), "exit %d: %s", r.rc, r.err);
  CHECK(!refused(&c, &r));
  /* and the same run with the hostile value is */
  free(c.argv[4]);
  c.argv[4] = dup_s(" 2");
  r = run_one(&c);
  CHECKF(refused(&c, &r), "exit %d: %s", r.rc, r.err);
  for (int i = 0; c.argv[i]; i++) free(c.argv[i]);
}

/* ---- setting up --------------------------------------------------------- */

/* A socket listening on a free port of 127.0.0.1 whose connections are
 * never accepted: MLFLOW_TRACKING_URI points there, and a connection
 * waiting on it at the end is work a refusal must not have started. */
static int listen_closed(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
  REQUIRE(listen(fd, 64) == 0);
  socklen_t len = sizeof sa;
  REQUIRE(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
  *port = ntohs(sa.sin_port);
  return fd;
}

static void clean_env(void) {
  static const char *const vars[] = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "MLFLOW_RUN_ID",
    "MLFLOW_EXPERIMENT_NAME", "RANK", "WORLD_SIZE", "LOCAL_RANK",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_JOB_ID", "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
    "PET_MASTER_ADDR", "PET_MASTER_PORT", "GANFLOW_CACHE_DIR",
    "GANFLOW_HEARTBEAT_DIR", "GANFLOW_INSTANCE_KIND", "XDG_CACHE_HOME"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

static bool empty_dir(const char *dir) {
  return tu_count_names(dir, "") == 2; /* "." and ".." */
}

int main(void) {
  tu_mkdtemp(g_tmp, sizeof g_tmp);
  snprintf(g_work, sizeof g_work, "%s/work", g_tmp);
  snprintf(g_home, sizeof g_home, "%s/home", g_tmp);
  REQUIRE(mkdir(g_work, 0755) == 0 && mkdir(g_home, 0755) == 0);
  int port = 0;
  int lfd = listen_closed(&port);
  snprintf(g_uri, sizeof g_uri, "http://127.0.0.1:%d", port);
  clean_env();
  setenv("MLFLOW_TRACKING_URI", g_uri, 1);
  setenv("HOME", g_home, 1);

  test_checker_fires();
  build_cases();
  fprintf(stderr, "%zu runs\n", g_n);
  run_all();

  /* no work started: no connection, nothing written */
  int conn = accept(lfd, NULL, NULL);
  CHECKF(conn < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
         "a refused command connected to the MLflow URI");
  if (conn >= 0) close(conn);
  close(lfd);
  CHECKF(empty_dir(g_work), "something was created in the working dir %s",
         g_work);
  CHECKF(empty_dir(g_home), "something was created in HOME %s", g_home);
  for (size_t i = 0; i < g_n; i++) {
    for (int k = 0; g_cases[i].argv[k]; k++) free(g_cases[i].argv[k]);
    for (int k = 0; g_cases[i].env[k]; k++) free(g_cases[i].env[k]);
  }
  free(g_cases);
  tu_rmdir(g_tmp);
  return check_report();
}
