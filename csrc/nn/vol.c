/* vol.c: the columns of a 3-d convolution (vol2col) and their adjoint (col2vol), checks shared by
 * every device. nn.VolumetricConvolution (and the full and dilated variants) run one GEMM per
 * sample on these columns; the loops are the backends' vol2col / col2vol. */
#include "nn_common.h"

#define OP "vol2col"
#define OPB "col2vol"

/* geometry arguments: positive kernel, stride, dilation; padding not negative; output >= 1 */
static mt_status vol_geom(mt_vol_geom *g, const char *op, int64_t C, int64_t T, int64_t H, int64_t W, int kT, int kW,
                          int kH, int dT, int dW, int dH, int pT, int pW, int pH, int lT, int lW, int lH) {
  if (kT < 1 || kW < 1 || kH < 1) return mt__error(MT_ERR_ARG, "%s: kernel %dx%dx%d must be positive", op, kT, kW, kH);
  if (dT < 1 || dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, "%s: stride %dx%dx%d must be positive", op, dT, dW, dH);
  if (lT < 1 || lW < 1 || lH < 1)
    return mt__error(MT_ERR_ARG, "%s: dilation %dx%dx%d must be positive", op, lT, lW, lH);
  if (pT < 0 || pW < 0 || pH < 0)
    return mt__error(MT_ERR_ARG, "%s: padding %dx%dx%d must not be negative", op, pT, pW, pH);
  g->C = C, g->T = T, g->H = H, g->W = W;
  g->kT = kT, g->kW = kW, g->kH = kH, g->dT = dT, g->dW = dW, g->dH = dH;
  g->pT = pT, g->pW = pW, g->pH = pH, g->lT = lT, g->lW = lW, g->lH = lH;
  int64_t eT = (int64_t)lT * (kT - 1) + 1, eH = (int64_t)lH * (kH - 1) + 1, eW = (int64_t)lW * (kW - 1) + 1;
  if (T + 2 * pT < eT || H + 2 * pH < eH || W + 2 * pW < eW)
    return mt__error(MT_ERR_SHAPE,
                     "%s: volume %lldx%lldx%lld (TxHxW, padded %lldx%lldx%lld) is smaller than the "
                     "dilated kernel %lldx%lldx%lld",
                     op, (long long)T, (long long)H, (long long)W, (long long)(T + 2 * pT), (long long)(H + 2 * pH),
                     (long long)(W + 2 * pW), (long long)eT, (long long)eH, (long long)eW);
  g->oT = (T + 2 * pT - eT) / dT + 1, g->oH = (H + 2 * pH - eH) / dH + 1, g->oW = (W + 2 * pW - eW) / dW + 1;
  return MT_OK;
}

mt_status mt_nn_vol2col(mt_tensor *col, const mt_tensor *input, int kT, int kW, int kH, int dT, int dW, int dH,
                        int padT, int padW, int padH, int dilT, int dilW, int dilH) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, OP, "input"));
  MT_CHECK_TENSOR(col, OP, "columns");
  if (input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, OP ": expected a 4-d input (channels x T x H x W), got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  mt_vol_geom g;
  MT_TRY(vol_geom(&g, OP, input->sizes[0], input->sizes[1], input->sizes[2], input->sizes[3], kT, kW, kH, dT, dW, dH,
                  padT, padW, padH, dilT, dilW, dilH));
  int64_t csz[2] = {g.C * kT * kH * kW, g.oT * g.oH * g.oW};
  MT_TRY(mt__prepare_out(col, input->dtype, input->device, 2, csz, OP));
  if (csz[0] == 0 || csz[1] == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* x, col */
  mt_status st = mt__nn_contig(input, &t[0], OP);
  if (st == MT_OK) st = mt__nn_result_buf(col, input, NULL, 0, &t[1], OP);
  if (st == MT_OK) {
    st = be->vol2col(t[1], t[0], &g);
    st = mt__nn_result_done(col, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}

mt_status mt_nn_col2vol(mt_tensor *out, const mt_tensor *col, int64_t C, int64_t T, int64_t H, int64_t W, int kT,
                        int kW, int kH, int dT, int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                        int dilH) {
  char b1[64];
  MT_TRY(mt__nn_check_float(col, OPB, "columns"));
  MT_CHECK_TENSOR(out, OPB, "output");
  if (C < 0 || T < 1 || H < 1 || W < 1)
    return mt__error(MT_ERR_ARG, OPB ": volume %lldx%lldx%lldx%lld (CxTxHxW) is empty or negative", (long long)C,
                     (long long)T, (long long)H, (long long)W);
  mt_vol_geom g;
  MT_TRY(vol_geom(&g, OPB, C, T, H, W, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH));
  if (col->ndim != 2 || col->sizes[0] != C * kT * kH * kW || col->sizes[1] != g.oT * g.oH * g.oW)
    return mt__error(MT_ERR_SHAPE, OPB ": columns have size %s, expected %lldx%lld", mt__shape_str(col, b1, sizeof b1),
                     (long long)(C * kT * kH * kW), (long long)(g.oT * g.oH * g.oW));
  int64_t osz[4] = {C, T, H, W};
  MT_TRY(mt__prepare_out(out, col->dtype, col->device, 4, osz, OPB));
  if (C == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(col, OPB);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* col, out */
  mt_status st = mt__nn_contig(col, &t[0], OPB);
  if (st == MT_OK) st = mt__nn_result_buf(out, col, NULL, 0, &t[1], OPB);
  if (st == MT_OK) {
    st = be->col2vol(t[1], t[0], &g);
    st = mt__nn_result_done(out, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}
