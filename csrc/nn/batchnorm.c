/* batchnorm.c: batch normalization over dim 1 of an N x C [x ...] input on the CPU, any float
 * dtype (statistics accumulate in double). The input is seen as N x C x S; work is split over
 * channels. Training uses the batch statistics (biased variance to normalise, unbiased for the
 * running variance, running = (1-momentum) running + momentum batch); evaluation uses the
 * running statistics. Stat tensors (weight, bias, running/save buffers) are contiguous size C. */
#include <math.h>
#include <stdio.h>
#include "../core/tensor.h"
#include "../core/error.h"
#include "../core/dtype.h"
#include "../cpu/cpu.h"
#include "nn_cuda.h"

#define OP "nn.BatchNormalization"

static mt_status bn_contig(const mt_tensor *t, mt_tensor **out) {
  if (mt__is_contiguous(t)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, OP ": out of memory");
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* an optional per-channel tensor: NULL, or contiguous, size C, the input's dtype and device */
static mt_status bn_check_vec(const mt_tensor *v, const mt_tensor *input, int64_t C, const char *name) {
  char b1[64];
  if (!v) return MT_OK;
  if (v->device != input->device) return mt__error(MT_ERR_DEVICE, OP ": %s is on another device than the input", name);
  if (v->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": %s has dtype %s but the input has dtype %s", name, mt_dtype_name(v->dtype),
                     mt_dtype_name(input->dtype));
  if (mt__numel(v) != C || !mt__is_contiguous(v))
    return mt__error(MT_ERR_SHAPE, OP ": %s must be a contiguous tensor of %lld elements (the input's %lld channels), got size %s",
                     name, (long long)C, (long long)C, mt__shape_str(v, b1, sizeof b1));
  return MT_OK;
}

static mt_status bn_check_input(const mt_tensor *input, int64_t *N, int64_t *C, int64_t *S) {
  char b1[64];
  MT_CHECK_TENSOR(input, OP, "input");
  if (!mt_dtype_is_floating(input->dtype))
    return mt__error(MT_ERR_DTYPE, OP ": input has dtype %s, expected a floating dtype", mt_dtype_name(input->dtype));
  if (input->ndim < 2)
    return mt__error(MT_ERR_SHAPE, OP ": expected an input with at least 2 dimensions (N x C ...), got size %s",
                     mt__shape_str(input, b1, sizeof b1));
  *N = input->sizes[0];
  *C = input->sizes[1];
  *S = 1;
  for (int d = 2; d < input->ndim; d++) *S *= input->sizes[d];
  return MT_OK;
}

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

mt_status mt_nn_batchnorm_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight,
                                  const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                  mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum,
                                  double eps) {
  int64_t N, C, S;
  MT_TRY(bn_check_input(input, &N, &C, &S));
  MT_CHECK_TENSOR(out, OP, "output");
  MT_TRY(bn_check_vec(weight, input, C, "weight"));
  MT_TRY(bn_check_vec(bias, input, C, "bias"));
  MT_TRY(bn_check_vec(running_mean, input, C, "running_mean"));
  MT_TRY(bn_check_vec(running_var, input, C, "running_var"));
  if (!(eps > 0)) return mt__error(MT_ERR_ARG, OP ": eps must be positive, got %g", eps);
  if (train) {
    if (N * S < 2)
      return mt__error(MT_ERR_SHAPE, OP ": training needs more than one value per channel, got input of %lld x %lld x %lld",
                       (long long)N, (long long)C, (long long)S);
    MT_CHECK_TENSOR(save_mean, OP, "save_mean");
    MT_CHECK_TENSOR(save_invstd, OP, "save_invstd");
    MT_TRY(mt__prepare_out(save_mean, input->dtype, input->device, 1, &C, OP));
    MT_TRY(mt__prepare_out(save_invstd, input->dtype, input->device, 1, &C, OP));
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean"));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd"));
  } else if (!running_mean || !running_var) {
    return mt__error(MT_ERR_ARG, OP ": evaluation needs running_mean and running_var");
  }
  MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, OP));
  mt_tensor *xc = NULL, *yc = NULL;
  MT_TRY(bn_contig(input, &xc));
  mt_status st = MT_OK;
  if (mt__is_contiguous(out) && out != input) yc = mt__tensor_alias(out);
  else st = mt__tensor_empty(&yc, out->dtype, out->device, out->ndim, out->sizes);
  if (st == MT_OK && !yc) st = mt__error(MT_ERR_MEMORY, OP ": out of memory");
  if (st != MT_OK) {
    mt_tensor_release(xc);
    return st;
  }
  if (input->device != MT_CPU) {
    st = mt__cuda_nn_batchnorm_forward(yc, xc, weight, bias, running_mean, running_var, train ? save_mean : NULL,
                                       train ? save_invstd : NULL, train, momentum, eps, N, C, S);
    if (st == MT_OK && (mt__data(yc) != mt__data(out) || out == input)) st = mt_copy(out, yc);
    mt_tensor_release(xc);
    mt_tensor_release(yc);
    return st;
  }
  const void *xp = mt__data(xc);
  void *yp = mt__data(yc);
  int64_t M = N * S;
  mt_dtype dt = input->dtype;
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
  if (mt__data(yc) != mt__data(out) || out == input) st = mt_copy(out, yc);
  mt_tensor_release(xc);
  mt_tensor_release(yc);
  return st;
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

