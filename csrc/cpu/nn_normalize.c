/* nn_normalize.c: the CPU backend's nn.Normalize over the rows of a contiguous N x D buffer, any
 * float dtype; csrc/nn/normalize.c checks the arguments. Row sums run in NRM_L double lanes
 * (lane j takes the elements j mod NRM_L, then the lanes are added in order): a fixed order, the
 * same for any thread count, that the compiler turns into vector code where a single running
 * sum would be a chain of dependent adds. The row loops are written once in
 * generic/nn_normalize.c and compiled per float dtype. */
#include <math.h>
#include "../core/dtype.h"
#include "cpu.h"

#define NRM_L 8

/* |x|^p for the kinds of p the loops tell apart (the branch is loop-invariant) */
enum { NRM_P1, NRM_P2, NRM_PANY, NRM_PINF };
static int nrm_kind(double p) { return isinf(p) ? NRM_PINF : p == 2 ? NRM_P2 : p == 1 ? NRM_P1 : NRM_PANY; }
static inline double nrm_pow(double a, double p, int kind) { /* a = |x| */
  return kind == NRM_P2 ? a * a : kind == NRM_P1 ? a : pow(a, p);
}
static inline double nrm_sign(double v) { return (double)(v > 0) - (double)(v < 0); }

/* the norm from a row's power sum s (sum |x|^p, or max |x|) */
static double nrm_norm(double s, double p, double eps, int kind) {
  return kind == NRM_PINF ? s + eps : kind == NRM_P2 ? sqrt(s + eps) : kind == NRM_P1 ? s + eps : pow(s + eps, 1 / p);
}

#define MT_GENERIC_FILE "generic/nn_normalize.c"
#include "generate_float.h"

#define NORMALIZE_FORWARD_CASE(E, N_, T, CT) \
  case E: normalize_forward_##N_((const T *)mt__data(xt), (T *)mt__data(yt), N, D, p, eps, kind); break;
mt_status mt__cpu_normalize_forward(mt_tensor *yt, const mt_tensor *xt, int64_t N, int64_t D, double p, double eps) {
  int kind = nrm_kind(p);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NORMALIZE_FORWARD_CASE)
    default: break;
  }
  return MT_OK;
}

#define NORMALIZE_BACKWARD_CASE(E, N_, T, CT) \
  case E: normalize_backward_##N_((const T *)xp, (const T *)gp, (T *)rp, N, D, p, eps, kind); break;
mt_status mt__cpu_normalize_backward(mt_tensor *rt, const mt_tensor *xt, const mt_tensor *gt, int64_t N, int64_t D,
                                     double p, double eps) {
  int kind = nrm_kind(p);
  const void *xp = mt__data(xt), *gp = mt__data(gt);
  void *rp = mt__data(rt);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NORMALIZE_BACKWARD_CASE)
    default: break;
  }
  return MT_OK;
}
