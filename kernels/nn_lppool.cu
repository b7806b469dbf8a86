/* nn_lppool.cu: LP pooling on CUDA, the formulas of csrc/nn/lppool.c: one thread per output
 * (forward) or per input pixel gathering the windows that hold it (backward, no atomics).
 * P: 1 or 2 for the fast paths, 0 for pow with p. */
#include "nn_common.cuh"

template <class CT> MTK_D CT nnk_lp_pow(CT v, double p) { return (CT)pow(v, (CT)p); }

template <class T, int P> __global__ void nnk_lppool_fwd(const T *x, T *y, mt_pool_geom g, double p) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, pl = i / (g.oW * g.oH);
    const T *w0 = x + (pl * g.H + oh * g.dH) * g.W + ow * g.dW;
    CT s = 0;
    for (int kh = 0; kh < g.kH; kh++)
      for (int kw = 0; kw < g.kW; kw++) {
        CT v = mtk_ld(w0 + kh * g.W + kw);
        s += P == 1 ? v : P == 2 ? v * v : nnk_lp_pow(v, p);
      }
    mtk_st(y + i, P == 1 ? s : P == 2 ? sqrt(s) : nnk_lp_pow(s, 1.0 / p));
  }
}

template <class T, int P>
__global__ void nnk_lppool_bwd(const T *dy, const T *x, const T *y, T *dx, mt_pool_geom g, double p) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t w = i % g.W, h = (i / g.W) % g.H, pl = i / (g.W * g.H);
    /* windows oh with oh dH <= h < oh dH + kH, inside the output */
    int64_t oh0 = h < g.kH ? 0 : (h - g.kH) / g.dH + 1, oh1 = h / g.dH < g.oH - 1 ? h / g.dH : g.oH - 1;
    int64_t ow0 = w < g.kW ? 0 : (w - g.kW) / g.dW + 1, ow1 = w / g.dW < g.oW - 1 ? w / g.dW : g.oW - 1;
    CT acc = 0;
    for (int64_t oh = oh0; oh <= oh1; oh++)
      for (int64_t ow = ow0; ow <= ow1; ow++) {
        int64_t o = (pl * g.oH + oh) * g.oW + ow;
        CT go = mtk_ld(dy + o), yv = mtk_ld(y + o);
        acc += P == 1 ? go : P == 2 ? go / yv : go * nnk_lp_pow(yv, 1.0 - p);
      }
    CT v = mtk_ld(x + i);
    mtk_st(dx + i, (P == 1 ? (CT)1 : P == 2 ? v : nnk_lp_pow(v, p - 1.0)) * acc);
  }
}

template <class F> static void lp_kind(double p, F &&f) {
  if (p == 1) f(std::integral_constant<int, 1>());
  else if (p == 2) f(std::integral_constant<int, 2>());
  else f(std::integral_constant<int, 0>());
}

extern "C" mt_status mt__cuda_lppool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, double p) {
  int64_t n = g->planes * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  mt_pool_geom gg = *g;
  return nnk_dispatch_float(x->dtype, "nn.SpatialLPPooling", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    lp_kind(p, [&](auto k) {
      nnk_lppool_fwd<T, decltype(k)::value>
          <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), gg, p);
    });
    MT_CUDA_LAUNCH_CHECK("nn.SpatialLPPooling");
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_lppool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *x,
                                                const mt_tensor *y, const mt_pool_geom *g, double p) {
  int64_t n = g->planes * g->H * g->W;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  mt_pool_geom gg = *g;
  return nnk_dispatch_float(x->dtype, "nn.SpatialLPPooling", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    lp_kind(p, [&](auto k) {
      nnk_lppool_bwd<T, decltype(k)::value><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
          mtk_ptr<T>(dy), mtk_ptr<T>(x), mtk_ptr<T>(y), mtk_ptr<T>(dx), gg, p);
    });
    MT_CUDA_LAUNCH_CHECK("nn.SpatialLPPooling");
    return MT_OK;
  });
}
