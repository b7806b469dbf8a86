/* generic/blas.c: blas.c's loops that every dtype has, for one dtype: a matrix scaled by beta and
 * the dot product (included by blas.c through generate_all.h; generate.h names scalar_t, acc_t,
 * MT_G, MT_LD, MT_ST). */

/* m = beta * m in acc_t (integers: beta cut to an integer first). m (r, c) */
static void MT_G(mat_scale)(const mat *m, double beta) {
  acc_t b = (acc_t)(mt_dtype_is_floating(MT_GEN_DTYPE) ? beta : (double)mt_double_to_i64(beta));
  for (int64_t i = 0; i < m->r; i++)
    for (int64_t j = 0; j < m->c; j++) {
      scalar_t *q = (scalar_t *)m->p + i * m->s0 + j * m->s1;
      MT_ST(q, b * MT_LD(q));
    }
}

/* sum of a * b over nd jointly coalesced dims (sizes, a_strides, b_strides): one row of the
 * last dim per iteration, its products summed in double (floats) or in wrapping 64-bit integers,
 * the rows' sums added in double. a and b (sizes) */
static double MT_G(dot)(const scalar_t *a, const scalar_t *b, int nd, const int64_t *sizes, const int64_t *a_strides,
                        const int64_t *b_strides) {
  int64_t rows = 1, len = sizes[nd - 1], a_step = a_strides[nd - 1], b_step = b_strides[nd - 1];
  for (int i = 0; i < nd - 1; i++) rows *= sizes[i];
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static) if (rows * len > MT_PARALLEL_GRAIN && rows > 1)
  for (int64_t r = 0; r < rows; r++) {
    int64_t a_offset = 0, b_offset = 0, rest = r;
    for (int i = nd - 2; i >= 0; i--) {
      int64_t coord = rest % sizes[i];
      rest /= sizes[i];
      a_offset += coord * a_strides[i], b_offset += coord * b_strides[i];
    }
    const scalar_t *a_row = a + a_offset, *b_row = b + b_offset;
    if (_Generic((acc_t)0, int64_t : 0, default : 1)) { /* a float dtype (acc_t float or double) */
      double acc = 0;
      for (int64_t j = 0; j < len; j++) acc += (double)MT_LD(a_row + j * a_step) * (double)MT_LD(b_row + j * b_step);
      total += acc;
    } else {
      uint64_t acc = 0;
      for (int64_t j = 0; j < len; j++)
        acc += (uint64_t)MT_LD(a_row + j * a_step) * (uint64_t)MT_LD(b_row + j * b_step);
      total += (double)(int64_t)acc;
    }
  }
  return total;
}
