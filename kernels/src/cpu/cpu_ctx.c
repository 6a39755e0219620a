/* cpu_ctx.c - what every file of the CPU backend uses: oneDNN status
 * checks and memory descriptors, thread control, the primitive cache with
 * its reorders and frozen weights, scratch buffers, and two small loops.
 * The backend's state is made and freed, and its dispatch table filled, in
 * cpu_backend.c, above the files that do the arithmetic (cpu_dnnl.c for
 * oneDNN's primitives, cpu_eltwise.c, cpu_gan_ops.c, cpu_pool.c and the
 * others for plain C loops), so none of them calls back into a file that
 * calls it. */
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

gf_status gf_dnnl_check(dnnl_status_t s, const char *call, const char *file,
                        int line, gf_err *err) {
  if (s == dnnl_success) return GF_OK;
  const char *what = "error";
  switch (s) {
  case dnnl_out_of_memory: what = "out of memory"; break;
  case dnnl_invalid_arguments: what = "invalid arguments"; break;
  case dnnl_unimplemented: what = "unimplemented"; break;
  case dnnl_iterator_ends: what = "iterator ends"; break;
  case dnnl_runtime_error: what = "runtime error"; break;
  case dnnl_not_required: what = "not required"; break;
  default: break;
  }
  return gf_fail(err, s == dnnl_out_of_memory ? GF_ENOMEM : GF_EDEVICE,
                 "%s:%d: oneDNN %s failed: %s (%d)", file, line, call, what,
                 (int)s);
}

dnnl_status_t gf_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                    dnnl_format_tag_t tag) {
  return gf_md_t(md, ndims, dims, dnnl_f32, tag);
}

dnnl_status_t gf_md_t(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                      dnnl_data_type_t type, dnnl_format_tag_t tag) {
  dnnl_dims_t d;
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  return dnnl_memory_desc_init_by_tag(md, ndims, d, type, tag);
}

gf_status gf_cpu_lowp_check(int int8, gf_err *err) {
  /* AMX machines report a superset of both */
  dnnl_cpu_isa_t need = int8 ? dnnl_cpu_isa_avx512_core_vnni
                             : dnnl_cpu_isa_avx512_core_bf16;
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if ((isa & need) == need) return GF_OK;
  return gf_fail(err, GF_EUNSUPPORTED, "%s: this processor has neither "
                 "%s nor AMX (oneDNN's ISA here: 0x%x), so %s would %s",
                 int8 ? "int8" : "bf16", int8 ? "AVX512_VNNI" : "AVX512_BF16",
                 (unsigned)isa, int8 ? "int8" : "bf16",
                 int8 ? "be slower than fp32"
                      : "run emulated, slower than fp32");
}

int gf_cpu_threads_begin(const gf_ctx *ctx) {
  int prev = omp_get_max_threads();
  if (prev != ctx->nthreads) omp_set_num_threads(ctx->nthreads);
  return prev;
}

void gf_cpu_threads_end(int prev) {
  if (omp_get_max_threads() != prev) omp_set_num_threads(prev);
}

static void prim_destroy(gf_prim *p) {
  if (!p) return;
  for (int i = 0; i < p->nargs; i++) {
    if (p->mem[i]) dnnl_memory_destroy(p->mem[i]);
    if (p->inner[i]) dnnl_memory_destroy(p->inner[i]);
    if (p->reorder[i]) dnnl_primitive_destroy(p->reorder[i]);
  }
  if (p->scratch_mem) dnnl_memory_destroy(p->scratch_mem);
  if (p->prim) dnnl_primitive_destroy(p->prim);
  if (p->pd) dnnl_primitive_desc_destroy(p->pd);
  free(p);
}

static int key_eq(const gf_prim_key *a, const gf_prim_key *b) {
  return a->kind == b->kind && a->n == b->n &&
         memcmp(a->v, b->v, sizeof(int64_t) * (size_t)a->n) == 0;
}

gf_prim *gf_cpu_prim_find(gf_ctx *ctx, const gf_prim_key *key) {
  gf_cpu_state *st = gf_cpu(ctx);
  for (size_t i = st->ncache; i-- > 0;) {
    if (key_eq(&st->cache[i]->key, key)) {
      st->hits++;
      return st->cache[i];
    }
  }
  return NULL;
}

