/* pointwise.cu: fill, unary, binary, addcmul/addcdiv, masked_fill, arange and the same-dtype
 * strided copy the other kernel files share. Each op is a template over (op, storage type); the
 * switch on op and dtype runs once per call, never inside a loop.
 *
 * Semantics are the CPU backend's (csrc/cpu/pointwise*.c): a scalar is converted to the tensor's
 * compute type first (an int tensor's t:mul(2.5) multiplies by 2, as Torch7), except that
 * integer comparisons with a scalar are exact (in double); integer arithmetic wraps; integer
 * division truncates like C, and a zero divisor in an integer tensor is refused with the CPU's
 * error (a zero scalar divisor is refused by the entry point). */
#include "common.cuh"

/* ---- scalar math over the compute types (float, double, int64) ---- */

/* integer helpers that never hit undefined behaviour */
MTK_D int64_t mtk_idiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0ull - (uint64_t)a);
  return a / b;
}
MTK_D int64_t mtk_imod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
MTK_D int64_t mtk_ipow(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)a; /* unsigned: wraps instead of overflowing */
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}

/* two's complement wrap-around for int64 (signed overflow is undefined in C++) */
MTK_D float mtk_add(float a, float b) { return a + b; }
MTK_D double mtk_add(double a, double b) { return a + b; }
MTK_D int64_t mtk_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
MTK_D float mtk_sub(float a, float b) { return a - b; }
MTK_D double mtk_sub(double a, double b) { return a - b; }
MTK_D int64_t mtk_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
MTK_D float mtk_mul(float a, float b) { return a * b; }
MTK_D double mtk_mul(double a, double b) { return a * b; }
MTK_D int64_t mtk_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
MTK_D float mtk_neg(float a) { return -a; }
MTK_D double mtk_neg(double a) { return -a; }
MTK_D int64_t mtk_neg(int64_t a) { return (int64_t)(0ull - (uint64_t)a); }

/* float / double / int64 (through double) versions of each math function */
#define MTK_MATH1(name, ffn, dfn)                \
  MTK_D float name(float x) { return ffn(x); }   \
  MTK_D double name(double x) { return dfn(x); } \
  MTK_D int64_t name(int64_t x) { return mtk_from_double<int64_t>(dfn((double)x)); }
MTK_MATH1(mtk_exp, expf, exp)
MTK_MATH1(mtk_log, logf, log)
MTK_MATH1(mtk_sqrt, sqrtf, sqrt)
MTK_MATH1(mtk_tanh, tanhf, tanh)
MTK_MATH1(mtk_log1p, log1pf, log1p)
MTK_MATH1(mtk_expm1, expm1f, expm1)
MTK_MATH1(mtk_sin, sinf, sin)
MTK_MATH1(mtk_cos, cosf, cos)
MTK_MATH1(mtk_acos, acosf, acos)
MTK_MATH1(mtk_asin, asinf, asin)
MTK_MATH1(mtk_atan, atanf, atan)
MTK_MATH1(mtk_tan, tanf, tan)
MTK_MATH1(mtk_sinh, sinhf, sinh)
MTK_MATH1(mtk_cosh, coshf, cosh)
MTK_MATH1(mtk_trunc, truncf, trunc)
#undef MTK_MATH1

