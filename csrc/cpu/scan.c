/* scan.c: CPU cumulative sum and product along one dimension, one generic body per dtype.
 * Floats accumulate in double, integers in int64 with two's complement wrap-around. */
#include "../core/dtype.h"
#include "iter.h"
#include "pointwise.h"

/* One line of n elements (byte strides so, sx) in accumulator type ACC: double for floating
 * dtypes, int64 (wrapping, PW_ADD/PW_MUL) for integers. */
#define SCAN_LINE(N, T, ACC)                           \
  do {                                                 \
    ACC acc = (ACC)prod;                               \
    for (int64_t i = 0; i < n; i++) {                  \
      ACC v = (ACC)mt_ld_##N((const T *)(x + i * sx)); \
      acc = prod ? PW_MUL(acc, v) : PW_ADD(acc, v);    \
      mt_st_##N((T *)(o + i * so), acc);               \
    }                                                  \
  } while (0)

/* every line: the iterator runs over the shape with the scanned dim cut to 1, i.e. over the
 * first element of each line */
#define SCAN_CASE(E, N, T, CT)                                                   \
  case E:                                                                        \
    MT_ITER_RUNS(&it, nl, p, s, {                                                \
      for (int64_t l = 0; l < nl; l++) {                                         \
        char *o = p[0] + l * s[0];                                               \
        const char *x = p[1] + l * s[1];                                         \
        if (_Generic((CT)0, int64_t : 1, default : 0)) SCAN_LINE(N, T, int64_t); \
        else SCAN_LINE(N, T, double);                                            \
      }                                                                          \
    });                                                                          \
    break;

mt_status mt__cpu_scan(int prod, mt_tensor *out, const mt_tensor *a, int dim) {
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, a->sizes, (size_t)a->ndim * sizeof sizes[0]);
  int64_t n = sizes[dim];
  sizes[dim] = 1;
  size_t es = mt__dtype_size(a->dtype);
  char *base[2] = {mt__data(out), mt__data(a)};
  size_t esize[2] = {es, es};
  const int64_t *strides[2] = {out->strides, a->strides};
  const int64_t so = out->strides[dim] * (int64_t)es, sx = a->strides[dim] * (int64_t)es;
  mt_iter it;
  MT_TRY(mt_iter_init_raw(&it, 2, base, esize, strides, a->ndim, sizes, -1, 0));
  switch (a->dtype) {
    MT_DTYPE_LIST(SCAN_CASE)
    default: return mt__error(MT_ERR_DTYPE, "scan: dtype %s not available on the CPU", mt_dtype_name(a->dtype));
  }
  return MT_OK;
}
