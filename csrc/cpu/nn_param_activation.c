/* nn_param_activation.c: the CPU loops of PReLU and RReLU (csrc/nn/param_activation.c checks
 * the arguments). Buffers are contiguous outer x C x inner (PReLU) or flat (RReLU). */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "../core/philox.h"
#include "cpu.h"

#define PRELU_FWD_CASE(E, N, TT, CT)                                                                                  \
  case E: {                                                                                                           \
    const TT *x = (const TT *)mt__data(xt), *w = (const TT *)mt__data(wt);                                            \
    TT *y = (TT *)mt__data(yt);                                                                                       \
    _Pragma("omp parallel for schedule(static) if(outer * C * inner > MT_PARALLEL_GRAIN)") for (int64_t p = 0;        \
                                                                                                p < outer * C; p++) { \
      CT a = mt_ld_##N(w + p % C);                                                                                    \
      const TT *xp = x + p * inner;                                                                                   \
      TT *yp = y + p * inner;                                                                                         \
      for (int64_t i = 0; i < inner; i++) {                                                                           \
        CT v = mt_ld_##N(xp + i);                                                                                     \
        mt_st_##N(yp + i, v > 0 ? v : (CT)(a * v));                                                                   \
      }                                                                                                               \
    }                                                                                                                 \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_prelu_forward(mt_tensor *yt, const mt_tensor *xt, const mt_tensor *wt, int64_t outer,
                                               int64_t C, int64_t inner) {
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PRELU_FWD_CASE)
    default: break;
  }
  return MT_OK;
}

/* gradInput over all planes; gradWeight from one partial sum per plane (in double, a fixed
 * partition, so the result does not depend on the thread count), added up per slope in plane
 * order: no two threads write one slope */
#define PRELU_BWD_CASE(E, N, TT, CT)                                                                                  \
  case E: {                                                                                                           \
    const TT *x = (const TT *)mt__data(xt), *w = (const TT *)mt__data(wt);                                            \
    const TT *g = (const TT *)mt__data(gt);                                                                           \
    TT *r = rt ? (TT *)mt__data(rt) : NULL;                                                                           \
    _Pragma("omp parallel for schedule(static) if(outer * C * inner > MT_PARALLEL_GRAIN)") for (int64_t p = 0;        \
                                                                                                p < outer * C; p++) { \
      CT a = mt_ld_##N(w + p % C);                                                                                    \
      const TT *xp = x + p * inner, *gp = g + p * inner;                                                              \
      if (part) { /* min(x, 0) by a select (no branch on random signs), four sums in turn */                          \
        double s[4] = {0, 0, 0, 0};                                                                                   \
        int64_t i = 0;                                                                                                \
        for (; i + 4 <= inner; i += 4)                                                                                \
          for (int k = 0; k < 4; k++) {                                                                               \
            CT v = mt_ld_##N(xp + i + k);                                                                             \
            s[k] += (double)(v > 0 ? (CT)0 : v) * (double)mt_ld_##N(gp + i + k);                                      \
          }                                                                                                           \
        for (; i < inner; i++) {                                                                                      \
          CT v = mt_ld_##N(xp + i);                                                                                   \
          s[0] += (double)(v > 0 ? (CT)0 : v) * (double)mt_ld_##N(gp + i);                                            \
        }                                                                                                             \
        part[p] = (s[0] + s[1]) + (s[2] + s[3]);                                                                      \
      }                                                                                                               \
      if (r) {                                                                                                        \
        TT *rp = r + p * inner;                                                                                       \
        for (int64_t i = 0; i < inner; i++) {                                                                         \
          CT v = mt_ld_##N(xp + i), go = mt_ld_##N(gp + i);                                                           \
          mt_st_##N(rp + i, v > 0 ? go : (CT)(a * go));                                                               \
        }                                                                                                             \
      }                                                                                                               \
    }                                                                                                                 \
    if (part) {                                                                                                       \
      TT *gw = (TT *)mt__data(gwt);                                                                                   \
      _Pragma("omp parallel for schedule(static) if(outer * C > 4096)") for (int64_t c = 0; c < C; c++) {             \
        double s = 0;                                                                                                 \
        for (int64_t o = 0; o < outer; o++) s += part[o * C + c];                                                     \
        mt_st_##N(gw + c, (CT)((double)mt_ld_##N(gw + c) + scale * s));                                               \
      }                                                                                                               \
    }                                                                                                                 \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_prelu_backward(mt_tensor *rt, mt_tensor *gwt, const mt_tensor *gt, const mt_tensor *xt,
                                                const mt_tensor *wt, double scale, int64_t outer, int64_t C,
                                                int64_t inner) {
  double *part = NULL;
  if (gwt) {
    part = (double *)malloc((size_t)(outer * C) * sizeof *part);
    if (!part) return mt__error(MT_ERR_MEMORY, "nn.PReLU: out of memory for %lld partial sums", (long long)(outer * C));
  }
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PRELU_BWD_CASE)
    default: break;
  }
  free(part);
  return MT_OK;
}

/* RReLU in training: element i of a non-positive input takes the slope lo + (hi - lo) u with u
 * from counter offset + i (the value t:uniform(lo, hi) gives there), rounded to the dtype and
 * kept in noise (stepped below hi as uniform does); positive elements keep slope 1 and draw nothing */
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

/* in chunks: a branch-free pass keeps positive elements (slope 1) and lists the others, then
 * only the listed ones draw (the signs of random data would mispredict a branch half the time) */
#define RRELU_CHUNK 512
#define RRELU_CASE(E, N, TT, CT)                                                                                       \
  case E: {                                                                                                            \
    const TT *x = (const TT *)mt__data(xt);                                                                            \
    TT *y = (TT *)mt__data(yt), *z = (TT *)mt__data(zt);                                                               \
    int64_t nch = (n + RRELU_CHUNK - 1) / RRELU_CHUNK;                                                                 \
    TT one;                                                                                                            \
    mt_st_##N(&one, (CT)1);                                                                                            \
    _Pragma("omp parallel for schedule(static) if(n > MT_PARALLEL_GRAIN / 16)") for (int64_t ch = 0; ch < nch; ch++) { \
      int64_t i0 = ch * RRELU_CHUNK, i1 = i0 + RRELU_CHUNK < n ? i0 + RRELU_CHUNK : n;                                 \
      int32_t idx[RRELU_CHUNK];                                                                                        \
      int k = 0;                                                                                                       \
      for (int64_t i = i0; i < i1; i++) {                                                                              \
        z[i] = one;                                                                                                    \
        y[i] = x[i];                                                                                                   \
        idx[k] = (int32_t)(i - i0);                                                                                    \
        k += !(mt_ld_##N(x + i) > 0);                                                                                  \
      }                                                                                                                \
      for (int j = 0; j < k; j++) {                                                                                    \
        int64_t i = i0 + idx[j];                                                                                       \
        TT s;                                                                                                          \
        mt_st_##N(&s, lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i));                                 \
        if ((double)mt_ld_##N(&s) >= hi && hi > lo) step_down(&s, sizeof s);                                           \
        z[i] = s;                                                                                                      \
        mt_st_##N(y + i, (CT)(mt_ld_##N(x + i) * mt_ld_##N(&s)));                                                      \
      }                                                                                                                \
    }                                                                                                                  \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_rrelu_forward(mt_tensor *yt, mt_tensor *zt, const mt_tensor *xt, uint64_t seed,
                                               uint64_t offset, double lo, double hi) {
  int64_t n = mt__numel(xt);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(RRELU_CASE)
    default: break;
  }
  return MT_OK;
}
