/* ctx.c - gf_ctx creation and the choice of a backend's dispatch table; see
 * gf/ctx.h. The backends themselves live in cpu/ and cuda/; the CUDA one
 * in a module loaded on first use (cuda_loader.h). */
#include "gf/ctx.h"

#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "gf/parse.h"
#ifdef GF_HAVE_CUDA
#include "cuda_loader.h"
#endif

const char *gf_backend_name(gf_backend backend) {
  switch (backend) {
  case GF_BACKEND_CPU: return "cpu";
  case GF_BACKEND_CUDA: return "cuda";
  }
  return "?";
}

gf_status gf_device_parse(const char *what, const char *s, gf_backend *backend,
                          int *ordinal, gf_err *err) {
  if (s && strcmp(s, "cpu") == 0) {
    *backend = GF_BACKEND_CPU;
    *ordinal = 0;
    return GF_OK;
  }
  if (s && strcmp(s, "cuda") == 0) {
    *backend = GF_BACKEND_CUDA;
    *ordinal = -1;
    return GF_OK;
  }
  if (s && strncmp(s, "cuda:", 5) == 0) {
    int n;
    GF_TRY(gf_parse_int(what, s + 5, 0, GF_DEVICE_ORDINAL_MAX, &n, err));
    *backend = GF_BACKEND_CUDA;
    *ordinal = n;
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "%s: '%.64s' is not cpu, cuda or cuda:N",
                 what, s ? s : "");
}

gf_status gf_ctx_init(gf_ctx *ctx, const gf_ctx_config *cfg, gf_err *err) {
  if (!ctx) return gf_fail(err, GF_EINVAL, "ctx: NULL");
  memset(ctx, 0, sizeof *ctx);
  gf_ctx_config def = {GF_BACKEND_CPU, 0, 0, GF_CPU_LAYOUT_AUTO};
  if (!cfg) cfg = &def;
  int nthreads = cfg->nthreads;
  if (nthreads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = n > 0 ? (int)n : 1;
  }
  switch (cfg->backend) {
  case GF_BACKEND_CPU:
    ctx->ops = &gf_cpu_backend_ops;
    ctx->device = GF_DEV_CPU;
    break;
  case GF_BACKEND_CUDA: {
#ifdef GF_HAVE_CUDA
    const gf_cuda_module *m = NULL;
    GF_TRY(gf_cuda_module_get(&m, err));
    ctx->ops = m->backend;
    ctx->device = GF_DEV_CUDA;
    break;
#else
    return gf_fail(err, GF_EUNSUPPORTED,
                   "ctx: the CUDA backend is not built in this library");
#endif
  }
  default:
    return gf_fail(err, GF_EINVAL, "ctx: unknown backend %d",
                   (int)cfg->backend);
  }
  ctx->backend = cfg->backend;
  ctx->device_index = cfg->device_index;
  ctx->nthreads = nthreads;
  ctx->cpu_layout = cfg->cpu_layout;
  gf_status st = ctx->ops->init(ctx, err);
  if (st) {
    memset(ctx, 0, sizeof *ctx);
    return st;
  }
  return GF_OK;
}

void gf_ctx_free(gf_ctx *ctx) {
  if (!ctx || !ctx->ops) return;
  ctx->ops->fini(ctx);
  memset(ctx, 0, sizeof *ctx);
}

gf_ctx_stats gf_ctx_get_stats(const gf_ctx *ctx) {
  gf_ctx_stats s;
  memset(&s, 0, sizeof s);
  if (ctx && ctx->ops && ctx->ops->stats) ctx->ops->stats(ctx, &s);
  return s;
}

/* Frozen inference in bf16 (int8 0) or int8 (int8 1) on ctx. */
static gf_status lowp_check(const gf_ctx *ctx, int int8, gf_err *err) {
  const char *what = int8 ? "int8" : "bf16";
  if (!ctx || !ctx->ops) return gf_fail(err, GF_EINVAL, "ctx: not initialised");
  if (ctx->backend != GF_BACKEND_CPU)
    return gf_fail(err, GF_EUNSUPPORTED, "%s: frozen inference in %s is "
                   "the CPU backend's; the %s backend runs f32", what, what,
                   ctx->ops->name);
  return gf_cpu_lowp_check(int8, err);
}

gf_status gf_ctx_bf16_check(const gf_ctx *ctx, gf_err *err) {
  return lowp_check(ctx, 0, err);
}

gf_status gf_ctx_int8_check(const gf_ctx *ctx, gf_err *err) {
  return lowp_check(ctx, 1, err);
}

gf_status gf_ctx_sync(gf_ctx *ctx, gf_err *err) {
  if (!ctx || !ctx->ops) return gf_fail(err, GF_EINVAL, "ctx: not initialized");
  return ctx->ops->sync ? ctx->ops->sync(ctx, err) : GF_OK;
}

int gf_cuda_built(void) {
#ifdef GF_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

gf_status gf_cuda_device_check(int ordinal, gf_err *err) {
#ifdef GF_HAVE_CUDA
  const gf_cuda_module *m = NULL;
  GF_TRY(gf_cuda_module_get(&m, err));
  return m->probe(ordinal, NULL, err);
#else
  (void)ordinal;
  return gf_fail(err, GF_EUNSUPPORTED, "this build has no CUDA backend");
#endif
}
