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
 * Every list here is a view of MT_DTYPES in moontorch.h, the one place dtypes are listed.
 */
#ifndef MT_CORE_DTYPE_H
#define MT_CORE_DTYPE_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "../moontorch.h"

/* MT_DTYPES' rows reduced to (E, N, T, CT); FL picks floating or integer rows by pasting. */
#define MT__ONLY_1(...) __VA_ARGS__
#define MT__ONLY_0(...)
#define MT__SKIP_1(...)
#define MT__SKIP_0(...) __VA_ARGS__
#define MT__DT_ALL(E, N, T, CT, NAME, TORCH, ST, FL, X, ...) X(E, N, T, CT)
#define MT__DT_FLOAT(E, N, T, CT, NAME, TORCH, ST, FL, X, ...) MT__ONLY_##FL(X(E, N, T, CT))
#define MT__DT_INT(E, N, T, CT, NAME, TORCH, ST, FL, X, ...) MT__SKIP_##FL(X(E, N, T, CT))
#define MT_DTYPE_LIST(X) MT_DTYPES(MT__DT_ALL, X, ~)
#define MT_FLOAT_DTYPE_LIST(X) MT_DTYPES(MT__DT_FLOAT, X, ~)
#define MT_INT_DTYPE_LIST(X) MT_DTYPES(MT__DT_INT, X, ~) /* integers and bool */

/* MT_DTYPE_LIST with extra arguments passed through: M(E, N, T, CT, ...) */
#define MT__DTX_ALL(E, N, T, CT, NAME, TORCH, ST, FL, M, ...) M(E, N, T, CT, __VA_ARGS__)
#define MT__DTX_FLOAT(E, N, T, CT, NAME, TORCH, ST, FL, M, ...) MT__ONLY_##FL(M(E, N, T, CT, __VA_ARGS__))
#define MT_DTYPE_LIST_X(M, ...) MT_DTYPES(MT__DTX_ALL, M, __VA_ARGS__)
#define MT_FLOAT_DTYPE_LIST_X(M, ...) MT_DTYPES(MT__DTX_FLOAT, M, __VA_ARGS__)

/* Every (destination, source) pair: M(SE, SN, ST, SCT, DE, DN, DT, DCT). A macro cannot expand
 * inside its own expansion, so the inner pass over MT_DTYPES is deferred: each row leaves
 * `MT__DTYPES_AGAIN ()(...)` behind, which MT__RESCAN turns into a fresh, independent expansion. */
#define MT__NOTHING()
#define MT__DTYPES_AGAIN() MT_DTYPES
#define MT__RESCAN(...) __VA_ARGS__
#define MT__PAIR_ROW(E, N, T, CT, NAME, TORCH, ST, FL, M, ...) \
  MT__DTYPES_AGAIN MT__NOTHING()()(MT__PAIR_CELL, M, E, N, T, CT)
#define MT__PAIR_CELL(SE, SN, ST, SCT, SNAME, STORCH, SST, SFL, M, DE, DN, DT, DCT) M(SE, SN, ST, SCT, DE, DN, DT, DCT)
#define MT_DTYPE_PAIRS(M) MT__RESCAN(MT_DTYPES(MT__PAIR_ROW, M, ~))

/* IEEE binary16 <-> float, round to nearest even; NaN and Inf preserved. Written without
 * loops and with few branches so that the compiler can vectorize loops over half tensors
 * (an earlier bit-by-bit version made float16 layers several times slower than bfloat16);
 * checked against that version on all 65536 halves and all 2^32 floats, and against F16C
 * (half_bulk.c), which also quiets signalling NaNs. */
static inline float mt_half_to_float(uint16_t h) {
  /* exponent and mantissa moved to a float's place, then the exponent bias corrected by one
   * exact multiplication by 2^112, which also normalises half subnormals */
  uint32_t bits = (uint32_t)(h & 0x7fff) << 13;
  float f;
  memcpy(&f, &bits, 4);
  f *= 0x1p112f;
  memcpy(&bits, &f, 4);
  bits |= (0u - (uint32_t)((h & 0x7c00) == 0x7c00)) & 0x7f800000u; /* inf, NaN: all-ones exponent */
  bits |= (0u - (uint32_t)((h & 0x7fff) > 0x7c00)) & 0x00400000u;  /* NaN comes out quiet, as F16C's */
  bits |= (uint32_t)(h & 0x8000) << 16;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t mt_float_to_half(float f) {
  uint32_t x, sub;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
  /* the three cases are all computed and one is selected by masks, so loops stay branch-free
   * and vectorize:
   * >= 2^16, inf, NaN (quiet, payload kept) */
  uint32_t is_nan = 0u - (uint32_t)(ax > 0x7f800000u);
  uint32_t big = 0x7c00 | (is_nan & (0x200 | ((ax >> 13) & 0x3ff)));
  /* below 2^-14 (subnormal or zero): adding 0.5 lines the float's ulp up with half's subnormal
   * ulp 2^-24, so the FPU's own rounding is round-to-nearest-even */
  float t;
  memcpy(&t, &ax, 4);
  t += 0.5f;
  memcpy(&sub, &t, 4);
  sub -= 0x3f000000u;
  /* normal: rebias the exponent (-112 << 23), add just under half an ulp plus the kept bit's
   * parity (ties to even), drop 13 bits; a carry into the exponent rounds up to the next
   * binade, or to inf from 65520 on */
  uint32_t normal = (ax + 0xc8000fffu + ((ax >> 13) & 1)) >> 13;
  uint32_t is_big = 0u - (uint32_t)(ax >= 0x47800000u), is_sub = 0u - (uint32_t)(ax < 0x38800000u);
  uint32_t o = (big & is_big) | (sub & is_sub) | (normal & ~(is_big | is_sub));
  return (uint16_t)(sign | o);
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
#define mt_ld_i32(p) ((int64_t) * (p))
#define mt_ld_i64(p) (*(p))
#define mt_ld_u8(p) ((int64_t) * (p))
#define mt_ld_b8(p) ((int64_t)(*(p) != 0))
#define mt_ld_i8(p) ((int64_t) * (p))
#define mt_ld_i16(p) ((int64_t) * (p))
#define mt_st_f32(p, v) (*(p) = (float)(v))
#define mt_st_f64(p, v) (*(p) = (double)(v))
#define mt_st_f16(p, v) (*(p) = mt_float_to_half((float)(v)))
#define mt_st_bf16(p, v) (*(p) = mt_float_to_bf16((float)(v)))
#define mt_st_i32(p, v) (*(p) = (int32_t)(v))
#define mt_st_i64(p, v) (*(p) = (int64_t)(v))
#define mt_st_u8(p, v) (*(p) = (uint8_t)(v))
#define mt_st_b8(p, v) (*(p) = (uint8_t)((v) != 0))
#define mt_st_i8(p, v) (*(p) = (int8_t)(v))
#define mt_st_i16(p, v) (*(p) = (int16_t)(v))

/* a double converted to a dtype's compute type without UB for out-of-range ints */
static inline int64_t mt_double_to_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

/* A double handed to Lua: NaNs as the plain quiet NaN. LuaJIT does not canonicalize numbers it
 * reads from C, and takes a NaN with the sign set and some payloads for a tagged GC object
 * (docs/design.md); a payload survives float widening and arithmetic, so values from files
 * or bit casts could reach Lua that way. */
static inline double mt__lua_number(double v) { return v != v ? (double)NAN : v; }

#endif
