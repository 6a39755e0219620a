/* sg2_dist.c - gf_sg2_gan at several ranks (gf/sg2_gan.h): the rounds'
 * gradient tree of exact mode, the all-reduce before each Adam step, the
 * gathered step reports and ADA signs, w_avg's logged updates replayed in
 * one rank's order, and the state's broadcast and digest. (The
 * path-length running mean of each global round is sg2_gan_reg.c's.) */
#include <stdlib.h>
#include <string.h>

#include "gan_dist.h"
#include "gf/comm.h"
#include "gf/sha256.h"
#include "sg2_gan_internal.h"

static size_t grad_floats(const gf_sg2_net *net) {
  return net->grads.used / sizeof(float);
}

gf_accum sg2g_round_accum(const gf_sg2_gan *gan, int r) {
  return r == 0 || gan->dist.exact ? GF_OVERWRITE : GF_ACCUMULATE;
}

void sg2g_round_done(gf_sg2_gan *gan, gf_sg2_net *net, int r) {
  int rounds = sg2g_rounds(gan);
  if (!gan->dist.exact || rounds < 2) return;
  float *levels = net->role == GF_SG2_G ? gan->s->levels_g : gan->s->levels_d;
  gf_tree_add(net->grads.base, levels, grad_floats(net), r, rounds);
}

gf_status sg2g_reduce(gf_sg2_gan *gan, gf_sg2_net *net, gf_err *err) {
  if (gan->world < 2) return GF_OK;
  return gf_comm_allreduce(gan->dist.comm, net->grads.base, grad_floats(net),
                           GF_CDT_F32, GF_RED_SUM, err);
}

gf_status sg2g_w_avg(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  if (s->no_w_avg) return GF_OK;
  if (gan->world < 2) return gf_sg2_w_avg_update(&gan->g, ctx, err);
  if (s->wlog_n == s->wlog_cap)
    return gf_fail(err, GF_ESTATE, "sg2 gan: more than %d w_avg updates in "
                   "a step", s->wlog_cap);
  float *dst = s->wlog + (size_t)s->wlog_n * (size_t)gan->cfg.w_dim;
  GF_TRY(gf_sg2_w_avg_mean(&gan->g, ctx, dst, err));
  s->wlog_n++;
  return GF_OK;
}

gf_status sg2g_w_avg_replay(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  if (gan->world < 2) return GF_OK;
  int rounds = sg2g_rounds(gan);
  size_t wd = (size_t)gan->cfg.w_dim, cap = (size_t)s->wlog_cap;
  /* each phase that ran G logged one update per round, phase by phase */
  if (s->wlog_n % rounds != 0)
    return gf_fail(err, GF_ESTATE, "sg2 gan: %d w_avg updates over %d "
                   "rounds", s->wlog_n, rounds);
  GF_TRY(gf_comm_allgather(gan->dist.comm, s->wlog, cap * wd * sizeof(float),
                           s->wlog_all, err));
  int blocks = s->wlog_n / rounds;
  for (int b = 0; b < blocks; b++)
    for (int q = 0; q < gan->world; q++)
      for (int r = 0; r < rounds; r++) {
        const float *m =
            s->wlog_all + ((size_t)q * cap + (size_t)(b * rounds + r)) * wd;
        GF_TRY(gf_sg2_w_avg_apply(&gan->g, ctx, m, err));
      }
  return GF_OK;
}

gf_status sg2g_gather_stats(gf_sg2_gan *gan, double *sums, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  int rounds = sg2g_rounds(gan);
  /* a rank's record: its rounds' sums, then its ADA signs */
  size_t per = (size_t)rounds * SG2G_NSTAT, stride = per + 2;
  memset(sums, 0, SG2G_NSTAT * sizeof *sums);
  const double *all = s->stats;
  int world = gan->world;
  if (world > 1) {
    /* this rank's rounds, then its ADA signs (whole numbers: any order of
     * their sum is exact) */
    s->stats[per] = gan->sign_sum;
    s->stats[per + 1] = (double)gan->sign_count;
    GF_TRY(gf_comm_allgather(gan->dist.comm, s->stats,
                             stride * sizeof(double), s->stats_all, err));
    all = s->stats_all;
    gan->sign_sum = 0.0;
    gan->sign_count = 0;
    for (int q = 0; q < world; q++) {
      gan->sign_sum += all[(size_t)q * stride + per];
      gan->sign_count += (int64_t)all[(size_t)q * stride + per + 1];
    }
  }
  /* in the global rounds' order, from 0, as one rank adds its rounds */
  for (int q = 0; q < world; q++)
    for (size_t i = 0; i < per; i++)
      sums[i % SG2G_NSTAT] += all[(size_t)q * stride + i];
  return GF_OK;
}

