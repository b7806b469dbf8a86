/* generic/pointwise_unary.c: the loops of pointwise_unary.c's kernels for one dtype (included
 * through generate_all.h). A kernel there is one of these loops with its op's element function
 * passed in and inlined (MT_ALWAYS_INLINE), so each (op, dtype) compiles to its own plain loops. */

/* an op's scalars: p1 and p2 in acc_t, p1 as given and p1 as stored in this dtype */
typedef struct {
  double p1_given;
  acc_t p1, p2, p1_stored;
} MT_G(unary_scalars);

MT_ALWAYS_INLINE MT_G(unary_scalars) MT_G(unary_scalars_of)(const double *params) {
  MT_G(unary_scalars) sc = {params[0], PW_SCALAR(acc_t, params[0]), PW_SCALAR(acc_t, params[1]), 0};
  scalar_t p1_storage;
  MT_ST(&p1_storage, sc.p1);
  sc.p1_stored = MT_LD(&p1_storage);
  return sc;
}

/* out = op(a) over elements [begin, end) of the iteration (out, a), both of this dtype: both
 * contiguous, or anything strided. params: the op's scalars p1, p2 (doubles), handed to op in
 * acc_t, and p1 also as given and as stored in this dtype. */
MT_ALWAYS_INLINE void MT_G(unary_runs)(const mt_iter *it, int64_t begin, int64_t end, const double *params,
                                       acc_t (*op)(acc_t x, acc_t p1, acc_t p2, double p1_given, acc_t p1_stored)) {
  const MT_G(unary_scalars) sc = MT_G(unary_scalars_of)(params);
  const double p1_given = sc.p1_given;
  const acc_t p1 = sc.p1, p2 = sc.p2, p1_stored = sc.p1_stored;
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t) && s[1] == sizeof(scalar_t)) {
      scalar_t *out = (scalar_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1];
      for (int64_t i = 0; i < run.n; i++) MT_ST(out + i, op(MT_LD(a + i), p1, p2, p1_given, p1_stored));
    } else {
      for (int64_t i = 0; i < run.n; i++) {
        acc_t x = MT_LD((const scalar_t *)(run.p[1] + i * s[1]));
        MT_ST((scalar_t *)(run.p[0] + i * s[0]), op(x, p1, p2, p1_given, p1_stored));
      }
    }
  }
}

/* the same for a comparison with a scalar: out (u8) = op(a) as 0 or 1 */
MT_ALWAYS_INLINE void MT_G(compare_runs)(const mt_iter *it, int64_t begin, int64_t end, const double *params,
                                         int (*op)(acc_t x, acc_t p1, acc_t p2, double p1_given, acc_t p1_stored)) {
  const MT_G(unary_scalars) sc = MT_G(unary_scalars_of)(params);
  const double p1_given = sc.p1_given;
  const acc_t p1 = sc.p1, p2 = sc.p2, p1_stored = sc.p1_stored;
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(uint8_t) && s[1] == sizeof(scalar_t)) {
      uint8_t *out = (uint8_t *)run.p[0];
      const scalar_t *a = (const scalar_t *)run.p[1];
      for (int64_t i = 0; i < run.n; i++) PW_ST_U8(out + i, op(MT_LD(a + i), p1, p2, p1_given, p1_stored));
    } else {
      for (int64_t i = 0; i < run.n; i++) {
        acc_t x = MT_LD((const scalar_t *)(run.p[1] + i * s[1]));
        PW_ST_U8((uint8_t *)(run.p[0] + i * s[0]), op(x, p1, p2, p1_given, p1_stored));
      }
    }
  }
}
