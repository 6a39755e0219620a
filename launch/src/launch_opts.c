/* launch_opts.c - `ganflow launch`'s command line and the plan of each
 * attempt (world size, the ranks' argv); see gf/launch.h. Pure: no
 * process is started here (`--nproc auto` for a CUDA job reads /dev). */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
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
"  --nproc N            ranks (required); auto (as torchrun and Kubeflow's\n"
"                       default): one per GPU this process sees when the\n"
"                       command trains with --device cuda (CUDA_VISIBLE_DEVICES,\n"
"                       else /dev/nvidiaN), else 1: one CPU rank, whose\n"
"                       threads use every core\n"
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
"  --elastic-capacity SOURCE\n"
"                       the slots the job may use, re-read every 0.5 s:\n"
"                       file:PATH (lines HOST slots=N [leaving=WHEN], WHEN\n"
"                       Unix seconds or RFC 3339, a spot notice),\n"
"                       hostfile:PATH (an Open MPI host file) or slurm (the\n"
"                       Slurm job's allocation, every 5 s; its end time a\n"
"                       notice); the job grows\n"
"                       when slots appear, checkpoints and shrinks before\n"
"                       announced ones leave, and recovers when slots vanish\n"
"                       (a failure); --nproc is the most ranks, --nproc-min\n"
"                       then defaults to 1. mpirun gets the usable hosts.\n"
"  --capacity-notice-margin S\n"
"                       slots leaving within S seconds are no longer used:\n"
"                       time for the checkpoint before they go (30)\n"
"  --heartbeat-dir DIR  where ranks write their heartbeats (each node's agent\n"
"                       reads its own ranks' under DIR/node-<K>)\n"
"                       (<checkpoint-dir>/heartbeat)\n"
"\n"
"Several nodes, one agent per node (as torchrun); --nproc is then per node:\n"
"  --nnodes MIN[:MAX]   nodes: start when MIN agents are there (and MAX are,\n"
"                       or --rdzv-last-call passed); go on with as few as\n"
"                       MIN after a node is lost; a node that comes back\n"
"                       joins at a checkpoint boundary\n"
"  --node-rank K        this node, 0..MAX-1; node 0 hosts the rendezvous\n"
"                       and rank 0\n"
"  --rdzv HOST:PORT     node 0's address (also the ranks' MASTER_ADDR) and\n"
"                       the rendezvous port\n"
"  --rdzv-last-call S   first round: with MIN nodes there, wait this long for\n"
"                       more (2); a restart goes on with the nodes there\n"
"  --nproc-per-node N   the same as --nproc (N or auto)\n"
"Without these flags the node settings come from Kubeflow Trainer's PET_NNODES,\n"
"PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, else\n"
"PyTorchJob's MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods), RANK (pod index).\n"
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

/* --nproc, --nproc-per-node, PET_NPROC_PER_NODE: a count, or "auto"
 * (torchrun's and Kubeflow's default; "gpu" the same), resolved by
 * resolve_nproc_auto once the training flags are known. torchrun's "cpu"
 * (one rank per core) is refused: each ganflow-train rank already runs
 * --threads on every core. */
static gf_status parse_nproc(gf_launch_opts *o, const char *flag,
                             const char *v, gf_err *err) {
  if (strcmp(v, "auto") == 0 || strcmp(v, "gpu") == 0) {
    o->nproc_auto = true;
    o->nproc = 0;
    return GF_OK;
  }
  if (strcmp(v, "cpu") == 0)
    return gf_fail(err, GF_EINVAL, "%s: 'cpu' (a rank per core) is not "
                   "taken: one ganflow-train rank uses every core "
                   "(--threads); give a number, or auto", flag);
  o->nproc_auto = false;
  return parse_int(flag, v, 1, GF_LAUNCH_MAX_RANKS, &o->nproc, err);
}

