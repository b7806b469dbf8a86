/* generic/nn_conv.c: im2col/col2im and the GEMM steps of 2-d convolution for float32 or float64
 * (included by nn_conv.c through generate_one.h for f32 and f64; GEMM is the pass's), and the
 * entry points by compute type. Layouts are contiguous NCHW.
 *
 * The work is cut into pieces of q consecutive images (nn_conv.c's conv_plan picks q), one GEMM
 * per group each with the images' columns side by side (image i's at column i*L, L = oH*oW),
 * which keeps the GEMM wide when an image has few output pixels. A column buffer has
 * K = Cg*kH*kW rows (ordered c, ky, kx) and ld = q*L columns. */

/* The kH*kW column rows (ld apart) of one input plane (H x W at x). */
static void MT_G(im2col_plane)(const scalar_t *x, scalar_t *col, int64_t ld, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t ky = 0; ky < g->kH; ky++)
    for (int64_t kx = 0; kx < g->kW; kx++) {
      scalar_t *row = col + (ky * g->kW + kx) * ld;
      int64_t lo, hi, offx = conv_cols_inside(g, kx, &lo, &hi);
      if (g->sH == 1 && g->sW == 1 && W == oW) {
        /* "same"-width stride-1 convolution: the rows inside the image are one shifted run of
         * the plane; copy it in one go, then clear the columns that fell outside (they hold
         * the neighbouring row's ends, or nothing where the run would leave the plane) */
        const conv_run run = conv_same_run(g, ky, offx);
        const int64_t oy0 = run.oy0, oy1 = run.oy1, shift = run.shift, d0 = run.d0, d1 = run.d1;
        scalar_t *restrict r = row;
        const scalar_t *restrict src = x;
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
        scalar_t *restrict dst = row + oy * oW;
        int64_t iy = oy * g->sH - g->pH + ky * g->dH;
        if (iy < 0 || iy >= H) {
          for (int64_t ox = 0; ox < oW; ox++) dst[ox] = 0;
          continue;
        }
        const scalar_t *restrict src = x + iy * W; /* input x of column ox: offx + ox*sW */
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
static void MT_G(col2im_plane)(scalar_t *col, scalar_t *x, int64_t ld, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  for (int64_t ky = 0; ky < g->kH; ky++)
    for (int64_t kx = 0; kx < g->kW; kx++) {
      scalar_t *row = col + (ky * g->kW + kx) * ld;
      int64_t lo, hi, offx = conv_cols_inside(g, kx, &lo, &hi);
      if (g->sH == 1 && g->sW == 1 && W == oW && oW <= 16) {
        /* as in im2col_plane: one run, after zeroing the columns outside the image so that
         * adding them to the neighbouring rows' ends changes nothing. Only for short rows:
         * with 32 the zeroing is one more pass over the columns and row by row is faster. */
        const conv_run run = conv_same_run(g, ky, offx);
        const int64_t oy0 = run.oy0, oy1 = run.oy1, shift = run.shift, d0 = run.d0, d1 = run.d1;
        scalar_t *restrict r = row, *restrict dst = x;
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
        const scalar_t *restrict src = row + oy * oW;
        scalar_t *restrict dst = x + iy * W;
        if (g->sW == 1)
          for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox] += src[ox];
        else
          for (int64_t ox = lo; ox < hi; ox++) dst[offx + ox * g->sW] += src[ox];
      }
    }
}

/* A piece: q images from image n on (x, dx, y, dy point at image n), in a thread's run of the
 * batch that ends before image end, and the thread's buffers for it. */
typedef struct MT_G(piece) {
  int64_t n, q, end;
  scalar_t *col, *buf; /* K x q*L columns; Og x q*L outputs or output gradients (q > 1) */
} MT_G(piece);

/* columns of group gr (K x q*L in col), or the image itself when it serves (pointwise, q == 1:
 * its planes are K x L already) */
static const scalar_t *MT_G(cols_of)(const scalar_t *x, const MT_G(piece) * p, int64_t gr, const conv_geom *g) {
  const int64_t HW = g->H * g->W, kk = g->kH * g->kW, L = g->oH * g->oW, ld = p->q * L;
  if (p->q == 1 && g->pointwise) return x + gr * g->Cg * HW;
  for (int64_t i = 0; i < p->q; i++)
    for (int64_t c = 0; c < g->Cg; c++)
      MT_G(im2col_plane)(x + i * g->C * HW + (gr * g->Cg + c) * HW, p->col + c * kk * ld + i * L, ld, g);
  return p->col;
}

/* the rows of group gr of q images of t (q x O x L), to (gather) or from buf (Og x q*L) */
static void MT_G(move_rows)(scalar_t *t, scalar_t *buf, int64_t q, int64_t gr, int gather, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, Og = g->O / g->groups, ld = q * L;
  for (int64_t i = 0; i < q; i++)
    for (int64_t o = 0; o < Og; o++) {
      scalar_t *a = t + (i * g->O + gr * Og + o) * L, *b = buf + o * ld + i * L;
      if (gather) memcpy(b, a, sizeof(scalar_t) * L);
      else memcpy(a, b, sizeof(scalar_t) * L);
    }
}

/* y = W * cols(x) + b */
static void MT_G(fwd_piece)(const scalar_t *x, const scalar_t *w, const scalar_t *b, scalar_t *y, const MT_G(piece) * p,
                            const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const scalar_t *cols = MT_G(cols_of)(x, p, gr, g);
    if (p->q == 1) /* straight into y */
      GEMM(0, 0, Og, L, K, (scalar_t)1, w + gr * Og * K, K, cols, L, (scalar_t)0, y + gr * Og * L, L, 0);
    else {
      GEMM(0, 0, Og, ld, K, (scalar_t)1, w + gr * Og * K, K, cols, ld, (scalar_t)0, p->buf, ld, 0);
      MT_G(move_rows)(y, p->buf, p->q, gr, 0, g);
    }
  }
  if (b)
    for (int64_t io = 0; io < p->q * g->O; io++) {
      scalar_t bv = b[io % g->O], *r = y + io * L;
      for (int64_t l = 0; l < L; l++) r[l] += bv;
    }
}

