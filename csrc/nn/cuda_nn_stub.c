/* cuda_nn_stub.c: the CUDA side of the nn layers in a build without CUDA. The public functions
 * only get here with a tensor on a CUDA device, which such a build cannot make, but the
 * dispatch must still link; each answers with a clear error instead. */
#ifndef MT_WITH_CUDA
#include "nn_cuda.h"
#include "../core/error.h"

#define NO_CUDA(op) return mt__error(MT_ERR_CUDA, op ": this build of moontorch has no CUDA support")

mt_status mt__cuda_nn_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                     int sW, int sH, int pW, int pH, int dW, int dH, int groups) {
  NO_CUDA("nn.SpatialConvolution");
}
mt_status mt__cuda_nn_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w, int sW, int sH,
                                            int pW, int pH, int dW, int dH, int groups) {
  NO_CUDA("nn.SpatialConvolution");
}
mt_status mt__cuda_nn_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                             double scale, int sW, int sH, int pW, int pH, int dW, int dH,
                                             int groups) {
  NO_CUDA("nn.SpatialConvolution");
}
mt_status mt__cuda_nn_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x,
                                        const mt__cuda_pool_geom *g) {
  NO_CUDA("SpatialMaxPooling");
}
mt_status mt__cuda_nn_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                         const mt__cuda_pool_geom *g) {
  NO_CUDA("SpatialMaxPooling");
}
mt_status mt__cuda_nn_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt__cuda_pool_geom *g,
                                        int count_include_pad) {
  NO_CUDA("SpatialAveragePooling");
}
mt_status mt__cuda_nn_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt__cuda_pool_geom *g,
                                         int count_include_pad) {
  NO_CUDA("SpatialAveragePooling");
}
mt_status mt__cuda_nn_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt__cuda_pool_geom *g) {
  NO_CUDA("SpatialAdaptiveAveragePooling");
}
mt_status mt__cuda_nn_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt__cuda_pool_geom *g) {
  NO_CUDA("SpatialAdaptiveAveragePooling");
}
mt_status mt__cuda_nn_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha) {
  NO_CUDA("nn activation");
}
mt_status mt__cuda_nn_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                          double alpha) {
  NO_CUDA("nn activation");
}
mt_status mt__cuda_nn_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                        const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                        mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                        double eps, int64_t N, int64_t C, int64_t S) {
  NO_CUDA("nn.BatchNormalization");
}
mt_status mt__cuda_nn_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *x,
                                         const mt_tensor *g, const mt_tensor *weight, const mt_tensor *running_mean,
                                         const mt_tensor *running_var, const mt_tensor *save_mean,
                                         const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                         int64_t C, int64_t S) {
  NO_CUDA("nn.BatchNormalization");
}
mt_status mt__cuda_nn_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,
                                      int log) {
  NO_CUDA("nn.SoftMax");
}
mt_status mt__cuda_nn_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer, int64_t D,
                                       int64_t inner, int log) {
  NO_CUDA("nn.SoftMax");
}
mt_status mt__cuda_nn_class_nll_forward(double *nll, double *smooth, const mt_tensor *x, const int64_t *t,
                                        const double *w, int64_t N, int64_t C) {
  NO_CUDA("nn.ClassNLLCriterion");
}
mt_status mt__cuda_nn_class_nll_backward(mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,
                                         double smoothing, double norm) {
  NO_CUDA("nn.ClassNLLCriterion");
}
mt_status mt__cuda_nn_mse_forward(double *acc, const mt_tensor *x, const mt_tensor *y) { NO_CUDA("nn.MSECriterion"); }
mt_status mt__cuda_nn_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k) {
  NO_CUDA("nn.MSECriterion");
}
mt_status mt__cuda_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                            const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay,
                            int nesterov, int first) {
  NO_CUDA("sgd_step");
}
mt_status mt__cuda_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,
                             double beta2, double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2) {
  NO_CUDA("adam_step");
}
mt_status mt__cuda_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                             const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                             double weight_decay, double eta, double eps, int first, double *trust_out) {
  NO_CUDA("lars_step");
}
mt_status mt__cuda_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                             const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude,
                             double beta1, double beta2, double ibc1, double ibc2, double lr, double eps,
                             double weight_decay, double max_trust, double *trust_out) {
  NO_CUDA("lamb_step");
}
#else
/* ISO C forbids an empty translation unit */
typedef int mt__cuda_nn_stub_unused;
#endif
