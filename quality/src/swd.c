/* swd.c - the sliced Wasserstein distance of gf/swd.h: validation, the
 * Laplacian pyramid, descriptor sampling and normalization, projections onto
 * Philox directions, radix-sorted 1-D Wasserstein distances, and a small
 * fixed-size worker pool (pthreads) that splits images and directions.
 *
 * Determinism: every worker writes only its own outputs (descriptor columns
 * of its images, the distance of its directions), and all sums that cross
 * workers are taken afterwards in a fixed order, so the result does not
 * depend on the thread count or the scheduling. Not for: anything that keeps
 * state between calls. */
#include "gf/swd.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/philox.h"
#include "gf/rng.h"
#include "gf/text.h"

/* Streams: gf_rng_stream(seed, GF_RNG_SWD, step 0, sub). */
#define SWD_SUB_POSITIONS 0x100u /* + level */
#define SWD_SUB_DIRECTIONS 0x200u /* + level */

#define DIR_GROUP 32    /* directions projected together */
#define IMAGE_CHUNK 32  /* images per extraction job */

/* The largest descriptor count per set and level: keeps counts in 32 bits
 * and the Philox word index (2 per descriptor) far below rank 1's region. */
#define MAX_DESCRIPTORS ((int64_t)1 << 30)

static gf_philox_stream swd_stream(uint64_t seed, uint32_t sub) {
  return gf_rng_stream(seed, GF_RNG_SWD, 0, sub);
}

gf_swd_config gf_swd_config_default(void) {
  gf_swd_config c = {
      .seed = 0,
      .patches_per_image = 32,
      .dirs_per_repeat = 128,
      .repeats = 4,
      .min_level = 14,
      .norm = GF_SWD_NORM_JOINT,
      .threads = 1,
  };
  return c;
}

int gf_swd_levels(int side, int min_level, int sizes[GF_SWD_MAX_LEVELS]) {
  if (min_level < GF_SWD_PATCH || side < min_level) return 0;
  int n = 0, s = side;
  sizes[n++] = s;
  while (n < GF_SWD_MAX_LEVELS && (s + 1) / 2 >= min_level) {
    s = (s + 1) / 2;
    sizes[n++] = s;
  }
  return n;
}

char *gf_swd_metric_name(const gf_swd_result *r, int l, char *buf,
                         size_t cap) {
  if (!r || !buf || cap == 0 || l >= r->levels) return NULL;
  int k;
  if (l < 0)
    k = snprintf(buf, cap, "swd/avg");
  else
    k = snprintf(buf, cap, "swd/%d", r->size[l]);
  if (!gf_fits(k, cap)) return NULL;
  return buf;
}

/* ---- worker pool -------------------------------------------------------- */

/* job(ctx, worker, j) for j in [0, njobs), handed out in order through an
 * atomic counter to `workers` threads (the caller is worker 0). A job never
 * fails; it records failures in its own output slot. */
typedef void (*job_fn)(void *ctx, int worker, int64_t j);

typedef struct pool_run {
  job_fn fn;
  void *ctx;
  int64_t njobs;
  atomic_int_least64_t next;
} pool_run;

typedef struct pool_arg {
  pool_run *run;
  int worker;
} pool_arg;

static void pool_work(pool_run *run, int worker) {
  for (;;) {
    int64_t j = atomic_fetch_add(&run->next, 1);
    if (j >= run->njobs) return;
    run->fn(run->ctx, worker, j);
  }
}

static void *pool_thread(void *p) {
  pool_arg *a = p;
  pool_work(a->run, a->worker);
  return NULL;
}

/* Runs every job. A thread that cannot be started only means fewer
 * workers: the caller's own loop finishes whatever is left. */
