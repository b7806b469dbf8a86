/* generic/lapack_eigen.c: the LAPACK slots of eigenvalues and singular values, for float32 or
 * float64 (included by lapack.c once per precision; generate.h names scalar_t and MT_G, lapack.c's
 * LAPACK(name, ...) the call). Matrices are column-major, as LAPACK reads them. */

/* eigenvalues of a general matrix, real parts in w's first n entries and imaginary parts in the
 * next n, and with v the right eigenvectors; a is destroyed. a (n, n), w (2 n), v (n, n) or NULL */
static mt_status MT_G(geev)(mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info) {
  int n = rows(a), lda = ld(a), one = 1, ldv = v ? ld(v) : 1;
  scalar_t none = 0, *a_data = (scalar_t *)mt__data(a), *wr = (scalar_t *)mt__data(w), *wi = wr + n;
  scalar_t *v_data = v ? (scalar_t *)mt__data(v) : &none;
  const char *jobvr = v ? "V" : "N";
  WITH_WORK("eig", scalar_t,
            LAPACK(geev, "N", jobvr, &n, a_data, &lda, wr, wi, &none, &one, v_data, &ldv, work, &lwork, info, 1, 1));
  return MT_OK;
}

/* eigenvalues of a symmetric matrix (its uplo triangle) into w, ascending, and with jobz 'V' the
 * eigenvectors into a. a (n, n), w (n) */
static mt_status MT_G(syev)(mt_tensor *a, mt_tensor *w, char jobz, char uplo, int *info) {
  int n = rows(a), lda = ld(a);
  scalar_t *a_data = (scalar_t *)mt__data(a), *w_data = (scalar_t *)mt__data(w);
  WITH_WORK("symeig", scalar_t, LAPACK(syev, &jobz, &uplo, &n, a_data, &lda, w_data, work, &lwork, info, 1, 1));
  return MT_OK;
}

/* a = u diag(s) vt, with the singular vectors that job asks for (LAPACK's jobu and jobvt both);
 * a is destroyed. a (m, n), s (min(m, n)), u and vt as job says */
static mt_status MT_G(gesvd)(mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info) {
  int m = rows(a), n = cols(a), lda = ld(a), ldu = ld(u), ldvt = ld(vt);
  scalar_t *a_data = (scalar_t *)mt__data(a), *s_data = (scalar_t *)mt__data(s), *u_data = (scalar_t *)mt__data(u);
  scalar_t *vt_data = (scalar_t *)mt__data(vt);
  WITH_WORK(
      "svd", scalar_t,
      LAPACK(gesvd, &job, &job, &m, &n, a_data, &lda, s_data, u_data, &ldu, vt_data, &ldvt, work, &lwork, info, 1, 1));
  return MT_OK;
}
