/* cpu_backend.h - private state and helpers of the CPU backend: the oneDNN
 * engine and stream, the per-ctx primitive cache, scratch buffers and the
 * thread-count guard shared by cpu_*.c. Not a public header. */
#ifndef GF_CPU_BACKEND_H
#define GF_CPU_BACKEND_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../backend.h"

#define GF_PRIM_MAX_ARGS 10
#define GF_PRIM_KEY_MAX 20
#define GF_PRIM_CACHE_MAX 256 /* oldest entries are evicted beyond this */

/* Element counts above which the plain-C loops use several threads. */
#define GF_PAR_MIN 32768

/* FMA clones. The build targets baseline x86-64 (no -mfma: CPUs differ),
 * where each fmaf() is a call into libm; a loop built of fmaf's runs as a
 * clone compiled with GF_TARGET_FMA (vfmadd, the same single rounding, so
 * the same bits) when gf_cpu_fma() says the CPU has FMA. The loop's body
 * is an always-inline function that both the plain and the FMA function
 * wrap. Elsewhere (other ISAs, other compilers) one plain function. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GF_HAVE_FMA_CLONE 1
#define GF_TARGET_FMA __attribute__((target("fma")))
static inline bool gf_cpu_fma(void) { return __builtin_cpu_supports("fma"); }
#else
#define GF_HAVE_FMA_CLONE 0
#define GF_TARGET_FMA
static inline bool gf_cpu_fma(void) { return false; }
#endif
#if GF_HAVE_FMA_CLONE
#define GF_FMA_FN(f) (f)
#else
#define GF_FMA_FN(f) NULL /* f is not built */
#endif
#if defined(__GNUC__) || defined(__clang__)
#define GF_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define GF_ALWAYS_INLINE inline
#endif

/* A loop over items [a, b) of a job (rows, planes). */
typedef void (*gf_cpu_range_fn)(const void *job, int64_t a, int64_t b);
/* Runs fma (a GF_TARGET_FMA clone; GF_FMA_FN(f), NULL where not built)
 * when gf_cpu_fma(), else plain, over items [0, count) in nt contiguous
 * parts (schedule(static)'s split), or on the calling thread alone when
 * work (elements times taps) is below GF_PAR_MIN. cpu_ctx.c. */
void gf_cpu_run_ranges(gf_cpu_range_fn plain, gf_cpu_range_fn fma,
                       const void *job, int64_t count, int64_t work, int nt);

/* What a cached primitive computes, plus every dimension and parameter that
 * shapes it; two calls with equal keys can share one primitive. */
typedef struct gf_prim_key {
  int32_t kind;                  /* a GF_PK_* value */
  int32_t n;                     /* used entries of v */
  int64_t v[GF_PRIM_KEY_MAX];    /* dims, strides, paddings, flags; rest 0 */
} gf_prim_key;

enum {
  GF_PK_LIN_FWD = 1, GF_PK_LIN_BWD_D, GF_PK_LIN_BWD_W,
  GF_PK_CONV_FWD, GF_PK_CONV_BWD_D, GF_PK_CONV_BWD_W,
  GF_PK_DECONV_FWD, GF_PK_DECONV_BWD_D, GF_PK_DECONV_BWD_W,
  GF_PK_BN_FWD_TRAIN, GF_PK_BN_FWD_INFER, GF_PK_BN_BWD,
  GF_PK_POOL_FWD,
};

/* One oneDNN primitive with the memory objects of its arguments; the data
 * handles are re-pointed at the caller's tensors on every execution. When
 * the primitive was created with format_tag_any and picked a blocked layout
 * for an argument, that argument also has an internal buffer in the
 * primitive's layout and a reorder between it and the caller's plain
 * tensor (before execution for inputs, after it for outputs). */
