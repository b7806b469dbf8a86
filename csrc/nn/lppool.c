/* lppool.c: nn.SpatialLPPooling's p-norm pooling as Torch7 composes it (Power(p), average pooling
 * times kW kH, Power(1/p)): y = (sum over the kW x kH window of x^p)^(1/p), no padding, floor
 * sizes; x^p itself, so an odd or fractional p wants non-negative inputs as in Torch7. Backward
 * from the forward's output: dx = x^(p-1) sum over the windows holding x of dy y^(1-p).
 * Checks here; the loops are the backends' lppool2d_*. */
#include "nn_common.h"

#define LP "nn.SpatialLPPooling"

static mt_status lp_geom(mt_pool_geom *g, int64_t *osz, const mt_tensor *input, double p, int kW, int kH, int dW,
                         int dH) {
  char b1[64];
  MT_CHECK_TENSOR(input, LP, "input");
  MT_TRY(mt__nn_check_float(input, LP, "input"));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, LP ": expected a 3-d or 4-d input, got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  if (!(p > 0) || p - p != 0) return mt__error(MT_ERR_ARG, LP ": p must be a positive number, got %g", p);
  if (kW < 1 || kH < 1) return mt__error(MT_ERR_ARG, LP ": kernel %dx%d must be positive", kW, kH);
  if (dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, LP ": stride %dx%d must be positive", dW, dH);
  int nd = input->ndim;
  *g = (mt_pool_geom){
      .H = input->sizes[nd - 2], .W = input->sizes[nd - 1], .cs = 1, .kW = kW, .kH = kH, .dW = dW, .dH = dH};
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  if (g->H < kH || g->W < kW)
    return mt__error(MT_ERR_SHAPE, LP ": input image %lldx%lld is smaller than the kernel %dx%d", (long long)g->H,
                     (long long)g->W, kH, kW);
  g->oH = (g->H - kH) / dH + 1, g->oW = (g->W - kW) / dW + 1;
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = g->oH, osz[nd - 1] = g->oW;
  return MT_OK;
}

mt_status mt_nn_lppool2d_forward(mt_tensor *out, const mt_tensor *input, double p, int kW, int kH, int dW, int dH) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(lp_geom(&g, osz, input, p, kW, kH, dW, dH));
  MT_CHECK_TENSOR(out, LP, "output");
  if (out == input) return mt__error(MT_ERR_ARG, LP ": the output must not be the input");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, LP));
  const mt_backend *be = mt__nn_backend(input, LP);
  if (!be) return mt_last_status();
  mt_tensor *t[2] = {NULL, NULL}; /* x, y */
  mt_status st = mt__nn_contig(input, &t[0], LP);
  if (st == MT_OK) st = mt__nn_result_buf(out, NULL, NULL, 0, &t[1], LP);
  if (st == MT_OK) {
    if (g.planes > 0) st = be->lppool2d_forward(t[1], t[0], &g, p);
    st = mt__nn_result_done(out, t[1], st);
    t[1] = NULL;
  }
  mt__nn_release(t, 2);
  return st;
}

mt_status mt_nn_lppool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input,
                                  const mt_tensor *output, double p, int kW, int kH, int dW, int dH) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(lp_geom(&g, osz, input, p, kW, kH, dW, dH));
  MT_CHECK_TENSOR(gradOutput, LP, "gradOutput");
  MT_CHECK_TENSOR(output, LP, "output");
  MT_CHECK_TENSOR(gradInput, LP, "gradInput");
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, LP, "gradOutput"));
  MT_TRY(mt__nn_check_like(output, input, input->ndim, osz, LP, "output"));
  if (gradInput == input || gradInput == gradOutput || gradInput == output)
    return mt__error(MT_ERR_ARG, LP ": gradInput must not be an operand");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, LP));
  const mt_backend *be = mt__nn_backend(input, LP);
  if (!be) return mt_last_status();
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, dy, y, dx */
  mt_status st = mt__nn_contig(input, &t[0], LP);
  if (st == MT_OK) st = mt__nn_contig(gradOutput, &t[1], LP);
  if (st == MT_OK) st = mt__nn_contig(output, &t[2], LP);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, NULL, NULL, 0, &t[3], LP);
  if (st == MT_OK) {
    if (g.planes > 0) st = be->lppool2d_backward(t[3], t[1], t[0], t[2], &g, p);
    st = mt__nn_result_done(gradInput, t[3], st);
    t[3] = NULL;
  }
  mt__nn_release(t, 4);
  return st;
}
