/* backend.h: the op table each backend (CPU, CUDA) fills in.
 *
 * The public entry points (csrc/core/ops_*.c) validate arguments, broadcast, resize outputs
 * and then call exactly one backend function. A backend may therefore assume:
 *  - every tensor lives on its device (copy is the exception: one side may be the host),
 *  - dtypes are the ones the entry point documents (e.g. binary: out/a/b same dtype except
 *    comparisons, whose out is MT_U8),
 *  - elementwise operands already have out's shape (inputs may have 0 strides from expand),
 *  - out may alias an input exactly, but never partially.
 * Backends never allocate outputs for the caller except where noted (masked_select).
 */
#ifndef MT_CORE_BACKEND_H
#define MT_CORE_BACKEND_H
#include "tensor.h"

/* Geometry of a 2-d convolution over an N x C x H x W input and an O x Cg x kH x kW weight,
 * checked by csrc/nn/conv.c (C = Cg * groups, oH/oW >= 1). pointwise: 1x1, stride 1, no
 * padding (the image is its own column matrix). */
typedef struct mt_conv_geom {
  int64_t N, C, H, W, O, Cg, kH, kW, oH, oW;
  int64_t sW, sH, pW, pH, dW, dH, groups;
  int pointwise;
} mt_conv_geom;

/* Geometry of a 2-d pooling over `planes` H x W planes into oH x oW ones (adaptive pooling
 * leaves kernel, stride and padding 0). cs is 1 for NCHW planes (plane p at p*H*W, pixel i at
 * +i) and C for channels-last operands (N x H x W x C in memory: plane p = n*C + c at
 * n*H*W*C + c, pixel i at +i*C); inputs, results and max-pool indices share that layout. */
typedef struct mt_pool_geom {
  int64_t planes, H, W, oH, oW, cs;
  int kW, kH, dW, dH, pW, pH;
} mt_pool_geom;

/* Geometry of 3-d convolution columns and 3-d max pooling (csrc/nn/vol.c, vol_pool.c): C planes
 * (channels of one sample, or all planes of a batch for pooling) of T x H x W into oT x oH x oW;
 * kernel k, stride d, padding p and dilation l per dimension. */
typedef struct mt_vol_geom {
  int64_t C, T, H, W, oT, oH, oW;
  int kT, kH, kW, dT, dH, dW, pT, pH, pW, lT, lH, lW;
} mt_vol_geom;

/* The table's slots, one list: X(P, RET, NAME, (ARGS)) for each. It gives the struct below,
 * each backend's declarations (MT_BACKEND_DECLARE with its prefix: mt__cpu_conv2d_forward, ...)
 * and each backend's table (MT_BACKEND_ENTRY), so a slot is written once and a backend that
 * lacks a function fails to link. */
