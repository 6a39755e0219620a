/* slot.c - model slots: their states and the check of each (in the manner
 * of SQLite's assert_pager_state), acquire/install under a lock, and one
 * poll of the registry (resolve, fetch, load beside the old version,
 * swap). See gfs/slot.h. Not here: the download cache (cache.c). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/invariant.h"
#include "gf/mlflow_status.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "gfs/slot.h"

const char *gfs_slot_state_name(gfs_slot_state st) {
  switch (st) {
  case GFS_SLOT_LOADING: return "loading";
  case GFS_SLOT_READY: return "ready";
  case GFS_SLOT_SWAPPING: return "swapping";
  case GFS_SLOT_FAILED: return "failed";
  }
  return "?";
}

#if defined(GF_STATE_CHECKS)
/* A version the slot holds a reference to: at least that one reference,
 * and the slot's model. */
static int held_ok(const gfs_slot *s, const gf_generator *m) {
  return atomic_load(&((gf_generator *)m)->refs) >= 1 && m->name &&
         m->version && strcmp(m->name, s->name) == 0;
}

/* 1 when every field of s agrees with s->state (gfs_slot_check). */
static int slot_state_ok(const gfs_slot *s) {
  if (!s->uri || !s->name) return 0;
  if (s->cur && !held_ok(s, s->cur)) return 0;
  if (s->next && (s->next == s->cur || !held_ok(s, s->next))) return 0;
  /* a version served was swapped in, and counted */
  if (s->cur && atomic_load(&((gfs_slot *)s)->reloads) == 0) return 0;
  /* a failed version comes with its reason (the version alone may be
   * missing: no memory to copy it) */
  int failure = s->last_error[0] != '\0';
  if (s->failed_version && !failure) return 0;
  switch (s->state) {
  case GFS_SLOT_LOADING: return s->next == NULL;
  case GFS_SLOT_READY: return s->cur && !s->next && !failure &&
                              !s->failed_version;
  case GFS_SLOT_SWAPPING: return s->next != NULL;
  case GFS_SLOT_FAILED: return !s->next && failure;
  }
  return 0;
}
#endif

void gfs_slot_check(const gfs_slot *s) {
  GF_ASSERT_STATE(slot_state_ok(s));
  (void)s;
}

gf_status gfs_slot_init(gfs_slot *s, const char *uri, gf_err *err) {
  memset(s, 0, sizeof *s);
  s->state = GFS_SLOT_LOADING;
  atomic_init(&s->reloads, 0);
  atomic_init(&s->reload_failures, 0);
  if (pthread_mutex_init(&s->lock, NULL) != 0)
    return gf_fail(err, GF_ENOMEM, "pthread_mutex_init failed");
  mlflow_model_uri u;
  mlflow_error me;
  memset(&u, 0, sizeof u);
  if (mlflow_model_uri_parse(uri, &u, &me) != MLFLOW_OK)
    return gf_fail_mlflow(err, &me, "--model %s", uri);
  /* The name becomes a cache directory and a header, the alias a header:
   * too long for either is refused here, not cut there. */
  size_t nlen = strlen(u.name), alen = u.alias ? strlen(u.alias) : 0;
  if (nlen > GFS_NAME_MAX || alen > GFS_NAME_MAX) {
    mlflow_model_uri_free(&u);
    return gf_fail(err, GF_EINVAL, "--model %.300s: the model %s is too long "
                   "(%zu bytes, at most %d)", uri,
                   nlen > GFS_NAME_MAX ? "name" : "alias",
                   nlen > GFS_NAME_MAX ? nlen : alen, GFS_NAME_MAX);
  }
  s->uri = strdup(uri);
  s->name = strdup(u.name);
  s->alias = u.alias ? strdup(u.alias) : NULL;
  int oom = !s->uri || !s->name || (u.alias && !s->alias);
  mlflow_model_uri_free(&u);
  if (oom) return gf_fail(err, GF_ENOMEM, "out of memory");
  GF_ASSERT_STATE(slot_state_ok(s));
  return GF_OK;
}

void gfs_slot_free(gfs_slot *s) {
  if (!s || !s->uri) return;
  gf_generator_unref(s->cur);
  gf_generator_unref(s->next);
  free(s->uri);
  free(s->name);
  free(s->alias);
  free(s->failed_version);
  free(s->versions_text);
  pthread_mutex_destroy(&s->lock);
  memset(s, 0, sizeof *s);
}

gf_generator *gfs_slot_acquire(gfs_slot *s) {
  pthread_mutex_lock(&s->lock);
  GF_ASSERT_STATE(slot_state_ok(s));
  gf_generator *m = s->cur;
  if (m) gf_generator_ref(m);
  pthread_mutex_unlock(&s->lock);
  return m;
}

int gfs_slots_ready(gfs_slot *slots, int n) {
  for (int i = 0; i < n; i++) {
    gf_generator *m = gfs_slot_acquire(&slots[i]);
    if (!m) return 0;
    gf_generator_unref(m);
  }
  return 1;
}

