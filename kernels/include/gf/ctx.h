/* ctx.h - the execution context every op takes: which backend runs it, how
 * many threads it may use, and the backend's handles (oneDNN engine and
 * stream, cached primitives, scratch buffers).
 *
 * There is no global mutable state in the kernels library: everything an op
 * caches lives in the gf_ctx the caller passes. A ctx is used by one thread
 * at a time (it holds one stream and one scratch area); use one ctx per
 * thread that runs ops. */
#ifndef GF_CTX_H
#define GF_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"
#include "gf/tensor.h"

typedef enum gf_backend {
  GF_BACKEND_CPU = 0,  /* oneDNN + OpenMP C loops; tensors on GF_DEV_CPU */
  GF_BACKEND_CUDA = 1, /* cuDNN/cuBLAS + own kernels, one stream per ctx;
                          tensors on GF_DEV_CUDA (builds with CUDA only) */
} gf_backend;

/* How the CPU backend lays out conv activations for oneDNN. */
typedef enum gf_cpu_layout {
  GF_CPU_LAYOUT_AUTO = 0,    /* blocked, or GF_ONEDNN_LAYOUT=plain|blocked */
  GF_CPU_LAYOUT_PLAIN = 1,   /* convs on the caller's NCHW (gemm-based):
                                no reorders; the faster choice for a deep
                                forward-only network (the FID Inception) */
  GF_CPU_LAYOUT_BLOCKED = 2, /* oneDNN's blocked layouts, reordered from
                                and to NCHW around each conv (training) */
} gf_cpu_layout;

typedef struct gf_ctx_config {
  gf_backend backend;
  int nthreads;     /* CPU threads for ops; <= 0 means every online core */
  int device_index; /* CUDA ordinal; ignored by the CPU backend */
  gf_cpu_layout cpu_layout; /* ignored by the CUDA backend */
} gf_ctx_config;

struct gf_backend_ops; /* the dispatch table, kernels/src/backend.h */

/* The laid-out forms of frozen weights (gf_ctx.frozen_batch): a
 * convolution's weights reordered into its primitive's layout, a linear
 * layer's transposed, the int8 calibration ranges; one per weight buffer
 * (and layout), shared by the ctxs that point at it (gf_ctx.frozen_store),
 * so that N ctxs running one set of weights hold one laid-out copy, not
 * N. Each entry is made once, by the first ctx that needs it, under the
 * store's lock, and only read afterwards. CPU backend. */
typedef struct gf_frozen_store gf_frozen_store;

typedef struct gf_ctx_stats {
  uint64_t primitives_created; /* backend primitives built (cache misses) */
  uint64_t primitive_hits;     /* cached primitives reused */
  size_t cached_primitives;    /* entries in the cache now */
  size_t scratch_bytes;        /* bytes held by scratch buffers now */
} gf_ctx_stats;

typedef struct gf_ctx {
  gf_backend backend;
  gf_device device;                  /* where this ctx's tensors must live */
  int device_index;                  /* CUDA ordinal; 0 on the CPU */
  int nthreads;                      /* >= 1; threads every op may use */
  const struct gf_backend_ops *ops;  /* never NULL after init */
  void *impl;                        /* backend state, owned by the ctx:
                                        oneDNN engine/stream, primitive cache,
                                        scratch arenas (cpu/cpu_backend.h);
                                        CUDA stream, cuBLAS/cuDNN handles,
                                        workspace (cuda/cuda_backend.h) */
  gf_cpu_layout cpu_layout;          /* from the config */
  int deterministic;                 /* 0 after init; the caller may set 1
                                        before any op: the CUDA backend then
                                        uses only deterministic algorithms
                                        (the CPU backend always is) */
  int allow_tf32;                    /* 0 after init; 1 lets the CUDA
                                        backend run f32 convolutions and
                                        GEMMs on TF32 tensor cores (about
                                        1e-3 relative error) */
  int frozen_batch;                  /* 0 after init; the caller may set
                                        R > 0 before any op for inference
                                        on frozen weights with rows that do
                                        not depend on their batch (CPU
                                        backend; the CUDA backend ignores
                                        it): every conv, transposed conv
                                        and linear forward then runs, at
                                        any batch size, the oneDNN
                                        implementation and memory layouts
                                        picked for that layer at batch R
                                        (an op fails with GF_EUNSUPPORTED
                                        where oneDNN has no such match), so
                                        row i is the same arithmetic in the
                                        same order whichever rows share its
                                        pass; and a weight tensor is copied
                                        into the primitive's layout once,
                                        on its first forward, and reused
                                        while its address is the same: its
                                        values must not change after that */
  int frozen_int8;                   /* 0 after init (GF_INT8_OFF); with
                                        frozen_batch: GF_INT8_CALIBRATE runs
                                        f32 and records the range of every
                                        convolution's input (per weight
                                        buffer); GF_INT8_RUN then runs those
                                        convolutions in int8: inputs
                                        quantised to u8 with one scale from
                                        that range, weights to s8 with one
                                        scale per output channel, int32
                                        sums (exact, so rows stay batch-
                                        invariant), f32 output; a layer
                                        whose input went below 0 (the
                                        latent) or for which oneDNN has
                                        only a reference int8 kernel stays
                                        f32. Check gf_ctx_int8_check */
  int frozen_bf16;                   /* 0 after init; with frozen_batch, 1
                                        makes convolutions and transposed
                                        convolutions take their input and
                                        weights in bfloat16 (rounded once,
                                        to nearest even) with f32 sums and
                                        output, where oneDNN has a bf16
                                        kernel for the layer (others stay
                                        f32); linear layers stay f32. Check
                                        gf_ctx_bf16_check first */
  gf_frozen_store *frozen_store;     /* NULL after init: frozen inference
                                        keeps its laid-out weights in the
                                        ctx. The caller may set a store
                                        before any op (borrowed: it must
                                        outlive the ctx's last op): they
                                        are then the store's, shared with
                                        every ctx that points at it, whose
                                        ops may run at the same time on
                                        other threads. The CUDA backend
                                        lays out nothing and ignores it */
} gf_ctx;

