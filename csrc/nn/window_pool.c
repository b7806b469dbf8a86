/* window_pool.c: max pooling over windows given per output row and column rather than by kernel
 * and stride: the cells of nn.SpatialAdaptiveMaxPooling and the pseudo-random windows of
 * nn.SpatialFractionalMaxPooling. Checks here; the loop is the backends' window_maxpool2d. */
#include <string.h>
#include "nn_common.h"

#define WP "window_maxpool2d"

/* a P x n int64 tensor of window bounds (P = 1 or planes) on the input's device */
static mt_status bounds_check(const mt_tensor *t, const mt_tensor *input, int64_t planes, int64_t n, const char *what,
                              int64_t *P) {
  char b1[64], b2[64];
  MT_CHECK_TENSOR(t, WP, what);
  if (t->dtype != MT_I64)
    return mt__error(MT_ERR_DTYPE, WP ": %s has dtype %s, expected int64", what, mt_dtype_name(t->dtype));
  if (t->device != input->device)
    return mt__error(MT_ERR_DEVICE, WP ": %s is on %s but the input is on %s", what,
                     mt__device_str(t->device, b1, sizeof b1), mt__device_str(input->device, b2, sizeof b2));
  if (t->ndim != 2 || (t->sizes[0] != 1 && t->sizes[0] != planes) || t->sizes[1] != n)
    return mt__error(MT_ERR_SHAPE, WP ": %s has size %s, expected 1x%lld or %lldx%lld", what,
                     mt__shape_str(t, b1, sizeof b1), (long long)n, (long long)planes, (long long)n);
  if (!mt__is_contiguous(t)) return mt__error(MT_ERR_ARG, WP ": %s must be contiguous", what);
  *P = t->sizes[0];
  return MT_OK;
}

/* on the CPU every window is checked to be a non-empty range inside the input (on CUDA that
 * would cost a sync; the callers build the bounds) */
static mt_status windows_inside(const mt_tensor *s, const mt_tensor *e, int64_t size, const char *what) {
  if (s->device >= 0) return MT_OK;
  const int64_t *sp = (const int64_t *)mt__data(s), *ep = (const int64_t *)mt__data(e);
  int64_t n = mt__numel(s);
  for (int64_t i = 0; i < n; i++)
    if (sp[i] < 0 || ep[i] <= sp[i] || ep[i] > size)
      return mt__error(MT_ERR_ARG, WP ": %s window %lld is [%lld, %lld), not a non-empty range inside 0..%lld", what,
                       (long long)i, (long long)sp[i], (long long)ep[i], (long long)size);
  return MT_OK;
}

mt_status mt_nn_window_maxpool2d(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, const mt_tensor *hs,
                                 const mt_tensor *he, const mt_tensor *ws, const mt_tensor *we) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, WP, "input"));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, WP ": expected a 3-d or 4-d input, got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  int nd = input->ndim;
  int64_t H = input->sizes[nd - 2], W = input->sizes[nd - 1];
  int64_t planes = mt__numel(input) / (H * W > 0 ? H * W : 1);
  MT_CHECK_TENSOR(hs, WP, "row starts");
  MT_CHECK_TENSOR(ws, WP, "column starts");
  if (hs->ndim != 2 || ws->ndim != 2) return mt__error(MT_ERR_SHAPE, WP ": the window bounds must be 2-d");
  int64_t oH = hs->sizes[1], oW = ws->sizes[1], P1, P2, P3, P4;
  MT_TRY(bounds_check(hs, input, planes, oH, "row starts", &P1));
  MT_TRY(bounds_check(he, input, planes, oH, "row ends", &P2));
  MT_TRY(bounds_check(ws, input, planes, oW, "column starts", &P3));
  MT_TRY(bounds_check(we, input, planes, oW, "column ends", &P4));
  if (P1 != P2 || P1 != P3 || P1 != P4)
    return mt__error(MT_ERR_SHAPE, WP ": the window bounds disagree on their number of planes");
  MT_TRY(windows_inside(hs, he, H, "row"));
  MT_TRY(windows_inside(ws, we, W, "column"));
  int64_t osz[4];
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = oH, osz[nd - 1] = oW;
  MT_CHECK_TENSOR(out, WP, "output");
  MT_CHECK_TENSOR(indices, WP, "indices");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, nd, osz, WP));
  MT_TRY(mt__prepare_out(indices, MT_I64, input->device, nd, osz, WP));
  if (!mt__is_contiguous(indices)) return mt__error(MT_ERR_ARG, WP ": the indices tensor must be contiguous");
  if (planes == 0 || oH == 0 || oW == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, WP);
  if (!be) return mt_last_status();
  mt_tensor *x = NULL, *y = NULL;
  mt_status st = mt__nn_contig(input, &x, WP);
  if (st == MT_OK) st = mt__nn_result_buf(out, NULL, NULL, 0, &y, WP);
  if (st == MT_OK) {
    mt_pool_geom g = {.planes = planes, .H = H, .W = W, .oH = oH, .oW = oW, .cs = 1}; /* NCHW: x is contiguous */
    st = be->window_maxpool2d(y, indices, x, hs, he, ws, we, &g, P1 > 1);
    st = mt__nn_result_done(out, y, st);
  }
  if (x) mt_tensor_release(x);
  return st;
}
