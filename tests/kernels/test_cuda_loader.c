/* test_cuda_loader.c - the loader of the CUDA backend module
 * (kernels/src/cuda_loader.c), in every build (label unit; no GPU, no
 * CUDA): where the module is looked for (GANFLOW_CUDA_MODULE, the build
 * tree, beside the executable), and each way a file there can fail, each
 * with its own message and nothing left open on the table: no file, not a
 * shared object, a shared object without the entry point, a module of
 * another ABI version, one of the same version with other struct sizes;
 * and a module that fits opens, twice to the same handle.
 *
 * The same source, compiled with GF_TEST_FAKE_CUDA_MODULE=KIND, is each of
 * those fake modules (tests/kernels/CMakeLists.txt): KIND 1 fits, 2 has
 * another ABI version, 3 other struct sizes, 4 no entry point. */
#include <string.h>

#include "comm/comm_impl.h"
#include "cuda_module.h"

#ifdef GF_TEST_FAKE_CUDA_MODULE

#if GF_TEST_FAKE_CUDA_MODULE == 4
/* a shared object that is not a module: another symbol only */
int gf_test_not_a_module(void);
int gf_test_not_a_module(void) { return 4; }
#else
/* Every call of the fake fails as a machine without a GPU does; the fake
 * links nothing of ganflow (no gf_fail). */
static gf_status no_device(gf_err *err) {
  static const char msg[] = "no CUDA device: a fake module";
  if (err) {
    err->code = GF_EDEVICE;
    memcpy(err->msg, msg, sizeof msg);
  }
  return GF_EDEVICE;
}
static gf_status fake_probe(int ordinal, int *count, gf_err *err) {
  (void)ordinal;
  if (count) *count = 0;
  return no_device(err);
}
static gf_status fake_alloc(int ordinal, size_t nbytes, void **out,
                            gf_err *err) {
  (void)ordinal;
  (void)nbytes;
  *out = NULL;
  return no_device(err);
}
static void fake_free(int ordinal, void *p) {
  (void)ordinal;
  (void)p;
}
static gf_status fake_copy(void *dst, gf_device dd, int di, const void *src,
                           gf_device sd, int si, size_t nbytes, gf_err *err) {
  (void)dst;
  (void)dd;
  (void)di;
  (void)src;
  (void)sd;
  (void)si;
  (void)nbytes;
  return no_device(err);
}

static const gf_backend_ops fake_ops = {.name = "fake"};
static const gf_cuda_module fake = {
#if GF_TEST_FAKE_CUDA_MODULE == 2
    .abi = GF_CUDA_MODULE_ABI + 998,
#else
    .abi = GF_CUDA_MODULE_ABI,
#endif
    .sizes = GF_CUDA_MODULE_SIZES,
    .version = "ganflow fake",
    .backend = &fake_ops,
    .probe = fake_probe,
    .mem_alloc = fake_alloc,
    .mem_free = fake_free,
    .memcpy = fake_copy,
};

#if GF_TEST_FAKE_CUDA_MODULE == 3
/* the table of a build whose gf_ctx is 8 bytes longer */
static gf_cuda_module fake_sizes;
#endif

const gf_cuda_module *gf_cuda_module_entry(void);
const gf_cuda_module *gf_cuda_module_entry(void) {
#if GF_TEST_FAKE_CUDA_MODULE == 3
  fake_sizes = fake;
  fake_sizes.sizes[GF_CUDA_SZ_CTX] += 8;
  return &fake_sizes;
#else
  return &fake;
#endif
}
#endif

#else /* the test */

#include "check.h"
#include "cuda_loader.h"
#include "file_util.h"

/* Message of a failed open: the status is GF_EUNSUPPORTED, *lib is empty,
 * and the message holds each of the needles. */
static void expect_fail(gf_status st, const gf_cuda_lib *lib, const gf_err *e,
                        const char *needle1, const char *needle2) {
  CHECK_INT_EQ(st, GF_EUNSUPPORTED);
  CHECK(lib->handle == NULL && lib->m == NULL && lib->path[0] == '\0');
  CHECKF(strstr(e->msg, needle1) != NULL, "'%s' not in: %s", needle1, e->msg);
  CHECKF(!needle2 || strstr(e->msg, needle2) != NULL, "'%s' not in: %s",
         needle2, e->msg);
  printf("%s\n", e->msg);
}

