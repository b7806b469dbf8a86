/* nn_vol_grad.c: the weight gradient of a 3-d convolution on the CPU for float32 and float64
 * (mt_nn_conv3d_grad_weight), the path nn.VolumetricConvolution's accGradParameters takes there.
 * The general path (one vol2col of a whole sample, then one GEMM per sample) writes each
 * sample's columns out to memory (10.8 MB on the bench layer) before the GEMM reads them back,
 * and splits each GEMM, whose result (O x C kT kH kW) is small, over the threads. Here the
 * columns are made a block of output rows at a time, small enough to stay in the core's cache
 * for the GEMM that reads them, and the threads take (sample, block) items, each adding into an
 * accumulator of its own; the accumulators are summed in thread order at the end, so a result
 * depends on the thread count but not on the run. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/tensor.h"
#include "../moontorch.h"
#include "cpu.h"

#define OP "VolumetricConvolution"

/* the columns of one block: about this many bytes (the L2 cache of one core holds them and the
 * GEMM's packed panels) */
#define GW_BLOCK_BYTES (256 * 1024)

#define GW_FN(N, TT, GEMM)                                                                                      \
  static int gw_##N(TT *gw, const TT *x, const TT *dy, TT scale, const mt_vol_geom *g, int64_t nb, int64_t O) { \
    const int64_t R = g->C * g->kT * g->kH * g->kW, Q = g->oT * g->oH, L = Q * g->oW;                           \
    const int64_t V = g->C * g->T * g->H * g->W;                                                                \
    int64_t qb = GW_BLOCK_BYTES / (int64_t)sizeof(TT) / (R * g->oW); /* output rows per block */                \
    if (qb < 1) qb = 1;                                                                                         \
    if (qb > Q) qb = Q;                                                                                         \
    const int64_t nblk = (Q + qb - 1) / qb, items = nb * nblk, per = R * qb * g->oW + O * R;                    \
    int nth = omp_get_max_threads();                                                                            \
    if (items < nth) nth = (int)items;                                                                          \
    TT *buf = (TT *)malloc((size_t)nth * (size_t)per * sizeof(TT));                                             \
    if (!buf) return 0;                                                                                         \
    _Pragma("omp parallel num_threads(nth)") {                                                                  \
      TT *col = buf + (int64_t)omp_get_thread_num() * per, *acc = col + R * qb * g->oW;                         \
      memset(acc, 0, sizeof(TT) * (size_t)(O * R));                                                             \
      _Pragma("omp for schedule(static)") for (int64_t it = 0; it < items; it++) {                              \
        const int64_t n = it / nblk, q0 = it % nblk * qb, q1 = q0 + qb < Q ? q0 + qb : Q;                       \
        const int64_t k = (q1 - q0) * g->oW;                                                                    \
        mt__vol2col_rows(sizeof(TT), x + n * V, col, g, q0, q1, 0);                                             \
        /* acc (O x R) += dy[n][:, block] (O x k, rows L apart) * col^T (col: R x k) */                         \
        GEMM(0, 1, O, R, k, (TT)1, dy + n * O * L + q0 * g->oW, L, col, k, (TT)1, acc, R, 1);                   \
      }                                                                                                         \
    }                                                                                                           \
    for (int64_t i = 0; i < O * R; i++) {                                                                       \
      TT s = 0;                                                                                                 \
      for (int t = 0; t < nth; t++) s += buf[(int64_t)t * per + R * qb * g->oW + i];                            \
      gw[i] += scale * s;                                                                                       \
    }                                                                                                           \
    free(buf);                                                                                                  \
    return 1;                                                                                                   \
  }
GW_FN(f32, float, mt__sgemm)
GW_FN(f64, double, mt__dgemm)
#undef GW_FN

mt_status mt_nn_conv3d_grad_weight(mt_tensor *gw, const mt_tensor *x, const mt_tensor *dy, double scale, int dT, int dW,
                                   int dH, int padT, int padW, int padH, int dilT, int dilW, int dilH, int *ran) {
  char b1[64], b2[64], b3[64];
  if (!ran) return mt__error(MT_ERR_ARG, OP ": ran is NULL");
  *ran = 0;
  const mt_tensor *ts[3] = {gw, x, dy};
  for (int i = 0; i < 3; i++)
    if (!ts[i]) return mt__error(MT_ERR_ARG, OP ": an operand is NULL");
  /* the general path serves other devices, dtypes and layouts */
  for (int i = 0; i < 3; i++)
    if (ts[i]->device != MT_CPU || ts[i]->dtype != x->dtype || !mt__is_contiguous(ts[i])) return MT_OK;
  if (x->dtype != MT_F32 && x->dtype != MT_F64) return MT_OK;
  if (gw->ndim != 5 || x->ndim != 5 || dy->ndim != 5)
    return mt__error(MT_ERR_SHAPE, OP ": expected 5-d gradWeight, input and gradOutput, got %s, %s and %s",
                     mt__shape_str(gw, b1, sizeof b1), mt__shape_str(x, b2, sizeof b2),
                     mt__shape_str(dy, b3, sizeof b3));
  const int geo[9] = {dT, dH, dW, padT, padH, padW, dilT, dilH, dilW}; /* T, H, W */
  mt_vol_geom g = {.C = x->sizes[1],
                   .T = x->sizes[2],
                   .H = x->sizes[3],
                   .W = x->sizes[4],
                   .kT = (int)gw->sizes[2],
                   .kH = (int)gw->sizes[3],
                   .kW = (int)gw->sizes[4],
                   .dT = dT,
                   .dH = dH,
                   .dW = dW,
                   .pT = padT,
                   .pH = padH,
                   .pW = padW,
                   .lT = dilT,
                   .lH = dilH,
                   .lW = dilW};
  int64_t osz[3];
  if (gw->sizes[2] < 1 || gw->sizes[3] < 1 || gw->sizes[4] < 1 ||
      !mt__conv3d_out(x->sizes + 2, gw->sizes + 2, geo, osz))
    return mt__error(MT_ERR_SHAPE, OP ": the kernel %s does not fit the padded input %s",
                     mt__shape_str(gw, b1, sizeof b1), mt__shape_str(x, b2, sizeof b2));
  g.oT = osz[0], g.oH = osz[1], g.oW = osz[2];
  if (gw->sizes[1] != g.C || dy->sizes[0] != x->sizes[0] || dy->sizes[1] != gw->sizes[0] || dy->sizes[2] != g.oT ||
      dy->sizes[3] != g.oH || dy->sizes[4] != g.oW)
    return mt__error(MT_ERR_SHAPE, OP ": gradWeight %s, input %s and gradOutput %s do not agree",
                     mt__shape_str(gw, b1, sizeof b1), mt__shape_str(x, b2, sizeof b2),
                     mt__shape_str(dy, b3, sizeof b3));
  *ran = 1;
  if (x->sizes[0] == 0 || mt__numel(gw) == 0) return MT_OK;
  int ok = x->dtype == MT_F32 ? gw_f32((float *)mt__data(gw), (const float *)mt__data(x), (const float *)mt__data(dy),
                                       (float)scale, &g, x->sizes[0], gw->sizes[0])
                              : gw_f64((double *)mt__data(gw), (const double *)mt__data(x),
                                       (const double *)mt__data(dy), scale, &g, x->sizes[0], gw->sizes[0]);
  if (!ok) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the weight gradient's column blocks");
  return MT_OK;
}
