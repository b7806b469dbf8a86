/* nn_cpu.h: the CPU backend's nn layers, criterions and optimizer steps, one per mt_backend
 * field of the same name (csrc/core/backend.h says what they may assume), registered in
 * table.c. Kept apart from cpu.h: these are the only users of the nn part of the table. */
#ifndef MT_CPU_NN_CPU_H
#define MT_CPU_NN_CPU_H
#include "../core/backend.h"

/* nn_conv.c */
mt_status mt__cpu_nn_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                    const mt_conv_geom *g);
mt_status mt__cpu_nn_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w,
                                           const mt_conv_geom *g);
mt_status mt__cpu_nn_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                            double scale, const mt_conv_geom *g);
/* nn_pool.c */
mt_status mt__cpu_nn_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x, const mt_pool_geom *g);
mt_status mt__cpu_nn_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                        const mt_pool_geom *g);
mt_status mt__cpu_nn_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, int count_include_pad);
mt_status mt__cpu_nn_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g,
                                        int count_include_pad);
mt_status mt__cpu_nn_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g);
mt_status mt__cpu_nn_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g);
/* nn_activation.c */
mt_status mt__cpu_nn_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha);
mt_status mt__cpu_nn_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                         double alpha);
/* nn_batchnorm.c */
mt_status mt__cpu_nn_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                       const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                       mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                       double eps, int64_t N, int64_t C, int64_t S);
mt_status mt__cpu_nn_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *x,
                                        const mt_tensor *g, const mt_tensor *weight, const mt_tensor *running_mean,
                                        const mt_tensor *running_var, const mt_tensor *save_mean,
                                        const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                        int64_t C, int64_t S);
/* nn_loss.c */
mt_status mt__cpu_nn_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,
                                     int log);
mt_status mt__cpu_nn_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer, int64_t D,
                                      int64_t inner, int log);
mt_status mt__cpu_nn_class_nll_forward(double *nll, double *smooth, const mt_tensor *x, const int64_t *t,
                                       const double *w, int64_t N, int64_t C);
mt_status mt__cpu_nn_class_nll_backward(mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,
                                        double smoothing, double norm);
mt_status mt__cpu_nn_mse_forward(double *acc, const mt_tensor *x, const mt_tensor *y);
mt_status mt__cpu_nn_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k);
/* optim.c, optim_layerwise.c */
mt_status mt__cpu_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                           const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay,
                           int nesterov, int first);
mt_status mt__cpu_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,
                            double beta2, double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2);
mt_status mt__cpu_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                            const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                            double weight_decay, double eta, double eps, int first, double *trust_out);
mt_status mt__cpu_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                            const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude,
                            double beta1, double beta2, double ibc1, double ibc2, double lr, double eps,
                            double weight_decay, double max_trust, double *trust_out);
#endif
