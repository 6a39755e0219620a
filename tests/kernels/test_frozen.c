/* test_frozen.c - frozen inference (gf_ctx.frozen_batch) on the CPU
 * backend: the forwards a generator runs (linear, transposed conv, conv),
 * on random data, at every batch size 1..20, with the ctx's default
 * (blocked) layouts and with plain ones:
 *   - batch invariance: row r of a pass of n rows has the very bits of the
 *     same row run alone, whatever n and r;
 *   - the right function: the frozen result against the ordinary forward
 *     of a second ctx at batch n (atol 1e-5 + rtol 1e-4: the two sum in
 *     different orders);
 *   - frozen weights: a forward on a new weight buffer (another address)
 *     uses the new values, and the first buffer's answers are unchanged;
 *   - the layer shapes of dcgan28's G (a 1x1 input, 256 and 1 output
 *     channels), odd sizes (K, O not multiples of any vector width) and a
 *     bias;
 *   - all of it again with frozen_bf16 (convolutions in bfloat16, within
 *     6e-2 + 2e-2 |y| of the f32 forward) where gf_ctx_bf16_check says
 *     the processor has bf16, and that check's refusal with its reason
 *     where not; likewise in int8 (calibrated on the rows first, within
 *     8e-2 + 2e-2 |y|, int8 really used on dcgan28's big layer, weights
 *     that were never calibrated refused) where gf_ctx_int8_check says the
 *     processor has VNNI;
 *   - a shared store (gf_ctx.frozen_store): four ctxs pointing at one,
 *     each on its own thread, run a layer's first forward at the same
 *     time and get the bits a ctx of its own gets; the store holds one
 *     laid-out copy (the bytes one ctx alone makes), and in int8 the
 *     ranges one ctx calibrated serve them all.
 * Run twice by CTest: as is, and with GF_ONEDNN_LAYOUT=plain. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_util.h"

#define MAXN 20

typedef enum { K_LINEAR, K_DECONV, K_CONV } kind;

typedef struct layer {
  const char *name;
  kind k;
  int64_t cin, cout, h, w, kh; /* linear: cin -> cout, h = w = kh = 1 */
  gf_conv_params p;
  int bias;
} layer;

static gf_status fwd(gf_ctx *ctx, const layer *L, const gf_tensor *x,
                     const gf_tensor *w, const gf_tensor *b, gf_tensor *y,
                     gf_err *e) {
  switch (L->k) {
  case K_LINEAR: return gf_linear_fwd(ctx, x, w, b, y, e);
  case K_DECONV: return gf_deconv2d_fwd(ctx, x, w, b, &L->p, y, e);
  default: return gf_conv2d_fwd(ctx, x, w, b, &L->p, y, e);
  }
}

static void out_hw(const layer *L, int64_t *oh, int64_t *ow) {
  const gf_conv_params *p = &L->p;
  if (L->k == K_LINEAR) *oh = *ow = 1;
  else if (L->k == K_DECONV) {
    *oh = (L->h - 1) * p->stride[0] - 2 * p->pad[0] + L->kh;
    *ow = (L->w - 1) * p->stride[1] - 2 * p->pad[1] + L->kh;
  } else {
    *oh = (L->h + 2 * p->pad[0] - L->kh) / p->stride[0] + 1;
    *ow = (L->w + 2 * p->pad[1] - L->kh) / p->stride[1] + 1;
  }
}

/* x and y of n rows: views of the first n rows of xs and ys. */
static void rows_view(const layer *L, gf_tensor *all, int64_t n,
                      gf_tensor *v) {
  *v = *all;
  v->shape[0] = n;
  (void)L;
}

