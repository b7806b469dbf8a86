/* pool.c: 2-d max and average pooling (NCHW, float dtypes) on the CPU, with Torch7/PyTorch
 * output sizes (floor or ceil mode; in ceil mode the last window must start inside the input
 * or its left padding). Work is split over the N*C planes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/tensor.h"
#include "../core/error.h"
#include "../core/dtype.h"
#include "../cpu/cpu.h"
#include "nn_cuda.h"

typedef struct pool_geom {
  int64_t planes, H, W, oH, oW, kH, kW, dH, dW, pH, pW;
} pool_geom;

static int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int ceil_mode) {
  int64_t span = in + 2 * p - k;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o--; /* the last window would start in the right padding */
  return o;
}

/* the same geometry for the CUDA kernels (nn_cuda.h) */
static const mt__cuda_pool_geom *cuda_geom(const pool_geom *g, mt__cuda_pool_geom *c) {
  c->planes = g->planes, c->H = g->H, c->W = g->W, c->oH = g->oH, c->oW = g->oW;
  c->kW = (int)g->kW, c->kH = (int)g->kH, c->dW = (int)g->dW, c->dH = (int)g->dH, c->pW = (int)g->pW, c->pH = (int)g->pH;
  return c;
}

static mt_status pool_check(pool_geom *g, int64_t *osz, const mt_tensor *input, int kW, int kH, int dW, int dH,
                            int padW, int padH, int ceil_mode, const char *op) {
  char b1[64];
  MT_CHECK_TENSOR(input, op, "input");
  if (!mt_dtype_is_floating(input->dtype))
    return mt__error(MT_ERR_DTYPE, "%s: input has dtype %s, expected a floating dtype", op,
                     mt_dtype_name(input->dtype));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, "%s: expected a 3-d or 4-d input, got size %s", op,
                     mt__shape_str(input, b1, sizeof b1));
  if (kW < 1 || kH < 1) return mt__error(MT_ERR_ARG, "%s: kernel %dx%d must be positive", op, kW, kH);
  if (dW < 1 || dH < 1) return mt__error(MT_ERR_ARG, "%s: stride %dx%d must be positive", op, dW, dH);
  if (padW < 0 || padH < 0 || 2 * padW > kW || 2 * padH > kH)
    return mt__error(MT_ERR_ARG, "%s: padding %dx%d must be between 0 and half the kernel %dx%d", op, padW, padH, kW,
                     kH);
  int nd = input->ndim;
  g->H = input->sizes[nd - 2], g->W = input->sizes[nd - 1];
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  g->kH = kH, g->kW = kW, g->dH = dH, g->dW = dW, g->pH = padH, g->pW = padW;
  if (g->H + 2 * padH < kH || g->W + 2 * padW < kW)
    return mt__error(MT_ERR_SHAPE, "%s: input image %lldx%lld (padded %lldx%lld) is smaller than the kernel %dx%d",
                     op, (long long)g->H, (long long)g->W, (long long)(g->H + 2 * padH), (long long)(g->W + 2 * padW),
                     kH, kW);
  g->oH = pool_out_size(g->H, kH, dH, padH, ceil_mode);
  g->oW = pool_out_size(g->W, kW, dW, padW, ceil_mode);
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = g->oH, osz[nd - 1] = g->oW;
  return MT_OK;
}

