/* nn_vol.c: the CPU loops of vol2col and col2vol (csrc/nn/vol.c). vol2col only moves elements, so
 * it runs on the element's bits (2, 4 or 8 bytes; a zero is all-zero bits in every floating
 * format); col2vol adds, in the dtype's compute type. Rows (c, kt, ky, kx) are independent in
 * vol2col and channels are in col2vol, so OpenMP splits those. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* For a tap at offset off (k*dilation - pad) along a dimension of n inputs, stride d and o
 * outputs: the outputs lo <= i < hi whose input off + i*d lies inside [0, n). */
static void inside(int64_t off, int64_t d, int64_t n, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + d - 1) / d;
  int64_t h = off > n - 1 ? 0 : (n - 1 - off) / d + 1;
  if (h > o) h = o;
  if (l > h) l = h;
  *lo = l, *hi = h;
}

/* the columns of output rows [q0, q1) (a row: the oW positions of one (ot, oy); all of them: 0,
 * oT*oH) into col, (C kT kH kW) x ((q1 - q0) oW). par: split the rows of col over the threads (0
 * inside a parallel region). */
#define VOL2COL_FN(U)                                                                                               \
  static void vol2col_##U(const U *x, U *col, const mt_vol_geom *g, int64_t q0, int64_t q1, int par) {              \
    const int64_t rows = g->C * g->kT * g->kH * g->kW, Lb = (q1 - q0) * g->oW;                                      \
    (void)par;                                                                                                      \
    _Pragma("omp parallel for schedule(static) if(par && rows * Lb > 4 * MT_PARALLEL_GRAIN)") for (int64_t r = 0;   \
                                                                                                   r < rows; r++) { \
      const int64_t kx = r % g->kW, ky = (r / g->kW) % g->kH, kt = (r / (g->kW * g->kH)) % g->kT;                   \
      const int64_t c = r / (g->kW * g->kH * g->kT);                                                                \
      const U *xc = x + c * g->T * g->H * g->W;                                                                     \
      U *dst = col + r * Lb;                                                                                        \
      const int64_t offx = kx * g->lW - g->pW;                                                                      \
      int64_t lo, hi;                                                                                               \
      inside(offx, g->dW, g->W, g->oW, &lo, &hi);                                                                   \
      int64_t ot = q0 / g->oH, oy = q0 % g->oH; /* then counted on */                                               \
      for (int64_t q = q0; q < q1; q++, dst += g->oW, oy = oy + 1 < g->oH ? oy + 1 : (ot++, 0)) {                   \
        const int64_t it = ot * g->dT - g->pT + kt * g->lT, iy = oy * g->dH - g->pH + ky * g->lH;                   \
        if (it < 0 || it >= g->T || iy < 0 || iy >= g->H) {                                                         \
          memset(dst, 0, sizeof(U) * (size_t)g->oW);                                                                \
          continue;                                                                                                 \
        }                                                                                                           \
        const U *restrict src = xc + (it * g->H + iy) * g->W + offx;                                                \
        U *restrict d = dst;                                                                                        \
        for (int64_t ox = 0; ox < lo; ox++) d[ox] = 0;                                                              \
        if (g->dW == 1)                                                                                             \
          for (int64_t ox = lo; ox < hi; ox++) d[ox] = src[ox];                                                     \
        else                                                                                                        \
          for (int64_t ox = lo; ox < hi; ox++) d[ox] = src[ox * g->dW];                                             \
        for (int64_t ox = hi; ox < g->oW; ox++) d[ox] = 0;                                                          \
      }                                                                                                             \
    }                                                                                                               \
  }
VOL2COL_FN(uint16_t)
VOL2COL_FN(uint32_t)
VOL2COL_FN(uint64_t)
#undef VOL2COL_FN

void mt__vol2col_rows(size_t esize, const void *x, void *col, const mt_vol_geom *g, int64_t q0, int64_t q1, int par) {
  switch (esize) {
    case 2: vol2col_uint16_t((const uint16_t *)x, (uint16_t *)col, g, q0, q1, par); break;
    case 4: vol2col_uint32_t((const uint32_t *)x, (uint32_t *)col, g, q0, q1, par); break;
    case 8: vol2col_uint64_t((const uint64_t *)x, (uint64_t *)col, g, q0, q1, par); break;
    default: break;
  }
}

