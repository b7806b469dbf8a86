/* conv_kernels.h: im2col/col2im and the per-image GEMM steps of 2-d convolution, written once
 * and included by conv.c for float (SFX f32) and double (SFX f64). Layouts are contiguous
 * NCHW; a column buffer is K x L with K = Cg*kH*kW (rows ordered c, ky, kx) and L = oH*oW. */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

/* columns of one image's channel block (Cg planes of H x W starting at x) */
static void CAT(im2col, SFX)(const T *x, T *col, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t ky = 0; ky < g->kH; ky++)
      for (int64_t kx = 0; kx < g->kW; kx++) {
        T *row = col + ((c * g->kH + ky) * g->kW + kx) * oH * oW;
        const T *plane = x + c * H * W;
        int64_t offx = kx * g->dW - g->pW;
        /* columns whose input x lies inside the image: lo <= ox < hi */
        int64_t lo = offx >= 0 ? 0 : (-offx + g->sW - 1) / g->sW;
        int64_t hi = offx > W - 1 ? 0 : (W - 1 - offx) / g->sW + 1;
        if (hi > oW) hi = oW;
        if (lo > hi) lo = hi;
        for (int64_t oy = 0; oy < oH; oy++) {
          T *dst = row + oy * oW;
          int64_t iy = oy * g->sH - g->pH + ky * g->dH;
          if (iy < 0 || iy >= H) {
            memset(dst, 0, sizeof(T) * oW);
            continue;
          }
          const T *src = plane + iy * W; /* input x of column ox: offx + ox*sW */
          for (int64_t ox = 0; ox < lo; ox++) dst[ox] = 0;
          if (g->sW == 1) {
            if (hi > lo) memcpy(dst + lo, src + offx + lo, sizeof(T) * (hi - lo));
          } else
            for (int64_t ox = lo; ox < hi; ox++) dst[ox] = src[offx + ox * g->sW];
          for (int64_t ox = hi; ox < oW; ox++) dst[ox] = 0;
        }
      }
}

/* accumulate columns back into one image's channel block (the adjoint of im2col) */
static void CAT(col2im, SFX)(const T *col, T *x, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t ky = 0; ky < g->kH; ky++)
      for (int64_t kx = 0; kx < g->kW; kx++) {
        const T *row = col + ((c * g->kH + ky) * g->kW + kx) * oH * oW;
        T *plane = x + c * H * W;
        int64_t offx = kx * g->dW - g->pW;
        int64_t lo = offx >= 0 ? 0 : (-offx + g->sW - 1) / g->sW;
        int64_t hi = offx > W - 1 ? 0 : (W - 1 - offx) / g->sW + 1;
        if (hi > oW) hi = oW;
        if (lo > hi) lo = hi;
        for (int64_t oy = 0; oy < oH; oy++) {
          int64_t iy = oy * g->sH - g->pH + ky * g->dH;
          if (iy < 0 || iy >= H) continue;
          const T *src = row + oy * oW;
          T *dst = plane + iy * W;
          if (g->sW == 1)
            for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox] += src[ox];
          else
            for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox * g->sW] += src[ox];
        }
      }
}

/* forward of image n: y_n = W * cols(x_n) + b */
static void CAT(fwd_image, SFX)(const T *x, const T *w, const T *b, T *y, T *col, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const T *xg = x + gr * g->Cg * g->H * g->W;
    T *yg = y + gr * Og * L;
    const T *cols = xg;
    if (!g->pointwise) {
      CAT(im2col, SFX)(xg, col, g);
      cols = col;
    }
    T beta = 0;
    if (b) {
      for (int64_t o = 0; o < Og; o++) {
        T bv = b[gr * Og + o];
        for (int64_t l = 0; l < L; l++) yg[o * L + l] = bv;
      }
      beta = 1;
    }
    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)L, (int)K, (T)1, w + gr * Og * K, (int)K, cols,
         (int)L, beta, yg, (int)L);
  }
}

/* gradient wrt image n: dx_n = col2im(W^T * dy_n) */
static void CAT(bwd_input_image, SFX)(const T *dy, const T *w, T *dx, T *col, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    T *dxg = dx + gr * g->Cg * g->H * g->W;
    const T *dyg = dy + gr * Og * L;
    if (g->pointwise) { /* columns are the image itself: write straight into dx */
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)L, (int)Og, (T)1, w + gr * Og * K, (int)K, dyg,
           (int)L, (T)0, dxg, (int)L);
      continue;
    }
    GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)L, (int)Og, (T)1, w + gr * Og * K, (int)K, dyg,
         (int)L, (T)0, col, (int)L);
    memset(dxg, 0, sizeof(T) * g->Cg * g->H * g->W);
    CAT(col2im, SFX)(col, dxg, g);
  }
}

