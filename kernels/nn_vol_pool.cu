/* nn_vol_pool.cu: 3-d max and average pooling on CUDA (csrc/nn/vol_pool.c). Max pooling keeps
 * the CPU loop's rules (a NaN wins, the first one; ties keep the first in (t, y, x) order;
 * indices 0-based within a volume). Forward: one thread per output cell. Backward gathers: one
 * thread per input cell sums the gradients of the windows that cover it (and, for max, chose
 * it), so there are no atomics. */
#include "nn_common.cuh"

template <class T> __global__ void nnk_max3_fwd(const T *x, T *y, int64_t *idx, mt_vol_geom g) {
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
template <class T> __global__ void nnk_max3_bwd(const T *dy, const int64_t *idx, T *dx, mt_vol_geom g) {
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
    nnk_max3_fwd<T>
        <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), mtk_ptr<int64_t>(idx), *g);
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
    nnk_max3_bwd<T>
        <<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(dy), mtk_ptr<int64_t>(idx), mtk_ptr<T>(dx), *g);
    MT_CUDA_LAUNCH_CHECK(VP);
    return MT_OK;
  });
}

/* 3-d average pooling: one dimension of output j's window, valid taps [lo, hi), and its factor
 * of the divisor (vol_pool.c's rule: padding counted when cip, never past the padded input) */
MTK_D int64_t nnk_avg3_dim(int64_t j, int64_t n, int k, int d, int p, int cip, int64_t *lo, int64_t *hi) {
  int64_t s = j * d - p, e = s + k;
  if (e > n + p) e = n + p;
  *lo = s < 0 ? 0 : s, *hi = e < n ? e : n;
  return cip ? e - s : *hi - *lo;
}

template <class T> __global__ void nnk_avg3_fwd(const T *x, T *y, mt_vol_geom g, int cip) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t O = g.oT * g.oH * g.oW, V = g.T * g.H * g.W, n = g.C * O;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t ox = o % g.oW, oy = (o / g.oW) % g.oH, ot = (o / (g.oW * g.oH)) % g.oT, p = o / O;
    int64_t t0, t1, y0, y1, x0, x1;
    int64_t div = nnk_avg3_dim(ot, g.T, g.kT, g.dT, g.pT, cip, &t0, &t1) *
                  nnk_avg3_dim(oy, g.H, g.kH, g.dH, g.pH, cip, &y0, &y1) *
                  nnk_avg3_dim(ox, g.W, g.kW, g.dW, g.pW, cip, &x0, &x1);
    const T *xp = x + p * V;
    CT s = 0;
    for (int64_t t = t0; t < t1; t++)
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) s += (CT)mtk_ld(xp + (t * g.H + iy) * g.W + ix);
    mtk_st(y + o, div > 0 ? s / (CT)div : (CT)0);
  }
}

/* gathers: one thread per input cell adds dy / divisor of every window that holds it */
template <class T> __global__ void nnk_avg3_bwd(const T *dy, T *dx, mt_vol_geom g, int cip) {
  typedef typename mtk_ct<T>::type CT;
  const int64_t O = g.oT * g.oH * g.oW, V = g.T * g.H * g.W, n = g.C * V;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ix = e % g.W, iy = (e / g.W) % g.H, it = (e / (g.W * g.H)) % g.T, p = e / V;
    int64_t tlo, thi, ylo, yhi, xlo, xhi, a, b;
    nnk_cover(it, g.kT, g.dT, g.pT, g.oT, &tlo, &thi);
    nnk_cover(iy, g.kH, g.dH, g.pH, g.oH, &ylo, &yhi);
    nnk_cover(ix, g.kW, g.dW, g.pW, g.oW, &xlo, &xhi);
    const T *gp = dy + p * O;
    CT s = 0;
    for (int64_t ot = tlo; ot <= thi; ot++) {
      int64_t ft = nnk_avg3_dim(ot, g.T, g.kT, g.dT, g.pT, cip, &a, &b);
      for (int64_t oy = ylo; oy <= yhi; oy++) {
        int64_t fh = nnk_avg3_dim(oy, g.H, g.kH, g.dH, g.pH, cip, &a, &b);
        for (int64_t ox = xlo; ox <= xhi; ox++) {
          int64_t div = ft * fh * nnk_avg3_dim(ox, g.W, g.kW, g.dW, g.pW, cip, &a, &b);
          if (div > 0) s += (CT)mtk_ld(gp + (ot * g.oH + oy) * g.oW + ox) / (CT)div;
        }
      }
    }
    mtk_st(dx + e, s);
  }
}

#define VA "VolumetricAveragePooling"

extern "C" mt_status mt__cuda_avgpool3d_forward(mt_tensor *y, const mt_tensor *x, const mt_vol_geom *g, int cip) {
  int64_t n = g->C * g->oT * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, VA, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_avg3_fwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), *g, cip);
    MT_CUDA_LAUNCH_CHECK(VA);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_avgpool3d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_vol_geom *g, int cip) {
  int64_t n = g->C * g->T * g->H * g->W;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(dx->device);
  return nnk_dispatch_float(dx->dtype, VA, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_avg3_bwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(dy), mtk_ptr<T>(dx), *g, cip);
    MT_CUDA_LAUNCH_CHECK(VA);
    return MT_OK;
  });
}
