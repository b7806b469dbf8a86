/* vec_exp.h: exp over runs of doubles, and the lane-ordered row max and sum that softmax,
 * log-softmax and cross-entropy share (their results must agree bit for bit: the fused
 * cross-entropy is checked against LogSoftMax + ClassNLLCriterion). */
#ifndef MT_CPU_VEC_EXP_H
#define MT_CPU_VEC_EXP_H
#include <math.h>
#include <stdint.h>
#include "../core/dtype.h"

/* v[j] = exp(v[j] - shift) for j < n, within about one ulp of the exact value (glibc's exp is
 * within half an ulp but goes one element at a time; this runs four to a vector where the CPU
 * has AVX2 and FMA). Handles overflow to inf, subnormal results, +-inf and NaN. */
void mt__exp_shifted(double *v, int64_t n, double shift);

/* Rows are reduced in MT_ROW_LANES lanes, lane l taking the elements j == l mod MT_ROW_LANES
 * (independent chains the compiler vectorizes; a single running value is a chain of dependent
 * adds), then the lanes are combined in a fixed order. A row cut into chunks whose lengths are
 * multiples of MT_ROW_LANES reduces to the same bits as the whole row. */
#define MT_ROW_LANES 4
#define MT_ROW_CHUNK 1024

/* m[l] = max(m[l], the values of lane l), NaN once a NaN is met (comparisons against it fail) */
void mt__row_max_add(double m[MT_ROW_LANES], const double *v, int64_t n);
/* s[l] += the values of lane l, in index order */
void mt__row_sum_add(double s[MT_ROW_LANES], const double *v, int64_t n);

static inline double mt__max_nan(double a, double b) { return ((b > a) | (b != b)) ? b : a; }

static inline double mt__row_max_end(const double m[MT_ROW_LANES]) {
  return mt__max_nan(mt__max_nan(m[0], m[1]), mt__max_nan(m[2], m[3]));
}

static inline double mt__row_sum_end(const double s[MT_ROW_LANES]) { return (s[0] + s[1]) + (s[2] + s[3]); }

/* mx and sum of exp(x - mx) over a row of D values at stride st, read in chunks of
 * MT_ROW_CHUNK into the double buffer buf; STORE runs once per chunk with buf holding the
 * exps of the values from C0 on, NC of them (a row that fits one chunk is read once) */
#define MT_SOFTMAX_ROW(N, xr, st, D, buf, mx, sum, C0, NC, STORE)                       \
  do {                                                                             \
    double m4_[MT_ROW_LANES], s4_[MT_ROW_LANES];                                   \
    for (int l_ = 0; l_ < MT_ROW_LANES; l_++) m4_[l_] = -INFINITY, s4_[l_] = 0;    \
    for (int64_t C0 = 0; C0 < (D); C0 += MT_ROW_CHUNK) {                           \
      int64_t NC = (D) - C0 < MT_ROW_CHUNK ? (D) - C0 : MT_ROW_CHUNK;              \
      for (int64_t j_ = 0; j_ < NC; j_++) (buf)[j_] = (double)mt_ld_##N((xr) + (C0 + j_) * (st)); \
      mt__row_max_add(m4_, buf, NC);                                               \
    }                                                                              \
    mx = mt__row_max_end(m4_);                                                     \
    for (int64_t C0 = 0; C0 < (D); C0 += MT_ROW_CHUNK) {                           \
      int64_t NC = (D) - C0 < MT_ROW_CHUNK ? (D) - C0 : MT_ROW_CHUNK;              \
      if ((D) > MT_ROW_CHUNK)                                                      \
        for (int64_t j_ = 0; j_ < NC; j_++) (buf)[j_] = (double)mt_ld_##N((xr) + (C0 + j_) * (st)); \
      mt__exp_shifted(buf, NC, mx);                                                \
      mt__row_sum_add(s4_, buf, NC);                                               \
      STORE;                                                                       \
    }                                                                              \
    sum = mt__row_sum_end(s4_);                                                    \
  } while (0)

#endif
