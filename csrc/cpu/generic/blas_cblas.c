/* generic/blas_cblas.c: gemm and gemv for float32 or float64 through BLAS (included by blas.c once
 * per precision; generate.h names scalar_t and MT_G, blas.c's PAR_GEMM and CBLAS the routines). */

/* x as BLAS reads it (*trans, *ld): in place where blas_layout allows, else packed row-major
 * into scratch slot (then *packed is that copy, NULL otherwise); 0 when out of memory */
static int MT_G(blas_operand)(mat *x, int *trans, int64_t *ld, scratch *temps, int slot, scalar_t **packed) {
  *packed = NULL;
  if (blas_layout(x, trans, ld)) return 1;
  scalar_t *buf = scratch_get(temps, slot, (size_t)(x->r * x->c) * sizeof(scalar_t));
  if (!buf) return 0;
  MT_G(pack)(x, buf);
  *x = (mat){(char *)buf, x->r, x->c, x->c, 1};
  *trans = 0, *ld = x->c > 1 ? x->c : 1;
  *packed = buf;
  return 1;
}

/* c = alpha * a b + beta * c through gemm_par.c's threaded GEMM, operands BLAS cannot read in
 * place packed into temps. a (n, k), b (k, m), c (n, m) */
static mt_status MT_G(gemm_one)(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c,
                                scratch *temps) {
  int trans_a, trans_b, trans_c;
  int64_t lda, ldb, ldc;
  mat c_orig = c;
  scalar_t *c_packed = NULL;
  if (!MT_G(blas_operand)(&c, &trans_c, &ldc, temps, 2, &c_packed)) goto oom;
  if (trans_c) { /* c is column-major: compute c^T = b^T a^T into its row-major view */
    mat t = a;
    a = b, b = t;
    mat_transpose(&a), mat_transpose(&b), mat_transpose(&c);
    int64_t x = n;
    n = m, m = x;
  }
  scalar_t *packed; /* a and b need no unpacking */
  if (!MT_G(blas_operand)(&a, &trans_a, &lda, temps, 0, &packed)) goto oom;
  if (!MT_G(blas_operand)(&b, &trans_b, &ldb, temps, 1, &packed)) goto oom;
  PAR_GEMM(trans_a, trans_b, n, m, k, (scalar_t)alpha, (const scalar_t *)a.p, lda, (const scalar_t *)b.p, ldb,
           (scalar_t)beta, (scalar_t *)c.p, ldc, 0);
  if (c_packed) MT_G(unpack)(&c_orig, c_packed);
  return MT_OK;
oom:
  return mt__error(MT_ERR_MEMORY, "gemm: out of host memory for a %lldx%lld temporary", (long long)n,
                   (long long)(k > m ? k : m));
}

/* y = alpha * mm v + beta * y through BLAS's gemv, rows of y split over the threads (memory-bound,
 * so only for a large matrix); operands BLAS cannot read packed. mm (n, k), v (k), y (n) */
static mt_status MT_G(gemv)(double beta, double alpha, mat mm, mat v, mat y) {
  int trans;
  int64_t ld, n = mm.r, k = mm.c;
  scalar_t *mm_packed = NULL, *v_packed = NULL, *y_packed = NULL;
  mt_status st = MT_OK;
  if (!blas_layout(&mm, &trans, &ld)) {
    if (!(mm_packed = malloc((size_t)(n * k) * sizeof(scalar_t)))) goto oom;
    MT_G(pack)(&mm, mm_packed);
    mm = (mat){(char *)mm_packed, n, k, k, 1};
    trans = 0, ld = k > 1 ? k : 1;
  }
  int64_t incx = k == 1 ? 1 : v.s0, incy = n == 1 ? 1 : y.s0;
  if (incx < 1 || incx > INT_MAX) {
    if (!(v_packed = malloc((size_t)k * sizeof(scalar_t)))) goto oom;
    MT_G(pack)(&v, v_packed);
    v.p = (char *)v_packed, incx = 1;
  }
  if (incy < 1 || incy > INT_MAX) {
    if (!(y_packed = malloc((size_t)n * sizeof(scalar_t)))) goto oom;
    MT_G(pack)(&y, y_packed);
  }
  /* row-major: a stored transpose is a (k x n) matrix read with Trans */
  scalar_t *y_data = y_packed ? y_packed : (scalar_t *)y.p;
  int64_t y_step = y_packed ? 1 : incy;
  int nth = n * k > 4 * MT_PARALLEL_GRAIN && n >= 64 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
  for (int t = 0; t < nth; t++) {
    int64_t i0 = n * t / nth, i1 = n * (t + 1) / nth;
    const scalar_t *rows = (const scalar_t *)mm.p + (trans ? i0 : i0 * ld);
    if (i1 > i0)
      CBLAS(gemv, CblasRowMajor, trans ? CblasTrans : CblasNoTrans, (blasint)(trans ? k : i1 - i0),
            (blasint)(trans ? i1 - i0 : k), (scalar_t)alpha, rows, (blasint)ld, (const scalar_t *)v.p, (blasint)incx,
            (scalar_t)beta, y_data + i0 * y_step, (blasint)y_step);
  }
  if (y_packed) MT_G(unpack)(&y, y_packed);
  goto done;
oom:
  st = mt__error(MT_ERR_MEMORY, "gemv: out of host memory for a temporary");
done:
  free(mm_packed), free(v_packed), free(y_packed);
  return st;
}
