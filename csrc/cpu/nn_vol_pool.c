/* nn_vol_pool.c: the CPU loops of 3-d max pooling (csrc/nn/vol_pool.c). Forward: for each plane and
 * output cell the maximum over the window's taps inside the volume and its 0-based position in
 * the T x H x W volume; a NaN wins (the first one), among equal values the first in (t, y, x)
 * order. Backward: each output gradient added at its index (planes are independent, so the
 * planes are split over threads). */
#include <math.h>
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* taps i of a window starting at s (stride of taps l, k taps) with 0 <= s + i*l < n */
static void taps(int64_t s, int64_t l, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t a = s >= 0 ? 0 : (-s + l - 1) / l;
  int64_t b = s > n - 1 ? 0 : (n - 1 - s) / l + 1;
  if (b > k) b = k;
  if (a > b) a = b;
  *lo = a, *hi = b;
}

#define MAX3_CASE(E, N, TT, CT)                                                                                     \
  case E: {                                                                                                         \
    const TT *x = (const TT *)mt__data(xt);                                                                         \
    TT *y = (TT *)mt__data(yt);                                                                                     \
    _Pragma("omp parallel for schedule(static) if(g->C * O > MT_PARALLEL_GRAIN / 8)") for (int64_t p = 0; p < g->C; \
                                                                                           p++) {                   \
      const TT *xp = x + p * V;                                                                                     \
      for (int64_t ot = 0; ot < g->oT; ot++) {                                                                      \
        int64_t t0 = ot * g->dT - g->pT, a0, a1;                                                                    \
        taps(t0, g->lT, g->kT, g->T, &a0, &a1);                                                                     \
        for (int64_t oy = 0; oy < g->oH; oy++) {                                                                    \
          int64_t y0 = oy * g->dH - g->pH, b0, b1;                                                                  \
          taps(y0, g->lH, g->kH, g->H, &b0, &b1);                                                                   \
          for (int64_t ox = 0; ox < g->oW; ox++) {                                                                  \
            const int64_t x0 = ox * g->dW - g->pW, c0 = ctab[2 * ox], c1 = ctab[2 * ox + 1];                        \
            /* branch-free max (strictly larger wins: ties keep the first); a NaN, rare, is found                   \
             * by a second pass that takes the first one */                                                         \
            int64_t best = a0 < a1 && b0 < b1 && c0 < c1                                                            \
                               ? ((t0 + a0 * g->lT) * g->H + y0 + b0 * g->lH) * g->W + x0 + c0 * g->lW              \
                               : -1; /* the first tap: it stays the maximum if nothing beats -inf */                \
            CT bv = -INFINITY;                                                                                      \
            int nan = 0;                                                                                            \
            for (int64_t i = a0; i < a1; i++)                                                                       \
              for (int64_t j = b0; j < b1; j++) {                                                                   \
                const int64_t row = ((t0 + i * g->lT) * g->H + y0 + j * g->lH) * g->W + x0;                         \
                for (int64_t k = c0; k < c1; k++) {                                                                 \
                  const int64_t pos = row + k * g->lW;                                                              \
                  CT v = mt_ld_##N(xp + pos);                                                                       \
                  int gt = v > bv;                                                                                  \
                  bv = gt ? v : bv, best = gt ? pos : best;                                                         \
                  nan |= v != v;                                                                                    \
                }                                                                                                   \
              }                                                                                                     \
            for (int64_t i = a0; nan && i < a1; i++)                                                                \
              for (int64_t j = b0; nan && j < b1; j++) {                                                            \
                const int64_t row = ((t0 + i * g->lT) * g->H + y0 + j * g->lH) * g->W + x0;                         \
                for (int64_t k = c0; k < c1; k++) {                                                                 \
                  CT v = mt_ld_##N(xp + row + k * g->lW);                                                           \
                  if (v != v) {                                                                                     \
                    bv = v, best = row + k * g->lW, nan = 0;                                                        \
                    break;                                                                                          \
                  }                                                                                                 \
                }                                                                                                   \
              }                                                                                                     \
            const int64_t o = p * O + (ot * g->oH + oy) * g->oW + ox;                                               \
            mt_st_##N(y + o, bv);                                                                                   \
            ip[o] = best < 0 ? 0 : best;                                                                            \
          }                                                                                                         \
        }                                                                                                           \
      }                                                                                                             \
    }                                                                                                               \
  } break;

mt_status mt__cpu_maxpool3d_forward(mt_tensor *yt, mt_tensor *it, const mt_tensor *xt, const mt_vol_geom *g) {
  const int64_t V = g->T * g->H * g->W, O = g->oT * g->oH * g->oW;
  int64_t *ip = (int64_t *)mt__data(it);
  /* each output column's taps, once per call: taps() divides twice, which per output cost more
   * than the window's compares */
  int64_t *ctab = (int64_t *)malloc((size_t)(2 * g->oW + 2) * sizeof *ctab);
  if (!ctab) return mt__error(MT_ERR_MEMORY, "VolumetricMaxPooling: out of memory for a column table");
  for (int64_t ox = 0; ox < g->oW; ox++) taps(ox * g->dW - g->pW, g->lW, g->kW, g->W, &ctab[2 * ox], &ctab[2 * ox + 1]);
  mt_status st = MT_OK;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX3_CASE)
    default: st = mt__error(MT_ERR_DTYPE, "VolumetricMaxPooling: dtype %s is not supported", mt_dtype_name(xt->dtype));
  }
  free(ctab);
  return st;
}
#undef MAX3_CASE

/* bad: the first plane holding an index outside its volume (-1: none) */
#define MAX3B_CASE(E, N, TT, CT)                                                                                       \
  case E: {                                                                                                            \
    const TT *dy = (const TT *)mt__data(dyt);                                                                          \
    TT *dx = (TT *)mt__data(dxt);                                                                                      \
    _Pragma("omp parallel for schedule(static) if(g->C * V > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->C; p++) { \
      TT *d = dx + p * V;                                                                                              \
      const TT *s = dy + p * O;                                                                                        \
      const int64_t *ix = ip + p * O;                                                                                  \
      for (int64_t v = 0; v < V; v++) mt_st_##N(d + v, (CT)0);                                                         \
      for (int64_t o = 0; o < O; o++) {                                                                                \
        if (ix[o] < 0 || ix[o] >= V) {                                                                                 \
          _Pragma("omp atomic write") bad = p;                                                                         \
          break;                                                                                                       \
        }                                                                                                              \
        mt_st_##N(d + ix[o], (CT)mt_ld_##N(d + ix[o]) + (CT)mt_ld_##N(s + o));                                         \
      }                                                                                                                \
    }                                                                                                                  \
  } break;

mt_status mt__cpu_maxpool3d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_tensor *it, const mt_vol_geom *g) {
  const int64_t V = g->T * g->H * g->W, O = g->oT * g->oH * g->oW;
  const int64_t *ip = (const int64_t *)mt__data(it);
  int64_t bad = -1;
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(MAX3B_CASE)
    default:
      return mt__error(MT_ERR_DTYPE, "VolumetricMaxPooling: dtype %s is not supported", mt_dtype_name(dxt->dtype));
  }
  if (bad >= 0)
    return mt__error(MT_ERR_ARG, "VolumetricMaxPooling: plane %lld has an index outside its %lld-element volume",
                     (long long)bad, (long long)V);
  return MT_OK;
}
#undef MAX3B_CASE
