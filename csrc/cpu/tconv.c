/* tconv.c: CPU body of torch.conv2/xcorr2/conv3/xcorr3: a direct loop over the output, in the
 * layout the entry point (csrc/core/ops_tconv.c) builds: x P x D x H x W, k Q x Pk x kD x kH x kW,
 * out Q x oD x oH x oW, any strides. Torch7 uses these on small images and kernels, where a
 * direct loop is as good as any; output rows run in parallel. */
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

typedef struct {
  int64_t P, D, H, W, Q, Pk, kD, kH, kW, oD, oH, oW;
  int64_t xs[4], ks[5], os[4];
  int64_t sD, sH, sW; /* output index minus input index at kernel tap 0: k - 1 when full */
  int flip, diagonal;
} geom;

/* ACC: double for floating dtypes, int64 for integers (Torch7 accumulated in the element type) */
#define DEFINE_CONV(E, N, T, CT, ACC)                                                                                       \
  static void conv_##N(const geom *g, T *o, const T *x, const T *k) {                                                       \
    int64_t rows = g->Q * g->oD * g->oH;                                                                                    \
    _Pragma("omp parallel for schedule(static) if(rows * g->oW * g->Pk * g->kD * g->kH * g->kW > MT_PARALLEL_GRAIN)") for ( \
        int64_t r = 0; r < rows; r++) {                                                                                     \
      int64_t q = r / (g->oD * g->oH), od = r / g->oH % g->oD, oh = r % g->oH;                                              \
      for (int64_t ow = 0; ow < g->oW; ow++) {                                                                              \
        ACC acc = 0;                                                                                                        \
        for (int64_t pk = 0; pk < g->Pk; pk++) {                                                                            \
          int64_t p = g->diagonal ? q : pk;                                                                                 \
          for (int64_t a = 0; a < g->kD; a++) {                                                                             \
            int64_t id = od - g->sD + a;                                                                                    \
            if (id < 0 || id >= g->D) continue;                                                                             \
            for (int64_t b = 0; b < g->kH; b++) {                                                                           \
              int64_t ih = oh - g->sH + b;                                                                                  \
              if (ih < 0 || ih >= g->H) continue;                                                                           \
              const T *xr = x + p * g->xs[0] + id * g->xs[1] + ih * g->xs[2];                                               \
              const T *kr = k + q * g->ks[0] + pk * g->ks[1] + (g->flip ? g->kD - 1 - a : a) * g->ks[2] +                   \
                            (g->flip ? g->kH - 1 - b : b) * g->ks[3];                                                       \
              for (int64_t c = 0; c < g->kW; c++) {                                                                         \
                int64_t iw = ow - g->sW + c;                                                                                \
                if (iw < 0 || iw >= g->W) continue;                                                                         \
                acc += (ACC)mt_ld_##N(xr + iw * g->xs[3]) *                                                                 \
                       (ACC)mt_ld_##N(kr + (g->flip ? g->kW - 1 - c : c) * g->ks[4]);                                       \
              }                                                                                                             \
            }                                                                                                               \
          }                                                                                                                 \
        }                                                                                                                   \
        mt_st_##N(o + q * g->os[0] + od * g->os[1] + oh * g->os[2] + ow * g->os[3], acc);                                   \
      }                                                                                                                     \
    }                                                                                                                       \
  }
#define DEFINE_FLOAT(E, N, T, CT) DEFINE_CONV(E, N, T, CT, double)
#define DEFINE_INT(E, N, T, CT) DEFINE_CONV(E, N, T, CT, int64_t)
MT_FLOAT_DTYPE_LIST(DEFINE_FLOAT)
MT_INT_DTYPE_LIST(DEFINE_INT)

#define CONV_CASE(E, N, T, CT) \
  case E: conv_##N(&g, (T *)mt__data(out), (const T *)mt__data(x), (const T *)mt__data(k)); return MT_OK;

mt_status mt__cpu_tensor_conv(mt_tensor *out, const mt_tensor *x, const mt_tensor *k, int full, int flip,
                              int diagonal) {
  geom g = {.P = x->sizes[0],
            .D = x->sizes[1],
            .H = x->sizes[2],
            .W = x->sizes[3],
            .Q = k->sizes[0],
            .Pk = k->sizes[1],
            .kD = k->sizes[2],
            .kH = k->sizes[3],
            .kW = k->sizes[4],
            .oD = out->sizes[1],
            .oH = out->sizes[2],
            .oW = out->sizes[3],
            .flip = flip,
            .diagonal = diagonal};
  for (int i = 0; i < 4; i++) g.xs[i] = x->strides[i], g.os[i] = out->strides[i];
  for (int i = 0; i < 5; i++) g.ks[i] = k->strides[i];
  g.sD = full ? g.kD - 1 : 0, g.sH = full ? g.kH - 1 : 0, g.sW = full ? g.kW - 1 : 0;
  switch (x->dtype) {
    MT_DTYPE_LIST(CONV_CASE)
    default: return mt__error(MT_ERR_DTYPE, "tensor_conv: unsupported dtype %s", mt_dtype_name(x->dtype));
  }
}
