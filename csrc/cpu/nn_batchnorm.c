/* nn_batchnorm.c: the CPU backend's batch normalization over dim 1 of a contiguous N x C x S
 * buffer, any float dtype (statistics accumulate in double); csrc/nn/batchnorm.c checks the
 * arguments. Work is split over channels. Training uses the batch statistics (biased variance
 * to normalise, unbiased for the running variance, running = (1-momentum) running + momentum
 * batch); evaluation uses the running statistics. Stat tensors are contiguous size C. */
#include <math.h>
#include "../core/dtype.h"
#include "cpu.h"

/* per-channel double accessors over a stat tensor of any float dtype */
static double vget(const mt_tensor *v, int64_t c) {
  const char *p = mt__data(v);
  switch (v->dtype) {
  case MT_F32: return ((const float *)p)[c];
  case MT_F64: return ((const double *)p)[c];
  case MT_F16: return mt_half_to_float(((const uint16_t *)p)[c]);
  default: return mt_bf16_to_float(((const uint16_t *)p)[c]);
  }
}
static void vset(mt_tensor *v, int64_t c, double x) {
  char *p = mt__data(v);
  switch (v->dtype) {
  case MT_F32: ((float *)p)[c] = (float)x; break;
  case MT_F64: ((double *)p)[c] = x; break;
  case MT_F16: mt_st_f16((uint16_t *)p + c, (float)x); break;
  default: mt_st_bf16((uint16_t *)p + c, (float)x); break;
  }
}

/* The per-channel sums below run in BN_LANES independent double accumulators, added up at the
 * end: one accumulator is a chain of dependent adds, bound by the add latency (4 cycles per
 * element), which made the statistics passes the slowest part of batch normalization. */
#define BN_LANES 8
static double bn_lanes_total(const double *acc) {
  double t = 0;
  for (int j = 0; j < BN_LANES; j++) t += acc[j];
  return t;
}

/* channel c of a contiguous N x C x S buffer: sum, then sum of squares about the mean */
#define STATS_CASE(E, N_, TT, CT)                                                \
  case E: {                                                                      \
    const TT *x = (const TT *)xp;                                                \
    double acc[BN_LANES] = {0};                                                  \
    for (int64_t n = 0; n < N; n++) {                                            \
      const TT *row = x + (n * C + c) * S;                                       \
      int64_t s = 0;                                                             \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) acc[j] += (double)mt_ld_##N_(row + s + j); \
      for (; s < S; s++) acc[0] += (double)mt_ld_##N_(row + s);                  \
    }                                                                            \
    sum = bn_lanes_total(acc);                                                   \
    double m = sum / (double)(N * S);                                            \
    for (int j = 0; j < BN_LANES; j++) acc[j] = 0;                               \
    for (int64_t n = 0; n < N; n++) {                                            \
      const TT *row = x + (n * C + c) * S;                                       \
      int64_t s = 0;                                                             \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) {                                     \
          double v = (double)mt_ld_##N_(row + s + j) - m;                        \
          acc[j] += v * v;                                                       \
        }                                                                        \
      for (; s < S; s++) {                                                       \
        double v = (double)mt_ld_##N_(row + s) - m;                              \
        acc[0] += v * v;                                                         \
      }                                                                          \
    }                                                                            \
    sq = bn_lanes_total(acc);                                                    \
  } break;

/* y = (x - mean) * invstd * w + b for channel c */
#define NORM_CASE(E, N_, TT, CT)                                                 \
  case E: {                                                                      \
    const TT *x = (const TT *)xp;                                                \
    TT *y = (TT *)yp;                                                            \
    for (int64_t n = 0; n < N; n++) {                                            \
      const TT *row = x + (n * C + c) * S;                                       \
      TT *out = y + (n * C + c) * S;                                             \
      for (int64_t s = 0; s < S; s++)                                            \
        mt_st_##N_(out + s, (CT)(((double)mt_ld_##N_(row + s) - mean) * k + b)); \
    }                                                                            \
  } break;