/* dx = col2im(W^T * dy) */
static void MT_G(bwd_input_piece)(const scalar_t *dy, const scalar_t *w, scalar_t *dx, const MT_G(piece) * p,
                                  const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  const int64_t HW = g->H * g->W, kk = g->kH * g->kW;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const scalar_t *src = dy + gr * Og * L;
    if (p->q > 1) {
      MT_G(move_rows)((scalar_t *)dy, p->buf, p->q, gr, 1, g);
      src = p->buf;
    }
    if (p->q == 1 && g->pointwise) { /* the columns are the image: write straight into dx */
      GEMM(1, 0, K, L, Og, (scalar_t)1, w + gr * Og * K, K, src, L, (scalar_t)0, dx + gr * g->Cg * HW, L, 0);
      continue;
    }
    GEMM(1, 0, K, ld, Og, (scalar_t)1, w + gr * Og * K, K, src, ld, (scalar_t)0, p->col, ld, 0);
    for (int64_t i = 0; i < p->q; i++)
      for (int64_t c = 0; c < g->Cg; c++) {
        scalar_t *plane = dx + i * g->C * HW + (gr * g->Cg + c) * HW;
        memset(plane, 0, sizeof(scalar_t) * HW);
        MT_G(col2im_plane)(p->col + c * kk * ld + i * L, plane, ld, g);
      }
  }
}

