/* gan_dist.c - the seams of the distributed GAN step (gan_dist.h):
 * gradient buckets whose all-reduce overlaps the backward (as f32, or as
 * bf16 on the wire with compress_bf16), exact mode's
 * tree of micro-batch gradients and its replayed batch-norm statistics,
 * and the state broadcast and digest of gf/gan.h. */
#include <stdlib.h>
#include <string.h>

#include "gan_dist.h"
#include "gf/clock.h"
#include "gf/comm.h"
#include "gf/sha256.h"
#include "net_layers.h"

#define DEFAULT_BUCKET_BYTES ((size_t)1 << 20)

/* Layer of tensor t (the layer whose p_* names it). */
static int layer_of(const gf_net *net, int t) {
  for (int i = 0; i < net->n_layers; i++) {
    const gf_layer *l = &net->layers[i];
    if (l->p_w == t || l->p_b == t || l->p_gamma == t || l->p_beta == t) return i;
  }
  return 0;
}

static gf_status build_buckets(gf_grad_sync *s, size_t bucket_bytes, gf_err *err) {
  gf_net *net = s->net;
  const char *base = net->grads.base;
  s->n = 0;
  gf_grad_bucket *cur = NULL;
  /* Walk the trainable tensors last to first: the backward's order. */
  for (int t = net->n_tensors - 1; t >= 0; t--) {
    const gf_param *p = &net->tensors[t];
    if (!p->trainable) continue;
    size_t off = (size_t)((const char *)p->grad.data - base);
    size_t end = off + (size_t)gf_tensor_numel(&p->grad) * sizeof(float);
    if (!cur || cur->bytes >= bucket_bytes) {
      if (s->n == GF_GRAD_MAX_BUCKETS) { /* fold the rest into the last one */
        cur->bytes = cur->off + cur->bytes - off;
        cur->off = off;
        cur->min_layer = layer_of(net, t);
        continue;
      }
      cur = &s->b[s->n++];
      memset(cur, 0, sizeof *cur);
      cur->off = off;
      cur->bytes = end - off;
    } else {
      cur->bytes = cur->off + cur->bytes - off; /* grows downwards */
      cur->off = off;
    }
    cur->min_layer = layer_of(net, t);
  }
  if (s->n == 0) return gf_fail(err, GF_EINVAL, "gan: a network without parameters");
  return GF_OK;
}

static size_t bn_floats_of(const gf_net *net) {
  size_t n = 0;
  for (int i = 0; i < net->n_layers; i++)
    if (net->layers[i].kind == GF_L_BN) n += 2 * (size_t)net->layers[i].out[0];
  return n;
}

gf_status gf_grad_sync_new(gf_grad_sync **out, gf_net *net, struct gf_comm *comm,
                           const gf_gan_dist *d, int world, gf_err *err) {
  *out = NULL;
  if (d->compress_bf16 && d->exact)
    return gf_fail(err, GF_EINVAL, "gan: bf16 gradient compression rounds the sums; "
                   "exact mode keeps every bit (choose one)");
  gf_grad_sync *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  s->net = net;
  s->comm = comm;
  s->dtype = d->compress_bf16 ? GF_CDT_F32_AS_BF16 : GF_CDT_F32;
  gf_status st = build_buckets(s, d->bucket_bytes ? d->bucket_bytes : DEFAULT_BUCKET_BYTES, err);
  if (st == GF_OK && d->exact) {
    int levels = gf_tree_levels(d->micro);
    s->n_levels = levels; /* the last level stays in the grads arena */
    s->level_floats = net->grads.used / sizeof(float);
    s->passes = net->role == GF_NET_G ? 1 : 3;
    s->micro_total = d->micro * world;
    s->bn_floats = bn_floats_of(net);
    size_t nlog = (size_t)d->micro * (size_t)s->passes * s->bn_floats;
    if (levels) s->levels = malloc((size_t)levels * s->level_floats * sizeof(float));
    if (nlog) {
      s->bn_log = malloc(nlog * sizeof(float));
      s->bn_all = malloc(nlog * (size_t)world * sizeof(float));
    }
    if ((levels && !s->levels) || (nlog && (!s->bn_log || !s->bn_all)))
      st = gf_fail(err, GF_ENOMEM, "gan: out of memory for exact mode");
  }
  if (st != GF_OK) {
    gf_grad_sync_free(s);
    return st;
  }
  *out = s;
  return GF_OK;
}

void gf_grad_sync_free(gf_grad_sync *s) {
  if (!s) return;
  if (s->net && s->net->grad_hook_user == s) {
    s->net->grad_hook = NULL;
    s->net->grad_hook_user = NULL;
  }
  free(s->levels);
  free(s->bn_log);
  free(s->bn_all);
  free(s);
}

static gf_status start_bucket(gf_grad_sync *s, gf_grad_bucket *b, gf_err *err) {
  if (s->next == 0) s->t_first = gf_mono_s();
  GF_TRY(gf_comm_iallreduce(s->comm, (char *)s->net->grads.base + b->off, b->bytes / sizeof(float),
                            (gf_comm_dtype)s->dtype, GF_RED_SUM, &b->req, err));
  b->started = true;
  s->next++;
  s->stats.bytes += b->bytes;
  s->stats.buckets++;
  return GF_OK;
}