/* The GPUs this process sees: CUDA_VISIBLE_DEVICES's entries up to the
 * first invalid one (CUDA's rule; "" and "-1" hide every GPU), else the
 * /dev/nvidiaN device files (what a container runtime mounts in). */
static int visible_gpus(const char *(*get)(void *user, const char *name),
                        void *user) {
  const char *cvd = get ? get(user, "CUDA_VISIBLE_DEVICES") : NULL;
  int n = 0;
  if (cvd) {
    const char *p = cvd;
    while (*p && *p != '-' && *p != ',') {
      n++;
      p += strcspn(p, ",");
      if (*p == ',') p++;
    }
    return n;
  }
  DIR *d = opendir("/dev");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *q = e->d_name;
    if (strncmp(q, "nvidia", 6) != 0 || !q[6]) continue;
    q += 6;
    while (*q >= '0' && *q <= '9') q++;
    if (!*q) n++;
  }
  closedir(d);
  return n;
}

/* --nproc auto: one rank per visible GPU for --device cuda, else 1. */
static gf_status resolve_nproc_auto(gf_launch_opts *o,
                                    const char *(*get)(void *user,
                                                       const char *name),
                                    void *user, gf_err *err) {
  if (!o->nproc_auto) return GF_OK;
  if (strncmp(o->train.device, "cuda", 4) != 0) {
    o->nproc = 1;
    return GF_OK;
  }
  int n = visible_gpus(get, user);
  if (n < 1)
    return gf_fail(err, GF_EINVAL, "--nproc auto with --device %s: no GPU "
                   "visible (CUDA_VISIBLE_DEVICES %s, no /dev/nvidiaN)",
                   o->train.device,
                   get && get(user, "CUDA_VISIBLE_DEVICES") ? "hides them"
                                                            : "unset");
  o->nproc = n < GF_LAUNCH_MAX_RANKS ? n : GF_LAUNCH_MAX_RANKS;
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
 * (gf/heartbeat.h: <dir>/rank-<R>.hb, R < GF_LAUNCH_MAX_RANKS; with several
 * nodes <dir>/node-<K>/rank-<R>.hb, K < GF_LAUNCH_MAX_NODES). */
#define HB_FILE_ROOM (sizeof "/node-63/rank-255.hb" - 1)
_Static_assert(GF_LAUNCH_MAX_RANKS <= 256 && GF_LAUNCH_MAX_NODES <= 64,
               "HB_FILE_ROOM holds the ranks and nodes");

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

/* --elastic-capacity SOURCE: file:PATH, hostfile:PATH, slurm. */
static gf_status parse_capacity(gf_launch_opts *o, const char *v,
                                gf_err *err) {
  if (strcmp(v, "slurm") == 0) { /* the job id: gf_launch_parse */
    o->cap_kind = GF_CAP_SLURM;
    o->cap_path[0] = '\0';
    return GF_OK;
  }
  if (strncmp(v, "file:", 5) == 0) {
    o->cap_kind = GF_CAP_FILE;
    return copy_path(o->cap_path, 0, "--elastic-capacity file:", v + 5, err);
  }
  if (strncmp(v, "hostfile:", 9) == 0) {
    o->cap_kind = GF_CAP_HOSTFILE;
    return copy_path(o->cap_path, 0, "--elastic-capacity hostfile:", v + 9,
                     err);
  }
  return gf_fail(err, GF_EINVAL, "--elastic-capacity: '%s' is not file:PATH, "
                 "hostfile:PATH or slurm", v);
}

/* "MIN" or "MIN:MAX", 1 <= MIN <= MAX <= GF_LAUNCH_MAX_NODES. */
static gf_status parse_nnodes(const char *what, const char *v,
                              gf_launch_opts *o, gf_err *err) {
  char *end = NULL;
  errno = 0;
  long lo = strtol(v, &end, 10), hi = lo;
  if (end != v && *end == ':') {
    const char *p = end + 1;
    hi = strtol(p, &end, 10);
    if (end == p) end = (char *)p - 1; /* "3:" */
  }
  if (end == v || *end || errno || lo < 1 || hi < lo ||
      hi > GF_LAUNCH_MAX_NODES)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not MIN or MIN:MAX with "
                   "1 <= MIN <= MAX <= %d", what, v, GF_LAUNCH_MAX_NODES);
  o->nnodes_min = (int)lo;
  o->nnodes_max = (int)hi;
  return GF_OK;
}