MTK_D float mtk_floor(float x) { return floorf(x); }
MTK_D double mtk_floor(double x) { return floor(x); }
MTK_D int64_t mtk_floor(int64_t x) { return x; }
MTK_D float mtk_ceil(float x) { return ceilf(x); }
MTK_D double mtk_ceil(double x) { return ceil(x); }
MTK_D int64_t mtk_ceil(int64_t x) { return x; }
/* halves round away from zero, as C's round() and Torch7 */
MTK_D float mtk_round(float x) { return roundf(x); }
MTK_D double mtk_round(double x) { return round(x); }
MTK_D int64_t mtk_round(int64_t x) { return x; }
MTK_D float mtk_rsqrt(float x) { return 1.0f / sqrtf(x); }
MTK_D double mtk_rsqrt(double x) { return 1.0 / sqrt(x); }
MTK_D int64_t mtk_rsqrt(int64_t x) { return mtk_from_double<int64_t>(1.0 / sqrt((double)x)); }
MTK_D float mtk_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
MTK_D double mtk_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
MTK_D int64_t mtk_sigmoid(int64_t x) { return mtk_from_double<int64_t>(1.0 / (1.0 + exp(-(double)x))); }
MTK_D float mtk_recip(float x) { return 1.0f / x; }
MTK_D double mtk_recip(double x) { return 1.0 / x; }
MTK_D int64_t mtk_recip(int64_t x) { return mtk_idiv(1, x); }
MTK_D float mtk_abs(float x) { return fabsf(x); }
MTK_D double mtk_abs(double x) { return fabs(x); }
MTK_D int64_t mtk_abs(int64_t x) { return x < 0 ? (int64_t)(0ull - (uint64_t)x) : x; }
MTK_D float mtk_pow(float a, float b) { return powf(a, b); }
MTK_D double mtk_pow(double a, double b) { return pow(a, b); }
MTK_D int64_t mtk_pow(int64_t a, int64_t b) { return mtk_ipow(a, b); }
MTK_D float mtk_div(float a, float b) { return a / b; }
MTK_D double mtk_div(double a, double b) { return a / b; }
MTK_D int64_t mtk_div(int64_t a, int64_t b) { return mtk_idiv(a, b); }
MTK_D float mtk_fmod(float a, float b) { return fmodf(a, b); }
MTK_D double mtk_fmod(double a, double b) { return fmod(a, b); }
MTK_D int64_t mtk_fmod(int64_t a, int64_t b) { return mtk_imod(a, b); }
/* remainder with the divisor's sign (Lua's %), from fmod as the CPU computes it */
template <class CT> MTK_D CT mtk_remainder(CT a, CT b) {
  CT r = mtk_fmod(a, b);
  return (r != 0 && (r < 0) != (b < 0)) ? (CT)(r + b) : r;
}
/* shifts on the dtype's `bits` wide pattern as unsigned (logical right shift), counts outside
 * 0..bits-1 give 0: the CPU's pw_shl/pw_shr */
MTK_D int64_t mtk_shl(int64_t x, int64_t n, int bits) { return (n < 0 || n >= bits) ? 0 : (int64_t)((uint64_t)x << n); }
MTK_D int64_t mtk_shr(int64_t x, int64_t n, int bits) {
  uint64_t u = bits >= 64 ? (uint64_t)x : (uint64_t)x & ((1ull << bits) - 1);
  return (n < 0 || n >= bits) ? 0 : (int64_t)(u >> n);
}
MTK_D float mtk_atan2(float a, float b) { return atan2f(a, b); }
MTK_D double mtk_atan2(double a, double b) { return atan2(a, b); }
MTK_D int64_t mtk_atan2(int64_t a, int64_t b) { return mtk_from_double<int64_t>(atan2((double)a, (double)b)); }
/* maximum/minimum propagate NaN */
template <class CT> MTK_D CT mtk_max(CT a, CT b) { return mtk_isnan(a) ? a : mtk_isnan(b) ? b : (a > b ? a : b); }
template <class CT> MTK_D CT mtk_min(CT a, CT b) { return mtk_isnan(a) ? a : mtk_isnan(b) ? b : (a < b ? a : b); }

/* ---- unary ---- */

/* op kinds from moontorch.h's lists: CMP ops write uint8 */
enum { MTK_KIND_ANY, MTK_KIND_FLOAT, MTK_KIND_INT, MTK_KIND_CMP };
#define MTK_KIND_CASE(E, NAME, KIND, ...) \
  case E: return MTK_KIND_##KIND;
constexpr int mtk_unary_kind(int op) {
  switch (op) { MT_UNARY_OPS(MTK_KIND_CASE, ~) default : return -1; }
}
constexpr int mtk_binary_kind(int op) {
  switch (op) { MT_BINARY_OPS(MTK_KIND_CASE, ~) default : return -1; }
}
template <int OP> struct mtk_unary_is_cmp { static constexpr bool value = mtk_unary_kind(OP) == MTK_KIND_CMP; };