mt_status mt_nn_batchnorm_backward(mt_tensor *gradInput, mt_tensor *gradWeight, mt_tensor *gradBias,
                                   const mt_tensor *input, const mt_tensor *gradOutput, const mt_tensor *weight,
                                   const mt_tensor *running_mean, const mt_tensor *running_var,
                                   const mt_tensor *save_mean, const mt_tensor *save_invstd, int train, double scale,
                                   double eps) {
  int64_t N, C, S;
  char b1[64], b2[64];
  MT_TRY(bn_check_input(input, &N, &C, &S));
  MT_CHECK_TENSOR(gradOutput, OP, "gradOutput");
  if (gradOutput->device != input->device)
    return mt__error(MT_ERR_DEVICE, OP ": gradOutput is on another device than the input");
  if (gradOutput->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, OP ": gradOutput has dtype %s but the input has dtype %s",
                     mt_dtype_name(gradOutput->dtype), mt_dtype_name(input->dtype));
  int same = gradOutput->ndim == input->ndim;
  for (int d = 0; same && d < input->ndim; d++) same = gradOutput->sizes[d] == input->sizes[d];
  if (!same)
    return mt__error(MT_ERR_SHAPE, OP ": gradOutput of size %s does not match the input of size %s",
                     mt__shape_str(gradOutput, b1, sizeof b1), mt__shape_str(input, b2, sizeof b2));
  MT_TRY(bn_check_vec(weight, input, C, "weight"));
  MT_TRY(bn_check_vec(gradWeight, input, C, "gradWeight"));
  MT_TRY(bn_check_vec(gradBias, input, C, "gradBias"));
  if (train) {
    if (!save_mean || !save_invstd) return mt__error(MT_ERR_ARG, OP ": backward in training needs the saved statistics (run forward first)");
    MT_TRY(bn_check_vec(save_mean, input, C, "save_mean"));
    MT_TRY(bn_check_vec(save_invstd, input, C, "save_invstd"));
  } else {
    if (!running_mean || !running_var) return mt__error(MT_ERR_ARG, OP ": evaluation needs running_mean and running_var");
    MT_TRY(bn_check_vec(running_mean, input, C, "running_mean"));
    MT_TRY(bn_check_vec(running_var, input, C, "running_var"));
  }
  if (gradInput) MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, OP));
  mt_tensor *xc = NULL, *gc = NULL, *rc = NULL;
  mt_status st = bn_contig(input, &xc);
  if (st == MT_OK) st = bn_contig(gradOutput, &gc);
  if (st == MT_OK && gradInput) {
    if (mt__is_contiguous(gradInput) && gradInput != gradOutput && gradInput != input) rc = mt__tensor_alias(gradInput);
    else st = mt__tensor_empty(&rc, input->dtype, input->device, input->ndim, input->sizes);
    if (st == MT_OK && !rc) st = mt__error(MT_ERR_MEMORY, OP ": out of memory");
  }
  if (st == MT_OK && input->device != MT_CPU) {
    st = mt__cuda_nn_batchnorm_backward(rc, gradWeight, gradBias, xc, gc, weight, running_mean, running_var, save_mean,
                                        save_invstd, train, scale, eps, N, C, S);
    if (st == MT_OK && rc && (mt__data(rc) != mt__data(gradInput) || gradInput == gradOutput || gradInput == input))
      st = mt_copy(gradInput, rc);
  } else if (st == MT_OK) {
    const void *xp = mt__data(xc), *gp = mt__data(gc);
    void *rp = rc ? mt__data(rc) : NULL;
    int64_t M = N * S;
    mt_dtype dt = input->dtype;
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
    if (rc && mt__data(rc) != mt__data(gradInput)) st = mt_copy(gradInput, rc);
    else if (rc && (gradInput == gradOutput || gradInput == input)) st = mt_copy(gradInput, rc);
  }
  if (xc) mt_tensor_release(xc);
  if (gc) mt_tensor_release(gc);
  if (rc) mt_tensor_release(rc);
  return st;
}
