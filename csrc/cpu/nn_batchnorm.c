/* nn_batchnorm.c: the CPU backend's batch normalization over dim 1 of an N x C x S buffer, NCHW
 * ((n C + c) S + s) or channels-last ((n S + s) C + c), any float dtype (statistics accumulate in
 * double), alone or fused with a residual add and a ReLU; csrc/nn/batchnorm.c checks the
 * arguments. Work is split over channels. Training uses the batch statistics (biased variance
 * to normalise, unbiased for the running variance, running = (1-momentum) running + momentum
 * batch); evaluation uses the running statistics. Stat and parameter tensors are contiguous
 * size C, of the input's dtype or float32, read and written through double accessors.
 *
 * The fused forward rounds the BN output to the dtype, adds the residual in the dtype's compute
 * type and rounds again, then clamps at 0, which is what SpatialBatchNormalization -> CAddTable
 * -> ReLU do, so the results are bit-identical to that chain. Both layouts run the same loops
 * (the same summation order) with the channel and spatial strides as macro arguments, so that
 * the NCHW inner loop keeps its unit stride. */
#include <math.h>
#include <string.h>
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

/* Element (n, c, s) of the buffer is at n C S + c CS + s SS: (CS, SS) = (S, 1) for NCHW and
 * (1, C) for channels-last. The case macros take CS and SS as arguments. */

/* channel c: sum, then sum of squares about the mean */
#define STATS_CASE(E, N_, TT, CT, CS, SS)                                        \
  case E: {                                                                      \
    const TT *x = (const TT *)xp;                                                \
    double acc[BN_LANES] = {0};                                                  \
    for (int64_t n = 0; n < N; n++) {                                            \
      const TT *row = x + n * C * S + c * (CS);                                  \
      int64_t s = 0;                                                             \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) acc[j] += (double)mt_ld_##N_(row + (s + j) * (SS)); \
      for (; s < S; s++) acc[0] += (double)mt_ld_##N_(row + s * (SS));           \
    }                                                                            \
    sum = bn_lanes_total(acc);                                                   \
    double m = sum / (double)(N * S);                                            \
    for (int j = 0; j < BN_LANES; j++) acc[j] = 0;                               \
    for (int64_t n = 0; n < N; n++) {                                            \
      const TT *row = x + n * C * S + c * (CS);                                  \
      int64_t s = 0;                                                             \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) {                                     \
          double v = (double)mt_ld_##N_(row + (s + j) * (SS)) - m;               \
          acc[j] += v * v;                                                       \
        }                                                                        \
      for (; s < S; s++) {                                                       \
        double v = (double)mt_ld_##N_(row + s * (SS)) - m;                       \
        acc[0] += v * v;                                                         \
      }                                                                          \
    }                                                                            \
    sq = bn_lanes_total(acc);                                                    \
  } break;

/* channel c: y = (x - mean) * k + b, rounded; then + residual, rounded; then max(0, .) */
#define NORM_CASE(E, N_, TT, CT, CS, SS)                                         \
  case E: {                                                                      \
    const TT *x = (const TT *)xp, *res = (const TT *)rsp;                        \
    TT *y = (TT *)yp;                                                            \
    for (int64_t n = 0; n < N; n++) {                                            \
      int64_t o = n * C * S + c * (CS);                                          \
      if (!res && !relu) {                                                       \
        for (int64_t s = 0; s < S; s++)                                          \
          mt_st_##N_(y + o + s * (SS), (CT)(((double)mt_ld_##N_(x + o + s * (SS)) - mean) * k + b)); \
        continue;                                                                \
      }                                                                          \
      for (int64_t s = 0; s < S; s++) {                                          \
        int64_t i = o + s * (SS);                                                \
        TT t;                                                                    \
        mt_st_##N_(&t, (CT)(((double)mt_ld_##N_(x + i) - mean) * k + b));        \
        CT v = mt_ld_##N_(&t);                                                   \
        if (res) {                                                               \
          mt_st_##N_(&t, v + (CT)mt_ld_##N_(res + i));                           \
          v = mt_ld_##N_(&t);                                                    \
        }                                                                        \
        if (relu) v = v > 0 ? v : (CT)0;                                         \
        mt_st_##N_(y + i, v);                                                    \
      }                                                                          \
    }                                                                            \
  } break;