/* The body of every op of MT_UNARY_OPS: mtk_unary_body<OP>::apply(x, p1, p2). Only the
 * specialisations exist, so an op of the list without a body here does not compile.
 * Comparisons get the scalar in p1: floats compare with it rounded to their compute type (so
 * t:fill(0.1):eq(0.1) holds, as in Torch7); integers compare exactly, in double. */
template <int OP> struct mtk_unary_body;
#define MTK_UNARY_BODY(OP, EXPR)                                                     \
  template <> struct mtk_unary_body<OP> {                                            \
    template <class CT> MTK_D static auto apply(CT x, CT p1, CT p2) { return EXPR; } \
  };
MTK_UNARY_BODY(MT_NEG, mtk_neg(x))
MTK_UNARY_BODY(MT_ABS, mtk_abs(x))
MTK_UNARY_BODY(MT_SIGN, (CT)((x > 0) - (x < 0)))
MTK_UNARY_BODY(MT_EXP, mtk_exp(x))
MTK_UNARY_BODY(MT_LOG, mtk_log(x))
MTK_UNARY_BODY(MT_SQRT, mtk_sqrt(x))
MTK_UNARY_BODY(MT_RSQRT, mtk_rsqrt(x))
MTK_UNARY_BODY(MT_TANH, mtk_tanh(x))
MTK_UNARY_BODY(MT_SIGMOID, mtk_sigmoid(x))
MTK_UNARY_BODY(MT_FLOOR, mtk_floor(x))
MTK_UNARY_BODY(MT_CEIL, mtk_ceil(x))
MTK_UNARY_BODY(MT_ROUND, mtk_round(x))
MTK_UNARY_BODY(MT_LOG1P, mtk_log1p(x))
MTK_UNARY_BODY(MT_EXPM1, mtk_expm1(x))
MTK_UNARY_BODY(MT_SQUARE, mtk_mul(x, x))
MTK_UNARY_BODY(MT_RECIPROCAL, mtk_recip(x))
MTK_UNARY_BODY(MT_SIN, mtk_sin(x))
MTK_UNARY_BODY(MT_COS, mtk_cos(x))
MTK_UNARY_BODY(MT_RELU, x < 0 ? (CT)0 : x) /* NaN passes through */
MTK_UNARY_BODY(MT_POW_SCALAR, mtk_pow(x, p1))
MTK_UNARY_BODY(MT_RPOW_SCALAR, mtk_pow(p1, x))
MTK_UNARY_BODY(MT_CLAMP, x<p1 ? p1 : x> p2 ? p2 : x) /* NaN kept */
MTK_UNARY_BODY(MT_ADD_SCALAR, mtk_add(x, p1))
MTK_UNARY_BODY(MT_MUL_SCALAR, mtk_mul(x, p1))
MTK_UNARY_BODY(MT_DIV_SCALAR, mtk_div(x, p1))
MTK_UNARY_BODY(MT_EQ_SCALAR, x == p1)
MTK_UNARY_BODY(MT_NE_SCALAR, x != p1)
MTK_UNARY_BODY(MT_LT_SCALAR, x < p1)
MTK_UNARY_BODY(MT_LE_SCALAR, x <= p1)
MTK_UNARY_BODY(MT_GT_SCALAR, x > p1)
MTK_UNARY_BODY(MT_GE_SCALAR, x >= p1)
MTK_UNARY_BODY(MT_ACOS, mtk_acos(x))
MTK_UNARY_BODY(MT_ASIN, mtk_asin(x))
MTK_UNARY_BODY(MT_ATAN, mtk_atan(x))
MTK_UNARY_BODY(MT_TAN, mtk_tan(x))
MTK_UNARY_BODY(MT_SINH, mtk_sinh(x))
MTK_UNARY_BODY(MT_COSH, mtk_cosh(x))
MTK_UNARY_BODY(MT_TRUNC, mtk_trunc(x))
MTK_UNARY_BODY(MT_FRAC, mtk_sub(x, mtk_trunc(x)))