static void pool_for(int workers, int64_t njobs, job_fn fn, void *ctx) {
  pool_run run = {.fn = fn, .ctx = ctx, .njobs = njobs};
  atomic_init(&run.next, 0);
  pthread_t tid[GF_SWD_MAX_THREADS];
  pool_arg args[GF_SWD_MAX_THREADS];
  int started = 0;
  if (workers > njobs) workers = (int)(njobs > 0 ? njobs : 1);
  for (int w = 1; w < workers; w++) {
    args[started + 1] = (pool_arg){.run = &run, .worker = started + 1};
    if (pthread_create(&tid[started + 1], NULL, pool_thread,
                       &args[started + 1]) != 0)
      break;
    started++;
  }
  pool_work(&run, 0);
  for (int w = 1; w <= started; w++) pthread_join(tid[w], NULL);
}

/* ---- pyramid ------------------------------------------------------------ */

static const float kBlur[5] = {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16,
                               1.f / 16};

/* Mirrored index (d c b | a b c d | c b a) for i in [-2, s + 1], s >= 3. */
static inline int mirror(int i, int s) {
  if (i < 0) return -i;
  if (i >= s) return 2 * (s - 1) - i;
  return i;
}

/* dst (t x t, t = ceil(s / 2)) = blur(src, s x s) at even pixels.
 * tmp holds s * t floats. */
static void pyr_down(const float *src, int s, float *dst, float *tmp) {
  int t = (s + 1) / 2;
  for (int y = 0; y < s; y++) {
    const float *row = src + (size_t)y * s;
    for (int x = 0; x < t; x++) {
      float acc = 0.f;
      for (int j = 0; j < 5; j++) acc += kBlur[j] * row[mirror(2 * x + j - 2, s)];
      tmp[(size_t)y * t + x] = acc;
    }
  }
  for (int y = 0; y < t; y++) {
    for (int x = 0; x < t; x++) {
      float acc = 0.f;
      for (int i = 0; i < 5; i++)
        acc += kBlur[i] * tmp[(size_t)mirror(2 * y + i - 2, s) * t + x];
      dst[(size_t)y * t + x] = acc;
    }
  }
}

/* band (s x s) -= up(src, t x t), t = ceil(s / 2): src at the even pixels of
 * a zero s x s image, blurred with 4 x the kernel (2 x per axis). tmp holds
 * t * s floats: the horizontal pass of the t non-zero rows. */
static void pyr_sub_up(float *band, int s, const float *src, float *tmp) {
  int t = (s + 1) / 2;
  for (int y = 0; y < t; y++) {
    const float *row = src + (size_t)y * t;
    for (int x = 0; x < s; x++) {
      float acc = 0.f;
      for (int j = 0; j < 5; j++) {
        int u = mirror(x + j - 2, s);
        if ((u & 1) == 0) acc += 2.f * kBlur[j] * row[u / 2];
      }
      tmp[(size_t)y * s + x] = acc;
    }
  }
  for (int y = 0; y < s; y++) {
    for (int x = 0; x < s; x++) {
      float acc = 0.f;
      for (int i = 0; i < 5; i++) {
        int u = mirror(y + i - 2, s);
        if ((u & 1) == 0) acc += 2.f * kBlur[i] * tmp[(size_t)(u / 2) * s + x];
      }
      band[(size_t)y * s + x] -= acc;
    }
  }
}

/* ---- descriptor extraction ---------------------------------------------- */

typedef struct extract_ctx {
  const gf_swd_images *img[2];
  int level, nlevels;
  const int *sizes;
  int patches;        /* P */
  int64_t m;          /* descriptors per set: n * P */
  float *x[2];        /* [D][m] per set */
  uint64_t seed;
  float **scratch;    /* per worker: pyramid buffers */
  int64_t *bad_at;    /* per set: lowest image index seen with a non-finite
                         pixel, or -1; written under lock */
  pthread_mutex_t lock;
} extract_ctx;

/* Scratch floats per worker for images of side s0: two Gaussian levels of
 * s0^2, a band of s0^2 and a temporary of s0 * ceil(s0/2). */
static size_t extract_scratch_floats(int s0) {
  size_t s = (size_t)s0;
  return 3 * s * s + s * ((s + 1) / 2);
}

/* Reads channel k of image i of set `set` into dst as [-1, 1] floats.
 * Returns 0 when a float pixel is not finite. */
