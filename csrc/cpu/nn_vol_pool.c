/* nn_vol_pool.c: the CPU loops of 3-d max pooling (csrc/nn/vol_pool.c), written once in
 * generic/nn_vol_pool.c and compiled per float dtype. Forward: for each plane and output cell the
 * maximum over the window's taps inside the volume and its 0-based position in the T x H x W
 * volume; a NaN wins (the first one), among equal values the first in (t, y, x) order. Backward:
 * each output gradient added at its index (planes are independent, so the planes are split over
 * threads). */
#include <math.h>
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* the taps i of a window starting at start (taps dilation apart, k of them) with
 * 0 <= start + i*dilation < n: [*lo, *hi) */
static void taps(int64_t start, int64_t dilation, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  int64_t end = start > n - 1 ? 0 : (n - 1 - start) / dilation + 1;
  if (end > k) end = k;
  if (first > end) first = end;
  *lo = first, *hi = end;
}

#define MT_GENERIC_FILE "generic/nn_vol_pool.c"
#include "generate_float.h"

#define MAX3_CASE(E, N, T, CT) \
  case E: max_pool3d_forward_##N((const T *)mt__data(xt), (T *)mt__data(yt), ip, col_taps, g); break;
mt_status mt__cpu_maxpool3d_forward(mt_tensor *yt, mt_tensor *it, const mt_tensor *xt, const mt_vol_geom *g) {
  int64_t *ip = (int64_t *)mt__data(it);
  /* each output column's taps, once per call: taps() divides twice, which per output cost more
   * than the window's compares */
  int64_t *col_taps = (int64_t *)malloc((size_t)(2 * g->oW + 2) * sizeof *col_taps);
  if (!col_taps) return mt__error(MT_ERR_MEMORY, "VolumetricMaxPooling: out of memory for a column table");
  for (int64_t ox = 0; ox < g->oW; ox++)
    taps(ox * g->dW - g->pW, g->lW, g->kW, g->W, &col_taps[2 * ox], &col_taps[2 * ox + 1]);
  mt_status st = MT_OK;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX3_CASE)
    default: st = mt__error(MT_ERR_DTYPE, "VolumetricMaxPooling: dtype %s is not supported", mt_dtype_name(xt->dtype));
  }
  free(col_taps);
  return st;
}

/* bad: a plane holding an index outside its volume (-1: none) */
#define MAX3B_CASE(E, N, T, CT) \
  case E: max_pool3d_backward_##N((const T *)mt__data(dyt), (T *)mt__data(dxt), ip, g, &bad); break;
mt_status mt__cpu_maxpool3d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_tensor *it, const mt_vol_geom *g) {
  const int64_t *ip = (const int64_t *)mt__data(it);
  int64_t bad = -1;
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX3B_CASE)
    default:
      return mt__error(MT_ERR_DTYPE, "VolumetricMaxPooling: dtype %s is not supported", mt_dtype_name(dxt->dtype));
  }
  if (bad >= 0)
    return mt__error(MT_ERR_ARG, "VolumetricMaxPooling: plane %lld has an index outside its %lld-element volume",
                     (long long)bad, (long long)(g->T * g->H * g->W));
  return MT_OK;
}