void sg2g_dist_free(gf_sg2_gan_scratch *s) {
  if (!s) return;
  free(s->levels_g);
  free(s->levels_d);
  free(s->wlog);
  free(s->wlog_all);
  free(s->stats_all);
  free(s->pl_len);
  free(s->pl_len_all);
  free(s->pl_seq);
  s->levels_g = s->levels_d = s->wlog = s->wlog_all = s->pl_seq = NULL;
  s->stats_all = s->pl_len = s->pl_len_all = NULL;
  s->levels_n = 0;
  s->wlog_n = s->wlog_cap = 0;
  s->pl_seq_valid = s->no_w_avg = false;
}

static gf_status check_dist(const gf_sg2_gan *gan, const gf_ctx *ctx,
                            const gf_sg2_gan_dist *d, int world,
                            gf_err *err) {
  int rounds = sg2g_rounds(gan);
  if (d->sample_base < 0 || d->sample_base % gan->max_batch != 0)
    return gf_fail(err, GF_EINVAL, "sg2 gan: sample_base %lld is not a "
                   "multiple of the round size %d", (long long)d->sample_base,
                   gan->max_batch);
  if (world > 1 && gan->hp.pl_weight > 0 && gan->hp.g_reg_interval == 0)
    return gf_fail(err, GF_EUNSUPPORTED, "sg2 gan: path length without a "
                   "lazy interval ('Gboth') runs on one rank only");
  if (world > 1) {
    bool dev = gan->g.grads.device != GF_DEV_CPU;
    if (dev != (gf_comm_device_buffers(d->comm) != 0))
      return gf_fail(err, GF_EUNSUPPORTED, "sg2 gan: the nets live in %s "
                     "memory, the comm's %s engine takes %s buffers",
                     dev ? "device" : "host",
                     gf_comm_backend_name(gf_comm_backend_of(d->comm)),
                     dev ? "host" : "device");
  }
  if (!d->exact) return GF_OK;
  if (!gf_pow2(rounds) || !gf_pow2(world))
    return gf_fail(err, GF_EINVAL, "sg2 gan: exact mode needs power-of-two "
                   "rounds per rank (%d) and ranks (%d)", rounds, world);
  if (ctx->device != GF_DEV_CPU)
    return gf_fail(err, GF_EUNSUPPORTED, "sg2 gan: exact mode runs on the "
                   "CPU backend only");
  if (world > 1 && gf_comm_algo_of(d->comm) != GF_ALLREDUCE_TREE)
    return gf_fail(err, GF_EINVAL, "sg2 gan: exact mode needs the comm's "
                   "\"tree\" all-reduce, not \"%s\"",
                   gf_allreduce_algo_name(gf_comm_algo_of(d->comm)));
  return GF_OK;
}

static void *alloc_n(size_t n, size_t size, bool *ok) {
  void *p = calloc(n ? n : 1, size);
  if (!p) *ok = false;
  return p;
}

gf_status gf_sg2_gan_distribute(gf_sg2_gan *gan, gf_ctx *ctx,
                                const gf_sg2_gan_dist *d, gf_err *err) {
  if (!gan || !gan->s || !ctx)
    return gf_fail(err, GF_EINVAL, "sg2 gan: NULL argument or gan not built");
  gf_sg2_gan_scratch *s = gan->s;
  sg2g_dist_free(s);
  memset(&gan->dist, 0, sizeof gan->dist);
  gan->world = 1;
  if (!d) return GF_OK;
  int world = d->comm ? gf_comm_world(d->comm) : 1;
  GF_TRY(check_dist(gan, ctx, d, world, err));
  int rounds = sg2g_rounds(gan);
  bool ok = true;
  if (d->exact && rounds > 1) {
    s->levels_n = (size_t)gf_tree_levels(rounds);
    s->levels_g = alloc_n(s->levels_n * grad_floats(&gan->g), sizeof(float),
                          &ok);
    s->levels_d = alloc_n(s->levels_n * grad_floats(&gan->d), sizeof(float),
                          &ok);
  }
  if (world > 1) {
    size_t wd = (size_t)gan->cfg.w_dim;
    s->wlog_cap = 3 * rounds; /* Gmain, Greg and Dmain run G */
    s->wlog = alloc_n((size_t)s->wlog_cap * wd, sizeof(float), &ok);
    s->wlog_all =
        alloc_n((size_t)world * (size_t)s->wlog_cap * wd, sizeof(float), &ok);
    size_t stride = (size_t)rounds * SG2G_NSTAT + 2; /* sg2g_gather_stats */
    s->stats_all = alloc_n((size_t)world * stride, sizeof(double), &ok);
    s->pl_len = alloc_n((size_t)rounds, sizeof(double), &ok);
    s->pl_len_all = alloc_n((size_t)world * rounds, sizeof(double), &ok);
    s->pl_seq = alloc_n((size_t)world * rounds + 1, sizeof(float), &ok);
  }
  if (!ok) {
    sg2g_dist_free(s);
    return gf_fail(err, GF_ENOMEM, "sg2 gan: distributed scratch");
  }
  gan->dist = *d;
  gan->world = world;
  return GF_OK;
}

