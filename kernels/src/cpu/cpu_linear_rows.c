/* cpu_linear_rows.c - the linear forward of frozen inference
 * (gf_ctx.frozen_batch): y[n, o] = sum_k x[n, k] * w[o, k] + b[o], where
 * each sum is one chain of fused multiply-adds over k = 0 .. K-1 in that
 * order, started from zero, and the bias is added last. Every output is
 * therefore the same bits whatever the rows beside it, their count, the
 * thread count and the vector width (AVX-512, AVX2 + FMA and the scalar
 * fmaf tail all round each step once). oneDNN's GEMM cannot promise
 * that: it sums one row (a GEMV) in another order than several.
 *
 * The weights are transposed once into [K, O] and kept by the ctx for
 * the weight buffer's address (the frozen contract: their values do not
 * change). Rows are taken four at a time so that each loaded weight
 * vector serves four FMAs; the rows left over go one at a time, through
 * the same chain per output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GF_X86 1
#endif

#include "cpu_backend.h"

/* One output column block [o0, o1) for rows r0 .. r0+nr-1 (nr 1..4), the
 * scalar way: the reference every vector path must equal. */
static void rows_scalar(const float *x, int64_t K, const float *wt,
                        int64_t O, int64_t o0, int64_t o1, int nr,
                        float *y) {
  for (int r = 0; r < nr; r++)
    for (int64_t o = o0; o < o1; o++) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; k++)
        acc = fmaf(x[r * K + k], wt[k * O + o], acc);
      y[r * O + o] = acc;
    }
}

#ifdef GF_X86
/* Columns [0, width) of nr (1 or 4) rows, in whole vectors; returns how
 * many columns were done. wt and y have rows of O floats. */
__attribute__((target("avx512f"))) static int64_t rows_avx512(
    const float *x, int64_t K, const float *wt, int64_t O, int64_t width,
    int nr, float *y) {
  int64_t o = 0;
  if (nr == 4) {
    for (; o + 32 <= width; o += 32) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0,
             c1 = a0, d0 = a0, d1 = a0;
      for (int64_t k = 0; k < K; k++) {
        __m512 w0 = _mm512_loadu_ps(wt + k * O + o);
        __m512 w1 = _mm512_loadu_ps(wt + k * O + o + 16);
        __m512 xa = _mm512_set1_ps(x[k]), xb = _mm512_set1_ps(x[K + k]);
        __m512 xc = _mm512_set1_ps(x[2 * K + k]);
        __m512 xd = _mm512_set1_ps(x[3 * K + k]);
        a0 = _mm512_fmadd_ps(xa, w0, a0);
        a1 = _mm512_fmadd_ps(xa, w1, a1);
        b0 = _mm512_fmadd_ps(xb, w0, b0);
        b1 = _mm512_fmadd_ps(xb, w1, b1);
        c0 = _mm512_fmadd_ps(xc, w0, c0);
        c1 = _mm512_fmadd_ps(xc, w1, c1);
        d0 = _mm512_fmadd_ps(xd, w0, d0);
        d1 = _mm512_fmadd_ps(xd, w1, d1);
      }
      _mm512_storeu_ps(y + o, a0);
      _mm512_storeu_ps(y + o + 16, a1);
      _mm512_storeu_ps(y + O + o, b0);
      _mm512_storeu_ps(y + O + o + 16, b1);
      _mm512_storeu_ps(y + 2 * O + o, c0);
      _mm512_storeu_ps(y + 2 * O + o + 16, c1);
      _mm512_storeu_ps(y + 3 * O + o, d0);
      _mm512_storeu_ps(y + 3 * O + o + 16, d1);
    }
  } else {
    /* four independent chains in flight hide the FMA latency */
    for (; o + 64 <= width; o += 64) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t k = 0; k < K; k++) {
        __m512 xa = _mm512_set1_ps(x[k]);
        const float *w = wt + k * O + o;
        a0 = _mm512_fmadd_ps(xa, _mm512_loadu_ps(w), a0);
        a1 = _mm512_fmadd_ps(xa, _mm512_loadu_ps(w + 16), a1);
        a2 = _mm512_fmadd_ps(xa, _mm512_loadu_ps(w + 32), a2);
        a3 = _mm512_fmadd_ps(xa, _mm512_loadu_ps(w + 48), a3);
      }
      _mm512_storeu_ps(y + o, a0);
      _mm512_storeu_ps(y + o + 16, a1);
      _mm512_storeu_ps(y + o + 32, a2);
      _mm512_storeu_ps(y + o + 48, a3);
    }
    for (; o + 16 <= width; o += 16) {
      __m512 a0 = _mm512_setzero_ps();
      for (int64_t k = 0; k < K; k++)
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[k]),
                             _mm512_loadu_ps(wt + k * O + o), a0);
      _mm512_storeu_ps(y + o, a0);
    }
  }
  return o;
}