static int load_plane(const gf_swd_images *im, int64_t i, int k, float *dst) {
  size_t hw = (size_t)im->h * (size_t)im->w;
  size_t base = ((size_t)i * (size_t)im->c + (size_t)k) * hw;
  if (im->pixel == GF_SWD_U8) {
    const uint8_t *p = (const uint8_t *)im->data + base;
    for (size_t q = 0; q < hw; q++) dst[q] = ((float)p[q] - 127.5f) / 127.5f;
    return 1;
  }
  const float *p = (const float *)im->data + base;
  int ok = 1;
  for (size_t q = 0; q < hw; q++) {
    if (!isfinite(p[q])) ok = 0;
    dst[q] = p[q];
  }
  return ok;
}

static void extract_job(void *vctx, int worker, int64_t j) {
  extract_ctx *c = vctx;
  const gf_swd_images *im0 = c->img[0];
  int s0 = im0->h, lv = c->level, s = c->sizes[lv];
  int coarsest = lv == c->nlevels - 1;
  size_t s0sq = (size_t)s0 * (size_t)s0;
  float *g0 = c->scratch[worker], *g1 = g0 + s0sq, *band = g1 + s0sq;
  float *tmp = band + s0sq;
  int span = s - GF_SWD_PATCH + 1;
  int64_t i_end = (j + 1) * IMAGE_CHUNK;
  if (i_end > im0->n) i_end = im0->n;
  uint32_t words[2 * 64];
  for (int64_t i = j * IMAGE_CHUNK; i < i_end; i++) {
    for (int set = 0; set < 2; set++) {
      const gf_swd_images *im = c->img[set];
      for (int k = 0; k < im->c; k++) {
        if (!load_plane(im, i, k, g0)) {
          pthread_mutex_lock(&c->lock);
          if (c->bad_at[set] < 0 || i < c->bad_at[set]) c->bad_at[set] = i;
          pthread_mutex_unlock(&c->lock);
          return;
        }
        /* Gaussian of level lv in g0 (size s), next level in g1. */
        int cur = s0;
        for (int l = 0; l < lv; l++) {
          pyr_down(g0, cur, g1, tmp);
          cur = (cur + 1) / 2;
          memcpy(g0, g1, (size_t)cur * (size_t)cur * sizeof *g0);
        }
        memcpy(band, g0, (size_t)s * (size_t)s * sizeof *band);
        if (!coarsest) {
          pyr_down(g0, s, g1, tmp);
          pyr_sub_up(band, s, g1, tmp);
        }
        /* Neighbourhoods: the positions depend on (seed, level, i, p)
         * only, never on the set or the channel. */
        gf_philox_stream ps = swd_stream(c->seed, SWD_SUB_POSITIONS + (uint32_t)lv);
        for (int p0 = 0; p0 < c->patches; p0 += 64) {
          int np = c->patches - p0 < 64 ? c->patches - p0 : 64;
          ps.offset = 2 * ((uint64_t)i * (uint64_t)c->patches + (uint64_t)p0);
          gf_philox_u32(&ps, words, 2 * (size_t)np);
          for (int p = 0; p < np; p++) {
            int x0 = (int)(words[2 * p] % (uint32_t)span);
            int y0 = (int)(words[2 * p + 1] % (uint32_t)span);
            int64_t col = i * c->patches + p0 + p;
            float *xs = c->x[set];
            for (int dy = 0; dy < GF_SWD_PATCH; dy++) {
              const float *row = band + (size_t)(y0 + dy) * s + x0;
              for (int dx = 0; dx < GF_SWD_PATCH; dx++) {
                int64_t d = ((int64_t)k * GF_SWD_PATCH + dy) * GF_SWD_PATCH + dx;
                xs[d * c->m + col] = row[dx];
              }
            }
          }
        }
      }
    }
  }
}

/* ---- normalization ------------------------------------------------------ */

/* Mean and population deviation of channel k's rows of x ([D][m]) over the
 * given sets (both for joint, one for per-set), two passes in double. */
