/* vec_lanes.h: the body choice and the row reductions of vec_exp.c and vec_expf.c, one per operation
 * for both element types. Lane l of a row takes its elements l, l + LANES, ...: a vector of
 * LANES holds one of each, so the wide bodies and the plain ones give the same bits. Each body
 * is a function body over (acc, v, n): acc the LANES accumulators, v the n values. */
#ifndef MT_CPU_VEC_LANES_H
#define MT_CPU_VEC_LANES_H
#include <string.h>

/* x86-64 with GCC or clang: the AVX2 bodies exist, and MT_PICK calls them where the CPU has
 * AVX2 and FMA (checked per call: a cached flag is what __builtin_cpu_supports reads) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MT_LANES_AVX2 1
#include <immintrin.h>
static inline int mt__have_avx2_fma(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#define MT_PICK(name, ...) (mt__have_avx2_fma() ? name##_avx2(__VA_ARGS__) : name##_plain(__VA_ARGS__))
#else
#define MT_PICK(name, ...) name##_plain(__VA_ARGS__)
#endif

/* NAME(v): the bits of a FROM value read as a TO of the same size (the exps build 2^k in the
 * exponent bits) */
#define MT_BITCAST_FN(NAME, FROM, TO)                                   \
  static inline TO NAME(FROM v) {                                       \
    _Static_assert(sizeof(FROM) == sizeof(TO), #NAME ": sizes differ"); \
    TO r;                                                               \
    memcpy(&r, &v, sizeof r);                                           \
    return r;                                                           \
  }

/* acc[l] = MAXFN(acc[l], values of lane l): AT the accumulator type */
#define MT_LANE_MAX_LOOP(AT, LANES, MAXFN)                          \
  AT a[LANES];                                                      \
  int64_t j = 0;                                                    \
  memcpy(a, acc, sizeof a);                                         \
  for (; j + (LANES) <= n; j += (LANES))                            \
    for (int l = 0; l < (LANES); l++) a[l] = MAXFN(a[l], v[j + l]); \
  for (; j < n; j++) a[j % (LANES)] = MAXFN(a[j % (LANES)], v[j]);  \
  memcpy(acc, a, sizeof a);

/* acc[l] += values of lane l, in index order, in double (float values widen exactly) */
#define MT_LANE_SUM_LOOP                                     \
  double a[MT_ROW_LANES];                                    \
  int64_t j = 0;                                             \
  memcpy(a, acc, sizeof a);                                  \
  for (; j + MT_ROW_LANES <= n; j += MT_ROW_LANES)           \
    for (int l = 0; l < MT_ROW_LANES; l++) a[l] += v[j + l]; \
  for (; j < n; j++) a[j % MT_ROW_LANES] += v[j];            \
  memcpy(acc, a, sizeof a);

/* MT_LANE_MAX_LOOP with the lanes in one AVX2 register VT of LANES values (GCC turns the NaN
 * test of the plain loop into branches); SFX is the intrinsics' suffix, pd or ps */
#define MT_LANE_MAX_AVX2(VT, SFX, LANES, MAXFN)                                                          \
  VT a = _mm256_loadu_##SFX(acc);                                                                        \
  int64_t j = 0;                                                                                         \
  for (; j + (LANES) <= n; j += (LANES)) {                                                               \
    VT x = _mm256_loadu_##SFX(v + j);                                                                    \
    VT take = _mm256_or_##SFX(_mm256_cmp_##SFX(x, a, _CMP_GT_OQ), _mm256_cmp_##SFX(x, x, _CMP_UNORD_Q)); \
    a = _mm256_blendv_##SFX(a, x, take);                                                                 \
  }                                                                                                      \
  _mm256_storeu_##SFX(acc, a);                                                                           \
  for (; j < n; j++) acc[j % (LANES)] = MAXFN(acc[j % (LANES)], v[j]);

#endif
