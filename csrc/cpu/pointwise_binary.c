/* pointwise_binary.c: CPU kernels for out = a op b (same shape after broadcasting; comparisons
 * write u8) and for addcmul/addcdiv. */
#include <stdatomic.h>
#include "pointwise.h"

typedef void (*bin_fn)(const mt_iter *it, double alpha);

#define PW_ST_U8(p, v) (*(p) = (uint8_t)((v) ? 1 : 0))

/* One whole-tensor kernel. Three run shapes: all contiguous (the vectorised loop), b a single
 * broadcast value (bias-like), and anything strided. */
#define BIN_FN_GEN(N, T, CT, NAME, OT, STORE, EXPR)                             \
  static void bin_##NAME##_##N(const mt_iter *it, double alpha_) {              \
    const CT al = PW_SCALAR(CT, alpha_);                                        \
    const int bits_ = (int)(8 * sizeof(T)); /* the dtype's width, for shifts */ \
    (void)al;                                                                   \
    (void)bits_;                                                                \
    MT_ITER_RUNS(it, n, p, s, {                                                 \
      if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == sizeof(T)) {       \
        OT *o = (OT *)p[0];                                                     \
        const T *pa = (const T *)p[1], *pb = (const T *)p[2];                   \
        for (int64_t i = 0; i < n; i++) {                                       \
          CT x = mt_ld_##N(pa + i), y = mt_ld_##N(pb + i);                      \
          STORE(o + i, EXPR);                                                   \
        }                                                                       \
      } else if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == 0) {        \
        OT *o = (OT *)p[0];                                                     \
        const T *pa = (const T *)p[1];                                          \
        const CT y = mt_ld_##N((const T *)p[2]);                                \
        for (int64_t i = 0; i < n; i++) {                                       \
          CT x = mt_ld_##N(pa + i);                                             \
          STORE(o + i, EXPR);                                                   \
        }                                                                       \
      } else {                                                                  \
        for (int64_t i = 0; i < n; i++) {                                       \
          CT x = mt_ld_##N((const T *)(p[1] + i * s[1]));                       \
          CT y = mt_ld_##N((const T *)(p[2] + i * s[2]));                       \
          STORE((OT *)(p[0] + i * s[0]), EXPR);                                 \
        }                                                                       \
      }                                                                         \
    });                                                                         \
  }

/* The body of every op of MT_BINARY_OPS (moontorch.h), named BIN_<op>: x, y are the operands
 * in compute type, al is alpha in compute type. FLOAT ops exist for floating dtypes only, CMP
 * ops write u8. */
#define BIN_MT_ADD PW_ADD(x, PW_MUL(al, y))
#define BIN_MT_SUB PW_SUB(x, PW_MUL(al, y))
#define BIN_MT_MUL PW_MUL(x, y)
#define BIN_MT_DIV PW_DIV(x, y)
#define BIN_MT_POW PW_POW(x, y)
#define BIN_MT_MAXIMUM PW_MAX(x, y)
#define BIN_MT_MINIMUM PW_MIN(x, y)
#define BIN_MT_FMOD PW_FMOD(x, y)
#define BIN_MT_ATAN2 PW_F2(atan2, x, y)
#define BIN_MT_EQ (x == y)
#define BIN_MT_NE (x != y)
#define BIN_MT_LT (x < y)
#define BIN_MT_LE (x <= y)
#define BIN_MT_GT (x > y)
#define BIN_MT_GE (x >= y)
#define BIN_MT_REMAINDER PW_REM(x, y)
#define BIN_MT_BITAND (x & y)
#define BIN_MT_BITOR (x | y)
#define BIN_MT_BITXOR (x ^ y)
#define BIN_MT_LSHIFT pw_shl(x, y, bits_)
#define BIN_MT_RSHIFT pw_shr(x, y, bits_)

/* one kernel per (op, dtype) of the list; an op without a body above fails to compile */
#define DEF_ARITH(E, N, T, CT, OPE, EXPR) BIN_FN_GEN(N, T, CT, OPE, T, mt_st_##N, EXPR)
#define DEF_CMP(E, N, T, CT, OPE, EXPR) BIN_FN_GEN(N, T, CT, OPE, uint8_t, PW_ST_U8, EXPR)
#define DEF_BIN_ANY(OPE) PW_DTYPES(DEF_ARITH, OPE, BIN_##OPE)
#define DEF_BIN_FLOAT(OPE) PW_FLOAT_DTYPES(DEF_ARITH, OPE, BIN_##OPE)
#define DEF_BIN_CMP(OPE) PW_DTYPES(DEF_CMP, OPE, BIN_##OPE)
#define DEF_BIN_INT(OPE) PW_INT_DTYPES(DEF_ARITH, OPE, BIN_##OPE)
#define DEF_BIN(OPE, NAME, KIND, ...) DEF_BIN_##KIND(OPE)
MT_BINARY_OPS(DEF_BIN, ~)

