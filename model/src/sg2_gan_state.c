/* sg2_gan_state.c - the training state of gf_sg2_gan as named tensors in
 * a safetensors file (gf/sg2_gan.h): save, and a load that checks every
 * entry before it changes anything. Device tensors go through host
 * copies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/safetensors.h"
#include "gf/text.h"
#include "sg2_gan_internal.h"

#define ST_NAME_MAX (GF_PARAM_NAME_MAX + 16)

enum { SC_PL_MEAN, SC_ADA_P, SC_ADA_RT, SC_SIGN_SUM, SC_SIGN_COUNT, SC_STEP,
       SC_NIMG, SC_ADAM_G, SC_ADAM_D, SC_N };
static const char *const k_scalar[SC_N] = {
    "state.pl_mean",    "state.ada_p", "state.ada_rt",
    "state.ada_sign_sum", "state.ada_sign_count", "state.step",
    "state.cur_nimg",   "state.adam_step_g", "state.adam_step_d"};
static const gf_st_dtype k_scalar_dt[SC_N] = {
    GF_ST_F32, GF_ST_F32, GF_ST_F64, GF_ST_F64, GF_ST_I64,
    GF_ST_I64, GF_ST_I64, GF_ST_I64, GF_ST_I64};

/* One tensor slot of the state: its name and the net tensor it is. */
typedef struct slot {
  char name[ST_NAME_MAX];
  gf_tensor *t;
} slot;

typedef struct layout {
  slot *s;
  size_t n, cap;
} layout;

static gf_status add(layout *L, gf_tensor *t, const char *prefix,
                     const char *name, gf_err *err) {
  if (L->n == L->cap) {
    size_t cap = L->cap ? 2 * L->cap : 256;
    slot *s = realloc(L->s, cap * sizeof *s);
    if (!s) return gf_fail(err, GF_ENOMEM, "sg2 state: layout");
    L->s = s;
    L->cap = cap;
  }
  slot *e = &L->s[L->n++];
  GF_FORMAT_FITS(e->name, sizeof e->name, "%s%s", prefix, name);
  e->t = t;
  return GF_OK;
}

static gf_status add_net(layout *L, gf_sg2_net *net, const char *which,
                         bool moments, gf_err *err) {
  char p[24];
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *q = &net->tensors[i];
    GF_FORMAT_FITS(p, sizeof p, "%s.", which);
    GF_TRY(add(L, &q->value, p, q->name, err));
  }
  if (!moments) return GF_OK;
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *q = &net->tensors[i];
    if (!q->trainable) continue;
    GF_FORMAT_FITS(p, sizeof p, "%s.adam_m.", which);
    GF_TRY(add(L, &q->adam_m, p, q->name, err));
    GF_FORMAT_FITS(p, sizeof p, "%s.adam_v.", which);
    GF_TRY(add(L, &q->adam_v, p, q->name, err));
  }
  return GF_OK;
}

static gf_status build(layout *L, gf_sg2_gan *gan, gf_err *err) {
  memset(L, 0, sizeof *L);
  GF_TRY(add_net(L, &gan->g, "G", true, err));
  GF_TRY(add_net(L, &gan->d, "D", true, err));
  return add_net(L, &gan->g_ema, "G_ema", false, err);
}

/* The scalars' values as bytes (8 each; f32 in the first 4). */
static void scalars_get(const gf_sg2_gan *gan, unsigned char v[SC_N][8]) {
  float f[2] = {gan->pl_mean, gan->ctl.p};
  double d[2] = {gan->ctl.rt, gan->ctl.sign_sum};
  int64_t i[5] = {gan->ctl.sign_count, gan->step, gan->cur_nimg,
                  gan->adam_step_g, gan->adam_step_d};
  memset(v, 0, (size_t)SC_N * 8);
  memcpy(v[SC_PL_MEAN], &f[0], 4);
  memcpy(v[SC_ADA_P], &f[1], 4);
  memcpy(v[SC_ADA_RT], &d[0], 8);
  memcpy(v[SC_SIGN_SUM], &d[1], 8);
  for (int k = 0; k < 5; k++) memcpy(v[SC_SIGN_COUNT + k], &i[k], 8);
}

gf_status gf_sg2_gan_save(const gf_sg2_gan *gan, const char *path,
                          gf_err *err) {
  return gf_sg2_gan_save_meta(gan, path, NULL, 0, err);
}

