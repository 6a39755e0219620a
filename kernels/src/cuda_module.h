/* cuda_module.h - the one table between gf_kernels and the CUDA backend
 * module, libganflow_cuda.so (private to kernels/).
 *
 * The CUDA backend (cuda/, with cuBLAS, cuDNN and the CUDA runtime) and the
 * nccl engine of gf_comm (comm/comm_nccl*, with NCCL) are built as a shared
 * module that no executable links: gf_kernels opens it with dlopen when a
 * CUDA device is first asked for (cuda_loader.h) and reaches everything in
 * it through the table below, which the module's only exported function,
 * GF_CUDA_MODULE_ENTRY, returns. A process that never asks for CUDA never
 * maps those libraries.
 *
 * The module and gf_kernels pass gf_ctx, gf_tensor, gf_err and struct
 * gf_comm between them by pointer, so both must come from one build: the
 * table carries GF_CUDA_MODULE_ABI and the sizes of those structs, and the
 * loader refuses a module whose numbers differ. Bump GF_CUDA_MODULE_ABI with
 * any change to this table, to gf_backend_ops (backend.h), gf_comm_ops or
 * gf_comm_host (comm/comm_impl.h), or to the meaning of a field they hold. */
#ifndef GF_CUDA_MODULE_H
#define GF_CUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define GF_CUDA_MODULE_FILE "libganflow_cuda.so"
#define GF_CUDA_MODULE_ENTRY "gf_cuda_module_entry"
#define GF_CUDA_MODULE_ABI 4u

struct gf_comm_ops; /* comm/comm_impl.h */

/* The sizes both sides compare, in this order (GF_CUDA_MODULE_SIZES). */
enum {
  GF_CUDA_SZ_TABLE = 0, /* the gf_cuda_module itself */
  GF_CUDA_SZ_CTX,       /* gf_ctx */
  GF_CUDA_SZ_TENSOR,    /* gf_tensor */
  GF_CUDA_SZ_ERR,       /* gf_err */
  GF_CUDA_SZ_OPS,       /* gf_backend_ops */
  GF_CUDA_SZ_COMM,      /* struct gf_comm */
  GF_CUDA_SZ_COMM_OPS,  /* gf_comm_ops */
  GF_CUDA_SZ_COUNT
};

typedef struct gf_cuda_module {
  uint32_t abi;                     /* GF_CUDA_MODULE_ABI of its build */
  uint32_t sizes[GF_CUDA_SZ_COUNT]; /* sizeof of the structs above, as the
                                       module was compiled */
  const char *version;              /* "ganflow X.Y.Z" it was built from */
  const gf_backend_ops *backend;    /* the CUDA backend's op table */
  /* cuda/cuda_mem.h, for tensor.c and gf_cuda_device_check: */
  gf_status (*probe)(int ordinal, int *count, gf_err *err);
  gf_status (*mem_alloc)(int ordinal, size_t nbytes, void **out,
                         gf_err *err);
  void (*mem_free)(int ordinal, void *p);
  gf_status (*memcpy)(void *dst, gf_device dd, int di, const void *src,
                      gf_device sd, int si, size_t nbytes, gf_err *err);
  /* The nccl engine of gf_comm; NULL in a module built without NCCL. */
  const struct gf_comm_ops *nccl;
} gf_cuda_module;

/* The module's exported entry point, GF_CUDA_MODULE_ENTRY: its table,
 * static and read-only (never NULL). */
typedef const gf_cuda_module *(*gf_cuda_module_entry_fn)(void);

/* The sizes of this build, for the table (module) and the check (loader);
 * needs comm/comm_impl.h included. */
#define GF_CUDA_MODULE_SIZES                                              \
  {                                                                       \
    [GF_CUDA_SZ_TABLE] = sizeof(gf_cuda_module),                          \
    [GF_CUDA_SZ_CTX] = sizeof(gf_ctx),                                    \
    [GF_CUDA_SZ_TENSOR] = sizeof(gf_tensor),                              \
    [GF_CUDA_SZ_ERR] = sizeof(gf_err),                                    \
    [GF_CUDA_SZ_OPS] = sizeof(gf_backend_ops),                            \
    [GF_CUDA_SZ_COMM] = sizeof(struct gf_comm),                           \
    [GF_CUDA_SZ_COMM_OPS] = sizeof(gf_comm_ops),                          \
  }

#endif
