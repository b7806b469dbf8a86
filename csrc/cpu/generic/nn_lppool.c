/* generic/nn_lppool.c: LP pooling's loops for one float dtype (included by nn_lppool.c through
 * generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). mode is P1, P2 or PG
 * (p = 1, p = 2, any other p); the plane functions take it as a constant at each call, so each
 * parallel loop holds one of the three bodies. */

/* the forward's power v^p and root s^(1/p) */
static inline acc_t MT_G(lp_power)(acc_t v, double p, int mode) {
  return mode == P1 ? v : mode == P2 ? v * v : LP_POW(acc_t, v, p);
}
static inline acc_t MT_G(lp_root)(acc_t s, double p, int mode) {
  return mode == P1 ? s : mode == P2 ? LP_SQRT(acc_t, s) : LP_POW(acc_t, s, 1.0 / p);
}
/* the backward's factors: dy y^(1-p) per output cell and x^(p-1) per input cell */
static inline acc_t MT_G(lp_output_factor)(acc_t dy, acc_t y, double p, int mode) {
  return mode == P1 ? dy : mode == P2 ? dy / y : dy * LP_POW(acc_t, y, 1.0 - p);
}
static inline acc_t MT_G(lp_input_factor)(acc_t x, double p, int mode) {
  return mode == P1 ? (acc_t)1 : mode == P2 ? x : LP_POW(acc_t, x, p - 1.0);
}

/* forward of one plane: x^p summed over each window, then the root.
 * input (planes, H, W), output (planes, oH, oW) */
MT_ALWAYS_INLINE void MT_G(lp_forward_plane)(const scalar_t *x, scalar_t *y, const mt_pool_geom *g, double p, int mode,
                                             int64_t plane) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  const scalar_t *xp = x + plane * H * W;
  scalar_t *yp = y + plane * oH * oW;
  for (int64_t oh = 0; oh < oH; oh++)
    for (int64_t ow = 0; ow < oW; ow++) {
      const scalar_t *window = xp + oh * g->dH * W + ow * g->dW;
      acc_t s = 0;
      for (int kh = 0; kh < g->kH; kh++)
        for (int kw = 0; kw < g->kW; kw++) {
          acc_t v = MT_LD(window + kh * W + kw);
          s += MT_G(lp_power)(v, p, mode);
        }
      MT_ST(yp + oh * oW + ow, MT_G(lp_root)(s, p, mode));
    }
}

/* backward of one plane: f = dy y^(1-p) for each window, added onto the window's pixels in the
 * thread's plane-sized acc_t buffer of buf, then dx = x^(p-1) times that sum. The plane is one
 * thread's, so the additions need no atomics and their order is fixed.
 * input and gradInput (planes, H, W), output and gradOutput (planes, oH, oW) */
MT_ALWAYS_INLINE void MT_G(lp_backward_plane)(const scalar_t *x, const scalar_t *y, const scalar_t *dy, scalar_t *dx,
                                              void *buf, const mt_pool_geom *g, double p, int mode, int64_t plane) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  acc_t *acc = (acc_t *)buf + (size_t)omp_get_thread_num() * H * W;
  const scalar_t *xp = x + plane * H * W, *dyp = dy + plane * oH * oW, *yp = y + plane * oH * oW;
  scalar_t *dxp = dx + plane * H * W;
  for (int64_t i = 0; i < H * W; i++) acc[i] = 0;
  for (int64_t oh = 0; oh < oH; oh++)
    for (int64_t ow = 0; ow < oW; ow++) {
      acc_t f = MT_G(lp_output_factor)(MT_LD(dyp + oh * oW + ow), MT_LD(yp + oh * oW + ow), p, mode);
      acc_t *window = acc + oh * g->dH * W + ow * g->dW;
      for (int kh = 0; kh < g->kH; kh++)
        for (int kw = 0; kw < g->kW; kw++) window[kh * W + kw] += f;
    }
  for (int64_t i = 0; i < H * W; i++) {
    acc_t v = MT_LD(xp + i);
    MT_ST(dxp + i, (acc_t)(MT_G(lp_input_factor)(v, p, mode) * acc[i]));
  }
}

/* one plane per iteration, a loop per mode */
MT_AVX2_CLONES static void MT_G(lp_forward)(const scalar_t *x, scalar_t *y, const mt_pool_geom *g, double p, int mode) {
  int64_t H = g->H, W = g->W;
  if (mode == P1) {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_forward_plane)(x, y, g, p, P1, plane);
  } else if (mode == P2) {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_forward_plane)(x, y, g, p, P2, plane);
  } else {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_forward_plane)(x, y, g, p, PG, plane);
  }
}

/* buf: omp_get_max_threads() planes of H x W acc_t */
MT_AVX2_CLONES static void MT_G(lp_backward)(const scalar_t *x, const scalar_t *y, const scalar_t *dy, scalar_t *dx,
                                             void *buf, const mt_pool_geom *g, double p, int mode) {
  int64_t H = g->H, W = g->W;
  if (mode == P1) {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_backward_plane)(x, y, dy, dx, buf, g, p, P1, plane);
  } else if (mode == P2) {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_backward_plane)(x, y, dy, dx, buf, g, p, P2, plane);
  } else {
#pragma omp parallel for schedule(static) if (g->planes * H * W > MT_PARALLEL_GRAIN / 4)
    for (int64_t plane = 0; plane < g->planes; plane++) MT_G(lp_backward_plane)(x, y, dy, dx, buf, g, p, PG, plane);
  }
}