/* L's input and output tensors of n rows, and its weights. */
static gf_tensor in_tensor(const layer *L, int64_t n) {
  return L->k == K_LINEAR ? kt_tensor(2, n, L->cin, 0, 0)
                          : kt_tensor(4, n, L->cin, L->h, L->w);
}
static gf_tensor out_tensor(const layer *L, int64_t n) {
  int64_t oh, ow;
  out_hw(L, &oh, &ow);
  return L->k == K_LINEAR ? kt_tensor(2, n, L->cout, 0, 0)
                          : kt_tensor(4, n, L->cout, oh, ow);
}
static gf_tensor weight_tensor(const layer *L) {
  return L->k == K_LINEAR ? kt_tensor(2, L->cout, L->cin, 0, 0)
         : L->k == K_DECONV ? kt_tensor(4, L->cin, L->cout, L->kh, L->kh)
                            : kt_tensor(4, L->cout, L->cin, L->kh, L->kh);
}

/* bf16: frozen convolutions in bfloat16; tol: the comparison with the
 * ordinary f32 forward (bf16 inputs and weights carry 8 bits: about 2^-9
 * relative each, over up to 1,024 terms of |x w| ~ 0.06: about 0.009
 * standard deviation on outputs of about 2, so atol 6e-2 is ~6 sigma). */
/* mode: 0 f32, 1 bf16, 2 int8. int8: x in [0, 1) (int8 takes only
 * non-negative inputs, as after a ReLU), calibrated on the MAXN rows
 * first; u8 steps of 1/255 and s8 weight steps of 0.2/127 give about 0.011
 * standard deviation over 1,024 terms, so atol 8e-2 is ~7 sigma. */
