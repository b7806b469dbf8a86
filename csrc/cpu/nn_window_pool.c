/* nn_window_pool.c: the CPU loop of window_maxpool2d (csrc/nn/window_pool.c): for every plane and
 * output cell, the maximum over rows [hs, he) x columns [ws, we) of its H x W plane and its flat
 * 1-based position in the whole input (what nn's indexAdd backward takes). A NaN wins, the first
 * one; among equal values the first in row-major order. */
#include "../core/dtype.h"
#include "cpu.h"

#define WMAX_CASE(E, N, TT, CT)                                                                                   \
  case E: {                                                                                                       \
    const TT *x = (const TT *)mt__data(xt);                                                                       \
    TT *y = (TT *)mt__data(yt);                                                                                   \
    _Pragma("omp parallel for if(g->planes * g->oH * g->oW > MT_PARALLEL_GRAIN / 16)") for (int64_t p = 0;        \
                                                                                            p < g->planes; p++) { \
      const TT *xp = x + p * g->H * g->W;                                                                         \
      const int64_t *hs = hsp + (per_plane ? p * g->oH : 0), *he = hep + (per_plane ? p * g->oH : 0);             \
      const int64_t *ws = wsp + (per_plane ? p * g->oW : 0), *we = wep + (per_plane ? p * g->oW : 0);             \
      for (int64_t i = 0; i < g->oH; i++)                                                                         \
        for (int64_t j = 0; j < g->oW; j++) {                                                                     \
          /* selects, not branches (random data mispredicts "larger than the best so far"); a                     \
           * NaN, rare, is found by a second pass that takes the first one */                                     \
          int64_t best = hs[i] * g->W + ws[j];                                                                    \
          CT bv = mt_ld_##N(xp + best);                                                                           \
          int nan = 0;                                                                                            \
          for (int64_t r = hs[i]; r < he[i]; r++)                                                                 \
            for (int64_t c = ws[j]; c < we[j]; c++) {                                                             \
              CT v = mt_ld_##N(xp + r * g->W + c);                                                                \
              int take = v > bv;                                                                                  \
              bv = take ? v : bv, best = take ? r * g->W + c : best;                                              \
              nan |= v != v;                                                                                      \
            }                                                                                                     \
          for (int64_t r = hs[i]; nan && r < he[i]; r++)                                                          \
            for (int64_t c = ws[j]; c < we[j]; c++) {                                                             \
              CT v = mt_ld_##N(xp + r * g->W + c);                                                                \
              if (v != v) {                                                                                       \
                bv = v, best = r * g->W + c, nan = 0;                                                             \
                break;                                                                                            \
              }                                                                                                   \
            }                                                                                                     \
          int64_t o = (p * g->oH + i) * g->oW + j;                                                                \
          mt_st_##N(y + o, bv);                                                                                   \
          ip[o] = p * g->H * g->W + best + 1;                                                                     \
        }                                                                                                         \
    }                                                                                                             \
  } break;

mt_status mt__cpu_window_maxpool2d(mt_tensor *yt, mt_tensor *it, const mt_tensor *xt, const mt_tensor *hst,
                                   const mt_tensor *het, const mt_tensor *wst, const mt_tensor *wet,
                                   const mt_pool_geom *g, int per_plane) {
  const int64_t *hsp = (const int64_t *)mt__data(hst), *hep = (const int64_t *)mt__data(het);
  const int64_t *wsp = (const int64_t *)mt__data(wst), *wep = (const int64_t *)mt__data(wet);
  int64_t *ip = (int64_t *)mt__data(it);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(WMAX_CASE)
    default: break;
  }
  return MT_OK;
}
