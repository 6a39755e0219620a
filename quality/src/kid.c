/* kid.c - gf_kid (gf/kid.h): the unbiased MMD^2 estimate under the cubic
 * polynomial kernel, averaged over seeded random subsets.
 *
 * Sampling: one splitmix64 sequence (Steele et al. 2014) started at the
 * seed; bounded integers by rejection (no modulo bias); each subset takes
 * m steps of a Fisher-Yates shuffle over a persistent permutation of each
 * set's row indices (a's first, then b's), so the m rows are distinct and
 * uniformly drawn, independently of earlier subsets. Integer arithmetic
 * only: the same seed selects the same rows on every machine.
 * Gram blocks: the subset's rows in double, X X^T and Y Y^T by dsyrk (upper
 * triangle), X Y^T by dgemm; the kernel and sums follow in double. Not for:
 * other kernels or the biased estimator. */
#include "gf/kid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

gf_kid_config gf_kid_config_default(void) {
  gf_kid_config c = {.subsets = 100, .subset_size = 1000, .seed = 0};
  return c;
}

/* The next value of the splitmix64 sequence at *state. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform in [0, range), range >= 1: rejects the lowest 2^64 mod range
 * values so that every residue is equally likely. */
static uint64_t bounded(uint64_t *state, uint64_t range) {
  uint64_t threshold = (0 - range) % range;
  for (;;) {
    uint64_t r = splitmix64(state);
    if (r >= threshold) return r % range;
  }
}