typedef struct gf_prim {
  gf_prim_key key;
  dnnl_primitive_desc_t pd;           /* owned */
  dnnl_primitive_t prim;              /* owned */
  int nargs;                          /* arguments other than scratchpad */
  int arg[GF_PRIM_MAX_ARGS];          /* DNNL_ARG_* in execution order */
  dnnl_memory_t mem[GF_PRIM_MAX_ARGS];/* owned; plain layout, handle set to
                                         the caller's tensor per execution */
  dnnl_memory_t inner[GF_PRIM_MAX_ARGS]; /* owned, NULL when mem is used
                                         directly; else the primitive's
                                         layout, its handle set per
                                         execution into the ctx arena */
  size_t inner_off[GF_PRIM_MAX_ARGS]; /* byte offset of inner[i] there */
  dnnl_primitive_t reorder[GF_PRIM_MAX_ARGS]; /* owned; mem <-> inner */
  dnnl_memory_t scratch_mem;          /* owned; NULL when none needed */
  size_t scratch_bytes;               /* user scratchpad this primitive uses */
  size_t scratch_off;                 /* its byte offset in the ctx arena */
  size_t arena_bytes;                 /* inner buffers + scratchpad */
  bool frozen[GF_PRIM_MAX_ARGS];      /* argument i is frozen weights
                                         (gf_ctx.frozen_batch): inner[i]
                                         uses a gf_cpu_frozen_md buffer
                                         (gf_cpu_frozen_of the ctx), not
                                         the arena */
  void *keep[GF_PRIM_MAX_ARGS];       /* borrowed from that md table:
                                         inner[i]'s buffer, reordered
                                         only when first made */
  const void *keep_src[GF_PRIM_MAX_ARGS]; /* the caller's buffer keep[i]
                                         was made from; NULL = not yet */
} gf_prim;

/* A frozen linear layer's weights w [rows, cols] transposed once for
 * gf_cpu_linear_fwd_rows. */
typedef struct gf_cpu_frozen_w {
  const void *src;        /* the caller's weight buffer (borrowed) */
  int64_t rows, cols;
  float *t;               /* owned; [cols, rows] */
} gf_cpu_frozen_w;

/* Frozen conv/deconv weights in a primitive's layout, one per (caller's
 * buffer, layout) in a ctx or a store: every primitive of that layer (one
 * per pass size, in every ctx of the store) shares it instead of holding
 * its own copy. */
typedef struct gf_cpu_frozen_md {
  const void *src;        /* the caller's weight buffer (borrowed) */
  dnnl_memory_desc_t md;  /* the primitive's layout of it */
  void *buf;              /* owned; src reordered into md */
} gf_cpu_frozen_md;

/* The range a frozen convolution's input took while calibrating
 * (gf_ctx.frozen_int8), keyed by the layer's weight buffer. */
typedef struct gf_cpu_range {
  const void *w;          /* the layer's weight buffer (borrowed) */
  float lo, hi;
} gf_cpu_range;

/* The laid-out frozen weights and the int8 ranges: a ctx's own, or a
 * gf_frozen_store's that several ctxs share (gf_ctx.frozen_store; see
 * gf_cpu_frozen_of). An entry is added whole, under lock, and never
 * changes after: a ctx finds it filled or makes it. */
typedef struct gf_cpu_frozen {
  pthread_mutex_t lock;   /* guards the tables (not the buffers, which
                             are only read once in a table) */
  gf_cpu_frozen_w *lin;   /* owned array of owned entries (frozen
                             inference's linear weights) */
  size_t nlin;
  gf_cpu_frozen_md *md;   /* owned array of owned buffers (frozen
                             inference's conv/deconv weights) */
  size_t nmd;
  gf_cpu_range *ranges;   /* owned; int8 calibration, one per layer */
  size_t nranges;
  size_t bytes;           /* laid-out bytes held by lin and md */
} gf_cpu_frozen;

struct gf_frozen_store {
  gf_cpu_frozen fz;
};

/* Empty tables (fz caller-owned); GF_ENOMEM when the lock cannot be made.
 * gf_cpu_frozen_fini frees every entry and the lock. */
gf_status gf_cpu_frozen_init(gf_cpu_frozen *fz, gf_err *err);
void gf_cpu_frozen_fini(gf_cpu_frozen *fz);

