/* random.c: CPU uniform, normal and Bernoulli draws. Element i of a contiguous t takes Philox
 * counter offset + i (core/philox.h), the same numbers the CUDA backend draws for a seed, and
 * independent of the thread count. */
#include "../core/philox.h"
#include "pointwise.h"

/* Philox costs ~10x a plain elementwise op per element: parallelise earlier */
#define RANDOM_GRAIN (MT_PARALLEL_GRAIN / 16)

/* The largest value of a dtype strictly below the stored *o (used when rounding a draw to
 * the dtype lands on the excluded upper bound). */
static inline void below_f32(float *o) { *o = nextafterf(*o, -INFINITY); }
static inline void below_f64(double *o) { *o = nextafter(*o, -INFINITY); }
static inline void below_half_bits(uint16_t *o) { /* f16 and bf16: sign-magnitude bit patterns */
  uint16_t h = *o;
  if ((h & 0x7fff) == 0) *o = 0x8001;
  else if (h & 0x8000) *o = (uint16_t)(h + 1);
  else *o = (uint16_t)(h - 1);
}
#define below_f16 below_half_bits
#define below_bf16 below_half_bits

/* uniform on [lo, hi): floats keep the draw (stepping down if rounding reached hi), integers
 * take its floor */
#define UNIFORM_FLOAT_CASE(E, N, T, CT, ...)                                                   \
  case E: {                                                                                    \
    T *o = (T *)mt__data(t);                                                                   \
    _Pragma("omp parallel for if(numel > RANDOM_GRAIN)") for (int64_t i = 0; i < numel; i++) { \
      double v = lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i);               \
      mt_st_##N(o + i, v);                                                                     \
      if ((double)mt_ld_##N(o + i) >= hi && hi > lo) below_##N(o + i);                         \
    }                                                                                          \
    break;                                                                                     \
  }
#define UNIFORM_INT_CASE(E, N, T, CT)                                                          \
  case E: {                                                                                    \
    T *o = (T *)mt__data(t);                                                                   \
    _Pragma("omp parallel for if(numel > RANDOM_GRAIN)") for (int64_t i = 0; i < numel; i++) { \
      double f = floor(lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i));        \
      if (f >= hi && hi > lo) f = hi - 1;                                                      \
      mt_st_##N(o + i, PW_CV_##N(f));                                                          \
    }                                                                                          \
    break;                                                                                     \
  }

mt_status mt__cpu_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    PW_FLOAT_DTYPES(UNIFORM_FLOAT_CASE, )
    MT_INT_DTYPE_LIST(UNIFORM_INT_CASE)
    default: return mt__error(MT_ERR_DTYPE, "uniform: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}

#define NORMAL_CASE(E, N, T, CT, ...)                                                        \
  case E: {                                                                                  \
    T *o = (T *)mt__data(t);                                                                 \
    _Pragma("omp parallel for if(numel > RANDOM_GRAIN)") for (int64_t i = 0; i < numel; i++) \
        mt_st_##N(o + i, mean + sd * mt_philox_normal(seed, offset + (uint64_t)i));          \
    break;                                                                                   \
  }

mt_status mt__cpu_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double sd) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    PW_FLOAT_DTYPES(NORMAL_CASE, )
    default:
      return mt__error(MT_ERR_DTYPE, "normal: not defined for %s tensors (floating-point dtypes only)",
                       mt_dtype_name(t->dtype));
  }
  return MT_OK;
}

#define BERNOULLI_CASE(E, N, T, CT)                                                                 \
  case E: {                                                                                         \
    T *o = (T *)mt__data(t);                                                                        \
    T one, zero;                                                                                    \
    mt_st_##N(&one, PW_CV_##N(1));                                                                  \
    mt_st_##N(&zero, PW_CV_##N(0));                                                                 \
    _Pragma("omp parallel for if(numel > RANDOM_GRAIN)") for (int64_t i = 0; i < numel; i++) o[i] = \
        mt_philox_uniform(seed, offset + (uint64_t)i) < p ? one : zero;                             \
    break;                                                                                          \
  }

mt_status mt__cpu_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_DTYPE_LIST(BERNOULLI_CASE)
    default: return mt__error(MT_ERR_DTYPE, "bernoulli: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}
