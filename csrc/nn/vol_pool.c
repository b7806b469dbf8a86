/* vol_pool.c: 3-d max pooling (nn.VolumetricMaxPooling and its dilated variant) and 3-d average
 * pooling (nn.VolumetricAveragePooling): checks and output sizes shared by every device; the loops
 * are the backends' maxpool3d_* and avgpool3d_*. */
#include "nn_common.h"

#define OP "VolumetricMaxPooling"
#define AOP "VolumetricAveragePooling"

/* Torch7's output length: in ceil mode the last window must start inside the input or its left
 * padding; -1 when even one window does not fit */
static int64_t out_len(int64_t n, int k, int d, int pad, int dil, int ceil_mode) {
  int64_t span = n + 2 * (int64_t)pad - (int64_t)dil * (k - 1) - 1;
  if (span < 0) return -1;
  int64_t o = (ceil_mode ? (span + d - 1) / d : span / d) + 1;
  if (ceil_mode && (o - 1) * d >= n + pad) o--;
  return o;
}

/* the input's [N x] C x T x H x W geometry (C = all planes) and the output sizes in osz */
static mt_status pool_geom(const char *op, mt_vol_geom *g, int64_t *osz, const mt_tensor *input, int kT, int kW, int kH,
                           int dT, int dW, int dH, int pT, int pW, int pH, int lT, int lW, int lH, int ceil_mode) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, op, "input"));
  int nd = input->ndim;
  if (nd != 4 && nd != 5)
    return mt__error(MT_ERR_SHAPE, "%s: expected a 4-d or 5-d input ([batch x] planes x T x H x W), got size %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  if (kT < 1 || kW < 1 || kH < 1) return mt__error(MT_ERR_ARG, "%s: kernel %dx%dx%d must be positive", op, kT, kW, kH);
  if (dT < 1 || dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, "%s: stride %dx%dx%d must be positive", op, dT, dW, dH);
  if (lT < 1 || lW < 1 || lH < 1)
    return mt__error(MT_ERR_ARG, "%s: dilation %dx%dx%d must be positive", op, lT, lW, lH);
  if (pT < 0 || pW < 0 || pH < 0 || 2 * pT > kT || 2 * pW > kW || 2 * pH > kH)
    return mt__error(MT_ERR_ARG, "%s: padding %dx%dx%d must be between 0 and half the kernel %dx%dx%d", op, pT, pW, pH,
                     kT, kW, kH);
  g->T = input->sizes[nd - 3], g->H = input->sizes[nd - 2], g->W = input->sizes[nd - 1];
  g->C = input->sizes[nd - 4] * (nd == 5 ? input->sizes[0] : 1);
  g->kT = kT, g->kW = kW, g->kH = kH, g->dT = dT, g->dW = dW, g->dH = dH;
  g->pT = pT, g->pW = pW, g->pH = pH, g->lT = lT, g->lW = lW, g->lH = lH;
  g->oT = out_len(g->T, kT, dT, pT, lT, ceil_mode);
  g->oH = out_len(g->H, kH, dH, pH, lH, ceil_mode);
  g->oW = out_len(g->W, kW, dW, pW, lW, ceil_mode);
  if (g->oT < 1 || g->oH < 1 || g->oW < 1)
    return mt__error(MT_ERR_SHAPE,
                     "%s: input %lldx%lldx%lld (TxHxW) is too small for the kernel %dx%dx%d "
                     "(dilation %dx%dx%d, padding %dx%dx%d)",
                     op, (long long)g->T, (long long)g->H, (long long)g->W, kT, kH, kW, lT, lH, lW, pT, pH, pW);
  for (int i = 0; i < nd - 3; i++) osz[i] = input->sizes[i];
  osz[nd - 3] = g->oT, osz[nd - 2] = g->oH, osz[nd - 1] = g->oW;
  return MT_OK;
}

