/* pointwise.h: what the CPU pointwise kernel files share: dtype lists that carry extra macro
 * arguments, scalar conversion, and type-generic arithmetic that is exact for floats and wraps
 * (instead of overflowing, which C leaves undefined) for integers.
 *
 * Kernels are generated per (op, dtype) as chunk functions of the iterator (iter.h) and picked
 * from a table indexed by [op][dtype]: the switch happens once per call, the loops inside are
 * plain. The loops are written once per dtype in generic/pointwise*.c over the op's element
 * function, which each kernel passes in and the compiler inlines (MT_ALWAYS_INLINE). */
#ifndef MT_CPU_POINTWISE_H
#define MT_CPU_POINTWISE_H
#include <math.h>
#include <stdint.h>
#include "../core/dtype.h"
#include "iter.h"

/* the dtype lists with extra arguments passed through: M(E, N, T, CT, ...) */
#define PW_DTYPES MT_DTYPE_LIST_X
#define PW_FLOAT_DTYPES MT_FLOAT_DTYPE_LIST_X
#define PW__DTX_INT(E, N, T, CT, NAME, TORCH, ST, FL, M, ...) MT__SKIP_##FL(M(E, N, T, CT, __VA_ARGS__))
#define PW_INT_DTYPES(M, ...) MT_DTYPES(PW__DTX_INT, M, __VA_ARGS__) /* integers and bool */

/* a double parameter in compute type CT (float, double or int64_t) without UB for ints */
#define PW_SCALAR(CT, v) _Generic((CT)0, int64_t : mt_double_to_i64(v), default : (CT)(v))

/* ---- integer helpers: wrap around like two's complement ---- */
static inline int64_t pw_iadd(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
static inline int64_t pw_isub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
static inline int64_t pw_imul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
static inline int64_t pw_ineg(int64_t x) { return (int64_t)(0u - (uint64_t)x); }
/* truncating division; y == 0 is rejected before any kernel runs (gives 0 if it slips by) */
static inline int64_t pw_idiv(int64_t x, int64_t y) { return y == -1 ? pw_ineg(x) : y == 0 ? 0 : x / y; }
/* x^e by squaring; a negative e truncates toward zero as 1/x^|e| would */
static inline int64_t pw_ipow(int64_t x, int64_t e) {
  if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)x;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}

/* remainders: fmod has the dividend's sign (C's % for integers), remainder the divisor's
 * (Lua's %); a zero integer divisor is refused before any kernel runs (0 if it slips by) */
static inline int64_t pw_ifmod(int64_t x, int64_t y) { return (y == 0 || y == -1) ? 0 : x % y; }
static inline int64_t pw_irem(int64_t x, int64_t y) {
  int64_t r = pw_ifmod(x, y);
  return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}
static inline float pw_fremf(float x, float y) {
  float r = fmodf(x, y);
  return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}
static inline double pw_frem(double x, double y) {
  double r = fmod(x, y);
  return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}
/* shifts on the dtype's `bits` wide pattern, as unsigned (Torch7 shifts (unsigned real)):
 * right shifts are logical; a count outside 0..bits-1 gives 0 instead of C's undefined result */
static inline int64_t pw_shl(int64_t x, int64_t n, int bits) {
  return (n < 0 || n >= bits) ? 0 : (int64_t)((uint64_t)x << n);
}
static inline int64_t pw_shr(int64_t x, int64_t n, int bits) {
  uint64_t u = bits >= 64 ? (uint64_t)x : (uint64_t)x & ((1ull << bits) - 1);
  return (n < 0 || n >= bits) ? 0 : (int64_t)(u >> n);
}

/* ---- type-generic arithmetic on compute types ---- */
#define PW_ADD(x, y) _Generic((x), int64_t : pw_iadd((x), (y)), default : (x) + (y))
#define PW_SUB(x, y) _Generic((x), int64_t : pw_isub((x), (y)), default : (x) - (y))
#define PW_MUL(x, y) _Generic((x), int64_t : pw_imul((x), (y)), default : (x) * (y))
#define PW_DIV(x, y) _Generic((x), int64_t : pw_idiv((x), (y)), default : (x) / (y))
#define PW_NEG(x) _Generic((x), int64_t : pw_ineg(x), default : -(x))
/* Math functions are picked as function designators and then called, so no branch of the
 * _Generic ever passes a double to a float function (which -Wabsolute-value flags). */