template <int OP, class T, class OT> struct mtk_unary_f {
  typedef typename mtk_ct<T>::type CT;
  OT *out;
  const T *a;
  CT p1, p2;
  double p1d;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    CT x = mtk_ld(a + off[1]);
    if constexpr (mtk_unary_is_cmp<OP>::value) {
      if constexpr (mtk_is_float<T>::value) mtk_st(out + off[0], (int64_t)mtk_unary_body<OP>::apply(x, p1, p1));
      else mtk_st(out + off[0], (int64_t)mtk_unary_body<OP>::apply((double)x, p1d, p1d));
    } else {
      mtk_st(out + off[0], (CT)mtk_unary_body<OP>::apply(x, p1, p2));
    }
  }
};

template <int OP> static mt_status mtk_unary_run(mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  const bool cmp = mtk_unary_is_cmp<OP>::value;
  if (cmp ? out->dtype != MT_U8 : out->dtype != a->dtype)
    return mt__error(MT_ERR_DTYPE, "unary: result dtype %s does not suit input dtype %s", mt_dtype_name(out->dtype),
                     mt_dtype_name(a->dtype));
  return mtk_dispatch(a->dtype, "unary", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    typedef typename mtk_ct<T>::type CT;
    typedef typename std::conditional<mtk_unary_is_cmp<OP>::value, uint8_t, T>::type OT;
    mtk_unary_f<OP, T, OT> f{mtk_ptr<OT>(out), mtk_ptr<T>(a), mtk_from_double<CT>(p1), mtk_from_double<CT>(p2), p1};
    const int64_t *st[2] = {out->strides, a->strides};
    return mtk_pointwise_any_order<2>(out->device, "unary", out->ndim, out->sizes, st, f);
  });
}

extern "C" mt_status mt__cuda_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
#define MTK_UNARY_CASE(OP, NAME, KIND, ...) \
  case OP: return mtk_unary_run<OP>(out, a, p1, p2);
  switch (op) {
    MT_UNARY_OPS(MTK_UNARY_CASE, ~)
    default: return mt__error(MT_ERR_ARG, "unary: unknown operation %d", (int)op);
  }
#undef MTK_UNARY_CASE
}

/* ---- binary ---- */

template <int OP> struct mtk_binary_is_cmp { static constexpr bool value = mtk_binary_kind(OP) == MTK_KIND_CMP; };

/* The body of every op of MT_BINARY_OPS: mtk_binary_body<OP>::apply(a, b, alpha, bits) (bits:
 * the storage dtype's width, for shifts); as for the unary ops, a missing body does not
 * compile. INT ops are only instantiated for integer dtypes. */
template <int OP> struct mtk_binary_body;
#define MTK_BINARY_BODY(OP, EXPR)                                                                \
  template <> struct mtk_binary_body<OP> {                                                       \
    template <class CT> MTK_D static auto apply(CT a, CT b, CT alpha, int bits) { return EXPR; } \
  };
MTK_BINARY_BODY(MT_ADD, mtk_add(a, mtk_mul(alpha, b)))
MTK_BINARY_BODY(MT_SUB, mtk_sub(a, mtk_mul(alpha, b)))
MTK_BINARY_BODY(MT_MUL, mtk_mul(a, b))
MTK_BINARY_BODY(MT_DIV, mtk_div(a, b))
MTK_BINARY_BODY(MT_POW, mtk_pow(a, b))
MTK_BINARY_BODY(MT_MAXIMUM, mtk_max(a, b))
MTK_BINARY_BODY(MT_MINIMUM, mtk_min(a, b))
MTK_BINARY_BODY(MT_FMOD, mtk_fmod(a, b))
MTK_BINARY_BODY(MT_ATAN2, mtk_atan2(a, b))
MTK_BINARY_BODY(MT_EQ, a == b)
MTK_BINARY_BODY(MT_NE, a != b)
MTK_BINARY_BODY(MT_LT, a < b)
MTK_BINARY_BODY(MT_LE, a <= b)
MTK_BINARY_BODY(MT_GT, a > b)
MTK_BINARY_BODY(MT_GE, a >= b)
MTK_BINARY_BODY(MT_REMAINDER, mtk_remainder(a, b))
MTK_BINARY_BODY(MT_BITAND, a &b)
MTK_BINARY_BODY(MT_BITOR, a | b)
MTK_BINARY_BODY(MT_BITXOR, a ^ b)
MTK_BINARY_BODY(MT_LSHIFT, mtk_shl(a, b, bits))
MTK_BINARY_BODY(MT_RSHIFT, mtk_shr(a, b, bits))

