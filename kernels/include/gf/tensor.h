/* tensor.h - the tensor value type of the kernels library and the arena that
 * hands out tensors from one block of memory.
 *
 * A gf_tensor is a small descriptor (shape, dtype, device, data pointer) that
 * the caller owns and passes by pointer; it either owns its memory
 * (gf_tensor_init) or views memory that someone else owns (gf_tensor_view,
 * gf_arena_tensor). Tensors are dense and contiguous, row-major, with
 * activations in NCHW order. Not a graph node: no autograd, no refcount. */
#ifndef GF_TENSOR_H
#define GF_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_MAX_DIMS 4
#define GF_ALIGN 64 /* bytes; every allocation and arena slot is aligned so */

typedef enum gf_dtype {
  GF_F32 = 0,  /* IEEE binary32; the dtype of every op's data */
  GF_BF16 = 1, /* reserved: bfloat16 storage */
  GF_F16 = 2,  /* reserved: IEEE binary16 storage */
  GF_I32 = 3,  /* int32_t, two's complement: class labels (the only ops
                  that accept it are gf_embedding_fwd/bwd, for their
                  labels); views, copies, arenas and nbytes as any dtype */
} gf_dtype;

typedef enum gf_device {
  GF_DEV_CPU = 0,  /* host memory */
  GF_DEV_CUDA = 1, /* device memory of CUDA ordinal device_index (builds
                      with CUDA; the host must not dereference it) */
} gf_device;

typedef struct gf_tensor {
  void *data;                  /* first element; NULL only when numel == 0 */
  int64_t shape[GF_MAX_DIMS];  /* [0, ndim) are the dims (NCHW for images,
                                  [N, features] for vectors); rest are 1 */
  int ndim;                    /* 1..GF_MAX_DIMS */
  gf_dtype dtype;
  gf_device device;
  int device_index;            /* CUDA ordinal; 0 on the CPU */
  bool owns;                   /* true: gf_tensor_free releases data;
                                  false: a view of memory owned elsewhere */
} gf_tensor;

/* Bytes per element of dtype (4, 2, 2, 4); 0 for an unknown value. */
size_t gf_dtype_size(gf_dtype dtype);
/* Static name ("f32", "bf16", "f16", "i32", "?"); never NULL. */
const char *gf_dtype_name(gf_dtype dtype);

/* Product of the dims (1 for the degenerate all-1 shape). */
int64_t gf_tensor_numel(const gf_tensor *t);
/* numel * dtype size. */
size_t gf_tensor_nbytes(const gf_tensor *t);
/* True when a and b have the same ndim and dims. */
bool gf_tensor_same_shape(const gf_tensor *a, const gf_tensor *b);

/* Allocates a zero-filled, GF_ALIGN-aligned buffer for shape on device and
 * describes it in *t (t->owns = true). The caller owns the memory and
 * releases it with gf_tensor_free(t). shape is copied. On failure *t is left
 * empty (data NULL) and nothing needs freeing. GF_DEV_CUDA means ordinal 0
 * (gf_tensor_init_on names another); in a build without CUDA, or when
 * the CUDA backend module does not load (gf/ctx.h, gf_ctx_init), it
 * returns GF_EUNSUPPORTED, on a machine without a GPU GF_EDEVICE ("no CUDA
 * device: ..."). */
gf_status gf_tensor_init(gf_tensor *t, gf_dtype dtype, gf_device device,
                         int ndim, const int64_t *shape, gf_err *err);
/* gf_tensor_init on CUDA ordinal device_index (ignored, must be 0, on the
 * CPU). Ownership as gf_tensor_init. */
gf_status gf_tensor_init_on(gf_tensor *t, gf_dtype dtype, gf_device device,
                            int device_index, int ndim, const int64_t *shape,
                            gf_err *err);

/* Copies src's bytes into dst, wherever each lives (host or CUDA memory,
 * any direction); both must hold the same number of bytes. Allocates
 * nothing. Returns when dst holds the data, after the work already queued
 * on the device (every ctx stream of the CUDA backend is a blocking stream,
 * so ops queued before are finished first). The way data enters and leaves
 * a CUDA ctx: batches in, losses, samples and checkpoints out. */
gf_status gf_tensor_copy(gf_tensor *dst, const gf_tensor *src, gf_err *err);

/* Describes memory the caller already owns (t->owns = false); allocates
 * nothing. data must stay valid while the view is used; gf_tensor_free on a
 * view only clears the descriptor. */
gf_status gf_tensor_view(gf_tensor *t, void *data, gf_dtype dtype,
                         gf_device device, int ndim, const int64_t *shape,
                         gf_err *err);

/* A view of src's memory with another shape of the same numel (e.g. the
 * [N,C,1,1] output of a conv seen as [N,C]). Allocates nothing; *out never
 * owns. */
gf_status gf_tensor_reshape_view(gf_tensor *out, const gf_tensor *src,
                                 int ndim, const int64_t *shape, gf_err *err);

/* Releases t's memory when it owns it and clears the descriptor (data NULL,
 * ndim 0). Accepts NULL and already-freed tensors. */
void gf_tensor_free(gf_tensor *t);

/* Bump allocator over one block: parameters, gradients, each optimizer
 * moment and per-step activations each live in their own arena, so that one
 * memcpy, one all-reduce or one optimizer call covers all of them. */
typedef struct gf_arena {
  void *base;          /* GF_ALIGN-aligned block of cap bytes, zero-filled
                          at init; owned by the arena */
  size_t cap;          /* bytes */
  size_t used;         /* bytes handed out, always a multiple of GF_ALIGN */
  gf_device device;
  int device_index;
} gf_arena;

/* Allocates a zero-filled block of cap_bytes (rounded up to GF_ALIGN) on
 * device (CUDA: ordinal 0). The arena owns it; release with
 * gf_arena_free. */
gf_status gf_arena_init(gf_arena *a, gf_device device, size_t cap_bytes,
                        gf_err *err);
/* gf_arena_init on CUDA ordinal device_index (0 on the CPU); the tensors
 * carved from it carry that ordinal. */
gf_status gf_arena_init_on(gf_arena *a, gf_device device, int device_index,
                           size_t cap_bytes, gf_err *err);
/* Releases the block; every tensor carved from it becomes invalid. Accepts
 * NULL and a freed arena. */
void gf_arena_free(gf_arena *a);
/* Bytes an arena needs to hold a tensor of nbytes (its slot, padded to
 * GF_ALIGN); sum these to size an arena before gf_arena_init. */
size_t gf_arena_slot_bytes(size_t nbytes);
/* Carves a view for shape out of a (t->owns = false); allocates nothing.
 * Memory never handed out since gf_arena_init is zero; memory handed out
 * again after gf_arena_reset keeps its old contents. GF_ENOMEM when the
 * arena is full. */
gf_status gf_arena_tensor(gf_arena *a, gf_tensor *t, gf_dtype dtype, int ndim,
                          const int64_t *shape, gf_err *err);
/* Forgets every slot (used = 0) without clearing the memory (an activation
 * arena is reset every step); views carved before are invalid afterwards. */
void gf_arena_reset(gf_arena *a);
/* A 1-D f32 view of the used part of the arena ([used/4] elements),
 * padding included (padding stays zero), for whole-arena operations such as
 * gf_adam_step over all parameters at once. */
gf_status gf_arena_view_all(const gf_arena *a, gf_tensor *t, gf_err *err);

#endif