static void channel_stats(float *const *x, int nsets, int64_t m, int k,
                          double *mean, double *dev) {
  int64_t d0 = (int64_t)k * GF_SWD_PATCH * GF_SWD_PATCH;
  int64_t d1 = d0 + GF_SWD_PATCH * GF_SWD_PATCH;
  double sum = 0.0;
  for (int s = 0; s < nsets; s++)
    for (int64_t d = d0; d < d1; d++) {
      const float *r = x[s] + d * m;
      for (int64_t q = 0; q < m; q++) sum += r[q];
    }
  double cnt = (double)nsets * (double)(d1 - d0) * (double)m;
  double mu = sum / cnt, ss = 0.0;
  for (int s = 0; s < nsets; s++)
    for (int64_t d = d0; d < d1; d++) {
      const float *r = x[s] + d * m;
      for (int64_t q = 0; q < m; q++) {
        double e = r[q] - mu;
        ss += e * e;
      }
    }
  *mean = mu;
  *dev = sqrt(ss / cnt);
}

static void normalize_rows(float *x, int64_t m, int k, double mean,
                           double dev) {
  double inv = dev > 0.0 ? 1.0 / dev : 1.0;
  int64_t d0 = (int64_t)k * GF_SWD_PATCH * GF_SWD_PATCH;
  for (int64_t d = d0; d < d0 + GF_SWD_PATCH * GF_SWD_PATCH; d++) {
    float *r = x + d * m;
    for (int64_t q = 0; q < m; q++) r[q] = (float)((r[q] - mean) * inv);
  }
}

/* ---- projections and 1-D distances -------------------------------------- */

/* Order-preserving map of a float to a uint32 and its inverse. */
static inline uint32_t float_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u ^ ((u >> 31) ? 0xFFFFFFFFu : 0x80000000u);
}
static inline float key_float(uint32_t k) {
  uint32_t u = k ^ ((k >> 31) ? 0x80000000u : 0xFFFFFFFFu);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Sorts keys[0..m) ascending (LSD radix, digits of 11, 11, 10 bits); tmp
 * holds m values. The result ends in keys. */
static void radix_sort(uint32_t *keys, uint32_t *tmp, int64_t m) {
  static const int shift[3] = {0, 11, 22};
  uint32_t count[3][2048];
  memset(count, 0, sizeof count);
  for (int64_t q = 0; q < m; q++) {
    uint32_t v = keys[q];
    count[0][v & 2047u]++;
    count[1][(v >> 11) & 2047u]++;
    count[2][v >> 22]++;
  }
  uint32_t *src = keys, *dst = tmp;
  for (int pass = 0; pass < 3; pass++) {
    uint32_t *cnt = count[pass];
    if (cnt[(src[0] >> shift[pass]) & 2047u] == (uint32_t)m) continue;
    uint32_t pos = 0;
    for (int b = 0; b < 2048; b++) {
      uint32_t c = cnt[b];
      cnt[b] = pos;
      pos += c;
    }
    for (int64_t q = 0; q < m; q++) {
      uint32_t v = src[q];
      dst[cnt[(v >> shift[pass]) & 2047u]++] = v;
    }
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != keys) memcpy(keys, src, (size_t)m * sizeof *keys);
}

typedef struct project_ctx {
  const float *x[2];   /* [D][m] per set, normalized */
  int64_t m;
  int dims;            /* D = 49 C */
  int ndirs;           /* R */
  const float *dirs;   /* [R][D] unit vectors */
  uint32_t **scratch;  /* per worker: keys [2][DIR_GROUP][m] + tmp [m] */
  double *dist;        /* [R]: mean |sorted a - sorted b| */
} project_ctx;

/* Projections of descriptors [q, q + 8) onto G <= 8 directions: G x 8
 * accumulators held in registers (GNU vector types: one AVX or two SSE
 * registers each), each summed over d from d = 0 up with a multiply and an
 * add, exactly as the scalar tail sums. */
#define QB 8
#define QTILE 512 /* descriptors whose D values stay in L2 for a group */
typedef float v8f __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) void
project_block(const float *x, int64_t m, int dims, const float *w, int G,
              int64_t q, uint32_t *keys) {
  v8f acc[8];
  for (int g = 0; g < G; g++) acc[g] = (v8f){0};
  for (int d = 0; d < dims; d++) {
    v8f xv;
    memcpy(&xv, x + (int64_t)d * m + q, sizeof xv);
    for (int g = 0; g < G; g++) acc[g] += xv * w[(size_t)g * dims + d];
  }
  for (int g = 0; g < G; g++) {
    float out[QB];
    memcpy(out, &acc[g], sizeof out);
    for (int u = 0; u < QB; u++) keys[(int64_t)g * m + q + u] = float_key(out[u]);
  }
}

