/* nn_loss_ce.c: the CPU backend's cross-entropy (LogSoftMax + class NLL in one op) over a
 * contiguous N x C buffer of scores; csrc/nn/loss.c checks the arguments and reads targets and
 * class weights. Every value is computed as the two-op composition computes it (the recipes
 * train with this loss): exp in the compute type, log in double, the row reductions of
 * vec_exp.h as nn.LogSoftMax does them, the log-softmax rounded to the dtype before NLL reads it, the loss
 * summed in row order. What the fusion saves is the N x C log-softmax and NLL-gradient
 * tensors and their extra passes: the forward writes one log-sum-exp per row, the backward
 * recomputes the log-softmax from it. */
#include <math.h>
#include <stdlib.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "vec_exp.h"

/* v rounded to the dtype as a store and a load round it (the composition's saved log-softmax) */
#define CE_ROUND(N_, TT, CT, v) ce_round_##N_(v)
#define CE_ROUND_FN(E, N_, TT, CT)               \
  static inline double ce_round_##N_(double v) { \
    TT q;                                        \
    mt_st_##N_(&q, (CT)v);                       \
    return (double)mt_ld_##N_(&q);               \
  }
MT_FLOAT_DTYPE_LIST(CE_ROUND_FN)

/* rows in parallel (each row's max and exp sum as nn.LogSoftMax computes them), then the
 * loss terms serially in the order class_nll_forward adds them */
#define CEF_CASE(E, N_, TT, CT)                                                                                      \
  case E: {                                                                                                          \
    const TT *x = (const TT *)mt__data(xt);                                                                          \
    _Pragma("omp parallel for if(N * C > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < N; i++) {                      \
      CT buf[MT_ROW_CHUNK], mx;                                                                                      \
      double sum;                                                                                                    \
      MT_SOFTMAX_ROW(N_, CT, x + i * C, 1, C, buf, mx, sum, c0, nc, (void)0);                                        \
      lse[i] = (double)mx + log(sum);                                                                                \
    }                                                                                                                \
    for (int64_t i = 0; i < N; i++) {                                                                                \
      const TT *row = x + i * C;                                                                                     \
      int64_t t = tg[i];                                                                                             \
      if (t < 0) continue;                                                                                           \
      nll -= w[t] * CE_ROUND(N_, TT, CT, (double)mt_ld_##N_(row + t) - lse[i]);                                      \
      if (smoothing)                                                                                                 \
        for (int64_t c = 0; c < C; c++) smooth -= w[c] * CE_ROUND(N_, TT, CT, (double)mt_ld_##N_(row + c) - lse[i]); \
    }                                                                                                                \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_cross_entropy_forward(double *nll_out, double *smooth_out, mt_tensor *lse_t,
                                                       const mt_tensor *xt, const int64_t *tg, const double *w,
                                                       int64_t N, int64_t C) {
  double nll = 0, smooth = 0, *lse = (double *)mt__data(lse_t);
  int smoothing = smooth_out != NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(CEF_CASE)
    default: break;
  }
  *nll_out = nll;
  if (smooth_out) *smooth_out = smooth;
  return MT_OK;
}

/* Per row: the NLL gradient g (rounded to the dtype), its sum s in LogSoftMax's lane order,
 * then r = g - exp(y) s with y the rounded log-softmax (LogSoftMax's backward). g takes one of
 * two values per class, gn[c] off the target and gt[c] on it, computed once per call (the same
 * products in the same order as class_nll_backward's, hence the same values). Without
 * smoothing every gn[c] is a zero, and a lane sum of zeros and one gt[t] from +0 is
 * +0 + gt[t]: no per-row pass for s. An ignored row has g = 0, as the composition's
 * zero-filled gradient. */
#define CEB_CASE(E, N_, TT, CT)                                                                                  \
  case E: {                                                                                                      \
    const TT *x = (const TT *)mt__data(xt);                                                                      \
    TT *r = (TT *)mt__data(rt);                                                                                  \
    _Pragma("omp parallel for if(N * C > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < N; i++) {                  \
      const TT *row = x + i * C;                                                                                 \
      TT *rr = r + i * C;                                                                                        \
      int64_t t = tg[i];                                                                                         \
      double s = 0, L = lse[i], buf[MT_ROW_CHUNK];                                                               \
      CT eb[MT_ROW_CHUNK];                                                                                       \
      if (t >= 0 && zeros) s = 0.0 + gt[t];                                                                      \
      else if (t >= 0) {                                                                                         \
        double s4[MT_ROW_LANES] = {0};                                                                           \
        for (int64_t c0 = 0; c0 < C; c0 += MT_ROW_CHUNK) {                                                       \
          int64_t nc = C - c0 < MT_ROW_CHUNK ? C - c0 : MT_ROW_CHUNK;                                            \
          for (int64_t j = 0; j < nc; j++) buf[j] = c0 + j == t ? gt[t] : gn[c0 + j];                            \
          mt__row_sum_add(s4, buf, nc);                                                                          \
        }                                                                                                        \
        s = mt__row_sum_end(s4);                                                                                 \
      }                                                                                                          \
      for (int64_t c0 = 0; c0 < C; c0 += MT_ROW_CHUNK) {                                                         \
        int64_t nc = C - c0 < MT_ROW_CHUNK ? C - c0 : MT_ROW_CHUNK;                                              \
        for (int64_t j = 0; j < nc; j++) eb[j] = (CT)CE_ROUND(N_, TT, CT, (double)mt_ld_##N_(row + c0 + j) - L); \
        mt__exp_ct(eb, nc, (CT)0);                                                                               \
        /* every class as off-target (a loop the compiler vectorizes), then the target */                        \
        const double *gr = t < 0 ? zero : gn + c0;                                                               \
        for (int64_t j = 0; j < nc; j++) mt_st_##N_(rr + c0 + j, (CT)(gr[j] - (double)eb[j] * s));               \
        if (t >= c0 && t < c0 + nc) mt_st_##N_(rr + t, (CT)(gt[t] - (double)eb[t - c0] * s));                    \
      }                                                                                                          \
    }                                                                                                            \
  } break;

#define CEG_CASE(E, N_, TT, CT)                                                               \
  case E:                                                                                     \
    for (int64_t c = 0; c < C; c++) {                                                         \
      gn[c] = CE_ROUND(N_, TT, CT, -smoothing / (double)C * w[c] * norm);                     \
      gt[c] = CE_ROUND(N_, TT, CT, -(smoothing / (double)C + (1 - smoothing)) * w[c] * norm); \
      zeros &= gn[c] == 0;                                                                    \
    }                                                                                         \
    break;

MT_AVX2_CLONES mt_status mt__cpu_cross_entropy_backward(mt_tensor *rt, const mt_tensor *xt, const mt_tensor *lse_t,
                                                        const int64_t *tg, const double *w, int64_t N, int64_t C,
                                                        double smoothing, double norm) {
  const double *lse = (const double *)mt__data(lse_t);
  /* gn, gt, and MT_ROW_CHUNK zeros: the g of an ignored row */
  double *gn = calloc((size_t)C * 2 + MT_ROW_CHUNK, sizeof *gn), *gt = gn + C, *zero = gt + C;
  if (!gn) return mt__error(MT_ERR_MEMORY, "nn.CrossEntropyCriterion: out of memory");
  int zeros = 1;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(CEG_CASE)
    default: break;
  }
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(CEB_CASE)
    default: break;
  }
  free(gn);
  return MT_OK;
}