void gfs_slot_install(gfs_slot *s, gf_generator *m) {
  pthread_mutex_lock(&s->lock);
  GF_ASSERT_STATE(slot_state_ok(s));
  /* LOADING -> SWAPPING: m, loaded and warmed beside cur, is its
   * successor */
  s->next = m;
  s->state = GFS_SLOT_SWAPPING;
  GF_ASSERT_STATE(slot_state_ok(s));
  /* SWAPPING -> READY: the successor serves; a failure before it is
   * forgotten */
  gf_generator *old = s->cur;
  s->cur = s->next;
  s->next = NULL;
  atomic_fetch_add(&s->reloads, 1);
  free(s->failed_version);
  s->failed_version = NULL;
  s->last_error[0] = '\0';
  s->state = GFS_SLOT_READY;
  GF_ASSERT_STATE(slot_state_ok(s));
  pthread_mutex_unlock(&s->lock);
  gf_generator_unref(old); /* freed here or by its last request */
}

/* "3 @production, 2, 1 @candidate" from the registry (the first 20
 * versions); malloc'd, the caller frees it; NULL on failure. */
static char *versions_text(mlflow_client *c, const char *name) {
  mlflow_model_version_list l;
  mlflow_error me;
  memset(&l, 0, sizeof l);
  if (mlflow_model_versions_search(c, name, &l, &me) != MLFLOW_OK) return NULL;
  gf_strbuf b;
  gf_strbuf_init(&b);
  for (size_t i = 0; i < l.count && i < 20; i++) {
    const mlflow_model_version *v = &l.items[i];
    /* model-versions/search leaves aliases out; model-versions/get has
     * them. */
    mlflow_model_version full;
    memset(&full, 0, sizeof full);
    if (v->n_aliases == 0 && v->version &&
        mlflow_model_version_get(c, name, v->version, &full, &me) ==
            MLFLOW_OK)
      v = &full;
    if (i) gf_strbuf_puts(&b, ", ");
    gf_strbuf_puts(&b, v->version ? v->version : "?");
    for (size_t a = 0; a < v->n_aliases; a++) {
      gf_strbuf_puts(&b, " @");
      gf_strbuf_puts(&b, v->aliases[a]);
    }
    mlflow_model_version_free(&full);
  }
  mlflow_model_version_list_free(&l);
  return gf_strbuf_take(&b, NULL);
}

static gf_status record_failure(gfs_slot *s, const char *version,
                                gf_status st, const gf_err *e, gf_err *err) {
  pthread_mutex_lock(&s->lock);
  GF_ASSERT_STATE(slot_state_ok(s) && s->state == GFS_SLOT_LOADING);
  /* LOADING -> FAILED */
  free(s->failed_version);
  s->failed_version = strdup(version);
  /* version is a gfs_model_ref's, msg a gf_err's: the text fits
   * last_error by their sizes. */
  _Static_assert(sizeof s->last_error >=
                     sizeof "version : " +
                         sizeof ((gfs_model_ref *)0)->version + sizeof e->msg,
                 "last_error holds a version and a gf_err message");
  GF_FORMAT_FITS(s->last_error, sizeof s->last_error, "version %s: %s",
                 version, e->msg);
  s->state = GFS_SLOT_FAILED;
  GF_ASSERT_STATE(slot_state_ok(s));
  pthread_mutex_unlock(&s->lock);
  atomic_fetch_add(&s->reload_failures, 1);
  return gf_fail(err, st, "%s version %s not loaded (%s)", s->name, version,
                 e->msg);
}

gf_status gfs_slot_sync(gfs_slot *s, mlflow_client *c, const char *cache_dir,
                        const gf_generator_opts *o, int *changed, gf_err *err) {
  if (changed) *changed = 0;
  char *vt = versions_text(c, s->name);
  if (vt) {
    pthread_mutex_lock(&s->lock);
    free(s->versions_text);
    s->versions_text = vt;
    pthread_mutex_unlock(&s->lock);
  }
  gfs_model_ref ref;
  GF_TRY(gfs_model_resolve(c, s->uri, &ref, err));

  pthread_mutex_lock(&s->lock);
  GF_ASSERT_STATE(slot_state_ok(s));
  int same = (s->cur && strcmp(s->cur->version, ref.version) == 0) ||
             (s->failed_version && strcmp(s->failed_version, ref.version) == 0);
  if (!same) {
    /* READY, FAILED or LOADING -> LOADING: ref.version is loaded beside
     * cur (the lock is not held while it loads) */
    s->state = GFS_SLOT_LOADING;
    GF_ASSERT_STATE(slot_state_ok(s));
  }
  pthread_mutex_unlock(&s->lock);
  if (same) return GF_OK;

  gf_err e;
  memset(&e, 0, sizeof e);
  gf_generator *m = NULL;
  gf_status st = gfs_cache_load(c, cache_dir, s->name, ref.version, o, &m, &e);
  if (st != GF_OK) return record_failure(s, ref.version, st, &e, err);
  gfs_slot_install(s, m);
  if (changed) *changed = 1;
  return GF_OK;
}
