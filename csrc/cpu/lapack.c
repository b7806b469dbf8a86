/* lapack.c: the CPU bodies of the LAPACK slots: OpenBLAS's Fortran LAPACK (lapack_fortran.h).
 *
 * csrc/core/ops_lapack.c has checked everything LAPACK checks (sizes, leading dimensions,
 * option characters), so LAPACK's xerbla, which prints, is never reached. Each routine has
 * one body, written once for both precisions (LAPACK_TYPES: the s and d routines differ
 * only in prefix and real type); workspaces are sized by LAPACK's own query (lwork = -1). */
#include <stdlib.h>
#include "cpu.h"
#include "lapack_fortran.h"
#include "../core/error.h"

#define LAPACK_TYPES(X) X(f32, float, s) X(f64, double, d)

static int rows(const mt_tensor *t) { return (int)t->sizes[0]; }
static int cols(const mt_tensor *t) { return t->ndim > 1 ? (int)t->sizes[1] : 1; }
static int ld(const mt_tensor *t) { return t->sizes[0] > 1 ? (int)t->sizes[0] : 1; }

static mt_status oom(const char *op) {
  return mt__error(MT_ERR_MEMORY, "%s: out of host memory for LAPACK's workspace", op);
}

/* the workspace a query asked for (at least one element); *lwork its length */
static void *work_alloc(double asked, size_t es, int *lwork) {
  *lwork = asked < 1 ? 1 : (int)asked;
  return malloc((size_t)*lwork * es);
}

/* run `call` twice: once as a workspace query (lwork -1), once with the workspace */
#define WITH_WORK(op, T, call)                         \
  do {                                                 \
    T wk_ = 0;                                         \
    int lwork = -1;                                    \
    T *work = &wk_;                                    \
    call;                                              \
    if (*info != 0) return MT_OK;                      \
    work = work_alloc((double)wk_, sizeof(T), &lwork); \
    if (!work) return oom(op);                         \
    call;                                              \
    free(work);                                        \
  } while (0)

