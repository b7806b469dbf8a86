/* optim_common.h: argument checks shared by the fused optimizer steps (optim*.c).
 * Every state tensor of a step must be a contiguous tensor on x's device with x's dtype and numel, so a
 * step is a single flat loop over [0, n). */
#ifndef MT_NN_OPTIM_COMMON_H
#define MT_NN_OPTIM_COMMON_H
#include <math.h>
#include "nn_common.h"

/* x must be a contiguous floating tensor */
static inline mt_status mt__optim_check_x(const char *op, const mt_tensor *x) {
  MT_CHECK_TENSOR(x, op, "x");
  if (!mt_dtype_is_floating(x->dtype))
    return mt__error(MT_ERR_DTYPE, "%s: parameters must be floating point, got %s", op, mt_dtype_name(x->dtype));
  if (!mt__is_contiguous(x)) return mt__error(MT_ERR_SHAPE, "%s: parameters must be contiguous", op);
  return MT_OK;
}

/* a companion tensor (gradient, buffer, ...) must match x */
static inline mt_status mt__optim_check_like(const char *op, const char *name, const mt_tensor *x, const mt_tensor *t) {
  char b1[96], b2[96];
  MT_CHECK_TENSOR(t, op, name);
  if (t->device != x->device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but the parameters are on %s", op, name,
                     mt__device_str(t->device, b1, sizeof b1), mt__device_str(x->device, b2, sizeof b2));
  if (t->dtype != x->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s is %s but the parameters are %s", op, name, mt_dtype_name(t->dtype),
                     mt_dtype_name(x->dtype));
  if (mt__numel(t) != mt__numel(x))
    return mt__error(MT_ERR_SHAPE, "%s: %s has %lld elements (%s) but the parameters have %lld (%s)", op, name,
                     (long long)mt__numel(t), mt__shape_str(t, b1, sizeof b1), (long long)mt__numel(x),
                     mt__shape_str(x, b2, sizeof b2));
  if (!mt__is_contiguous(t)) return mt__error(MT_ERR_SHAPE, "%s: %s must be contiguous", op, name);
  return MT_OK;
}

/* The gradient and the mixed-precision extras: dx is floating with x's numel and device and
 * may have another dtype than x (x is then the master copy); grad_scale is finite and > 0;
 * copy, when given, is floating (usually dx's dtype: the model's), has x's numel and device,
 * and is none of x and dx. */
static inline mt_status mt__optim_check_grad(const char *op, const mt_tensor *x, const mt_tensor *dx, double grad_scale,
                                             const mt_tensor *copy) {
  char b1[96], b2[96];
  MT_CHECK_TENSOR(dx, op, "gradient");
  if (!mt_dtype_is_floating(dx->dtype))
    return mt__error(MT_ERR_DTYPE, "%s: gradient must be floating point, got %s", op, mt_dtype_name(dx->dtype));
  if (dx->device != x->device)
    return mt__error(MT_ERR_DEVICE, "%s: gradient is on %s but the parameters are on %s", op,
                     mt__device_str(dx->device, b1, sizeof b1), mt__device_str(x->device, b2, sizeof b2));
  if (mt__numel(dx) != mt__numel(x))
    return mt__error(MT_ERR_SHAPE, "%s: gradient has %lld elements (%s) but the parameters have %lld (%s)", op,
                     (long long)mt__numel(dx), mt__shape_str(dx, b1, sizeof b1), (long long)mt__numel(x),
                     mt__shape_str(x, b2, sizeof b2));
  if (!mt__is_contiguous(dx)) return mt__error(MT_ERR_SHAPE, "%s: gradient must be contiguous", op);
  if (!(grad_scale > 0) || !isfinite(grad_scale))
    return mt__error(MT_ERR_ARG, "%s: gradient scale must be finite and > 0, got %g", op, grad_scale);
  if (copy) {
    MT_CHECK_TENSOR(copy, op, "parameter copy");
    if (!mt_dtype_is_floating(copy->dtype))
      return mt__error(MT_ERR_DTYPE, "%s: parameter copy must be floating point, got %s", op,
                       mt_dtype_name(copy->dtype));
    if (copy->device != x->device)
      return mt__error(MT_ERR_DEVICE, "%s: parameter copy is on %s but the master parameters are on %s", op,
                       mt__device_str(copy->device, b1, sizeof b1), mt__device_str(x->device, b2, sizeof b2));
    if (mt__numel(copy) != mt__numel(x))
      return mt__error(MT_ERR_SHAPE, "%s: parameter copy has %lld elements but the master parameters have %lld", op,
                       (long long)mt__numel(copy), (long long)mt__numel(x));
    if (!mt__is_contiguous(copy)) return mt__error(MT_ERR_SHAPE, "%s: parameter copy must be contiguous", op);
    if (mt__data(copy) == mt__data(x) || mt__data(copy) == mt__data(dx))
      return mt__error(MT_ERR_ARG, "%s: parameter copy shares memory with the %s", op,
                       mt__data(copy) == mt__data(x) ? "master parameters" : "gradient");
  }
  return MT_OK;
}

/* A copy of another dtype than the gradient (a half model whose update reaches the step in
 * float32, from dist.rgc): the CPU pass stores any dtype, but the CUDA kernels write the copy
 * in the gradient's type, so there the step runs without it and the copy is refreshed after. */
static inline mt_tensor *mt__optim_fused_copy(const mt_tensor *x, const mt_tensor *dx, mt_tensor *copy) {
  return copy && copy->dtype != dx->dtype && x->device >= 0 ? NULL : copy;
}
static inline mt_status mt__optim_copy_after(mt_status st, const mt_tensor *x, const mt_tensor *dx, mt_tensor *copy) {
  if (st == MT_OK && copy && !mt__optim_fused_copy(x, dx, copy)) st = mt_copy(copy, x);
  return st;
}

/* Adam's and LAMB's shared arguments: x, its gradient and both moments, betas in [0, 1), and
 * the step count t >= 1 that the bias corrections divide by */
static inline mt_status mt__optim_check_moments(const char *op, const mt_tensor *x, const mt_tensor *dx,
                                                const mt_tensor *m, const mt_tensor *v, double beta1, double beta2,
                                                int64_t t, double grad_scale, const mt_tensor *copy) {
  MT_TRY(mt__optim_check_x(op, x));
  MT_TRY(mt__optim_check_grad(op, x, dx, grad_scale, copy));
  MT_TRY(mt__optim_check_like(op, "first moment", x, m));
  MT_TRY(mt__optim_check_like(op, "second moment", x, v));
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return mt__error(MT_ERR_ARG, "%s: beta1 and beta2 must be in [0, 1), got %g and %g", op, beta1, beta2);
  if (t < 1) return mt__error(MT_ERR_ARG, "%s: step count must be >= 1, got %lld", op, (long long)t);
  return MT_OK;
}

#endif
