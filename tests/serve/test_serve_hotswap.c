/* test_serve_hotswap.c - hot swap under load (DESIGN §4.5) against the
 * `mlflow` fixture. Three versions of one model (two generators, and one
 * whose weights were damaged after their digests were written); 8 client
 * threads request images without pause while the alias moves v1 -> v2 ->
 * v1: no request fails, the version header follows the alias, and every
 * answer carries the bytes of the version it names. Then the alias moves
 * to the damaged version: the old one keeps serving, /metrics counts the
 * failed reload, and the versions swapped out have been freed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define MODEL "swap-mlp"
#define N_THREADS 8

typedef struct shared {
  char url[256];
  atomic_int stop;
  atomic_long total, failures, mismatches;
  pthread_mutex_t lock;
  char *ref[4];      /* bytes per version number 1..3, first seen */
  size_t ref_len[4];
  long seen[4];      /* answers per version */
  long first_bad_status;
} shared;

static void *client(void *arg) {
  shared *sh = arg;
  while (!atomic_load(&sh->stop)) {
    st_http h;
    int rc = st_request("GET", sh->url, NULL, NULL, 0, 30, &h);
    atomic_fetch_add(&sh->total, 1);
    int v = atoi(h.version);
    if (rc != 0 || h.status != 200 || v < 1 || v > 3) {
      atomic_fetch_add(&sh->failures, 1);
      pthread_mutex_lock(&sh->lock);
      if (!sh->first_bad_status) sh->first_bad_status = rc ? -1 : h.status;
      pthread_mutex_unlock(&sh->lock);
    } else {
      pthread_mutex_lock(&sh->lock);
      sh->seen[v]++;
      if (!sh->ref[v]) {
        sh->ref[v] = malloc(h.len);
        memcpy(sh->ref[v], h.body, h.len);
        sh->ref_len[v] = h.len;
      } else if (sh->ref_len[v] != h.len ||
                 memcmp(sh->ref[v], h.body, h.len) != 0) {
        atomic_fetch_add(&sh->mismatches, 1);
      }
      pthread_mutex_unlock(&sh->lock);
    }
    st_http_free(&h);
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls until a fresh request reports version v; seconds taken or -1. */
static double wait_version(const char *url, const char *v) {
  double t0 = now_s();
  while (now_s() - t0 < 15) {
    st_http h;
    int ok = st_get(url, &h) == 0 && h.status == 200 &&
             strcmp(h.version, v) == 0;
    st_http_free(&h);
    if (ok) return now_s() - t0;
    usleep(20000);
  }
  return -1;
}

static void set_alias(mlflow_client *c, const char *version) {
  mlflow_error me;
  if (mlflow_alias_set(c, MODEL, "live", version, &me) != MLFLOW_OK) {
    fprintf(stderr, "alias: %s\n", me.message);
    exit(1);
  }
}

int main(void) {
  char *uri = test_mlflow_uri();
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_config cfg;
  test_config(&cfg, uri);
  mlflow_client *c = test_client(&cfg);
  char v1[32], v2[32], v3[32];
  st_register_synthetic(c, MODEL, 101, 0, GF_TEST_TMP, v1);
  st_register_synthetic(c, MODEL, 202, 0, GF_TEST_TMP, v2);
  st_register_synthetic(c, MODEL, 303, 1, GF_TEST_TMP, v3);
  REQUIRE(!strcmp(v1, "1") && !strcmp(v2, "2") && !strcmp(v3, "3"));
  set_alias(c, v1);

  st_server s;
  const char *extra[] = {"--model", "models:/" MODEL "@live", "--poll", "0.2",
                         "--workers", "2", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);

  shared sh;
  memset(&sh, 0, sizeof sh);
  pthread_mutex_init(&sh.lock, NULL);
  snprintf(sh.url, sizeof sh.url, "%s/v1/models/" MODEL "/generate?seed=5",
           s.base);
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++)
    REQUIRE(pthread_create(&th[i], NULL, client, &sh) == 0);

  usleep(800000);
  set_alias(c, v2);
  double t2 = wait_version(sh.url, "2");
  CHECKF(t2 >= 0, "the server never reported version 2");
  usleep(800000);
  set_alias(c, v1);
  double t1 = wait_version(sh.url, "1");
  CHECKF(t1 >= 0, "the server never went back to version 1");
  usleep(800000);
  atomic_store(&sh.stop, 1);
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "hot swap: %ld requests, %ld failed, v1 %ld, v2 %ld; "
                  "swap seen after %.2f s and %.2f s\n",
          atomic_load(&sh.total), atomic_load(&sh.failures), sh.seen[1],
          sh.seen[2], t2, t1);
  CHECKF(atomic_load(&sh.failures) == 0, "%ld failed (first status %ld)",
         atomic_load(&sh.failures), sh.first_bad_status);
  CHECK_INT_EQ(atomic_load(&sh.mismatches), 0);
  CHECK(atomic_load(&sh.total) >= 50);
  CHECK(sh.seen[1] > 0 && sh.seen[2] > 0);
  CHECK(sh.seen[3] == 0);
  CHECK(sh.ref[1] && sh.ref[2] &&
        !(sh.ref_len[1] == sh.ref_len[2] &&
          memcmp(sh.ref[1], sh.ref[2], sh.ref_len[1]) == 0));

  char series[256];
  snprintf(series, sizeof series, "ganflow_serve_model_reloads_total{model="
           "\"%s\",uri=\"models:/%s@live\"}", MODEL, MODEL);
  CHECK_NEAR(st_server_metric(&s, series), 3, 0); /* v1, v2, v1 */

  /* The damaged version: refused, the old one keeps serving. */
  set_alias(c, v3);
  snprintf(series, sizeof series, "ganflow_serve_model_reload_failures_total"
           "{model=\"%s\",uri=\"models:/%s@live\"}", MODEL, MODEL);
  double t0 = now_s(), failures = 0;
  while (now_s() - t0 < 15 && (failures = st_server_metric(&s, series)) < 1)
    usleep(50000);
  CHECK_NEAR(failures, 1, 0);
  st_http h;
  REQUIRE(st_get(sh.url, &h) == 0);
  CHECK_INT_EQ(h.status, 200);
  CHECK_STR_EQ(h.version, "1");
  CHECK(sh.ref[1] && h.len == sh.ref_len[1] &&
        memcmp(h.body, sh.ref[1], h.len) == 0);
  st_http_free(&h);
  usleep(600000); /* a few more polls: still failed once, not retried */
  CHECK_NEAR(st_server_metric(&s, series), 1, 0);
  snprintf(series, sizeof series, "ganflow_serve_model_version{model=\"%s\","
           "uri=\"models:/%s@live\"}", MODEL, MODEL);
  CHECK_NEAR(st_server_metric(&s, series), 1, 0);
  /* Swapped-out versions were freed after their last request. */
  CHECK_NEAR(st_server_metric(&s, "ganflow_serve_model_versions_resident"), 1, 0);

  CHECK(st_server_alive(&s));
  CHECK_INT_EQ(st_server_stop(&s), 0);
  size_t len = 0;
  char *log = NULL;
  FILE *f = fopen(s.log, "r");
  if (f) {
    log = calloc(1, 1 << 20);
    len = fread(log, 1, (1 << 20) - 1, f);
    fclose(f);
  }
  CHECKF(log && strstr(log, "reload failed") && strstr(log, "version 3"),
         "the log does not name the failed reload (%zu bytes)", len);
  free(log);
  for (int i = 0; i < 4; i++) free(sh.ref[i]);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
