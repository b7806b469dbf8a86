/* nn_pool.c: the CPU backend's 2-d max, average and adaptive average pooling (float dtypes)
 * over dense planes, NCHW or channels-last (g->cs: a plane's pixels are cs elements apart);
 * csrc/nn/pool.c checks the arguments and sizes the outputs. Work is split over the N*C planes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

typedef mt_pool_geom pool_geom;

/* offset of plane p (= n*C + c) of hw pixels: p*hw for NCHW (cs 1), n*hw*C + c channels-last */
static inline int64_t pbase(int64_t p, int64_t hw, int64_t cs) { return (p / cs) * hw * cs + p % cs; }

/* ---- max pooling: indices hold the 0-based flat position of each maximum in its H x W plane;
 * NaN wins (propagates) as in PyTorch. */
/* Windows one column wide over whole rows (kW = dW = 1, no column padding, NCHW: what
 * TemporalMaxPooling asks for): the maximum of kH rows taken row against row, a pass along
 * contiguous memory per input row instead of a window walk per output cell. Same results as the
 * general loop: the first NaN wins, then the first of equal maxima. */
#define MAX_ROWS(N, T, CT)                                                                             \
  MT_AVX2_CLONES static void maxrows_##N(const T *x, T *y, int64_t *idx, const pool_geom *g) {         \
    int64_t W = g->W, work = g->planes * g->oH * W * g->kH;                                            \
    (void)work;                                                                                        \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->planes; p++) { \
      const T *xp = x + p * g->H * W;                                                                  \
      for (int64_t oy = 0; oy < g->oH; oy++) {                                                         \
        int64_t y0 = oy * g->dH - g->pH, y1 = y0 + g->kH < g->H ? y0 + g->kH : g->H;                   \
        if (y0 < 0) y0 = 0;                                                                            \
        T *yr = y + (p * g->oH + oy) * W;                                                              \
        int64_t *ir = idx + (p * g->oH + oy) * W;                                                      \
        for (int64_t ix = 0; ix < W; ix++) ir[ix] = y0 * W + ix;                                       \
        if (y0 >= y1) { /* a window wholly in the padding, as the general loop leaves it */            \
          for (int64_t ix = 0; ix < W; ix++) mt_st_##N(yr + ix, -INFINITY);                            \
          continue;                                                                                    \
        }                                                                                              \
        for (int64_t ix = 0; ix < W; ix++) yr[ix] = xp[y0 * W + ix];                                   \
        for (int64_t iy = y0 + 1; iy < y1; iy++)                                                       \
          for (int64_t ix = 0; ix < W; ix++) {                                                         \
            CT v = mt_ld_##N(xp + iy * W + ix), b = mt_ld_##N(yr + ix);                                \
            int take = (v > b) | ((v != v) & (b == b)); /* selects, not branches: random signs */      \
            mt_st_##N(yr + ix, take ? v : b);                                                          \
            ir[ix] = take ? iy * W + ix : ir[ix];                                                      \
          }                                                                                            \
      }                                                                                                \
    }                                                                                                  \
  }
