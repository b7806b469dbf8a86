/* generic/nn_loss_ce.c: the fused cross-entropy's loops for one float dtype (included by
 * nn_loss_ce.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* v rounded to the dtype as a store and a load round it (the composition's saved log-softmax) */
static inline double MT_G(ce_round)(double v) {
  scalar_t q;
  MT_ST(&q, (acc_t)v);
  return (double)MT_LD(&q);
}

/* rows in parallel (each row's max and exp sum as nn.LogSoftMax computes them; lse[i] its
 * log-sum-exp), then the loss terms serially in the order class_nll_forward adds them: *nll_out
 * and, with smoothing, *smooth_out. A row whose target is negative is ignored.
 * input (N, C), targets (N), weights (C), lse (N) */
MT_AVX2_CLONES static void MT_G(cross_entropy_forward)(const scalar_t *x, const int64_t *tg, const double *w,
                                                       double *lse, int64_t N, int64_t C, int smoothing,
                                                       double *nll_out, double *smooth_out) {
#pragma omp parallel for if (N * C > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < N; i++) {
    double sum;
    acc_t mx = MT_G(softmax_row)(x + i * C, 1, C, NULL, &sum);
    lse[i] = (double)mx + log(sum);
  }
  double nll = 0, smooth = 0;
  for (int64_t i = 0; i < N; i++) {
    const scalar_t *row = x + i * C;
    int64_t target = tg[i];
    if (target < 0) continue;
    nll -= w[target] * MT_G(ce_round)((double)MT_LD(row + target) - lse[i]);
    if (smoothing)
      for (int64_t c = 0; c < C; c++) smooth -= w[c] * MT_G(ce_round)((double)MT_LD(row + c) - lse[i]);
  }
  *nll_out = nll, *smooth_out = smooth;
}

/* The NLL gradient g takes one of two values per class, grad_off[c] off the target and
 * grad_on[c] on it, computed first (the same products in the same order as class_nll_backward's,
 * hence the same values, rounded to the dtype). Then per row: the sum s of g in LogSoftMax's lane
 * order, and r = g - exp(y) s with y the rounded log-softmax (LogSoftMax's backward). Without
 * smoothing every grad_off[c] is a zero, and a lane sum of zeros and one grad_on[t] from +0 is
 * +0 + grad_on[t]: no per-row pass for s. An ignored row (target below 0) has g = 0, read from
 * zero_grad, as the composition's zero-filled gradient. scratch holds grad_off, grad_on and
 * zero_grad (MT_ROW_CHUNK zeros). input, gradInput (N, C), lse, targets (N), weights (C) */
MT_AVX2_CLONES static void MT_G(cross_entropy_backward)(const scalar_t *x, scalar_t *r, const double *lse,
                                                        const int64_t *tg, const double *w, double *scratch, int64_t N,
                                                        int64_t C, double smoothing, double norm) {
  double *grad_off = scratch, *grad_on = scratch + C;
  const double *zero_grad = grad_on + C;
  int off_all_zero = 1;
  for (int64_t c = 0; c < C; c++) {
    grad_off[c] = MT_G(ce_round)(-smoothing / (double)C * w[c] * norm);
    grad_on[c] = MT_G(ce_round)(-(smoothing / (double)C + (1 - smoothing)) * w[c] * norm);
    off_all_zero &= grad_off[c] == 0;
  }
#pragma omp parallel for if (N * C > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < N; i++) {
    const scalar_t *row = x + i * C;
    scalar_t *r_row = r + i * C;
    int64_t target = tg[i];
    double sum = 0, row_lse = lse[i], buf[MT_ROW_CHUNK];
    acc_t exps[MT_ROW_CHUNK];
    if (target >= 0 && off_all_zero) sum = 0.0 + grad_on[target];
    else if (target >= 0) {
      double sum_lanes[MT_ROW_LANES] = {0};
      for (int64_t c0 = 0; c0 < C; c0 += MT_ROW_CHUNK) {
        int64_t nc = C - c0 < MT_ROW_CHUNK ? C - c0 : MT_ROW_CHUNK;
        for (int64_t j = 0; j < nc; j++) buf[j] = c0 + j == target ? grad_on[target] : grad_off[c0 + j];
        mt__row_sum_add(sum_lanes, buf, nc);
      }
      sum = mt__row_sum_end(sum_lanes);
    }
    for (int64_t c0 = 0; c0 < C; c0 += MT_ROW_CHUNK) {
      int64_t nc = C - c0 < MT_ROW_CHUNK ? C - c0 : MT_ROW_CHUNK;
      for (int64_t j = 0; j < nc; j++) exps[j] = (acc_t)MT_G(ce_round)((double)MT_LD(row + c0 + j) - row_lse);
      mt__exp_ct(exps, nc, (acc_t)0);
      /* every class as off-target (a loop the compiler vectorizes), then the target */
      const double *g = target < 0 ? zero_grad : grad_off + c0;
      for (int64_t j = 0; j < nc; j++) MT_ST(r_row + c0 + j, (acc_t)(g[j] - (double)exps[j] * sum));
      if (target >= c0 && target < c0 + nc)
        MT_ST(r_row + target, (acc_t)(grad_on[target] - (double)exps[target - c0] * sum));
    }
  }
}
