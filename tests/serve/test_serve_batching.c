/* test_serve_batching.c - dynamic batching against the `mlflow` fixture:
 * ganflow-serve with its default flags (passes of up to 16 rows shared by
 * queued requests, 500 us queue delay, 2 workers) serves a dcgan at 28x28
 * (the quickstart's network) and an mlp. For 12 seeds each, four kinds of
 * request are first answered alone: a PNG of one image, a PNG grid of 6,
 * and V2 infer with FP32 answers for 1 and for 5 seeds (the FP32 text
 * shows a difference a PNG's 8 bits may hide). Then 64 client threads,
 * each its own connection, send them all at once: every answer must hold
 * the very bytes the same request got alone, /metrics must show that
 * requests did share passes, and a second server process with other
 * batching flags (--preferred-batch 5, --max-queue-delay-us 0, 1 worker)
 * answers the same bytes again. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define N_MODELS 2
static const char *const MODELS[N_MODELS] = {"batch-dcgan28", "batch-mlp"};
#define N_SEEDS 12
#define N_THREADS 64
#define PER_THREAD 12

typedef struct ref {
  char *body;
  size_t len;
} ref;

#define N_KINDS 4 /* PNG n=1, PNG n=6, V2 FP32 n=1, V2 FP32 n=5 */

typedef struct shared {
  const st_server *s;
  ref refs[N_MODELS][N_KINDS][N_SEEDS]; /* the lone answers */
  atomic_long failures, mismatches, total;
} shared;

/* One request of kind for seed to model mi; 0 with a 200 answer in *h. */
static int ask(const st_server *s, int mi, int kind, int seed, st_http *h) {
  char url[256], body[256];
  if (kind < 2) {
    snprintf(url, sizeof url, "%s/v1/models/%s/generate?seed=%d&n=%d",
             s->base, MODELS[mi], seed, kind ? 6 : 1);
    return st_get(url, h) == 0 && h->status == 200 ? 0 : -1;
  }
  int n = kind == 2 ? 1 : 5;
  int at = snprintf(body, sizeof body,
                    "{\"inputs\": [{\"name\": \"seed\", \"shape\": [%d], "
                    "\"datatype\": \"INT64\", \"data\": [", n);
  for (int k = 0; k < n; k++)
    at += snprintf(body + at, sizeof body - (size_t)at, "%s%d", k ? ", " : "",
                   seed * 7 + k);
  snprintf(body + at, sizeof body - (size_t)at, "]}]}");
  snprintf(url, sizeof url, "%s/v2/models/%s/infer", s->base, MODELS[mi]);
  const char *hdr[] = {"Content-Type: application/json", NULL};
  return st_request("POST", url, hdr, body, strlen(body), 30, h) == 0 &&
                 h->status == 200
             ? 0
             : -1;
}

/* The lone answers: one request at a time. */
static void take_refs(const st_server *s,
                      ref refs[N_MODELS][N_KINDS][N_SEEDS]) {
  for (int mi = 0; mi < N_MODELS; mi++)
    for (int seed = 0; seed < N_SEEDS; seed++)
      for (int kind = 0; kind < N_KINDS; kind++) {
        st_http h;
        REQUIRE(ask(s, mi, kind, seed, &h) == 0);
        refs[mi][kind][seed].body = h.body;
        refs[mi][kind][seed].len = h.len;
        h.body = NULL;
        st_http_free(&h);
      }
}

typedef struct client_arg {
  shared *sh;
  int id;
} client_arg;

static void *client(void *arg) {
  shared *sh = ((client_arg *)arg)->sh;
  int id = ((client_arg *)arg)->id;
  for (int i = 0; i < PER_THREAD; i++) {
    int seed = (id * 5 + i) % N_SEEDS, kind = (i + id) % N_KINDS;
    int mi = (id + i / N_KINDS) % N_MODELS;
    st_http h;
    int rc = ask(sh->s, mi, kind, seed, &h);
    atomic_fetch_add(&sh->total, 1);
    const ref *want = &sh->refs[mi][kind][seed];
    if (rc != 0)
      atomic_fetch_add(&sh->failures, 1);
    else if (h.len != want->len || memcmp(h.body, want->body, h.len) != 0)
      atomic_fetch_add(&sh->mismatches, 1);
    st_http_free(&h);
  }
  return NULL;
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  gf_model_config dc;
  gf_model_config_default(&dc, GF_ARCH_DCGAN);
  dc.image_height = dc.image_width = 28;
  dc.image_channels = 1;
  char v[32];
  st_register_synthetic_cfg(c, MODELS[0], &dc, 404, 0, GF_TEST_TMP, v);
  st_register_synthetic(c, MODELS[1], 405, 0, GF_TEST_TMP, v);

  st_server s;
  const char *extra[] = {"--model", "models:/batch-dcgan28/1", "--model",
                         "models:/batch-mlp/1", "--poll", "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);

  static shared sh;
  sh.s = &s;
  take_refs(&s, sh.refs);
  double passes0 = st_server_metric(&s, "ganflow_serve_forward_passes_total");
  /* Alone, each n=1 request is one pass; 6 images two (4 + 2); 5 images
   * two (4 + 1). */
  CHECKF(passes0 == N_MODELS * N_SEEDS * (1 + 2 + 1 + 2), "%g passes for "
         "the lone requests", passes0);
  CHECK(st_server_metric(&s, "ganflow_serve_shared_jobs_total") == 0);

  static pthread_t th[N_THREADS];
  static client_arg ca[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    ca[i] = (client_arg){&sh, i};
    REQUIRE(pthread_create(&th[i], NULL, client, &ca[i]) == 0);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  long total = atomic_load(&sh.total);
  long failures = atomic_load(&sh.failures);
  long mismatches = atomic_load(&sh.mismatches);
  double shared_jobs = st_server_metric(&s, "ganflow_serve_shared_jobs_total");
  double passes = st_server_metric(&s, "ganflow_serve_forward_passes_total") - passes0;
  printf("batching: %ld requests on %d connections, %ld failed, %ld with "
         "other bytes than alone; %g requests shared a pass; %g passes\n",
         total, N_THREADS, failures, mismatches, shared_jobs, passes);
  CHECK_INT_EQ(total, N_THREADS * PER_THREAD);
  CHECK_INT_EQ(failures, 0);
  CHECK_INT_EQ(mismatches, 0);
  CHECKF(shared_jobs >= 2, "no request shared a pass (%g)", shared_jobs);
  CHECK_INT_EQ(st_server_stop(&s), 0);

  /* Another process with other batching flags: the same bytes. */
  const char *other[] = {"--model", "models:/batch-dcgan28/1", "--model",
                         "models:/batch-mlp/1", "--poll", "0",
                         "--workers", "1", "--preferred-batch", "5",
                         "--max-queue-delay-us", "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, other, 1);
  static ref again[N_MODELS][N_KINDS][N_SEEDS];
  take_refs(&s, again);
  for (int mi = 0; mi < N_MODELS; mi++)
    for (int k = 0; k < N_KINDS; k++)
      for (int i = 0; i < N_SEEDS; i++) {
        const ref *a = &again[mi][k][i], *b = &sh.refs[mi][k][i];
        CHECKF(a->len == b->len && !memcmp(a->body, b->body, a->len),
               "%s kind %d seed %d: another process answered other bytes",
               MODELS[mi], k, i);
        free(again[mi][k][i].body);
        free(sh.refs[mi][k][i].body);
      }
  CHECK_INT_EQ(st_server_stop(&s), 0);

  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
