/* nn_activation.cu: ReLU/LeakyReLU/Sigmoid/Tanh/ELU and (log-)softmax on CUDA, the formulas of
 * csrc/nn/activation.c and loss.c. Inputs and results are contiguous (see csrc/core/backend.h). */
#include "nn_common.cuh"

/* ---- activations: one grid-stride pass; the kind is a template parameter so the loop has
 * no branch on it ---- */
template <class T, int K> __global__ void nnk_act_fwd(const T *x, T *y, int64_t n, double alpha) {
  typedef typename mtk_ct<T>::type CT;
  CT a = (CT)alpha;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT v = mtk_ld(x + i), r;
    if (K == MT_ACT_RELU) r = v > 0 ? v : (CT)0;
    else if (K == MT_ACT_LEAKY_RELU) r = v > 0 ? v : v * a;
    else if (K == MT_ACT_SIGMOID) r = (CT)1 / ((CT)1 + exp(-v));
    else if (K == MT_ACT_ELU) r = v > 0 ? v : a * expm1(v);
    else r = tanh(v);
    mtk_st(y + i, r);
  }
}

template <class T, int K> __global__ void nnk_act_bwd(const T *g, const T *z, T *r, int64_t n, double alpha) {
  typedef typename mtk_ct<T>::type CT;
  CT a = (CT)alpha;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT go = mtk_ld(g + i), v = mtk_ld(z + i), o;
    if (K == MT_ACT_RELU) o = v > 0 ? go : (CT)0;
    else if (K == MT_ACT_LEAKY_RELU) o = v > 0 ? go : go * a;
    else if (K == MT_ACT_SIGMOID) o = go * v * ((CT)1 - v);
    else if (K == MT_ACT_ELU) o = v > 0 ? go : go * (v + a);
    else o = go * ((CT)1 - v * v);
    mtk_st(r + i, o);
  }
}

static const char *act_op(int kind) {
  switch (kind) {
    case MT_ACT_RELU: return "nn.ReLU";
    case MT_ACT_LEAKY_RELU: return "nn.LeakyReLU";
    case MT_ACT_SIGMOID: return "nn.Sigmoid";
    case MT_ACT_ELU: return "nn.ELU";
    default: return "nn.Tanh";
  }
}

/* calls f with the kind as a compile-time constant (the kernels' K); anything else is Tanh, as in
 * act_op */
template <class F> static void act_kind(int kind, F &&f) {
  switch (kind) {
    case MT_ACT_RELU: f(std::integral_constant<int, MT_ACT_RELU>()); break;
    case MT_ACT_LEAKY_RELU: f(std::integral_constant<int, MT_ACT_LEAKY_RELU>()); break;
    case MT_ACT_SIGMOID: f(std::integral_constant<int, MT_ACT_SIGMOID>()); break;
    case MT_ACT_ELU: f(std::integral_constant<int, MT_ACT_ELU>()); break;
    default: f(std::integral_constant<int, MT_ACT_TANH>()); break;
  }
}

extern "C" mt_status mt__cuda_activation_forward(mt_tensor *y, const mt_tensor *x, int kind, double alpha) {
  const char *op = act_op(kind);
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  unsigned nb = mtk_blocks(n, NNK_THREADS);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    const T *xp = mtk_ptr<T>(x);
    T *yp = mtk_ptr<T>(y);
    act_kind(kind, [&](auto k) { nnk_act_fwd<T, decltype(k)::value><<<nb, NNK_THREADS, 0, s>>>(xp, yp, n, alpha); });
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_activation_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *saved, int kind,
                                                  double alpha) {
  const char *op = act_op(kind);
  int64_t n = mt__numel(saved);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(saved->device);
  unsigned nb = mtk_blocks(n, NNK_THREADS);
  return nnk_dispatch_float(saved->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    const T *gp = mtk_ptr<T>(g), *zp = mtk_ptr<T>(saved);
    T *rp = mtk_ptr<T>(r);
    act_kind(kind,
             [&](auto k) { nnk_act_bwd<T, decltype(k)::value><<<nb, NNK_THREADS, 0, s>>>(gp, zp, rp, n, alpha); });
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

/* ---- softmax over the middle dim of outer x D x inner. inner == 1 (rows, the classifier
 * case): one block per row with block reductions; otherwise one thread per (outer, inner)
 * column walking D (the columns of a warp are adjacent in memory). Sums in double as on the CPU. */
template <class T> __global__ void nnk_softmax_rows(const T *x, T *y, int64_t rows, int64_t D, int logsm) {
  __shared__ double sh[32];
  __shared__ double bc[2];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * D;
    T *yr = y + row * D;
    double m = -INFINITY;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) m = fmax(m, (double)mtk_ld(xr + d));
    /* block max through the sum helper's shape: reduce with fmax by hand */
    for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_down_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
      double b = -INFINITY;
      for (int w = 0; w < (int)(blockDim.x >> 5); w++) b = fmax(b, sh[w]);
      bc[0] = b;
    }
    __syncthreads();
    m = bc[0];
    double sum = 0;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) sum += exp((double)mtk_ld(xr + d) - m);
    sum = nnk_block_sum(sum, sh);
    if (threadIdx.x == 0) bc[1] = sum;
    __syncthreads();
    sum = bc[1];
    double lse = m + log(sum);
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      double v = (double)mtk_ld(xr + d);
      mtk_st(yr + d, (typename mtk_ct<T>::type)(logsm ? v - lse : exp(v - m) / sum));
    }
    __syncthreads();
  }
}

