/* vec_exp.h: exp over runs of doubles (of floats: vec_expf.c), and the lane-ordered row max
 * and sum that softmax, log-softmax and cross-entropy share (their results must agree bit for
 * bit: the fused cross-entropy is checked against LogSoftMax + ClassNLLCriterion). */
#ifndef MT_CPU_VEC_EXP_H
#define MT_CPU_VEC_EXP_H
#include <math.h>
#include <stdint.h>
#include "../core/dtype.h"
#include "cpu.h" /* MT_ALWAYS_INLINE */

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

/* The float counterparts (csrc/cpu/vec_expf.c), for the dtypes whose compute type is float
 * (float32, half, bfloat16): exp eight floats to a vector, within about an ulp of float (as
 * PyTorch's); the max in MT_ROW_MAXF_LANES float lanes (max is exact, so the lane count moves no
 * value); the sum of floats in the double lanes above. Float64 keeps the double routines. */
#define MT_ROW_MAXF_LANES 8
void mt__expf_shifted(float *v, int64_t n, float shift);
void mt__row_maxf_add(float m[MT_ROW_MAXF_LANES], const float *v, int64_t n);
void mt__row_sumf_add(double s[MT_ROW_LANES], const float *v, int64_t n);

static inline float mt__max_nanf(float a, float b) { return ((b > a) | (b != b)) ? b : a; }

static inline float mt__row_maxf_end(const float m[MT_ROW_MAXF_LANES]) {
  return mt__max_nanf(mt__max_nanf(mt__max_nanf(m[0], m[1]), mt__max_nanf(m[2], m[3])),
                      mt__max_nanf(mt__max_nanf(m[4], m[5]), mt__max_nanf(m[6], m[7])));
}

/* the routine for a buffer of the compute type CT (double or float); a max-lane array is
 * MT_ROW_MAXF_LANES long for either (the double routines use the first MT_ROW_LANES) */
#define mt__exp_ct(v, n, shift) _Generic((v), double * : mt__exp_shifted, float * : mt__expf_shifted)(v, n, shift)
#define mt__row_max_ct(m, v, n) _Generic((m), double * : mt__row_max_add, float * : mt__row_maxf_add)(m, v, n)
#define mt__row_max_end_ct(m) _Generic((m), double * : mt__row_max_end, float * : mt__row_maxf_end)(m)
#define mt__row_sum_ct(s, v, n) _Generic((v), double * : mt__row_sum_add, float * : mt__row_sumf_add)(s, v, n)
#define mt__max_nan_ct(a, b) _Generic((a), double : mt__max_nan, float : mt__max_nanf)(a, b)

/* the softmax row (its max, and the sum of the exps, optionally stored as they are computed),
 * generic/vec_exp_row.c compiled per float dtype: softmax_row_f32 & co. */
#define MT_GENERIC_FILE "generic/vec_exp_row.c"
#include "generate_float.h"

#endif
