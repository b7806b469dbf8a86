/* lapack.c: the CPU bodies of the LAPACK slots: OpenBLAS's Fortran LAPACK (lapack_fortran.h).
 *
 * csrc/core/ops_lapack.c has checked everything LAPACK checks (sizes, leading dimensions,
 * option characters), so LAPACK's xerbla, which prints, is never reached. Each routine has
 * one body, written once for both precisions in generic/lapack_*.c (the s and d routines differ
 * only in prefix and real type: LAPACK(name, ...) calls one); workspaces are sized by LAPACK's own
 * query (lwork = -1). */
#include <stdlib.h>
#include "cpu.h"
#include "lapack_fortran.h"
#include "../core/error.h"
#include "generate.h"

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
#define WITH_WORK(op, T, call)                                                   \
  do {                                                                           \
    T query_ = 0, *work = &query_;                                               \
    int lwork = -1;                                                              \
    call;                                                                        \
    if (*info != 0) return MT_OK;                                                \
    if (!(work = work_alloc((double)query_, sizeof(T), &lwork))) return oom(op); \
    call;                                                                        \
    free(work);                                                                  \
  } while (0)

/* a call of LAPACK's routine `name` for scalar_t: sname_ for float, dname_ for double */
#define LAPACK(name, ...) _Generic((scalar_t)0, float : s##name##_, double : d##name##_)(__VA_ARGS__)

/* each generic file once per precision (the core admits float32 and float64 only) */
#define MT_GENERIC_FILE "generic/lapack_solve.c"
#include "generate_blas.h"
#define MT_GENERIC_FILE "generic/lapack_factor.c"
#include "generate_blas.h"
#define MT_GENERIC_FILE "generic/lapack_eigen.c"
#include "generate_blas.h"

static mt_status not_float(const char *op, const mt_tensor *t) {
  return mt__error(MT_ERR_DTYPE, "%s: float32 or float64 only, got %s", op, mt_dtype_name(t->dtype));
}

/* the body of op for t's dtype */
#define CALL(op, t, ...) \
  ((t)->dtype == MT_F32 ? op##_f32(__VA_ARGS__) : (t)->dtype == MT_F64 ? op##_f64(__VA_ARGS__) : not_float(#op, t))

mt_status mt__cpu_lapack_gesv(mt_tensor *a, mt_tensor *b, int *info) { return CALL(gesv, a, a, b, info); }
mt_status mt__cpu_lapack_trtrs(const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag, int *info) {
  return CALL(trtrs, a, a, b, uplo, trans, diag, info);
}
mt_status mt__cpu_lapack_gels(mt_tensor *a, mt_tensor *b, int *info) { return CALL(gels, a, a, b, info); }
mt_status mt__cpu_lapack_getri(mt_tensor *a, int *info) { return CALL(getri, a, a, info); }
mt_status mt__cpu_lapack_potrf(mt_tensor *a, char uplo, int *info) { return CALL(potrf, a, a, uplo, info); }
mt_status mt__cpu_lapack_potrs(const mt_tensor *a, mt_tensor *b, char uplo, int *info) {
  return CALL(potrs, a, a, b, uplo, info);
}
mt_status mt__cpu_lapack_potri(mt_tensor *a, char uplo, int *info) { return CALL(potri, a, a, uplo, info); }
mt_status mt__cpu_lapack_pstrf(mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank, int *info) {
  return CALL(pstrf, a, a, piv, uplo, tol, rank, info);
}
mt_status mt__cpu_lapack_geqrf(mt_tensor *a, mt_tensor *tau, int *info) { return CALL(geqrf, a, a, tau, info); }
mt_status mt__cpu_lapack_orgqr(mt_tensor *a, const mt_tensor *tau, int *info) { return CALL(orgqr, a, a, tau, info); }
mt_status mt__cpu_lapack_ormqr(const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans,
                               int *info) {
  return CALL(ormqr, a, a, tau, c, side, trans, info);
}
mt_status mt__cpu_lapack_geev(mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info) {
  return CALL(geev, a, a, w, v, info);
}
mt_status mt__cpu_lapack_syev(mt_tensor *a, mt_tensor *w, char jobz, char uplo, int *info) {
  return CALL(syev, a, a, w, jobz, uplo, info);
}
mt_status mt__cpu_lapack_gesvd(mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info) {
  return CALL(gesvd, a, a, s, u, vt, job, info);
}
mt_status mt__cpu_lapack_triangle(mt_tensor *a, char uplo, int mirror) { return CALL(triangle, a, a, uplo, mirror); }