mt_status mt__cpu_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *res, const mt_tensor *weight,
                                       const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                       mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                       double eps, int relu, int64_t N, int64_t C, int64_t S, int cl) {
  const void *xp = mt__data(x), *rsp = res ? mt__data(res) : NULL;
  void *yp = mt__data(y);
  int64_t M = N * S;
  mt_dtype dt = x->dtype;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean, invstd;
    if (train) {
      double sum = 0, sq = 0;
      if (cl) {
        switch (dt) {
          MT_FLOAT_DTYPE_LIST_X(STATS_CASE, 1, C)
        default: break;
        }
      } else {
        switch (dt) {
          MT_FLOAT_DTYPE_LIST_X(STATS_CASE, S, 1)
        default: break;
        }
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
    if (cl) {
      switch (dt) {
        MT_FLOAT_DTYPE_LIST_X(NORM_CASE, 1, C)
      default: break;
      }
    } else {
      switch (dt) {
        MT_FLOAT_DTYPE_LIST_X(NORM_CASE, S, 1)
      default: break;
      }
    }
  }
  return MT_OK;
}

/* v, or +0.0 where keep is 0, without a branch: GCC turned a select (even with both loads
 * unconditional) into a compare and jump per element, mispredicted half the time on the ReLU's
 * mask, which made the fused backward 4x slower than the plain one. (A multiply by the mask
 * would turn a masked NaN or inf gradient into NaN, where the ReLU's backward gives 0.) */
static inline double bn_keep(double v, int keep) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  b &= (uint64_t)0 - (uint64_t)(keep != 0);
  memcpy(&v, &b, sizeof v);
  return v;
}

