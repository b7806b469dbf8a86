/* nn_conv_kernels.h: im2col/col2im and the GEMM steps of 2-d convolution, written once and
 * included by nn_conv.c for float (SFX f32) and double (SFX f64). Layouts are contiguous NCHW.
 *
 * The work is cut into pieces of q consecutive images (nn_conv.c's conv_plan picks q), one GEMM
 * per group each with the images' columns side by side (image i's at column i*L, L = oH*oW),
 * which keeps the GEMM wide when an image has few output pixels. A column buffer has
 * K = Cg*kH*kW rows (ordered c, ky, kx) and ld = q*L columns. */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

/* The kH*kW column rows (ld apart) of one input plane (H x W at x). */
static void CAT(im2col_plane, SFX)(const T *x, T *col, int64_t ld, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t ky = 0; ky < g->kH; ky++)
    for (int64_t kx = 0; kx < g->kW; kx++) {
      T *row = col + (ky * g->kW + kx) * ld;
      int64_t lo, hi, offx = conv_cols_inside(g, kx, &lo, &hi);
      if (g->sH == 1 && g->sW == 1 && W == oW) {
        /* "same"-width stride-1 convolution: the rows inside the image are one shifted run of
         * the plane; copy it in one go, then clear the columns that fell outside (they hold
         * the neighbouring row's ends, or nothing where the run would leave the plane) */
        const conv_run run = conv_same_run(g, ky, offx);
        const int64_t oy0 = run.oy0, oy1 = run.oy1, shift = run.shift, d0 = run.d0, d1 = run.d1;
        T *restrict r = row;
        const T *restrict src = x;
        for (int64_t d = 0; d < oy0 * oW; d++) r[d] = 0;
        for (int64_t d = d0; d < d1; d++) r[d] = src[d + shift];
        for (int64_t d = oy1 * oW; d < oH * oW; d++) r[d] = 0;
        for (int64_t oy = oy0; oy < oy1; oy++) {
          for (int64_t ox = 0; ox < lo; ox++) r[oy * oW + ox] = 0;
          for (int64_t ox = hi; ox < oW; ox++) r[oy * oW + ox] = 0;
        }
        continue;
      }
      /* plain loops, not memcpy/memset: the rows are short (4 to 32 elements in ResNet-18)
       * and a library call per row cost more than the copy */
      for (int64_t oy = 0; oy < oH; oy++) {
        T *restrict dst = row + oy * oW;
        int64_t iy = oy * g->sH - g->pH + ky * g->dH;
        if (iy < 0 || iy >= H) {
          for (int64_t ox = 0; ox < oW; ox++) dst[ox] = 0;
          continue;
        }
        const T *restrict src = x + iy * W; /* input x of column ox: offx + ox*sW */
        for (int64_t ox = 0; ox < lo; ox++) dst[ox] = 0;
        if (g->sW == 1)
          for (int64_t ox = lo; ox < hi; ox++) dst[ox] = src[offx + ox];
        else
          for (int64_t ox = lo; ox < hi; ox++) dst[ox] = src[offx + ox * g->sW];
        for (int64_t ox = hi; ox < oW; ox++) dst[ox] = 0;
      }
    }
}

/* accumulate the column rows back into the plane (the adjoint of im2col_plane); the columns
 * are scratch: the fast path clears the ones that fall outside the image */
