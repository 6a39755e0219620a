/* net_r1_scratch.c - the R1 scratch of a net (net_r1_scratch.h): one
 * arena on the net's device, sized from its layers, carved into the
 * buffers net_r1.c's double backpropagation uses, and freed with the net.
 * Below both net.c (which frees it) and net_r1.c (which makes and uses
 * it), so neither calls into the other for it. */
#include <stdlib.h>

#include "net_r1_scratch.h"

void gf_net_r1_free(struct gf_net_r1 *r) {
  if (!r) return;
  gf_arena_free(&r->arena);
  free(r);
}

static size_t fbytes(int64_t n) { return gf_arena_slot_bytes((size_t)n * sizeof(float)); }

static gf_status carve(gf_arena *a, int64_t n, float **p, gf_err *err) {
  gf_tensor t;
  GF_TRY(gf_arena_tensor(a, &t, GF_F32, 1, &n, err));
  *p = t.data;
  return GF_OK;
}

gf_status gf_net_r1_alloc(gf_net *net, struct gf_net_r1 **out, gf_err *err) {
  *out = NULL;
  struct gf_net_r1 *r = calloc(1, sizeof *r);
  if (!r) return gf_fail(err, GF_ENOMEM, "net r1: out of memory");
  int L = net->n_layers;
  int64_t mb = net->max_batch, maxn = 1, max_w = 1, max_s = 1, max_m = 1, max_o = 1;
  size_t bytes = fbytes(mb) + 2 * fbytes(1);
  for (int i = 0; i < L; i++) {
    const gf_layer *l = &net->layers[i];
    if (!l->in_place) bytes += fbytes(mb * l->in_numel);
    if (l->in_numel > maxn) maxn = l->in_numel;
    if (l->out_numel > maxn) maxn = l->out_numel;
    if (l->kind == GF_L_RESADD) {
      if (l->skip_numel > max_s) max_s = l->skip_numel;
      if (l->mid_numel > max_m) max_m = l->mid_numel;
      if (l->out_numel > max_o) max_o = l->out_numel;
    }
    if (l->p_u >= 0) {
      int64_t wn = gf_tensor_numel(&net->tensors[l->p_w].value);
      if (wn > max_w) max_w = wn;
    }
  }
  bytes += 2 * fbytes(mb * maxn) + fbytes(max_w) + fbytes(mb * max_s) + fbytes(mb * max_m) +
           fbytes(mb * max_o);
  gf_status st = gf_arena_init_on(&r->arena, net->acts.device, net->acts.device_index, bytes, err);
  if (st == GF_OK) st = carve(&r->arena, mb, &r->g[L], err);
  for (int i = L - 1; st == GF_OK && i >= 0; i--) {
    const gf_layer *l = &net->layers[i];
    if (l->in_place) r->g[i] = r->g[i + 1];
    else st = carve(&r->arena, mb * l->in_numel, &r->g[i], err);
  }
  if (st == GF_OK) st = carve(&r->arena, mb * maxn, &r->gbar[0], err);
  if (st == GF_OK) st = carve(&r->arena, mb * maxn, &r->gbar[1], err);
  if (st == GF_OK) st = carve(&r->arena, max_w, &r->dw, err);
  if (st == GF_OK) st = carve(&r->arena, mb * max_s, &r->save, err);
  if (st == GF_OK) st = carve(&r->arena, mb * max_m, &r->mid, err);
  if (st == GF_OK) st = carve(&r->arena, mb * max_o, &r->sco, err);
  if (st == GF_OK) st = carve(&r->arena, 1, &r->one, err);
  if (st == GF_OK) st = carve(&r->arena, 1, &r->dot, err);
  if (st != GF_OK) {
    gf_net_r1_free(r);
    return st;
  }
  *out = r;
  return GF_OK;
}