static mt_status contig(const mt_tensor *t, mt_tensor **out, const char *op) {
  if (mt__is_contiguous(t)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}
/* contiguous buffer for a result: out itself or a temporary copied back by result_done */
static mt_status result_buf(mt_tensor *out, mt_tensor **buf, const char *op) {
  if (mt__is_contiguous(out)) {
    *buf = mt__tensor_alias(out);
    return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  return mt__tensor_empty(buf, out->dtype, out->device, out->ndim, out->sizes);
}
static mt_status result_done(mt_tensor *out, mt_tensor *buf, mt_status st) {
  if (st == MT_OK && mt__data(buf) != mt__data(out)) st = mt_copy(out, buf);
  mt_tensor_release(buf);
  return st;
}

/* ---- max pooling: indices hold the 0-based flat position of each maximum in its H x W plane;
 * NaN wins (propagates) as in PyTorch. */
#define MAX_FWD(E, N, T, CT)                                                                          \
  static void maxfwd_##N(const T *x, T *y, int64_t *idx, const pool_geom *g) {                        \
    int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;                                         \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      const T *xp = x + p * g->H * g->W;                                                              \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                          \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                      \
          int64_t y0 = oy * g->dH - g->pH, x0 = ox * g->dW - g->pW;                                   \
          int64_t y1 = y0 + g->kH < g->H ? y0 + g->kH : g->H, x1 = x0 + g->kW < g->W ? x0 + g->kW : g->W; \
          if (y0 < 0) y0 = 0;                                                                         \
          if (x0 < 0) x0 = 0;                                                                         \
          CT best = -INFINITY;                                                                        \
          int64_t bi = y0 * g->W + x0;                                                                \
          for (int64_t iy = y0; iy < y1; iy++)                                                        \
            for (int64_t ix = x0; ix < x1; ix++) {                                                    \
              CT v = mt_ld_##N(xp + iy * g->W + ix);                                                  \
              if (v > best || v != v) {                                                               \
                best = v;                                                                             \
                bi = iy * g->W + ix;                                                                  \
                if (v != v) goto done_##N;                                                            \
              }                                                                                       \
            }                                                                                         \
        done_##N:;                                                                                    \
          int64_t o = (p * g->oH + oy) * g->oW + ox;                                                  \
          mt_st_##N(y + o, best);                                                                     \
          idx[o] = bi;                                                                                \
        }                                                                                             \
    }                                                                                                 \
  }                                                                                                   \
  static void maxbwd_##N(const T *dy, const int64_t *idx, T *dx, const pool_geom *g) {                \
    int64_t work = g->planes * g->H * g->W;                                                           \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      T *dxp = dx + p * g->H * g->W;                                                                  \
      for (int64_t i = 0; i < g->H * g->W; i++) mt_st_##N(dxp + i, 0);                                \
      for (int64_t o = p * g->oH * g->oW; o < (p + 1) * g->oH * g->oW; o++) {                        \
        CT s = mt_ld_##N(dxp + idx[o]) + mt_ld_##N(dy + o);                                           \
        mt_st_##N(dxp + idx[o], s);                                                                   \
      }                                                                                               \
    }                                                                                                 \
  }
MT_FLOAT_DTYPE_LIST(MAX_FWD)

/* ---- average pooling: the divisor counts padding cells (count_include_pad) but never the part
 * of a ceil-mode window beyond the padded input, as in PyTorch/Torch7. */
static inline void avg_window(const pool_geom *g, int64_t oy, int64_t ox, int cip, int64_t *y0, int64_t *y1,
                              int64_t *x0, int64_t *x1, int64_t *div) {
  int64_t a = oy * g->dH - g->pH, b = ox * g->dW - g->pW;
  int64_t c = a + g->kH, d = b + g->kW;
  if (c > g->H + g->pH) c = g->H + g->pH;
  if (d > g->W + g->pW) d = g->W + g->pW;
  int64_t padded = (c - a) * (d - b);
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  if (c > g->H) c = g->H;
  if (d > g->W) d = g->W;
  *y0 = a, *y1 = c, *x0 = b, *x1 = d;
  *div = cip ? padded : (c - a) * (d - b);
}

#define AVG(E, N, T, CT)                                                                              \
  static void avgfwd_##N(const T *x, T *y, const pool_geom *g, int cip) {                             \
    int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;                                         \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      const T *xp = x + p * g->H * g->W;                                                              \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                          \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                      \
          int64_t y0, y1, x0, x1, div;                                                                \
          avg_window(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);                                       \
          CT s = 0;                                                                                   \
          for (int64_t iy = y0; iy < y1; iy++)                                                        \
            for (int64_t ix = x0; ix < x1; ix++) s += mt_ld_##N(xp + iy * g->W + ix);                 \
          mt_st_##N(y + (p * g->oH + oy) * g->oW + ox, div > 0 ? s / (CT)div : (CT)0);                \
        }                                                                                             \
    }                                                                                                 \
  }                                                                                                   \
  static void avgbwd_##N(const T *dy, T *dx, const pool_geom *g, int cip) {                           \
    int64_t work = g->planes * g->oH * g->oW * g->kH * g->kW;                                         \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      T *dxp = dx + p * g->H * g->W;                                                                  \
      for (int64_t i = 0; i < g->H * g->W; i++) mt_st_##N(dxp + i, 0);                                \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                          \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                      \
          int64_t y0, y1, x0, x1, div;                                                                \
          avg_window(g, oy, ox, cip, &y0, &y1, &x0, &x1, &div);                                       \
          if (div <= 0) continue;                                                                     \
          CT v = mt_ld_##N(dy + (p * g->oH + oy) * g->oW + ox) / (CT)div;                            \
          for (int64_t iy = y0; iy < y1; iy++)                                                        \
            for (int64_t ix = x0; ix < x1; ix++) {                                                    \
              T *q = dxp + iy * g->W + ix;                                                            \
              mt_st_##N(q, mt_ld_##N(q) + v);                                                         \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
  }
