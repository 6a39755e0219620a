/* bench_dist.c - throughput of data-parallel GAN training (DESIGN §4.6):
 * one process per rank, each running gf_gan_step on its slice of a global
 * batch, with the gradients all-reduced at the step's two seams (bucketed,
 * started during the backward). Runs alone as one rank (no communicator,
 * no all-reduce) or as several: under mpirun (gf_comm over MPI) or with
 * torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT:
 * gf_comm's tcp engine, also across hosts); --comm picks one.
 *
 * The input is synthetic: a fixed pseudo-random pattern in [-1, 1], indexed
 * by global sample, so that a rank's slice is its part of the same global
 * batch at any world size. No data loading, no checkpointing, no tracking:
 * this measures the step and its communication only.
 *
 * Rank 0 prints one JSON line (run.sh turns the lines into tables). The
 * timed steps sit between two barriers and are timed on CLOCK_MONOTONIC;
 * the all-reduce figures are gf_gan_sync_stats, averaged over the ranks.
 *
 * Every rank parses the same command line, so a bad flag stops every rank
 * (exit 2) before the communicator exists; a failure after that ends the
 * job with gf_comm_abort rather than leave the peers waiting. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/comm.h"
#include "gf/ctx.h"
#include "gf/gan.h"

#define COMM_TIMEOUT_S 300.0 /* generous: dcgan-64 steps take seconds */
#define PARAM_SEED 1         /* every rank builds the same initial model */
#define STEP_SEED 7          /* latents and dropout of every step */

/* The command line, checked. */
typedef struct opts {
  gf_arch arch;           /* GF_ARCH_DCGAN or GF_ARCH_MLP */
  int image_size;         /* 28 (1 channel) or 64 (3 channels) */
  int batch;              /* global batch: samples per step over all ranks */
  int steps;              /* timed steps, >= 1 */
  int warmup;             /* untimed steps before them, >= 0 */
  int threads;            /* CPU threads of each rank's ctx, >= 1 */
  gf_allreduce_algo algo; /* tree with --exact */
  bool algo_given;        /* --allreduce was on the command line */
  bool sync_bn;           /* BN statistics over all ranks */
  bool exact;             /* exact mode (fixed-order gradient sums) */
  int shards;             /* exact mode: micro-batches of the global batch;
                             0 until resolved (then world) */
  int bucket_kb;          /* gradient bucket in KiB; 0 = the library's */
  gf_comm_backend comm;   /* mpi or tcp (several ranks) */
  bool comm_given;        /* --comm was on the command line */
  bool compress;          /* --compress bf16: gradients as bf16 on the
                             wire */
} opts;

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: bench_dist [--model dcgan|mlp] [--image-size 28|64]\n"
      "                  [--batch GLOBAL] [--steps N] [--warmup N]\n"
      "                  [--threads T]\n"
      "                  [--allreduce ring|reduce-bcast|hierarchical|tree]\n"
      "                  [--sync-bn] [--exact [--shards S]] [--bucket-kb K]\n"
      "                  [--comm mpi|tcp] [--compress none|bf16]\n"
      "Run alone (one rank), under mpirun, or with torchrun-style variables\n"
      "(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; one process per rank).\n"
      "Defaults: dcgan, 64 (mlp: 28), batch 64, 10 steps, 1 warm-up, 1 thread,\n"
      "ring, shards = ranks, comm tcp for a torchrun-style launch and mpi\n"
      "otherwise. Rank 0 prints one JSON line.\n");
}

/* *out = s as a decimal int in [lo, hi]; else a message naming flag. */
static bool parse_int(const char *flag, const char *s, int lo, int hi,
                      int *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "bench_dist: %s: \"%s\" is not an integer in [%d, %d]\n",
            flag, s, lo, hi);
    return false;
  }
  *out = (int)v;
  return true;
}

