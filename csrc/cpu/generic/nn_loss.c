/* generic/nn_loss.c: softmax / log-softmax, class NLL and MSE / SmoothL1 loops for one float dtype
 * (included by nn_loss.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* ---- softmax ------------------------------------------------------------------------------ */
/* inner == 1: softmax keeps e = exp(x - max) in y and scales it by 1/sum afterwards; log-softmax
 * (logsm) writes x - max - log sum. input (outer, D, inner), output (outer, D, inner) */
MT_AVX2_CLONES static void MT_G(softmax_rows)(const scalar_t *x, scalar_t *y, int64_t outer, int64_t D, int64_t inner,
                                              int logsm) {
#pragma omp parallel for if (outer * D * inner > MT_PARALLEL_GRAIN)
  for (int64_t row = 0; row < outer * inner; row++) {
    int64_t o = row / inner, i = row % inner;
    const scalar_t *xr = x + o * D * inner + i;
    scalar_t *yr = y + o * D * inner + i;
    double sum;
    acc_t mx = MT_G(softmax_row)(xr, inner, D, logsm ? NULL : yr, &sum);
    if (logsm) {
      double lse = (double)mx + log(sum);
      for (int64_t d = 0; d < D; d++) MT_ST(yr + d * inner, (acc_t)((double)MT_LD(xr + d * inner) - lse));
    } else {
      double inv = 1 / sum;
      for (int64_t d = 0; d < D; d++) MT_ST(yr + d * inner, (acc_t)((double)MT_LD(yr + d * inner) * inv));
    }
  }
}

/* inner > 1: blocks of up to SMAX_B adjacent columns (smax_block says how wide), each pass
 * running along the contiguous block with the per-column max and sum in small arrays.
 * input (outer, D, inner), output (outer, D, inner) */
MT_AVX2_CLONES static void MT_G(softmax_blocked)(const scalar_t *x, scalar_t *y, int64_t outer, int64_t D,
                                                 int64_t inner, int logsm) {
  int64_t width = smax_block(outer, D, inner, sizeof(scalar_t)), blocks = (inner + width - 1) / width;
#pragma omp parallel for if (outer * D * inner > MT_PARALLEL_GRAIN)
  for (int64_t block = 0; block < outer * blocks; block++) {
    int64_t o = block / blocks, i0 = (block % blocks) * width;
    int64_t len = inner - i0 < width ? inner - i0 : width;
    const scalar_t *xb = x + o * D * inner + i0;
    scalar_t *yb = y + o * D * inner + i0;
    acc_t col_max[SMAX_B], exps[SMAX_B];
    double col_sum[SMAX_B];
    for (int64_t j = 0; j < len; j++) col_max[j] = -INFINITY, col_sum[j] = 0;
    for (int64_t d = 0; d < D; d++)
      for (int64_t j = 0; j < len; j++) {
        acc_t v = (acc_t)MT_LD(xb + d * inner + j);
        col_max[j] = mt__max_nan_ct(col_max[j], v);
      }
    for (int64_t d = 0; d < D; d++) {
      for (int64_t j = 0; j < len; j++) exps[j] = (acc_t)MT_LD(xb + d * inner + j) - col_max[j];
      mt__exp_ct(exps, len, (acc_t)0);
      for (int64_t j = 0; j < len; j++) col_sum[j] += exps[j];
      if (!logsm)
        for (int64_t j = 0; j < len; j++) MT_ST(yb + d * inner + j, (acc_t)exps[j]);
    }
    /* col_sum becomes what the last pass needs: the log-sum-exp, or 1/sum */
    if (logsm)
      for (int64_t j = 0; j < len; j++) col_sum[j] = (double)col_max[j] + log(col_sum[j]);
    else
      for (int64_t j = 0; j < len; j++) col_sum[j] = 1 / col_sum[j];
    for (int64_t d = 0; d < D; d++)
      for (int64_t j = 0; j < len; j++) {
        scalar_t *yv = yb + d * inner + j;
        MT_ST(yv, (acc_t)(logsm ? (double)MT_LD(xb + d * inner + j) - col_sum[j] : (double)MT_LD(yv) * col_sum[j]));
      }
  }
}

