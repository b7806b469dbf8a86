/* nn_pool.cu: max, average and adaptive average pooling on CUDA with the windows, divisors and
 * index convention of csrc/nn/pool.c (indices: int64, 0-based within an H x W plane; NaN wins).
 * Forward: one thread per output cell. Backward gathers: one thread per input cell sums the
 * windows that cover it, so there are no atomics and the result is deterministic. Operands are
 * NCHW or channels-last (g.cs, backend.h); threads walk the result in memory order, so
 * neighbouring threads write neighbouring elements in either layout. */
#include "nn_common.cuh"

typedef mt_pool_geom pgeom;

/* memory position m of a dense plane-major result with hw pixels per plane -> plane p and
 * pixel i (p = n*C + c; cs 1: NCHW, C: channels-last) */
MTK_D void nnk_pix(int64_t m, int64_t hw, int64_t cs, int64_t *p, int64_t *i) {
  int64_t c = m % cs, r = m / cs;
  *i = r % hw, *p = (r / hw) * cs + c;
}
/* offset of plane p's pixel 0 in a dense result with hw pixels per plane */
MTK_D int64_t nnk_pbase(int64_t p, int64_t hw, int64_t cs) { return (p / cs) * hw * cs + p % cs; }

template <class T> __global__ void nnk_maxpool_fwd(const T *x, T *y, int64_t *idx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(o, g.oH * g.oW, cs, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + nnk_pbase(p, g.H * g.W, cs);
    int64_t y0 = oy * g.dH - g.pH, x0 = ox * g.dW - g.pW;
    int64_t y1 = y0 + g.kH < g.H ? y0 + g.kH : g.H, x1 = x0 + g.kW < g.W ? x0 + g.kW : g.W;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    CT best = -INFINITY;
    int64_t bi = y0 * g.W + x0;
    bool nan = false;
    for (int64_t iy = y0; iy < y1 && !nan; iy++)
      for (int64_t ix = x0; ix < x1; ix++) {
        CT v = mtk_ld(xp + (iy * g.W + ix) * cs);
        if (v > best || v != v) {
          best = v;
          bi = iy * g.W + ix;
          if (v != v) {
            nan = true;
            break;
          }
        }
      }
    mtk_st(y + o, best);
    idx[o] = bi;
  }
}

template <class T> __global__ void nnk_maxpool_bwd(const T *dy, const int64_t *idx, T *dx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(k, g.H * g.W, cs, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    int64_t pos = pix, ylo, yhi, xlo, xhi;
    nnk_cover(iy, g.kH, g.dH, g.pH, g.oH, &ylo, &yhi);
    nnk_cover(ix, g.kW, g.dW, g.pW, g.oW, &xlo, &xhi);
    CT s = 0;
    int64_t yb = nnk_pbase(p, g.oH * g.oW, cs);
    const int64_t *ip = idx + yb;
    const T *gp = dy + yb;
    for (int64_t oy = ylo; oy <= yhi; oy++)
      for (int64_t ox = xlo; ox <= xhi; ox++)
        if (ip[(oy * g.oW + ox) * cs] == pos) s += (CT)mtk_ld(gp + (oy * g.oW + ox) * cs);
    mtk_st(dx + k, s);
  }
}

/* average-pool window of output (oy, ox) clipped to the input, and its divisor (pool.c's
 * avg_window: padding cells count when cip, never the part of a ceil-mode window beyond the
 * padded input) */
MTK_D void nnk_avg_window(const pgeom &g, int64_t oy, int64_t ox, int cip, int64_t *y0, int64_t *y1, int64_t *x0,
                          int64_t *x1, int64_t *div) {
  int64_t a = oy * g.dH - g.pH, b = ox * g.dW - g.pW;
  int64_t c = a + g.kH, d = b + g.kW;
  if (c > g.H + g.pH) c = g.H + g.pH;
  if (d > g.W + g.pW) d = g.W + g.pW;
  int64_t padded = (c - a) * (d - b);
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  if (c > g.H) c = g.H;
  if (d > g.W) d = g.W;
  *y0 = a, *y1 = c, *x0 = b, *x1 = d;
  *div = cip ? padded : (c - a) * (d - b);
}

template <class T> __global__ void nnk_avgpool_fwd(const T *x, T *y, pgeom g, int cip) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(o, g.oH * g.oW, cs, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + nnk_pbase(p, g.H * g.W, cs);
    int64_t y0, y1, x0, x1, div;
    nnk_avg_window(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);
    CT s = 0;
    for (int64_t iy = y0; iy < y1; iy++)
      for (int64_t ix = x0; ix < x1; ix++) s += (CT)mtk_ld(xp + (iy * g.W + ix) * cs);
    mtk_st(y + o, div > 0 ? s / (CT)div : (CT)0);
  }
}

template <class T> __global__ void nnk_avgpool_bwd(const T *dy, T *dx, pgeom g, int cip) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(k, g.H * g.W, cs, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    int64_t ylo, yhi, xlo, xhi;
    nnk_cover(iy, g.kH, g.dH, g.pH, g.oH, &ylo, &yhi);
    nnk_cover(ix, g.kW, g.dW, g.pW, g.oW, &xlo, &xhi);
    const T *gp = dy + nnk_pbase(p, g.oH * g.oW, cs);
    CT s = 0;
    for (int64_t oy = ylo; oy <= yhi; oy++)
      for (int64_t ox = xlo; ox <= xhi; ox++) {
        int64_t y0, y1, x0, x1, div;
        nnk_avg_window(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);
        if (div > 0 && iy >= y0 && iy < y1 && ix >= x0 && ix < x1)
          s += (CT)mtk_ld(gp + (oy * g.oW + ox) * cs) / (CT)div;
      }
    mtk_st(dx + k, s);
  }
}

