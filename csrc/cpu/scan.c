/* scan.c: CPU cumulative sum and product along one dimension, written once in generic/scan.c and
 * compiled per dtype. Floats accumulate in double, integers in int64 with two's complement
 * wrap-around. */
#include "../core/dtype.h"
#include "iter.h"
#include "pointwise.h"
#include "generate.h"

#define MT_GENERIC_FILE "generic/scan.c"
#include "generate_all.h"

#define SCAN_CASE(E, N, T, CT) \
  case E: scan_lines_##N(&it, prod, n, so, sx); break;
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
