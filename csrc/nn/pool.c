/* pool.c: 2-d max and average pooling (NCHW or channels-last, float dtypes) with Torch7/PyTorch
 * output sizes (floor or ceil mode; in ceil mode the last window must start inside the input or
 * its left padding). Checks and output sizes here; the loops are the backends' (the table's
 * *pool2d_*). A channels-last 4-d input is read as it is and gives channels-last results
 * (output, indices, gradInput), as in PyTorch; g->cs tells the backend the layout. */
#include <string.h>
#include "nn_common.h"

static int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int ceil_mode) {
  int64_t span = in + 2 * p - k;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o--; /* the last window would start in the right padding */
  return o;
}

static mt_status pool_check(mt_pool_geom *g, int64_t *osz, const mt_tensor *input, int kW, int kH, int dW, int dH,
                            int padW, int padH, int ceil_mode, const char *op) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, op, "input"));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, "%s: expected a 3-d or 4-d input, got size %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  if (kW < 1 || kH < 1) return mt__error(MT_ERR_ARG, "%s: kernel %dx%d must be positive", op, kW, kH);
  if (dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, "%s: stride %dx%d must be positive", op, dW, dH);
  if (padW < 0 || padH < 0 || 2 * padW > kW || 2 * padH > kH)
    return mt__error(MT_ERR_ARG, "%s: padding %dx%d must be between 0 and half the kernel %dx%d", op, padW, padH, kW,
                     kH);
  int nd = input->ndim;
  g->H = input->sizes[nd - 2], g->W = input->sizes[nd - 1];
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  g->cs = mt__nn_cl(input) ? input->sizes[1] : 1;
  g->kH = kH, g->kW = kW, g->dH = dH, g->dW = dW, g->pH = padH, g->pW = padW;
  if (g->H + 2 * padH < kH || g->W + 2 * padW < kW)
    return mt__error(MT_ERR_SHAPE, "%s: input image %lldx%lld (padded %lldx%lld) is smaller than the kernel %dx%d", op,
                     (long long)g->H, (long long)g->W, (long long)(g->H + 2 * padH), (long long)(g->W + 2 * padW), kH,
                     kW);
  g->oH = pool_out_size(g->H, kH, dH, padH, ceil_mode);
  g->oW = pool_out_size(g->W, kW, dW, padW, ceil_mode);
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = g->oH, osz[nd - 1] = g->oW;
  return MT_OK;
}

/* What every pooling op does once checked: its input (and max-pool indices) dense in the
 * layout of g->cs, a buffer in that layout for its result (and forward indices), one call of
 * the backend's entry `kind`. Only operands not already in the layout are copied. */
enum { MAX_FWD, MAX_BWD, AVG_FWD, AVG_BWD, AD_FWD, AD_BWD };
static mt_status pool_run(int kind, mt_tensor *out, mt_tensor *indices, const mt_tensor *in, const mt_pool_geom *g,
                          int cip, const char *op) {
  const mt_backend *be = mt__nn_backend(in, op);
  if (!be) return mt_last_status();
  int cl = g->cs > 1;
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* x, y, indices */
  mt_status st = mt__nn_dense(in, cl, &t[0], op);
  if (st == MT_OK) st = mt__nn_result_dense(out, cl, 0, &t[1], op);
  if (st == MT_OK && kind == MAX_FWD) st = mt__nn_result_dense(indices, cl, 0, &t[2], op);
  if (st == MT_OK && kind == MAX_BWD) st = mt__nn_dense(indices, cl, &t[2], op);
  if (st == MT_OK) {
    mt_tensor *x = t[0], *y = t[1], *ix = t[2];
    switch (kind) {
      case MAX_FWD: st = be->maxpool2d_forward(y, ix, x, g); break;
      case MAX_BWD: st = be->maxpool2d_backward(y, x, ix, g); break;
      case AVG_FWD: st = be->avgpool2d_forward(y, x, g, cip); break;
      case AVG_BWD: st = be->avgpool2d_backward(y, x, g, cip); break;
      case AD_FWD: st = be->adaptive_avgpool2d_forward(y, x, g); break;
      default: st = be->adaptive_avgpool2d_backward(y, x, g); break;
    }
    st = mt__nn_result_done(out, y, st);
    t[1] = NULL;
    if (kind == MAX_FWD) {
      st = mt__nn_result_done(indices, ix, st);
      t[2] = NULL;
    }
  }
  mt__nn_release(t, 3);
  return st;
}

