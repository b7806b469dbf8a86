/* normalize.c: nn.Normalize, each row of a vector or N x D matrix divided by its p-norm
 * (sum |x|^p + eps)^(1/p), or by max |x| + eps for p = inf (Torch7's nn.Normalize). Checks here;
 * the loops are the backends'. Nothing is saved between forward and backward: the backward
 * recomputes each row's norm in the pass that also sums x . gradOutput. */
#include <math.h>
#include "nn_common.h"

#define NRM "nn.Normalize"

static mt_status nrm_check(const mt_tensor *input, double p, double eps, int64_t *N, int64_t *D) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, NRM, "input"));
  if (input->ndim != 1 && input->ndim != 2)
    return mt__error(MT_ERR_SHAPE, NRM ": expected a vector or a batch matrix, got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  if (!(p > 0)) return mt__error(MT_ERR_ARG, NRM ": p must be a positive number (inf for the max norm), got %g", p);
  if (!(eps >= 0)) return mt__error(MT_ERR_ARG, NRM ": eps must be >= 0, got %g", eps);
  *N = input->ndim == 2 ? input->sizes[0] : 1;
  *D = input->sizes[input->ndim - 1];
  return MT_OK;
}

mt_status mt_nn_normalize_forward(mt_tensor *out, const mt_tensor *input, double p, double eps) {
  int64_t N = 0, D = 0;
  MT_CHECK_TENSOR(out, NRM, "output");
  MT_TRY(nrm_check(input, p, eps, &N, &D));
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, NRM));
  const mt_backend *be = mt__nn_backend(input, NRM);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *yc = NULL;
  mt_status st = mt__nn_contig(input, &xc, NRM);
  if (st == MT_OK) st = mt__nn_result_buf(out, input, NULL, 0, &yc, NRM);
  if (st == MT_OK && N * D > 0) st = be->normalize_forward(yc, xc, N, D, p, eps);
  if (xc) mt_tensor_release(xc);
  return mt__nn_result_done(out, yc, st);
}

mt_status mt_nn_normalize_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput, double p,
                                   double eps) {
  int64_t N = 0, D = 0;
  MT_CHECK_TENSOR(gradInput, NRM, "gradInput");
  MT_TRY(nrm_check(input, p, eps, &N, &D));
  MT_TRY(mt__nn_check_float(gradOutput, NRM, "gradOutput"));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, input->sizes, NRM, "gradOutput"));
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, NRM));
  const mt_backend *be = mt__nn_backend(input, NRM);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *gc = NULL, *rc = NULL;
  mt_status st = mt__nn_contig(input, &xc, NRM);
  if (st == MT_OK) st = mt__nn_contig(gradOutput, &gc, NRM);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, input, gradOutput, 0, &rc, NRM);
  if (st == MT_OK && N * D > 0) st = be->normalize_backward(rc, xc, gc, N, D, p, eps);
  if (xc) mt_tensor_release(xc);
  if (gc) mt_tensor_release(gc);
  return mt__nn_result_done(gradInput, rc, st);
}