#define BODIES(N, T, P)                                                                                               \
  static mt_status gesv_##N(mt_tensor *a, mt_tensor *b, int *info) {                                                  \
    int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);                                                        \
    int *ipiv = malloc(sizeof(int) * (size_t)n);                                                                      \
    if (!ipiv) return oom("gesv");                                                                                    \
    P##gesv_(&n, &nrhs, (T *)mt__data(a), &lda, ipiv, (T *)mt__data(b), &ldb, info);                                  \
    free(ipiv);                                                                                                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status trtrs_##N(const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag, int *info) {         \
    int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);                                                        \
    P##trtrs_(&uplo, &trans, &diag, &n, &nrhs, (const T *)mt__data(a), &lda, (T *)mt__data(b), &ldb, info, 1, 1, 1);  \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status gels_##N(mt_tensor *a, mt_tensor *b, int *info) {                                                  \
    int m = rows(a), n = cols(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);                                           \
    T *pa = (T *)mt__data(a), *pb = (T *)mt__data(b);                                                                 \
    WITH_WORK("gels", T, P##gels_("N", &m, &n, &nrhs, pa, &lda, pb, &ldb, work, &lwork, info, 1));                    \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status getri_##N(mt_tensor *a, int *info) {                                                               \
    int n = rows(a), lda = ld(a);                                                                                     \
    T *pa = (T *)mt__data(a);                                                                                         \
    int *ipiv = malloc(sizeof(int) * (size_t)n);                                                                      \
    if (!ipiv) return oom("inverse");                                                                                 \
    P##getrf_(&n, &n, pa, &lda, ipiv, info);                                                                          \
    if (*info == 0) {                                                                                                 \
      T wk_ = 0;                                                                                                      \
      int lwork = -1;                                                                                                 \
      P##getri_(&n, pa, &lda, ipiv, &wk_, &lwork, info);                                                              \
      T *work = *info == 0 ? work_alloc((double)wk_, sizeof(T), &lwork) : NULL;                                       \
      if (*info == 0 && !work) return free(ipiv), oom("inverse");                                                     \
      if (work) P##getri_(&n, pa, &lda, ipiv, work, &lwork, info);                                                    \
      free(work);                                                                                                     \
    }                                                                                                                 \
    free(ipiv);                                                                                                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status potrf_##N(mt_tensor *a, char uplo, int *info) {                                                    \
    int n = rows(a), lda = ld(a);                                                                                     \
    P##potrf_(&uplo, &n, (T *)mt__data(a), &lda, info, 1);                                                            \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status potrs_##N(const mt_tensor *a, mt_tensor *b, char uplo, int *info) {                                \
    int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);                                                        \
    P##potrs_(&uplo, &n, &nrhs, (const T *)mt__data(a), &lda, (T *)mt__data(b), &ldb, info, 1);                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status potri_##N(mt_tensor *a, char uplo, int *info) {                                                    \
    int n = rows(a), lda = ld(a);                                                                                     \
    P##potri_(&uplo, &n, (T *)mt__data(a), &lda, info, 1);                                                            \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status pstrf_##N(mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank, int *info) {             \
    int n = rows(a), lda = ld(a);                                                                                     \
    T t = (T)tol, *work = malloc(sizeof(T) * 2 * (size_t)n);                                                          \
    if (!work) return oom("pstrf");                                                                                   \
    P##pstrf_(&uplo, &n, (T *)mt__data(a), &lda, (int *)mt__data(piv), rank, &t, work, info, 1);                      \
    free(work);                                                                                                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status geqrf_##N(mt_tensor *a, mt_tensor *tau, int *info) {                                               \
    int m = rows(a), n = cols(a), lda = ld(a);                                                                        \
    T *pa = (T *)mt__data(a), *pt = (T *)mt__data(tau);                                                               \
    WITH_WORK("geqrf", T, P##geqrf_(&m, &n, pa, &lda, pt, work, &lwork, info));                                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status orgqr_##N(mt_tensor *a, const mt_tensor *tau, int *info) {                                         \
    int m = rows(a), n = cols(a), k = (int)tau->sizes[0], lda = ld(a);                                                \
    T *pa = (T *)mt__data(a);                                                                                         \
    const T *pt = (const T *)mt__data(tau);                                                                           \
    WITH_WORK("orgqr", T, P##orgqr_(&m, &n, &k, pa, &lda, pt, work, &lwork, info));                                   \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status ormqr_##N(const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans,           \
                             int *info) {                                                                             \
    int m = rows(c), n = cols(c), k = (int)tau->sizes[0], lda = ld(a), ldc = ld(c);                                   \
    /* LAPACK writes into a's diagonal while it works and restores it: a is an input */                               \
    T *pa = (T *)mt__data(a), *pc = (T *)mt__data(c);                                                                 \
    const T *pt = (const T *)mt__data(tau);                                                                           \
    WITH_WORK("ormqr", T, P##ormqr_(&side, &trans, &m, &n, &k, pa, &lda, pt, pc, &ldc, work, &lwork, info, 1, 1));    \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status geev_##N(mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info) {                                    \
    int n = rows(a), lda = ld(a), one = 1, ldv = v ? ld(v) : 1;                                                       \
    T none = 0, *pa = (T *)mt__data(a), *wr = (T *)mt__data(w), *wi = wr + n;                                         \
    T *pv = v ? (T *)mt__data(v) : &none;                                                                             \
    const char *jobvr = v ? "V" : "N";                                                                                \
    WITH_WORK("eig", T, P##geev_("N", jobvr, &n, pa, &lda, wr, wi, &none, &one, pv, &ldv, work, &lwork, info, 1, 1)); \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status syev_##N(mt_tensor *a, mt_tensor *w, char jobz, char uplo, int *info) {                            \
    int n = rows(a), lda = ld(a);                                                                                     \
    T *pa = (T *)mt__data(a), *pw = (T *)mt__data(w);                                                                 \
    WITH_WORK("symeig", T, P##syev_(&jobz, &uplo, &n, pa, &lda, pw, work, &lwork, info, 1, 1));                       \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status gesvd_##N(mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info) {          \
    int m = rows(a), n = cols(a), lda = ld(a), ldu = ld(u), ldvt = ld(vt);                                            \
    T *pa = (T *)mt__data(a), *ps = (T *)mt__data(s), *pu = (T *)mt__data(u), *pvt = (T *)mt__data(vt);               \
    WITH_WORK("svd", T, P##gesvd_(&job, &job, &m, &n, pa, &lda, ps, pu, &ldu, pvt, &ldvt, work, &lwork, info, 1, 1)); \
    return MT_OK;                                                                                                     \
  }                                                                                                                   \
  static mt_status triangle_##N(mt_tensor *a, char uplo, int mirror) {                                                \
    T *p = (T *)mt__data(a);                                                                                          \
    int64_t r = a->sizes[0], c = a->sizes[1], s0 = a->strides[0], s1 = a->strides[1];                                 \
    for (int64_t i = 0; i < r; i++)                                                                                   \
      for (int64_t j = 0; j < c; j++) {                                                                               \
        int other = uplo == 'U' ? i > j : i < j; /* (i, j) lies in the triangle not kept */                           \
        if (!other) continue;                                                                                         \
        p[i * s0 + j * s1] = mirror && j < r && i < c ? p[j * s0 + i * s1] : 0;                                       \
      }                                                                                                               \
    return MT_OK;                                                                                                     \
  }
LAPACK_TYPES(BODIES)
#undef BODIES

/* the slot for a's dtype (the core admits float32 and float64 only) */
#define CALL(op, t, ...)                                                                                         \
  switch ((t)->dtype) {                                                                                          \
    case MT_F32: return op##_f32(__VA_ARGS__);                                                                   \
    case MT_F64: return op##_f64(__VA_ARGS__);                                                                   \
    default: return mt__error(MT_ERR_DTYPE, #op ": float32 or float64 only, got %s", mt_dtype_name((t)->dtype)); \
  }

mt_status mt__cpu_lapack_gesv(mt_tensor *a, mt_tensor *b, int *info){CALL(gesv, a, a, b, info)} mt_status
    mt__cpu_lapack_trtrs(const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag,
                         int *info){CALL(trtrs, a, a, b, uplo, trans, diag, info)} mt_status
    mt__cpu_lapack_gels(mt_tensor *a, mt_tensor *b, int *info){CALL(gels, a, a, b, info)} mt_status
    mt__cpu_lapack_getri(mt_tensor *a, int *info){CALL(getri, a, a, info)} mt_status
    mt__cpu_lapack_potrf(mt_tensor *a, char uplo, int *info){CALL(potrf, a, a, uplo, info)} mt_status
    mt__cpu_lapack_potrs(const mt_tensor *a, mt_tensor *b, char uplo,
                         int *info){CALL(potrs, a, a, b, uplo, info)} mt_status
    mt__cpu_lapack_potri(mt_tensor *a, char uplo, int *info){CALL(potri, a, a, uplo, info)} mt_status
    mt__cpu_lapack_pstrf(mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank,
                         int *info){CALL(pstrf, a, a, piv, uplo, tol, rank, info)} mt_status
    mt__cpu_lapack_geqrf(mt_tensor *a, mt_tensor *tau, int *info){CALL(geqrf, a, a, tau, info)} mt_status
    mt__cpu_lapack_orgqr(mt_tensor *a, const mt_tensor *tau, int *info){CALL(orgqr, a, a, tau, info)} mt_status
    mt__cpu_lapack_ormqr(const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans,
                         int *info){CALL(ormqr, a, a, tau, c, side, trans, info)} mt_status
    mt__cpu_lapack_geev(mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info){CALL(geev, a, a, w, v, info)} mt_status
    mt__cpu_lapack_syev(mt_tensor *a, mt_tensor *w, char jobz, char uplo,
                        int *info){CALL(syev, a, a, w, jobz, uplo, info)} mt_status
    mt__cpu_lapack_gesvd(mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info){
        CALL(gesvd, a, a, s, u, vt, job, info)} mt_status mt__cpu_lapack_triangle(mt_tensor *a, char uplo, int mirror) {
  CALL(triangle, a, a, uplo, mirror)
}
