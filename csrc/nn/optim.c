/* optim.c: fused SGD and Adam/AdamW steps (the loops are the backends'). The learning rate
 * arrives already decayed (learningRateDecay and schedules live in Lua); Adam's bias
 * corrections are folded into scalars here so every backend computes the same formula. */
#include <math.h>
#include "optim_common.h"

mt_status mt_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs, const mt_tensor *wds,
                      double lr, double momentum, double dampening, double weight_decay, int nesterov, int first,
                      double grad_scale, mt_tensor *copy) {
  const char *op = "sgd_step";
  MT_TRY(mt__optim_check_x(op, x));
  MT_TRY(mt__optim_check_grad(op, x, dx, grad_scale, copy));
  if (momentum < 0) return mt__error(MT_ERR_ARG, "%s: momentum must be >= 0, got %g", op, momentum);
  if (nesterov && (momentum <= 0 || dampening != 0))
    return mt__error(MT_ERR_ARG,
                     "%s: Nesterov momentum requires a momentum > 0 and zero dampening (got momentum %g, dampening %g)",
                     op, momentum, dampening);
  if (momentum != 0) MT_TRY(mt__optim_check_like(op, "momentum buffer", x, buf));
  if (lrs) MT_TRY(mt__optim_check_like(op, "learningRates", x, lrs));
  if (wds) MT_TRY(mt__optim_check_like(op, "weightDecays", x, wds));
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(x, op);
  if (!be) return mt_last_status();
  mt_tensor *fused = mt__optim_fused_copy(x, dx, copy);
  mt_status st = be->sgd_step(x, dx, momentum != 0 ? buf : NULL, lrs, wds, lr, momentum, dampening, weight_decay,
                              nesterov, first, grad_scale, fused);
  return mt__optim_copy_after(st, x, dx, copy);
}

mt_status mt_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double lr, double beta1,
                       double beta2, double eps, double weight_decay, int64_t t, int decoupled, double grad_scale,
                       mt_tensor *copy) {
  const char *op = decoupled ? "adamw_step" : "adam_step";
  MT_TRY(mt__optim_check_moments(op, x, dx, m, v, beta1, beta2, t, grad_scale, copy));
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  double bc1 = 1 - pow(beta1, (double)t), bc2 = 1 - pow(beta2, (double)t);
  /* Torch7's Adam puts eps outside the bias correction of v; AdamW (like PyTorch) inside */
  double step = decoupled ? lr / bc1 : lr * sqrt(bc2) / bc1;
  double inv_sqrt_bc2 = decoupled ? 1 / sqrt(bc2) : 1;
  double wd_l2 = decoupled ? 0 : weight_decay, decay = decoupled ? 1 - lr * weight_decay : 1;
  const mt_backend *be = mt__nn_backend(x, op);
  if (!be) return mt_last_status();
  mt_tensor *fused = mt__optim_fused_copy(x, dx, copy);
  mt_status st = be->adam_step(x, dx, m, v, beta1, beta2, eps, wd_l2, decay, step, inv_sqrt_bc2, grad_scale, fused);
  return mt__optim_copy_after(st, x, dx, copy);
}

mt_status mt_grad_check(const mt_tensor *g, int64_t *nonfinite, double *sumsq) {
  const char *op = "grad_check";
  if (!nonfinite || !sumsq) return mt__error(MT_ERR_ARG, "%s: result pointers are NULL", op);
  *nonfinite = 0;
  *sumsq = 0;
  MT_TRY(mt__nn_check_float(g, op, "gradient"));
  if (mt__numel(g) == 0) return MT_OK;
  const mt_backend *be = mt__nn_backend(g, op);
  if (!be) return mt_last_status();
  mt_tensor *c = NULL;
  MT_TRY(mt__nn_contig(g, &c, op));
  mt_status st = be->grad_check(c, nonfinite, sumsq);
  mt_tensor_release(c);
  return st;
}
