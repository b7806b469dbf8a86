/* nn_loss_ce.c: the CPU backend's cross-entropy (LogSoftMax + class NLL in one op) over a
 * contiguous N x C buffer of scores; csrc/nn/loss.c checks the arguments and reads targets and
 * class weights. Every value is computed as the two-op composition computes it (the recipes
 * train with this loss): exp in the compute type, log in double, the row reductions of
 * vec_exp.h as nn.LogSoftMax does them, the log-softmax rounded to the dtype before NLL reads it, the loss
 * summed in row order. What the fusion saves is the N x C log-softmax and NLL-gradient
 * tensors and their extra passes: the forward writes one log-sum-exp per row, the backward
 * recomputes the log-softmax from it. The loops are written once in generic/nn_loss_ce.c and
 * compiled per float dtype. */
#include <math.h>
#include <stdlib.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "vec_exp.h"

#define MT_GENERIC_FILE "generic/nn_loss_ce.c"
#include "generate_float.h"

#define CE_FORWARD_CASE(E, N_, T, CT) \
  case E: cross_entropy_forward_##N_((const T *)mt__data(xt), tg, w, lse, N, C, smoothing, &nll, &smooth); break;
MT_AVX2_CLONES mt_status mt__cpu_cross_entropy_forward(double *nll_out, double *smooth_out, mt_tensor *lse_t,
                                                       const mt_tensor *xt, const int64_t *tg, const double *w,
                                                       int64_t N, int64_t C) {
  double nll = 0, smooth = 0, *lse = (double *)mt__data(lse_t);
  int smoothing = smooth_out != NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(CE_FORWARD_CASE)
    default: break;
  }
  *nll_out = nll;
  if (smooth_out) *smooth_out = smooth;
  return MT_OK;
}

#define CE_BACKWARD_CASE(E, N_, T, CT) \
  case E: cross_entropy_backward_##N_((const T *)xp, (T *)rp, lse, tg, w, scratch, N, C, smoothing, norm); break;
MT_AVX2_CLONES mt_status mt__cpu_cross_entropy_backward(mt_tensor *rt, const mt_tensor *xt, const mt_tensor *lse_t,
                                                        const int64_t *tg, const double *w, int64_t N, int64_t C,
                                                        double smoothing, double norm) {
  const double *lse = (const double *)mt__data(lse_t);
  /* the NLL gradient's values off and on the target (C each), and MT_ROW_CHUNK zeros: the g of
   * an ignored row */
  double *scratch = calloc((size_t)C * 2 + MT_ROW_CHUNK, sizeof *scratch);
  if (!scratch) return mt__error(MT_ERR_MEMORY, "nn.CrossEntropyCriterion: out of memory");
  const void *xp = mt__data(xt);
  void *rp = mt__data(rt);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(CE_BACKWARD_CASE)
    default: break;
  }
  free(scratch);
  return MT_OK;
}
