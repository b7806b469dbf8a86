/* pointwise_unary.c: CPU kernels for out = f(a [, p1, p2]) over every mt_unary_op.
 * Float-only ops (exp, log, ...) are generated for floating dtypes only; the entry point has
 * already refused them for integers with a clear message. */
#include "pointwise.h"

typedef void (*un_fn)(const mt_iter *it, double p1, double p2);

#define PW_ST_U8(p, v) (*(p) = (uint8_t)((v) ? 1 : 0))

/* x: the element in compute type; c1, c2: p1, p2 in compute type; c1r: p1 rounded to the
 * storage type; p1: p1 as a double.
 * (Expressions cannot name CT: macro arguments are not rescanned for parameters.) */
#define UN_FN_GEN(N, T, CT, NAME, OT, STORE, EXPR)                        \
  static void un_##NAME##_##N(const mt_iter *it, double p1, double p2) {  \
    const CT c1 = PW_SCALAR(CT, p1), c2 = PW_SCALAR(CT, p2);              \
    T r1_;                                                                \
    mt_st_##N(&r1_, c1);                                                  \
    const CT c1r = mt_ld_##N(&r1_); /* p1 as stored in this dtype */      \
    (void)c1;                                                             \
    (void)c2;                                                             \
    (void)c1r;                                                            \
    MT_ITER_RUNS(it, n, p, s, {                                           \
      if (s[0] == sizeof(OT) && s[1] == sizeof(T)) {                      \
        OT *o = (OT *)p[0];                                               \
        const T *pa = (const T *)p[1];                                    \
        for (int64_t i = 0; i < n; i++) {                                 \
          CT x = mt_ld_##N(pa + i);                                       \
          STORE(o + i, EXPR);                                             \
        }                                                                 \
      } else {                                                            \
        for (int64_t i = 0; i < n; i++) {                                 \
          CT x = mt_ld_##N((const T *)(p[1] + i * s[1]));                 \
          STORE((OT *)(p[0] + i * s[0]), EXPR);                           \
        }                                                                 \
      }                                                                   \
    });                                                                   \
  }

#define UN_ALL(X)                                                    \
  X(MT_NEG, neg, PW_NEG(x))                                          \
  X(MT_ABS, abs, PW_ABS(x))                                          \
  X(MT_SIGN, sign, ((x > 0) - (x < 0)))                          \
  X(MT_FLOOR, floor, PW_ROUNDING(floor, x))                          \
  X(MT_CEIL, ceil, PW_ROUNDING(ceil, x))                             \
  X(MT_ROUND, round, PW_ROUNDING(round, x))                          \
  X(MT_SQUARE, square, PW_MUL(x, x))                                 \
  X(MT_RELU, relu, (x < 0 ? 0 : x))                              \
  X(MT_POW_SCALAR, pow, PW_POW(x, c1))                               \
  X(MT_RPOW_SCALAR, rpow, PW_POW(c1, x))                             \
  X(MT_CLAMP, clamp, (x < c1 ? c1 : x > c2 ? c2 : x))                \
  X(MT_ADD_SCALAR, adds, PW_ADD(x, c1))                              \
  X(MT_MUL_SCALAR, muls, PW_MUL(x, c1))                              \
  X(MT_DIV_SCALAR, divs, PW_DIV(x, c1))

#define UN_FLOAT(X)                                                  \
  X(MT_EXP, exp, PW_F(exp, x))                                       \
  X(MT_LOG, log, PW_F(log, x))                                       \
  X(MT_SQRT, sqrt, PW_F(sqrt, x))                                    \
  X(MT_RSQRT, rsqrt, 1 / PW_F(sqrt, x))                          \
  X(MT_TANH, tanh, PW_F(tanh, x))                                    \
  X(MT_SIGMOID, sigmoid, 1 / (1 + PW_F(exp, -x)))            \
  X(MT_LOG1P, log1p, PW_F(log1p, x))                                 \
  X(MT_EXPM1, expm1, PW_F(expm1, x))                                 \
  X(MT_RECIPROCAL, reciprocal, 1 / x)                            \
  X(MT_SIN, sin, PW_F(sin, x))                                       \
  X(MT_COS, cos, PW_F(cos, x))

#define UN_CMP(X)                                                    \
  X(MT_EQ_SCALAR, eq, PW_CMP_VALUE(x) == PW_CMP_SCALAR(x, p1, c1r))       \
  X(MT_NE_SCALAR, ne, PW_CMP_VALUE(x) != PW_CMP_SCALAR(x, p1, c1r))       \
  X(MT_LT_SCALAR, lt, PW_CMP_VALUE(x) < PW_CMP_SCALAR(x, p1, c1r))        \
  X(MT_LE_SCALAR, le, PW_CMP_VALUE(x) <= PW_CMP_SCALAR(x, p1, c1r))       \
  X(MT_GT_SCALAR, gt, PW_CMP_VALUE(x) > PW_CMP_SCALAR(x, p1, c1r))        \
  X(MT_GE_SCALAR, ge, PW_CMP_VALUE(x) >= PW_CMP_SCALAR(x, p1, c1r))

#define DEF_UN(E, N, T, CT, OPE, NAME, EXPR) UN_FN_GEN(N, T, CT, NAME, T, mt_st_##N, EXPR)
#define DEF_UN_CMP(E, N, T, CT, OPE, NAME, EXPR) UN_FN_GEN(N, T, CT, NAME, uint8_t, PW_ST_U8, EXPR)
#define DEF_UN_ALL(OPE, NAME, EXPR) PW_DTYPES(DEF_UN, OPE, NAME, EXPR)
#define DEF_UN_FLOAT(OPE, NAME, EXPR) PW_FLOAT_DTYPES(DEF_UN, OPE, NAME, EXPR)
#define DEF_UN_CMP_ALL(OPE, NAME, EXPR) PW_DTYPES(DEF_UN_CMP, OPE, NAME, EXPR)
UN_ALL(DEF_UN_ALL)
UN_FLOAT(DEF_UN_FLOAT)
UN_CMP(DEF_UN_CMP_ALL)

#define UN_ENT(E, N, T, CT, OPE, NAME, EXPR) [OPE][E] = un_##NAME##_##N,
#define UN_ROW_ALL(OPE, NAME, EXPR) PW_DTYPES(UN_ENT, OPE, NAME, EXPR)
#define UN_ROW_FLOAT(OPE, NAME, EXPR) PW_FLOAT_DTYPES(UN_ENT, OPE, NAME, EXPR)
static const un_fn un_table[MT_NUM_UNARY_OPS][MT_NUM_DTYPES] = {
    UN_ALL(UN_ROW_ALL) UN_FLOAT(UN_ROW_FLOAT) UN_CMP(UN_ROW_ALL)};

mt_status mt__cpu_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  if ((int)op < 0 || op >= MT_NUM_UNARY_OPS || a->dtype >= MT_NUM_DTYPES || !un_table[op][a->dtype])
    return mt__error(MT_ERR_DTYPE, "unary: op %d not available for %s on the CPU", (int)op, mt_dtype_name(a->dtype));
  if (mt__numel(out) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[2] = {out, a};
  MT_TRY(mt_iter_init(&it, 2, ops, 0));
  un_table[op][a->dtype](&it, p1, p2);
  return MT_OK;
}