template <int OP, class T, class OT> struct mtk_binary_f {
  typedef typename mtk_ct<T>::type CT;
  OT *out;
  const T *a, *b;
  CT alpha;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    CT x = mtk_ld(a + off[1]), y = mtk_ld(b + off[2]);
    const int bits = (int)(8 * sizeof(T));
    if constexpr (mtk_binary_is_cmp<OP>::value)
      mtk_st(out + off[0], (int64_t)mtk_binary_body<OP>::apply(x, y, alpha, bits));
    else mtk_st(out + off[0], (CT)mtk_binary_body<OP>::apply(x, y, alpha, bits));
  }
};

/* does t (integer dtype, any strides) hold a 0? one flag word, read back: a synchronisation that
 * only integer division pays, to refuse a zero divisor as the CPU does */
template <class T> struct mtk_zero_f {
  const T *t;
  unsigned int *flag;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    if (mtk_ld(t + off[0]) == 0) *flag = 1u;
  }
};

template <class T> static mt_status mtk_has_zero(const mt_tensor *t, int *found, const char *op) {
  mtk_temp flag;
  cudaStream_t s = mt__cuda_stream(t->device);
  MT_TRY(flag.alloc(t->device, sizeof(unsigned int)));
  MT_CUDA_TRY(cudaMemsetAsync(flag.as<void>(), 0, sizeof(unsigned int), s), op);
  const int64_t *st[1] = {t->strides};
  MT_TRY(mtk_pointwise_any_order<1>(t->device, op, t->ndim, t->sizes, st,
                                    mtk_zero_f<T>{mtk_ptr<T>(t), flag.as<unsigned int>()}));
  unsigned int h = 0;
  MT_CUDA_TRY(cudaMemcpyAsync(&h, flag.as<void>(), sizeof h, cudaMemcpyDeviceToHost, s), op);
  MT_CUDA_TRY(cudaStreamSynchronize(s), op);
  *found = h != 0;
  return MT_OK;
}

template <int OP>
static mt_status mtk_binary_run(mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha) {
  const bool cmp = mtk_binary_is_cmp<OP>::value;
  if (a->dtype != b->dtype || (cmp ? out->dtype != MT_U8 : out->dtype != a->dtype))
    return mt__error(MT_ERR_DTYPE, "binary: dtypes %s, %s -> %s are not supported together", mt_dtype_name(a->dtype),
                     mt_dtype_name(b->dtype), mt_dtype_name(out->dtype));
  return mtk_dispatch(a->dtype, "binary", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    typedef typename mtk_ct<T>::type CT;
    typedef typename std::conditional<mtk_binary_is_cmp<OP>::value, uint8_t, T>::type OT;
    if constexpr (mtk_binary_kind(OP) == MTK_KIND_INT && mtk_is_float<T>::value) {
      return mt__error(MT_ERR_DTYPE, "binary: op %d is not defined for %s tensors", OP, mt_dtype_name(a->dtype));
    } else {
      /* integer x/0 and x%0 have no value: refused as on the CPU */
      if constexpr ((OP == MT_DIV || OP == MT_FMOD || OP == MT_REMAINDER) && !mtk_is_float<T>::value) {
        const char *name = OP == MT_DIV ? "cdiv" : OP == MT_FMOD ? "fmod" : "cremainder";
        int zero = 0;
        if (mt__numel(out) > 0) MT_TRY(mtk_has_zero<T>(b, &zero, name));
        if (zero)
          return mt__error(MT_ERR_ARG, "%s: integer division by zero (the divisor %s tensor holds a 0)", name,
                           mt_dtype_name(b->dtype));
      }
      mtk_binary_f<OP, T, OT> f{mtk_ptr<OT>(out), mtk_ptr<T>(a), mtk_ptr<T>(b), mtk_from_double<CT>(alpha)};
      const int64_t *st[3] = {out->strides, a->strides, b->strides};
      return mtk_pointwise_any_order<3>(out->device, "binary", out->ndim, out->sizes, st, f);
    }
  });
}

