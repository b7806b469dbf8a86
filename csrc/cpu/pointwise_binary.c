/* pointwise_binary.c: CPU kernels for out = a op b (same shape after broadcasting; comparisons
 * write u8) and for addcmul/addcdiv: one kernel per (op, dtype), the loops of
 * generic/pointwise_binary.c around the op's body. */
#include <stdatomic.h>
#include "pointwise.h"

#define MT_GENERIC_FILE "generic/pointwise_binary.c"
#include "generate_all.h"

/* The body of every op of MT_BINARY_OPS (moontorch.h), named BIN_<op>: x, y are the operands
 * in compute type, alpha is alpha in compute type, bits the dtype's width. FLOAT ops exist for
 * floating dtypes only, CMP ops write u8. */
#define BIN_MT_ADD PW_ADD(x, PW_MUL(alpha, y))
#define BIN_MT_SUB PW_SUB(x, PW_MUL(alpha, y))
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
#define BIN_MT_LSHIFT pw_shl(x, y, bits)
#define BIN_MT_RSHIFT pw_shr(x, y, bits)

/* one kernel per (op, dtype) of the list; an op without a body above fails to compile. The
 * element function bin_<op>_<dtype>_element returns the body; the kernel bin_<op>_<dtype> is
 * the dtype's loop (RUNS: binary_runs, or compare_runs for u8 results) with it inlined, and
 * takes a pointer to alpha (a double). */
#define BIN_KERNEL(E, N, T, CT, OPE, EXPR, RET, RUNS)                                          \
  static inline RET bin_##OPE##_##N##_element(CT x, CT y, CT alpha, int bits) { return EXPR; } \
  static void bin_##OPE##_##N(const mt_iter *it, int64_t begin, int64_t end, void *alpha) {    \
    RUNS##_##N(it, begin, end, PW_SCALAR(CT, *(double *)alpha), bin_##OPE##_##N##_element);    \
  }
#define DEF_ARITH(E, N, T, CT, OPE, EXPR) BIN_KERNEL(E, N, T, CT, OPE, EXPR, CT, binary_runs)
#define DEF_CMP(E, N, T, CT, OPE, EXPR) BIN_KERNEL(E, N, T, CT, OPE, EXPR, int, compare_runs)
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
static const mt_iter_chunk bin_table[][MT_NUM_DTYPES] = {MT_BINARY_OPS(ENT_OP, ~)};
_Static_assert(sizeof bin_table / sizeof bin_table[0] == MT_NUM_BINARY_OPS, "bin_table: one row per binary op");

/* ---- zero test (integer divisors) ---- */

#define HAS_ZERO_CASE(E, N, T, CT) \
  case E: mt__iter_chunks(&it, has_zero_##N, &found); break;

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
  mt__iter_chunks(&it, bin_table[op][a->dtype], &alpha);
  return MT_OK;
}

/* ---- addcmul / addcdiv: out = a + value * b * c  or  a + value * b / c ---- */

/* the element functions addc_<mul|div>_<dtype>_element and kernels addc_<mul|div>_<dtype> (the
 * dtype's addc_runs with the element function inlined; arg: a pointer to value, a double) */
#define ADDC_KERNEL(E, N, T, CT, NAME, EXPR)                                                     \
  static inline CT addc_##NAME##_##N##_element(CT x, CT y, CT z, CT value) { return EXPR; }      \
  static void addc_##NAME##_##N(const mt_iter *it, int64_t begin, int64_t end, void *value) {    \
    addc_runs_##N(it, begin, end, PW_SCALAR(CT, *(double *)value), addc_##NAME##_##N##_element); \
  }
PW_DTYPES(ADDC_KERNEL, mul, PW_ADD(x, PW_MUL(value, PW_MUL(y, z))))
PW_FLOAT_DTYPES(ADDC_KERNEL, div, x + value * (y / z))

#define ADDC_ENT(E, N, T, CT, NAME) [E] = addc_##NAME##_##N,
static const mt_iter_chunk addcmul_table[MT_NUM_DTYPES] = {PW_DTYPES(ADDC_ENT, mul)};
static const mt_iter_chunk addcdiv_table[MT_NUM_DTYPES] = {PW_FLOAT_DTYPES(ADDC_ENT, div)};

mt_status mt__cpu_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                       const mt_tensor *c) {
  mt_iter_chunk fn = a->dtype < MT_NUM_DTYPES ? (div ? addcdiv_table : addcmul_table)[a->dtype] : NULL;
  if (!fn)
    return mt__error(MT_ERR_DTYPE, "%s: not available for %s on the CPU", div ? "addcdiv" : "addcmul",
                     mt_dtype_name(a->dtype));
  if (mt__numel(out) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[4] = {out, a, b, c};
  MT_TRY(mt_iter_init(&it, 4, ops, 0));
  mt__iter_chunks(&it, fn, &value);
  return MT_OK;
}