/* keys[g][q] = float_key(<dir g, x[:, q]>) for ng directions. The sum over
 * d runs in the same order for every q and every code path, so the vector
 * width does not change a bit; on x86-64 an AVX2 clone is picked at load
 * time where the CPU has it (same bits: no contraction into FMA,
 * -ffp-contract=off). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SWD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SWD_CLONES
#endif
SWD_CLONES
static void project_set(const float *x, int64_t m, int dims, const float *dirs,
                        int ng, uint32_t *keys) {
  int64_t mq = m - m % QB;
  for (int64_t q0 = 0; q0 < mq; q0 += QTILE) {
    int64_t q1 = q0 + QTILE < mq ? q0 + QTILE : mq;
    int g = 0;
    for (; g + 8 <= ng; g += 8)
      for (int64_t q = q0; q < q1; q += QB)
        project_block(x, m, dims, dirs + (size_t)g * dims, 8, q,
                      keys + (int64_t)g * m);
    for (; g < ng; g++)
      for (int64_t q = q0; q < q1; q += QB)
        project_block(x, m, dims, dirs + (size_t)g * dims, 1, q,
                      keys + (int64_t)g * m);
  }
  for (int g = 0; g < ng; g++) /* the last m % QB descriptors */
    for (int64_t q = mq; q < m; q++) {
      float a = 0.f;
      for (int d = 0; d < dims; d++)
        a += x[(int64_t)d * m + q] * dirs[(size_t)g * dims + d];
      keys[(int64_t)g * m + q] = float_key(a);
    }
}

static void project_job(void *vctx, int worker, int64_t j) {
  project_ctx *c = vctx;
  int r0 = (int)j * DIR_GROUP;
  int ng = c->ndirs - r0 < DIR_GROUP ? c->ndirs - r0 : DIR_GROUP;
  int64_t m = c->m;
  uint32_t *ka = c->scratch[worker];
  uint32_t *kb = ka + (int64_t)DIR_GROUP * m;
  uint32_t *tmp = kb + (int64_t)DIR_GROUP * m;
  const float *dirs = c->dirs + (size_t)r0 * c->dims;
  project_set(c->x[0], m, c->dims, dirs, ng, ka);
  project_set(c->x[1], m, c->dims, dirs, ng, kb);
  for (int g = 0; g < ng; g++) {
    uint32_t *a = ka + (int64_t)g * m, *b = kb + (int64_t)g * m;
    radix_sort(a, tmp, m);
    radix_sort(b, tmp, m);
    double sum = 0.0;
    for (int64_t q = 0; q < m; q++)
      sum += fabs((double)key_float(a[q]) - (double)key_float(b[q]));
    c->dist[r0 + g] = sum / (double)m;
  }
}

/* ---- the metric --------------------------------------------------------- */

static gf_status check_images(const gf_swd_images *im, const char *which,
                              const gf_swd_config *cfg, gf_err *err) {
  if (!im) return gf_fail(err, GF_EINVAL, "swd: set %s is NULL", which);
  if (!im->data)
    return gf_fail(err, GF_EINVAL, "swd: set %s has no pixel data", which);
  if (im->pixel != GF_SWD_U8 && im->pixel != GF_SWD_F32)
    return gf_fail(err, GF_EINVAL, "swd: set %s: unknown pixel type %d", which,
                   (int)im->pixel);
  if (im->n < 1)
    return gf_fail(err, GF_EINVAL, "swd: set %s has %lld images (need >= 1)",
                   which, (long long)im->n);
  if (im->c != 1 && im->c != 3)
    return gf_fail(err, GF_EINVAL, "swd: set %s has %d channels (need 1 or 3)",
                   which, im->c);
  if (im->h != im->w)
    return gf_fail(err, GF_EINVAL,
                   "swd: set %s images are %d x %d (need square)", which,
                   im->h, im->w);
  if (im->h < cfg->min_level || im->h > GF_SWD_MAX_SIDE)
    return gf_fail(err, GF_EINVAL,
                   "swd: set %s images are %d x %d (need %d..%d per side)",
                   which, im->h, im->w, cfg->min_level, GF_SWD_MAX_SIDE);
  return GF_OK;
}

