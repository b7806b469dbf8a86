/* pool_window.h: where a 2-d pooling window lies, shared by the CPU (csrc/cpu/nn_pool.c) and
 * CUDA (kernels/nn_pool.cu) backends so that both clip, divide and lay out planes alike: the
 * offset of a plane, the window and divisor of average pooling, the window of adaptive average
 * pooling. Plain C; under nvcc the functions compile for the host and the device.
 * mt_pool_geom (backend.h): planes H x W pooled into oH x oW; kernel kH x kW, stride dH x dW,
 * padding pH x pW; cs, the pixel stride: 1 for NCHW planes, C for channels-last ones. */
#ifndef MT_CORE_POOL_WINDOW_H
#define MT_CORE_POOL_WINDOW_H
#include <stdint.h>
#include "backend.h"

#ifndef MT_HOSTDEV /* as philox.h */
#ifdef __CUDACC__
#define MT_HOSTDEV __host__ __device__ __forceinline__
#else
#define MT_HOSTDEV static inline
#endif
#endif

/* offset of plane p (= n*C + c) of hw pixels in a dense operand whose pixels are pixel_stride
 * apart: p*hw for NCHW (pixel_stride 1), n*hw*C + c channels-last (pixel_stride C) */
MT_HOSTDEV int64_t mt__pool_plane_offset(int64_t p, int64_t hw, int64_t pixel_stride) {
  return (p / pixel_stride) * hw * pixel_stride + p % pixel_stride;
}

/* average pooling: the window of output (oy, ox) clipped to the input, rows [*y0, *y1) x
 * columns [*x0, *x1), and its divisor: padding cells count when count_include_pad, the part of
 * a ceil-mode window beyond the padded input never (as PyTorch and Torch7) */
MT_HOSTDEV void mt__avgpool_window(const mt_pool_geom *g, int64_t oy, int64_t ox, int count_include_pad, int64_t *y0,
                                   int64_t *y1, int64_t *x0, int64_t *x1, int64_t *divisor) {
  int64_t top = oy * g->dH - g->pH, left = ox * g->dW - g->pW;
  int64_t bottom = top + g->kH, right = left + g->kW; /* exclusive */
  if (bottom > g->H + g->pH) bottom = g->H + g->pH;
  if (right > g->W + g->pW) right = g->W + g->pW;
  int64_t padded = (bottom - top) * (right - left);
  if (top < 0) top = 0;
  if (left < 0) left = 0;
  if (bottom > g->H) bottom = g->H;
  if (right > g->W) right = g->W;
  *y0 = top, *y1 = bottom, *x0 = left, *x1 = right;
  *divisor = count_include_pad ? padded : (bottom - top) * (right - left);
}

/* adaptive average pooling: output cell i of n covers input [floor(i*in/n), ceil((i+1)*in/n)) */
MT_HOSTDEV int64_t mt__adaptive_start(int64_t i, int64_t in, int64_t n) { return (i * in) / n; }
MT_HOSTDEV int64_t mt__adaptive_end(int64_t i, int64_t in, int64_t n) { return ((i + 1) * in + n - 1) / n; }

#endif
