/* vec_exp.c: exp over runs of doubles (see vec_exp.h). x = k ln2 + r with k = round(x / ln2)
 * and |r| <= ln2 / 2; exp(r) is a degree-11 polynomial fitted on that interval (Chebyshev
 * interpolation computed in 50-digit arithmetic; fit error under 0.1 ulp), 2^k is built in the
 * exponent bits as two factors so that subnormal results round once. No tables and no
 * branches, so the loop vectorizes; the AVX2 + FMA body is compiled for that target only and
 * chosen per call, as in core/half_bulk.c. Every multiply-add is written out (MULADD): fused in
 * the AVX2 + FMA bodies, two roundings in the plain one, so on a CPU without AVX2 an exp can
 * differ in its last bit. The file is compiled with -ffp-contract=off (csrc/cpu/CMakeLists.txt):
 * the compiler fuses nothing on its own, so the generic loop and the hand-vectorized fast lane
 * agree at every optimization level (left to GCC's contraction they agreed at -O2 and -O3 only,
 * and the -O1 sanitizer build caught the difference). */
#include "vec_exp.h"
#include "vec_lanes.h"
#include <string.h>

#define LOG2E 0x1.71547652b82fep+0
/* ln2 split so that k * LN2_HI is exact for |k| < 2^11 */
#define LN2_HI 0x1.62e42fefa3800p-1
#define LN2_LO 0x1.ef35793c76730p-45
/* adding 1.5 * 2^52 rounds a double of magnitude under 2^51 to an integer, held in the low bits */
#define SHIFT 0x1.8p52

MT_BITCAST_FN(bits_of, double, uint64_t)
MT_BITCAST_FN(double_of, uint64_t, double)

/* 2^k for an integer-valued k in [-1022, 1023], from its shifted form k + SHIFT */
static inline double pow2_of_shifted(double ks) { return double_of((bits_of(ks) - bits_of(SHIFT) + 1023) << 52); }

/* the polynomial's coefficients: exp(r) = 1 + r + r^2 (C2 + C3 r + ... + C11 r^9) */
#define EXP_C2 0x1.0000000000011p-1
#define EXP_C3 0x1.555555555555bp-3
#define EXP_C4 0x1.555555554ef30p-5
#define EXP_C5 0x1.111111110f1a5p-7
#define EXP_C6 0x1.6c16c188520d2p-10
#define EXP_C7 0x1.a01a01b1787c9p-13
#define EXP_C8 0x1.a01990c65f90cp-16
#define EXP_C9 0x1.71ddf4e706bc4p-19
#define EXP_C10 0x1.28b4d9fb226a0p-22
#define EXP_C11 0x1.af64226efc778p-26

/* exp(x), written once in generic/vec_exp.c: exp_one_plain with MULADD(a, b, c) = a * b + c,
 * two roundings (the file is compiled with -ffp-contract=off) */
#define EXP_ONE exp_one_plain
#define EXP_ONE_ATTR
#define MULADD(a, b, c) ((a) * (b) + (c))
#include "generic/vec_exp.c"

#ifdef MT_LANES_AVX2
/* exp_one_fma: the same with each multiply-add fused, for the AVX2 + FMA bodies */
#define EXP_ONE exp_one_fma
#define EXP_ONE_ATTR __attribute__((target("avx2,fma")))
#define MULADD(a, b, c) __builtin_fma(a, b, c)
#include "generic/vec_exp.c"

__attribute__((target("avx2,fma"))) static void exp_avx2_generic(double *v, int64_t n, double shift) {
  for (int64_t j = 0; j < n; j++) v[j] = exp_one_fma(v[j] - shift);
}
/* exp_one_fma's operations for vectors of four whose results are all normal (x in [-708, 709]):
 * no clamps, and 2^k as one factor (with a normal result p 2^k1 2^k2 == p 2^k exactly). A vector with any other
 * lane (a far tail, inf, NaN) and the last n % 4 go through exp_avx2_generic. The two must give
 * a value the same bits (else an exp would depend on its neighbours): spec/nn/transfer_spec.lua
 * checks that on random values, and fails on a one-ulp difference. */
