/* moments.c - gf_feat_moments_compute and gf_feat_moments_free (gf/fid.h):
 * the mean and unbiased covariance of a float feature set, accumulated in
 * double with two passes (mean, then dsyrk over centred blocks), so the
 * result does not suffer the cancellation of a one-pass E[xx^T] - mu mu^T.
 * Not for: streaming accumulation across calls. */
#include "gf/fid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

/* Rows converted to double per dsyrk call: BLOCK_ROWS * dim doubles of
 * scratch (4 MiB at dim 2048) and enough columns for dsyrk to run at speed. */
#define BLOCK_ROWS 256

void gf_feat_moments_free(gf_feat_moments *m) {
  if (!m) return;
  free(m->mean);
  free(m->cov);
  memset(m, 0, sizeof *m);
}

gf_status gf_feat_moments_compute(const float *feats, int64_t n, int dim,
                                  gf_feat_moments *out, gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "feature moments: NULL output");
  memset(out, 0, sizeof *out);
  if (!feats) return gf_fail(err, GF_EINVAL, "feature moments: NULL features");
  if (n < 2)
    return gf_fail(err, GF_EINVAL,
                   "feature moments: need at least 2 feature vectors, got %lld",
                   (long long)n);
  if (dim < 1)
    return gf_fail(err, GF_EINVAL, "feature moments: dim must be >= 1, got %d",
                   dim);
  if ((uint64_t)n > SIZE_MAX / (size_t)dim ||
      (size_t)dim > SIZE_MAX / sizeof(double) / (size_t)dim)
    return gf_fail(err, GF_EINVAL, "feature moments: [%lld, %d] is too large",
                   (long long)n, dim);
  const size_t d = (size_t)dim;

  double *mean = calloc(d, sizeof *mean);
  double *cov = calloc(d * d, sizeof *cov);
  double *blk = malloc((size_t)BLOCK_ROWS * d * sizeof *blk);
  if (!mean || !cov || !blk) {
    free(mean);
    free(cov);
    free(blk);
    return gf_fail(err, GF_ENOMEM,
                   "feature moments: cannot allocate %zu doubles", d * d);
  }

  /* Pass 1: the mean, summed row by row in double. */
  for (int64_t i = 0; i < n; i++) {
    const float *row = feats + (size_t)i * d;
    for (size_t j = 0; j < d; j++) {
      if (!isfinite(row[j])) {
        free(mean);
        free(cov);
        free(blk);
        return gf_fail(err, GF_EINVAL,
                       "feature moments: feature [%lld, %zu] is not finite "
                       "(%g)",
                       (long long)i, j, (double)row[j]);
      }
      mean[j] += row[j];
    }
  }
  for (size_t j = 0; j < d; j++) mean[j] /= (double)n;

  /* Pass 2: cov += X_b^T X_b over blocks X_b of centred rows. The row-major
   * block [rows, dim] is the column-major dim x rows matrix A = X_b^T
   * (lda = dim), so dsyrk "N" adds A A^T = X_b^T X_b; the upper triangle in
   * column-major order is the lower one of the row-major cov. */
  const double one = 1.0;
  for (int64_t i0 = 0; i0 < n; i0 += BLOCK_ROWS) {
    int rows = (int)(n - i0 < BLOCK_ROWS ? n - i0 : BLOCK_ROWS);
    for (int r = 0; r < rows; r++) {
      const float *src = feats + (size_t)(i0 + r) * d;
      double *dst = blk + (size_t)r * d;
      for (size_t j = 0; j < d; j++) dst[j] = (double)src[j] - mean[j];
    }
    dsyrk_("U", "N", &dim, &rows, &one, blk, &dim, &one, cov, &dim, 1, 1);
  }
  free(blk);

  /* Scale by 1 / (n - 1) and mirror the computed triangle (row-major lower:
   * cov[i*d + j], j <= i) onto the other. */
  const double scale = 1.0 / (double)(n - 1);
  for (size_t i = 0; i < d; i++) {
    for (size_t j = 0; j <= i; j++) {
      double v = cov[i * d + j] * scale;
      cov[i * d + j] = v;
      cov[j * d + i] = v;
    }
  }
  out->dim = dim;
  out->n = n;
  out->mean = mean;
  out->cov = cov;
  return GF_OK;
}
