/* train_auto.c - ganflow-train --auto (issue 26): the run's --threads,
 * --bucket-kb and --allreduce chosen for this machine and world size by
 * timing its first batch, and the choice kept for every later process of
 * the run.
 *
 * The measurement never touches the run's state: each candidate runs on a
 * scratch GAN (built from the run's config on a scratch CPU ctx, its
 * parameters from the seed) fed this rank's slice of the run's step-0
 * batch, read through a data iterator of its own (the loader has not
 * started). The run's GAN is built afterwards, from the seed or the
 * checkpoint, exactly as a run given the chosen values as flags builds
 * it; the ctx is rebuilt with the chosen thread count, and a chosen
 * algorithm other than the job's communicator's gets a communicator of
 * its own (MPI ranks only). Candidates are tried one dimension after the
 * other (threads, then bucket size, then algorithm), AUTO_WARMUP + AUTO_TIMED
 * steps each; a candidate's time is the slowest rank's, and rank 0's
 * choice is broadcast.
 *
 * The choice is a numerics choice (thread count, bucket cuts and the
 * all-reduce's order of additions change the bits of a step), so a run
 * measures once: rank 0 writes <checkpoint-dir>/auto (atomically) before
 * the MLflow run starts, and a process that continues the run (a
 * checkpoint or a run_id to resume) reads it back and measures nothing.
 * That file is the choice's one source: local like the checkpoints and the
 * run_id file, there before the first checkpoint (a kill -9 before it
 * still resumes with the same values), and independent of the tracking
 * server being up. Not here: the flags (train_config.c), the params
 * (gf_train_config_params reads what this file sets). */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/atomic_file.h"
#include "gf/clock.h"
#include "gf/file.h"
#include "gf/fs.h"
#include "gf/note.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "train_state.h"

#define AUTO_MAGIC "ganflow-auto 1"
#define AUTO_FILE_MAX 4096   /* the file's bytes at most */
#define AUTO_WARMUP 1        /* untimed steps per candidate */
#define AUTO_TIMED 3         /* timed steps per candidate */
#define AUTO_MAX_THREADS 5   /* thread counts tried at most */
#define AUTO_CUTOFF 5.0      /* a warm-up this many times the best: no more */

static bool printable_word(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) return false;
  return true;
}

