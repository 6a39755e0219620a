/* cuda_plan.c - host-side decisions of the CUDA backend (no CUDA calls);
 * see cuda_plan.h. */
#include "cuda_plan.h"

#include <string.h>

static size_t round_up(size_t n, size_t a) {
  if (n > SIZE_MAX - (a - 1)) return 0;
  return (n + a - 1) / a * a;
}

size_t gf_cuda_ws_grow(size_t cap, size_t need) {
  if (need <= cap) return cap;
  size_t want = round_up(need, GF_CUDA_WS_MIN);
  if (want == 0) return need; /* near SIZE_MAX: let the allocation fail */
  size_t geo = cap + cap / 2;
  return geo > want ? geo : want;
}

int gf_cuda_ws_layout(const size_t *sizes, int n, size_t *offsets,
                      size_t *total) {
  size_t at = 0;
  *total = 0;
  for (int i = 0; i < n; i++) {
    offsets[i] = at;
    if (sizes[i] == 0) continue;
    size_t r = round_up(sizes[i], GF_CUDA_WS_ALIGN);
    if (r == 0 || at > SIZE_MAX - r) return -1;
    at += r;
  }
  *total = at;
  return 0;
}

int gf_cuda_pick_algo(const gf_cuda_algo_cand *c, int n, bool deterministic,
                      bool allow_tf32, size_t max_ws) {
  for (int i = 0; i < n; i++) {
    if (!c[i].ok) continue;
    if (deterministic && !c[i].deterministic) continue;
    if (!allow_tf32 && c[i].tensor_op) continue;
    if (c[i].memory > max_ws) continue;
    return i;
  }
  return -1;
}

void gf_cuda_key_make(gf_cuda_key *k, int kind, const int64_t *v, int n) {
  memset(k, 0, sizeof *k);
  if (n > GF_CUDA_KEY_MAX - 1) n = GF_CUDA_KEY_MAX - 1;
  k->v[0] = kind;
  for (int i = 0; i < n; i++) k->v[1 + i] = v[i];
  k->n = n + 1;
}

static bool key_eq(const gf_cuda_key *a, const gf_cuda_key *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->v[i] != b->v[i]) return false;
  return true;
}

const gf_cuda_choice *gf_cuda_cache_find(gf_cuda_algo_cache *c,
                                         const gf_cuda_key *k) {
  for (int i = c->n - 1; i >= 0; i--)
    if (key_eq(&c->e[i].key, k)) {
      c->hits++;
      return &c->e[i];
    }
  c->misses++;
  return NULL;
}

void gf_cuda_cache_put(gf_cuda_algo_cache *c, const gf_cuda_choice *ch) {
  if (c->n == GF_CUDA_ALGO_CACHE_MAX) {
    memmove(&c->e[0], &c->e[1], sizeof c->e[0] * (GF_CUDA_ALGO_CACHE_MAX - 1));
    c->n--;
  }
  c->e[c->n++] = *ch;
}
