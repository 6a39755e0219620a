/* cpu_store.c - the tables of frozen inference's laid-out weights and
 * int8 ranges (gf_cpu_frozen): a ctx's own, or a gf_frozen_store's shared
 * by several ctxs (gf/ctx.h). Only their making and freeing: the entries
 * are found and added where they are used (cpu_ctx.c for conv weights in
 * a primitive's layout, cpu_linear_rows.c for transposed linear weights,
 * cpu_int8.c for the ranges), under the table's lock. */
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"

gf_status gf_cpu_frozen_init(gf_cpu_frozen *fz, gf_err *err) {
  memset(fz, 0, sizeof *fz);
  if (pthread_mutex_init(&fz->lock, NULL) != 0)
    return gf_fail(err, GF_ENOMEM, "cpu: frozen weights lock");
  return GF_OK;
}

void gf_cpu_frozen_fini(gf_cpu_frozen *fz) {
  for (size_t i = 0; i < fz->nlin; i++) free(fz->lin[i].t);
  free(fz->lin);
  for (size_t i = 0; i < fz->nmd; i++) free(fz->md[i].buf);
  free(fz->md);
  free(fz->ranges);
  pthread_mutex_destroy(&fz->lock);
  memset(fz, 0, sizeof *fz);
}

gf_status gf_frozen_store_new(gf_frozen_store **out, gf_err *err) {
  *out = NULL;
  gf_frozen_store *s = malloc(sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "frozen store: out of memory");
  gf_status st = gf_cpu_frozen_init(&s->fz, err);
  if (st != GF_OK) {
    free(s);
    return st;
  }
  *out = s;
  return GF_OK;
}

void gf_frozen_store_free(gf_frozen_store *s) {
  if (!s) return;
  gf_cpu_frozen_fini(&s->fz);
  free(s);
}

size_t gf_frozen_store_bytes(gf_frozen_store *s) {
  if (!s) return 0;
  pthread_mutex_lock(&s->fz.lock);
  size_t n = s->fz.bytes;
  pthread_mutex_unlock(&s->fz.lock);
  return n;
}