static void run_layer(const layer *L, kt_rng *r, int mode) {
  gf_err e;
  gf_ctx fz, ref;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&fz, &cc, &e) == GF_OK);
  REQUIRE(gf_ctx_init(&ref, &cc, &e) == GF_OK);
  fz.frozen_batch = 1;
  fz.frozen_bf16 = mode == 1;
  int bf16 = mode == 1, int8 = mode == 2;
  double atol = bf16 ? 6e-2 : int8 ? 8e-2 : 1e-5;
  double rtol = bf16 || int8 ? 2e-2 : 1e-4;
  gf_tensor x = in_tensor(L, MAXN), w = weight_tensor(L);
  gf_tensor w2 = weight_tensor(L), b = kt_tensor(1, L->cout, 0, 0, 0);
  gf_tensor y = out_tensor(L, MAXN), yr = out_tensor(L, MAXN);
  kt_fill(&x, r, int8 ? 0 : -1, 1, 0);
  kt_fill(&w, r, -0.2, 0.2, 0);
  kt_fill(&w2, r, -0.2, 0.2, 0);
  kt_fill(&b, r, -0.5, 0.5, 0);
  const gf_tensor *bp = L->bias ? &b : NULL;
  size_t per = (size_t)gf_tensor_numel(&y) / MAXN;
  if (int8) { /* calibrate on every row, then run in int8 */
    fz.frozen_int8 = GF_INT8_CALIBRATE;
    REQUIRE(fwd(&fz, L, &x, &w, L->bias ? &b : NULL, &y, &e) == GF_OK);
    fz.frozen_int8 = GF_INT8_RUN;
  }
  float *alone = malloc(MAXN * per * sizeof *alone);
  REQUIRE(alone != NULL);
  /* every row alone */
  for (int64_t i = 0; i < MAXN; i++) {
    gf_tensor xi = x, yi = y;
    xi.shape[0] = yi.shape[0] = 1;
    xi.data = (float *)x.data + i * (gf_tensor_numel(&x) / MAXN);
    REQUIRE(fwd(&fz, L, &xi, &w, bp, &yi, &e) == GF_OK);
    memcpy(alone + i * per, yi.data, per * sizeof *alone);
  }
  int varied = 0;
  for (int64_t n = 1; n <= MAXN; n++) {
    gf_tensor xn, yn, rn;
    rows_view(L, &x, n, &xn);
    rows_view(L, &y, n, &yn);
    rows_view(L, &yr, n, &rn);
    for (size_t i = 0; i < (size_t)n * per; i++) ((float *)y.data)[i] = NAN;
    CHECK_INT_EQ(fwd(&fz, L, &xn, &w, bp, &yn, &e), GF_OK);
    CHECKF(memcmp(yn.data, alone, (size_t)n * per * sizeof *alone) == 0,
           "%s: a pass of %lld rows is not the rows alone", L->name,
           (long long)n);
    CHECK_INT_EQ(fwd(&ref, L, &xn, &w, bp, &rn, &e), GF_OK);
    double *want = kt_dbl(&rn);
    char label[96];
    snprintf(label, sizeof label, "%s n=%lld frozen%s vs ordinary", L->name,
             (long long)n, bf16 ? " bf16" : int8 ? " int8" : "");
    CHECK(kt_compare(label, yn.data, want, (size_t)n * per, atol, rtol) ==
          0);
    for (size_t i = 0; i < (size_t)n * per && !varied; i++)
      if (((float *)yn.data)[i] != (float)want[i]) varied = 1;
    free(want);
  }
  /* f32: the orders may or may not differ on this CPU; int8 must have
   * run on the layer that matters (dcgan28's 256 -> 128), except on plain
   * layouts, where oneDNN has only a reference int8 kernel (so f32 runs) */
  const char *lay = getenv("GF_ONEDNN_LAYOUT");
  if (int8 && strstr(L->name, "256->128") && !(lay && !strcmp(lay, "plain")))
    CHECKF(varied, "%s: int8 gave f32's exact values", L->name);
  /* a new weight buffer is new weights; the old buffer still answers as
   * before */
  gf_tensor x1 = x, y1 = y, r1 = yr;
  x1.shape[0] = y1.shape[0] = r1.shape[0] = 3;
  if (int8 && L->k != K_LINEAR) {
    /* weights never calibrated: an error, not a silent guess */
    CHECK_INT_EQ(fwd(&fz, L, &x1, &w2, bp, &y1, &e), GF_ESTATE);
    CHECK(strstr(e.msg, "calibrated") != NULL);
    fz.frozen_int8 = GF_INT8_CALIBRATE;
    CHECK_INT_EQ(fwd(&fz, L, &x1, &w2, bp, &y1, &e), GF_OK);
    fz.frozen_int8 = GF_INT8_RUN;
  }
  CHECK_INT_EQ(fwd(&fz, L, &x1, &w2, bp, &y1, &e), GF_OK);
  CHECK_INT_EQ(fwd(&ref, L, &x1, &w2, bp, &r1, &e), GF_OK);
  double *want = kt_dbl(&r1);
  CHECK(kt_compare("new weights", y1.data, want, 3 * per, atol, rtol) == 0);
  free(want);
  CHECK_INT_EQ(fwd(&fz, L, &x1, &w, bp, &y1, &e), GF_OK);
  CHECKF(memcmp(y1.data, alone, 3 * per * sizeof *alone) == 0,
         "%s: the first weights answer otherwise after the second",
         L->name);
  free(alone);
  gf_tensor_free(&x);
  gf_tensor_free(&w);
  gf_tensor_free(&w2);
  gf_tensor_free(&b);
  gf_tensor_free(&y);
  gf_tensor_free(&yr);
  gf_ctx_free(&fz);
  gf_ctx_free(&ref);
}

/* One of the ctxs sharing a store: a pass of n rows of x through w. */
typedef struct sharer {
  gf_ctx ctx;
  const layer *L;
  const gf_tensor *x, *w, *b;
  gf_tensor y;
  int64_t n;
  gf_status st;
} sharer;

static void *sharer_main(void *arg) {
  sharer *sh = arg;
  gf_tensor xn;
  rows_view(sh->L, (gf_tensor *)sh->x, sh->n, &xn);
  gf_err e;
  sh->st = fwd(&sh->ctx, sh->L, &xn, sh->w, sh->b, &sh->y, &e);
  return NULL;
}

