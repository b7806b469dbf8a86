/* vec_expf.c: the float counterparts of vec_exp.c, for the dtypes that compute in float
 * (float32, half, bfloat16): exp over runs of floats eight to an AVX2 vector, the row max in
 * eight float lanes, and the row sum of floats in vec_exp.h's four double lanes.
 *
 * exp: x = k ln2 + r with k = round(x / ln2); r = (x - k LN2F_HI) - k LN2F_LO, the first
 * step exact under a fused multiply-add (x and k LN2F_HI lie on a grid of 2^-25 and differ by
 * under 1/2, so 24 bits hold the difference); exp(r) = 1 + r + r^2 q(r) with q of degree 4,
 * fitted by weighted least squares on Chebyshev nodes of [-ln2/2, ln2/2] (fit error 3.8e-9
 * relative, a few hundredths of a float ulp); 2^k built in the exponent bits, as two factors
 * where the result may be subnormal or overflow. Within about an ulp of the exact value.
 * Every multiply-add is written as fmaf (or _mm256_fmadd_ps), so the scalar loop, the AVX2
 * fast lane and a CPU without FMA (fmaf from libm) all give a value the same bits. */
#include "vec_exp.h"
#include "vec_lanes.h"
#include <string.h>

#define LOG2EF 0x1.715476p+0f
#define LN2F_HI 0x1.62e430p-1f
#define LN2F_LO -0x1.05c610p-29f
/* adding 1.5 * 2^23 rounds a float of magnitude under 2^22 to an integer, held in the low bits */
#define SHIFTF 0x1.8p23f
#define EXPF_C2 0x1.fffff8p-2f
#define EXPF_C3 0x1.55548ep-3f
#define EXPF_C4 0x1.555b5cp-5f
#define EXPF_C5 0x1.123bdcp-7f
#define EXPF_C6 0x1.687b46p-10f

MT_BITCAST_FN(fbits, float, uint32_t)
MT_BITCAST_FN(float_of, uint32_t, float)

/* 2^k for an integer-valued k in [-126, 127] */
static inline float pow2f_of(float k) { return float_of((uint32_t)((int32_t)k + 127) << 23); }

static inline float expf_one(float x) {
  /* beyond these expf is 0 or inf; NaN fails both tests and stays NaN */
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  float k = fmaf(x, LOG2EF, SHIFTF) - SHIFTF;
  float r = fmaf(-k, LN2F_LO, fmaf(-k, LN2F_HI, x));
  float q = fmaf(fmaf(fmaf(fmaf(EXPF_C6, r, EXPF_C5), r, EXPF_C4), r, EXPF_C3), r, EXPF_C2);
  float p = fmaf(r * r, q, r) + 1.0f;
  /* k in [-150, 128]: 2^k = 2^k1 2^k2 with both factors normal; p 2^k1 is exact */
  float k1 = fmaf(k, 0.5f, SHIFTF) - SHIFTF, k2 = k - k1;
  return (p * pow2f_of(k1)) * pow2f_of(k2);
}

#ifdef MT_LANES_AVX2
__attribute__((target("avx2,fma"))) static void expf_avx2_generic(float *v, int64_t n, float shift) {
  for (int64_t j = 0; j < n; j++) v[j] = expf_one(v[j] - shift);
}
/* expf_one for vectors of eight whose results are all normal (x in [-87, 88]): no clamps, 2^k
 * as one factor from the bits of k + SHIFTF. Other vectors and the last n % 8 go through
 * expf_avx2_generic; spec/nn/transfer_spec.lua checks that both give a value the same bits. */
__attribute__((target("avx2,fma"))) static void expf_avx2(float *v, int64_t n, float shift) {
  const __m256 sh = _mm256_set1_ps(shift), lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
  const __m256 log2e = _mm256_set1_ps(LOG2EF), big = _mm256_set1_ps(SHIFTF), one = _mm256_set1_ps(1.0f);
  const __m256 ln2hi = _mm256_set1_ps(LN2F_HI), ln2lo = _mm256_set1_ps(LN2F_LO);
  const __m256 c2 = _mm256_set1_ps(EXPF_C2), c3 = _mm256_set1_ps(EXPF_C3), c4 = _mm256_set1_ps(EXPF_C4);
  const __m256 c5 = _mm256_set1_ps(EXPF_C5), c6 = _mm256_set1_ps(EXPF_C6);
  const __m256i bias = _mm256_set1_epi32((int)(127 - fbits(SHIFTF)));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(v + j), sh);
    __m256 ok = _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), _mm256_cmp_ps(x, hi, _CMP_LE_OQ));
    if (_mm256_movemask_ps(ok) != 0xFF) {
      expf_avx2_generic(v + j, 8, shift);
      continue;
    }
    __m256 ks = _mm256_fmadd_ps(x, log2e, big), k = _mm256_sub_ps(ks, big);
    __m256 r = _mm256_fnmadd_ps(k, ln2lo, _mm256_fnmadd_ps(k, ln2hi, x));
    __m256 q = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(c6, r, c5), r, c4), r, c3), r, c2);
    __m256 p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r), one);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(ks), bias), 23);
    _mm256_storeu_ps(v + j, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
  }
  if (j < n) expf_avx2_generic(v + j, n - j, shift);
}
_Static_assert(MT_ROW_MAXF_LANES == 8, "maxf_avx2 holds the lanes in one register of eight floats");
__attribute__((target("avx2"))) static void maxf_avx2(float *acc, const float *v, int64_t n) {
  MT_LANE_MAX_AVX2(__m256, ps, MT_ROW_MAXF_LANES, mt__max_nanf)
}
_Static_assert(MT_ROW_LANES == 4, "sumf_avx2 widens four floats into one register of doubles");
/* MT_LANE_SUM_LOOP eight values at a time: the first four widened and added, then the next */
__attribute__((target("avx2"))) static void sumf_avx2(double *acc, const float *v, int64_t n) {
  __m256d a = _mm256_loadu_pd(acc);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 x = _mm256_loadu_ps(v + j);
    a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  _mm256_storeu_pd(acc, a);
  for (; j < n; j++) acc[j % MT_ROW_LANES] += (double)v[j];
}
#endif

static void expf_plain(float *v, int64_t n, float shift) {
  for (int64_t j = 0; j < n; j++) v[j] = expf_one(v[j] - shift);
}
static void maxf_plain(float *acc, const float *v, int64_t n) {
  MT_LANE_MAX_LOOP(float, MT_ROW_MAXF_LANES, mt__max_nanf)
}
static void sumf_plain(double *acc, const float *v, int64_t n) { MT_LANE_SUM_LOOP }

void mt__expf_shifted(float *v, int64_t n, float shift) { MT_PICK(expf, v, n, shift); }
void mt__row_maxf_add(float m[MT_ROW_MAXF_LANES], const float *v, int64_t n) { MT_PICK(maxf, m, v, n); }
void mt__row_sumf_add(double s[MT_ROW_LANES], const float *v, int64_t n) { MT_PICK(sumf, s, v, n); }
