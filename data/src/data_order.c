/* data_order.c - the order in which a run visits the data (data.h, "Order"):
 * the per-epoch Philox permutation, the step <-> (epoch, offset) mapping of
 * the endless epoch stream, rank slices of a global batch, the
 * step-positioned iterator, and uint8 -> float batch filling (x-flipped for
 * the mirror half of a mirror order's samples). Pure functions of their
 * arguments apart from the iterator's permutation cache; no RNG state
 * anywhere (DESIGN §4.1). */
#include "gf/data.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "gf/philox.h"
#include "gf/rng.h"

/* One sort key: 64 Philox bits, the index breaking (astronomically rare)
 * ties so the order is total. */
typedef struct perm_key {
  uint64_t key;
  uint32_t idx;
} perm_key;

static int cmp_key(const void *a, const void *b) {
  const perm_key *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The permutation into perm using keys (n entries of scratch). Stream:
 * gf_rng_stream(seed, GF_RNG_DATA_PERM, epoch, sub 0); image i gets
 * words 2i, 2i+1. epoch < 2^32 (the caller checks). */
static void permute(uint64_t seed, uint64_t epoch, uint32_t n, uint32_t *perm,
                    perm_key *keys) {
  gf_philox_stream s = gf_rng_stream(seed, GF_RNG_DATA_PERM, (int64_t)epoch, 0);
  uint32_t words[512];
  for (uint32_t i = 0; i < n; i += 256) {
    uint32_t k = n - i < 256 ? n - i : 256;
    gf_philox_stream c = s;
    c.offset += 2 * (uint64_t)i;
    gf_philox_u32(&c, words, 2 * (size_t)k);
    for (uint32_t j = 0; j < k; j++) {
      keys[i + j].key = (uint64_t)words[2 * j] << 32 | words[2 * j + 1];
      keys[i + j].idx = i + j;
    }
  }
  qsort(keys, n, sizeof *keys, cmp_key);
  for (uint32_t i = 0; i < n; i++) perm[i] = keys[i].idx;
}

gf_status gf_data_permutation(uint64_t seed, uint64_t epoch, uint32_t n,
                              uint32_t *perm, gf_err *err) {
  if (n == 0) return GF_OK;
  if (epoch > UINT32_MAX)
    return gf_fail(err, GF_EINVAL, "data: epoch %llu is past 2^32",
                   (unsigned long long)epoch);
  perm_key *keys = malloc((size_t)n * sizeof *keys);
  if (!keys) {
    return gf_fail(err, GF_ENOMEM, "data: out of memory for a permutation of %u",
                   n);
  }
  permute(seed, epoch, n, perm, keys);
  free(keys);
  return GF_OK;
}

gf_status gf_data_epoch_samples(uint64_t n, bool mirror, uint64_t *samples,
                                gf_err *err) {
  if (!mirror) {
    *samples = n;
    return GF_OK;
  }
  /* 2n - 1 must be a uint32 sample index and 2n a uint32 permutation size. */
  if (n > GF_DATA_MAX_IMAGES) {
    return gf_fail(err, GF_EINVAL,
                   "data: --mirror over %llu images: at most %u images can be "
                   "mirrored (2x that many samples must fit 32-bit indices)",
                   (unsigned long long)n, (unsigned)GF_DATA_MAX_IMAGES);
  }
  *samples = 2 * n;
  return GF_OK;
}

gf_status gf_data_position_of_step(uint64_t step, uint64_t batch, uint64_t n,
                                   uint64_t *epoch, uint64_t *offset,
                                   gf_err *err) {
  if (n == 0 || batch == 0) {
    return gf_fail(err, GF_EINVAL, "data: empty dataset or batch");
  }
  if (step > UINT64_MAX / batch) {
    return gf_fail(err, GF_EINVAL, "data: step %llu x batch %llu overflows",
                   (unsigned long long)step, (unsigned long long)batch);
  }
  uint64_t p = step * batch;
  *epoch = p / n;
  *offset = p % n;
  return GF_OK;
}

gf_status gf_data_step_of_position(uint64_t epoch, uint64_t offset,
                                   uint64_t batch, uint64_t n, uint64_t *step,
                                   gf_err *err) {
  if (n == 0 || batch == 0 || offset >= n) {
    return gf_fail(err, GF_EINVAL, "data: position (%llu, %llu) is invalid",
                   (unsigned long long)epoch, (unsigned long long)offset);
  }
  if (epoch > (UINT64_MAX - offset) / n) {
    return gf_fail(err, GF_EINVAL, "data: epoch %llu overflows",
                   (unsigned long long)epoch);
  }
  uint64_t p = epoch * n + offset;
  if (p % batch != 0) {
    return gf_fail(err, GF_EINVAL,
                   "data: position (epoch %llu, offset %llu) is not the start "
                   "of a step of batch %llu",
                   (unsigned long long)epoch, (unsigned long long)offset,
                   (unsigned long long)batch);
  }
  *step = p / batch;
  return GF_OK;
}

gf_status gf_data_rank_slice(uint64_t batch, int world, int rank,
                             uint64_t *begin, uint64_t *count, gf_err *err) {
  if (world < 1 || rank < 0 || rank >= world) {
    return gf_fail(err, GF_EINVAL, "data: rank %d of world size %d", rank,
                   world);
  }
  if (batch > UINT64_MAX / (uint64_t)world) {
    return gf_fail(err, GF_EINVAL, "data: batch %llu too large",
                   (unsigned long long)batch);
  }
  uint64_t b = batch * (uint64_t)rank / (uint64_t)world;
  uint64_t e = batch * ((uint64_t)rank + 1) / (uint64_t)world;
  *begin = b;
  *count = e - b;
  return GF_OK;
}

gf_status gf_data_iter_init(gf_data_iter *it, const gf_dataset *ds,
                            const gf_data_order *order, gf_err *err) {
  memset(it, 0, sizeof *it);
  if (!ds || !ds->pixels || ds->n < 1) {
    return gf_fail(err, GF_EINVAL, "data: iterator over an empty dataset");
  }
  if ((uint64_t)ds->n > GF_DATA_MAX_IMAGES) {
    return gf_fail(err, GF_EINVAL,
                   "data: iterator over %lld images, more than the %u an "
                   "order can index", (long long)ds->n,
                   (unsigned)GF_DATA_MAX_IMAGES);
  }
  uint64_t samples;
  gf_status st = gf_data_epoch_samples((uint64_t)ds->n, order->mirror,
                                       &samples, err);
  if (st) return st;
  /* The permutation's size, and every sample index, fit a uint32. */
  assert(samples <= UINT32_MAX);
  if (order->batch < (uint64_t)(order->world_size > 0 ? order->world_size : 1)) {
    return gf_fail(err, GF_EINVAL,
                   "data: global batch %llu is smaller than the world size %d",
                   (unsigned long long)order->batch, order->world_size);
  }
  st = gf_data_rank_slice(order->batch, order->world_size, order->rank,
                          &it->begin, &it->count, err);
  if (st) return st;
  const size_t n = (size_t)samples;
  it->perm[0] = malloc(n * sizeof(uint32_t));
  it->perm[1] = malloc(n * sizeof(uint32_t));
  it->scratch = malloc(n * sizeof(perm_key));
  if (!it->perm[0] || !it->perm[1] || !it->scratch) {
    gf_data_iter_free(it);
    return gf_fail(err, GF_ENOMEM, "data: out of memory for the permutations of %zu %s",
                   n, order->mirror ? "samples" : "images");
  }
  it->ds = ds;
  it->samples = samples;
  it->order = *order;
  it->perm_epoch[0] = it->perm_epoch[1] = UINT64_MAX;
  return GF_OK;
}

void gf_data_iter_free(gf_data_iter *it) {
  if (!it) return;
  free(it->perm[0]);
  free(it->perm[1]);
  free(it->scratch);
  memset(it, 0, sizeof *it);
}

void gf_data_iter_seek(gf_data_iter *it, uint64_t step) { it->step = step; }

/* The cached permutation of epoch e, computed into the least recently
 * replaced slot when missing. */
static const uint32_t *epoch_perm(gf_data_iter *it, uint64_t e) {
  for (int k = 0; k < 2; k++) {
    if (it->perm_epoch[k] == e) return it->perm[k];
  }
  int k = it->perm_lru;
  permute(it->order.seed, e, (uint32_t)it->samples, it->perm[k], it->scratch);
  it->perm_epoch[k] = e;
  it->perm_lru = 1 - k;
  return it->perm[k];
}

gf_status gf_data_iter_next_indices(gf_data_iter *it, uint32_t *idx,
                                    uint64_t *step_out, gf_err *err) {
  const uint64_t B = it->order.batch, n = it->samples;
  if (it->step > (UINT64_MAX - B) / B) {
    return gf_fail(err, GF_EINVAL, "data: step %llu overflows the position",
                   (unsigned long long)it->step);
  }
  const uint64_t p0 = it->step * B + it->begin;
  for (uint64_t j = 0; j < it->count; j++) {
    uint64_t p = p0 + j;
    idx[j] = epoch_perm(it, p / n)[p % n];
  }
  if (step_out) *step_out = it->step;
  it->step++;
  return GF_OK;
}

void gf_data_fill(const gf_dataset *ds, const uint32_t *idx, uint64_t count,
                  float *images, int32_t *labels) {
  /* (v - 127.5) / 127.5: one exact subtraction and one correctly rounded
   * division, so the same floats everywhere. */
  float lut[256];
  for (int v = 0; v < 256; v++) lut[v] = ((float)v - 127.5f) / 127.5f;
  const size_t w = (size_t)ds->w, rows = (size_t)ds->c * (size_t)ds->h;
  const size_t stride = rows * w;
  const uint64_t n = (uint64_t)ds->n;
  for (uint64_t i = 0; i < count; i++) {
    assert(idx[i] < 2 * n);
    const bool flip = idx[i] >= n; /* the mirror half of the samples */
    const uint64_t img = flip ? idx[i] - n : idx[i];
    const uint8_t *src = ds->pixels + (size_t)img * stride;
    float *dst = images + i * stride;
    if (!flip) {
      for (size_t k = 0; k < stride; k++) dst[k] = lut[src[k]];
    } else { /* planar: c * h rows of w, each reversed */
      for (size_t r = 0; r < rows; r++) {
        const uint8_t *in = src + r * w;
        float *out = dst + r * w;
        for (size_t x = 0; x < w; x++) out[x] = lut[in[w - 1 - x]];
      }
    }
    if (labels) labels[i] = ds->labels ? (int32_t)ds->labels[img] : -1;
  }
}
