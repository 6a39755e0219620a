/* comm_launch.c - gf_launch_detect: rank, world and local layout of this
 * process from the launcher's environment variables (Open MPI's mpirun,
 * PMIx/Slurm srun, torchrun); see gf/comm.h. A pure parse over a `get`
 * callback, so tests and the fuzz target feed it fake environments. Not
 * here: talking to peers (comm.c and the engines). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_impl.h"
#include "gf/parse.h"
#include "gf/sock.h"
#include "gf/text.h"

#define GF_LAUNCH_MAX_WORLD 65536

typedef struct env_src {
  const char *(*get)(void *user, const char *name);
  void *user;
} env_src;

static const char *env_get(const env_src *e, const char *name) {
  return e->get(e->user, name);
}

/* A decimal integer in [lo, hi] through gf/parse.h, the message naming
 * "launch: NAME". */
static gf_status parse_int(const char *name, const char *v, long lo, long hi,
                           int *out, gf_err *err) {
  char what[96];
  GF_FORMAT_FITS(what, sizeof what, "launch: %s", name); /* the names are constants of this file */
  return gf_parse_int(what, v, (int)lo, (int)hi, out, err);
}

/* Reads variable `name` as an integer in [lo, hi]. *found = 0 (and *out
 * untouched) when unset; a set but empty value is malformed. */
static gf_status env_int(const env_src *e, const char *name, long lo, long hi,
                         int *out, int *found, gf_err *err) {
  const char *v = env_get(e, name);
  *found = v != NULL;
  if (!v) return GF_OK;
  return parse_int(name, v, lo, hi, out, err);
}

static gf_status env_int_req(const env_src *e, const char *name,
                             const char *because, long lo, long hi, int *out,
                             gf_err *err) {
  int found = 0;
  GF_TRY(env_int(e, name, lo, hi, out, &found, err));
  if (!found)
    return gf_fail(err, GF_EINVAL, "launch: %s is unset while %s is set", name,
                   because);
  return GF_OK;
}

/* One entry of SLURM_TASKS_PER_NODE ("N" or "N(xM)", comma-separated) for
 * node `node` (-1: the value when every node has the same count). */
static gf_status slurm_tasks_per_node(const char *v, int node, int *out,
                                      gf_err *err) {
  static const char name[] = "SLURM_TASKS_PER_NODE";
  char q[GF_TEXT_SHOW_MAX];
  const char *p = v;
  long seen = 0;
  int uniform = -1, mixed = 0;
  while (1) {
    long n = 0, rep = 1;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
      n = n * 10 + (*p - '0');
    if (!digits || n < 1 || n > GF_LAUNCH_MAX_WORLD) goto bad;
    if (*p == '(') {
      if (p[1] != 'x') goto bad;
      p += 2;
      rep = 0;
      digits = 0;
      for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
        rep = rep * 10 + (*p - '0');
      if (!digits || rep < 1 || rep > GF_LAUNCH_MAX_WORLD || *p != ')')
        goto bad;
      p++;
    }
    if (uniform < 0) uniform = (int)n;
    else if (uniform != n) mixed = 1;
    if (node >= 0 && node >= seen && node < seen + rep) *out = (int)n;
    seen += rep;
    if (seen > GF_LAUNCH_MAX_WORLD) goto bad;
    if (*p == '\0') break;
    if (*p != ',') goto bad;
    p++;
  }
  if (node < 0) {
    if (mixed) {
      gf_text_show(v, q);
      return gf_fail(err, GF_EINVAL,
                     "launch: %s='%s' differs between nodes and SLURM_NODEID is "
                     "unset",
                     name, q);
    }
    *out = uniform;
  } else if (node >= seen) {
    gf_text_show(v, q);
    return gf_fail(err, GF_EINVAL,
                   "launch: SLURM_NODEID=%d has no entry in %s='%s' (%ld nodes)",
                   node, name, q, seen);
  }
  return GF_OK;
bad:
  gf_text_show(v, q);
  return gf_fail(err, GF_EINVAL,
                 "launch: %s='%s' is not a list of counts like \"2(x3),1\"", name,
                 q);
}

/* A host name or address under gf/sock.h's rule (an IPv6 address bare, as
 * torchrun takes it, or in brackets); kept as written (the dial drops the
 * brackets). */
