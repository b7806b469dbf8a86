/* nn_optim_layerwise.c: the CPU backend's LARS and LAMB steps, whose step size is scaled per
 * layer by a trust ratio. The flat vector is cut into segments (one per parameter tensor,
 * checked by csrc/nn/optim_layerwise.c); a segment's norms are reduced first, then one fused
 * pass updates it. Excluded segments (BN and bias parameters in You et al.'s recipe) get trust
 * ratio 1 and no weight decay: plain SGD / Adam steps. */
#include <math.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "optim_block.h"

/* sums of squares of x and of gscale*dx over the segment [o, o+n), in double */
#define NORMS_KERNEL(E, N, T, CT)                                                                                      \
  static void norms_##N(int64_t o, int64_t n, const T *x, const mt_tensor *dx, CT gscale, double *sa, double *sb) {    \
    double ra = 0, rb = 0;                                                                                             \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) reduction(+ : ra, rb) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; \
                                                                                                       bk < nblocks;   \
                                                                                                       bk++) {         \
      int64_t i0 = bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);                                                    \
      CT gb[MT_OPT_BLOCK];                                                                                             \
      mt__opt_load(gb, dx, o + i0, m, gscale);                                                                         \
      for (int64_t j = 0; j < m; j++) {                                                                                \
        double u = mt_ld_##N(x + o + i0 + j), w = gb[j];                                                               \
        ra += u * u;                                                                                                   \
        rb += w * w;                                                                                                   \
      }                                                                                                                \
    }                                                                                                                  \
    *sa = ra;                                                                                                          \
    *sb = rb;                                                                                                          \
  }
MT_FLOAT_DTYPE_LIST(NORMS_KERNEL)

/* LARS update of one segment [o, o+n): g = gscale*dx + wd*x; buf = mom*buf + s*g (buf = s*g
 * first); x -= buf with s = lr * local_lr; without momentum x -= s*g; copy = x. */
#define LARS_KERNEL(E, N, T, CT)                                                                                       \
  static void lars_##N(int64_t o, int64_t n, T *x, const mt_tensor *dx, T *buf, CT s, CT mom, CT wd, int first,        \
                       CT gscale, mt_tensor *copy) {                                                                   \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; bk < nblocks; bk++) { \
      int64_t i0 = o + bk * MT_OPT_BLOCK, m = mt__opt_block_len(n, bk);                                                \
      CT gb[MT_OPT_BLOCK];                                                                                             \
      mt__opt_load(gb, dx, i0, m, gscale);                                                                             \
      for (int64_t j = 0; j < m; j++) {                                                                                \
        int64_t i = i0 + j;                                                                                            \
        CT xi = mt_ld_##N(x + i);                                                                                      \
        CT g = s * (gb[j] + wd * xi);                                                                                  \
        if (mom != 0) {                                                                                                \
          g = first ? g : mom * (CT)mt_ld_##N(buf + i) + g;                                                            \
          mt_st_##N(buf + i, g);                                                                                       \
        }                                                                                                              \
        mt_st_##N(x + i, xi - g);                                                                                      \
        gb[j] = mt_ld_##N(x + i);                                                                                      \
      }                                                                                                                \
      if (copy) mt__opt_store(copy, i0, m, gb);                                                                        \
    }                                                                                                                  \
  }
MT_FLOAT_DTYPE_LIST(LARS_KERNEL)

mt_status mt__cpu_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                            const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                            double weight_decay, double eta, double eps, int first, double *trust_out, double gscale,
                            mt_tensor *copy) {
  const char *op = "lars_step";
  char *bp = momentum != 0 ? mt__data(buf) : NULL;
  for (int s = 0; s < nseg; s++) {
    int64_t o = seg_offset[s], len = seg_length[s];
    if (len == 0) {
      if (trust_out) trust_out[s] = 1;
      continue;
    }
    int excl = seg_exclude && seg_exclude[s];
    double wd = excl ? 0 : weight_decay, local = 1, w2 = 0, g2 = 0;
    if (!excl) {
      switch (x->dtype) {
#define NORMS_CASE(E, N, T, CT) \
  case E: norms_##N(o, len, (const T *)mt__data(x), dx, (CT)gscale, &w2, &g2); break;
        MT_FLOAT_DTYPE_LIST(NORMS_CASE)
        default: break;
      }
      double wn = sqrt(w2), gn = sqrt(g2);
      /* a zero norm (fresh zero-init weights, no gradient) leaves the plain step */
      if (wn > 0 && gn > 0) local = eta * wn / (gn + wd * wn + eps);
    }
    if (trust_out) trust_out[s] = local;
    switch (x->dtype) {
#define LARS_CASE(E, N, T, CT)                                                                                        \
  case E:                                                                                                             \
    lars_##N(o, len, (T *)mt__data(x), dx, (T *)bp, (CT)(lr * local), (CT)momentum, (CT)wd, first, (CT)gscale, copy); \
    break;
      MT_FLOAT_DTYPE_LIST(LARS_CASE)
      default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
    }
  }
  return MT_OK;
}

/* LAMB pass 1 over a segment [o, o+n): update m and v from g = gscale*dx, and reduce ||x||^2
 * and ||u||^2 where u = mhat/(sqrt(vhat)+eps) + wd*x. Pass 2: x -= s*u with s = lr*trust;
 * copy = x. */
