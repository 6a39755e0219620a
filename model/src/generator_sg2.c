/* generator_sg2.c - gf_generator's stylegan2 executors: an imported G_ema
 * (gf/sg2_net.h) loaded by name from generator.safetensors, and one pass
 * of mapping (truncation, style mixing) and synthesis (noise). See
 * gf/generator.h. */
#include "generator_sg2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/sg2_config.h"

void gf_gen_sg2_exec_free(gf_generator_exec *e) {
  gf_sg2_net_free(&e->sg);
  gf_tensor_free(&e->c);
  gf_tensor_free(&e->ws_mix);
}

/* Copies every tensor of f into net by name: as many as the net has, each
 * one it has with its shape (gf_sg2_load names what differs). */
static gf_status load_tensors(gf_sg2_net *net, const gf_st_file *f,
                              gf_err *err) {
  if (f->n_tensors != (size_t)net->n_tensors)
    return gf_fail(err, GF_EFORMAT, "generator.safetensors: %zu tensors, "
                   "the stylegan2 generator has %d", f->n_tensors,
                   net->n_tensors);
  for (size_t i = 0; i < f->n_tensors; i++) {
    const gf_st_tensor *t = &f->tensors[i];
    if (t->dtype != GF_ST_F32 || t->ndim > GF_MAX_DIMS)
      return gf_fail(err, GF_EFORMAT, "generator.safetensors: %s is %s "
                     "with %d dims, expected F32 with at most %d", t->name,
                     gf_st_dtype_name(t->dtype), t->ndim, GF_MAX_DIMS);
    int64_t one = 1;
    gf_tensor src;
    gf_status st = gf_tensor_view(&src, (void *)t->data, GF_F32, GF_DEV_CPU,
                                  t->ndim ? t->ndim : 1,
                                  t->ndim ? t->shape : &one, err);
    if (st == GF_OK) st = gf_sg2_load(net, t->name, &src, err);
    if (st != GF_OK)
      return st == GF_ENOTFOUND ? gf_fail(err, GF_EFORMAT,
                                          "generator.safetensors: %s", err->msg)
                                : st;
  }
  return GF_OK;
}

gf_status gf_gen_sg2_exec_init(const gf_generator *m, gf_generator_exec *e,
                               const gf_st_file *f, gf_err *err) {
  gf_sg2_config sc;
  GF_TRY(gf_model_config_sg2(&m->cfg, &sc, err));
  GF_TRY(gf_sg2_net_init(&e->sg, &e->ctx, &sc, GF_SG2_G, m->max_batch,
                         false, err));
  GF_TRY(load_tensors(&e->sg, f, err));
  gf_device dev = e->ctx.device;
  int di = e->ctx.device_index;
  int64_t zs[2] = {m->max_batch, sc.z_dim};
  GF_TRY(gf_tensor_init_on(&e->z, GF_F32, dev, di, 2, zs, err));
  if (sc.c_dim > 0) {
    int64_t cs[2] = {m->max_batch, sc.c_dim};
    GF_TRY(gf_tensor_init_on(&e->c, GF_F32, dev, di, 2, cs, err));
  }
  int64_t ws[3] = {m->max_batch, e->sg.num_ws, sc.w_dim};
  return gf_tensor_init_on(&e->ws_mix, GF_F32, dev, di, 3, ws, err);
}

/* A view of the first rows of buffer b, shaped [n, dims of b past 0]. */
static gf_status rows_view(gf_tensor *v, const gf_tensor *b, int n,
                           gf_err *err) {
  int64_t shape[GF_MAX_DIMS];
  memcpy(shape, b->shape, sizeof shape);
  shape[0] = n;
  gf_status st = gf_tensor_view(v, b->data, b->dtype, b->device, b->ndim,
                                shape, err);
  v->device_index = b->device_index;
  return st;
}

/* The mapping of host latents z [n] (and labels) through e's buffers:
 * *ws a view into the net's acts. */
static gf_status map_rows(gf_generator *m, gf_generator_exec *e,
                          const float *z, const int32_t *labels,
                          const gf_gen_style *s, int n, gf_tensor *ws,
                          gf_err *err) {
  gf_tensor zin, zhost, cin;
  int64_t zshape[2] = {n, m->cfg.z_dim};
  GF_TRY(gf_tensor_view(&zhost, (void *)z, GF_F32, GF_DEV_CPU, 2, zshape,
                        err));
  GF_TRY(rows_view(&zin, &e->z, n, err));
  GF_TRY(gf_tensor_copy(&zin, &zhost, err));
  const gf_tensor *c = NULL;
  if (m->num_classes > 0) {
    /* one-hot rows, as the official c */
    size_t k = (size_t)m->num_classes;
    float *oh = calloc((size_t)n * k, sizeof *oh);
    if (!oh) return gf_fail(err, GF_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) oh[(size_t)i * k + (size_t)labels[i]] = 1.0f;
    gf_tensor chost;
    int64_t cshape[2] = {n, (int64_t)k};
    gf_status st = gf_tensor_view(&chost, oh, GF_F32, GF_DEV_CPU, 2, cshape,
                                  err);
    if (st == GF_OK) st = rows_view(&cin, &e->c, n, err);
    if (st == GF_OK) st = gf_tensor_copy(&cin, &chost, err);
    free(oh);
    if (st != GF_OK) return st;
    c = &cin;
  }
  return gf_sg2_mapping_fwd(&e->sg, &e->ctx, &zin, c, s->psi,
                            s->trunc_cutoff, GF_MODE_INFER, ws, err);
}

