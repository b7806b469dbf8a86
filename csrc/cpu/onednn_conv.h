/* onednn_conv.h: the float32 convolution's two CPU implementations and the choice between them.
 * onednn_conv.c runs a convolution through oneDNN (when built with it: MT_ONEDNN);
 * conv_backend.c holds torch.convBackend and, under 'auto', times both implementations once
 * per shape and direction and keeps the faster; nn_conv.c hands it its native kernels. */
#ifndef MT_ONEDNN_CONV_H
#define MT_ONEDNN_CONV_H
#include "../core/backend.h"

/* the three passes of a convolution */
enum { MT__CONV_FWD = 0, MT__CONV_BWD_DATA = 1, MT__CONV_BWD_WEIGHTS = 2 };

/* One float32 convolution pass on contiguous NCHW / OIHW (or NCDHW / OIDHW) data:
 *   FWD:          out = conv(a = x, b = w) + bias (bias may be NULL)
 *   BWD_DATA:     out = gradInput from a = gradOutput, b = w
 *   BWD_WEIGHTS:  out += scale * gradWeight, out2 += scale * gradBias (out2 may be NULL),
 *                 from a = x, b = gradOutput */
typedef struct mt__conv_call {
  int dir;
  const float *a, *b, *bias;
  float *out, *out2;
  float scale;
} mt__conv_call;

typedef mt_status (*mt__conv_native_fn)(const mt__conv_call *c, const mt_conv_geom *g);

/* onednn_conv.c: 1 when oneDNN is compiled in. mt__onednn_conv runs c through oneDNN in the
 * layout variant given and sets *ran; *ran = 0 (and MT_OK) where oneDNN has no implementation
 * for the shape or is absent. Variants: activations in oneDNN's own (blocked) layouts, reordered
 * on the way in and out, or in NCHW as they are. */
enum { MT__ONEDNN_BLOCKED = 0, MT__ONEDNN_NCHW = 1 };
int mt__onednn_available(void);
mt_status mt__onednn_conv(const mt__conv_call *c, const mt_conv_geom *g, int variant, int *ran);

/* The shape mt__onednn_run takes: sp (2 or 3) spatial dimensions, outermost first (H, W or
 * T, H, W), on NCHW / OIHW or NCDHW / OIDHW data; Cg the input planes per group, dil 1 = none.
 * mt__onednn_conv (2-d) and mt_nn_conv3d_onednn (nn_vol_onednn.c) both run through it, on one
 * cache and one mutex; op names the caller in errors. */
typedef struct mt__dnn_shape {
  int sp;
  int64_t N, C, Cg, O, groups;
  int64_t in[3], k[3], out[3], stride[3], pad[3], dil[3];
} mt__dnn_shape;
mt_status mt__onednn_run(const mt__conv_call *c, const mt__dnn_shape *sh, int variant, const char *op, int *ran);

/* conv_backend.c: runs c by oneDNN or by `native`, as torch.convBackend says */
mt_status mt__conv_f32(const mt__conv_call *c, const mt_conv_geom *g, mt__conv_native_fn native);
#endif
