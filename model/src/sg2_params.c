/* sg2_params.c - gf_sg2_net's tensors: adding one in either build pass
 * (sizing, then carving the arenas), views, look-up and loading by name,
 * the official initialisers from Philox. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sg2_internal.h"

const gf_tensor *sg2_val(const gf_sg2_net *net, int idx) {
  return &net->tensors[idx].value;
}

gf_tensor sg2_rows(const gf_tensor *t, int64_t n) {
  gf_tensor v = *t;
  v.owns = false;
  v.shape[0] = n;
  return v;
}

gf_tensor sg2_as(const gf_tensor *t, int ndim, const int64_t *shape) {
  gf_tensor v = *t;
  v.owns = false;
  v.ndim = ndim;
  for (int i = 0; i < GF_MAX_DIMS; i++) v.shape[i] = i < ndim ? shape[i] : 1;
  return v;
}

static size_t f32_bytes(int ndim, const int64_t *shape) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  return gf_arena_slot_bytes(n * sizeof(float));
}

static gf_status carve(gf_arena *ar, gf_tensor *t, int ndim,
                       const int64_t *shape, gf_err *err) {
  return gf_arena_tensor(ar, t, GF_F32, ndim, shape, err);
}

gf_status sg2_act(gf_sg2_net *net, sg2_alloc *a, gf_tensor *t, int ndim,
                  const int64_t *shape, gf_err *err) {
  if (a->dry) {
    a->acts += f32_bytes(ndim, shape);
    gf_tensor v = {0};
    *t = sg2_as(&v, ndim, shape);
    t->dtype = GF_F32;
    t->device = net->device;
    return GF_OK;
  }
  return carve(&net->acts, t, ndim, shape, err);
}

gf_status sg2_dact(gf_sg2_net *net, sg2_alloc *a, gf_tensor *t, int ndim,
                   const int64_t *shape, gf_err *err) {
  if (!net->training) {
    memset(t, 0, sizeof *t);
    return GF_OK;
  }
  return sg2_act(net, a, t, ndim, shape, err);
}

gf_status sg2_add_param(gf_sg2_net *net, sg2_alloc *a, bool trainable,
                        gf_param_kind kind, int ndim, const int64_t *shape,
                        int *idx, gf_err *err, const char *fmt, ...) {
  if (net->n_tensors >= GF_SG2_MAX_TENSORS)
    return gf_fail(err, GF_EINVAL, "sg2: more than %d tensors",
                   GF_SG2_MAX_TENSORS);
  int i = net->n_tensors++;
  *idx = i;
  gf_param *p = &net->tensors[i];
  memset(p, 0, sizeof *p);
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(p->name, sizeof p->name, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof p->name)
    return gf_fail(err, GF_EINVAL, "sg2: tensor name too long");
  p->kind = kind;
  p->trainable = trainable;
  int64_t fan = 1;
  for (int d = 1; d < ndim; d++) fan *= shape[d];
  if (kind == GF_PARAM_WEIGHT) {
    p->fan_in = fan;
    p->fan_out = shape[0];
  }
  if (a->dry) {
    size_t b = f32_bytes(ndim, shape);
    if (trainable) a->params += b;
    else a->buffers += b;
    p->value = sg2_as(&p->value, ndim, shape);
    return GF_OK;
  }
  if (!trainable) return carve(&net->buffers, &p->value, ndim, shape, err);
  GF_TRY(carve(&net->params, &p->value, ndim, shape, err));
  int64_t numel = gf_tensor_numel(&p->value);
  net->n_trainable += numel;
  if (net->training) {
    GF_TRY(carve(&net->grads, &p->grad, ndim, shape, err));
    GF_TRY(carve(&net->adam_m, &p->adam_m, ndim, shape, err));
    GF_TRY(carve(&net->adam_v, &p->adam_v, ndim, shape, err));
  }
  return GF_OK;
}

gf_status sg2_put_host(gf_tensor *t, const float *v, gf_err *err) {
  gf_tensor h;
  GF_TRY(gf_tensor_view(&h, (void *)v, GF_F32, GF_DEV_CPU, t->ndim, t->shape,
                        err));
  return gf_tensor_copy(t, &h, err);
}

gf_param *gf_sg2_find(gf_sg2_net *net, const char *name) {
  for (int i = 0; i < net->n_tensors; i++)
    if (strcmp(net->tensors[i].name, name) == 0) return &net->tensors[i];
  return NULL;
}

gf_status gf_sg2_load(gf_sg2_net *net, const char *name, const gf_tensor *src,
                      gf_err *err) {
  gf_param *p = gf_sg2_find(net, name);
  if (!p)
    return gf_fail(err, GF_ENOTFOUND, "sg2: the %s has no tensor %s",
                   net->role == GF_SG2_G ? "generator" : "discriminator",
                   name);
  if (src->dtype != GF_F32)
    return gf_fail(err, GF_EINVAL, "sg2: %s: dtype %s, want f32", name,
                   gf_dtype_name(src->dtype));
  const gf_tensor *v = &p->value;
  bool scalar = v->ndim == 1 && v->shape[0] == 1 &&
                gf_tensor_numel(src) == 1;
  if (!scalar && !gf_tensor_same_shape(src, v)) {
    char a[64], b[64];
    int ka = 0, kb = 0;
    for (int i = 0; i < src->ndim && ka < 56; i++)
      ka += snprintf(a + ka, sizeof a - (size_t)ka, "%s%lld", i ? "," : "",
                     (long long)src->shape[i]);
    for (int i = 0; i < v->ndim && kb < 56; i++)
      kb += snprintf(b + kb, sizeof b - (size_t)kb, "%s%lld", i ? "," : "",
                     (long long)v->shape[i]);
    return gf_fail(err, GF_EINVAL, "sg2: %s: shape [%s], the net's is [%s]",
                   name, ka ? a : "", kb ? b : "");
  }
  return gf_tensor_copy(&p->value, src, err);
}

/* The initialiser of tensor p: value = cst + std * N(0, 1). */
static void init_rule(const gf_sg2_net *net, const gf_param *p, float *std,
                      float *cst) {
  const char *n = p->name;
  size_t len = strlen(n);
  *std = 0.0f;
  *cst = 0.0f;
#define ENDS(s) (len >= strlen(s) && strcmp(n + len - strlen(s), s) == 0)
  bool map_fc = strncmp(n, "mapping.fc", 10) == 0;
  if (ENDS(".weight")) *std = map_fc ? 1.0f / net->cfg.map_lr_mul : 1.0f;
  else if (ENDS(".const") || ENDS(".noise_const")) *std = 1.0f;
  else if (ENDS("affine.bias")) *cst = 1.0f;
#undef ENDS
}