/* dw = beta*dw + scale * dy * cols(x)^T, db = beta*db + scale * sum(dy); beta is 0 or 1 */
static void MT_G(bwd_params_piece)(const scalar_t *x, const scalar_t *dy, scalar_t *dw, scalar_t *db, scalar_t scale,
                                   scalar_t beta, const MT_G(piece) * p, const conv_geom *g) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups, ld = p->q * L;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    const scalar_t *cols = MT_G(cols_of)(x, p, gr, g);
    const scalar_t *src = dy + gr * Og * L;
    if (p->q > 1) {
      MT_G(move_rows)((scalar_t *)dy, p->buf, p->q, gr, 1, g);
      src = p->buf;
    }
    GEMM(0, 1, Og, K, ld, scale, src, ld, cols, ld, beta, dw + gr * Og * K, K, 0);
  }
  if (db)
    for (int64_t o = 0; o < g->O; o++) {
      scalar_t s = 0;
      for (int64_t i = 0; i < p->q; i++) {
        const scalar_t *r = dy + (i * g->O + o) * L;
        for (int64_t l = 0; l < L; l++) s += r[l];
      }
      db[o] = (beta != 0 ? db[o] : 0) + scale * s;
    }
}

/* ---- drivers. The batch is split into one contiguous run of images per OpenMP thread, each
 * thread going through its pieces in order with its own buffers and serial GEMMs, so no
 * thread waits on another until the end. With one thread (a single image, or little work)
 * the pieces run in order and each GEMM is split over the threads instead. */

static mt_status MT_G(plan_alloc)(conv_plan *pl, scalar_t **mem, const conv_geom *g) {
  conv_plan_make(pl, g, sizeof(scalar_t));
  *mem = pl->per ? malloc(sizeof(scalar_t) * (size_t)(pl->per * pl->nth)) : NULL;
  if (pl->per && !*mem)
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of column buffers",
                     (long long)(sizeof(scalar_t) * pl->per * pl->nth));
  return MT_OK;
}

/* The pieces of the calling thread's run of the batch, for a loop
 *   for (piece p = first_piece(&pl, mem, g); p.n < p.end; next_piece(&p, &pl))
 * that every thread of the parallel region runs: thread t's run is images [N t / nth,
 * N (t + 1) / nth), taken pl->q at a time, its buffers the t-th pl->per elements of mem. */
static inline MT_G(piece) MT_G(first_piece)(const conv_plan *pl, scalar_t *mem, const conv_geom *g) {
  const int t = omp_get_thread_num();
  MT_G(piece) p;
  p.n = g->N * t / pl->nth, p.end = g->N * (t + 1) / pl->nth;
  p.q = p.end - p.n < pl->q ? p.end - p.n : pl->q;
  p.col = mem ? mem + pl->per * t : NULL;
  p.buf = p.col ? p.col + pl->colsz : NULL;
  return p;
}
static inline void MT_G(next_piece)(MT_G(piece) * p, const conv_plan *pl) {
  p->n += p->q;
  p->q = p->end - p->n < pl->q ? p->end - p->n : pl->q;
}

/* Winograd F(2x2, 3x3) (generic/nn_winograd.c), cut over threads like the pieces above */
static mt_status MT_G(conv_fwd_wino)(const scalar_t *x, const scalar_t *w, const scalar_t *b, scalar_t *y,
                                     const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  conv_plan pl;
  wino_plan_make(&pl, g, sizeof(scalar_t));
  scalar_t *U = malloc(sizeof(scalar_t) * (size_t)(16 * g->O * g->Cg)),
           *mem = malloc(sizeof(scalar_t) * (size_t)(pl.per * pl.nth));
  if (!U || !mem) {
    free(U), free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of Winograd buffers",
                     (long long)(sizeof(scalar_t) * (16 * g->O * g->Cg + pl.per * pl.nth)));
  }
  MT_G(wino_weights)(w, U, g);
  const int64_t scratch_offset = pl.per - wino_scratch(g); /* in a thread's buffers */
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  for (MT_G(piece) p = MT_G(first_piece)(&pl, mem, g); p.n < p.end; MT_G(next_piece)(&p, &pl))
    MT_G(wino_piece)(x + p.n * xs, U, b, y + p.n * ys, p.q, p.col, p.buf, p.col + scratch_offset, g);
  free(U), free(mem);
  return MT_OK;
}