__attribute__((target("avx2,fma"))) static int64_t rows_avx2(
    const float *x, int64_t K, const float *wt, int64_t O, int64_t width,
    int nr, float *y) {
  int64_t o = 0;
  if (nr == 4) {
    for (; o + 16 <= width; o += 16) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0,
             c1 = a0, d0 = a0, d1 = a0;
      for (int64_t k = 0; k < K; k++) {
        __m256 w0 = _mm256_loadu_ps(wt + k * O + o);
        __m256 w1 = _mm256_loadu_ps(wt + k * O + o + 8);
        __m256 xa = _mm256_set1_ps(x[k]), xb = _mm256_set1_ps(x[K + k]);
        __m256 xc = _mm256_set1_ps(x[2 * K + k]);
        __m256 xd = _mm256_set1_ps(x[3 * K + k]);
        a0 = _mm256_fmadd_ps(xa, w0, a0);
        a1 = _mm256_fmadd_ps(xa, w1, a1);
        b0 = _mm256_fmadd_ps(xb, w0, b0);
        b1 = _mm256_fmadd_ps(xb, w1, b1);
        c0 = _mm256_fmadd_ps(xc, w0, c0);
        c1 = _mm256_fmadd_ps(xc, w1, c1);
        d0 = _mm256_fmadd_ps(xd, w0, d0);
        d1 = _mm256_fmadd_ps(xd, w1, d1);
      }
      _mm256_storeu_ps(y + o, a0);
      _mm256_storeu_ps(y + o + 8, a1);
      _mm256_storeu_ps(y + O + o, b0);
      _mm256_storeu_ps(y + O + o + 8, b1);
      _mm256_storeu_ps(y + 2 * O + o, c0);
      _mm256_storeu_ps(y + 2 * O + o + 8, c1);
      _mm256_storeu_ps(y + 3 * O + o, d0);
      _mm256_storeu_ps(y + 3 * O + o + 8, d1);
    }
  } else {
    for (; o + 32 <= width; o += 32) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t k = 0; k < K; k++) {
        __m256 xa = _mm256_set1_ps(x[k]);
        const float *w = wt + k * O + o;
        a0 = _mm256_fmadd_ps(xa, _mm256_loadu_ps(w), a0);
        a1 = _mm256_fmadd_ps(xa, _mm256_loadu_ps(w + 8), a1);
        a2 = _mm256_fmadd_ps(xa, _mm256_loadu_ps(w + 16), a2);
        a3 = _mm256_fmadd_ps(xa, _mm256_loadu_ps(w + 24), a3);
      }
      _mm256_storeu_ps(y + o, a0);
      _mm256_storeu_ps(y + o + 8, a1);
      _mm256_storeu_ps(y + o + 16, a2);
      _mm256_storeu_ps(y + o + 24, a3);
    }
    for (; o + 8 <= width; o += 8) {
      __m256 a0 = _mm256_setzero_ps();
      for (int64_t k = 0; k < K; k++)
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(x[k]),
                             _mm256_loadu_ps(wt + k * O + o), a0);
      _mm256_storeu_ps(y + o, a0);
    }
  }
  return o;
}
#endif

/* Columns [0, width) of one row the fastest way the CPU has; returns
 * how many were done (whole vectors). isa: 2 AVX-512, 1 AVX2 + FMA. */
static int64_t row_vec(int isa, const float *x, int64_t K, const float *wt,
                       int64_t O, int64_t width, float *y) {
#ifdef GF_X86
  if (isa == 2) return rows_avx512(x, K, wt, O, width, 1, y);
  if (isa == 1) return rows_avx2(x, K, wt, O, width, 1, y);
#else
  (void)x, (void)K, (void)wt, (void)O, (void)width, (void)y;
#endif
  (void)isa;
  return 0;
}

