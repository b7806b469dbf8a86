/* padding.c: 2-d padding of the last two dimensions of a 3-d or 4-d input, nn.SpatialZeroPadding
 * (MT_PAD_ZERO: zeros; a negative pad crops that side, as in Torch7), nn.SpatialReflectionPadding
 * (MT_PAD_REFLECT: the mirror image without repeating the border; each pad smaller than its
 * dimension) and nn.SpatialReplicationPadding (MT_PAD_REPLICATE: the border repeated). Output
 * pixel (oh, ow) reads input (src(oh - t), src(ow - l)); the backward adds each output gradient
 * onto that source. Checks here; the loops are the backends' pad2d_*. */
#include "nn_common.h"

static const char *pad_name(int mode) {
  return mode == MT_PAD_ZERO      ? "nn.SpatialZeroPadding"
         : mode == MT_PAD_REFLECT ? "nn.SpatialReflectionPadding"
                                  : "nn.SpatialReplicationPadding";
}

static mt_status pad_side(int mode, int64_t n, int before, int after, const char *what, const char *op) {
  if (mode == MT_PAD_ZERO) {
    if (n + before + after < 1 || n + (before < 0 ? before : 0) + (after < 0 ? after : 0) < 1)
      return mt__error(MT_ERR_SHAPE, "%s: input %s %lld is too small for pads %d,%d", op, what, (long long)n, before,
                       after);
    return MT_OK;
  }
  if (before < 0 || after < 0)
    return mt__error(MT_ERR_ARG, "%s: %s pads %d,%d must not be negative", op, what, before, after);
  if (n < 1) return mt__error(MT_ERR_SHAPE, "%s: the input %s is empty", op, what);
  if (mode == MT_PAD_REFLECT && (before >= n || after >= n))
    return mt__error(MT_ERR_ARG, "%s: %s pads %d,%d must be smaller than the input size %lld", op, what, before, after,
                     (long long)n);
  return MT_OK;
}

static mt_status pad_geom(mt_pool_geom *g, int64_t *osz, const mt_tensor *input, int mode, int l, int r, int t, int b,
                          const char *op) {
  char b1[64];
  MT_CHECK_TENSOR(input, op, "input");
  MT_TRY(mt__nn_check_float(input, op, "input"));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, "%s: expected a 3-d or 4-d input, got size %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  int nd = input->ndim;
  *g = (mt_pool_geom){.H = input->sizes[nd - 2], .W = input->sizes[nd - 1], .cs = 1, .pW = l, .pH = t};
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  MT_TRY(pad_side(mode, g->H, t, b, "height", op));
  MT_TRY(pad_side(mode, g->W, l, r, "width", op));
  g->oH = g->H + t + b, g->oW = g->W + l + r;
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = g->oH, osz[nd - 1] = g->oW;
  return MT_OK;
}

mt_status mt_nn_pad2d_forward(mt_tensor *out, const mt_tensor *input, int mode, int l, int r, int t, int b) {
  if (mode < MT_PAD_ZERO || mode > MT_PAD_REPLICATE) return mt__error(MT_ERR_ARG, "pad2d: unknown mode %d", mode);
  const char *op = pad_name(mode);
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(pad_geom(&g, osz, input, mode, l, r, t, b, op));
  MT_CHECK_TENSOR(out, op, "output");
  if (out == input) return mt__error(MT_ERR_ARG, "%s: the output must not be the input", op);
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, op));
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  mt_tensor *ts[2] = {NULL, NULL}; /* x, y */
  mt_status st = mt__nn_contig(input, &ts[0], op);
  if (st == MT_OK) st = mt__nn_result_buf(out, NULL, NULL, 0, &ts[1], op);
  if (st == MT_OK) {
    if (g.planes > 0) st = be->pad2d_forward(ts[1], ts[0], &g, mode);
    st = mt__nn_result_done(out, ts[1], st);
    ts[1] = NULL;
  }
  mt__nn_release(ts, 2);
  return st;
}

mt_status mt_nn_pad2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int mode,
                               int l, int r, int t, int b) {
  if (mode < MT_PAD_ZERO || mode > MT_PAD_REPLICATE) return mt__error(MT_ERR_ARG, "pad2d: unknown mode %d", mode);
  const char *op = pad_name(mode);
  mt_pool_geom g;
  int64_t osz[4];
  MT_TRY(pad_geom(&g, osz, input, mode, l, r, t, b, op));
  MT_CHECK_TENSOR(gradOutput, op, "gradOutput");
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, osz, op, "gradOutput"));
  if (gradInput == gradOutput) return mt__error(MT_ERR_ARG, "%s: gradInput must not be gradOutput", op);
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, op));
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  mt_tensor *ts[2] = {NULL, NULL}; /* dy, dx */
  mt_status st = mt__nn_contig(gradOutput, &ts[0], op);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, NULL, NULL, 0, &ts[1], op);
  if (st == MT_OK) {
    if (g.planes > 0) st = be->pad2d_backward(ts[1], ts[0], &g, mode);
    st = mt__nn_result_done(gradInput, ts[1], st);
    ts[1] = NULL;
  }
  mt__nn_release(ts, 2);
  return st;
}