MT_FLOAT_DTYPE_LIST(AVG)

static mt_status check_like(const mt_tensor *t, const mt_tensor *input, int ndim, const int64_t *sizes,
                            const char *what, const char *op) {
  char b1[64], b2[64];
  MT_CHECK_TENSOR(t, op, what);
  if (t->device != input->device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but input is on %s", op, what, mt__device_str(t->device, b1, sizeof b1),
                     mt__device_str(input->device, b2, sizeof b2));
  if (t->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but input has %s", op, what, mt_dtype_name(t->dtype),
                     mt_dtype_name(input->dtype));
  bool same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->sizes[i] == sizes[i];
  if (!same)
    return mt__error(MT_ERR_SHAPE, "%s: %s has size %s, expected %s", op, what, mt__shape_str(t, b1, sizeof b1),
                     mt__sizes_str(ndim, sizes, b2, sizeof b2));
  return MT_OK;
}

#define MP "SpatialMaxPooling"
mt_status mt_maxpool2d_forward(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, int kW, int kH, int dW,
                               int dH, int padW, int padH, int ceil_mode) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, MP));
  MT_CHECK_TENSOR(out, MP, "output");
  MT_CHECK_TENSOR(indices, MP, "indices");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, MP));
  MT_TRY(mt__prepare_out(indices, MT_I64, input->device, input->ndim, osz, MP));
  if (g.planes == 0) return MT_OK;
  if (!mt__is_contiguous(indices))
    return mt__error(MT_ERR_ARG, MP ": the indices tensor must be contiguous");
  mt_tensor *x = NULL, *y = NULL;
  mt_status st = contig(input, &x, MP);
  if (st == MT_OK) st = result_buf(out, &y, MP);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: maxfwd_##N((const T *)mt__data(x), (T *)mt__data(y), (int64_t *)mt__data(indices), &g); break;
    if (input->device != MT_CPU) st = mt__cuda_nn_maxpool2d_forward(y, indices, x, cuda_geom(&g, &cg));
    else switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(out, y, st);
    y = NULL;
  }
  if (x) mt_tensor_release(x);
  if (y) mt_tensor_release(y);
  return st;
}

mt_status mt_maxpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *indices,
                                const mt_tensor *input, int kW, int kH, int dW, int dH, int padW, int padH,
                                int ceil_mode) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  char b1[64];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, MP));
  MT_TRY(check_like(gradOutput, input, input->ndim, osz, "gradOutput", MP));
  MT_CHECK_TENSOR(indices, MP, "indices");
  if (indices->dtype != MT_I64 || indices->device != input->device || !mt__is_contiguous(indices) ||
      mt__numel(indices) != mt__numel(gradOutput))
    return mt__error(MT_ERR_ARG, MP ": indices (%s, size %s) do not come from a forward pass of this size",
                     mt_dtype_name(indices->dtype), mt__shape_str(indices, b1, sizeof b1));
  MT_CHECK_TENSOR(gradInput, MP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, MP));
  if (g.planes == 0) return MT_OK;
  if (input->device != MT_CPU) { /* the kernel skips out-of-range indices instead of reading them back */
    mt_tensor *dy = NULL, *dx = NULL;
    mt_status st = contig(gradOutput, &dy, MP);
    if (st == MT_OK) st = result_buf(gradInput, &dx, MP);
    if (st == MT_OK) {
      st = mt__cuda_nn_maxpool2d_backward(dx, dy, indices, cuda_geom(&g, &cg));
      st = result_done(gradInput, dx, st);
      dx = NULL;
    }
    if (dy) mt_tensor_release(dy);
    if (dx) mt_tensor_release(dx);
    return st;
  }
  const int64_t *ix = (const int64_t *)mt__data(indices);
  for (int64_t i = 0, n = mt__numel(indices), plane = g.H * g.W; i < n; i++)
    if (ix[i] < 0 || ix[i] >= plane)
      return mt__error(MT_ERR_INDEX, MP ": index %lld out of range for a %lldx%lld plane", (long long)ix[i],
                       (long long)g.H, (long long)g.W);
  mt_tensor *dy = NULL, *dx = NULL;
  mt_status st = contig(gradOutput, &dy, MP);
  if (st == MT_OK) st = result_buf(gradInput, &dx, MP);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: maxbwd_##N((const T *)mt__data(dy), ix, (T *)mt__data(dx), &g); break;
    switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(gradInput, dx, st);
    dx = NULL;
  }
  if (dy) mt_tensor_release(dy);
  if (dx) mt_tensor_release(dx);
  return st;
}