typedef struct gf_cpu_state {
  dnnl_engine_t engine;   /* owned; the CPU engine */
  dnnl_stream_t stream;   /* owned; in-order, waited on after each op */
  gf_prim **cache;        /* owned array of owned entries, oldest first */
  size_t ncache;          /* <= GF_PRIM_CACHE_MAX */
  void *scratchpad;       /* owned; the arena every primitive execution
                             borrows: its blocked-layout copies of the
                             arguments and its oneDNN user scratchpad.
                             Only live during one execution, so one arena
                             of the largest primitive's arena_bytes serves
                             them all (not a buffer per primitive). */
  size_t scratchpad_cap;  /* bytes */
  float *tmp;             /* owned; temporaries of accumulating backwards */
  gf_cpu_frozen own;      /* the ctx's laid-out frozen weights and int8
                             ranges, used while gf_ctx.frozen_store is
                             NULL */
  size_t tmp_cap;         /* floats */
  uint64_t created, hits; /* cache statistics */
  bool blocked;           /* conv/deconv primitives pick their own layouts
                             (format_tag_any + reorders); false: plain NCHW
                             throughout. Set once at init (see cpu_init). */
} gf_cpu_state;

static inline gf_cpu_state *gf_cpu(gf_ctx *ctx) {
  return (gf_cpu_state *)ctx->impl;
}

/* Where ctx's laid-out frozen weights live: its store's tables when it
 * shares one, else its own. */
static inline gf_cpu_frozen *gf_cpu_frozen_of(gf_ctx *ctx) {
  return ctx->frozen_store ? &ctx->frozen_store->fz : &gf_cpu(ctx)->own;
}

/* Turns a oneDNN status into a gf_status (GF_EDEVICE) naming the call and
 * its file:line; GF_OK for dnnl_success. */
gf_status gf_dnnl_check(dnnl_status_t s, const char *call, const char *file,
                        int line, gf_err *err);
#define DNNL_TRY(call)                                                     \
  do {                                                                     \
    gf_status st_ = gf_dnnl_check((call), #call, __FILE__, __LINE__, err); \
    if (st_) return st_;                                                   \
  } while (0)

/* Plain (dense, row-major) f32 memory descriptor. */
dnnl_status_t gf_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                    dnnl_format_tag_t tag);
/* The same with data type `type`. */
dnnl_status_t gf_md_t(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                      dnnl_data_type_t type, dnnl_format_tag_t tag);

/* The cached primitive for key, or NULL (counts a hit when found). */
gf_prim *gf_cpu_prim_find(gf_ctx *ctx, const gf_prim_key *key);

/* Creates a primitive for desc (with hint for backward primitives, else
 * NULL) and memory objects for its nargs arguments arg[i], whose caller-side
 * (plain) layouts are mds[i], adds it to ctx's cache (which owns it) and
 * returns it in *out. desc may use format_tag_any: where the primitive picks
 * another layout, reorders are set up (see gf_prim).
 * Called under gf_cpu_threads_begin so that oneDNN picks kernels for the
 * ctx's thread count. */
gf_status gf_cpu_prim_add(gf_ctx *ctx, const gf_prim_key *key,
                          const_dnnl_op_desc_t desc,
                          const_dnnl_primitive_desc_t hint, int nargs,
                          const int *arg, const dnnl_memory_desc_t *mds,
                          gf_prim **out, gf_err *err);

/* Scales of a primitive's output or of a reorder (oneDNN output scales):
 * n values (1, or one per index of the dimensions in mask), borrowed. */
typedef struct gf_prim_scales {
  int n;            /* 0: none */
  int mask;
  const float *v;
} gf_prim_scales;

/* As gf_cpu_prim_add, for a primitive descriptor the caller made; pd's
 * ownership moves to the cache entry (it is destroyed on failure too).
 * rsc (NULL, or nargs entries): scales of the reorder into argument i's
 * layout (an int8 argument's quantisation). */
gf_status gf_cpu_prim_add_pd(gf_ctx *ctx, const gf_prim_key *key,
                             dnnl_primitive_desc_t pd, int nargs,
                             const int *arg, const dnnl_memory_desc_t *mds,
                             const gf_prim_scales *rsc, gf_prim **out,
                             gf_err *err);

/* The primitive descriptor of desc whose implementation is named impl
 * (oneDNN's impl_info_str; NULL: the first oneDNN offers), with the user
 * scratchpad and output scales osc (NULL: none); GF_EUNSUPPORTED when no
 * implementation has that name. The caller destroys *out. */
gf_status gf_cpu_pd_create_impl(gf_ctx *ctx, const_dnnl_op_desc_t desc,
                                const char *impl, const gf_prim_scales *osc,
                                dnnl_primitive_desc_t *out, gf_err *err);

/* Creates a primitive descriptor (the caller destroys it), used to build
 * the forward hints of backward primitives. */
