/* cuda_module.c - the entry point of the CUDA backend module
 * (libganflow_cuda.so, ../cuda_module.h): the one symbol the module
 * exports (cuda_module.map), returning the table through which gf_kernels
 * reaches the backend's ops, its device memory and the nccl engine. Holds
 * no state; the table is static and read-only. Not the loader (that is
 * ../cuda_loader.c, in gf_kernels). */
#include "../comm/comm_impl.h"
#include "../cuda_module.h"
#include "cuda_backend.h"
#include "cuda_mem.h"

#ifndef GF_CUDA_MODULE_VERSION
#define GF_CUDA_MODULE_VERSION "?"
#endif

static const gf_cuda_module module = {
    .abi = GF_CUDA_MODULE_ABI,
    .sizes = GF_CUDA_MODULE_SIZES,
    .version = "ganflow " GF_CUDA_MODULE_VERSION,
    .backend = &gf_cuda_backend_ops,
    .probe = gf_cuda_probe,
    .mem_alloc = gf_cuda_mem_alloc,
    .mem_free = gf_cuda_mem_free,
    .memcpy = gf_cuda_memcpy,
#ifdef GF_HAVE_NCCL
    .nccl = &gf_comm_nccl_ops,
#endif
};

/* Declared here for -Wmissing-prototypes: the loader finds it by name
 * (GF_CUDA_MODULE_ENTRY) with dlsym, never through a header. */
const gf_cuda_module *gf_cuda_module_entry(void);

const gf_cuda_module *gf_cuda_module_entry(void) { return &module; }
