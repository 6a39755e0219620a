/* generator.c - loading a verified model directory into inference
 * networks, reference counting, latents, forward, PNG. See gf/generator.h. */
#include <stdlib.h>
#include <string.h>

#include "gf/image_grid.h"
#include "gf/text.h"
#include "gf/mlmodel.h"
#include "gf/safetensors.h"
#include "gf/generator.h"
#include "generator_sg2.h"

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void model_free(gf_generator *m) {
  if (!m) return;
  if (m->resident) atomic_fetch_sub(m->resident, 1);
  for (int i = 0; m->exec && i < m->n_exec; i++) {
    gf_generator_exec *e = &m->exec[i];
    if (!e->ready) continue;
    gf_tensor_free(&e->z);
    gf_tensor_free(&e->labels);
    gf_gen_sg2_exec_free(e);
    gf_net_free(&e->g);
    gf_ctx_free(&e->ctx);
    pthread_mutex_destroy(&e->lock);
  }
  /* after every executor: their nets read these weights, their ctxs
   * these laid-out forms */
  gf_net_free(&m->weights);
  gf_frozen_store_free(m->frozen);
  free(m->exec);
  free(m->name);
  free(m->version);
  free(m->dir);
  free(m->run_id);
  for (int i = 0; i < m->n_class_names; i++) free(m->class_names[i]);
  free(m->class_names);
  free(m);
}

const char *gf_gen_precision_name(gf_gen_precision p) {
  return p == GF_GEN_BF16 ? "bf16" : p == GF_GEN_INT8 ? "int8" : "fp32";
}

void gf_generator_ref(gf_generator *m) { atomic_fetch_add(&m->refs, 1); }

void gf_generator_unref(gf_generator *m) {
  if (m && atomic_fetch_sub(&m->refs, 1) == 1) model_free(m);
}

/* Copies the file's tensors into g: every tensor of g present as F32 with
 * its numel, and the file holding nothing else. */
static gf_status copy_weights(gf_net *g, const gf_st_file *f, gf_err *err) {
  if (f->n_tensors != (size_t)g->n_tensors)
    return gf_fail(err, GF_EFORMAT,
                   "generator.safetensors: %zu tensors, the %s generator "
                   "has %d", f->n_tensors, gf_arch_name(g->cfg.architecture),
                   g->n_tensors);
  for (int i = 0; i < g->n_tensors; i++) {
    gf_param *p = &g->tensors[i];
    const char *name = strncmp(p->name, "g.", 2) == 0 ? p->name + 2 : p->name;
    const gf_st_tensor *t = gf_st_find(f, name);
    if (!t)
      return gf_fail(err, GF_EFORMAT, "generator.safetensors: %s missing",
                     name);
    size_t numel = (size_t)gf_tensor_numel(&p->value);
    if (t->dtype != GF_ST_F32 || t->numel != numel)
      return gf_fail(err, GF_EFORMAT,
                     "generator.safetensors: %s is %s with %zu values, "
                     "expected F32 with %zu", name, gf_st_dtype_name(t->dtype),
                     t->numel, numel);
    /* The file's bytes (host, maybe unaligned) into the tensor, wherever
     * the ctx keeps it. */
    gf_tensor src;
    gf_status st = gf_tensor_view(&src, (void *)t->data, GF_F32, GF_DEV_CPU,
                                  p->value.ndim, p->value.shape, err);
    if (st == GF_OK) st = gf_tensor_copy(&p->value, &src, err);
    if (st != GF_OK) return st;
  }
  return GF_OK;
}

static gf_status set_labels(gf_generator_exec *e, const int32_t *labels,
                            int n, gf_err *err);

/* Executor e's ctx: the worker's own stream, primitive cache and scratch,
 * with frozen inference on and the version's laid-out weights in store
 * (shared with every executor). */
