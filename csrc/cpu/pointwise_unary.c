/* pointwise_unary.c: CPU kernels for out = f(a [, p1, p2]) over every mt_unary_op: one kernel
 * per (op, dtype), the loops of generic/pointwise_unary.c around the op's body. Float-only ops
 * (exp, log, ...) are generated for floating dtypes only; the entry point has already refused
 * them for integers with a clear message. */
#include "pointwise.h"

#define MT_GENERIC_FILE "generic/pointwise_unary.c"
#include "generate_all.h"

/* The body of every op of MT_UNARY_OPS (moontorch.h), named UN_<op>, over x, the element in
 * compute type; p1, p2: the op's scalars in compute type; p1_stored: p1 rounded to the storage
 * type; p1_given: p1 as a double. FLOAT ops are generated for floating dtypes only, CMP ops
 * write u8. */
#define UN_MT_NEG PW_NEG(x)
#define UN_MT_ABS PW_ABS(x)
#define UN_MT_SIGN ((x > 0) - (x < 0))
#define UN_MT_EXP PW_F(exp, x)
#define UN_MT_LOG PW_F(log, x)
#define UN_MT_SQRT PW_F(sqrt, x)
#define UN_MT_RSQRT (1 / PW_F(sqrt, x))
#define UN_MT_TANH PW_F(tanh, x)
#define UN_MT_SIGMOID (1 / (1 + PW_F(exp, -x)))
#define UN_MT_FLOOR PW_ROUNDING(floor, x)
#define UN_MT_CEIL PW_ROUNDING(ceil, x)
#define UN_MT_ROUND PW_ROUNDING(round, x)
#define UN_MT_LOG1P PW_F(log1p, x)
#define UN_MT_EXPM1 PW_F(expm1, x)
#define UN_MT_SQUARE PW_MUL(x, x)
#define UN_MT_RECIPROCAL (1 / x)
#define UN_MT_SIN PW_F(sin, x)
#define UN_MT_COS PW_F(cos, x)
#define UN_MT_RELU (x < 0 ? 0 : x)
#define UN_MT_POW_SCALAR PW_POW(x, p1)
#define UN_MT_RPOW_SCALAR PW_POW(p1, x)
#define UN_MT_CLAMP (x < p1 ? p1 : x > p2 ? p2 : x)
#define UN_MT_ADD_SCALAR PW_ADD(x, p1)
#define UN_MT_MUL_SCALAR PW_MUL(x, p1)
#define UN_MT_DIV_SCALAR PW_DIV(x, p1)
#define UN_MT_EQ_SCALAR (PW_CMP_VALUE(x) == PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_NE_SCALAR (PW_CMP_VALUE(x) != PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_LT_SCALAR (PW_CMP_VALUE(x) < PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_LE_SCALAR (PW_CMP_VALUE(x) <= PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_GT_SCALAR (PW_CMP_VALUE(x) > PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_GE_SCALAR (PW_CMP_VALUE(x) >= PW_CMP_SCALAR(x, p1_given, p1_stored))
#define UN_MT_ACOS PW_F(acos, x)
#define UN_MT_ASIN PW_F(asin, x)
#define UN_MT_ATAN PW_F(atan, x)
#define UN_MT_TAN PW_F(tan, x)
#define UN_MT_SINH PW_F(sinh, x)
#define UN_MT_COSH PW_F(cosh, x)
#define UN_MT_TRUNC PW_F(trunc, x)
#define UN_MT_FRAC (x - PW_F(trunc, x))

/* one kernel per (op, dtype) of the list; an op without a body above fails to compile. The
 * element function un_<op>_<dtype>_element returns the body; the kernel un_<op>_<dtype> is the
 * dtype's loop (RUNS: unary_runs, or compare_runs for u8 results) with it inlined, and takes a
 * pointer to p1, p2 (two doubles). */
#define UN_KERNEL(E, N, T, CT, OPE, EXPR, RET, RUNS)                                                             \
  static inline RET un_##OPE##_##N##_element(CT x, CT p1, CT p2, double p1_given, CT p1_stored) { return EXPR; } \
  static void un_##OPE##_##N(const mt_iter *it, int64_t begin, int64_t end, void *params) {                      \
    RUNS##_##N(it, begin, end, (const double *)params, un_##OPE##_##N##_element);                                \
  }
#define DEF_UN(E, N, T, CT, OPE, EXPR) UN_KERNEL(E, N, T, CT, OPE, EXPR, CT, unary_runs)
#define DEF_UN_CMP(E, N, T, CT, OPE, EXPR) UN_KERNEL(E, N, T, CT, OPE, EXPR, int, compare_runs)
#define DEF_ANY(OPE) PW_DTYPES(DEF_UN, OPE, UN_##OPE)
#define DEF_FLOAT(OPE) PW_FLOAT_DTYPES(DEF_UN, OPE, UN_##OPE)
#define DEF_CMP(OPE) PW_DTYPES(DEF_UN_CMP, OPE, UN_##OPE)
#define DEF_OP(OPE, NAME, KIND, ...) DEF_##KIND(OPE)
MT_UNARY_OPS(DEF_OP, ~)

#define UN_ENT(E, N, T, CT, OPE, ...) [OPE][E] = un_##OPE##_##N,
#define ENT_ANY(OPE) PW_DTYPES(UN_ENT, OPE, ~)
#define ENT_FLOAT(OPE) PW_FLOAT_DTYPES(UN_ENT, OPE, ~)
#define ENT_CMP(OPE) PW_DTYPES(UN_ENT, OPE, ~)
#define ENT_OP(OPE, NAME, KIND, ...) ENT_##KIND(OPE)
static const mt_iter_chunk un_table[][MT_NUM_DTYPES] = {MT_UNARY_OPS(ENT_OP, ~)};
_Static_assert(sizeof un_table / sizeof un_table[0] == MT_NUM_UNARY_OPS, "un_table: one row per unary op");

mt_status mt__cpu_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  if ((int)op < 0 || op >= MT_NUM_UNARY_OPS || a->dtype >= MT_NUM_DTYPES || !un_table[op][a->dtype])
    return mt__error(MT_ERR_DTYPE, "unary: op %d not available for %s on the CPU", (int)op, mt_dtype_name(a->dtype));
  if (mt__numel(out) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[2] = {out, a};
  MT_TRY(mt_iter_init(&it, 2, ops, 0));
  double params[2] = {p1, p2};
  mt__iter_chunks(&it, un_table[op][a->dtype], params);
  return MT_OK;
}