extern "C" mt_status mt__cuda_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b,
                                     double alpha) {
#define MTK_BINARY_CASE(OP, NAME, KIND, ...) \
  case OP: return mtk_binary_run<OP>(out, a, b, alpha);
  switch (op) {
    MT_BINARY_OPS(MTK_BINARY_CASE, ~)
    default: return mt__error(MT_ERR_ARG, "binary: unknown operation %d", (int)op);
  }
#undef MTK_BINARY_CASE
}

/* ---- addcmul / addcdiv ---- */

template <bool DIV, class T> struct mtk_addc_f {
  typedef typename mtk_ct<T>::type CT;
  T *out;
  const T *a, *b, *c;
  CT value;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    CT x = mtk_ld(a + off[1]), y = mtk_ld(b + off[2]), z = mtk_ld(c + off[3]);
    /* grouped as the CPU does: a + value * (b / c), a + value * (b * c) */
    if constexpr (DIV) mtk_st(out + off[0], mtk_add(x, mtk_mul(value, mtk_div(y, z))));
    else mtk_st(out + off[0], mtk_add(x, mtk_mul(value, mtk_mul(y, z))));
  }
};

extern "C" mt_status mt__cuda_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                                   const mt_tensor *c) {
  const char *op = div ? "addcdiv" : "addcmul";
  return mtk_dispatch(out->dtype, op, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    typedef typename mtk_ct<T>::type CT;
    const int64_t *st[4] = {out->strides, a->strides, b->strides, c->strides};
    CT v = mtk_from_double<CT>(value);
    if (div) {
      mtk_addc_f<true, T> f{mtk_ptr<T>(out), mtk_ptr<T>(a), mtk_ptr<T>(b), mtk_ptr<T>(c), v};
      return mtk_pointwise_any_order<4>(out->device, op, out->ndim, out->sizes, st, f);
    }
    mtk_addc_f<false, T> f{mtk_ptr<T>(out), mtk_ptr<T>(a), mtk_ptr<T>(b), mtk_ptr<T>(c), v};
    return mtk_pointwise_any_order<4>(out->device, op, out->ndim, out->sizes, st, f);
  });
}

/* ---- fill, masked_fill, arange ---- */

/* a double stored into a dtype as the CPU's fill does: bool is "nonzero" (so 0.5 and NaN are
 * true), other integers saturate */
template <class T> static MTK_HD typename mtk_ct<T>::type mtk_fill_value(double v) {
  typedef typename mtk_ct<T>::type CT;
  if constexpr (std::is_same<T, mtk_bool>::value) return (CT)(v != 0);
  else return mtk_from_double<CT>(v);
}

template <class T> struct mtk_fill_f {
  T *t;
  typename mtk_ct<T>::type v;
  MTK_D void operator()(int64_t, const int64_t *off) const { mtk_st(t + off[0], v); }
};

extern "C" mt_status mt__cuda_fill(mt_tensor *t, double v) {
  int64_t n = mt__numel(t);
  if (n == 0) return MT_OK;
  /* +0 has an all-zero bit pattern in every dtype: a memset runs at full bandwidth */
  if (v == 0 && !signbit(v) && mt__is_contiguous(t)) {
    MT_CUDA_TRY(cudaMemsetAsync(mt__data(t), 0, (size_t)n * mt__dtype_size(t->dtype), mt__cuda_stream(t->device)),
                "fill");
    return MT_OK;
  }
  return mtk_dispatch(t->dtype, "fill", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_fill_f<T> f{mtk_ptr<T>(t), mtk_fill_value<T>(v)};
    const int64_t *st[1] = {t->strides};
    return mtk_pointwise_any_order<1>(t->device, "fill", t->ndim, t->sizes, st, f);
  });
}

