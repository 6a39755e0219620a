/* launch_opts.c - `ganflow launch`'s command line, a table of gf/flags.h
 * rows (the training flags after the word ganflow-train go through
 * ganflow-train's own table, gf_train_parse_args), the node settings of the
 * environment, and the plan of each attempt (world size, the ranks'
 * argv); see gf/launch.h. Pure: no process is started here (`--nproc auto`
 * for a CUDA job reads /dev). */
#include <assert.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gf/flags.h"
#include "gf/launch.h"
#include "gf/parse.h"
#include "gf/sock.h"
#include "gf/text.h"

/* --nproc, --nproc-per-node, PET_NPROC_PER_NODE: a count in [1,
 * GF_LAUNCH_MAX_RANKS], or "auto" (torchrun's and Kubeflow's default;
 * "gpu" the same), resolved by resolve_nproc_auto once the training flags
 * are known. torchrun's "cpu" (one rank per core) is refused: each
 * ganflow-train rank already runs --threads on every core. */
static gf_status nproc_value(gf_launch_opts *o, const char *what,
                             const char *v, gf_err *err) {
  if (strcmp(v, "auto") == 0 || strcmp(v, "gpu") == 0) {
    o->nproc_auto = true;
    o->nproc = 0;
    return GF_OK;
  }
  if (strcmp(v, "cpu") == 0)
    return gf_fail(err, GF_EINVAL, "%s: 'cpu' (a rank per core) is not "
                   "taken: one ganflow-train rank uses every core "
                   "(--threads); give a number, or auto", what);
  GF_TRY(gf_parse_int(what, v, 1, GF_LAUNCH_MAX_RANKS, &o->nproc, err));
  o->nproc_auto = false;
  return GF_OK;
}

