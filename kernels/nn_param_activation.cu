/* nn_param_activation.cu: PReLU and RReLU on CUDA, the formulas of csrc/nn/param_activation.c
 * and csrc/cpu/nn_param_activation.c (same Philox counters, so RReLU draws the CPU's slopes).
 * Buffers are contiguous outer x C x inner (PReLU) or flat (RReLU). */
#include "nn_common.cuh"

template <class T> __global__ void nnk_prelu_fwd(const T *x, const T *w, T *y, int64_t n, int64_t C, int64_t inner) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT v = mtk_ld(x + i), a = mtk_ld(w + (i / inner) % C);
    mtk_st(y + i, v > 0 ? v : a * v);
  }
}

template <class T>
__global__ void nnk_prelu_bwd_input(const T *g, const T *x, const T *w, T *r, int64_t n, int64_t C, int64_t inner) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT v = mtk_ld(x + i), go = mtk_ld(g + i), a = mtk_ld(w + (i / inner) % C);
    mtk_st(r + i, v > 0 ? go : a * go);
  }
}

/* one block per slope: it alone sums its planes (in double) and adds to gw[c], no atomics */
template <class T> __global__ void nnk_prelu_bwd_weight(const T *g, const T *x, T *gw, int64_t outer, int64_t C,
                                                        int64_t inner, double scale) {
  __shared__ double sh[32];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t k = threadIdx.x; k < outer * inner; k += blockDim.x) {
      int64_t i = ((k / inner) * C + c) * inner + k % inner;
      double v = (double)mtk_ld(x + i);
      s += v > 0 ? 0.0 : v * (double)mtk_ld(g + i);
    }
    s = nnk_block_sum(s, sh);
    if (threadIdx.x == 0) mtk_st(gw + c, (double)mtk_ld(gw + c) + scale * s);
    __syncthreads();
  }
}

extern "C" mt_status mt__cuda_prelu_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, int64_t outer,
                                            int64_t C, int64_t inner) {
  int64_t n = outer * C * inner;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, "nn.PReLU", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_prelu_fwd<T>
        <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(w), mtk_ptr<T>(y), n, C, inner);
    MT_CUDA_LAUNCH_CHECK("nn.PReLU");
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_prelu_backward(mt_tensor *r, mt_tensor *gw, const mt_tensor *g, const mt_tensor *x,
                                             const mt_tensor *w, double scale, int64_t outer, int64_t C,
                                             int64_t inner) {
  int64_t n = outer * C * inner;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, "nn.PReLU", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    /* the weight gradient first: r may be g itself (in place) */
    if (gw) {
      unsigned nb = (unsigned)(C < MTK_MAX_BLOCKS ? C : MTK_MAX_BLOCKS);
      nnk_prelu_bwd_weight<T>
          <<<nb, NNK_THREADS, 0, s>>>(mtk_ptr<T>(g), mtk_ptr<T>(x), mtk_ptr<T>(gw), outer, C, inner, scale);
      MT_CUDA_LAUNCH_CHECK("nn.PReLU");
    }
    if (r) {
      nnk_prelu_bwd_input<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
          mtk_ptr<T>(g), mtk_ptr<T>(x), mtk_ptr<T>(w), mtk_ptr<T>(r), n, C, inner);
      MT_CUDA_LAUNCH_CHECK("nn.PReLU");
    }
    return MT_OK;
  });
}

/* the next value below a positive one, by its bits */
template <class T> MTK_D void nnk_step_down(T *p) {
  if (sizeof(T) == 2) (*reinterpret_cast<uint16_t *>(p))--;
  else if (sizeof(T) == 4) (*reinterpret_cast<uint32_t *>(p))--;
  else (*reinterpret_cast<uint64_t *>(p))--;
}

template <class T>
__global__ void nnk_rrelu_fwd(const T *x, T *y, T *z, int64_t n, uint64_t seed, uint64_t offset, double lo, double hi) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT v = mtk_ld(x + i);
    if (v > 0) {
      mtk_st(z + i, (CT)1);
      mtk_st(y + i, v);
    } else {
      T s;
      mtk_st(&s, lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i));
      if ((double)mtk_ld(&s) >= hi && hi > lo) nnk_step_down(&s);
      z[i] = s;
      mtk_st(y + i, v * mtk_ld(&s));
    }
  }
}

extern "C" mt_status mt__cuda_rrelu_forward(mt_tensor *y, mt_tensor *z, const mt_tensor *x, uint64_t seed,
                                            uint64_t offset, double lo, double hi) {
  int64_t n = mt__numel(x);
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, "nn.RReLU", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_rrelu_fwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), mtk_ptr<T>(z), n,
                                                                        seed, offset, lo, hi);
    MT_CUDA_LAUNCH_CHECK("nn.RReLU");
    return MT_OK;
  });
}
