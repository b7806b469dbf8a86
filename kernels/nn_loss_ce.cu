/* nn_loss_ce.cu: cross-entropy (LogSoftMax + class NLL in one op) on CUDA, the formulas of
 * csrc/cpu/nn_loss_ce.c: one block per row for the log-sum-exp (the reductions of the
 * LogSoftMax kernel in nn_activation.cu), the log-softmax recomputed from it and rounded to the
 * dtype where the composition would have stored it. Targets (0-based, -1 ignored) and class
 * weights arrive validated as host arrays. */
#include "nn_common.cuh"

template <class T> MTK_D double ce_round(double v) { /* as a store and a load of the dtype round v */
  T q;
  mtk_st(&q, (typename mtk_ct<T>::type)v);
  return (double)mtk_ld(&q);
}

/* lse[row] = max + log sum exp(x - max), double throughout */
template <class T> __global__ void nnk_ce_lse(const T *x, double *lse, int64_t rows, int64_t C) {
  __shared__ double sh[32];
  __shared__ double bc;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * C;
    double m = -INFINITY;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = fmax(m, (double)mtk_ld(xr + c));
    for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_down_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
      double b = -INFINITY;
      for (int w = 0; w < (int)(blockDim.x >> 5); w++) b = fmax(b, sh[w]);
      bc = b;
    }
    __syncthreads();
    m = bc;
    __syncthreads();
    double sum = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += exp((double)mtk_ld(xr + c) - m);
    sum = nnk_block_sum(sum, sh);
    if (threadIdx.x == 0) lse[row] = m + log(sum);
    __syncthreads();
  }
}

/* acc[0] += sum_i -w[t_i] y[i][t_i]; acc[1] += sum_i sum_c -w[c] y[i][c] (when smooth), y the
 * rounded log-softmax; ignored rows add nothing */
template <class T> __global__ void nnk_ce_nll(const T *x, const double *lse, const int64_t *t, const double *w,
                                              int64_t N, int64_t C, int smooth, double *acc) {
  __shared__ double sh[32];
  double a = 0, b = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += (int64_t)gridDim.x * blockDim.x) {
    const T *row = x + i * C;
    int64_t ti = t[i];
    if (ti < 0) continue;
    a -= w[ti] * ce_round<T>((double)mtk_ld(row + ti) - lse[i]);
    if (smooth)
      for (int64_t c = 0; c < C; c++) b -= w[c] * ce_round<T>((double)mtk_ld(row + c) - lse[i]);
  }
  nnk_block_sum2_add(a, b, sh, acc);
}

/* the class NLL gradient of class c for target ti (-1: ignored), as mt_nn_class_nll_backward's */
MTK_D double ce_grad(int64_t ti, int64_t c, const double *w, int64_t C, double eps, double norm) {
  return ti < 0 ? 0.0 : c == ti ? -(eps / (double)C + (1 - eps)) * w[ti] * norm : -eps / (double)C * w[c] * norm;
}

/* per row: g = the rounded NLL gradient, s = sum g, r = g - exp(y) s */
template <class T> __global__ void nnk_ce_bwd(T *r, const T *x, const double *lse, const int64_t *t, const double *w,
                                              int64_t N, int64_t C, double eps, double norm) {
  __shared__ double sh[32];
  __shared__ double bc;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T *xr = x + row * C;
    T *rr = r + row * C;
    int64_t ti = t[row];
    double s = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) { s += ce_round<T>(ce_grad(ti, c, w, C, eps, norm)); }
    s = nnk_block_sum(s, sh);
    if (threadIdx.x == 0) bc = s;
    __syncthreads();
    s = bc;
    double L = lse[row];
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      double g = ce_grad(ti, c, w, C, eps, norm);
      double y = ce_round<T>((double)mtk_ld(xr + c) - L);
      mtk_st(rr + c, (typename mtk_ct<T>::type)(ce_round<T>(g) - exp(y) * s));
    }
    __syncthreads();
  }
}

#define CE_OP "nn.CrossEntropyCriterion"

static unsigned ce_row_blocks(int64_t rows) {
  return (unsigned)(rows < MTK_MAX_BLOCKS ? (rows < 1 ? 1 : rows) : MTK_MAX_BLOCKS);
}

extern "C" mt_status mt__cuda_cross_entropy_forward(double *nll, double *smooth, mt_tensor *lse, const mt_tensor *x,
                                                    const int64_t *t, const double *w, int64_t N, int64_t C) {
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp td, wd, acc;
  MT_TRY(nnk_upload(td, device, s, t, N, MT_I64, CE_OP));
  MT_TRY(nnk_upload(wd, device, s, w, C, MT_F64, CE_OP));
  MT_TRY(nnk_zeros(acc, device, s, 2, CE_OP));
  if (N * C > 0) {
    MT_TRY(nnk_dispatch_float(x->dtype, CE_OP, [&](auto tag) -> mt_status {
      using T = typename decltype(tag)::type;
      nnk_ce_lse<T><<<ce_row_blocks(N), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<double>(lse), N, C);
      MT_CUDA_LAUNCH_CHECK(CE_OP);
      nnk_ce_nll<T><<<nnk_red_blocks(N), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<double>(lse), td.as<int64_t>(),
                                                              wd.as<double>(), N, C, smooth != NULL, acc.as<double>());
      MT_CUDA_LAUNCH_CHECK(CE_OP);
      return MT_OK;
    }));
  }
  double h[2];
  MT_TRY(nnk_download(h, acc, 2, s, CE_OP));
  *nll = h[0];
  if (smooth) *smooth = h[1];
  return MT_OK;
}

extern "C" mt_status mt__cuda_cross_entropy_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *lse,
                                                     const int64_t *t, const double *w, int64_t N, int64_t C,
                                                     double smoothing, double norm) {
  if (N * C == 0) return MT_OK;
  int device = r->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp td, wd;
  MT_TRY(nnk_upload(td, device, s, t, N, MT_I64, CE_OP));
  MT_TRY(nnk_upload(wd, device, s, w, C, MT_F64, CE_OP));
  return nnk_dispatch_float(r->dtype, CE_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_ce_bwd<T><<<ce_row_blocks(N), NNK_THREADS, 0, s>>>(mtk_ptr<T>(r), mtk_ptr<T>(x), mtk_ptr<double>(lse),
                                                           td.as<int64_t>(), wd.as<double>(), N, C, smoothing, norm);
    MT_CUDA_LAUNCH_CHECK(CE_OP);
    return MT_OK;
  });
}
