/* cuda_mem.h - device memory for tensor.c: allocation, release and copies
 * between host and CUDA memory, plus the device-presence probe that gives
 * every "no CUDA device" message its text. Plain CUDA runtime calls, no ctx
 * (tensors are allocated before and apart from a ctx). Not a public header. */
#ifndef GF_CUDA_MEM_H
#define GF_CUDA_MEM_H

#include <stddef.h>

#include "gf/status.h"
#include "gf/tensor.h"

/* GF_OK when CUDA ordinal `ordinal` exists; else GF_EDEVICE with a message
 * that starts "no CUDA device: " and says why (no driver, no GPU, ordinal
 * out of range). *count (may be NULL) receives the number of devices. */
gf_status gf_cuda_probe(int ordinal, int *count, gf_err *err);

/* Allocates nbytes (at least 1) of zero-filled memory on device ordinal;
 * the caller owns *out and releases it with gf_cuda_mem_free. cudaMalloc's
 * alignment (256 bytes) covers GF_ALIGN. */
gf_status gf_cuda_mem_alloc(int ordinal, size_t nbytes, void **out,
                            gf_err *err);
/* Releases memory of gf_cuda_mem_alloc; accepts NULL. Waits for the device
 * (cudaFree does). */
void gf_cuda_mem_free(int ordinal, void *p);

/* Copies nbytes from src (on sd/si) to dst (on dd/di), any combination of
 * CPU and CUDA memory; returns when dst holds the data, after all work
 * already queued on the devices' blocking streams. */
gf_status gf_cuda_memcpy(void *dst, gf_device dd, int di, const void *src,
                         gf_device sd, int si, size_t nbytes, gf_err *err);

#endif