static gf_status check_config(const gf_swd_config *c, gf_err *err) {
  if (c->patches_per_image < 1)
    return gf_fail(err, GF_EINVAL, "swd: patches_per_image %d (need >= 1)",
                   c->patches_per_image);
  if (c->dirs_per_repeat < 1 || c->repeats < 1 ||
      (int64_t)c->dirs_per_repeat * c->repeats > 1 << 20)
    return gf_fail(err, GF_EINVAL,
                   "swd: %d x %d directions (need 1..2^20 in all)",
                   c->repeats, c->dirs_per_repeat);
  if (c->min_level < GF_SWD_PATCH)
    return gf_fail(err, GF_EINVAL, "swd: min_level %d (need >= %d)",
                   c->min_level, GF_SWD_PATCH);
  if (c->norm != GF_SWD_NORM_JOINT && c->norm != GF_SWD_NORM_PER_SET)
    return gf_fail(err, GF_EINVAL, "swd: unknown normalization %d",
                   (int)c->norm);
  if (c->threads < 0 || c->threads > GF_SWD_MAX_THREADS)
    return gf_fail(err, GF_EINVAL, "swd: threads %d (need 0..%d)", c->threads,
                   GF_SWD_MAX_THREADS);
  return GF_OK;
}

/* Directions of level lv: R unit vectors of D components, from N(0,1)
 * draws normalized in double. */
static void make_directions(uint64_t seed, int lv, int ndirs, int dims,
                            float *dirs) {
  gf_philox_stream s = swd_stream(seed, SWD_SUB_DIRECTIONS + (uint32_t)lv);
  gf_philox_normal(&s, dirs, (size_t)ndirs * (size_t)dims, 0.f, 1.f);
  for (int r = 0; r < ndirs; r++) {
    float *v = dirs + (size_t)r * dims;
    double ss = 0.0;
    for (int d = 0; d < dims; d++) ss += (double)v[d] * v[d];
    double inv = ss > 0.0 ? 1.0 / sqrt(ss) : 0.0;
    for (int d = 0; d < dims; d++) v[d] = (float)(v[d] * inv);
  }
}

