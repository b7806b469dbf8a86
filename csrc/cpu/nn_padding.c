/* nn_padding.c: the CPU loops of 2-d padding (csrc/nn/padding.c checks the arguments) over
 * contiguous NCHW planes. Forward: every output row is a left border, the input row's middle
 * (one memcpy: the padding modes differ only at the borders) and a right border, the borders
 * through a column table; the dtype only matters through the element size (a zero pad is
 * all-zero bytes in every float dtype). Backward: per plane, each output row adds onto its
 * source row, in the compute type; a plane is one thread's, so no atomics and a fixed order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* source index of padded position o (before: the left / top pad) in a dimension of size n, or
 * -1 for a zero */
static inline int64_t pad_src(int64_t o, int64_t n, int64_t before, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == MT_PAD_ZERO) return -1;
  if (mode == MT_PAD_REFLECT) return i < 0 ? -i : 2 * (n - 1) - i;
  return i < 0 ? 0 : n - 1;
}

MT_AVX2_CLONES mt_status mt__cpu_pad2d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_pool_geom *g, int mode) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, l = g->pW, t = g->pH;
  size_t es = mt__dtype_size(xt->dtype);
  int64_t *col = (int64_t *)malloc((size_t)oW * sizeof *col);
  if (!col) return mt__error(MT_ERR_MEMORY, "pad2d: out of memory for a column table");
  for (int64_t o = 0; o < oW; o++) col[o] = pad_src(o, W, l, mode);
  /* the columns read straight from the input row: [lo, hi) */
  int64_t lo = l > 0 ? l : 0, hi = oW - (oW - l - W > 0 ? oW - l - W : 0);
  const char *x = (const char *)mt__data(xt);
  char *y = (char *)mt__data(yt);
  int64_t rows = g->planes * oH;
  /* the borders element by element, as unsigned integers of the element's size (a call to
   * memcpy per border element cost more than the rows' middles) */
#define PAD_ROWS(U)                                                                                                    \
  _Pragma("omp parallel for schedule(static) if (rows * oW > MT_PARALLEL_GRAIN)") for (int64_t r = 0; r < rows; r++) { \
    int64_t pl = r / oH, ih = pad_src(r % oH, H, t, mode);                                                             \
    U *yr = (U *)y + r * oW;                                                                                           \
    if (ih < 0) {                                                                                                      \
      memset(yr, 0, (size_t)oW * sizeof(U));                                                                           \
      continue;                                                                                                        \
    }                                                                                                                  \
    const U *xr = (const U *)x + (pl * H + ih) * W;                                                                    \
    for (int64_t o = 0; o < lo; o++) yr[o] = col[o] < 0 ? 0 : xr[col[o]];                                              \
    if (hi > lo) memcpy(yr + lo, xr + (lo - l), (size_t)(hi - lo) * sizeof(U));                                        \
    for (int64_t o = hi; o < oW; o++) yr[o] = col[o] < 0 ? 0 : xr[col[o]];                                             \
  }
  switch (es) {
    case 1: PAD_ROWS(uint8_t) break;
    case 2: PAD_ROWS(uint16_t) break;
    case 4: PAD_ROWS(uint32_t) break;
    case 8: PAD_ROWS(uint64_t) break;
    default: free(col); return mt__error(MT_ERR_DTYPE, "pad2d: no padding loop for %zu-byte elements", es);
  }
#undef PAD_ROWS
  free(col);
  return MT_OK;
}

