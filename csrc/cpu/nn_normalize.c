/* nn_normalize.c: the CPU backend's nn.Normalize over the rows of a contiguous N x D buffer, any
 * float dtype; csrc/nn/normalize.c checks the arguments. Row sums run in NRM_L double lanes
 * (lane j takes the elements j mod NRM_L, then the lanes are added in order): a fixed order, the
 * same for any thread count, that the compiler turns into vector code where a single running
 * sum would be a chain of dependent adds. */
#include <math.h>
#include "../core/dtype.h"
#include "cpu.h"

#define NRM_L 8

/* |x|^p for the kinds of p the loops tell apart (the branch is loop-invariant) */
enum { NRM_P1, NRM_P2, NRM_PANY, NRM_PINF };
static int nrm_kind(double p) { return isinf(p) ? NRM_PINF : p == 2 ? NRM_P2 : p == 1 ? NRM_P1 : NRM_PANY; }
static inline double nrm_pow(double a, double p, int kind) { /* a = |x| */
  return kind == NRM_P2 ? a * a : kind == NRM_P1 ? a : pow(a, p);
}
static inline double nrm_sign(double v) { return (double)(v > 0) - (double)(v < 0); }

/* one row's sum |x|^p (max |x| for p = inf) and, with g, sum x g */
#define NRM_ROW_STATS(N_, xr, gr, D, p, kind, s_out, c_out)                                           \
  do {                                                                                                \
    double sl[NRM_L] = {0}, cl[NRM_L] = {0};                                                          \
    int64_t d = 0;                                                                                    \
    for (; d + NRM_L <= D; d += NRM_L)                                                                \
      for (int j = 0; j < NRM_L; j++) {                                                               \
        double v = (double)mt_ld_##N_(xr + d + j), a = fabs(v);                                       \
        sl[j] = kind == NRM_PINF ? (a > sl[j] || isnan(a) ? a : sl[j]) : sl[j] + nrm_pow(a, p, kind); \
        if (gr) cl[j] += v * (double)mt_ld_##N_((gr) + d + j);                                        \
      }                                                                                               \
    for (int j = 0; d < D; d++, j++) {                                                                \
      double v = (double)mt_ld_##N_(xr + d), a = fabs(v);                                             \
      sl[j] = kind == NRM_PINF ? (a > sl[j] || isnan(a) ? a : sl[j]) : sl[j] + nrm_pow(a, p, kind);   \
      if (gr) cl[j] += v * (double)mt_ld_##N_((gr) + d);                                              \
    }                                                                                                 \
    double s_ = kind == NRM_PINF ? sl[0] : 0, c_ = 0;                                                 \
    for (int j = 0; j < NRM_L; j++) {                                                                 \
      s_ = kind == NRM_PINF ? (sl[j] > s_ || isnan(sl[j]) ? sl[j] : s_) : s_ + sl[j];                 \
      c_ += cl[j];                                                                                    \
    }                                                                                                 \
    s_out = s_, c_out = c_;                                                                           \
  } while (0)

static double nrm_norm(double s, double p, double eps, int kind) {
  return kind == NRM_PINF ? s + eps : kind == NRM_P2 ? sqrt(s + eps) : kind == NRM_P1 ? s + eps : pow(s + eps, 1 / p);
}

#define NRMF_CASE(E, N_, TT, CT)                                                                  \
  case E: {                                                                                       \
    const TT *x = (const TT *)mt__data(xt);                                                       \
    TT *y = (TT *)mt__data(yt);                                                                   \
    _Pragma("omp parallel for if(N * D > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < N; i++) {   \
      const TT *xr = x + i * D, *none = NULL;                                                     \
      TT *yr = y + i * D;                                                                         \
      double s, c;                                                                                \
      NRM_ROW_STATS(N_, xr, none, D, p, kind, s, c);                                              \
      (void)c;                                                                                    \
      double inv = 1 / nrm_norm(s, p, eps, kind);                                                 \
      for (int64_t d = 0; d < D; d++) mt_st_##N_(yr + d, (CT)((double)mt_ld_##N_(xr + d) * inv)); \
    }                                                                                             \
  } break;

mt_status mt__cpu_normalize_forward(mt_tensor *yt, const mt_tensor *xt, int64_t N, int64_t D, double p, double eps) {
  int kind = nrm_kind(p);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NRMF_CASE)
    default: break;
  }
  return MT_OK;
}

/* d(x_i / n)/dx_j = delta_ij / n - x_i dn/dx_j / n^2, dn/dx_j = sign(x_j) |x_j|^(p-1) n / n^p (p
 * finite), or sign(x_k) at the first k with |x_k| = max |x| (p = inf): r = g / n - q b, with q
 * the sign-power term and b = (sum x g) / (n^p n) (or / n^2) */
#define NRMB_CASE(E, N_, TT, CT)                                                                \
  case E: {                                                                                     \
    const TT *x = (const TT *)mt__data(xt), *g = (const TT *)mt__data(gt);                      \
    TT *r = (TT *)mt__data(rt);                                                                 \
    _Pragma("omp parallel for if(N * D > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < N; i++) { \
      const TT *xr = x + i * D, *gr = g + i * D;                                                \
      TT *rr = r + i * D;                                                                       \
      double s, c;                                                                              \
      NRM_ROW_STATS(N_, xr, gr, D, p, kind, s, c);                                              \
      double n = nrm_norm(s, p, eps, kind), a = 1 / n;                                          \
      double b = kind == NRM_PINF ? c / (n * n) : c / ((s + eps) * n);                          \
      int64_t k = -1;                                                                           \
      if (kind == NRM_PINF)                                                                     \
        for (int64_t d = 0; d < D && k < 0; d++)                                                \
          if (fabs((double)mt_ld_##N_(xr + d)) == s) k = d;                                     \
      for (int64_t d = 0; d < D; d++) {                                                         \
        double v = (double)mt_ld_##N_(xr + d), gv = (double)mt_ld_##N_(gr + d);                 \
        double q = kind == NRM_P2     ? v                                                       \
                   : kind == NRM_P1   ? nrm_sign(v)                                             \
                   : kind == NRM_PINF ? (d == k ? nrm_sign(v) : 0.0)                            \
                                      : nrm_sign(v) * pow(fabs(v), p - 1);                      \
        mt_st_##N_(rr + d, (CT)(gv * a - q * b));                                               \
      }                                                                                         \
    }                                                                                           \
  } break;

mt_status mt__cpu_normalize_backward(mt_tensor *rt, const mt_tensor *xt, const mt_tensor *gt, int64_t N, int64_t D,
                                     double p, double eps) {
  int kind = nrm_kind(p);
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(NRMB_CASE)
    default: break;
  }
  return MT_OK;
}
