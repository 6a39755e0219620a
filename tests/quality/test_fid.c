/* test_fid.c - gf_fid against closed forms: identical sets (0), diagonal
 * covariances and commuting covariances S = Q D Q^T (FID = |dmu|^2 +
 * sum (sqrt d1 - sqrt d2)^2), symmetry in its arguments, singular
 * covariances, the refusals; the reference side prepared once
 * (gf_fid_ref) giving gf_fid's bits; gf_fid_feats (the n x n form) against
 * gf_fid at n below, at and above dim, 0 for a set against its own moments,
 * its refusals; and the time of one FID at dim 2048 with n = 2000, and of
 * gf_fid_feats with n = 64 (printed, not asserted). Goldens from scipy:
 * test_fid_golden.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/clock.h"
#include "gf/fid.h"
#include "metrics_test_data.h"

static gf_feat_moments alloc_moments(int dim) {
  gf_feat_moments m = {.dim = dim, .n = 100};
  m.mean = calloc((size_t)dim, sizeof *m.mean);
  m.cov = calloc((size_t)dim * (size_t)dim, sizeof *m.cov);
  REQUIRE(m.mean && m.cov);
  return m;
}

/* |dmu|^2 + sum (sqrt(d1) - sqrt(d2))^2 */
static double closed_form(const double *mu1, const double *mu2,
                          const double *d1, const double *d2, int dim) {
  double s = 0;
  for (int i = 0; i < dim; i++) {
    double t = mu1[i] - mu2[i], r = sqrt(d1[i]) - sqrt(d2[i]);
    s += t * t + r * r;
  }
  return s;
}

/* A random orthogonal dim x dim matrix (row-major), by modified
 * Gram-Schmidt on Gaussian rows, done twice for orthogonality to rounding. */
static double *random_orthogonal(uint64_t seed, int dim) {
  size_t d = (size_t)dim;
  double *q = malloc(d * d * sizeof *q);
  REQUIRE(q);
  uint64_t st = seed;
  for (size_t k = 0; k < d * d; k++) q[k] = td_normal(&st);
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < d; i++) {
      double *r = q + i * d;
      for (size_t j = 0; j < i; j++) {
        const double *p = q + j * d;
        double dot = 0;
        for (size_t k = 0; k < d; k++) dot += r[k] * p[k];
        for (size_t k = 0; k < d; k++) r[k] -= dot * p[k];
      }
      double nrm = 0;
      for (size_t k = 0; k < d; k++) nrm += r[k] * r[k];
      nrm = sqrt(nrm);
      for (size_t k = 0; k < d; k++) r[k] /= nrm;
    }
  return q;
}

/* cov = Q^T diag(dg) Q (Q's rows are the eigenvectors). */
static void rotate(double *cov, const double *q, const double *dg, int dim) {
  size_t d = (size_t)dim;
  for (size_t a = 0; a < d; a++)
    for (size_t b = 0; b <= a; b++) {
      double s = 0;
      for (size_t k = 0; k < d; k++) s += q[k * d + a] * dg[k] * q[k * d + b];
      cov[a * d + b] = cov[b * d + a] = s;
    }
}

static double trace(const gf_feat_moments *m) {
  double t = 0;
  for (int i = 0; i < m->dim; i++) t += m->cov[(size_t)i * (size_t)m->dim + (size_t)i];
  return t;
}

static void test_identical(void) {
  float *x = td_feature_set(11, 500, 32, 0.6, 0.1);
  gf_feat_moments m;
  REQUIRE(gf_feat_moments_compute(x, 500, 32, &m, NULL) == GF_OK);
  double fid = -1;
  gf_err err = {0};
  CHECKF(gf_fid(&m, &m, &fid, &err) == GF_OK, "%s", err.msg);
  double tr = trace(&m);
  CHECKF(fabs(fid) < 1e-6 * tr, "identical sets: fid %.3g, trace %.3g", fid, tr);
  fprintf(stderr, "identical sets (dim 32): fid %.3g (trace %.3g)\n", fid, tr);
  gf_feat_moments_free(&m);
  free(x);
}

