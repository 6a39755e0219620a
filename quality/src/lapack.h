/* lapack.h - the BLAS and LAPACK routines gf_quality calls, declared here
 * once with the Fortran calling convention of the reference interfaces that
 * OpenBLAS exports (LP64: 32-bit INTEGER): every argument by pointer, a
 * trailing underscore, and one hidden length argument per CHARACTER
 * argument (size_t since gfortran 8), passed as 1 so that LAPACK's Fortran
 * sees well-formed strings.
 *
 * Storage is column-major. A row-major [r, c] C array is the column-major
 * c x r matrix (its transpose) with leading dimension c; the callers say at
 * each call which view they use.
 *
 * Private to quality/src; not a wrapper layer: callers check `info` and the
 * int ranges themselves. */
#ifndef GF_METRICS_LAPACK_H
#define GF_METRICS_LAPACK_H

#include <stddef.h>

/* C = alpha * A * A^T + beta * C (trans "N", A n x k) or
 *     alpha * A^T * A + beta * C (trans "T", A k x n); only the `uplo`
 * triangle of the n x n C is referenced and written. */
void dsyrk_(const char *uplo, const char *trans, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda,
            const double *beta, double *c, const int *ldc, size_t uplo_len,
            size_t trans_len);

/* C = alpha * op(A) * op(B) + beta * C, C m x n, op(A) m x k, op(B) k x n. */
void dgemm_(const char *transa, const char *transb, const int *m,
            const int *n, const int *k, const double *alpha, const double *a,
            const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc,
            size_t transa_len, size_t transb_len);

/* Eigenvalues (ascending, in w) and, for jobz "V", orthonormal eigenvectors
 * (overwriting the columns of a) of the symmetric n x n a, whose `uplo`
 * triangle is read; divide and conquer. lwork = liwork = -1 is a workspace
 * query (sizes in work[0], iwork[0]). info 0 on success, < 0 a bad
 * argument, > 0 no convergence. */
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a,
             const int *lda, double *w, double *work, const int *lwork,
             int *iwork, const int *liwork, int *info, size_t jobz_len,
             size_t uplo_len);

#endif