static gf_status exec_ctx_init(gf_generator_exec *e, const gf_generator_opts *o,
                               gf_frozen_store *store, gf_err *err) {
  gf_ctx_config cc = {o->backend, o->threads, o->device_index, GF_CPU_LAYOUT_AUTO};
  gf_status st = gf_ctx_init(&e->ctx, &cc, err);
  if (st != GF_OK) return st;
  /* Every pass runs the kernels a lone image gets (gf_ctx.frozen_batch),
   * on weights laid out once, for every executor. */
  if (store) { /* stylegan2 (no store): plain inference, its modulated
                 weights change every pass */
    e->ctx.frozen_batch = GF_GENERATOR_REF_BATCH;
    e->ctx.frozen_store = store;
  }
  if (o->precision == GF_GEN_BF16 || o->precision == GF_GEN_INT8) {
    st = o->precision == GF_GEN_BF16 ? gf_ctx_bf16_check(&e->ctx, err)
                                     : gf_ctx_int8_check(&e->ctx, err);
    if (st != GF_OK) {
      gf_ctx_free(&e->ctx);
      return st;
    }
    if (o->precision == GF_GEN_BF16) e->ctx.frozen_bf16 = 1;
    else e->ctx.frozen_int8 = GF_INT8_CALIBRATE;
  }
  if (pthread_mutex_init(&e->lock, NULL) != 0) {
    gf_ctx_free(&e->ctx);
    return gf_fail(err, GF_ENOMEM, "pthread_mutex_init failed");
  }
  e->ready = 1; /* from here model_free releases what is set */
  return GF_OK;
}

/* Executor e's per-thread state over weights w: G's activations for
 * max_batch rows, the latent and label buffers. */
static gf_status exec_net_init(gf_generator_exec *e, const gf_net *w,
                               const gf_generator_opts *o, gf_err *err) {
  GF_TRY(gf_net_init_shared(&e->g, &e->ctx, w, o->max_batch, err));
  int64_t zshape[2] = {o->max_batch, w->cfg.z_dim};
  GF_TRY(gf_tensor_init_on(&e->z, GF_F32, e->ctx.device, e->ctx.device_index,
                           2, zshape, err));
  if (w->cfg.num_classes > 0) {
    int64_t lshape[1] = {o->max_batch};
    GF_TRY(gf_tensor_init_on(&e->labels, GF_I32, e->ctx.device,
                             e->ctx.device_index, 1, lshape, err));
  }
  /* No warm-up here: the load's invariance probe runs every pass size on
   * every executor, which builds their kernels. */
  return GF_OK;
}

/* int8: the ranges of every convolution's input over the calibration set,
 * run in f32 on executor 0 into the store the executors share; then every
 * executor runs int8 (gf_ctx.frozen_int8). */
static gf_status calibrate_int8(gf_generator *m, gf_err *err) {
  gf_generator_exec *e = &m->exec[0];
  const gf_model_config *cfg = &m->cfg;
  int mb = m->max_batch;
  /* sample k of the calibration set has class k % num_classes */
  int32_t *lab = NULL;
  if (cfg->num_classes > 0 && !(lab = malloc((size_t)mb * sizeof *lab)))
    return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status st = GF_OK;
  for (int at = 0; at < GF_GENERATOR_CALIB_N && st == GF_OK;) {
    int n = GF_GENERATOR_CALIB_N - at < mb ? GF_GENERATOR_CALIB_N - at : mb;
    gf_tensor zc, yc;
    int64_t shape[2] = {n, cfg->z_dim};
    st = gf_tensor_view(&zc, e->z.data, GF_F32, e->z.device, 2, shape, err);
    if (st == GF_OK)
      st = gf_latent_sample(&zc, GF_GENERATOR_CALIB_SEED, GF_RNG_SAMPLE, 0,
                            at, err);
    for (int i = 0; lab && i < n; i++) lab[i] = (at + i) % cfg->num_classes;
    if (st == GF_OK && lab) st = set_labels(e, lab, n, err);
    if (st == GF_OK)
      st = gf_net_forward(&e->g, &e->ctx, &zc, GF_MODE_INFER, 0, 0, 0, 0,
                          &yc, err);
    at += n;
  }
  free(lab);
  for (int k = 0; st == GF_OK && k < m->n_exec; k++)
    m->exec[k].ctx.frozen_int8 = GF_INT8_RUN;
  return st;
}

/* The first n of e's labels from host labels[n], set on its G for the next
 * forward (e's lock held, or e not yet shared). */