static void CAT(col2im_plane, SFX)(T *col, T *x, int64_t ld, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t ky = 0; ky < g->kH; ky++)
    for (int64_t kx = 0; kx < g->kW; kx++) {
      T *row = col + (ky * g->kW + kx) * ld;
      int64_t lo, hi, offx = conv_cols_inside(g, kx, &lo, &hi);
      if (g->sH == 1 && g->sW == 1 && W == oW && oW <= 16) {
        /* as in im2col_plane: one run, after zeroing the columns outside the image so that
         * adding them to the neighbouring rows' ends changes nothing. Only for short rows:
         * with 32 the zeroing is one more pass over the columns and row by row is faster. */
        const conv_run run = conv_same_run(g, ky, offx);
        const int64_t oy0 = run.oy0, oy1 = run.oy1, shift = run.shift, d0 = run.d0, d1 = run.d1;
        T *restrict r = row, *restrict dst = x;
        for (int64_t oy = oy0; oy < oy1; oy++) {
          for (int64_t ox = 0; ox < lo; ox++) r[oy * oW + ox] = 0;
          for (int64_t ox = hi; ox < oW; ox++) r[oy * oW + ox] = 0;
        }
        for (int64_t d = d0; d < d1; d++) dst[d + shift] += r[d];
        continue;
      }
      for (int64_t oy = 0; oy < oH; oy++) {
        int64_t iy = oy * g->sH - g->pH + ky * g->dH;
        if (iy < 0 || iy >= H) continue;
        const T *restrict src = row + oy * oW;
        T *restrict dst = x + iy * W;
        if (g->sW == 1)
          for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox] += src[ox];
        else
          for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox * g->sW] += src[ox];
      }
    }
}

/* A piece: q images from image n on (x, dx, y, dy point at image n) and the buffers for it. */
typedef struct CAT(piece, SFX) {
  int64_t q;
  T *col, *buf; /* K x q*L columns; Og x q*L outputs or output gradients (q > 1) */
} CAT(piece, SFX);

/* columns of group gr (K x q*L in col), or the image itself when it serves (pointwise, q == 1:
 * its planes are K x L already) */
static const T *CAT(cols_of, SFX)(const T *x, const CAT(piece, SFX) * p, int64_t gr, const conv_geom *g) {
  const int64_t HW = g->H * g->W, kk = g->kH * g->kW, L = g->oH * g->oW, ld = p->q * L;
  if (p->q == 1 && g->pointwise) return x + gr * g->Cg * HW;
  for (int64_t i = 0; i < p->q; i++)
    for (int64_t c = 0; c < g->Cg; c++)
      CAT(im2col_plane, SFX)(x + i * g->C * HW + (gr * g->Cg + c) * HW, p->col + c * kk * ld + i * L, ld, g);
  return p->col;
}

/* the rows of group gr of q images of t (q x O x L), to (gather) or from buf (Og x q*L) */
static void CAT(move_rows, SFX)(T *t, T *buf, int64_t q, int64_t gr, int gather, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, Og = g->O / g->groups, ld = q * L;
  for (int64_t i = 0; i < q; i++)
    for (int64_t o = 0; o < Og; o++) {
      T *a = t + (i * g->O + gr * Og + o) * L, *b = buf + o * ld + i * L;
      if (gather) memcpy(b, a, sizeof(T) * L);
      else memcpy(a, b, sizeof(T) * L);
    }
}

/* y = W * cols(x) + b */
static void CAT(fwd_piece, SFX)(const T *x, const T *w, const T *b, T *y, const CAT(piece, SFX) * p,
                                const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const T *cols = CAT(cols_of, SFX)(x, p, gr, g);
    if (p->q == 1) /* straight into y */
      GEMM(0, 0, Og, L, K, (T)1, w + gr * Og * K, K, cols, L, (T)0, y + gr * Og * L, L, 0);
    else {
      GEMM(0, 0, Og, ld, K, (T)1, w + gr * Og * K, K, cols, ld, (T)0, p->buf, ld, 0);
      CAT(move_rows, SFX)(y, p->buf, p->q, gr, 0, g);
    }
  }
  if (b)
    for (int64_t io = 0; io < p->q * g->O; io++) {
      T bv = b[io % g->O], *r = y + io * L;
      for (int64_t l = 0; l < L; l++) r[l] += bv;
    }
}

