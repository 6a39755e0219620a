/* test_serve_cuda.c - ganflow-serve generating on the GPU (label gpu; exits
 * 77, skipped, in a build without the CUDA backend or on a machine without
 * a usable GPU, naming the reason).
 *
 * Two versions are registered in the fixture's MLflow server, an mlp and a
 * dcgan 64x64x3 generator (synthetic weights from the model library), and
 * served by two ganflow-serve processes, one with --device cpu and one with
 * --device cuda. Checked on the CUDA server:
 *   - KServe V2 infer for 8 seeds: FP32 images within 2e-3 of the CPU
 *     server's (cuBLAS/cuDNN against oneDNN, FP32 math, no TF32);
 *   - the same request twice gives the same bytes (a version and a seed
 *     name one image on a device);
 *   - a 16-image PNG grid decodes with libpng to the CPU grid's size, every
 *     pixel within 2 levels of the CPU grid's;
 *   - 4 client threads at once (the workers share the device), then
 *     /metrics counts the images, and SIGTERM ends the server with 0. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gf/ctx.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

enum { N_SEEDS = 8, N_THREADS = 4, PER_THREAD = 10 };

/* FP32 values of V2 infer's first output for seeds 1..N_SEEDS; *n values,
 * malloc'd. */
static float *infer(const st_server *s, const char *model, size_t *n) {
  char url[512], body[512];
  snprintf(url, sizeof url, "%s/v2/models/%s/infer", s->base, model);
  snprintf(body, sizeof body,
           "{\"inputs\": [{\"name\": \"seed\", \"shape\": [%d], "
           "\"datatype\": \"INT64\", \"data\": [1, 2, 3, 4, 5, 6, 7, 8]}]}",
           N_SEEDS);
  const char *hdr[] = {"Content-Type: application/json", NULL};
  st_http h;
  REQUIRE(st_request("POST", url, hdr, body, strlen(body), 120, &h) == 0);
  CHECKF(h.status == 200, "%s infer: HTTP %ld %s", model, h.status,
         h.body ? h.body : "");
  cJSON *j = cJSON_Parse(h.body);
  cJSON *data = cJSON_GetObjectItem(
      cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0), "data");
  int count = cJSON_GetArraySize(data);
  float *out = malloc(((size_t)count + 1) * sizeof *out);
  REQUIRE(out != NULL);
  int i = 0;
  for (cJSON *v = data ? data->child : NULL; v; v = v->next)
    out[i++] = (float)v->valuedouble;
  *n = (size_t)count;
  cJSON_Delete(j);
  st_http_free(&h);
  return out;
}

static void get(const st_server *s, const char *path, st_http *h) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", s->base, path);
  REQUIRE(st_get(url, h) == 0);
}

typedef struct client_arg {
  const st_server *s;
  const char *model;
  int failures;
} client_arg;

static void *client(void *p) {
  client_arg *a = p;
  for (int i = 0; i < PER_THREAD; i++) {
    char path[256];
    snprintf(path, sizeof path, "/v1/models/%s/generate?seed=%d&n=4",
             a->model, i);
    st_http h;
    get(a->s, path, &h);
    if (h.status != 200) a->failures++;
    st_http_free(&h);
  }
  return NULL;
}

