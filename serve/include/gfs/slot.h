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
 * verified on every load). The cache is shared with `ganflow generate`,
 * which goes through the same resolve, fetch and load (gfs_model_resolve,
 * gfs_cache_load). Not here: HTTP, the polling thread. */
#ifndef GFS_SLOT_H
#define GFS_SLOT_H

#include <pthread.h>
#include <stdatomic.h>

#include "gf/fs.h"
#include "gf/generator.h"
#include "mlflow/mlflow.h"

/* The longest registered model name, in bytes, that a slot, the cache (one
 * path component, CACHE/<name>) and the response headers take; longer
 * names are refused, never cut. Aliases have the same limit (MLflow's). */
#define GFS_NAME_MAX 255
/* The longest registry version the cache takes, in decimal digits. */
#define GFS_VERSION_DIGITS_MAX 18
/* Bytes kept free below a cache entry for the files of a model directory
 * and the download's temporary sibling ("<version>.tmp-XXXXXX"). */
#define GFS_CACHE_FILE_ROOM 64
/* Bytes joined below the cache directory: /<name>/<version>/<file>. */
#define GFS_CACHE_ROOM \
  (1 + GFS_NAME_MAX + 1 + GFS_VERSION_DIGITS_MAX + GFS_CACHE_FILE_ROOM)
/* The longest cache directory, in bytes without the NUL: with it,
 * CACHE/<name>/<version>/<file> fits in GF_PATH_MAX for every name and
 * version the cache takes. */
#define GFS_CACHE_DIR_MAX (GF_PATH_MAX - 1 - GFS_CACHE_ROOM)

/* Where a slot is in its life (DESIGN §4.5). Transitions, each under the
 * slot lock and each followed by the slot's state check (GF_ASSERT_STATE,
 * gf/invariant.h):
 *   LOADING  -> SWAPPING  a version was fetched, loaded and warmed: it is
 *                         the successor (next)
 *   SWAPPING -> READY     the successor replaced cur (cur's old version
 *                         lost the slot's reference)
 *   LOADING  -> FAILED    the fetch or load failed (cur, if any, serves on)
 *   READY, FAILED -> LOADING  a poll found another version to load
 * A slot starts LOADING with nothing loaded. */
typedef enum gfs_slot_state {
  GFS_SLOT_LOADING = 0, /* a version is being fetched and loaded, or is
                           awaited (nothing served yet); next is NULL */
  GFS_SLOT_READY,       /* cur serves; next is NULL; no failure recorded
                           (failed_version NULL, last_error "") */
  GFS_SLOT_SWAPPING,    /* next, loaded and warmed, is about to replace
                           cur (NULL on the first load) */
  GFS_SLOT_FAILED,      /* the last fetch or load failed: last_error says
                           why, failed_version (NULL only when there was
                           no memory to copy it) which; cur, if any,
                           serves on; next is NULL */
} gfs_slot_state;

typedef struct gfs_slot {
  char *uri;               /* as given, malloc'd */
  char *name;              /* registered model name, malloc'd */
  char *alias;             /* NAME@ALIAS: the alias, else NULL */
  pthread_mutex_t lock;    /* guards state, cur, next, failed_version,
                              last_error, versions_text */
  gfs_slot_state state;
  gf_generator *cur;       /* loaded version (one reference: refs >= 1),
                              or NULL while nothing was ever loaded */
  gf_generator *next;      /* SWAPPING: the successor (one reference), not
                              yet served; else NULL. Never cur. */
  char *failed_version;    /* last version that failed to load, or NULL */
  char last_error[600];    /* why it failed ("version V: " and a gf_err
                              message); "" when none */
  char *versions_text;     /* registry snapshot for the HTML page: "3
                              @production, 2, 1 @candidate"; may be NULL */
  atomic_ulong reloads;         /* versions swapped in (the first load too) */
  atomic_ulong reload_failures; /* fetches or loads that failed */
} gfs_slot;

/* Parses uri (mlflow_model_uri_parse) into a fresh slot. A name or alias
 * longer than GFS_NAME_MAX is GF_EINVAL naming the URI. Memory: the slot's
 * strings are malloc'd; release with gfs_slot_free (also after a failure). */
gf_status gfs_slot_init(gfs_slot *s, const char *uri, gf_err *err);
/* Drops the slot's references to its versions (cur and a successor) and
 * frees its strings; accepts a slot gfs_slot_init failed on. */
