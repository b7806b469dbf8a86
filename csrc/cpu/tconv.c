/* tconv.c: CPU body of torch.conv2/xcorr2/conv3/xcorr3: a direct loop over the output, in the
 * layout the entry point (csrc/core/ops_tconv.c) builds: x P x D x H x W, k Q x Pk x kD x kH x kW,
 * out Q x oD x oH x oW, any strides. Torch7 uses these on small images and kernels, where a
 * direct loop is as good as any; output rows run in parallel. The loop is written once in
 * generic/tconv.c and compiled per dtype. */
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

typedef struct {
  int64_t P, D, H, W, Q, Pk, kD, kH, kW, oD, oH, oW;
  int64_t xs[4], ks[5], os[4];
  int64_t sD, sH, sW; /* output index minus input index at kernel tap 0: k - 1 when full */
  int flip, diagonal;
} geom;

/* accreal_<dtype>, the accumulator: double for floating dtypes, int64 for integers (Torch7
 * accumulated in the element type) */
#define FLOAT_ACCREAL(E, N, T, CT) typedef double accreal_##N;
#define INT_ACCREAL(E, N, T, CT) typedef int64_t accreal_##N;
MT_FLOAT_DTYPE_LIST(FLOAT_ACCREAL)
MT_INT_DTYPE_LIST(INT_ACCREAL)

#define MT_GENERIC_FILE "generic/tconv.c"
#include "generate_all.h"

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
