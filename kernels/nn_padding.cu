/* nn_padding.cu: 2-d padding on CUDA, the mapping of csrc/nn/padding.c: the forward gathers
 * each output pixel from its source; the backward gathers, for each input pixel, the output
 * pixels whose source it is (at most three ranges per dimension: itself, its mirror images, or
 * the border's replicas), so no atomics. */
#include "nn_common.cuh"

MTK_D int64_t nnk_pad_src(int64_t o, int64_t n, int64_t before, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == MT_PAD_ZERO) return -1;
  if (mode == MT_PAD_REFLECT) return i < 0 ? -i : 2 * (n - 1) - i;
  return i < 0 ? 0 : n - 1;
}

/* the output positions [a[k], b[k]) (k < 3) of a dimension of size n padded to on (before:
 * the first pad) whose source is i */
MTK_D int nnk_pad_ranges(int64_t i, int64_t n, int64_t on, int64_t before, int mode, int64_t *a, int64_t *b) {
  int k = 0;
  int64_t o = i + before;
  if (o >= 0 && o < on) a[k] = o, b[k] = o + 1, k++;
  if (mode == MT_PAD_REFLECT) {
    if (i > 0 && i <= before) a[k] = before - i, b[k] = before - i + 1, k++;
    o = before + 2 * (n - 1) - i;
    if (i < n - 1 && o >= before + n && o < on) a[k] = o, b[k] = o + 1, k++;
  } else if (mode == MT_PAD_REPLICATE) {
    if (i == 0 && before > 0) a[k] = 0, b[k] = before, k++;
    if (i == n - 1 && before + n < on) a[k] = before + n, b[k] = on, k++;
  }
  return k;
}

template <class T> __global__ void nnk_pad_fwd(const T *x, T *y, mt_pool_geom g, int mode) {
  int64_t n = g.planes * g.oH * g.oW;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, pl = i / (g.oW * g.oH);
    int64_t ih = nnk_pad_src(oh, g.H, g.pH, mode), iw = nnk_pad_src(ow, g.W, g.pW, mode);
    if (ih < 0 || iw < 0) mtk_st(y + i, (typename mtk_ct<T>::type)0);
    else y[i] = x[(pl * g.H + ih) * g.W + iw];
  }
}

template <class T> __global__ void nnk_pad_bwd(const T *dy, T *dx, mt_pool_geom g, int mode) {
  typedef typename mtk_ct<T>::type CT;
  int64_t n = g.planes * g.H * g.W;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t w = i % g.W, h = (i / g.W) % g.H, pl = i / (g.W * g.H);
    int64_t ha[3], hb[3], wa[3], wb[3];
    int nh = nnk_pad_ranges(h, g.H, g.oH, g.pH, mode, ha, hb), nw = nnk_pad_ranges(w, g.W, g.oW, g.pW, mode, wa, wb);
    CT acc = 0;
    for (int r = 0; r < nh; r++)
      for (int64_t oh = ha[r]; oh < hb[r]; oh++)
        for (int c = 0; c < nw; c++)
          for (int64_t ow = wa[c]; ow < wb[c]; ow++) acc += mtk_ld(dy + (pl * g.oH + oh) * g.oW + ow);
    mtk_st(dx + i, acc);
  }
}

extern "C" mt_status mt__cuda_pad2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, int mode) {
  int64_t n = g->planes * g->oH * g->oW;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  mt_pool_geom gg = *g;
  return nnk_dispatch_float(x->dtype, "pad2d", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_pad_fwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), gg, mode);
    MT_CUDA_LAUNCH_CHECK("pad2d");
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_pad2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g, int mode) {
  int64_t n = g->planes * g->H * g->W;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(dy->device);
  mt_pool_geom gg = *g;
  return nnk_dispatch_float(dy->dtype, "pad2d", [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_pad_bwd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(dy), mtk_ptr<T>(dx), gg, mode);
    MT_CUDA_LAUNCH_CHECK("pad2d");
    return MT_OK;
  });
}
