/* launch_opts.c - `ganflow launch`'s command line and the plan of each
 * attempt (world size, the ranks' argv); see gf/launch.h. Pure: no
 * process is started here. */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gf/launch.h"
#include "gf/text.h"

void gf_launch_usage(FILE *out) {
  fprintf(out,
"usage: ganflow launch --nproc N [options] -- [WRAPPER...] ganflow-train ARGS...\n"
"Runs a ganflow-train job on N ranks and keeps it running: a rank that dies,\n"
"hangs or cannot start makes every rank stop, and the job starts again from\n"
"the newest checkpoint that verifies, into the same MLflow run.\n"
"\n"
"  --nproc N            ranks (required)\n"
"  --nproc-min M        go on with as few as M ranks when slots fail to start\n"
"                       (N); the global batch is kept\n"
"  --max-restarts R     restarts before the job is FAILED (3)\n"
"  --hang-timeout S     seconds without a heartbeat while training (a step or\n"
"                       a checkpoint) before the ranks count as hung (60)\n"
"  --start-timeout S    the same for start-up, evaluations and the final\n"
"                       upload (600)\n"
"  --launcher L         local: N processes here with torchrun-style variables\n"
"                       (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
"                       MASTER_ADDR, MASTER_PORT); mpirun; srun (inside an\n"
"                       allocation) (local)\n"
"  --hostfile FILE      mpirun: its host file, re-read at each start (its\n"
"                       slots bound the world size)\n"
"  --launcher-arg ARG   one more argument for mpirun/srun (repeatable)\n"
"  --heartbeat-dir DIR  where ranks write their heartbeats; on storage every\n"
"                       node sees (<checkpoint-dir>/heartbeat)\n"
"\n"
"The command may start with wrappers (env, numactl, a script that execs its\n"
"arguments); the training flags are those after the word ganflow-train.\n"
"Exit status: 0 finished, 1 FAILED, 2 usage, 143 stopped by SIGTERM/SIGINT\n"
"after a checkpoint (run KILLED; the same command resumes it).\n");
}

static gf_status parse_int(const char *flag, const char *v, int min, int max,
                           int *out, gf_err *err) {
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (!*v || *end || errno || x < min || x > max)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not an integer in %d..%d",
                   flag, v, min, max);
  *out = (int)x;
  return GF_OK;
}

static gf_status parse_secs(const char *flag, const char *v, double *out,
                            gf_err *err) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !(x > 0) || x > 1e6)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a number of seconds in "
                   "(0, 1e6]", flag, v);
  *out = x;
  return GF_OK;
}

/* The longest rank file joined below the heartbeat folder
 * (gf/heartbeat.h: <dir>/rank-<R>.hb, R < GF_LAUNCH_MAX_RANKS). */
#define HB_FILE_ROOM (sizeof "/rank-255.hb" - 1)
_Static_assert(GF_LAUNCH_MAX_RANKS <= 256, "HB_FILE_ROOM holds the ranks");

/* v into dst[GF_PATH_MAX], leaving `room` bytes for what is joined to it
 * later (gf_path_check): GF_EINVAL naming the flag when it is empty or
 * does not fit. */