void gfs_slot_free(gfs_slot *s);

/* The loaded version with one more reference (release with
 * gf_generator_unref), or NULL while nothing is loaded. */
gf_generator *gfs_slot_acquire(gfs_slot *s);

/* 1 when each of the n slots has a version loaded, else 0. */
int gfs_slots_ready(gfs_slot *slots, int n);

/* Name of a state ("loading", "ready", "swapping", "failed"). */
const char *gfs_slot_state_name(gfs_slot_state st);

/* Checks every field of s against the state it claims (the refcounts of
 * cur and next, cur != next, which may be NULL, the failure record): the
 * slot's GF_ASSERT_STATE at each transition, aborting naming the check
 * that failed where GF_STATE_CHECKS is defined (Debug and the sanitizer
 * build) and doing nothing elsewhere. The caller holds s->lock (or is the
 * only thread that can reach s). For tests that prove it fires. */
void gfs_slot_check(const gfs_slot *s);

/* Installs m (taking over the caller's reference) as the slot's version:
 * it becomes the successor (SWAPPING), then replaces cur (READY), in one
 * hold of the lock; the old version loses the slot's reference (freed by
 * whoever drops its last one). */
void gfs_slot_install(gfs_slot *s, gf_generator *m);

/* One poll: resolve the URI; when it names a version other than the loaded
 * one (and not the last failed one), fetch, load (LOADING) and install it
 * (SWAPPING, READY), or record the failure (FAILED). *changed
 * (may be NULL) is set to 1 when a version was installed. A failure leaves
 * the old version in place, is recorded in the slot and returned. */
gf_status gfs_slot_sync(gfs_slot *s, mlflow_client *c, const char *cache_dir,
                        const gf_generator_opts *o, int *changed, gf_err *err);

/* GF_OK when cache_dir can hold the cache: not empty, and at most
 * GFS_CACHE_DIR_MAX bytes. Otherwise GF_EINVAL naming `what` (the flag or
 * setting it came from, e.g. "--cache-dir") and the lengths. */
gf_status gfs_cache_dir_check(const char *cache_dir, const char *what,
                              gf_err *err);

/* A registered version, as the registry names it. */
typedef struct gfs_model_ref {
  char name[GFS_NAME_MAX + 1]; /* registered model name */
  char version[32];            /* registry version, as the server sends it
                                  (gfs_cache_fetch checks it is a number) */
} gfs_model_ref;

/* Resolves uri (models:/NAME@ALIAS, NAME/VERSION or NAME/latest) in the
 * registry into *ref, which receives copies (nothing is allocated). The
 * registry's refusal is its mapped status ("resolve URI: ..."; an unknown
 * alias is GF_ENOTFOUND); a name or version in its answer that does not fit
 * *ref is GF_EFORMAT naming it, never cut short. */
gf_status gfs_model_resolve(mlflow_client *c, const char *uri,
                            gfs_model_ref *ref, gf_err *err);

/* Makes sure CACHE/<name>/<version> holds that version's model directory
 * (downloaded when missing) and writes its path to dir (cap bytes).
 * A directory that exists is used as is: its digests are checked when it
 * is loaded. A path that does not fit dir is GF_EINVAL, and a name longer
 * than GFS_NAME_MAX is refused; nothing is created then. */
gf_status gfs_cache_fetch(mlflow_client *c, const char *cache_dir,
                          const char *name, const char *version, char *dir,
                          size_t cap, gf_err *err);

/* Removes a cached version directory (after a failed load), so the next
 * fetch downloads it again. */
gf_status gfs_cache_evict(const char *dir, gf_err *err);

/* Fetches version `version` of `name` into the cache below cache_dir
 * (gfs_cache_fetch) and loads it (gf_generator_load: every digest
 * verified). An entry that fails as damaged (GF_EINTEGRITY, GF_EFORMAT,
 * GF_EIO) is removed and fetched once more, so a damaged cache entry heals
 * while a damaged upload fails again, its entry removed; the error
 * returned is the first one. Memory: on success *out holds one reference
 * owned by the caller (release with gf_generator_unref), with its own
 * copies of name and version; on failure *out is NULL. */
gf_status gfs_cache_load(mlflow_client *c, const char *cache_dir,
                         const char *name, const char *version,
                         const gf_generator_opts *o, gf_generator **out,
                         gf_err *err);

#endif
