/* test_serve_hotswap.c - hot swap under load (DESIGN §4.5) against the
 * `mlflow` fixture. Three versions of one model (two generators, and one
 * whose weights were damaged after their digests were written); 8 client
 * threads request images without pause while the alias moves v1 -> v2 ->
 * v1: no request fails, the version header follows the alias, and every
 * answer carries the bytes of the version it names. Then the alias moves
 * to the damaged version: the old one keeps serving, /metrics counts the
 * failed reload, and the versions swapped out have been freed.
 *
 * No step waits for time to pass. Each phase of load lasts until the
 * clients have had LOAD_ANSWERS answers of the version served, counted by
 * the clients themselves (a condition variable), and a swap is seen when a
 * request sent after the alias moved answers with the new version. That
 * the failed version is not retried is checked over RETRY_POLLS whole
 * polls of the server's registry watcher, each proved by an alias the test
 * sets (a "probe") showing up in the registry listing of the server's page
 * (GET /), which the watcher refreshes at the start of every poll. */
#define _GNU_SOURCE
#include <errno.h>
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
#include "wait_util.h"

/* The model's name: this prefix and test_unique's suffix, so that every
 * run (ctest --repeat on one fixture server included) registers versions
 * 1, 2 and 3 of a model of its own. */
#define MODEL_PREFIX "swap-mlp"
#define N_THREADS 8
/* The server's registry poll period (--poll), seconds. */
#define POLL_S 0.2
/* Answers of the version being served per phase of load: 25 per client
 * (a few hundredths of a second when idle), so every client is busy
 * across each swap and the total is far above the 50 checked. */
#define LOAD_ANSWERS (25 * N_THREADS)
/* Whole watcher polls, after the failed reload, over which the failed
 * version must not be tried again (see the file's header). */
#define RETRY_POLLS 3
/* Deadline of each wait for the server or the clients: 75 poll periods
 * (a swap is seen within one or two, an answer takes milliseconds). */
#define EVENT_WAIT_S (75 * POLL_S)
/* Epochs: 0 before the first move of the alias, +1 at each move. */
#define N_EPOCHS 4

typedef struct shared {
  char url[256];
  atomic_int stop;
  atomic_int epoch;  /* moves of the alias so far (< N_EPOCHS) */
  atomic_long total, failures, mismatches;
  pthread_mutex_t lock;
  pthread_cond_t answered; /* broadcast under lock at each good answer */
  char *ref[4];      /* bytes per version number 1..3, first seen */
  size_t ref_len[4];
  long seen[4];      /* answers per version */
  long seen_in[N_EPOCHS][4]; /* answers per version to requests sent in
                                that epoch (after that move) */
  long first_bad_status;
} shared;

static void *client(void *arg) {
  shared *sh = arg;
  while (!atomic_load(&sh->stop)) {
    st_http h;
    int epoch = atomic_load(&sh->epoch);
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
      sh->seen_in[epoch][v]++;
      if (!sh->ref[v]) {
        sh->ref[v] = malloc(h.len);
        memcpy(sh->ref[v], h.body, h.len);
        sh->ref_len[v] = h.len;
      } else if (sh->ref_len[v] != h.len ||
                 memcmp(sh->ref[v], h.body, h.len) != 0) {
        atomic_fetch_add(&sh->mismatches, 1);
      }
      pthread_cond_broadcast(&sh->answered);
      pthread_mutex_unlock(&sh->lock);
    }
    st_http_free(&h);
  }
  return NULL;
}

/* Waits until the clients have had `count` answers of version v to
 * requests sent in epoch `epoch`, or EVENT_WAIT_S; seconds taken, or -1
 * (after saying so) at the deadline. */
static double wait_answers(shared *sh, int epoch, int v, long count,
                           const char *what) {
  double t0 = tu_mono_s(), end = t0 + EVENT_WAIT_S;
  struct timespec ts = {(time_t)end, (long)((end - (double)(time_t)end) * 1e9)};
  pthread_mutex_lock(&sh->lock);
  int rc = 0;
  while (sh->seen_in[epoch][v] < count && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&sh->answered, &sh->lock, &ts);
  long got = sh->seen_in[epoch][v];
  pthread_mutex_unlock(&sh->lock);
  if (got >= count) return tu_mono_s() - t0;
  fprintf(stderr, "%s: %ld of %ld answers of version %d within %.0f s "
                  "(%ld requests, %ld failed so far)\n",
          what, got, count, v, EVENT_WAIT_S, atomic_load(&sh->total),
          atomic_load(&sh->failures));
  return -1;
}

static void set_alias_of(mlflow_client *c, const char *model,
                         const char *alias, const char *version) {
  mlflow_error me;
  if (mlflow_alias_set(c, model, alias, version, &me) != MLFLOW_OK) {
    fprintf(stderr, "alias %s: %s\n", alias, me.message);
    exit(1);
  }
}

/* Moves @live to version; requests the clients send from now on count in
 * the next epoch. */
static void move_live(mlflow_client *c, const char *model, shared *sh,
                      const char *version) {
  set_alias_of(c, model, "live", version);
  REQUIRE(atomic_load(&sh->epoch) + 1 < N_EPOCHS);
  atomic_fetch_add(&sh->epoch, 1);
}

/* The server's page (GET /) holds `text`, e.g. "@probe-1" in its registry
 * listing. */
typedef struct page_probe {
  const st_server *s;
  const char *text;
} page_probe;

static int page_shows(void *arg) {
  const page_probe *p = arg;
  char url[1024];
  snprintf(url, sizeof url, "%s/", p->s->base);
  st_http h;
  int ok = st_get(url, &h) == 0 && h.status == 200 && h.body &&
           strstr(h.body, p->text) != NULL;
  st_http_free(&h);
  return ok;
}

