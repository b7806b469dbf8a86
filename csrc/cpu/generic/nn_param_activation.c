/* generic/nn_param_activation.c: PReLU's and RReLU's loops for one float dtype (included by
 * nn_param_activation.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* y = x where x > 0, else the slope of the plane's channel times x.
 * input (outer, C, inner), weight (C), output (outer, C, inner) */
MT_AVX2_CLONES static void MT_G(prelu_forward)(const scalar_t *x, const scalar_t *w, scalar_t *y, int64_t outer,
                                               int64_t C, int64_t inner) {
#pragma omp parallel for schedule(static) if (outer * C * inner > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < outer * C; plane++) {
    acc_t slope = MT_LD(w + plane % C);
    const scalar_t *x_plane = x + plane * inner;
    scalar_t *y_plane = y + plane * inner;
    for (int64_t i = 0; i < inner; i++) {
      acc_t v = MT_LD(x_plane + i);
      MT_ST(y_plane + i, v > 0 ? v : (acc_t)(slope * v));
    }
  }
}

/* gradInput r over all planes (r NULL: none); gradWeight gw from one partial sum per plane (in
 * double, a fixed partition, so the result does not depend on the thread count), added up per
 * slope in plane order: no two threads write one slope (part NULL: no gradWeight).
 * input, gradOutput, gradInput (outer, C, inner); weight, gradWeight (C); part (outer, C) */
MT_AVX2_CLONES static void MT_G(prelu_backward)(const scalar_t *x, const scalar_t *w, const scalar_t *g, scalar_t *r,
                                                scalar_t *gw, double *part, double scale, int64_t outer, int64_t C,
                                                int64_t inner) {
#pragma omp parallel for schedule(static) if (outer * C * inner > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < outer * C; plane++) {
    acc_t slope = MT_LD(w + plane % C);
    const scalar_t *x_plane = x + plane * inner, *g_plane = g + plane * inner;
    if (part) { /* min(x, 0) by a select (no branch on random signs), four sums in turn */
      double sums[4] = {0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 4 <= inner; i += 4)
        for (int k = 0; k < 4; k++) {
          acc_t v = MT_LD(x_plane + i + k);
          sums[k] += (double)(v > 0 ? (acc_t)0 : v) * (double)MT_LD(g_plane + i + k);
        }
      for (; i < inner; i++) {
        acc_t v = MT_LD(x_plane + i);
        sums[0] += (double)(v > 0 ? (acc_t)0 : v) * (double)MT_LD(g_plane + i);
      }
      part[plane] = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    }
    if (r) {
      scalar_t *r_plane = r + plane * inner;
      for (int64_t i = 0; i < inner; i++) {
        acc_t v = MT_LD(x_plane + i), go = MT_LD(g_plane + i);
        MT_ST(r_plane + i, v > 0 ? go : (acc_t)(slope * go));
      }
    }
  }
  if (part) {
#pragma omp parallel for schedule(static) if (outer * C > 4096)
    for (int64_t c = 0; c < C; c++) {
      double sum = 0;
      for (int64_t o = 0; o < outer; o++) sum += part[o * C + c];
      MT_ST(gw + c, (acc_t)((double)MT_LD(gw + c) + scale * sum));
    }
  }
}

/* RReLU in training, in chunks of RRELU_CHUNK elements: a branch-free pass keeps the positive
 * elements (slope 1) and lists the others, then only the listed ones draw their slope
 * lo + (hi - lo) u, u from counter offset + i, rounded to the dtype (stepped below hi as uniform
 * does). input, output, noise (the slopes) (n) */
MT_AVX2_CLONES static void MT_G(rrelu_forward)(const scalar_t *x, scalar_t *y, scalar_t *noise, int64_t n,
                                               uint64_t seed, uint64_t offset, double lo, double hi) {
  int64_t chunks = (n + RRELU_CHUNK - 1) / RRELU_CHUNK;
  scalar_t one;
  MT_ST(&one, (acc_t)1);
#pragma omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN / 16)
  for (int64_t chunk = 0; chunk < chunks; chunk++) {
    int64_t i0 = chunk * RRELU_CHUNK, i1 = i0 + RRELU_CHUNK < n ? i0 + RRELU_CHUNK : n;
    int32_t listed[RRELU_CHUNK];
    int count = 0;
    for (int64_t i = i0; i < i1; i++) {
      noise[i] = one;
      y[i] = x[i];
      listed[count] = (int32_t)(i - i0);
      count += !(MT_LD(x + i) > 0);
    }
    for (int j = 0; j < count; j++) {
      int64_t i = i0 + listed[j];
      scalar_t slope;
      MT_ST(&slope, lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i));
      if ((double)MT_LD(&slope) >= hi && hi > lo) step_down(&slope, sizeof slope);
      noise[i] = slope;
      MT_ST(y + i, (acc_t)(MT_LD(x + i) * MT_LD(&slope)));
    }
  }
}
