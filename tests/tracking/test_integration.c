/* test_integration.c - every call of the tracking library against the real
 * MLflow server that the ctest fixture starts: experiments (including a
 * soft-deleted one), runs (create, get, update, resume, search, delete),
 * params/tags/metrics and log-batch, metric history, artifacts (upload,
 * list, download; file and tree; runs:/ URIs), and the registry (models,
 * versions, READY wait, aliases, download URI, models:/ resolution and
 * download). */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mlflow_test.h"

static mlflow_client *client;
static char tmpdir[512];

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f);
  REQUIRE(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* Whole file into a malloc'd buffer; *n its length. NULL if unreadable. */
static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static int same_file(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  char *x = slurp(a, &na), *y = slurp(b, &nb);
  int same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void test_server(void) {
  mlflow_error err;
  CHECK_INT_EQ(mlflow_ping(client, &err), MLFLOW_OK);
  char *v = NULL;
  CHECK_INT_EQ(mlflow_server_version(client, &v, &err), MLFLOW_OK);
  CHECKF(v && v[0] == '3', "server version %s", v ? v : "(null)");
  free(v);
}

static void test_experiments(char *exp_id_out, size_t cap) {
  mlflow_error err;
  char name[128];
  test_unique(name, sizeof name, "it-exp");
  mlflow_experiment e, e2;
  CHECK_INT_EQ(mlflow_experiment_get_by_name(client, name, &e, &err),
               MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(mlflow_experiment_get_or_create(client, name, &e, &err), MLFLOW_OK);
  REQUIRE(e.experiment_id);
  CHECK_STR_EQ(e.name, name);
  CHECK_STR_EQ(e.lifecycle_stage, "active");
  CHECK(e.artifact_location && !strncmp(e.artifact_location, "mlflow-artifacts:", 17));
  CHECK_INT_EQ(mlflow_experiment_get_or_create(client, name, &e2, &err), MLFLOW_OK);
  CHECK_STR_EQ(e2.experiment_id, e.experiment_id);
  mlflow_experiment_free(&e2);
  CHECK_INT_EQ(mlflow_experiment_get(client, e.experiment_id, &e2, &err), MLFLOW_OK);
  CHECK_STR_EQ(e2.name, name);
  mlflow_experiment_free(&e2);

  /* Creating the same name again is RESOURCE_ALREADY_EXISTS (a 400). */
  char *id = NULL;
  CHECK_INT_EQ(mlflow_experiment_create(client, name, &id, &err), MLFLOW_E_HTTP);
  CHECK_INT_EQ(err.http_status, 400);
  CHECK_STR_EQ(err.error_code, "RESOURCE_ALREADY_EXISTS");
  free(id);

  /* A soft-deleted experiment is found and restored by get_or_create. */
  CHECK_INT_EQ(mlflow_experiment_delete(client, e.experiment_id, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_experiment_get_by_name(client, name, &e2, &err), MLFLOW_OK);
  CHECK_STR_EQ(e2.lifecycle_stage, "deleted");
  mlflow_experiment_free(&e2);
  CHECK_INT_EQ(mlflow_experiment_get_or_create(client, name, &e2, &err), MLFLOW_OK);
  CHECK_STR_EQ(e2.experiment_id, e.experiment_id);
  CHECK_STR_EQ(e2.lifecycle_stage, "active");
  mlflow_experiment_free(&e2);
  CHECK_INT_EQ(mlflow_experiment_get(client, e.experiment_id, &e2, &err), MLFLOW_OK);
  CHECK_STR_EQ(e2.lifecycle_stage, "active");
  mlflow_experiment_free(&e2);

  CHECK_INT_EQ(mlflow_experiment_set_tag(client, e.experiment_id,
                                         "mlflow.experimentKind",
                                         "custom_model_development", &err),
               MLFLOW_OK);
  CHECK_INT_EQ(mlflow_experiment_set_tag(client, e.experiment_id, "bad key!",
                                         "x", &err), MLFLOW_E_INVALID);
  CHECK_INT_EQ(mlflow_experiment_get(client, "987654321", &e2, &err),
               MLFLOW_E_NOT_FOUND);
  CHECK_STR_EQ(err.error_code, "RESOURCE_DOES_NOT_EXIST");
  snprintf(exp_id_out, cap, "%s", e.experiment_id);
  mlflow_experiment_free(&e);
}

static void test_runs(const char *exp_id, mlflow_run_info *keep) {
  mlflow_error err;
  mlflow_kv tags[] = {{"ganflow.version", "0.1.0"}, {"mlflow.source.type", "LOCAL"}};
  mlflow_run_info info, info2;
  int64_t t0 = mlflow_now_ms();
  CHECK_INT_EQ(mlflow_run_create(client, exp_id, "first-run", t0, tags, 2, &info, &err),
               MLFLOW_OK);
  REQUIRE(info.run_id);
  CHECK_STR_EQ(info.experiment_id, exp_id);
  CHECK_STR_EQ(info.run_name, "first-run");
  CHECK_INT_EQ(info.status, MLFLOW_RUN_RUNNING);
  CHECK_INT_EQ(info.start_time_ms, t0);
  CHECK(info.artifact_uri && strstr(info.artifact_uri, info.run_id));

  mlflow_run run;
  CHECK_INT_EQ(mlflow_run_get(client, info.run_id, &run, &err), MLFLOW_OK);
  CHECK_STR_EQ(mlflow_run_tag(&run, "ganflow.version"), "0.1.0");
  CHECK(mlflow_run_tag(&run, "ganflow.create_id") != NULL);
  mlflow_run_free(&run);

  /* End, then resume: back to RUNNING with the same id. */
  CHECK_INT_EQ(mlflow_run_update(client, info.run_id, MLFLOW_RUN_KILLED, t0 + 5, &err),
               MLFLOW_OK);
  CHECK_INT_EQ(mlflow_run_get(client, info.run_id, &run, &err), MLFLOW_OK);
  CHECK_INT_EQ(run.info.status, MLFLOW_RUN_KILLED);
  CHECK_INT_EQ(run.info.end_time_ms, t0 + 5);
  mlflow_run_free(&run);
  CHECK_INT_EQ(mlflow_run_resume(client, info.run_id, &info2, &err), MLFLOW_OK);
  CHECK_STR_EQ(info2.run_id, info.run_id);
  CHECK_INT_EQ(info2.status, MLFLOW_RUN_RUNNING);
  mlflow_run_info_free(&info2);
  CHECK_INT_EQ(mlflow_run_get(client, info.run_id, &run, &err), MLFLOW_OK);
  CHECK_INT_EQ(run.info.status, MLFLOW_RUN_RUNNING);
  mlflow_run_free(&run);

  CHECK_INT_EQ(mlflow_run_get(client, "0123456789abcdef0123456789abcdef", &run, &err),
               MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(mlflow_run_resume(client, "0123456789abcdef0123456789abcdef", NULL, &err),
               MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(mlflow_run_update(client, info.run_id, (mlflow_run_status)42, -1, &err),
               MLFLOW_E_INVALID);

  /* A second run; search with a filter, then paging. */
  CHECK_INT_EQ(mlflow_run_create(client, exp_id, "second-run", 0, NULL, 0, &info2, &err),
               MLFLOW_OK);
  const char *ids[] = {exp_id};
  mlflow_run_list list;
  CHECK_INT_EQ(mlflow_runs_search(client, ids, 1, "tags.`ganflow.version` = '0.1.0'",
                                  NULL, 0, NULL, &list, &err), MLFLOW_OK);
  CHECK_INT_EQ(list.count, 1);
  if (list.count == 1) CHECK_STR_EQ(list.runs[0].info.run_id, info.run_id);
  mlflow_run_list_free(&list);
  CHECK_INT_EQ(mlflow_runs_search(client, ids, 1, NULL, "attributes.start_time ASC",
                                  1, NULL, &list, &err), MLFLOW_OK);
  CHECK_INT_EQ(list.count, 1);
  CHECK(list.next_page_token != NULL);
  char *tok = list.next_page_token ? strdup(list.next_page_token) : NULL;
  mlflow_run_list_free(&list);
  CHECK_INT_EQ(mlflow_runs_search(client, ids, 1, NULL, "attributes.start_time ASC",
                                  1, tok, &list, &err), MLFLOW_OK);
  CHECK_INT_EQ(list.count, 1);
  free(tok);
  mlflow_run_list_free(&list);
  CHECK_INT_EQ(mlflow_runs_search(client, ids, 1, "this is not a filter", NULL, 0,
                                  NULL, &list, &err), MLFLOW_E_HTTP);
  CHECK_STR_EQ(err.error_code, "INVALID_PARAMETER_VALUE");

  /* A deleted run cannot be resumed. */
  CHECK_INT_EQ(mlflow_run_delete(client, info2.run_id, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_run_resume(client, info2.run_id, NULL, &err), MLFLOW_E_STATE);
  CHECK(strstr(err.message, "deleted") != NULL);
  mlflow_run_info_free(&info2);
  *keep = info;
}

static void test_logging(const char *run_id) {
  mlflow_error err;
  CHECK_INT_EQ(mlflow_log_param(client, run_id, "lr_g", "0.0002", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_param(client, run_id, "lr_g", "0.0002", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_param(client, run_id, "lr_g", "0.1", &err), MLFLOW_E_HTTP);
  CHECK_STR_EQ(err.error_code, "INVALID_PARAMETER_VALUE");
  CHECK_INT_EQ(mlflow_set_tag(client, run_id, "device", "cpu", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_set_tag(client, run_id, "device", "cuda:0", &err), MLFLOW_OK);

  uint64_t a0 = mlflow_client_attempts(client);
  CHECK_INT_EQ(mlflow_log_metric(client, run_id, "bad;key", 1, 0, 0, &err),
               MLFLOW_E_INVALID);
  char big[6100];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK_INT_EQ(mlflow_log_param(client, run_id, "big", big, &err), MLFLOW_E_INVALID);
  CHECK(strstr(err.message, "6000") != NULL);
  CHECK_INT_EQ(mlflow_client_attempts(client), a0); /* refused before sending */

  int64_t ts = 1700000000000LL;
  CHECK_INT_EQ(mlflow_log_metric(client, run_id, "special", NAN, ts, 0, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_metric(client, run_id, "special", INFINITY, ts, 1, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_metric(client, run_id, "special", -INFINITY, ts, 2, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_log_metric(client, run_id, "special", 0.1, ts, 3, &err), MLFLOW_OK);
  mlflow_metric_list h;
  CHECK_INT_EQ(mlflow_metric_history(client, run_id, "special", &h, &err), MLFLOW_OK);
  CHECK_INT_EQ(h.count, 4);
  if (h.count == 4) {
    int seen[4] = {0};
    for (size_t i = 0; i < 4; i++) {
      int64_t s = h.items[i].step;
      double v = h.items[i].value;
      if (s == 0) seen[0] = isnan(v);
      /* The server's SQL store keeps +-Inf as +-DBL_MAX. */
      if (s == 1) seen[1] = v >= DBL_MAX;
      if (s == 2) seen[2] = v <= -DBL_MAX;
      if (s == 3) seen[3] = v == 0.1;
      CHECK_INT_EQ(h.items[i].timestamp_ms, ts);
    }
    CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
  }
  mlflow_metric_list_free(&h);

  /* 2,500 metrics + 150 params + 120 tags: several log-batch calls. */
  enum { NM = 2500, NP = 150, NT = 120 };
  mlflow_metric *m = calloc(NM, sizeof *m);
  mlflow_kv *p = calloc(NP, sizeof *p), *t = calloc(NT, sizeof *t);
  char (*pk)[32] = calloc(NP, 32), (*tk)[32] = calloc(NT, 32);
  for (int i = 0; i < NM; i++)
    m[i] = (mlflow_metric){"loss/d", 1.0 / (i + 1), ts + i, i};
  for (int i = 0; i < NP; i++) {
    snprintf(pk[i], 32, "p%03d", i);
    p[i] = (mlflow_kv){pk[i], "value"};
  }
  for (int i = 0; i < NT; i++) {
    snprintf(tk[i], 32, "t%03d", i);
    t[i] = (mlflow_kv){tk[i], "tag value"};
  }
  a0 = mlflow_client_attempts(client);
  CHECK_INT_EQ(mlflow_log_batch(client, run_id, m, NM, p, NP, t, NT, &err), MLFLOW_OK);
  CHECK(mlflow_client_attempts(client) - a0 >= 3);
  /* The same batch again: the server drops identical points. */
  CHECK_INT_EQ(mlflow_log_batch(client, run_id, m, NM, p, NP, t, NT, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_metric_history(client, run_id, "loss/d", &h, &err), MLFLOW_OK);
  CHECK_INT_EQ(h.count, NM);
  int ordered = 1;
  for (size_t i = 0; i < h.count; i++)
    if (h.items[i].step != (int64_t)i || h.items[i].value != 1.0 / (double)(i + 1))
      ordered = 0;
  CHECK(ordered);
  mlflow_metric_list_free(&h);
  mlflow_run run;
  CHECK_INT_EQ(mlflow_run_get(client, run_id, &run, &err), MLFLOW_OK);
  CHECK_STR_EQ(mlflow_run_param(&run, "p149"), "value");
  CHECK_STR_EQ(mlflow_run_tag(&run, "t119"), "tag value");
  CHECK_STR_EQ(mlflow_run_tag(&run, "device"), "cuda:0");
  mlflow_run_free(&run);
  free(m);
  free(p);
  free(t);
  free(pk);
  free(tk);
  CHECK_INT_EQ(mlflow_metric_history(client, run_id, "never-logged", &h, &err), MLFLOW_OK);
  CHECK_INT_EQ(h.count, 0);
  mlflow_metric_list_free(&h);
}

static void make_tree(const char *root) {
  char path[1024];
  REQUIRE(mkdir(root, 0777) == 0);
  snprintf(path, sizeof path, "%s/a.txt", root);
  write_file(path, "hello\n", 6);
  snprintf(path, sizeof path, "%s/sub", root);
  REQUIRE(mkdir(path, 0777) == 0);
  snprintf(path, sizeof path, "%s/sub/deeper", root);
  REQUIRE(mkdir(path, 0777) == 0);
  size_t n = 300 * 1024;
  unsigned char *blob = malloc(n);
  for (size_t i = 0; i < n; i++) blob[i] = (unsigned char)(i * 2654435761u >> 24);
  snprintf(path, sizeof path, "%s/sub/b.bin", root);
  write_file(path, blob, n);
  free(blob);
  snprintf(path, sizeof path, "%s/sub/deeper/c d.txt", root);
  write_file(path, "spaces in names\n", 16);
  snprintf(path, sizeof path, "%s/empty.txt", root);
  write_file(path, "", 0);
}

static void test_artifacts(const mlflow_run_info *info) {
  mlflow_error err;
  char src[600], dst[600], path[1200], path2[1200];
  snprintf(src, sizeof src, "%s/src", tmpdir);
  make_tree(src);
  CHECK_INT_EQ(mlflow_artifact_upload_dir(client, info->artifact_uri, src, "tree", &err),
               MLFLOW_OK);
  snprintf(path, sizeof path, "%s/a.txt", src);
  CHECK_INT_EQ(mlflow_artifact_upload_file(client, info->artifact_uri, path, NULL, &err),
               MLFLOW_OK);
  CHECK_INT_EQ(mlflow_artifact_upload_file(client, info->artifact_uri, path,
                                           "../escape.txt", &err), MLFLOW_E_UNSAFE_PATH);
  CHECK_INT_EQ(mlflow_artifact_upload_file(client, info->artifact_uri, "/nonexistent/x",
                                           "x", &err), MLFLOW_E_IO);

  mlflow_file_list l;
  CHECK_INT_EQ(mlflow_artifact_list(client, info->artifact_uri, NULL, 0, &l, &err),
               MLFLOW_OK);
  CHECK_INT_EQ(l.count, 2); /* a.txt, tree/ */
  mlflow_file_list_free(&l);
  CHECK_INT_EQ(mlflow_artifact_list(client, info->artifact_uri, "tree", 1, &l, &err),
               MLFLOW_OK);
  int found_b = 0, found_c = 0, n_files = 0;
  for (size_t i = 0; i < l.count; i++) {
    if (!l.items[i].is_dir) n_files++;
    if (!strcmp(l.items[i].path, "tree/sub/b.bin"))
      found_b = l.items[i].file_size == 300 * 1024;
    if (!strcmp(l.items[i].path, "tree/sub/deeper/c d.txt")) found_c = 1;
  }
  CHECK_INT_EQ(n_files, 4);
  CHECK(found_b && found_c);
  mlflow_file_list_free(&l);
  CHECK_INT_EQ(mlflow_artifact_list(client, info->artifact_uri, "../other", 0, &l, &err),
               MLFLOW_E_UNSAFE_PATH);

  snprintf(path, sizeof path, "%s/b.bin", tmpdir);
  CHECK_INT_EQ(mlflow_artifact_download_file(client, info->artifact_uri,
                                             "tree/sub/b.bin", path, &err), MLFLOW_OK);
  snprintf(path2, sizeof path2, "%s/sub/b.bin", src);
  CHECK(same_file(path, path2));
  /* A missing artifact: an error, and no file (partial or not) left. */
  snprintf(path, sizeof path, "%s/missing.bin", tmpdir);
  int before = count_entries(tmpdir);
  CHECK(mlflow_artifact_download_file(client, info->artifact_uri, "tree/nope.bin",
                                      path, &err) != MLFLOW_OK);
  CHECK(access(path, F_OK) != 0);
  CHECK_INT_EQ(count_entries(tmpdir), before);

  /* A whole tree, through the run's artifact URI and through runs:/. */
  snprintf(dst, sizeof dst, "%s/dst", tmpdir);
  CHECK_INT_EQ(mlflow_artifact_download_dir(client, info->artifact_uri, "tree", dst, &err),
               MLFLOW_OK);
  const char *rel[] = {"a.txt", "sub/b.bin", "sub/deeper/c d.txt", "empty.txt"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", src, rel[i]);
    snprintf(path2, sizeof path2, "%s/%s", dst, rel[i]);
    CHECKF(same_file(path, path2), "%s", rel[i]);
  }
  char runs_uri[256];
  snprintf(runs_uri, sizeof runs_uri, "runs:/%s/tree/sub", info->run_id);
  snprintf(dst, sizeof dst, "%s/dst-runs", tmpdir);
  CHECK_INT_EQ(mlflow_artifact_download_dir(client, runs_uri, NULL, dst, &err), MLFLOW_OK);
  snprintf(path, sizeof path, "%s/sub/deeper/c d.txt", src);
  snprintf(path2, sizeof path2, "%s/deeper/c d.txt", dst);
  CHECK(same_file(path, path2));
  CHECK_INT_EQ(mlflow_artifact_list(client, "s3://bucket/x", NULL, 0, &l, &err),
               MLFLOW_E_UNSUPPORTED);
}

static void test_registry(const mlflow_run_info *info) {
  mlflow_error err;
  char name[128], source[512], dst[600], path[1200], path2[1200];
  test_unique(name, sizeof name, "it-model");
  snprintf(source, sizeof source, "%s/tree", info->artifact_uri);
  CHECK_INT_EQ(mlflow_registered_model_create(client, name, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_registered_model_create(client, name, &err), MLFLOW_OK);

  mlflow_model_version v1, v2, got;
  CHECK_INT_EQ(mlflow_model_version_create(client, name, source, info->run_id, &v1, &err),
               MLFLOW_OK);
  CHECK_STR_EQ(v1.version, "1");
  CHECK_STR_EQ(v1.run_id, info->run_id);
  CHECK_INT_EQ(mlflow_model_version_wait_ready(client, name, "1", 60, &got, &err),
               MLFLOW_OK);
  CHECK_STR_EQ(got.status, "READY");
  mlflow_model_version_free(&got);
  /* A source inside a run's artifacts needs that run's id. */
  CHECK_INT_EQ(mlflow_model_version_create(client, name, source, NULL, &v2, &err),
               MLFLOW_E_HTTP);
  CHECK_STR_EQ(err.error_code, "INVALID_PARAMETER_VALUE");
  CHECK_INT_EQ(mlflow_model_version_create(client, name, source, info->run_id, &v2,
                                           &err), MLFLOW_OK);
  CHECK_STR_EQ(v2.version, "2");
  CHECK_INT_EQ(mlflow_model_version_wait_ready(client, name, "2", 60, NULL, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_model_version_get(client, name, "2", &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.source, source);
  mlflow_model_version_free(&got);
  CHECK_INT_EQ(mlflow_model_version_get(client, name, "99", &got, &err), MLFLOW_E_NOT_FOUND);

  mlflow_model_version_list vl;
  CHECK_INT_EQ(mlflow_model_versions_search(client, name, &vl, &err), MLFLOW_OK);
  CHECK_INT_EQ(vl.count, 2);
  if (vl.count == 2) CHECK_STR_EQ(vl.items[0].version, "2");
  mlflow_model_version_list_free(&vl);

  /* Aliases: create, read, move, delete; a missing one is NOT_FOUND. */
  CHECK_INT_EQ(mlflow_alias_get(client, name, "champion", &got, &err), MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(mlflow_alias_set(client, name, "champion", "1", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_alias_get(client, name, "champion", &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.version, "1");
  CHECK(got.n_aliases == 1 && !strcmp(got.aliases[0], "champion"));
  mlflow_model_version_free(&got);
  CHECK_INT_EQ(mlflow_alias_set(client, name, "champion", "2", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_model_resolve(client, "models:/x@", &got, &err), MLFLOW_E_INVALID);
  char uri[256];
  snprintf(uri, sizeof uri, "models:/%s@champion", name);
  CHECK_INT_EQ(mlflow_model_resolve(client, uri, &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.version, "2");
  mlflow_model_version_free(&got);
  snprintf(uri, sizeof uri, "models:/%s/1", name);
  CHECK_INT_EQ(mlflow_model_resolve(client, uri, &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.version, "1");
  mlflow_model_version_free(&got);
  snprintf(uri, sizeof uri, "models:/%s/latest", name);
  CHECK_INT_EQ(mlflow_model_resolve(client, uri, &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.version, "2");
  mlflow_model_version_free(&got);
  CHECK_INT_EQ(mlflow_alias_set(client, name, "v7", "1", &err), MLFLOW_E_INVALID);
  CHECK_INT_EQ(mlflow_alias_set(client, name, "ok", "77", &err), MLFLOW_E_NOT_FOUND);

  char *dl = NULL;
  CHECK_INT_EQ(mlflow_model_version_download_uri(client, name, "1", &dl, &err), MLFLOW_OK);
  CHECK(dl && !strncmp(dl, "mlflow-artifacts:", 17));
  free(dl);

  snprintf(uri, sizeof uri, "models:/%s@champion", name);
  snprintf(dst, sizeof dst, "%s/model-download", tmpdir);
  CHECK_INT_EQ(mlflow_model_download(client, uri, dst, &got, &err), MLFLOW_OK);
  CHECK_STR_EQ(got.version, "2");
  mlflow_model_version_free(&got);
  snprintf(path, sizeof path, "%s/src/sub/b.bin", tmpdir);
  snprintf(path2, sizeof path2, "%s/sub/b.bin", dst);
  CHECK(same_file(path, path2));
  CHECK_INT_EQ(mlflow_model_download(client, uri, dst, NULL, &err), MLFLOW_E_IO);
  snprintf(uri, sizeof uri, "models:/%s-nope@champion", name);
  snprintf(dst, sizeof dst, "%s/model-none", tmpdir);
  CHECK(mlflow_model_download(client, uri, dst, NULL, &err) != MLFLOW_OK);
  CHECK(access(dst, F_OK) != 0);

  CHECK_INT_EQ(mlflow_alias_delete(client, name, "champion", &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_alias_get(client, name, "champion", &got, &err), MLFLOW_E_NOT_FOUND);
  CHECK_INT_EQ(mlflow_registered_model_delete(client, name, &err), MLFLOW_OK);
  CHECK_INT_EQ(mlflow_model_version_get(client, name, "1", &got, &err), MLFLOW_E_NOT_FOUND);
  mlflow_model_version_free(&v1);
  mlflow_model_version_free(&v2);
}

int main(void) {
  char *uri = test_mlflow_uri();
  client = test_client_of(uri);
  mlflow_error err;
  snprintf(tmpdir, sizeof tmpdir, "%s", GF_TEST_TMP);
  mlflow_remove_tree(tmpdir);
  REQUIRE(mlflow_mkdirs(tmpdir, &err) == MLFLOW_OK);

  test_server();
  char exp_id[64];
  test_experiments(exp_id, sizeof exp_id);
  mlflow_run_info info;
  test_runs(exp_id, &info);
  test_logging(info.run_id);
  test_artifacts(&info);
  test_registry(&info);

  mlflow_run_info_free(&info);
  mlflow_client_free(client);
  free(uri);
  return check_report();
}
