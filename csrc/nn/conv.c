/* conv.c: 2-d convolution (NCHW, float32/float64, groups, stride, padding, dilation) on the
 * CPU by im2col + GEMM, an image or a group of small images per GEMM (1x1 stride-1 unpadded
 * convolutions skip im2col). The math is in conv_kernels.h; this file validates arguments,
 * handles layouts and plans how the work is cut over threads. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "../core/tensor.h"
#include "../core/error.h"
#include "../cpu/cpu.h"
#include "nn_cuda.h"

#define OP "SpatialConvolution"

typedef struct conv_geom {
  int64_t N, C, H, W, O, Cg, kH, kW, oH, oW;
  int64_t sW, sH, pW, pH, dW, dH, groups;
  int pointwise; /* 1x1, stride 1, no padding: the image is its own column matrix */
} conv_geom;

static int conv_tid(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* How conv_kernels.h cuts the work: nth threads, each with a run of the batch, taken q images
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
  } else
    q = 1;
  pl->q = q;
}

/* im2col pieces: columns K x q*L, then (q > 1) outputs Og x q*L */
static void conv_plan_make(conv_plan *pl, const conv_geom *g, size_t es) {
  const int64_t L = g->oH * g->oW, K = g->Cg * g->kH * g->kW, Og = g->O / g->groups;
  plan_split(pl, g, L, GROUP_COLS, (K + Og) * L * (int64_t)es);
  pl->colsz = pl->q == 1 && g->pointwise ? 0 : K * pl->q * L;
  pl->per = pl->colsz + (pl->q > 1 ? Og * pl->q * L : 0);
}

/* Winograd F(2x2, 3x3) (conv_winograd.h) for 3x3 stride-1 undilated convolutions: with
 * enough planes on both sides for its 16 GEMMs of inner size Cg to run well, and enough tiles
 * (2x2 outputs) in the batch to repay transforming the weights (16*O*Cg values per call).
 * CPU time against im2col + GEMM, batch 32: 64 -> 64 planes at 32x32, -31%; 128 -> 128 at
 * 16x16, -36%; 256 -> 256 at 8x8, -24%; 512 -> 512 at 4x4 (128 tiles), +5%. */
static int wino_ok(const conv_geom *g) {
  const int64_t Og = g->O / g->groups, tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2);
  return g->kH == 3 && g->kW == 3 && g->sH == 1 && g->sW == 1 && g->dH == 1 && g->dW == 1 && g->Cg >= 32 &&
         Og >= 32 && g->N * tiles >= 256;
}

/* scratch rows of conv_winograd.h's transforms: 8 rows of 2*tW + 2 (input), 12 of tW (output) */
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

#define T float
#define SFX f32
#define GEMM mt__sgemm
#include "conv_winograd.h"
#include "conv_kernels.h"
#undef T
#undef SFX
#undef GEMM
#define T double
#define SFX f64
#define GEMM mt__dgemm
#include "conv_winograd.h"
#include "conv_kernels.h"
#undef T
#undef SFX
#undef GEMM

/* Checks shared by the three entry points: dtypes, devices, 4-d shapes, channel counts and a
 * positive output size. Fills g from the input and weight. */
