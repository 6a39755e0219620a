/* test_cuda_module.c - the three executables of a build with the CUDA
 * backend, on any machine (label unit; registered only in such builds):
 *   - none of them NEEDs the CUDA runtime, cuBLAS, cuDNN or NCCL (readelf
 *     -d): those are the CUDA backend module's (libganflow_cuda.so), which
 *     the same check finds in the module itself, so it can fail;
 *   - `--device cuda` in ganflow-train (exit 2), ganflow-serve (exit 1)
 *     and `ganflow fid` (exit 1; `ganflow eval` takes the same path,
 *     gf_cli_quality_ctx) says why it cannot run, with the exit code the
 *     device check always had: no CUDA device (on a machine without a
 *     GPU), the module not found (GANFLOW_CUDA_MODULE naming a missing
 *     file), not loadable (a text file), not a module (a shared object
 *     without the entry point); none of them dies of a signal.
 *   argv: ganflow-train ganflow-serve ganflow MODULE NOT_A_MODULE_SO */
#define _GNU_SOURCE /* memmem */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/ctx.h"
#include "proc_util.h"

static char g_tmp[1024];

/* The output of `readelf -d path` (malloc'd), or NULL. */
static char *readelf(const char *path) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>&1", path);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  REQUIRE(out);
  size_t n;
  while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *t = realloc(out, cap *= 2);
      REQUIRE(t);
      out = t;
    }
  }
  out[len] = '\0';
  if (pclose(p) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* The CUDA libraries among path's DT_NEEDED entries, as one line. */
static void cuda_needed(const char *path, char *found, size_t cap) {
  static const char *const libs[] = {"[libcudart.so", "[libcublas.so",
                                     "[libcublasLt.so", "[libcudnn.so",
                                     "[libnccl.so", "[libcuda.so"};
  found[0] = '\0';
  char *d = readelf(path);
  REQUIRE(d);
  for (const char *line = d; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    if (memmem(line, n, "(NEEDED)", 8))
      for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (memmem(line, n, libs[i], strlen(libs[i]))) {
          size_t used = strlen(found);
          snprintf(found + used, cap - used, "%s ", libs[i] + 1);
        }
    line = end ? end + 1 : NULL;
  }
  free(d);
}

static void test_needed(char **exes, const char *module) {
  char found[512];
  for (int i = 0; i < 3; i++) {
    cuda_needed(exes[i], found, sizeof found);
    CHECKF(found[0] == '\0', "%s NEEDs %s", exes[i], found);
  }
  /* the check fires: the module needs them */
  cuda_needed(module, found, sizeof found);
  CHECKF(strstr(found, "libcublas.so") && strstr(found, "libcudnn.so"),
         "the module NEEDs only: %s", found);
}

/* Runs argv with env_value in GANFLOW_CUDA_MODULE (unset when NULL):
 * returns the exit status (128 + signal) and the output (malloc'd,
 * NUL-terminated) in *out. */
static int run(char *const *argv, const char *env_value, char **out) {
  char log[1200];
  snprintf(log, sizeof log, "%s/run.log", g_tmp);
  unsetenv("GANFLOW_CUDA_MODULE");
  int rc = tu_run_log(log, argv, env_value ? "GANFLOW_CUDA_MODULE" : NULL,
                      env_value);
  size_t len = 0;
  uint8_t *text = tu_read(log, &len);
  char *s = malloc(len + 1);
  REQUIRE(s);
  if (text) memcpy(s, text, len);
  s[len] = '\0';
  free(text);
  *out = s;
  return rc;
}

/* A folder of two 8x8 grey PNGs, for `ganflow fid`. */
static void png_dir(const char *dir) {
  REQUIRE(tu_mkdir(dir) == 0);
  uint16_t px[64];
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 64; i++) px[i] = (uint16_t)((i * 4 + k * 50) & 255);
    size_t len = 0;
    uint8_t *png = tu_png(8, 8, PNG_COLOR_TYPE_GRAY, 8, px, NULL, 0, 0, &len);
    REQUIRE(png);
    char path[1200];
    tu_path(path, sizeof path, dir, k ? "b.png" : "a.png");
    REQUIRE(tu_write(path, png, len) == 0);
    free(png);
  }
}

typedef struct exe_case {
  const char *name;
  char *argv[12];
  int rc; /* the exit status of a refused --device */
} exe_case;

static void test_device(char **exes, const char *not_a_module) {
  char pngs[1200], text[1200];
  tu_path(pngs, sizeof pngs, g_tmp, "pngs");
  png_dir(pngs);
  tu_path(text, sizeof text, g_tmp, "libganflow_cuda.so");
  REQUIRE(tu_write(text, "not a shared object\n", 20) == 0);
  exe_case cases[] = {
      {"ganflow-train", {exes[0], "--data", "/d", "--device", "cuda", NULL},
       2},
      {"ganflow-serve",
       {exes[1], "--model", "models:/m@a", "--listen", "127.0.0.1:0",
        "--device", "cuda", NULL},
       1},
      {"ganflow fid",
       {exes[2], "fid", pngs, pngs, "--threads", "1", "--device", "cuda",
        NULL},
       1},
  };
  gf_err e;
  int gpu = gf_cuda_device_check(0, &e) == GF_OK;
  struct {
    const char *env;  /* GANFLOW_CUDA_MODULE */
    const char *want; /* what the message says after "--device cuda" */
  } envs[] = {
      {NULL, "no CUDA device: "},
      {"/nonexistent/libganflow_cuda.so",
       "the CUDA backend module libganflow_cuda.so was not found (looked in "
       "GANFLOW_CUDA_MODULE=/nonexistent/libganflow_cuda.so)"},
      {text, "could not be loaded: "},
      {not_a_module, "could not be loaded: it has no gf_cuda_module_entry "
                     "(not a ganflow CUDA module)"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (size_t v = 0; v < sizeof envs / sizeof envs[0]; v++) {
      if (v == 0 && gpu) continue; /* a GPU: nothing to refuse */
      char *out = NULL;
      int rc = run(cases[c].argv, envs[v].env, &out);
      CHECKF(rc == cases[c].rc, "%s with GANFLOW_CUDA_MODULE=%s: exit %d, "
             "not %d: %s", cases[c].name, envs[v].env ? envs[v].env : "",
             rc, cases[c].rc, out);
      CHECKF(strstr(out, "--device cuda") && strstr(out, envs[v].want),
             "%s with GANFLOW_CUDA_MODULE=%s: %s", cases[c].name,
             envs[v].env ? envs[v].env : "", out);
      if (v == 1) printf("%s", out);
      free(out);
    }
  }
}

int main(int argc, char **argv) {
  REQUIRE(argc == 6);
  snprintf(g_tmp, sizeof g_tmp, "%s", GF_TEST_TMP);
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_tmp, g_tmp);
  REQUIRE(system(cmd) == 0);
  test_needed(argv + 1, argv[4]);
  test_device(argv + 1, argv[5]);
  return check_report();
}
