/* nn_conv.c: the CPU backend's 2-d convolution (NCHW, groups, stride, padding, dilation) by
 * im2col + GEMM, an image or a group of small images per GEMM (1x1 stride-1 unpadded
 * convolutions skip im2col), or Winograd F(2x2, 3x3). The math is in generic/nn_conv.c and
 * generic/nn_winograd.c, compiled for float and double; this file plans how the work is cut
 * over threads and dispatches on dtype.
 * float32 may run through oneDNN instead, per shape, as torch.convBackend says (conv_backend.c).
 * csrc/nn/conv.c has checked the arguments and made every tensor contiguous. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"
#include "onednn_conv.h"

typedef mt_conv_geom conv_geom;

/* How generic/nn_conv.c cuts the work: nth threads, each with a run of the batch, taken q images
 * at a time; per-thread buffers of per elements, the first colsz of them for columns (or
 * Winograd's transformed inputs). */
typedef struct conv_plan {
  int nth;
  int64_t q, colsz, per;
} conv_plan;

/* A GEMM narrower than this many columns runs well below the core's peak (512 x 16 x 4608:
 * 53 GFLOP/s on one core, 88 at 128 columns); one of an image with fewer output pixels than
 * this takes several images instead. Wider groups measured no faster, and slower where an
 * image alone is about this wide. */
#define GROUP_COLS 128
/* ... within this many bytes of buffers per thread */
#define GROUP_BYTES ((int64_t)8 << 20)

/* Threads and images per piece: nth threads, each with a run of the batch; q images per
 * piece, for at least `cols` GEMM columns at `per_image` each, at most a thread's share of
 * the batch, in runs of equal size (16 images as 8 + 8, not 12 + 4), and within GROUP_BYTES
 * of buffers per thread at `image_bytes` per image. */
static void plan_split(conv_plan *pl, const conv_geom *g, int64_t per_image, int64_t cols, int64_t image_bytes) {
  /* threads: 1 for a single image or for work too small to repay waking threads */
  int nth = mt_get_num_threads();
  double macs = (double)g->N * g->O * g->oH * g->oW * g->Cg * g->kH * g->kW;
  pl->nth = g->N < 2 || nth < 2 || macs < 1e6 ? 1 : g->N < nth ? (int)g->N : nth;
  int64_t share = (g->N + pl->nth - 1) / pl->nth, q = (cols + per_image - 1) / per_image;
  int64_t cap = GROUP_BYTES / image_bytes;
  if (q > cap) q = cap;
  if (q > share) q = share;
  if (q > 1) {
    int64_t runs = (share + q - 1) / q;
    q = (share + runs - 1) / runs;
  } else q = 1;
  pl->q = q;
}

/* im2col pieces: columns K x q*L, then (q > 1) outputs Og x q*L */
static void conv_plan_make(conv_plan *pl, const conv_geom *g, size_t es) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups;
  plan_split(pl, g, L, GROUP_COLS, (K + Og) * L * (int64_t)es);
  pl->colsz = pl->q == 1 && g->pointwise ? 0 : K * pl->q * L;
  pl->per = pl->colsz + (pl->q > 1 ? Og * pl->q * L : 0);
}

/* Winograd F(2x2, 3x3) (generic/nn_winograd.c) for 3x3 stride-1 undilated convolutions: with
 * enough planes on both sides for its 16 GEMMs of inner size Cg to run well, and enough tiles
 * (2x2 outputs) in the batch to repay transforming the weights (16*O*Cg values per call).
 * CPU time against im2col + GEMM, batch 32: 64 -> 64 planes at 32x32, -31%; 128 -> 128 at
 * 16x16, -36%; 256 -> 256 at 8x8, -24%; 512 -> 512 at 4x4 (128 tiles), +5%. */
static int wino_ok(const conv_geom *g) {
  const int64_t Og = g->O / g->groups, tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2);
  return g->kH == 3 && g->kW == 3 && g->sH == 1 && g->sW == 1 && g->dH == 1 && g->dW == 1 && g->Cg >= 32 && Og >= 32 &&
         g->N * tiles >= 256;
}

