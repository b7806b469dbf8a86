/* nn_optim.c: the CPU backend's fused SGD and Adam/AdamW steps, one pass over the flat
 * parameter vector; csrc/nn/optim.c checks the arguments and folds the schedules into the
 * scalars. The formulas are Torch7's optim.sgd/optim.adam and Loshchilov & Hutter's AdamW. */
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
 * compute type (optim_block.h), so any gradient dtype is served by the master's body. */
#define SGD_KERNEL(E, N, T, CT)                                                                                        \
  static void sgd_##N(int64_t n, T *x, const mt_tensor *dx, T *buf, const T *lrs, int64_t lrs_s, const T *wds,         \
                      int64_t wds_s, CT lr, CT mom, CT damp, CT wd, int nesterov, int first, CT gscale,                \
                      mt_tensor *copy) {                                                                               \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; bk < nblocks; bk++) { \
      int64_t i0 = bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);                                                    \
      CT gb[MT_OPT_BLOCK];                                                                                             \
      mt__opt_load(gb, dx, i0, m, gscale);                                                                             \
      for (int64_t j = 0; j < m; j++) {                                                                                \
        int64_t i = i0 + j;                                                                                            \
        CT xi = mt_ld_##N(x + i);                                                                                      \
        CT g = gb[j] + (wd + (CT)mt_ld_##N(wds + i * wds_s)) * xi;                                                     \
        if (mom != 0) {                                                                                                \
          CT b = first ? g : mom * (CT)mt_ld_##N(buf + i) + (1 - damp) * g;                                            \
          mt_st_##N(buf + i, b);                                                                                       \
          g = nesterov ? g + mom * b : b;                                                                              \
        }                                                                                                              \
        mt_st_##N(x + i, xi - lr * (CT)mt_ld_##N(lrs + i * lrs_s) * g);                                                \
        gb[j] = mt_ld_##N(x + i); /* the stored master value, for the copy */                                          \
      }                                                                                                                \
      if (copy) mt__opt_store(copy, i0, m, gb);                                                                        \
    }                                                                                                                  \
  }
MT_FLOAT_DTYPE_LIST(SGD_KERNEL)

mt_status mt__cpu_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                           const mt_tensor *wds, double lr, double momentum, double dampening, double weight_decay,
                           int nesterov, int first, double gscale, mt_tensor *copy) {
  const char *op = "sgd_step";
  int64_t n = mt__numel(x);
  /* the stand-ins for absent lrs (1) and wds (0), in each storage type */
  union {
    float f;
    double d;
    uint16_t h;
  } one, zero;
  void *bufp = buf && momentum != 0 ? mt__data(buf) : NULL;
  switch (x->dtype) {
#define SGD_CASE(E, N, T, CT)                                                                                    \
  case E: {                                                                                                      \
    mt_st_##N((T *)&one, 1.0);                                                                                   \
    mt_st_##N((T *)&zero, 0.0);                                                                                  \
    sgd_##N(n, (T *)mt__data(x), dx, (T *)bufp, lrs ? (const T *)mt__data(lrs) : (const T *)&one, lrs ? 1 : 0,   \
            wds ? (const T *)mt__data(wds) : (const T *)&zero, wds ? 1 : 0, (CT)lr, (CT)momentum, (CT)dampening, \
            (CT)weight_decay, nesterov, first, (CT)gscale, copy);                                                \
    break;                                                                                                       \
  }
    MT_FLOAT_DTYPE_LIST(SGD_CASE)
    default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
  }
  return MT_OK;
}

/* Adam (Torch7's optim.adam; L2 weight decay folded into the gradient):
 *   g = gscale*dx + wd*x;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
 *   x -= lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v)+eps)
 * AdamW (Loshchilov & Hutter, decoupled decay, as PyTorch's AdamW):
 *   x *= 1 - lr*wd;  m, v as above with g = gscale*dx
 *   x -= lr/(1-b1^t) * m/(sqrt(v)/sqrt(1-b2^t) + eps) */