/* (clang-format would space the argument lists' pointers as products) */
/* clang-format off */
#define MT_BACKEND_OPS(X, P)                                                                                        \
  /* storage memory */                                                                                              \
  X(P, mt_status, alloc, (int device, size_t nbytes, int pinned, void **ptr))                                       \
  X(P, void, free, (int device, void *ptr, size_t nbytes, int pinned))                                              \
  X(P, mt_status, memory_stats, (int device, mt_memory_stats *out))                                                 \
  X(P, mt_status, memory_reset_peak, (int device))                                                                  \
  /* pointwise */                                                                                                   \
  X(P, mt_status, fill, (mt_tensor *t, double v))                                                                   \
  /* same shape; dtypes may differ */                                                                               \
  X(P, mt_status, copy, (mt_tensor *dst, const mt_tensor *src))                                                     \
  X(P, mt_status, unary, (mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2))                \
  X(P, mt_status, binary, (mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha))  \
  /* out = a + value * b * c (div = 0) or a + value * b / c (div = 1) */                                            \
  X(P, mt_status, addc, (int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,             \
      const mt_tensor *c))                                                                                          \
  /* mask expanded to t */                                                                                          \
  X(P, mt_status, masked_fill, (mt_tensor *t, const mt_tensor *mask, double v))                                     \
  /* resizes out (1-d) itself: the count is data dependent */                                                       \
  X(P, mt_status, masked_select, (mt_tensor *out, const mt_tensor *src, const mt_tensor *mask))                     \
  /* t contiguous */                                                                                                \
  X(P, mt_status, arange, (mt_tensor *t, double start, double step))                                                \
  /* random: t contiguous; g->offset advanced by the caller */                                                      \
  X(P, mt_status, random_uniform, (mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi))             \
  X(P, mt_status, random_normal, (mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std))           \
  X(P, mt_status, random_bernoulli, (mt_tensor *t, uint64_t seed, uint64_t offset, double p))                       \
  /* reductions over one dim (dim >= 0, out already sized with keepdim = 1 layout) or all                           \
   * (dim < 0, out 0-d); indices (i64, same shape as out) may be NULL */                                            \
  X(P, mt_status, reduce, (mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim,        \
      double p, int64_t base))                                                                                      \
  /* out[i] = beta*out[i] + alpha*a[i]@b[i] for i < batch (3-d tensors, batch dim 0; 2-d                            \
   * callers pass views with a leading 1). out already holds c (copied by the entry point). */                      \
  X(P, mt_status, gemm, (mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b))        \
  /* out = beta*out + alpha*m@v */                                                                                  \
  X(P, mt_status, gemv, (mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v))        \
  X(P, mt_status, dot, (const mt_tensor *a, const mt_tensor *b, double *out))                                       \
  X(P, mt_status, cat, (mt_tensor *out, mt_tensor *const *inputs, int n, int dim))                                  \
  X(P, mt_status, index_select, (mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index,             \
      int64_t base))                                                                                                \
  X(P, mt_status, index_add, (mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,    \
      int64_t base))                                                                                                \
  X(P, mt_status, index_fill, (mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base))              \
  X(P, mt_status, gather, (mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base))    \
  /* src NULL: scatter the scalar v */                                                                              \
  X(P, mt_status, scatter, (mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,          \
      int64_t base))                                                                                                \
  X(P, mt_status, sort, (mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,      \
      int64_t base))                                                                                                \
  X(P, mt_status, topk, (mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim,           \
      int largest, int sorted, int64_t base))                                                                       \
  /* ---- nn layers, criterions and fused optimizer steps. The entry points in csrc/nn/ check                       \
   * every argument and resize the outputs; here every tensor is contiguous, on the backend's                       \
   * device, with checked sizes and float dtypes; results are contiguous buffers of the final                       \
   * size (the entry point copies them back when the caller's tensor is not contiguous). ---- */                    \
  /* y = conv(x, w) + b (b may be NULL); dx = conv^T(dy, w); dw += scale * dL/dw and                                \
   * db += scale * dL/db (db may be NULL). The one exception to "contiguous": on a CUDA device the                  \
   * 4-d operands and results may also be channels-last (strides H*W*C, 1, W*C, C; csrc/nn/conv.c). */              \
  X(P, mt_status, conv2d_forward, (mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,        \
      const mt_conv_geom *g))                                                                                       \
  X(P, mt_status, conv2d_backward_input, (mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w,                   \
      const mt_conv_geom *g))                                                                                       \
  X(P, mt_status, conv2d_backward_params, (mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,   \
      double scale, const mt_conv_geom *g))                                                                         \
  /* pooling over g->planes dense H x W planes (layout g->cs); max-pool indices are int64, 0-based within a         \
   * plane (the backward reports an index outside its plane, or skips it where checking would                       \
   * cost a device sync) */                                                                                         \
  X(P, mt_status, maxpool2d_forward, (mt_tensor *y, mt_tensor *indices, const mt_tensor *x, const mt_pool_geom *g)) \
  X(P, mt_status, maxpool2d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,                \
      const mt_pool_geom *g))                                                                                       \
  X(P, mt_status, avgpool2d_forward, (mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g,                      \
      int count_include_pad))                                                                                       \
  X(P, mt_status, avgpool2d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g,                   \
      int count_include_pad))                                                                                       \
  X(P, mt_status, adaptive_avgpool2d_forward, (mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g))            \
  X(P, mt_status, adaptive_avgpool2d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g))         \
  /* max over windows [hs, he) x [ws, we) given per output row / column (int64 P x oH, P x oW;                      \
   * P = planes when per_plane, else 1); idx: flat 1-based positions in the whole input */                          \
  X(P, mt_status, window_maxpool2d, (mt_tensor *y, mt_tensor *idx, const mt_tensor *x, const mt_tensor *hs,         \
      const mt_tensor *he, const mt_tensor *ws, const mt_tensor *we, const mt_pool_geom *g, int per_plane))         \
  /* 3-d convolution columns, all contiguous: x C x T x H x W <-> col (C kT kH kW) x (oT oH oW);                    \
   * col2vol overwrites x with the sum of the columns (the adjoint). 3-d max pooling over g->C                      \
   * planes; idx: int64, 0-based positions within a T x H x W volume. */                                            \
  X(P, mt_status, vol2col, (mt_tensor *col, const mt_tensor *x, const mt_vol_geom *g))                              \
  X(P, mt_status, col2vol, (mt_tensor *x, const mt_tensor *col, const mt_vol_geom *g))                              \
  X(P, mt_status, maxpool3d_forward, (mt_tensor *y, mt_tensor *idx, const mt_tensor *x, const mt_vol_geom *g))      \
  X(P, mt_status, maxpool3d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_tensor *idx,                    \
      const mt_vol_geom *g))                                                                                        \
  /* 3-d average pooling over g->C planes (no dilation): divisor as avgpool2d's */                                  \
  X(P, mt_status, avgpool3d_forward, (mt_tensor *y, const mt_tensor *x, const mt_vol_geom *g,                       \
      int count_include_pad))                                                                                       \
  X(P, mt_status, avgpool3d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_vol_geom *g,                    \
      int count_include_pad))                                                                                       \
  /* activations (MT_ACT_* kinds): y = f(x); r = f'(saved) * g (saved: the input for ReLU and                       \
   * LeakyReLU, the output for Sigmoid and Tanh) */                                                                 \
  X(P, mt_status, activation_forward, (mt_tensor *y, const mt_tensor *x, int kind, double alpha))                   \
  X(P, mt_status, activation_backward, (mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,         \
      double alpha))                                                                                                \
  /* PReLU over an outer x C x inner buffer, slope w[c] (r, gw may each be NULL; gw += scale dL/dw);                \
   * RReLU in training: z = 1 or lo + (hi - lo) philox_uniform(seed, offset + i), y = x z;                          \
   * LP pooling (floor sizes, no padding) and 2-d padding (MT_PAD_* mode; g->pW, g->pH: left and top                \
   * pads, negative crops in zero mode; output oH x oW) over g->planes NCHW planes */                               \
  X(P, mt_status, prelu_forward, (mt_tensor *y, const mt_tensor *x, const mt_tensor *w, int64_t outer, int64_t C,   \
      int64_t inner))                                                                                               \
  X(P, mt_status, prelu_backward, (mt_tensor *r, mt_tensor *gw, const mt_tensor *g, const mt_tensor *x,             \
      const mt_tensor *w, double scale, int64_t outer, int64_t C, int64_t inner))                                   \
  X(P, mt_status, rrelu_forward, (mt_tensor *y, mt_tensor *z, const mt_tensor *x, uint64_t seed, uint64_t offset,   \
      double lo, double hi))                                                                                        \
  X(P, mt_status, lppool2d_forward, (mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, double p))            \
  X(P, mt_status, lppool2d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_tensor *x, const mt_tensor *y,   \
      const mt_pool_geom *g, double p))                                                                             \
  X(P, mt_status, pad2d_forward, (mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, int mode))               \
  X(P, mt_status, pad2d_backward, (mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g, int mode))            \
  /* batch norm over an N x C x S buffer, element (n, c, s) at (n C + c) S + s, or with cl set                      \
   * (channels-last) at (n S + s) C + c. The C-sized stat and parameter tensors have the input's                    \
   * dtype or float32 (input f16/bf16); any of them may be NULL where moontorch.h allows it.                        \
   * Fused forward: y = relu(bn(x) + res), res and relu optional, each step rounded to the dtype                    \
   * as the separate ops round it. Backward: g masked by y > 0 when y is given; gr = masked g.                      \
   * r, gr, gradWeight, gradBias may each be NULL. */                                                               \
  X(P, mt_status, batchnorm_forward, (mt_tensor *y, const mt_tensor *x, const mt_tensor *res,                       \
      const mt_tensor *weight, const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,              \
      mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum, double eps, int relu, int64_t N,    \
      int64_t C, int64_t S, int cl))                                                                                \
  X(P, mt_status, batchnorm_backward, (mt_tensor *r, mt_tensor *gr, mt_tensor *gradWeight, mt_tensor *gradBias,     \
      const mt_tensor *x, const mt_tensor *g, const mt_tensor *y, const mt_tensor *weight,                          \
      const mt_tensor *running_mean, const mt_tensor *running_var, const mt_tensor *save_mean,                      \
      const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N, int64_t C, int64_t S, int cl))  \
  /* (log-)softmax over the middle dim of an outer x D x inner buffer */                                            \
  X(P, mt_status, softmax_forward, (mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,      \
      int log))                                                                                                     \
  X(P, mt_status, softmax_backward, (mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer,           \
      int64_t D, int64_t inner, int log))                                                                           \
  /* class NLL over an N x C buffer of log-probabilities; t (0-based targets, N) and w (class                       \
   * weights, C) are validated host arrays. Forward: *nll = sum_i -w[t_i] x[i][t_i] and (smooth                     \
   * not NULL) *smooth = sum_i sum_c -w[c] x[i][c]. Backward writes r with the smoothing and norm                   \
   * of mt_nn_class_nll_backward. */                                                                                \
  X(P, mt_status, class_nll_forward, (double *nll, double *smooth, const mt_tensor *x, const int64_t *t,            \
      const double *w, int64_t N, int64_t C))                                                                       \
  X(P, mt_status, class_nll_backward, (mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,       \
      double smoothing, double norm))                                                                               \
  /* cross-entropy over an N x C buffer of scores (t: 0-based targets, -1 for an ignored sample).                   \
   * Forward: lse[i] = log-sum-exp of row i (float64), *nll and *smooth as class_nll_forward's on                   \
   * the log-softmax rounded to x's dtype; backward: r = the gradient of LogSoftMax + class NLL. */                 \
  X(P, mt_status, cross_entropy_forward, (double *nll, double *smooth, mt_tensor *lse, const mt_tensor *x,          \
      const int64_t *t, const double *w, int64_t N, int64_t C))                                                     \
  X(P, mt_status, cross_entropy_backward, (mt_tensor *r, const mt_tensor *x, const mt_tensor *lse,                  \
      const int64_t *t, const double *w, int64_t N, int64_t C, double smoothing, double norm))                      \
  /* p-norm normalization of the rows of an N x D buffer (p = INFINITY: the max norm) */                            \
  X(P, mt_status, normalize_forward, (mt_tensor *y, const mt_tensor *x, int64_t N, int64_t D, double p,             \
      double eps))                                                                                                  \
  X(P, mt_status, normalize_backward, (mt_tensor *r, const mt_tensor *x, const mt_tensor *g, int64_t N, int64_t D,  \
      double p, double eps))                                                                                        \
  /* MSE: *acc = sum (x - y)^2; r = k (x - y) */                                                                    \
  X(P, mt_status, mse_forward, (double *acc, const mt_tensor *x, const mt_tensor *y))                               \
  X(P, mt_status, mse_backward, (mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k))                   \
  /* SmoothL1 (Huber, threshold 1): *acc = sum h(x - y); r = k clamp(x - y, -1, 1) */                               \
  X(P, mt_status, smoothl1_forward, (double *acc, const mt_tensor *x, const mt_tensor *y))                          \
  X(P, mt_status, smoothl1_backward, (mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k))              \
  /* fused optimizer steps, same formulas as mt_sgd_step & co.; buf is NULL without momentum;                       \
   * segments (lars, lamb) are validated host arrays. dx has x's dtype or another floating one; it is               \
   * read times gscale; copy (NULL or dx's dtype, x's numel) receives the updated x. */                             \
  X(P, mt_status, sgd_step, (mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,               \
      const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay, int nesterov,        \
      int first, double gscale, mt_tensor *copy))                                                                   \
  X(P, mt_status, adam_step, (mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,          \
      double beta2, double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2, double gscale,        \
      mt_tensor *copy))                                                                                             \
  X(P, mt_status, lars_step, (mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg,                          \
      const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum, \
      double weight_decay, double eta, double eps, int first, double *trust_out, double gscale, mt_tensor *copy))   \
  X(P, mt_status, lamb_step, (mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,              \
      const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude, double beta1, double beta2, \
      double ibc1, double ibc2, double lr, double eps, double weight_decay, double max_trust, double *trust_out,    \
      double gscale, mt_tensor *copy))                                                                              \
  /* inf/NaN count and sum of squares of the finite elements of a contiguous floating tensor */                     \
  X(P, mt_status, grad_check, (const mt_tensor *g, int64_t *nonfinite, double *sumsq))                              \
  /* ---- LAPACK (csrc/core/ops_lapack.c checks every argument first, so LAPACK's own check                         \
   * never fires). Matrices are non-empty, float32/float64, column-major (sizes r x c, strides 1,                   \
   * r: leading dimension r) and within 32-bit indices; vectors contiguous; pivots int32;                           \
   * *info receives LAPACK's info. gels: b has max(m, n) rows. geev: w is n x 2 column-major                        \
   * (wr, wi), v NULL for eigenvalues only. gesvd: u m x ku, vt ku' x n as job says. ---- */                        \
  X(P, mt_status, lapack_gesv, (mt_tensor *a, mt_tensor *b, int *info))                                             \
  X(P, mt_status, lapack_trtrs, (const mt_tensor *a, mt_tensor *b, char uplo, char trans, char diag, int *info))    \
  X(P, mt_status, lapack_gels, (mt_tensor *a, mt_tensor *b, int *info))                                             \
  X(P, mt_status, lapack_getri, (mt_tensor *a, int *info)) /* getrf then getri: a's inverse in place */             \
  X(P, mt_status, lapack_potrf, (mt_tensor *a, char uplo, int *info))                                               \
  X(P, mt_status, lapack_potrs, (const mt_tensor *a, mt_tensor *b, char uplo, int *info))                           \
  X(P, mt_status, lapack_potri, (mt_tensor *a, char uplo, int *info))                                               \
  X(P, mt_status, lapack_pstrf, (mt_tensor *a, mt_tensor *piv, char uplo, double tol, int *rank, int *info))        \
  X(P, mt_status, lapack_geqrf, (mt_tensor *a, mt_tensor *tau, int *info))                                          \
  X(P, mt_status, lapack_orgqr, (mt_tensor *a, const mt_tensor *tau, int *info))                                    \
  X(P, mt_status, lapack_ormqr, (const mt_tensor *a, const mt_tensor *tau, mt_tensor *c, char side, char trans,     \
      int *info))                                                                                                   \
  X(P, mt_status, lapack_geev, (mt_tensor *a, mt_tensor *w, mt_tensor *v, int *info))                               \
  X(P, mt_status, lapack_syev, (mt_tensor *a, mt_tensor *w, char jobz, char uplo, int *info))                       \
  X(P, mt_status, lapack_gesvd, (mt_tensor *a, mt_tensor *s, mt_tensor *u, mt_tensor *vt, char job, int *info))     \
  /* any strided 2-d float matrix: clear the triangle opposite uplo's (mirror 0) or fill it from                    \
   * uplo's (mirror 1, a symmetric matrix) */                                                                       \
  X(P, mt_status, lapack_triangle, (mt_tensor *a, char uplo, int mirror))                                           \
  /* ---- torch.mode and the direct convolutions of torch.conv2/xcorr2/conv3/xcorr3 ---- */                         \
  /* mode of each line along dim of `sorted` (ascending, stable; `order` holds the positions the                    \
   * sort gave, int64): values/indices have its shape with dim of size 1 and get the most frequent                  \
   * value (the smallest among equally frequent ones; NaNs count as one value) and the position                     \
   * of its last element in the line */                                                                             \
  X(P, mt_status, mode_lines, (mt_tensor *values, mt_tensor *indices, const mt_tensor *sorted,                      \
      const mt_tensor *order, int dim))                                                                             \
  /* x: P x D x H x W, k: Q x Pk x kD x kH x kW, out: Q x oD x oH x oW, one dtype, any strides, out                 \
   * not overlapping x or k. out[q] = sum over p of xcorr(x[p], k[q][p]), or xcorr(x[q], k[q][0])                   \
   * when diagonal (Pk == 1); full: zero padding of k - 1 on each side (else valid); flip: the                      \
   * kernel reversed in every spatial dim (a convolution). Accumulates in double / int64. */                        \
  X(P, mt_status, tensor_conv, (mt_tensor *out, const mt_tensor *x, const mt_tensor *k, int full, int flip,         \
      int diagonal))                                                                                                \
  /* cumulative sum (prod = 0) or product along dim (0-based, a->ndim >= 1); out has a's sizes                      \
   * and dtype and is a itself or does not overlap it */                                                            \
  X(P, mt_status, scan, (int prod, mt_tensor *out, const mt_tensor *a, int dim))                                    \
  /* ---- residual gradient compression (csrc/dist/topk.c and rgc.c check every argument): every                    \
   * tensor contiguous on the backend's device; v, u and dst float32, idx int32, val float32 (for                   \
   * the scatter-add also float16 or bfloat16). Indices are 0-based positions in v or dst. ---- */                  \
  /* the k (exact, trimmed: MT_TOPK_*) or k..kmax (threshold) elements of largest |v| as pairs                      \
   * (idx, val) in ascending index order, *count of them; 1 <= k <= kmax <= numel(v) <= INT32_MAX,                  \
   * idx and val hold enough pairs */                                                                               \
  X(P, mt_status, dist_topk, (const mt_tensor *v, int64_t k, int64_t kmax, int method, mt_tensor *idx,              \
      mt_tensor *val, int64_t *count))                                                                              \
  /* momentum correction into the residual, one pass: d = g + wd p (p NULL when wd = 0); with u                    \
   * (NULL when m = 0) u = m u + d and v += u, or v += d + m u with Nesterov; else v += d; all numel(v) */          \
  X(P, mt_status, dist_rgc_accumulate, (mt_tensor *v, mt_tensor *u, const mt_tensor *g, const mt_tensor *p,         \
      double momentum, int nesterov, double weight_decay))                                                          \
  /* v[idx[i]] = 0 (and u[idx[i]] = 0 unless u is NULL), then idx[i] += base, for i < count (>= 1);                 \
   * an index outside v is MT_ERR_INDEX and leaves every tensor as it was */                                        \
  X(P, mt_status, dist_rgc_mask, (mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base))         \
  /* dst[idx[i]] += scale * val[i] where idx[i] >= 0, over numel(idx) = nblocks * block pairs (block                \
   * >= 1); an index >= numel(dst) is MT_ERR_INDEX naming its block and leaves dst as it was */                     \
  X(P, mt_status, dist_rgc_scatter_add, (mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val,                \
      int64_t block, double scale))                                                                                 \
  /* ---- 1-bit compression (csrc/dist/onebit.c checks every argument): v and dst float32, bits                     \
   * uint8, scales float32, all contiguous on the backend's device; chunk a multiple of 8, n >= 1 ---- */           \
  /* v += g (g NULL: nothing added), then per chunk of v: scale = mean |v|, bit = v >= 0 (element                   \
   * i in bit i % 8 of byte i / 8), and v -= (bit ? scale : -scale) */                                              \
  X(P, mt_status, dist_onebit_encode, (mt_tensor *v, const mt_tensor *g, mt_tensor *bits, mt_tensor *scales,        \
      int64_t chunk))                                                                                               \
  /* dst = alpha * the sum over nblocks blocks (ceil(n/8) bytes of bits and ceil(n/chunk) scales                    \
   * each) of (bit ? scale : -scale), the blocks added in order */                                                  \
  X(P, mt_status, dist_onebit_decode, (mt_tensor *dst, const mt_tensor *bits, const mt_tensor *scales,              \
      int64_t chunk, int64_t nblocks, double alpha))
/* clang-format on */

#define MT__BACKEND_SLOT(P, RET, NAME, ARGS) RET(*NAME) ARGS;
#define MT_BACKEND_DECLARE(P, RET, NAME, ARGS) RET P##NAME ARGS;
#define MT_BACKEND_ENTRY(P, RET, NAME, ARGS) .NAME = P##NAME,

typedef struct mt_backend {
  const char *name;
  MT_BACKEND_OPS(MT__BACKEND_SLOT, ~)
} mt_backend;

/* The backend serving a device, or NULL with an error set (e.g. CUDA not compiled in). */
const mt_backend *mt__backend_for(int device, const char *op);
/* Each backend provides its table; mt__cuda_backend is NULL in a CPU-only build. */
extern const mt_backend mt__cpu_backend;
const mt_backend *mt__cuda_backend_get(void);

/* Index-validity errors found inside a backend carry this message shape:
 *   "gather: index 7 out of range for dimension 2 of size 5" (reported 'base'-based). */
#endif
