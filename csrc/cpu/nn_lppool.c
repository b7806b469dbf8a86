/* nn_lppool.c: the CPU loops of LP pooling (csrc/nn/lppool.c checks the arguments): contiguous
 * NCHW planes, one plane per iteration of the parallel loop. The power and the root have fast
 * paths for p = 1 (sum) and p = 2 (squares, sqrt); other p go through pow. Sums in the
 * compute type, window by window as the composed Torch7 layers add them. */
#include <math.h>
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

#define LP_POW(CT, v, p) (sizeof(CT) == 4 ? (CT)powf((float)(v), (float)(p)) : (CT)pow((double)(v), (double)(p)))
#define LP_SQRT(CT, v) (sizeof(CT) == 4 ? (CT)sqrtf((float)(v)) : (CT)sqrt((double)(v)))
enum { P1, P2, PG };

/* forward: x^p summed over each window, then the root */
#define LPF_BODY(N, TT, CT, POWX, ROOT)                                                                           \
  _Pragma("omp parallel for schedule(static) if(g->planes * H * W > MT_PARALLEL_GRAIN / 4)") for (int64_t pl = 0; \
                                                                                                  pl < g->planes; \
                                                                                                  pl++) {         \
    const TT *xp = x + pl * H * W;                                                                                \
    TT *yp = y + pl * oH * oW;                                                                                    \
    for (int64_t oh = 0; oh < oH; oh++)                                                                           \
      for (int64_t ow = 0; ow < oW; ow++) {                                                                       \
        const TT *w0 = xp + oh * g->dH * W + ow * g->dW;                                                          \
        CT s = 0;                                                                                                 \
        for (int kh = 0; kh < g->kH; kh++)                                                                        \
          for (int kw = 0; kw < g->kW; kw++) {                                                                    \
            CT v = mt_ld_##N(w0 + kh * W + kw);                                                                   \
            s += POWX;                                                                                            \
          }                                                                                                       \
        mt_st_##N(yp + oh * oW + ow, ROOT);                                                                       \
      }                                                                                                           \
  }

#define LPF_CASE(E, N, TT, CT)                                         \
  case E: {                                                            \
    const TT *x = (const TT *)mt__data(xt);                            \
    TT *y = (TT *)mt__data(yt);                                        \
    if (mode == P1) LPF_BODY(N, TT, CT, v, s)                          \
    else if (mode == P2) LPF_BODY(N, TT, CT, v *v, LP_SQRT(CT, s))     \
    else LPF_BODY(N, TT, CT, LP_POW(CT, v, p), LP_POW(CT, s, 1.0 / p)) \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_lppool2d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_pool_geom *g, double p) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  int mode = p == 1 ? P1 : p == 2 ? P2 : PG;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(LPF_CASE)
    default: break;
  }
  return MT_OK;
}

/* backward: per plane, f = dy y^(1-p) for each window, added onto the window's pixels in a
 * plane-sized compute-type buffer, then dx = x^(p-1) times that sum. Each plane is one
 * thread's, so the additions need no atomics and their order is fixed. */
#define LPB_BODY(N, TT, CT, FAC, XP)                                                                              \
  _Pragma("omp parallel for schedule(static) if(g->planes * H * W > MT_PARALLEL_GRAIN / 4)") for (int64_t pl = 0; \
                                                                                                  pl < g->planes; \
                                                                                                  pl++) {         \
    CT *acc = (CT *)buf + (size_t)omp_get_thread_num() * H * W;                                                   \
    const TT *xp = x + pl * H * W, *dyp = dy + pl * oH * oW, *yp = y + pl * oH * oW;                              \
    TT *dxp = dx + pl * H * W;                                                                                    \
    for (int64_t i = 0; i < H * W; i++) acc[i] = 0;                                                               \
    for (int64_t oh = 0; oh < oH; oh++)                                                                           \
      for (int64_t ow = 0; ow < oW; ow++) {                                                                       \
        CT go = mt_ld_##N(dyp + oh * oW + ow), yv = mt_ld_##N(yp + oh * oW + ow);                                 \
        CT f = FAC;                                                                                               \
        CT *a0 = acc + oh * g->dH * W + ow * g->dW;                                                               \
        for (int kh = 0; kh < g->kH; kh++)                                                                        \
          for (int kw = 0; kw < g->kW; kw++) a0[kh * W + kw] += f;                                                \
      }                                                                                                           \
    for (int64_t i = 0; i < H * W; i++) {                                                                         \
      CT v = mt_ld_##N(xp + i);                                                                                   \
      mt_st_##N(dxp + i, (CT)(XP * acc[i]));                                                                      \
    }                                                                                                             \
  }

#define LPB_CASE(E, N, TT, CT)                                                                              \
  case E: {                                                                                                 \
    const TT *x = (const TT *)mt__data(xt), *dy = (const TT *)mt__data(dyt), *y = (const TT *)mt__data(yt); \
    TT *dx = (TT *)mt__data(dxt);                                                                           \
    if (!(buf = malloc((size_t)nth * H * W * sizeof(CT)))) break;                                           \
    if (mode == P1) LPB_BODY(N, TT, CT, ((void)yv, go), ((void)v, (CT)1))                                   \
    else if (mode == P2) LPB_BODY(N, TT, CT, go / yv, v)                                                    \
    else LPB_BODY(N, TT, CT, go *LP_POW(CT, yv, 1.0 - p), LP_POW(CT, v, p - 1.0))                           \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_lppool2d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_tensor *xt,
                                                   const mt_tensor *yt, const mt_pool_geom *g, double p) {
  int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW;
  int mode = p == 1 ? P1 : p == 2 ? P2 : PG;
  int nth = omp_get_max_threads();
  void *buf = NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(LPB_CASE)
    default: return MT_OK;
  }
  if (!buf) return mt__error(MT_ERR_MEMORY, "nn.SpatialLPPooling: out of memory for the backward buffers");
  free(buf);
  return MT_OK;
}
