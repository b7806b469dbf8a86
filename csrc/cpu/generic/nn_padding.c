/* generic/nn_padding.c: 2-d padding's loops for one float dtype (included by nn_padding.c through
 * generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* forward: every output row is a left border, the input row's middle (one memcpy: the padding
 * modes differ only at the borders) and a right border, the borders through the column table col
 * (-1: a zero). Columns [lo, hi) of the output read straight from the input row.
 * input (planes, H, W), output (planes, oH, oW) */
static void MT_G(pad_rows)(const scalar_t *x, scalar_t *y, const int64_t *col, const mt_pool_geom *g, int mode,
                           int64_t lo, int64_t hi) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, left = g->pW, top = g->pH;
  int64_t rows = g->planes * oH;
#pragma omp parallel for schedule(static) if (rows * oW > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t plane = r / oH, ih = pad_src(r % oH, H, top, mode);
    scalar_t *yr = y + r * oW;
    if (ih < 0) {
      memset(yr, 0, (size_t)oW * sizeof(scalar_t));
      continue;
    }
    const scalar_t *xr = x + (plane * H + ih) * W;
    for (int64_t o = 0; o < lo; o++) yr[o] = col[o] < 0 ? 0 : xr[col[o]];
    if (hi > lo) memcpy(yr + lo, xr + (lo - left), (size_t)(hi - lo) * sizeof(scalar_t));
    for (int64_t o = hi; o < oW; o++) yr[o] = col[o] < 0 ? 0 : xr[col[o]];
  }
}

/* backward of the reflect and replicate modes: per plane, each output row adds onto its source
 * row in acc_t, in the thread's plane of buf; a plane is one thread's, so no atomics and a fixed
 * order. gradOutput (planes, oH, oW), gradInput (planes, H, W) */
static void MT_G(pad_backward)(const scalar_t *dy, scalar_t *dx, void *buf, const int64_t *col, const mt_pool_geom *g,
                               int mode, int64_t lo, int64_t hi) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, left = g->pW, top = g->pH;
#pragma omp parallel for schedule(static) if (g->planes * oH * oW > MT_PARALLEL_GRAIN / 4)
  for (int64_t plane = 0; plane < g->planes; plane++) {
    acc_t *acc = (acc_t *)buf + (size_t)omp_get_thread_num() * H * W;
    for (int64_t i = 0; i < H * W; i++) acc[i] = 0;
    for (int64_t oh = 0; oh < oH; oh++) {
      int64_t ih = pad_src(oh, H, top, mode);
      if (ih < 0) continue;
      const scalar_t *gr = dy + (plane * oH + oh) * oW;
      acc_t *ar = acc + ih * W;
      for (int64_t o = 0; o < lo; o++)
        if (col[o] >= 0) ar[col[o]] += MT_LD(gr + o);
      for (int64_t o = lo; o < hi; o++) ar[o - left] += MT_LD(gr + o);
      for (int64_t o = hi; o < oW; o++)
        if (col[o] >= 0) ar[col[o]] += MT_LD(gr + o);
    }
    scalar_t *dr = dx + plane * H * W;
    for (int64_t i = 0; i < H * W; i++) MT_ST(dr + i, acc[i]);
  }
}

/* backward of zero padding: each input pixel has one output pixel or none (cropped), so its
 * gradient is a copy of the output gradient's middle, zeros where cropped: rows of memcpy.
 * Input columns [c0, c1) have an output. gradOutput (planes, oH, oW), gradInput (planes, H, W) */
static void MT_G(zero_pad_backward)(const scalar_t *dy, scalar_t *dx, const mt_pool_geom *g) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, left = g->pW, top = g->pH;
  int64_t c0 = left < 0 ? -left : 0, c1 = oW - left < W ? oW - left : W;
  int64_t rows = g->planes * H;
#pragma omp parallel for schedule(static) if (rows * W > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t plane = r / H, oh = r % H + top;
    scalar_t *dr = dx + r * W;
    if (oh < 0 || oh >= oH || c1 <= c0) {
      memset(dr, 0, (size_t)W * sizeof(scalar_t));
      continue;
    }
    for (int64_t i = 0; i < c0; i++) dr[i] = 0;
    memcpy(dr + c0, dy + (plane * oH + oh) * oW + c0 + left, (size_t)(c1 - c0) * sizeof(scalar_t));
    for (int64_t i = c1; i < W; i++) dr[i] = 0;
  }
}
