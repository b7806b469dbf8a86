/* generic/gemm_par.c: the threaded GEMM for float32 or float64 (included by gemm_par.c once per
 * precision; generate.h names scalar_t and MT_G, gemm_par.c's CBLAS the routine). */

/* c = alpha * op(a) op(b) + beta * c, row-major, c split into a grid of blocks, one per thread,
 * each a single-threaded BLAS call. op(a) (m, k), op(b) (k, n), c (m, n) */
static void MT_G(gemm_blocks)(int ta, int tb, int64_t m, int64_t n, int64_t k, scalar_t alpha, const scalar_t *a,
                              int64_t lda, const scalar_t *b, int64_t ldb, scalar_t beta, scalar_t *c, int64_t ldc,
                              int nth) {
  mt__blas_init();
  if (m <= 0 || n <= 0) return;
  if (nth < 1) nth = mt__gemm_threads(m, n, k);
  int grid_rows = 1, grid_cols = 1;
  if (nth > 1) grid(m, n, nth, &grid_rows, &grid_cols);
  if (grid_rows * grid_cols == 1) {
    CBLAS(gemm, CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
          (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    return;
  }
#pragma omp parallel for num_threads(grid_rows *grid_cols) schedule(static)
  for (int t = 0; t < grid_rows * grid_cols; t++) {
    int64_t i0, i1, j0, j1;
    part(m, grid_rows, t / grid_cols, 8, &i0, &i1);
    part(n, grid_cols, t % grid_cols, 16, &j0, &j1);
    if (i1 <= i0 || j1 <= j0) continue;
    /* row i of op(A) starts at a + i*lda (stored as is) or a + i (stored transposed) */
    const scalar_t *a_rows = a + (ta ? i0 : i0 * lda), *b_cols = b + (tb ? j0 * ldb : j0);
    CBLAS(gemm, CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)(i1 - i0),
          (blasint)(j1 - j0), (blasint)k, alpha, a_rows, (blasint)lda, b_cols, (blasint)ldb, beta, c + i0 * ldc + j0,
          (blasint)ldc);
  }
}