static gf_status copy_path(char dst[GF_PATH_MAX], size_t room,
                           const char *flag, const char *v, gf_err *err) {
  if (!*v) return gf_fail(err, GF_EINVAL, "%s: empty", flag);
  GF_TRY(gf_path_check(flag, v, room, err));
  memcpy(dst, v, strlen(v) + 1);
  return GF_OK;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Parses the training flags after cmd[train_at] on a copy of the array
 * (getopt permutes it). */
static gf_status parse_train(gf_launch_opts *o, gf_err *err) {
  int n = o->ncmd - o->train_at;
  char **copy = calloc((size_t)n + 1, sizeof *copy);
  if (!copy) return gf_fail(err, GF_ENOMEM, "out of memory");
  for (int i = 0; i < n; i++) copy[i] = o->cmd[o->train_at + i];
  gf_err e;
  memset(&e, 0, sizeof e);
  int saved_optind = optind, saved_opterr = opterr;
  optind = 0; /* GNU: a full re-initialisation of getopt */
  gf_parse_result pr = gf_train_parse_args(&o->train, n, copy, &e);
  optind = saved_optind;
  opterr = saved_opterr;
  free(copy);
  if (pr == GF_PARSE_HELP)
    return gf_fail(err, GF_EINVAL, "--help after ganflow-train: run "
                   "ganflow-train --help for its flags");
  if (pr != GF_PARSE_OK)
    return gf_fail(err, GF_EINVAL, "the training command: %s", e.msg);
  return GF_OK;
}

gf_status gf_launch_parse(gf_launch_opts *o, int argc, char **argv,
                          bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  *help = false;
  o->nproc_min = -1;
  o->max_restarts = 3;
  o->hang_timeout = 60;
  o->start_timeout = 600;
  o->launcher = GF_LAUNCHER_LOCAL;
  int dd = -1; /* index of "--" */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) {
      dd = i;
      break;
    }
  int nopt = dd < 0 ? argc : dd;
  for (int i = 1; i < nopt; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      *help = true;
      return GF_OK;
    }
    const char *v = NULL;
    char name[32];
    const char *eq = strchr(a, '=');
    if (strncmp(a, "--", 2) != 0)
      return gf_fail(err, GF_EINVAL, "'%s': unexpected argument (the "
                     "training command goes after --)", a);
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    if (nl >= sizeof name)
      return gf_fail(err, GF_EINVAL, "unknown flag '%s'", a);
    memcpy(name, a, nl);
    name[nl] = '\0';
    if (eq) {
      v = eq + 1;
    } else {
      if (i + 1 >= nopt)
        return gf_fail(err, GF_EINVAL, "%s: needs a value", name);
      v = argv[++i];
    }
    gf_status st = GF_OK;
    if (strcmp(name, "--nproc") == 0)
      st = parse_int(name, v, 1, GF_LAUNCH_MAX_RANKS, &o->nproc, err);
    else if (strcmp(name, "--nproc-min") == 0)
      st = parse_int(name, v, 1, GF_LAUNCH_MAX_RANKS, &o->nproc_min, err);
    else if (strcmp(name, "--max-restarts") == 0)
      st = parse_int(name, v, 0, 1000000, &o->max_restarts, err);
    else if (strcmp(name, "--hang-timeout") == 0)
      st = parse_secs(name, v, &o->hang_timeout, err);
    else if (strcmp(name, "--start-timeout") == 0)
      st = parse_secs(name, v, &o->start_timeout, err);
    else if (strcmp(name, "--launcher") == 0) {
      if (strcmp(v, "local") == 0) o->launcher = GF_LAUNCHER_LOCAL;
      else if (strcmp(v, "mpirun") == 0) o->launcher = GF_LAUNCHER_MPIRUN;
      else if (strcmp(v, "srun") == 0) o->launcher = GF_LAUNCHER_SRUN;
      else
        st = gf_fail(err, GF_EINVAL, "--launcher: '%s' is not local, mpirun "
                     "or srun", v);
    } else if (strcmp(name, "--heartbeat-dir") == 0)
      st = copy_path(o->hb_dir, HB_FILE_ROOM, name, v, err);
    else if (strcmp(name, "--hostfile") == 0)
      st = copy_path(o->hostfile, 0, name, v, err);
    else if (strcmp(name, "--launcher-arg") == 0) {
      if (o->n_largs == GF_LAUNCH_MAX_LARGS)
        st = gf_fail(err, GF_EINVAL, "--launcher-arg: more than %d",
                     GF_LAUNCH_MAX_LARGS);
      else
        o->largs[o->n_largs++] = v;
    } else
      st = gf_fail(err, GF_EINVAL, "unknown flag '%s'", name);
    if (st != GF_OK) return st;
  }
  if (o->nproc == 0) return gf_fail(err, GF_EINVAL, "--nproc is required");
  if (o->nproc_min < 0) o->nproc_min = o->nproc;
  if (o->nproc_min > o->nproc)
    return gf_fail(err, GF_EINVAL, "--nproc-min %d is more than --nproc %d",
                   o->nproc_min, o->nproc);
  if (o->hostfile[0] && o->launcher != GF_LAUNCHER_MPIRUN)
    return gf_fail(err, GF_EINVAL, "--hostfile is for --launcher mpirun");
  if (o->n_largs && o->launcher == GF_LAUNCHER_LOCAL)
    return gf_fail(err, GF_EINVAL, "--launcher-arg is for mpirun and srun");
  if (dd < 0 || dd + 1 >= argc)
    return gf_fail(err, GF_EINVAL, "no training command: put it after --, "
                   "as in -- ganflow-train --data ...");
  o->cmd = argv + dd + 1;
  o->ncmd = argc - dd - 1;
  o->train_at = -1;
  for (int i = 0; i < o->ncmd && o->train_at < 0; i++)
    if (strcmp(base_name(o->cmd[i]), "ganflow-train") == 0) o->train_at = i;
  if (o->train_at < 0)
    return gf_fail(err, GF_EINVAL, "the command after -- runs no "
                   "ganflow-train (launch supervises training jobs; its "
                   "flags come after the word ganflow-train)");
  GF_TRY(parse_train(o, err));
  if (!o->hb_dir[0]) {
    if (gf_format(o->hb_dir, sizeof o->hb_dir, NULL, "heartbeat folder",
                  "%s/heartbeat", o->train.checkpoint_dir) != GF_OK ||
        gf_path_check("heartbeat folder", o->hb_dir, HB_FILE_ROOM, NULL) !=
            GF_OK) {
      o->hb_dir[0] = '\0';
      return gf_fail(err, GF_EINVAL, "--checkpoint-dir too long for the "
                     "heartbeat folder; give --heartbeat-dir");
    }
  }
  return GF_OK;
}

