/* dtype.h: one generic code path per op across dtypes.
 *
 * MT_DTYPE_LIST(X) calls X(ENUM, name, T, CT) for each dtype: T is the storage type and CT
 * the compute type (f16/bf16 compute in float, integers in int64_t). Kernels are written once
 * as a macro or inline function over (T, CT) and instantiated with a switch:
 *
 *   #define ADD_CASE(E, N, T, CT) case E: add_loop_##N(...); break;
 *   switch (dtype) { MT_DTYPE_LIST(ADD_CASE) default: ... }
 *
 * Loads and stores go through mt_ld_<name>/mt_st_<name>, which convert to and from CT.
 */
#ifndef MT_CORE_DTYPE_H
#define MT_CORE_DTYPE_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "../moontorch.h"

#define MT_DTYPE_LIST(X)                \
  X(MT_F32, f32, float, float)          \
  X(MT_F64, f64, double, double)        \
  X(MT_F16, f16, uint16_t, float)       \
  X(MT_BF16, bf16, uint16_t, float)     \
  X(MT_I32, i32, int32_t, int64_t)      \
  X(MT_I64, i64, int64_t, int64_t)      \
  X(MT_U8, u8, uint8_t, int64_t)        \
  X(MT_BOOL, bool, uint8_t, int64_t)

#define MT_FLOAT_DTYPE_LIST(X)          \
  X(MT_F32, f32, float, float)          \
  X(MT_F64, f64, double, double)        \
  X(MT_F16, f16, uint16_t, float)       \
  X(MT_BF16, bf16, uint16_t, float)

/* IEEE binary16 <-> float, round to nearest even; NaN and Inf preserved. */
static inline float mt_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) bits = sign;
  else { /* subnormal: normalise */
    int e = -1;
    do { man <<= 1; e++; } while (!(man & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t mt_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: overflow */
  if (ax < 0x38800000u) { /* result is subnormal or zero */
    if (ax < 0x33000000u) return (uint16_t)sign;
    uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((ax >> 13) - (112u << 10));
  uint32_t rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return (uint16_t)(sign | r);
}

static inline float mt_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t mt_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

/* loads/stores converting between storage type and compute type */
#define mt_ld_f32(p) (*(p))
#define mt_ld_f64(p) (*(p))
#define mt_ld_f16(p) mt_half_to_float(*(p))
#define mt_ld_bf16(p) mt_bf16_to_float(*(p))
#define mt_ld_i32(p) ((int64_t)*(p))
#define mt_ld_i64(p) (*(p))
#define mt_ld_u8(p) ((int64_t)*(p))
#define mt_ld_bool(p) ((int64_t)(*(p) != 0))
#define mt_st_f32(p, v) (*(p) = (float)(v))
#define mt_st_f64(p, v) (*(p) = (double)(v))
#define mt_st_f16(p, v) (*(p) = mt_float_to_half((float)(v)))
#define mt_st_bf16(p, v) (*(p) = mt_float_to_bf16((float)(v)))
#define mt_st_i32(p, v) (*(p) = (int32_t)(v))
#define mt_st_i64(p, v) (*(p) = (int64_t)(v))
#define mt_st_u8(p, v) (*(p) = (uint8_t)(v))
#define mt_st_bool(p, v) (*(p) = (uint8_t)((v) != 0))

/* a double converted to a dtype's compute type without UB for out-of-range ints */
static inline int64_t mt_double_to_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

#endif
