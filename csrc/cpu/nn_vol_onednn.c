/* nn_vol_onednn.c: float32 3-d convolution on the CPU through oneDNN (mt_nn_conv3d_onednn), the
 * fast path of nn.VolumetricConvolution and its variants. Why: their GEMM on vol2col columns
 * (csrc/nn/vol.c) has few rows (the output planes), where OpenBLAS runs at about the speed of
 * PyTorch's matrix product but half that of its 3-d convolution, which is oneDNN's direct JIT
 * kernels on blocked layouts. This file only checks the operands: the pass runs through
 * csrc/cpu/onednn_conv.c's code for 2-d convolutions (one primitive per shape, kept in its
 * cache, `any` layouts with reorders from and to the caller's NCDHW / OIDHW tensors). Without
 * oneDNN, or where it has no implementation, *ran is 0 and the caller takes the vol2col path. */
#include "onednn_conv.h"
#include "../core/error.h"
#include "../core/tensor.h"
#include "../moontorch.h"
#include "cpu.h"

#define OP "VolumetricConvolution"

/* the checks: 5-d contiguous float32 CPU tensors of consistent sizes; fills d[0..4] x, d[5..9]
 * w, d[10..14] y sizes from what the pass gives */
static mt_status vol_dnn_check(int pass, const mt_tensor *out, const mt_tensor *a, const mt_tensor *b, int64_t *d,
                               const int *geo) {
  const mt_tensor *ts[3] = {out, a, b};
  for (int i = 0; i < 3; i++) {
    if (!ts[i]) return mt__error(MT_ERR_ARG, OP ": an operand is NULL");
    if (ts[i]->ndim != 5 || ts[i]->dtype != MT_F32 || ts[i]->device != MT_CPU || !mt__is_contiguous(ts[i]))
      return mt__error(MT_ERR_ARG, OP ": oneDNN takes 5-d contiguous float32 CPU tensors");
  }
  /* x, w, y: which operand holds each (pass 0: out = y; 1: out = x; 2: out = w) */
  const mt_tensor *x = pass == 1 ? out : a, *w = pass == 0 || pass == 1 ? b : out,
                  *y = pass == 0   ? NULL
                       : pass == 1 ? a
                                   : b;
  for (int i = 0; i < 5; i++) d[i] = x->sizes[i], d[5 + i] = w->sizes[i];
  if (d[1] != d[6])
    return mt__error(MT_ERR_SHAPE, OP ": input has %lld planes, weight expects %lld", (long long)d[1], (long long)d[6]);
  if (!mt__conv3d_out(d + 2, d + 7, geo, d + 12))
    return mt__error(MT_ERR_SHAPE, OP ": the kernel does not fit the padded input");
  d[10] = d[0], d[11] = d[5];
  if (y)
    for (int i = 0; i < 5; i++)
      if (y->sizes[i] != d[10 + i]) return mt__error(MT_ERR_SHAPE, OP ": gradOutput does not have the output's size");
  return MT_OK;
}

/* one pass through the oneDNN path shared with the 2-d convolutions (onednn_conv.c), in its
 * blocked variant; d and geo as vol_dnn_check has them (T, H, W order) */
static mt_status vol_dnn_run(int pass, float *out, float *out2, const float *a, const float *b, const float *bias,
                             float scale, const int64_t *d, const int *geo, int *ran) {
  mt__dnn_shape sh = {.sp = 3, .N = d[0], .C = d[1], .Cg = d[6], .O = d[5], .groups = 1};
  for (int i = 0; i < 3; i++)
    sh.in[i] = d[2 + i], sh.k[i] = d[7 + i], sh.out[i] = d[12 + i], sh.stride[i] = geo[i], sh.pad[i] = geo[3 + i],
    sh.dil[i] = geo[6 + i];
  /* bias only feeds the forward, gradBias only the gradWeight pass */
  const mt__conv_call c = {.dir = pass,
                           .a = a,
                           .b = b,
                           .bias = pass == 0 ? bias : NULL,
                           .out = out,
                           .out2 = pass == 2 ? out2 : NULL,
                           .scale = scale};
  return mt__onednn_run(&c, &sh, MT__ONEDNN_BLOCKED, OP, ran);
}

mt_status mt_nn_conv3d_onednn(int pass, mt_tensor *out, mt_tensor *out2, const mt_tensor *a, const mt_tensor *b,
                              const mt_tensor *bias, double scale, int dT, int dW, int dH, int padT, int padW, int padH,
                              int dilT, int dilW, int dilH, int *ran) {
  if (!ran) return mt__error(MT_ERR_ARG, OP ": ran is NULL");
  *ran = 0;
  if (pass < 0 || pass > 2) return mt__error(MT_ERR_ARG, OP ": pass %d is not 0, 1 or 2", pass);
  const int geo[9] = {dT, dH, dW, padT, padH, padW, dilT, dilH, dilW};
  int64_t d[15];
  if (pass == 0) { /* the forward sizes its output */
    if (!out || !a || !b) return mt__error(MT_ERR_ARG, OP ": an operand is NULL");
    if (a->ndim != 5 || b->ndim != 5) return mt__error(MT_ERR_SHAPE, OP ": oneDNN takes 5-d input and weight");
    int64_t osz[5] = {a->sizes[0], b->sizes[0], 1, 1, 1};
    if (!mt__conv3d_out(a->sizes + 2, b->sizes + 2, geo, osz + 2))
      return mt__error(MT_ERR_SHAPE, OP ": the kernel does not fit the padded input");
    MT_TRY(mt__prepare_out(out, MT_F32, MT_CPU, 5, osz, OP));
  }
  MT_TRY(vol_dnn_check(pass, out, a, b, d, geo));
  if (bias && (bias->ndim != 1 || bias->sizes[0] != d[5] || bias->dtype != MT_F32 || bias->device != MT_CPU ||
               !mt__is_contiguous(bias)))
    return mt__error(MT_ERR_ARG, OP ": bias must be a contiguous float32 CPU vector of %lld", (long long)d[5]);
  if (out2 && (out2->ndim != 1 || out2->sizes[0] != d[5] || out2->dtype != MT_F32 || out2->device != MT_CPU ||
               !mt__is_contiguous(out2)))
    return mt__error(MT_ERR_ARG, OP ": gradBias must be a contiguous float32 CPU vector of %lld", (long long)d[5]);
  if (d[0] == 0) return MT_OK;
  return vol_dnn_run(pass, (float *)mt__data(out), out2 ? (float *)mt__data(out2) : NULL, (const float *)mt__data(a),
                     (const float *)mt__data(b), bias ? (const float *)mt__data(bias) : NULL, (float)scale, d, geo,
                     ran);
}
