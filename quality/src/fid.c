/* fid.c - gf_fid (gf/fid.h): the Fréchet distance between two Gaussians
 * given by feature moments, in double through LAPACK/BLAS.
 *
 * tr(sqrt(S1 S2)): with S1 = V L V^T (dsyevd), sqrt(S1) = V L^½ V^T and
 * sqrt(S1) S2 sqrt(S1) = V (L^½ V^T S2 V L^½) V^T, an orthogonal similarity,
 * so its eigenvalues are those of M = Y^T S2 Y with Y = V L^½. M is formed
 * directly (two dgemm, one fewer d^3 product than forming sqrt(S1)),
 * symmetrized, and its eigenvalues (dsyevd, values only) give
 * tr(sqrt(S1 S2)) = sum sqrt(max(l, 0)): S1 S2 is similar to the PSD M, so
 * its square root's trace is real and this is what scipy's sqrtm computes
 * up to rounding. Everything that depends on S1 alone (its eigen-
 * decomposition, Y, tr(S1)) is a gf_fid_ref, prepared once
 * (gf_fid_ref_init) and compared with any number of sets (gf_fid_to_ref);
 * gf_fid is the two in a row. gf_fid_feats takes the second set as its
 * features and works in their n x n Gram form instead (see fid.h). Not
 * for: moments themselves (moments.c). */
#include "gf/fid.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

gf_status gf_feat_moments_check(const char *name, const gf_feat_moments *m,
                                gf_err *err) {
  if (!m) return gf_fail(err, GF_EINVAL, "fid: moments %s are NULL", name);
  if (m->dim < 1)
    return gf_fail(err, GF_EINVAL, "fid: moments %s: dim must be >= 1, got %d",
                   name, m->dim);
  if (m->n < 2)
    return gf_fail(err, GF_EINVAL,
                   "fid: moments %s: n must be >= 2, got %lld", name,
                   (long long)m->n);
  if (!m->mean || !m->cov)
    return gf_fail(err, GF_EINVAL, "fid: moments %s: NULL %s", name,
                   m->mean ? "cov" : "mean");
  const size_t d = (size_t)m->dim;
  for (size_t i = 0; i < d; i++)
    if (!isfinite(m->mean[i]))
      return gf_fail(err, GF_EINVAL, "fid: moments %s: mean[%zu] is not finite (%g)",
                     name, i, m->mean[i]);
  for (size_t i = 0; i < d * d; i++)
    if (!isfinite(m->cov[i]))
      return gf_fail(err, GF_EINVAL,
                     "fid: moments %s: cov[%zu, %zu] is not finite (%g)", name,
                     i / d, i % d, m->cov[i]);
  return GF_OK;
}

/* The workspace sizes of dsyevd for jobz at order n: *lwork doubles and
 * *liwork ints (a query). */
static gf_status dsyevd_sizes(const char *jobz, int n, int *lwork,
                              int *liwork, gf_err *err) {
  int info = 0, lq = -1, liq = -1, iwq = 0;
  double wq = 0, qa = 0, qw = 0; /* not read by a query; passed non-NULL */
  dsyevd_(jobz, "U", &n, &qa, &n, &qw, &wq, &lq, &iwq, &liq, &info, 1, 1);
  if (info != 0)
    return gf_fail(err, GF_EDEVICE, "fid: dsyevd workspace query failed (info %d)",
                   info);
  *lwork = (int)wq + 1;
  *liwork = iwq > 0 ? iwq : 1;
  return GF_OK;
}

void gf_fid_ref_free(gf_fid_ref *r) {
  if (!r) return;
  free(r->mean);
  free(r->y);
  memset(r, 0, sizeof *r);
}

/* gf_fid_ref_init; with take, a's arrays are adopted: S1 is decomposed in
 * a->cov's memory, and both end in *out on success and are freed on any
 * failure (the caller then forgets them). */
