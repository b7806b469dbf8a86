/* nn_vol_pool.cu: 3-d max pooling on CUDA (csrc/nn/vol_pool.c) with the CPU loop's rules (a NaN
 * wins, the first one; ties keep the first in (t, y, x) order; indices 0-based within a volume).
 * Forward: one thread per output cell. Backward gathers: one thread per input cell sums the
 * gradients of the windows that cover it and chose it, so there are no atomics. */
#include "nn_common.cuh"

template <class T>
__global__ void nnk_max3_fwd(const T *x, T *y, int64_t *idx, mt_vol_geom g) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t O = g.oT * g.oH * g.oW, V = g.T * g.H * g.W, n = g.C * O;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t ox = o % g.oW, oy = (o / g.oW) % g.oH, ot = (o / (g.oW * g.oH)) % g.oT, p = o / O;
    const T *xp = x + p * V;
    int64_t t0 = ot * g.dT - g.pT, y0 = oy * g.dH - g.pH, x0 = ox * g.dW - g.pW, best = -1;
    CT bv = -INFINITY;
    bool done = false;
    for (int i = 0; i < g.kT && !done; i++) {
      int64_t t = t0 + (int64_t)i * g.lT;
      if (t < 0 || t >= g.T) continue;
      for (int j = 0; j < g.kH && !done; j++) {
        int64_t yy = y0 + (int64_t)j * g.lH;
        if (yy < 0 || yy >= g.H) continue;
        for (int k = 0; k < g.kW; k++) {
          int64_t xx = x0 + (int64_t)k * g.lW;
          if (xx < 0 || xx >= g.W) continue;
          int64_t pos = (t * g.H + yy) * g.W + xx;
          CT v = mtk_ld(xp + pos);
          if (best < 0 || v > bv || isnan((double)v)) {
            bv = v, best = pos;
            if (isnan((double)v)) {
              done = true;
              break;
            }
          }
        }
      }
    }
    mtk_st(y + o, bv);
    idx[o] = best < 0 ? 0 : best;
  }
}

/* the outputs u of dimension (stride d, pad p, dilation l, k taps, o outputs) whose window has
 * a tap on input i: u in [lo, hi] with (i + p - u*d) a multiple of l below k*l */
template <class T>
__global__ void nnk_max3_bwd(const T *dy, const int64_t *idx, T *dx, mt_vol_geom g) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t O = g.oT * g.oH * g.oW, V = g.T * g.H * g.W, n = g.C * V;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t pos = e % V, p = e / V;
    int64_t ix = pos % g.W, iy = (pos / g.W) % g.H, it = pos / (g.W * g.H);
    const T *gp = dy + p * O;
    const int64_t *ip = idx + p * O;
    CT s = 0;
    for (int64_t ut = 0; ut < g.oT; ut++) {
      int64_t a = it + g.pT - ut * g.dT;
      if (a < 0) break;
      if (a % g.lT || a / g.lT >= g.kT) continue;
      for (int64_t uy = 0; uy < g.oH; uy++) {
        int64_t b = iy + g.pH - uy * g.dH;
        if (b < 0) break;
        if (b % g.lH || b / g.lH >= g.kH) continue;
        for (int64_t ux = 0; ux < g.oW; ux++) {
          int64_t c = ix + g.pW - ux * g.dW;
          if (c < 0) break;
          if (c % g.lW || c / g.lW >= g.kW) continue;
          int64_t o = (ut * g.oH + uy) * g.oW + ux;
          if (ip[o] == pos) s += (CT)mtk_ld(gp + o);
        }
      }
    }
    mtk_st(dx + e, s);
  }
}

#define VP "VolumetricMaxPooling"

extern "C" mt_status mt__cuda_maxpool3d_forward(mt_tensor *y, mt_tensor *idx, const mt_tensor *x,
                                                const mt_vol_geom *g) {
  int64_t n = g->C * g->oT * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, VP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_max3_fwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y),
                                                                       mtk_ptr<int64_t>(idx), *g);
    MT_CUDA_LAUNCH_CHECK(VP);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_maxpool3d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *idx,
                                                 const mt_vol_geom *g) {
  int64_t n = g->C * g->T * g->H * g->W;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(dx->device);
  return nnk_dispatch_float(dx->dtype, VP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_max3_bwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(dy), mtk_ptr<int64_t>(idx),
                                                                       mtk_ptr<T>(dx), *g);
    MT_CUDA_LAUNCH_CHECK(VP);
    return MT_OK;
  });
}