/* A primitive attribute with the user scratchpad and, when osc is given,
 * output scales; the caller destroys it. */
static dnnl_status_t make_attr(const gf_prim_scales *osc,
                               dnnl_primitive_attr_t *attr) {
  dnnl_status_t s = dnnl_primitive_attr_create(attr);
  if (s == dnnl_success)
    s = dnnl_primitive_attr_set_scratchpad_mode(*attr,
                                                dnnl_scratchpad_mode_user);
  if (s == dnnl_success && osc && osc->n > 0)
    s = dnnl_primitive_attr_set_output_scales(*attr, osc->n, osc->mask,
                                              osc->v);
  return s;
}

gf_status gf_cpu_pd_create(gf_ctx *ctx, const_dnnl_op_desc_t desc,
                           const_dnnl_primitive_desc_t hint,
                           dnnl_primitive_desc_t *out, gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  dnnl_primitive_attr_t attr = NULL;
  *out = NULL;
  dnnl_status_t s = make_attr(NULL, &attr);
  if (s == dnnl_success)
    s = dnnl_primitive_desc_create(out, desc, attr, st->engine, hint);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return gf_dnnl_check(s, "dnnl_primitive_desc_create", __FILE__, __LINE__,
                       err);
}

/* Outputs of a primitive are reordered after it runs, inputs before. */
static bool is_output(int arg) {
  return arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC ||
         arg == DNNL_ARG_DIFF_WEIGHTS || arg == DNNL_ARG_DIFF_BIAS ||
         arg == DNNL_ARG_DIFF_SCALE || arg == DNNL_ARG_DIFF_SHIFT;
}

/* Arena parts start on page boundaries, as oneDNN's own buffers do. */
static size_t arena_round(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

/* Gives argument i an internal buffer in the primitive's layout `want` and
 * the reorder between it and the caller's plain layout `user`. */
static gf_status add_reorder(gf_cpu_state *st, gf_prim *p, int i,
                             const dnnl_memory_desc_t *want,
                             const dnnl_memory_desc_t *user, bool frozen,
                             const gf_prim_scales *sc, gf_err *err) {
  DNNL_TRY(dnnl_memory_create(&p->inner[i], want, st->engine,
                              DNNL_MEMORY_NONE));
  size_t bytes = arena_round(dnnl_memory_desc_get_size(want));
  if (frozen && p->arg[i] == DNNL_ARG_WEIGHTS) {
    /* frozen weights: the ctx's buffer for (caller's buffer, want), found
     * or made at the first execution (frozen_weights) */
    p->frozen[i] = true;
  } else {
    p->inner_off[i] = p->arena_bytes;
    p->arena_bytes += bytes;
  }
  bool out = is_output(p->arg[i]);
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t s = dnnl_success;
  if (sc && sc->n > 0) {
    /* quantising reorder: values times the scales, rounded and saturated */
    s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
      s = dnnl_primitive_attr_set_output_scales(attr, sc->n, sc->mask, sc->v);
  }
  if (s == dnnl_success)
    s = dnnl_reorder_primitive_desc_create(&rpd, out ? want : user,
                                           st->engine, out ? user : want,
                                           st->engine, attr);
  if (attr) dnnl_primitive_attr_destroy(attr);
  DNNL_TRY(s);
  s = dnnl_primitive_create(&p->reorder[i], rpd);
  dnnl_primitive_desc_destroy(rpd);
  DNNL_TRY(s);
  return GF_OK;
}

static gf_status run_reorder(gf_cpu_state *st, gf_prim *p, int i,
                             gf_err *err) {
  bool out = is_output(p->arg[i]);
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, out ? p->inner[i] : p->mem[i]},
                          {DNNL_ARG_TO, out ? p->mem[i] : p->inner[i]}};
  DNNL_TRY(dnnl_primitive_execute(p->reorder[i], st->stream, 2, a));
  return GF_OK;
}

