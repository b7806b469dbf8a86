/* loss.c: softmax / log-softmax along a dimension, class NLL (with class weights and label
 * smoothing, which makes LogSoftMax + NLL PyTorch's cross-entropy), the two fused as
 * cross-entropy, MSE and SmoothL1, for the float dtypes. Checks here (targets and class weights
 * are validated and read on the host); the loops are the backends'. Inputs are made contiguous and seen as outer x D x
 * inner for softmax. */
#include <math.h>
#include <stdlib.h>
#include "../core/dtype.h"
#include "nn_common.h"

static mt_status ls_same_shape(const mt_tensor *a, const mt_tensor *b, const char *op, const char *na, const char *nb) {
  char b1[64], b2[64];
  if (a->device != b->device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but %s is on %s", op, na, mt__device_str(a->device, b1, sizeof b1),
                     nb, mt__device_str(b->device, b2, sizeof b2));
  int same = a->ndim == b->ndim && a->dtype == b->dtype;
  for (int d = 0; same && d < a->ndim; d++) same = a->sizes[d] == b->sizes[d];
  if (a->dtype != b->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but %s has dtype %s", op, na, mt_dtype_name(a->dtype), nb,
                     mt_dtype_name(b->dtype));
  if (!same)
    return mt__error(MT_ERR_SHAPE, "%s: %s of size %s does not match %s of size %s", op, na,
                     mt__shape_str(a, b1, sizeof b1), nb, mt__shape_str(b, b2, sizeof b2));
  return MT_OK;
}

/* ---- softmax ------------------------------------------------------------------------------ */
static void split_dims(const mt_tensor *t, int dim, int64_t *outer, int64_t *D, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int d = 0; d < dim; d++) *outer *= t->sizes[d];
  *D = t->ndim ? t->sizes[dim] : 1;
  for (int d = dim + 1; d < t->ndim; d++) *inner *= t->sizes[d];
}

/* forward and backward alike: dim valid for t, res sized as t, t split around dim, and the
 * backend that runs it */
static mt_status softmax_prepare(const char *op, mt_tensor *res, const mt_tensor *t, int dim, int64_t *outer,
                                 int64_t *D, int64_t *inner, const mt_backend **be) {
  if (dim < 0 || (dim >= t->ndim && !(t->ndim == 0 && dim == 0)))
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a %d-d input", op, dim + 1, t->ndim);
  MT_TRY(mt__prepare_out(res, t->dtype, t->device, t->ndim, t->sizes, op));
  split_dims(t, dim, outer, D, inner);
  *be = mt__nn_backend(t, op);
  return *be ? MT_OK : mt_last_status();
}

mt_status mt_nn_softmax_forward(mt_tensor *out, const mt_tensor *input, int dim, int logsm) {
  const char *op = logsm ? "nn.LogSoftMax" : "nn.SoftMax";
  MT_TRY(mt__nn_check_float(input, op, "input"));
  MT_CHECK_TENSOR(out, op, "output");
  int64_t outer = 0, D = 0, inner = 0; /* set by softmax_prepare */
  const mt_backend *be = NULL;
  MT_TRY(softmax_prepare(op, out, input, dim, &outer, &D, &inner, &be));
  mt_tensor *xc = NULL, *yc = NULL;
  MT_TRY(mt__nn_contig(input, &xc, op));
  mt_status st = mt__nn_result_buf(out, input, NULL, 0, &yc, op);
  if (st == MT_OK && mt__numel(input) > 0) st = be->softmax_forward(yc, xc, outer, D, inner, logsm);
  mt_tensor_release(xc);
  return mt__nn_result_done(out, yc, st);
}

