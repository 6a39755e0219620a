/* fid.h - the moments of a feature set (mean and covariance, in double) and
 * the Fréchet Inception Distance between two of them (Heusel et al. 2017):
 *
 *   FID = |mu1 - mu2|^2 + tr(S1) + tr(S2) - 2 tr(sqrt(S1 S2))
 *
 * as pytorch-fid / fid-helper-pytorch / torch-fidelity define it, with the
 * matrix square root taken through symmetric eigen-decompositions (LAPACK)
 * rather than scipy.linalg.sqrtm's Schur method, so that no complex
 * arithmetic or "imaginary component" fix-up is needed.
 *
 * Not a feature extractor (gf/inception*.h) nor a cache (gf/feat_cache.h).
 * Pure functions of their inputs; no global state; thread-safe (the BLAS
 * may use its own threads). */
#ifndef GF_FID_H
#define GF_FID_H

#include <stdint.h>

#include "gf/status.h"

/* Mean and covariance of n feature vectors of `dim` entries. Owned by the
 * caller; mean and cov are malloc'd by gf_feat_moments_compute (or
 * gf_feat_cache_read) and freed by gf_feat_moments_free. All-zero bytes are
 * an empty struct that gf_feat_moments_free accepts. */
typedef struct gf_feat_moments {
  int dim;      /* feature length, >= 1 */
  int64_t n;    /* number of feature vectors the moments came from, >= 2 */
  double *mean; /* [dim] */
  double *cov;  /* [dim * dim] row-major, symmetric; unbiased (divided by
                   n - 1), as numpy.cov(feats, rowvar=False) */
} gf_feat_moments;

/* Computes the moments of feats (row-major [n, dim], n >= 2, dim >= 1, every
 * value finite) into *out. Sums in double: the mean first, then dsyrk over
 * blocks of centred rows converted to double, so the memory beyond the
 * result is O(block * dim). Allocates out->mean and out->cov (the caller
 * frees them with gf_feat_moments_free); on failure *out is left empty.
 * feats is only read. GF_EINVAL names a bad argument or the first
 * non-finite value (its row and column); GF_ENOMEM. */
gf_status gf_feat_moments_compute(const float *feats, int64_t n, int dim,
                                  gf_feat_moments *out, gf_err *err);

/* GF_OK when m is usable as the FID argument called name ("a", "b"):
 * arrays present, dim >= 1, n >= 2, every entry finite; else GF_EINVAL
 * naming name, the field and the first bad index. Reads m only. */
gf_status gf_feat_moments_check(const char *name, const gf_feat_moments *m,
                                gf_err *err);
/* Frees m->mean and m->cov and leaves *m empty (all zero); accepts NULL and
 * an empty struct. */
void gf_feat_moments_free(gf_feat_moments *m);

/* *fid = FID between the moments a and b (same dim; n >= 2 each; every
 * mean and covariance entry finite, else GF_EINVAL naming the argument,
 * the field and the index). tr(sqrt(S1 S2)) is sum_i sqrt(max(l_i, 0))
 * over the eigenvalues l_i of the symmetric PSD matrix
 * sqrt(S1) S2 sqrt(S1), with sqrt(S1) = V diag(sqrt(max(l, 0))) V^T from
 * S1's eigen-decomposition (dsyevd); negative eigenvalues are rounding noise
 * of a PSD matrix and count as 0. The result is not clamped: identical
 * inputs give 0 up to rounding (|fid| ~ 1e-12 * trace), which may be
 * slightly negative. Allocates O(dim^2) doubles of scratch, freed before
 * returning; reads a and b only. GF_ENOMEM; GF_EDEVICE when LAPACK fails
 * (its info code in the message). */
gf_status gf_fid(const gf_feat_moments *a, const gf_feat_moments *b,
                 double *fid, gf_err *err);