/* nr (1 or 4) rows at x into y (rows of O floats): vector columns where
 * the CPU has them, the scalar chain for the rest. */
static void rows(int isa, const float *x, int64_t K, const float *wt,
                 int64_t O, int nr, float *y) {
  int64_t o = 0;
#ifdef GF_X86
  if (isa == 2) o = rows_avx512(x, K, wt, O, O, nr, y);
  else if (isa == 1) o = rows_avx2(x, K, wt, O, O, nr, y);
#endif
  if (nr == 1 || o == O) {
    rows_scalar(x, K, wt, O, o, O, nr, y);
    return;
  }
  /* a 4-row pass leaves its last columns to one row at a time */
  for (int r = 0; r < nr; r++) {
    int64_t o2 = o + row_vec(isa, x + r * K, K, wt + o, O, O - o,
                             y + r * O + o);
    rows_scalar(x + r * K, K, wt, O, o2, O, 1, y + r * O);
  }
}

/* The [K, O] copy of w [O, K] kept for w's address in fz (the ctx's own
 * tables or its store's), made under fz's lock when not there yet; NULL
 * on failure. */
static const float *frozen_wt(gf_cpu_frozen *fz, const float *w, int64_t O,
                              int64_t K, gf_err *err) {
  pthread_mutex_lock(&fz->lock);
  float *t = NULL;
  for (size_t i = 0; i < fz->nlin && !t; i++)
    if (fz->lin[i].src == w && fz->lin[i].rows == O && fz->lin[i].cols == K)
      t = fz->lin[i].t;
  if (t) {
    pthread_mutex_unlock(&fz->lock);
    return t;
  }
  size_t bytes = ((size_t)(O * K) * sizeof *t + GF_ALIGN - 1) / GF_ALIGN *
                 GF_ALIGN;
  gf_cpu_frozen_w *grown = realloc(fz->lin, (fz->nlin + 1) * sizeof *grown);
  if (grown) fz->lin = grown;
  t = grown ? aligned_alloc(GF_ALIGN, bytes) : NULL;
  if (!grown)
    gf_fail(err, GF_ENOMEM, "cpu: frozen weight table");
  else if (!t)
    gf_fail(err, GF_ENOMEM, "cpu: frozen weights [%lld, %lld]",
            (long long)K, (long long)O);
  if (t) {
    for (int64_t o = 0; o < O; o++)
      for (int64_t k = 0; k < K; k++) t[k * O + o] = w[o * K + k];
    fz->lin[fz->nlin++] = (gf_cpu_frozen_w){w, O, K, t};
    fz->bytes += bytes;
  }
  pthread_mutex_unlock(&fz->lock);
  return t;
}

static int cpu_isa(void) {
#ifdef GF_X86
  if (__builtin_cpu_supports("avx512f")) return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return 1;
#endif
  return 0;
}

gf_status gf_cpu_linear_fwd_rows(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *w, const gf_tensor *b,
                                 gf_tensor *y, gf_err *err) {
  int64_t N = x->shape[0], K = x->shape[1], O = w->shape[0];
  const float *wt = frozen_wt(gf_cpu_frozen_of(ctx), w->data, O, K, err);
  if (!wt) return err ? err->code : GF_ENOMEM;
  const float *xp = x->data;
  float *yp = y->data;
  int isa = cpu_isa(), nt = ctx->nthreads;
  int64_t blocks = N / 4;
  /* rows are independent: threads split them, never a sum */
#pragma omp parallel for num_threads(nt) if (N * O * K >= 4 * GF_PAR_MIN) \
    schedule(static)
  for (int64_t i = 0; i < blocks + N % 4; i++) {
    int64_t r = i < blocks ? i * 4 : blocks * 4 + (i - blocks);
    rows(isa, xp + r * K, K, wt, O, i < blocks ? 4 : 1, yp + r * O);
  }
  if (b) {
    const float *bp = b->data;
    for (int64_t r = 0; r < N; r++)
      for (int64_t o = 0; o < O; o++) yp[r * O + o] += bp[o];
  }
  return GF_OK;
}
