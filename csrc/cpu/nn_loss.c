/* nn_loss.c: the CPU backend's softmax / log-softmax (over the middle dim of an outer x D x
 * inner buffer), class NLL and MSE for the float dtypes, over contiguous buffers; csrc/nn/loss.c
 * checks the arguments and reads targets and class weights. Reductions accumulate in double. The
 * loops are written once in generic/nn_loss.c and compiled per float dtype; this file holds
 * their helpers and the dispatch. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "../core/dtype.h"
#include "cpu.h"
#include "vec_exp.h"

/* ---- softmax ------------------------------------------------------------------------------ */
/* exp and row max in the dtype's compute type (float64 in double, four to a vector; float32,
 * half and bfloat16 in float, eight to a vector, as PyTorch does), row sums in double, in the
 * lane order of vec_exp.h, which the fused cross-entropy repeats. */

/* inner > 1 (SpatialSoftMax & co.): the walk down D for one column strides by inner, so columns
 * go in blocks of up to SMAX_B adjacent ones, each pass running along the contiguous block (a
 * row of plain loops the compiler vectorizes) with the per-column max and sum kept in small
 * arrays. Long runs per row feed the prefetcher (at 16x21x64x64, 256 columns left the backward
 * about 1.5x slower than 512, and 2048 took another 13% off it), while a block's D rows of two
 * tensors should stay in L2 for the second pass: smax_block picks the widest block within
 * SMAX_L2 bytes, at least SMAX_B_MIN columns, narrowed while there are fewer than four blocks a
 * thread. A column's values do not depend on the block. */
#define SMAX_B 2048
#define SMAX_B_MIN 512
#define SMAX_L2 (384 * 1024)
static int64_t smax_block(int64_t outer, int64_t D, int64_t inner, size_t elt) {
  int64_t b = SMAX_L2 / (2 * D * (int64_t)elt);
  b = b > SMAX_B ? SMAX_B : b < SMAX_B_MIN ? SMAX_B_MIN : b;
  while (b > SMAX_B_MIN && outer * ((inner + b - 1) / b) < 4 * (int64_t)omp_get_max_threads()) b /= 2;
  return b < SMAX_B_MIN ? SMAX_B_MIN : b;
}

/* ---- MSE and SmoothL1 -------------------------------------------------------------------- */
/* The sum over n elements goes in at most PW_NB blocks of a fixed size (a multiple of PW_L; it
 * depends on n only), each summed in PW_L double lanes (lane j takes the elements j mod PW_L, a
 * loop the compiler vectorizes, where one running sum is a chain of dependent adds); blocks run
 * in parallel, their sums are added in block order: the same bits for any thread count. */
#define PW_L 8
#define PW_NB 256
static int64_t pw_block(int64_t n) {
  int64_t b = (n + PW_NB - 1) / PW_NB;
  b = (b + PW_L - 1) / PW_L * PW_L;
  return b < 4096 ? 4096 : b;
}

/* c ? a : b by bit masks: on random data a compare-and-branch (what the compiler makes of a
 * ternary here) mispredicts half the time; exact for every value, inf and NaN included */
static inline double pw_sel(int c, double a, double b) {
  uint64_t ua, ub, m = (uint64_t)0 - (uint64_t)(c != 0);
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  ua = (ua & m) | (ub & ~m);
  memcpy(&a, &ua, sizeof a);
  return a;
}
/* 0.5 min(a,1)^2 + (a - min(a,1)) with a = |d| is both Huber branches at once */
static inline double pw_mse(double d) { return d * d; }
static inline double pw_smoothl1(double d) {
  double a = fabs(d), m = pw_sel(a < 1, a, 1.0);
  return 0.5 * m * m + (a - m);
}
/* the loss term of a difference d (smoothl1 is a constant where the loops call it) */
static inline double pw_loss(double d, int smoothl1) { return smoothl1 ? pw_smoothl1(d) : pw_mse(d); }

#define MT_GENERIC_FILE "generic/nn_loss.c"
#include "generate_float.h"

/* ---- the entry points: a switch over the float dtypes ------------------------------------- */
#define SOFTMAX_CASE(E, N, T, CT)                                     \
  case E:                                                             \
    softmax_rows_##N((const T *)xp, (T *)yp, outer, D, inner, logsm); \
    break;
#define SOFTMAX_BLOCKED_CASE(E, N, T, CT) \
  case E: softmax_blocked_##N((const T *)xp, (T *)yp, outer, D, inner, logsm); break;