/* n rows as one forward of the mapping and the synthesis. */
static gf_status forward(gf_generator *m, gf_generator_exec *e,
                         const float *z, const int32_t *labels,
                         const gf_gen_style *s, int n, float *out,
                         gf_err *err) {
  gf_tensor ws, mix, img, yhost;
  int num_ws = e->sg.num_ws;
  int64_t wd = e->sg.cfg.w_dim;
  if (s->mix_z) {
    /* the mixing latents' ws first: the next mapping overwrites acts */
    GF_TRY(map_rows(m, e, s->mix_z, labels, s, n, &ws, err));
    GF_TRY(rows_view(&mix, &e->ws_mix, n, err));
    GF_TRY(gf_tensor_copy(&mix, &ws, err));
  }
  GF_TRY(map_rows(m, e, z, labels, s, n, &ws, err));
  for (int i = 0; s->mix_z && i < n; i++) {
    /* row i's ws mix_from.. from the mixing latent's */
    size_t off = ((size_t)i * (size_t)num_ws + (size_t)s->mix_from) *
                 (size_t)wd * sizeof(float);
    int64_t len[1] = {(int64_t)(num_ws - s->mix_from) * wd};
    gf_tensor dst, src;
    GF_TRY(gf_tensor_view(&dst, (char *)ws.data + off, GF_F32, ws.device, 1,
                          len, err));
    dst.device_index = ws.device_index;
    GF_TRY(gf_tensor_view(&src, (char *)e->ws_mix.data + off, GF_F32,
                          e->ws_mix.device, 1, len, err));
    src.device_index = e->ws_mix.device_index;
    GF_TRY(gf_tensor_copy(&dst, &src, err));
  }
  GF_TRY(gf_sg2_synthesis_fwd(&e->sg, &e->ctx, &ws, s->noise, s->noise_seed,
                              0, s->noise_sample0, GF_MODE_INFER, &img,
                              err));
  int64_t oshape[2] = {n, (int64_t)m->image_numel};
  if ((size_t)gf_tensor_numel(&img) != (size_t)n * m->image_numel)
    return gf_fail(err, GF_ESTATE, "stylegan2 output has %lld values, "
                   "expected %zu", (long long)gf_tensor_numel(&img),
                   (size_t)n * m->image_numel);
  GF_TRY(gf_tensor_view(&yhost, out, GF_F32, GF_DEV_CPU, 2, oshape, err));
  return gf_tensor_copy(&yhost, &img, err);
}

/* Row by row: the mapping's and the convolutions' kernels round
 * differently at different batch sizes, so each row runs alone and its
 * bytes never depend on the rows beside it (batch invariance by
 * construction; the load probe confirms it). */
gf_status gf_gen_sg2_pass(gf_generator *m, gf_generator_exec *e,
                          const float *z, const int32_t *labels,
                          const gf_gen_style *s, int n, float *out,
                          gf_err *err) {
  size_t zd = (size_t)m->cfg.z_dim;
  for (int i = 0; i < n; i++) {
    gf_gen_style r = *s;
    r.noise_sample0 += i;
    if (r.mix_z) r.mix_z += (size_t)i * zd;
    GF_TRY(forward(m, e, z + (size_t)i * zd, labels ? labels + i : NULL, &r,
                   1, out + (size_t)i * m->image_numel, err));
  }
  return GF_OK;
}

void gf_gen_style_default(gf_gen_style *s) {
  memset(s, 0, sizeof *s);
  s->psi = 1.0f;
  s->noise = GF_SG2_NOISE_CONST;
}

int gf_gen_style_is_default(const gf_gen_style *s) {
  return s->psi == 1.0f && s->trunc_cutoff == 0 &&
         s->noise == GF_SG2_NOISE_CONST && !s->mix_z;
}

gf_status gf_generator_style_check(const gf_generator *m,
                                   const gf_gen_style *s, gf_err *err) {
  if (!m->is_sg2) {
    const char *what = s->psi != 1.0f ? "psi"
                       : s->trunc_cutoff ? "trunc_cutoff"
                       : s->noise != GF_SG2_NOISE_CONST ? "noise"
                       : s->mix_z ? "mix"
                                  : NULL;
    if (what)
      return gf_fail(err, GF_EINVAL, "%s: model '%s' (%s) is not a "
                     "stylegan2 model: it has no truncation, noise or "
                     "style mixing", what, m->name,
                     gf_arch_name(m->cfg.architecture));
    return GF_OK;
  }
  int num_ws = m->exec[0].sg.num_ws;
  if (!(isfinite(s->psi) && s->psi >= -8.0f && s->psi <= 8.0f))
    return gf_fail(err, GF_EINVAL, "psi: %g is outside [-8, 8]",
                   (double)s->psi);
  if (s->trunc_cutoff < 0 || s->trunc_cutoff > num_ws)
    return gf_fail(err, GF_EINVAL, "trunc_cutoff: %d is outside 0..%d "
                   "(the model's %d ws; 0: all)", s->trunc_cutoff, num_ws,
                   num_ws);
  if (s->noise != GF_SG2_NOISE_CONST && s->noise != GF_SG2_NOISE_RANDOM &&
      s->noise != GF_SG2_NOISE_NONE)
    return gf_fail(err, GF_EINVAL, "noise: unknown mode %d", (int)s->noise);
  if (s->mix_z && (s->mix_from < 1 || s->mix_from >= num_ws))
    return gf_fail(err, GF_EINVAL, "mix_from: %d is outside 1..%d (the "
                   "model's %d ws)", s->mix_from, num_ws - 1, num_ws);
  return GF_OK;
}
