/* conv.c: 2-d convolution (NCHW, floating dtypes, groups, stride, padding, dilation): the
 * checks shared by every device and the output sizes; the math is the backends' (CPU im2col +
 * GEMM or Winograd in csrc/cpu/nn_conv.c, cuDNN in csrc/cuda/cudnn_conv.c). */
#include "nn_common.h"

#define OP "SpatialConvolution"

/* Checks shared by the three entry points: dtypes, devices, 4-d shapes, channel counts and a
 * positive output size. Fills g from the input and weight. */
static mt_status conv_check(mt_conv_geom *g, const mt_tensor *input, const mt_tensor *weight, int sW, int sH, int pW,
                            int pH, int dW, int dH, int groups) {
  char b1[64], b2[64];
  MT_CHECK_TENSOR(input, OP, "input");
  MT_CHECK_TENSOR(weight, OP, "weight");
  if (input->device != weight->device)
    return mt__error(MT_ERR_DEVICE, OP ": weight is on %s but input is on %s",
                     mt__device_str(weight->device, b1, sizeof b1), mt__device_str(input->device, b2, sizeof b2));
  if (!mt_dtype_is_floating(input->dtype))
    return mt__error(MT_ERR_DTYPE, OP ": input has dtype %s, expected a floating dtype", mt_dtype_name(input->dtype));
  if (weight->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": weight has dtype %s but input has %s", mt_dtype_name(weight->dtype),
                     mt_dtype_name(input->dtype));
  if (input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, OP ": expected a 4-d input (batch x channels x height x width), got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  if (weight->ndim != 4)
    return mt__error(MT_ERR_SHAPE, OP ": expected a 4-d weight (nOut x nIn/groups x kH x kW), got size %s",
                     mt__shape_str(weight, b1, sizeof b1));
  if (sW < 1 || sH < 1) return mt__error(MT_ERR_ARG, OP ": stride %dx%d must be positive", sW, sH);
  if (dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, OP ": dilation %dx%d must be positive", dW, dH);
  if (pW < 0 || pH < 0) return mt__error(MT_ERR_ARG, OP ": padding %dx%d must not be negative", pW, pH);
  if (groups < 1) return mt__error(MT_ERR_ARG, OP ": groups %d must be positive", groups);
  g->N = input->sizes[0], g->C = input->sizes[1], g->H = input->sizes[2], g->W = input->sizes[3];
  g->O = weight->sizes[0], g->Cg = weight->sizes[1], g->kH = weight->sizes[2], g->kW = weight->sizes[3];
  g->sW = sW, g->sH = sH, g->pW = pW, g->pH = pH, g->dW = dW, g->dH = dH, g->groups = groups;
  if (g->O % groups)
    return mt__error(MT_ERR_SHAPE, OP ": %lld output planes are not divisible by %d groups", (long long)g->O, groups);
  if (g->C != g->Cg * groups)
    return mt__error(MT_ERR_SHAPE, OP ": input has %lld channels, weight expects %lld (weight %s, %d groups)",
                     (long long)g->C, (long long)(g->Cg * groups), mt__shape_str(weight, b1, sizeof b1), groups);
  if (g->kH < 1 || g->kW < 1 || g->O < 1)
    return mt__error(MT_ERR_SHAPE, OP ": empty weight of size %s", mt__shape_str(weight, b1, sizeof b1));
  int64_t ekH = g->dH * (g->kH - 1) + 1, ekW = g->dW * (g->kW - 1) + 1;
  g->oH = (g->H + 2 * g->pH - ekH) / g->sH + 1;
  g->oW = (g->W + 2 * g->pW - ekW) / g->sW + 1;
  if (g->H + 2 * g->pH < ekH || g->W + 2 * g->pW < ekW || g->oH < 1 || g->oW < 1)
    return mt__error(MT_ERR_SHAPE,
                     OP
                     ": input image %lldx%lld (padded %lldx%lld) is smaller than the kernel %lldx%lld "
                     "(dilated %lldx%lld); input size %s",
                     (long long)g->H, (long long)g->W, (long long)(g->H + 2 * g->pH), (long long)(g->W + 2 * g->pW),
                     (long long)g->kH, (long long)g->kW, (long long)ekH, (long long)ekW,
                     mt__shape_str(input, b2, sizeof b2));
  if (g->oH * g->oW > INT32_MAX || g->Cg * g->kH * g->kW > INT32_MAX)
    return mt__error(MT_ERR_SHAPE, OP ": input %s is too large for a BLAS call", mt__shape_str(input, b1, sizeof b1));
  g->pointwise = g->kH == 1 && g->kW == 1 && sW == 1 && sH == 1 && pW == 0 && pH == 0;
  return MT_OK;
}

/* Channels-last. On every device a channels-last input gives a channels-last output and
 * gradInput (conv_result_layout). cuDNN reads and writes NHWC tensors (a 4-d N x C x H x W
 * tensor with strides H*W*C, 1, W*C, C) as they are, so the CUDA backend
 * (csrc/cuda/cudnn_conv.c) takes them without a copy to NCHW; the CPU backend's im2col and
 * Winograd want NCHW, so on the CPU channels-last operands are copied to contiguous ones and
 * results computed in a contiguous buffer copied back. These two helpers stand in for
 * mt__nn_contig / mt__nn_result_buf in the three entry points below. */
static int cl_cuda(const mt_tensor *t) { return t->device >= 0 && mt__is_channels_last(t); }
static mt_status conv_operand(const mt_tensor *t, mt_tensor **out) {
  if (!cl_cuda(t)) return mt__nn_contig(t, out, OP);
  *out = mt__tensor_alias(t);
  return *out ? MT_OK : mt__error(MT_ERR_MEMORY, OP ": out of memory");
}
static mt_status conv_result(mt_tensor *out, int keep_values, mt_tensor **buf) {
  if (!cl_cuda(out)) return mt__nn_result_buf(out, NULL, NULL, keep_values, buf, OP);
  *buf = mt__tensor_alias(out);
  return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, OP ": out of memory");
}
/* A result (output, gradInput) follows its input's layout: a dense result of the right size,
 * as mt__prepare_out leaves it, is restrided channels-last (or back to NCHW) in place. */