/* adaptive: output cell i of n covers input [floor(i*in/n), ceil((i+1)*in/n)) */
MTK_D int64_t nnk_ad_start(int64_t i, int64_t in, int64_t n) { return (i * in) / n; }
MTK_D int64_t nnk_ad_end(int64_t i, int64_t in, int64_t n) { return ((i + 1) * in + n - 1) / n; }

template <class T> __global__ void nnk_adaptive_fwd(const T *x, T *y, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(o, g.oH * g.oW, cs, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + nnk_pbase(p, g.H * g.W, cs);
    int64_t y0 = nnk_ad_start(oy, g.H, g.oH), y1 = nnk_ad_end(oy, g.H, g.oH);
    int64_t x0 = nnk_ad_start(ox, g.W, g.oW), x1 = nnk_ad_end(ox, g.W, g.oW);
    CT s = 0;
    for (int64_t iy = y0; iy < y1; iy++)
      for (int64_t ix = x0; ix < x1; ix++) s += (CT)mtk_ld(xp + (iy * g.W + ix) * cs);
    mtk_st(y + o, s / (CT)((y1 - y0) * (x1 - x0)));
  }
}

template <class T> __global__ void nnk_adaptive_bwd(const T *dy, T *dx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, cs = g.cs;
    nnk_pix(k, g.H * g.W, cs, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    const T *gp = dy + nnk_pbase(p, g.oH * g.oW, cs);
    CT s = 0;
    /* the windows are ordered and overlap by at most one cell, so scan until they start past us */
    for (int64_t oy = 0; oy < g.oH && nnk_ad_start(oy, g.H, g.oH) <= iy; oy++) {
      int64_t y0 = nnk_ad_start(oy, g.H, g.oH), y1 = nnk_ad_end(oy, g.H, g.oH);
      if (iy >= y1) continue;
      for (int64_t ox = 0; ox < g.oW && nnk_ad_start(ox, g.W, g.oW) <= ix; ox++) {
        int64_t x0 = nnk_ad_start(ox, g.W, g.oW), x1 = nnk_ad_end(ox, g.W, g.oW);
        if (ix >= x1) continue;
        s += (CT)mtk_ld(gp + (oy * g.oW + ox) * cs) / (CT)((y1 - y0) * (x1 - x0));
      }
    }
    mtk_st(dx + k, s);
  }
}

#define MP "SpatialMaxPooling"
#define AP "SpatialAveragePooling"
#define AD "SpatialAdaptiveAveragePooling"

/* launch over n cells of x's dtype */
#define NNK_POOL_LAUNCH(op, dtype, device, n, KERNEL, ...)                          \
  do {                                                                              \
    if ((n) == 0) return MT_OK;                                                     \
    cudaStream_t s_ = mt__cuda_stream(device);                                      \
    return nnk_dispatch_float((dtype), (op), [&](auto tag) -> mt_status {           \
      using T = typename decltype(tag)::type;                                       \
      KERNEL<T><<<mtk_blocks((n), NNK_THREADS), NNK_THREADS, 0, s_>>>(__VA_ARGS__); \
      MT_CUDA_LAUNCH_CHECK(op);                                                     \
      return MT_OK;                                                                 \
    });                                                                             \
  } while (0)

extern "C" mt_status mt__cuda_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x,
                                                const mt_pool_geom *g) {
  NNK_POOL_LAUNCH(MP, x->dtype, x->device, g->planes * g->oH * g->oW, nnk_maxpool_fwd, mtk_ptr<T>(x), mtk_ptr<T>(y),
                  mtk_ptr<int64_t>(indices), *g);
}
extern "C" mt_status mt__cuda_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                                 const mt_pool_geom *g) {
  NNK_POOL_LAUNCH(MP, dx->dtype, dx->device, g->planes * g->H * g->W, nnk_maxpool_bwd, mtk_ptr<T>(dy),
                  mtk_ptr<int64_t>(indices), mtk_ptr<T>(dx), *g);
}
extern "C" mt_status mt__cuda_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g,
                                                int count_include_pad) {
  NNK_POOL_LAUNCH(AP, x->dtype, x->device, g->planes * g->oH * g->oW, nnk_avgpool_fwd, mtk_ptr<T>(x), mtk_ptr<T>(y), *g,
                  count_include_pad);
}
extern "C" mt_status mt__cuda_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g,
                                                 int count_include_pad) {
  NNK_POOL_LAUNCH(AP, dx->dtype, dx->device, g->planes * g->H * g->W, nnk_avgpool_bwd, mtk_ptr<T>(dy), mtk_ptr<T>(dx),
                  *g, count_include_pad);
}
extern "C" mt_status mt__cuda_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g) {
  NNK_POOL_LAUNCH(AD, x->dtype, x->device, g->planes * g->oH * g->oW, nnk_adaptive_fwd, mtk_ptr<T>(x), mtk_ptr<T>(y),
                  *g);
}
extern "C" mt_status mt__cuda_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g) {
  NNK_POOL_LAUNCH(AD, dx->dtype, dx->device, g->planes * g->H * g->W, nnk_adaptive_bwd, mtk_ptr<T>(dy), mtk_ptr<T>(dx),
                  *g);
}