static mt_status conv_check(conv_geom *g, const mt_tensor *input, const mt_tensor *weight, int sW, int sH, int pW,
                            int pH, int dW, int dH, int groups) {
  char b1[64], b2[64];
  MT_CHECK_TENSOR(input, OP, "input");
  MT_CHECK_TENSOR(weight, OP, "weight");
  if (input->device != weight->device)
    return mt__error(MT_ERR_DEVICE, OP ": weight is on %s but input is on %s", mt__device_str(weight->device, b1, sizeof b1),
                     mt__device_str(input->device, b2, sizeof b2));
  if (!mt_dtype_is_floating(input->dtype))
    return mt__error(MT_ERR_DTYPE, OP ": input has dtype %s, expected a floating dtype",
                     mt_dtype_name(input->dtype));
  if (weight->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": weight has dtype %s but input has %s", mt_dtype_name(weight->dtype),
                     mt_dtype_name(input->dtype));
  if (input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, OP ": expected a 4-d input (batch x channels x height x width), got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  if (weight->ndim != 4)
    return mt__error(MT_ERR_SHAPE, OP ": expected a 4-d weight (nOut x nIn/groups x kH x kW), got size %s",
                     mt__shape_str(weight, b1, sizeof b1));
  if (sW < 1 || sH < 1) return mt__error(MT_ERR_ARG, OP ": stride %dx%d must be positive", sW, sH);
  if (dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, OP ": dilation %dx%d must be positive", dW, dH);
  if (pW < 0 || pH < 0) return mt__error(MT_ERR_ARG, OP ": padding %dx%d must not be negative", pW, pH);
  if (groups < 1) return mt__error(MT_ERR_ARG, OP ": groups %d must be positive", groups);
  g->N = input->sizes[0], g->C = input->sizes[1], g->H = input->sizes[2], g->W = input->sizes[3];
  g->O = weight->sizes[0], g->Cg = weight->sizes[1], g->kH = weight->sizes[2], g->kW = weight->sizes[3];
  g->sW = sW, g->sH = sH, g->pW = pW, g->pH = pH, g->dW = dW, g->dH = dH, g->groups = groups;
  if (g->O % groups)
    return mt__error(MT_ERR_SHAPE, OP ": %lld output planes are not divisible by %d groups", (long long)g->O, groups);
  if (g->C != g->Cg * groups)
    return mt__error(MT_ERR_SHAPE, OP ": input has %lld channels, weight expects %lld (weight %s, %d groups)",
                     (long long)g->C, (long long)(g->Cg * groups), mt__shape_str(weight, b1, sizeof b1), groups);
  if (g->kH < 1 || g->kW < 1 || g->O < 1)
    return mt__error(MT_ERR_SHAPE, OP ": empty weight of size %s", mt__shape_str(weight, b1, sizeof b1));
  int64_t ekH = g->dH * (g->kH - 1) + 1, ekW = g->dW * (g->kW - 1) + 1;
  g->oH = (g->H + 2 * g->pH - ekH) / g->sH + 1;
  g->oW = (g->W + 2 * g->pW - ekW) / g->sW + 1;
  if (g->H + 2 * g->pH < ekH || g->W + 2 * g->pW < ekW || g->oH < 1 || g->oW < 1)
    return mt__error(MT_ERR_SHAPE,
                     OP ": input image %lldx%lld (padded %lldx%lld) is smaller than the kernel %lldx%lld "
                        "(dilated %lldx%lld); input size %s",
                     (long long)g->H, (long long)g->W, (long long)(g->H + 2 * g->pH), (long long)(g->W + 2 * g->pW),
                     (long long)g->kH, (long long)g->kW, (long long)ekH, (long long)ekW,
                     mt__shape_str(input, b2, sizeof b2));
  if (g->oH * g->oW > INT32_MAX || g->Cg * g->kH * g->kW > INT32_MAX)
    return mt__error(MT_ERR_SHAPE, OP ": input %s is too large for a BLAS call", mt__shape_str(input, b1, sizeof b1));
  g->pointwise = g->kH == 1 && g->kW == 1 && sW == 1 && sH == 1 && pW == 0 && pH == 0;
  return MT_OK;
}

static mt_status check_same(const mt_tensor *t, const mt_tensor *input, const char *name) {
  char b1[64], b2[64];
  if (t->device != input->device)
    return mt__error(MT_ERR_DEVICE, OP ": %s is on %s but input is on %s", name, mt__device_str(t->device, b1, sizeof b1),
                     mt__device_str(input->device, b2, sizeof b2));
  if (t->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": %s has dtype %s but input has %s", name, mt_dtype_name(t->dtype),
                     mt_dtype_name(input->dtype));
  return MT_OK;
}

/* A contiguous version of t: a new alias when it already is one, else a copy. */
static mt_status contig(const mt_tensor *t, mt_tensor **out) {
  if (mt__is_contiguous(t)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, OP ": out of memory");
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
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

/* A contiguous buffer to write a result into: out itself, or a temporary copied back after. */
static mt_status result_buf(mt_tensor *out, mt_tensor **buf, int keep_values) {
  if (mt__is_contiguous(out)) {
    *buf = mt__tensor_alias(out);
    return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, OP ": out of memory");
  }
  if (keep_values) return contig(out, buf);
  return mt__tensor_empty(buf, out->dtype, out->device, out->ndim, out->sizes);
}
static mt_status result_done(mt_tensor *out, mt_tensor *buf, mt_status st) {
  if (st == MT_OK && mt__data(buf) != mt__data(out)) st = mt_copy(out, buf);
  mt_tensor_release(buf);
  return st;
}

/* float16/bfloat16 go through float32 copies: GEMM has no half-precision kernels on the CPU */
static int is_half(int dtype) { return dtype == MT_F16 || dtype == MT_BF16; }

static mt_status to_f32(const mt_tensor *t, mt_tensor **out) {
  *out = NULL;
  if (!t) return MT_OK;
  MT_TRY(mt__tensor_empty(out, MT_F32, MT_CPU, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

static mt_status half_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight, const mt_tensor *bias,
                              const conv_geom *g) {
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL};
  int64_t osz[4] = {g->N, g->O, g->oH, g->oW};
  mt_status st = to_f32(input, &t[0]);
  if (st == MT_OK) st = to_f32(weight, &t[1]);
  if (st == MT_OK) st = to_f32(bias, &t[2]);
  if (st == MT_OK) st = mt__tensor_empty(&t[3], MT_F32, MT_CPU, 4, osz);
  if (st == MT_OK)
    st = mt_conv2d_forward(t[3], t[0], t[1], t[2], (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH, (int)g->dW,
                           (int)g->dH, (int)g->groups);
  if (st == MT_OK) st = mt_copy(out, t[3]);
  release_all(t, 4);
  return st;
}

static mt_status half_backward_input(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput,
                                     const mt_tensor *weight, const conv_geom *g) {
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL};
  mt_status st = mt__tensor_empty(&t[0], MT_F32, MT_CPU, 4, input->sizes); /* only its size is read */
  if (st == MT_OK) st = to_f32(gradOutput, &t[1]);
  if (st == MT_OK) st = to_f32(weight, &t[2]);
  if (st == MT_OK) st = mt__tensor_empty(&t[3], MT_F32, MT_CPU, 4, input->sizes);
  if (st == MT_OK)
    st = mt_conv2d_backward_input(t[3], t[0], t[1], t[2], (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH,
                                  (int)g->dW, (int)g->dH, (int)g->groups);
  if (st == MT_OK) st = mt_copy(gradInput, t[3]);
  release_all(t, 4);
  return st;
}

/* the accumulation happens in float32 on copies of the half gradients, rounded once at the end */
static mt_status half_backward_params(mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *input,
                                      const mt_tensor *gradOutput, double scale, const conv_geom *g) {
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL};
  mt_status st = to_f32(gradWeight, &t[0]);
  if (st == MT_OK) st = to_f32(gradBias, &t[1]);
  if (st == MT_OK) st = to_f32(input, &t[2]);
  if (st == MT_OK) st = to_f32(gradOutput, &t[3]);
  if (st == MT_OK)
    st = mt_conv2d_backward_params(t[0], t[1], t[2], t[3], scale, (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH,
                                   (int)g->dW, (int)g->dH, (int)g->groups);
  if (st == MT_OK) st = mt_copy(gradWeight, t[0]);
  if (st == MT_OK && gradBias) st = mt_copy(gradBias, t[1]);
  release_all(t, 4);
  return st;
}

mt_status mt_conv2d_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight, const mt_tensor *bias,
                            int strideW, int strideH, int padW, int padH, int dilationW, int dilationH, int groups) {
  conv_geom g;
  char b1[64];
  MT_TRY(conv_check(&g, input, weight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  if (bias) {
    MT_TRY(check_same(bias, input, "bias"));
    if (bias->ndim != 1 || bias->sizes[0] != g.O)
      return mt__error(MT_ERR_SHAPE, OP ": bias has size %s, expected %lld", mt__shape_str(bias, b1, sizeof b1),
                       (long long)g.O);
  }
  MT_CHECK_TENSOR(out, OP, "output");
  int64_t osz[4] = {g.N, g.O, g.oH, g.oW};
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, 4, osz, OP));
  if (g.N == 0) return MT_OK;
  if (is_half(input->dtype) && input->device == MT_CPU) return half_forward(out, input, weight, bias, &g);
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, w, b, y */
  mt_status st = contig(input, &t[0]);
  if (st == MT_OK) st = contig(weight, &t[1]);
  if (st == MT_OK && bias) st = contig(bias, &t[2]);
  if (st == MT_OK) st = result_buf(out, &t[3], 0);
  if (st == MT_OK) {
    if (input->device != MT_CPU) /* cuDNN takes f16/bf16 as they are */
      st = mt__cuda_nn_conv2d_forward(t[3], t[0], t[1], t[2], strideW, strideH, padW, padH, dilationW, dilationH, groups);
    else if (input->dtype == MT_F32)
      st = conv_fwd_f32((const float *)mt__data(t[0]), (const float *)mt__data(t[1]), bias ? (const float *)mt__data(t[2]) : NULL,
                        (float *)mt__data(t[3]), &g);
    else
      st = conv_fwd_f64((const double *)mt__data(t[0]), (const double *)mt__data(t[1]), bias ? (const double *)mt__data(t[2]) : NULL,
                        (double *)mt__data(t[3]), &g);
    mt_tensor *y = t[3];
    t[3] = NULL;
    st = result_done(out, y, st);
  }
  release_all(t, 4);
  return st;
}

static mt_status check_grad_output(const mt_tensor *gradOutput, const mt_tensor *input, const conv_geom *g) {
  char b1[64];
  MT_CHECK_TENSOR(gradOutput, OP, "gradOutput");
  MT_TRY(check_same(gradOutput, input, "gradOutput"));
  if (gradOutput->ndim != 4 || gradOutput->sizes[0] != g->N || gradOutput->sizes[1] != g->O ||
      gradOutput->sizes[2] != g->oH || gradOutput->sizes[3] != g->oW)
    return mt__error(MT_ERR_SHAPE, OP ": gradOutput has size %s, expected %lldx%lldx%lldx%lld",
                     mt__shape_str(gradOutput, b1, sizeof b1), (long long)g->N, (long long)g->O, (long long)g->oH,
                     (long long)g->oW);
  return MT_OK;
}

mt_status mt_conv2d_backward_input(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput,
                                   const mt_tensor *weight, int strideW, int strideH, int padW, int padH,
                                   int dilationW, int dilationH, int groups) {
  conv_geom g;
  MT_TRY(conv_check(&g, input, weight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  MT_TRY(check_grad_output(gradOutput, input, &g));
  MT_CHECK_TENSOR(gradInput, OP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, 4, input->sizes, OP));
  if (g.N == 0) return MT_OK;
  if (is_half(input->dtype) && input->device == MT_CPU) return half_backward_input(gradInput, input, gradOutput, weight, &g);
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* dy, w, dx */
  mt_status st = contig(gradOutput, &t[0]);
  if (st == MT_OK) st = contig(weight, &t[1]);
  if (st == MT_OK) st = result_buf(gradInput, &t[2], 0);
  if (st == MT_OK) {
    if (input->device != MT_CPU)
      st = mt__cuda_nn_conv2d_backward_input(t[2], t[0], t[1], strideW, strideH, padW, padH, dilationW, dilationH, groups);
    else if (input->dtype == MT_F32)
      st = conv_bwd_input_f32((const float *)mt__data(t[0]), (const float *)mt__data(t[1]), (float *)mt__data(t[2]), &g);
    else
      st = conv_bwd_input_f64((const double *)mt__data(t[0]), (const double *)mt__data(t[1]), (double *)mt__data(t[2]), &g);
    mt_tensor *dx = t[2];
    t[2] = NULL;
    st = result_done(gradInput, dx, st);
  }
  release_all(t, 3);
  return st;
}

mt_status mt_conv2d_backward_params(mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *input,
                                    const mt_tensor *gradOutput, double scale, int strideW, int strideH, int padW,
                                    int padH, int dilationW, int dilationH, int groups) {
  conv_geom g;
  char b1[64], b2[64];
  MT_CHECK_TENSOR(gradWeight, OP, "gradWeight");
  MT_TRY(conv_check(&g, input, gradWeight, strideW, strideH, padW, padH, dilationW, dilationH, groups));
  MT_TRY(check_grad_output(gradOutput, input, &g));
  if (gradBias) {
    MT_TRY(check_same(gradBias, input, "gradBias"));
    if (gradBias->ndim != 1 || gradBias->sizes[0] != g.O)
      return mt__error(MT_ERR_SHAPE, OP ": gradBias has size %s, expected %lld (gradWeight %s)",
                       mt__shape_str(gradBias, b1, sizeof b1), (long long)g.O,
                       mt__shape_str(gradWeight, b2, sizeof b2));
  }
  if (g.N == 0) return MT_OK;
  if (is_half(input->dtype) && input->device == MT_CPU) return half_backward_params(gradWeight, gradBias, input, gradOutput, scale, &g);
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, dy, dw, db */
  mt_status st = contig(input, &t[0]);
  if (st == MT_OK) st = contig(gradOutput, &t[1]);
  if (st == MT_OK) st = result_buf(gradWeight, &t[2], 1);
  if (st == MT_OK && gradBias) st = result_buf(gradBias, &t[3], 1);
  if (st == MT_OK) {
    if (input->device != MT_CPU)
      st = mt__cuda_nn_conv2d_backward_params(t[2], gradBias ? t[3] : NULL, t[0], t[1], scale, strideW, strideH, padW, padH,
                                              dilationW, dilationH, groups);
    else if (input->dtype == MT_F32)
      st = conv_bwd_params_f32((const float *)mt__data(t[0]), (const float *)mt__data(t[1]), (float *)mt__data(t[2]),
                               gradBias ? (float *)mt__data(t[3]) : NULL, (float)scale, &g);
    else
      st = conv_bwd_params_f64((const double *)mt__data(t[0]), (const double *)mt__data(t[1]), (double *)mt__data(t[2]),
                               gradBias ? (double *)mt__data(t[3]) : NULL, scale, &g);
    mt_tensor *dw = t[2], *db = t[3];
    t[2] = t[3] = NULL;
    st = result_done(gradWeight, dw, st);
    if (db) st = result_done(gradBias, db, st);
  }
  release_all(t, 4);
  return st;
}
