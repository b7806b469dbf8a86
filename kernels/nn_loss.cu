/* nn_loss.cu: class NLL (class weights, label smoothing), MSE and SmoothL1 on CUDA, the formulas of
 * csrc/nn/loss.c. Targets and class weights arrive validated as host arrays (0-based int64,
 * double); the losses are summed in double and read back (the criterions return a number). */
#include "nn_common.cuh"

/* acc[0] += sum_i -w[t_i] x[i][t_i]; acc[1] += sum_i sum_c -w[c] x[i][c] (when smooth) */
template <class T> __global__ void nnk_nll_fwd(const T *x, const int64_t *t, const double *w, int64_t N, int64_t C,
                                               int smooth, double *acc) {
  __shared__ double sh[32];
  double a = 0, b = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += (int64_t)gridDim.x * blockDim.x) {
    const T *row = x + i * C;
    int64_t ti = t[i];
    a -= w[ti] * (double)mtk_ld(row + ti);
    if (smooth)
      for (int64_t c = 0; c < C; c++) b -= w[c] * (double)mtk_ld(row + c);
  }
  nnk_block_sum2_add(a, b, sh, acc);
}

/* r[i][c] = -norm (eps/C w[c] + (1-eps) w[c] [c == t_i]) */
template <class T>
__global__ void nnk_nll_bwd(T *r, const int64_t *t, const double *w, int64_t N, int64_t C, double eps, double norm) {
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * C; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = k / C, c = k - i * C;
    double v = c == t[i] ? -(eps / (double)C + (1 - eps)) * w[c] * norm : -eps / (double)C * w[c] * norm;
    mtk_st(r + k, (typename mtk_ct<T>::type)v);
  }
}

#define NLL_OP "nn.ClassNLLCriterion"

extern "C" mt_status mt__cuda_class_nll_forward(double *nll, double *smooth, const mt_tensor *x, const int64_t *t,
                                                const double *w, int64_t N, int64_t C) {
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp td, wd, acc;
  MT_TRY(nnk_upload(td, device, s, t, N, MT_I64, NLL_OP));
  MT_TRY(nnk_upload(wd, device, s, w, C, MT_F64, NLL_OP));
  MT_TRY(nnk_zeros(acc, device, s, 2, NLL_OP));
  if (N > 0) {
    unsigned blocks = nnk_red_blocks(N);
    MT_TRY(nnk_dispatch_float(x->dtype, NLL_OP, [&](auto tag) -> mt_status {
      using T = typename decltype(tag)::type;
      nnk_nll_fwd<T><<<blocks, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), td.as<int64_t>(), wd.as<double>(), N, C,
                                                    smooth != NULL, acc.as<double>());
      MT_CUDA_LAUNCH_CHECK(NLL_OP);
      return MT_OK;
    }));
  }
  double h[2];
  MT_TRY(nnk_download(h, acc, 2, s, NLL_OP));
  *nll = h[0];
  if (smooth) *smooth = h[1];
  return MT_OK;
}

extern "C" mt_status mt__cuda_class_nll_backward(mt_tensor *r, const int64_t *t, const double *w, int64_t N, int64_t C,
                                                 double smoothing, double norm) {
  if (N * C == 0) return MT_OK;
  int device = r->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp td, wd;
  MT_TRY(nnk_upload(td, device, s, t, N, MT_I64, NLL_OP));
  MT_TRY(nnk_upload(wd, device, s, w, C, MT_F64, NLL_OP));
  return nnk_dispatch_float(r->dtype, NLL_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_nll_bwd<T><<<mtk_blocks(N * C, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(r), td.as<int64_t>(),
                                                                          wd.as<double>(), N, C, smoothing, norm);
    MT_CUDA_LAUNCH_CHECK(NLL_OP);
    return MT_OK;
  });
}

/* ---- MSE ---- */
template <class T> __global__ void nnk_mse_fwd(const T *x, const T *y, int64_t n, double *acc) {
  __shared__ double sh[32];
  double a = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double d = (double)mtk_ld(x + i) - (double)mtk_ld(y + i);
    a += d * d;
  }
  a = nnk_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc, a);
}

template <class T> __global__ void nnk_mse_bwd(T *r, const T *x, const T *y, int64_t n, double k) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    mtk_st(r + i, (typename mtk_ct<T>::type)(k * ((double)mtk_ld(x + i) - (double)mtk_ld(y + i))));
}

#define MSE_OP "nn.MSECriterion"

extern "C" mt_status mt__cuda_mse_forward(double *out, const mt_tensor *x, const mt_tensor *y) {
  int64_t n = mt__numel(x);
  *out = 0;
  if (n == 0) return MT_OK;
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, device, s, 1, MSE_OP));
  unsigned blocks = nnk_red_blocks(n);
  MT_TRY(nnk_dispatch_float(x->dtype, MSE_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_mse_fwd<T><<<blocks, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), n, acc.as<double>());
    MT_CUDA_LAUNCH_CHECK(MSE_OP);
    return MT_OK;
  }));
  return nnk_download(out, acc, 1, s, MSE_OP);
}

extern "C" mt_status mt__cuda_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k) {
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, MSE_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_mse_bwd<T>
        <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(r), mtk_ptr<T>(x), mtk_ptr<T>(y), n, k);
    MT_CUDA_LAUNCH_CHECK(MSE_OP);
    return MT_OK;
  });
}

/* ---- SmoothL1 (Huber, threshold 1) ---- */
template <class T> __global__ void nnk_sl1_fwd(const T *x, const T *y, int64_t n, double *acc) {
  __shared__ double sh[32];
  double a = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double d = fabs((double)mtk_ld(x + i) - (double)mtk_ld(y + i)), m = d < 1 ? d : 1;
    a += 0.5 * m * m + (d - m);
  }
  a = nnk_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc, a);
}

template <class T> __global__ void nnk_sl1_bwd(T *r, const T *x, const T *y, int64_t n, double k) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double d = (double)mtk_ld(x + i) - (double)mtk_ld(y + i);
    d = d < -1 ? -1 : d > 1 ? 1 : d;
    mtk_st(r + i, (typename mtk_ct<T>::type)(k * d));
  }
}

#define SL1_OP "nn.SmoothL1Criterion"

extern "C" mt_status mt__cuda_smoothl1_forward(double *out, const mt_tensor *x, const mt_tensor *y) {
  int64_t n = mt__numel(x);
  *out = 0;
  if (n == 0) return MT_OK;
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, device, s, 1, SL1_OP));
  unsigned blocks = nnk_red_blocks(n);
  MT_TRY(nnk_dispatch_float(x->dtype, SL1_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_sl1_fwd<T><<<blocks, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), n, acc.as<double>());
    MT_CUDA_LAUNCH_CHECK(SL1_OP);
    return MT_OK;
  }));
  return nnk_download(out, acc, 1, s, SL1_OP);
}

extern "C" mt_status mt__cuda_smoothl1_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k) {
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, SL1_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_sl1_bwd<T>
        <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(r), mtk_ptr<T>(x), mtk_ptr<T>(y), n, k);
    MT_CUDA_LAUNCH_CHECK(SL1_OP);
    return MT_OK;
  });
}