static gf_status ref_init(const gf_feat_moments *a, bool take,
                          gf_fid_ref *out, gf_err *err) {
  double *mean = take && a ? a->mean : NULL;
  double *y = take && a ? a->cov : NULL; /* S1, then V, then Y = V L^½ */
  double *w = NULL, *work = NULL;
  int *iwork = NULL;
  gf_status st = GF_OK;
  if (!out) {
    st = gf_fail(err, GF_EINVAL, "fid: NULL reference");
    goto out;
  }
  memset(out, 0, sizeof *out);
  if ((st = gf_feat_moments_check("a", a, err)) != GF_OK) goto out;
  const int n = a->dim;
  const size_t d = (size_t)n;
  if (d > SIZE_MAX / sizeof(double) / d) {
    st = gf_fail(err, GF_EINVAL, "fid: dim %d is too large", n);
    goto out;
  }
  double tr1 = 0;
  for (size_t i = 0; i < d; i++) tr1 += a->cov[i * d + i];

  int lwork = 0, liwork = 0, info = 0;
  if ((st = dsyevd_sizes("V", n, &lwork, &liwork, err)) != GF_OK) goto out;
  if (!take) {
    mean = malloc(d * sizeof *mean);
    y = malloc(d * d * sizeof *y);
  }
  w = malloc(d * sizeof *w);
  work = malloc((size_t)lwork * sizeof *work);
  iwork = malloc((size_t)liwork * sizeof *iwork);
  if (!mean || !y || !w || !work || !iwork) {
    st = gf_fail(err, GF_ENOMEM, "fid: cannot allocate %zu doubles at dim %d",
                 d * d, n);
    goto out;
  }
  if (!take) {
    memcpy(mean, a->mean, d * sizeof *mean);
    /* S1 is symmetric: its row-major array is its column-major array. */
    memcpy(y, a->cov, d * d * sizeof *y);
  }
  dsyevd_("V", "U", &n, y, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  if (info != 0) {
    st = gf_fail(err, GF_EDEVICE,
                 "fid: eigen-decomposition of a's covariance failed (dsyevd info %d)",
                 info);
    goto out;
  }
  /* Column k of V (column-major) scaled by sqrt(max(l_k, 0)). */
  for (size_t k = 0; k < d; k++) {
    double s = w[k] > 0 ? sqrt(w[k]) : 0.0;
    double *col = y + k * d;
    for (size_t i = 0; i < d; i++) col[i] *= s;
  }
  out->dim = n;
  out->n = a->n;
  out->mean = mean;
  out->trace = tr1;
  out->y = y;
  mean = y = NULL;

out:
  free(mean);
  free(y);
  free(w);
  free(work);
  free(iwork);
  return st;
}

gf_status gf_fid_ref_init(const gf_feat_moments *a, gf_fid_ref *out,
                          gf_err *err) {
  return ref_init(a, false, out, err);
}

gf_status gf_fid_ref_init_take(gf_feat_moments *a, gf_fid_ref *out,
                               gf_err *err) {
  gf_status st = ref_init(a, true, out, err);
  if (a) memset(a, 0, sizeof *a); /* its arrays are out's, or freed */
  return st;
}

/* *trsqrt = sum sqrt(max(l, 0)) over the eigenvalues l of the n x n
 * matrix m (column-major), which is symmetric up to rounding: made exactly
 * so, then dsyevd (values only) with w [n] and the workspace of
 * dsyevd_sizes("N", n). m is overwritten. GF_EDEVICE naming what (the
 * matrix, for the message) when LAPACK fails. */
static gf_status trace_sqrt_psd(double *m, int n, double *w, double *work,
                                int lwork, int *iwork, int liwork,
                                const char *what, double *trsqrt,
                                gf_err *err) {
  const size_t d = (size_t)n;
  for (size_t i = 0; i < d; i++)
    for (size_t j = 0; j < i; j++) {
      double v = 0.5 * (m[i * d + j] + m[j * d + i]);
      m[i * d + j] = v;
      m[j * d + i] = v;
    }
  int info = 0;
  dsyevd_("N", "U", &n, m, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  if (info != 0)
    return gf_fail(err, GF_EDEVICE, "fid: eigenvalues of %s failed (dsyevd "
                   "info %d)", what, info);
  double sum = 0;
  for (size_t k = 0; k < d; k++) sum += w[k] > 0 ? sqrt(w[k]) : 0.0;
  *trsqrt = sum;
  return GF_OK;
}

/* gf_fid_to_ref with M = Y^T S2 Y written into mm when it is not NULL
 * (b->cov itself, which is not read once S2 Y is formed), else into a
 * buffer of its own. */
static gf_status to_ref(const gf_fid_ref *r, const gf_feat_moments *b,
                        double *mm_into, double *fid, gf_err *err) {
  if (!fid) return gf_fail(err, GF_EINVAL, "fid: NULL result");
  *fid = NAN;
  if (!r || !r->mean || !r->y)
    return gf_fail(err, GF_EINVAL, "fid: the reference is not prepared");
  GF_TRY(gf_feat_moments_check("b", b, err));
  if (r->dim != b->dim)
    return gf_fail(err, GF_EINVAL, "fid: dims differ: a has %d, b has %d",
                   r->dim, b->dim);
  const int n = r->dim;
  const size_t d = (size_t)n;

  double diff = 0, tr2 = 0;
  for (size_t i = 0; i < d; i++) {
    double t = r->mean[i] - b->mean[i];
    diff += t * t;
    tr2 += b->cov[i * d + i];
  }

  /* Eigenvalues only: dsytrd, the one step that reads the workspace, blocks
   * the same way whenever lwork reaches dim x its block size, which the
   * query's optimum does (so a larger workspace gives the same bits). */
  int lwork = 0, liwork = 0;
  GF_TRY(dsyevd_sizes("N", n, &lwork, &liwork, err));
  double *t = malloc(d * d * sizeof *t); /* S2 Y */
  double *own = mm_into ? NULL : malloc(d * d * sizeof *own);
  double *mm = mm_into ? mm_into : own;  /* M = Y^T S2 Y */
  double *w = malloc(d * sizeof *w);
  double *work = malloc((size_t)lwork * sizeof *work);
  int *iwork = malloc((size_t)liwork * sizeof *iwork);
  gf_status st = GF_OK;
  if (!t || !mm || !w || !work || !iwork) {
    st = gf_fail(err, GF_ENOMEM, "fid: cannot allocate %d x %zu doubles at "
                 "dim %d", mm_into ? 1 : 2, d * d, n);
    goto out;
  }
  const double one = 1.0, zero = 0.0;
  dgemm_("N", "N", &n, &n, &n, &one, b->cov, &n, r->y, &n, &zero, t, &n, 1, 1);
  dgemm_("T", "N", &n, &n, &n, &one, r->y, &n, t, &n, &zero, mm, &n, 1, 1);
  double trsqrt = 0;
  st = trace_sqrt_psd(mm, n, w, work, lwork, iwork, liwork,
                      "sqrt(S1) S2 sqrt(S1)", &trsqrt, err);
  if (st == GF_OK) *fid = diff + r->trace + tr2 - 2.0 * trsqrt;

out:
  free(t);
  free(own);
  free(w);
  free(work);
  free(iwork);
  return st;
}

gf_status gf_fid_to_ref(const gf_fid_ref *r, const gf_feat_moments *b,
                        double *fid, gf_err *err) {
  return to_ref(r, b, NULL, fid, err);
}

gf_status gf_fid_to_ref_take(const gf_fid_ref *r, gf_feat_moments *b,
                             double *fid, gf_err *err) {
  gf_status st = to_ref(r, b, b ? b->cov : NULL, fid, err);
  gf_feat_moments_free(b);
  return st;
}

gf_status gf_fid(const gf_feat_moments *a, const gf_feat_moments *b,
                 double *fid, gf_err *err) {
  if (!fid) return gf_fail(err, GF_EINVAL, "fid: NULL result");
  *fid = NAN;
  GF_TRY(gf_feat_moments_check("a", a, err));
  GF_TRY(gf_feat_moments_check("b", b, err));
  if (a->dim != b->dim)
    return gf_fail(err, GF_EINVAL, "fid: dims differ: a has %d, b has %d",
                   a->dim, b->dim);
  gf_fid_ref r;
  GF_TRY(gf_fid_ref_init(a, &r, err));
  gf_status st = gf_fid_to_ref(&r, b, fid, err);
  gf_fid_ref_free(&r);
  return st;
}

gf_status gf_fid_feats(const gf_feat_moments *a, const float *feats,
                       int64_t n, int dim, double *fid, gf_err *err) {
  if (!fid) return gf_fail(err, GF_EINVAL, "fid: NULL result");
  *fid = NAN;
  GF_TRY(gf_feat_moments_check("a", a, err));
  if (!feats) return gf_fail(err, GF_EINVAL, "fid: NULL features");
  if (n < 2 || n > INT_MAX)
    return gf_fail(err, GF_EINVAL, "fid: features: n must be in [2, %d], "
                   "got %lld", INT_MAX, (long long)n);
  if (dim != a->dim)
    return gf_fail(err, GF_EINVAL, "fid: dims differ: a has %d, the "
                   "features %d", a->dim, dim);
  const int ni = (int)n, di = dim;
  const size_t m = (size_t)n, d = (size_t)dim;
  if (m > SIZE_MAX / sizeof(double) / d / 2 ||
      m > SIZE_MAX / sizeof(double) / m)
    return gf_fail(err, GF_EINVAL, "fid: %lld features of %d are too many",
                   (long long)n, dim);
  int lwork = 0, liwork = 0;
  GF_TRY(dsyevd_sizes("N", ni, &lwork, &liwork, err));
  double *mean = calloc(d, sizeof *mean);
  double *b = malloc(m * d * sizeof *b); /* centred rows */
  double *t = malloc(m * d * sizeof *t); /* S1 B^T, column-major d x n */
  double *g = malloc(m * m * sizeof *g); /* M */
  double *w = malloc(m * sizeof *w);
  double *work = malloc((size_t)lwork * sizeof *work);
  int *iwork = malloc((size_t)liwork * sizeof *iwork);
  gf_status st = GF_OK;
  if (!mean || !b || !t || !g || !w || !work || !iwork) {
    st = gf_fail(err, GF_ENOMEM, "fid: cannot allocate %zu doubles for %lld "
                 "features of %d", 2 * m * d + m * m, (long long)n, dim);
    goto out;
  }
  for (size_t i = 0; i < m; i++) {
    const float *row = feats + i * d;
    for (size_t k = 0; k < d; k++) {
      if (!isfinite(row[k])) {
        st = gf_fail(err, GF_EINVAL, "fid: features: row %zu, column %zu is "
                     "not finite (%g)", i, k, (double)row[k]);
        goto out;
      }
      mean[k] += row[k];
    }
  }
  double diff = 0, tr1 = 0, tr2 = 0;
  for (size_t k = 0; k < d; k++) {
    mean[k] /= (double)n;
    double e = a->mean[k] - mean[k];
    diff += e * e;
    tr1 += a->cov[k * d + k];
  }
  for (size_t i = 0; i < m; i++)
    for (size_t k = 0; k < d; k++) {
      double x = (double)feats[i * d + k] - mean[k];
      b[i * d + k] = x;
      tr2 += x * x;
    }
  tr2 /= (double)(n - 1);
  /* b, row-major [n, d], is the column-major d x n B^T; S1 is symmetric. */
  const double one = 1.0, zero = 0.0, inv = 1.0 / (double)(n - 1);
  dgemm_("N", "N", &di, &ni, &di, &one, a->cov, &di, b, &di, &zero, t, &di,
         1, 1);
  dgemm_("T", "N", &ni, &ni, &di, &inv, b, &di, t, &di, &zero, g, &ni, 1, 1);
  double trsqrt = 0;
  st = trace_sqrt_psd(g, ni, w, work, lwork, iwork, liwork, "B S1 B^T",
                      &trsqrt, err);
  if (st == GF_OK) *fid = diff + tr1 + tr2 - 2.0 * trsqrt;

out:
  free(mean);
  free(b);
  free(t);
  free(g);
  free(w);
  free(work);
  free(iwork);
  return st;
}
