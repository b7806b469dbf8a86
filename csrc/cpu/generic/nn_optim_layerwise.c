/* generic/nn_optim_layerwise.c: the LARS and LAMB passes over one segment [o, o+n) of the flat
 * vector, for one float master dtype (included by nn_optim_layerwise.c through
 * generate_float.h). The gradient arrives in blocks of acc_t (optim_block.h). */

/* sums of squares of x and of grad_scale*dx over the segment, in double */
static void MT_G(norms)(int64_t o, int64_t n, const mt_tensor *xt, const mt_tensor *dx, double grad_scale,
                        double *sum_x, double *sum_g) {
  const scalar_t *x = (const scalar_t *)mt__data(xt);
  const acc_t gscale = (acc_t)grad_scale;
  double ra = 0, rb = 0;
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) reduction(+ : ra, rb) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);
    acc_t gb[MT_OPT_BLOCK];
    mt__opt_load(gb, dx, o + i0, m, gscale);
    for (int64_t j = 0; j < m; j++) {
      double u = MT_LD(x + o + i0 + j), w = gb[j];
      ra += u * u;
      rb += w * w;
    }
  }
  *sum_x = ra;
  *sum_g = rb;
}

/* LARS update of the segment: g = gscale*dx + wd*x; buf = mom*buf + s*g (buf = s*g first);
 * x -= buf with s = lr * local_lr; without momentum (buf NULL) x -= s*g; copy = x. */
static void MT_G(lars)(int64_t o, int64_t n, mt_tensor *xt, const mt_tensor *dx, void *buf_data, double step,
                       double momentum, double weight_decay, int first, double grad_scale, mt_tensor *copy) {
  scalar_t *x = (scalar_t *)mt__data(xt), *buf = (scalar_t *)buf_data;
  const acc_t s = (acc_t)step, mom = (acc_t)momentum, wd = (acc_t)weight_decay, gscale = (acc_t)grad_scale;
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = o + bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);
    acc_t gb[MT_OPT_BLOCK];
    mt__opt_load(gb, dx, i0, m, gscale);
    for (int64_t j = 0; j < m; j++) {
      int64_t i = i0 + j;
      acc_t xi = MT_LD(x + i);
      acc_t g = s * (gb[j] + wd * xi);
      if (mom != 0) {
        g = first ? g : mom * (acc_t)MT_LD(buf + i) + g;
        MT_ST(buf + i, g);
      }
      MT_ST(x + i, xi - g);
      gb[j] = MT_LD(x + i);
    }
    if (copy) mt__opt_store(copy, i0, m, gb);
  }
}

/* LAMB pass 1 over the segment: update m and v from g = gscale*dx, and reduce ||x||^2 (w2) and
 * ||u||^2 (u2) where u = mhat/(sqrt(vhat)+eps) + wd*x, all in double */
static void MT_G(lamb_moments)(int64_t o, int64_t n, const mt_tensor *xt, const mt_tensor *dx, mt_tensor *mt,
                               mt_tensor *vt, double b1, double b2, double ibc1, double ibc2, double eps, double wd,
                               double gscale, double *w2, double *u2) {
  const scalar_t *x = (const scalar_t *)mt__data(xt);
  scalar_t *m = (scalar_t *)mt__data(mt), *v = (scalar_t *)mt__data(vt);
  double rw = 0, ru = 0;
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) reduction(+ : rw, ru) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = o + bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);
    double gb[MT_OPT_BLOCK];
    mt__opt_load(gb, dx, i0, len, gscale);
    for (int64_t j = 0; j < len; j++) {
      int64_t i = i0 + j;
      double xi = MT_LD(x + i), g = gb[j];
      double mi = b1 * (double)MT_LD(m + i) + (1 - b1) * g;
      double vi = b2 * (double)MT_LD(v + i) + (1 - b2) * g * g;
      MT_ST(m + i, mi);
      MT_ST(v + i, vi);
      /* u from the stored (rounded) moments, so pass 2 sees the same u */
      mi = MT_LD(m + i);
      vi = MT_LD(v + i);
      double u = mi * ibc1 / (sqrt(vi * ibc2) + eps) + wd * xi;
      rw += xi * xi;
      ru += u * u;
    }
  }
  *w2 = rw;
  *u2 = ru;
}

/* LAMB pass 2 over the segment: x -= s*u with s = lr*trust; copy = x */
static void MT_G(lamb_apply)(int64_t o, int64_t n, mt_tensor *xt, const mt_tensor *mt, const mt_tensor *vt, double ibc1,
                             double ibc2, double eps, double wd, double s, mt_tensor *copy) {
  scalar_t *x = (scalar_t *)mt__data(xt);
  const scalar_t *m = (const scalar_t *)mt__data(mt), *v = (const scalar_t *)mt__data(vt);
  int64_t nblocks = MT_OPT_NBLOCKS(n);
#pragma omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)
  for (int64_t bk = 0; bk < nblocks; bk++) {
    int64_t i0 = o + bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);
    acc_t xb[MT_OPT_BLOCK];
    for (int64_t j = 0; j < len; j++) {
      int64_t i = i0 + j;
      double xi = MT_LD(x + i);
      double u = (double)MT_LD(m + i) * ibc1 / (sqrt((double)MT_LD(v + i) * ibc2) + eps) + wd * xi;
      MT_ST(x + i, xi - s * u);
      xb[j] = MT_LD(x + i);
    }
    if (copy) mt__opt_store(copy, i0, len, xb);
  }
}