/* inner == 1. softmax: gi = y (go - sum go y); log-softmax: gi = go - exp(y) sum go (the sum in
 * the lane order of vec_exp.h). gradOutput, output, gradInput (outer, D, inner) */
MT_AVX2_CLONES static void MT_G(softmax_backward_rows)(const scalar_t *g, const scalar_t *y, scalar_t *r, int64_t outer,
                                                       int64_t D, int64_t inner, int logsm) {
#pragma omp parallel for if (outer * D * inner > MT_PARALLEL_GRAIN)
  for (int64_t row = 0; row < outer * inner; row++) {
    int64_t base = (row / inner) * D * inner + row % inner;
    double buf[MT_ROW_CHUNK], sum_lanes[MT_ROW_LANES] = {0};
    acc_t exps[MT_ROW_CHUNK];
    for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {
      int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;
      for (int64_t j = 0; j < nc; j++) {
        int64_t k = base + (c0 + j) * inner;
        double gv = (double)MT_LD(g + k);
        buf[j] = logsm ? gv : gv * (double)MT_LD(y + k);
      }
      mt__row_sum_add(sum_lanes, buf, nc);
    }
    double sum = mt__row_sum_end(sum_lanes);
    for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {
      int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;
      for (int64_t j = 0; j < nc; j++) exps[j] = (acc_t)MT_LD(y + base + (c0 + j) * inner);
      if (logsm) mt__exp_ct(exps, nc, (acc_t)0);
      for (int64_t j = 0; j < nc; j++) {
        int64_t k = base + (c0 + j) * inner;
        double gv = (double)MT_LD(g + k), ev = (double)exps[j];
        MT_ST(r + k, (acc_t)(logsm ? gv - ev * sum : ev * (gv - sum)));
      }
    }
  }
}

/* inner > 1: the same in the blocks of softmax_blocked, with the per-column sums in an array.
 * gradOutput, output, gradInput (outer, D, inner) */
MT_AVX2_CLONES static void MT_G(softmax_backward_blocked)(const scalar_t *g, const scalar_t *y, scalar_t *r,
                                                          int64_t outer, int64_t D, int64_t inner, int logsm) {
  int64_t width = smax_block(outer, D, inner, sizeof(scalar_t)), blocks = (inner + width - 1) / width;
#pragma omp parallel for if (outer * D * inner > MT_PARALLEL_GRAIN)
  for (int64_t block = 0; block < outer * blocks; block++) {
    int64_t o = block / blocks, i0 = (block % blocks) * width;
    int64_t len = inner - i0 < width ? inner - i0 : width;
    int64_t base = o * D * inner + i0;
    double col_sum[SMAX_B];
    acc_t exps[SMAX_B];
    for (int64_t j = 0; j < len; j++) col_sum[j] = 0;
    for (int64_t d = 0; d < D; d++) {
      const scalar_t *yd = y + base + d * inner, *gd = g + base + d * inner;
      if (logsm)
        for (int64_t j = 0; j < len; j++) col_sum[j] += (double)MT_LD(gd + j);
      else
        for (int64_t j = 0; j < len; j++) col_sum[j] += (double)MT_LD(gd + j) * (double)MT_LD(yd + j);
    }
    for (int64_t d = 0; d < D; d++) {
      const scalar_t *yd = y + base + d * inner, *gd = g + base + d * inner;
      scalar_t *rd = r + base + d * inner;
      if (logsm) {
        for (int64_t j = 0; j < len; j++) exps[j] = (acc_t)MT_LD(yd + j);
        mt__exp_ct(exps, len, (acc_t)0);
        for (int64_t j = 0; j < len; j++) MT_ST(rd + j, (acc_t)((double)MT_LD(gd + j) - (double)exps[j] * col_sum[j]));
      } else {
        for (int64_t j = 0; j < len; j++)
          MT_ST(rd + j, (acc_t)((double)MT_LD(yd + j) * ((double)MT_LD(gd + j) - col_sum[j])));
      }
    }
  }
}

/* ---- class NLL ---------------------------------------------------------------------------- */
/* *nll = -sum w[t_i] x[i][t_i]; with smoothing, *smooth = -sum_i sum_c w[c] x[i][c], both added
 * in row order. input (N, C), targets (N), weights (C) */