mt_status mt_nn_softmax_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *output, int dim,
                                 int logsm) {
  const char *op = logsm ? "nn.LogSoftMax" : "nn.SoftMax";
  MT_TRY(mt__nn_check_float(output, op, "output"));
  MT_TRY(mt__nn_check_float(gradOutput, op, "gradOutput"));
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  MT_TRY(ls_same_shape(gradOutput, output, op, "gradOutput", "output"));
  int64_t outer = 0, D = 0, inner = 0; /* set by softmax_prepare */
  const mt_backend *be = NULL;
  MT_TRY(softmax_prepare(op, gradInput, output, dim, &outer, &D, &inner, &be));
  mt_tensor *gc = NULL, *yc = NULL, *rc = NULL;
  mt_status st = mt__nn_contig(gradOutput, &gc, op);
  if (st == MT_OK) st = mt__nn_contig(output, &yc, op);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, gradOutput, output, 0, &rc, op);
  if (st == MT_OK && mt__numel(output) > 0) st = be->softmax_backward(rc, gc, yc, outer, D, inner, logsm);
  if (gc) mt_tensor_release(gc);
  if (yc) mt_tensor_release(yc);
  return mt__nn_result_done(gradInput, rc, st);
}

/* ---- class NLL ---------------------------------------------------------------------------- */
static double ld_any(const mt_tensor *t, int64_t i) { /* element i of a contiguous tensor (targets) */
  const char *p = mt__data(t);
  switch (t->dtype) {
    case MT_F32: return ((const float *)p)[i];
    case MT_F64: return ((const double *)p)[i];
    case MT_F16: return mt_half_to_float(((const uint16_t *)p)[i]);
    case MT_BF16: return mt_bf16_to_float(((const uint16_t *)p)[i]);
    case MT_I32: return ((const int32_t *)p)[i];
    case MT_I64: return (double)((const int64_t *)p)[i];
    case MT_I8: return ((const int8_t *)p)[i];
    case MT_I16: return ((const int16_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
  }
}

/* a contiguous CPU copy of t (targets and class weights are validated and read on the host) */
static mt_status host_contig(const mt_tensor *t, mt_tensor **out, const char *op) {
  if (t->device == MT_CPU) return mt__nn_contig(t, out, op);
  MT_TRY(mt__tensor_empty(out, t->dtype, MT_CPU, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

typedef struct nll_geom {
  int64_t N, C;
  mt_tensor *x; /* contiguous input */
  int64_t *t;   /* 0-based targets */
  double *w;    /* class weights (all 1 without weights) */
} nll_geom;

static void nll_free(nll_geom *g) {
  if (g->x) mt_tensor_release(g->x);
  free(g->t);
  free(g->w);
}

/* validate, make the input contiguous, read targets (each checked to lie in base..base+C-1,
 * or equal to *ignore and then stored as -1; ignore may be NULL) and weights into plain arrays
 * so the loops below need no per-element dtype dispatch */
static mt_status nll_prepare(nll_geom *g, const mt_tensor *input, const mt_tensor *target, const mt_tensor *weights,
                             int64_t base, double smoothing, const double *ignore, const char *op) {
  char b1[64], b2[64];
  g->x = NULL, g->t = NULL, g->w = NULL;
  MT_TRY(mt__nn_check_float(input, op, "input"));
  MT_CHECK_TENSOR(target, op, "target");
  if (target->device != input->device)
    return mt__error(MT_ERR_DEVICE, "%s: target is on another device than the input", op);
  if (input->ndim != 1 && input->ndim != 2)
    return mt__error(MT_ERR_SHAPE, "%s: expected an input of size C or N x C, got %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  g->N = input->ndim == 2 ? input->sizes[0] : 1;
  g->C = input->sizes[input->ndim - 1];
  if (mt__numel(target) != g->N || target->ndim > 1)
    return mt__error(MT_ERR_SHAPE, "%s: target of size %s does not match the input of size %s (one class per sample)",
                     op, mt__shape_str(target, b1, sizeof b1), mt__shape_str(input, b2, sizeof b2));
  if (!(smoothing >= 0 && smoothing <= 1))
    return mt__error(MT_ERR_ARG, "%s: label smoothing %g must be between 0 and 1", op, smoothing);
  if (weights) {
    if (weights->dtype != input->dtype || weights->device != input->device)
      return mt__error(MT_ERR_DTYPE, "%s: weights have dtype %s but the input has dtype %s", op,
                       mt_dtype_name(weights->dtype), mt_dtype_name(input->dtype));
    if (mt__numel(weights) != g->C || weights->ndim != 1)
      return mt__error(MT_ERR_SHAPE, "%s: weights of size %s do not match the %lld classes", op,
                       mt__shape_str(weights, b1, sizeof b1), (long long)g->C);
  }
  g->t = malloc((size_t)(g->N ? g->N : 1) * sizeof *g->t);
  g->w = malloc((size_t)(g->C ? g->C : 1) * sizeof *g->w);
  if (!g->t || !g->w) {
    nll_free(g);
    return mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  mt_tensor *tc = NULL, *wc = NULL;
  mt_status st = mt__nn_contig(input, &g->x, op);
  if (st == MT_OK) st = host_contig(target, &tc, op);
  if (st == MT_OK && weights) st = host_contig(weights, &wc, op);
  for (int64_t i = 0; st == MT_OK && i < g->N; i++) {
    double v = ld_any(tc, i);
    if (ignore && v == *ignore) g->t[i] = -1; /* ignored sample: no loss, no weight, no gradient */
    else if (v != floor(v) || v < (double)base || v > (double)(base + g->C - 1))
      st = mt__error(MT_ERR_INDEX, "%s: target %g of sample %lld out of range %lld..%lld", op, v, (long long)(i + base),
                     (long long)base, (long long)(base + g->C - 1));
    else g->t[i] = (int64_t)v - base;
  }
  for (int64_t c = 0; st == MT_OK && c < g->C; c++) g->w[c] = wc ? ld_any(wc, c) : 1.0;
  if (tc) mt_tensor_release(tc);
  if (wc) mt_tensor_release(wc);
  if (st != MT_OK) nll_free(g);
  return st;
}

mt_status mt_nn_class_nll_forward(double *loss, double *total_weight, const mt_tensor *input, const mt_tensor *target,
                                  const mt_tensor *weights, int64_t base, int size_average, double smoothing) {
  if (!loss) return mt__error(MT_ERR_ARG, "nn.ClassNLLCriterion: loss is NULL");
  nll_geom g;
  MT_TRY(nll_prepare(&g, input, target, weights, base, smoothing, NULL, "nn.ClassNLLCriterion"));
  double nll = 0, smooth = 0, tw = 0;
  const mt_backend *be = mt__nn_backend(input, "nn.ClassNLLCriterion");
  mt_status st =
      be ? be->class_nll_forward(&nll, smoothing > 0 ? &smooth : NULL, g.x, g.t, g.w, g.N, g.C) : mt_last_status();
  for (int64_t i = 0; i < g.N; i++) tw += g.w[g.t[i]];
  if (st != MT_OK) {
    nll_free(&g);
    return st;
  }
  double l = (1 - smoothing) * nll + smoothing / (double)g.C * smooth;
  if (size_average) l /= tw;
  *loss = mt__lua_number(l);
  if (total_weight) *total_weight = tw;
  nll_free(&g);
  return MT_OK;
}

mt_status mt_nn_class_nll_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target,
                                   const mt_tensor *weights, int64_t base, int size_average, double smoothing,
                                   double scale) {
  const char *op = "nn.ClassNLLCriterion";
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  nll_geom g;
  MT_TRY(nll_prepare(&g, input, target, weights, base, smoothing, NULL, "nn.ClassNLLCriterion"));
  double tw = 0;
  for (int64_t i = 0; i < g.N; i++) tw += g.w[g.t[i]];
  double norm = scale * (size_average ? 1.0 / tw : 1.0);
  mt_status st = mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, op);
  mt_tensor *rc = NULL;
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, input, NULL, 0, &rc, op);
  const mt_backend *be = st == MT_OK ? mt__nn_backend(input, op) : NULL;
  if (st == MT_OK && !be) st = mt_last_status();
  if (st == MT_OK) st = be->class_nll_backward(rc, g.t, g.w, g.N, g.C, smoothing, norm);
  nll_free(&g);
  return mt__nn_result_done(gradInput, rc, st);
}

/* ---- cross-entropy: log-softmax and class NLL in one op ------------------------------------ */
static double kept_weight(const nll_geom *g) { /* total weight of the samples not ignored, in order */
  double tw = 0;
  for (int64_t i = 0; i < g->N; i++)
    if (g->t[i] >= 0) tw += g->w[g->t[i]];
  return tw;
}

mt_status mt_nn_cross_entropy_forward(double *loss, double *total_weight, mt_tensor *lse, const mt_tensor *input,
                                      const mt_tensor *target, const mt_tensor *weights, int64_t base,
                                      double ignore_index, int size_average, double smoothing) {
  const char *op = "nn.CrossEntropyCriterion";
  if (!loss) return mt__error(MT_ERR_ARG, "%s: loss is NULL", op);
  MT_CHECK_TENSOR(lse, op, "lse");
  nll_geom g;
  MT_TRY(nll_prepare(&g, input, target, weights, base, smoothing, &ignore_index, op));
  int64_t n1 = g.N;
  mt_status st = mt__prepare_out(lse, MT_F64, input->device, 1, &n1, op);
  const mt_backend *be = st == MT_OK ? mt__nn_backend(input, op) : NULL;
  if (st == MT_OK && !be) st = mt_last_status();
  if (st == MT_OK && !mt__is_contiguous(lse)) st = mt__error(MT_ERR_ARG, "%s: lse must be contiguous", op);
  double nll = 0, smooth = 0;
  if (st == MT_OK && g.N * g.C > 0)
    st = be->cross_entropy_forward(&nll, smoothing > 0 ? &smooth : NULL, lse, g.x, g.t, g.w, g.N, g.C);
  if (st == MT_OK) {
    double tw = kept_weight(&g);
    /* the expression of mt_nn_class_nll_forward, so the loss has its bits */
    double l = (1 - smoothing) * nll + smoothing / (double)g.C * smooth;
    if (size_average) l /= tw;
    int64_t kept = 0;
    for (int64_t i = 0; i < g.N; i++) kept += g.t[i] >= 0;
    *loss = kept == 0 && g.N > 0 ? 0.0 : mt__lua_number(l); /* every sample ignored: 0, not 0/0 */
    if (total_weight) *total_weight = tw;
  }
  nll_free(&g);
  return st;
}

mt_status mt_nn_cross_entropy_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *lse,
                                       const mt_tensor *target, const mt_tensor *weights, int64_t base,
                                       double ignore_index, int size_average, double smoothing, double scale) {
  const char *op = "nn.CrossEntropyCriterion";
  char b1[64];
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  MT_CHECK_TENSOR(lse, op, "lse");
  nll_geom g;
  MT_TRY(nll_prepare(&g, input, target, weights, base, smoothing, &ignore_index, op));
  mt_status st = MT_OK;
  if (lse->dtype != MT_F64 || lse->device != input->device || lse->ndim != 1 || lse->sizes[0] != g.N ||
      !mt__is_contiguous(lse))
    st = mt__error(MT_ERR_SHAPE, "%s: lse of size %s does not come from a forward on this input (%lld float64 values)",
                   op, mt__shape_str(lse, b1, sizeof b1), (long long)g.N);
  double tw = kept_weight(&g);
  double norm = scale * (size_average ? 1.0 / tw : 1.0);
  if (st == MT_OK) st = mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, op);
  mt_tensor *rc = NULL;
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, input, NULL, 0, &rc, op);
  const mt_backend *be = st == MT_OK ? mt__nn_backend(input, op) : NULL;
  if (st == MT_OK && !be) st = mt_last_status();
  if (st == MT_OK && g.N * g.C > 0) st = be->cross_entropy_backward(rc, g.x, lse, g.t, g.w, g.N, g.C, smoothing, norm);
  nll_free(&g);
  return mt__nn_result_done(gradInput, rc, st);
}

/* ---- MSE and SmoothL1: a sum over the elements of input - target (same number of them) ---- */
static mt_status pw_forward(double *loss, const mt_tensor *input, const mt_tensor *target, int size_average,
                            int smoothl1) {
  const char *op = smoothl1 ? "nn.SmoothL1Criterion" : "nn.MSECriterion";
  if (!loss) return mt__error(MT_ERR_ARG, "%s: loss is NULL", op);
  MT_TRY(mt__nn_check_float(input, op, "input"));
  MT_TRY(mt__nn_check_float(target, op, "target"));
  if (mt__numel(input) != mt__numel(target) || input->dtype != target->dtype || input->device != target->device)
    MT_TRY(ls_same_shape(input, target, op, "input", "target"));
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *yc = NULL;
  mt_status st = mt__nn_contig(input, &xc, op);
  if (st == MT_OK) st = mt__nn_contig(target, &yc, op);
  if (st == MT_OK) {
    int64_t n = mt__numel(input);
    double acc = 0;
    if (n > 0) st = smoothl1 ? be->smoothl1_forward(&acc, xc, yc) : be->mse_forward(&acc, xc, yc);
    *loss = mt__lua_number(size_average && n > 0 ? acc / (double)n : acc);
  }
  if (xc) mt_tensor_release(xc);
  if (yc) mt_tensor_release(yc);
  return st;
}

static mt_status pw_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target, int size_average,
                             double scale, int smoothl1) {
  const char *op = smoothl1 ? "nn.SmoothL1Criterion" : "nn.MSECriterion";
  MT_TRY(mt__nn_check_float(input, op, "input"));
  MT_TRY(mt__nn_check_float(target, op, "target"));
  MT_CHECK_TENSOR(gradInput, op, "gradInput");
  if (mt__numel(input) != mt__numel(target) || input->dtype != target->dtype || input->device != target->device)
    MT_TRY(ls_same_shape(input, target, op, "input", "target"));
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, op));
  const mt_backend *be = mt__nn_backend(input, op);
  if (!be) return mt_last_status();
  mt_tensor *xc = NULL, *yc = NULL, *rc = NULL;
  mt_status st = mt__nn_contig(input, &xc, op);
  if (st == MT_OK) st = mt__nn_contig(target, &yc, op);
  if (st == MT_OK) st = mt__nn_result_buf(gradInput, input, target, 0, &rc, op);
  if (st == MT_OK) {
    int64_t n = mt__numel(input);
    double k = (smoothl1 ? 1.0 : 2.0) * scale / (size_average && n > 0 ? (double)n : 1.0);
    if (n > 0) st = smoothl1 ? be->smoothl1_backward(rc, xc, yc, k) : be->mse_backward(rc, xc, yc, k);
  }
  if (xc) mt_tensor_release(xc);
  if (yc) mt_tensor_release(yc);
  return mt__nn_result_done(gradInput, rc, st);
}

mt_status mt_nn_mse_forward(double *loss, const mt_tensor *input, const mt_tensor *target, int size_average) {
  return pw_forward(loss, input, target, size_average, 0);
}
mt_status mt_nn_mse_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target, int size_average,
                             double scale) {
  return pw_backward(gradInput, input, target, size_average, scale, 0);
}
mt_status mt_nn_smoothl1_forward(double *loss, const mt_tensor *input, const mt_tensor *target, int size_average) {
  return pw_forward(loss, input, target, size_average, 1);
}
mt_status mt_nn_smoothl1_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target,
                                  int size_average, double scale) {
  return pw_backward(gradInput, input, target, size_average, scale, 1);
}