static void conv_result_layout(mt_tensor *out, const mt_tensor *input) { mt__nn_follow(out, mt__nn_cl(input)); }

mt_status mt_conv2d_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight, const mt_tensor *bias,
                            int strideW, int strideH, int padW, int padH, int dilationW, int dilationH, int groups) {
  mt_conv_geom g;
  char b1[64];
  MT_TRY(conv_check(&g, input, weight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  if (bias) {
    MT_TRY(mt__nn_check_same(bias, input, OP, "bias"));
    if (bias->ndim != 1 || bias->sizes[0] != g.O)
      return mt__error(MT_ERR_SHAPE, OP ": bias has size %s, expected %lld", mt__shape_str(bias, b1, sizeof b1),
                       (long long)g.O);
  }
  MT_CHECK_TENSOR(out, OP, "output");
  int64_t osz[4] = {g.N, g.O, g.oH, g.oW};
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, 4, osz, OP));
  conv_result_layout(out, input);
  if (g.N == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, w, b, y */
  mt_status st = conv_operand(input, &t[0]);
  if (st == MT_OK) st = conv_operand(weight, &t[1]);
  if (st == MT_OK && bias) st = mt__nn_contig(bias, &t[2], OP);
  if (st == MT_OK) st = conv_result(out, 0, &t[3]);
  if (st == MT_OK) {
    st = be->conv2d_forward(t[3], t[0], t[1], t[2], &g);
    st = mt__nn_result_done(out, t[3], st);
    t[3] = NULL;
  }
  mt__nn_release(t, 4);
  return st;
}

static mt_status check_grad_output(const mt_tensor *gradOutput, const mt_tensor *input, const mt_conv_geom *g) {
  char b1[64];
  MT_TRY(mt__nn_check_same(gradOutput, input, OP, "gradOutput"));
  if (gradOutput->ndim != 4 || gradOutput->sizes[0] != g->N || gradOutput->sizes[1] != g->O ||
      gradOutput->sizes[2] != g->oH || gradOutput->sizes[3] != g->oW)
    return mt__error(MT_ERR_SHAPE, OP ": gradOutput has size %s, expected %lldx%lldx%lldx%lld",
                     mt__shape_str(gradOutput, b1, sizeof b1), (long long)g->N, (long long)g->O, (long long)g->oH,
                     (long long)g->oW);
  return MT_OK;
}

mt_status mt_conv2d_backward_input(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput,
                                   const mt_tensor *weight, int strideW, int strideH, int padW, int padH, int dilationW,
                                   int dilationH, int groups) {
  mt_conv_geom g;
  MT_TRY(conv_check(&g, input, weight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  MT_TRY(check_grad_output(gradOutput, input, &g));
  MT_CHECK_TENSOR(gradInput, OP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, 4, input->sizes, OP));
  conv_result_layout(gradInput, input);
  if (g.N == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* dy, w, dx */
  mt_status st = conv_operand(gradOutput, &t[0]);
  if (st == MT_OK) st = conv_operand(weight, &t[1]);
  if (st == MT_OK) st = conv_result(gradInput, 0, &t[2]);
  if (st == MT_OK) {
    st = be->conv2d_backward_input(t[2], t[0], t[1], &g);
    st = mt__nn_result_done(gradInput, t[2], st);
    t[2] = NULL;
  }
  mt__nn_release(t, 3);
  return st;
}

mt_status mt_conv2d_backward_params(mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *input,
                                    const mt_tensor *gradOutput, double scale, int strideW, int strideH, int padW,
                                    int padH, int dilationW, int dilationH, int groups) {
  mt_conv_geom g;
  char b1[64], b2[64];
  MT_CHECK_TENSOR(gradWeight, OP, "gradWeight");
  MT_TRY(conv_check(&g, input, gradWeight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  MT_TRY(check_grad_output(gradOutput, input, &g));
  if (gradBias) {
    MT_TRY(mt__nn_check_same(gradBias, input, OP, "gradBias"));
    if (gradBias->ndim != 1 || gradBias->sizes[0] != g.O)
      return mt__error(MT_ERR_SHAPE, OP ": gradBias has size %s, expected %lld (gradWeight %s)",
                       mt__shape_str(gradBias, b1, sizeof b1), (long long)g.O,
                       mt__shape_str(gradWeight, b2, sizeof b2));
  }
  if (g.N == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(input, OP);
  if (!be) return mt_last_status();
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, dy, dw, db */
  mt_status st = conv_operand(input, &t[0]);
  if (st == MT_OK) st = conv_operand(gradOutput, &t[1]);
  if (st == MT_OK) st = conv_result(gradWeight, 1, &t[2]);
  if (st == MT_OK && gradBias) st = mt__nn_result_buf(gradBias, NULL, NULL, 1, &t[3], OP);
  if (st == MT_OK) {
    st = be->conv2d_backward_params(t[2], t[3], t[0], t[1], scale, &g);
    mt_tensor *dw = t[2], *db = t[3];
    t[2] = t[3] = NULL;
    st = mt__nn_result_done(gradWeight, dw, st);
    st = mt__nn_result_done(gradBias, db, st);
  }
  mt__nn_release(t, 4);
  return st;
}
