/* nn_window_pool.c: the CPU loop of window_maxpool2d (csrc/nn/window_pool.c), written once in
 * generic/nn_window_pool.c and compiled per float dtype: for every plane and output cell, the
 * maximum over rows [hs, he) x columns [ws, we) of its H x W plane and its flat 1-based position
 * in the whole input (what nn's indexAdd backward takes). A NaN wins, the first one; among equal
 * values the first in row-major order. */
#include "../core/dtype.h"
#include "cpu.h"

#define MT_GENERIC_FILE "generic/nn_window_pool.c"
#include "generate_float.h"

#define WINDOW_MAX_CASE(E, N, T, CT) \
  case E: window_max_pool_##N((const T *)mt__data(xt), (T *)mt__data(yt), ip, hsp, hep, wsp, wep, g, per_plane); break;
mt_status mt__cpu_window_maxpool2d(mt_tensor *yt, mt_tensor *it, const mt_tensor *xt, const mt_tensor *hst,
                                   const mt_tensor *het, const mt_tensor *wst, const mt_tensor *wet,
                                   const mt_pool_geom *g, int per_plane) {
  const int64_t *hsp = (const int64_t *)mt__data(hst), *hep = (const int64_t *)mt__data(het);
  const int64_t *wsp = (const int64_t *)mt__data(wst), *wep = (const int64_t *)mt__data(wet);
  int64_t *ip = (int64_t *)mt__data(it);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(WINDOW_MAX_CASE)
    default: break;
  }
  return MT_OK;
}
