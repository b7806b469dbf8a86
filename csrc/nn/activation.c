/* activation.c: pointwise activations for nn (ReLU, LeakyReLU, Sigmoid, Tanh), forward and
 * backward, any float dtype on the CPU. Forward may run in place (out == input). Backward
 * reads the input for ReLU/LeakyReLU and the output for Sigmoid/Tanh (what Torch7 keeps), so an
 * in-place ReLU can pass its output: its sign matches the input's. */
#include <math.h>
#include <stdio.h>
#include "../core/tensor.h"
#include "../core/error.h"
#include "../core/dtype.h"
#include "../cpu/cpu.h"
#include "nn_cuda.h"

static const char *act_name(int kind) {
  switch (kind) {
  case MT_ACT_RELU: return "ReLU";
  case MT_ACT_LEAKY_RELU: return "LeakyReLU";
  case MT_ACT_SIGMOID: return "Sigmoid";
  case MT_ACT_TANH: return "Tanh";
  default: return "activation";
  }
}

/* a contiguous copy of t (or t itself, retained) */
static mt_status act_contig(const mt_tensor *t, mt_tensor **out, const char *op) {
  if (mt__is_contiguous(t)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

static mt_status act_check(const mt_tensor *t, const char *what, const char *op) {
  MT_CHECK_TENSOR(t, op, what);
  if (!mt_dtype_is_floating(t->dtype))
    return mt__error(MT_ERR_DTYPE, "nn.%s: %s has dtype %s, expected a floating dtype", op, what,
                     mt_dtype_name(t->dtype));
  return MT_OK;
}

/* float math for float compute types (the branch folds at compile time) */
#define MT_EXP(CT, x) (sizeof(CT) == 4 ? (CT)expf((float)(x)) : (CT)exp((double)(x)))
#define MT_TANH(CT, x) (sizeof(CT) == 4 ? (CT)tanhf((float)(x)) : (CT)tanh((double)(x)))

#define FWD_LOOP(N, TT, CT, EXPR)                                               \
  {                                                                             \
    const TT *x = (const TT *)xp;                                               \
    TT *y = (TT *)yp;                                                           \
    _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)")                     \
    for (int64_t i = 0; i < n; i++) {                                           \
      CT v = mt_ld_##N(x + i);                                                  \
      mt_st_##N(y + i, (EXPR));                                                 \
    }                                                                           \
  }

#define FWD_CASE(E, N, TT, CT)                                                              \
  case E:                                                                                   \
    switch (kind) {                                                                         \
    case MT_ACT_RELU: FWD_LOOP(N, TT, CT, v > 0 ? v : (CT)0) break;                        \
    case MT_ACT_LEAKY_RELU: FWD_LOOP(N, TT, CT, v > 0 ? v : (CT)(v * a)) break;            \
    case MT_ACT_SIGMOID: FWD_LOOP(N, TT, CT, (CT)1 / ((CT)1 + MT_EXP(CT, -v))) break;         \
    default: FWD_LOOP(N, TT, CT, MT_TANH(CT, v)) break;                                      \
    }                                                                                       \
    break;

mt_status mt_nn_activation_forward(mt_tensor *out, const mt_tensor *input, int kind, double alpha) {
  if (kind < MT_ACT_RELU || kind > MT_ACT_TANH) return mt__error(MT_ERR_ARG, "activation: unknown kind %d", kind);
  const char *op = act_name(kind);
  MT_TRY(act_check(input, "input", op));
  MT_CHECK_TENSOR(out, op, "output");
  char nm[32];
  snprintf(nm, sizeof nm, "nn.%s", op);
  if (out != input) MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, nm));
  mt_tensor *xc = NULL, *yc = NULL;
  MT_TRY(act_contig(input, &xc, nm));
  mt_status st = MT_OK;
  if (mt__is_contiguous(out)) {
    yc = mt__tensor_alias(out);
  } else {
    st = mt__tensor_empty(&yc, out->dtype, out->device, out->ndim, out->sizes);
  }
  if (st == MT_OK && !yc) st = mt__error(MT_ERR_MEMORY, "%s: out of memory", nm);
  if (st == MT_OK) {
    int64_t n = mt__numel(input);
    const void *xp = mt__data(xc);
    void *yp = mt__data(yc);
    double a = alpha;
    (void)a;
    if (n > 0 && input->device != MT_CPU) {
      st = mt__cuda_nn_activation_forward(yc, xc, kind, alpha);
    } else if (n > 0) {
      switch (input->dtype) {
        MT_FLOAT_DTYPE_LIST(FWD_CASE)
      default: break;
      }
    }
    if (st == MT_OK && mt__data(yc) != mt__data(out)) st = mt_copy(out, yc);
  }
  mt_tensor_release(xc);
  if (yc) mt_tensor_release(yc);
  return st;
}