static void test_diagonal(void) {
  const int dim = 40;
  gf_feat_moments a = alloc_moments(dim), b = alloc_moments(dim);
  double d1[40], d2[40];
  uint64_t st = 21;
  for (int i = 0; i < dim; i++) {
    a.mean[i] = td_normal(&st);
    b.mean[i] = td_normal(&st) + 0.3;
    d1[i] = 0.1 + 3 * td_uniform(&st);
    d2[i] = i == 7 ? 0.0 : 0.05 * (i + 1); /* one zero variance */
    a.cov[(size_t)i * dim + (size_t)i] = d1[i];
    b.cov[(size_t)i * dim + (size_t)i] = d2[i];
  }
  double want = closed_form(a.mean, b.mean, d1, d2, dim), fid = 0;
  gf_err err = {0};
  CHECKF(gf_fid(&a, &b, &fid, &err) == GF_OK, "%s", err.msg);
  CHECKF(fabs(fid - want) <= 1e-10 * want, "diagonal: %.17g vs %.17g", fid, want);
  /* ... and it is symmetric */
  double fid_ba = 0;
  CHECK(gf_fid(&b, &a, &fid_ba, &err) == GF_OK);
  CHECKF(fabs(fid_ba - want) <= 1e-10 * want, "diagonal b,a: %.17g vs %.17g",
         fid_ba, want);
  /* The checker fires: one variance off by 1e-6 moves FID past 1e-10. */
  b.cov[3 * dim + 3] *= 1.0 + 1e-6;
  CHECK(gf_fid(&a, &b, &fid, &err) == GF_OK);
  CHECK(fabs(fid - want) > 1e-10 * want);
  gf_feat_moments_free(&a);
  gf_feat_moments_free(&b);
}

static void test_commuting(int dim, int rank) {
  gf_feat_moments a = alloc_moments(dim), b = alloc_moments(dim);
  double *d1 = malloc((size_t)dim * sizeof *d1), *d2 = malloc((size_t)dim * sizeof *d2);
  REQUIRE(d1 && d2);
  uint64_t st = 31 + (uint64_t)dim;
  for (int i = 0; i < dim; i++) {
    a.mean[i] = 0.5 * td_normal(&st);
    b.mean[i] = 0.5 * td_normal(&st);
    /* rank < dim: the last dims eigenvalues are 0 (singular covariances,
     * as with fewer samples than features). */
    d1[i] = i < rank ? 0.2 + 2 * td_uniform(&st) : 0.0;
    d2[i] = i < rank ? 0.1 + td_uniform(&st) : 0.0;
  }
  double *q = random_orthogonal(77 + (uint64_t)dim, dim);
  rotate(a.cov, q, d1, dim);
  rotate(b.cov, q, d2, dim);
  double want = closed_form(a.mean, b.mean, d1, d2, dim), fid = 0;
  double scale = trace(&a) + trace(&b);
  gf_err err = {0};
  CHECKF(gf_fid(&a, &b, &fid, &err) == GF_OK, "%s", err.msg);
  /* Zero eigenvalues come back as +-1e-16 * scale; their square roots
   * (1e-8 * sqrt(scale)) bound the error of a singular case. */
  double tol = rank < dim ? 1e-6 * scale : 1e-10 * scale;
  CHECKF(fabs(fid - want) <= tol, "commuting dim %d rank %d: %.17g vs %.17g",
         dim, rank, fid, want);
  free(q);
  free(d1);
  free(d2);
  gf_feat_moments_free(&a);
  gf_feat_moments_free(&b);
}

