/* tensor.c - gf_tensor descriptors, their allocation, and gf_arena; see
 * gf/tensor.h. Device memory other than the CPU's is a later issue. */
#include "gf/tensor.h"

#include <stdlib.h>
#include <string.h>

size_t gf_dtype_size(gf_dtype dtype) {
  switch (dtype) {
  case GF_F32: return 4;
  case GF_BF16: return 2;
  case GF_F16: return 2;
  }
  return 0;
}

const char *gf_dtype_name(gf_dtype dtype) {
  switch (dtype) {
  case GF_F32: return "f32";
  case GF_BF16: return "bf16";
  case GF_F16: return "f16";
  }
  return "?";
}

int64_t gf_tensor_numel(const gf_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

size_t gf_tensor_nbytes(const gf_tensor *t) {
  return (size_t)gf_tensor_numel(t) * gf_dtype_size(t->dtype);
}

bool gf_tensor_same_shape(const gf_tensor *a, const gf_tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

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

/* Allocates nbytes of zeroed device memory (the caller frees it with
 * device_free). NULL on failure. */
static void *device_alloc(gf_device device, size_t nbytes) {
  if (device != GF_DEV_CPU) return NULL;
  size_t sz = round_up(nbytes ? nbytes : 1);
  void *p = aligned_alloc(GF_ALIGN, sz);
  if (p) memset(p, 0, sz);
  return p;
}

static void device_free(gf_device device, void *p) {
  if (device == GF_DEV_CPU) free(p);
}

gf_status gf_tensor_init(gf_tensor *t, gf_dtype dtype, gf_device device,
                         int ndim, const int64_t *shape, gf_err *err) {
  size_t nbytes = 0;
  gf_status st = describe(t, dtype, device, ndim, shape, &nbytes, err);
  if (st) return st;
  if (device != GF_DEV_CPU)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "tensor: device memory other than the CPU's is not built");
  t->data = device_alloc(device, nbytes);
  if (!t->data) {
    memset(t, 0, sizeof *t);
    return gf_fail(err, GF_ENOMEM, "tensor: cannot allocate %zu bytes",
                   nbytes);
  }
  t->owns = true;
  return GF_OK;
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
  if (t->owns) device_free(t->device, t->data);
  memset(t, 0, sizeof *t);
}

size_t gf_arena_slot_bytes(size_t nbytes) { return round_up(nbytes); }

gf_status gf_arena_init(gf_arena *a, gf_device device, size_t cap_bytes,
                        gf_err *err) {
  if (!a) return gf_fail(err, GF_EINVAL, "arena: NULL");
  memset(a, 0, sizeof *a);
  if (device != GF_DEV_CPU)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "arena: device memory other than the CPU's is not built");
  size_t cap = round_up(cap_bytes);
  a->base = device_alloc(device, cap);
  if (!a->base)
    return gf_fail(err, GF_ENOMEM, "arena: cannot allocate %zu bytes", cap);
  a->cap = cap;
  a->device = device;
  return GF_OK;
}

void gf_arena_free(gf_arena *a) {
  if (!a) return;
  device_free(a->device, a->base);
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
  return gf_tensor_view(t, a->base, GF_F32, a->device, 1, &n, err);
}