static gf_status set_labels(gf_generator_exec *e, const int32_t *labels,
                            int n, gf_err *err) {
  gf_tensor lhost, lin;
  int64_t shape[1] = {n};
  gf_status st = gf_tensor_view(&lhost, (void *)labels, GF_I32, GF_DEV_CPU,
                                1, shape, err);
  if (st == GF_OK)
    st = gf_tensor_view(&lin, e->labels.data, GF_I32, e->labels.device, 1,
                        shape, err);
  lin.device_index = e->labels.device_index;
  if (st == GF_OK) st = gf_tensor_copy(&lin, &lhost, err);
  if (st == GF_OK) st = gf_net_set_labels(&e->g, &lin, err);
  return st;
}

/* The largest pass of at most n rows: max_batch, else a power of two. */
static int pass_rows(const gf_generator *m, int n) {
  if (n >= m->max_batch) return m->max_batch;
  int k = 1;
  while (k * 2 <= n) k *= 2;
  return k;
}

int gf_generator_passes(const gf_generator *m, int n) {
  int k = 0;
  for (int at = 0; at < n; k++) at += pass_rows(m, n - at);
  return k;
}

/* One forward of n <= max_batch rows on executor e (its lock held);
 * s: the pass's style (stylegan2; NULL: the default). */
static gf_status run_pass(gf_generator *m, gf_generator_exec *e,
                          const float *z, const int32_t *labels,
                          const gf_gen_style *s, int n, float *out,
                          gf_err *err) {
  if (m->is_sg2) {
    gf_gen_style def;
    gf_gen_style_default(&def);
    return gf_gen_sg2_pass(m, e, z, labels, s ? s : &def, n, out, err);
  }
  /* Host latents in, host images out, through the executor's tensors
   * (host or device memory, as its ctx keeps them). */
  gf_tensor zhost, zin, y, yhost;
  int64_t shape[2] = {n, m->cfg.z_dim};
  int64_t oshape[2] = {n, (int64_t)m->image_numel};
  gf_status st = gf_tensor_view(&zhost, (void *)z, GF_F32, GF_DEV_CPU, 2,
                                shape, err);
  /* zin: the first n rows of e->z. */
  if (st == GF_OK)
    st = gf_tensor_view(&zin, e->z.data, GF_F32, e->z.device, 2, shape, err);
  zin.device_index = e->z.device_index;
  if (st == GF_OK) st = gf_tensor_copy(&zin, &zhost, err);
  if (st == GF_OK && m->num_classes > 0) st = set_labels(e, labels, n, err);
  if (st == GF_OK)
    st = gf_net_forward(&e->g, &e->ctx, &zin, GF_MODE_INFER, 0, 0, 0, 0, &y,
                        err);
  if (st == GF_OK && (size_t)gf_tensor_numel(&y) != (size_t)n * m->image_numel)
    st = gf_fail(err, GF_ESTATE, "generator output has %lld values, "
                 "expected %zu", (long long)gf_tensor_numel(&y),
                 (size_t)n * m->image_numel);
  if (st == GF_OK)
    st = gf_tensor_view(&yhost, out, GF_F32, GF_DEV_CPU, 2, oshape, err);
  if (st == GF_OK) st = gf_tensor_copy(&yhost, &y, err);
  return st;
}

/* Runs n rows on executor k as passes of pass_rows() rows. */
static gf_status run_rows(gf_generator *m, int k, const float *z,
                          const int32_t *labels, const gf_gen_style *s,
                          int n, float *out, gf_err *err) {
  gf_generator_exec *e = &m->exec[k % m->n_exec];
  size_t zd = (size_t)m->cfg.z_dim;
  gf_status st = GF_OK;
  pthread_mutex_lock(&e->lock);
  for (int at = 0; st == GF_OK && at < n;) {
    int r = pass_rows(m, n - at);
    gf_gen_style ps; /* the pass's rows of s */
    if (s) {
      ps = *s;
      ps.noise_sample0 += at;
      if (ps.mix_z) ps.mix_z += (size_t)at * zd;
    }
    st = run_pass(m, e, z + (size_t)at * zd, labels ? labels + at : NULL,
                  s ? &ps : NULL, r, out + (size_t)at * m->image_numel, err);
    at += r;
  }
  pthread_mutex_unlock(&e->lock);
  return st;
}