#define PADB_CASE(E, N, TT, CT)                                                                                       \
  case E: {                                                                                                           \
    const TT *dy = (const TT *)mt__data(dyt);                                                                         \
    TT *dx = (TT *)mt__data(dxt);                                                                                     \
    _Pragma("omp parallel for schedule(static) if(g->planes * oH * oW > MT_PARALLEL_GRAIN / 4)") for (int64_t pl = 0; \
                                                                                                      pl < g->planes; \
                                                                                                      pl++) {         \
      CT *acc = (CT *)buf + (size_t)omp_get_thread_num() * H * W;                                                     \
      for (int64_t i = 0; i < H * W; i++) acc[i] = 0;                                                                 \
      for (int64_t oh = 0; oh < oH; oh++) {                                                                           \
        int64_t ih = pad_src(oh, H, t, mode);                                                                         \
        if (ih < 0) continue;                                                                                         \
        const TT *gr = dy + (pl * oH + oh) * oW;                                                                      \
        CT *ar = acc + ih * W;                                                                                        \
        for (int64_t o = 0; o < lo; o++)                                                                              \
          if (col[o] >= 0) ar[col[o]] += mt_ld_##N(gr + o);                                                           \
        for (int64_t o = lo; o < hi; o++) ar[o - l] += mt_ld_##N(gr + o);                                             \
        for (int64_t o = hi; o < oW; o++)                                                                             \
          if (col[o] >= 0) ar[col[o]] += mt_ld_##N(gr + o);                                                           \
      }                                                                                                               \
      TT *dr = dx + pl * H * W;                                                                                       \
      for (int64_t i = 0; i < H * W; i++) mt_st_##N(dr + i, acc[i]);                                                  \
    }                                                                                                                 \
  } break;

/* zero padding: each input pixel has one output pixel or none (cropped), so its gradient is a
 * copy of the output gradient's middle, zeros where cropped: rows of memcpy, any dtype */
static void zero_pad_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_pool_geom *g) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, l = g->pW, t = g->pH;
  size_t es = mt__dtype_size(dxt->dtype);
  int64_t c0 = l < 0 ? -l : 0, c1 = oW - l < W ? oW - l : W; /* input columns [c0, c1) have an output */
  const char *dy = (const char *)mt__data(dyt);
  char *dx = (char *)mt__data(dxt);
  int64_t rows = g->planes * H;
#define ZPB_ROWS(U)                                                                                                   \
  _Pragma("omp parallel for schedule(static) if (rows * W > MT_PARALLEL_GRAIN)") for (int64_t r = 0; r < rows; r++) { \
    int64_t pl = r / H, oh = r % H + t;                                                                               \
    U *dr = (U *)dx + r * W;                                                                                          \
    if (oh < 0 || oh >= oH || c1 <= c0) {                                                                             \
      memset(dr, 0, (size_t)W * sizeof(U));                                                                           \
      continue;                                                                                                       \
    }                                                                                                                 \
    for (int64_t i = 0; i < c0; i++) dr[i] = 0;                                                                       \
    memcpy(dr + c0, (const U *)dy + (pl * oH + oh) * oW + c0 + l, (size_t)(c1 - c0) * sizeof(U));                     \
    for (int64_t i = c1; i < W; i++) dr[i] = 0;                                                                       \
  }
  switch (es) {
    case 1: ZPB_ROWS(uint8_t) break;
    case 2: ZPB_ROWS(uint16_t) break;
    case 4: ZPB_ROWS(uint32_t) break;
    default: ZPB_ROWS(uint64_t) break; /* callers pass float dtypes only: 2, 4 or 8 bytes */
  }
#undef ZPB_ROWS
}

MT_AVX2_CLONES mt_status mt__cpu_pad2d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_pool_geom *g, int mode) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, l = g->pW, t = g->pH;
  if (mode == MT_PAD_ZERO) {
    zero_pad_backward(dxt, dyt, g);
    return MT_OK;
  }
  int64_t lo = l > 0 ? l : 0, hi = oW - (oW - l - W > 0 ? oW - l - W : 0);
  int64_t nbuf = omp_get_max_threads(); /* one accumulation plane per thread */
  int64_t *col = (int64_t *)malloc((size_t)oW * sizeof *col);
  void *buf = malloc((size_t)nbuf * H * W * sizeof(double));
  if (!col || !buf) {
    free(col), free(buf);
    return mt__error(MT_ERR_MEMORY, "pad2d: out of memory for the backward buffers");
  }
  for (int64_t o = 0; o < oW; o++) col[o] = pad_src(o, W, l, mode);
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(PADB_CASE)
    default: break;
  }
  free(col), free(buf);
  return MT_OK;
}
