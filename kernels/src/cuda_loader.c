/* cuda_loader.c - finding and opening the CUDA backend module; see
 * cuda_loader.h. Plain C and dlopen: compiled into every gf_kernels, so
 * that its checks run (against fake modules) in builds without CUDA too;
 * only builds with the CUDA backend call it from ctx.c, tensor.c and the
 * comm layer. */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "gf/text.h"

/* Where an installed executable finds the module, from its own dir. */
#ifndef GF_CUDA_MODULE_RELDIR
#define GF_CUDA_MODULE_RELDIR "../lib/ganflow"
#endif
/* The module's dir inside the build tree, from the tree's root. */
#ifndef GF_CUDA_MODULE_BUILD_SUBDIR
#define GF_CUDA_MODULE_BUILD_SUBDIR "lib/ganflow"
#endif

/* True when path lies inside the directory root (both canonical). */
static int inside(const char *path, const char *root) {
  size_t n = strlen(root);
  while (n > 1 && root[n - 1] == '/') n--;
  return n > 0 && strncmp(path, root, n) == 0 && path[n] == '/';
}

gf_status gf_cuda_module_place(const char *exe, const char *env,
                               const char *build_root,
                               char place[GF_PATH_MAX], gf_err *err) {
  place[0] = '\0';
  int n;
  if (env && *env) {
    /* a bare name is a file here, not one for dlopen's library search */
    n = snprintf(place, GF_PATH_MAX, "%s%s", strchr(env, '/') ? "" : "./",
                 env);
  } else if (exe && exe[0] == '/') {
    if (build_root && build_root[0] == '/' && inside(exe, build_root)) {
      n = snprintf(place, GF_PATH_MAX, "%s/%s/%s", build_root,
                   GF_CUDA_MODULE_BUILD_SUBDIR, GF_CUDA_MODULE_FILE);
    } else {
      int dir = (int)(strrchr(exe, '/') - exe);
      n = snprintf(place, GF_PATH_MAX, "%.*s/%s/%s", dir, exe,
                   GF_CUDA_MODULE_RELDIR, GF_CUDA_MODULE_FILE);
    }
  } else {
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s was not found (the "
                   "executable's own path is unknown: set %s)",
                   GF_CUDA_MODULE_FILE, GF_CUDA_MODULE_ENV);
  }
  if (!gf_fits(n, GF_PATH_MAX)) {
    place[0] = '\0';
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s was not found (the path to "
                   "look at is longer than %d bytes)",
                   GF_CUDA_MODULE_FILE, GF_PATH_MAX - 1);
  }
  return GF_OK;
}

/* dlsym into a function pointer without a cast between object and
 * function pointer types (POSIX gives them one representation). */
static int resolve_entry(void *handle, gf_cuda_module_entry_fn *fn) {
  void *sym = dlsym(handle, GF_CUDA_MODULE_ENTRY);
  if (!sym) return 0;
  memcpy(fn, &sym, sizeof sym);
  return 1;
}

static const char *const size_names[GF_CUDA_SZ_COUNT] = {
    [GF_CUDA_SZ_TABLE] = "gf_cuda_module",
    [GF_CUDA_SZ_CTX] = "gf_ctx",
    [GF_CUDA_SZ_TENSOR] = "gf_tensor",
    [GF_CUDA_SZ_ERR] = "gf_err",
    [GF_CUDA_SZ_OPS] = "gf_backend_ops",
    [GF_CUDA_SZ_COMM] = "struct gf_comm",
    [GF_CUDA_SZ_COMM_OPS] = "gf_comm_ops",
};

/* GF_OK when the table m (from the module at path) is this build's. */
static gf_status check_table(const gf_cuda_module *m, const char *path,
                             gf_err *err) {
  if (!m)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s could not be loaded: its %s "
                   "returned no table", path, GF_CUDA_MODULE_ENTRY);
  /* abi comes first in every version of the table: read nothing else
   * before it matches */
  if (m->abi != GF_CUDA_MODULE_ABI)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s could not be loaded: it has "
                   "ABI version %u, these executables expect %u (install "
                   "the module built with them)",
                   path, (unsigned)m->abi, (unsigned)GF_CUDA_MODULE_ABI);
  const uint32_t want[GF_CUDA_SZ_COUNT] = GF_CUDA_MODULE_SIZES;
  for (int i = 0; i < GF_CUDA_SZ_COUNT; i++)
    if (m->sizes[i] != want[i])
      return gf_fail(err, GF_EUNSUPPORTED,
                     "the CUDA backend module %s could not be loaded: its "
                     "%s is %u bytes, here %u (a module from another build; "
                     "install the module built with these executables)",
                     path, size_names[i], (unsigned)m->sizes[i],
                     (unsigned)want[i]);
  if (!m->backend || !m->probe || !m->mem_alloc || !m->mem_free ||
      !m->memcpy)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s could not be loaded: its "
                   "table lacks an entry", path);
  return GF_OK;
}