mt_status mt__cpu_vol2col(mt_tensor *colt, const mt_tensor *xt, const mt_vol_geom *g) {
  size_t es = mt_dtype_size(xt->dtype);
  if (es != 2 && es != 4 && es != 8)
    return mt__error(MT_ERR_DTYPE, "vol2col: dtype %s is not supported", mt_dtype_name(xt->dtype));
  mt__vol2col_rows(es, mt__data(xt), mt__data(colt), g, 0, g->oT * g->oH, 1);
  return MT_OK;
}

/* per channel: a compute-type volume accumulates the channel's kT*kH*kW rows, stored once */
#define COL2VOL_CASE(E, N, TT, CT)                                                                               \
  case E: {                                                                                                      \
    const TT *col = (const TT *)mt__data(colt);                                                                  \
    TT *x = (TT *)mt__data(xt);                                                                                  \
    const int64_t L = g->oT * g->oH * g->oW, V = g->T * g->H * g->W, kk = (int64_t)g->kT * g->kH * g->kW;        \
    int fail = 0;                                                                                                \
    _Pragma("omp parallel if(g->C * kk * L > 4 * MT_PARALLEL_GRAIN)") {                                          \
      CT *acc = malloc(sizeof(CT) * (size_t)V);                                                                  \
      if (!acc) { _Pragma("omp atomic write") fail = 1; }                                                        \
      _Pragma("omp for schedule(static)") for (int64_t c = 0; c < g->C; c++) {                                   \
        if (!acc) continue;                                                                                      \
        for (int64_t v = 0; v < V; v++) acc[v] = 0;                                                              \
        for (int64_t k = 0; k < kk; k++) {                                                                       \
          const int64_t kx = k % g->kW, ky = (k / g->kW) % g->kH, kt = k / (g->kW * g->kH);                      \
          const TT *src = col + (c * kk + k) * L;                                                                \
          const int64_t offx = kx * g->lW - g->pW;                                                               \
          int64_t lo, hi;                                                                                        \
          inside(offx, g->dW, g->W, g->oW, &lo, &hi);                                                            \
          for (int64_t ot = 0; ot < g->oT; ot++) {                                                               \
            const int64_t it = ot * g->dT - g->pT + kt * g->lT;                                                  \
            for (int64_t oy = 0; oy < g->oH; oy++) {                                                             \
              const int64_t iy = oy * g->dH - g->pH + ky * g->lH;                                                \
              if (it < 0 || it >= g->T || iy < 0 || iy >= g->H) continue;                                        \
              const TT *restrict s = src + (ot * g->oH + oy) * g->oW;                                            \
              CT *restrict d = acc + (it * g->H + iy) * g->W + offx;                                             \
              for (int64_t ox = lo; ox < hi; ox++) d[ox * g->dW] += (CT)mt_ld_##N(s + ox);                       \
            }                                                                                                    \
          }                                                                                                      \
        }                                                                                                        \
        TT *xc = x + c * V;                                                                                      \
        for (int64_t v = 0; v < V; v++) mt_st_##N(xc + v, acc[v]);                                               \
      }                                                                                                          \
      free(acc);                                                                                                 \
    }                                                                                                            \
    if (fail) return mt__error(MT_ERR_MEMORY, "col2vol: out of memory for a %lld-element volume", (long long)V); \
  } break;

mt_status mt__cpu_col2vol(mt_tensor *xt, const mt_tensor *colt, const mt_vol_geom *g) {
  switch (colt->dtype) {
    MT_FLOAT_DTYPE_LIST(COL2VOL_CASE)
    default: return mt__error(MT_ERR_DTYPE, "col2vol: dtype %s is not supported", mt_dtype_name(colt->dtype));
  }
  return MT_OK;
}
#undef COL2VOL_CASE