/* Points p's argument i, frozen weights at src, at their buffer in
 * inner[i]'s layout: one per (weights, layout) in the ctx's frozen tables
 * (its own or its store's, gf_cpu_frozen_of), shared by every primitive
 * of that layer whatever its pass size, and by every ctx of the store.
 * A buffer not there yet is made, reordered into from src (whose handle
 * mem[i] holds) and only then added, all under the tables' lock: a ctx
 * never finds a buffer that is not filled yet. */
static gf_status frozen_weights(gf_ctx *ctx, gf_prim *p, int i,
                                const void *src, gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  gf_cpu_frozen *fz = gf_cpu_frozen_of(ctx);
  const dnnl_memory_desc_t *md = NULL;
  DNNL_TRY(dnnl_memory_get_memory_desc(p->inner[i], &md));
  pthread_mutex_lock(&fz->lock);
  void *buf = NULL;
  for (size_t k = 0; k < fz->nmd && !buf; k++)
    if (fz->md[k].src == src && dnnl_memory_desc_equal(&fz->md[k].md, md))
      buf = fz->md[k].buf;
  gf_status rc = GF_OK;
  if (!buf) {
    size_t bytes = arena_round(dnnl_memory_desc_get_size(md));
    gf_cpu_frozen_md *t = realloc(fz->md, (fz->nmd + 1) * sizeof *t);
    if (t) fz->md = t;
    void *b = t ? aligned_alloc(4096, bytes) : NULL;
    if (!t) rc = gf_fail(err, GF_ENOMEM, "cpu: frozen weights table");
    else if (!b)
      rc = gf_fail(err, GF_ENOMEM, "cpu: frozen weights of %zu bytes", bytes);
    if (rc == GF_OK)
      rc = gf_dnnl_check(dnnl_memory_set_data_handle(p->inner[i], b),
                         "dnnl_memory_set_data_handle", __FILE__, __LINE__,
                         err);
    if (rc == GF_OK) {
      int prev = gf_cpu_threads_begin(ctx);
      rc = run_reorder(st, p, i, err);
      if (rc == GF_OK)
        rc = gf_dnnl_check(dnnl_stream_wait(st->stream), "dnnl_stream_wait",
                           __FILE__, __LINE__, err);
      gf_cpu_threads_end(prev);
    }
    if (rc == GF_OK) {
      fz->md[fz->nmd++] = (gf_cpu_frozen_md){src, *md, b};
      fz->bytes += bytes;
      buf = b;
    } else {
      free(b);
    }
  }
  pthread_mutex_unlock(&fz->lock);
  if (rc != GF_OK) return rc;
  p->keep[i] = buf;
  p->keep_src[i] = src;
  return GF_OK;
}

gf_status gf_cpu_prim_add(gf_ctx *ctx, const gf_prim_key *key,
                          const_dnnl_op_desc_t desc,
                          const_dnnl_primitive_desc_t hint, int nargs,
                          const int *arg, const dnnl_memory_desc_t *mds,
                          gf_prim **out, gf_err *err) {
  dnnl_primitive_desc_t pd = NULL;
  *out = NULL;
  GF_TRY(gf_cpu_pd_create(ctx, desc, hint, &pd, err));
  return gf_cpu_prim_add_pd(ctx, key, pd, nargs, arg, mds, NULL, out, err);
}

gf_status gf_cpu_pd_create_impl(gf_ctx *ctx, const_dnnl_op_desc_t desc,
                                const char *impl, const gf_prim_scales *osc,
                                dnnl_primitive_desc_t *out, gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  *out = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_iterator_t it = NULL;
  dnnl_status_t s = make_attr(osc, &attr);
  if (s == dnnl_success)
    s = dnnl_primitive_desc_iterator_create(&it, desc, attr, st->engine,
                                            NULL);
  if (attr) dnnl_primitive_attr_destroy(attr);
  DNNL_TRY(s);
  gf_status rc = GF_OK;
  for (;;) {
    dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
    if (!pd) {
      rc = gf_fail(err, GF_ENOMEM, "cpu: oneDNN primitive descriptor");
      break;
    }
    const char *name = NULL;
    if (!impl ||
        (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) ==
             dnnl_success && name && strcmp(name, impl) == 0)) {
      *out = pd;
      break;
    }
    dnnl_primitive_desc_destroy(pd);
    if (dnnl_primitive_desc_iterator_next(it) != dnnl_success) {
      rc = gf_fail(err, GF_EUNSUPPORTED, "cpu: oneDNN offers no '%s' "
                   "implementation for this shape", impl);
      break;
    }
  }
  dnnl_primitive_desc_iterator_destroy(it);
  return rc;
}

