/* generic/blas_int.c: gemm and gemv for one integer dtype (bool has neither), in wrapping 64-bit
 * arithmetic: unsigned, so an overflow is no undefined behaviour (included by blas.c once per
 * dtype; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* c = alpha * a b + beta * c by an i-k-j loop: each thread accumulates its rows of c one at a
 * time in a row of m sums. a (n, k), b (k, m), c (n, m) */
static mt_status MT_G(gemm_one)(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c,
                                scratch *temps) {
  (void)temps;
  uint64_t int_alpha = (uint64_t)mt_double_to_i64(alpha), int_beta = (uint64_t)mt_double_to_i64(beta);
  int failed = 0;
#pragma omp parallel if (n * m * k > MT_PARALLEL_GRAIN && n > 1)
  {
    uint64_t *acc = malloc((size_t)m * sizeof *acc);
    if (!acc) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i++) {
      if (!acc) continue;
      memset(acc, 0, (size_t)m * sizeof *acc);
      const scalar_t *a_row = (const scalar_t *)a.p + i * a.s0;
      for (int64_t p = 0; p < k; p++) {
        uint64_t a_value = (uint64_t)MT_LD(a_row + p * a.s1);
        if (a_value == 0) continue;
        const scalar_t *b_row = (const scalar_t *)b.p + p * b.s0;
        if (b.s1 == 1)
          for (int64_t j = 0; j < m; j++) acc[j] += a_value * (uint64_t)MT_LD(b_row + j);
        else
          for (int64_t j = 0; j < m; j++) acc[j] += a_value * (uint64_t)MT_LD(b_row + j * b.s1);
      }
      scalar_t *c_row = (scalar_t *)c.p + i * c.s0;
      for (int64_t j = 0; j < m; j++) {
        uint64_t prev = int_beta ? int_beta * (uint64_t)MT_LD(c_row + j * c.s1) : 0;
        MT_ST(c_row + j * c.s1, (int64_t)(prev + int_alpha * acc[j]));
      }
    }
    free(acc);
  }
  return failed ? mt__error(MT_ERR_MEMORY, "gemm: out of host memory for an accumulator row") : MT_OK;
}

/* y = alpha * mm v + beta * y, one dot product per row of mm. mm (n, k), v (k), y (n) */
static mt_status MT_G(gemv)(double beta, double alpha, mat mm, mat v, mat y) {
  uint64_t int_alpha = (uint64_t)mt_double_to_i64(alpha), int_beta = (uint64_t)mt_double_to_i64(beta);
  int64_t n = mm.r, k = mm.c;
#pragma omp parallel for schedule(static) if (n * k > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < n; i++) {
    const scalar_t *row = (const scalar_t *)mm.p + i * mm.s0;
    uint64_t acc = 0;
    for (int64_t j = 0; j < k; j++)
      acc += (uint64_t)MT_LD(row + j * mm.s1) * (uint64_t)MT_LD((const scalar_t *)v.p + j * v.s0);
    scalar_t *q = (scalar_t *)y.p + i * y.s0;
    uint64_t prev = int_beta ? int_beta * (uint64_t)MT_LD(q) : 0;
    MT_ST(q, (acc_t)(prev + int_alpha * acc));
  }
  return MT_OK;
}
