/* test_moments.c - gf_feat_moments_compute against a direct double
 * computation (the textbook two-loop mean and covariance) on random data:
 * block boundaries of the dsyrk pass, a large common offset (where a
 * one-pass formula would cancel), the smallest sizes, and the refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/fid.h"
#include "metrics_test_data.h"

/* Largest |got - want| / (|want| + scale) over the moments. */
static double moments_err(const gf_feat_moments *m, const float *x, int64_t n,
                          int dim) {
  const size_t d = (size_t)dim;
  double *mean = calloc(d, sizeof *mean);
  REQUIRE(mean);
  for (int64_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) mean[j] += x[(size_t)i * d + j];
  for (size_t j = 0; j < d; j++) mean[j] /= (double)n;
  double worst = 0, scale = 0;
  for (size_t j = 0; j < d; j++) scale = fmax(scale, fabs(mean[j]));
  for (size_t j = 0; j < d; j++)
    worst = fmax(worst, fabs(m->mean[j] - mean[j]) / (fabs(mean[j]) + scale + 1e-300));
  double cscale = 0;
  double *cov = calloc(d * d, sizeof *cov);
  REQUIRE(cov);
  for (size_t a = 0; a < d; a++)
    for (size_t b = 0; b < d; b++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++)
        s += (x[(size_t)i * d + a] - mean[a]) * (x[(size_t)i * d + b] - mean[b]);
      cov[a * d + b] = s / (double)(n - 1);
      cscale = fmax(cscale, fabs(cov[a * d + b]));
    }
  for (size_t k = 0; k < d * d; k++)
    worst = fmax(worst, fabs(m->cov[k] - cov[k]) / (fabs(cov[k]) + cscale));
  for (size_t a = 0; a < d; a++)
    for (size_t b = 0; b < d; b++)
      if (m->cov[a * d + b] != m->cov[b * d + a]) worst = INFINITY; /* symmetric */
  free(mean);
  free(cov);
  return worst;
}

static float *random_set(uint64_t seed, int64_t n, int dim, double offset,
                         double spread) {
  float *x = malloc((size_t)n * (size_t)dim * sizeof *x);
  REQUIRE(x);
  uint64_t st = seed;
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < dim; j++) {
      /* correlated columns: column j leans on column j - 1 */
      double z = td_normal(&st);
      double prev = j ? x[(size_t)i * (size_t)dim + (size_t)j - 1] - offset : 0;
      x[(size_t)i * (size_t)dim + (size_t)j] =
          (float)(offset + spread * z + 0.4 * prev);
    }
  return x;
}

static void check_case(const char *what, uint64_t seed, int64_t n, int dim,
                       double offset, double spread, double tol) {
  float *x = random_set(seed, n, dim, offset, spread);
  gf_feat_moments m;
  gf_err err = {0};
  gf_status st = gf_feat_moments_compute(x, n, dim, &m, &err);
  CHECKF(st == GF_OK, "%s: %s", what, err.msg);
  if (st == GF_OK) {
    CHECK_INT_EQ(m.dim, dim);
    CHECK_INT_EQ(m.n, n);
    double e = moments_err(&m, x, n, dim);
    CHECKF(e <= tol, "%s: relative error %.3g > %.3g", what, e, tol);
  }
  gf_feat_moments_free(&m);
  CHECK(m.mean == NULL && m.cov == NULL && m.dim == 0);
  free(x);
}

int main(void) {
  check_case("n=1000 dim=37", 1, 1000, 37, 0.0, 1.0, 1e-12);
  check_case("n=513 dim=64 (blocks 256+256+1)", 2, 513, 64, 0.0, 1.0, 1e-12);
  check_case("n=2 dim=1", 3, 2, 1, 0.0, 1.0, 1e-12);
  check_case("n=3 dim=5 (n < dim)", 4, 3, 5, 0.0, 1.0, 1e-12);
  /* A common offset 1000x the spread: two passes keep full accuracy
   * (the reference is two-pass too, in the same precision). */
  check_case("offset 1000, spread 1", 5, 700, 16, 1000.0, 1.0, 1e-9);

  /* n = 2 exactly: cov = (x0 - x1)(x0 - x1)^T / 2. */
  {
    const float x[4] = {1.f, 2.f, 3.f, 6.f};
    gf_feat_moments m;
    REQUIRE(gf_feat_moments_compute(x, 2, 2, &m, NULL) == GF_OK);
    CHECK_NEAR(m.mean[0], 2.0, 0);
    CHECK_NEAR(m.mean[1], 4.0, 0);
    CHECK_NEAR(m.cov[0], 2.0, 1e-15);
    CHECK_NEAR(m.cov[1], 4.0, 1e-15);
    CHECK_NEAR(m.cov[2], 4.0, 1e-15);
    CHECK_NEAR(m.cov[3], 8.0, 1e-15);
    gf_feat_moments_free(&m);
  }

  /* Refusals: the output is left empty and the message names the cause. */
  {
    float x[6] = {0, 1, 2, 3, 4, 5};
    gf_feat_moments m;
    gf_err err = {0};
    CHECK(gf_feat_moments_compute(x, 1, 3, &m, &err) == GF_EINVAL);
    CHECK(strstr(err.msg, "at least 2") != NULL);
    CHECK(m.mean == NULL && m.cov == NULL);
    CHECK(gf_feat_moments_compute(x, 2, 0, &m, &err) == GF_EINVAL);
    CHECK(gf_feat_moments_compute(NULL, 2, 3, &m, &err) == GF_EINVAL);
    CHECK(gf_feat_moments_compute(x, 2, 3, NULL, &err) == GF_EINVAL);
    x[4] = NAN;
    CHECK(gf_feat_moments_compute(x, 2, 3, &m, &err) == GF_EINVAL);
    CHECKF(strstr(err.msg, "[1, 1]") != NULL, "%s", err.msg);
    x[4] = INFINITY;
    CHECK(gf_feat_moments_compute(x, 2, 3, &m, &err) == GF_EINVAL);
    CHECK(m.mean == NULL && m.cov == NULL);
  }
  gf_feat_moments_free(NULL);

  /* The checker fires: a perturbed covariance is caught. */
  {
    float *x = random_set(9, 50, 4, 0.0, 1.0);
    gf_feat_moments m;
    REQUIRE(gf_feat_moments_compute(x, 50, 4, &m, NULL) == GF_OK);
    CHECK(moments_err(&m, x, 50, 4) <= 1e-12);
    m.cov[5] *= 1.0 + 1e-9;
    CHECK(moments_err(&m, x, 50, 4) > 1e-12);
    gf_feat_moments_free(&m);
    free(x);
  }
  return check_report();
}
