/* half_bulk.c: contiguous float16 <-> float32 runs (see half_bulk.h). The F16C bodies are
 * compiled for that target only and chosen per call, so the library still runs on x86-64 CPUs
 * without it; the scalar tails and fallbacks are dtype.h's branch-free conversions. */
#include "half_bulk.h"
#include "dtype.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MT_HAVE_F16C 1

__attribute__((target("avx,f16c"))) static void h2f_f16c(float *d, const uint16_t *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
  for (; i < n; i++) d[i] = mt_half_to_float(s[i]);
}

__attribute__((target("avx,f16c"))) static void f2h_f16c(uint16_t *d, const float *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) d[i] = mt_float_to_half(s[i]);
}

/* every CPU with AVX2 has F16C, and clang 14 cannot test for "f16c" by name; the answer is
 * read from the table libgcc fills at load time, so asking per call costs nothing */
static int have_f16c(void) { return __builtin_cpu_supports("avx2"); }
#endif

void mt__half_to_float_n(float *dst, const uint16_t *src, size_t n) {
#ifdef MT_HAVE_F16C
  if (n >= 8 && have_f16c()) {
    h2f_f16c(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) dst[i] = mt_half_to_float(src[i]);
}

void mt__float_to_half_n(uint16_t *dst, const float *src, size_t n) {
#ifdef MT_HAVE_F16C
  if (n >= 8 && have_f16c()) {
    f2h_f16c(dst, src, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) dst[i] = mt_float_to_half(src[i]);
}
