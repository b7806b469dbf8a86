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
 * a ceil-mode window beyond the padded input, as in PyTorch), so it is tabled per dimension.
 * The loops are written once in generic/nn_vol_avgpool.c and compiled per float dtype. */
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

#define OP "VolumetricAveragePooling"

/* one dimension: output j's valid taps [lo, hi) and its divisor factor count */
typedef struct {
  int64_t lo, hi, count;
} avg_win;

/* the windows of the o outputs of a dimension of n inputs (kernel k, stride d, padding p) */
static void avg_windows(avg_win *w, int64_t n, int64_t o, int k, int d, int p, int count_include_pad) {
  for (int64_t j = 0; j < o; j++) {
    int64_t start = j * d - p, end = start + k;
    if (end > n + p) end = n + p;
    int64_t lo = start < 0 ? 0 : start, hi = end < n ? end : n;
    w[j] = (avg_win){lo, hi, count_include_pad ? end - start : hi - lo};
  }
}

/* one dimension of the backward: a run [i0, i1) of inputs that the same outputs [lo, hi) cover
 * (empty for inputs no window holds): their gradients are the same, so each run is computed once.
 * Output j covers input i when j*d - p <= i < j*d - p + k (i + p >= 0: the padding is at most
 * k/2). */
typedef struct {
  int64_t i0, i1, lo, hi;
} avg_class;

/* the runs of a dimension of n inputs into o outputs; returns their count */
static int64_t avg_classes(avg_class *c, int64_t n, int64_t o, int k, int d, int p) {
  int64_t nc = 0;
  for (int64_t i = 0; i < n; i++) {
    /* window j ends at or before input i when j*d <= before */
    int64_t before = i + p - k, lo = before < 0 ? 0 : before / d + 1, hi = (i + p) / d + 1;
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
static size_t avg_stride(const mt_vol_geom *g, int backward, size_t ct_size) {
  size_t n = (size_t)(backward ? g->oW + g->W : g->W), per_line = 64 / ct_size;
  return (n + per_line - 1) / per_line * per_line;
}

/* the tables of one call: windows per output index of each dimension (wt, wh, ww), the
 * backward's runs of T and H and its oW column divisors in CT (cols), and per-thread rows of CT
 * (forward: W sums; backward: oW sums and a W-long result row); one allocation */
typedef struct {
  avg_win *wt, *wh, *ww;
  avg_class *runs_t, *runs_h;
  int64_t nruns_t, nruns_h;
  void *cols, *rows;
} avg_tabs;

static void *avg_tables(avg_tabs *tb, const mt_vol_geom *g, int count_include_pad, int backward, size_t ct_size) {
  int64_t nw = g->oT + g->oH + g->oW, nc = backward ? g->T + g->H : 0;
  size_t rows = (size_t)omp_get_max_threads() * avg_stride(g, backward, ct_size) * ct_size;
  size_t cols = backward ? (size_t)g->oW * ct_size : 0;
  char *m = (char *)malloc((size_t)nw * sizeof(avg_win) + (size_t)nc * sizeof(avg_class) + cols + rows + 128);
  if (!m) return NULL;
  tb->wt = (avg_win *)m, tb->wh = tb->wt + g->oT, tb->ww = tb->wh + g->oH;
  avg_windows(tb->wt, g->T, g->oT, g->kT, g->dT, g->pT, count_include_pad);
  avg_windows(tb->wh, g->H, g->oH, g->kH, g->dH, g->pH, count_include_pad);
  avg_windows(tb->ww, g->W, g->oW, g->kW, g->dW, g->pW, count_include_pad);
  tb->runs_t = (avg_class *)(tb->ww + g->oW), tb->runs_h = tb->runs_t + g->T * backward;
  tb->nruns_t = backward ? avg_classes(tb->runs_t, g->T, g->oT, g->kT, g->dT, g->pT) : 0;
  tb->nruns_h = backward ? avg_classes(tb->runs_h, g->H, g->oH, g->kH, g->dH, g->pH) : 0;
  uintptr_t r = (uintptr_t)(tb->runs_h + g->H * backward);
  tb->cols = (void *)((r + 63) & ~(uintptr_t)63);
  tb->rows = (void *)(((uintptr_t)tb->cols + cols + 63) & ~(uintptr_t)63);
  return m;
}

#define MT_GENERIC_FILE "generic/nn_vol_avgpool.c"
#include "generate_float.h"

#define AVG3_FWD_CASE(E, N, T, CT) \
  case E: avg_pool3d_forward_##N((const T *)mt__data(xt), (T *)mt__data(yt), g, &tb, stride); break;
MT_AVX2_CLONES mt_status mt__cpu_avgpool3d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_vol_geom *g,
                                                   int count_include_pad) {
  avg_tabs tb;
  size_t cts = xt->dtype == MT_F64 ? sizeof(double) : sizeof(float);
  void *m = avg_tables(&tb, g, count_include_pad, 0, cts);
  const int64_t stride = (int64_t)avg_stride(g, 0, cts);
  if (!m) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the window tables");
  mt_status st = MT_OK;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(AVG3_FWD_CASE)
    default: st = mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported", mt_dtype_name(xt->dtype));
  }
  free(m);
  return st;
}

#define AVG3_BWD_CASE(E, N, T, CT) \
  case E: avg_pool3d_backward_##N((const T *)mt__data(dyt), (T *)mt__data(dxt), g, &tb, stride); break;
MT_AVX2_CLONES mt_status mt__cpu_avgpool3d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_vol_geom *g,
                                                    int count_include_pad) {
  avg_tabs tb;
  size_t cts = dxt->dtype == MT_F64 ? sizeof(double) : sizeof(float);
  void *m = avg_tables(&tb, g, count_include_pad, 1, cts);
  const int64_t stride = (int64_t)avg_stride(g, 1, cts);
  if (!m) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the window tables");
  mt_status st = MT_OK;
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(AVG3_BWD_CASE)
    default: st = mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported", mt_dtype_name(dxt->dtype));
  }
  free(m);
  return st;
}
