/* train_dist.c - the ranks of a ganflow-train job as its loop sees them;
 * see train_dist.h. */
#include "train_dist.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"

void gf_dist_init(gf_dist *d, gf_comm *comm, gf_ctx *ctx) {
  memset(d, 0, sizeof *d);
  d->comm = comm;
  d->rank = comm ? gf_comm_rank(comm) : 0;
  d->world = comm ? gf_comm_world(comm) : 1;
  d->ctx = ctx;
}

void gf_dist_free(gf_dist *d) {
  if (!d) return;
  gf_tensor_free(&d->stage);
}

static bool on_device(const gf_dist *d) { return d->comm && gf_comm_device_buffers(d->comm); }

/* A device view of `bytes` staging bytes (grown as needed). */
static gf_status stage_view(gf_dist *d, size_t bytes, gf_tensor *out, gf_err *err) {
  int64_t n = (int64_t)((bytes + 3) / 4);
  if (gf_tensor_numel(&d->stage) < n || !d->stage.data) {
    gf_tensor_free(&d->stage);
    GF_TRY(gf_tensor_init_on(&d->stage, GF_F32, d->ctx->device, d->ctx->device_index, 1, &n,
                             err));
  }
  GF_TRY(gf_tensor_view(out, d->stage.data, GF_F32, d->ctx->device, 1, &n, err));
  out->device_index = d->ctx->device_index;
  return GF_OK;
}

/* Host <-> staging copies of bytes (a multiple of 4 is copied; callers pass
 * sizes that are). */
static gf_status host_copy(gf_tensor *dev, void *host, size_t bytes, bool to_dev, gf_err *err) {
  int64_t n = (int64_t)(bytes / 4);
  if (n == 0) return GF_OK;
  gf_tensor h, dv = *dev;
  dv.shape[0] = n;
  GF_TRY(gf_tensor_view(&h, host, GF_F32, GF_DEV_CPU, 1, &n, err));
  return to_dev ? gf_tensor_copy(&dv, &h, err) : gf_tensor_copy(&h, &dv, err);
}

gf_status gf_dist_sum_f64(gf_dist *d, double *buf, int n, gf_err *err) {
  if (!d->comm || d->world == 1) return GF_OK;
  if (!on_device(d)) return gf_comm_allreduce(d->comm, buf, (size_t)n, GF_CDT_F64, GF_RED_SUM, err);
  gf_tensor t;
  size_t bytes = (size_t)n * sizeof(double);
  GF_TRY(stage_view(d, bytes, &t, err));
  GF_TRY(host_copy(&t, buf, bytes, true, err));
  GF_TRY(gf_comm_allreduce(d->comm, t.data, (size_t)n, GF_CDT_F64, GF_RED_SUM, err));
  return host_copy(&t, buf, bytes, false, err);
}

gf_status gf_dist_bcast(gf_dist *d, void *buf, size_t bytes, gf_err *err) {
  if (!d->comm || d->world == 1) return GF_OK;
  if (!on_device(d)) return gf_comm_broadcast(d->comm, buf, bytes, GF_CDT_U8, 0, err);
  /* A device comm broadcasts device memory only; its allgather takes host
   * memory, and these are a few bytes: rank 0's entry is the broadcast. */
  unsigned char *all = calloc((size_t)d->world, bytes);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status st = gf_comm_allgather(d->comm, buf, bytes, all, err);
  if (st == GF_OK) memcpy(buf, all, bytes);
  free(all);
  return st;
}

gf_status gf_dist_allgather(gf_dist *d, const void *mine, size_t bytes, void *all, gf_err *err) {
  if (!d->comm || d->world == 1) {
    memmove(all, mine, bytes);
    return GF_OK;
  }
  /* host memory on every backend: the nccl comm stages it itself */
  return gf_comm_allgather(d->comm, mine, bytes, all, err);
}