template <class T> struct mtk_masked_fill_f {
  T *t;
  const uint8_t *mask;
  typename mtk_ct<T>::type v;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    if (mask[off[1]]) mtk_st(t + off[0], v);
  }
};

extern "C" mt_status mt__cuda_masked_fill(mt_tensor *t, const mt_tensor *mask, double v) {
  if (mask->dtype != MT_U8 && mask->dtype != MT_BOOL)
    return mt__error(MT_ERR_DTYPE, "maskedFill: mask has dtype %s, expected uint8 or bool", mt_dtype_name(mask->dtype));
  return mtk_dispatch(t->dtype, "maskedFill", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_masked_fill_f<T> f{mtk_ptr<T>(t), mtk_ptr<uint8_t>(mask), mtk_fill_value<T>(v)};
    const int64_t *st[2] = {t->strides, mask->strides};
    return mtk_pointwise_any_order<2>(t->device, "maskedFill", t->ndim, t->sizes, st, f);
  });
}

/* Store a value computed in double the way the CPU's mt_st_* does for that dtype. */
template <class T> MTK_D void mtk_st_double(T *p, double v) {
  if constexpr (mtk_is_float<T>::value) mtk_st(p, v);
  else mtk_st(p, mtk_fill_value<T>(v));
}

template <class T> struct mtk_arange_f {
  T *t;
  double start, step;
  /* explicit rounding intrinsics: no fused multiply-add, so values match the CPU's bits */
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    mtk_st_double(t + off[0], __dadd_rn(start, __dmul_rn((double)i, step)));
  }
};

extern "C" mt_status mt__cuda_arange(mt_tensor *t, double start, double step) {
  return mtk_dispatch(t->dtype, "arange", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_arange_f<T> f{mtk_ptr<T>(t), start, step};
    const int64_t *st[1] = {t->strides};
    return mtk_pointwise<1>(t->device, "arange", t->ndim, t->sizes, st, f);
  });
}

/* ---- same-dtype strided copy (cat, sort and topk build on it) ---- */

template <class W> struct mtk_copy_f {
  W *dst;
  const W *src;
  MTK_D void operator()(int64_t, const int64_t *off) const { dst[off[0]] = src[off[1]]; }
};

template <class W> static mt_status mtk_copy_words(mt_tensor *dst, const mt_tensor *src, const char *op) {
  mtk_copy_f<W> f{mtk_ptr<W>(dst), mtk_ptr<W>(src)};
  const int64_t *st[2] = {dst->strides, src->strides};
  return mtk_pointwise_any_order<2>(dst->device, op, dst->ndim, dst->sizes, st, f);
}

mt_status mtk_copy_same(mt_tensor *dst, const mt_tensor *src, const char *op) {
  int64_t n = mt__numel(dst);
  if (n == 0) return MT_OK;
  size_t es = mt__dtype_size(dst->dtype);
  if (mt__is_contiguous(dst) && mt__is_contiguous(src)) {
    if (mt__data(dst) != mt__data(src))
      MT_CUDA_TRY(cudaMemcpyAsync(mt__data(dst), mt__data(src), (size_t)n * es, cudaMemcpyDeviceToDevice,
                                  mt__cuda_stream(dst->device)),
                  op);
    return MT_OK;
  }
  /* only the bytes move, so the element size picks the kernel */
  switch (es) {
    case 1: return mtk_copy_words<uint8_t>(dst, src, op);
    case 2: return mtk_copy_words<uint16_t>(dst, src, op);
    case 4: return mtk_copy_words<uint32_t>(dst, src, op);
    default: return mtk_copy_words<uint64_t>(dst, src, op);
  }
}
