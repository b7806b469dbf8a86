/* reduce.c: the elementwise reductions behind every allreduce algorithm, dst = dst op src, for
 * every dtype through one generic body. Values are loaded into the compute type (f16/bf16 as
 * float, integers as int64_t) and stored once, so half precision is rounded once per step.
 *   sum: floats add; integers add modulo 2^bits like torch (computed unsigned: no C overflow);
 *        bool is logical or (the store turns any non-zero into 1)
 *   max/min: NaN wins, like torch.maximum; bool max is or, min is and
 *   avg: reduced as sum; mt__dist_scale_avg then divides, integers truncating toward zero
 *        (so a bool average over 2+ ranks is 0: callers may rather refuse AVG on bool)
 * Large buffers are split into blocks over OpenMP threads; small ones (most sub-chunks of the
 * pipelined algorithms) stay on the calling thread, where a parallel region costs more than
 * it saves. */
#include "dist.h"
#include "../core/dtype.h"
#include "../core/half_bulk.h"

#define MT__RED_BLOCK ((int64_t)1 << 16) /* elements per OpenMP block */

/* integer sums wrap instead of overflowing (int64_t is every integer dtype's compute type) */
#define MT__RED_ADD(a, b) _Generic((a), int64_t : (int64_t)((uint64_t)(a) + (uint64_t)(b)), default : (a) + (b))
/* a != a only for NaN; the compiler drops the tests for integers */
#define MT__RED_MAX(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) > (b) ? (a) : (b))
#define MT__RED_MIN(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) < (b) ? (a) : (b))

#define MT__RED_LOOP(N, CT, OP)                    \
  for (int64_t i = 0; i < n; i++) {                \
    CT a = mt_ld_##N(d + i), b = mt_ld_##N(s + i); \
    mt_st_##N(d + i, OP(a, b));                    \
  }

/* one block, one dtype: the op switch sits outside the loops so each loop vectorises */
#define MT__RED_FN(E, N, T, CT)                                                     \
  static void red_##N(void *dv, const void *sv, int64_t n, int op) {                \
    T *restrict d = dv;                                                             \
    const T *restrict s = sv;                                                       \
    if (op == MT_RED_MAX) {                                                         \
      MT__RED_LOOP(N, CT, MT__RED_MAX)                                              \
    } else if (op == MT_RED_MIN) {                                                  \
      MT__RED_LOOP(N, CT, MT__RED_MIN)                                              \
    } else {                                                                        \
      MT__RED_LOOP(N, CT, MT__RED_ADD)                                              \
    }                                                                               \
  }                                                                                 \
  static void avg_##N(void *bv, int64_t n, int count) {                             \
    T *restrict b = bv;                                                             \
    for (int64_t i = 0; i < n; i++) mt_st_##N(b + i, mt_ld_##N(b + i) / (CT)count); \
  }
MT_DTYPE_LIST(MT__RED_FN)

/* float16 in runs through float (half_bulk.c: F16C where the CPU has it, eight values per
 * instruction, the same bits as mt_ld_f16 / mt_st_f16): the scalar conversions made a half
 * allreduce several times slower per byte than a float one (VGG-16's 264 MB half gradient took
 * 2.1 s over 10 Gbit/s against 0.64 s for the 528 MB float one) */
#define MT__HALF_RUN 256
#define MT__RED_FLOATS(OP) \
  for (int64_t i = 0; i < len; i++) a[i] = OP(a[i], b[i])
static void red_f16_runs(void *dv, const void *sv, int64_t n, int op) {
  uint16_t *d = dv;
  const uint16_t *s = sv;
  float a[MT__HALF_RUN], b[MT__HALF_RUN];
  for (int64_t at = 0; at < n; at += MT__HALF_RUN) {
    int64_t len = n - at < MT__HALF_RUN ? n - at : MT__HALF_RUN;
    mt__half_to_float_n(a, d + at, (size_t)len);
    mt__half_to_float_n(b, s + at, (size_t)len);
    if (op == MT_RED_MAX) {
      MT__RED_FLOATS(MT__RED_MAX);
    } else if (op == MT_RED_MIN) {
      MT__RED_FLOATS(MT__RED_MIN);
    } else {
      MT__RED_FLOATS(MT__RED_ADD);
    }
    mt__float_to_half_n(d + at, a, (size_t)len);
  }
}
static void avg_f16_runs(void *bv, int64_t n, int count) {
  uint16_t *buf = bv;
  float a[MT__HALF_RUN];
  for (int64_t at = 0; at < n; at += MT__HALF_RUN) {
    int64_t len = n - at < MT__HALF_RUN ? n - at : MT__HALF_RUN;
    mt__half_to_float_n(a, buf + at, (size_t)len);
    for (int64_t i = 0; i < len; i++) a[i] /= (float)count;
    mt__float_to_half_n(buf + at, a, (size_t)len);
  }
}

typedef void (*red_fn)(void *, const void *, int64_t, int);
typedef void (*avg_fn)(void *, int64_t, int);
/* indexed by dtype id, which is the position in MT_DTYPES */
#define MT__RED_ROW(E, N, T, CT) {red_##N, avg_##N, sizeof(T)},
static const struct {
  red_fn red;
  avg_fn avg;
  size_t size;
} fns[] = {MT_DTYPE_LIST(MT__RED_ROW)};
#define MT__NFNS ((int)(sizeof fns / sizeof fns[0]))

void mt__dist_reduce(void *dst, const void *src, int64_t n, int dtype, int op) {
  if (dtype < 0 || dtype >= MT__NFNS || n <= 0) return; /* collect.c has checked dtype */
  red_fn f = dtype == MT_F16 ? red_f16_runs : fns[dtype].red;
  size_t esize = fns[dtype].size;
  if (n <= MT__RED_BLOCK) {
    f(dst, src, n, op);
    return;
  }
  int64_t nblocks = (n + MT__RED_BLOCK - 1) / MT__RED_BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t lo = b * MT__RED_BLOCK, len = n - lo < MT__RED_BLOCK ? n - lo : MT__RED_BLOCK;
    f((char *)dst + lo * esize, (const char *)src + lo * esize, len, op);
  }
}

void mt__dist_scale_avg(void *buf, int64_t n, int dtype, int count) {
  /* count < 1 cannot come from a communicator; 1 leaves the sum as it is */
  if (dtype < 0 || dtype >= MT__NFNS || n <= 0 || count <= 1) return;
  avg_fn f = dtype == MT_F16 ? avg_f16_runs : fns[dtype].avg;
  size_t esize = fns[dtype].size;
  if (n <= MT__RED_BLOCK) {
    f(buf, n, count);
    return;
  }
  int64_t nblocks = (n + MT__RED_BLOCK - 1) / MT__RED_BLOCK;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t lo = b * MT__RED_BLOCK, len = n - lo < MT__RED_BLOCK ? n - lo : MT__RED_BLOCK;
    f((char *)buf + lo * esize, len, count);
  }
}
