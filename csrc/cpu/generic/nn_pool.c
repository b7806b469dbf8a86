/* generic/nn_pool.c: 2-d max, average and adaptive average pooling's loops for one float dtype
 * (included by nn_pool.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD,
 * MT_ST). Planes are dense, NCHW or channels-last: a plane's pixels are g->cs apart. */

/* max pooling over windows one column wide over whole rows (kW = dW = 1, no column padding,
 * NCHW: what TemporalMaxPooling asks for): the maximum of kH rows taken row against row, a pass
 * along contiguous memory per input row instead of a window walk per output cell. Same results
 * as the general loop: the first NaN wins, then the first of equal maxima.
 * input (planes, H, W), output and indices (planes, oH, W) */
MT_AVX2_CLONES static void MT_G(max_rows)(const scalar_t *x, scalar_t *y, int64_t *indices, const mt_pool_geom *g) {
  int64_t W = g->W, work = g->planes * g->oH * W * g->kH;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++) {
    const scalar_t *xp = x + plane * g->H * W;
    for (int64_t oy = 0; oy < g->oH; oy++) {
      int64_t y0 = oy * g->dH - g->pH, y1 = y0 + g->kH < g->H ? y0 + g->kH : g->H;
      if (y0 < 0) y0 = 0;
      scalar_t *out_row = y + (plane * g->oH + oy) * W;
      int64_t *index_row = indices + (plane * g->oH + oy) * W;
      for (int64_t ix = 0; ix < W; ix++) index_row[ix] = y0 * W + ix;
      if (y0 >= y1) { /* a window wholly in the padding, as the general loop leaves it */
        for (int64_t ix = 0; ix < W; ix++) MT_ST(out_row + ix, -INFINITY);
        continue;
      }
      for (int64_t ix = 0; ix < W; ix++) out_row[ix] = xp[y0 * W + ix];
      for (int64_t iy = y0 + 1; iy < y1; iy++)
        for (int64_t ix = 0; ix < W; ix++) {
          acc_t v = MT_LD(xp + iy * W + ix), best = MT_LD(out_row + ix);
          int take = (v > best) | ((v != v) & (best == best)); /* selects, not branches: random signs */
          MT_ST(out_row + ix, take ? v : best);
          index_row[ix] = take ? iy * W + ix : index_row[ix];
        }
    }
  }
}

/* max pooling: each output cell the maximum of its window clipped to the input, and its 0-based
 * position in the H x W plane; NaN wins (the first one), then the first of equal maxima.
 * input (planes, H, W), output and indices (planes, oH, oW) */
static void MT_G(max_forward)(const scalar_t *x, scalar_t *y, int64_t *indices, const mt_pool_geom *g) {
  if (g->kW == 1 && g->dW == 1 && g->pW == 0 && g->cs == 1 && g->oW == g->W && g->oH > 0 && g->H > 0) {
    MT_G(max_rows)(x, y, indices, g);
    return;
  }
  int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++) {
    const scalar_t *xp = x + mt__pool_plane_offset(plane, g->H * g->W, g->cs);
    int64_t out_base = mt__pool_plane_offset(plane, g->oH * g->oW, g->cs), pixel_stride = g->cs;
    for (int64_t oy = 0; oy < g->oH; oy++)
      for (int64_t ox = 0; ox < g->oW; ox++) {
        int64_t y0 = oy * g->dH - g->pH, x0 = ox * g->dW - g->pW;
        int64_t y1 = y0 + g->kH < g->H ? y0 + g->kH : g->H, x1 = x0 + g->kW < g->W ? x0 + g->kW : g->W;
        if (y0 < 0) y0 = 0;
        if (x0 < 0) x0 = 0;
        /* selects, not branches (on random data "larger than the best so far" mispredicts
         * about twice per 3x3 window); a NaN, rare, is found by a second pass: the first wins */
        acc_t best = -INFINITY;
        int64_t best_index = y0 * g->W + x0;
        int has_nan = 0;
        for (int64_t iy = y0; iy < y1; iy++)
          for (int64_t ix = x0; ix < x1; ix++) {
            acc_t v = MT_LD(xp + (iy * g->W + ix) * pixel_stride);
            int take = v > best;
            best = take ? v : best, best_index = take ? iy * g->W + ix : best_index;
            has_nan |= v != v;
          }
        for (int64_t iy = y0; has_nan && iy < y1; iy++)
          for (int64_t ix = x0; ix < x1; ix++) {
            acc_t v = MT_LD(xp + (iy * g->W + ix) * pixel_stride);
            if (v != v) {
              best = v, best_index = iy * g->W + ix, has_nan = 0;
              break;
            }
          }
        int64_t o = out_base + (oy * g->oW + ox) * pixel_stride;
        MT_ST(y + o, best);
        indices[o] = best_index;
      }
  }
}

/* max pooling backward: each output gradient added at its index. 1 (and *bad one of them) when
 * an index lies outside its plane: checked plane by plane here rather than in a serial pass
 * first (a third of the time on 2 threads, one thread idle).
 * gradOutput and indices (planes, oH, oW), gradInput (planes, H, W) */
