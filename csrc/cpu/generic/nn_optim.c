/* generic/nn_optim.c: the fused SGD and Adam/AdamW steps and the gradient check for one float
 * master dtype (included by nn_optim.c through generate_float.h). Each step converts its
 * scalars to acc_t, then walks the n elements of x in blocks, the gradient's block in acc_t
 * (optim_block.h). */

/* SGD (nn_optim.c has the formulas). lrs and wds are read with strides lrs_s and wds_s: absent
 * ones stand in as a constant 1 and 0 of the storage type read with stride 0, which keeps one
 * loop body without a branch per element. buf is NULL without momentum. */
static void MT_G(sgd)(mt_tensor *xt, const mt_tensor *dx, void *buf_data, const mt_tensor *lrst, const mt_tensor *wdst,
                      double learning_rate, double momentum, double dampening, double weight_decay, int nesterov,
                      int first, double grad_scale, mt_tensor *copy) {
  const acc_t lr = (acc_t)learning_rate, mom = (acc_t)momentum, damp = (acc_t)dampening, wd = (acc_t)weight_decay;
  const acc_t gscale = (acc_t)grad_scale;
  scalar_t one, zero;
  MT_ST(&one, 1.0);
  MT_ST(&zero, 0.0);
  const int64_t n = mt__numel(xt), lrs_s = lrst ? 1 : 0, wds_s = wdst ? 1 : 0;
  scalar_t *x = (scalar_t *)mt__data(xt), *buf = (scalar_t *)buf_data;
  const scalar_t *lrs = lrst ? (const scalar_t *)mt__data(lrst) : &one;
  const scalar_t *wds = wdst ? (const scalar_t *)mt__data(wdst) : &zero;
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);
    acc_t gb[MT_OPT_BLOCK];
    mt__opt_load(gb, dx, i0, m, gscale);
    for (int64_t j = 0; j < m; j++) {
      int64_t i = i0 + j;
      acc_t xi = MT_LD(x + i);
      acc_t g = gb[j] + (wd + (acc_t)MT_LD(wds + i * wds_s)) * xi;
      if (mom != 0) {
        acc_t b = first ? g : mom * (acc_t)MT_LD(buf + i) + (1 - damp) * g;
        MT_ST(buf + i, b);
        g = nesterov ? g + mom * b : b;
      }
      MT_ST(x + i, xi - lr * (acc_t)MT_LD(lrs + i * lrs_s) * g);
      gb[j] = MT_LD(x + i); /* the stored master value, for the copy */
    }
    if (copy) mt__opt_store(copy, i0, m, gb);
  }
}

/* Adam/AdamW (nn_optim.c has the formulas) over x and its moments m and v */
static void MT_G(adam)(mt_tensor *xt, const mt_tensor *dx, mt_tensor *mt, mt_tensor *vt, double beta1, double beta2,
                       double epsilon, double weight_decay_l2, double decay_factor, double step_size,
                       double inv_sqrt_bias_correction2, double grad_scale, mt_tensor *copy) {
  const acc_t b1 = (acc_t)beta1, b2 = (acc_t)beta2, eps = (acc_t)epsilon, wd_l2 = (acc_t)weight_decay_l2;
  const acc_t decay = (acc_t)decay_factor, step = (acc_t)step_size, inv_sqrt_bc2 = (acc_t)inv_sqrt_bias_correction2;
  const acc_t gscale = (acc_t)grad_scale;
  const int64_t n = mt__numel(xt);
  scalar_t *x = (scalar_t *)mt__data(xt), *m = (scalar_t *)mt__data(mt), *v = (scalar_t *)mt__data(vt);
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);
    acc_t gb[MT_OPT_BLOCK];
    mt__opt_load(gb, dx, i0, len, gscale);
    for (int64_t j = 0; j < len; j++) {
      int64_t i = i0 + j;
      acc_t xi = MT_LD(x + i);
      acc_t g = gb[j] + wd_l2 * xi;
      acc_t mi = b1 * (acc_t)MT_LD(m + i) + (1 - b1) * g;
      acc_t vi = b2 * (acc_t)MT_LD(v + i) + (1 - b2) * g * g;
      MT_ST(m + i, mi);
      MT_ST(v + i, vi);
      xi = xi * decay - step * mi / (OPT_SQRT(vi) * inv_sqrt_bc2 + eps);
      MT_ST(x + i, xi);
      gb[j] = MT_LD(x + i);
    }
    if (copy) mt__opt_store(copy, i0, len, gb);
  }
}

/* inf/NaN count and sum of squares (float64) of the finite elements of g (n), in one pass */
static void MT_G(grad_check)(int64_t n, const scalar_t *g, int64_t *nonfinite, double *sumsq) {
  int64_t bad = 0;
  double acc = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad, acc) if (n > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < n; i++) {
    double v = (double)MT_LD(g + i);
    if (isfinite(v)) acc += v * v;
    else bad++;
  }
  *nonfinite = bad;
  *sumsq = acc;
}
