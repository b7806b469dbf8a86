/* generic/nn_vol_avgpool.c: 3-d average pooling's loops for one float dtype (included by
 * nn_vol_avgpool.c through generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST).
 * tb: the call's tables (avg_tables); stride: acc_t elements from one thread's rows to the next. */

/* forward: output row (plane, ot, oy) adds the input rows of its kT x kH window into a W-long row
 * of sums (whole rows against rows, which vectorizes), then each output cell adds its window's
 * columns of that row and divides. input (C, T, H, W), output (C, oT, oH, oW) */
MT_AVX2_CLONES static void MT_G(avg_pool3d_forward)(const scalar_t *x, scalar_t *y, const mt_vol_geom *g,
                                                    const avg_tabs *tb, int64_t stride) {
  const int64_t W = g->W, nrows = g->C * g->oT * g->oH;
  const int64_t work = nrows * g->kT * g->kH * W;
  (void)work;
#pragma omp parallel for schedule(static) if (work > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t oy = r % g->oH, ot = r / g->oH % g->oT, plane = r / (g->oH * g->oT);
    const avg_win wt = tb->wt[ot], wh = tb->wh[oy];
    acc_t *acc = (acc_t *)tb->rows + (int64_t)omp_get_thread_num() * stride;
    const scalar_t *xp = x + plane * g->T * g->H * W;
    int first = 1;
    for (int64_t t = wt.lo; t < wt.hi; t++)
      for (int64_t iy = wh.lo; iy < wh.hi; iy++, first = 0) {
        const scalar_t *xr = xp + (t * g->H + iy) * W;
        if (first)
          for (int64_t i = 0; i < W; i++) acc[i] = MT_LD(xr + i);
        else
          for (int64_t i = 0; i < W; i++) acc[i] += MT_LD(xr + i);
      }
    const int64_t count_th = wt.count * wh.count;
    scalar_t *yr = y + r * g->oW;
    for (int64_t ox = 0; ox < g->oW; ox++) {
      const avg_win ww = tb->ww[ox];
      acc_t s = 0;
      for (int64_t i = ww.lo; i < ww.hi; i++) s += acc[i];
      MT_ST(yr + ox, first ? (acc_t)0 : s / (acc_t)(count_th * ww.count));
    }
  }
}

/* backward, gathering: input rows (plane, t, y) of one run along T and one along H take the same
 * gradient row: the gradient rows of the windows that cover them, each divided by its divisor,
 * added into an oW-long row, then each input cell adds the columns that cover it.
 * gradOutput (C, oT, oH, oW), gradInput (C, T, H, W) */
MT_AVX2_CLONES static void MT_G(avg_pool3d_backward)(const scalar_t *dy, scalar_t *dx, const mt_vol_geom *g,
                                                     const avg_tabs *tb, int64_t stride) {
  const int64_t W = g->W, oW = g->oW;
  const int64_t ngroups = g->C * tb->nruns_t * tb->nruns_h, work = g->C * g->T * g->H * W;
  (void)work;
  acc_t *col_counts = (acc_t *)tb->cols;
  for (int64_t ox = 0; ox < oW; ox++) col_counts[ox] = (acc_t)tb->ww[ox].count;
#pragma omp parallel for schedule(static) if (work > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < ngroups; r++) {
    const avg_class run_h = tb->runs_h[r % tb->nruns_h], run_t = tb->runs_t[r / tb->nruns_h % tb->nruns_t];
    const int64_t plane = r / (tb->nruns_h * tb->nruns_t);
    acc_t *acc = (acc_t *)tb->rows + (int64_t)omp_get_thread_num() * stride, *row = acc + oW;
    for (int64_t i = 0; i < W; i++) row[i] = 0;
    if (run_t.lo < run_t.hi && run_h.lo < run_h.hi) {
      for (int64_t ot = run_t.lo; ot < run_t.hi; ot++)
        for (int64_t oy = run_h.lo; oy < run_h.hi; oy++) {
          const scalar_t *dr = dy + ((plane * g->oT + ot) * g->oH + oy) * oW;
          const acc_t count_th = (acc_t)(tb->wt[ot].count * tb->wh[oy].count);
          if (ot == run_t.lo && oy == run_h.lo)
            for (int64_t ox = 0; ox < oW; ox++) acc[ox] = MT_LD(dr + ox) / (count_th * col_counts[ox]);
          else
            for (int64_t ox = 0; ox < oW; ox++) acc[ox] += MT_LD(dr + ox) / (count_th * col_counts[ox]);
        }
      for (int64_t ox = 0; ox < oW; ox++) /* the columns, in output order as the CUDA gather */
        for (int64_t i = tb->ww[ox].lo; i < tb->ww[ox].hi; i++) row[i] += acc[ox];
    }
    for (int64_t t = run_t.i0; t < run_t.i1; t++)
      for (int64_t iy = run_h.i0; iy < run_h.i1; iy++) {
        scalar_t *dxr = dx + ((plane * g->T + t) * g->H + iy) * W;
        for (int64_t i = 0; i < W; i++) MT_ST(dxr + i, row[i]);
      }
  }
}