static void MT_G(class_nll_forward)(const scalar_t *x, const int64_t *tg, const double *w, int64_t N, int64_t C,
                                    int smoothing, double *nll_out, double *smooth_out) {
  double nll = 0, smooth = 0;
  for (int64_t i = 0; i < N; i++) {
    const scalar_t *row = x + i * C;
    int64_t target = tg[i];
    nll -= w[target] * (double)MT_LD(row + target);
    if (smoothing > 0)
      for (int64_t c = 0; c < C; c++) smooth -= w[c] * (double)MT_LD(row + c);
  }
  *nll_out = nll, *smooth_out = smooth;
}

/* d/dx[i][c] = -norm (eps/C w[c] + (1-eps) w[c] [c == t_i]), eps the smoothing.
 * gradInput (N, C), targets (N), weights (C) */
MT_AVX2_CLONES static void MT_G(class_nll_backward)(scalar_t *r, const int64_t *tg, const double *w, int64_t N,
                                                    int64_t C, double smoothing, double norm) {
  for (int64_t i = 0; i < N; i++) {
    scalar_t *row = r + i * C;
    for (int64_t c = 0; c < C; c++) MT_ST(row + c, (acc_t)(-smoothing / (double)C * w[c] * norm));
    int64_t target = tg[i];
    MT_ST(row + target, (acc_t)(-(smoothing / (double)C + (1 - smoothing)) * w[target] * norm));
  }
}

/* ---- MSE and SmoothL1 -------------------------------------------------------------------- */
/* the sum of pw_loss(x - y) over elements [i, end) in PW_L lanes (smoothl1: a constant) */
MT_ALWAYS_INLINE double MT_G(pw_block_sum)(const scalar_t *x, const scalar_t *y, int64_t i, int64_t end, int smoothl1) {
  double lanes[PW_L] = {0};
  for (; i + PW_L <= end; i += PW_L)
    for (int j = 0; j < PW_L; j++) lanes[j] += pw_loss((double)MT_LD(x + i + j) - (double)MT_LD(y + i + j), smoothl1);
  for (int j = 0; i < end; i++, j++) lanes[j] += pw_loss((double)MT_LD(x + i) - (double)MT_LD(y + i), smoothl1);
  double total = 0;
  for (int j = 0; j < PW_L; j++) total += lanes[j];
  return total;
}

/* block_sums[b] = the sum of MSE's (x - y)^2, or SmoothL1's loss, over block b of block_len
 * elements (blocks in parallel). input, target (n) */
MT_AVX2_CLONES static void MT_G(pw_sums)(const scalar_t *x, const scalar_t *y, int64_t n, int64_t block_len,
                                         int64_t blocks, double *block_sums, int smoothl1) {
  if (smoothl1) {
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
    for (int64_t b = 0; b < blocks; b++) {
      int64_t i = b * block_len, end = i + block_len < n ? i + block_len : n;
      block_sums[b] = MT_G(pw_block_sum)(x, y, i, end, 1);
    }
  } else {
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
    for (int64_t b = 0; b < blocks; b++) {
      int64_t i = b * block_len, end = i + block_len < n ? i + block_len : n;
      block_sums[b] = MT_G(pw_block_sum)(x, y, i, end, 0);
    }
  }
}

/* MSE: r = k (x - y); SmoothL1: r = k clamp(x - y, -1, 1). input, target, gradInput (n) */
MT_AVX2_CLONES static void MT_G(pw_gradient)(const scalar_t *x, const scalar_t *y, scalar_t *r, int64_t n, double k,
                                             int smoothl1) {
  if (smoothl1) {
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; i++) {
      double d = (double)MT_LD(x + i) - (double)MT_LD(y + i);
      d = pw_sel(d > 1, 1.0, pw_sel(d < -1, -1.0, d));
      MT_ST(r + i, (acc_t)(k * d));
    }
  } else {
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
    for (int64_t i = 0; i < n; i++) MT_ST(r + i, (acc_t)(k * ((double)MT_LD(x + i) - (double)MT_LD(y + i))));
  }
}