/* Four ctxs sharing one store, each on its own thread at once (passes of
 * 1, 2, 3 and 4 rows), against a lone ctx with its own tables: the same
 * bits, and the store holds what the lone ctx laid out, once. mode as
 * run_layer's (int8: calibrated by the first sharer alone). */
static void run_shared(const layer *L, kt_rng *r, int mode) {
  enum { NS = 4 };
  gf_err e;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  gf_frozen_store *store = NULL, *alone_store = NULL;
  REQUIRE(gf_frozen_store_new(&store, &e) == GF_OK);
  REQUIRE(gf_frozen_store_new(&alone_store, &e) == GF_OK);
  CHECK_INT_EQ(gf_frozen_store_bytes(store), 0);
  int lin = L->k == K_LINEAR;
  gf_tensor x = in_tensor(L, NS), w = weight_tensor(L);
  gf_tensor b = kt_tensor(1, L->cout, 0, 0, 0), ya = out_tensor(L, NS);
  kt_fill(&x, r, mode == 2 ? 0 : -1, 1, 0);
  kt_fill(&w, r, -0.2, 0.2, 0);
  kt_fill(&b, r, -0.5, 0.5, 0);
  const gf_tensor *bp = L->bias ? &b : NULL;
  /* the lone ctx: its own store, so its laid-out bytes can be counted */
  gf_ctx lone;
  REQUIRE(gf_ctx_init(&lone, &cc, &e) == GF_OK);
  lone.frozen_batch = 1;
  lone.frozen_bf16 = mode == 1;
  lone.frozen_store = alone_store;
  if (mode == 2) {
    lone.frozen_int8 = GF_INT8_CALIBRATE;
    REQUIRE(fwd(&lone, L, &x, &w, bp, &ya, &e) == GF_OK);
    lone.frozen_int8 = GF_INT8_RUN;
  }
  REQUIRE(fwd(&lone, L, &x, &w, bp, &ya, &e) == GF_OK);
  sharer sh[NS];
  for (int k = 0; k < NS; k++) {
    REQUIRE(gf_ctx_init(&sh[k].ctx, &cc, &e) == GF_OK);
    sh[k].ctx.frozen_batch = 1;
    sh[k].ctx.frozen_bf16 = mode == 1;
    sh[k].ctx.frozen_store = store;
    sh[k].ctx.frozen_int8 = mode == 2 ? GF_INT8_RUN : GF_INT8_OFF;
    sh[k].L = L;
    sh[k].x = &x;
    sh[k].w = &w;
    sh[k].b = bp;
    sh[k].n = k + 1;
    sh[k].y = out_tensor(L, k + 1);
  }
  if (mode == 2) { /* the first sharer calibrates for all */
    gf_tensor yc = out_tensor(L, NS);
    sh[0].ctx.frozen_int8 = GF_INT8_CALIBRATE;
    REQUIRE(fwd(&sh[0].ctx, L, &x, &w, bp, &yc, &e) == GF_OK);
    sh[0].ctx.frozen_int8 = GF_INT8_RUN;
    gf_tensor_free(&yc);
  }
  pthread_t th[NS];
  for (int k = 0; k < NS; k++)
    REQUIRE(pthread_create(&th[k], NULL, sharer_main, &sh[k]) == 0);
  for (int k = 0; k < NS; k++) pthread_join(th[k], NULL);
  size_t per = (size_t)gf_tensor_numel(&ya) / NS;
  for (int k = 0; k < NS; k++) {
    CHECK_INT_EQ(sh[k].st, GF_OK);
    CHECKF(memcmp(sh[k].y.data, ya.data, (size_t)sh[k].n * per *
                  sizeof(float)) == 0,
           "%s mode %d: sharer %d (%lld rows) differs from a ctx of its own",
           L->name, mode, k, (long long)sh[k].n);
  }
  size_t one = gf_frozen_store_bytes(alone_store);
  size_t shared = gf_frozen_store_bytes(store);
  CHECKF(shared == one, "%s mode %d: %zu laid-out bytes shared by %d ctxs, "
         "%zu for one", L->name, mode, shared, NS, one);
  if (lin) CHECK(one > 0); /* a linear layer's weights are always laid out */
  for (int k = 0; k < NS; k++) {
    gf_tensor_free(&sh[k].y);
    gf_ctx_free(&sh[k].ctx);
  }
  gf_ctx_free(&lone);
  gf_frozen_store_free(store);
  gf_frozen_store_free(alone_store);
  gf_frozen_store_free(NULL);
  gf_tensor_free(&x);
  gf_tensor_free(&w);
  gf_tensor_free(&b);
  gf_tensor_free(&ya);
}

