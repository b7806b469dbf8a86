/* mode.c: CPU body of torch.mode's second step: a scan of lines that the entry point
 * (csrc/core/ops_mode.c) already sorted, keeping the longest run of equal values. The scan of a
 * line is written once in generic/mode.c and compiled per dtype. */
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "generate.h"

/* equal for the scan: NaNs (sorted together at the end) form one run */
static inline int same_f(double a, double b) { return a == b || (a != a && b != b); }
static inline int same_i(int64_t a, int64_t b) { return a == b; }
#define SAME(a, b) _Generic((a), float : same_f, double : same_f, default : same_i)(a, b)

#define MT_GENERIC_FILE "generic/mode.c"
#include "generate_all.h"

#define MODE_CASE(E, N, T, CT) \
  case E: best_at = longest_run_##N((const T *)sorted_data + soff, n, sstride, (T *)values_data + voff); break;
mt_status mt__cpu_mode_lines(mt_tensor *values, mt_tensor *indices, const mt_tensor *sorted, const mt_tensor *order,
                             int dim) {
  int64_t lines = mt__numel(values), n = sorted->sizes[dim];
  int64_t sstride = sorted->strides[dim], ostride = order->strides[dim];
  const char *sorted_data = mt__data(sorted);
  char *values_data = mt__data(values);
  for (int64_t l = 0; l < lines; l++) {
    /* offsets of line l (row-major over values' shape, dim of size 1) in each tensor */
    int64_t r = l, soff = 0, ooff = 0, voff = 0, ioff = 0;
    for (int d = values->ndim - 1; d >= 0; d--) {
      int64_t c = r % values->sizes[d];
      r /= values->sizes[d];
      soff += c * sorted->strides[d], ooff += c * order->strides[d];
      voff += c * values->strides[d], ioff += c * indices->strides[d];
    }
    const int64_t *ord = (const int64_t *)mt__data(order) + ooff;
    int64_t best_at;
    switch (sorted->dtype) {
      MT_DTYPE_LIST(MODE_CASE)
      default: return mt__error(MT_ERR_DTYPE, "mode: unsupported dtype %s", mt_dtype_name(sorted->dtype));
    }
    ((int64_t *)mt__data(indices))[ioff] = ord[best_at * ostride];
  }
  return MT_OK;
}
