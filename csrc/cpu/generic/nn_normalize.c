/* generic/nn_normalize.c: nn.Normalize's row loops for one float dtype (included by
 * nn_normalize.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* one row's sum |x|^p (max |x| for p = inf) into *power_sum and, with g (NULL: none, a constant
 * once inlined), sum x g into *dot. x, g (D) */
MT_ALWAYS_INLINE void MT_G(normalize_row_stats)(const scalar_t *x, const scalar_t *g, int64_t D, double p, int kind,
                                                double *power_sum, double *dot) {
  double sum_lanes[NRM_L] = {0}, dot_lanes[NRM_L] = {0};
  int64_t d = 0;
  for (; d + NRM_L <= D; d += NRM_L)
    for (int j = 0; j < NRM_L; j++) {
      double v = (double)MT_LD(x + d + j), abs_v = fabs(v);
      sum_lanes[j] = kind == NRM_PINF ? (abs_v > sum_lanes[j] || isnan(abs_v) ? abs_v : sum_lanes[j])
                                      : sum_lanes[j] + nrm_pow(abs_v, p, kind);
      if (g) dot_lanes[j] += v * (double)MT_LD(g + d + j);
    }
  for (int j = 0; d < D; d++, j++) {
    double v = (double)MT_LD(x + d), abs_v = fabs(v);
    sum_lanes[j] = kind == NRM_PINF ? (abs_v > sum_lanes[j] || isnan(abs_v) ? abs_v : sum_lanes[j])
                                    : sum_lanes[j] + nrm_pow(abs_v, p, kind);
    if (g) dot_lanes[j] += v * (double)MT_LD(g + d);
  }
  double sum = kind == NRM_PINF ? sum_lanes[0] : 0, dot_sum = 0;
  for (int j = 0; j < NRM_L; j++) {
    sum = kind == NRM_PINF ? (sum_lanes[j] > sum || isnan(sum_lanes[j]) ? sum_lanes[j] : sum) : sum + sum_lanes[j];
    dot_sum += dot_lanes[j];
  }
  *power_sum = sum, *dot = dot_sum;
}

/* y = x / norm(x) per row. input (N, D), output (N, D) */
static void MT_G(normalize_forward)(const scalar_t *x, scalar_t *y, int64_t N, int64_t D, double p, double eps,
                                    int kind) {
#pragma omp parallel for if (N * D > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < N; i++) {
    const scalar_t *xr = x + i * D;
    scalar_t *yr = y + i * D;
    double power_sum, dot;
    MT_G(normalize_row_stats)(xr, NULL, D, p, kind, &power_sum, &dot);
    (void)dot;
    double inv = 1 / nrm_norm(power_sum, p, eps, kind);
    for (int64_t d = 0; d < D; d++) MT_ST(yr + d, (acc_t)((double)MT_LD(xr + d) * inv));
  }
}

/* d(x_i / n)/dx_j = delta_ij / n - x_i dn/dx_j / n^2, dn/dx_j = sign(x_j) |x_j|^(p-1) n / n^p (p
 * finite), or sign(x_k) at the first k with |x_k| = max |x| (p = inf): r = g / n - q b, with q
 * the sign-power term and b = (sum x g) / (n^p n) (or / n^2), n the norm.
 * input, gradOutput, gradInput (N, D) */
static void MT_G(normalize_backward)(const scalar_t *x, const scalar_t *g, scalar_t *r, int64_t N, int64_t D, double p,
                                     double eps, int kind) {
#pragma omp parallel for if (N * D > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < N; i++) {
    const scalar_t *xr = x + i * D, *gr = g + i * D;
    scalar_t *rr = r + i * D;
    double power_sum, dot;
    MT_G(normalize_row_stats)(xr, gr, D, p, kind, &power_sum, &dot);
    double n = nrm_norm(power_sum, p, eps, kind), inv = 1 / n;
    double b = kind == NRM_PINF ? dot / (n * n) : dot / ((power_sum + eps) * n);
    int64_t k = -1; /* p = inf: the first index of the max */
    if (kind == NRM_PINF)
      for (int64_t d = 0; d < D && k < 0; d++)
        if (fabs((double)MT_LD(xr + d)) == power_sum) k = d;
    for (int64_t d = 0; d < D; d++) {
      double v = (double)MT_LD(xr + d), gv = (double)MT_LD(gr + d);
      double q = kind == NRM_P2     ? v
                 : kind == NRM_P1   ? nrm_sign(v)
                 : kind == NRM_PINF ? (d == k ? nrm_sign(v) : 0.0)
                                    : nrm_sign(v) * pow(fabs(v), p - 1);
      MT_ST(rr + d, (acc_t)(gv * inv - q * b));
    }
  }
}