static mt_status MT_G(conv_fwd)(const scalar_t *x, const scalar_t *w, const scalar_t *b, scalar_t *y,
                                const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  if (wino_ok(g)) return MT_G(conv_fwd_wino)(x, w, b, y, g);
  conv_plan pl;
  scalar_t *mem;
  MT_TRY(MT_G(plan_alloc)(&pl, &mem, g));
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  for (MT_G(piece) p = MT_G(first_piece)(&pl, mem, g); p.n < p.end; MT_G(next_piece)(&p, &pl))
    MT_G(fwd_piece)(x + p.n * xs, w, b, y + p.n * ys, &p, g);
  free(mem);
  return MT_OK;
}

/* Stride 1: dx is the forward convolution of dy with each kernel flipped and its in/out
 * channels swapped, padded by d*(k-1) - p. Used where that forward is faster:
 *  - where it runs by Winograd (generic/nn_winograd.c), 3x3 undilated with enough planes;
 *  - else by im2col + GEMM with few output planes (Og <= 128) and not few input planes
 *    (Cg >= 64): its GEMM has Cg rows and inner size Og*kH*kW where the direct one has
 *    Cg*kH*kW rows and inner size Og, which limits when short (64 in the widest ResNet-18
 *    layers: 70 GFLOP/s on a core against 84), and it gathers dy with im2col instead of
 *    scattering columns with col2im. 64 -> 64 planes at 32x32: 13% less CPU time; 128 -> 128,
 *    4%; 256 and 512, none or slower. */
static int MT_G(flip_ok)(const conv_geom *g, conv_geom *f) {
  const int64_t Og = g->O / g->groups;
  if (g->sW != 1 || g->sH != 1 || g->pointwise || g->pW > g->dW * (g->kW - 1) || g->pH > g->dH * (g->kH - 1) ||
      Og * g->kH * g->kW > INT32_MAX || g->H * g->W > INT32_MAX)
    return 0;
  *f = *g;
  f->C = g->O, f->H = g->oH, f->W = g->oW, f->O = g->C, f->Cg = Og, f->oH = g->H, f->oW = g->W;
  f->pW = g->dW * (g->kW - 1) - g->pW, f->pH = g->dH * (g->kH - 1) - g->pH;
  return wino_ok(f) || (g->Cg >= 64 && Og <= 128);
}

static mt_status MT_G(conv_bwd_input_flipped)(const scalar_t *dy, const scalar_t *w, scalar_t *dx, const conv_geom *g,
                                              const conv_geom *f) {
  const int64_t Og = g->O / g->groups, kk = g->kH * g->kW;
  scalar_t *wf = malloc(sizeof(scalar_t) * (size_t)(g->C * Og * kk));
  if (!wf)
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes for the flipped weight",
                     (long long)(sizeof(scalar_t) * g->C * Og * kk));
  for (int64_t gr = 0; gr < g->groups; gr++)
    for (int64_t o = 0; o < Og; o++)
      for (int64_t c = 0; c < g->Cg; c++) {
        const scalar_t *src = w + ((gr * Og + o) * g->Cg + c) * kk;
        scalar_t *dst = wf + ((gr * g->Cg + c) * Og + o) * kk;
        for (int64_t k = 0; k < kk; k++) dst[kk - 1 - k] = src[k];
      }
  mt_status st = MT_G(conv_fwd)(dy, wf, NULL, dx, f);
  free(wf);
  return st;
}

static mt_status MT_G(conv_bwd_input)(const scalar_t *dy, const scalar_t *w, scalar_t *dx, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  conv_geom f;
  if (MT_G(flip_ok)(g, &f)) return MT_G(conv_bwd_input_flipped)(dy, w, dx, g, &f);
  conv_plan pl;
  scalar_t *mem;
  MT_TRY(MT_G(plan_alloc)(&pl, &mem, g));
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  for (MT_G(piece) p = MT_G(first_piece)(&pl, mem, g); p.n < p.end; MT_G(next_piece)(&p, &pl))
    MT_G(bwd_input_piece)(dy + p.n * ys, w, dx + p.n * xs, &p, g);
  free(mem);
  return MT_OK;
}

