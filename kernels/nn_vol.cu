/* nn_vol.cu: vol2col and col2vol on CUDA (csrc/nn/vol.c). vol2col: one thread per column element;
 * col2vol gathers: one thread per volume element sums the column entries of the taps that read
 * it, so there are no atomics and the result is deterministic. */
#include "nn_common.cuh"

template <class T> __global__ void nnk_vol2col(const T *x, T *col, mt_vol_geom g) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t L = g.oT * g.oH * g.oW, n = g.C * g.kT * g.kH * g.kW * L;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t l = e % L, r = e / L;
    int64_t ox = l % g.oW, oy = (l / g.oW) % g.oH, ot = l / (g.oW * g.oH);
    int64_t kx = r % g.kW, ky = (r / g.kW) % g.kH, kt = (r / (g.kW * g.kH)) % g.kT, c = r / (g.kW * g.kH * g.kT);
    int64_t it = ot * g.dT - g.pT + kt * g.lT, iy = oy * g.dH - g.pH + ky * g.lH, ix = ox * g.dW - g.pW + kx * g.lW;
    CT v = 0;
    if (it >= 0 && it < g.T && iy >= 0 && iy < g.H && ix >= 0 && ix < g.W)
      v = mtk_ld(x + ((c * g.T + it) * g.H + iy) * g.W + ix);
    mtk_st(col + e, v);
  }
}

/* the outputs o (with o*d - p + k*l = i for some tap k < K) of input i: for each, the tap */
template <class T> __global__ void nnk_col2vol(const T *col, T *x, mt_vol_geom g) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t L = g.oT * g.oH * g.oW, V = g.T * g.H * g.W, n = g.C * V;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ix = e % g.W, iy = (e / g.W) % g.H, it = (e / (g.W * g.H)) % g.T, c = e / V;
    CT s = 0;
    for (int kt = 0; kt < g.kT; kt++) {
      int64_t ut = it + g.pT - (int64_t)kt * g.lT;
      if (ut < 0 || ut % g.dT || ut / g.dT >= g.oT) continue;
      for (int ky = 0; ky < g.kH; ky++) {
        int64_t uy = iy + g.pH - (int64_t)ky * g.lH;
        if (uy < 0 || uy % g.dH || uy / g.dH >= g.oH) continue;
        for (int kx = 0; kx < g.kW; kx++) {
          int64_t ux = ix + g.pW - (int64_t)kx * g.lW;
          if (ux < 0 || ux % g.dW || ux / g.dW >= g.oW) continue;
          int64_t r = ((c * g.kT + kt) * g.kH + ky) * g.kW + kx;
          s += (CT)mtk_ld(col + r * L + ((ut / g.dT) * g.oH + uy / g.dH) * g.oW + ux / g.dW);
        }
      }
    }
    mtk_st(x + e, s);
  }
}

extern "C" mt_status mt__cuda_vol2col(mt_tensor *col, const mt_tensor *x, const mt_vol_geom *g) {
  const char *op = "vol2col";
  int64_t n = g->C * g->kT * g->kH * g->kW * g->oT * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_vol2col<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(col), *g);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_col2vol(mt_tensor *x, const mt_tensor *col, const mt_vol_geom *g) {
  const char *op = "col2vol";
  int64_t n = g->C * g->T * g->H * g->W;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(col->device);
  return nnk_dispatch_float(col->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_col2vol<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(col), mtk_ptr<T>(x), *g);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}