gf_status gf_dist_agree(gf_dist *d, gf_status mine, const char *phase, gf_err *err) {
  if (!d->comm || d->world == 1) return mine;
  int32_t *all = calloc((size_t)d->world, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  int32_t m = (int32_t)mine;
  gf_err cerr;
  gf_status st = gf_dist_allgather(d, &m, sizeof m, all, &cerr);
  if (st != GF_OK) {
    free(all);
    if (mine != GF_OK) return mine; /* keep the rank's own message */
    if (err) *err = cerr;
    return st;
  }
  gf_status first = GF_OK;
  int who = -1;
  for (int r = 0; r < d->world; r++)
    if (all[r] != GF_OK && who < 0) who = r, first = (gf_status)all[r];
  free(all);
  if (first == GF_OK || mine != GF_OK) return mine != GF_OK ? mine : GF_OK;
  return gf_fail(err, first, "rank %d failed while %s (its message is in its log)", who,
                 phase);
}

gf_status gf_dist_check_digest(gf_dist *d, const char *hex, int64_t step,
                               gf_err *err) {
  if (!d->comm || d->world == 1) return GF_OK;
  char mine[GF_SHA256_HEX_LEN + 4];
  memset(mine, 0, sizeof mine);
  GF_FORMAT_FITS(mine, sizeof mine, "%s", hex);
  char *all = calloc((size_t)d->world, sizeof mine);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status st = gf_dist_allgather(d, mine, sizeof mine, all, err);
  for (int r = 1; st == GF_OK && r < d->world; r++)
    if (memcmp(all, all + (size_t)r * sizeof mine, sizeof mine) != 0)
      st = gf_fail(err, GF_EINTEGRITY, "step %lld: rank %d's parameters differ from rank "
                   "0's (digest %.12s... vs %.12s...): the ranks diverged",
                   (long long)step, r, all + (size_t)r * sizeof mine, all);
  free(all);
  return st;
}

gf_status gf_dist_check_params(gf_dist *d, const gf_gan *gan, bool bn, int64_t step,
                               gf_err *err) {
  if (!d->comm || d->world == 1) return GF_OK;
  char mine[GF_SHA256_HEX_LEN + 1];
  GF_TRY(gf_gan_digest(gan, bn, mine, err));
  return gf_dist_check_digest(d, mine, step, err);
}

/* ---- relay ------------------------------------------------------------------ */

void gf_relay_init(gf_relay *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
}

void gf_relay_destroy(gf_relay *r) { pthread_mutex_destroy(&r->mu); }

void gf_relay_emit(void *user, const char *name, double value, int64_t step,
                   int64_t timestamp_ms) {
  gf_relay *r = user;
  pthread_mutex_lock(&r->mu);
  size_t len = strlen(name);
  if (r->pending.n < GF_RELAY_MAX && len < GF_RELAY_NAME) {
    gf_relay_entry *e = &r->pending.e[r->pending.n++];
    memcpy(e->name, name, len + 1);
    e->value = value;
    e->step = step;
    e->timestamp_ms = timestamp_ms;
  } else {
    r->pending.dropped++; /* more than one sample between exchanges */
  }
  pthread_mutex_unlock(&r->mu);
}

gf_status gf_relay_exchange(gf_relay *r, gf_dist *d, gf_relay_buf *out, gf_err *err) {
  gf_relay_buf mine;
  pthread_mutex_lock(&r->mu);
  mine = r->pending;
  memset(&r->pending, 0, sizeof r->pending);
  pthread_mutex_unlock(&r->mu);
  return gf_dist_allgather(d, &mine, sizeof mine, out, err);
}

void gf_relay_node_name(char *dst, size_t cap, const char *name, int rank) {
  const char *slash = strchr(name, '/');
  int n;
  if (slash) /* "system/x" -> "system/rank_<r>/x", "perf/x" likewise */
    n = snprintf(dst, cap, "%.*s/rank_%d/%s", (int)(slash - name), name, rank,
                 slash + 1);
  else
    n = snprintf(dst, cap, "rank_%d/%s", rank, name);
  assert(gf_fits(n, cap)); /* a relayed name and cap >= GF_RELAY_NODE_NAME */
  if (!gf_fits(n, cap)) dst[0] = '\0';
}
