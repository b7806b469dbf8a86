/* generic/nn_batchnorm.c: NCHW batch normalization's per-channel loops for one float dtype (included
 * by nn_batchnorm.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* Each function runs one channel c, in the per-channel loop that threads share. */

/* channel c: *sum_out = its sum, then *sq_out = its sum of squares about the mean.
 * input (N, C, S) */
static void MT_G(bn_stats)(const scalar_t *x, int64_t N, int64_t C, int64_t S, int64_t c, double *sum_out,
                           double *sq_out) {
  double acc[BN_LANES] = {0};
  for (int64_t n = 0; n < N; n++) {
    const scalar_t *row = x + (n * C + c) * S;
    int64_t s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++) acc[j] += (double)MT_LD(row + s + j);
    for (; s < S; s++) acc[0] += (double)MT_LD(row + s);
  }
  double sum = bn_lanes_total(acc);
  double mean = sum / (double)(N * S);
  for (int j = 0; j < BN_LANES; j++) acc[j] = 0;
  for (int64_t n = 0; n < N; n++) {
    const scalar_t *row = x + (n * C + c) * S;
    int64_t s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++) {
        double v = (double)MT_LD(row + s + j) - mean;
        acc[j] += v * v;
      }
    for (; s < S; s++) {
      double v = (double)MT_LD(row + s) - mean;
      acc[0] += v * v;
    }
  }
  *sum_out = sum;
  *sq_out = bn_lanes_total(acc);
}

/* channel c: y = (x - mean) k + b with coef = {mean, k, b}, then (fused) + residual (res NULL:
 * none) and max(0, .) (relu). input, residual, output (N, C, S) */
static void MT_G(bn_normalize)(const scalar_t *x, const scalar_t *res, scalar_t *y, int relu, int64_t N, int64_t C,
                               int64_t S, int64_t c, const double *coef) {
  for (int64_t n = 0; n < N; n++) {
    int64_t base = (n * C + c) * S;
    if (!res && !relu) {
      for (int64_t s = 0; s < S; s++)
        MT_ST(y + base + s, (acc_t)(((double)MT_LD(x + base + s) - coef[0]) * coef[1] + coef[2]));
      continue;
    }
    for (int64_t s = 0; s < S; s++) MT_G(bn_normalize_elem)(x, res, y, relu, base + s, coef[0], coef[1], coef[2]);
  }
}

/* channel c: *sum_go = sum go and *sum_go_x = sum go (x - mean), go the gradOutput, masked by the
 * ReLU when masked (a constant). input, gradOutput, output (N, C, S) */
MT_ALWAYS_INLINE void MT_G(bn_dot_body)(const scalar_t *x, const scalar_t *g, const scalar_t *y, int64_t N, int64_t C,
                                        int64_t S, int64_t c, double mean, int masked, double *sum_go,
                                        double *sum_go_x) {
  double go_lanes[BN_LANES] = {0}, go_x_lanes[BN_LANES] = {0};
  for (int64_t n = 0; n < N; n++) {
    int64_t base = (n * C + c) * S, s = 0;
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int j = 0; j < BN_LANES; j++) {
        int64_t i = base + s + j;
        double go = MT_G(bn_grad_output)(g, y, i, masked);
        go_lanes[j] += go;
        go_x_lanes[j] += go * ((double)MT_LD(x + i) - mean);
      }
    for (; s < S; s++) {
      int64_t i = base + s;
      double go = MT_G(bn_grad_output)(g, y, i, masked);
      go_lanes[0] += go;
      go_x_lanes[0] += go * ((double)MT_LD(x + i) - mean);
    }
  }
  *sum_go = bn_lanes_total(go_lanes);
  *sum_go_x = bn_lanes_total(go_x_lanes);
}
/* the body above for the mask as a constant (y NULL: unmasked) */
static void MT_G(bn_dot)(const scalar_t *x, const scalar_t *g, const scalar_t *y, int64_t N, int64_t C, int64_t S,
                         int64_t c, double mean, double *sum_go, double *sum_go_x) {
  if (y) MT_G(bn_dot_body)(x, g, y, N, C, S, c, mean, 1, sum_go, sum_go_x);
  else MT_G(bn_dot_body)(x, g, y, N, C, S, c, mean, 0, sum_go, sum_go_x);
}

/* channel c: gradInput into r when want_r, gradResidual into gres when want_gres (constants), with
 * coef = {mean, k, a, bcoef}. input, gradOutput, output, gradInput, gradResidual (N, C, S) */
MT_ALWAYS_INLINE void MT_G(bn_grad_input_body)(const scalar_t *x, const scalar_t *g, const scalar_t *y, scalar_t *r,
                                               scalar_t *gres, int64_t N, int64_t C, int64_t S, int64_t c,
                                               const double *coef, int masked, int want_r, int want_gres) {
  for (int64_t n = 0; n < N; n++) {
    int64_t base = (n * C + c) * S;
    for (int64_t s = 0; s < S; s++) {
      double go = MT_G(bn_grad_output)(g, y, base + s, masked);
      MT_G(bn_grad_input_elem)(x, r, gres, base + s, go, coef, want_r, want_gres);
    }
  }
}
/* the body above for the flags as constants: masked unless y is NULL, gradInput unless r is NULL,
 * gradResidual unless gres is NULL (one of r and gres is not) */
static void MT_G(bn_grad_input)(const scalar_t *x, const scalar_t *g, const scalar_t *y, scalar_t *r, scalar_t *gres,
                                int64_t N, int64_t C, int64_t S, int64_t c, const double *coef) {
  if (y && r && gres) MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 1, 1, 1);
  else if (y && r) MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 1, 1, 0);
  else if (y) MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 1, 0, 1);
  else if (r && gres) MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 0, 1, 1);
  else if (r) MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 0, 1, 0);
  else MT_G(bn_grad_input_body)(x, g, y, r, gres, N, C, S, c, coef, 0, 0, 1);
}