gf_status gf_swd(const gf_swd_images *a, const gf_swd_images *b,
                 const gf_swd_config *cfg_in, gf_swd_result *out,
                 gf_err *err) {
  gf_swd_config cfg = cfg_in ? *cfg_in : gf_swd_config_default();
  gf_status st = check_config(&cfg, err);
  if (st != GF_OK) return st;
  if (!out) return gf_fail(err, GF_EINVAL, "swd: no result to fill");
  if ((st = check_images(a, "A", &cfg, err)) != GF_OK) return st;
  if ((st = check_images(b, "B", &cfg, err)) != GF_OK) return st;
  if (a->n != b->n || a->c != b->c || a->h != b->h || a->w != b->w)
    return gf_fail(err, GF_EINVAL,
                   "swd: sets differ: A is %lld x %d x %d x %d, B is "
                   "%lld x %d x %d x %d",
                   (long long)a->n, a->c, a->h, a->w, (long long)b->n, b->c,
                   b->h, b->w);
  if (a->n > MAX_DESCRIPTORS / cfg.patches_per_image)
    return gf_fail(err, GF_EINVAL,
                   "swd: %lld images x %d patches is over %lld descriptors",
                   (long long)a->n, cfg.patches_per_image,
                   (long long)MAX_DESCRIPTORS);

  gf_swd_result res;
  memset(&res, 0, sizeof res);
  res.levels = gf_swd_levels(a->h, cfg.min_level, res.size);

  int workers = cfg.threads;
  if (workers == 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    workers = online < 1 ? 1 : online > GF_SWD_MAX_THREADS ? GF_SWD_MAX_THREADS
                                                           : (int)online;
  }
  int64_t m = a->n * cfg.patches_per_image;
  int dims = GF_SWD_PATCH * GF_SWD_PATCH * a->c;
  int ndirs = cfg.dirs_per_repeat * cfg.repeats;

  float *x[2] = {NULL, NULL};
  float *dirs = NULL;
  double *dist = NULL;
  float *scr_f[GF_SWD_MAX_THREADS] = {NULL};
  uint32_t *scr_k[GF_SWD_MAX_THREADS] = {NULL};
  size_t xbytes = (size_t)m * (size_t)dims * sizeof(float);
  x[0] = malloc(xbytes);
  x[1] = malloc(xbytes);
  dirs = malloc((size_t)ndirs * (size_t)dims * sizeof *dirs);
  dist = malloc((size_t)ndirs * sizeof *dist);
  int ok = x[0] && x[1] && dirs && dist;
  for (int w = 0; ok && w < workers; w++) {
    scr_f[w] = malloc(extract_scratch_floats(a->h) * sizeof(float));
    scr_k[w] = malloc(((size_t)2 * DIR_GROUP + 1) * (size_t)m * sizeof(uint32_t));
    ok = scr_f[w] && scr_k[w];
  }
  if (!ok) {
    st = gf_fail(err, GF_ENOMEM,
                 "swd: out of memory for %lld descriptors of %d values",
                 (long long)m, dims);
    goto done;
  }

  for (int lv = 0; lv < res.levels; lv++) {
    extract_ctx ec = {
        .img = {a, b},
        .level = lv,
        .nlevels = res.levels,
        .sizes = res.size,
        .patches = cfg.patches_per_image,
        .m = m,
        .x = {x[0], x[1]},
        .seed = cfg.seed,
        .scratch = scr_f,
    };
    int64_t bad_at[2] = {-1, -1};
    ec.bad_at = bad_at;
    pthread_mutex_init(&ec.lock, NULL);
    pool_for(workers, (a->n + IMAGE_CHUNK - 1) / IMAGE_CHUNK, extract_job, &ec);
    pthread_mutex_destroy(&ec.lock);
    for (int set = 0; set < 2; set++) {
      if (bad_at[set] >= 0) {
        st = gf_fail(err, GF_EINVAL,
                     "swd: image %lld of set %s has a non-finite pixel",
                     (long long)bad_at[set], set ? "B" : "A");
        goto done;
      }
    }

    for (int k = 0; k < a->c; k++) {
      double mean, dev;
      if (cfg.norm == GF_SWD_NORM_JOINT) {
        channel_stats(x, 2, m, k, &mean, &dev);
        normalize_rows(x[0], m, k, mean, dev);
        normalize_rows(x[1], m, k, mean, dev);
      } else {
        for (int set = 0; set < 2; set++) {
          channel_stats(&x[set], 1, m, k, &mean, &dev);
          normalize_rows(x[set], m, k, mean, dev);
        }
      }
    }

    make_directions(cfg.seed, lv, ndirs, dims, dirs);
    project_ctx pc = {
        .x = {x[0], x[1]},
        .m = m,
        .dims = dims,
        .ndirs = ndirs,
        .dirs = dirs,
        .scratch = scr_k,
        .dist = dist,
    };
    pool_for(workers, (ndirs + DIR_GROUP - 1) / DIR_GROUP, project_job, &pc);
    double sum = 0.0;
    for (int r = 0; r < ndirs; r++) sum += dist[r];
    res.swd[lv] = sum / ndirs * 1e3;
  }
  double avg = 0.0;
  for (int lv = 0; lv < res.levels; lv++) avg += res.swd[lv];
  res.avg = avg / res.levels;
  *out = res;

done:
  for (int w = 0; w < workers; w++) {
    free(scr_f[w]);
    free(scr_k[w]);
  }
  free(x[0]);
  free(x[1]);
  free(dirs);
  free(dist);
  return st;
}
