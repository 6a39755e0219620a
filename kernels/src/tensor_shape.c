/* tensor_shape.c - the arithmetic of tensor descriptors (gf/tensor.h: dtype
 * sizes and names, element and byte counts, shape equality) and the
 * DiffAugment window sizes (gf/ops.h): pure functions, no device, no
 * allocation. Compiled into gf_kernels and into the CUDA backend module
 * (libganflow_cuda.so, which must count as gf_kernels counts); allocation,
 * views and copies stay in tensor.c. */
#include "gf/ops.h"
#include "gf/tensor.h"

size_t gf_dtype_size(gf_dtype dtype) {
  switch (dtype) {
  case GF_F32: return 4;
  case GF_BF16: return 2;
  case GF_F16: return 2;
  case GF_I32: return 4;
  }
  return 0;
}

const char *gf_dtype_name(gf_dtype dtype) {
  switch (dtype) {
  case GF_F32: return "f32";
  case GF_BF16: return "bf16";
  case GF_F16: return "f16";
  case GF_I32: return "i32";
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

int64_t gf_augment_shift(int64_t n) { return n < 0 ? 0 : (n + 4) / 8; }

int64_t gf_augment_cutout_size(int64_t n) { return n < 0 ? 0 : (n + 1) / 2; }
