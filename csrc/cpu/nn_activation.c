/* nn_activation.c: the CPU backend's pointwise activations (ReLU, LeakyReLU, Sigmoid, Tanh, ELU),
 * forward and backward, any float dtype, over contiguous buffers; csrc/nn/activation.c checks
 * the arguments. Forward may run in place (y == x). The loops, one per kind, are written once in
 * generic/nn_activation.c and compiled per float dtype. */
#include <math.h>
#include <string.h>
#include "../core/dtype.h"
#include "cpu.h"

/* float math for float compute types (the branch folds at compile time); not MT_-prefixed:
 * MT_EXP and MT_TANH are unary ops (moontorch.h) */
#define ACT_EXP(CT, x) (sizeof(CT) == 4 ? (CT)expf((float)(x)) : (CT)exp((double)(x)))
#define ACT_TANH(CT, x) (sizeof(CT) == 4 ? (CT)tanhf((float)(x)) : (CT)tanh((double)(x)))
/* ELU, forward and backward (from the output). Both arms are computed before the select: the
 * compiler will not speculate float arithmetic out of a branch, and a branch on the sign of random
 * data mispredicts half the time (backward: m + (1 - m) s with m = [v > 0], exact either way).
 * Double keeps libm's expm1 (the gradient checks run in double). */
/* expm1(x) for x <= 0 in float, without a libm call so the loop vectorizes: x = n ln2 + r with
 * |r| <= ln2/2, q = e^r - 1 by its Taylor series to r^7 (truncation below 1e-8), and
 * e^x - 1 = q 2^n + (2^n - 1), which keeps the relative accuracy near 0 (n = 0 there). */
static inline float elu_expm1_neg(float x) {
  x = x < -87.0f ? -87.0f : x;  /* below, e^x - 1 is -1 in float; keeps 2^n a normal number */
  float xn = x == x ? x : 0.0f; /* n from a number (NaN has no exponent); a NaN goes on through r */
  float n = (xn * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest by 1.5*2^23, no call */
  float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;    /* ln2 in two parts */
  float q =
      r *
      (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
  uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
  float p2;
  memcpy(&p2, &bits, sizeof p2);
  return q * p2 + (p2 - 1.0f);
}
static inline float elu_fwd_f(float v, float a) {
  float e = a * elu_expm1_neg(v > 0 ? 0.0f : v); /* a NaN input goes on to the output */
  return v > 0 ? v : e;
}
static inline double elu_fwd_d(double v, double a) {
  double e = a * expm1(v > 0 ? 0.0 : v);
  return v > 0 ? v : e;
}
static inline float elu_bwd_f(float go, float v, float a) {
  float m = (float)(v > 0), s = (v > 0 ? 0.0f : v) + a; /* a NaN output stays in s */
  return go * (m + (1.0f - m) * s);
}
static inline double elu_bwd_d(double go, double v, double a) {
  double m = (double)(v > 0), s = (v > 0 ? 0.0 : v) + a; /* a NaN output stays in s */
  return go * (m + (1.0 - m) * s);
}
#define ELU_FWD(CT, v, a) _Generic((CT)0, float : elu_fwd_f, default : elu_fwd_d)((v), (CT)(a))
#define ELU_BWD(CT, go, v, a) _Generic((CT)0, float : elu_bwd_f, default : elu_bwd_d)((go), (v), (CT)(a))

#define MT_GENERIC_FILE "generic/nn_activation.c"
#include "generate_float.h"

#define FWD_CASE(E, N, T, CT) \
  case E: activation_forward_##N((const T *)xp, (T *)yp, n, kind, alpha); break;
MT_AVX2_CLONES mt_status mt__cpu_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha) {
  int64_t n = mt__numel(x);
  const void *xp = mt__data(x);
  void *yp = mt__data(y);
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(FWD_CASE)
    default: break;
  }
  return MT_OK;
}

#define BWD_CASE(E, N, T, CT) \
  case E: activation_backward_##N((const T *)gp, (const T *)zp, (T *)rp, n, kind, alpha); break;
MT_AVX2_CLONES mt_status mt__cpu_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                                     double alpha) {
  int64_t n = mt__numel(saved);
  const void *gp = mt__data(g), *zp = mt__data(saved);
  void *rp = mt__data(r);
  switch (saved->dtype) {
    MT_FLOAT_DTYPE_LIST(BWD_CASE)
    default: break;
  }
  return MT_OK;
}