MT_AVX2_CLONES mt_status mt__cpu_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D,
                                                 int64_t inner, int logsm) {
  const void *xp = mt__data(x);
  void *yp = mt__data(y);
  if (inner > 1) {
    switch (x->dtype) {
      MT_FLOAT_DTYPE_LIST(SOFTMAX_BLOCKED_CASE)
      default: break;
    }
    return MT_OK;
  }
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(SOFTMAX_CASE)
    default: break;
  }
  return MT_OK;
}

#define SOFTMAX_BACKWARD_CASE(E, N, T, CT)                                                    \
  case E:                                                                                     \
    softmax_backward_rows_##N((const T *)gp, (const T *)yp, (T *)rp, outer, D, inner, logsm); \
    break;
#define SOFTMAX_BACKWARD_BLOCKED_CASE(E, N, T, CT) \
  case E: softmax_backward_blocked_##N((const T *)gp, (const T *)yp, (T *)rp, outer, D, inner, logsm); break;
MT_AVX2_CLONES mt_status mt__cpu_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer,
                                                  int64_t D, int64_t inner, int logsm) {
  const void *gp = mt__data(g), *yp = mt__data(y);
  void *rp = mt__data(r);
  if (inner > 1) {
    switch (y->dtype) {
      MT_FLOAT_DTYPE_LIST(SOFTMAX_BACKWARD_BLOCKED_CASE)
      default: break;
    }
    return MT_OK;
  }
  switch (y->dtype) {
    MT_FLOAT_DTYPE_LIST(SOFTMAX_BACKWARD_CASE)
    default: break;
  }
  return MT_OK;
}

#define NLL_FORWARD_CASE(E, N_, T, CT) \
  case E: class_nll_forward_##N_((const T *)mt__data(xt), tg, w, N, C, smoothing, &nll, &smooth); break;
mt_status mt__cpu_class_nll_forward(double *nll_out, double *smooth_out, const mt_tensor *xt, const int64_t *tg,
                                    const double *w, int64_t N, int64_t C) {
  double nll = 0, smooth = 0;
  int smoothing = smooth_out != NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NLL_FORWARD_CASE)
    default: break;
  }
  *nll_out = nll;
  if (smooth_out) *smooth_out = smooth;
  return MT_OK;
}

#define NLL_BACKWARD_CASE(E, N_, T, CT) \
  case E: class_nll_backward_##N_((T *)mt__data(rt), tg, w, N, C, smoothing, norm); break;
MT_AVX2_CLONES mt_status mt__cpu_class_nll_backward(mt_tensor *rt, const int64_t *tg, const double *w, int64_t N,
                                                    int64_t C, double smoothing, double norm) {
  switch (rt->dtype) {
    MT_FLOAT_DTYPE_LIST(NLL_BACKWARD_CASE)
    default: break;
  }
  return MT_OK;
}

#define PW_SUMS_CASE(E, N, T, CT) \
  case E: pw_sums_##N((const T *)xp, (const T *)yp, n, block_len, blocks, block_sums, smoothl1); break;
MT_AVX2_CLONES static mt_status pw_forward(double *out, const mt_tensor *xt, const mt_tensor *yt, int smoothl1) {
  int64_t n = mt__numel(xt), block_len = pw_block(n), blocks = (n + block_len - 1) / block_len;
  const void *xp = mt__data(xt), *yp = mt__data(yt);
  double block_sums[PW_NB];
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PW_SUMS_CASE)
    default: break;
  }
  double acc = 0;
  for (int64_t b = 0; b < blocks; b++) acc += block_sums[b];
  *out = acc;
  return MT_OK;
}

mt_status mt__cpu_mse_forward(double *out, const mt_tensor *x, const mt_tensor *y) { return pw_forward(out, x, y, 0); }
mt_status mt__cpu_smoothl1_forward(double *out, const mt_tensor *x, const mt_tensor *y) {
  return pw_forward(out, x, y, 1);
}

#define PW_GRADIENT_CASE(E, N, T, CT) \
  case E: pw_gradient_##N((const T *)xp, (const T *)yp, (T *)rp, n, k, smoothl1); break;
MT_AVX2_CLONES static mt_status pw_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k,
                                            int smoothl1) {
  int64_t n = mt__numel(x);
  const void *xp = mt__data(x), *yp = mt__data(y);
  void *rp = mt__data(r);
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(PW_GRADIENT_CASE)
    default: break;
  }
  return MT_OK;
}

mt_status mt__cpu_mse_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k) {
  return pw_backward(r, x, y, k, 0);
}
mt_status mt__cpu_smoothl1_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k) {
  return pw_backward(r, x, y, k, 1);
}
