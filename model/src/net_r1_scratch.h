/* net_r1_scratch.h - the R1 scratch a gf_net owns (net->r1): its layout,
 * made by net_r1.c's first gf_net_r1 and freed by gf_net_free. Private to
 * model/. */
#ifndef GF_NET_R1_SCRATCH_H
#define GF_NET_R1_SCRATCH_H

#include "net_layers.h"

/* The R1 scratch of one net, on its device, for net->max_batch samples:
 * one arena holding every buffer below. Carved once (lazily, at the first
 * gf_net_r1); contents are meaningful only during a call. */
struct gf_net_r1 {
  gf_arena arena;
  float *g[GF_NET_MAX_LAYERS + 1]; /* g[i] = g_i, [max_batch, in_numel of
                                      layer i] (g[L]: [max_batch, 1], the
                                      seed); an element-wise layer i aliases
                                      g[i] = g[i + 1] (its backward runs in
                                      place: nothing reads g_{i+1} later) */
  float *gbar[2];                  /* the sweep's ping-pong pair, each
                                      max_batch * (largest per-sample numel) */
  float *dw;                       /* SN layers: dP/dw_sn, the largest
                                      weight's numel */
  float *save;                     /* gbar at the current residual block's
                                      input (max_batch * largest block
                                      input numel) */
  float *mid, *sco;                /* the shortcut's intermediate and
                                      output of the sweep */
  float *one;                      /* [1, 1]: a dummy weight for the dot
                                      product of P (values unused) */
  float *dot;                      /* [1, 1]: sum g_0^2 (seeded by k) */
};

/* Sizes and carves the scratch of net (see struct gf_net_r1). Memory: the
 * returned struct and its arena are owned by the caller (net->r1, freed by
 * gf_net_free through gf_net_r1_free); NULL after a failure, with nothing
 * left allocated. */
gf_status gf_net_r1_alloc(gf_net *net, struct gf_net_r1 **out, gf_err *err);

#endif
