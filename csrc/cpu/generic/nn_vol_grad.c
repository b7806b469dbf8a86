/* generic/nn_vol_grad.c: the blocked weight gradient of a 3-d convolution for float32 or float64
 * (included by nn_vol_grad.c through generate_one.h for f32 and f64). */

/* gw (O, C, kT, kH, kW) += scale * the sum over the nb samples of dy[n] (O, oT oH oW) times the
 * columns of x[n] (C, T, H, W) transposed; the columns of a block of output rows at a time, the
 * threads taking (sample, block) items into accumulators of their own, summed in thread order.
 * 0 when out of memory. */
static int MT_G(grad_weight)(scalar_t *gw, const scalar_t *x, const scalar_t *dy, scalar_t scale, const mt_vol_geom *g,
                             int64_t nb, int64_t O) {
  const int64_t R = g->C * g->kT * g->kH * g->kW, Q = g->oT * g->oH, L = Q * g->oW;
  const int64_t V = g->C * g->T * g->H * g->W;
  int64_t qb = GW_BLOCK_BYTES / (int64_t)sizeof(scalar_t) / (R * g->oW); /* output rows per block */
  if (qb < 1) qb = 1;
  if (qb > Q) qb = Q;
  const int64_t nblk = (Q + qb - 1) / qb, items = nb * nblk, per = R * qb * g->oW + O * R;
  int nth = omp_get_max_threads();
  if (items < nth) nth = (int)items;
  scalar_t *buf = (scalar_t *)malloc((size_t)nth * (size_t)per * sizeof(scalar_t));
  if (!buf) return 0;
#pragma omp parallel num_threads(nth)
  {
    scalar_t *col = buf + (int64_t)omp_get_thread_num() * per, *acc = col + R * qb * g->oW;
    memset(acc, 0, sizeof(scalar_t) * (size_t)(O * R));
#pragma omp for schedule(static)
    for (int64_t it = 0; it < items; it++) {
      const int64_t n = it / nblk, q0 = it % nblk * qb, q1 = q0 + qb < Q ? q0 + qb : Q;
      const int64_t k = (q1 - q0) * g->oW;
      mt__vol2col_rows(sizeof(scalar_t), x + n * V, col, g, q0, q1, 0);
      /* acc (O x R) += dy[n][:, block] (O x k, rows L apart) * col^T (col: R x k) */
      MT_G(gemm)(0, 1, O, R, k, (scalar_t)1, dy + n * O * L + q0 * g->oW, L, col, k, (scalar_t)1, acc, R, 1);
    }
  }
  for (int64_t i = 0; i < O * R; i++) {
    scalar_t s = 0;
    for (int t = 0; t < nth; t++) s += buf[(int64_t)t * per + R * qb * g->oW + i];
    gw[i] += scale * s;
  }
  free(buf);
  return 1;
}