int main(void) {
  kt_rng r = {20261126};
  const layer layers[] = {
      {"linear 50->1200", K_LINEAR, 50, 1200, 1, 1, 1, {{1, 1}, {0, 0}, {0, 0}}, 1},
      {"linear 37->41", K_LINEAR, 37, 41, 1, 1, 1, {{1, 1}, {0, 0}, {0, 0}}, 1},
      {"linear 1200->784", K_LINEAR, 1200, 784, 1, 1, 1, {{1, 1}, {0, 0}, {0, 0}}, 0},
      {"deconv 100->256 k7 (1x1 in)", K_DECONV, 100, 256, 1, 1, 7, {{1, 1}, {0, 0}, {0, 0}}, 0},
      {"deconv 256->128 k4 s2 p1", K_DECONV, 256, 128, 7, 7, 4, {{2, 2}, {1, 1}, {0, 0}}, 0},
      {"deconv 128->1 k4 s2 p1", K_DECONV, 128, 1, 14, 14, 4, {{2, 2}, {1, 1}, {0, 0}}, 0},
      {"deconv 24->3 k4 s2 p1 bias", K_DECONV, 24, 3, 5, 5, 4, {{2, 2}, {1, 1}, {0, 0}}, 1},
      {"conv 3->32 k4 s2 p1", K_CONV, 3, 32, 16, 16, 4, {{2, 2}, {1, 1}, {0, 0}}, 0},
  };
  for (size_t i = 0; i < sizeof layers / sizeof *layers; i++)
    run_layer(&layers[i], &r, 0);
  for (size_t i = 0; i < sizeof layers / sizeof *layers; i++)
    run_shared(&layers[i], &r, 0);
  /* bf16 where the processor has it; elsewhere the refusal and its reason
   * (both are answers, neither is skipped) */
  gf_ctx c;
  gf_err e;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&c, &cc, &e) == GF_OK);
  gf_status bst = gf_ctx_bf16_check(&c, &e);
  gf_err e8;
  gf_status ist = gf_ctx_int8_check(&c, &e8);
  gf_ctx_free(&c);
  if (ist == GF_OK) {
    printf("int8: this processor has VNNI; every layer again in int8\n");
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
      run_layer(&layers[i], &r, 2);
      run_shared(&layers[i], &r, 2);
    }
  } else {
    printf("int8 refused here: %s\n", e8.msg);
    CHECK_INT_EQ(ist, GF_EUNSUPPORTED);
    CHECK(strstr(e8.msg, "AVX512_VNNI") != NULL);
  }
  if (bst == GF_OK) {
    printf("bf16: this processor has it; every layer again in bf16\n");
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
      run_layer(&layers[i], &r, 1);
      run_shared(&layers[i], &r, 1);
    }
  } else {
    printf("bf16 refused here: %s\n", e.msg);
    CHECK_INT_EQ(bst, GF_EUNSUPPORTED);
    CHECK(strstr(e.msg, "AVX512_BF16") != NULL);
  }
  return check_report();
}
