/* batchnorm.c: batch normalization over dim 1 of an N x C [x ...] input, any float dtype. The
 * input is seen as N x C x S. Checks here; the per-channel loops are the backends'. Stat tensors
 * (weight, bias, running/save buffers) must be contiguous size C. */
#include "nn_common.h"

#define OP "nn.BatchNormalization"

/* an optional per-channel tensor: NULL, or contiguous, size C, the input's dtype and device */
static mt_status bn_check_vec(const mt_tensor *v, const mt_tensor *input, int64_t C, const char *name) {
  char b1[64];
  if (!v) return MT_OK;
  if (v->device != input->device) return mt__error(MT_ERR_DEVICE, OP ": %s is on another device than the input", name);
  if (v->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": %s has dtype %s but the input has dtype %s", name, mt_dtype_name(v->dtype),
                     mt_dtype_name(input->dtype));
  if (mt__numel(v) != C || !mt__is_contiguous(v))
    return mt__error(MT_ERR_SHAPE, OP ": %s must be a contiguous tensor of %lld elements (the input's %lld channels), got size %s",
                     name, (long long)C, (long long)C, mt__shape_str(v, b1, sizeof b1));
  return MT_OK;
}

static mt_status bn_check_input(const mt_tensor *input, int64_t *N, int64_t *C, int64_t *S) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, OP, "input"));
  if (input->ndim < 2)
    return mt__error(MT_ERR_SHAPE, OP ": expected an input with at least 2 dimensions (N x C ...), got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  *N = input->sizes[0];
  *C = input->sizes[1];
  *S = 1;
  for (int d = 2; d < input->ndim; d++) *S *= input->sizes[d];
  return MT_OK;
}

mt_status mt_nn_batchnorm_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight,
                                  const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                  mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                  double eps) {
  int64_t N = 0, C = 0, S = 1;
  MT_TRY(bn_check_input(input, &N, &C, &S));
  MT_CHECK_TENSOR(out, OP, "output");
  MT_TRY(bn_check_vec(weight, input, C, "weight"));
  MT_TRY(bn_check_vec(bias, input, C, "bias"));
  MT_TRY(bn_check_vec(running_mean, input, C, "running_mean"));
  MT_TRY(bn_check_vec(running_var, input, C, "running_var"));
  if (!(eps > 0)) return mt__error(MT_ERR_ARG, OP ": eps must be positive, got %g", eps);
  if (train) {
    if (N * S < 2)
      return mt__error(MT_ERR_SHAPE, OP ": training needs more than one value per channel, got input of %lld x %lld x %lld",
                       (long long)N, (long long)C, (long long)S);
    MT_CHECK_TENSOR(save_mean, OP, "save_mean");
    MT_CHECK_TENSOR(save_invstd, OP, "save_invstd");
    MT_TRY(mt__prepare_out(save_mean, input->dtype, input->device, 1, &C, OP));
    MT_TRY(mt__prepare_out(save_invstd, input->dtype, input->device, 1, &C, OP));
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean"));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd"));
  } else if (!running_mean || !running_var) {
    return mt__error(MT_ERR_ARG, OP ": evaluation needs running_mean and running_var");
  }
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, OP));
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *yc = NULL;
  mt_status st = mt__nn_contig(input, &xc, OP);
  if (st == MT_OK) st = mt__nn_result_buf(out, input, NULL, 0, &yc, OP);
  if (st == MT_OK)
    st = be->batchnorm_forward(yc, xc, weight, bias, running_mean, running_var, train ? save_mean : NULL,
                               train ? save_invstd : NULL, train, momentum, eps, N, C, S);
  st = mt__nn_result_done(out, yc, st);
  if (xc) mt_tensor_release(xc);
  return st;
}

mt_status mt_nn_batchnorm_backward(mt_tensor *gradInput, mt_tensor *gradWeight, mt_tensor *gradBias,
                                   const mt_tensor *input, const mt_tensor *gradOutput, const mt_tensor *weight,
                                   const mt_tensor *running_mean, const mt_tensor *running_var,
                                   const mt_tensor *save_mean, const mt_tensor *save_invstd, int train, double scale,
                                   double eps) {
  int64_t N = 0, C = 0, S = 1;
  char b1[64], b2[64];
  MT_TRY(bn_check_input(input, &N, &C, &S));
  MT_CHECK_TENSOR(gradOutput, OP, "gradOutput");
  if (gradOutput->device != input->device)
    return mt__error(MT_ERR_DEVICE, OP ": gradOutput is on another device than the input");
  if (gradOutput->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": gradOutput has dtype %s but the input has dtype %s",
                     mt_dtype_name(gradOutput->dtype), mt_dtype_name(input->dtype));
  int same = gradOutput->ndim == input->ndim;
  for (int d = 0; same && d < input->ndim; d++) same = gradOutput->sizes[d] == input->sizes[d];
  if (!same)
    return mt__error(MT_ERR_SHAPE, OP ": gradOutput of size %s does not match the input of size %s",
                     mt__shape_str(gradOutput, b1, sizeof b1), mt__shape_str(input, b2, sizeof b2));
  MT_TRY(bn_check_vec(weight, input, C, "weight"));
  MT_TRY(bn_check_vec(gradWeight, input, C, "gradWeight"));
  MT_TRY(bn_check_vec(gradBias, input, C, "gradBias"));
  if (train) {
    if (!save_mean || !save_invstd) return mt__error(MT_ERR_ARG, OP ": backward in training needs the saved statistics (run forward first)");
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean"));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd"));
  } else {
    if (!running_mean || !running_var) return mt__error(MT_ERR_ARG, OP ": evaluation needs running_mean and running_var");
    MT_TRY(bn_check_vec(running_mean, input, C, "running_mean"));
    MT_TRY(bn_check_vec(running_var, input, C, "running_var"));
  }
  if (gradInput) MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, OP));
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *gc = NULL, *rc = NULL;
  mt_status st = mt__nn_contig(input, &xc, OP);
  if (st == MT_OK) st = mt__nn_contig(gradOutput, &gc, OP);
  if (st == MT_OK && gradInput) st = mt__nn_result_buf(gradInput, gradOutput, input, 0, &rc, OP);
  if (st == MT_OK)
    st = be->batchnorm_backward(rc, gradWeight, gradBias, xc, gc, weight, running_mean, running_var, save_mean,
                                save_invstd, train, scale, eps, N, C, S);
  st = mt__nn_result_done(gradInput, rc, st);
  if (xc) mt_tensor_release(xc);
  if (gc) mt_tensor_release(gc);
  return st;
}
