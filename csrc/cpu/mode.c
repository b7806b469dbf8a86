/* mode.c: CPU body of torch.mode's second step: a scan of lines that the entry point
 * (csrc/core/ops_mode.c) already sorted, keeping the longest run of equal values. */
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

/* equal for the scan: NaNs (sorted together at the end) form one run */
static inline int same_f(double a, double b) { return a == b || (a != a && b != b); }
static inline int same_i(int64_t a, int64_t b) { return a == b; }
#define SAME(a, b) _Generic((a), float : same_f, double : same_f, default : same_i)(a, b)

#define MODE_CASE(E, N, T, CT)                                                          \
  case E: {                                                                             \
    const T *s = (const T *)mt__data(sorted) + soff;                                    \
    CT best = mt_ld_##N(s), cur = best;                                                 \
    int64_t best_len = 0, run = 0, best_at = 0;                                         \
    for (int64_t i = 0; i < n; i++) {                                                   \
      CT v = mt_ld_##N(s + i * sstride);                                                \
      run = (i > 0 && SAME(v, cur)) ? run + 1 : 1;                                      \
      cur = v;                                                                          \
      /* a run is judged at its last element, where it is complete */                   \
      if ((i == n - 1 || !SAME(mt_ld_##N(s + (i + 1) * sstride), v)) && run > best_len) \
        best = v, best_len = run, best_at = i;                                          \
    }                                                                                   \
    mt_st_##N((T *)mt__data(values) + voff, best);                                      \
    pos = ord[best_at * ostride];                                                       \
    break;                                                                              \
  }

mt_status mt__cpu_mode_lines(mt_tensor *values, mt_tensor *indices, const mt_tensor *sorted, const mt_tensor *order,
                             int dim) {
  int64_t lines = mt__numel(values), n = sorted->sizes[dim];
  int64_t sstride = sorted->strides[dim], ostride = order->strides[dim];
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
    int64_t pos = 0;
    switch (sorted->dtype) {
      MT_DTYPE_LIST(MODE_CASE)
      default: return mt__error(MT_ERR_DTYPE, "mode: unsupported dtype %s", mt_dtype_name(sorted->dtype));
    }
    ((int64_t *)mt__data(indices))[ioff] = pos;
  }
  return MT_OK;
}
