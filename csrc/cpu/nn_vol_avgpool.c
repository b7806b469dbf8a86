/* nn_vol_avgpool.c: the CPU loops of 3-d average pooling (csrc/nn/vol_pool.c checks the
 * arguments). One pass each way, a row at a time, so the input is read once and every result is
 * written once by one thread.
 * - Forward: output row (plane, ot, oy) adds the input rows of its kT x kH window into a W-long
 *   row of sums (whole rows against rows, which vectorizes), then each output cell adds its
 *   window's columns of that row and divides.
 * - Backward gathers rather than scatters, so no zeroing pass and no two threads on one row:
 *   input row (plane, t, y) adds the gradient rows of the windows that cover it, each divided by
 *   its divisor, into an oW-long row, then each input cell adds the columns that cover it.
 * The divisor is a product of one count per dimension (padding counted or not, never the part of
 * a ceil-mode window beyond the padded input, as in PyTorch), so it is tabled per dimension. */
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

#define OP "VolumetricAveragePooling"

/* one dimension: output j's valid taps [lo, hi) and divisor factor cnt */
typedef struct {
  int64_t lo, hi, cnt;
} avg_win;

static void avg_windows(avg_win *w, int64_t n, int64_t o, int k, int d, int p, int cip) {
  for (int64_t j = 0; j < o; j++) {
    int64_t s = j * d - p, e = s + k;
    if (e > n + p) e = n + p;
    int64_t a = s < 0 ? 0 : s, b = e < n ? e : n;
    w[j] = (avg_win){a, b, cip ? e - s : b - a};
  }
}

/* one dimension of the backward: a run [i0, i1) of inputs that the same outputs [lo, hi) cover
 * (empty for inputs no window holds): their gradients are the same, so each run is computed once.
 * Output j covers input i when j*d - p <= i < j*d - p + k (i + p >= 0: the padding is at most
 * k/2). */
typedef struct {
  int64_t i0, i1, lo, hi;
} avg_class;

static int64_t avg_classes(avg_class *c, int64_t n, int64_t o, int k, int d, int p) {
  int64_t nc = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t q = i + p - k, lo = q < 0 ? 0 : q / d + 1, hi = (i + p) / d + 1;
    if (hi > o) hi = o;
    if (lo > hi) lo = hi;
    if (nc > 0 && c[nc - 1].lo == lo && c[nc - 1].hi == hi) c[nc - 1].i1 = i + 1;
    else c[nc++] = (avg_class){i, i + 1, lo, hi};
  }
  return nc;
}

/* CT elements from one thread's rows to the next: whole cache lines apart, so that two threads
 * never write one line (W is often a few dozen: adjacent rows shared lines, and the forward ran
 * slower on 2 threads than on 1) */
static size_t avg_stride(const mt_vol_geom *g, int bwd, size_t ct_size) {
  size_t n = (size_t)(bwd ? g->oW + g->W : g->W), per_line = 64 / ct_size;
  return (n + per_line - 1) / per_line * per_line;
}

/* the tables of one call: windows per output index of each dimension, the backward's runs of T
 * and H and its oW column divisors in CT (cols), and per-thread rows of CT (forward: W sums;
 * backward: oW sums and a W-long result row); one allocation */
typedef struct {
  avg_win *wt, *wh, *ww;
  avg_class *kt, *kh;
  int64_t nkt, nkh;
  void *cols, *rows;
} avg_tabs;

static void *avg_tables(avg_tabs *tb, const mt_vol_geom *g, int cip, int bwd, size_t ct_size) {
  int64_t nw = g->oT + g->oH + g->oW, nc = bwd ? g->T + g->H : 0;
  size_t rows = (size_t)omp_get_max_threads() * avg_stride(g, bwd, ct_size) * ct_size;
  size_t cols = bwd ? (size_t)g->oW * ct_size : 0;
  char *m = (char *)malloc((size_t)nw * sizeof(avg_win) + (size_t)nc * sizeof(avg_class) + cols + rows + 128);
  if (!m) return NULL;
  tb->wt = (avg_win *)m, tb->wh = tb->wt + g->oT, tb->ww = tb->wh + g->oH;
  avg_windows(tb->wt, g->T, g->oT, g->kT, g->dT, g->pT, cip);
  avg_windows(tb->wh, g->H, g->oH, g->kH, g->dH, g->pH, cip);
  avg_windows(tb->ww, g->W, g->oW, g->kW, g->dW, g->pW, cip);
  tb->kt = (avg_class *)(tb->ww + g->oW), tb->kh = tb->kt + g->T * bwd;
  tb->nkt = bwd ? avg_classes(tb->kt, g->T, g->oT, g->kT, g->dT, g->pT) : 0;
  tb->nkh = bwd ? avg_classes(tb->kh, g->H, g->oH, g->kH, g->dH, g->pH) : 0;
  uintptr_t r = (uintptr_t)(tb->kh + g->H * bwd);
  tb->cols = (void *)((r + 63) & ~(uintptr_t)63);
  tb->rows = (void *)(((uintptr_t)tb->cols + cols + 63) & ~(uintptr_t)63);
  return m;
}