static gf_status check_addr(const char *v, gf_err *err) {
  char h[GF_SOCK_HOST_MAX];
  gf_err e;
  if (gf_sock_host("MASTER_ADDR", v, h, sizeof h, &e) == GF_OK) return GF_OK;
  return gf_fail(err, GF_EINVAL, "launch: %s", e.msg);
}

/* Range checks between the values; names are the variables they came
 * from. */
static gf_status check_layout(const gf_launch_info *o, const char *rank_var,
                              const char *world_var, const char *lrank_var,
                              const char *lworld_var, gf_err *err) {
  if (o->rank >= o->world_size)
    return gf_fail(err, GF_EINVAL, "launch: %s=%d is not below %s=%d", rank_var,
                   o->rank, world_var, o->world_size);
  if (o->local_world_size > o->world_size)
    return gf_fail(err, GF_EINVAL, "launch: %s=%d exceeds %s=%d", lworld_var,
                   o->local_world_size, world_var, o->world_size);
  if (o->local_rank >= o->local_world_size)
    return gf_fail(err, GF_EINVAL, "launch: %s=%d is not below %s=%d",
                   lrank_var, o->local_rank, lworld_var, o->local_world_size);
  return GF_OK;
}

static gf_status detect_mpirun(const env_src *e, gf_launch_info *o,
                               gf_err *err) {
  int found = 0;
  GF_TRY(env_int(e, "OMPI_COMM_WORLD_RANK", 0, GF_LAUNCH_MAX_WORLD - 1,
                 &o->rank, &found, err));
  GF_TRY(env_int_req(e, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", 1,
                     GF_LAUNCH_MAX_WORLD, &o->world_size, err));
  o->local_rank = o->rank;
  o->local_world_size = o->world_size;
  GF_TRY(env_int(e, "OMPI_COMM_WORLD_LOCAL_RANK", 0, GF_LAUNCH_MAX_WORLD - 1,
                 &o->local_rank, &found, err));
  GF_TRY(env_int(e, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, GF_LAUNCH_MAX_WORLD,
                 &o->local_world_size, &found, err));
  strcpy(o->launcher, "mpirun");
  return check_layout(o, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK",
                      "OMPI_COMM_WORLD_LOCAL_SIZE", err);
}

static gf_status detect_srun(const env_src *e, gf_launch_info *o, gf_err *err) {
  int found = 0;
  const char *rank_var = "PMIX_RANK", *world_var = "OMPI_COMM_WORLD_SIZE";
  const char *lrank_var = "OMPI_COMM_WORLD_LOCAL_RANK";
  const char *lworld_var = "OMPI_COMM_WORLD_LOCAL_SIZE";
  GF_TRY(
      env_int(e, rank_var, 0, GF_LAUNCH_MAX_WORLD - 1, &o->rank, &found, err));
  if (!found) {
    rank_var = "SLURM_PROCID";
    GF_TRY(env_int(e, rank_var, 0, GF_LAUNCH_MAX_WORLD - 1, &o->rank, &found,
                   err));
  }
  GF_TRY(env_int(e, world_var, 1, GF_LAUNCH_MAX_WORLD, &o->world_size, &found,
                 err));
  if (!found) {
    world_var = "SLURM_NTASKS";
    GF_TRY(env_int_req(e, world_var, rank_var, 1, GF_LAUNCH_MAX_WORLD,
                       &o->world_size, err));
  }
  o->local_rank = o->rank;
  o->local_world_size = o->world_size;
  GF_TRY(env_int(e, lrank_var, 0, GF_LAUNCH_MAX_WORLD - 1, &o->local_rank,
                 &found, err));
  if (!found) {
    lrank_var = "SLURM_LOCALID";
    GF_TRY(env_int(e, lrank_var, 0, GF_LAUNCH_MAX_WORLD - 1, &o->local_rank,
                   &found, err));
  }
  GF_TRY(env_int(e, lworld_var, 1, GF_LAUNCH_MAX_WORLD, &o->local_world_size,
                 &found, err));
  if (!found) {
    lworld_var = "SLURM_NTASKS_PER_NODE";
    GF_TRY(env_int(e, lworld_var, 1, GF_LAUNCH_MAX_WORLD, &o->local_world_size,
                   &found, err));
  }
  if (!found) {
    const char *tpn = env_get(e, "SLURM_TASKS_PER_NODE");
    if (tpn) {
      int node = -1;
      lworld_var = "SLURM_TASKS_PER_NODE";
      GF_TRY(env_int(e, "SLURM_NODEID", 0, GF_LAUNCH_MAX_WORLD - 1, &node,
                     &found, err));
      GF_TRY(slurm_tasks_per_node(tpn, found ? node : -1, &o->local_world_size,
                                  err));
    }
  }
  strcpy(o->launcher, "srun");
  return check_layout(o, rank_var, world_var, lrank_var, lworld_var, err);
}

