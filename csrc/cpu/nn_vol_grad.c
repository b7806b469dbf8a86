/* nn_vol_grad.c: the weight gradient of a 3-d convolution on the CPU for float32 and float64
 * (mt_nn_conv3d_grad_weight), the path nn.VolumetricConvolution's accGradParameters takes there.
 * The general path (one vol2col of a whole sample, then one GEMM per sample) writes each
 * sample's columns out to memory (10.8 MB on the bench layer) before the GEMM reads them back,
 * and splits each GEMM, whose result (O x C kT kH kW) is small, over the threads. Here the
 * columns are made a block of output rows at a time, small enough to stay in the core's cache
 * for the GEMM that reads them, and the threads take (sample, block) items, each adding into an
 * accumulator of its own; the accumulators are summed in thread order at the end, so a result
 * depends on the thread count but not on the run. The loop is written once in
 * generic/nn_vol_grad.c and compiled for both dtypes. */
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

/* the GEMM of each pass */
#define gemm_f32 mt__sgemm
#define gemm_f64 mt__dgemm
/* float32 and float64 only (nothing else takes this path) */
#define MT_GENERIC_FILE "generic/nn_vol_grad.c"
#include "generate_blas.h"

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
  int ok = x->dtype == MT_F32
               ? grad_weight_f32((float *)mt__data(gw), (const float *)mt__data(x), (const float *)mt__data(dy),
                                 (float)scale, &g, x->sizes[0], gw->sizes[0])
               : grad_weight_f64((double *)mt__data(gw), (const double *)mt__data(x), (const double *)mt__data(dy),
                                 scale, &g, x->sizes[0], gw->sizes[0]);
  if (!ok) return mt__error(MT_ERR_MEMORY, OP ": out of memory for the weight gradient's column blocks");
  return MT_OK;
}
