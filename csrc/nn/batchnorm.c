/* batchnorm.c: batch normalization over dim 1 of an N x C [x ...] input, any float dtype, alone
 * or fused with a residual add and a ReLU (y = relu(bn(x) + residual), each step rounded to the
 * dtype as the separate modules round it). The input is seen as N x C x S. Checks here; the
 * per-channel loops are the backends'.
 *
 * Per-channel tensors are contiguous size C. Statistics (running_mean/var, save_mean/invstd) and
 * parameters (weight, bias and their gradients) have the input's dtype, or float32 when the input
 * is float16/bfloat16 (PyTorch/cuDNN's mixed-precision batch norm: statistics kept in float32).
 *
 * Layout: a channels-last 4-d input (NHWC strides, mt__is_channels_last) whose companions
 * (residual, gradOutput, output) are channels-last too goes to the backend as it is, with an
 * output restrided channels-last; anything else goes through contiguous NCHW buffers. */
#include "nn_common.h"

static int half_dtype(mt_dtype d) { return d == MT_F16 || d == MT_BF16; }

/* an optional per-channel tensor: NULL, or contiguous, size C, on the input's device, with the
 * input's dtype or (the input half precision) float32 */
static mt_status bn_check_vec(const mt_tensor *v, const mt_tensor *input, int64_t C, const char *name, const char *op) {
  char b1[64];
  if (!v) return MT_OK;
  if (v->device != input->device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on another device than the input", op, name);
  if (v->dtype != input->dtype && !(v->dtype == MT_F32 && half_dtype(input->dtype)))
    return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but the input has dtype %s (expected %s%s)", op, name,
                     mt_dtype_name(v->dtype), mt_dtype_name(input->dtype), mt_dtype_name(input->dtype),
                     half_dtype(input->dtype) ? " or float32" : "");
  if (mt__numel(v) != C || !mt__is_contiguous(v))
    return mt__error(MT_ERR_SHAPE,
                     "%s: %s must be a contiguous tensor of %lld elements (the input's %lld channels), got size %s", op,
                     name, (long long)C, (long long)C, mt__shape_str(v, b1, sizeof b1));
  return MT_OK;
}