__attribute__((target("avx2,fma"))) static void exp_avx2(double *v, int64_t n, double shift) {
  const __m256d sh = _mm256_set1_pd(shift), lo = _mm256_set1_pd(-708.0), hi = _mm256_set1_pd(709.0);
  const __m256d log2e = _mm256_set1_pd(LOG2E), big = _mm256_set1_pd(SHIFT);
  const __m256d ln2hi = _mm256_set1_pd(LN2_HI), ln2lo = _mm256_set1_pd(LN2_LO), one = _mm256_set1_pd(1.0);
  const __m256i bias = _mm256_set1_epi64x(1023 - (long long)bits_of(SHIFT));
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m256d x = _mm256_sub_pd(_mm256_loadu_pd(v + j), sh);
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(x, lo, _CMP_GE_OQ), _mm256_cmp_pd(x, hi, _CMP_LE_OQ));
    if (_mm256_movemask_pd(ok) != 0xF) {
      exp_avx2_generic(v + j, 4, shift);
      continue;
    }
    __m256d ks = _mm256_fmadd_pd(x, log2e, big), k = _mm256_sub_pd(ks, big);
    __m256d r = _mm256_fnmadd_pd(k, ln2lo, _mm256_fnmadd_pd(k, ln2hi, x));
    __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2), r8 = _mm256_mul_pd(r4, r4);
#define EXP_PAIR(lo, hi) _mm256_fmadd_pd(_mm256_set1_pd(hi), r, _mm256_set1_pd(lo))
    __m256d a0 = EXP_PAIR(EXP_C2, EXP_C3), a1 = EXP_PAIR(EXP_C4, EXP_C5), a2 = EXP_PAIR(EXP_C6, EXP_C7);
    __m256d a3 = EXP_PAIR(EXP_C8, EXP_C9), a4 = EXP_PAIR(EXP_C10, EXP_C11);
#undef EXP_PAIR
    __m256d q = _mm256_fmadd_pd(a4, r8, _mm256_fmadd_pd(_mm256_fmadd_pd(a3, r2, a2), r4, _mm256_fmadd_pd(a1, r2, a0)));
    __m256d p = _mm256_add_pd(_mm256_fmadd_pd(r2, q, r), one);
    __m256i e = _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(ks), bias), 52);
    _mm256_storeu_pd(v + j, _mm256_mul_pd(p, _mm256_castsi256_pd(e)));
  }
  if (j < n) exp_avx2_generic(v + j, n - j, shift);
}
_Static_assert(MT_ROW_LANES == 4, "max_avx2 holds the lanes in one register of four doubles");
__attribute__((target("avx2"))) static void max_avx2(double *acc, const double *v, int64_t n) {
  MT_LANE_MAX_AVX2(__m256d, pd, MT_ROW_LANES, mt__max_nan)
}
__attribute__((target("avx2"))) static void sum_avx2(double *acc, const double *v, int64_t n) { MT_LANE_SUM_LOOP }
#endif

static void exp_plain(double *v, int64_t n, double shift) {
  for (int64_t j = 0; j < n; j++) v[j] = exp_one_plain(v[j] - shift);
}
static void max_plain(double *acc, const double *v, int64_t n) { MT_LANE_MAX_LOOP(double, MT_ROW_LANES, mt__max_nan) }
static void sum_plain(double *acc, const double *v, int64_t n) { MT_LANE_SUM_LOOP }

void mt__exp_shifted(double *v, int64_t n, double shift) { MT_PICK(exp, v, n, shift); }
void mt__row_max_add(double m[MT_ROW_LANES], const double *v, int64_t n) { MT_PICK(max, m, v, n); }
void mt__row_sum_add(double s[MT_ROW_LANES], const double *v, int64_t n) { MT_PICK(sum, s, v, n); }