mt_status mt_nn_maxpool3d_forward(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, int kT, int kW, int kH,
                                  int dT, int dW, int dH, int padT, int padW, int padH, int dilT, int dilW, int dilH,
                                  int ceil_mode) {
  mt_vol_geom g;
  int64_t osz[5];
  MT_TRY(pool_geom(OP, &g, osz, input, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH, ceil_mode));
  MT_CHECK_TENSOR(out, OP, "output");
  MT_CHECK_TENSOR(indices, OP, "indices");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, OP));
  MT_TRY(mt__prepare_out(indices, MT_I64, input->device, input->ndim, osz, OP));
  if (!mt__is_contiguous(indices)) return mt__error(MT_ERR_ARG, OP ": the indices tensor must be contiguous");
  if (g.C == 0 || g.T * g.H * g.W == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* x, y */
  mt_status st = mt__nn_contig(input, &t[0], OP);
  if (st == MT_OK) st = mt__nn_result_buf(out, input, NULL, 0, &t[1], OP);
  if (st == MT_OK) {
    st = be->maxpool3d_forward(t[1], indices, t[0], &g);
    st = mt__nn_result_done(out, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}

mt_status mt_nn_maxpool3d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *indices,
                                   const mt_tensor *input, int kT, int kW, int kH, int dT, int dW, int dH, int padT,
                                   int padW, int padH, int dilT, int dilW, int dilH, int ceil_mode) {
  char b1[64], b2[64];
  mt_vol_geom g;
  int64_t osz[5];
  MT_TRY(pool_geom(OP, &g, osz, input, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH, ceil_mode));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, OP, "gradOutput"));
  MT_CHECK_TENSOR(indices, OP, "indices");
  if (indices->dtype != MT_I64 || indices->device != input->device || mt__numel(indices) != mt__numel(gradOutput))
    return mt__error(MT_ERR_ARG, OP ": indices (%s, %s) must be int64 on the input's device with gradOutput's size %s",
                     mt_dtype_name(indices->dtype), mt__shape_str(indices, b1, sizeof b1),
                     mt__shape_str(gradOutput, b2, sizeof b2));
  MT_CHECK_TENSOR(gradInput, OP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, OP));
  if (g.C == 0 || g.T * g.H * g.W == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* dy, idx, dx */
  mt_status st = mt__nn_contig(gradOutput, &t[0], OP);
  if (st == MT_OK) st = mt__nn_contig(indices, &t[1], OP);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, gradOutput, indices, 0, &t[2], OP);
  if (st == MT_OK) {
    st = be->maxpool3d_backward(t[2], t[0], t[1], &g);
    st = mt__nn_result_done(gradInput, t[2], st);
    t[2] = NULL;
  }
  mt__nn_release(t, 3);
  return st;
}

mt_status mt_nn_avgpool3d_forward(mt_tensor *out, const mt_tensor *input, int kT, int kW, int kH, int dT, int dW,
                                  int dH, int padT, int padW, int padH, int ceil_mode, int count_include_pad) {
  mt_vol_geom g;
  int64_t osz[5];
  MT_TRY(pool_geom(AOP, &g, osz, input, kT, kW, kH, dT, dW, dH, padT, padW, padH, 1, 1, 1, ceil_mode));
  MT_CHECK_TENSOR(out, AOP, "output");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, AOP));
  if (g.C == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, AOP);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* x, y */
  mt_status st = mt__nn_contig(input, &t[0], AOP);
  if (st == MT_OK) st = mt__nn_result_buf(out, input, NULL, 0, &t[1], AOP);
  if (st == MT_OK) {
    st = be->avgpool3d_forward(t[1], t[0], &g, count_include_pad != 0);
    st = mt__nn_result_done(out, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}

mt_status mt_nn_avgpool3d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int kT,
                                   int kW, int kH, int dT, int dW, int dH, int padT, int padW, int padH, int ceil_mode,
                                   int count_include_pad) {
  mt_vol_geom g;
  int64_t osz[5];
  MT_TRY(pool_geom(AOP, &g, osz, input, kT, kW, kH, dT, dW, dH, padT, padW, padH, 1, 1, 1, ceil_mode));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, AOP, "gradOutput"));
  MT_CHECK_TENSOR(gradInput, AOP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, AOP));
  if (g.C == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, AOP);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* dy, dx */
  mt_status st = mt__nn_contig(gradOutput, &t[0], AOP);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, gradOutput, NULL, 0, &t[1], AOP);
  if (st == MT_OK) {
    st = be->avgpool3d_backward(t[1], t[0], &g, count_include_pad != 0);
    st = mt__nn_result_done(gradInput, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}