#define MP "SpatialMaxPooling"
mt_status mt_maxpool2d_forward(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, int kW, int kH, int dW,
                               int dH, int padW, int padH, int ceil_mode) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, MP));
  MT_CHECK_TENSOR(out, MP, "output");
  MT_CHECK_TENSOR(indices, MP, "indices");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, MP));
  MT_TRY(mt__prepare_out(indices, MT_I64, input->device, input->ndim, osz, MP));
  mt__nn_follow(out, mt__nn_cl(input));
  mt__nn_follow(indices, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(MAX_FWD, out, indices, input, &g, 0, MP);
}

mt_status mt_maxpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *indices,
                                const mt_tensor *input, int kW, int kH, int dW, int dH, int padW, int padH,
                                int ceil_mode) {
  mt_pool_geom g;
  int64_t osz[4];
  char b1[64];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, MP));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, MP, "gradOutput"));
  MT_CHECK_TENSOR(indices, MP, "indices");
  if (indices->dtype != MT_I64 || indices->device != input->device || indices->ndim != gradOutput->ndim ||
      mt__numel(indices) != mt__numel(gradOutput))
    return mt__error(MT_ERR_ARG, MP ": indices (%s, size %s) do not come from a forward pass of this size",
                     mt_dtype_name(indices->dtype), mt__shape_str(indices, b1, sizeof b1));
  MT_CHECK_TENSOR(gradInput, MP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, MP));
  mt__nn_follow(gradInput, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(MAX_BWD, gradInput, (mt_tensor *)indices, gradOutput, &g, 0, MP);
}

#define AP "SpatialAveragePooling"
mt_status mt_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int kW, int kH, int dW, int dH, int padW,
                               int padH, int ceil_mode, int count_include_pad) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, AP));
  MT_CHECK_TENSOR(out, AP, "output");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, AP));
  mt__nn_follow(out, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(AVG_FWD, out, NULL, input, &g, count_include_pad, AP);
}

mt_status mt_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int kW,
                                int kH, int dW, int dH, int padW, int padH, int ceil_mode, int count_include_pad) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, AP));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, AP, "gradOutput"));
  MT_CHECK_TENSOR(gradInput, AP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, AP));
  mt__nn_follow(gradInput, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(AVG_BWD, gradInput, NULL, gradOutput, &g, count_include_pad, AP);
}

/* ---- adaptive average pooling: output cell i of n covers input [floor(i*in/n), ceil((i+1)*in/n)) */
#define AD "SpatialAdaptiveAveragePooling"
static mt_status adaptive_check(mt_pool_geom *g, int64_t *osz, const mt_tensor *input, int oW, int oH) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, AD, "input"));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, AD ": expected a 3-d or 4-d input, got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  if (oW < 1 || oH < 1) return mt__error(MT_ERR_ARG, AD ": output size %dx%d must be positive", oW, oH);
  int nd = input->ndim;
  memset(g, 0, sizeof *g);
  g->H = input->sizes[nd - 2], g->W = input->sizes[nd - 1];
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  g->oH = oH, g->oW = oW;
  g->cs = mt__nn_cl(input) ? input->sizes[1] : 1;
  if (g->H < 1 || g->W < 1)
    return mt__error(MT_ERR_SHAPE, AD ": input image %lldx%lld is empty", (long long)g->H, (long long)g->W);
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = oH, osz[nd - 1] = oW;
  return MT_OK;
}

mt_status mt_adaptive_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int oW, int oH) {
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(adaptive_check(&g, osz, input, oW, oH));
  MT_CHECK_TENSOR(out, AD, "output");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, AD));
  mt__nn_follow(out, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(AD_FWD, out, NULL, input, &g, 0, AD);
}

mt_status mt_adaptive_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input) {
  mt_pool_geom g;
  int64_t osz[4];
  char b1[64];
  MT_CHECK_TENSOR(gradOutput, AD, "gradOutput");
  MT_CHECK_TENSOR(input, AD, "input");
  if (gradOutput->ndim != input->ndim || input->ndim < 3)
    return mt__error(MT_ERR_SHAPE, AD ": gradOutput has size %s, expected %d dimensions like the input",
                     mt__shape_str(gradOutput, b1, sizeof b1), input->ndim);
  int nd = input->ndim;
  MT_TRY(adaptive_check(&g, osz, input, (int)gradOutput->sizes[nd - 1], (int)gradOutput->sizes[nd - 2]));
  MT_TRY(mt__nn_check_like(gradOutput, input, nd, osz, AD, "gradOutput"));
  MT_CHECK_TENSOR(gradInput, AD, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, nd, input->sizes, AD));
  mt__nn_follow(gradInput, mt__nn_cl(input));
  if (g.planes == 0) return MT_OK;
  return pool_run(AD_BWD, gradInput, NULL, gradOutput, &g, 0, AD);
}