gf_status gf_cpu_prim_add_pd(gf_ctx *ctx, const gf_prim_key *key,
                             dnnl_primitive_desc_t pd, int nargs,
                             const int *arg, const dnnl_memory_desc_t *mds,
                             const gf_prim_scales *rsc, gf_prim **out,
                             gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  *out = NULL;
  if (nargs > GF_PRIM_MAX_ARGS) {
    dnnl_primitive_desc_destroy(pd);
    return gf_fail(err, GF_EINVAL, "cpu: %d primitive arguments", nargs);
  }
  gf_prim *p = calloc(1, sizeof *p);
  if (!p) {
    dnnl_primitive_desc_destroy(pd);
    return gf_fail(err, GF_ENOMEM, "cpu: primitive cache entry");
  }
  p->key = *key;
  p->pd = pd;
  dnnl_status_t s = dnnl_primitive_create(&p->prim, p->pd);
  gf_status rc =
      gf_dnnl_check(s, "dnnl_primitive_create", __FILE__, __LINE__, err);
  for (int i = 0; rc == GF_OK && i < nargs; i++) {
    const dnnl_memory_desc_t *want =
        dnnl_primitive_desc_query_md(p->pd, dnnl_query_exec_arg_md, arg[i]);
    if (!want || want->ndims != mds[i].ndims) {
      rc = gf_fail(err, GF_EDEVICE, "cpu: argument %d of primitive kind %d "
                   "unknown to oneDNN", arg[i], (int)key->kind);
      break;
    }
    p->arg[i] = arg[i];
    p->nargs = i + 1;
    s = dnnl_memory_create(&p->mem[i], &mds[i], st->engine, DNNL_MEMORY_NONE);
    rc = gf_dnnl_check(s, "dnnl_memory_create", __FILE__, __LINE__, err);
    if (rc == GF_OK && !dnnl_memory_desc_equal(want, &mds[i]))
      rc = add_reorder(st, p, i, want, &mds[i], ctx->frozen_batch > 0,
                       rsc ? &rsc[i] : NULL, err);
  }
  if (rc == GF_OK) {
    const dnnl_memory_desc_t *smd =
        dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
    p->scratch_bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    p->scratch_off = p->arena_bytes;
    p->arena_bytes += arena_round(p->scratch_bytes);
    if (p->scratch_bytes) {
      s = dnnl_memory_create(&p->scratch_mem, smd, st->engine,
                             DNNL_MEMORY_NONE);
      rc = gf_dnnl_check(s, "dnnl_memory_create(scratchpad)", __FILE__,
                         __LINE__, err);
    }
  }
  if (rc) {
    prim_destroy(p);
    return rc;
  }
  if (st->ncache == GF_PRIM_CACHE_MAX) {
    prim_destroy(st->cache[0]);
    memmove(st->cache, st->cache + 1, (st->ncache - 1) * sizeof *st->cache);
    st->ncache--;
  }
  st->cache[st->ncache++] = p;
  st->created++;
  *out = p;
  return GF_OK;
}