/* dx = col2im(W^T * dy) */
static void CAT(bwd_input_piece, SFX)(const T *dy, const T *w, T *dx, const CAT(piece, SFX) * p, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  const int64_t HW = g->H * g->W, kk = g->kH * g->kW;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const T *src = dy + gr * Og * L;
    if (p->q > 1) {
      CAT(move_rows, SFX)((T *)dy, p->buf, p->q, gr, 1, g);
      src = p->buf;
    }
    if (p->q == 1 && g->pointwise) { /* the columns are the image: write straight into dx */
      GEMM(1, 0, K, L, Og, (T)1, w + gr * Og * K, K, src, L, (T)0, dx + gr * g->Cg * HW, L, 0);
      continue;
    }
    GEMM(1, 0, K, ld, Og, (T)1, w + gr * Og * K, K, src, ld, (T)0, p->col, ld, 0);
    for (int64_t i = 0; i < p->q; i++)
      for (int64_t c = 0; c < g->Cg; c++) {
        T *plane = dx + i * g->C * HW + (gr * g->Cg + c) * HW;
        memset(plane, 0, sizeof(T) * HW);
        CAT(col2im_plane, SFX)(p->col + c * kk * ld + i * L, plane, ld, g);
      }
  }
}

/* dw = beta*dw + scale * dy * cols(x)^T, db = beta*db + scale * sum(dy); beta is 0 or 1 */
static void CAT(bwd_params_piece, SFX)(const T *x, const T *dy, T *dw, T *db, T scale, T beta,
                                       const CAT(piece, SFX) * p, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const T *cols = CAT(cols_of, SFX)(x, p, gr, g);
    const T *src = dy + gr * Og * L;
    if (p->q > 1) {
      CAT(move_rows, SFX)((T *)dy, p->buf, p->q, gr, 1, g);
      src = p->buf;
    }
    GEMM(0, 1, Og, K, ld, scale, src, ld, cols, ld, beta, dw + gr * Og * K, K, 0);
  }
  if (db)
    for (int64_t o = 0; o < g->O; o++) {
      T s = 0;
      for (int64_t i = 0; i < p->q; i++) {
        const T *r = dy + (i * g->O + o) * L;
        for (int64_t l = 0; l < L; l++) s += r[l];
      }
      db[o] = (beta != 0 ? db[o] : 0) + scale * s;
    }
}

/* ---- drivers. The batch is split into one contiguous run of images per OpenMP thread, each
 * thread going through its pieces in order with its own buffers and serial GEMMs, so no
 * thread waits on another until the end. With one thread (a single image, or little work)
 * the pieces run in order and each GEMM is split over the threads instead. */

static mt_status CAT(plan_alloc, SFX)(conv_plan *pl, T **mem, const conv_geom *g) {
  conv_plan_make(pl, g, sizeof(T));
  *mem = pl->per ? malloc(sizeof(T) * (size_t)(pl->per * pl->nth)) : NULL;
  if (pl->per && !*mem)
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of column buffers",
                     (long long)(sizeof(T) * pl->per * pl->nth));
  return MT_OK;
}

/* Run BODY for each piece p of thread t_'s images (n: its first image). */
#define CONV_PIECES(pl, mem, BODY)                                      \
  {                                                                     \
    int t_ = omp_get_thread_num();                                      \
    int64_t lo = g->N * t_ / (pl).nth, hi = g->N * (t_ + 1) / (pl).nth; \
    CAT(piece, SFX) p;                                                  \
    p.col = (mem) ? (mem) + (pl).per * t_ : NULL;                       \
    p.buf = p.col ? p.col + (pl).colsz : NULL;                          \
    for (int64_t n = lo; n < hi; n += p.q) {                            \
      p.q = hi - n < (pl).q ? hi - n : (pl).q;                          \
      BODY;                                                             \
    }                                                                   \
  }