/* FID's reference side, prepared once: what gf_fid derives from its first
 * argument alone (the mean, tr(S1) and Y = V diag(sqrt(max(l, 0))) from
 * S1's eigen-decomposition), so that comparing many sets with one
 * reference pays that decomposition and its workspace (2 dim^2 + 6 dim
 * doubles) once, and holds one dim x dim matrix, Y, in place of S1.
 * gf_fid(a, b) is gf_fid_ref_init(a), gf_fid_to_ref(b), gf_fid_ref_free:
 * the same operations in the same order, so the same bits. Owned by the
 * caller; all-zero bytes are an empty struct that gf_fid_ref_free
 * accepts. */
typedef struct gf_fid_ref {
  int dim;      /* feature length, >= 1 */
  int64_t n;    /* feature vectors of the reference, >= 2 */
  double *mean; /* [dim], a copy of the reference's mean */
  double trace; /* tr(S1) */
  double *y;    /* [dim * dim] column-major: column k is S1's k-th
                   eigenvector (ascending eigenvalues) times the square
                   root of max(eigenvalue, 0) */
} gf_fid_ref;

/* Prepares *out from the moments a (checked as gf_fid checks them,
 * errors naming argument "a"); reads a only. Allocates out->mean, out->y
 * and, until it returns, the eigen-decomposition's workspace; on failure
 * *out is left empty. GF_EINVAL, GF_ENOMEM, GF_EDEVICE as gf_fid. */
gf_status gf_fid_ref_init(const gf_feat_moments *a, gf_fid_ref *out,
                          gf_err *err);

/* gf_fid_ref_init for moments the caller has no more use for, without a
 * copy of S1: S1 is decomposed in a->cov's memory, which becomes out->y,
 * and a->mean becomes out->mean; *a is left empty on success and failure
 * alike. The same bits as gf_fid_ref_init. */
gf_status gf_fid_ref_init_take(gf_feat_moments *a, gf_fid_ref *out,
                               gf_err *err);

/* Frees r->mean and r->y and leaves *r empty; accepts NULL and an empty
 * struct. */
void gf_fid_ref_free(gf_fid_ref *r);

/* *fid = gf_fid(a, b) for the a that r was prepared from, to the last bit
 * (b checked as gf_fid checks it, errors naming argument "b"; GF_EINVAL
 * when the dims differ). Allocates 2 dim^2 doubles of scratch, freed
 * before returning; reads r and b only. */
gf_status gf_fid_to_ref(const gf_fid_ref *r, const gf_feat_moments *b,
                        double *fid, gf_err *err);

/* gf_fid_to_ref for moments the caller has no more use for, in half the
 * scratch: the product Y^T S2 Y is formed in b->cov's memory once S2 Y is,
 * and *b is freed (left empty) on success and failure alike. The same
 * bits as gf_fid_to_ref. */
gf_status gf_fid_to_ref_take(const gf_fid_ref *r, gf_feat_moments *b,
                             double *fid, gf_err *err);

/* *fid = the FID between the moments a and the n feature vectors feats
 * (row-major [n, dim], dim == a->dim, n >= 2, every value finite; errors
 * name argument "a" as gf_fid does, or the first non-finite feature's row
 * and column). The same quantity as gf_fid(a, moments of feats), computed
 * without S2 and without any dim x dim eigen-decomposition: with B the
 * centred features, the nonzero eigenvalues of sqrt(S1) S2 sqrt(S1) are
 * those of the n x n PSD matrix M = B S1 B^T / (n - 1), so
 * tr(sqrt(S1 S2)) = sum sqrt(max(l, 0)) over M's eigenvalues (dsyevd,
 * values only). O(n dim^2 + n^2 dim + n^3) where gf_fid is O(dim^3): for
 * n <= dim never more, and for n << dim (a FID of fewer images than the
 * features' 2048) about dim / n times less. Agrees with gf_fid to
 * rounding, not to the bit (gf_fid also sums the square roots of the
 * dim - n + 1 eigenvalues that are zero but for rounding). Allocates
 * 2 n dim + n^2 doubles of scratch, freed before returning; reads a and
 * feats only. GF_EINVAL, GF_ENOMEM, GF_EDEVICE as gf_fid. */
gf_status gf_fid_feats(const gf_feat_moments *a, const float *feats,
                       int64_t n, int dim, double *fid, gf_err *err);

#endif