gf_status gf_sg2_gan_save_meta(const gf_sg2_gan *gan, const char *path,
                               const gf_st_kv *extra, size_t n_extra,
                               gf_err *err) {
  if (!gan || !gan->s || !path || (n_extra && !extra))
    return gf_fail(err, GF_EINVAL, "sg2 state: NULL gan, path or metadata");
  layout L;
  gf_sg2_gan *g = (gf_sg2_gan *)gan; /* the layout holds views only */
  gf_status st = build(&L, g, err);
  size_t nt = L.n + SC_N, total = 0;
  gf_st_tensor_desc *d = st == GF_OK ? calloc(nt, sizeof *d) : NULL;
  float *host = NULL;
  if (st == GF_OK && !d) st = gf_fail(err, GF_ENOMEM, "sg2 state: table");
  for (size_t i = 0; st == GF_OK && i < L.n; i++)
    total += (size_t)gf_tensor_numel(L.s[i].t);
  if (st == GF_OK) {
    host = malloc((total ? total : 1) * sizeof(float));
    if (!host) st = gf_fail(err, GF_ENOMEM, "sg2 state: host copy");
  }
  unsigned char sv[SC_N][8];
  scalars_get(gan, sv);
  size_t off = 0;
  for (size_t i = 0; st == GF_OK && i < L.n; i++) {
    gf_tensor *t = L.s[i].t, h;
    st = gf_tensor_view(&h, host + off, GF_F32, GF_DEV_CPU, t->ndim, t->shape,
                        err);
    if (st == GF_OK) st = gf_tensor_copy(&h, t, err);
    d[i] = (gf_st_tensor_desc){L.s[i].name, GF_ST_F32, t->ndim, t->shape,
                               host + off};
    off += (size_t)gf_tensor_numel(t);
  }
  if (st == GF_OK) {
    for (int k = 0; k < SC_N; k++)
      d[L.n + (size_t)k] =
          (gf_st_tensor_desc){k_scalar[k], k_scalar_dt[k], 0, NULL, sv[k]};
    gf_st_kv *meta = calloc(n_extra + 1, sizeof *meta);
    if (!meta) st = gf_fail(err, GF_ENOMEM, "sg2 state: metadata");
    for (size_t i = 0; meta && i < n_extra; i++) meta[i] = extra[i];
    if (meta) {
      meta[n_extra] = (gf_st_kv){GF_SG2_STATE_FORMAT_KEY, "1"};
      st = gf_st_write_file(path, d, nt, meta, n_extra + 1,
                            GF_ST_DATA_SHA256, err);
    }
    free(meta);
  }
  free(host);
  free(d);
  free(L.s);
  return st;
}

static gf_status check_entry(const gf_st_file *f, const char *name,
                             gf_st_dtype dt, int ndim, const int64_t *shape,
                             const gf_st_tensor **out, gf_err *err) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t)
    return gf_fail(err, GF_EFORMAT, "sg2 state: %s missing", name);
  bool ok = t->dtype == dt && t->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
  if (!ok) {
    char a[GF_ST_SHAPE_TEXT_MAX], b[GF_ST_SHAPE_TEXT_MAX];
    return gf_fail(err, GF_EFORMAT, "sg2 state: %s is %s %s, the net's %s %s",
                   name, gf_st_dtype_name(t->dtype),
                   gf_st_shape_text(t->shape, t->ndim, a),
                   gf_st_dtype_name(dt), gf_st_shape_text(shape, ndim, b));
  }
  *out = t;
  return GF_OK;
}