/* Whether world w splits the job; *ga its --grad-accum. */
static bool world_fits(const gf_launch_opts *o, int w, int *ga) {
  const gf_train_config *t = &o->train;
  if (t->batch % w != 0) return false;
  int local = t->batch / w;
  if (t->exact_reduce) {
    *ga = t->grad_accum;
    return (w & (w - 1)) == 0 && t->exact_shards % w == 0;
  }
  /* keep nproc ranks' micro-batch: K' = K * nproc / w */
  long k = (long)t->grad_accum * o->nproc;
  if (k % w == 0) {
    int kk = (int)(k / w);
    if (local % kk == 0 && local / kk >= 2) {
      *ga = kk;
      return true;
    }
  }
  *ga = t->grad_accum;
  return local % t->grad_accum == 0 && local / t->grad_accum >= 2;
}

gf_status gf_launch_plan_world(const gf_launch_opts *o, int avail, int *world,
                               int *grad_accum, gf_err *err) {
  int top = avail < o->nproc ? avail : o->nproc;
  for (int w = top; w >= o->nproc_min && w >= 1; w--) {
    int ga = 0;
    if (world_fits(o, w, &ga)) {
      *world = w;
      *grad_accum = ga;
      return GF_OK;
    }
  }
  if (top < o->nproc_min)
    return gf_fail(err, GF_ENOTFOUND, "only %d of %d slots can run, fewer "
                   "than --nproc-min %d", avail < 0 ? 0 : avail, o->nproc,
                   o->nproc_min);
  return gf_fail(err, GF_ENOTFOUND, "no world size from %d down to "
                 "--nproc-min %d splits --batch %d%s", top, o->nproc_min,
                 o->train.batch,
                 o->train.exact_reduce ? " and --exact-shards (a power of "
                                         "two)" : "");
}

void gf_launch_argv_free(char **argv) {
  if (!argv) return;
  for (char **p = argv; *p; p++) free(*p);
  free(argv);
}

/* Whether cmd[i] is the long flag `name` (as "--name" followed by a value,
 * or "--name=value"); *inline_v set for the second form. */
static bool is_flag(const char *a, const char *name, bool *inline_v) {
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return false;
  if (a[n] == '\0') {
    *inline_v = false;
    return true;
  }
  if (a[n] == '=') {
    *inline_v = true;
    return true;
  }
  return false;
}

char **gf_launch_argv(const gf_launch_opts *o, int grad_accum, bool restarted,
                      gf_err *err) {
  /* at most two flags added, each as "--x=v" */
  char **out = calloc((size_t)o->ncmd + 3, sizeof *out);
  if (!out) {
    gf_fail(err, GF_ENOMEM, "out of memory");
    return NULL;
  }
  bool set_ga = grad_accum != o->train.grad_accum && !o->train.exact_reduce;
  int n = 0;
  char buf[64];
  for (int i = 0; i < o->ncmd; i++) {
    const char *a = o->cmd[i];
    bool inl = false;
    bool train_flag = i > o->train_at;
    if (train_flag && ((set_ga && is_flag(a, "--grad-accum", &inl)) ||
                       (restarted && is_flag(a, "--resume", &inl)))) {
      if (!inl) i++; /* drop its value too */
      continue;
    }
    out[n] = strdup(a);
    if (!out[n]) goto oom;
    n++;
    if (i == o->train_at) {
      if (set_ga) {
        /* a literal and an int: 64 bytes hold it */
        int k = snprintf(buf, sizeof buf, "--grad-accum=%d", grad_accum);
        assert(gf_fits(k, sizeof buf));
        (void)k;
        if (!(out[n++] = strdup(buf))) goto oom;
      }
      if (restarted && !(out[n++] = strdup("--resume=auto"))) goto oom;
    }
  }
  return out;
oom:
  gf_launch_argv_free(out);
  gf_fail(err, GF_ENOMEM, "out of memory");
  return NULL;
}