int main(void) {
  char *uri = test_mlflow_uri();
  /* a scratch folder of this process: copies of the test may run at once */
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/run-%d", GF_TEST_TMP, (int)getpid());
  tu_fresh_dir(tmp);
  mlflow_client *c = test_client_of(uri);
  char model[64], v1[32], v2[32], v3[32];
  test_unique(model, sizeof model, MODEL_PREFIX);
  st_register_synthetic(c, model, 101, 0, tmp, v1);
  st_register_synthetic(c, model, 202, 0, tmp, v2);
  st_register_synthetic(c, model, 303, 1, tmp, v3);
  REQUIRE(!strcmp(v1, "1") && !strcmp(v2, "2") && !strcmp(v3, "3"));
  set_alias_of(c, model, "live", v1);

  st_server s;
  char poll_arg[16];
  snprintf(poll_arg, sizeof poll_arg, "%g", POLL_S);
  char model_uri[160];
  snprintf(model_uri, sizeof model_uri, "models:/%s@live", model);
  const char *extra[] = {"--model", model_uri, "--poll", poll_arg,
                         "--workers", "2", NULL};
  st_server_start(&s, tmp, uri, extra, 1);

  shared sh;
  memset(&sh, 0, sizeof sh);
  pthread_mutex_init(&sh.lock, NULL);
  pthread_condattr_t ca;
  REQUIRE(pthread_condattr_init(&ca) == 0);
  REQUIRE(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
  REQUIRE(pthread_cond_init(&sh.answered, &ca) == 0);
  pthread_condattr_destroy(&ca);
  snprintf(sh.url, sizeof sh.url, "%s/v1/models/%s/generate?seed=5", s.base,
           model);
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++)
    REQUIRE(pthread_create(&th[i], NULL, client, &sh) == 0);

  /* load on v1; v2 under load; load on v2; back to v1; load on v1 */
  CHECKF(wait_answers(&sh, 0, 1, LOAD_ANSWERS, "load on v1") >= 0,
         "the clients did not get going on version 1");
  move_live(c, model, &sh, v2);
  double t2 = wait_answers(&sh, 1, 2, 1, "swap to v2");
  CHECKF(t2 >= 0, "the server never reported version 2");
  CHECKF(wait_answers(&sh, 1, 2, LOAD_ANSWERS, "load on v2") >= 0,
         "version 2 did not serve the clients");
  move_live(c, model, &sh, v1);
  double t1 = wait_answers(&sh, 2, 1, 1, "swap back to v1");
  CHECKF(t1 >= 0, "the server never went back to version 1");
  CHECKF(wait_answers(&sh, 2, 1, LOAD_ANSWERS, "load on v1 again") >= 0,
         "version 1 did not serve the clients again");
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

  char series[512];
  snprintf(series, sizeof series, "ganflow_serve_model_reloads_total{model="
           "\"%s\",uri=\"models:/%s@live\"}", model, model);
  CHECK_NEAR(st_server_metric(&s, series), 3, 0); /* v1, v2, v1 */

  /* The damaged version: refused, the old one keeps serving. */
  move_live(c, model, &sh, v3);
  snprintf(series, sizeof series, "ganflow_serve_model_reload_failures_total"
           "{model=\"%s\",uri=\"models:/%s@live\"}", model, model);
  /* /metrics until the failed reload is counted (checked each 50 ms) */
  double failures = -1;
  tu_deadline d = tu_deadline_in(EVENT_WAIT_S);
  while ((failures = st_server_metric(&s, series)) < 1 &&
         !tu_deadline_passed(&d))
    tu_pause_s(0.05);
  CHECKF(failures >= 1, "no failed reload counted within %.0f s",
         EVENT_WAIT_S);
  CHECK_NEAR(failures, 1, 0);
  st_http h;
  REQUIRE(st_get(sh.url, &h) == 0);
  CHECK_INT_EQ(h.status, 200);
  CHECK_STR_EQ(h.version, "1");
  CHECK(sh.ref[1] && h.len == sh.ref_len[1] &&
        memcmp(h.body, sh.ref[1], h.len) == 0);
  st_http_free(&h);
  /* A bounded negative check: the version that failed is not tried again
   * while @live stays on it (slot.c remembers it), over RETRY_POLLS whole
   * polls of the watcher after the failure. Probe k (an alias on v2) shown
   * on the page means a poll began after it was set; probe k + 1 shown
   * means the poll that first showed probe k - which resolved @live to v3
   * - has ended. */
  double probe_t0 = tu_mono_s();
  for (int k = 1; k <= RETRY_POLLS + 1; k++) {
    char alias[32], text[40];
    snprintf(alias, sizeof alias, "probe-%d", k);
    snprintf(text, sizeof text, "@%s", alias);
    set_alias_of(c, model, alias, v2);
    page_probe pp = {&s, text};
    CHECKF(tu_wait_for(page_shows, &pp, EVENT_WAIT_S, POLL_S / 4),
           "the server's page did not show %s within %.0f s (watcher "
           "stuck?)",
           text, EVENT_WAIT_S);
  }
  CHECK_NEAR(st_server_metric(&s, series), 1, 0); /* failed once, no retry */
  fprintf(stderr, "failed version left alone over %d polls (%.2f s)\n",
          RETRY_POLLS, tu_mono_s() - probe_t0);
  snprintf(series, sizeof series, "ganflow_serve_model_version{model=\"%s\","
           "uri=\"models:/%s@live\"}", model, model);
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
  pthread_cond_destroy(&sh.answered);
  pthread_mutex_destroy(&sh.lock);
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(tmp);
  rmdir(GF_TEST_TMP); /* when no other copy still uses it */
  return check_report();
}
