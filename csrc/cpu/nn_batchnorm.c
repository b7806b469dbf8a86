/* nn_batchnorm.c: the CPU backend's batch normalization over dim 1 of an N x C x S buffer, any
 * float dtype (statistics accumulate in double), alone or fused with a residual add and a ReLU;
 * csrc/nn/batchnorm.c checks the arguments. Training uses the batch statistics (biased variance
 * to normalise, unbiased for the running variance, running = (1-momentum) running + momentum
 * batch); evaluation uses the running statistics. Stat and parameter tensors are contiguous
 * size C, of the input's dtype or float32, read and written through double accessors.
 *
 * The fused forward rounds the BN output to the dtype, adds the residual in the dtype's compute
 * type and rounds again, then clamps at 0, which is what SpatialBatchNormalization -> CAddTable
 * -> ReLU do, so the results are bit-identical to that chain; the fused backward masks
 * gradOutput by output > 0 as the ReLU's backward does.
 *
 * This file: NCHW, element (n, c, s) at (n C + c) S + s, work split over channels. Channels-last
 * buffers go to nn_batchnorm_cl.c, which sums in the same order (nn_batchnorm.h). */
#include "nn_batchnorm.h"

/* channel c: sum, then sum of squares about the mean */
#define STATS_CASE(E, N_, TT, CT)                                                     \
  case E: {                                                                           \
    const TT *x = (const TT *)xp;                                                     \
    double acc[BN_LANES] = {0};                                                       \
    for (int64_t n = 0; n < N; n++) {                                                 \
      const TT *row = x + (n * C + c) * S;                                            \
      int64_t s = 0;                                                                  \
      for (; s + BN_LANES <= S; s += BN_LANES)                                        \
        for (int j = 0; j < BN_LANES; j++) acc[j] += (double)mt_ld_##N_(row + s + j); \
      for (; s < S; s++) acc[0] += (double)mt_ld_##N_(row + s);                       \
    }                                                                                 \
    sum = bn_lanes_total(acc);                                                        \
    double m = sum / (double)(N * S);                                                 \
    for (int j = 0; j < BN_LANES; j++) acc[j] = 0;                                    \
    for (int64_t n = 0; n < N; n++) {                                                 \
      const TT *row = x + (n * C + c) * S;                                            \
      int64_t s = 0;                                                                  \
      for (; s + BN_LANES <= S; s += BN_LANES)                                        \
        for (int j = 0; j < BN_LANES; j++) {                                          \
          double v = (double)mt_ld_##N_(row + s + j) - m;                             \
          acc[j] += v * v;                                                            \
        }                                                                             \
      for (; s < S; s++) {                                                            \
        double v = (double)mt_ld_##N_(row + s) - m;                                   \
        acc[0] += v * v;                                                              \
      }                                                                               \
    }                                                                                 \
    sq = bn_lanes_total(acc);                                                         \
  } break;

/* channel c: y = (x - mean) * k + b, then (fused) + residual and max(0, .) */
#define NORM_CASE(E, N_, TT, CT)                                                                      \
  case E: {                                                                                           \
    const TT *x = (const TT *)xp, *res = (const TT *)rsp;                                             \
    TT *y = (TT *)yp;                                                                                 \
    for (int64_t n = 0; n < N; n++) {                                                                 \
      int64_t o = (n * C + c) * S;                                                                    \
      if (!res && !relu) {                                                                            \
        for (int64_t s = 0; s < S; s++)                                                               \
          mt_st_##N_(y + o + s, (CT)(((double)mt_ld_##N_(x + o + s) - coef[0]) * coef[1] + coef[2])); \
        continue;                                                                                     \
      }                                                                                               \
      for (int64_t s = 0; s < S; s++) BN_NORM_ELEM(N_, TT, CT, o + s, coef[0], coef[1], coef[2])      \
    }                                                                                                 \
  } break;

mt_status mt__cpu_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *res, const mt_tensor *weight,
                                    const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                    mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                    double eps, int relu, int64_t N, int64_t C, int64_t S, int cl) {
  bn_cpu_ctx a = {weight, bias,  running_mean, running_var, save_mean, save_invstd, NULL,
                  NULL,   train, momentum,     eps,         1.0,       N * S};
  if (cl) return mt__cpu_bn_forward_cl(y, x, res, &a, relu, N, C, S);
  const void *xp = mt__data(x), *rsp = res ? mt__data(res) : NULL;
  void *yp = mt__data(y);
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double sum = 0, sq = 0, coef[3];
    if (train) {
      switch (dt) {
        MT_FLOAT_DTYPE_LIST(STATS_CASE)
        default: break;
      }
    }
    bn_forward_channel(&a, c, sum, sq, coef);
    switch (dt) {
      MT_FLOAT_DTYPE_LIST(NORM_CASE)
      default: break;
    }
  }
  return MT_OK;
}