/* Winograd F(2x2, 3x3) (nn_winograd.h), cut over threads like the pieces above */
static mt_status CAT(conv_fwd_wino, SFX)(const T *x, const T *w, const T *b, T *y, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  conv_plan pl;
  wino_plan_make(&pl, g, sizeof(T));
  T *U = malloc(sizeof(T) * (size_t)(16 * g->O * g->Cg)), *mem = malloc(sizeof(T) * (size_t)(pl.per * pl.nth));
  if (!U || !mem) {
    free(U), free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of Winograd buffers",
                     (long long)(sizeof(T) * (16 * g->O * g->Cg + pl.per * pl.nth)));
  }
  CAT(wino_weights, SFX)(w, U, g);
  const int64_t scr = pl.per - wino_scratch(g); /* offset of the scratch in a thread's buffers */
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  CONV_PIECES(pl, mem, CAT(wino_piece, SFX)(x + n * xs, U, b, y + n * ys, p.q, p.col, p.buf, p.col + scr, g))
  free(U), free(mem);
  return MT_OK;
}

static mt_status CAT(conv_fwd, SFX)(const T *x, const T *w, const T *b, T *y, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  if (wino_ok(g)) return CAT(conv_fwd_wino, SFX)(x, w, b, y, g);
  conv_plan pl;
  T *mem;
  MT_TRY(CAT(plan_alloc, SFX)(&pl, &mem, g));
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  CONV_PIECES(pl, mem, CAT(fwd_piece, SFX)(x + n * xs, w, b, y + n * ys, &p, g))
  free(mem);
  return MT_OK;
}

/* Stride 1: dx is the forward convolution of dy with each kernel flipped and its in/out
 * channels swapped, padded by d*(k-1) - p. Used where that forward is faster:
 *  - where it runs by Winograd (nn_winograd.h), 3x3 undilated with enough planes;
 *  - else by im2col + GEMM with few output planes (Og <= 128) and not few input planes
 *    (Cg >= 64): its GEMM has Cg rows and inner size Og*kH*kW where the direct one has
 *    Cg*kH*kW rows and inner size Og, which limits when short (64 in the widest ResNet-18
 *    layers: 70 GFLOP/s on a core against 84), and it gathers dy with im2col instead of
 *    scattering columns with col2im. 64 -> 64 planes at 32x32: 13% less CPU time; 128 -> 128,
 *    4%; 256 and 512, none or slower. */
static int CAT(flip_ok, SFX)(const conv_geom *g, conv_geom *f) {
  const int64_t Og = g->O / g->groups;
  if (g->sW != 1 || g->sH != 1 || g->pointwise || g->pW > g->dW * (g->kW - 1) || g->pH > g->dH * (g->kH - 1) ||
      Og * g->kH * g->kW > INT32_MAX || g->H * g->W > INT32_MAX)
    return 0;
  *f = *g;
  f->C = g->O, f->H = g->oH, f->W = g->oW, f->O = g->C, f->Cg = Og, f->oH = g->H, f->oW = g->W;
  f->pW = g->dW * (g->kW - 1) - g->pW, f->pH = g->dH * (g->kH - 1) - g->pH;
  return wino_ok(f) || (g->Cg >= 64 && Og <= 128);
}

static mt_status CAT(conv_bwd_input_flipped, SFX)(const T *dy, const T *w, T *dx, const conv_geom *g,
                                                  const conv_geom *f) {
  const int64_t Og = g->O / g->groups, kk = g->kH * g->kW;
  T *wf = malloc(sizeof(T) * (size_t)(g->C * Og * kk));
  if (!wf)
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes for the flipped weight",
                     (long long)(sizeof(T) * g->C * Og * kk));
  for (int64_t gr = 0; gr < g->groups; gr++)
    for (int64_t o = 0; o < Og; o++)
      for (int64_t c = 0; c < g->Cg; c++) {
        const T *src = w + ((gr * Og + o) * g->Cg + c) * kk;
        T *dst = wf + ((gr * g->Cg + c) * Og + o) * kk;
        for (int64_t k = 0; k < kk; k++) dst[kk - 1 - k] = src[k];
      }
  mt_status st = CAT(conv_fwd, SFX)(dy, wf, NULL, dx, f);
  free(wf);
  return st;
}

