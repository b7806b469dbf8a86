/* kernels.h: the one interface between the device code (the .cu files here) and the host side of the
 * CUDA backend (csrc/cuda). Two directions:
 *  - what kernels/ provides: launchers, most with exactly an mt_backend field's signature (see
 *    csrc/core/backend.h for what they may assume), registered by csrc/cuda/table.c;
 *  - the few host services kernels/ uses (streams, error conversion), implemented in csrc/cuda.
 * Only core headers are included, so kernels/ never reaches into csrc/cuda or csrc/nn.
 * C linkage so the C side can take the launchers' addresses. */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H
#include <cuda_runtime.h>
#include "../csrc/core/backend.h"
#include "../csrc/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host services (csrc/cuda/device.c) ---- */

/* The stream every op on `device` is queued on (created on first use, non-blocking with respect
 * to the legacy default stream). Also makes `device` current for the calling thread. */
cudaStream_t mt__cuda_stream(int device);
/* mt__cuda_stream with a status: an error (naming op) when the device is missing or the stream
 * cannot be created. */
mt_status mt__cuda_get_stream(int device, cudaStream_t *out, const char *op);
/* Convert a CUDA error into an mt_status with a message naming the op. */
mt_status mt__cuda_error(cudaError_t err, const char *op, const char *file, int line);

#define MT_CUDA_TRY(expr, op)                                                  \
  do {                                                                         \
    cudaError_t mt__e = (expr);                                                \
    if (mt__e != cudaSuccess) return mt__cuda_error(mt__e, (op), __FILE__, __LINE__); \
  } while (0)

/* After a kernel launch: report launch failures (bad configuration, no device). */
#define MT_CUDA_LAUNCH_CHECK(op) MT_CUDA_TRY(cudaGetLastError(), (op))

/* ---- launchers ---- */

/* the strided dtype-converting copy (kernels/copy.cu): dst and src on the same device, same
 * sizes, any dtypes and strides; queued on the device's stream */
mt_status mt__cuda_convert(mt_tensor *dst, const mt_tensor *src);

/* pointwise (kernels/pointwise.cu) */
mt_status mt__cuda_fill(mt_tensor *t, double v);
mt_status mt__cuda_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
mt_status mt__cuda_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b,
                          double alpha);
mt_status mt__cuda_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                        const mt_tensor *c);
mt_status mt__cuda_masked_fill(mt_tensor *t, const mt_tensor *mask, double v);
mt_status mt__cuda_arange(mt_tensor *t, double start, double step);

/* random (kernels/random.cu) */
mt_status mt__cuda_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi);
mt_status mt__cuda_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std);
mt_status mt__cuda_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p);

/* reductions (kernels/reduce.cu) */
mt_status mt__cuda_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim,
                          double p, int64_t base);

/* structure and indexing (kernels/index.cu) */
mt_status mt__cuda_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask);
mt_status mt__cuda_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim);
mt_status mt__cuda_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index,
                                int64_t base);
mt_status mt__cuda_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                             int64_t base);
mt_status mt__cuda_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
mt_status mt__cuda_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt__cuda_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,
                           int64_t base);

/* sorting (kernels/sort.cu) */
mt_status mt__cuda_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                        int64_t base);
mt_status mt__cuda_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim,
                        int largest, int sorted, int64_t base);

/* the bias of a convolution (kernels/nn_conv_bias.cu), used by cuDNN convolution: y (N x O x H
 * x W) += b (O); db (O) += scale * the sum of dy over batch and plane */
mt_status mt__cuda_nn_conv_bias_add(mt_tensor *y, const mt_tensor *b);
mt_status mt__cuda_nn_conv_bias_grad(mt_tensor *db, const mt_tensor *dy, double scale);

/* nn layers, criterions and optimizer steps: the mt_backend fields of the same names */
mt_status mt__cuda_nn_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x, const mt_pool_geom *g);
mt_status mt__cuda_nn_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                         const mt_pool_geom *g);
mt_status mt__cuda_nn_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g,
                                        int count_include_pad);
mt_status mt__cuda_nn_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g,
                                         int count_include_pad);
mt_status mt__cuda_nn_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g);
mt_status mt__cuda_nn_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g);
mt_status mt__cuda_nn_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha);
mt_status mt__cuda_nn_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                          double alpha);
mt_status mt__cuda_nn_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                        const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                        mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                        double eps, int64_t N, int64_t C, int64_t S);
mt_status mt__cuda_nn_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *x,
                                         const mt_tensor *g, const mt_tensor *weight, const mt_tensor *running_mean,
                                         const mt_tensor *running_var, const mt_tensor *save_mean,
                                         const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                         int64_t C, int64_t S);
mt_status mt__cuda_nn_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,
                                      int log);
mt_status mt__cuda_nn_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer, int64_t D,
                                       int64_t inner, int log);
mt_status mt__cuda_nn_class_nll_forward(double *nll, double *smooth, const mt_tensor *x, const int64_t *t,
                                        const double *w, int64_t N, int64_t C);
mt_status mt__cuda_nn_class_nll_backward(mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,
                                         double smoothing, double norm);
mt_status mt__cuda_nn_mse_forward(double *acc, const mt_tensor *x, const mt_tensor *y);
mt_status mt__cuda_nn_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k);
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
