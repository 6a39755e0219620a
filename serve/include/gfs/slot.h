/* slot.h - model slots and the download cache (DESIGN §4.5).
 *
 * A slot follows one models:/ URI (NAME@ALIAS, NAME/VERSION or
 * NAME/latest) and holds the version loaded for it. Requests take a
 * reference (gfs_slot_acquire) and drop it when done; gfs_slot_sync
 * resolves the URI, fetches a new version into the cache, loads and warms
 * it beside the old one, then swaps it in under the slot lock. The old
 * version is freed by whoever drops its last reference. A version that
 * fails to fetch or load leaves the old one serving, is counted in
 * reload_failures and is not retried until the URI points elsewhere.
 *
 * Cache layout: CACHE/<name, sanitized>/<version>/ (an MLflow model
 * directory written atomically by mlflow_model_download; its digests are
 * verified on every load). Not here: HTTP, the polling thread. */
#ifndef GFS_SLOT_H
#define GFS_SLOT_H

#include <pthread.h>
#include <stdatomic.h>

#include "gf/generator.h"
#include "mlflow/mlflow.h"

typedef struct gfs_slot {
  char *uri;               /* as given, malloc'd */
  char *name;              /* registered model name, malloc'd */
  char *alias;             /* NAME@ALIAS: the alias, else NULL */
  pthread_mutex_t lock;    /* guards cur, failed_version, last_error,
                              versions_text */
  gf_generator *cur;       /* loaded version (one reference), or NULL */
  char *failed_version;    /* last version that failed to load, or NULL */
  char last_error[512];    /* why it failed; "" when none */
  char *versions_text;     /* registry snapshot for the HTML page: "3
                              @production, 2, 1 @candidate"; may be NULL */
  atomic_ulong reloads;         /* versions swapped in (the first load too) */
  atomic_ulong reload_failures; /* fetches or loads that failed */
} gfs_slot;

/* Parses uri (mlflow_model_uri_parse) into a fresh slot. Memory: the slot's
 * strings are malloc'd; release with gfs_slot_free (also after a failure). */
gf_status gfs_slot_init(gfs_slot *s, const char *uri, gf_err *err);
/* Drops the slot's reference to its model and frees its strings. */
void gfs_slot_free(gfs_slot *s);

/* The loaded version with one more reference (release with
 * gf_generator_unref), or NULL while nothing is loaded. */
gf_generator *gfs_slot_acquire(gfs_slot *s);

/* Installs m (taking over the caller's reference); the old version loses
 * the slot's reference. */
void gfs_slot_install(gfs_slot *s, gf_generator *m);

/* One poll: resolve the URI; when it names a version other than the loaded
 * one (and not the last failed one), fetch, load and install it. *changed
 * (may be NULL) is set to 1 when a version was installed. A failure leaves
 * the old version in place, is recorded in the slot and returned. */
gf_status gfs_slot_sync(gfs_slot *s, mlflow_client *c, const char *cache_dir,
                        const gf_generator_opts *o, int *changed, gf_err *err);

/* Makes sure CACHE/<name>/<version> holds that version's model directory
 * (downloaded when missing) and writes its path to dir (cap bytes).
 * A directory that exists is used as is: its digests are checked when it
 * is loaded. */
gf_status gfs_cache_fetch(mlflow_client *c, const char *cache_dir,
                          const char *name, const char *version, char *dir,
                          size_t cap, gf_err *err);

/* Removes a cached version directory (after a failed load), so the next
 * fetch downloads it again. */
gf_status gfs_cache_evict(const char *dir, gf_err *err);

#endif