/* scratch rows of generic/nn_winograd.c's transforms: 8 rows of 2*tW + 2 (input), 12 of tW (output) */
static int64_t wino_scratch(const conv_geom *g) {
  const int64_t tW = (g->oW + 1) / 2;
  return 8 * (2 * tW + 2);
}

/* Winograd pieces: q images' tiles (2x2 outputs each) as the GEMMs' columns, at least
 * WINO_COLS of them; per thread V (16 x Cg x T), M (16 x Og x T), then the transforms'
 * scratch (wino_scratch) */
#define WINO_COLS 256
static void wino_plan_make(conv_plan *pl, const conv_geom *g, size_t es) {
  const int64_t tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2), Og = g->O / g->groups;
  plan_split(pl, g, tiles, WINO_COLS, 16 * (g->Cg + Og) * tiles * (int64_t)es);
  pl->colsz = 16 * g->Cg * pl->q * tiles;
  pl->per = pl->colsz + 16 * Og * pl->q * tiles + wino_scratch(g);
}

/* Index ranges that im2col_plane and col2im_plane (generic/nn_conv.c) both need, whatever the
 * dtype. */
/* For kernel column kx: the input column offset offx (returned) and the output columns
 * lo <= ox < hi whose input column offx + ox*sW lies inside the image. */
static inline int64_t conv_cols_inside(const conv_geom *g, int64_t kx, int64_t *lo, int64_t *hi) {
  int64_t offx = kx * g->dW - g->pW;
  int64_t l = offx >= 0 ? 0 : (-offx + g->sW - 1) / g->sW;
  int64_t h = offx > g->W - 1 ? 0 : (g->W - 1 - offx) / g->sW + 1;
  if (h > g->oW) h = g->oW;
  if (l > h) l = h;
  *lo = l, *hi = h;
  return offx;
}

/* A stride-1 "same"-width tap (ky, offx) as one shifted run: output rows oy0 <= oy < oy1 read
 * inside the image, and column d of the run is plane element d + shift for d0 <= d < d1. */
typedef struct {
  int64_t oy0, oy1, shift, d0, d1;
} conv_run;

static inline conv_run conv_same_run(const conv_geom *g, int64_t ky, int64_t offx) {
  const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  conv_run r;
  r.oy0 = g->pH - ky * g->dH, r.oy1 = H + g->pH - ky * g->dH; /* rows with 0 <= iy < H */
  if (r.oy0 < 0) r.oy0 = 0;
  if (r.oy0 > oH) r.oy0 = oH; /* a tap below the image for every output row */
  if (r.oy1 > oH) r.oy1 = oH;
  if (r.oy1 < r.oy0) r.oy1 = r.oy0;
  r.shift = (ky * g->dH - g->pH) * W + offx;
  r.d0 = r.oy0 * oW, r.d1 = r.oy1 * oW;
  if (r.d0 + r.shift < 0) r.d0 = -r.shift;
  if (r.d1 + r.shift > H * W) r.d1 = H * W - r.shift;
  return r;
}

/* ---- the kernels, for the two compute types: float16 and bfloat16 run float32's on copies
 * (below). float32 goes through conv_backend.c's choice between oneDNN and the native kernels
 * (pick_*_f32, defined after them); float64 has only the native kernels. */
static mt_status pick_fwd_f32(const float *x, const float *w, const float *b, float *y, const conv_geom *g);
static mt_status pick_bwd_input_f32(const float *dy, const float *w, float *dx, const conv_geom *g);
static mt_status pick_bwd_params_f32(const float *x, const float *dy, float *dw, float *db, float scale,
                                     const conv_geom *g);
#define pick_fwd_f64 conv_fwd_f64
#define pick_bwd_input_f64 conv_bwd_input_f64
#define pick_bwd_params_f64 conv_bwd_params_f64

