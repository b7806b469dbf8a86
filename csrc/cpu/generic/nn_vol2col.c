/* generic/nn_vol2col.c: vol2col for elements of one size, moved as the bits of an integer type
 * (included by nn_vol.c through generate_one.h for i16, i32 and i64). */

/* the columns of output rows [q0, q1) (a row: the oW positions of one (ot, oy); all of them: 0,
 * oT*oH) into col, (C kT kH kW) x ((q1 - q0) oW). par: split the rows of col over the threads (0
 * inside a parallel region). x (C, T, H, W) */
static void MT_G(vol2col)(const scalar_t *x, scalar_t *col, const mt_vol_geom *g, int64_t q0, int64_t q1, int par) {
  const int64_t rows = g->C * g->kT * g->kH * g->kW, row_len = (q1 - q0) * g->oW;
  (void)par;
#pragma omp parallel for schedule(static) if (par && rows * row_len > 4 * MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; r++) {
    const int64_t kx = r % g->kW, ky = (r / g->kW) % g->kH, kt = (r / (g->kW * g->kH)) % g->kT;
    const int64_t c = r / (g->kW * g->kH * g->kT);
    const scalar_t *x_channel = x + c * g->T * g->H * g->W;
    scalar_t *dst = col + r * row_len;
    const int64_t offx = kx * g->lW - g->pW;
    int64_t lo, hi;
    inside(offx, g->dW, g->W, g->oW, &lo, &hi);
    int64_t ot = q0 / g->oH, oy = q0 % g->oH; /* then counted on */
    for (int64_t q = q0; q < q1; q++, dst += g->oW, oy = oy + 1 < g->oH ? oy + 1 : (ot++, 0)) {
      const int64_t it = ot * g->dT - g->pT + kt * g->lT, iy = oy * g->dH - g->pH + ky * g->lH;
      if (it < 0 || it >= g->T || iy < 0 || iy >= g->H) {
        memset(dst, 0, sizeof(scalar_t) * (size_t)g->oW);
        continue;
      }
      const scalar_t *restrict src = x_channel + (it * g->H + iy) * g->W + offx;
      scalar_t *restrict d = dst;
      for (int64_t ox = 0; ox < lo; ox++) d[ox] = 0;
      if (g->dW == 1)
        for (int64_t ox = lo; ox < hi; ox++) d[ox] = src[ox];
      else
        for (int64_t ox = lo; ox < hi; ox++) d[ox] = src[ox * g->dW];
      for (int64_t ox = hi; ox < g->oW; ox++) d[ox] = 0;
    }
  }
}
