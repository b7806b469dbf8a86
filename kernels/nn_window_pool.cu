/* nn_window_pool.cu: window_maxpool2d on CUDA (csrc/nn/window_pool.c): one thread per output
 * cell, the CPU loop's rule (the first NaN wins, ties keep the first in row-major order). */
#include "nn_common.cuh"

template <class T> __global__ void nnk_window_max(const T *x, T *y, int64_t *idx, const int64_t *hs, const int64_t *he,
                                                  const int64_t *ws, const int64_t *we, mt_pool_geom g, int per_plane) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t j = o % g.oW, i = (o / g.oW) % g.oH, p = o / (g.oW * g.oH);
    int64_t ph = per_plane ? p * g.oH : 0, pw = per_plane ? p * g.oW : 0;
    const T *xp = x + p * g.H * g.W;
    int64_t r0 = hs[ph + i], r1 = he[ph + i], c0 = ws[pw + j], c1 = we[pw + j];
    int64_t best = r0 * g.W + c0;
    CT bv = mtk_ld(xp + best);
    for (int64_t r = r0; r < r1 && !isnan((double)bv); r++)
      for (int64_t c = c0; c < c1; c++) {
        CT v = mtk_ld(xp + r * g.W + c);
        if (v > bv || isnan((double)v)) {
          bv = v, best = r * g.W + c;
          if (isnan((double)v)) break;
        }
      }
    mtk_st(y + o, bv);
    idx[o] = p * g.H * g.W + best + 1;
  }
}

extern "C" mt_status mt__cuda_window_maxpool2d(mt_tensor *y, mt_tensor *idx, const mt_tensor *x, const mt_tensor *hs,
                                               const mt_tensor *he, const mt_tensor *ws, const mt_tensor *we,
                                               const mt_pool_geom *g, int per_plane) {
  const char *op = "window_maxpool2d";
  int64_t n = g->planes * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_window_max<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
        mtk_ptr<T>(x), mtk_ptr<T>(y), mtk_ptr<int64_t>(idx), mtk_ptr<int64_t>(hs), mtk_ptr<int64_t>(he),
        mtk_ptr<int64_t>(ws), mtk_ptr<int64_t>(we), *g, per_plane);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}
