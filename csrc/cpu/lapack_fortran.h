/* lapack_fortran.h: the Fortran LAPACK routines the CPU backend calls, as OpenBLAS exports them
 * (Debian's libopenblas carries LAPACK, so no other library or header is needed).
 *
 * Fortran's calling convention: every argument by address; LP64 integers (int); and, after the
 * declared arguments, one hidden length (size_t, gfortran's type) per CHARACTER argument, in
 * order. The lengths are passed (always 1): leaving them out works until a compiler tail-calls
 * through them. One list for both precisions: LAPACK_ROUTINES(T, P) declares P##name_ with
 * reals of type T (s: float, d: double). */
#ifndef MT_CPU_LAPACK_FORTRAN_H
#define MT_CPU_LAPACK_FORTRAN_H
#include <stddef.h>

#define MT_LAPACK_ROUTINES(T, P)                                                                                      \
  void P##gesv_(const int *n, const int *nrhs, T *a, const int *lda, int *ipiv, T *b, const int *ldb, int *info);     \
  void P##trtrs_(const char *uplo, const char *trans, const char *diag, const int *n, const int *nrhs, const T *a,    \
                 const int *lda, T *b, const int *ldb, int *info, size_t, size_t, size_t);                            \
  void P##gels_(const char *trans, const int *m, const int *n, const int *nrhs, T *a, const int *lda, T *b,           \
                const int *ldb, T *work, const int *lwork, int *info, size_t);                                        \
  void P##getrf_(const int *m, const int *n, T *a, const int *lda, int *ipiv, int *info);                             \
  void P##getri_(const int *n, T *a, const int *lda, const int *ipiv, T *work, const int *lwork, int *info);          \
  void P##potrf_(const char *uplo, const int *n, T *a, const int *lda, int *info, size_t);                            \
  void P##potrs_(const char *uplo, const int *n, const int *nrhs, const T *a, const int *lda, T *b, const int *ldb,   \
                 int *info, size_t);                                                                                  \
  void P##potri_(const char *uplo, const int *n, T *a, const int *lda, int *info, size_t);                            \
  void P##pstrf_(const char *uplo, const int *n, T *a, const int *lda, int *piv, int *rank, const T *tol, T *work,    \
                 int *info, size_t);                                                                                  \
  void P##geqrf_(const int *m, const int *n, T *a, const int *lda, T *tau, T *work, const int *lwork, int *info);     \
  void P##orgqr_(const int *m, const int *n, const int *k, T *a, const int *lda, const T *tau, T *work,               \
                 const int *lwork, int *info);                                                                        \
  void P##ormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, T *a, const int *lda, \
                 const T *tau, T *c, const int *ldc, T *work, const int *lwork, int *info, size_t, size_t);           \
  void P##geev_(const char *jobvl, const char *jobvr, const int *n, T *a, const int *lda, T *wr, T *wi, T *vl,        \
                const int *ldvl, T *vr, const int *ldvr, T *work, const int *lwork, int *info, size_t, size_t);       \
  void P##syev_(const char *jobz, const char *uplo, const int *n, T *a, const int *lda, T *w, T *work,                \
                const int *lwork, int *info, size_t, size_t);                                                         \
  void P##gesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, T *a, const int *lda, T *s, T *u,   \
                 const int *ldu, T *vt, const int *ldvt, T *work, const int *lwork, int *info, size_t, size_t);

MT_LAPACK_ROUTINES(float, s)
MT_LAPACK_ROUTINES(double, d)

#endif