#define AP "SpatialAveragePooling"
mt_status mt_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int kW, int kH, int dW, int dH, int padW,
                               int padH, int ceil_mode, int count_include_pad) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, AP));
  MT_CHECK_TENSOR(out, AP, "output");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, AP));
  if (g.planes == 0) return MT_OK;
  mt_tensor *x = NULL, *y = NULL;
  mt_status st = contig(input, &x, AP);
  if (st == MT_OK) st = result_buf(out, &y, AP);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: avgfwd_##N((const T *)mt__data(x), (T *)mt__data(y), &g, count_include_pad); break;
    if (input->device != MT_CPU) st = mt__cuda_nn_avgpool2d_forward(y, x, cuda_geom(&g, &cg), count_include_pad);
    else switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(out, y, st);
    y = NULL;
  }
  if (x) mt_tensor_release(x);
  if (y) mt_tensor_release(y);
  return st;
}

mt_status mt_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int kW,
                                int kH, int dW, int dH, int padW, int padH, int ceil_mode, int count_include_pad) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  MT_TRY(pool_check(&g, osz, input, kW, kH, dW, dH, padW, padH, ceil_mode, AP));
  MT_TRY(check_like(gradOutput, input, input->ndim, osz, "gradOutput", AP));
  MT_CHECK_TENSOR(gradInput, AP, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, AP));
  if (g.planes == 0) return MT_OK;
  mt_tensor *dy = NULL, *dx = NULL;
  mt_status st = contig(gradOutput, &dy, AP);
  if (st == MT_OK) st = result_buf(gradInput, &dx, AP);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: avgbwd_##N((const T *)mt__data(dy), (T *)mt__data(dx), &g, count_include_pad); break;
    if (input->device != MT_CPU) st = mt__cuda_nn_avgpool2d_backward(dx, dy, cuda_geom(&g, &cg), count_include_pad);
    else switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(gradInput, dx, st);
    dx = NULL;
  }
  if (dy) mt_tensor_release(dy);
  if (dx) mt_tensor_release(dx);
  return st;
}

/* ---- adaptive average pooling: output cell i of n covers input [floor(i*in/n), ceil((i+1)*in/n)) */
static inline int64_t ad_start(int64_t i, int64_t in, int64_t n) { return (i * in) / n; }
static inline int64_t ad_end(int64_t i, int64_t in, int64_t n) { return ((i + 1) * in + n - 1) / n; }