static inline int64_t pw_iabs(int64_t x) { return x < 0 ? pw_ineg(x) : x; }
static inline int64_t pw_iident(int64_t x) { return x; }
#define PW_ABS(x) _Generic((x), int64_t : pw_iabs, float : fabsf, default : fabs)(x)
#define PW_POW(x, y) _Generic((x), int64_t : pw_ipow, float : powf, default : pow)((x), (y))
/* float-only math: fn##f for float, fn for double */
#define PW_F(fn, x) _Generic((x), float : fn##f, default : fn)(x)
#define PW_F2(fn, x, y) _Generic((x), float : fn##f, default : fn)((x), (y))
#define PW_FMOD(x, y) _Generic((x), int64_t : pw_ifmod, float : fmodf, default : fmod)((x), (y))
#define PW_REM(x, y) _Generic((x), int64_t : pw_irem, float : pw_fremf, default : pw_frem)((x), (y))
/* floor/ceil/round leave integers alone */
#define PW_ROUNDING(fn, x) _Generic((x), int64_t : pw_iident, float : fn##f, default : fn)(x)
/* comparisons against a double scalar v: floats compare with r, the scalar rounded to their
 * storage type (as Torch7 does, so t:fill(0.1):eq(0.1) holds for every float dtype); integers
 * compare exactly in double (so x < 2.5 is right for x = 2) */
#define PW_CMP_SCALAR(x, v, r) _Generic((x), int64_t : (v), default : (r))
#define PW_CMP_VALUE(x) _Generic((x), int64_t : (double)(x), default : (x))

/* NaN-propagating max/min (x != x is false for integers and folds away) */
#define PW_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define PW_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* A value of any arithmetic type converted to a destination dtype's compute type: integers
 * saturate instead of invoking UB on NaN/out-of-range floats, bool is "nonzero". */
#define PW_TO_I64(x) _Generic((x), int64_t : (x), default : mt_double_to_i64((double)(x)))
#define PW_CV_f32(x) ((float)(x))
#define PW_CV_f64(x) ((double)(x))
#define PW_CV_f16(x) ((float)(x))
#define PW_CV_bf16(x) ((float)(x))
/* floats saturate to int32's range (as CUDA's conversion does); wider ints wrap like C */
static inline int64_t pw_sat_i32(double v) {
  return v != v ? 0 : v >= 2147483647.0 ? 2147483647 : v <= -2147483648.0 ? -2147483648LL : (int64_t)v;
}
#define PW_CV_i32(x) _Generic((x), int64_t : (x), default : pw_sat_i32((double)(x)))
#define PW_CV_i64(x) PW_TO_I64(x)
#define PW_CV_u8(x) PW_TO_I64(x)
#define PW_CV_b8(x) ((x) != 0)
#define PW_CV_i8(x) PW_TO_I64(x)
#define PW_CV_i16(x) PW_TO_I64(x)
/* in a generic file (generate.h): x converted to the pass's compute type by its PW_CV_<dtype> */
#define PW__CV2(n, x) PW_CV_##n(x)
#define PW__CV(n, x) PW__CV2(n, x)
#define PW_CV(x) PW__CV(MT_GEN_N, x)

/* token pasting after expansion, for names of generic passes: PW_CAT(copy_raw, RAW_BITS) */
#define PW__CAT2(a, b) a##b
#define PW_CAT(a, b) PW__CAT2(a, b)

/* a comparison's result stored as a u8 0 or 1 */
#define PW_ST_U8(p, v) (*(p) = (uint8_t)((v) ? 1 : 0))

/* ---- shared entry points between the kernel files ---- */
/* 1 when a tensor (any dtype) holds a zero: integer division checks divisors with it */
int mt__cpu_has_zero(const mt_tensor *t);

#endif