static int MT_G(max_backward)(const scalar_t *dy, const int64_t *indices, scalar_t *dx, const mt_pool_geom *g,
                              int64_t *bad) {
  int64_t work = g->planes * g->H * g->W, plane_size = g->H * g->W;
  int found = 0;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++) {
    int64_t pixel_stride = g->cs, out_base = mt__pool_plane_offset(plane, g->oH * g->oW, pixel_stride);
    scalar_t *dxp = dx + mt__pool_plane_offset(plane, plane_size, pixel_stride);
    for (int64_t i = 0; i < plane_size; i++) MT_ST(dxp + i * pixel_stride, 0);
    for (int64_t j = 0; j < g->oH * g->oW; j++) {
      int64_t o = out_base + j * pixel_stride, k = indices[o];
      if (k < 0 || k >= plane_size) {
#pragma omp atomic write
        *bad = k;
#pragma omp atomic write
        found = 1;
        break;
      }
      acc_t s = MT_LD(dxp + k * pixel_stride) + MT_LD(dy + o);
      MT_ST(dxp + k * pixel_stride, s);
    }
  }
  return found;
}

/* average (adaptive 0) or adaptive average (adaptive 1) pooling of one plane: each output cell
 * the mean of its window (pool_window). adaptive is a constant at each call, so the window
 * function folds into the caller's parallel loop.
 * input (planes, H, W), output (planes, oH, oW) */
MT_ALWAYS_INLINE void MT_G(average_plane)(const scalar_t *x, scalar_t *y, const mt_pool_geom *g, int count_include_pad,
                                          int adaptive, int64_t plane) {
  int64_t pixel_stride = g->cs, out_base = mt__pool_plane_offset(plane, g->oH * g->oW, pixel_stride);
  const scalar_t *xp = x + mt__pool_plane_offset(plane, g->H * g->W, pixel_stride);
  for (int64_t oy = 0; oy < g->oH; oy++)
    for (int64_t ox = 0; ox < g->oW; ox++) {
      int64_t y0, y1, x0, x1, divisor;
      pool_window(g, oy, ox, count_include_pad, adaptive, &y0, &y1, &x0, &x1, &divisor);
      acc_t s = 0;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) s += MT_LD(xp + (iy * g->W + ix) * pixel_stride);
      MT_ST(y + out_base + (oy * g->oW + ox) * pixel_stride, divisor > 0 ? s / (acc_t)divisor : (acc_t)0);
    }
}

/* the backward of average_plane: every output gradient divided by its divisor and added onto
 * its window's cells. Where the windows tile the input (avg_tiled: they neither overlap nor
 * pad), each cell's share is stored once (as 0 + share, the bits the zero-and-add loop gives)
 * and only the cells no window covers are zeroed.
 * gradOutput (planes, oH, oW), gradInput (planes, H, W) */
MT_ALWAYS_INLINE void MT_G(average_plane_backward)(const scalar_t *dy, scalar_t *dx, const mt_pool_geom *g,
                                                   int count_include_pad, int adaptive, int64_t plane) {
  int64_t pixel_stride = g->cs, out_base = mt__pool_plane_offset(plane, g->oH * g->oW, pixel_stride);
  scalar_t *dxp = dx + mt__pool_plane_offset(plane, g->H * g->W, pixel_stride);
  const int tiled = adaptive ? 0 : avg_tiled(g);
  if (tiled) { /* the cells right of and below the last windows */
    int64_t covered_rows = avg_covered(g->oH, g->kH, g->H), covered_cols = avg_covered(g->oW, g->kW, g->W);
    for (int64_t iy = 0; iy < g->H; iy++)
      for (int64_t ix = iy < covered_rows ? covered_cols : 0; ix < g->W; ix++)
        MT_ST(dxp + (iy * g->W + ix) * pixel_stride, 0);
  } else
    for (int64_t i = 0; i < g->H * g->W; i++) MT_ST(dxp + i * pixel_stride, 0);
  for (int64_t oy = 0; oy < g->oH; oy++)
    for (int64_t ox = 0; ox < g->oW; ox++) {
      int64_t y0, y1, x0, x1, divisor;
      pool_window(g, oy, ox, count_include_pad, adaptive, &y0, &y1, &x0, &x1, &divisor);
      if (divisor <= 0) continue;
      acc_t v = MT_LD(dy + out_base + (oy * g->oW + ox) * pixel_stride) / (acc_t)divisor;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) {
          scalar_t *cell = dxp + (iy * g->W + ix) * pixel_stride;
          MT_ST(cell, (tiled ? (acc_t)0 : (acc_t)MT_LD(cell)) + v);
        }
    }
}

/* the four entry loops, one plane per iteration; work: the estimate that decides whether to go
 * parallel (windows' cells for average pooling, input cells for adaptive) */
static void MT_G(average_forward)(const scalar_t *x, scalar_t *y, const mt_pool_geom *g, int count_include_pad) {
  int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++) MT_G(average_plane)(x, y, g, count_include_pad, 0, plane);
}

static void MT_G(average_backward)(const scalar_t *dy, scalar_t *dx, const mt_pool_geom *g, int count_include_pad) {
  int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++)
    MT_G(average_plane_backward)(dy, dx, g, count_include_pad, 0, plane);
}

static void MT_G(adaptive_forward)(const scalar_t *x, scalar_t *y, const mt_pool_geom *g, int count_include_pad) {
  int64_t work = g->planes * g->H * g->W;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++) MT_G(average_plane)(x, y, g, count_include_pad, 1, plane);
}

static void MT_G(adaptive_backward)(const scalar_t *dy, scalar_t *dx, const mt_pool_geom *g, int count_include_pad) {
  int64_t work = g->planes * g->H * g->W;
  (void)work;
#pragma omp parallel for if (work > MT_PARALLEL_GRAIN)
  for (int64_t plane = 0; plane < g->planes; plane++)
    MT_G(average_plane_backward)(dy, dx, g, count_include_pad, 1, plane);
}