static void compare_model(const st_server *cpu, const st_server *gpu,
                          const char *model, size_t image_numel) {
  size_t na = 0, nb = 0;
  float *a = infer(cpu, model, &na), *b = infer(gpu, model, &nb);
  CHECKF(na == nb && na == N_SEEDS * image_numel,
         "%s: %zu CPU values, %zu CUDA values, want %zu", model, na, nb,
         (size_t)N_SEEDS * image_numel);
  double worst = 0;
  for (size_t i = 0; i < na && i < nb; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= worst)) worst = d; /* NaN counts as worst */
  }
  fprintf(stderr, "%s: max |cpu - cuda| over %zu values: %.3g\n", model, na,
          worst);
  CHECKF(worst <= 2e-3, "%s: CUDA images differ from the CPU's by %.3g",
         model, worst);
  free(a);
  free(b);

  /* Same request twice on the GPU: same bytes. A 16-image grid next to the
   * CPU server's. */
  char path[256];
  snprintf(path, sizeof path, "/v1/models/%s/generate?seed=3&n=16", model);
  st_http g1, g2, c1;
  get(gpu, path, &g1);
  get(gpu, path, &g2);
  get(cpu, path, &c1);
  CHECK_INT_EQ(g1.status, 200);
  CHECK_INT_EQ(c1.status, 200);
  CHECKF(g1.len == g2.len && memcmp(g1.body, g2.body, g1.len) == 0,
         "%s: two CUDA answers for one seed differ", model);
  int w1, h1, ch1, w2, h2, ch2;
  uint8_t *p1 = NULL, *p2 = NULL;
  CHECK(st_png_decode(g1.body, g1.len, &w1, &h1, &ch1, &p1) == 0);
  CHECK(st_png_decode(c1.body, c1.len, &w2, &h2, &ch2, &p2) == 0);
  if (p1 && p2) {
    CHECKF(w1 == w2 && h1 == h2 && ch1 == ch2, "%s: grid %dx%dx%d vs CPU "
           "%dx%dx%d", model, w1, h1, ch1, w2, h2, ch2);
    long off = 0;
    for (long i = 0; w1 == w2 && h1 == h2 && ch1 == ch2 &&
                     i < (long)w1 * h1 * ch1; i++)
      off += abs((int)p1[i] - (int)p2[i]) > 2;
    CHECKF(off == 0, "%s: %ld grid pixels differ by more than 2 levels",
           model, off);
  }
  free(p1);
  free(p2);
  st_http_free(&g1);
  st_http_free(&g2);
  st_http_free(&c1);
}

int main(void) {
  gf_err e;
  if (gf_cuda_device_check(0, &e) != GF_OK) SKIP_TEST("%s", e.msg);
  char *uri = test_mlflow_uri();
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/cpu' '%s/cuda'",
           GF_TEST_TMP, GF_TEST_TMP, GF_TEST_TMP);
  REQUIRE(system(cmd) == 0);
  mlflow_client *c = test_client_of(uri);

  char mlp[128], dcgan[128], v_mlp[32], v_dcgan[32];
  test_unique(mlp, sizeof mlp, "cuda-mlp");
  test_unique(dcgan, sizeof dcgan, "cuda-dcgan");
  st_register_synthetic_arch(c, mlp, GF_ARCH_MLP, 21, 0, GF_TEST_TMP, v_mlp);
  st_register_synthetic_arch(c, dcgan, GF_ARCH_DCGAN, 22, 0, GF_TEST_TMP,
                             v_dcgan);
  char uri_mlp[200], uri_dcgan[200];
  snprintf(uri_mlp, sizeof uri_mlp, "models:/%s/%s", mlp, v_mlp);
  snprintf(uri_dcgan, sizeof uri_dcgan, "models:/%s/%s", dcgan, v_dcgan);

  st_server cpu, gpu;
  const char *extra_cpu[] = {"--model", uri_mlp, "--model", uri_dcgan,
                             "--poll", "0", "--device", "cpu", NULL};
  const char *extra_gpu[] = {"--model", uri_mlp, "--model", uri_dcgan,
                             "--poll", "0", "--device", "cuda:0",
                             "--workers", "2", NULL};
  st_server_start(&cpu, GF_TEST_TMP "/cpu", uri, extra_cpu, 1);
  st_server_start(&gpu, GF_TEST_TMP "/cuda", uri, extra_gpu, 1);

  compare_model(&cpu, &gpu, mlp, 28 * 28);
  compare_model(&cpu, &gpu, dcgan, 3 * 64 * 64);

  client_arg args[N_THREADS];
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (client_arg){&gpu, i % 2 ? dcgan : mlp, 0};
    REQUIRE(pthread_create(&th[i], NULL, client, &args[i]) == 0);
  }
  int failures = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  CHECK_INT_EQ(failures, 0);
  st_http m;
  get(&gpu, "/metrics", &m);
  CHECK_INT_EQ(m.status, 200);
  /* 2 models x (8 infer + 2 x 16 grid) + threads x 10 x 4 */
  CHECK(st_metric(m.body, "ganflow_serve_images_total") >=
        2 * (N_SEEDS + 32) + N_THREADS * PER_THREAD * 4);
  st_http_free(&m);

  CHECK(st_server_alive(&gpu));
  CHECK_INT_EQ(st_server_stop(&gpu), 0);
  CHECK_INT_EQ(st_server_stop(&cpu), 0);
  if (check_failures_) {
    st_print_log(gpu.log);
  }
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