gf_status gf_cpu_pd_create(gf_ctx *ctx, const_dnnl_op_desc_t desc,
                           const_dnnl_primitive_desc_t hint,
                           dnnl_primitive_desc_t *out, gf_err *err);

/* Executes p with ptr[i] as the data of argument i (the order of p->arg),
 * on the ctx's stream, and waits for it. */
gf_status gf_cpu_prim_exec(gf_ctx *ctx, gf_prim *p, void *const *ptr,
                           gf_err *err);

/* Returns a buffer of at least n floats owned by the ctx (valid until the
 * next call), or NULL with err filled. */
float *gf_cpu_tmp(gf_ctx *ctx, size_t n, gf_err *err);

/* Destroys every cached primitive and frees the cache, the scratchpad and
 * the tmp buffer of st (which stays allocated, its fields emptied). */
void gf_cpu_cache_free(gf_cpu_state *st);

/* Sets OpenMP's thread count for this thread to ctx->nthreads and returns
 * the previous value for gf_cpu_threads_end (oneDNN's OpenMP runtime reads
 * it at primitive creation and execution). */
int gf_cpu_threads_begin(const gf_ctx *ctx);
void gf_cpu_threads_end(int prev);

/* dst[i] += src[i]. */
void gf_cpu_add_inplace(const gf_ctx *ctx, float *dst, const float *src,
                        size_t n);
/* db[c] (+)= sum over n, s of dy[n, c, s] for dy viewed as [N, C, S]. */
void gf_cpu_bias_grad(const gf_ctx *ctx, const float *dy, int64_t N,
                      int64_t C, int64_t S, float *db, int accumulate);

/* Operation entry points (cpu_dnnl.c, cpu_eltwise.c, cpu_pool.c,
 * cpu_gan_ops.c), see backend.h. */
gf_status gf_cpu_linear_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            gf_tensor *y, gf_err *err);
/* int8 calibration (cpu_int8.c): widens the range recorded for weights w
 * by the n values of x; GF_ENOMEM when the table cannot grow. */
gf_status gf_cpu_range_note(gf_cpu_frozen *fz, const void *w, const float *x,
                            size_t n, gf_err *err);
/* The range recorded for w; false when none was. */
bool gf_cpu_range_get(gf_cpu_frozen *fz, const void *w, float *lo,
                      float *hi);
/* The scales of an int8 convolution of weights w (PyTorch layout: conv
 * [OC, IC, kh, kw], transposed [IC, OC, kh, kw]) over inputs of range
 * [lo, hi]: *sx the input's (255 / max|x| for u8 inputs, lo >= 0, else
 * 127 / max|x| for s8), sw[oc] each output channel's weights' (127 /
 * max|w|),
 * osc[oc] = 1 / (sx sw[oc]) the output's. */
void gf_cpu_int8_scales(const float *w, bool transposed, int64_t OC,
                        int64_t IC, int64_t khw, float lo, float hi,
                        float *sx, float *sw, float *osc);

/* The linear forward of frozen inference (cpu_linear_rows.c): each
 * output one FMA chain over k in order, the same bits at any batch. */
gf_status gf_cpu_linear_fwd_rows(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *w, const gf_tensor *b,
                                 gf_tensor *y, gf_err *err);
gf_status gf_cpu_linear_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *dy,
                            gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                            gf_accum accum, gf_err *err);
gf_status gf_cpu_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            const gf_conv_params *p, gf_tensor *y,
                            gf_err *err);
gf_status gf_cpu_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *dy,
                            const gf_conv_params *p, gf_tensor *dx,
                            gf_tensor *dw, gf_tensor *db, gf_accum accum,
                            gf_err *err);
gf_status gf_cpu_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *w, const gf_tensor *b,
                              const gf_conv_params *p, gf_tensor *y,
                              gf_err *err);
gf_status gf_cpu_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *w, const gf_tensor *dy,
                              const gf_conv_params *p, gf_tensor *dx,
                              gf_tensor *dw, gf_tensor *db, gf_accum accum,
                              gf_err *err);
gf_status gf_cpu_bn_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *beta,
                              gf_tensor *running_mean, gf_tensor *running_var,
                              const gf_bn_params *p, gf_tensor *y,
                              gf_tensor *save_mean, gf_tensor *save_var,
                              gf_err *err);
