/* kid.h - the Kernel Inception Distance (Binkowski et al. 2018, "Demystifying
 * MMD GANs"), as StyleGAN2-ADA (metrics/kernel_inception_distance.py) and
 * torch-fidelity (kid.py) compute it: the unbiased estimate of the squared
 * MMD under the cubic polynomial kernel
 *
 *   k(x, y) = (x . y / dim + 1)^3
 *
 * averaged over random subsets of the two feature sets:
 *
 *   MMD^2 = (sum_{i!=j} k(a_i, a_j) + sum_{i!=j} k(b_i, b_j)) / (m (m - 1))
 *           - 2 / m^2 * sum_{i,j} k(a_i, b_j)
 *
 * Subsets are drawn with a generator of our own (splitmix64 over the seed,
 * rejection-sampled bounded integers, a partial Fisher-Yates shuffle per
 * subset), so that a seed selects the same rows on every machine; the rows
 * differ from numpy's, so values match the Python tools in distribution,
 * and exactly only when no sampling happens (one subset of all rows).
 *
 * Not a feature extractor. Pure function of its inputs; no global state. */
#ifndef GF_KID_H
#define GF_KID_H

#include <stdint.h>

#include "gf/status.h"

typedef struct gf_kid_config {
  int subsets;     /* subsets averaged, >= 1 (StyleGAN2-ADA, torch-fidelity:
                      100) */
  int subset_size; /* rows drawn from each set per subset, >= 2; capped at
                      min(na, nb) as StyleGAN2-ADA does (torch-fidelity
                      refuses instead); default 1000 */
  uint64_t seed;   /* selects the subsets; default 0 */
} gf_kid_config;

/* {subsets 100, subset_size 1000, seed 0}. */
gf_kid_config gf_kid_config_default(void);

/* KID between feature sets a (row-major [na, dim]) and b ([nb, dim]);
 * na, nb >= 2, dim >= 1, every value finite (else GF_EINVAL naming the set,
 * row and column). Each subset draws m = min(subset_size, na, nb) distinct
 * rows of a and, independently, m distinct rows of b, without replacement.
 * *kid = mean of the subsets' MMD^2; *kid_std (may be NULL) = their
 * standard deviation with ddof 0 (numpy's np.std default, as torch-fidelity
 * reports kernel_inception_distance_std; 0 for one subset). Gram blocks
 * come from dsyrk/dgemm in double. Allocates O(m * dim + m^2 + na + nb)
 * scratch, freed before returning; a and b are only read. GF_ENOMEM;
 * cfg NULL means gf_kid_config_default(). */
gf_status gf_kid(const float *a, int64_t na, const float *b, int64_t nb,
                 int dim, const gf_kid_config *cfg, double *kid,
                 double *kid_std, gf_err *err);

#endif
