/* generic/nn_batchnorm_cl.c: channels-last batch normalization's loops for one float dtype (included
 * by nn_batchnorm_cl.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* The sums run over a block of adjacent channels c0 .. c0 + nb - 1, the elementwise passes over
 * the rows r0 .. r1 - 1 (a row: the C values of one (n, s)). */

/* sum[b], sq[b] of channels c0 + b, b < nb: sums, then sums of squares about the means.
 * input (N, S, C) */
static void MT_G(bn_cl_stats)(const scalar_t *x, int64_t N, int64_t C, int64_t S, int64_t c0, int64_t nb, double *sum,
                              double *sq) {
  double acc[BN_LANES][BN_CB], mean[BN_CB];
  memset(acc, 0, sizeof acc);
  for (int64_t n = 0; n < N; n++) {
    const scalar_t *row = x + n * S * C + c0;
    int64_t s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++)
        for (int64_t b = 0; b < nb; b++) acc[j][b] += (double)MT_LD(row + (s + j) * C + b);
    for (; s < S; s++)
      for (int64_t b = 0; b < nb; b++) acc[0][b] += (double)MT_LD(row + s * C + b);
  }
  for (int64_t b = 0; b < nb; b++) {
    sum[b] = cl_lanes_total(acc, b);
    mean[b] = sum[b] / (double)(N * S);
  }
  memset(acc, 0, sizeof acc);
  for (int64_t n = 0; n < N; n++) {
    const scalar_t *row = x + n * S * C + c0;
    int64_t s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++)
        for (int64_t b = 0; b < nb; b++) {
          double v = (double)MT_LD(row + (s + j) * C + b) - mean[b];
          acc[j][b] += v * v;
        }
    for (; s < S; s++)
      for (int64_t b = 0; b < nb; b++) {
        double v = (double)MT_LD(row + s * C + b) - mean[b];
        acc[0][b] += v * v;
      }
  }
  for (int64_t b = 0; b < nb; b++) sq[b] = cl_lanes_total(acc, b);
}

/* rows r0 .. r1 - 1 in memory order: y = (x - mean) k + b, then (fused) + residual (res NULL:
 * none) and max(0, .) (relu); coef holds the C means, then the C k, then the C b.
 * input, residual, output (N, S, C) */
static void MT_G(bn_cl_normalize)(const scalar_t *x, const scalar_t *res, scalar_t *y, int relu, int64_t C, int64_t r0,
                                  int64_t r1, const double *coef) {
  const double *mean = coef, *k = coef + C, *b = coef + 2 * C;
  for (int64_t row = r0; row < r1; row++) {
    if (!res && !relu) {
      for (int64_t c = 0; c < C; c++)
        MT_ST(y + row * C + c, (acc_t)(((double)MT_LD(x + row * C + c) - mean[c]) * k[c] + b[c]));
      continue;
    }
    for (int64_t c = 0; c < C; c++) MT_G(bn_normalize_elem)(x, res, y, relu, row * C + c, mean[c], k[c], b[c]);
  }
}

/* sum_go[b] = sum go, sum_go_x[b] = sum go (x - mean[b]) of channels c0 + b, b < nb, go the
 * gradOutput, masked by the ReLU when masked (a constant). input, gradOutput, output (N, S, C) */
MT_ALWAYS_INLINE void MT_G(bn_cl_dot_body)(const scalar_t *x, const scalar_t *g, const scalar_t *y, int64_t N,
                                           int64_t C, int64_t S, int64_t c0, int64_t nb, const double *mean, int masked,
                                           double *sum_go, double *sum_go_x) {
  double go_lanes[BN_LANES][BN_CB], go_x_lanes[BN_LANES][BN_CB];
  memset(go_lanes, 0, sizeof go_lanes);
  memset(go_x_lanes, 0, sizeof go_x_lanes);
  for (int64_t n = 0; n < N; n++) {
    int64_t base = n * S * C + c0, s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++)
        for (int64_t b = 0; b < nb; b++) {
          int64_t i = base + (s + j) * C + b;
          double go = MT_G(bn_grad_output)(g, y, i, masked);
          go_lanes[j][b] += go;
          go_x_lanes[j][b] += go * ((double)MT_LD(x + i) - mean[b]);
        }
    for (; s < S; s++)
      for (int64_t b = 0; b < nb; b++) {
        int64_t i = base + s * C + b;
        double go = MT_G(bn_grad_output)(g, y, i, masked);
        go_lanes[0][b] += go;
        go_x_lanes[0][b] += go * ((double)MT_LD(x + i) - mean[b]);
      }
  }
  for (int64_t b = 0; b < nb; b++) {
    sum_go[b] = cl_lanes_total(go_lanes, b);
    sum_go_x[b] = cl_lanes_total(go_x_lanes, b);
  }
}
/* the body above for the mask as a constant (y NULL: unmasked) */
static void MT_G(bn_cl_dot)(const scalar_t *x, const scalar_t *g, const scalar_t *y, int64_t N, int64_t C, int64_t S,
                            int64_t c0, int64_t nb, const double *mean, double *sum_go, double *sum_go_x) {
  if (y) MT_G(bn_cl_dot_body)(x, g, y, N, C, S, c0, nb, mean, 1, sum_go, sum_go_x);
  else MT_G(bn_cl_dot_body)(x, g, y, N, C, S, c0, nb, mean, 0, sum_go, sum_go_x);
}

/* rows r0 .. r1 - 1 in memory order: gradInput into r when want_r, gradResidual into gres when
 * want_gres (constants); coef holds {mean, k, a, bcoef} per channel.
 * input, gradOutput, output, gradInput, gradResidual (N, S, C) */
MT_ALWAYS_INLINE void MT_G(bn_cl_grad_input_body)(const scalar_t *x, const scalar_t *g, const scalar_t *y, scalar_t *r,
                                                  scalar_t *gres, int64_t C, int64_t r0, int64_t r1, const double *coef,
                                                  int masked, int want_r, int want_gres) {
  for (int64_t row = r0; row < r1; row++)
    for (int64_t c = 0; c < C; c++) {
      int64_t i = row * C + c;
      double go = MT_G(bn_grad_output)(g, y, i, masked);
      MT_G(bn_grad_input_elem)(x, r, gres, i, go, coef + 4 * c, want_r, want_gres);
    }
}
/* the body above for the flags as constants: masked unless y is NULL, gradInput unless r is NULL,
 * gradResidual unless gres is NULL (one of r and gres is not) */
static void MT_G(bn_cl_grad_input)(const scalar_t *x, const scalar_t *g, const scalar_t *y, scalar_t *r, scalar_t *gres,
                                   int64_t C, int64_t r0, int64_t r1, const double *coef) {
  if (y && r && gres) MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 1, 1, 1);
  else if (y && r) MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 1, 1, 0);
  else if (y) MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 1, 0, 1);
  else if (r && gres) MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 0, 1, 1);
  else if (r) MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 0, 1, 0);
  else MT_G(bn_cl_grad_input_body)(x, g, y, r, gres, C, r0, r1, coef, 0, 0, 1);
}