/* Progress for the started buckets (MPI moves data only inside calls). */
static gf_status poke(gf_grad_sync *s, gf_err *err) {
  for (int i = 0; i < s->next; i++) {
    gf_grad_bucket *b = &s->b[i];
    if (b->done) continue;
    int done = 0;
    GF_TRY(gf_comm_test(s->comm, b->req, &done, err));
    if (!done) break; /* the engine completes them in order anyway */
    b->done = true;
  }
  return GF_OK;
}

static gf_status hook(void *user, gf_net *net, int layer, gf_err *err) {
  (void)net;
  gf_grad_sync *s = user;
  while (s->next < s->n && s->b[s->next].min_layer >= layer)
    GF_TRY(start_bucket(s, &s->b[s->next], err));
  return s->next ? poke(s, err) : GF_OK;
}

void gf_grad_sync_arm(gf_grad_sync *s) {
  s->next = 0;
  for (int i = 0; i < s->n; i++) s->b[i].started = s->b[i].done = false;
  s->net->grad_hook = hook;
  s->net->grad_hook_user = s;
}

gf_status gf_grad_sync_finish(gf_grad_sync *s, gf_err *err) {
  s->net->grad_hook = NULL;
  s->net->grad_hook_user = NULL;
  double t_end = gf_mono_s(); /* the backward is over */
  while (s->next < s->n) GF_TRY(start_bucket(s, &s->b[s->next], err));
  /* Every request is waited on, also those poke() saw complete: the wait
   * is what releases the comm's handle. */
  for (int i = 0; i < s->n; i++) {
    gf_grad_bucket *b = &s->b[i];
    GF_TRY(gf_comm_wait(s->comm, b->req, err));
    b->done = true;
  }
  double t_done = gf_mono_s();
  s->stats.steps++;
  s->stats.allreduce_s += t_done - s->t_first;
  s->stats.exposed_s += t_done - (t_end > s->t_first ? t_end : s->t_first);
  return GF_OK;
}

/* ---- exact mode ------------------------------------------------------------ */

/* dst[i] = a[i] + b[i]: left subtree first, the tree's fixed order. */
static void add_into(float *dst, const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = a[i] + b[i];
}

void gf_tree_add(float *g, float *levels, size_t n, int k, int k_total) {
  /* A binary counter: while micro-batch k closes a subtree at level l, the
   * finished left half waits in levels[l]. */
  int l = 0;
  for (int kk = k; kk & 1; kk >>= 1, l++) add_into(g, levels + (size_t)l * n, g, n);
  if (k != k_total - 1) memcpy(levels + (size_t)l * n, g, n * sizeof(float));
}

gf_status gf_grad_tree_add(gf_grad_sync *s, int k, int k_total, gf_err *err) {
  if (s->net->grads.device != GF_DEV_CPU)
    return gf_fail(err, GF_EUNSUPPORTED, "gan: exact mode runs on the CPU backend only");
  gf_tree_add(s->net->grads.base, s->levels, s->level_floats, k, k_total);
  return GF_OK;
}

void gf_bn_log_record(gf_grad_sync *s, int k, int p) {
  if (!s->bn_log) return;
  float *dst = s->bn_log + ((size_t)k * (size_t)s->passes + (size_t)p) * s->bn_floats;
  const gf_net *net = s->net;
  for (int i = 0; i < net->n_layers; i++) {
    const gf_layer *l = &net->layers[i];
    if (l->kind != GF_L_BN) continue;
    size_t c = (size_t)l->out[0];
    memcpy(dst, l->save_mean, c * sizeof(float));
    memcpy(dst + c, l->save_var, c * sizeof(float));
    dst += 2 * c;
  }
}

/* One running-statistics update of every BN layer from record r. */
static void apply_record(gf_net *net, const float *r, int64_t samples) {
  const float mom = GF_BN_MOMENTUM;
  for (int i = 0; i < net->n_layers; i++) {
    const gf_layer *l = &net->layers[i];
    if (l->kind != GF_L_BN) continue;
    int64_t c = l->out[0];
    double m = (double)samples * (double)(l->out_numel / c);
    float *rm = net->tensors[l->p_rmean].value.data, *rv = net->tensors[l->p_rvar].value.data;
    float unbias = m > 1 ? (float)(m / (m - 1)) : 1.0f;
    for (int64_t j = 0; j < c; j++) {
      rm[j] = (1.0f - mom) * rm[j] + mom * r[j];
      rv[j] = (1.0f - mom) * rv[j] + mom * (r[c + j] * unbias);
    }
    r += 2 * c;
  }
}

