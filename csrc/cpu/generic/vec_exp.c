/* generic/vec_exp.c: exp of one double over a multiply-add MULADD(a, b, c) = a * b + c (included twice by
 * vec_exp.c: two roundings, then fused; EXP_ONE names the function, EXP_ONE_ATTR gives its attributes). */

EXP_ONE_ATTR static inline double EXP_ONE(double x) {
  /* beyond these exp is 0 or inf in double; NaN fails both tests and stays NaN */
  x = x < -746.0 ? -746.0 : x;
  x = x > 710.0 ? 710.0 : x;
  double k = MULADD(x, LOG2E, SHIFT) - SHIFT;
  double r = MULADD(-k, LN2_LO, MULADD(-k, LN2_HI, x));
  /* q = c2 + c3 r + ... + c11 r^9 by Estrin's scheme: a chain of four multiply-adds where
   * Horner's has nine (measured about 5% faster here; the loop is mostly throughput-bound) */
  double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  double a0 = MULADD(EXP_C3, r, EXP_C2), a1 = MULADD(EXP_C5, r, EXP_C4);
  double a2 = MULADD(EXP_C7, r, EXP_C6), a3 = MULADD(EXP_C9, r, EXP_C8);
  double a4 = MULADD(EXP_C11, r, EXP_C10);
  double q = MULADD(a4, r8, MULADD(MULADD(a3, r2, a2), r4, MULADD(a1, r2, a0)));
  double p = MULADD(r2, q, r) + 1.0;
  /* k in [-1077, 1025]: 2^k = 2^k1 2^k2 with both factors normal; p 2^k1 is exact (and so is
   * k * 0.5, so this sum rounds once either way) */
  double k1 = (k * 0.5 + SHIFT) - SHIFT, k2 = k - k1;
  return (p * pow2_of_shifted(k1 + SHIFT)) * pow2_of_shifted(k2 + SHIFT);
}

#undef EXP_ONE
#undef EXP_ONE_ATTR
#undef MULADD