static gf_status detect_torchrun(const env_src *e, gf_launch_info *o,
                                 gf_err *err) {
  int found = 0;
  GF_TRY(env_int_req(e, "RANK", "WORLD_SIZE", 0, GF_LAUNCH_MAX_WORLD - 1,
                     &o->rank, err));
  GF_TRY(env_int_req(e, "WORLD_SIZE", "RANK", 1, GF_LAUNCH_MAX_WORLD,
                     &o->world_size, err));
  o->local_rank = o->rank;
  o->local_world_size = o->world_size;
  GF_TRY(env_int(e, "LOCAL_RANK", 0, GF_LAUNCH_MAX_WORLD - 1, &o->local_rank,
                 &found, err));
  GF_TRY(env_int(e, "LOCAL_WORLD_SIZE", 1, GF_LAUNCH_MAX_WORLD,
                 &o->local_world_size, &found, err));
  GF_TRY(check_layout(o, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                      err));
  const char *addr = env_get(e, "MASTER_ADDR");
  if (addr) {
    GF_TRY(check_addr(addr, err));
    memcpy(o->master_addr, addr, strlen(addr) + 1);
  } else if (o->world_size > 1) {
    return gf_fail(err, GF_EINVAL,
                   "launch: MASTER_ADDR is unset while WORLD_SIZE=%d > 1",
                   o->world_size);
  }
  GF_TRY(env_int(e, "MASTER_PORT", 1, 65535, &o->master_port, &found, err));
  if (!found && o->world_size > 1)
    return gf_fail(err, GF_EINVAL,
                   "launch: MASTER_PORT is unset while WORLD_SIZE=%d > 1",
                   o->world_size);
  strcpy(o->launcher, "torchrun");
  return GF_OK;
}

/* mpirun and srun: MASTER_ADDR and MASTER_PORT when both are set (for the
 * tcp engine and the nccl rendezvous), checked as under torchrun; one
 * without the other is left alone. */
static gf_status detect_master(const env_src *e, gf_launch_info *o,
                               gf_err *err) {
  const char *addr = env_get(e, "MASTER_ADDR");
  int found = 0, port = 0;
  if (!addr || !env_get(e, "MASTER_PORT")) return GF_OK;
  GF_TRY(check_addr(addr, err));
  GF_TRY(env_int(e, "MASTER_PORT", 1, 65535, &port, &found, err));
  memcpy(o->master_addr, addr, strlen(addr) + 1);
  o->master_port = port;
  return GF_OK;
}

gf_status gf_launch_detect(gf_launch_info *out,
                           const char *(*get)(void *user, const char *name),
                           void *user, gf_err *err) {
  if (!out || !get)
    return gf_fail(err, GF_EINVAL, "launch: NULL %s", out ? "get" : "out");
  gf_launch_info o;
  memset(&o, 0, sizeof o);
  o.world_size = 1;
  o.local_world_size = 1;
  strcpy(o.launcher, "none");
  env_src e = {get, user};
  gf_status st = GF_OK;
  if (env_get(&e, "OMPI_COMM_WORLD_RANK")) st = detect_mpirun(&e, &o, err);
  else if (env_get(&e, "PMIX_RANK") || env_get(&e, "SLURM_PROCID"))
    st = detect_srun(&e, &o, err);
  else if (env_get(&e, "RANK") || env_get(&e, "WORLD_SIZE"))
    st = detect_torchrun(&e, &o, err);
  if (!st && strcmp(o.launcher, "mpirun") == 0) st = detect_master(&e, &o, err);
  if (!st && strcmp(o.launcher, "srun") == 0) st = detect_master(&e, &o, err);
  if (st) return st;
  if (gethostname(o.hostname, sizeof o.hostname - 1) != 0 || !o.hostname[0])
    strcpy(o.hostname, "unknown-host");
  o.hostname[sizeof o.hostname - 1] = '\0';
  *out = o;
  return GF_OK;
}

const char *gf_launch_getenv(void *user, const char *name) {
  (void)user;
  return getenv(name);
}
