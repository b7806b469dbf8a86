/* generic/lapack_solve.c: the LAPACK slots that solve linear systems or invert, for float32 or
 * float64 (included by lapack.c once per precision; generate.h names scalar_t and MT_G, lapack.c's
 * LAPACK(name, ...) the call). Matrices are column-major, as LAPACK reads them. */

/* b = a^-1 b by LU with partial pivoting; a is overwritten by its factors. a (n, n), b (n, nrhs) */
static mt_status MT_G(gesv)(mt_tensor *a, mt_tensor *b, int *info) {
  int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);
  int *ipiv = malloc(sizeof(int) * (size_t)n);
  if (!ipiv) return oom("gesv");
  LAPACK(gesv, &n, &nrhs, (scalar_t *)mt__data(a), &lda, ipiv, (scalar_t *)mt__data(b), &ldb, info);
  free(ipiv);
  return MT_OK;
}

/* b = op(a)^-1 b for triangular a. a (n, n), b (n, nrhs) */
static mt_status MT_G(trtrs)(const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag, int *info) {
  int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);
  LAPACK(trtrs, &uplo, &trans, &diag, &n, &nrhs, (const scalar_t *)mt__data(a), &lda, (scalar_t *)mt__data(b), &ldb,
         info, 1, 1, 1);
  return MT_OK;
}

/* least squares (m >= n) or minimum norm (m < n) solution of a x = b, into b's first rows.
 * a (m, n), b (max(m, n), nrhs) */
static mt_status MT_G(gels)(mt_tensor *a, mt_tensor *b, int *info) {
  int m = rows(a), n = cols(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);
  scalar_t *a_data = (scalar_t *)mt__data(a), *b_data = (scalar_t *)mt__data(b);
  WITH_WORK("gels", scalar_t, LAPACK(gels, "N", &m, &n, &nrhs, a_data, &lda, b_data, &ldb, work, &lwork, info, 1));
  return MT_OK;
}

/* a = a^-1 by LU (getrf) then getri. a (n, n) */
static mt_status MT_G(getri)(mt_tensor *a, int *info) {
  int n = rows(a), lda = ld(a);
  scalar_t *a_data = (scalar_t *)mt__data(a);
  int *ipiv = malloc(sizeof(int) * (size_t)n);
  if (!ipiv) return oom("inverse");
  LAPACK(getrf, &n, &n, a_data, &lda, ipiv, info);
  if (*info == 0) {
    scalar_t query = 0;
    int lwork = -1;
    LAPACK(getri, &n, a_data, &lda, ipiv, &query, &lwork, info);
    scalar_t *work = *info == 0 ? work_alloc((double)query, sizeof(scalar_t), &lwork) : NULL;
    if (*info == 0 && !work) return free(ipiv), oom("inverse");
    if (work) LAPACK(getri, &n, a_data, &lda, ipiv, work, &lwork, info);
    free(work);
  }
  free(ipiv);
  return MT_OK;
}

/* b = a^-1 b from a's Cholesky factor (potrf's uplo triangle). a (n, n), b (n, nrhs) */
static mt_status MT_G(potrs)(const mt_tensor *a, mt_tensor *b, char uplo, int *info) {
  int n = rows(a), nrhs = cols(b), lda = ld(a), ldb = ld(b);
  LAPACK(potrs, &uplo, &n, &nrhs, (const scalar_t *)mt__data(a), &lda, (scalar_t *)mt__data(b), &ldb, info, 1);
  return MT_OK;
}

/* the uplo triangle of a's inverse from its Cholesky factor, in place. a (n, n) */
static mt_status MT_G(potri)(mt_tensor *a, char uplo, int *info) {
  int n = rows(a), lda = ld(a);
  LAPACK(potri, &uplo, &n, (scalar_t *)mt__data(a), &lda, info, 1);
  return MT_OK;
}
