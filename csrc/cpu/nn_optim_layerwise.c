/* nn_optim_layerwise.c: the CPU backend's LARS and LAMB steps, whose step size is scaled per
 * layer by a trust ratio. The flat vector is cut into segments (one per parameter tensor,
 * checked by csrc/nn/optim_layerwise.c); a segment's norms are reduced first, then one fused
 * pass updates it. Excluded segments (BN and bias parameters in You et al.'s recipe) get trust
 * ratio 1 and no weight decay: plain SGD / Adam steps. */
#include <math.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "optim_block.h"

#define MT_GENERIC_FILE "generic/nn_optim_layerwise.c"
#include "generate_float.h"

/* the squared norms of a segment's weights and gradient */
#define NORMS_CASE(E, N, T, CT) \
  case E: norms_##N(o, len, x, dx, gscale, &w2, &g2); break;
/* its update by the trust ratio local */
#define LARS_CASE(E, N, T, CT) \
  case E: lars_##N(o, len, x, dx, bp, step, momentum, wd, first, gscale, copy); break;
mt_status mt__cpu_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                            const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                            double weight_decay, double eta, double eps, int first, double *trust_out, double gscale,
                            mt_tensor *copy) {
  const char *op = "lars_step";
  char *bp = momentum != 0 ? mt__data(buf) : NULL;
  for (int s = 0; s < nseg; s++) {
    int64_t o = seg_offset[s], len = seg_length[s];
    if (len == 0) {
      if (trust_out) trust_out[s] = 1;
      continue;
    }
    int excl = seg_exclude && seg_exclude[s];
    double wd = excl ? 0 : weight_decay, local = 1, w2 = 0, g2 = 0;
    if (!excl) {
      switch (x->dtype) {
        MT_FLOAT_DTYPE_LIST(NORMS_CASE)
        default: break;
      }
      double wn = sqrt(w2), gn = sqrt(g2);
      /* a zero norm (fresh zero-init weights, no gradient) leaves the plain step */
      if (wn > 0 && gn > 0) local = eta * wn / (gn + wd * wn + eps);
    }
    if (trust_out) trust_out[s] = local;
    double step = lr * local;
    switch (x->dtype) {
      MT_FLOAT_DTYPE_LIST(LARS_CASE)
      default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
    }
  }
  return MT_OK;
}

/* LAMB pass 1 over a segment [o, o+n): update m and v from g = gscale*dx, and reduce ||x||^2
 * and ||u||^2 where u = mhat/(sqrt(vhat)+eps) + wd*x */
#define LAMB_MOMENTS_CASE(E, N, T, CT) \
  case E: lamb_moments_##N(o, len, x, dx, m, v, beta1, beta2, ibc1, ibc2, eps, wd, gscale, &w2, &u2); break;
/* pass 2: x -= s*u with s = lr*trust; copy = x */
#define LAMB_APPLY_CASE(E, N, T, CT) \
  case E: lamb_apply_##N(o, len, x, m, v, ibc1, ibc2, eps, wd, step, copy); break;
mt_status mt__cpu_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                            const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude,
                            double beta1, double beta2, double ibc1, double ibc2, double lr, double eps,
                            double weight_decay, double max_trust, double *trust_out, double gscale, mt_tensor *copy) {
  const char *op = "lamb_step";
  for (int s = 0; s < nseg; s++) {
    int64_t o = seg_offset[s], len = seg_length[s];
    if (len == 0) {
      if (trust_out) trust_out[s] = 1;
      continue;
    }
    int excl = seg_exclude && seg_exclude[s];
    double wd = excl ? 0 : weight_decay, w2 = 0, u2 = 0, trust = 1;
    switch (x->dtype) {
      MT_FLOAT_DTYPE_LIST(LAMB_MOMENTS_CASE)
      default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
    }
    if (!excl && w2 > 0 && u2 > 0) {
      trust = sqrt(w2) / sqrt(u2);
      if (max_trust > 0 && trust > max_trust) trust = max_trust;
    }
    if (trust_out) trust_out[s] = trust;
    double step = lr * trust;
    switch (x->dtype) {
      MT_FLOAT_DTYPE_LIST(LAMB_APPLY_CASE)
      default: break;
    }
  }
  return MT_OK;
}