/* gv = gradOutput at i, masked by the ReLU (output > 0) when MASK (a constant) */
#define BN_GO(gv, N_, i, MASK)                                                   \
  double gv = (double)mt_ld_##N_(g + (i));                                       \
  if (MASK) gv = bn_keep(gv, mt_ld_##N_(yv + (i)) > 0)

/* channel c: sum(go) and sum(go * (x - mean)) */
#define DOT_CASE(E, N_, TT, CT, CS, SS, MASK)                                    \
  case E: {                                                                      \
    const TT *x = (const TT *)xp, *g = (const TT *)gp, *yv = (const TT *)yp;     \
    (void)yv;                                                                    \
    double ag[BN_LANES] = {0}, agx[BN_LANES] = {0};                              \
    for (int64_t n = 0; n < N; n++) {                                            \
      int64_t o = n * C * S + c * (CS), s = 0;                                   \
      for (; s + BN_LANES <= S; s += BN_LANES)                                   \
        for (int j = 0; j < BN_LANES; j++) {                                     \
          int64_t i = o + (s + j) * (SS);                                        \
          BN_GO(gv, N_, i, MASK);                                        \
          ag[j] += gv;                                                           \
          agx[j] += gv * ((double)mt_ld_##N_(x + i) - mean);                     \
        }                                                                        \
      for (; s < S; s++) {                                                       \
        int64_t i = o + s * (SS);                                                \
        BN_GO(gv, N_, i, MASK);                                          \
        ag[0] += gv;                                                             \
        agx[0] += gv * ((double)mt_ld_##N_(x + i) - mean);                       \
      }                                                                          \
    }                                                                            \
    sg = bn_lanes_total(ag);                                                     \
    sgx = bn_lanes_total(agx);                                                   \
  } break;

/* gi = k * (go - a - (x - mean) * bcoef) (train) or k * go (eval) when R; gres = go when GR */
#define GI_CASE(E, N_, TT, CT, CS, SS, MASK, R, GR)                              \
  case E: {                                                                      \
    const TT *x = (const TT *)xp, *g = (const TT *)gp, *yv = (const TT *)yp;     \
    TT *r = (TT *)rp, *gres = (TT *)grp;                                         \
    (void)yv, (void)r, (void)gres, (void)x;                                      \
    for (int64_t n = 0; n < N; n++) {                                            \
      int64_t o = n * C * S + c * (CS);                                          \
      for (int64_t s = 0; s < S; s++) {                                          \
        int64_t i = o + s * (SS);                                                \
        BN_GO(gv, N_, i, MASK);                                          \
        if (GR) mt_st_##N_(gres + i, (CT)gv);                                    \
        if (R) mt_st_##N_(r + i, (CT)(k * (gv - a - ((double)mt_ld_##N_(x + i) - mean) * bcoef))); \
      }                                                                          \
    }                                                                            \
  } break;

/* the loops above instantiated for the layout (CS, SS) and the compile-time flags */
#define BN_DOT(CS, SS, MASK)                                                     \
  switch (dt) {                                                                  \
    MT_FLOAT_DTYPE_LIST_X(DOT_CASE, CS, SS, MASK)                                \
  default: break;                                                                \
  }
#define BN_GI(CS, SS, MASK, R, GR)                                               \
  switch (dt) {                                                                  \
    MT_FLOAT_DTYPE_LIST_X(GI_CASE, CS, SS, MASK, R, GR)                          \
  default: break;                                                                \
  }
#define BN_GI_ANY(CS, SS, MASK)                                                  \
  if (rp && grp) { BN_GI(CS, SS, MASK, 1, 1) }                                   \
  else if (rp) { BN_GI(CS, SS, MASK, 1, 0) }                                     \
  else { BN_GI(CS, SS, MASK, 0, 1) }

mt_status mt__cpu_batchnorm_backward(mt_tensor *r, mt_tensor *gr, mt_tensor *gradWeight, mt_tensor *gradBias,
                                        const mt_tensor *x, const mt_tensor *g, const mt_tensor *y,
                                        const mt_tensor *weight, const mt_tensor *running_mean,
                                        const mt_tensor *running_var, const mt_tensor *save_mean,
                                        const mt_tensor *save_invstd, int train, double scale, double eps, int64_t N,
                                        int64_t C, int64_t S, int cl) {
  const void *xp = mt__data(x), *gp = mt__data(g), *yp = y ? mt__data(y) : NULL;
  void *rp = r ? mt__data(r) : NULL, *grp = gr ? mt__data(gr) : NULL;
  int64_t M = N * S;
  mt_dtype dt = x->dtype;
  int masked = yp != NULL;
#pragma omp parallel for if (N * C * S > MT_PARALLEL_GRAIN)
  for (int64_t c = 0; c < C; c++) {
    double mean = train ? vget(save_mean, c) : vget(running_mean, c);
    double invstd = train ? vget(save_invstd, c) : 1.0 / sqrt(vget(running_var, c) + eps);
    double sg = 0, sgx = 0;
    if (cl) {
      if (masked) { BN_DOT(1, C, 1) } else { BN_DOT(1, C, 0) }
    } else {
      if (masked) { BN_DOT(S, 1, 1) } else { BN_DOT(S, 1, 0) }
    }
    if (gradWeight) vset(gradWeight, c, vget(gradWeight, c) + scale * sgx * invstd);
    if (gradBias) vset(gradBias, c, vget(gradBias, c) + scale * sg);
    if (rp || grp) {
      double w = weight ? vget(weight, c) : 1.0;
      double k = w * invstd, a = 0, bcoef = 0;
      if (train) { /* d/dx through the batch mean and variance */
        a = sg / (double)M;
        bcoef = sgx / (double)M * invstd * invstd;
      }
      if (cl) {
        if (masked) { BN_GI_ANY(1, C, 1) } else { BN_GI_ANY(1, C, 0) }
      } else {
        if (masked) { BN_GI_ANY(S, 1, 1) } else { BN_GI_ANY(S, 1, 0) }
      }
    }
  }
  return MT_OK;
}