gf_status gf_cpu_bn_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *gamma, const gf_tensor *beta,
                              const gf_tensor *running_mean,
                              const gf_tensor *running_var, float eps,
                              gf_tensor *y, gf_err *err);
gf_status gf_cpu_bn_bwd(gf_ctx *ctx, const gf_tensor *x,
                        const gf_tensor *gamma, const gf_tensor *save_mean,
                        const gf_tensor *save_var, float eps,
                        const gf_tensor *dy, gf_tensor *dx, gf_tensor *dgamma,
                        gf_tensor *dbeta, gf_accum accum, gf_err *err);
gf_status gf_cpu_bn_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *gamma, const gf_tensor *mean,
                           const gf_tensor *var, float eps,
                           const gf_tensor *dy, const gf_tensor *sum_dy,
                           const gf_tensor *sum_dy_xhat, double count,
                           gf_tensor *dx, gf_err *err);
gf_status gf_cpu_act_fwd(gf_ctx *ctx, int kind, float alpha,
                         const gf_tensor *x, gf_tensor *y, gf_err *err);
gf_status gf_cpu_act_bwd(gf_ctx *ctx, int kind, float alpha,
                         const gf_tensor *in, const gf_tensor *dy,
                         gf_tensor *dx, gf_err *err);
gf_status gf_cpu_dropout(gf_ctx *ctx, const gf_tensor *x, float p,
                         const gf_philox_stream *s, gf_tensor *y,
                         gf_err *err);
gf_status gf_cpu_bce_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                         gf_tensor *loss, gf_err *err);
gf_status gf_cpu_bce_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                         float dloss, gf_tensor *dx, gf_err *err);
gf_status gf_cpu_adam(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                      gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                      gf_tensor *v, gf_err *err);
/* cpu_pool.c */
gf_status gf_cpu_pool_fwd(gf_ctx *ctx, int kind, const gf_tensor *x,
                          const gf_pool_params *p, gf_tensor *y,
                          gf_err *err);
gf_status gf_cpu_resize_bilinear(gf_ctx *ctx, const gf_tensor *x,
                                 gf_tensor *y, gf_err *err);
gf_status gf_cpu_copy_channels(gf_ctx *ctx, const gf_tensor *src,
                               gf_tensor *dst, int64_t offset, gf_err *err);
gf_status gf_cpu_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err);
gf_status gf_cpu_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                      gf_err *err);
/* cpu_gan_ops.c */
gf_status gf_cpu_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                           gf_tensor *loss, gf_err *err);
gf_status gf_cpu_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                           float dloss, gf_tensor *dx, gf_err *err);
gf_status gf_cpu_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                          gf_err *err);
gf_status gf_cpu_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x,
                      float w, gf_err *err);
gf_status gf_cpu_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w,
                                   gf_tensor *u, gf_tensor *v, int n_iter,
                                   float eps, gf_tensor *sigma,
                                   gf_tensor *w_sn, gf_err *err);
gf_status gf_cpu_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                                   const gf_tensor *u, const gf_tensor *v,
                                   const gf_tensor *sigma,
                                   const gf_tensor *dw_sn, gf_tensor *dw,
                                   gf_accum accum, gf_err *err);
/* cpu_augment.c */
gf_status gf_cpu_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *params, unsigned policy,
                             gf_tensor *y, gf_err *err);
gf_status gf_cpu_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                             unsigned policy, const gf_tensor *dy,
                             gf_tensor *dx, gf_err *err);
/* cpu_cond.c */
gf_status gf_cpu_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                               const gf_tensor *labels, gf_tensor *y,
                               gf_err *err);
gf_status gf_cpu_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                               const gf_tensor *dy, gf_tensor *dtable,
                               gf_accum accum, gf_err *err);
gf_status gf_cpu_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *gain,
                                    const gf_tensor *bias, gf_tensor *y,
                                    gf_err *err);
gf_status gf_cpu_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *gain, const gf_tensor *dy,
                                    gf_tensor *dx, gf_tensor *dgain,
                                    gf_tensor *dbias, gf_err *err);
gf_status gf_cpu_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                            gf_tensor *y, gf_accum accum, gf_err *err);
gf_status gf_cpu_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                            const gf_tensor *dy, gf_tensor *da, gf_tensor *db,
                            gf_accum accum, gf_err *err);
