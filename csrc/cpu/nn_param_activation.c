/* nn_param_activation.c: the CPU loops of PReLU and RReLU (csrc/nn/param_activation.c checks
 * the arguments). Buffers are contiguous outer x C x inner (PReLU) or flat (RReLU). The loops
 * are written once in generic/nn_param_activation.c and compiled per float dtype. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "../core/philox.h"
#include "cpu.h"

/* the next value below a positive one (uniform's [lo, hi) when rounding reached hi) */
static inline void step_down(void *p, size_t size) {
  if (size == 2) {
    uint16_t b;
    memcpy(&b, p, 2), b--, memcpy(p, &b, 2);
  } else if (size == 4) {
    uint32_t b;
    memcpy(&b, p, 4), b--, memcpy(p, &b, 4);
  } else {
    uint64_t b;
    memcpy(&b, p, 8), b--, memcpy(p, &b, 8);
  }
}

/* RReLU's elements per chunk: the non-positive ones of a chunk are listed, then draw */
#define RRELU_CHUNK 512

#define MT_GENERIC_FILE "generic/nn_param_activation.c"
#include "generate_float.h"

#define PRELU_FORWARD_CASE(E, N, T, CT) \
  case E: prelu_forward_##N((const T *)xp, (const T *)wp, (T *)yp, outer, C, inner); break;
MT_AVX2_CLONES mt_status mt__cpu_prelu_forward(mt_tensor *yt, const mt_tensor *xt, const mt_tensor *wt, int64_t outer,
                                               int64_t C, int64_t inner) {
  const void *xp = mt__data(xt), *wp = mt__data(wt);
  void *yp = mt__data(yt);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PRELU_FORWARD_CASE)
    default: break;
  }
  return MT_OK;
}

#define PRELU_BACKWARD_CASE(E, N, T, CT)                                                                              \
  case E:                                                                                                             \
    prelu_backward_##N((const T *)xp, (const T *)wp, (const T *)gp, (T *)rp, (T *)gwp, part, scale, outer, C, inner); \
    break;
MT_AVX2_CLONES mt_status mt__cpu_prelu_backward(mt_tensor *rt, mt_tensor *gwt, const mt_tensor *gt, const mt_tensor *xt,
                                                const mt_tensor *wt, double scale, int64_t outer, int64_t C,
                                                int64_t inner) {
  double *part = NULL;
  if (gwt) {
    part = (double *)malloc((size_t)(outer * C) * sizeof *part);
    if (!part) return mt__error(MT_ERR_MEMORY, "nn.PReLU: out of memory for %lld partial sums", (long long)(outer * C));
  }
  const void *xp = mt__data(xt), *wp = mt__data(wt), *gp = mt__data(gt);
  void *rp = rt ? mt__data(rt) : NULL, *gwp = gwt ? mt__data(gwt) : NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PRELU_BACKWARD_CASE)
    default: break;
  }
  free(part);
  return MT_OK;
}

/* RReLU in training: element i of a non-positive input takes the slope lo + (hi - lo) u with u
 * from counter offset + i (the value t:uniform(lo, hi) gives there), rounded to the dtype and
 * kept in noise (stepped below hi as uniform does); positive elements keep slope 1 and draw nothing */
#define RRELU_CASE(E, N, T, CT) \
  case E: rrelu_forward_##N((const T *)xp, (T *)yp, (T *)zp, n, seed, offset, lo, hi); break;
MT_AVX2_CLONES mt_status mt__cpu_rrelu_forward(mt_tensor *yt, mt_tensor *zt, const mt_tensor *xt, uint64_t seed,
                                               uint64_t offset, double lo, double hi) {
  int64_t n = mt__numel(xt);
  const void *xp = mt__data(xt);
  void *yp = mt__data(yt), *zp = mt__data(zt);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(RRELU_CASE)
    default: break;
  }
  return MT_OK;
}
