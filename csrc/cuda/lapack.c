/* lapack.c: the CUDA backend's LAPACK slots. LAPACK runs on the CPU only for now (cuSOLVER
 * is not wired in); every slot says so and how to get there, instead of failing at link time
 * or copying behind the caller's back. */
#include "cuda_common.h"

static mt_status cpu_only(const char *fn) {
  return mt__error(MT_ERR_UNSUPPORTED, "%s: CPU only for now; use :float()/:double() on a CPU tensor", fn);
}

mt_status mt__cuda_lapack_gesv(mt_tensor *a, mt_tensor *b, int *info) { return cpu_only("gesv"); }
mt_status mt__cuda_lapack_trtrs(const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag, int *info) {
  return cpu_only("trtrs");
}
mt_status mt__cuda_lapack_gels(mt_tensor *a, mt_tensor *b, int *info) { return cpu_only("gels"); }
mt_status mt__cuda_lapack_getri(mt_tensor *a, int *info) { return cpu_only("inverse"); }
mt_status mt__cuda_lapack_potrf(mt_tensor *a, char uplo, int *info) { return cpu_only("potrf"); }
mt_status mt__cuda_lapack_potrs(const mt_tensor *a, mt_tensor *b, char uplo, int *info) { return cpu_only("potrs"); }
mt_status mt__cuda_lapack_potri(mt_tensor *a, char uplo, int *info) { return cpu_only("potri"); }
mt_status mt__cuda_lapack_pstrf(mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank, int *info) {
  return cpu_only("pstrf");
}
mt_status mt__cuda_lapack_geqrf(mt_tensor *a, mt_tensor *tau, int *info) { return cpu_only("geqrf"); }
mt_status mt__cuda_lapack_orgqr(mt_tensor *a, const mt_tensor *tau, int *info) { return cpu_only("orgqr"); }
mt_status mt__cuda_lapack_ormqr(const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans,
                                int *info) {
  return cpu_only("ormqr");
}
mt_status mt__cuda_lapack_geev(mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info) { return cpu_only("eig"); }
mt_status mt__cuda_lapack_syev(mt_tensor *a, mt_tensor *w, char jobz, char uplo, int *info) {
  return cpu_only("symeig");
}
mt_status mt__cuda_lapack_gesvd(mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info) {
  return cpu_only("svd");
}
mt_status mt__cuda_lapack_triangle(mt_tensor *a, char uplo, int mirror) { return cpu_only("lapack"); }
