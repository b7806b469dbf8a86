/* generic/vec_exp_row.c: the softmax row that softmax, log-softmax and cross-entropy share, for one float
 * dtype (included by vec_exp.h through generate_float.h; generate.h names scalar_t, acc_t, MT_G, ...). */

/* the max mx (returned) and *sum = the sum of exp(x - mx) over a row of D values at stride
 * stride, read in chunks of MT_ROW_CHUNK (acc_t values: the compute type picks the exp; a row
 * that fits one chunk is read once), in the lane orders of vec_exp.h. With store not NULL, each
 * chunk's exps are also stored there (at the same stride) as they are computed. Always inlined,
 * as the macro it replaces was: a NULL store folds away. x, store (D at stride) */
MT_ALWAYS_INLINE acc_t MT_G(softmax_row)(const scalar_t *x, int64_t stride, int64_t D, scalar_t *store, double *sum) {
  acc_t buf[MT_ROW_CHUNK], max_lanes[MT_ROW_MAXF_LANES];
  double sum_lanes[MT_ROW_LANES];
  for (int l = 0; l < MT_ROW_MAXF_LANES; l++) max_lanes[l] = -INFINITY;
  for (int l = 0; l < MT_ROW_LANES; l++) sum_lanes[l] = 0;
  for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {
    int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;
    for (int64_t j = 0; j < nc; j++) buf[j] = (acc_t)MT_LD(x + (c0 + j) * stride);
    mt__row_max_ct(max_lanes, buf, nc);
  }
  acc_t mx = mt__row_max_end_ct(max_lanes);
  for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {
    int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;
    if (D > MT_ROW_CHUNK)
      for (int64_t j = 0; j < nc; j++) buf[j] = (acc_t)MT_LD(x + (c0 + j) * stride);
    mt__exp_ct(buf, nc, (acc_t)mx);
    mt__row_sum_ct(sum_lanes, buf, nc);
    if (store)
      for (int64_t j = 0; j < nc; j++) MT_ST(store + (c0 + j) * stride, (acc_t)buf[j]);
  }
  *sum = mt__row_sum_end(sum_lanes);
  return mx;
}