gf_status gf_bn_log_replay(gf_grad_sync *s, int p0, int p1, gf_err *err) {
  if (!s->bn_log) return GF_OK;
  if (p0 < 0 || p1 > s->passes || p0 >= p1)
    return gf_fail(err, GF_EINVAL, "gan: replay of passes [%d, %d) of %d", p0, p1, s->passes);
  int world = s->comm ? gf_comm_world(s->comm) : 1;
  int kloc = s->micro_total / world;
  size_t rec = (size_t)s->passes * s->bn_floats, mine = (size_t)kloc * rec;
  if (s->comm)
    GF_TRY(gf_comm_allgather(s->comm, s->bn_log, mine * sizeof(float), s->bn_all, err));
  else
    memcpy(s->bn_all, s->bn_log, mine * sizeof(float));
  int64_t samples = s->net->fwd_batch; /* every micro-batch has this size */
  /* bn_all = [micro-batch g][pass][stats], g in global order. */
  for (int g = 0; g < s->micro_total; g++)
    for (int p = p0; p < p1; p++)
      apply_record(s->net, s->bn_all + (size_t)g * rec + (size_t)p * s->bn_floats, samples);
  return GF_OK;
}

/* ---- whole-state broadcast and digest -------------------------------------- */

gf_status gf_arena_bcast(struct gf_comm *c, gf_arena *a, gf_err *err) {
  if (!a->base || a->used == 0) return GF_OK;
  return gf_comm_broadcast(c, a->base, a->used, GF_CDT_U8, 0, err);
}

gf_status gf_gan_broadcast_state(gf_gan *gan, struct gf_comm *comm, gf_err *err) {
  if (!gan || !gan->g.layers || !comm) return gf_fail(err, GF_EINVAL, "gan: NULL argument");
  gf_net *nets[2] = {&gan->g, &gan->d};
  if (gan->g_ema.layers) {
    GF_TRY(gf_arena_bcast(comm, &gan->g_ema.params, err));
    GF_TRY(gf_arena_bcast(comm, &gan->g_ema.bn_stats, err));
  }
  for (int i = 0; i < 2; i++) {
    GF_TRY(gf_arena_bcast(comm, &nets[i]->params, err));
    GF_TRY(gf_arena_bcast(comm, &nets[i]->adam_m, err));
    GF_TRY(gf_arena_bcast(comm, &nets[i]->adam_v, err));
    GF_TRY(gf_arena_bcast(comm, &nets[i]->bn_stats, err));
  }
  /* The Adam step counts are host values: allgather takes host memory on
   * every backend (a device comm's broadcast would not), rank 0's win. */
  int world = gf_comm_world(comm);
  int64_t mine[2] = {gan->adam_step_g, gan->adam_step_d};
  int64_t *all = calloc((size_t)world, sizeof mine);
  if (!all) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  gf_status st = gf_comm_allgather(comm, mine, sizeof mine, all, err);
  if (st == GF_OK) {
    gan->adam_step_g = all[0];
    gan->adam_step_d = all[1];
  }
  free(all);
  return st;
}

gf_status gf_arena_digest(gf_sha256 *h, const gf_arena *a, gf_err *err) {
  if (!a->base || a->used == 0) return GF_OK;
  if (a->device == GF_DEV_CPU) return gf_sha256_update(h, a->base, a->used, err);
  void *tmp = malloc(a->used);
  if (!tmp) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  gf_tensor d, t;
  gf_status st = gf_arena_view_all(a, &d, err);
  d.device_index = a->device_index;
  if (st == GF_OK) st = gf_tensor_view(&t, tmp, GF_F32, GF_DEV_CPU, d.ndim, d.shape, err);
  if (st == GF_OK) st = gf_tensor_copy(&t, &d, err);
  if (st == GF_OK) st = gf_sha256_update(h, tmp, a->used, err);
  free(tmp);
  return st;
}

gf_status gf_gan_digest(const gf_gan *gan, bool with_bn_stats,
                        char hex[GF_SHA256_HEX_LEN + 1], gf_err *err) {
  if (!gan || !gan->g.layers) return gf_fail(err, GF_EINVAL, "gan: not built");
  gf_sha256 h;
  GF_TRY(gf_sha256_init(&h, err));
  const gf_net *nets[2] = {&gan->g, &gan->d};
  gf_status st = GF_OK;
  for (int i = 0; st == GF_OK && i < 2; i++) {
    st = gf_arena_digest(&h, &nets[i]->params, err);
    if (st == GF_OK) st = gf_arena_digest(&h, &nets[i]->adam_m, err);
    if (st == GF_OK) st = gf_arena_digest(&h, &nets[i]->adam_v, err);
    if (st == GF_OK && with_bn_stats) st = gf_arena_digest(&h, &nets[i]->bn_stats, err);
  }
  if (st == GF_OK && gan->g_ema.layers) st = gf_arena_digest(&h, &gan->g_ema.params, err);
  if (st == GF_OK && gan->g_ema.layers && with_bn_stats)
    st = gf_arena_digest(&h, &gan->g_ema.bn_stats, err);
  if (st != GF_OK) {
    gf_sha256_free(&h);
    return st;
  }
  return gf_sha256_final(&h, hex, err);
}