static gf_status parse_nproc(const gf_flag *row, void *obj, const char *v,
                             gf_err *err) {
  return nproc_value(obj, row->name, v, err);
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

static gf_status parse_hostfile(const gf_flag *row, void *obj,
                                const char *v, gf_err *err) {
  return copy_path(((gf_launch_opts *)obj)->hostfile, 0, row->name, v, err);
}

static gf_status parse_hb_dir(const gf_flag *row, void *obj, const char *v,
                              gf_err *err) {
  return copy_path(((gf_launch_opts *)obj)->hb_dir, HB_FILE_ROOM, row->name,
                   v, err);
}

/* --launcher-arg ARG (repeatable): borrowed from argv. */
static gf_status parse_larg(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  gf_launch_opts *o = obj;
  if (o->n_largs == GF_LAUNCH_MAX_LARGS)
    return gf_fail(err, GF_EINVAL, "%s: more than %d", row->name,
                   GF_LAUNCH_MAX_LARGS);
  o->largs[o->n_largs++] = v;
  return GF_OK;
}

/* --elastic-capacity SOURCE: file:PATH, hostfile:PATH, slurm. */
static gf_status parse_capacity(const gf_flag *row, void *obj, const char *v,
                                gf_err *err) {
  gf_launch_opts *o = obj;
  (void)row;
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

/* "MIN" or "MIN:MAX", 1 <= MIN <= MAX <= GF_LAUNCH_MAX_NODES, each
 * number through gf_parse_int. */
static gf_status nnodes_value(gf_launch_opts *o, const char *what,
                              const char *v, gf_err *err) {
  const char *colon = strchr(v, ':');
  char lo_s[32];
  size_t n = colon ? (size_t)(colon - v) : strlen(v);
  int lo = 0, hi = 0;
  const char *min_text = v; /* with its ':' when MIN does not fit lo_s */
  if (colon && n < sizeof lo_s) {
    memcpy(lo_s, v, n);
    lo_s[n] = '\0';
    min_text = lo_s;
  }
  GF_TRY(gf_parse_int(what, min_text, 1, GF_LAUNCH_MAX_NODES, &lo, err));
  hi = lo;
  if (colon)
    GF_TRY(gf_parse_int(what, colon + 1, lo, GF_LAUNCH_MAX_NODES, &hi, err));
  o->nnodes_min = lo;
  o->nnodes_max = hi;
  return GF_OK;
}

static gf_status parse_nnodes(const gf_flag *row, void *obj, const char *v,
                              gf_err *err) {
  return nnodes_value(obj, row->name, v, err);
}

gf_status gf_launch_parse_hostport(const char *what, const char *v, char *host,
                                   size_t cap, int *port, gf_err *err) {
  /* The address rule of gf/sock.h; port 0 (any) is for listening only. */
  int p = 0;
  gf_err e;
  if (gf_sock_split(what, v, host, cap, &p, &e) != GF_OK)
    return gf_fail(err, GF_EINVAL, "%s (expected HOST:PORT, a port in "
                   "1..65535)", e.msg);
  if (p == 0)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not HOST:PORT with a port "
                   "in 1..65535 (port 0 cannot be dialled)", what, v);
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
    GF_TRY(nnodes_value(o, "PET_NNODES", pn, err));
    set_conv(o, "PET_*");
    const char *v;
    if (!o->nproc && !o->nproc_auto && (v = get(user, "PET_NPROC_PER_NODE")))
      GF_TRY(nproc_value(o, "PET_NPROC_PER_NODE", v, err));
    if (o->node_rank < 0 && (v = get(user, "PET_NODE_RANK")))
      GF_TRY(gf_parse_int("PET_NODE_RANK", v, 0, GF_LAUNCH_MAX_NODES - 1,
                          &o->node_rank, err));
    const char *ma = get(user, "PET_MASTER_ADDR"),
               *mp = get(user, "PET_MASTER_PORT");
    if (!o->rdzv_host[0] && ma) {
      GF_TRY(env_host(o, "PET_MASTER_ADDR", ma, err));
      o->rdzv_port = 29500; /* Kubeflow Trainer's default */
      if (mp)
        GF_TRY(gf_parse_int("PET_MASTER_PORT", mp, 1, 65535, &o->rdzv_port,
                            err));
    }
  } else if (!o->nnodes_max && get) {
    const char *ma = get(user, "MASTER_ADDR"), *mp = get(user, "MASTER_PORT"),
               *ws = get(user, "WORLD_SIZE"), *rk = get(user, "RANK");
    int w = 0;
    /* all four set: a number or a usage error; a world of one, or one of
     * more nodes than a job takes (a torchrun world of ranks), is no
     * multi-node job */
    if (ma && mp && ws && rk)
      GF_TRY(gf_parse_int("WORLD_SIZE", ws, 0, INT32_MAX, &w, err));
    if (w > 1 && w <= GF_LAUNCH_MAX_NODES) {
      set_conv(o, "PyTorchJob");
      o->nnodes_min = o->nnodes_max = w;
      if (o->node_rank < 0)
        GF_TRY(gf_parse_int("RANK", rk, 0, w - 1, &o->node_rank, err));
      if (!o->rdzv_host[0]) {
        GF_TRY(env_host(o, "MASTER_ADDR", ma, err));
        GF_TRY(gf_parse_int("MASTER_PORT", mp, 1, 65535, &o->rdzv_port,
                            err));
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

/* Parses the training flags after cmd[train_at] with ganflow-train's own
 * table. */
static gf_status parse_train(gf_launch_opts *o, gf_err *err) {
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_parse_result pr = gf_train_parse_args(&o->train, o->ncmd - o->train_at,
                                           o->cmd + o->train_at, &e);
  if (pr == GF_PARSE_HELP)
    return gf_fail(err, GF_EINVAL, "--help after ganflow-train: run "
                   "ganflow-train --help for its flags");
  if (pr != GF_PARSE_OK)
    return gf_fail(err, GF_EINVAL, "the training command: %s", e.msg);
  return GF_OK;
}

static gf_status parse_rdzv(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  gf_launch_opts *o = obj;
  return gf_launch_parse_hostport(row->name, v, o->rdzv_host,
                                  sizeof o->rdzv_host, &o->rdzv_port, err);
}

/* ---- the table --------------------------------------------------------- */

enum { S_ONE, S_NODES, S_COUNT };

static const char *const k_sections[S_COUNT] = {
  [S_ONE] = "",
  [S_NODES] = "\nSeveral nodes, one agent per node (as torchrun); --nproc is "
              "then per node:",
};

static const gf_flag_choice k_launchers[] = {
  {"local", GF_LAUNCHER_LOCAL}, {"mpirun", GF_LAUNCHER_MPIRUN},
  {"srun", GF_LAUNCHER_SRUN}, {NULL, 0}};

#define O gf_launch_opts
#define FIELD(f) GF_FLAG_FIELD(O, f)
#define SECONDS .kind = GF_FLAG_F64, .flo = 0, .fhi = 1e6, \
                .fopen = GF_PARSE_LO_OPEN

static const gf_flag k_rows[] = {
  {.name = "--nproc", .arg = "N", .kind = GF_FLAG_INT, FIELD(nproc),
   .lo = 1, .hi = GF_LAUNCH_MAX_RANKS, .parse = parse_nproc,
   .def_help = "required",
   .help = "ranks; auto (as torchrun and Kubeflow's default): one per GPU "
           "this process sees when the command trains with --device cuda "
           "(CUDA_VISIBLE_DEVICES, else /dev/nvidiaN), else 1: one CPU "
           "rank, whose threads use every core"},
  {.name = "--nproc-min", .arg = "M", .kind = GF_FLAG_INT, FIELD(nproc_min),
   .lo = 1, .hi = GF_LAUNCH_MAX_RANKS, .def_i = -1, .def_help = "N",
   .help = "go on with as few as M ranks when slots fail to start; the "
           "global batch is kept"},
  {.name = "--max-restarts", .arg = "R", .kind = GF_FLAG_INT,
   FIELD(max_restarts), .lo = 0, .hi = 1000000, .def_i = 3,
   .help = "restarts before the job is FAILED"},
  {.name = "--hang-timeout", .arg = "S", SECONDS, FIELD(hang_timeout),
   .def_f = 60,
   .help = "seconds without a heartbeat while training (a step or a "
           "checkpoint) before the ranks count as hung"},
  {.name = "--start-timeout", .arg = "S", SECONDS, FIELD(start_timeout),
   .def_f = 600,
   .help = "the same for start-up, evaluations and the final upload"},
  {.name = "--launcher", .arg = "L", .kind = GF_FLAG_CHOICE, FIELD(launcher),
   .choices = k_launchers, .def_i = GF_LAUNCHER_LOCAL,
   .help = "local: N processes here with torchrun-style variables (RANK, "
           "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, "
           "MASTER_PORT); mpirun; srun (inside an allocation)"},
  {.name = "--hostfile", .arg = "FILE", .kind = GF_FLAG_CUSTOM,
   .parse = parse_hostfile,
   .help = "mpirun: its host file, re-read at each start (its slots bound "
           "the world size)"},
  {.name = "--launcher-arg", .arg = "ARG", .kind = GF_FLAG_CUSTOM,
   .parse = parse_larg,
   .help = "one more argument for mpirun/srun (repeatable)"},
  {.name = "--elastic-capacity", .arg = "SOURCE", .kind = GF_FLAG_CUSTOM,
   .parse = parse_capacity,
   .help = "the slots the job may use, re-read every 0.5 s: file:PATH "
           "(lines HOST slots=N [leaving=WHEN], WHEN Unix seconds or RFC "
           "3339, a spot notice), hostfile:PATH (an Open MPI host file) or "
           "slurm (the Slurm job's allocation, every 5 s; its end time a "
           "notice); the job grows when slots appear, checkpoints and "
           "shrinks before announced ones leave, and recovers when slots "
           "vanish (a failure); --nproc is the most ranks, --nproc-min then "
           "defaults to 1. mpirun gets the usable hosts."},
  {.name = "--capacity-notice-margin", .arg = "S", SECONDS,
   FIELD(cap_margin), .def_f = GF_CAP_MARGIN_DEFAULT,
   .help = "slots leaving within S seconds are no longer used: time for "
           "the checkpoint before they go"},
  {.name = "--heartbeat-dir", .arg = "DIR", .kind = GF_FLAG_CUSTOM,
   .parse = parse_hb_dir,
   .def_help = "<checkpoint-dir>/heartbeat",
   .help = "where ranks write their heartbeats (each node's agent reads its "
           "own ranks' under DIR/node-<K>)"},
  {.name = "--nnodes", .arg = "MIN[:MAX]", .kind = GF_FLAG_INT,
   FIELD(nnodes_min), .lo = 1, .hi = GF_LAUNCH_MAX_NODES,
   .parse = parse_nnodes, .def_help = "1", .section = S_NODES,
   .help = "nodes: start when MIN agents are there (and MAX are, or "
           "--rdzv-last-call passed); go on with as few as MIN after a node "
           "is lost; a node that comes back joins at a checkpoint boundary"},
  {.name = "--node-rank", .arg = "K", .kind = GF_FLAG_INT, FIELD(node_rank),
   .lo = 0, .hi = GF_LAUNCH_MAX_NODES - 1, .def_i = -1, .def_help = "0",
   .section = S_NODES,
   .help = "this node, 0..MAX-1; node 0 hosts the rendezvous and rank 0"},
  {.name = "--rdzv", .arg = "HOST:PORT", .kind = GF_FLAG_CUSTOM,
   .parse = parse_rdzv, .section = S_NODES,
   .help = "node 0's address (also the ranks' MASTER_ADDR) and the "
           "rendezvous port"},
  {.name = "--rdzv-last-call", .arg = "S", SECONDS, FIELD(rdzv_last_call),
   .def_f = 2, .section = S_NODES,
   .help = "first round: with MIN nodes there, wait this long for more; a "
           "restart goes on with the nodes there"},
  {.name = "--nproc-per-node", .arg = "N", .kind = GF_FLAG_INT,
   FIELD(nproc), .lo = 1, .hi = GF_LAUNCH_MAX_RANKS, .parse = parse_nproc,
   .def_help = "", .section = S_NODES,
   .help = "the same as --nproc (N or auto)"},
};

#undef SECONDS
#undef FIELD
#undef O

static const gf_flag_table k_table =
    GF_FLAG_TABLE(k_rows, k_sections, S_COUNT, 23);

const gf_flag_table *gf_launch_flags(void) { return &k_table; }

void gf_launch_usage(FILE *out) {
  fprintf(out,
"usage: ganflow launch --nproc N [options] -- [WRAPPER...] ganflow-train ARGS...\n"
"Runs a ganflow-train job on N ranks and keeps it running: a rank that dies,\n"
"hangs or cannot start makes every rank stop, and the job starts again from\n"
"the newest checkpoint that verifies, into the same MLflow run.\n"
"\n");
  gf_flags_usage(out, &k_table);
  fprintf(out,
"Without these flags the node settings come from Kubeflow Trainer's PET_NNODES,\n"
"PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, else\n"
"PyTorchJob's MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods), RANK (pod index).\n"
"Numbers (flags and variables) are plain decimals: no spaces, '+' or hex.\n"
"\n"
"The command may start with wrappers (env, numactl, a script that execs its\n"
"arguments); the training flags are those after the word ganflow-train.\n"
"Exit status: 0 finished, 1 FAILED, 2 usage, 143 stopped by SIGTERM/SIGINT\n"
"after a checkpoint (run KILLED; the same command resumes it).\n");
}

gf_status gf_launch_parse(gf_launch_opts *o, int argc, char **argv,
                          const char *(*get)(void *user, const char *name),
                          void *user, bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_defaults(&k_table, o);
  static const gf_flags_opts opts = {
    .hint = "(the training command goes after --)", .stop_at_dashdash = true};
  int dd = argc; /* index of "--" */
  GF_TRY(gf_flags_parse(&k_table, o, argc, argv, &opts, help, &dd, err));
  if (*help) return GF_OK;
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
  if (dd + 1 >= argc)
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
        GF_FORMAT_FITS(buf, sizeof buf, "--grad-accum=%d", grad_accum);
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
