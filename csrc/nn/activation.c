/* activation.c: pointwise activations for nn (ReLU, LeakyReLU, Sigmoid, Tanh, ELU), forward and
 * backward, any float dtype. Forward may run in place (out == input). Backward reads the input
 * for ReLU/LeakyReLU and the output for Sigmoid/Tanh/ELU (what Torch7 keeps), so an in-place ReLU
 * can pass its output: its sign matches the input's. Checks here; the loops are the backends'. */
#include <stdio.h>
#include "nn_common.h"

static const char *act_name(int kind) {
  switch (kind) {
    case MT_ACT_RELU: return "ReLU";
    case MT_ACT_LEAKY_RELU: return "LeakyReLU";
    case MT_ACT_SIGMOID: return "Sigmoid";
    case MT_ACT_TANH: return "Tanh";
    case MT_ACT_ELU: return "ELU";
    default: return "activation";
  }
}

mt_status mt_nn_activation_forward(mt_tensor *out, const mt_tensor *input, int kind, double alpha) {
  if (kind < MT_ACT_RELU || kind > MT_ACT_ELU) return mt__error(MT_ERR_ARG, "activation: unknown kind %d", kind);
  char nm[32];
  snprintf(nm, sizeof nm, "nn.%s", act_name(kind));
  MT_CHECK_TENSOR(input, act_name(kind), "input");
  MT_TRY(mt__nn_check_float(input, nm, "input"));
  MT_CHECK_TENSOR(out, act_name(kind), "output");
  int cl = mt__nn_cl(input); /* the loops are elementwise: any layout shared by x and y will do */
  if (out != input) {
    MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, nm));
    mt__nn_follow(out, cl);
  }
  const mt_backend *be = mt__nn_backend(input, nm);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *yc = NULL;
  MT_TRY(mt__nn_dense(input, cl, &xc, nm));
  mt_status st = mt__nn_result_dense(out, cl, 0, &yc, nm);
  if (st == MT_OK) {
    if (mt__numel(input) > 0) st = be->activation_forward(yc, xc, kind, alpha);
    st = mt__nn_result_done(out, yc, st);
  }
  mt_tensor_release(xc);
  return st;
}

mt_status mt_nn_activation_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *saved, int kind,
                                    double alpha) {
  if (kind < MT_ACT_RELU || kind > MT_ACT_ELU) return mt__error(MT_ERR_ARG, "activation: unknown kind %d", kind);
  const char *what = kind >= MT_ACT_SIGMOID ? "output" : "input";
  char nm[32], b1[64], b2[64];
  snprintf(nm, sizeof nm, "nn.%s", act_name(kind));
  MT_CHECK_TENSOR(gradOutput, act_name(kind), "gradOutput");
  MT_TRY(mt__nn_check_float(gradOutput, nm, "gradOutput"));
  MT_CHECK_TENSOR(saved, act_name(kind), what);
  MT_TRY(mt__nn_check_float(saved, nm, what));
  MT_CHECK_TENSOR(gradInput, act_name(kind), "gradInput");
  if (gradOutput->device != saved->device)
    return mt__error(MT_ERR_DEVICE, "%s: gradOutput is on %s but %s is on %s", nm,
                     mt__device_str(gradOutput->device, b1, sizeof b1), what,
                     mt__device_str(saved->device, b2, sizeof b2));
  if (gradOutput->dtype != saved->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: gradOutput has dtype %s but %s has dtype %s", nm,
                     mt_dtype_name(gradOutput->dtype), what, mt_dtype_name(saved->dtype));
  int same = gradOutput->ndim == saved->ndim;
  for (int d = 0; same && d < saved->ndim; d++) same = gradOutput->sizes[d] == saved->sizes[d];
  if (!same)
    return mt__error(MT_ERR_SHAPE, "%s: gradOutput of size %s does not match %s of size %s", nm,
                     mt__shape_str(gradOutput, b1, sizeof b1), what, mt__shape_str(saved, b2, sizeof b2));
  /* gradInput follows the input's layout, or gradOutput's when it is gradOutput (in place) */
  int cl = mt__nn_cl(gradInput == gradOutput ? gradOutput : saved);
  if (gradInput != gradOutput && gradInput != saved) {
    MT_TRY(mt__prepare_out(gradInput, saved->dtype, saved->device, saved->ndim, saved->sizes, nm));
    mt__nn_follow(gradInput, cl);
  }
  const mt_backend *be = mt__nn_backend(saved, nm);
  if (!be) return mt_last_status();
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* g, saved, r */
  mt_status st = mt__nn_dense(gradOutput, cl, &t[0], nm);
  if (st == MT_OK) st = mt__nn_dense(saved, cl, &t[1], nm);
  if (st == MT_OK) st = mt__nn_result_dense(gradInput, cl, 0, &t[2], nm);
  if (st == MT_OK) {
    if (mt__numel(saved) > 0) st = be->activation_backward(t[2], t[0], t[1], kind, alpha);
    st = mt__nn_result_done(gradInput, t[2], st);
    t[2] = NULL;
  }
  mt__nn_release(t, 3);
  return st;
}
