/* nn_pool.cu: max, average and adaptive average pooling on CUDA with the windows, divisors and
 * index convention of csrc/nn/pool.c (indices: int64, 0-based within an H x W plane; NaN wins).
 * Forward: one thread per output cell. Backward gathers: one thread per input cell sums the
 * windows that cover it, so there are no atomics and the result is deterministic. Operands are
 * NCHW or channels-last (g.cs, the pixel stride: backend.h); threads walk the result in memory
 * order, so neighbouring threads write neighbouring elements in either layout. The windows and
 * plane offsets come from csrc/core/pool_window.h, shared with the CPU loops. */
#include "nn_common.cuh"
#include "../csrc/core/pool_window.h"

typedef mt_pool_geom pgeom;

/* memory position m of a dense plane-major result with hw pixels per plane -> plane p and
 * pixel i (p = n*C + c; pixel_stride 1: NCHW, C: channels-last) */
MTK_D void nnk_pix(int64_t m, int64_t hw, int64_t pixel_stride, int64_t *p, int64_t *i) {
  int64_t c = m % pixel_stride, r = m / pixel_stride;
  *i = r % hw, *p = (r / hw) * pixel_stride + c;
}

template <class T> __global__ void nnk_maxpool_fwd(const T *x, T *y, int64_t *idx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(o, g.oH * g.oW, pixel_stride, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + mt__pool_plane_offset(p, g.H * g.W, pixel_stride);
    int64_t y0 = oy * g.dH - g.pH, x0 = ox * g.dW - g.pW;
    int64_t y1 = y0 + g.kH < g.H ? y0 + g.kH : g.H, x1 = x0 + g.kW < g.W ? x0 + g.kW : g.W;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    CT best = -INFINITY;
    int64_t best_index = y0 * g.W + x0;
    bool nan = false;
    for (int64_t iy = y0; iy < y1 && !nan; iy++)
      for (int64_t ix = x0; ix < x1; ix++) {
        CT v = mtk_ld(xp + (iy * g.W + ix) * pixel_stride);
        if (v > best || v != v) {
          best = v;
          best_index = iy * g.W + ix;
          if (v != v) {
            nan = true;
            break;
          }
        }
      }
    mtk_st(y + o, best);
    idx[o] = best_index;
  }
}

template <class T> __global__ void nnk_maxpool_bwd(const T *dy, const int64_t *idx, T *dx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(k, g.H * g.W, pixel_stride, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    int64_t pos = pix, ylo, yhi, xlo, xhi;
    nnk_cover(iy, g.kH, g.dH, g.pH, g.oH, &ylo, &yhi);
    nnk_cover(ix, g.kW, g.dW, g.pW, g.oW, &xlo, &xhi);
    CT s = 0;
    int64_t out_base = mt__pool_plane_offset(p, g.oH * g.oW, pixel_stride);
    const int64_t *ip = idx + out_base;
    const T *gp = dy + out_base;
    for (int64_t oy = ylo; oy <= yhi; oy++)
      for (int64_t ox = xlo; ox <= xhi; ox++)
        if (ip[(oy * g.oW + ox) * pixel_stride] == pos) s += (CT)mtk_ld(gp + (oy * g.oW + ox) * pixel_stride);
    mtk_st(dx + k, s);
  }
}

template <class T> __global__ void nnk_avgpool_fwd(const T *x, T *y, pgeom g, int count_include_pad) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(o, g.oH * g.oW, pixel_stride, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + mt__pool_plane_offset(p, g.H * g.W, pixel_stride);
    int64_t y0, y1, x0, x1, divisor;
    mt__avgpool_window(&g, oy, ox, count_include_pad, &y0, &y1, &x0, &x1, &divisor);
    CT s = 0;
    for (int64_t iy = y0; iy < y1; iy++)
      for (int64_t ix = x0; ix < x1; ix++) s += (CT)mtk_ld(xp + (iy * g.W + ix) * pixel_stride);
    mtk_st(y + o, divisor > 0 ? s / (CT)divisor : (CT)0);
  }
}

template <class T> __global__ void nnk_avgpool_bwd(const T *dy, T *dx, pgeom g, int count_include_pad) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(k, g.H * g.W, pixel_stride, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    int64_t ylo, yhi, xlo, xhi;
    nnk_cover(iy, g.kH, g.dH, g.pH, g.oH, &ylo, &yhi);
    nnk_cover(ix, g.kW, g.dW, g.pW, g.oW, &xlo, &xhi);
    const T *gp = dy + mt__pool_plane_offset(p, g.oH * g.oW, pixel_stride);
    CT s = 0;
    for (int64_t oy = ylo; oy <= yhi; oy++)
      for (int64_t ox = xlo; ox <= xhi; ox++) {
        int64_t y0, y1, x0, x1, divisor;
        mt__avgpool_window(&g, oy, ox, count_include_pad, &y0, &y1, &x0, &x1, &divisor);
        if (divisor > 0 && iy >= y0 && iy < y1 && ix >= x0 && ix < x1)
          s += (CT)mtk_ld(gp + (oy * g.oW + ox) * pixel_stride) / (CT)divisor;
      }
    mtk_st(dx + k, s);
  }
}

template <class T> __global__ void nnk_adaptive_fwd(const T *x, T *y, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(o, g.oH * g.oW, pixel_stride, &p, &pix);
    int64_t ox = pix % g.oW, oy = pix / g.oW;
    const T *xp = x + mt__pool_plane_offset(p, g.H * g.W, pixel_stride);
    int64_t y0 = mt__adaptive_start(oy, g.H, g.oH), y1 = mt__adaptive_end(oy, g.H, g.oH);
    int64_t x0 = mt__adaptive_start(ox, g.W, g.oW), x1 = mt__adaptive_end(ox, g.W, g.oW);
    CT s = 0;
    for (int64_t iy = y0; iy < y1; iy++)
      for (int64_t ix = x0; ix < x1; ix++) s += (CT)mtk_ld(xp + (iy * g.W + ix) * pixel_stride);
    mtk_st(y + o, s / (CT)((y1 - y0) * (x1 - x0)));
  }
}

template <class T> __global__ void nnk_adaptive_bwd(const T *dy, T *dx, pgeom g) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t p, pix, pixel_stride = g.cs;
    nnk_pix(k, g.H * g.W, pixel_stride, &p, &pix);
    int64_t ix = pix % g.W, iy = pix / g.W;
    const T *gp = dy + mt__pool_plane_offset(p, g.oH * g.oW, pixel_stride);
    CT s = 0;
    /* the windows are ordered and overlap by at most one cell, so scan until they start past us */
    for (int64_t oy = 0; oy < g.oH && mt__adaptive_start(oy, g.H, g.oH) <= iy; oy++) {
      int64_t y0 = mt__adaptive_start(oy, g.H, g.oH), y1 = mt__adaptive_end(oy, g.H, g.oH);
      if (iy >= y1) continue;
      for (int64_t ox = 0; ox < g.oW && mt__adaptive_start(ox, g.W, g.oW) <= ix; ox++) {
        int64_t x0 = mt__adaptive_start(ox, g.W, g.oW), x1 = mt__adaptive_end(ox, g.W, g.oW);
        if (ix >= x1) continue;
        s += (CT)mtk_ld(gp + (oy * g.oW + ox) * pixel_stride) / (CT)((y1 - y0) * (x1 - x0));
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
