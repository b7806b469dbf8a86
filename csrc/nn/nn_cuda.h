/* nn_cuda.h: the CUDA side of the nn layers, criterions and optimizer steps.
 * The public functions in csrc/nn/ validate every argument (so both devices give the same
 * errors), prepare the outputs, make the inputs contiguous and then call these for CUDA tensors.
 * So every tensor passed here is contiguous, on one CUDA device, with checked sizes and dtypes;
 * result tensors are contiguous buffers of the final size. Implementations: csrc/cuda/cudnn_*.c
 * (cuDNN convolution) and kernels/nn_*.cu, kernels/optim.cu; a build without CUDA links
 * csrc/nn/cuda_nn_stub.c, whose versions return MT_ERR_CUDA. */
#ifndef MT_NN_CUDA_H
#define MT_NN_CUDA_H
#include <stdint.h>
#include "../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* convolution (cuDNN): y = conv(x, w) + b (b may be NULL); dx = conv^T(dy, w);
 * dw += scale * dL/dw, db += scale * dL/db (db may be NULL) */
mt_status mt__cuda_nn_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                     int sW, int sH, int pW, int pH, int dW, int dH, int groups);
mt_status mt__cuda_nn_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w, int sW, int sH,
                                            int pW, int pH, int dW, int dH, int groups);
mt_status mt__cuda_nn_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                             double scale, int sW, int sH, int pW, int pH, int dW, int dH,
                                             int groups);
/* the bias of a convolution (kernels/nn_conv_bias.cu): y (N x O x H x W) += b (O);
 * db (O) += scale * the sum of dy over batch and plane */
mt_status mt__cuda_nn_conv_bias_add(mt_tensor *y, const mt_tensor *b);
mt_status mt__cuda_nn_conv_bias_grad(mt_tensor *db, const mt_tensor *dy, double scale);

/* pooling over `planes` contiguous H x W planes (output planes oH x oW); max-pool indices are
 * int64, 0-based within a plane (as on the CPU). */
typedef struct mt__cuda_pool_geom {
  int64_t planes, H, W, oH, oW;
  int kW, kH, dW, dH, pW, pH;
} mt__cuda_pool_geom;
mt_status mt__cuda_nn_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x,
                                        const mt__cuda_pool_geom *g);
mt_status mt__cuda_nn_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                         const mt__cuda_pool_geom *g);
mt_status mt__cuda_nn_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt__cuda_pool_geom *g,
                                        int count_include_pad);
mt_status mt__cuda_nn_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt__cuda_pool_geom *g,
                                         int count_include_pad);
mt_status mt__cuda_nn_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt__cuda_pool_geom *g);
mt_status mt__cuda_nn_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt__cuda_pool_geom *g);

/* activations (MT_ACT_*): y = f(x); r = f'(saved) * g (saved: input or output, as on the CPU) */
mt_status mt__cuda_nn_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha);
mt_status mt__cuda_nn_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                          double alpha);

/* batch norm over an N x C x S buffer; stats tensors have the input's dtype (see moontorch.h) */
mt_status mt__cuda_nn_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                        const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                        mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                        double eps, int64_t N, int64_t C, int64_t S);
mt_status mt__cuda_nn_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *x,
                                         const mt_tensor *g, const mt_tensor *weight, const mt_tensor *running_mean,
                                         const mt_tensor *running_var, const mt_tensor *save_mean,
                                         const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                         int64_t C, int64_t S);

/* (log-)softmax over the middle dim of an outer x D x inner buffer */
mt_status mt__cuda_nn_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,
                                      int log);
mt_status mt__cuda_nn_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer, int64_t D,
                                       int64_t inner, int log);

/* class NLL over an N x C buffer of log-probabilities; t (0-based targets, N) and w (class
 * weights, C) are host arrays, already validated. Forward gives sum_i -w[t_i] x[i][t_i] and
 * (when smooth != NULL) sum_i sum_c -w[c] x[i][c]. Backward writes the CPU's formula with norm. */
mt_status mt__cuda_nn_class_nll_forward(double *nll, double *smooth, const mt_tensor *x, const int64_t *t,
                                        const double *w, int64_t N, int64_t C);
mt_status mt__cuda_nn_class_nll_backward(mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,
                                         double smoothing, double norm);

/* MSE: *acc = sum (x - y)^2; r = k (x - y) */
mt_status mt__cuda_nn_mse_forward(double *acc, const mt_tensor *x, const mt_tensor *y);
mt_status mt__cuda_nn_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k);

/* fused optimizer steps: same arguments and formulas as mt_sgd_step & co. (optim*.c) */
mt_status mt__cuda_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                            const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay,
                            int nesterov, int first);
mt_status mt__cuda_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,
                             double beta2, double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2);
mt_status mt__cuda_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                             const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                             double weight_decay, double eta, double eps, int first, double *trust_out);
mt_status mt__cuda_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                             const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude,
                             double beta1, double beta2, double ibc1, double ibc2, double lr, double eps,
                             double weight_decay, double max_trust, double *trust_out);

#ifdef __cplusplus
}
#endif
#endif
