/* generic/nn_window_pool.c: window_maxpool2d's loop for one float dtype (included by
 * nn_window_pool.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* the maximum over rows [row_start[i], row_end[i]) x columns [col_start[j], col_end[j]) of each
 * output cell (i, j) and its flat 1-based position in the whole input; the bounds are given per
 * plane (per_plane: planes x oH and planes x oW) or once for all planes (oH and oW).
 * input (planes, H, W), output and indices (planes, oH, oW) */
static void MT_G(window_max_pool)(const scalar_t *x, scalar_t *y, int64_t *indices, const int64_t *row_starts,
                                  const int64_t *row_ends, const int64_t *col_starts, const int64_t *col_ends,
                                  const mt_pool_geom *g, int per_plane) {
#pragma omp parallel for if (g->planes * g->oH * g->oW > MT_PARALLEL_GRAIN / 16)
  for (int64_t plane = 0; plane < g->planes; plane++) {
    const scalar_t *xp = x + plane * g->H * g->W;
    const int64_t *row_start = row_starts + (per_plane ? plane * g->oH : 0);
    const int64_t *row_end = row_ends + (per_plane ? plane * g->oH : 0);
    const int64_t *col_start = col_starts + (per_plane ? plane * g->oW : 0);
    const int64_t *col_end = col_ends + (per_plane ? plane * g->oW : 0);
    for (int64_t i = 0; i < g->oH; i++)
      for (int64_t j = 0; j < g->oW; j++) {
        /* selects, not branches (random data mispredicts "larger than the best so far"); a
         * NaN, rare, is found by a second pass that takes the first one */
        int64_t best_index = row_start[i] * g->W + col_start[j];
        acc_t best = MT_LD(xp + best_index);
        int has_nan = 0;
        for (int64_t iy = row_start[i]; iy < row_end[i]; iy++)
          for (int64_t ix = col_start[j]; ix < col_end[j]; ix++) {
            acc_t v = MT_LD(xp + iy * g->W + ix);
            int take = v > best;
            best = take ? v : best, best_index = take ? iy * g->W + ix : best_index;
            has_nan |= v != v;
          }
        for (int64_t iy = row_start[i]; has_nan && iy < row_end[i]; iy++)
          for (int64_t ix = col_start[j]; ix < col_end[j]; ix++) {
            acc_t v = MT_LD(xp + iy * g->W + ix);
            if (v != v) {
              best = v, best_index = iy * g->W + ix, has_nan = 0;
              break;
            }
          }
        int64_t o = (plane * g->oH + i) * g->oW + j;
        MT_ST(y + o, best);
        indices[o] = plane * g->H * g->W + best_index + 1;
      }
  }
}
