/* generic/pointwise_binary.c: the loops of pointwise_binary.c's kernels for one dtype (included
 * through generate_all.h). A kernel there is one of these loops with its op's element function
 * passed in and inlined (MT_ALWAYS_INLINE), so each (op, dtype) compiles to its own plain loops. */

/* out = op(a, b) over elements [begin, end) of the iteration (out, a, b), all of this dtype,
 * in three run shapes: all contiguous (the vectorised loop), b one broadcast value (bias-like),
 * and anything strided. alpha: the op's scalar; bits: the dtype's width, for shifts. */
MT_ALWAYS_INLINE void MT_G(binary_runs)(const mt_iter *it, int64_t begin, int64_t end, acc_t alpha,
                                        acc_t (*op)(acc_t x, acc_t y, acc_t alpha, int bits)) {
  const int bits = (int)(8 * sizeof(scalar_t));
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t) && s[1] == sizeof(scalar_t) && s[2] == sizeof(scalar_t)) {
      scalar_t *out = (scalar_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1], *b = (const scalar_t *)run.p[2];
      for (int64_t i = 0; i < run.n; i++) MT_ST(out + i, op(MT_LD(a + i), MT_LD(b + i), alpha, bits));
    } else if (s[0] == sizeof(scalar_t) && s[1] == sizeof(scalar_t) && s[2] == 0) {
      scalar_t *out = (scalar_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1];
      const acc_t y = MT_LD((const scalar_t *)run.p[2]);
      for (int64_t i = 0; i < run.n; i++) MT_ST(out + i, op(MT_LD(a + i), y, alpha, bits));
    } else {
      for (int64_t i = 0; i < run.n; i++) {
        acc_t x = MT_LD((const scalar_t *)(run.p[1] + i * s[1]));
        acc_t y = MT_LD((const scalar_t *)(run.p[2] + i * s[2]));
        MT_ST((scalar_t *)(run.p[0] + i * s[0]), op(x, y, alpha, bits));
      }
    }
  }
}

/* the same for a comparison: out (u8) = op(a, b) as 0 or 1 */
MT_ALWAYS_INLINE void MT_G(compare_runs)(const mt_iter *it, int64_t begin, int64_t end, acc_t alpha,
                                         int (*op)(acc_t x, acc_t y, acc_t alpha, int bits)) {
  const int bits = (int)(8 * sizeof(scalar_t));
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(uint8_t) && s[1] == sizeof(scalar_t) && s[2] == sizeof(scalar_t)) {
      uint8_t *out = (uint8_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1], *b = (const scalar_t *)run.p[2];
      for (int64_t i = 0; i < run.n; i++) PW_ST_U8(out + i, op(MT_LD(a + i), MT_LD(b + i), alpha, bits));
    } else if (s[0] == sizeof(uint8_t) && s[1] == sizeof(scalar_t) && s[2] == 0) {
      uint8_t *out = (uint8_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1];
      const acc_t y = MT_LD((const scalar_t *)run.p[2]);
      for (int64_t i = 0; i < run.n; i++) PW_ST_U8(out + i, op(MT_LD(a + i), y, alpha, bits));
    } else {
      for (int64_t i = 0; i < run.n; i++) {
        acc_t x = MT_LD((const scalar_t *)(run.p[1] + i * s[1]));
        acc_t y = MT_LD((const scalar_t *)(run.p[2] + i * s[2]));
        PW_ST_U8((uint8_t *)(run.p[0] + i * s[0]), op(x, y, alpha, bits));
      }
    }
  }
}

/* out = op(a, b, c) (addcmul, addcdiv: a + value * b * c or a + value * b / c) over [begin, end)
 * of the iteration (out, a, b, c): all contiguous, or anything strided */
MT_ALWAYS_INLINE void MT_G(addc_runs)(const mt_iter *it, int64_t begin, int64_t end, acc_t value,
                                      acc_t (*op)(acc_t x, acc_t y, acc_t z, acc_t value)) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t) && s[1] == sizeof(scalar_t) && s[2] == sizeof(scalar_t) && s[3] == sizeof(scalar_t)) {
      scalar_t *out = (scalar_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1], *b = (const scalar_t *)run.p[2], *c = (const scalar_t *)run.p[3];
      for (int64_t i = 0; i < run.n; i++) MT_ST(out + i, op(MT_LD(a + i), MT_LD(b + i), MT_LD(c + i), value));
    } else {
      for (int64_t i = 0; i < run.n; i++) {
        acc_t x = MT_LD((const scalar_t *)(run.p[1] + i * s[1]));
        acc_t y = MT_LD((const scalar_t *)(run.p[2] + i * s[2]));
        acc_t z = MT_LD((const scalar_t *)(run.p[3] + i * s[3]));
        MT_ST((scalar_t *)(run.p[0] + i * s[0]), op(x, y, z, value));
      }
    }
  }
}

/* the zero test of integer divisors: sets *(atomic_int *)found when elements [begin, end) of
 * the iteration (t) hold a 0 */
static void MT_G(has_zero)(const mt_iter *it, int64_t begin, int64_t end, void *found) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    int hit = 0;
    for (int64_t i = 0; i < run.n; i++) hit |= *(const scalar_t *)(run.p[0] + i * s[0]) == 0;
    if (hit) atomic_store_explicit((atomic_int *)found, 1, memory_order_relaxed);
  }
}