mt_status mt__cpu_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                       const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                       mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                       double eps, int64_t N, int64_t C, int64_t S) {
  const void *xp = mt__data(x);
  void *yp = mt__data(y);
  int64_t M = N * S;
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean, invstd;
    if (train) {
      double sum = 0, sq = 0;
      switch (dt) {
        MT_FLOAT_DTYPE_LIST(STATS_CASE)
      default: break;
      }
      mean = sum / (double)M;
      double var = sq / (double)M;
      invstd = 1.0 / sqrt(var + eps);
      vset(save_mean, c, mean);
      vset(save_invstd, c, invstd);
      if (running_mean) vset(running_mean, c, (1 - momentum) * vget(running_mean, c) + momentum * mean);
      if (running_var)
        vset(running_var, c, (1 - momentum) * vget(running_var, c) + momentum * sq / (double)(M - 1));
    } else {
      mean = vget(running_mean, c);
      invstd = 1.0 / sqrt(vget(running_var, c) + eps);
    }
    double k = invstd * (weight ? vget(weight, c) : 1.0);
    double b = bias ? vget(bias, c) : 0.0;
    switch (dt) {
      MT_FLOAT_DTYPE_LIST(NORM_CASE)
    default: break;
    }
  }
  return MT_OK;
}

/* channel c: sum(go) and sum(go * (x - mean)) */
#define DOT_CASE(E, N_, TT, CT)                                                  \
  case E: {                                                                      \
    const TT *x = (const TT *)xp, *g = (const TT *)gp;                           \
    double ag[BN_LANES] = {0}, agx[BN_LANES] = {0};                              \
    for (int64_t n = 0; n < N; n++) {                                            \
      int64_t o = (n * C + c) * S, s = 0;                                        \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) {                                     \
          double gv = (double)mt_ld_##N_(g + o + s + j);                         \
          ag[j] += gv;                                                           \
          agx[j] += gv * ((double)mt_ld_##N_(x + o + s + j) - mean);             \
        }                                                                        \
      for (; s < S; s++) {                                                       \
        double gv = (double)mt_ld_##N_(g + o + s);                               \
        ag[0] += gv;                                                             \
        agx[0] += gv * ((double)mt_ld_##N_(x + o + s) - mean);                   \
      }                                                                          \
    }                                                                            \
    sg = bn_lanes_total(ag);                                                     \
    sgx = bn_lanes_total(agx);                                                   \
  } break;

/* gi = k * (go - a - (x - mean) * bcoef) (train) or k * go (eval) */
#define GI_CASE(E, N_, TT, CT)                                                   \
  case E: {                                                                      \
    const TT *x = (const TT *)xp, *g = (const TT *)gp;                           \
    TT *r = (TT *)rp;                                                            \
    for (int64_t n = 0; n < N; n++) {                                            \
      int64_t o = (n * C + c) * S;                                               \
      for (int64_t s = 0; s < S; s++) {                                          \
        double gv = (double)mt_ld_##N_(g + o + s);                               \
        double xv = (double)mt_ld_##N_(x + o + s) - mean;                        \
        mt_st_##N_(r + o + s, (CT)(k * (gv - a - xv * bcoef)));                  \
      }                                                                          \
    }                                                                            \
  } break;

mt_status mt__cpu_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *x,
                                        const mt_tensor *g, const mt_tensor *weight, const mt_tensor *running_mean,
                                        const mt_tensor *running_var, const mt_tensor *save_mean,
                                        const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                        int64_t C, int64_t S) {
  const void *xp = mt__data(x), *gp = mt__data(g);
  void *rp = r ? mt__data(r) : NULL;
  int64_t M = N * S;
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean = train ? vget(save_mean, c) : vget(running_mean, c);
    double invstd = train ? vget(save_invstd, c) : 1.0 / sqrt(vget(running_var, c) + eps);
    double sg = 0, sgx = 0;
    switch (dt) {
      MT_FLOAT_DTYPE_LIST(DOT_CASE)
    default: break;
    }
    if (gradWeight) vset(gradWeight, c, vget(gradWeight, c) + scale * sgx * invstd);
    if (gradBias) vset(gradBias, c, vget(gradBias, c) + scale * sg);
    if (rp) {
      double w = weight ? vget(weight, c) : 1.0;
      double k = w * invstd, a = 0, bcoef = 0;
      if (train) { /* d/dx through the batch mean and variance */
        a = sg / (double)M;
        bcoef = sgx / (double)M * invstd * invstd;
      }
      switch (dt) {
        MT_FLOAT_DTYPE_LIST(GI_CASE)
      default: break;
      }
    }
  }
  return MT_OK;
}
