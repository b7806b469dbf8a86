/* nn_activation.c: the CPU backend's pointwise activations (ReLU, LeakyReLU, Sigmoid, Tanh),
 * forward and backward, any float dtype, over contiguous buffers; csrc/nn/activation.c checks
 * the arguments. Forward may run in place (y == x). */
#include <math.h>
#include "../core/dtype.h"
#include "cpu.h"

/* float math for float compute types (the branch folds at compile time); not MT_-prefixed:
 * MT_EXP and MT_TANH are unary ops (moontorch.h) */
#define ACT_EXP(CT, x) (sizeof(CT) == 4 ? (CT)expf((float)(x)) : (CT)exp((double)(x)))
#define ACT_TANH(CT, x) (sizeof(CT) == 4 ? (CT)tanhf((float)(x)) : (CT)tanh((double)(x)))

#define FWD_LOOP(N, TT, CT, EXPR)                                               \
  {                                                                             \
    const TT *x = (const TT *)xp;                                               \
    TT *y = (TT *)yp;                                                           \
    _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)")                     \
    for (int64_t i = 0; i < n; i++) {                                           \
      CT v = mt_ld_##N(x + i);                                                  \
      mt_st_##N(y + i, (EXPR));                                                 \
    }                                                                           \
  }

#define FWD_CASE(E, N, TT, CT)                                                              \
  case E:                                                                                   \
    switch (kind) {                                                                         \
    case MT_ACT_RELU: FWD_LOOP(N, TT, CT, v > 0 ? v : (CT)0) break;                        \
    case MT_ACT_LEAKY_RELU: FWD_LOOP(N, TT, CT, v > 0 ? v : (CT)(v * a)) break;            \
    case MT_ACT_SIGMOID: FWD_LOOP(N, TT, CT, (CT)1 / ((CT)1 + ACT_EXP(CT, -v))) break;         \
    default: FWD_LOOP(N, TT, CT, ACT_TANH(CT, v)) break;                                      \
    }                                                                                       \
    break;

mt_status mt__cpu_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha) {
  int64_t n = mt__numel(x);
  const void *xp = mt__data(x);
  void *yp = mt__data(y);
  double a = alpha;
  (void)a;
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(FWD_CASE)
  default: break;
  }
  return MT_OK;
}

#define BWD_LOOP(N, TT, CT, EXPR)                                               \
  {                                                                             \
    const TT *g = (const TT *)gp;                                               \
    const TT *z = (const TT *)zp;                                               \
    TT *r = (TT *)rp;                                                           \
    _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)")                     \
    for (int64_t i = 0; i < n; i++) {                                           \
      CT go = mt_ld_##N(g + i), v = mt_ld_##N(z + i);                           \
      mt_st_##N(r + i, (EXPR));                                                 \
    }                                                                           \
  }

#define BWD_CASE(E, N, TT, CT)                                                          \
  case E:                                                                               \
    switch (kind) {                                                                     \
    case MT_ACT_RELU: BWD_LOOP(N, TT, CT, v > 0 ? go : (CT)0) break;                   \
    case MT_ACT_LEAKY_RELU: BWD_LOOP(N, TT, CT, v > 0 ? go : (CT)(go * a)) break;      \
    case MT_ACT_SIGMOID: BWD_LOOP(N, TT, CT, go * v * (1 - v)) break;                  \
    default: BWD_LOOP(N, TT, CT, go * (1 - v * v)) break;                              \
    }                                                                                   \
    break;

mt_status mt__cpu_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                         double alpha) {
  int64_t n = mt__numel(saved);
  const void *gp = mt__data(g), *zp = mt__data(saved);
  void *rp = mt__data(r);
  double a = alpha;
  (void)a;
  switch (saved->dtype) {
    MT_FLOAT_DTYPE_LIST(BWD_CASE)
  default: break;
  }
  return MT_OK;
}