/* 0: parsed; 1: --help printed; 2: bad command line (message printed). */
static int parse_args(opts *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->arch = GF_ARCH_DCGAN;
  o->batch = 64, o->steps = 10, o->warmup = 1, o->threads = 1;
  o->algo = GF_ALLREDUCE_ENGINE;
  int size = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 1;
    }
    if (!strcmp(a, "--sync-bn")) {
      o->sync_bn = true;
      continue;
    }
    if (!strcmp(a, "--exact")) {
      o->exact = true;
      continue;
    }
    static const char *const valued[] = {"--model",    "--image-size",
                                         "--batch",    "--steps",
                                         "--warmup",   "--threads",
                                         "--shards",   "--bucket-kb",
                                         "--allreduce", "--comm",
                                         "--compress"};
    bool known = false;
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
      known |= !strcmp(a, valued[k]);
    if (!known) {
      fprintf(stderr, "bench_dist: unknown flag %s\n", a);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "bench_dist: %s: missing value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    bool ok = true;
    if (!strcmp(a, "--model")) {
      if (!strcmp(v, "dcgan")) o->arch = GF_ARCH_DCGAN;
      else if (!strcmp(v, "mlp")) o->arch = GF_ARCH_MLP;
      else {
        fprintf(stderr, "bench_dist: --model: \"%s\" is not dcgan or mlp\n", v);
        ok = false;
      }
    } else if (!strcmp(a, "--image-size")) {
      ok = parse_int(a, v, 1, 4096, &size);
      if (ok && size != 28 && size != 64) {
        fprintf(stderr, "bench_dist: --image-size: %d is not 28 or 64\n", size);
        ok = false;
      }
    } else if (!strcmp(a, "--batch")) {
      ok = parse_int(a, v, 2, 1 << 20, &o->batch);
    } else if (!strcmp(a, "--steps")) {
      ok = parse_int(a, v, 1, 1 << 20, &o->steps);
    } else if (!strcmp(a, "--warmup")) {
      ok = parse_int(a, v, 0, 1 << 20, &o->warmup);
    } else if (!strcmp(a, "--threads")) {
      ok = parse_int(a, v, 1, 1024, &o->threads);
    } else if (!strcmp(a, "--shards")) {
      ok = parse_int(a, v, 1, 1 << 20, &o->shards);
    } else if (!strcmp(a, "--bucket-kb")) {
      ok = parse_int(a, v, 1, 1 << 21, &o->bucket_kb);
    } else if (!strcmp(a, "--compress")) {
      o->compress = !strcmp(v, "bf16");
      if (!o->compress && strcmp(v, "none")) {
        fprintf(stderr, "bench_dist: --compress: \"%s\" is not none or bf16\n",
                v);
        ok = false;
      }
    } else if (!strcmp(a, "--comm")) {
      o->comm_given = true;
      if (!strcmp(v, "mpi")) o->comm = GF_COMM_MPI;
      else if (!strcmp(v, "tcp")) o->comm = GF_COMM_TCP;
      else {
        fprintf(stderr, "bench_dist: --comm: \"%s\" is not mpi or tcp\n", v);
        ok = false;
      }
    } else { /* --allreduce */
      gf_err err = {0};
      ok = gf_allreduce_algo_parse(v, &o->algo, &err) == GF_OK;
      if (!ok) fprintf(stderr, "bench_dist: --allreduce: %s\n", err.msg);
      o->algo_given = true;
    }
    if (!ok) return 2;
  }
  if (size == 0) size = o->arch == GF_ARCH_MLP ? 28 : 64;
  if (o->arch == GF_ARCH_MLP && size != 28) {
    fprintf(stderr, "bench_dist: --model mlp is the paper's 28x28 network "
                    "(--image-size 28)\n");
    return 2;
  }
  o->image_size = size;
  if (o->exact && o->sync_bn) {
    fprintf(stderr,
            "bench_dist: --exact keeps batch-norm statistics per micro-batch; "
            "it does not combine with --sync-bn\n");
    return 2;
  }
  if (o->exact && o->algo_given && o->algo != GF_ALLREDUCE_TREE) {
    fprintf(
        stderr,
        "bench_dist: --exact continues its micro-batch tree across ranks with "
        "--allreduce tree; %s cannot\n",
        gf_allreduce_algo_name(o->algo));
    return 2;
  }
  if (o->shards && !o->exact) {
    fprintf(stderr,
            "bench_dist: --shards is the micro-batch count of --exact\n");
    return 2;
  }
  if (o->exact && o->compress) {
    fprintf(stderr, "bench_dist: --compress bf16 rounds the gradient sums; "
                    "--exact keeps every bit\n");
    return 2;
  }
  if (o->exact) o->algo = GF_ALLREDUCE_TREE;
  return 0;
}

static bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/* Checks what depends on the world size; resolves o->shards. */
static bool check_world(opts *o, int world) {
  if (o->batch % world) {
    fprintf(stderr,
            "bench_dist: global batch %d does not split over %d ranks\n",
            o->batch, world);
    return false;
  }
  int local = o->batch / world;
  if (local < 2) {
    fprintf(stderr, "bench_dist: %d samples per rank (batch norm needs 2)\n",
            local);
    return false;
  }
  if (!o->exact) return true;
  if (o->shards == 0) o->shards = world;
  int micro = o->shards / world;
  if (o->shards % world || !pow2(micro) || !pow2(world)) {
    fprintf(
        stderr,
        "bench_dist: --exact needs a power-of-two number of ranks (%d) and of "
        "shards per rank (--shards %d over %d ranks)\n",
        world, o->shards, world);
    return false;
  }
  if (local % micro || local / micro < 2) {
    fprintf(
        stderr,
        "bench_dist: %d samples per rank do not cut into %d micro-batches of "
        "at least 2\n",
        local, micro);
    return false;
  }
  return true;
}

/* The global batch's fixed pattern at global samples [sample0, sample0 +
 * n): pseudo-random values in [-1, 1] from the global element index. */
static void fill_synthetic(gf_tensor *real, int64_t sample0) {
  float *p = real->data;
  int64_t per = gf_tensor_numel(real) / real->shape[0];
  int64_t n = gf_tensor_numel(real);
  for (int64_t i = 0; i < n; i++) {
    uint64_t g = (uint64_t)(sample0 * per + i);
    g = (g + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    g ^= g >> 31;
    p[i] = (float)((double)(g >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

/* Everything the run holds; zeroed, then released by run_free. */
typedef struct run_state {
  gf_comm *comm; /* NULL for one rank */
  gf_ctx ctx;
  bool ctx_live;  /* ctx initialized: gf_ctx_free it */
  gf_gan gan;     /* zeroed or built; gf_gan_free accepts both */
  gf_tensor real; /* [batch / world, C, H, W], owned */
  bool real_live; /* real allocated: gf_tensor_free it */
} run_state;

static void run_free(run_state *r) {
  if (r->real_live) gf_tensor_free(&r->real);
  gf_gan_free(&r->gan);
  if (r->ctx_live) gf_ctx_free(&r->ctx);
  gf_comm_free(r->comm);
}

/* What rank 0 prints. */
typedef struct result {
  double step_s;      /* wall seconds per timed step (rank 0) */
  double allreduce_s; /* per step, mean over ranks */
  double exposed_s;   /* per step, mean over ranks */
  double bytes;       /* per step, one rank's gradient payload */
  double buckets;     /* per step */
  int ranks_agree;    /* parameters and Adam moments equal on every rank;
                         -1 with one rank */
  gf_gan_stats last;  /* rank 0's last step */
} result;

/* The timed run after setup; fills res on every rank. */
static gf_status bench(run_state *r, const opts *o, int rank, int world,
                       result *res, gf_err *err) {
  int64_t local = o->batch / world, sample0 = (int64_t)rank * local;
  int64_t step = 0;
  for (int i = 0; i < o->warmup; i++, step++)
    GF_TRY(gf_gan_step(&r->gan, &r->ctx, &r->real, NULL, STEP_SEED, step,
                       sample0, &res->last, err));
  gf_gan_sync_stats_reset(&r->gan);
  if (r->comm) GF_TRY(gf_comm_barrier(r->comm, err));
  double t0 = gf_mono_s();
  for (int i = 0; i < o->steps; i++, step++)
    GF_TRY(gf_gan_step(&r->gan, &r->ctx, &r->real, NULL, STEP_SEED, step,
                       sample0, &res->last, err));
  if (r->comm) GF_TRY(gf_comm_barrier(r->comm, err));
  double t1 = gf_mono_s();
  gf_gan_sync_stats ss;
  gf_gan_sync_stats_get(&r->gan, &ss);
  double per[2] = {ss.allreduce_s / o->steps, ss.exposed_s / o->steps};
  if (r->comm)
    GF_TRY(gf_comm_allreduce(r->comm, per, 2, GF_CDT_F64, GF_RED_AVG, err));
  res->step_s = (t1 - t0) / o->steps;
  res->allreduce_s = per[0];
  res->exposed_s = per[1];
  res->bytes = (double)ss.bytes / o->steps;
  res->buckets = (double)ss.buckets / o->steps;
  res->ranks_agree = -1;
  if (r->comm) {
    /* BN running statistics differ between ranks without sync BN: leave
     * them out. */
    char hex[GF_SHA256_HEX_LEN + 1];
    GF_TRY(gf_gan_digest(&r->gan, false, hex, err));
    char *all = malloc((size_t)world * sizeof hex);
    if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
    gf_status st = gf_comm_allgather(r->comm, hex, sizeof hex, all, err);
    if (st == GF_OK) {
      res->ranks_agree = 1;
      for (int k = 1; k < world; k++)
        if (memcmp(all, all + (size_t)k * sizeof hex, sizeof hex))
          res->ranks_agree = 0;
    }
    free(all);
    GF_TRY(st);
  }
  return GF_OK;
}

/* A JSON number, or null for a figure that does not exist (no all-reduce). */
static void json_num(const char *key, double v, bool valid, int decimals) {
  printf(",\"%s\":", key);
  if (valid) printf("%.*f", decimals, v);
  else printf("null");
}

static void print_result(const opts *o, int world, const run_state *r,
                         const result *res) {
  bool comm = r->comm != NULL;
  bool ar = res->allreduce_s > 0;
  printf("{\"bench\":\"dist\",\"model\":\"%s\",\"image_size\":%d,\"world\":%d,"
         "\"threads_per_rank\":%d,\"global_batch\":%d,\"batch_per_rank\":%d,"
         "\"comm\":\"%s\",\"compress\":\"%s\",\"algo\":\"%s\","
         "\"sync_bn\":%s,\"exact\":%s,\"shards\":%d,\"bucket_"
         "kb\":%d,"
         "\"steps\":%d,\"warmup\":%d,"
         "\"data\":\"synthetic: fixed pseudo-random pattern in [-1,1]\"",
         o->arch == GF_ARCH_MLP ? "mlp" : "dcgan", o->image_size, world,
         o->threads, o->batch, o->batch / world,
         comm ? gf_comm_backend_name(o->comm) : "none",
         o->compress ? "bf16" : "none",
         comm ? gf_allreduce_algo_name(o->algo) : "none",
         o->sync_bn ? "true" : "false", o->exact ? "true" : "false",
         o->exact ? o->shards : 0, o->bucket_kb ? o->bucket_kb : 1024, o->steps,
         o->warmup);
  json_num("images_per_sec", o->batch / res->step_s, true, 2);
  json_num("step_ms", 1e3 * res->step_s, true, 3);
  json_num("allreduce_ms_per_step", 1e3 * res->allreduce_s, comm, 3);
  json_num("exposed_ms_per_step", 1e3 * res->exposed_s, comm, 3);
  /* The share of the all-reduce's wall time that ran while the backward
   * was still running. */
  json_num("hidden_fraction", 1.0 - res->exposed_s / res->allreduce_s, ar, 4);
  json_num("bytes_per_step", res->bytes, comm, 0);
  /* The gradient payload as it travels: half of it in bf16. */
  json_num("wire_bytes_per_step", o->compress ? res->bytes / 2 : res->bytes,
           comm, 0);
  /* Algorithmic bandwidth of the gradient payload: one rank's gradient
   * bytes per step over the all-reduce's wall time per step. Not the bytes
   * on the wire, which depend on the algorithm (a ring moves 2(p-1)/p of
   * the payload per rank). */
  json_num("bandwidth_GBps", res->bytes / res->allreduce_s / 1e9, ar, 4);
  json_num("buckets_per_step", res->buckets, comm, 1);
  printf(",\"ranks_agree\":%s,\"loss_d\":%.4f,\"loss_g\":%.4f}\n",
         res->ranks_agree < 0 ? "null"
         : res->ranks_agree   ? "true"
                              : "false",
         res->last.loss_d, res->last.loss_g);
  fflush(stdout);
}

int main(int argc, char **argv) {
  opts o;
  int prc = parse_args(&o, argc, argv);
  if (prc == 1) return 0;
  if (prc != 0) {
    usage(stderr);
    return 2;
  }
  gf_err err = {0};
  gf_launch_info li;
  if (gf_launch_detect(&li, gf_launch_getenv, NULL, &err) != GF_OK) {
    fprintf(stderr, "bench_dist: %s\n", err.msg);
    return 2;
  }
  int world = li.world_size, rank = li.rank;
  if (!check_world(&o, world)) return 2;

  run_state r;
  memset(&r, 0, sizeof r);
  const char *what = "";
  gf_status st = GF_OK;
  if (!o.comm_given)
    o.comm = strcmp(li.launcher, "torchrun") == 0 ? GF_COMM_TCP : GF_COMM_MPI;
  if (world > 1) {
    if (!gf_comm_built(o.comm)) {
      fprintf(stderr,
              "bench_dist: launched by %s as one of %d ranks, but this build "
              "has no "
              "MPI (install libopenmpi-dev and reconfigure, or launch with "
              "MASTER_ADDR and MASTER_PORT for --comm tcp)\n",
              li.launcher, world);
      return 1;
    }
    gf_comm_config cc = {o.comm, o.algo, COMM_TIMEOUT_S, NULL, &li};
    what = "comm";
    st = gf_comm_init(&r.comm, &cc, &err);
  }
  gf_model_config mc;
  gf_model_config_default(&mc, o.arch);
  if (o.arch == GF_ARCH_DCGAN) {
    mc.image_height = mc.image_width = o.image_size;
    mc.image_channels = o.image_size == 64 ? 3 : 1;
    mc.ngf = mc.ndf = 64; /* the trainer's setting */
  }
  int local = o.batch / world;
  if (st == GF_OK) {
    what = "ctx";
    st = gf_ctx_init(&r.ctx, &(gf_ctx_config){GF_BACKEND_CPU, o.threads, 0, GF_CPU_LAYOUT_AUTO},
                     &err);
    r.ctx_live = st == GF_OK;
  }
  if (st == GF_OK) {
    what = "gan";
    st = gf_gan_init(&r.gan, &r.ctx, &mc, NULL, local, &err);
  }
  if (st == GF_OK) st = gf_gan_init_params(&r.gan, PARAM_SEED, &err);
  if (st == GF_OK) {
    what = "distribute";
    gf_gan_dist d = {r.comm,    o.exact ? o.shards / world : 1,
                     o.exact,   o.sync_bn,
                     (size_t)o.bucket_kb * 1024, o.compress};
    st = gf_gan_distribute(&r.gan, &r.ctx, &d, &err);
  }
  if (st == GF_OK) {
    what = "input";
    int64_t shape[4] = {local, mc.image_channels, mc.image_height,
                        mc.image_width};
    st = gf_tensor_init(&r.real, GF_F32, GF_DEV_CPU, 4, shape, &err);
    r.real_live = st == GF_OK;
    if (st == GF_OK) fill_synthetic(&r.real, (int64_t)rank * local);
  }
  result res;
  memset(&res, 0, sizeof res);
  if (st == GF_OK) {
    what = "step";
    st = bench(&r, &o, rank, world, &res, &err);
  }
  if (st != GF_OK) {
    fprintf(stderr, "bench_dist: rank %d: %s: %s (%s)\n", rank, what, err.msg,
            gf_status_name(st));
    if (r.comm) gf_comm_abort(r.comm, 1); /* peers may wait in a collective */
    run_free(&r);
    return 1;
  }
  if (rank == 0) print_result(&o, world, &r, &res);
  run_free(&r);
  if (res.ranks_agree ==
      0) { /* every rank knows: the digests were allgathered */
    if (rank == 0)
      fprintf(
          stderr,
          "bench_dist: the ranks hold different parameters after the run: the "
          "gradient all-reduce is broken\n");
    return 1;
  }
  return 0;
}