#define ADAM_KERNEL(E, N, T, CT)                                                                                       \
  static void adam_##N(int64_t n, T *x, const mt_tensor *dx, T *m, T *v, CT b1, CT b2, CT eps, CT wd_l2, CT decay,     \
                       CT step, CT inv_sqrt_bc2, CT gscale, mt_tensor *copy) {                                         \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; bk < nblocks; bk++) { \
      int64_t i0 = bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);                                                  \
      CT gb[MT_OPT_BLOCK];                                                                                             \
      mt__opt_load(gb, dx, i0, len, gscale);                                                                           \
      for (int64_t j = 0; j < len; j++) {                                                                              \
        int64_t i = i0 + j;                                                                                            \
        CT xi = mt_ld_##N(x + i);                                                                                      \
        CT g = gb[j] + wd_l2 * xi;                                                                                     \
        CT mi = b1 * (CT)mt_ld_##N(m + i) + (1 - b1) * g;                                                              \
        CT vi = b2 * (CT)mt_ld_##N(v + i) + (1 - b2) * g * g;                                                          \
        mt_st_##N(m + i, mi);                                                                                          \
        mt_st_##N(v + i, vi);                                                                                          \
        xi = xi * decay - step * mi / (OPT_SQRT(vi) * inv_sqrt_bc2 + eps);                                             \
        mt_st_##N(x + i, xi);                                                                                          \
        gb[j] = mt_ld_##N(x + i);                                                                                      \
      }                                                                                                                \
      if (copy) mt__opt_store(copy, i0, len, gb);                                                                      \
    }                                                                                                                  \
  }
MT_FLOAT_DTYPE_LIST(ADAM_KERNEL)

mt_status mt__cpu_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1, double beta2,
                            double eps, double wd_l2, double decay, double step, double inv_sqrt_bc2, double gscale,
                            mt_tensor *copy) {
  const char *op = "adam_step";
  int64_t n = mt__numel(x);
  switch (x->dtype) {
#define ADAM_CASE(E, N, T, CT)                                                                                      \
  case E:                                                                                                           \
    adam_##N(n, (T *)mt__data(x), dx, (T *)mt__data(m), (T *)mt__data(v), (CT)beta1, (CT)beta2, (CT)eps, (CT)wd_l2, \
             (CT)decay, (CT)step, (CT)inv_sqrt_bc2, (CT)gscale, copy);                                              \
    break;
    MT_FLOAT_DTYPE_LIST(ADAM_CASE)
    default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
  }
  return MT_OK;
}

/* inf/NaN count and sum of squares (float64) of the finite elements, in one pass */
#define CHECK_KERNEL(E, N, T, CT)                                                                                      \
  static void check_##N(int64_t n, const T *g, int64_t *bad, double *ss) {                                             \
    int64_t nb = 0;                                                                                                    \
    double acc = 0;                                                                                                    \
    _Pragma("omp parallel for schedule(static) reduction(+ : nb, acc) if (n > MT_PARALLEL_GRAIN)") for (int64_t i = 0; \
                                                                                                        i < n; i++) {  \
      double v = (double)mt_ld_##N(g + i);                                                                             \
      if (isfinite(v)) acc += v * v;                                                                                   \
      else nb++;                                                                                                       \
    }                                                                                                                  \
    *bad = nb;                                                                                                         \
    *ss = acc;                                                                                                         \
  }
MT_FLOAT_DTYPE_LIST(CHECK_KERNEL)

mt_status mt__cpu_grad_check(const mt_tensor *g, int64_t *nonfinite, double *sumsq) {
  int64_t n = mt__numel(g);
  switch (g->dtype) {
#define CHECK_CASE(E, N, T, CT) \
  case E: check_##N(n, (const T *)mt__data(g), nonfinite, sumsq); break;
    MT_FLOAT_DTYPE_LIST(CHECK_CASE)
    default: return mt__error(MT_ERR_DTYPE, "grad_check: unsupported dtype %s", mt_dtype_name(g->dtype));
  }
  return MT_OK;
}
