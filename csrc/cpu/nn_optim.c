/* nn_optim.c: the CPU backend's fused SGD and Adam/AdamW steps, one pass over the flat
 * parameter vector; csrc/nn/optim.c checks the arguments and folds the schedules into the
 * scalars. The formulas are Torch7's optim.sgd/optim.adam and Loshchilov & Hutter's AdamW; the
 * loops are written once in generic/nn_optim.c and compiled per float dtype. */
#include <math.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "optim_block.h"

/* sqrt in the compute type: float stays float so the loop vectorizes */
#define OPT_SQRT(v) _Generic((v), float : sqrtf, default : sqrt)(v)

/* SGD (Torch7's optim.sgd):
 *   g = gscale*dx + wd*x + wds.*x
 *   momentum: buf = first ? g : mom*buf + (1-damp)*g;  g = nesterov ? g + mom*buf : buf
 *   x -= lr * lrs.*g;  copy = x (rounded to copy's dtype)
 * Optional per-element lrs/wds are read with stride 0 from a constant when absent, which
 * keeps one loop body without a branch per element. The gradient arrives in blocks of the
 * compute type (optim_block.h), so any gradient dtype is served by the master's body.
 *
 * Adam (Torch7's optim.adam; L2 weight decay folded into the gradient):
 *   g = gscale*dx + wd*x;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
 *   x -= lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v)+eps)
 * AdamW (Loshchilov & Hutter, decoupled decay, as PyTorch's AdamW):
 *   x *= 1 - lr*wd;  m, v as above with g = gscale*dx
 *   x -= lr/(1-b1^t) * m/(sqrt(v)/sqrt(1-b2^t) + eps) */
#define MT_GENERIC_FILE "generic/nn_optim.c"
#include "generate_float.h"

#define SGD_CASE(E, N, T, CT) \
  case E: sgd_##N(x, dx, bufp, lrs, wds, lr, momentum, dampening, weight_decay, nesterov, first, gscale, copy); break;
mt_status mt__cpu_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                           const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay,
                           int nesterov, int first, double gscale, mt_tensor *copy) {
  const char *op = "sgd_step";
  void *bufp = buf && momentum != 0 ? mt__data(buf) : NULL;
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(SGD_CASE)
    default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
  }
  return MT_OK;
}

#define ADAM_CASE(E, N, T, CT) \
  case E: adam_##N(x, dx, m, v, beta1, beta2, eps, wd_l2, decay, step, inv_sqrt_bc2, gscale, copy); break;
mt_status mt__cpu_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1, double beta2,
                            double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2, double gscale,
                            mt_tensor *copy) {
  const char *op = "adam_step";
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(ADAM_CASE)
    default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
  }
  return MT_OK;
}

/* inf/NaN count and sum of squares (float64) of the finite elements, in one pass */
#define CHECK_CASE(E, N, T, CT) \
  case E: grad_check_##N(mt__numel(g), (const T *)mt__data(g), nonfinite, sumsq); break;
mt_status mt__cpu_grad_check(const mt_tensor *g, int64_t *nonfinite, double *sumsq) {
  switch (g->dtype) {
    MT_FLOAT_DTYPE_LIST(CHECK_CASE)
    default: return mt__error(MT_ERR_DTYPE, "grad_check: unsupported dtype %s", mt_dtype_name(g->dtype));
  }
  return MT_OK;
}