static gf_status load_file(gf_sg2_gan *gan, const gf_st_file *f,
                           const layout *L, gf_err *err) {
  const char *fmt = gf_st_meta_get(f, GF_SG2_STATE_FORMAT_KEY);
  if (!fmt || strcmp(fmt, "1") != 0)
    return gf_fail(err, GF_EFORMAT, "sg2 state: not a StyleGAN2 training "
                   "state (metadata %s %s)", GF_SG2_STATE_FORMAT_KEY,
                   fmt ? fmt : "missing");
  if (f->n_tensors != L->n + SC_N)
    return gf_fail(err, GF_EFORMAT, "sg2 state: %zu tensors, this config's "
                   "state has %zu", f->n_tensors, L->n + (size_t)SC_N);
  /* check everything first: nothing changes on failure */
  const gf_st_tensor **src = calloc(L->n + SC_N, sizeof *src);
  if (!src) return gf_fail(err, GF_ENOMEM, "sg2 state: table");
  gf_status st = GF_OK;
  for (size_t i = 0; st == GF_OK && i < L->n; i++)
    st = check_entry(f, L->s[i].name, GF_ST_F32, L->s[i].t->ndim,
                     L->s[i].t->shape, &src[i], err);
  for (int k = 0; st == GF_OK && k < SC_N; k++)
    st = check_entry(f, k_scalar[k], k_scalar_dt[k], 0, NULL, &src[L->n + k],
                     err);
  unsigned char v[SC_N][8];
  memset(v, 0, sizeof v);
  for (int k = 0; st == GF_OK && k < SC_N; k++)
    memcpy(v[k], src[L->n + k]->data, src[L->n + k]->nbytes);
  float f32[2] = {0};
  double f64[2] = {0};
  int64_t i64[5] = {0};
  if (st == GF_OK) {
    memcpy(&f32[0], v[SC_PL_MEAN], 4);
    memcpy(&f32[1], v[SC_ADA_P], 4);
    memcpy(&f64[0], v[SC_ADA_RT], 8);
    memcpy(&f64[1], v[SC_SIGN_SUM], 8);
    for (int k = 0; k < 5; k++) memcpy(&i64[k], v[SC_SIGN_COUNT + k], 8);
    for (int k = 0; k < 5; k++)
      if (i64[k] < 0)
        st = gf_fail(err, GF_EFORMAT, "sg2 state: %s %lld < 0",
                     k_scalar[SC_SIGN_COUNT + k], (long long)i64[k]);
    if (st == GF_OK && (!(f32[1] >= 0.0f) || !isfinite(f32[1]) ||
                        !isfinite(f32[0])))
      st = gf_fail(err, GF_EFORMAT, "sg2 state: ada_p %g, pl_mean %g",
                   (double)f32[1], (double)f32[0]);
    if (st == GF_OK && !(fabs(f64[1]) <= (double)i64[0]))
      st = gf_fail(err, GF_EFORMAT, "sg2 state: a sign sum of %g over %lld "
                   "logits", f64[1], (long long)i64[0]);
  }
  /* the data buffer is unaligned in general: through an aligned copy */
  float *buf = NULL;
  size_t cap = 0;
  for (size_t i = 0; st == GF_OK && i < L->n; i++) {
    size_t nb = src[i]->nbytes;
    if (nb > cap) {
      float *b = realloc(buf, nb);
      if (!b) {
        st = gf_fail(err, GF_ENOMEM, "sg2 state: staging");
        break;
      }
      buf = b;
      cap = nb;
    }
    gf_tensor h;
    memcpy(buf, src[i]->data, nb);
    st = gf_tensor_view(&h, buf, GF_F32, GF_DEV_CPU, L->s[i].t->ndim,
                        L->s[i].t->shape, err);
    if (st == GF_OK) st = gf_tensor_copy(L->s[i].t, &h, err);
  }
  free(buf);
  free(src);
  if (st != GF_OK) return st;
  gan->pl_mean = f32[0];
  gan->ctl.p = f32[1];
  gan->ctl.rt = f64[0];
  gan->ctl.sign_sum = f64[1];
  gan->ctl.sign_count = i64[0];
  gan->step = i64[1];
  gan->cur_nimg = i64[2];
  gan->adam_step_g = i64[3];
  gan->adam_step_d = i64[4];
  return GF_OK;
}

static gf_status load_parsed(gf_sg2_gan *gan, const gf_st_file *f,
                             gf_err *err) {
  layout L;
  gf_status st = build(&L, gan, err);
  if (st == GF_OK) st = load_file(gan, f, &L, err);
  free(L.s);
  return st;
}

gf_status gf_sg2_gan_load(gf_sg2_gan *gan, const char *path, gf_err *err) {
  if (!gan || !gan->s || !path)
    return gf_fail(err, GF_EINVAL, "sg2 state: NULL gan or path");
  gf_st_file f;
  gf_st_file_init(&f);
  GF_TRY(gf_st_open(&f, path, GF_ST_VERIFY_SHA256, err));
  gf_status st = load_parsed(gan, &f, err);
  gf_st_file_free(&f);
  return st;
}

gf_status gf_sg2_gan_load_buffer(gf_sg2_gan *gan, const void *buf, size_t len,
                                 unsigned flags, gf_err *err) {
  if (!gan || !gan->s || (!buf && len > 0))
    return gf_fail(err, GF_EINVAL, "sg2 state: NULL gan or buffer");
  gf_st_file f;
  gf_st_file_init(&f);
  GF_TRY(gf_st_parse(&f, buf, len, flags, err));
  gf_status st = load_parsed(gan, &f, err);
  gf_st_file_free(&f);
  return st;
}