/* Winograd weight gradient: each thread sums its tiles' products into its own dU (written by
 * its first piece), then the threads share the sum over the partials and the transform back */
static mt_status MT_G(conv_bwd_params_wino)(const scalar_t *x, const scalar_t *dy, scalar_t *dw, scalar_t *db,
                                            scalar_t scale, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW, L = g->oH * g->oW, part_size = 16 * g->O * g->Cg;
  conv_plan pl;
  wino_plan_make(&pl, g, sizeof(scalar_t));
  scalar_t *dU = malloc(sizeof(scalar_t) * (size_t)(part_size * pl.nth)),
           *mem = malloc(sizeof(scalar_t) * (size_t)(pl.per * pl.nth));
  if (!dU || !mem) {
    free(dU), free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of Winograd buffers",
                     (long long)(sizeof(scalar_t) * (part_size + pl.per) * pl.nth));
  }
  const int64_t scratch_offset = pl.per - wino_scratch(g);
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  {
    scalar_t beta = 0; /* every thread has at least one image (plan_split) */
    scalar_t *mine = dU + part_size * omp_get_thread_num();
    for (MT_G(piece) p = MT_G(first_piece)(&pl, mem, g); p.n < p.end; MT_G(next_piece)(&p, &pl)) {
      MT_G(wino_wgrad_piece)(x + p.n * xs, dy + p.n * ys, mine, beta, p.q, p.col, p.buf, p.col + scratch_offset, g);
      beta = 1;
    }
#pragma omp barrier
    MT_G(wino_weights_grad)(dU, part_size, pl.nth, dw, scale, g);
    if (db) {
#pragma omp for schedule(static)
      for (int64_t o = 0; o < g->O; o++) {
        scalar_t s = 0;
        for (int64_t n = 0; n < g->N; n++) {
          const scalar_t *r = dy + (n * g->O + o) * L;
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
static mt_status MT_G(conv_bwd_params)(const scalar_t *x, const scalar_t *dy, scalar_t *dw, scalar_t *db,
                                       scalar_t scale, const conv_geom *g) {
  const int64_t xs = g->C * g->H * g->W, ys = g->O * g->oH * g->oW;
  const int64_t w_size = g->O * g->Cg * g->kH * g->kW, part_size = w_size + g->O;
  if (wino_ok(g)) return MT_G(conv_bwd_params_wino)(x, dy, dw, db, scale, g);
  conv_plan pl;
  scalar_t *mem;
  MT_TRY(MT_G(plan_alloc)(&pl, &mem, g));
  scalar_t *part = pl.nth > 1 ? malloc(sizeof(scalar_t) * (size_t)(part_size * (pl.nth - 1))) : NULL;
  if (pl.nth > 1 && !part) {
    free(mem);
    return mt__error(MT_ERR_MEMORY, "SpatialConvolution: cannot allocate %lld bytes of partial weight gradients",
                     (long long)(sizeof(scalar_t) * part_size * (pl.nth - 1)));
  }
#pragma omp parallel num_threads(pl.nth) if (pl.nth > 1)
  {
    int t = omp_get_thread_num();
    scalar_t *part_dw = t == 0 ? dw : part + part_size * (t - 1), *part_db = !db      ? NULL
                                                                             : t == 0 ? db
                                                                                      : part_dw + w_size;
    scalar_t beta = t == 0 ? 1 : 0; /* every thread has at least one image (conv_plan_make) */
    for (MT_G(piece) p = MT_G(first_piece)(&pl, mem, g); p.n < p.end; MT_G(next_piece)(&p, &pl)) {
      MT_G(bwd_params_piece)(x + p.n * xs, dy + p.n * ys, part_dw, part_db, scale, beta, &p, g);
      beta = 1;
    }
    if (pl.nth > 1) { /* the same for every thread of the team */
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t i = 0; i < (db ? part_size : w_size); i++) {
        scalar_t s = 0;
        for (int u = 0; u < pl.nth - 1; u++) s += part[part_size * u + i];
        if (i < w_size) dw[i] += s;
        else db[i - w_size] += s;
      }
    }
  }
  free(mem);
  free(part);
  return MT_OK;
}

/* ---- entry points by compute type (nn_conv.c dispatches each float dtype to its compute
 * type's). Tensors of the pass's dtype run the kernels in place (float32 through pick_*_f32,
 * conv_backend.c's choice); those of another dtype stored in another type (float16, bfloat16)
 * run them on copies of the pass's dtype, GEMM having no half-precision kernels on the CPU.
 * dt: the pass's dtype. */

static mt_status MT_G(forward)(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                               const conv_geom *g) {
  const mt_dtype dt = MT_GEN_DTYPE;
  if (x->dtype == dt)
    return MT_G(pick_fwd)((const scalar_t *)mt__data(x), (const scalar_t *)mt__data(w),
                          b ? (const scalar_t *)mt__data(b) : NULL, (scalar_t *)mt__data(y), g);
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, w, b, y */
  mt_status st = as_dtype(x, dt, &t[0]);
  if (st == MT_OK) st = as_dtype(w, dt, &t[1]);
  if (st == MT_OK) st = as_dtype(b, dt, &t[2]);
  if (st == MT_OK) st = mt__tensor_empty(&t[3], dt, MT_CPU, y->ndim, y->sizes);
  if (st == MT_OK) st = MT_G(forward)(t[3], t[0], t[1], t[2], g);
  if (st == MT_OK) st = mt__cpu_copy(y, t[3]);
  release_all(t, 4);
  return st;
}

static mt_status MT_G(backward_input)(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w, const conv_geom *g) {
  const mt_dtype dt = MT_GEN_DTYPE;
  if (dy->dtype == dt)
    return MT_G(pick_bwd_input)((const scalar_t *)mt__data(dy), (const scalar_t *)mt__data(w), (scalar_t *)mt__data(dx),
                                g);
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* dy, w, dx */
  mt_status st = as_dtype(dy, dt, &t[0]);
  if (st == MT_OK) st = as_dtype(w, dt, &t[1]);
  if (st == MT_OK) st = mt__tensor_empty(&t[2], dt, MT_CPU, dx->ndim, dx->sizes);
  if (st == MT_OK) st = MT_G(backward_input)(t[2], t[0], t[1], g);
  if (st == MT_OK) st = mt__cpu_copy(dx, t[2]);
  release_all(t, 3);
  return st;
}

/* on copies, the accumulation into dw and db happens in the compute type, rounded once */
static mt_status MT_G(backward_params)(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                       double scale, const conv_geom *g) {
  const mt_dtype dt = MT_GEN_DTYPE;
  if (x->dtype == dt)
    return MT_G(pick_bwd_params)((const scalar_t *)mt__data(x), (const scalar_t *)mt__data(dy),
                                 (scalar_t *)mt__data(dw), db ? (scalar_t *)mt__data(db) : NULL, (scalar_t)scale, g);
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* dw, db, x, dy */
  mt_status st = as_dtype(dw, dt, &t[0]);
  if (st == MT_OK) st = as_dtype(db, dt, &t[1]);
  if (st == MT_OK) st = as_dtype(x, dt, &t[2]);
  if (st == MT_OK) st = as_dtype(dy, dt, &t[3]);
  if (st == MT_OK) st = MT_G(backward_params)(t[0], t[1], t[2], t[3], scale, g);
  if (st == MT_OK) st = mt__cpu_copy(dw, t[0]);
  if (st == MT_OK && db) st = mt__cpu_copy(db, t[1]);
  release_all(t, 4);
  return st;
}