gf_status gf_cpu_prim_exec(gf_ctx *ctx, gf_prim *p, void *const *ptr,
                           gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  dnnl_exec_arg_t args[GF_PRIM_MAX_ARGS + 1];
  int n = 0;
  for (int i = 0; i < p->nargs; i++) {
    DNNL_TRY(dnnl_memory_set_data_handle(p->mem[i], ptr[i]));
    args[n].arg = p->arg[i];
    args[n].memory = p->inner[i] ? p->inner[i] : p->mem[i];
    n++;
  }
  if (p->arena_bytes > st->scratchpad_cap) {
    void *buf = aligned_alloc(4096, p->arena_bytes);
    if (!buf)
      return gf_fail(err, GF_ENOMEM, "cpu: arena of %zu bytes",
                     p->arena_bytes);
    free(st->scratchpad);
    st->scratchpad = buf;
    st->scratchpad_cap = p->arena_bytes;
  }
  char *arena = st->scratchpad;
  for (int i = 0; i < p->nargs; i++)
    if (p->frozen[i] && p->keep_src[i] != ptr[i])
      GF_TRY(frozen_weights(ctx, p, i, ptr[i], err));
  for (int i = 0; i < p->nargs; i++)
    if (p->inner[i])
      DNNL_TRY(dnnl_memory_set_data_handle(
          p->inner[i], p->keep[i] ? p->keep[i] : arena + p->inner_off[i]));
  if (p->scratch_bytes) {
    DNNL_TRY(dnnl_memory_set_data_handle(p->scratch_mem,
                                         arena + p->scratch_off));
    args[n].arg = DNNL_ARG_SCRATCHPAD;
    args[n].memory = p->scratch_mem;
    n++;
  }
  int prev = gf_cpu_threads_begin(ctx);
  gf_status rc = GF_OK;
  /* frozen weights were laid out once, by frozen_weights */
  for (int i = 0; rc == GF_OK && i < p->nargs; i++)
    if (p->inner[i] && !is_output(p->arg[i]) && !p->frozen[i])
      rc = run_reorder(st, p, i, err);
  if (rc == GF_OK)
    rc = gf_dnnl_check(dnnl_primitive_execute(p->prim, st->stream, n, args),
                       "dnnl_primitive_execute", __FILE__, __LINE__, err);
  for (int i = 0; rc == GF_OK && i < p->nargs; i++)
    if (p->inner[i] && is_output(p->arg[i])) rc = run_reorder(st, p, i, err);
  if (rc == GF_OK)
    rc = gf_dnnl_check(dnnl_stream_wait(st->stream), "dnnl_stream_wait",
                       __FILE__, __LINE__, err);
  gf_cpu_threads_end(prev);
  return rc;
}

float *gf_cpu_tmp(gf_ctx *ctx, size_t n, gf_err *err) {
  gf_cpu_state *st = gf_cpu(ctx);
  if (n > st->tmp_cap) {
    size_t cap = (n + 1023) / 1024 * 1024;
    float *buf = aligned_alloc(GF_ALIGN, cap * sizeof(float));
    if (!buf) {
      gf_fail(err, GF_ENOMEM, "cpu: scratch of %zu floats", cap);
      return NULL;
    }
    free(st->tmp);
    st->tmp = buf;
    st->tmp_cap = cap;
  }
  return st->tmp;
}

void gf_cpu_add_inplace(const gf_ctx *ctx, float *dst, const float *src,
                        size_t n) {
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)
  for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

void gf_cpu_bias_grad(const gf_ctx *ctx, const float *dy, int64_t N,
                      int64_t C, int64_t S, float *db, int accumulate) {
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * C * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t c = 0; c < C; c++) {
    float acc = 0.0f;
    for (int64_t n = 0; n < N; n++) {
      const float *row = dy + (n * C + c) * S;
      float part = 0.0f;
      for (int64_t s = 0; s < S; s++) part += row[s];
      acc += part;
    }
    db[c] = accumulate ? db[c] + acc : acc;
  }
}

void gf_cpu_cache_free(gf_cpu_state *st) {
  for (size_t i = 0; i < st->ncache; i++) prim_destroy(st->cache[i]);
  free(st->cache);
  free(st->scratchpad);
  free(st->tmp);
  st->cache = NULL;
  st->scratchpad = NULL;
  st->tmp = NULL;
  st->ncache = 0;
}

void gf_cpu_run_ranges(gf_cpu_range_fn plain, gf_cpu_range_fn fma,
                       const void *job, int64_t count, int64_t work, int nt) {
  gf_cpu_range_fn fn = fma && gf_cpu_fma() ? fma : plain;
  if (work < GF_PAR_MIN || nt < 2) {
    fn(job, 0, count);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    fn(job, count * t / n, count * (t + 1) / n);
  }
}