static void test_place(void) {
  char p[GF_PATH_MAX];
  gf_err e = {0};
  /* the variable wins, whatever the rest */
  CHECK(gf_cuda_module_place("/b/x/bin/exe", "/m/libx.so", "/b", p, &e) ==
        GF_OK);
  CHECK_STR_EQ(p, "/m/libx.so");
  CHECK(gf_cuda_module_place(NULL, "libx.so", NULL, p, &e) == GF_OK);
  CHECK_STR_EQ(p, "./libx.so"); /* a file here, not a library search */
  /* inside the build tree: the tree's module dir */
  CHECK(gf_cuda_module_place("/b/x/tests/kernels/test", "", "/b/x", p, &e) ==
        GF_OK);
  CHECKF(strncmp(p, "/b/x/", 5) == 0 &&
             strstr(p, "/ganflow/libganflow_cuda.so") != NULL &&
             strstr(p, "..") == NULL,
         "%s", p);
  CHECK(gf_cuda_module_place("/b/x/trainer/exe", NULL, "/b/x/", p, &e) ==
        GF_OK); /* a root given with its slash */
  CHECKF(strncmp(p, "/b/x/", 5) == 0 && strstr(p, "..") == NULL, "%s", p);
  /* outside it (a prefix of the name is not inside): beside the
   * executable */
  CHECK(gf_cuda_module_place("/b/xy/bin/exe", NULL, "/b/x", p, &e) == GF_OK);
  CHECKF(strncmp(p, "/b/xy/bin/../", 13) == 0 &&
             strstr(p, "/ganflow/libganflow_cuda.so") != NULL,
         "%s", p);
  CHECK(gf_cuda_module_place("/usr/local/bin/ganflow", NULL, NULL, p, &e) ==
        GF_OK);
  CHECKF(strncmp(p, "/usr/local/bin/../", 18) == 0, "%s", p);
  /* nothing to go by */
  CHECK(gf_cuda_module_place(NULL, NULL, "/b", p, &e) == GF_EUNSUPPORTED);
  CHECK(strstr(e.msg, "GANFLOW_CUDA_MODULE") != NULL && p[0] == '\0');
  char longer[GF_PATH_MAX + 8];
  memset(longer, 'a', sizeof longer - 1);
  longer[0] = '/';
  longer[sizeof longer - 1] = '\0';
  CHECK(gf_cuda_module_place(NULL, longer, NULL, p, &e) == GF_EUNSUPPORTED);
  CHECK(strstr(e.msg, "longer than") != NULL && p[0] == '\0');
}

static void test_failures(const char *tmp) {
  gf_cuda_lib lib;
  gf_err e = {0};
  /* no file */
  expect_fail(gf_cuda_lib_find(&lib, NULL, "/nonexistent/libganflow_cuda.so",
                               NULL, &e),
              &lib, &e,
              "the CUDA backend module libganflow_cuda.so was not found "
              "(looked in GANFLOW_CUDA_MODULE=/nonexistent/libganflow_cuda.so)",
              NULL);
  expect_fail(gf_cuda_lib_find(&lib, "/nonexistent/bin/ganflow", NULL, NULL,
                               &e),
              &lib, &e, "was not found (looked in /nonexistent/bin/../", NULL);
  /* a file that is not a shared object */
  char text[1100];
  snprintf(text, sizeof text, "%s/not-a-module.so", tmp);
  tu_write(text, "not an ELF file\n", 16);
  expect_fail(gf_cuda_lib_find(&lib, NULL, text, NULL, &e), &lib, &e,
              "could not be loaded: ", text);
  /* a directory */
  expect_fail(gf_cuda_lib_open(&lib, tmp, &e), &lib, &e,
              "could not be loaded: ", NULL);
  /* a shared object without the entry point */
  expect_fail(gf_cuda_lib_open(&lib, GF_FAKE_NO_ENTRY, &e), &lib, &e,
              "has no gf_cuda_module_entry (not a ganflow CUDA module)",
              NULL);
  /* the entry point of another ABI version (the check fires: a module of
   * this build passes it, test_fits) */
  char abi[128];
  snprintf(abi, sizeof abi, "ABI version %u, these executables expect %u",
           GF_CUDA_MODULE_ABI + 998, GF_CUDA_MODULE_ABI);
  expect_fail(gf_cuda_lib_open(&lib, GF_FAKE_OTHER_ABI, &e), &lib, &e, abi,
              NULL);
  /* the same version, a gf_ctx of another size */
  expect_fail(gf_cuda_lib_open(&lib, GF_FAKE_OTHER_SIZES, &e), &lib, &e,
              "its gf_ctx is", "a module from another build");
}

static void test_fits(void) {
  gf_cuda_lib a, b;
  gf_err e = {0};
  gf_status st = gf_cuda_lib_open(&a, GF_FAKE_FITS, &e);
  CHECKF(st == GF_OK, "%s", e.msg);
  if (st) return;
  CHECK(a.handle != NULL && a.m != NULL);
  CHECK_STR_EQ(a.path, GF_FAKE_FITS);
  CHECK_STR_EQ(a.m->version, "ganflow fake");
  CHECK_STR_EQ(a.m->backend->name, "fake");
  CHECK(a.m->nccl == NULL);
  CHECK(a.m->probe(0, NULL, &e) == GF_EDEVICE);
  CHECK(strncmp(e.msg, "no CUDA device: ", 16) == 0);
  /* the variable names it too; a second open shares the handle */
  CHECK(gf_cuda_lib_find(&b, "/elsewhere/bin/x", GF_FAKE_FITS, NULL, &e) ==
        GF_OK);
  CHECK(b.handle == a.handle && b.m == a.m);
}

int main(void) {
  tu_fresh_dir(GF_TEST_TMP);
  test_place();
  test_failures(GF_TEST_TMP);
  test_fits();
  return check_report();
}

#endif