/* Probe: max_batch latents (sample k of a fixed seed) run one by one on
 * executor 0, then as every pass size on every executor; batch_invariant
 * is set when each row's bytes are the same everywhere. Builds every
 * executor's primitives for every pass size on the way. Fails only on an
 * error; a difference is a finding (invariance_note says where). */
static gf_status check_invariance(gf_generator *m, gf_err *err) {
  size_t zd = (size_t)m->cfg.z_dim, inum = m->image_numel;
  int P = m->max_batch;
  float *z = malloc((size_t)P * zd * sizeof *z);
  float *one = malloc((size_t)P * inum * sizeof *one);
  float *many = malloc((size_t)P * inum * sizeof *many);
  int32_t *lab = m->num_classes > 0 ? malloc((size_t)P * sizeof *lab) : NULL;
  uint64_t seed = GF_GENERATOR_PROBE_SEED;
  gf_status st = GF_OK;
  if (!z || !one || !many || (m->num_classes > 0 && !lab))
    st = gf_fail(err, GF_ENOMEM, "out of memory");
  for (int i = 0; lab && i < P; i++) lab[i] = i % m->num_classes;
  if (st == GF_OK) st = gf_generator_latents(m, &seed, P, 0, z, err);
  gf_generator_exec *e0 = &m->exec[0];
  for (int r = 0; st == GF_OK && r < P; r++) {
    pthread_mutex_lock(&e0->lock);
    st = run_pass(m, e0, z + (size_t)r * zd, lab ? lab + r : NULL, NULL, 1,
                  one + (size_t)r * inum, err);
    pthread_mutex_unlock(&e0->lock);
  }
  m->batch_invariant = 1;
  m->invariance_note[0] = '\0';
  for (int k = 0; st == GF_OK && k < m->n_exec; k++) {
    gf_generator_exec *e = &m->exec[k];
    for (int n = 1; st == GF_OK; n = n * 2 < P ? n * 2 : P) {
      pthread_mutex_lock(&e->lock);
      st = run_pass(m, e, z, lab, NULL, n, many, err);
      pthread_mutex_unlock(&e->lock);
      if (st == GF_OK && m->batch_invariant &&
          memcmp(one, many, (size_t)n * inum * sizeof *one) != 0) {
        m->batch_invariant = 0;
        st = gf_format(m->invariance_note, sizeof m->invariance_note, err,
                       "invariance note", "rows of a %d-row pass on "
                       "executor %d differ from the same rows run alone",
                       n, k);
      }
      if (n == P) break;
    }
  }
  free(z);
  free(one);
  free(many);
  free(lab);
  return st;
}