static void test_refusals(void) {
  gf_feat_moments a = alloc_moments(4), b = alloc_moments(4), c = alloc_moments(3);
  for (int i = 0; i < 4; i++) a.cov[i * 5] = b.cov[i * 5] = 1.0;
  double fid = 0;
  gf_err err = {0};
  CHECK(gf_fid(&a, &b, &fid, &err) == GF_OK);
  CHECK(gf_fid(&a, &c, &fid, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "dims differ") != NULL, "%s", err.msg);
  CHECK(isnan(fid));
  a.mean[3] = NAN;
  CHECK(gf_fid(&a, &b, &fid, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments a") && strstr(err.msg, "mean[3]"), "%s", err.msg);
  a.mean[3] = 0;
  b.cov[6] = INFINITY;
  CHECK(gf_fid(&a, &b, &fid, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments b") && strstr(err.msg, "cov[1, 2]"), "%s", err.msg);
  b.cov[6] = 0;
  b.n = 1;
  CHECK(gf_fid(&a, &b, &fid, &err) == GF_EINVAL);
  b.n = 100;
  CHECK(gf_fid(NULL, &b, &fid, &err) == GF_EINVAL);
  CHECK(gf_fid(&a, &b, NULL, &err) == GF_EINVAL);
  gf_feat_moments empty = {0};
  CHECK(gf_fid(&a, &empty, &fid, &err) == GF_EINVAL);
  gf_feat_moments_free(&a);
  gf_feat_moments_free(&b);
  gf_feat_moments_free(&c);
}

/* FID's reference prepared once (gf_fid_ref_init) and compared with two
 * sets gives gf_fid's bits for each; its refusals. */
static void test_prepared(void) {
  const int dim = 60;
  gf_feat_moments a, b, c;
  float *xa = td_feature_set(41, 300, dim, 0.6, 0.1),
        *xb = td_feature_set(42, 200, dim, 0.5, 0.3),
        *xc = td_feature_set(43, 250, dim, 0.7, 0.0);
  gf_err err = {0};
  REQUIRE(gf_feat_moments_compute(xa, 300, dim, &a, &err) == GF_OK);
  REQUIRE(gf_feat_moments_compute(xb, 200, dim, &b, &err) == GF_OK);
  REQUIRE(gf_feat_moments_compute(xc, 250, dim, &c, &err) == GF_OK);
  double ab = 0, ac = 0, pab = 1, pac = 1, pab2 = 2;
  CHECK(gf_fid(&a, &b, &ab, &err) == GF_OK);
  CHECK(gf_fid(&a, &c, &ac, &err) == GF_OK);
  gf_fid_ref r;
  CHECKF(gf_fid_ref_init(&a, &r, &err) == GF_OK, "%s", err.msg);
  CHECK(r.dim == dim && r.n == 300 && r.mean && r.y);
  CHECK(fabs(r.trace - trace(&a)) <= 1e-12 * trace(&a));
  CHECK(gf_fid_to_ref(&r, &b, &pab, &err) == GF_OK);
  CHECK(gf_fid_to_ref(&r, &c, &pac, &err) == GF_OK);
  CHECK(gf_fid_to_ref(&r, &b, &pab2, &err) == GF_OK);
  CHECKF(memcmp(&ab, &pab, sizeof ab) == 0 && memcmp(&ab, &pab2, sizeof ab) == 0,
         "prepared FID(a, b) %.17g, %.17g; gf_fid %.17g", pab, pab2, ab);
  CHECKF(memcmp(&ac, &pac, sizeof ac) == 0, "prepared FID(a, c) %.17g, "
         "gf_fid %.17g", pac, ac);
  CHECK(ab > 0 && ac > 0 && ab != ac);
  /* a reference made from a's moments taken: the same bits, a copy of a
   * left empty */
  gf_feat_moments a2;
  gf_fid_ref r2;
  double tab = 4;
  REQUIRE(gf_feat_moments_compute(xa, 300, dim, &a2, &err) == GF_OK);
  CHECKF(gf_fid_ref_init_take(&a2, &r2, &err) == GF_OK, "%s", err.msg);
  CHECK(a2.cov == NULL && a2.mean == NULL && a2.dim == 0);
  CHECK(gf_fid_to_ref(&r2, &b, &tab, &err) == GF_OK);
  CHECKF(memcmp(&ab, &tab, sizeof ab) == 0, "FID(a, b) from a taken: %.17g, "
         "gf_fid %.17g", tab, ab);
  gf_fid_ref_free(&r2);
  /* taking c's moments: the same bits, c left empty */
  gf_feat_moments c2;
  double tac = 3;
  REQUIRE(gf_feat_moments_compute(xc, 250, dim, &c2, &err) == GF_OK);
  CHECK(gf_fid_to_ref_take(&r, &c2, &tac, &err) == GF_OK);
  CHECKF(memcmp(&ac, &tac, sizeof ac) == 0, "FID(a, c) taking c: %.17g, "
         "gf_fid %.17g", tac, ac);
  CHECK(c2.cov == NULL && c2.mean == NULL && c2.dim == 0);
  /* refusals: another dim, a non-finite b, an empty reference */
  gf_feat_moments d = alloc_moments(dim - 1);
  double f = 0;
  CHECK(gf_fid_to_ref(&r, &d, &f, &err) == GF_EINVAL && isnan(f));
  CHECKF(strstr(err.msg, "dims differ") != NULL, "%s", err.msg);
  b.cov[dim + 2] = NAN;
  CHECK(gf_fid_to_ref(&r, &b, &f, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments b") && strstr(err.msg, "cov[1, 2]"), "%s",
         err.msg);
  CHECK(gf_fid_to_ref_take(&r, &b, &f, &err) == GF_EINVAL);
  CHECK(b.cov == NULL && b.mean == NULL); /* freed on failure too */
  gf_fid_ref_free(&r);
  CHECK(r.mean == NULL && r.y == NULL && r.dim == 0);
  gf_fid_ref_free(&r); /* twice, and NULL, are fine */
  gf_fid_ref_free(NULL);
  CHECK(gf_fid_to_ref(&r, &c, &f, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "not prepared") != NULL, "%s", err.msg);
  a.mean[5] = INFINITY;
  CHECK(gf_fid_ref_init(&a, &r, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments a") && strstr(err.msg, "mean[5]"), "%s",
         err.msg);
  CHECK(r.mean == NULL && r.y == NULL);
  CHECK(gf_fid_ref_init_take(&a, &r, &err) == GF_EINVAL);
  CHECK(a.mean == NULL && a.cov == NULL && r.y == NULL); /* freed */
  CHECK(gf_fid_ref_init(&c, NULL, &err) == GF_EINVAL);
  gf_feat_moments_free(&a);
  gf_feat_moments_free(&b);
  gf_feat_moments_free(&c);
  gf_feat_moments_free(&d);
  free(xa);
  free(xb);
  free(xc);
}

/* gf_fid_feats(a, x) against gf_fid(a, moments of x): the same number to
 * rounding for n below, at and above dim (rank-deficient S2 and full). */
static void test_feats(void) {
  const int dim = 60;
  gf_feat_moments a;
  gf_err err = {0};
  float *xa = td_feature_set(51, 300, dim, 0.6, 0.1);
  REQUIRE(gf_feat_moments_compute(xa, 300, dim, &a, &err) == GF_OK);
  const double ta = trace(&a);
  const int ns[] = {2, 7, 20, 60, 61, 200};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    int n = ns[i];
    float *x = td_feature_set(60 + n, n, dim, 0.5, 0.3);
    gf_feat_moments b;
    REQUIRE(gf_feat_moments_compute(x, n, dim, &b, &err) == GF_OK);
    double full = -1, low = -2;
    CHECKF(gf_fid(&a, &b, &full, &err) == GF_OK, "%s", err.msg);
    CHECKF(gf_fid_feats(&a, x, n, dim, &low, &err) == GF_OK, "%s", err.msg);
    CHECKF(fabs(full - low) <= 1e-6 * (ta + trace(&b)) && full > 0,
           "n %d: gf_fid %.17g, gf_fid_feats %.17g", n, full, low);
    /* a set against its own moments: 0 (to rounding; above dim the n x n
     * form has n - dim eigenvalues that are 0 but for rounding) */
    double self = 1;
    CHECK(gf_fid_feats(&b, x, n, dim, &self, &err) == GF_OK);
    CHECKF(fabs(self) <= 1e-6 * trace(&b), "n %d: self %.3g", n, self);
    gf_feat_moments_free(&b);
    free(x);
  }
  /* refusals: each leaves *fid NaN and names what is wrong */
  float *x = td_feature_set(70, 10, dim, 0.5, 0.3);
  double f = 0;
  CHECK(gf_fid_feats(&a, NULL, 10, dim, &f, &err) == GF_EINVAL && isnan(f));
  CHECK(gf_fid_feats(&a, x, 1, dim, &f, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "n must be") != NULL, "%s", err.msg);
  CHECK(gf_fid_feats(&a, x, 10, dim - 1, &f, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "dims differ") != NULL, "%s", err.msg);
  CHECK(gf_fid_feats(&a, x, 10, dim, NULL, &err) == GF_EINVAL);
  CHECK(gf_fid_feats(NULL, x, 10, dim, &f, &err) == GF_EINVAL);
  x[3 * dim + 7] = NAN;
  CHECK(gf_fid_feats(&a, x, 10, dim, &f, &err) == GF_EINVAL && isnan(f));
  CHECKF(strstr(err.msg, "row 3, column 7") != NULL, "%s", err.msg);
  a.cov[5] = INFINITY;
  x[3 * dim + 7] = 0.5f;
  CHECK(gf_fid_feats(&a, x, 10, dim, &f, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments a") && strstr(err.msg, "cov[0, 5]"), "%s",
         err.msg);
  free(x);
  gf_feat_moments_free(&a);
  free(xa);
}

/* Two sets of 2000 correlated features at dim 2048 (fewer samples than
 * dims, as early in a run): moments and FID timed, printed. */
static void time_fid_2048(void) {
  const int dim = 2048, n = 2000;
  const size_t d = (size_t)dim;
  float *x = malloc((size_t)n * d * sizeof *x), *y = malloc((size_t)n * d * sizeof *y);
  REQUIRE(x && y);
  uint64_t st = 2048;
  for (int i = 0; i < n; i++) {
    double carry_x = 0, carry_y = 0;
    for (size_t j = 0; j < d; j++) {
      carry_x = 0.5 * carry_x + td_normal(&st);
      carry_y = 0.6 * carry_y + td_normal(&st);
      x[(size_t)i * d + j] = (float)fabs(carry_x);
      y[(size_t)i * d + j] = (float)fabs(carry_y + 0.05);
    }
  }
  gf_feat_moments a, b;
  gf_err err = {0};
  double t0 = gf_mono_s();
  REQUIRE(gf_feat_moments_compute(x, n, dim, &a, &err) == GF_OK);
  REQUIRE(gf_feat_moments_compute(y, n, dim, &b, &err) == GF_OK);
  double t1 = gf_mono_s();
  double fid = 0, fid_self = 0;
  gf_status s = gf_fid(&a, &b, &fid, &err);
  double t2 = gf_mono_s();
  CHECKF(s == GF_OK, "%s", err.msg);
  CHECK(fid > 0);
  CHECK(gf_fid(&a, &a, &fid_self, &err) == GF_OK);
  CHECKF(fabs(fid_self) < 1e-6 * trace(&a), "self fid %.3g", fid_self);
  fprintf(stderr,
          "timing: dim %d, n %d: moments %.3f s per set, FID %.3f s "
          "(fid %.6g, self %.3g)\n",
          dim, n, (t1 - t0) / 2, t2 - t1, fid, fid_self);
  /* 64 of the second set's features against the first set's moments,
   * through gf_fid_feats (gf_fid's cost does not depend on n: above) */
  const int small = 64;
  double f_low = 0;
  t1 = gf_mono_s();
  CHECK(gf_fid_feats(&a, y, small, dim, &f_low, &err) == GF_OK);
  t2 = gf_mono_s();
  CHECK(f_low > 0);
  fprintf(stderr, "timing: dim %d, %d features against the moments of %d: "
          "gf_fid_feats %.3f s (fid %.6g)\n", dim, small, n, t2 - t1, f_low);
  gf_feat_moments_free(&a);
  gf_feat_moments_free(&b);
  free(x);
  free(y);
}

int main(void) {
  test_identical();
  test_diagonal();
  test_commuting(24, 24);
  test_commuting(97, 97);
  test_commuting(50, 30);
  test_commuting(1, 1);
  test_refusals();
  test_prepared();
  test_feats();
  time_fid_2048();
  return check_report();
}