/* A decimal integer of text[0..n) in [lo, hi]. */
static bool parse_range(const char *text, size_t n, long lo, long hi,
                        int *out) {
  if (n == 0 || n > 9) return false;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  if (v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

gf_status train_auto_parse(const char *text, size_t len,
                           train_auto_choice *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  if (len > AUTO_FILE_MAX)
    return gf_fail(err, GF_EFORMAT, "auto: %zu bytes, more than %d", len,
                   AUTO_FILE_MAX);
  if (memchr(text, '\0', len))
    return gf_fail(err, GF_EFORMAT, "auto: a NUL byte");
  size_t ml = strlen(AUTO_MAGIC);
  if (len < ml + 1 || memcmp(text, AUTO_MAGIC "\n", ml + 1) != 0)
    return gf_fail(err, GF_EFORMAT, "auto: the first line is not '%s'",
                   AUTO_MAGIC);
  unsigned seen = 0;
  size_t pos = ml + 1;
  int line = 2;
  while (pos < len) {
    size_t n;
    const char *l = gf_next_line(text, len, &pos, &n);
    const char *sp = memchr(l, ' ', n);
    if (!sp)
      return gf_fail(err, GF_EFORMAT, "auto: line %d is not 'KEY VALUE'",
                     line);
    size_t kn = (size_t)(sp - l), vn = n - kn - 1;
    const char *v = sp + 1;
    unsigned bit;
    bool ok;
    if (kn == 7 && memcmp(l, "threads", 7) == 0) {
      bit = 1u, ok = parse_range(v, vn, 1, 4096, &out->threads);
    } else if (kn == 9 && memcmp(l, "bucket_kb", 9) == 0) {
      bit = 2u, ok = parse_range(v, vn, 4, 1 << 20, &out->bucket_kb);
    } else if (kn == 9 && memcmp(l, "allreduce", 9) == 0) {
      bit = 4u, ok = false;
      char word[32];
      if (vn < sizeof word) {
        memcpy(word, v, vn);
        word[vn] = '\0';
        gf_allreduce_algo a;
        gf_err e;
        ok = gf_allreduce_algo_parse(word, &a, &e) == GF_OK;
        if (ok) out->allreduce = (int)a;
      }
    } else if (kn == 8 && memcmp(l, "measured", 8) == 0) {
      bit = 8u;
      ok = vn < sizeof out->measured && printable_word(v, vn);
      if (ok) memcpy(out->measured, v, vn), out->measured[vn] = '\0';
    } else {
      return gf_fail(err, GF_EFORMAT, "auto: line %d: unknown key '%.*s'",
                     line, (int)(kn < 32 ? kn : 32), l);
    }
    if (seen & bit)
      return gf_fail(err, GF_EFORMAT, "auto: line %d: '%.*s' twice", line,
                     (int)kn, l);
    if (!ok)
      return gf_fail(err, GF_EFORMAT, "auto: line %d: a bad value of '%.*s'",
                     line, (int)kn, l);
    seen |= bit;
    line++;
  }
  if (seen != 15u)
    return gf_fail(err, GF_EFORMAT, "auto: threads, bucket_kb, allreduce and "
                   "measured are each needed once");
  return GF_OK;
}

gf_status train_auto_format(const train_auto_choice *c, char *out, size_t cap,
                            gf_err *err) {
  return gf_format(out, cap, err, "auto file",
                   AUTO_MAGIC "\nthreads %d\nbucket_kb %d\nallreduce %s\n"
                   "measured %s\n", c->threads, c->bucket_kb,
                   gf_allreduce_algo_name((gf_allreduce_algo)c->allreduce),
                   c->measured);
}

/* ---- the measurement ---------------------------------------------------- */

/* One scratch model on a scratch ctx, and the batch it steps on. */
typedef struct trial {
  gf_ctx ctx;          /* owned */
  bool ctx_ok;
  gf_gan gan;          /* owned; on ctx */
  int threads;         /* ctx's thread count */
} trial;

typedef struct bench {
  train_state *st;
  const gf_train_config *cfg; /* the tuned config so far */
  float *images;       /* owned; [local_batch, C, H, W] step 0's slice */
  int32_t *labels;     /* owned; [local_batch] */
  gf_strbuf measured;  /* "key=value:ms,..." */
  int candidates;
} bench;

/* Frees t (heap, from trial_new) and what it owns; NULL is fine. */
static void trial_free(trial *t) {
  if (!t) return;
  gf_gan_free(&t->gan);
  if (t->ctx_ok) gf_ctx_free(&t->ctx);
  free(t);
}

/* *out: a new trial (the caller frees it with trial_free, also after a
 * failure): a ctx of `threads` threads, the run's GAN on it from the
 * seed. On the heap, never copied: the GAN's seams point into it. */
static gf_status trial_new(trial **out, const train_state *st, int threads,
                           gf_err *err) {
  trial *t = *out = calloc(1, sizeof *t);
  if (!t) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_ctx_config cc = {GF_BACKEND_CPU, threads, 0, GF_CPU_LAYOUT_AUTO};
  GF_TRY(gf_ctx_init(&t->ctx, &cc, err));
  t->ctx_ok = true;
  t->threads = t->ctx.nthreads;
  gf_gan_hparams hp;
  train_gan_hparams(st->cfg, &hp);
  GF_TRY(gf_gan_init(&t->gan, &t->ctx, &st->mcfg, &hp, st->local_batch, err));
  return gf_gan_init_params(&t->gan, st->cfg->seed, err);
}

/* This rank's slice of step 0's batch into b's buffers. */
static gf_status read_batch(bench *b, gf_err *err) {
  train_state *st = b->st;
  size_t px = (size_t)st->mcfg.image_channels * (size_t)st->mcfg.image_height *
              (size_t)st->mcfg.image_width;
  gf_data_iter it;
  GF_TRY(gf_data_iter_init(&it, &st->ds, &st->order, err));
  uint32_t *idx = calloc(it.count ? it.count : 1, sizeof *idx);
  b->images = malloc(it.count * px * sizeof *b->images);
  b->labels = calloc(it.count ? it.count : 1, sizeof *b->labels);
  gf_status s = GF_OK;
  if (!idx || !b->images || !b->labels)
    s = gf_fail(err, GF_ENOMEM, "out of memory");
  else if (it.count != (uint64_t)st->local_batch)
    s = gf_fail(err, GF_ESTATE, "auto: a slice of %" PRIu64 " images, not %d",
                it.count, st->local_batch);
  if (s == GF_OK) s = gf_data_iter_next_indices(&it, idx, NULL, err);
  if (s == GF_OK) gf_data_fill(&st->ds, idx, it.count, b->images, b->labels);
  free(idx);
  gf_data_iter_free(&it);
  return s;
}

/* The slowest rank's seconds since t0 (this rank's), in ms per step of
 * `steps` steps. */
static gf_status slowest_ms(bench *b, double t0, int steps, double *ms,
                            gf_err *err) {
  train_state *st = b->st;
  double mine = (gf_mono_s() - t0) * 1e3 / steps;
  double *all = calloc((size_t)st->world, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = gf_dist_allgather(&st->dist, &mine, sizeof mine, all, err);
  *ms = 0;
  for (int r = 0; s == GF_OK && r < st->world; r++)
    if (all[r] > *ms) *ms = all[r];
  free(all);
  return s;
}

/* The slowest rank's milliseconds per step of t under d: AUTO_WARMUP steps,
 * then AUTO_TIMED timed ones, each the run's K D updates and G update on
 * the batch of b. A candidate whose warm-up is already slower than
 * AUTO_CUTOFF x best_ms (0: no best yet) is not timed further: its
 * warm-up's time is its measure, *cut true. Every rank calls it with the
 * same d and best_ms. */
static gf_status time_steps(bench *b, trial *t, const gf_gan_dist *d,
                            double best_ms, double *ms, bool *cut,
                            gf_err *err) {
  *cut = false;
  train_state *st = b->st;
  const gf_model_config *m = &st->mcfg;
  GF_TRY(gf_gan_distribute(&t->gan, &t->ctx, d, err));
  int64_t shape[4] = {st->local_batch, m->image_channels, m->image_height,
                      m->image_width};
  int64_t nl = st->local_batch;
  gf_tensor real, lab;
  GF_TRY(gf_tensor_view(&real, b->images, GF_F32, GF_DEV_CPU, 4, shape, err));
  GF_TRY(gf_tensor_view(&lab, b->labels, GF_I32, GF_DEV_CPU, 1, &nl, err));
  int K = b->cfg->d_steps;
  double t0 = gf_mono_s();
  b->candidates++;
  for (int k = 0; k < AUTO_WARMUP + AUTO_TIMED; k++) {
    if (k == AUTO_WARMUP) {
      GF_TRY(slowest_ms(b, t0, AUTO_WARMUP, ms, err));
      if ((*cut = best_ms > 0 && *ms > AUTO_CUTOFF * best_ms)) return GF_OK;
      t0 = gf_mono_s();
    }
    for (int j = 0; j < K; j++) {
      if (m->num_classes > 0)
        GF_TRY(gf_gan_set_labels(&t->gan, &t->ctx, &lab, err));
      GF_TRY(gf_gan_d_step(&t->gan, &t->ctx, &real, NULL, b->cfg->seed,
                           (int64_t)k * K + j, st->sample0, NULL, err));
    }
    GF_TRY(gf_gan_g_step(&t->gan, &t->ctx, b->cfg->seed, (int64_t)k * K + K - 1,
                         NULL, err));
  }
  return slowest_ms(b, t0, AUTO_TIMED, ms, err);
}

/* The gf_gan_dist of the run (train_distribute) with bucket and comm. */
static gf_gan_dist run_dist(const bench *b, gf_comm *comm, int bucket_kb) {
  const train_state *st = b->st;
  gf_gan_dist d;
  memset(&d, 0, sizeof d);
  d.comm = st->world > 1 ? comm : NULL;
  d.micro = b->cfg->exact_reduce ? b->cfg->exact_shards / st->world
                                 : b->cfg->grad_accum;
  d.exact = b->cfg->exact_reduce;
  d.sync_bn = b->cfg->sync_bn;
  d.bucket_bytes = (size_t)bucket_kb * 1024;
  d.compress_bf16 = b->cfg->compress_bf16;
  return d;
}

/* One measure into the text: "key=value:ms", ">ms" for a candidate cut
 * after its warm-up (at least that slow). */
static void note(bench *b, const char *key, const char *value, double ms,
                 bool cut) {
  gf_strbuf_printf(&b->measured, "%s%s=%s:%s%.1f", b->measured.len ? "," : "",
                   key, value, cut ? ">" : "", ms);
}

/* A --threads value as a count: 0 is every online core. */
static int resolved_threads(int threads) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads > 0) return threads;
  return cores > 0 && cores <= 4096 ? (int)cores : 1;
}

/* The thread counts to try: 1, 2, 4, .. below the cores per rank, and
 * that count; the given --threads alone when it was given. */
static int thread_candidates(const train_state *st, const gf_launch_info *launch,
                             gf_comm *comm, int out[AUTO_MAX_THREADS]) {
  if (st->cfg->threads_set) {
    out[0] = st->cfg->threads;
    return 1;
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int local = comm ? gf_comm_local_world(comm)
                   : launch ? launch->local_world_size : 1;
  int per = (int)(cores > 0 ? cores : 1) / (local > 0 ? local : 1);
  if (per < 1) per = 1;
  int n = 0;
  for (int t = 1; t < per && n < AUTO_MAX_THREADS - 1; t *= 2) out[n++] = t;
  out[n++] = per;
  return n;
}

/* Measures the candidates of every dimension left free, greedily; fills
 * c (its measured text too). Every rank calls it; comm is the job's. */
static gf_status measure(bench *b, gf_train_config *tuned,
                         const gf_launch_info *launch, gf_comm *comm,
                         train_auto_choice *c, gf_err *err) {
  train_state *st = b->st;
  c->threads = tuned->threads;
  c->bucket_kb = tuned->bucket_kb;
  c->allreduce = tuned->exact_reduce ? GF_ALLREDUCE_TREE : tuned->allreduce;
  int ts[AUTO_MAX_THREADS];
  int nt = thread_candidates(st, launch, comm, ts);
  if (nt == 1 && st->world == 1) { /* nothing left to choose */
    c->threads = resolved_threads(ts[0]);
    return gf_format(c->measured, sizeof c->measured, err, "", "-");
  }
  GF_TRY(read_batch(b, err));
  trial *best = NULL;
  double best_ms = 0;
  gf_status s = GF_OK;
  char word[32];
  for (int i = 0; s == GF_OK && i < nt; i++) {
    trial *t = NULL;
    s = trial_new(&t, st, ts[i], err);
    double ms = 0;
    gf_gan_dist d = run_dist(b, comm, tuned->bucket_kb);
    bool cut = false;
    if (s == GF_OK && nt > 1)
      s = time_steps(b, t, &d, best_ms, &ms, &cut, err);
    if (s != GF_OK) {
      trial_free(t);
      break;
    }
    if (nt > 1) {
      GF_FORMAT_FITS(word, sizeof word, "%d", t->threads);
      note(b, "threads", word, ms, cut);
    }
    if (i == 0 || ms < best_ms) {
      trial_free(best);
      best = t, best_ms = ms;
    } else {
      trial_free(t);
    }
  }
  if (s == GF_OK) c->threads = best->threads;
  bool many = st->world > 1;
  if (s == GF_OK && many && !tuned->bucket_set) {
    static const int kbs[] = {256, 1024, 4096};
    double bms = 0;
    for (int i = 0; s == GF_OK && i < 3; i++) {
      gf_gan_dist d = run_dist(b, comm, kbs[i]);
      double ms = 0;
      bool cut = false;
      s = time_steps(b, best, &d, bms, &ms, &cut, err);
      GF_FORMAT_FITS(word, sizeof word, "%d", kbs[i]);
      if (s == GF_OK) note(b, "bucket_kb", word, ms, cut);
      if (s == GF_OK && (i == 0 || ms < bms)) bms = ms, c->bucket_kb = kbs[i];
    }
  }
  if (s == GF_OK && many && !tuned->allreduce_set && !tuned->exact_reduce &&
      gf_comm_backend_of(comm) == GF_COMM_MPI) {
    bool pow2 = (st->world & (st->world - 1)) == 0;
    double ams = 0;
    int first = 1;
    for (int a = 0; s == GF_OK && a <= GF_ALLREDUCE_TREE; a++) {
      if (a == GF_ALLREDUCE_TREE && !pow2) continue;
      gf_comm *ac = comm, *made = NULL;
      if (a != (int)gf_comm_algo_of(comm)) {
        gf_comm_config cc = {GF_COMM_MPI, (gf_allreduce_algo)a,
                             tuned->comm_timeout, NULL, launch};
        s = gf_comm_init(&made, &cc, err);
        ac = made;
      }
      gf_gan_dist d = run_dist(b, ac, c->bucket_kb);
      double ms = 0;
      bool cut = false;
      if (s == GF_OK) s = time_steps(b, best, &d, ams, &ms, &cut, err);
      /* back to the job's comm before this one goes */
      gf_gan_dist d0 = run_dist(b, comm, c->bucket_kb);
      gf_err e2;
      if (gf_gan_distribute(&best->gan, &best->ctx, &d0, &e2) != GF_OK &&
          s == GF_OK) {
        s = e2.code;
        if (err) *err = e2;
      }
      gf_comm_free(made);
      if (s == GF_OK)
        note(b, "allreduce", gf_allreduce_algo_name((gf_allreduce_algo)a), ms,
             cut);
      if (s == GF_OK && (first || ms < ams)) ams = ms, c->allreduce = a;
      first = 0;
    }
  }
  trial_free(best);
  if (s != GF_OK) return s;
  if (b->measured.failed)
    return gf_fail(err, GF_ENOMEM, "out of memory");
  return gf_format(c->measured, sizeof c->measured, err, "--auto's measures",
                   "%s", b->measured.len ? b->measured.data : "-");
}

/* ---- the run's choice --------------------------------------------------- */

/* What rank 0 found, for every rank. */
enum { AUTO_NONE = 0, AUTO_MEASURE = 1, AUTO_REUSE = 2, AUTO_KEEP = 3 };
typedef struct auto_plan {
  int32_t mode;
  train_auto_choice c;
  char path[GF_TRAIN_PATH_MAX]; /* the file read or to write */
} auto_plan;

/* Rank 0: the plan from the start train_choose_start found. */
static gf_status plan_of(train_state *st, auto_plan *p, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  GF_TRY(gf_path_join(p->path, sizeof p->path, cfg->checkpoint_dir, "auto",
                      err));
  bool continuing = st->ckpt_path[0] || st->run_id[0];
  if (!continuing) {
    p->mode = cfg->autotune ? AUTO_MEASURE : AUTO_NONE;
    return GF_OK;
  }
  /* --resume PATH: the choice next to that checkpoint, else in the dir */
  if (cfg->resume == GF_RESUME_PATH) {
    char near[GF_TRAIN_PATH_MAX];
    const char *slash = strrchr(st->ckpt_path, '/');
    if (slash && gf_format(near, sizeof near, NULL, "", "%.*s/auto",
                           (int)(slash - st->ckpt_path), st->ckpt_path) ==
                     GF_OK &&
        access(near, F_OK) == 0)
      memcpy(p->path, near, sizeof near);
  }
  char *buf = NULL;
  size_t n = 0;
  gf_err e;
  gf_status s = gf_read_file(p->path, AUTO_FILE_MAX, &buf, &n, &e);
  if (s == GF_ENOTFOUND) {
    p->mode = cfg->autotune ? AUTO_KEEP : AUTO_NONE;
    return GF_OK;
  }
  char why[sizeof e.msg]; /* what is wrong, naming the file */
  if (s == GF_OK) {
    s = train_auto_parse(buf, n, &p->c, &e);
    free(buf);
    if (s != GF_OK) gf_note(why, sizeof why, "%s: %s", p->path, e.msg);
  } else {
    memcpy(why, e.msg, sizeof why);
  }
  if (s == GF_OK) {
    p->mode = AUTO_REUSE;
    return GF_OK;
  }
  if (s == GF_EFORMAT)
    return gf_fail(err, GF_EINVAL, "%s: the run's --auto choice cannot be "
                   "read; give its values (the run's params auto_threads, "
                   "auto_bucket_kb, auto_allreduce) as --threads, "
                   "--bucket-kb and --allreduce and remove the file", why);
  return gf_fail(err, s, "%s", why);
}

/* Rebuilds st->ctx for tuned's thread count (in place: st->dist points to
 * it). */
static gf_status remake_ctx(train_state *st, const gf_launch_info *launch,
                            gf_err *err) {
  if (st->ctx_ok) gf_ctx_free(&st->ctx);
  st->ctx_ok = false;
  return train_make_ctx(st, launch, err);
}

gf_status train_auto_setup(train_state *st, gf_train_config *tuned,
                           const gf_launch_info *launch, gf_comm **comm,
                           gf_comm **owned, gf_err *err) {
  *owned = NULL;
  auto_plan *p = calloc(1, sizeof *p);
  if (!p) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = st->rank == 0 ? plan_of(st, p, err) : GF_OK;
  s = gf_dist_agree(&st->dist, s, "reading the --auto choice", err);
  if (s == GF_OK) s = gf_dist_bcast(&st->dist, p, sizeof *p, err);
  if (s != GF_OK || p->mode == AUTO_NONE) goto done;
  if (p->mode == AUTO_KEEP) {
    if (st->rank == 0)
      gf_logf(st->log, GF_LOG_WARN, "ganflow-train: --auto: the run being "
              "continued was not tuned (no %s): it keeps --threads %d, "
              "--bucket-kb %d and --allreduce %s", p->path, tuned->threads,
              tuned->bucket_kb, gf_allreduce_algo_name(tuned->allreduce));
    goto done;
  }
  double t0 = gf_mono_s();
  bench b;
  memset(&b, 0, sizeof b);
  b.st = st;
  b.cfg = tuned;
  gf_strbuf_init(&b.measured);
  if (p->mode == AUTO_MEASURE) {
    s = measure(&b, tuned, launch, *comm, &p->c, err);
    s = gf_dist_agree(&st->dist, s, "--auto's measurement", err);
    /* rank 0 decides (every rank saw the same times) */
    if (s == GF_OK) s = gf_dist_bcast(&st->dist, &p->c, sizeof p->c, err);
  }
  free(b.images);
  free(b.labels);
  gf_strbuf_free(&b.measured);
  if (s != GF_OK) goto done;
  /* A flag given now wins over the stored choice (the bits may differ). */
  int th = tuned->threads_set ? tuned->threads : p->c.threads;
  int kb = tuned->bucket_set ? tuned->bucket_kb : p->c.bucket_kb;
  int al = tuned->allreduce_set ? tuned->allreduce : p->c.allreduce;
  if (p->mode == AUTO_REUSE && st->rank == 0 &&
      (resolved_threads(th) != p->c.threads || kb != p->c.bucket_kb ||
       (al != p->c.allreduce && !tuned->exact_reduce)))
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: --threads, --bucket-kb or "
            "--allreduce given now differ from the run's choice in %s: the "
            "steps from here may differ from an uninterrupted run's in the "
            "last bits", p->path);
  bool new_threads = th != tuned->threads;
  tuned->threads = th;
  tuned->bucket_kb = kb;
  if (!tuned->exact_reduce) tuned->allreduce = al;
  s = gf_format(tuned->auto_measured, sizeof tuned->auto_measured, err,
                "--auto's measures", "%s", p->c.measured);
  if (s != GF_OK) goto done;
  if (new_threads && (s = remake_ctx(st, launch, err)) != GF_OK) goto done;
  gf_comm *c = *comm;
  if (st->world > 1 && !tuned->exact_reduce && c &&
      (int)gf_comm_algo_of(c) != tuned->allreduce) {
    bool pow2 = (st->world & (st->world - 1)) == 0;
    if (gf_comm_backend_of(c) != GF_COMM_MPI ||
        (tuned->allreduce == GF_ALLREDUCE_TREE && !pow2)) {
      if (st->rank == 0)
        gf_logf(st->log, GF_LOG_WARN, "ganflow-train: --auto: the run's "
                "all-reduce %s cannot run on this job's %s engine at %d "
                "ranks; it keeps %s", gf_allreduce_algo_name(tuned->allreduce),
                gf_comm_backend_name(gf_comm_backend_of(c)), st->world,
                gf_allreduce_algo_name(gf_comm_algo_of(c)));
      tuned->allreduce = (int)gf_comm_algo_of(c);
    } else {
      gf_comm_config cc = {GF_COMM_MPI, (gf_allreduce_algo)tuned->allreduce,
                           tuned->comm_timeout, NULL, launch};
      if ((s = gf_comm_init(owned, &cc, err)) != GF_OK) goto done;
      *comm = *owned;
      gf_dist_init(&st->dist, *comm, &st->ctx);
    }
  }
  if (p->mode == AUTO_MEASURE && st->rank == 0) {
    char text[AUTO_FILE_MAX];
    s = train_auto_format(&p->c, text, sizeof text, err);
    if (s == GF_OK) s = gf_atomic_write_file(p->path, text, strlen(text), err);
  }
  if (st->rank == 0 && s == GF_OK) {
    const char *algo = tuned->exact_reduce
                           ? "tree" : gf_allreduce_algo_name(tuned->allreduce);
    if (p->mode == AUTO_MEASURE)
      gf_logf(st->log, GF_LOG_INFO, "ganflow-train: --auto chose --threads %d "
              "--bucket-kb %d --allreduce %s from %d timings in %.2f s (ms "
              "per step: %s)", tuned->threads, tuned->bucket_kb, algo,
              b.candidates, gf_mono_s() - t0, p->c.measured);
    else
      gf_logf(st->log, GF_LOG_INFO, "ganflow-train: --threads %d --bucket-kb "
              "%d --allreduce %s: the run's --auto choice, from %s",
              tuned->threads, tuned->bucket_kb, algo, p->path);
  }
done:
  s = gf_dist_agree(&st->dist, s, "applying the --auto choice", err);
  free(p);
  return s;
}