#define BIN_ENT(E, N, T, CT, OPE, ...) [OPE][E] = bin_##OPE##_##N,
#define ENT_ANY(OPE) PW_DTYPES(BIN_ENT, OPE, ~)
#define ENT_FLOAT(OPE) PW_FLOAT_DTYPES(BIN_ENT, OPE, ~)
#define ENT_CMP(OPE) PW_DTYPES(BIN_ENT, OPE, ~)
#define ENT_INT(OPE) PW_INT_DTYPES(BIN_ENT, OPE, ~)
#define ENT_OP(OPE, NAME, KIND, ...) ENT_##KIND(OPE)
static const bin_fn bin_table[][MT_NUM_DTYPES] = {MT_BINARY_OPS(ENT_OP, ~)};
_Static_assert(sizeof bin_table / sizeof bin_table[0] == MT_NUM_BINARY_OPS, "bin_table: one row per binary op");

/* ---- zero test (integer divisors) ---- */

#define HAS_ZERO_CASE(E, N, T, CT)                                               \
  case E:                                                                        \
    MT_ITER_RUNS(&it, n, p, s, {                                                 \
      int hit = 0;                                                               \
      for (int64_t i = 0; i < n; i++) hit |= *(const T *)(p[0] + i * s[0]) == 0; \
      if (hit) atomic_store_explicit(&found, 1, memory_order_relaxed);           \
    });                                                                          \
    break;

int mt__cpu_has_zero(const mt_tensor *t) {
  mt_iter it;
  const mt_tensor *ops[1] = {t};
  if (mt__numel(t) == 0 || mt_iter_init(&it, 1, ops, 0) != MT_OK) return 0;
  atomic_int found = 0;
  switch (t->dtype) {
    MT_DTYPE_LIST(HAS_ZERO_CASE)
    default: break;
  }
  return atomic_load(&found);
}

mt_status mt__cpu_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha) {
  if ((int)op < 0 || op >= MT_NUM_BINARY_OPS || a->dtype >= MT_NUM_DTYPES || !bin_table[op][a->dtype])
    return mt__error(MT_ERR_DTYPE, "binary: op %d not available for %s on the CPU", (int)op, mt_dtype_name(a->dtype));
  if (mt__numel(out) == 0) return MT_OK;
  /* integer x/0 and x%0 have no value: refused (floats give inf or NaN) */
  if ((op == MT_DIV || op == MT_FMOD || op == MT_REMAINDER) && !mt_dtype_is_floating(a->dtype) && mt__cpu_has_zero(b))
    return mt__error(MT_ERR_ARG, "%s: integer division by zero (the divisor %s tensor holds a 0)",
                     op == MT_DIV    ? "cdiv"
                     : op == MT_FMOD ? "fmod"
                                     : "cremainder",
                     mt_dtype_name(b->dtype));
  mt_iter it;
  const mt_tensor *ops[3] = {out, a, b};
  MT_TRY(mt_iter_init(&it, 3, ops, 0));
  bin_table[op][a->dtype](&it, alpha);
  return MT_OK;
}

/* ---- addcmul / addcdiv: out = a + value * b * c  or  a + value * b / c ---- */

typedef void (*addc_fn)(const mt_iter *it, double value);

#define ADDC_FN(E, N, T, CT, NAME, EXPR)                                                      \
  static void addc_##NAME##_##N(const mt_iter *it, double value_) {                           \
    const CT v = PW_SCALAR(CT, value_);                                                       \
    MT_ITER_RUNS(it, n, p, s, {                                                               \
      if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) && s[3] == sizeof(T)) { \
        T *o = (T *)p[0];                                                                     \
        const T *pa = (const T *)p[1], *pb = (const T *)p[2], *pc = (const T *)p[3];          \
        for (int64_t i = 0; i < n; i++) {                                                     \
          CT x = mt_ld_##N(pa + i), y = mt_ld_##N(pb + i), z = mt_ld_##N(pc + i);             \
          mt_st_##N(o + i, EXPR);                                                             \
        }                                                                                     \
      } else {                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                     \
          CT x = mt_ld_##N((const T *)(p[1] + i * s[1]));                                     \
          CT y = mt_ld_##N((const T *)(p[2] + i * s[2]));                                     \
          CT z = mt_ld_##N((const T *)(p[3] + i * s[3]));                                     \
          mt_st_##N((T *)(p[0] + i * s[0]), EXPR);                                            \
        }                                                                                     \
      }                                                                                       \
    });                                                                                       \
  }

PW_DTYPES(ADDC_FN, mul, PW_ADD(x, PW_MUL(v, PW_MUL(y, z))))
PW_FLOAT_DTYPES(ADDC_FN, div, x + v * (y / z))

#define ADDC_ENT(E, N, T, CT, NAME) [E] = addc_##NAME##_##N,
static const addc_fn addcmul_table[MT_NUM_DTYPES] = {PW_DTYPES(ADDC_ENT, mul)};
static const addc_fn addcdiv_table[MT_NUM_DTYPES] = {PW_FLOAT_DTYPES(ADDC_ENT, div)};

mt_status mt__cpu_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                       const mt_tensor *c) {
  addc_fn fn = a->dtype < MT_NUM_DTYPES ? (div ? addcdiv_table : addcmul_table)[a->dtype] : NULL;
  if (!fn)
    return mt__error(MT_ERR_DTYPE, "%s: not available for %s on the CPU", div ? "addcdiv" : "addcmul",
                     mt_dtype_name(a->dtype));
  if (mt__numel(out) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[4] = {out, a, b, c};
  MT_TRY(mt_iter_init(&it, 4, ops, 0));
  fn(&it, value);
  return MT_OK;
}