#define AVG3_FWD(E, N, TT, CT)                                                                                      \
  case E: {                                                                                                         \
    const TT *x = (const TT *)mt__data(xt);                                                                         \
    TT *y = (TT *)mt__data(yt);                                                                                     \
    _Pragma("omp parallel for schedule(static) if(work > MT_PARALLEL_GRAIN)") for (int64_t r = 0; r < nrows; r++) { \
      const int64_t oy = r % g->oH, ot = r / g->oH % g->oT, p = r / (g->oH * g->oT);                                \
      const avg_win wt = tb.wt[ot], wh = tb.wh[oy];                                                                 \
      CT *acc = (CT *)tb.rows + (int64_t)omp_get_thread_num() * stride;                                             \
      const TT *xp = x + p * g->T * g->H * W;                                                                       \
      int first = 1;                                                                                                \
      for (int64_t t = wt.lo; t < wt.hi; t++)                                                                       \
        for (int64_t iy = wh.lo; iy < wh.hi; iy++, first = 0) {                                                     \
          const TT *xr = xp + (t * g->H + iy) * W;                                                                  \
          if (first)                                                                                                \
            for (int64_t i = 0; i < W; i++) acc[i] = mt_ld_##N(xr + i);                                             \
          else                                                                                                      \
            for (int64_t i = 0; i < W; i++) acc[i] += mt_ld_##N(xr + i);                                            \
        }                                                                                                           \
      const int64_t c = wt.cnt * wh.cnt;                                                                            \
      TT *yr = y + r * g->oW;                                                                                       \
      for (int64_t ox = 0; ox < g->oW; ox++) {                                                                      \
        const avg_win ww = tb.ww[ox];                                                                               \
        CT s = 0;                                                                                                   \
        for (int64_t i = ww.lo; i < ww.hi; i++) s += acc[i];                                                        \
        mt_st_##N(yr + ox, first ? (CT)0 : s / (CT)(c * ww.cnt));                                                   \
      }                                                                                                             \
    }                                                                                                               \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_avgpool3d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_vol_geom *g,
                                                   int count_include_pad) {
  const int64_t W = g->W, nrows = g->C * g->oT * g->oH;
  const int64_t work = nrows * g->kT * g->kH * W;
  (void)work;
  avg_tabs tb;
  size_t cts = xt->dtype == MT_F64 ? sizeof(double) : sizeof(float);
  void *m = avg_tables(&tb, g, count_include_pad, 0, cts);
  const int64_t stride = (int64_t)avg_stride(g, 0, cts);
  if (!m) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the window tables");
  mt_status st = MT_OK;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(AVG3_FWD)
    default: st = mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported", mt_dtype_name(xt->dtype));
  }
  free(m);
  return st;
}
#undef AVG3_FWD

#define AVG3_BWD(E, N, TT, CT)                                                                                        \
  case E: {                                                                                                           \
    const TT *dy = (const TT *)mt__data(dyt);                                                                         \
    TT *dx = (TT *)mt__data(dxt);                                                                                     \
    CT *cwf = (CT *)tb.cols;                                                                                          \
    for (int64_t ox = 0; ox < oW; ox++) cwf[ox] = (CT)tb.ww[ox].cnt;                                                  \
    _Pragma("omp parallel for schedule(static) if(work > MT_PARALLEL_GRAIN)") for (int64_t r = 0; r < ngroups; r++) { \
      const avg_class kh = tb.kh[r % tb.nkh], kt = tb.kt[r / tb.nkh % tb.nkt];                                        \
      const int64_t p = r / (tb.nkh * tb.nkt);                                                                        \
      CT *acc = (CT *)tb.rows + (int64_t)omp_get_thread_num() * stride, *row = acc + oW;                              \
      for (int64_t i = 0; i < W; i++) row[i] = 0;                                                                     \
      if (kt.lo < kt.hi && kh.lo < kh.hi) {                                                                           \
        for (int64_t ot = kt.lo; ot < kt.hi; ot++)                                                                    \
          for (int64_t oy = kh.lo; oy < kh.hi; oy++) {                                                                \
            const TT *dr = dy + ((p * g->oT + ot) * g->oH + oy) * oW;                                                 \
            const CT c = (CT)(tb.wt[ot].cnt * tb.wh[oy].cnt);                                                         \
            if (ot == kt.lo && oy == kh.lo)                                                                           \
              for (int64_t ox = 0; ox < oW; ox++) acc[ox] = mt_ld_##N(dr + ox) / (c * cwf[ox]);                       \
            else                                                                                                      \
              for (int64_t ox = 0; ox < oW; ox++) acc[ox] += mt_ld_##N(dr + ox) / (c * cwf[ox]);                      \
          }                                                                                                           \
        for (int64_t ox = 0; ox < oW; ox++) /* the columns, in output order as the CUDA gather */                     \
          for (int64_t i = tb.ww[ox].lo; i < tb.ww[ox].hi; i++) row[i] += acc[ox];                                    \
      }                                                                                                               \
      for (int64_t t = kt.i0; t < kt.i1; t++)                                                                         \
        for (int64_t iy = kh.i0; iy < kh.i1; iy++) {                                                                  \
          TT *dxr = dx + ((p * g->T + t) * g->H + iy) * W;                                                            \
          for (int64_t i = 0; i < W; i++) mt_st_##N(dxr + i, row[i]);                                                 \
        }                                                                                                             \
    }                                                                                                                 \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_avgpool3d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_vol_geom *g,
                                                    int count_include_pad) {
  const int64_t W = g->W, oW = g->oW;
  avg_tabs tb;
  size_t cts = dxt->dtype == MT_F64 ? sizeof(double) : sizeof(float);
  void *m = avg_tables(&tb, g, count_include_pad, 1, cts);
  const int64_t stride = (int64_t)avg_stride(g, 1, cts);
  if (!m) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the window tables");
  const int64_t ngroups = g->C * tb.nkt * tb.nkh, work = g->C * g->T * g->H * W;
  (void)work;
  mt_status st = MT_OK;
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(AVG3_BWD)
    default: st = mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported", mt_dtype_name(dxt->dtype));
  }
  free(m);
  return st;
}
#undef AVG3_BWD