gf_status gf_cuda_lib_open(gf_cuda_lib *lib, const char *path, gf_err *err) {
  memset(lib, 0, sizeof *lib);
  if (!gf_fits(snprintf(lib->path, sizeof lib->path, "%s", path),
               sizeof lib->path))
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module could not be loaded: its path "
                   "is longer than %d bytes", GF_PATH_MAX - 1);
  (void)dlerror(); /* clear an earlier message */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    memset(lib, 0, sizeof *lib);
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s could not be loaded: %s", path,
                   why ? why : "dlopen failed");
  }
  gf_cuda_module_entry_fn entry = NULL;
  if (!resolve_entry(h, &entry)) {
    memset(lib, 0, sizeof *lib);
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s could not be loaded: it has "
                   "no %s (not a ganflow CUDA module)",
                   path, GF_CUDA_MODULE_ENTRY);
  }
  const gf_cuda_module *m = entry();
  gf_status st = check_table(m, path, err);
  if (st) {
    memset(lib, 0, sizeof *lib);
    return st;
  }
  lib->handle = h;
  lib->m = m;
  return GF_OK;
}

gf_status gf_cuda_lib_find(gf_cuda_lib *lib, const char *exe, const char *env,
                           const char *build_root, gf_err *err) {
  memset(lib, 0, sizeof *lib);
  char place[GF_PATH_MAX];
  GF_TRY(gf_cuda_module_place(exe, env, build_root, place, err));
  struct stat sb;
  if (stat(place, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return gf_fail(err, GF_EUNSUPPORTED,
                   "the CUDA backend module %s was not found (looked in "
                   "%s%s)",
                   GF_CUDA_MODULE_FILE,
                   env && *env ? GF_CUDA_MODULE_ENV "=" : "", place);
  return gf_cuda_lib_open(lib, place, err);
}

/* ---- the process's module -------------------------------------------------
 * Written once, by load_once under pthread_once, and only read after: the
 * one piece of process-wide state in gf_kernels (cuda_loader.h says why). */
static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static struct {
  gf_status st;   /* the result of the one gf_cuda_lib_find */
  gf_err err;     /* its message when st != GF_OK */
  gf_cuda_lib lib; /* the module when st == GF_OK */
} module_state;

/* The canonical path of this process's executable into exe[GF_PATH_MAX]:
 * /proc/self/exe, or where /proc is not mounted (a chroot) the path it was
 * started by (AT_EXECFN) resolved. 0, or -1 when neither says. */
static int own_path(char exe[GF_PATH_MAX]) {
  ssize_t n = readlink("/proc/self/exe", exe, GF_PATH_MAX - 1);
  if (n > 0) {
    exe[n] = '\0';
    return 0;
  }
  const char *fn = (const char *)getauxval(AT_EXECFN);
  char buf[PATH_MAX];
  if (!fn || !realpath(fn, buf) || strlen(buf) >= GF_PATH_MAX) return -1;
  memcpy(exe, buf, strlen(buf) + 1);
  return 0;
}

static void load_once(void) {
  char exe[GF_PATH_MAX];
  int known = own_path(exe) == 0;
#ifdef GF_CUDA_MODULE_BUILD_ROOT
  char root_buf[PATH_MAX];
  const char *root = realpath(GF_CUDA_MODULE_BUILD_ROOT, root_buf);
#else
  const char *root = NULL;
#endif
  module_state.st =
      gf_cuda_lib_find(&module_state.lib, known ? exe : NULL,
                       getenv(GF_CUDA_MODULE_ENV), root, &module_state.err);
}

gf_status gf_cuda_module_get(const gf_cuda_module **out, gf_err *err) {
  *out = NULL;
  pthread_once(&module_once, load_once);
  if (module_state.st != GF_OK) {
    if (err) *err = module_state.err;
    return module_state.st;
  }
  *out = module_state.lib.m;
  return GF_OK;
}
