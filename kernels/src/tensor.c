/* tensor.c - gf_tensor descriptors, their allocation, views and copies,
 * and gf_arena; see gf/tensor.h (the descriptor arithmetic is
 * tensor_shape.c's). CUDA memory goes through the CUDA backend module
 * (cuda/cuda_mem.c, reached by cuda_loader.h) in builds with CUDA. */
#include "gf/tensor.h"

#include <stdlib.h>
#include <string.h>

#ifdef GF_HAVE_CUDA
#include "cuda_loader.h"
#endif

/* Checks dtype, device and shape and fills the descriptor fields other than
 * data/owns; the byte count goes to *nbytes. */
static gf_status describe(gf_tensor *t, gf_dtype dtype, gf_device device,
                          int ndim, const int64_t *shape, size_t *nbytes,
                          gf_err *err) {
  if (!t) return gf_fail(err, GF_EINVAL, "tensor: NULL descriptor");
  memset(t, 0, sizeof *t);
  if (gf_dtype_size(dtype) == 0)
    return gf_fail(err, GF_EINVAL, "tensor: unknown dtype %d", (int)dtype);
  if (device != GF_DEV_CPU && device != GF_DEV_CUDA)
    return gf_fail(err, GF_EINVAL, "tensor: unknown device %d", (int)device);
  if (ndim < 1 || ndim > GF_MAX_DIMS || !shape)
    return gf_fail(err, GF_EINVAL, "tensor: ndim %d not in 1..%d", ndim,
                   GF_MAX_DIMS);
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return gf_fail(err, GF_EINVAL, "tensor: dim %d is negative (%lld)", i,
                     (long long)shape[i]);
    if (shape[i] > 0 && n > (SIZE_MAX / 8) / (size_t)shape[i])
      return gf_fail(err, GF_EINVAL, "tensor: shape overflows size_t");
    n *= (size_t)shape[i];
  }
  for (int i = 0; i < GF_MAX_DIMS; i++) t->shape[i] = i < ndim ? shape[i] : 1;
  t->ndim = ndim;
  t->dtype = dtype;
  t->device = device;
  *nbytes = n * gf_dtype_size(dtype);
  return GF_OK;
}

static size_t round_up(size_t n) {
  return (n + GF_ALIGN - 1) / GF_ALIGN * GF_ALIGN;
}

/* Allocates nbytes of zeroed memory on device (the caller frees it with
 * device_free); *out NULL and err filled on failure. */
static gf_status device_alloc(gf_device device, int index, size_t nbytes,
                              void **out, gf_err *err) {
  *out = NULL;
  size_t sz = round_up(nbytes ? nbytes : 1);
  if (device == GF_DEV_CUDA) {
#ifdef GF_HAVE_CUDA
    const gf_cuda_module *m = NULL;
    GF_TRY(gf_cuda_module_get(&m, err));
    return m->mem_alloc(index, sz, out, err);
#else
    (void)index;
    return gf_fail(err, GF_EUNSUPPORTED,
                   "tensor: CUDA memory asked for, but this build has no "
                   "CUDA backend");
#endif
  }
  if (index != 0)
    return gf_fail(err, GF_EINVAL, "tensor: CPU memory has no ordinal %d",
                   index);
  void *p = aligned_alloc(GF_ALIGN, sz);
  if (!p)
    return gf_fail(err, GF_ENOMEM, "tensor: cannot allocate %zu bytes", sz);
  memset(p, 0, sz);
  *out = p;
  return GF_OK;
}

static void device_free(gf_device device, int index, void *p) {
  if (device == GF_DEV_CPU) free(p);
#ifdef GF_HAVE_CUDA
  /* CUDA memory came from the module, which is loaded for good by then */
  const gf_cuda_module *m = NULL;
  if (device == GF_DEV_CUDA && gf_cuda_module_get(&m, NULL) == GF_OK)
    m->mem_free(index, p);
#endif
  (void)index;
}

gf_status gf_tensor_init_on(gf_tensor *t, gf_dtype dtype, gf_device device,
                            int device_index, int ndim, const int64_t *shape,
                            gf_err *err) {
  size_t nbytes = 0;
  gf_status st = describe(t, dtype, device, ndim, shape, &nbytes, err);
  if (st) return st;
  void *p = NULL;
  st = device_alloc(device, device_index, nbytes, &p, err);
  if (st) {
    memset(t, 0, sizeof *t);
    return st;
  }
  t->data = p;
  t->device_index = device_index;
  t->owns = true;
  return GF_OK;
}

gf_status gf_tensor_init(gf_tensor *t, gf_dtype dtype, gf_device device,
                         int ndim, const int64_t *shape, gf_err *err) {
  return gf_tensor_init_on(t, dtype, device, 0, ndim, shape, err);
}