template <class T>
__global__ void nnk_softmax_cols(const T *x, T *y, int64_t outer, int64_t D, int64_t inner, int logsm) {
  for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < outer * inner;
       q += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = (q / inner) * D * inner + q % inner;
    double m = -INFINITY, sum = 0;
    for (int64_t d = 0; d < D; d++) m = fmax(m, (double)mtk_ld(x + base + d * inner));
    for (int64_t d = 0; d < D; d++) sum += exp((double)mtk_ld(x + base + d * inner) - m);
    double lse = m + log(sum);
    for (int64_t d = 0; d < D; d++) {
      double v = (double)mtk_ld(x + base + d * inner);
      mtk_st(y + base + d * inner, (typename mtk_ct<T>::type)(logsm ? v - lse : exp(v - m) / sum));
    }
  }
}

/* softmax: gi = y (go - sum go y); log-softmax: gi = go - exp(y) sum go */
template <class T>
__global__ void nnk_softmax_bwd_rows(const T *g, const T *y, T *r, int64_t rows, int64_t D, int logsm) {
  __shared__ double sh[32];
  __shared__ double bc;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *gr = g + row * D, *yr = y + row * D;
    T *rr = r + row * D;
    double s = 0;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      double gv = (double)mtk_ld(gr + d);
      s += logsm ? gv : gv * (double)mtk_ld(yr + d);
    }
    s = nnk_block_sum(s, sh);
    if (threadIdx.x == 0) bc = s;
    __syncthreads();
    s = bc;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      double gv = (double)mtk_ld(gr + d), yv = (double)mtk_ld(yr + d);
      mtk_st(rr + d, (typename mtk_ct<T>::type)(logsm ? gv - exp(yv) * s : yv * (gv - s)));
    }
    __syncthreads();
  }
}

template <class T>
__global__ void nnk_softmax_bwd_cols(const T *g, const T *y, T *r, int64_t outer, int64_t D, int64_t inner, int logsm) {
  for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < outer * inner;
       q += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = (q / inner) * D * inner + q % inner;
    double s = 0;
    for (int64_t d = 0; d < D; d++) {
      double gv = (double)mtk_ld(g + base + d * inner);
      s += logsm ? gv : gv * (double)mtk_ld(y + base + d * inner);
    }
    for (int64_t d = 0; d < D; d++) {
      int64_t k = base + d * inner;
      double gv = (double)mtk_ld(g + k), yv = (double)mtk_ld(y + k);
      mtk_st(r + k, (typename mtk_ct<T>::type)(logsm ? gv - exp(yv) * s : yv * (gv - s)));
    }
  }
}

static unsigned row_blocks(int64_t rows) {
  return (unsigned)(rows < MTK_MAX_BLOCKS ? (rows < 1 ? 1 : rows) : MTK_MAX_BLOCKS);
}

extern "C" mt_status mt__cuda_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D, int64_t inner,
                                              int logsm) {
  const char *op = logsm ? "nn.LogSoftMax" : "nn.SoftMax";
  if (outer * D * inner == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    if (inner == 1)
      nnk_softmax_rows<T><<<row_blocks(outer), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), outer, D, logsm);
    else
      nnk_softmax_cols<T><<<mtk_blocks(outer * inner, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y),
                                                                                         outer, D, inner, logsm);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer,
                                               int64_t D, int64_t inner, int logsm) {
  const char *op = logsm ? "nn.LogSoftMax" : "nn.SoftMax";
  if (outer * D * inner == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(y->device);
  return nnk_dispatch_float(y->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    if (inner == 1)
      nnk_softmax_bwd_rows<T>
          <<<row_blocks(outer), NNK_THREADS, 0, s>>>(mtk_ptr<T>(g), mtk_ptr<T>(y), mtk_ptr<T>(r), outer, D, logsm);
    else
      nnk_softmax_bwd_cols<T><<<mtk_blocks(outer * inner, NNK_THREADS), NNK_THREADS, 0, s>>>(
          mtk_ptr<T>(g), mtk_ptr<T>(y), mtk_ptr<T>(r), outer, D, inner, logsm);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}