static mt_status bn_check_input(const mt_tensor *input, int64_t *N, int64_t *C, int64_t *S, const char *op) {
  char b1[64];
  MT_TRY(mt__nn_check_float(input, op, "input"));
  if (input->ndim < 2)
    return mt__error(MT_ERR_SHAPE, "%s: expected an input with at least 2 dimensions (N x C ...), got size %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  *N = input->sizes[0];
  *C = input->sizes[1];
  *S = 1;
  for (int d = 2; d < input->ndim; d++) *S *= input->sizes[d];
  return MT_OK;
}

/* t (named what) has the input's dtype, device and size */
static mt_status bn_check_like(const mt_tensor *t, const mt_tensor *input, const char *what, const char *op) {
  return mt__nn_check_like(t, input, input->ndim, input->sizes, op, what);
}

static int bn_cl(const mt_tensor *t) { return t->ndim == 4 && mt__is_channels_last(t); }

/* an operand as the backend reads it: an alias (channels-last mode) or a contiguous version */
static mt_status bn_operand(const mt_tensor *t, int cl, mt_tensor **out, const char *op) {
  if (!t) return MT_OK;
  if (!cl) return mt__nn_contig(t, out, op);
  *out = mt__tensor_alias(t);
  return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
}

/* a buffer for the result out in the backend's layout: out itself, or a temporary (out in
 * another layout, or out is an input the backend still reads) that mt__nn_result_done copies */
static mt_status bn_result(mt_tensor *out, int cl, const mt_tensor *avoid1, const mt_tensor *avoid2,
                           const mt_tensor *avoid3, mt_tensor **buf, const char *op) {
  if (!out) return MT_OK;
  if (out != avoid1 && out != avoid2 && out != avoid3 && (cl ? bn_cl(out) : mt__is_contiguous(out))) {
    *buf = mt__tensor_alias(out);
    return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  MT_TRY(mt__tensor_empty(buf, out->dtype, out->device, out->ndim, out->sizes));
  if (cl) mt__channels_last_strides((*buf)->sizes, (*buf)->strides);
  return MT_OK;
}

/* a result of a channels-last input is channels-last: a contiguous result of the right size, as
 * mt__prepare_out leaves it, is restrided over the same elements */
static void bn_result_layout(mt_tensor *out, const mt_tensor *input) {
  if (out && bn_cl(input) && out->ndim == 4 && mt__is_contiguous(out))
    mt__channels_last_strides(out->sizes, out->strides);
}

/* the statistics' dtype for save buffers: kept float32 when the caller made them so */
static mt_dtype bn_save_dtype(const mt_tensor *save, const mt_tensor *input) {
  return save->dtype == MT_F32 && half_dtype(input->dtype) ? MT_F32 : input->dtype;
}

static mt_status bn_forward(const char *op, mt_tensor *out, const mt_tensor *input, const mt_tensor *residual,
                            const mt_tensor *weight, const mt_tensor *bias, mt_tensor *running_mean,
                            mt_tensor *running_var, mt_tensor *save_mean, mt_tensor *save_invstd, int train,
                            double momentum, double eps, int relu) {
  int64_t N = 0, C = 0, S = 1;
  MT_TRY(bn_check_input(input, &N, &C, &S, op));
  MT_CHECK_TENSOR(out, op, "output");
  if (residual) MT_TRY(bn_check_like(residual, input, "residual", op));
  MT_TRY(bn_check_vec(weight, input, C, "weight", op));
  MT_TRY(bn_check_vec(bias, input, C, "bias", op));
  MT_TRY(bn_check_vec(running_mean, input, C, "running_mean", op));
  MT_TRY(bn_check_vec(running_var, input, C, "running_var", op));
  if (!(eps > 0)) return mt__error(MT_ERR_ARG, "%s: eps must be positive, got %g", op, eps);
  if (train) {
    if (N * S < 2)
      return mt__error(MT_ERR_SHAPE,
                       "%s: training needs more than one value per channel, got input of %lld x %lld x %lld", op,
                       (long long)N, (long long)C, (long long)S);
    MT_CHECK_TENSOR(save_mean, op, "save_mean");
    MT_CHECK_TENSOR(save_invstd, op, "save_invstd");
    MT_TRY(mt__prepare_out(save_mean, bn_save_dtype(save_mean, input), input->device, 1, &C, op));
    MT_TRY(mt__prepare_out(save_invstd, bn_save_dtype(save_invstd, input), input->device, 1, &C, op));
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean", op));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd", op));
  } else if (!running_mean || !running_var) {
    return mt__error(MT_ERR_ARG, "%s: evaluation needs running_mean and running_var", op);
  }
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, op));
  bn_result_layout(out, input);
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  int cl = bn_cl(input) && (!residual || bn_cl(residual));
  mt_tensor *xc = NULL, *rc = NULL, *yc = NULL;
  mt_status st = bn_operand(input, cl, &xc, op);
  if (st == MT_OK) st = bn_operand(residual, cl, &rc, op);
  if (st == MT_OK) st = bn_result(out, cl, input, residual, NULL, &yc, op);
  if (st == MT_OK)
    st = be->batchnorm_forward(yc, xc, rc, weight, bias, running_mean, running_var, train ? save_mean : NULL,
                               train ? save_invstd : NULL, train, momentum, eps, relu, N, C, S, cl);
  st = mt__nn_result_done(out, yc, st);
  mt_tensor *tmp[] = {xc, rc};
  mt__nn_release(tmp, 2);
  return st;
}

