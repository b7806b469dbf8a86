/* nn_batchnorm.h: what the CPU batch norm's two layouts share (nn_batchnorm.c: NCHW,
 * nn_batchnorm_cl.c: channels-last): per-channel accessors, the summation lanes, the per-channel
 * arithmetic before and after the sums, and the per-element formulas (generic/nn_batchnorm_elem.c,
 * compiled here per float dtype). Both layouts go through these, in the same order per channel,
 * so they give bit-identical results. */
#ifndef MT_CPU_NN_BATCHNORM_H
#define MT_CPU_NN_BATCHNORM_H
#include <math.h>
#include <string.h>
#include "../core/dtype.h"
#include "cpu.h"

/* per-channel double accessors over a stat or parameter tensor of any float dtype */
static inline double bn_vget(const mt_tensor *v, int64_t c) {
  const char *p = mt__data(v);
  switch (v->dtype) {
    case MT_F32: return ((const float *)p)[c];
    case MT_F64: return ((const double *)p)[c];
    case MT_F16: return mt_half_to_float(((const uint16_t *)p)[c]);
    default: return mt_bf16_to_float(((const uint16_t *)p)[c]);
  }
}
static inline void bn_vset(mt_tensor *v, int64_t c, double x) {
  char *p = mt__data(v);
  switch (v->dtype) {
    case MT_F32: ((float *)p)[c] = (float)x; break;
    case MT_F64: ((double *)p)[c] = x; break;
    case MT_F16: mt_st_f16((uint16_t *)p + c, (float)x); break;
    default: mt_st_bf16((uint16_t *)p + c, (float)x); break;
  }
}

/* The per-channel sums run in BN_LANES independent double accumulators (lane j takes the values
 * at s = j mod BN_LANES of each row n, a row's tail goes to lane 0), added up at the end: one
 * accumulator is a chain of dependent adds, bound by the add latency (4 cycles per element),
 * which made the statistics passes the slowest part of batch normalization. */
#define BN_LANES 8
static inline double bn_lanes_total(const double *acc) {
  double t = 0;
  for (int j = 0; j < BN_LANES; j++) t += acc[j];
  return t;
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

/* the per-element formulas (the ReLU-masked gradOutput, the fused output, gradInput and
 * gradResidual) as functions per float dtype, bn_normalize_elem_f32 & co. */
#define MT_GENERIC_FILE "generic/nn_batchnorm_elem.c"
#include "generate_float.h"

/* the per-channel tensors and settings of one call */
typedef struct bn_cpu_ctx {
  const mt_tensor *weight, *bias, *running_mean, *running_var, *save_mean, *save_invstd;
  mt_tensor *gradWeight, *gradBias;
  int train;
  double momentum, eps, scale;
  int64_t M; /* values per channel, N S */
} bn_cpu_ctx;

/* forward, channel c, after the sums (train) or without them (eval): statistics saved and
 * running ones moved (train); coef = {mean, k, b} with y = (x - mean) k + b */
static inline void bn_forward_channel(const bn_cpu_ctx *a, int64_t c, double sum, double sq, double *coef) {
  double mean, invstd;
  if (a->train) {
    mean = sum / (double)a->M;
    double var = sq / (double)a->M;
    invstd = 1.0 / sqrt(var + a->eps);
    bn_vset((mt_tensor *)a->save_mean, c, mean);
    bn_vset((mt_tensor *)a->save_invstd, c, invstd);
    if (a->running_mean)
      bn_vset((mt_tensor *)a->running_mean, c, (1 - a->momentum) * bn_vget(a->running_mean, c) + a->momentum * mean);
    if (a->running_var)
      bn_vset((mt_tensor *)a->running_var, c,
              (1 - a->momentum) * bn_vget(a->running_var, c) + a->momentum * sq / (double)(a->M - 1));
  } else {
    mean = bn_vget(a->running_mean, c);
    invstd = 1.0 / sqrt(bn_vget(a->running_var, c) + a->eps);
  }
  coef[0] = mean;
  coef[1] = invstd * (a->weight ? bn_vget(a->weight, c) : 1.0);
  coef[2] = a->bias ? bn_vget(a->bias, c) : 0.0;
}

/* backward, channel c, before the sums: the mean and 1/std the forward used */
static inline void bn_backward_stats(const bn_cpu_ctx *a, int64_t c, double *mean, double *invstd) {
  *mean = a->train ? bn_vget(a->save_mean, c) : bn_vget(a->running_mean, c);
  *invstd = a->train ? bn_vget(a->save_invstd, c) : 1.0 / sqrt(bn_vget(a->running_var, c) + a->eps);
}

/* backward, channel c, after sum_go = sum go and sum_go_x = sum go (x - mean): parameter
 * gradients accumulated; coef = {mean, k, a, bcoef} for gi = k (go - a - (x - mean) bcoef) */
static inline void bn_backward_channel(const bn_cpu_ctx *a, int64_t c, double mean, double invstd, double sum_go,
                                       double sum_go_x, double *coef) {
  if (a->gradWeight) bn_vset(a->gradWeight, c, bn_vget(a->gradWeight, c) + a->scale * sum_go_x * invstd);
  if (a->gradBias) bn_vset(a->gradBias, c, bn_vget(a->gradBias, c) + a->scale * sum_go);
  double w = a->weight ? bn_vget(a->weight, c) : 1.0;
  coef[0] = mean;
  coef[1] = w * invstd;
  coef[2] = a->train ? sum_go / (double)a->M : 0.0; /* d/dx through the batch mean and variance */
  coef[3] = a->train ? sum_go_x / (double)a->M * invstd * invstd : 0.0;
}

/* the channels-last bodies (nn_batchnorm_cl.c), called by the backend entries */
mt_status mt__cpu_bn_forward_cl(mt_tensor *y, const mt_tensor *x, const mt_tensor *res, const bn_cpu_ctx *a, int relu,
                                int64_t N, int64_t C, int64_t S);
mt_status mt__cpu_bn_backward_cl(mt_tensor *r, mt_tensor *gr, const mt_tensor *x, const mt_tensor *g,
                                 const mt_tensor *y, const bn_cpu_ctx *a, int64_t N, int64_t C, int64_t S);
#endif
