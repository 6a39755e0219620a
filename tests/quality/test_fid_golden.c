/* test_fid_golden.c - gf_fid and gf_kid against the values scipy/numpy
 * computed in tests/quality/make_fid_goldens.py for the same float32 feature
 * sets (tests/quality/golden/fid_kid_golden.txt, path in $GF_FID_GOLDEN):
 * FID within each case's relative tolerance (1e-9, 1e-6 for singular
 * covariances), KID of one subset holding every row within 1e-9. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/fid.h"
#include "gf/kid.h"
#include "metrics_test_data.h"

/* 1 when got is within rel * |want| of want. */
static int within(double got, double want, double rel) {
  return fabs(got - want) <= rel * fabs(want);
}

static double sum_set(const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return s;
}

static double abs_sum_set(const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += fabs((double)x[i]);
  return s;
}

int main(void) {
  const char *path = getenv("GF_FID_GOLDEN");
  REQUIRE(path && *path);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  char line[1024];
  int cases = 0, kids = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char name[64];
    int dim, as, an, bs, bn;
    double amix, ashift, asum, bmix, bshift, bsum, want_fid, tol, want_kid;
    int got = sscanf(line, "%63s %d %d %d %lf %lf %lf %d %d %lf %lf %lf %lf %lf %lf",
                     name, &dim, &as, &an, &amix, &ashift, &asum, &bs, &bn,
                     &bmix, &bshift, &bsum, &want_fid, &tol, &want_kid);
    CHECKF(got == 15, "unparsable golden line: %s", line);
    if (got != 15) continue;
    cases++;
    float *a = td_feature_set(as, an, dim, amix, ashift);
    float *b = td_feature_set(bs, bn, dim, bmix, bshift);
    size_t na = (size_t)an * (size_t)dim, nb = (size_t)bn * (size_t)dim;
    /* Same data as Python (the sums differ only by summation order). */
    CHECKF(fabs(sum_set(a, na) - asum) <= 1e-12 * abs_sum_set(a, na),
           "%s: set a differs from Python's: sum %.17g vs %.17g", name,
           sum_set(a, na), asum);
    CHECKF(fabs(sum_set(b, nb) - bsum) <= 1e-12 * abs_sum_set(b, nb),
           "%s: set b differs from Python's: sum %.17g vs %.17g", name,
           sum_set(b, nb), bsum);

    gf_feat_moments ma, mb;
    gf_err err = {0};
    REQUIRE(gf_feat_moments_compute(a, an, dim, &ma, &err) == GF_OK);
    REQUIRE(gf_feat_moments_compute(b, bn, dim, &mb, &err) == GF_OK);
    double fid = NAN;
    CHECKF(gf_fid(&ma, &mb, &fid, &err) == GF_OK, "%s: %s", name, err.msg);
    CHECKF(within(fid, want_fid, tol), "%s: fid %.17g vs scipy %.17g (rel %.3g > %.3g)",
           name, fid, want_fid, fabs(fid - want_fid) / fabs(want_fid), tol);
    fprintf(stderr, "%s: fid %.17g scipy %.17g rel %.2g\n", name, fid, want_fid,
            fabs(fid - want_fid) / fabs(want_fid));
    /* The checker fires: a golden off by 10x the tolerance is a miss. */
    CHECK(!within(fid, want_fid * (1 + 10 * tol), tol));

    if (!isnan(want_kid)) {
      kids++;
      gf_kid_config cfg = {.subsets = 1, .subset_size = an, .seed = 5};
      double kid = NAN, kid_std = NAN;
      CHECKF(gf_kid(a, an, b, bn, dim, &cfg, &kid, &kid_std, &err) == GF_OK,
             "%s: %s", name, err.msg);
      CHECKF(within(kid, want_kid, 1e-9), "%s: kid %.17g vs numpy %.17g", name,
             kid, want_kid);
      CHECK(kid_std == 0.0); /* one subset */
      fprintf(stderr, "%s: kid %.17g numpy %.17g rel %.2g\n", name, kid,
              want_kid, fabs(kid - want_kid) / fabs(want_kid));
      CHECK(!within(kid, want_kid * (1 + 1e-8), 1e-9));
    }
    gf_feat_moments_free(&ma);
    gf_feat_moments_free(&mb);
    free(a);
    free(b);
  }
  fclose(f);
  CHECKF(cases >= 4 && kids >= 2, "only %d cases, %d with KID", cases, kids);
  return check_report();
}
