/* nn_batchnorm.c: the CPU backend's batch normalization over dim 1 of an N x C x S buffer, any
 * float dtype (statistics accumulate in double), alone or fused with a residual add and a ReLU;
 * csrc/nn/batchnorm.c checks the arguments. Training uses the batch statistics (biased variance
 * to normalise, unbiased for the running variance, running = (1-momentum) running + momentum
 * batch); evaluation uses the running statistics. Stat and parameter tensors are contiguous
 * size C, of the input's dtype or float32, read and written through double accessors.
 *
 * The fused forward rounds the BN output to the dtype, adds the residual in the dtype's compute
 * type and rounds again, then clamps at 0, which is what SpatialBatchNormalization -> CAddTable
 * -> ReLU do, so the results are bit-identical to that chain; the fused backward masks
 * gradOutput by output > 0 as the ReLU's backward does.
 *
 * This file: NCHW, element (n, c, s) at (n C + c) S + s, work split over channels; the
 * per-channel loops are written once in generic/nn_batchnorm.c and compiled per float dtype.
 * Channels-last buffers go to nn_batchnorm_cl.c, which sums in the same order (nn_batchnorm.h). */
#include "nn_batchnorm.h"

#define MT_GENERIC_FILE "generic/nn_batchnorm.c"
#include "generate_float.h"

#define STATS_CASE(E, N_, T, CT)                         \
  case E:                                                \
    bn_stats_##N_((const T *)xp, N, C, S, c, &sum, &sq); \
    break;
#define NORMALIZE_CASE(E, N_, T, CT) \
  case E: bn_normalize_##N_((const T *)xp, (const T *)rsp, (T *)yp, relu, N, C, S, c, coef); break;
mt_status mt__cpu_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *res, const mt_tensor *weight,
                                    const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                    mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                    double eps, int relu, int64_t N, int64_t C, int64_t S, int cl) {
  bn_cpu_ctx a = {weight, bias,  running_mean, running_var, save_mean, save_invstd, NULL,
                  NULL,   train, momentum,     eps,         1.0,       N * S};
  if (cl) return mt__cpu_bn_forward_cl(y, x, res, &a, relu, N, C, S);
  const void *xp = mt__data(x), *rsp = res ? mt__data(res) : NULL;
  void *yp = mt__data(y);
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double sum = 0, sq = 0, coef[3];
    if (train) {
      switch (dt) {
        MT_FLOAT_DTYPE_LIST(STATS_CASE)
        default: break;
      }
    }
    bn_forward_channel(&a, c, sum, sq, coef);
    switch (dt) {
      MT_FLOAT_DTYPE_LIST(NORMALIZE_CASE)
      default: break;
    }
  }
  return MT_OK;
}

/* y NULL: gradOutput unmasked (no fused ReLU); r or gr NULL: no gradInput or no gradResidual */
#define DOT_CASE(E, N_, T, CT)                                                                      \
  case E:                                                                                           \
    bn_dot_##N_((const T *)xp, (const T *)gp, (const T *)yp, N, C, S, c, mean, &sum_go, &sum_go_x); \
    break;
#define GRAD_INPUT_CASE(E, N_, T, CT) \
  case E: bn_grad_input_##N_((const T *)xp, (const T *)gp, (const T *)yp, (T *)rp, (T *)grp, N, C, S, c, coef); break;
mt_status mt__cpu_batchnorm_backward(mt_tensor *r, mt_tensor *gr, mt_tensor *gradWeight, mt_tensor *gradBias,
                                     const mt_tensor *x, const mt_tensor *g, const mt_tensor *y,
                                     const mt_tensor *weight, const mt_tensor *running_mean,
                                     const mt_tensor *running_var, const mt_tensor *save_mean,
                                     const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                     int64_t C, int64_t S, int cl) {
  bn_cpu_ctx a = {weight,   NULL,  running_mean, running_var, save_mean, save_invstd, gradWeight,
                  gradBias, train, 0.0,          eps,         scale,     N * S};
  if (cl) return mt__cpu_bn_backward_cl(r, gr, x, g, y, &a, N, C, S);
  const void *xp = mt__data(x), *gp = mt__data(g), *yp = y ? mt__data(y) : NULL;
  void *rp = r ? mt__data(r) : NULL, *grp = gr ? mt__data(gr) : NULL;
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean, invstd, sum_go = 0, sum_go_x = 0, coef[4];
    bn_backward_stats(&a, c, &mean, &invstd);
    switch (dt) {
      MT_FLOAT_DTYPE_LIST(DOT_CASE)
      default: break;
    }
    bn_backward_channel(&a, c, mean, invstd, sum_go, sum_go_x, coef);
    if (rp || grp) {
      switch (dt) {
        MT_FLOAT_DTYPE_LIST(GRAD_INPUT_CASE)
        default: break;
      }
    }
  }
  return MT_OK;
}