gf_status gf_generator_load(const char *dir, const char *name,
                            const char *version, const gf_generator_opts *o,
                            gf_generator **out, gf_err *err) {
  *out = NULL;
  if (!dir || !name || !version || !o || o->n_exec < 1 || o->threads < 0 ||
      o->max_batch < 1 ||
      (o->precision != GF_GEN_FP32 && o->precision != GF_GEN_BF16 &&
       o->precision != GF_GEN_INT8))
    return gf_fail(err, GF_EINVAL, "gf_generator_load: bad arguments");
  gf_mlmodel mm;
  gf_st_file f;
  gf_mlmodel_init(&mm);
  gf_st_file_init(&f);
  gf_status st = gf_mlmodel_read(dir, &mm, err);
  if (st == GF_OK) st = gf_mlmodel_load_generator(&mm, &f, err);
  if (st != GF_OK) {
    gf_mlmodel_free(&mm);
    return st;
  }
  gf_generator *m = calloc(1, sizeof *m);
  if (!m || !(m->exec = calloc((size_t)o->n_exec, sizeof *m->exec))) {
    free(m);
    st = gf_fail(err, GF_ENOMEM, "out of memory loading %s", dir);
    goto done;
  }
  atomic_init(&m->refs, 1);
  m->resident = o->resident;
  if (m->resident) atomic_fetch_add(m->resident, 1);
  m->n_exec = o->n_exec;
  m->cfg = mm.config;
  m->num_classes = mm.config.num_classes;
  /* the class names move from mm to m */
  m->class_names = mm.class_names;
  m->n_class_names = mm.n_class_names;
  mm.class_names = NULL;
  mm.n_class_names = 0;
  m->max_batch = o->max_batch;
  m->precision = o->precision;
  m->is_sg2 = mm.config.architecture == GF_ARCH_STYLEGAN2;
  m->image_numel = (size_t)mm.config.image_channels *
                   (size_t)mm.config.image_height *
                   (size_t)mm.config.image_width;
  m->name = strdup(name);
  m->version = strdup(version);
  m->dir = strdup(dir);
  m->run_id = dup_or_null(mm.run_id);
  if (!m->name || !m->version || !m->dir || (mm.run_id && !m->run_id)) {
    st = gf_fail(err, GF_ENOMEM, "out of memory loading %s", dir);
    model_free(m);
    goto done;
  }
  /* One copy of the weights (and, in the store, of their laid-out forms)
   * for the version; each executor adds what its forward writes. */
  if (m->is_sg2 && o->precision != GF_GEN_FP32)
    st = gf_fail(err, GF_EUNSUPPORTED, "%s: a stylegan2 model runs in fp32 "
                 "only, not %s", dir, gf_gen_precision_name(o->precision));
  if (st == GF_OK) st = gf_frozen_store_new(&m->frozen, err);
  for (int i = 0; i < o->n_exec && st == GF_OK; i++)
    st = exec_ctx_init(&m->exec[i], o, m->is_sg2 ? NULL : m->frozen, err);
  /* stylegan2: each executor its own G over f's tensors */
  for (int i = 0; m->is_sg2 && i < o->n_exec && st == GF_OK; i++)
    st = gf_gen_sg2_exec_init(m, &m->exec[i], &f, err);
  if (st == GF_OK && !m->is_sg2)
    st = gf_net_init(&m->weights, &m->exec[0].ctx, &mm.config, GF_NET_G, 0,
                     false, err);
  if (st == GF_OK && !m->is_sg2) st = copy_weights(&m->weights, &f, err);
  for (int i = 0; !m->is_sg2 && i < o->n_exec && st == GF_OK; i++)
    st = exec_net_init(&m->exec[i], &m->weights, o, err);
  if (st == GF_OK && m->exec[0].ctx.frozen_int8 == GF_INT8_CALIBRATE)
    st = calibrate_int8(m, err);
  if (st == GF_OK) st = check_invariance(m, err);
  if (st != GF_OK) model_free(m);
  else *out = m;
done:
  gf_st_file_free(&f);
  gf_mlmodel_free(&mm);
  return st;
}

gf_status gf_generator_latents(const gf_generator *m, const uint64_t *seeds,
                               int n, int per_image, float *z, gf_err *err) {
  if (n < 1) return gf_fail(err, GF_EINVAL, "n must be at least 1, not %d", n);
  int zd = m->cfg.z_dim;
  gf_tensor t;
  if (!per_image) {
    int64_t shape[2] = {n, zd};
    gf_status st = gf_tensor_view(&t, z, GF_F32, GF_DEV_CPU, 2, shape, err);
    if (st) return st;
    return gf_latent_sample(&t, seeds[0], GF_RNG_SAMPLE, 0, 0, err);
  }
  int64_t shape[2] = {1, zd};
  for (int k = 0; k < n; k++) {
    gf_status st = gf_tensor_view(&t, z + (size_t)k * (size_t)zd, GF_F32,
                                  GF_DEV_CPU, 2, shape, err);
    if (st == GF_OK)
      st = gf_latent_sample(&t, seeds[k], GF_RNG_SAMPLE, 0, 0, err);
    if (st) return st;
  }
  return GF_OK;
}

gf_status gf_generator_class_index(const gf_generator *m, const char *text,
                                   int *k, gf_err *err) {
  if (m->num_classes <= 0)
    return gf_fail(err, GF_EINVAL, "model '%s' is not class-conditional: it "
                   "takes no class", m->name);
  /* a view of m's config and names: what the lookup reads */
  gf_mlmodel view;
  gf_mlmodel_init(&view);
  view.config = m->cfg;
  view.class_names = m->class_names;
  view.n_class_names = m->n_class_names;
  return gf_mlmodel_class_index(&view, text, k, err);
}

