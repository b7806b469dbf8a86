/* generic/nn_activation.c: the pointwise activations' loops for one float dtype (included by
 * nn_activation.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* y = f(x) for the activation kind (MT_ACT_*; alpha: LeakyReLU's slope, ELU's alpha), one loop
 * per kind. input (n), output (n); y may be x */
MT_AVX2_CLONES static void MT_G(activation_forward)(const scalar_t *x, scalar_t *y, int64_t n, int kind, double alpha) {
  switch (kind) {
    case MT_ACT_RELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t v = MT_LD(x + i);
        MT_ST(y + i, v > 0 ? v : (acc_t)0);
      }
      break;
    case MT_ACT_LEAKY_RELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t v = MT_LD(x + i);
        MT_ST(y + i, v > 0 ? v : (acc_t)(v * alpha));
      }
      break;
    case MT_ACT_SIGMOID:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t v = MT_LD(x + i);
        MT_ST(y + i, (acc_t)1 / ((acc_t)1 + ACT_EXP(acc_t, -v)));
      }
      break;
    case MT_ACT_ELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t v = MT_LD(x + i);
        MT_ST(y + i, ELU_FWD(acc_t, v, alpha));
      }
      break;
    default: /* MT_ACT_TANH */
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t v = MT_LD(x + i);
        MT_ST(y + i, ACT_TANH(acc_t, v));
      }
      break;
  }
}

/* gradInput = f'(saved) gradOutput, from the saved input (ReLU, LeakyReLU) or output (Sigmoid,
 * Tanh, ELU). gradOutput (n), saved (n), gradInput (n) */
MT_AVX2_CLONES static void MT_G(activation_backward)(const scalar_t *g, const scalar_t *saved, scalar_t *r, int64_t n,
                                                     int kind, double alpha) {
  switch (kind) {
    case MT_ACT_RELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t go = MT_LD(g + i), v = MT_LD(saved + i);
        MT_ST(r + i, v > 0 ? go : (acc_t)0);
      }
      break;
    case MT_ACT_LEAKY_RELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t go = MT_LD(g + i), v = MT_LD(saved + i);
        MT_ST(r + i, v > 0 ? go : (acc_t)(go * alpha));
      }
      break;
    case MT_ACT_SIGMOID:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t go = MT_LD(g + i), v = MT_LD(saved + i);
        MT_ST(r + i, go * v * (1 - v));
      }
      break;
    case MT_ACT_ELU:
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t go = MT_LD(g + i), v = MT_LD(saved + i);
        MT_ST(r + i, ELU_BWD(acc_t, go, v, alpha));
      }
      break;
    default: /* MT_ACT_TANH */
#pragma omp parallel for if (n > MT_PARALLEL_GRAIN)
      for (int64_t i = 0; i < n; i++) {
        acc_t go = MT_LD(g + i), v = MT_LD(saved + i);
        MT_ST(r + i, go * (1 - v * v));
      }
      break;
  }
}
