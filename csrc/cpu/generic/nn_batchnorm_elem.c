/* generic/nn_batchnorm_elem.c: the per-element formulas both batch-norm layouts share, for one float
 * dtype (included by nn_batchnorm.h through generate_float.h; generate.h names scalar_t, acc_t, MT_G, ...). */

/* All three are always inlined, so that the callers' constant flags fold away and the plain
 * loops stay plain. */

/* gradOutput g at i, masked by the ReLU (output y at i > 0) when masked (a constant) */
MT_ALWAYS_INLINE double MT_G(bn_grad_output)(const scalar_t *g, const scalar_t *y, int64_t i, int masked) {
  double gv = (double)MT_LD(g + i);
  if (masked) gv = bn_keep(gv, MT_LD(y + i) > 0);
  return gv;
}

/* y[i] = relu?(round(round((x[i] - mean) k + b) + res[i])): the BN output rounded to the dtype,
 * the residual (res NULL: none) added in the compute type and rounded, then the clamp (relu), as
 * the separate modules */
MT_ALWAYS_INLINE void MT_G(bn_normalize_elem)(const scalar_t *x, const scalar_t *res, scalar_t *y, int relu, int64_t i,
                                              double mean, double k, double b) {
  scalar_t t;
  MT_ST(&t, (acc_t)(((double)MT_LD(x + i) - mean) * k + b));
  acc_t v = MT_LD(&t);
  if (res) {
    MT_ST(&t, v + (acc_t)MT_LD(res + i));
    v = MT_LD(&t);
  }
  if (relu) v = v > 0 ? v : (acc_t)0;
  MT_ST(y + i, v);
}

/* gradInput r[i] = k (go - a - (x[i] - mean) bcoef) when want_r, gradResidual gres[i] = go when
 * want_gres (both constants); go: gradOutput at i, coef = {mean, k, a, bcoef} */
MT_ALWAYS_INLINE void MT_G(bn_grad_input_elem)(const scalar_t *x, scalar_t *r, scalar_t *gres, int64_t i, double go,
                                               const double *coef, int want_r, int want_gres) {
  if (want_gres) MT_ST(gres + i, (acc_t)(go));
  if (want_r) MT_ST(r + i, (acc_t)(coef[1] * (go - coef[2] - ((double)MT_LD(x + i) - coef[0]) * coef[3])));
}