gf_status gf_tensor_copy(gf_tensor *dst, const gf_tensor *src, gf_err *err) {
  if (!dst || !src) return gf_fail(err, GF_EINVAL, "tensor copy: NULL tensor");
  size_t n = gf_tensor_nbytes(src);
  if (n != gf_tensor_nbytes(dst))
    return gf_fail(err, GF_EINVAL, "tensor copy: %zu bytes into %zu", n,
                   gf_tensor_nbytes(dst));
  if (n == 0 || dst->data == src->data) return GF_OK;
  if (!dst->data || !src->data)
    return gf_fail(err, GF_EINVAL, "tensor copy: tensor without data");
  if (dst->device == GF_DEV_CPU && src->device == GF_DEV_CPU) {
    memmove(dst->data, src->data, n);
    return GF_OK;
  }
#ifdef GF_HAVE_CUDA
  const gf_cuda_module *m = NULL;
  GF_TRY(gf_cuda_module_get(&m, err));
  return m->memcpy(dst->data, dst->device, dst->device_index, src->data,
                   src->device, src->device_index, n, err);
#else
  return gf_fail(err, GF_EUNSUPPORTED,
                 "tensor copy: CUDA memory in a build without CUDA");
#endif
}

gf_status gf_tensor_view(gf_tensor *t, void *data, gf_dtype dtype,
                         gf_device device, int ndim, const int64_t *shape,
                         gf_err *err) {
  size_t nbytes = 0;
  gf_status st = describe(t, dtype, device, ndim, shape, &nbytes, err);
  if (st) return st;
  if (!data && nbytes) {
    memset(t, 0, sizeof *t);
    return gf_fail(err, GF_EINVAL, "tensor: view of NULL data");
  }
  t->data = data;
  t->owns = false;
  return GF_OK;
}

gf_status gf_tensor_reshape_view(gf_tensor *out, const gf_tensor *src,
                                 int ndim, const int64_t *shape, gf_err *err) {
  if (!src || !out) return gf_fail(err, GF_EINVAL, "reshape: NULL tensor");
  gf_tensor tmp;
  gf_status st = gf_tensor_view(&tmp, src->data, src->dtype, src->device,
                                ndim, shape, err);
  if (st) return st;
  if (gf_tensor_numel(&tmp) != gf_tensor_numel(src))
    return gf_fail(err, GF_EINVAL, "reshape: %lld elements into %lld",
                   (long long)gf_tensor_numel(src),
                   (long long)gf_tensor_numel(&tmp));
  tmp.device_index = src->device_index;
  *out = tmp;
  return GF_OK;
}

void gf_tensor_free(gf_tensor *t) {
  if (!t) return;
  if (t->owns) device_free(t->device, t->device_index, t->data);
  memset(t, 0, sizeof *t);
}

size_t gf_arena_slot_bytes(size_t nbytes) { return round_up(nbytes); }

gf_status gf_arena_init_on(gf_arena *a, gf_device device, int device_index,
                           size_t cap_bytes, gf_err *err) {
  if (!a) return gf_fail(err, GF_EINVAL, "arena: NULL");
  memset(a, 0, sizeof *a);
  if (device != GF_DEV_CPU && device != GF_DEV_CUDA)
    return gf_fail(err, GF_EINVAL, "arena: unknown device %d", (int)device);
  size_t cap = round_up(cap_bytes);
  gf_status st = device_alloc(device, device_index, cap, &a->base, err);
  if (st) return st;
  a->cap = cap;
  a->device = device;
  a->device_index = device_index;
  return GF_OK;
}

gf_status gf_arena_init(gf_arena *a, gf_device device, size_t cap_bytes,
                        gf_err *err) {
  return gf_arena_init_on(a, device, 0, cap_bytes, err);
}

void gf_arena_free(gf_arena *a) {
  if (!a) return;
  device_free(a->device, a->device_index, a->base);
  memset(a, 0, sizeof *a);
}

gf_status gf_arena_tensor(gf_arena *a, gf_tensor *t, gf_dtype dtype, int ndim,
                          const int64_t *shape, gf_err *err) {
  if (!a || !a->base) return gf_fail(err, GF_EINVAL, "arena: not initialized");
  size_t nbytes = 0;
  gf_status st = describe(t, dtype, a->device, ndim, shape, &nbytes, err);
  if (st) return st;
  size_t slot = round_up(nbytes);
  if (slot > a->cap - a->used) {
    memset(t, 0, sizeof *t);
    return gf_fail(err, GF_ENOMEM,
                   "arena: %zu bytes wanted, %zu of %zu left", slot,
                   a->cap - a->used, a->cap);
  }
  t->data = (char *)a->base + a->used;
  t->owns = false;
  t->device_index = a->device_index;
  a->used += slot;
  return GF_OK;
}

void gf_arena_reset(gf_arena *a) {
  if (a) a->used = 0;
}

gf_status gf_arena_view_all(const gf_arena *a, gf_tensor *t, gf_err *err) {
  if (!a || !a->base) return gf_fail(err, GF_EINVAL, "arena: not initialized");
  int64_t n = (int64_t)(a->used / sizeof(float));
  gf_status st = gf_tensor_view(t, a->base, GF_F32, a->device, 1, &n, err);
  if (st == GF_OK) t->device_index = a->device_index;
  return st;
}
