/* optim_layerwise.c: LARS and LAMB, whose step size is scaled per layer by a trust ratio.
 * The flat vector is cut into segments (one per parameter tensor), checked here; the
 * per-segment norms and updates are the backends'. */
#include <math.h>
#include "optim_common.h"

static mt_status check_segments(const char *op, int64_t n, int nseg, const int64_t *off, const int64_t *len) {
  if (nseg < 0) return mt__error(MT_ERR_ARG, "%s: negative segment count %d", op, nseg);
  if (nseg > 0 && (!off || !len)) return mt__error(MT_ERR_ARG, "%s: segment offsets or lengths are NULL", op);
  int64_t end = 0;
  for (int s = 0; s < nseg; s++) {
    if (off[s] < 0 || len[s] < 0 || off[s] > n || len[s] > n - off[s])
      return mt__error(MT_ERR_INDEX, "%s: segment %d [%lld, %lld) is outside the %lld parameters", op, s + 1,
                       (long long)off[s], (long long)(off[s] + len[s]), (long long)n);
    if (off[s] < end)
      return mt__error(
          MT_ERR_ARG,
          "%s: segment %d starts at %lld, inside the previous one (ending at %lld); segments must be sorted and disjoint",
          op, s + 1, (long long)off[s], (long long)end);
    end = off[s] + len[s];
  }
  return MT_OK;
}

mt_status mt_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                       const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                       double weight_decay, double eta, double eps, int first, double *trust_out, double grad_scale,
                       mt_tensor *copy) {
  const char *op = "lars_step";
  MT_TRY(mt__optim_check_x(op, x));
  MT_TRY(mt__optim_check_grad(op, x, dx, grad_scale, copy));
  if (momentum < 0) return mt__error(MT_ERR_ARG, "%s: momentum must be >= 0, got %g", op, momentum);
  if (momentum != 0) MT_TRY(mt__optim_check_like(op, "momentum buffer", x, buf));
  if (!(eta > 0)) return mt__error(MT_ERR_ARG, "%s: trust coefficient eta must be > 0, got %g", op, eta);
  int64_t n = mt__numel(x);
  MT_TRY(check_segments(op, n, nseg, seg_offset, seg_length));
  const mt_backend *be = mt__nn_backend(x, op);
  if (!be) return mt_last_status();
  mt_tensor *fused = mt__optim_fused_copy(x, dx, copy);
  mt_status st = be->lars_step(x, dx, momentum != 0 ? buf : NULL, nseg, seg_offset, seg_length, seg_exclude, lr,
                               momentum, weight_decay, eta, eps, first, trust_out, grad_scale, fused);
  return mt__optim_copy_after(st, x, dx, copy);
}

mt_status mt_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                       const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude, double lr,
                       double beta1, double beta2, double eps, double weight_decay, int64_t t, double max_trust,
                       double *trust_out, double grad_scale, mt_tensor *copy) {
  const char *op = "lamb_step";
  MT_TRY(mt__optim_check_moments(op, x, dx, m, v, beta1, beta2, t, grad_scale, copy));
  int64_t n = mt__numel(x);
  MT_TRY(check_segments(op, n, nseg, seg_offset, seg_length));
  double ibc1 = 1 / (1 - pow(beta1, (double)t)), ibc2 = 1 / (1 - pow(beta2, (double)t));
  const mt_backend *be = mt__nn_backend(x, op);
  if (!be) return mt_last_status();
  mt_tensor *fused = mt__optim_fused_copy(x, dx, copy);
  mt_status st = be->lamb_step(x, dx, m, v, nseg, seg_offset, seg_length, seg_exclude, beta1, beta2, ibc1, ibc2, lr,
                               eps, weight_decay, max_trust, trust_out, grad_scale, fused);
  return mt__optim_copy_after(st, x, dx, copy);
}