static mt_status bn_backward(const char *op, mt_tensor *gradInput, mt_tensor *gradResidual, mt_tensor *gradWeight,
                             mt_tensor *gradBias, const mt_tensor *input, const mt_tensor *output,
                             const mt_tensor *gradOutput, const mt_tensor *weight, const mt_tensor *running_mean,
                             const mt_tensor *running_var, const mt_tensor *save_mean, const mt_tensor *save_invstd,
                             int train, double scale, double eps, int relu) {
  int64_t N = 0, C = 0, S = 1;
  MT_TRY(bn_check_input(input, &N, &C, &S, op));
  MT_TRY(bn_check_like(gradOutput, input, "gradOutput", op));
  if (relu) {
    if (!output) return mt__error(MT_ERR_ARG, "%s: the ReLU's backward needs the forward's output", op);
    MT_TRY(bn_check_like(output, input, "output", op));
  }
  MT_TRY(bn_check_vec(weight, input, C, "weight", op));
  MT_TRY(bn_check_vec(gradWeight, input, C, "gradWeight", op));
  MT_TRY(bn_check_vec(gradBias, input, C, "gradBias", op));
  if (train) {
    if (!save_mean || !save_invstd)
      return mt__error(MT_ERR_ARG, "%s: backward in training needs the saved statistics (run forward first)", op);
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean", op));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd", op));
  } else {
    if (!running_mean || !running_var)
      return mt__error(MT_ERR_ARG, "%s: evaluation needs running_mean and running_var", op);
    MT_TRY(bn_check_vec(running_mean, input, C, "running_mean", op));
    MT_TRY(bn_check_vec(running_var, input, C, "running_var", op));
  }
  if (gradInput) {
    MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, op));
    bn_result_layout(gradInput, input);
  }
  if (gradResidual) {
    MT_TRY(mt__prepare_out(gradResidual, input->dtype, input->device, input->ndim, input->sizes, op));
    bn_result_layout(gradResidual, input);
  }
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  const mt_tensor *yv = relu ? output : NULL;
  int cl = bn_cl(input) && bn_cl(gradOutput) && (!yv || bn_cl(yv));
  mt_tensor *xc = NULL, *gc = NULL, *yc = NULL, *rc = NULL, *grc = NULL;
  mt_status st = bn_operand(input, cl, &xc, op);
  if (st == MT_OK) st = bn_operand(gradOutput, cl, &gc, op);
  if (st == MT_OK) st = bn_operand(yv, cl, &yc, op);
  /* results never share the inputs' memory (the backend reads them after it starts writing),
   * except gradResidual = gradOutput: each of its elements is read before it is written */
  if (st == MT_OK) st = bn_result(gradInput, cl, input, yv, gradOutput, &rc, op);
  if (st == MT_OK) st = bn_result(gradResidual, cl, input, yv, gradInput, &grc, op);
  if (st == MT_OK)
    st = be->batchnorm_backward(rc, grc, gradWeight, gradBias, xc, gc, yc, weight, running_mean, running_var, save_mean,
                                save_invstd, train, scale, eps, N, C, S, cl);
  st = mt__nn_result_done(gradInput, rc, st);
  st = mt__nn_result_done(gradResidual, grc, st);
  mt_tensor *tmp[] = {xc, gc, yc};
  mt__nn_release(tmp, 3);
  return st;
}

mt_status mt_nn_batchnorm_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight,
                                  const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                  mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                  double eps) {
  return bn_forward("nn.BatchNormalization", out, input, NULL, weight, bias, running_mean, running_var, save_mean,
                    save_invstd, train, momentum, eps, 0);
}

mt_status mt_nn_batchnorm_backward(mt_tensor *gradInput, mt_tensor *gradWeight, mt_tensor *gradBias,
                                   const mt_tensor *input, const mt_tensor *gradOutput, const mt_tensor *weight,
                                   const mt_tensor *running_mean, const mt_tensor *running_var,
                                   const mt_tensor *save_mean, const mt_tensor *save_invstd, int train, double scale,
                                   double eps) {
  return bn_backward("nn.BatchNormalization", gradInput, NULL, gradWeight, gradBias, input, NULL, gradOutput, weight,
                     running_mean, running_var, save_mean, save_invstd, train, scale, eps, 0);
}

static const char *act_op(const mt_tensor *residual, int relu) {
  return residual ? (relu ? "nn.BatchNormAddReLU" : "nn.BatchNormAdd")
                  : (relu ? "nn.BatchNormReLU" : "nn.BatchNormalization");
}

mt_status mt_nn_batchnorm_act_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *residual,
                                      const mt_tensor *weight, const mt_tensor *bias, mt_tensor *running_mean,
                                      mt_tensor *running_var, mt_tensor *save_mean, mt_tensor *save_invstd, int train,
                                      double momentum, double eps, int relu) {
  return bn_forward(act_op(residual, relu), out, input, residual, weight, bias, running_mean, running_var, save_mean,
                    save_invstd, train, momentum, eps, relu != 0);
}

mt_status mt_nn_batchnorm_act_backward(mt_tensor *gradInput, mt_tensor *gradResidual, mt_tensor *gradWeight,
                                       mt_tensor *gradBias, const mt_tensor *input, const mt_tensor *output,
                                       const mt_tensor *gradOutput, const mt_tensor *weight,
                                       const mt_tensor *running_mean, const mt_tensor *running_var,
                                       const mt_tensor *save_mean, const mt_tensor *save_invstd, int train,
                                       double scale, double eps, int relu) {
  return bn_backward(act_op(gradResidual, relu), gradInput, gradResidual, gradWeight, gradBias, input, output,
                     gradOutput, weight, running_mean, running_var, save_mean, save_invstd, train, scale, eps,
                     relu != 0);
}
