/* generic/nn_col2vol.c: col2vol for one float dtype (included by nn_vol.c through
 * generate_float.h). */

/* per channel: an acc_t volume accumulates the channel's kT*kH*kW rows, stored once.
 * col (C kT kH kW) x (oT oH oW), x (C, T, H, W). 0 when out of memory for a volume. */
static int MT_G(col2vol)(const scalar_t *col, scalar_t *x, const mt_vol_geom *g) {
  const int64_t L = g->oT * g->oH * g->oW, V = g->T * g->H * g->W, kk = (int64_t)g->kT * g->kH * g->kW;
  int fail = 0;
#pragma omp parallel if (g->C * kk * L > 4 * MT_PARALLEL_GRAIN)
  {
    acc_t *acc = malloc(sizeof(acc_t) * (size_t)V);
    if (!acc) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(static)
    for (int64_t c = 0; c < g->C; c++) {
      if (!acc) continue;
      for (int64_t v = 0; v < V; v++) acc[v] = 0;
      for (int64_t k = 0; k < kk; k++) {
        const int64_t kx = k % g->kW, ky = (k / g->kW) % g->kH, kt = k / (g->kW * g->kH);
        const scalar_t *src = col + (c * kk + k) * L;
        const int64_t offx = kx * g->lW - g->pW;
        int64_t lo, hi;
        inside(offx, g->dW, g->W, g->oW, &lo, &hi);
        for (int64_t ot = 0; ot < g->oT; ot++) {
          const int64_t it = ot * g->dT - g->pT + kt * g->lT;
          for (int64_t oy = 0; oy < g->oH; oy++) {
            const int64_t iy = oy * g->dH - g->pH + ky * g->lH;
            if (it < 0 || it >= g->T || iy < 0 || iy >= g->H) continue;
            const scalar_t *restrict src_row = src + (ot * g->oH + oy) * g->oW;
            acc_t *restrict acc_row = acc + (it * g->H + iy) * g->W + offx;
            for (int64_t ox = lo; ox < hi; ox++) acc_row[ox * g->dW] += (acc_t)MT_LD(src_row + ox);
          }
        }
      }
      scalar_t *x_channel = x + c * V;
      for (int64_t v = 0; v < V; v++) MT_ST(x_channel + v, acc[v]);
    }
    free(acc);
  }
  return !fail;
}