/* channel c: sum(go) and sum(go * (x - mean)) */
#define DOT_CASE(E, N_, TT, CT, MASK)                                        \
  case E: {                                                                  \
    const TT *x = (const TT *)xp, *g = (const TT *)gp, *yv = (const TT *)yp; \
    (void)yv;                                                                \
    double ag[BN_LANES] = {0}, agx[BN_LANES] = {0};                          \
    for (int64_t n = 0; n < N; n++) {                                        \
      int64_t o = (n * C + c) * S, s = 0;                                    \
      for (; s + BN_LANES <= S; s += BN_LANES)                               \
        for (int j = 0; j < BN_LANES; j++) {                                 \
          int64_t i = o + s + j;                                             \
          BN_GO(gv, N_, i, MASK);                                            \
          ag[j] += gv;                                                       \
          agx[j] += gv * ((double)mt_ld_##N_(x + i) - mean);                 \
        }                                                                    \
      for (; s < S; s++) {                                                   \
        int64_t i = o + s;                                                   \
        BN_GO(gv, N_, i, MASK);                                              \
        ag[0] += gv;                                                         \
        agx[0] += gv * ((double)mt_ld_##N_(x + i) - mean);                   \
      }                                                                      \
    }                                                                        \
    sg = bn_lanes_total(ag);                                                 \
    sgx = bn_lanes_total(agx);                                               \
  } break;

/* channel c: gradInput when R, gradResidual when GR */
#define GI_CASE(E, N_, TT, CT, MASK, R, GR)                                  \
  case E: {                                                                  \
    const TT *x = (const TT *)xp, *g = (const TT *)gp, *yv = (const TT *)yp; \
    TT *r = (TT *)rp, *gres = (TT *)grp;                                     \
    (void)yv, (void)r, (void)gres, (void)x;                                  \
    for (int64_t n = 0; n < N; n++) {                                        \
      int64_t o = (n * C + c) * S;                                           \
      for (int64_t s = 0; s < S; s++) {                                      \
        BN_GO(gv, N_, o + s, MASK);                                          \
        BN_GI_ELEM(N_, TT, CT, o + s, gv, coef, R, GR)                       \
      }                                                                      \
    }                                                                        \
  } break;

/* the loops above for the compile-time flags (constants, so the plain loops stay plain) */
#define BN_DOT(MASK)                      \
  switch (dt) {                           \
    MT_FLOAT_DTYPE_LIST_X(DOT_CASE, MASK) \
    default: break;                       \
  }
#define BN_GI(MASK, R, GR)                      \
  switch (dt) {                                 \
    MT_FLOAT_DTYPE_LIST_X(GI_CASE, MASK, R, GR) \
    default: break;                             \
  }
#define BN_GI_ANY(MASK) \
  if (rp && grp) {      \
    BN_GI(MASK, 1, 1)   \
  } else if (rp) {      \
    BN_GI(MASK, 1, 0)   \
  } else {              \
    BN_GI(MASK, 0, 1)   \
  }

mt_status mt__cpu_batchnorm_backward(mt_tensor *r, mt_tensor *gr, mt_tensor *gradWeight, mt_tensor *gradBias,
                                     const mt_tensor *x, const mt_tensor *g, const mt_tensor *y,
                                     const mt_tensor *weight, const mt_tensor *running_mean,
                                     const mt_tensor *running_var, const mt_tensor *save_mean,
                                     const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                     int64_t C, int64_t S, int cl) {
  bn_cpu_ctx a = {weight,   NULL,  running_mean, running_var, save_mean, save_invstd, gradWeight,
                  gradBias, train, 0.0,          eps,         scale,     N * S};
  if (cl) return mt__cpu_bn_backward_cl(r, gr, x, g, y, &a, N, C, S);
  const void *xp = mt__data(x), *gp = mt__data(g), *yp = y ? mt__data(y) : NULL;
  void *rp = r ? mt__data(r) : NULL, *grp = gr ? mt__data(gr) : NULL;
  mt_dtype dt = x->dtype;
  int masked = yp != NULL;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean, invstd, sg = 0, sgx = 0, coef[4];
    bn_backward_stats(&a, c, &mean, &invstd);
    if (masked) {
      BN_DOT(1)
    } else {
      BN_DOT(0)
    }
    bn_backward_channel(&a, c, mean, invstd, sg, sgx, coef);
    if (rp || grp) {
      if (masked) {
        BN_GI_ANY(1)
      } else {
        BN_GI_ANY(0)
      }
    }
  }
  return MT_OK;
}
