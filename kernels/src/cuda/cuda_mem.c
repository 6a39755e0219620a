/* cuda_mem.c - device memory for tensor.c; see cuda_mem.h. */
#include "cuda_mem.h"

#include <cuda_runtime_api.h>

gf_status gf_cuda_probe(int ordinal, int *count, gf_err *err) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (count) *count = e == cudaSuccess ? n : 0;
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* clear the (non-sticky) error */
    const char *why = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
                          ? "no usable NVIDIA GPU or driver on this machine: "
                          : "";
    return gf_fail(err, GF_EDEVICE, "no CUDA device: %s%s (%s)", why,
                   cudaGetErrorString(e), cudaGetErrorName(e));
  }
  if (n < 1)
    return gf_fail(err, GF_EDEVICE, "no CUDA device: the driver lists none");
  if (ordinal < 0 || ordinal >= n)
    return gf_fail(err, GF_EDEVICE,
                   "no CUDA device: ordinal %d asked for, %d present (0..%d)",
                   ordinal, n, n - 1);
  return GF_OK;
}

gf_status gf_cuda_mem_alloc(int ordinal, size_t nbytes, void **out,
                            gf_err *err) {
  *out = NULL;
  gf_status st = gf_cuda_probe(ordinal, NULL, err);
  if (st) return st;
  cudaError_t e = cudaSetDevice(ordinal);
  void *p = NULL;
  if (e == cudaSuccess) e = cudaMalloc(&p, nbytes ? nbytes : 1);
  if (e == cudaSuccess) e = cudaMemset(p, 0, nbytes ? nbytes : 1);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (p) cudaFree(p);
    return gf_fail(err, e == cudaErrorMemoryAllocation ? GF_ENOMEM
                                                       : GF_EDEVICE,
                   "cuda: cannot allocate %zu bytes on device %d: %s", nbytes,
                   ordinal, cudaGetErrorString(e));
  }
  *out = p;
  return GF_OK;
}

void gf_cuda_mem_free(int ordinal, void *p) {
  if (!p) return;
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur != ordinal)
    (void)cudaSetDevice(ordinal);
  (void)cudaFree(p);
}

gf_status gf_cuda_memcpy(void *dst, gf_device dd, int di, const void *src,
                         gf_device sd, int si, size_t nbytes, gf_err *err) {
  if (nbytes == 0) return GF_OK;
  enum cudaMemcpyKind kind;
  int dev;
  if (dd == GF_DEV_CUDA && sd == GF_DEV_CUDA) {
    kind = cudaMemcpyDeviceToDevice;
    dev = di;
  } else if (dd == GF_DEV_CUDA) {
    kind = cudaMemcpyHostToDevice;
    dev = di;
  } else if (sd == GF_DEV_CUDA) {
    kind = cudaMemcpyDeviceToHost;
    dev = si;
  } else {
    return gf_fail(err, GF_EINVAL, "cuda: memcpy between two host buffers");
  }
  cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) {
    if (kind == cudaMemcpyDeviceToDevice && di != si)
      e = cudaMemcpyPeer(dst, di, src, si, nbytes);
    else
      e = cudaMemcpy(dst, src, nbytes, kind);
  }
  /* cudaMemcpy from pageable host memory may return before a host-to-
   * device DMA lands; the device-wide sync makes "dst holds the data"
   * true for every kind. */
  if (e == cudaSuccess && kind != cudaMemcpyDeviceToHost)
    e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return gf_fail(err, GF_EDEVICE, "cuda: copy of %zu bytes failed: %s",
                   nbytes, cudaGetErrorString(e));
  }
  return GF_OK;
}