gf_status gf_sg2_init_params(gf_sg2_net *net, uint64_t seed, gf_err *err) {
  size_t maxn = 0;
  for (int i = 0; i < net->n_tensors; i++) {
    size_t k = (size_t)gf_tensor_numel(&net->tensors[i].value);
    if (k > maxn) maxn = k;
  }
  float *h = malloc((maxn ? maxn : 1) * sizeof(float));
  if (!h) return gf_fail(err, GF_ENOMEM, "sg2: init scratch");
  gf_rng_purpose pur = net->role == GF_SG2_G ? GF_RNG_INIT_G : GF_RNG_INIT_D;
  gf_status st = GF_OK;
  for (int i = 0; i < net->n_tensors && st == GF_OK; i++) {
    gf_param *p = &net->tensors[i];
    size_t k = (size_t)gf_tensor_numel(&p->value);
    float sd, cst;
    init_rule(net, p, &sd, &cst);
    if (sd != 0.0f) {
      gf_philox_stream s = gf_rng_stream(seed, pur, 0, (uint32_t)i);
      gf_philox_normal(&s, h, k, cst, sd);
    } else {
      for (size_t j = 0; j < k; j++) h[j] = cst;
    }
    st = sg2_put_host(&p->value, h, err);
  }
  free(h);
  gf_arena *zero[3] = {&net->grads, &net->adam_m, &net->adam_v};
  for (int i = 0; i < 3 && st == GF_OK && net->training; i++) {
    gf_tensor all;
    st = gf_arena_view_all(zero[i], &all, err);
    if (st != GF_OK) break;
    size_t k = (size_t)gf_tensor_numel(&all);
    float *z = calloc(k ? k : 1, sizeof(float));
    if (!z) return gf_fail(err, GF_ENOMEM, "sg2: zeros");
    st = sg2_put_host(&all, z, err);
    free(z);
  }
  return st;
}