/* a CT copy (dtype `dt`) of t, or NULL for t NULL */
static mt_status as_dtype(const mt_tensor *t, int dt, mt_tensor **out) {
  *out = NULL;
  if (!t) return MT_OK;
  MT_TRY(mt__tensor_empty(out, dt, MT_CPU, t->ndim, t->sizes));
  mt_status st = mt__cpu_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

static void release_all(mt_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) mt_tensor_release(ts[i]);
}

/* each pass's GEMM: mt__sgemm for f32, mt__dgemm for f64 */
#define GEMM MT_G(gemm)
#define gemm_f32 mt__sgemm
#define gemm_f64 mt__dgemm
#define MT_GENERIC_FILE "generic/nn_winograd.c"
#include "generate_blas.h"
#define MT_GENERIC_FILE "generic/nn_conv.c"
#include "generate_blas.h"

/* float32: the native kernels behind conv_backend.c's choice (onednn_conv.h) */
static mt_status native_f32(const mt__conv_call *c, const conv_geom *g) {
  if (c->dir == MT__CONV_FWD) return conv_fwd_f32(c->a, c->b, c->bias, c->out, g);
  if (c->dir == MT__CONV_BWD_DATA) return conv_bwd_input_f32(c->a, c->b, c->out, g);
  return conv_bwd_params_f32(c->a, c->b, c->out, c->out2, c->scale, g);
}
static mt_status pick_fwd_f32(const float *x, const float *w, const float *b, float *y, const conv_geom *g) {
  mt__conv_call c = {MT__CONV_FWD, x, w, b, y, NULL, 1};
  return mt__conv_f32(&c, g, native_f32);
}
static mt_status pick_bwd_input_f32(const float *dy, const float *w, float *dx, const conv_geom *g) {
  mt__conv_call c = {MT__CONV_BWD_DATA, dy, w, NULL, dx, NULL, 1};
  return mt__conv_f32(&c, g, native_f32);
}
static mt_status pick_bwd_params_f32(const float *x, const float *dy, float *dw, float *db, float scale,
                                     const conv_geom *g) {
  mt__conv_call c = {MT__CONV_BWD_WEIGHTS, x, dy, NULL, dw, db, scale};
  return mt__conv_f32(&c, g, native_f32);
}

/* ---- dispatch on MT_FLOAT_DTYPE_LIST by compute type: the entry point of CT's pass
 * (generic/nn_conv.c), float32's for float16 and bfloat16 */
#define BY_COMPUTE_TYPE(CT, name) _Generic((CT)0, float : name##_f32, double : name##_f64)

#define FORWARD_CASE(E, N, T, CT) \
  case E: return BY_COMPUTE_TYPE(CT, forward)(y, x, w, b, g);
mt_status mt__cpu_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                 const mt_conv_geom *g) {
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(FORWARD_CASE)
    default: break;
  }
  return mt__error(MT_ERR_DTYPE, "SpatialConvolution: dtype %s is not supported", mt_dtype_name(x->dtype));
}

#define BACKWARD_INPUT_CASE(E, N, T, CT) \
  case E: return BY_COMPUTE_TYPE(CT, backward_input)(dx, dy, w, g);
mt_status mt__cpu_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w, const mt_conv_geom *g) {
  switch (dy->dtype) {
    MT_FLOAT_DTYPE_LIST(BACKWARD_INPUT_CASE)
    default: break;
  }
  return mt__error(MT_ERR_DTYPE, "SpatialConvolution: dtype %s is not supported", mt_dtype_name(dy->dtype));
}

#define BACKWARD_PARAMS_CASE(E, N, T, CT) \
  case E: return BY_COMPUTE_TYPE(CT, backward_params)(dw, db, x, dy, scale, g);
mt_status mt__cpu_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                         double scale, const mt_conv_geom *g) {
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(BACKWARD_PARAMS_CASE)
    default: break;
  }
  return mt__error(MT_ERR_DTYPE, "SpatialConvolution: dtype %s is not supported", mt_dtype_name(x->dtype));
}