#define LAMB_KERNELS(E, N, T, CT)                                                                                      \
  static void lamb_moments_##N(int64_t o, int64_t n, const T *x, const mt_tensor *dx, T *m, T *v, double b1,           \
                               double b2, double ibc1, double ibc2, double eps, double wd, double gscale, double *w2,  \
                               double *u2) {                                                                           \
    double rw = 0, ru = 0;                                                                                             \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) reduction(+ : rw, ru) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; \
                                                                                                       bk < nblocks;   \
                                                                                                       bk++) {         \
      int64_t i0 = o + bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);                                              \
      double gb[MT_OPT_BLOCK];                                                                                         \
      mt__opt_load(gb, dx, i0, len, gscale);                                                                           \
      for (int64_t j = 0; j < len; j++) {                                                                              \
        int64_t i = i0 + j;                                                                                            \
        double xi = mt_ld_##N(x + i), g = gb[j];                                                                       \
        double mi = b1 * (double)mt_ld_##N(m + i) + (1 - b1) * g;                                                      \
        double vi = b2 * (double)mt_ld_##N(v + i) + (1 - b2) * g * g;                                                  \
        mt_st_##N(m + i, mi);                                                                                          \
        mt_st_##N(v + i, vi);                                                                                          \
        /* u from the stored (rounded) moments, so pass 2 sees the same u */                                           \
        mi = mt_ld_##N(m + i);                                                                                         \
        vi = mt_ld_##N(v + i);                                                                                         \
        double u = mi * ibc1 / (sqrt(vi * ibc2) + eps) + wd * xi;                                                      \
        rw += xi * xi;                                                                                                 \
        ru += u * u;                                                                                                   \
      }                                                                                                                \
    }                                                                                                                  \
    *w2 = rw;                                                                                                          \
    *u2 = ru;                                                                                                          \
  }                                                                                                                    \
  static void lamb_apply_##N(int64_t o, int64_t n, T *x, const T *m, const T *v, double ibc1, double ibc2, double eps, \
                             double wd, double s, mt_tensor *copy) {                                                   \
    int64_t nblocks = MT_OPT_NBLOCKS(n);                                                                               \
    _Pragma("omp parallel for schedule(static) if (n > MT_PARALLEL_GRAIN)") for (int64_t bk = 0; bk < nblocks; bk++) { \
      int64_t i0 = o + bk * MT_OPT_BLOCK, len = mt__opt_block_len(n, bk);                                              \
      CT xb[MT_OPT_BLOCK];                                                                                             \
      for (int64_t j = 0; j < len; j++) {                                                                              \
        int64_t i = i0 + j;                                                                                            \
        double xi = mt_ld_##N(x + i);                                                                                  \
        double u = (double)mt_ld_##N(m + i) * ibc1 / (sqrt((double)mt_ld_##N(v + i) * ibc2) + eps) + wd * xi;          \
        mt_st_##N(x + i, xi - s * u);                                                                                  \
        xb[j] = mt_ld_##N(x + i);                                                                                      \
      }                                                                                                                \
      if (copy) mt__opt_store(copy, i0, len, xb);                                                                      \
    }                                                                                                                  \
  }
MT_FLOAT_DTYPE_LIST(LAMB_KERNELS)

mt_status mt__cpu_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                            const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude,
                            double beta1, double beta2, double ibc1, double ibc2, double lr, double eps,
                            double weight_decay, double max_trust, double *trust_out, double gscale, mt_tensor *copy) {
  const char *op = "lamb_step";
  for (int s = 0; s < nseg; s++) {
    int64_t o = seg_offset[s], len = seg_length[s];
    if (len == 0) {
      if (trust_out) trust_out[s] = 1;
      continue;
    }
    int excl = seg_exclude && seg_exclude[s];
    double wd = excl ? 0 : weight_decay, w2 = 0, u2 = 0, trust = 1;
    switch (x->dtype) {
#define LAMB_MOM_CASE(E, N, T, CT)                                                                                     \
  case E:                                                                                                              \
    lamb_moments_##N(o, len, (const T *)mt__data(x), dx, (T *)mt__data(m), (T *)mt__data(v), beta1, beta2, ibc1, ibc2, \
                     eps, wd, gscale, &w2, &u2);                                                                       \
    break;
      MT_FLOAT_DTYPE_LIST(LAMB_MOM_CASE)
      default: return mt__error(MT_ERR_DTYPE, "%s: unsupported dtype %s", op, mt_dtype_name(x->dtype));
    }
    if (!excl && w2 > 0 && u2 > 0) {
      trust = sqrt(w2) / sqrt(u2);
      if (max_trust > 0 && trust > max_trust) trust = max_trust;
    }
    if (trust_out) trust_out[s] = trust;
    switch (x->dtype) {
#define LAMB_APPLY_CASE(E, N, T, CT)                                                                              \
  case E:                                                                                                         \
    lamb_apply_##N(o, len, (T *)mt__data(x), (const T *)mt__data(m), (const T *)mt__data(v), ibc1, ibc2, eps, wd, \
                   lr *trust, copy);                                                                              \
    break;
      MT_FLOAT_DTYPE_LIST(LAMB_APPLY_CASE)
      default: break;
    }
  }
  return MT_OK;
}
