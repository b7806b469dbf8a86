/* generic/blas_half.c: gemm and gemv for float16 or bfloat16, which BLAS lacks (included by blas.c
 * once per half dtype; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* c = alpha * a b + beta * c: all three operands widened to float temporaries, sgemm, the
 * result narrowed back. a (n, k), b (k, m), c (n, m) */
static mt_status MT_G(gemm_one)(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c,
                                scratch *temps) {
  float *a_float = scratch_get(temps, 0, (size_t)(n * k) * 4), *b_float = scratch_get(temps, 1, (size_t)(k * m) * 4);
  float *c_float = scratch_get(temps, 2, (size_t)(n * m) * 4);
  if (!a_float || !b_float || !c_float)
    return mt__error(MT_ERR_MEMORY, "gemm: out of host memory for float temporaries");
  MT_G(pack)(&a, a_float), MT_G(pack)(&b, b_float);
  MT_G(pack)(&c, c_float); /* already cleared when beta == 0 */
  mt__sgemm(0, 0, n, m, k, (float)alpha, a_float, k > 1 ? k : 1, b_float, m > 1 ? m : 1, (float)beta, c_float,
            m > 1 ? m : 1, 0);
  MT_G(unpack)(&c, c_float);
  return MT_OK;
}

/* y = alpha * mm v + beta * y, one dot product per row of mm accumulated in double.
 * mm (n, k), v (k), y (n) */
static mt_status MT_G(gemv)(double beta, double alpha, mat mm, mat v, mat y) {
  int64_t n = mm.r, k = mm.c;
#pragma omp parallel for schedule(static) if (n * k > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < n; i++) {
    const scalar_t *row = (const scalar_t *)mm.p + i * mm.s0;
    double acc = 0;
    for (int64_t j = 0; j < k; j++)
      acc += (double)MT_LD(row + j * mm.s1) * (double)MT_LD((const scalar_t *)v.p + j * v.s0);
    scalar_t *q = (scalar_t *)y.p + i * y.s0;
    double prev = beta ? beta * (double)MT_LD(q) : 0;
    MT_ST(q, (acc_t)(prev + alpha * acc));
  }
  return MT_OK;
}