/* Moves m uniformly drawn distinct entries of perm[0..n) to perm[0..m). */
static void draw_subset(uint64_t *state, int64_t *perm, int64_t n, int m) {
  for (int i = 0; i < m; i++) {
    int64_t j = i + (int64_t)bounded(state, (uint64_t)(n - i));
    int64_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
}

static gf_status check_set(const char *name, const float *x, int64_t n,
                           int dim, gf_err *err) {
  if (!x) return gf_fail(err, GF_EINVAL, "kid: set %s is NULL", name);
  if (n < 2)
    return gf_fail(err, GF_EINVAL,
                   "kid: set %s needs at least 2 feature vectors, got %lld",
                   name, (long long)n);
  if ((uint64_t)n > SIZE_MAX / sizeof(float) / (size_t)dim)
    return gf_fail(err, GF_EINVAL, "kid: set %s of [%lld, %d] is too large",
                   name, (long long)n, dim);
  const size_t total = (size_t)n * (size_t)dim;
  for (size_t i = 0; i < total; i++)
    if (!isfinite(x[i]))
      return gf_fail(err, GF_EINVAL,
                     "kid: set %s: feature [%zu, %zu] is not finite (%g)", name,
                     i / (size_t)dim, i % (size_t)dim, (double)x[i]);
  return GF_OK;
}

/* (g / dim + 1)^3 */
static inline double poly3(double g, double inv_dim) {
  double v = g * inv_dim + 1.0;
  return v * v * v;
}

/* Sum over i < j of k(K[i, j]) for the upper triangle of the column-major
 * m x m Gram matrix K. */
static double upper_sum(const double *k, int m, double inv_dim) {
  double s = 0;
  for (int j = 1; j < m; j++) {
    const double *col = k + (size_t)j * (size_t)m;
    for (int i = 0; i < j; i++) s += poly3(col[i], inv_dim);
  }
  return s;
}

static void gather(const float *x, const int64_t *rows, int m, int dim,
                   double *out) {
  const size_t d = (size_t)dim;
  for (int r = 0; r < m; r++) {
    const float *src = x + (size_t)rows[r] * d;
    double *dst = out + (size_t)r * d;
    for (size_t j = 0; j < d; j++) dst[j] = src[j];
  }
}

gf_status gf_kid(const float *a, int64_t na, const float *b, int64_t nb,
                 int dim, const gf_kid_config *cfg, double *kid,
                 double *kid_std, gf_err *err) {
  if (!kid) return gf_fail(err, GF_EINVAL, "kid: NULL result");
  *kid = NAN;
  if (kid_std) *kid_std = NAN;
  gf_kid_config c = cfg ? *cfg : gf_kid_config_default();
  if (dim < 1)
    return gf_fail(err, GF_EINVAL, "kid: dim must be >= 1, got %d", dim);
  if (c.subsets < 1)
    return gf_fail(err, GF_EINVAL, "kid: subsets must be >= 1, got %d",
                   c.subsets);
  if (c.subset_size < 2)
    return gf_fail(err, GF_EINVAL, "kid: subset_size must be >= 2, got %d",
                   c.subset_size);
  GF_TRY(check_set("a", a, na, dim, err));
  GF_TRY(check_set("b", b, nb, dim, err));

  int64_t mm = c.subset_size;
  if (na < mm) mm = na;
  if (nb < mm) mm = nb;
  const int m = (int)mm;
  const size_t d = (size_t)dim, msz = (size_t)m;
  if (msz > SIZE_MAX / sizeof(double) / (d > msz ? d : msz))
    return gf_fail(err, GF_EINVAL, "kid: subsets of %d x %d are too large", m,
                   dim);

  int64_t *perm_a = malloc((size_t)na * sizeof *perm_a);
  int64_t *perm_b = malloc((size_t)nb * sizeof *perm_b);
  double *x = malloc(msz * d * sizeof *x);
  double *y = malloc(msz * d * sizeof *y);
  double *g = malloc(msz * msz * sizeof *g);
  double *vals = malloc((size_t)c.subsets * sizeof *vals);
  gf_status st = GF_OK;
  if (!perm_a || !perm_b || !x || !y || !g || !vals) {
    st = gf_fail(err, GF_ENOMEM, "kid: cannot allocate subsets of %d x %d", m,
                 dim);
    goto out;
  }
  for (int64_t i = 0; i < na; i++) perm_a[i] = i;
  for (int64_t i = 0; i < nb; i++) perm_b[i] = i;

  const double inv_dim = 1.0 / (double)dim, one = 1.0, zero = 0.0;
  const double md = (double)m;
  uint64_t state = c.seed;
  for (int s = 0; s < c.subsets; s++) {
    draw_subset(&state, perm_a, na, m);
    draw_subset(&state, perm_b, nb, m);
    gather(a, perm_a, m, dim, x);
    gather(b, perm_b, m, dim, y);
    /* Row-major X [m, dim] is the column-major dim x m matrix A (lda dim):
     * dsyrk "T" gives A^T A = X X^T, dgemm "T","N" gives X Y^T. */
    dsyrk_("U", "T", &m, &dim, &one, x, &dim, &zero, g, &m, 1, 1);
    double sxx = 2.0 * upper_sum(g, m, inv_dim);
    dsyrk_("U", "T", &m, &dim, &one, y, &dim, &zero, g, &m, 1, 1);
    double syy = 2.0 * upper_sum(g, m, inv_dim);
    dgemm_("T", "N", &m, &m, &dim, &one, x, &dim, y, &dim, &zero, g, &m, 1, 1);
    double sxy = 0;
    for (size_t i = 0; i < msz * msz; i++) sxy += poly3(g[i], inv_dim);
    vals[s] = (sxx + syy) / (md * (md - 1.0)) - 2.0 * sxy / (md * md);
  }

  double mean = 0;
  for (int s = 0; s < c.subsets; s++) mean += vals[s];
  mean /= c.subsets;
  double var = 0;
  for (int s = 0; s < c.subsets; s++) var += (vals[s] - mean) * (vals[s] - mean);
  var /= c.subsets; /* ddof 0, as np.std in torch-fidelity */
  *kid = mean;
  if (kid_std) *kid_std = sqrt(var);

out:
  free(perm_a);
  free(perm_b);
  free(x);
  free(y);
  free(g);
  free(vals);
  return st;
}
