/* nn_pool.c: the CPU backend's 2-d max, average and adaptive average pooling (float dtypes)
 * over dense planes, NCHW or channels-last (g->cs, the pixel stride: a plane's pixels are cs
 * elements apart), written once in generic/nn_pool.c and compiled per float dtype; csrc/nn/pool.c
 * checks the arguments and sizes the outputs. Work is split over the N*C planes. Max pooling's
 * indices hold the 0-based flat position of each maximum in its H x W plane, and NaN wins
 * (propagates) as in PyTorch. The windows of average pooling come from core/pool_window.h, shared
 * with the CUDA kernels: the divisor counts padding cells (count_include_pad) but never the part
 * of a ceil-mode window beyond the padded input, as in PyTorch/Torch7. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "../core/pool_window.h"
#include "cpu.h"

/* windows that tile the input: stride = kernel, no padding (then no window is clipped but the
 * last ones in ceil mode, and none overlaps) */
static inline int avg_tiled(const mt_pool_geom *g) {
  return g->kH == g->dH && g->kW == g->dW && g->pH == 0 && g->pW == 0;
}
/* how many of n cells o tiling windows of k cover (ceil mode clips the last one to the input) */
static inline int64_t avg_covered(int64_t o, int64_t k, int64_t n) { return o * k < n ? o * k : n; }

/* the window rows [*y0, *y1) x columns [*x0, *x1) of output (oy, ox) and its divisor, for
 * average pooling or (adaptive, a constant where this is called, so one branch remains) adaptive
 * average pooling, whose divisor is never 0 */
static inline void pool_window(const mt_pool_geom *g, int64_t oy, int64_t ox, int count_include_pad, int adaptive,
                               int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1, int64_t *divisor) {
  if (!adaptive) {
    mt__avgpool_window(g, oy, ox, count_include_pad, y0, y1, x0, x1, divisor);
    return;
  }
  *y0 = mt__adaptive_start(oy, g->H, g->oH), *y1 = mt__adaptive_end(oy, g->H, g->oH);
  *x0 = mt__adaptive_start(ox, g->W, g->oW), *x1 = mt__adaptive_end(ox, g->W, g->oW);
  *divisor = (*y1 - *y0) * (*x1 - *x0);
}

#define MT_GENERIC_FILE "generic/nn_pool.c"
#include "generate_float.h"

/* src/dst are x/y forward and dy/dx backward; the dtype switch reads x forward, dx backward */
#define WINDOW_POOL_CASE(E, N, T, CT)                                                                                  \
  case E:                                                                                                              \
    (adaptive ? (backward ? adaptive_backward_##N : adaptive_forward_##N)                                              \
              : (backward ? average_backward_##N : average_forward_##N))((const T *)mt__data(src), (T *)mt__data(dst), \
                                                                         g, count_include_pad);                        \
    break;
static mt_status window_pool(mt_tensor *dst, const mt_tensor *src, const mt_pool_geom *g, int count_include_pad,
                             int adaptive, int backward) {
  switch ((backward ? dst : src)->dtype) {
    MT_FLOAT_DTYPE_LIST(WINDOW_POOL_CASE)
    default: break;
  }
  return MT_OK;
}

#define MAX_FORWARD_CASE(E, N, T, CT) \
  case E: max_forward_##N((const T *)mt__data(x), (T *)mt__data(y), (int64_t *)mt__data(indices), g); break;
mt_status mt__cpu_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x, const mt_pool_geom *g) {
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX_FORWARD_CASE)
    default: break;
  }
  return MT_OK;
}

#define MAX_BACKWARD_CASE(E, N, T, CT) \
  case E: found = max_backward_##N((const T *)mt__data(dy), index_data, (T *)mt__data(dx), g, &bad); break;
mt_status mt__cpu_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                     const mt_pool_geom *g) {
  const int64_t *index_data = (const int64_t *)mt__data(indices);
  int64_t bad = 0;
  int found = 0;
  switch (dx->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX_BACKWARD_CASE)
    default: break;
  }
  if (found) /* gradInput then holds partial sums */
    return mt__error(MT_ERR_INDEX, "SpatialMaxPooling: index %lld out of range for a %lldx%lld plane", (long long)bad,
                     (long long)g->H, (long long)g->W);
  return MT_OK;
}

mt_status mt__cpu_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g, int count_include_pad) {
  return window_pool(y, x, g, count_include_pad, 0, 0);
}

mt_status mt__cpu_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g, int count_include_pad) {
  return window_pool(dx, dy, g, count_include_pad, 0, 1);
}

mt_status mt__cpu_adaptive_avgpool2d_forward(mt_tensor *y, const mt_tensor *x, const mt_pool_geom *g) {
  return window_pool(y, x, g, 0, 1, 0);
}

mt_status mt__cpu_adaptive_avgpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_pool_geom *g) {
  return window_pool(dx, dy, g, 0, 1, 1);
}
