/* dist_rgc.c: the CPU bodies of the element-wise steps of residual gradient compression around
 * the selection (the slots dist_rgc_accumulate, dist_rgc_mask and dist_rgc_scatter_add;
 * csrc/dist/rgc.c checks the arguments): the gradient into the residual with momentum
 * correction, clearing what was sent from the residual (and, for momentum-factor masking, from
 * the local velocity), and summing every rank's (index, value) pairs into the dense gradient.
 * Each validates its indices before it writes, so a bad one leaves every tensor as it was. */
#include <stdint.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

/* below this many pairs a parallel region costs more than the loop */
#define PAR_MIN 16384

/* v, u (may be NULL): n float32; idx: count >= 1 int32 indices into v, shifted by base once
 * applied */
mt_status mt__cpu_dist_rgc_mask(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base) {
  const char *op = "dist.rgc.mask";
  int64_t n = mt__numel(v);
  float *x = (float *)mt__data(v), *m = u ? (float *)mt__data(u) : NULL;
  int32_t *ix = (int32_t *)mt__data(idx);
  /* checked first, in one pass, so that a bad index leaves everything as it was */
  int64_t bad = -1;
  for (int64_t i = 0; i < count && bad < 0; i++)
    if (ix[i] < 0 || ix[i] >= n) bad = i;
  if (bad >= 0)
    return mt__error(MT_ERR_INDEX, "%s: idx[%lld] = %d is outside v's %lld elements", op, (long long)bad, (int)ix[bad],
                     (long long)n);
#pragma omp parallel for if (count >= PAR_MIN) schedule(static)
  for (int64_t i = 0; i < count; i++) {
    int32_t j = ix[i];
    x[j] = 0.0f;
    if (m) m[j] = 0.0f;
    ix[i] = (int32_t)(j + base);
  }
  return MT_OK;
}

/* below this many elements the accumulation runs on one thread */
#define PAR_MIN_ELEMENTS 65536

/* v, g (and u, p where given): n float32; one pass, so the residual costs one read of each
 * input and one write of v (and u) instead of the three to five of separate tensor ops */
mt_status mt__cpu_dist_rgc_accumulate(mt_tensor *v, mt_tensor *u, const mt_tensor *g, const mt_tensor *p,
                                      double momentum, int nesterov, double weight_decay) {
  int64_t n = mt__numel(v);
  float *x = (float *)mt__data(v), *vel = u ? (float *)mt__data(u) : NULL;
  const float *grad = (const float *)mt__data(g), *par = p ? (const float *)mt__data(p) : NULL;
  float m = (float)momentum, wd = (float)weight_decay;
  if (!vel && !par) {
#pragma omp parallel for simd if (n >= PAR_MIN_ELEMENTS) schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] += grad[i];
  } else if (!vel) {
#pragma omp parallel for simd if (n >= PAR_MIN_ELEMENTS) schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] += grad[i] + wd * par[i];
  } else {
#pragma omp parallel for simd if (n >= PAR_MIN_ELEMENTS) schedule(static)
    for (int64_t i = 0; i < n; i++) {
      float d = par ? grad[i] + wd * par[i] : grad[i];
      float w = m * vel[i] + d;
      vel[i] = w;
      x[i] += nesterov ? d + m * w : w;
    }
  }
  return MT_OK;
}

/* one generic body over the wire dtypes of val */
#define SCATTER_BODY(T, LOAD)                                                                                  \
  do {                                                                                                         \
    const T *vv = (const T *)mt__data(val);                                                                    \
    for (int64_t b = 0; b < nblocks; b++) {                                                                    \
      const int32_t *bi = ix + b * block;                                                                      \
      const T *bv = vv + b * block;                                                                            \
      _Pragma("omp parallel for if (block >= PAR_MIN) schedule(static)") for (int64_t i = 0; i < block; i++) { \
        int32_t j = bi[i];                                                                                     \
        if (j >= 0) out[j] += (float)(scale * (double)LOAD(bv + i));                                           \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)
#define LOAD_F32(p) (*(p))

/* dst: float32; idx (int32), val (float32, float16 or bfloat16): nblocks x block pairs, block
 * >= 1, one block per rank */
mt_status mt__cpu_dist_rgc_scatter_add(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val, int64_t block,
                                       double scale) {
  const char *op = "dist.rgc.scatterAdd";
  int64_t total = mt__numel(idx), n = mt__numel(dst), nblocks = total / block;
  const int32_t *ix = (const int32_t *)mt__data(idx);
  for (int64_t i = 0; i < total; i++)
    if (ix[i] >= n)
      return mt__error(MT_ERR_INDEX, "%s: index %d (pair %lld of block %lld) is outside dst's %lld elements", op,
                       (int)ix[i], (long long)(i % block), (long long)(i / block), (long long)n);
  float *out = (float *)mt__data(dst);
  int vt = val->dtype;
  if (vt == MT_F32) SCATTER_BODY(float, LOAD_F32);
  else if (vt == MT_F16) SCATTER_BODY(uint16_t, mt_ld_f16);
  else SCATTER_BODY(uint16_t, mt_ld_bf16);
  return MT_OK;
}
