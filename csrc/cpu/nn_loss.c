/* nn_loss.c: the CPU backend's softmax / log-softmax (over the middle dim of an outer x D x
 * inner buffer), class NLL and MSE for the float dtypes, over contiguous buffers; csrc/nn/loss.c
 * checks the arguments and reads targets and class weights. Reductions accumulate in double. */
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

/* softmax keeps e = exp(x - max) in y and scales it by 1/sum afterwards */
#define SMAX_CASE(E, N, TT, CT)                                                                                   \
  case E: {                                                                                                       \
    const TT *x = (const TT *)xp;                                                                                 \
    TT *y = (TT *)yp;                                                                                             \
    _Pragma("omp parallel for if(outer * D * inner > MT_PARALLEL_GRAIN)") for (int64_t r = 0; r < outer * inner;  \
                                                                               r++) {                             \
      int64_t o = r / inner, i = r % inner;                                                                       \
      const TT *xr = x + o * D * inner + i;                                                                       \
      TT *yr = y + o * D * inner + i;                                                                             \
      CT buf[MT_ROW_CHUNK], mx;                                                                                   \
      double sum;                                                                                                 \
      MT_SOFTMAX_ROW(N, CT, xr, inner, D, buf, mx, sum, c0, nc,                                                   \
                     if (!logsm) for (int64_t j = 0; j < nc; j++) mt_st_##N(yr + (c0 + j) * inner, (CT)buf[j]));  \
      if (logsm) {                                                                                                \
        double lse = (double)mx + log(sum);                                                                       \
        for (int64_t d = 0; d < D; d++) mt_st_##N(yr + d * inner, (CT)((double)mt_ld_##N(xr + d * inner) - lse)); \
      } else {                                                                                                    \
        double inv = 1 / sum;                                                                                     \
        for (int64_t d = 0; d < D; d++) mt_st_##N(yr + d * inner, (CT)((double)mt_ld_##N(yr + d * inner) * inv)); \
      }                                                                                                           \
    }                                                                                                             \
  } break;

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
#define SMAX_BLOCKED_CASE(E, N, TT, CT)                                                                              \
  case E: {                                                                                                          \
    const TT *x = (const TT *)xp;                                                                                    \
    TT *y = (TT *)yp;                                                                                                \
    int64_t bw = smax_block(outer, D, inner, sizeof(TT)), nb = (inner + bw - 1) / bw;                                \
    _Pragma("omp parallel for if(outer * D * inner > MT_PARALLEL_GRAIN)") for (int64_t q = 0; q < outer * nb; q++) { \
      int64_t o = q / nb, i0 = (q % nb) * bw;                                                                        \
      int64_t len = inner - i0 < bw ? inner - i0 : bw;                                                               \
      const TT *xb = x + o * D * inner + i0;                                                                         \
      TT *yb = y + o * D * inner + i0;                                                                               \
      CT mx[SMAX_B], e[SMAX_B];                                                                                      \
      double sum[SMAX_B];                                                                                            \
      for (int64_t j = 0; j < len; j++) mx[j] = -INFINITY, sum[j] = 0;                                               \
      for (int64_t d = 0; d < D; d++)                                                                                \
        for (int64_t j = 0; j < len; j++) {                                                                          \
          CT v = (CT)mt_ld_##N(xb + d * inner + j);                                                                  \
          mx[j] = mt__max_nan_ct(mx[j], v);                                                                          \
        }                                                                                                            \
      for (int64_t d = 0; d < D; d++) {                                                                              \
        for (int64_t j = 0; j < len; j++) e[j] = (CT)mt_ld_##N(xb + d * inner + j) - mx[j];                          \
        mt__exp_ct(e, len, (CT)0);                                                                                   \
        for (int64_t j = 0; j < len; j++) sum[j] += e[j];                                                            \
        if (!logsm)                                                                                                  \
          for (int64_t j = 0; j < len; j++) mt_st_##N(yb + d * inner + j, (CT)e[j]);                                 \
      }                                                                                                              \
      if (logsm)                                                                                                     \
        for (int64_t j = 0; j < len; j++) sum[j] = (double)mx[j] + log(sum[j]);                                      \
      else                                                                                                           \
        for (int64_t j = 0; j < len; j++) sum[j] = 1 / sum[j];                                                       \
      for (int64_t d = 0; d < D; d++)                                                                                \
        for (int64_t j = 0; j < len; j++) {                                                                          \
          TT *yp_ = yb + d * inner + j;                                                                              \
          mt_st_##N(yp_,                                                                                             \
                    (CT)(logsm ? (double)mt_ld_##N(xb + d * inner + j) - sum[j] : (double)mt_ld_##N(yp_) * sum[j])); \
        }                                                                                                            \
    }                                                                                                                \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_softmax_forward(mt_tensor *y, const mt_tensor *x, int64_t outer, int64_t D,
                                                 int64_t inner, int logsm) {
  const void *xp = mt__data(x);
  void *yp = mt__data(y);
  if (inner > 1) {
    switch (x->dtype) {
      MT_FLOAT_DTYPE_LIST(SMAX_BLOCKED_CASE)
      default: break;
    }
    return MT_OK;
  }
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(SMAX_CASE)
    default: break;
  }
  return MT_OK;
}

/* softmax: gi = y (go - sum go y); log-softmax: gi = go - exp(y) sum go (the sum in the lane
 * order of vec_exp.h) */
#define SMAXB_CASE(E, N, TT, CT)                                                                                 \
  case E: {                                                                                                      \
    const TT *g = (const TT *)gp, *y = (const TT *)yp;                                                           \
    TT *r = (TT *)rp;                                                                                            \
    _Pragma("omp parallel for if(outer * D * inner > MT_PARALLEL_GRAIN)") for (int64_t q = 0; q < outer * inner; \
                                                                               q++) {                            \
      int64_t base = (q / inner) * D * inner + q % inner;                                                        \
      double buf[MT_ROW_CHUNK], s4[MT_ROW_LANES] = {0};                                                          \
      CT eb[MT_ROW_CHUNK];                                                                                       \
      for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {                                                         \
        int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;                                              \
        for (int64_t j = 0; j < nc; j++) {                                                                       \
          int64_t k = base + (c0 + j) * inner;                                                                   \
          double gv = (double)mt_ld_##N(g + k);                                                                  \
          buf[j] = logsm ? gv : gv * (double)mt_ld_##N(y + k);                                                   \
        }                                                                                                        \
        mt__row_sum_add(s4, buf, nc);                                                                            \
      }                                                                                                          \
      double s = mt__row_sum_end(s4);                                                                            \
      for (int64_t c0 = 0; c0 < D; c0 += MT_ROW_CHUNK) {                                                         \
        int64_t nc = D - c0 < MT_ROW_CHUNK ? D - c0 : MT_ROW_CHUNK;                                              \
        for (int64_t j = 0; j < nc; j++) eb[j] = (CT)mt_ld_##N(y + base + (c0 + j) * inner);                     \
        if (logsm) mt__exp_ct(eb, nc, (CT)0);                                                                    \
        for (int64_t j = 0; j < nc; j++) {                                                                       \
          int64_t k = base + (c0 + j) * inner;                                                                   \
          double gv = (double)mt_ld_##N(g + k), ev = (double)eb[j];                                              \
          mt_st_##N(r + k, (CT)(logsm ? gv - ev * s : ev * (gv - s)));                                           \
        }                                                                                                        \
      }                                                                                                          \
    }                                                                                                            \
  } break;

#define SMAXB_BLOCKED_CASE(E, N, TT, CT)                                                                              \
  case E: {                                                                                                           \
    const TT *g = (const TT *)gp, *y = (const TT *)yp;                                                                \
    TT *r = (TT *)rp;                                                                                                 \
    int64_t bw = smax_block(outer, D, inner, sizeof(TT)), nb = (inner + bw - 1) / bw;                                 \
    _Pragma("omp parallel for if(outer * D * inner > MT_PARALLEL_GRAIN)") for (int64_t q = 0; q < outer * nb; q++) {  \
      int64_t o = q / nb, i0 = (q % nb) * bw;                                                                         \
      int64_t len = inner - i0 < bw ? inner - i0 : bw;                                                                \
      int64_t base = o * D * inner + i0;                                                                              \
      double s[SMAX_B];                                                                                               \
      CT e[SMAX_B];                                                                                                   \
      for (int64_t j = 0; j < len; j++) s[j] = 0;                                                                     \
      for (int64_t d = 0; d < D; d++) {                                                                               \
        const TT *yd = y + base + d * inner, *gd = g + base + d * inner;                                              \
        if (logsm)                                                                                                    \
          for (int64_t j = 0; j < len; j++) s[j] += (double)mt_ld_##N(gd + j);                                        \
        else                                                                                                          \
          for (int64_t j = 0; j < len; j++) s[j] += (double)mt_ld_##N(gd + j) * (double)mt_ld_##N(yd + j);            \
      }                                                                                                               \
      for (int64_t d = 0; d < D; d++) {                                                                               \
        const TT *yd = y + base + d * inner, *gd = g + base + d * inner;                                              \
        TT *rd = r + base + d * inner;                                                                                \
        if (logsm) {                                                                                                  \
          for (int64_t j = 0; j < len; j++) e[j] = (CT)mt_ld_##N(yd + j);                                             \
          mt__exp_ct(e, len, (CT)0);                                                                                  \
          for (int64_t j = 0; j < len; j++) mt_st_##N(rd + j, (CT)((double)mt_ld_##N(gd + j) - (double)e[j] * s[j])); \
        } else {                                                                                                      \
          for (int64_t j = 0; j < len; j++)                                                                           \
            mt_st_##N(rd + j, (CT)((double)mt_ld_##N(yd + j) * ((double)mt_ld_##N(gd + j) - s[j])));                  \
        }                                                                                                             \
      }                                                                                                               \
    }                                                                                                                 \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_softmax_backward(mt_tensor *r, const mt_tensor *g, const mt_tensor *y, int64_t outer,
                                                  int64_t D, int64_t inner, int logsm) {
  const void *gp = mt__data(g), *yp = mt__data(y);
  void *rp = mt__data(r);
  if (inner > 1) {
    switch (y->dtype) {
      MT_FLOAT_DTYPE_LIST(SMAXB_BLOCKED_CASE)
      default: break;
    }
    return MT_OK;
  }
  switch (y->dtype) {
    MT_FLOAT_DTYPE_LIST(SMAXB_CASE)
    default: break;
  }
  return MT_OK;
}

/* ---- class NLL ---------------------------------------------------------------------------- */
#define NLLF_CASE(E, N_, TT, CT)                                                      \
  case E: {                                                                           \
    const TT *x = (const TT *)mt__data(xt);                                           \
    for (int64_t i = 0; i < N; i++) {                                                 \
      const TT *row = x + i * C;                                                      \
      int64_t t = tg[i];                                                              \
      nll -= w[t] * (double)mt_ld_##N_(row + t);                                      \
      if (smoothing > 0)                                                              \
        for (int64_t c = 0; c < C; c++) smooth -= w[c] * (double)mt_ld_##N_(row + c); \
    }                                                                                 \
  } break;

mt_status mt__cpu_class_nll_forward(double *nll_out, double *smooth_out, const mt_tensor *xt, const int64_t *tg,
                                    const double *w, int64_t N, int64_t C) {
  double nll = 0, smooth = 0;
  int smoothing = smooth_out != NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NLLF_CASE)
    default: break;
  }
  *nll_out = nll;
  if (smooth_out) *smooth_out = smooth;
  return MT_OK;
}

/* d/dx[i][c] = -norm (eps/C w[c] + (1-eps) w[c] [c == t_i]) */
#define NLLB_CASE(E, N_, TT, CT)                                                                       \
  case E: {                                                                                            \
    TT *r = (TT *)mt__data(rt);                                                                        \
    for (int64_t i = 0; i < N; i++) {                                                                  \
      TT *row = r + i * C;                                                                             \
      for (int64_t c = 0; c < C; c++) mt_st_##N_(row + c, (CT)(-smoothing / (double)C * w[c] * norm)); \
      int64_t t = tg[i];                                                                               \
      mt_st_##N_(row + t, (CT)(-(smoothing / (double)C + (1 - smoothing)) * w[t] * norm));             \
    }                                                                                                  \
  } break;

MT_AVX2_CLONES mt_status mt__cpu_class_nll_backward(mt_tensor *rt, const int64_t *tg, const double *w, int64_t N,
                                                    int64_t C, double smoothing, double norm) {
  switch (rt->dtype) {
    MT_FLOAT_DTYPE_LIST(NLLB_CASE)
    default: break;
  }
  return MT_OK;
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

#define PW_SUM_CASE(E, N, TT, CT, F)                                                                           \
  case E: {                                                                                                    \
    const TT *x = (const TT *)mt__data(xt), *y = (const TT *)mt__data(yt);                                     \
    _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)") for (int64_t b = 0; b < nb; b++) {                   \
      int64_t i = b * bl, end = i + bl < n ? i + bl : n;                                                       \
      double l[PW_L] = {0};                                                                                    \
      for (; i + PW_L <= end; i += PW_L)                                                                       \
        for (int j = 0; j < PW_L; j++) l[j] += F((double)mt_ld_##N(x + i + j) - (double)mt_ld_##N(y + i + j)); \
      for (int j = 0; i < end; i++, j++) l[j] += F((double)mt_ld_##N(x + i) - (double)mt_ld_##N(y + i));       \
      double t = 0;                                                                                            \
      for (int j = 0; j < PW_L; j++) t += l[j];                                                                \
      bs[b] = t;                                                                                               \
    }                                                                                                          \
  } break;
#define MSE_SUM_CASE(E, N, TT, CT) PW_SUM_CASE(E, N, TT, CT, pw_mse)
#define SL1_SUM_CASE(E, N, TT, CT) PW_SUM_CASE(E, N, TT, CT, pw_smoothl1)

MT_AVX2_CLONES static mt_status pw_forward(double *out, const mt_tensor *xt, const mt_tensor *yt, int smoothl1) {
  int64_t n = mt__numel(xt), bl = pw_block(n), nb = (n + bl - 1) / bl;
  double bs[PW_NB];
  if (smoothl1) {
    switch (xt->dtype) {
      MT_FLOAT_DTYPE_LIST(SL1_SUM_CASE)
      default: break;
    }
  } else {
    switch (xt->dtype) {
      MT_FLOAT_DTYPE_LIST(MSE_SUM_CASE)
      default: break;
    }
  }
  double acc = 0;
  for (int64_t b = 0; b < nb; b++) acc += bs[b];
  *out = acc;
  return MT_OK;
}

mt_status mt__cpu_mse_forward(double *out, const mt_tensor *x, const mt_tensor *y) { return pw_forward(out, x, y, 0); }
mt_status mt__cpu_smoothl1_forward(double *out, const mt_tensor *x, const mt_tensor *y) {
  return pw_forward(out, x, y, 1);
}

/* MSE: r = k (x - y); SmoothL1: r = k clamp(x - y, -1, 1) */
#define PWB_CASE(E, N, TT, CT)                                                                \
  case E: {                                                                                   \
    const TT *x = (const TT *)xp, *y = (const TT *)yp;                                        \
    TT *r = (TT *)rp;                                                                         \
    if (smoothl1) {                                                                           \
      _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < n; i++) { \
        double d = (double)mt_ld_##N(x + i) - (double)mt_ld_##N(y + i);                       \
        d = pw_sel(d > 1, 1.0, pw_sel(d < -1, -1.0, d));                                      \
        mt_st_##N(r + i, (CT)(k * d));                                                        \
      }                                                                                       \
    } else {                                                                                  \
      _Pragma("omp parallel for if(n > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < n; i++)   \
          mt_st_##N(r + i, (CT)(k * ((double)mt_ld_##N(x + i) - (double)mt_ld_##N(y + i))));  \
    }                                                                                         \
  } break;

MT_AVX2_CLONES static mt_status pw_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *y, double k,
                                            int smoothl1) {
  int64_t n = mt__numel(x);
  const void *xp = mt__data(x), *yp = mt__data(y);
  void *rp = mt__data(r);
  switch (x->dtype) {
    MT_FLOAT_DTYPE_LIST(PWB_CASE)
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