#define MAX_FWD(E, N, T, CT)                                                                              \
  MAX_ROWS(N, T, CT)                                                                                      \
  static void maxfwd_##N(const T *x, T *y, int64_t *idx, const pool_geom *g) {                            \
    if (g->kW == 1 && g->dW == 1 && g->pW == 0 && g->cs == 1 && g->oW == g->W && g->oH > 0 && g->H > 0) { \
      maxrows_##N(x, y, idx, g);                                                                          \
      return;                                                                                             \
    }                                                                                                     \
    int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;                                             \
    (void)work;                                                                                           \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->planes; p++) {    \
      const T *xp = x + pbase(p, g->H * g->W, g->cs);                                                     \
      int64_t yb = pbase(p, g->oH * g->oW, g->cs), cs = g->cs;                                            \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                              \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                          \
          int64_t y0 = oy * g->dH - g->pH, x0 = ox * g->dW - g->pW;                                       \
          int64_t y1 = y0 + g->kH < g->H ? y0 + g->kH : g->H, x1 = x0 + g->kW < g->W ? x0 + g->kW : g->W; \
          if (y0 < 0) y0 = 0;                                                                             \
          if (x0 < 0) x0 = 0;                                                                             \
          /* selects, not branches (on random data "larger than the best so far" mispredicts              \
           * about twice per 3x3 window); a NaN, rare, is found by a second pass: the first wins */       \
          CT best = -INFINITY;                                                                            \
          int64_t bi = y0 * g->W + x0;                                                                    \
          int nan = 0;                                                                                    \
          for (int64_t iy = y0; iy < y1; iy++)                                                            \
            for (int64_t ix = x0; ix < x1; ix++) {                                                        \
              CT v = mt_ld_##N(xp + (iy * g->W + ix) * cs);                                               \
              int take = v > best;                                                                        \
              best = take ? v : best, bi = take ? iy * g->W + ix : bi;                                    \
              nan |= v != v;                                                                              \
            }                                                                                             \
          for (int64_t iy = y0; nan && iy < y1; iy++)                                                     \
            for (int64_t ix = x0; ix < x1; ix++) {                                                        \
              CT v = mt_ld_##N(xp + (iy * g->W + ix) * cs);                                               \
              if (v != v) {                                                                               \
                best = v, bi = iy * g->W + ix, nan = 0;                                                   \
                break;                                                                                    \
              }                                                                                           \
            }                                                                                             \
          int64_t o = yb + (oy * g->oW + ox) * cs;                                                        \
          mt_st_##N(y + o, best);                                                                         \
          idx[o] = bi;                                                                                    \
        }                                                                                                 \
    }                                                                                                     \
  }                                                                                                       \
  /* 1 (and *bad one of them) when an index lies outside its plane: checked plane by plane here           \
   * rather than in a serial pass first (a third of the time on 2 threads, one thread idle) */            \
  static int maxbwd_##N(const T *dy, const int64_t *idx, T *dx, const pool_geom *g, int64_t *bad) {       \
    int64_t work = g->planes * g->H * g->W, plane = g->H * g->W;                                          \
    int found = 0;                                                                                        \
    (void)work;                                                                                           \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->planes; p++) {    \
      int64_t cs = g->cs, yb = pbase(p, g->oH * g->oW, cs);                                               \
      T *dxp = dx + pbase(p, plane, cs);                                                                  \
      for (int64_t i = 0; i < plane; i++) mt_st_##N(dxp + i * cs, 0);                                     \
      for (int64_t j = 0; j < g->oH * g->oW; j++) {                                                       \
        int64_t o = yb + j * cs, k = idx[o];                                                              \
        if (k < 0 || k >= plane) {                                                                        \
          _Pragma("omp atomic write") *bad = k;                                                           \
          _Pragma("omp atomic write") found = 1;                                                          \
          break;                                                                                          \
        }                                                                                                 \
        CT s = mt_ld_##N(dxp + k * cs) + mt_ld_##N(dy + o);                                               \
        mt_st_##N(dxp + k * cs, s);                                                                       \
      }                                                                                                   \
    }                                                                                                     \
    return found;                                                                                         \
  }
MT_FLOAT_DTYPE_LIST(MAX_FWD)

/* ---- average pooling: the divisor counts padding cells (count_include_pad) but never the part
 * of a ceil-mode window beyond the padded input, as in PyTorch/Torch7. */
static inline void avg_window(const pool_geom *g, int64_t oy, int64_t ox, int cip, int64_t *y0, int64_t *y1,
                              int64_t *x0, int64_t *x1, int64_t *div) {
  int64_t a = oy * g->dH - g->pH, b = ox * g->dW - g->pW;
  int64_t c = a + g->kH, d = b + g->kW;
  if (c > g->H + g->pH) c = g->H + g->pH;
  if (d > g->W + g->pW) d = g->W + g->pW;
  int64_t padded = (c - a) * (d - b);
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  if (c > g->H) c = g->H;
  if (d > g->W) d = g->W;
  *y0 = a, *y1 = c, *x0 = b, *x1 = d;
  *div = cip ? padded : (c - a) * (d - b);
}

/* windows that tile the input: stride = kernel, no padding (then no window is clipped but the
 * last ones in ceil mode, and none overlaps) */
static inline int avg_tiled(const pool_geom *g) { return g->kH == g->dH && g->kW == g->dW && g->pH == 0 && g->pW == 0; }
/* how many of n cells o tiling windows of k cover (ceil mode clips the last one to the input) */
static inline int64_t avg_covered(int64_t o, int64_t k, int64_t n) { return o * k < n ? o * k : n; }

/* ---- adaptive average pooling: output cell i of n covers input [floor(i*in/n), ceil((i+1)*in/n)) */
static inline int64_t ad_start(int64_t i, int64_t in, int64_t n) { return (i * in) / n; }
static inline int64_t ad_end(int64_t i, int64_t in, int64_t n) { return ((i + 1) * in + n - 1) / n; }

/* the same contract as avg_window so that both poolings share one kernel; the divisor is never 0 */
static inline void ad_window(const pool_geom *g, int64_t oy, int64_t ox, int cip, int64_t *y0, int64_t *y1, int64_t *x0,
                             int64_t *x1, int64_t *div) {
  (void)cip;
  *y0 = ad_start(oy, g->H, g->oH), *y1 = ad_end(oy, g->H, g->oH);
  *x0 = ad_start(ox, g->W, g->oW), *x1 = ad_end(ox, g->W, g->oW);
  *div = (*y1 - *y0) * (*x1 - *x0);
}

/* average over a window: WIN (avg_window or ad_window, inlined) gives each output cell's input
 * window and divisor, WORK is the estimate that decides whether to go parallel; where TILED
 * holds, the windows neither overlap nor pad, so the backward stores each cell's share once
 * (as 0 + share, the bits the zero-and-add loop gives) and zeroes only the cells no window covers */
