/* generic/nn_vol_pool.c: 3-d max pooling's loops for one float dtype (included by nn_vol_pool.c
 * through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* forward: each output cell the maximum over its window's taps inside the volume and its 0-based
 * position in the T x H x W volume. col_taps: each output column's taps [lo, hi) along W, as
 * pairs. input (C, T, H, W), output and indices (C, oT, oH, oW) */
static void MT_G(max_pool3d_forward)(const scalar_t *x, scalar_t *y, int64_t *indices, const int64_t *col_taps,
                                     const mt_vol_geom *g) {
  const int64_t volume = g->T * g->H * g->W, out_volume = g->oT * g->oH * g->oW;
#pragma omp parallel for schedule(static) if (g->C * out_volume > MT_PARALLEL_GRAIN / 8)
  for (int64_t plane = 0; plane < g->C; plane++) {
    const scalar_t *xp = x + plane * volume;
    for (int64_t ot = 0; ot < g->oT; ot++) {
      int64_t t0 = ot * g->dT - g->pT, kt0, kt1; /* the window's first frame, its taps [kt0, kt1) along T */
      taps(t0, g->lT, g->kT, g->T, &kt0, &kt1);
      for (int64_t oy = 0; oy < g->oH; oy++) {
        int64_t y0 = oy * g->dH - g->pH, kh0, kh1;
        taps(y0, g->lH, g->kH, g->H, &kh0, &kh1);
        for (int64_t ox = 0; ox < g->oW; ox++) {
          const int64_t x0 = ox * g->dW - g->pW, kw0 = col_taps[2 * ox], kw1 = col_taps[2 * ox + 1];
          /* branch-free max (strictly larger wins: ties keep the first); a NaN, rare, is found
           * by a second pass that takes the first one */
          int64_t best_index = kt0 < kt1 && kh0 < kh1 && kw0 < kw1
                                   ? ((t0 + kt0 * g->lT) * g->H + y0 + kh0 * g->lH) * g->W + x0 + kw0 * g->lW
                                   : -1; /* the first tap: it stays the maximum if nothing beats -inf */
          acc_t best = -INFINITY;
          int has_nan = 0;
          for (int64_t i = kt0; i < kt1; i++)
            for (int64_t j = kh0; j < kh1; j++) {
              const int64_t row = ((t0 + i * g->lT) * g->H + y0 + j * g->lH) * g->W + x0;
              for (int64_t k = kw0; k < kw1; k++) {
                const int64_t pos = row + k * g->lW;
                acc_t v = MT_LD(xp + pos);
                int greater = v > best;
                best = greater ? v : best, best_index = greater ? pos : best_index;
                has_nan |= v != v;
              }
            }
          for (int64_t i = kt0; has_nan && i < kt1; i++)
            for (int64_t j = kh0; has_nan && j < kh1; j++) {
              const int64_t row = ((t0 + i * g->lT) * g->H + y0 + j * g->lH) * g->W + x0;
              for (int64_t k = kw0; k < kw1; k++) {
                acc_t v = MT_LD(xp + row + k * g->lW);
                if (v != v) {
                  best = v, best_index = row + k * g->lW, has_nan = 0;
                  break;
                }
              }
            }
          const int64_t o = plane * out_volume + (ot * g->oH + oy) * g->oW + ox;
          MT_ST(y + o, best);
          indices[o] = best_index < 0 ? 0 : best_index;
        }
      }
    }
  }
}

/* backward: each output gradient added at its index; *bad: a plane holding an index outside its
 * volume (left as it is when there is none). gradOutput and indices (C, oT, oH, oW), gradInput
 * (C, T, H, W) */
static void MT_G(max_pool3d_backward)(const scalar_t *dy, scalar_t *dx, const int64_t *indices, const mt_vol_geom *g,
                                      int64_t *bad) {
  const int64_t volume = g->T * g->H * g->W, out_volume = g->oT * g->oH * g->oW;
#pragma omp parallel for schedule(static) if (g->C * volume > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->C; plane++) {
    scalar_t *dxp = dx + plane * volume;
    const scalar_t *dyp = dy + plane * out_volume;
    const int64_t *ip = indices + plane * out_volume;
    for (int64_t v = 0; v < volume; v++) MT_ST(dxp + v, (acc_t)0);
    for (int64_t o = 0; o < out_volume; o++) {
      if (ip[o] < 0 || ip[o] >= volume) {
#pragma omp atomic write
        *bad = plane;
        break;
      }
      MT_ST(dxp + ip[o], (acc_t)MT_LD(dxp + ip[o]) + (acc_t)MT_LD(dyp + o));
    }
  }
}