/* ---- the state at once ---------------------------------------------- */

/* The host scalars of the state, in one record. */
typedef struct sg2_scalars {
  int64_t step, cur_nimg, adam_step_g, adam_step_d, sign_count;
  double rt, sign_sum;
  float pl_mean, p;
} sg2_scalars;

static sg2_scalars scalars_of(const gf_sg2_gan *gan) {
  sg2_scalars v;
  memset(&v, 0, sizeof v); /* padding too: the digest reads every byte */
  v.step = gan->step;
  v.cur_nimg = gan->cur_nimg;
  v.adam_step_g = gan->adam_step_g;
  v.adam_step_d = gan->adam_step_d;
  v.sign_count = gan->ctl.sign_count;
  v.rt = gan->ctl.rt;
  v.sign_sum = gan->ctl.sign_sum;
  v.pl_mean = gan->pl_mean;
  v.p = gan->ctl.p;
  return v;
}

/* The arenas of the state: G's and D's with their moments, G_ema's. */
static int state_arenas(gf_sg2_gan *gan, gf_arena **out) {
  int n = 0;
  gf_sg2_net *nets[3] = {&gan->g, &gan->d, &gan->g_ema};
  for (int i = 0; i < 3; i++) {
    out[n++] = &nets[i]->params;
    out[n++] = &nets[i]->buffers;
    if (i < 2) {
      out[n++] = &nets[i]->adam_m;
      out[n++] = &nets[i]->adam_v;
    }
  }
  return n;
}

gf_status gf_sg2_gan_broadcast(gf_sg2_gan *gan, struct gf_comm *comm,
                               gf_err *err) {
  if (!gan || !gan->s || !comm)
    return gf_fail(err, GF_EINVAL, "sg2 gan: NULL argument or gan not built");
  gf_arena *a[10];
  int n = state_arenas(gan, a);
  for (int i = 0; i < n; i++) GF_TRY(gf_arena_bcast(comm, a[i], err));
  /* host values: allgather takes host memory on every engine (a device
   * comm's broadcast would not); rank 0's win */
  int world = gf_comm_world(comm);
  sg2_scalars mine = scalars_of(gan);
  sg2_scalars *all = calloc((size_t)world, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "sg2 gan: out of memory");
  gf_status st = gf_comm_allgather(comm, &mine, sizeof mine, all, err);
  if (st == GF_OK) {
    const sg2_scalars *v = &all[0];
    gan->step = v->step;
    gan->cur_nimg = v->cur_nimg;
    gan->adam_step_g = v->adam_step_g;
    gan->adam_step_d = v->adam_step_d;
    gan->ctl.sign_count = v->sign_count;
    gan->ctl.rt = v->rt;
    gan->ctl.sign_sum = v->sign_sum;
    gan->pl_mean = v->pl_mean;
    gan->ctl.p = v->p;
  }
  free(all);
  return st;
}

gf_status gf_sg2_gan_digest(const gf_sg2_gan *gan, char *hex65,
                            gf_err *err) {
  if (!gan || !gan->s || !hex65)
    return gf_fail(err, GF_EINVAL, "sg2 gan: NULL argument or gan not built");
  gf_arena *a[10];
  int n = state_arenas((gf_sg2_gan *)gan, a); /* read only */
  gf_sha256 h;
  GF_TRY(gf_sha256_init(&h, err));
  gf_status st = GF_OK;
  for (int i = 0; st == GF_OK && i < n; i++) st = gf_arena_digest(&h, a[i], err);
  sg2_scalars v = scalars_of(gan);
  if (st == GF_OK) st = gf_sha256_update(&h, &v, sizeof v, err);
  if (st != GF_OK) {
    gf_sha256_free(&h);
    return st;
  }
  return gf_sha256_final(&h, hex65, err);
}