#define WINDOW_POOL(NAME, WIN, WORK, TILED, N, T, CT)                                                     \
  static void NAME##fwd_##N(const T *x, T *y, const pool_geom *g, int cip) {                              \
    int64_t work = WORK;                                                                                  \
    (void)work;                                                                                           \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->planes; p++) {    \
      int64_t cs = g->cs, yb = pbase(p, g->oH * g->oW, cs);                                               \
      const T *xp = x + pbase(p, g->H * g->W, cs);                                                        \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                              \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                          \
          int64_t y0, y1, x0, x1, div;                                                                    \
          WIN(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);                                                  \
          CT s = 0;                                                                                       \
          for (int64_t iy = y0; iy < y1; iy++)                                                            \
            for (int64_t ix = x0; ix < x1; ix++) s += mt_ld_##N(xp + (iy * g->W + ix) * cs);              \
          mt_st_##N(y + yb + (oy * g->oW + ox) * cs, div > 0 ? s / (CT)div : (CT)0);                      \
        }                                                                                                 \
    }                                                                                                     \
  }                                                                                                       \
  static void NAME##bwd_##N(const T *dy, T *dx, const pool_geom *g, int cip) {                            \
    int64_t work = WORK;                                                                                  \
    (void)work;                                                                                           \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)") for (int64_t p = 0; p < g->planes; p++) {    \
      int64_t cs = g->cs, yb = pbase(p, g->oH * g->oW, cs);                                               \
      T *dxp = dx + pbase(p, g->H * g->W, cs);                                                            \
      const int tiled = TILED;                                                                            \
      if (tiled) { /* the cells right of and below the last windows */                                    \
        int64_t cy = avg_covered(g->oH, g->kH, g->H), cx = avg_covered(g->oW, g->kW, g->W);               \
        for (int64_t iy = 0; iy < g->H; iy++)                                                             \
          for (int64_t ix = iy < cy ? cx : 0; ix < g->W; ix++) mt_st_##N(dxp + (iy * g->W + ix) * cs, 0); \
      } else                                                                                              \
        for (int64_t i = 0; i < g->H * g->W; i++) mt_st_##N(dxp + i * cs, 0);                             \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                              \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                          \
          int64_t y0, y1, x0, x1, div;                                                                    \
          WIN(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);                                                  \
          if (div <= 0) continue;                                                                         \
          CT v = mt_ld_##N(dy + yb + (oy * g->oW + ox) * cs) / (CT)div;                                   \
          for (int64_t iy = y0; iy < y1; iy++)                                                            \
            for (int64_t ix = x0; ix < x1; ix++) {                                                        \
              T *q = dxp + (iy * g->W + ix) * cs;                                                         \
              mt_st_##N(q, (tiled ? (CT)0 : (CT)mt_ld_##N(q)) + v);                                       \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
  }
#define AVG(E, N, T, CT) WINDOW_POOL(avg, avg_window, g->planes * g->oH * g->oW * g->kH * g->kW, avg_tiled(g), N, T, CT)
#define ADAPT(E, N, T, CT) WINDOW_POOL(ad, ad_window, g->planes * g->H * g->W, 0, N, T, CT)
MT_FLOAT_DTYPE_LIST(AVG)
MT_FLOAT_DTYPE_LIST(ADAPT)

/* src/dst are x/y forward and dy/dx backward; the dtype switch reads x forward, dx backward */
static mt_status window_pool(mt_tensor *dst, const mt_tensor *src, const pool_geom *g, int cip, int adaptive, int bwd) {
#define CASE(E, N, T, CT)                                                                                     \
  case E:                                                                                                     \
    (adaptive ? (bwd ? adbwd_##N : adfwd_##N) : (bwd ? avgbwd_##N : avgfwd_##N))((const T *)mt__data(src),    \
                                                                                 (T *)mt__data(dst), g, cip); \
    break;
  switch ((bwd ? dst : src)->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default : break; }
#undef CASE
  return MT_OK;
}

mt_status mt__cpu_maxpool2d_forward(mt_tensor *y, mt_tensor *indices, const mt_tensor *x, const mt_pool_geom *g) {
#define CASE(E, N, T, CT) \
  case E: maxfwd_##N((const T *)mt__data(x), (T *)mt__data(y), (int64_t *)mt__data(indices), g); break;
  switch (x->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default : break; }
#undef CASE
  return MT_OK;
}

mt_status mt__cpu_maxpool2d_backward(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *indices,
                                     const mt_pool_geom *g) {
  const int64_t *ix = (const int64_t *)mt__data(indices);
  int64_t bad = 0;
  int found = 0;
#define CASE(E, N, T, CT) \
  case E: found = maxbwd_##N((const T *)mt__data(dy), ix, (T *)mt__data(dx), g, &bad); break;
  switch (dx->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default : break; }
#undef CASE
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
