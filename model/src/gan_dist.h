/* gan_dist.h - the seams of the distributed GAN step (private to
 * gf_model): bucketed, overlapped gradient all-reduce of one network, the
 * exact mode's tree of micro-batch gradients, and its log of micro-batch
 * batch-norm statistics. gan.c drives them; gan_dist.c implements them. */
#ifndef GF_GAN_DIST_H
#define GF_GAN_DIST_H

#include <stdbool.h>

#include "gf/gan.h"

#define GF_GRAD_MAX_BUCKETS 64

/* One network's gradient sync. Buckets are ranges of the grads arena in
 * backward order (the last layers' tensors first). */
typedef struct gf_grad_bucket {
  size_t off, bytes;  /* range of the grads arena */
  int min_layer;      /* lowest layer with a tensor in it: the bucket is
                         complete once that layer's backward has run */
  int req;            /* comm request while started */
  bool started, done;
} gf_grad_bucket;

typedef struct gf_grad_sync {
  gf_net *net;              /* borrowed */
  struct gf_comm *comm;     /* borrowed */
  int dtype;                /* gf_comm_dtype of the buckets' all-reduce:
                               F32, or F32_AS_BF16 (compress_bf16) */
  gf_grad_bucket b[GF_GRAD_MAX_BUCKETS];
  int n;
  int next;                 /* first bucket not started (start in order) */
  double t_first;           /* monotonic seconds the first bucket started */
  gf_gan_sync_stats stats;
  /* exact mode: tree levels of the grads arena (CPU memory) */
  float *levels;            /* owned; (n_levels) x floats_per_level */
  int n_levels;
  size_t level_floats;
  /* exact mode: batch-norm statistics of each (micro-batch, pass) */
  float *bn_log;            /* owned; micro_total x passes x bn_floats */
  float *bn_all;            /* owned; the same gathered from every rank */
  size_t bn_floats;         /* 2 x channels over the net's BN layers */
  int passes;               /* train forwards per micro-batch (G 1, D 3) */
  int micro_total;          /* micro-batches of the global batch */
} gf_grad_sync;

/* Builds the buckets of net's grads arena (bucket_bytes each, cut at
 * tensor boundaries) and, for exact mode, the tree levels and the BN log.
 * *out owned by the caller: gf_grad_sync_free. */
gf_status gf_grad_sync_new(gf_grad_sync **out, gf_net *net,
                           struct gf_comm *comm, const gf_gan_dist *d,
                           int world, gf_err *err);
void gf_grad_sync_free(gf_grad_sync *s);

/* Arms the hook for the backward that produces the final gradients: each
 * bucket's all-reduce starts when the backward passes its lowest layer. */
void gf_grad_sync_arm(gf_grad_sync *s);
/* Starts what is left, waits for every bucket, disarms the hook. */
gf_status gf_grad_sync_finish(gf_grad_sync *s, gf_err *err);

/* Exact mode: micro-batch k (0-based, of k_total on this rank) has left
 * its gradient in the grads arena; add it into the tree. After the last
 * one the arena holds the tree sum of all of them. */
gf_status gf_grad_tree_add(gf_grad_sync *s, int k, int k_total,
                           gf_err *err);

/* Exact mode: records the batch statistics of net's BN layers after a
 * train forward of global micro-batch g, pass p. */
void gf_bn_log_record(gf_grad_sync *s, int g, int p);
/* Exact mode: gathers every rank's log and applies the running-statistic
 * updates of passes [p0, p1) in the order one rank running every
 * micro-batch in turn would: for each micro-batch g, passes p0 .. p1 - 1.
 * The D step replays G's pass 0 and D's passes 0 and 1; the G step D's
 * pass 2. */
gf_status gf_bn_log_replay(gf_grad_sync *s, int p0, int p1, gf_err *err);

/* ---- helpers shared with sg2_dist.c --------------------------------------- */

/* Exact mode's counts: powers of two (micro-batches, rounds, ranks). */
static inline bool gf_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
/* The levels gf_tree_add keeps for k_total leaves: log2 of k_total. */
static inline int gf_tree_levels(int k_total) {
  int l = 0;
  while ((1 << l) < k_total) l++;
  return l;
}

/* Exact mode's binary tree over k_total micro-batch gradients (k_total a
 * power of two): micro-batch k's n floats are in g; levels (log2 k_total
 * rows of n floats, the caller's) keep the finished left halves. After
 * the last one g holds ((g0 + g1) + (g2 + g3)) ... in that fixed order. */
void gf_tree_add(float *g, float *levels, size_t n, int k, int k_total);
/* Broadcast of rank 0's arena bytes (U8) to every rank. */
gf_status gf_arena_bcast(struct gf_comm *c, gf_arena *a, gf_err *err);
struct gf_sha256;
/* The arena's bytes into h (a device arena through a host copy). */
gf_status gf_arena_digest(struct gf_sha256 *h, const gf_arena *a, gf_err *err);

#endif