/* dW += scale * dy_n * cols(x_n)^T, db += scale * sum(dy_n) */
static void CAT(bwd_params_image, SFX)(const T *x, const T *dy, T *dw, T *db, T *col, T scale, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const T *xg = x + gr * g->Cg * g->H * g->W;
    const T *dyg = dy + gr * Og * L;
    const T *cols = xg;
    if (!g->pointwise) {
      CAT(im2col, SFX)(xg, col, g);
      cols = col;
    }
    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Og, (int)K, (int)L, scale, dyg, (int)L, cols, (int)L, (T)1,
         dw + gr * Og * K, (int)K);
  }
  if (db)
    for (int64_t o = 0; o < g->O; o++) {
      T s = 0;
      const T *r = dy + o * L;
      for (int64_t l = 0; l < L; l++) s += r[l];
      db[o] += scale * s;
    }
}

/* Whole-batch drivers. With at least two images and two threads, images are spread over
 * OpenMP threads, each with its own column buffer and a single-threaded BLAS (one GEMM per
 * image is too small to split well, and nested threading oversubscribes the cores); otherwise
 * images run in order and BLAS threads each GEMM. */
static mt_status CAT(conv_fwd, SFX)(const T *x, const T *w, const T *b, T *y, const conv_geom *g) {
  const int64_t colsz = g->pointwise ? 0 : g->Cg * g->kH * g->kW * g->oH * g->oW;
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  int nth = conv_threads(g);
  T *cols = colsz ? malloc(sizeof(T) * colsz * nth) : NULL;
  if (colsz && !cols) return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate the column buffer");
  int blas = conv_blas_enter(nth);
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
  for (int64_t n = 0; n < g->N; n++)
    CAT(fwd_image, SFX)(x + n * xs, w, b, y + n * ys, cols ? cols + colsz * conv_tid() : NULL, g);
  conv_blas_leave(blas);
  free(cols);
  return MT_OK;
}

static mt_status CAT(conv_bwd_input, SFX)(const T *dy, const T *w, T *dx, const conv_geom *g) {
  const int64_t colsz = g->pointwise ? 0 : g->Cg * g->kH * g->kW * g->oH * g->oW;
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  int nth = conv_threads(g);
  T *cols = colsz ? malloc(sizeof(T) * colsz * nth) : NULL;
  if (colsz && !cols) return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate the column buffer");
  int blas = conv_blas_enter(nth);
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
  for (int64_t n = 0; n < g->N; n++)
    CAT(bwd_input_image, SFX)(dy + n * ys, w, dx + n * xs, cols ? cols + colsz * conv_tid() : NULL, g);
  conv_blas_leave(blas);
  free(cols);
  return MT_OK;
}

/* Each thread accumulates into its own zeroed partial sums (the weight gradient is a sum over
 * the batch), added into dw/db at the end. */
static mt_status CAT(conv_bwd_params, SFX)(const T *x, const T *dy, T *dw, T *db, T scale, const conv_geom *g) {
  const int64_t colsz = g->pointwise ? 0 : g->Cg * g->kH * g->kW * g->oH * g->oW;
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  const int64_t wsz = g->O * g->Cg * g->kH * g->kW, psz = wsz + g->O;
  int nth = conv_threads(g);
  T *cols = colsz ? malloc(sizeof(T) * colsz * nth) : NULL;
  T *part = nth > 1 ? calloc((size_t)(psz * nth), sizeof(T)) : NULL;
  if ((colsz && !cols) || (nth > 1 && !part)) {
    free(cols);
    free(part);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate the column buffer");
  }
  if (nth == 1) {
    for (int64_t n = 0; n < g->N; n++) CAT(bwd_params_image, SFX)(x + n * xs, dy + n * ys, dw, db, cols, scale, g);
    free(cols);
    return MT_OK;
  }
  int blas = conv_blas_enter(nth);
#pragma omp parallel for num_threads(nth) schedule(static)
  for (int64_t n = 0; n < g->N; n++) {
    T *p = part + psz * conv_tid();
    CAT(bwd_params_image, SFX)(x + n * xs, dy + n * ys, p, db ? p + wsz : NULL, cols ? cols + colsz * conv_tid() : NULL, scale, g);
  }
  conv_blas_leave(blas);
  for (int t = 0; t < nth; t++) {
    const T *p = part + psz * t;
    for (int64_t i = 0; i < wsz; i++) dw[i] += p[i];
    if (db)
      for (int64_t o = 0; o < g->O; o++) db[o] += p[wsz + o];
  }
  free(cols);
  free(part);
  return MT_OK;
}

#undef CAT
#undef CAT_
