/* tconv.cu: CUDA body of torch.conv2/xcorr2/conv3/xcorr3: one thread per output element runs
 * the direct sum of csrc/cpu/tconv.c, in the layout csrc/core/ops_tconv.c builds (x P x D x H x
 * W, k Q x Pk x kD x kH x kW, out Q x oD x oH x oW, any strides). */
#include <type_traits>
#include "common.cuh"

struct mtk_tconv_geom {
  int64_t D, H, W, Pk, kD, kH, kW, oD, oH, oW;
  int64_t xs[4], ks[5], os[4];
  int64_t sD, sH, sW; /* output index minus input index at kernel tap 0: k - 1 when full */
  int flip, diagonal;
};

template <class T> struct mtk_tconv_f {
  T *out;
  const T *x, *k;
  mtk_tconv_geom g;
  MTK_D void operator()(int64_t i, const int64_t *) const {
    /* double for floating dtypes, int64 for integers, as on the CPU */
    typedef typename std::conditional<mtk_is_float<T>::value, double, int64_t>::type ACC;
    int64_t ow = i % g.oW, r = i / g.oW;
    int64_t oh = r % g.oH;
    r /= g.oH;
    int64_t od = r % g.oD, q = r / g.oD;
    ACC acc = 0;
    for (int64_t pk = 0; pk < g.Pk; pk++) {
      int64_t p = g.diagonal ? q : pk;
      for (int64_t a = 0; a < g.kD; a++) {
        int64_t id = od - g.sD + a;
        if (id < 0 || id >= g.D) continue;
        for (int64_t b = 0; b < g.kH; b++) {
          int64_t ih = oh - g.sH + b;
          if (ih < 0 || ih >= g.H) continue;
          const T *xr = x + p * g.xs[0] + id * g.xs[1] + ih * g.xs[2];
          const T *kr = k + q * g.ks[0] + pk * g.ks[1] + (g.flip ? g.kD - 1 - a : a) * g.ks[2] +
                        (g.flip ? g.kH - 1 - b : b) * g.ks[3];
          for (int64_t c = 0; c < g.kW; c++) {
            int64_t iw = ow - g.sW + c;
            if (iw < 0 || iw >= g.W) continue;
            acc += (ACC)mtk_ld(xr + iw * g.xs[3]) * (ACC)mtk_ld(kr + (g.flip ? g.kW - 1 - c : c) * g.ks[4]);
          }
        }
      }
    }
    mtk_st(out + q * g.os[0] + od * g.os[1] + oh * g.os[2] + ow * g.os[3], acc);
  }
};

extern "C" mt_status mt__cuda_tensor_conv(mt_tensor *out, const mt_tensor *x, const mt_tensor *k, int full, int flip,
                                          int diagonal) {
  const char *op = "tensor_conv";
  mtk_tconv_geom g;
  g.D = x->sizes[1], g.H = x->sizes[2], g.W = x->sizes[3];
  g.Pk = k->sizes[1], g.kD = k->sizes[2], g.kH = k->sizes[3], g.kW = k->sizes[4];
  g.oD = out->sizes[1], g.oH = out->sizes[2], g.oW = out->sizes[3];
  for (int i = 0; i < 4; i++) g.xs[i] = x->strides[i], g.os[i] = out->strides[i];
  for (int i = 0; i < 5; i++) g.ks[i] = k->strides[i];
  g.sD = full ? g.kD - 1 : 0, g.sH = full ? g.kH - 1 : 0, g.sW = full ? g.kW - 1 : 0;
  g.flip = flip, g.diagonal = diagonal;
  const int64_t *st[1] = {out->strides};
  return mtk_dispatch(x->dtype, op, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_tconv_f<T> f{mtk_ptr<T>(out), mtk_ptr<T>(x), mtk_ptr<T>(k), g};
    return mtk_pointwise<1>(out->device, op, out->ndim, out->sizes, st, f);
  });
}