/* cpu_resample.c */
gf_status gf_cpu_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                        gf_tensor *y, gf_err *err);
gf_status gf_cpu_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                        gf_tensor *dx, gf_err *err);
gf_status gf_cpu_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                               const gf_pool_params *p, gf_tensor *dx,
                               gf_err *err);
gf_status gf_cpu_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                     gf_tensor *y, gf_err *err);
/* cpu_fir.c */
gf_status gf_cpu_upfirdn2d(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                           const gf_fir_params *p, gf_tensor *y, gf_err *err);
/* cpu_modconv.c (the weight ops) and cpu_dnnl.c (the batched conv) */
gf_status gf_cpu_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *s, int demodulate,
                                    float eps, gf_tensor *wmod,
                                    gf_tensor *dcoef, gf_err *err);
gf_status gf_cpu_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *s, int demodulate,
                                    float eps, const gf_tensor *dcoef,
                                    const gf_tensor *dwmod, gf_tensor *dw,
                                    gf_tensor *ds, gf_accum accum,
                                    gf_err *err);
gf_status gf_cpu_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *wmod,
                                    const gf_conv_params *p, gf_tensor *y,
                                    gf_err *err);
gf_status gf_cpu_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *wmod, const gf_tensor *dy,
                                    const gf_conv_params *p, gf_tensor *dx,
                                    gf_tensor *dwmod, gf_err *err);
/* cpu_lanes.c: the lane sums of reduce_order.h (GF_RED_LANES lanes in
 * double from 0.0, then the tree), single-threaded. */
/* The tree over the lane sums p[GF_RED_LANES] (p is overwritten); returns
 * the sum. */
double gf_cpu_lanes_tree(double *p);
/* The lane sum of the exact products (double)a[i] * (double)b[i], i < n
 * (a = b: the sum of squares). */
double gf_cpu_lane_dot(const float *a, const float *b, int64_t n);
/* The lane sum of v[0], v[stride], ..., v[(n - 1) stride]. */
double gf_cpu_lane_sum_d(const double *v, int64_t n, int64_t stride);
/* cpu_stylegan_ops.c */
gf_status gf_cpu_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *b, int act, float alpha,
                              float gain, float clamp, gf_tensor *y,
                              gf_err *err);
gf_status gf_cpu_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                              float alpha, float gain, float clamp,
                              const gf_tensor *dy, gf_tensor *dx,
                              gf_tensor *db, gf_accum accum, gf_err *err);
gf_status gf_cpu_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                           int num_channels, gf_tensor *y, gf_err *err);
gf_status gf_cpu_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                           int num_channels, const gf_tensor *dy,
                           gf_tensor *dx, gf_err *err);
gf_status gf_cpu_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *xdot, int group_size, int num_channels,
                           gf_tensor *ydot, gf_err *err);
gf_status gf_cpu_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *xdot, int group_size,
                               int num_channels, const gf_tensor *dy,
                               const gf_tensor *dydot, gf_tensor *dxdot, gf_err *err);
gf_status gf_cpu_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
    const gf_tensor *s, const gf_tensor *sdot, const gf_tensor *dcoef,
    const gf_tensor *g, const gf_tensor *gdot, gf_tensor *wmoddot,
    gf_tensor *gws, gf_tensor *gwsdot, gf_err *err);
gf_status gf_cpu_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *noise,
                               const gf_tensor *strength, gf_tensor *y,
                               gf_err *err);
gf_status gf_cpu_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_tensor *dstrength, gf_accum accum,
                               gf_err *err);

/* cpu_ada.c */
gf_status gf_cpu_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                                 const int pad[4], gf_tensor *y, gf_err *err);
gf_status gf_cpu_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                                 const gf_tensor *dy, gf_tensor *dx,
                                 gf_err *err);
gf_status gf_cpu_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                                   const gf_tensor *theta, gf_tensor *y,
                                   gf_err *err);
gf_status gf_cpu_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                                   const gf_tensor *dy, gf_tensor *dx,
                                   gf_err *err);
gf_status gf_cpu_color4_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *m, gf_tensor *y, gf_err *err);
gf_status gf_cpu_color4_bwd(gf_ctx *ctx, const gf_tensor *m,
                            const gf_tensor *dy, gf_tensor *dx, gf_err *err);

#endif