gf_status gf_launch_parse_hostport(const char *what, const char *v, char *host,
                                   size_t cap, int *port, gf_err *err) {
  const char *colon = strrchr(v, ':');
  const char *h = v;
  size_t hl = colon ? (size_t)(colon - v) : 0;
  if (hl > 2 && v[0] == '[' && v[hl - 1] == ']') h++, hl -= 2; /* [v6] */
  bool ok = colon && hl > 0 && hl < cap;
  for (size_t i = 0; ok && i < hl; i++) /* a host name or an address */
    ok = (h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
         (h[i] >= '0' && h[i] <= '9') || strchr("-.:_", h[i]);
  int p = 0;
  if (!ok || parse_int(what, colon + 1, 1, 65535, &p, NULL) != GF_OK)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not HOST:PORT (a port in "
                   "1..65535)", what, v);
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = p;
  return GF_OK;
}

/* A host name from an environment variable into o->rdzv_host. */
static gf_status env_host(gf_launch_opts *o, const char *name, const char *v,
                          gf_err *err) {
  int port = 0;
  /* the same characters as --rdzv's HOST, checked through it */
  char hp[sizeof o->rdzv_host + 8];
  if (strlen(v) >= sizeof o->rdzv_host ||
      gf_format(hp, sizeof hp, NULL, "host", "%s:1", v) != GF_OK ||
      gf_launch_parse_hostport(name, hp, o->rdzv_host, sizeof o->rdzv_host,
                               &port, NULL) != GF_OK)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a host name or address",
                   name, v);
  return GF_OK;
}

static void set_conv(gf_launch_opts *o, const char *what) {
  size_t n = strlen(what);
  assert(n < sizeof o->conv);
  memcpy(o->conv, what, n + 1);
}