static mt_status CAT(conv_bwd_input, SFX)(const T *dy, const T *w, T *dx, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  conv_geom f;
  if (CAT(flip_ok, SFX)(g, &f)) return CAT(conv_bwd_input_flipped, SFX)(dy, w, dx, g, &f);
  conv_plan pl;
  T *mem;
  MT_TRY(CAT(plan_alloc, SFX)(&pl, &mem, g));
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  CONV_PIECES(pl, mem, CAT(bwd_input_piece, SFX)(dy + n * ys, w, dx + n * xs, &p, g))
  free(mem);
  return MT_OK;
}

/* Winograd weight gradient: each thread sums its tiles' products into its own dU (written by
 * its first piece), then the threads share the sum over the partials and the transform back */
static mt_status CAT(conv_bwd_params_wino, SFX)(const T *x, const T *dy, T *dw, T *db, T scale, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW, L = g->oH * g->oW, psz = 16 * g->O * g->Cg;
  conv_plan pl;
  wino_plan_make(&pl, g, sizeof(T));
  T *dU = malloc(sizeof(T) * (size_t)(psz * pl.nth)), *mem = malloc(sizeof(T) * (size_t)(pl.per * pl.nth));
  if (!dU || !mem) {
    free(dU), free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of Winograd buffers",
                     (long long)(sizeof(T) * (psz + pl.per) * pl.nth));
  }
  const int64_t scr = pl.per - wino_scratch(g);
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  {
    T beta = 0; /* every thread has at least one image (plan_split) */
    T *mine = dU + psz * omp_get_thread_num();
    CONV_PIECES(
        pl, mem,
        (CAT(wino_wgrad_piece, SFX)(x + n * xs, dy + n * ys, mine, beta, p.q, p.col, p.buf, p.col + scr, g), beta = 1))
#pragma omp barrier
    CAT(wino_weights_grad, SFX)(dU, psz, pl.nth, dw, scale, g);
    if (db) {
#pragma omp for schedule(static)
      for (int64_t o = 0; o < g->O; o++) {
        T s = 0;
        for (int64_t n = 0; n < g->N; n++) {
          const T *r = dy + (n * g->O + o) * L;
          for (int64_t l = 0; l < L; l++) s += r[l];
        }
        db[o] += scale * s;
      }
    }
  }
  free(dU), free(mem);
  return MT_OK;
}

/* Thread 0 accumulates into dw/db; the others into partial sums of their own (written, not
 * added, by their first piece: no zeroing), added in at the end, split over the threads. */
static mt_status CAT(conv_bwd_params, SFX)(const T *x, const T *dy, T *dw, T *db, T scale, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  const int64_t wsz = g->O * g->Cg * g->kH * g->kW, psz = wsz + g->O;
  if (wino_ok(g)) return CAT(conv_bwd_params_wino, SFX)(x, dy, dw, db, scale, g);
  conv_plan pl;
  T *mem;
  MT_TRY(CAT(plan_alloc, SFX)(&pl, &mem, g));
  T *part = pl.nth > 1 ? malloc(sizeof(T) * (size_t)(psz * (pl.nth - 1))) : NULL;
  if (pl.nth > 1 && !part) {
    free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of partial weight gradients",
                     (long long)(sizeof(T) * psz * (pl.nth - 1)));
  }
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  {
    int t = omp_get_thread_num();
    T *pw = t == 0 ? dw : part + psz * (t - 1), *pb = !db ? NULL : t == 0 ? db : pw + wsz;
    T beta = t == 0 ? 1 : 0; /* every thread has at least one image (conv_plan_make) */
    CONV_PIECES(pl, mem, (CAT(bwd_params_piece, SFX)(x + n * xs, dy + n * ys, pw, pb, scale, beta, &p, g), beta = 1))
    if (pl.nth > 1) { /* the same for every thread of the team */
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t i = 0; i < (db ? psz : wsz); i++) {
        T s = 0;
        for (int u = 0; u < pl.nth - 1; u++) s += part[psz * u + i];
        if (i < wsz) dw[i] += s;
        else db[i - wsz] += s;
      }
    }
  }
  free(mem);
  free(part);
  return MT_OK;
}
#undef CONV_PIECES

#undef CAT
#undef CAT_