/* gf_ctx.frozen_int8 values. */
enum { GF_INT8_OFF = 0, GF_INT8_CALIBRATE = 1, GF_INT8_RUN = 2 };

/* GF_OK when ctx can run frozen inference in int8 at speed (a CPU ctx on
 * a processor with AVX512_VNNI or AMX, as oneDNN detects it); else
 * GF_EUNSUPPORTED with the reason. */
gf_status gf_ctx_int8_check(const gf_ctx *ctx, gf_err *err);

/* GF_OK when ctx can run frozen inference in bfloat16 (a CPU ctx on a
 * processor with AVX512_BF16 or AMX, as oneDNN detects it); else
 * GF_EUNSUPPORTED with the reason (the processor's, or the backend's). */
gf_status gf_ctx_bf16_check(const gf_ctx *ctx, gf_err *err);

/* Fills ctx (caller-owned struct) for cfg->backend; cfg NULL means CPU with
 * every core. Allocates the backend state (engine, stream, caches), owned by
 * ctx until gf_ctx_free. The CUDA backend is a module (libganflow_cuda.so)
 * that the first CUDA ctx, CUDA tensor or gf_cuda_device_check of the
 * process loads, for the rest of the process. GF_EUNSUPPORTED for a
 * backend this build lacks, or when that module is not found or does not
 * load ("the CUDA backend module ... was not found (looked in PATH)" /
 * "... could not be loaded: " and why); GF_EDEVICE with a message
 * starting "no CUDA device: " for CUDA on a machine without a usable GPU
 * (or without cfg->device_index). On failure nothing needs freeing
 * (gf_ctx_free is still harmless). */
gf_status gf_ctx_init(gf_ctx *ctx, const gf_ctx_config *cfg, gf_err *err);

/* Releases the backend state, cached primitives and scratch; tensors are
 * not touched (they are the caller's). Accepts NULL and a freed ctx. */
void gf_ctx_free(gf_ctx *ctx);

/* Returns when every op queued on ctx has finished (CUDA ops are queued on
 * the ctx's stream and return before they run; CPU ops return finished).
 * Errors of queued work surface here. */
gf_status gf_ctx_sync(gf_ctx *ctx, gf_err *err);

/* True when this build has the CUDA backend (its module may still be
 * missing, a GPU absent: gf_cuda_device_check says); loads nothing. */
int gf_cuda_built(void);
/* GF_OK when CUDA device `ordinal` can be used; else GF_EUNSUPPORTED (no
 * CUDA backend in this build, or its module not found or not loadable, as
 * gf_ctx_init says) or GF_EDEVICE ("no CUDA device: " and why). Loads the
 * module on first use and creates nothing on a device; for checking a
 * --device flag before any work starts. */
gf_status gf_cuda_device_check(int ordinal, gf_err *err);

/* An empty store for gf_ctx.frozen_store. Memory: *out is malloc'd;
 * release it with gf_frozen_store_free once no ctx that points at it runs
 * an op any more. */
gf_status gf_frozen_store_new(gf_frozen_store **out, gf_err *err);
/* Frees the store and every laid-out copy in it; accepts NULL. */
void gf_frozen_store_free(gf_frozen_store *s);
/* Bytes of laid-out weights the store holds now (tables excluded). */
size_t gf_frozen_store_bytes(gf_frozen_store *s);

/* Counters of the primitive cache and scratch, for tests and benchmarks. */
gf_ctx_stats gf_ctx_get_stats(const gf_ctx *ctx);

/* Static name of a backend ("cpu", "cuda"). */
const char *gf_backend_name(gf_backend backend);

/* The highest CUDA device ordinal a --device flag may name. */
#define GF_DEVICE_ORDINAL_MAX 1023

/* A --device value: "cpu", "cuda" or "cuda:N" (N through gf_parse_int, in
 * [0, GF_DEVICE_ORDINAL_MAX]) into *backend and *ordinal (-1 for "cuda"
 * without N: the caller's choice, e.g. LOCAL_RANK). Syntax only: whether
 * the GPU is there is gf_cuda_device_check's. GF_EINVAL naming `what`:
 * "--device: 'gpu' is not cpu, cuda or cuda:N", or the number's refusal. */
gf_status gf_device_parse(const char *what, const char *s, gf_backend *backend,
                          int *ordinal, gf_err *err);

#endif
