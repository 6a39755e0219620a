/* cuda_plan.h - the host-side decisions of the CUDA backend, kept free of
 * CUDA types so that they are unit-tested on machines without a GPU
 * (tests/kernels/test_cuda_host.c): how the workspace grows, how one op
 * lays its temporaries out in the workspace, which convolution algorithm a
 * list of candidates yields under the deterministic / TF32 rules, and the
 * per-ctx cache of those choices. Not a public header. */
#ifndef GF_CUDA_PLAN_H
#define GF_CUDA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_CUDA_WS_ALIGN 256         /* bytes; cuDNN/cuBLAS want >= 128 */
#define GF_CUDA_WS_MIN (1u << 20)    /* smallest workspace allocation */
#define GF_CUDA_ALGO_CACHE_MAX 128   /* oldest entries are evicted beyond */
#define GF_CUDA_KEY_MAX 20

/* New workspace capacity for a request of need bytes when cap bytes are
 * held: cap itself when it suffices, else the larger of need rounded up
 * to GF_CUDA_WS_MIN and 1.5 cap (geometric growth, so a warm-up settles
 * after a few steps). */
size_t gf_cuda_ws_grow(size_t cap, size_t need);

/* Lays out n buffers of sizes[i] bytes back to back, each starting at a
 * multiple of GF_CUDA_WS_ALIGN: offsets[i] receives the start of buffer i
 * (sizes of 0 get an offset too, and take no room); *total receives the
 * bytes of the whole (0 when every size is 0). Returns 0, or -1 when the
 * total would overflow size_t. */
int gf_cuda_ws_layout(const size_t *sizes, int n, size_t *offsets,
                      size_t *total);

/* One candidate algorithm as cuDNN's heuristics list it (best first). */
typedef struct gf_cuda_algo_cand {
  int algo;          /* cudnnConvolution*Algo_t value */
  int ok;            /* status == CUDNN_STATUS_SUCCESS */
  int deterministic; /* determinism == CUDNN_DETERMINISTIC */
  int tensor_op;     /* math type is not FMA-only (may use TF32) */
  size_t memory;     /* workspace bytes */
} gf_cuda_algo_cand;

/* Index of the first acceptable candidate: ok, deterministic when
 * deterministic is set, FMA-only unless allow_tf32, workspace <= max_ws.
 * -1 when none is (the caller then falls back to implicit GEMM). */
int gf_cuda_pick_algo(const gf_cuda_algo_cand *c, int n, bool deterministic,
                      bool allow_tf32, size_t max_ws);

/* What a cached choice is for: op kind plus every dimension and flag that
 * changes the choice; two equal keys share one choice. */
typedef struct gf_cuda_key {
  int32_t n;                  /* used entries of v */
  int64_t v[GF_CUDA_KEY_MAX]; /* rest 0 */
} gf_cuda_key;

typedef struct gf_cuda_choice {
  gf_cuda_key key;
  int algo;           /* cudnn algorithm enum value */
  int math;           /* cudnnMathType_t value to run it with */
  size_t ws_bytes;    /* workspace the algorithm needs */
} gf_cuda_choice;

/* A bounded, insertion-ordered cache (fixed storage, owned by the struct,
 * no allocation). */
typedef struct gf_cuda_algo_cache {
  gf_cuda_choice e[GF_CUDA_ALGO_CACHE_MAX]; /* [0, n) used, oldest first */
  int n;
  uint64_t hits, misses;
} gf_cuda_algo_cache;

/* Builds a key from kind and up to GF_CUDA_KEY_MAX - 1 values. */
void gf_cuda_key_make(gf_cuda_key *k, int kind, const int64_t *v, int n);
/* The cached choice for k or NULL; counts a hit or a miss. */
const gf_cuda_choice *gf_cuda_cache_find(gf_cuda_algo_cache *c,
                                         const gf_cuda_key *k);
/* Stores ch (copied), evicting the oldest entry when full. */
void gf_cuda_cache_put(gf_cuda_algo_cache *c, const gf_cuda_choice *ch);

#endif