#define ADAPT(E, N, T, CT)                                                                            \
  static void adfwd_##N(const T *x, T *y, const pool_geom *g) {                                       \
    int64_t work = g->planes * g->H * g->W;                                                           \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      const T *xp = x + p * g->H * g->W;                                                              \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                          \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                      \
          int64_t y0 = ad_start(oy, g->H, g->oH), y1 = ad_end(oy, g->H, g->oH);                       \
          int64_t x0 = ad_start(ox, g->W, g->oW), x1 = ad_end(ox, g->W, g->oW);                       \
          CT s = 0;                                                                                   \
          for (int64_t iy = y0; iy < y1; iy++)                                                        \
            for (int64_t ix = x0; ix < x1; ix++) s += mt_ld_##N(xp + iy * g->W + ix);                 \
          mt_st_##N(y + (p * g->oH + oy) * g->oW + ox, s / (CT)((y1 - y0) * (x1 - x0)));              \
        }                                                                                             \
    }                                                                                                 \
  }                                                                                                   \
  static void adbwd_##N(const T *dy, T *dx, const pool_geom *g) {                                     \
    int64_t work = g->planes * g->H * g->W;                                                           \
    (void)work;                                                                                       \
    _Pragma("omp parallel for if(work > MT_PARALLEL_GRAIN)")                                          \
    for (int64_t p = 0; p < g->planes; p++) {                                                         \
      T *dxp = dx + p * g->H * g->W;                                                                  \
      for (int64_t i = 0; i < g->H * g->W; i++) mt_st_##N(dxp + i, 0);                                \
      for (int64_t oy = 0; oy < g->oH; oy++)                                                          \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                                      \
          int64_t y0 = ad_start(oy, g->H, g->oH), y1 = ad_end(oy, g->H, g->oH);                       \
          int64_t x0 = ad_start(ox, g->W, g->oW), x1 = ad_end(ox, g->W, g->oW);                       \
          CT v = mt_ld_##N(dy + (p * g->oH + oy) * g->oW + ox) / (CT)((y1 - y0) * (x1 - x0));         \
          for (int64_t iy = y0; iy < y1; iy++)                                                        \
            for (int64_t ix = x0; ix < x1; ix++) {                                                    \
              T *q = dxp + iy * g->W + ix;                                                            \
              mt_st_##N(q, mt_ld_##N(q) + v);                                                         \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
  }
MT_FLOAT_DTYPE_LIST(ADAPT)

#define AD "SpatialAdaptiveAveragePooling"
static mt_status adaptive_check(pool_geom *g, int64_t *osz, const mt_tensor *input, int oW, int oH) {
  char b1[64];
  MT_CHECK_TENSOR(input, AD, "input");
  if (!mt_dtype_is_floating(input->dtype))
    return mt__error(MT_ERR_DTYPE, AD ": input has dtype %s, expected a floating dtype", mt_dtype_name(input->dtype));
  if (input->ndim != 3 && input->ndim != 4)
    return mt__error(MT_ERR_SHAPE, AD ": expected a 3-d or 4-d input, got size %s", mt__shape_str(input, b1, sizeof b1));
  if (oW < 1 || oH < 1) return mt__error(MT_ERR_ARG, AD ": output size %dx%d must be positive", oW, oH);
  int nd = input->ndim;
  memset(g, 0, sizeof *g);
  g->H = input->sizes[nd - 2], g->W = input->sizes[nd - 1];
  g->planes = input->sizes[0] * (nd == 4 ? input->sizes[1] : 1);
  g->oH = oH, g->oW = oW;
  if (g->H < 1 || g->W < 1)
    return mt__error(MT_ERR_SHAPE, AD ": input image %lldx%lld is empty", (long long)g->H, (long long)g->W);
  for (int i = 0; i < nd - 2; i++) osz[i] = input->sizes[i];
  osz[nd - 2] = oH, osz[nd - 1] = oW;
  return MT_OK;
}

mt_status mt_adaptive_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int oW, int oH) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  MT_TRY(adaptive_check(&g, osz, input, oW, oH));
  MT_CHECK_TENSOR(out, AD, "output");
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, osz, AD));
  if (g.planes == 0) return MT_OK;
  mt_tensor *x = NULL, *y = NULL;
  mt_status st = contig(input, &x, AD);
  if (st == MT_OK) st = result_buf(out, &y, AD);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: adfwd_##N((const T *)mt__data(x), (T *)mt__data(y), &g); break;
    if (input->device != MT_CPU) st = mt__cuda_nn_adaptive_avgpool2d_forward(y, x, cuda_geom(&g, &cg));
    else switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(out, y, st);
    y = NULL;
  }
  if (x) mt_tensor_release(x);
  if (y) mt_tensor_release(y);
  return st;
}

mt_status mt_adaptive_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input) {
  pool_geom g;
  mt__cuda_pool_geom cg;
  int64_t osz[4];
  char b1[64];
  MT_CHECK_TENSOR(gradOutput, AD, "gradOutput");
  MT_CHECK_TENSOR(input, AD, "input");
  if (gradOutput->ndim != input->ndim || input->ndim < 3)
    return mt__error(MT_ERR_SHAPE, AD ": gradOutput has size %s, expected %d dimensions like the input",
                     mt__shape_str(gradOutput, b1, sizeof b1), input->ndim);
  int nd = input->ndim;
  MT_TRY(adaptive_check(&g, osz, input, (int)gradOutput->sizes[nd - 1], (int)gradOutput->sizes[nd - 2]));
  MT_TRY(check_like(gradOutput, input, nd, osz, "gradOutput", AD));
  MT_CHECK_TENSOR(gradInput, AD, "gradInput");
  MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, nd, input->sizes, AD));
  if (g.planes == 0) return MT_OK;
  mt_tensor *dy = NULL, *dx = NULL;
  mt_status st = contig(gradOutput, &dy, AD);
  if (st == MT_OK) st = result_buf(gradInput, &dx, AD);
  if (st == MT_OK) {
#define CASE(E, N, T, CT) \
  case E: adbwd_##N((const T *)mt__data(dy), (T *)mt__data(dx), &g); break;
    if (input->device != MT_CPU) st = mt__cuda_nn_adaptive_avgpool2d_backward(dx, dy, cuda_geom(&g, &cg));
    else switch (input->dtype) { MT_FLOAT_DTYPE_LIST(CASE) default: break; }
#undef CASE
    st = result_done(gradInput, dx, st);
    dx = NULL;
  }
  if (dy) mt_tensor_release(dy);
  if (dx) mt_tensor_release(dx);
  return st;
}
