/* generic/lapack_factor.c: the LAPACK slots that factor a matrix (Cholesky, pivoted Cholesky, QR)
 * and the triangle cleanup of their results, for float32 or float64 (included by lapack.c once per
 * precision; generate.h names scalar_t and MT_G, lapack.c's LAPACK(name, ...) the call).
 * Matrices are column-major, as LAPACK reads them. */

/* the uplo triangle of a = its Cholesky factor. a (n, n) */
static mt_status MT_G(potrf)(mt_tensor *a, char uplo, int *info) {
  int n = rows(a), lda = ld(a);
  LAPACK(potrf, &uplo, &n, (scalar_t *)mt__data(a), &lda, info, 1);
  return MT_OK;
}

/* Cholesky with complete pivoting, stopped at tolerance tol: the factor in a's uplo triangle,
 * the permutation in piv, the rank computed in *rank. a (n, n), piv (n) int32 */
static mt_status MT_G(pstrf)(mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank, int *info) {
  int n = rows(a), lda = ld(a);
  scalar_t tolerance = (scalar_t)tol, *work = malloc(sizeof(scalar_t) * 2 * (size_t)n);
  if (!work) return oom("pstrf");
  LAPACK(pstrf, &uplo, &n, (scalar_t *)mt__data(a), &lda, (int *)mt__data(piv), rank, &tolerance, work, info, 1);
  free(work);
  return MT_OK;
}

/* QR as Householder reflectors: r in a's upper triangle, the reflectors below it and in tau.
 * a (m, n), tau (min(m, n)) */
static mt_status MT_G(geqrf)(mt_tensor *a, mt_tensor *tau, int *info) {
  int m = rows(a), n = cols(a), lda = ld(a);
  scalar_t *a_data = (scalar_t *)mt__data(a), *tau_data = (scalar_t *)mt__data(tau);
  WITH_WORK("geqrf", scalar_t, LAPACK(geqrf, &m, &n, a_data, &lda, tau_data, work, &lwork, info));
  return MT_OK;
}

/* a = q's first n columns, from geqrf's k reflectors in a and tau. a (m, n), tau (k) */
static mt_status MT_G(orgqr)(mt_tensor *a, const mt_tensor *tau, int *info) {
  int m = rows(a), n = cols(a), k = (int)tau->sizes[0], lda = ld(a);
  scalar_t *a_data = (scalar_t *)mt__data(a);
  const scalar_t *tau_data = (const scalar_t *)mt__data(tau);
  WITH_WORK("orgqr", scalar_t, LAPACK(orgqr, &m, &n, &k, a_data, &lda, tau_data, work, &lwork, info));
  return MT_OK;
}

/* c = op(q) c (side 'L') or c op(q) (side 'R'), q from geqrf's k reflectors in a and tau.
 * c (m, n), tau (k) */
static mt_status MT_G(ormqr)(const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans, int *info) {
  int m = rows(c), n = cols(c), k = (int)tau->sizes[0], lda = ld(a), ldc = ld(c);
  /* LAPACK writes into a's diagonal while it works and restores it: a is an input */
  scalar_t *a_data = (scalar_t *)mt__data(a), *c_data = (scalar_t *)mt__data(c);
  const scalar_t *tau_data = (const scalar_t *)mt__data(tau);
  WITH_WORK("ormqr", scalar_t,
            LAPACK(ormqr, &side, &trans, &m, &n, &k, a_data, &lda, tau_data, c_data, &ldc, work, &lwork, info, 1, 1));
  return MT_OK;
}

/* the triangle of a that uplo does not keep ('U': below the diagonal) set to zero, or with mirror
 * to the kept triangle's mirror image where that exists. a (r, c) strided */
static mt_status MT_G(triangle)(mt_tensor *a, char uplo, int mirror) {
  scalar_t *p = (scalar_t *)mt__data(a);
  int64_t r = a->sizes[0], c = a->sizes[1], s0 = a->strides[0], s1 = a->strides[1];
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      int other = uplo == 'U' ? i > j : i < j; /* (i, j) lies in the triangle not kept */
      if (!other) continue;
      p[i * s0 + j * s1] = mirror && j < r && i < c ? p[j * s0 + i * s1] : 0;
    }
  return MT_OK;
}
