/* random.c: CPU uniform, normal and Bernoulli draws. Element i of a contiguous t takes Philox
 * counter offset + i (core/philox.h), the same numbers the CUDA backend draws for a seed, and
 * independent of the thread count. The loops are in generic/random*.c, per dtype. */
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

#define MT_GENERIC_FILE "generic/random_float.c"
#include "generate_float.h"
#define MT_GENERIC_FILE "generic/random.c"
#include "generate_all.h"

/* the integer dtypes' uniform draws */
#define MT_GENERIC_FILE "generic/random_int.c"
#include "generate_int.h"

/* uniform on [lo, hi): floats keep the draw (stepping down if rounding reached hi), integers
 * take its floor */
#define UNIFORM_CASE(E, N, T, CT) \
  case E: uniform_##N((T *)mt__data(t), numel, seed, offset, lo, hi); break;

mt_status mt__cpu_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_DTYPE_LIST(UNIFORM_CASE)
    default: return mt__error(MT_ERR_DTYPE, "uniform: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}

#define NORMAL_CASE(E, N, T, CT) \
  case E: normal_##N((T *)mt__data(t), numel, seed, offset, mean, sd); break;

mt_status mt__cpu_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double sd) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_FLOAT_DTYPE_LIST(NORMAL_CASE)
    default:
      return mt__error(MT_ERR_DTYPE, "normal: not defined for %s tensors (floating-point dtypes only)",
                       mt_dtype_name(t->dtype));
  }
  return MT_OK;
}

#define BERNOULLI_CASE(E, N, T, CT) \
  case E: bernoulli_##N((T *)mt__data(t), numel, seed, offset, p); break;

mt_status mt__cpu_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_DTYPE_LIST(BERNOULLI_CASE)
    default: return mt__error(MT_ERR_DTYPE, "bernoulli: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}
