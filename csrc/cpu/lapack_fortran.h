/* lapack_fortran.h: the Fortran LAPACK routines the CPU backend calls, as OpenBLAS exports them
 * (Debian's libopenblas carries LAPACK, so no other library or header is needed).
 *
 * Fortran's calling convention: every argument by address; LP64 integers (int); and, after the
 * declared arguments, one hidden length (size_t, gfortran's type) per CHARACTER argument, in
 * order. The lengths are passed (always 1): leaving them out works until a compiler tail-calls
 * through them. Each routine in both precisions, side by side: s with float reals, d with double
 * (lapack.c calls one by the real type with its LAPACK(name, ...)). */
#ifndef MT_CPU_LAPACK_FORTRAN_H
#define MT_CPU_LAPACK_FORTRAN_H
#include <stddef.h>

void sgesv_(const int *n, const int *nrhs, float *a, const int *lda, int *ipiv, float *b, const int *ldb, int *info);
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b, const int *ldb, int *info);
void strtrs_(const char *uplo, const char *trans, const char *diag, const int *n, const int *nrhs, const float *a,
             const int *lda, float *b, const int *ldb, int *info, size_t, size_t, size_t);
void dtrtrs_(const char *uplo, const char *trans, const char *diag, const int *n, const int *nrhs, const double *a,
             const int *lda, double *b, const int *ldb, int *info, size_t, size_t, size_t);
void sgels_(const char *trans, const int *m, const int *n, const int *nrhs, float *a, const int *lda, float *b,
            const int *ldb, float *work, const int *lwork, int *info, size_t);
void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
            const int *ldb, double *work, const int *lwork, int *info, size_t);
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetri_(const int *n, float *a, const int *lda, const int *ipiv, float *work, const int *lwork, int *info);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work, const int *lwork, int *info);
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void spotrs_(const char *uplo, const int *n, const int *nrhs, const float *a, const int *lda, float *b, const int *ldb,
             int *info, size_t);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda, double *b,
             const int *ldb, int *info, size_t);
void spotri_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void spstrf_(const char *uplo, const int *n, float *a, const int *lda, int *piv, int *rank, const float *tol,
             float *work, int *info, size_t);
void dpstrf_(const char *uplo, const int *n, double *a, const int *lda, int *piv, int *rank, const double *tol,
             double *work, int *info, size_t);
void sgeqrf_(const int *m, const int *n, float *a, const int *lda, float *tau, float *work, const int *lwork,
             int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void sorgqr_(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau, float *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
void sormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, float *a, const int *lda,
             const float *tau, float *c, const int *ldc, float *work, const int *lwork, int *info, size_t, size_t);
void dormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *c, const int *ldc, double *work, const int *lwork, int *info, size_t, size_t);
void sgeev_(const char *jobvl, const char *jobvr, const int *n, float *a, const int *lda, float *wr, float *wi,
            float *vl, const int *ldvl, float *vr, const int *ldvr, float *work, const int *lwork, int *info, size_t,
            size_t);
void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr, double *wi,
            double *vl, const int *ldvl, double *vr, const int *ldvr, double *work, const int *lwork, int *info, size_t,
            size_t);
void ssyev_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w, float *work,
            const int *lwork, int *info, size_t, size_t);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w, double *work,
            const int *lwork, int *info, size_t, size_t);
void sgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, float *a, const int *lda, float *s,
             float *u, const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork, int *info, size_t,
             size_t);
void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *info, size_t,
             size_t);

#endif
