/* cuda_loader.h - finding and opening the CUDA backend module
 * (libganflow_cuda.so, cuda_module.h) at run time: where it is looked for,
 * dlopen and dlsym of its one entry point, the ABI check, and the
 * process's module, loaded on the first call that asks for a CUDA device
 * (gf_ctx_init with GF_BACKEND_CUDA, CUDA tensors, gf_cuda_device_check,
 * the nccl engine of gf_comm). Private to kernels/. Not the backend: that
 * is cuda/, inside the module.
 *
 * Where the module is looked for (one place; a file there that fails to
 * load is an error, never a reason to look elsewhere):
 *   - GANFLOW_CUDA_MODULE, the path of the module file, when set (a bare
 *     name is a file in the working directory);
 *   - else, for an executable that runs from inside the build tree
 *     (GF_CUDA_MODULE_BUILD_ROOT: the tests, and the executables before
 *     `cmake --install`), the build tree's GF_CUDA_MODULE_BUILD_SUBDIR;
 *   - else beside the executable's own lib dir: <the executable's
 *     dir>/GF_CUDA_MODULE_RELDIR (../lib/ganflow under the prefix that
 *     `cmake --install` fills). */
#ifndef GF_CUDA_LOADER_H
#define GF_CUDA_LOADER_H

#include "cuda_module.h"
#include "gf/fs.h"

#define GF_CUDA_MODULE_ENV "GANFLOW_CUDA_MODULE"

/* An opened module. The caller owns the struct; the dlopen handle is never
 * closed: the module holds the CUDA runtime, whose exit handlers and
 * device allocations outlive any one ctx, so it stays mapped until the
 * process ends (a second open of the same file shares the handle). */
typedef struct gf_cuda_lib {
  void *handle;              /* dlopen handle */
  const gf_cuda_module *m;   /* the module's table (read-only, in it) */
  char path[GF_PATH_MAX];    /* the file it was opened from */
} gf_cuda_lib;

/* The file to look at, as above, for an executable at exe (an absolute
 * path, as /proc/self/exe names it; NULL when unknown), GANFLOW_CUDA_MODULE
 * = env (NULL or "" when unset) and a build tree at build_root (its
 * canonical path; NULL when there is none). GF_OK with the path in
 * place; GF_EUNSUPPORTED when none can be named (no env and no exe, or a
 * path longer than GF_PATH_MAX). Allocates nothing. */
gf_status gf_cuda_module_place(const char *exe, const char *env,
                               const char *build_root,
                               char place[GF_PATH_MAX], gf_err *err);

/* Opens the module file at path into *lib: dlopen (RTLD_NOW, RTLD_LOCAL),
 * dlsym of GF_CUDA_MODULE_ENTRY, and its table's ABI version and struct
 * sizes against this build's. GF_OK, or GF_EUNSUPPORTED with "the CUDA
 * backend module PATH could not be loaded: " and why (dlerror, no entry
 * point, another ABI version or other struct sizes); *lib is then zeroed
 * and the library, if dlopen mapped it, stays mapped. */
gf_status gf_cuda_lib_open(gf_cuda_lib *lib, const char *path, gf_err *err);

/* gf_cuda_module_place, then gf_cuda_lib_open of the file there.
 * GF_EUNSUPPORTED with "the CUDA backend module libganflow_cuda.so was not
 * found (looked in PATH)" when there is no such file. */
gf_status gf_cuda_lib_find(gf_cuda_lib *lib, const char *exe, const char *env,
                           const char *build_root, gf_err *err);

/* The process's module: gf_cuda_lib_find for this executable (its
 * canonical path from /proc/self/exe, or from the path it was started by
 * where /proc is not mounted), GANFLOW_CUDA_MODULE and this build's tree
 * (builds with CUDA), run once under pthread_once
 * (a dlopen handle is process-wide by nature, and CUDA tensors are
 * allocated and freed apart from any ctx, so there is no owner narrower
 * than the process); every call, from any thread, returns that one
 * result: *out the table, or the same error. Read-only after the first
 * call. */
gf_status gf_cuda_module_get(const gf_cuda_module **out, gf_err *err);

#endif