gf_status gf_launch_parse_env(gf_launch_opts *o,
                              const char *(*get)(void *user, const char *name),
                              void *user, gf_err *err) {
  const char *pn = get ? get(user, "PET_NNODES") : NULL;
  if (!o->nnodes_max && pn) {
    GF_TRY(parse_nnodes("PET_NNODES", pn, o, err));
    set_conv(o, "PET_*");
    const char *v;
    if (!o->nproc && !o->nproc_auto && (v = get(user, "PET_NPROC_PER_NODE")))
      GF_TRY(parse_nproc(o, "PET_NPROC_PER_NODE", v, err));
    if (o->node_rank < 0 && (v = get(user, "PET_NODE_RANK")))
      GF_TRY(parse_int("PET_NODE_RANK", v, 0, GF_LAUNCH_MAX_NODES - 1,
                       &o->node_rank, err));
    const char *ma = get(user, "PET_MASTER_ADDR"),
               *mp = get(user, "PET_MASTER_PORT");
    if (!o->rdzv_host[0] && ma) {
      GF_TRY(env_host(o, "PET_MASTER_ADDR", ma, err));
      o->rdzv_port = 29500; /* Kubeflow Trainer's default */
      if (mp)
        GF_TRY(parse_int("PET_MASTER_PORT", mp, 1, 65535, &o->rdzv_port, err));
    }
  } else if (!o->nnodes_max && get) {
    const char *ma = get(user, "MASTER_ADDR"), *mp = get(user, "MASTER_PORT"),
               *ws = get(user, "WORLD_SIZE"), *rk = get(user, "RANK");
    int w = 0;
    if (ma && mp && ws && rk &&
        parse_int("WORLD_SIZE", ws, 1, GF_LAUNCH_MAX_NODES, &w, NULL) ==
            GF_OK &&
        w > 1) {
      set_conv(o, "PyTorchJob");
      o->nnodes_min = o->nnodes_max = w;
      if (o->node_rank < 0)
        GF_TRY(parse_int("RANK", rk, 0, w - 1, &o->node_rank, err));
      if (!o->rdzv_host[0]) {
        GF_TRY(env_host(o, "MASTER_ADDR", ma, err));
        GF_TRY(parse_int("MASTER_PORT", mp, 1, 65535, &o->rdzv_port, err));
      }
    }
  }
  if (!o->conv[0] && o->nnodes_max) set_conv(o, "flags");
  GF_TRY(resolve_nproc_auto(o, get, user, err));
  if (o->nproc == 0)
    return gf_fail(err, GF_EINVAL, "--nproc is required");
  if (o->nproc_min < 0) o->nproc_min = o->nproc;
  if (o->nproc_min > o->nproc)
    return gf_fail(err, GF_EINVAL, "--nproc-min %d is more than --nproc %d",
                   o->nproc_min, o->nproc);
  if (!o->nnodes_max) {
    if (o->node_rank >= 0 || o->rdzv_host[0])
      return gf_fail(err, GF_EINVAL, "--node-rank and --rdzv go with "
                     "--nnodes");
    return GF_OK;
  }
  if (o->node_rank < 0) o->node_rank = 0;
  if (o->node_rank >= o->nnodes_max)
    return gf_fail(err, GF_EINVAL, "--node-rank %d: --nnodes allows at most "
                   "%d nodes (0..%d)", o->node_rank, o->nnodes_max,
                   o->nnodes_max - 1);
  if (!o->rdzv_host[0])
    return gf_fail(err, GF_EINVAL, "--nnodes needs --rdzv HOST:PORT (node "
                   "0's address)");
  if (o->launcher != GF_LAUNCHER_LOCAL)
    return gf_fail(err, GF_EINVAL, "--nnodes starts each node's ranks itself "
                   "(--launcher local)");
  if (o->nproc_min != o->nproc)
    return gf_fail(err, GF_EINVAL, "--nproc-min is for one node; with "
                   "--nnodes a node runs --nproc ranks or none");
  if ((long)o->nproc * o->nnodes_max > GF_LAUNCH_MAX_RANKS)
    return gf_fail(err, GF_EINVAL, "--nnodes %d x --nproc %d is more than %d "
                   "ranks", o->nnodes_max, o->nproc, GF_LAUNCH_MAX_RANKS);
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
                          const char *(*get)(void *user, const char *name),
                          void *user, bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  *help = false;
  o->nproc_min = -1;
  o->max_restarts = 3;
  o->hang_timeout = 60;
  o->start_timeout = 600;
  o->launcher = GF_LAUNCHER_LOCAL;
  o->node_rank = -1;
  o->rdzv_last_call = 2;
  o->cap_margin = GF_CAP_MARGIN_DEFAULT;
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
    if (strcmp(name, "--nproc") == 0 || strcmp(name, "--nproc-per-node") == 0)
      st = parse_nproc(o, name, v, err);
    else if (strcmp(name, "--nnodes") == 0)
      st = parse_nnodes(name, v, o, err);
    else if (strcmp(name, "--node-rank") == 0)
      st = parse_int(name, v, 0, GF_LAUNCH_MAX_NODES - 1, &o->node_rank, err);
    else if (strcmp(name, "--rdzv") == 0)
      st = gf_launch_parse_hostport(name, v, o->rdzv_host, sizeof o->rdzv_host,
                                    &o->rdzv_port, err);
    else if (strcmp(name, "--rdzv-last-call") == 0)
      st = parse_secs(name, v, &o->rdzv_last_call, err);
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
    else if (strcmp(name, "--elastic-capacity") == 0)
      st = parse_capacity(o, v, err);
    else if (strcmp(name, "--capacity-notice-margin") == 0)
      st = parse_secs(name, v, &o->cap_margin, err);
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
  if (o->nproc_min > 0 && o->nproc > 0 && o->nproc_min > o->nproc)
    return gf_fail(err, GF_EINVAL, "--nproc-min %d is more than --nproc %d",
                   o->nproc_min, o->nproc);
  if (o->cap_kind != GF_CAP_NONE) {
    if (o->nnodes_max > 0)
      return gf_fail(err, GF_EINVAL, "--elastic-capacity is for one "
                     "supervisor (no --nnodes: node agents already grow and "
                     "shrink with the nodes there)");
    if (o->hostfile[0])
      return gf_fail(err, GF_EINVAL, "--elastic-capacity replaces --hostfile "
                     "(give hostfile:PATH)");
    if (o->launcher == GF_LAUNCHER_SRUN)
      return gf_fail(err, GF_EINVAL, "--elastic-capacity: --launcher srun "
                     "runs in a fixed Slurm allocation (use local or mpirun)");
    if (o->nproc_min < 0) o->nproc_min = 1; /* follow the capacity down */
  }
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
  /* The training flags first: --nproc auto depends on --device. */
  GF_TRY(parse_train(o, err));
  GF_TRY(gf_launch_parse_env(o, get, user, err));
  if (o->cap_kind == GF_CAP_SLURM) {
    const char *job = get ? get(user, "SLURM_JOB_ID") : NULL;
    size_t n = job ? strlen(job) : 0;
    if (n == 0)
      return gf_fail(err, GF_EINVAL, "--elastic-capacity slurm: SLURM_JOB_ID "
                     "is not set: run inside a Slurm job (sbatch, salloc)");
    for (size_t i = 0; i < n; i++)
      if (!((job[i] >= '0' && job[i] <= '9') || job[i] == '_') || n > 32)
        return gf_fail(err, GF_EINVAL, "--elastic-capacity slurm: "
                       "SLURM_JOB_ID '%.40s' is not a job id", job);
    memcpy(o->cap_path, job, n + 1);
  }
  if (o->cap_kind != GF_CAP_NONE && o->nnodes_max > 0) /* from PET_* etc. */
    return gf_fail(err, GF_EINVAL, "--elastic-capacity is for one "
                   "supervisor, not a node agent (%s set --nnodes)", o->conv);
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

/* Whether world w splits the job; *ga its --grad-accum, keeping the
 * micro-batch of `full` ranks. */
static bool world_fits(const gf_launch_opts *o, int full, int w, int *ga) {
  const gf_train_config *t = &o->train;
  if (t->batch % w != 0) return false;
  int local = t->batch / w;
  if (t->exact_reduce) {
    *ga = t->grad_accum;
    return (w & (w - 1)) == 0 && t->exact_shards % w == 0;
  }
  /* keep full ranks' micro-batch: K' = K * full / w */
  long k = (long)t->grad_accum * full;
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
    if (world_fits(o, o->nproc, w, &ga)) {
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

gf_status gf_launch_plan_nodes(const gf_launch_opts *o, int present,
                               int *nodes, int *grad_accum, gf_err *err) {
  int top = present < o->nnodes_max ? present : o->nnodes_max;
  int full = o->nnodes_max * o->nproc;
  for (int k = top; k >= o->nnodes_min && k >= 1; k--) {
    int ga = 0;
    if (world_fits(o, full, k * o->nproc, &ga)) {
      *nodes = k;
      *grad_accum = ga;
      return GF_OK;
    }
  }
  if (top < o->nnodes_min)
    return gf_fail(err, GF_ENOTFOUND, "%d node%s there, fewer than "
                   "--nnodes' minimum %d", present, present == 1 ? "" : "s",
                   o->nnodes_min);
  return gf_fail(err, GF_ENOTFOUND, "no node count from %d down to %d "
                 "(x %d ranks) splits --batch %d%s", top, o->nnodes_min,
                 o->nproc, o->train.batch,
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