#define BWD_LOOP(N, TT, CT, EXPR)                                               \
  {                                                                             \
    const TT *g = (const TT *)gp;                                               \
    const TT *z = (const TT *)zp;                                               \
    TT *r = (TT *)rp;                                                           \
    _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)")                     \
    for (int64_t i = 0; i < n; i++) {                                           \
      CT go = mt_ld_##N(g + i), v = mt_ld_##N(z + i);                           \
      mt_st_##N(r + i, (EXPR));                                                 \
    }                                                                           \
  }

#define BWD_CASE(E, N, TT, CT)                                                          \
  case E:                                                                               \
    switch (kind) {                                                                     \
    case MT_ACT_RELU: BWD_LOOP(N, TT, CT, v > 0 ? go : (CT)0) break;                   \
    case MT_ACT_LEAKY_RELU: BWD_LOOP(N, TT, CT, v > 0 ? go : (CT)(go * a)) break;      \
    case MT_ACT_SIGMOID: BWD_LOOP(N, TT, CT, go * v * (1 - v)) break;                  \
    default: BWD_LOOP(N, TT, CT, go * (1 - v * v)) break;                              \
    }                                                                                   \
    break;

mt_status mt_nn_activation_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *saved,
                                    int kind, double alpha) {
  if (kind < MT_ACT_RELU || kind > MT_ACT_TANH) return mt__error(MT_ERR_ARG, "activation: unknown kind %d", kind);
  const char *op = act_name(kind);
  const char *what = kind >= MT_ACT_SIGMOID ? "output" : "input";
  MT_TRY(act_check(gradOutput, "gradOutput", op));
  MT_TRY(act_check(saved, what, op));
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  char nm[32], b1[64], b2[64];
  snprintf(nm, sizeof nm, "nn.%s", op);
  if (gradOutput->device != saved->device)
    return mt__error(MT_ERR_DEVICE, "%s: gradOutput is on %s but %s is on %s", nm, mt__device_str(gradOutput->device, b1, sizeof b1),
                     what, mt__device_str(saved->device, b2, sizeof b2));
  if (gradOutput->dtype != saved->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: gradOutput has dtype %s but %s has dtype %s", nm,
                     mt_dtype_name(gradOutput->dtype), what, mt_dtype_name(saved->dtype));
  if (mt__numel(gradOutput) != mt__numel(saved) || gradOutput->ndim != saved->ndim)
    return mt__error(MT_ERR_SHAPE, "%s: gradOutput of size %s does not match %s of size %s", nm,
                     mt__shape_str(gradOutput, b1, sizeof b1), what, mt__shape_str(saved, b2, sizeof b2));
  for (int d = 0; d < saved->ndim; d++)
    if (gradOutput->sizes[d] != saved->sizes[d])
      return mt__error(MT_ERR_SHAPE, "%s: gradOutput of size %s does not match %s of size %s", nm,
                       mt__shape_str(gradOutput, b1, sizeof b1), what, mt__shape_str(saved, b2, sizeof b2));
  if (gradInput != gradOutput && gradInput != saved)
    MT_TRY(mt__prepare_out(gradInput, saved->dtype, saved->device, saved->ndim, saved->sizes, nm));
  mt_tensor *gc = NULL, *zc = NULL, *rc = NULL;
  mt_status st = act_contig(gradOutput, &gc, nm);
  if (st == MT_OK) st = act_contig(saved, &zc, nm);
  if (st == MT_OK) {
    if (mt__is_contiguous(gradInput)) rc = mt__tensor_alias(gradInput);
    else st = mt__tensor_empty(&rc, gradInput->dtype, gradInput->device, gradInput->ndim, gradInput->sizes);
    if (st == MT_OK && !rc) st = mt__error(MT_ERR_MEMORY, "%s: out of memory", nm);
  }
  if (st == MT_OK) {
    int64_t n = mt__numel(saved);
    const void *gp = mt__data(gc), *zp = mt__data(zc);
    void *rp = mt__data(rc);
    double a = alpha;
    (void)a;
    if (n > 0 && saved->device != MT_CPU) {
      st = mt__cuda_nn_activation_backward(rc, gc, zc, kind, alpha);
    } else if (n > 0) {
      switch (saved->dtype) {
        MT_FLOAT_DTYPE_LIST(BWD_CASE)
      default: break;
      }
    }
    if (st == MT_OK && mt__data(rc) != mt__data(gradInput)) st = mt_copy(gradInput, rc);
  }
  if (gc) mt_tensor_release(gc);
  if (zc) mt_tensor_release(zc);
  if (rc) mt_tensor_release(rc);
  return st;
}