gf_status gf_generator_class_labels(const gf_generator *m, const char *spec,
                                    int n, int32_t *labels, gf_err *err) {
  if (!spec || n < 1)
    return gf_fail(err, GF_EINVAL, "class: bad arguments");
  int c = 1;
  for (const char *p = spec; *p; p++) c += *p == ',';
  if (c != 1 && (c > n || n % c != 0))
    return gf_fail(err, GF_EINVAL, "class: %d classes for %d images (give "
                   "one class, or a list whose length divides the number "
                   "of images)", c, n);
  const char *p = spec;
  for (int i = 0; i < c; i++) {
    size_t len = strcspn(p, ",");
    char item[72];
    if (len >= sizeof item)
      return gf_fail(err, GF_EINVAL, "class: '%.32s...' is too long", p);
    memcpy(item, p, len);
    item[len] = '\0';
    int k;
    GF_TRY(gf_generator_class_index(m, item, &k, err));
    int per = n / c;
    for (int t = i * per; t < (i + 1) * per; t++) labels[t] = k;
    p += len;
    if (*p == ',') p++;
  }
  return GF_OK;
}

/* n >= 1 and the labels m needs, each in range. */
static gf_status rows_check(const gf_generator *m, const int32_t *labels,
                            int n, gf_err *err) {
  if (n < 1)
    return gf_fail(err, GF_EINVAL, "n must be at least 1, not %d", n);
  if (m->num_classes > 0 && !labels)
    return gf_fail(err, GF_EINVAL, "model '%s' is class-conditional: every "
                   "image needs a class 0..%d", m->name, m->num_classes - 1);
  if (m->num_classes == 0 && labels)
    return gf_fail(err, GF_EINVAL, "model '%s' is not class-conditional: it "
                   "takes no class", m->name);
  for (int i = 0; labels && i < n; i++)
    if (labels[i] < 0 || labels[i] >= m->num_classes)
      return gf_fail(err, GF_EINVAL, "image %d: class %d is outside "
                     "0..%d", i, (int)labels[i], m->num_classes - 1);
  return GF_OK;
}

gf_status gf_generator_run_labeled(gf_generator *m, int exec_idx,
                                   const float *z, const int32_t *labels,
                                   int n, float *out, gf_err *err) {
  GF_TRY(rows_check(m, labels, n, err));
  if (exec_idx < 0) exec_idx = 0;
  return run_rows(m, exec_idx, z, labels, NULL, n, out, err);
}

gf_status gf_generator_run_styled(gf_generator *m, int exec_idx,
                                  const float *z, const int32_t *labels,
                                  const gf_gen_style *s, int n, float *out,
                                  gf_err *err) {
  if (!s || gf_gen_style_is_default(s))
    return gf_generator_run_labeled(m, exec_idx, z, labels, n, out, err);
  GF_TRY(gf_generator_style_check(m, s, err));
  GF_TRY(rows_check(m, labels, n, err));
  return run_rows(m, exec_idx < 0 ? 0 : exec_idx, z, labels, s, n, out, err);
}

gf_status gf_generator_run(gf_generator *m, int exec_idx, const float *z,
                           int n, float *out, gf_err *err) {
  return gf_generator_run_labeled(m, exec_idx, z, NULL, n, out, err);
}

gf_status gf_generator_png(const gf_generator *m, const float *images,
                           int n, uint8_t **png, size_t *png_len,
                           gf_err *err) {
  *png = NULL;
  *png_len = 0;
  int nrow = 1;
  while (nrow * nrow < n) nrow++;
  uint8_t *pix = NULL;
  int w, h, c;
  gf_status st = gf_grid_to_rgb8(images, n, m->cfg.image_channels,
                                 m->cfg.image_height, m->cfg.image_width,
                                 nrow, n > 1 ? GF_GRID_DEFAULT_PAD : 0, &pix,
                                 &w, &h, &c, err);
  if (st != GF_OK) return st;
  st = gf_png_encode(pix, w, h, c, png, png_len, err);
  free(pix);
  return st;
}
