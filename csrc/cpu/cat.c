/* cat.c: CPU concatenation. Each input is copied into its slice of out (same dtype, so raw
 * element moves), through the iterator's row driver: contiguous runs become memcpy. */
#include <string.h>
#include "iter.h"
#include "../core/error.h"

#define COPY_ROW(T)                                                              \
  static void copy_##T(void *ctx, int64_t n, char *const *p, const int64_t *s) { \
    (void)ctx;                                                                   \
    T *d = (T *)p[0];                                                            \
    const T *src = (const T *)p[1];                                              \
    if (s[0] == 1 && s[1] == 1) memcpy(d, src, (size_t)n * sizeof(T));           \
    else                                                                         \
      for (int64_t e = 0; e < n; e++) d[e * s[0]] = src[e * s[1]];               \
  }
COPY_ROW(uint8_t)
COPY_ROW(uint16_t)
COPY_ROW(uint32_t)
COPY_ROW(uint64_t)
#undef COPY_ROW

/* The entry point passes only inputs that take part (legacy empty 1-d ones removed), each with
 * out's dtype and sizes except along dim; out is already sized and shares memory with none. */
mt_status mt__cpu_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim) {
  size_t es = mt__dtype_size(out->dtype);
  mt_iter_row fn = es == 1 ? copy_uint8_t : es == 2 ? copy_uint16_t : es == 4 ? copy_uint32_t : copy_uint64_t;
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    const mt_tensor *in = inputs[i];
    if (mt__numel(in) > 0) {
      char *b[2] = {mt__data(out) + at * out->strides[dim] * (int64_t)es, mt__data(in)};
      size_t esz[2] = {es, es};
      const int64_t *st[2] = {out->strides, in->strides};
      mt_iter it;
      MT_TRY(mt_iter_init_raw(&it, 2, b, esz, st, in->ndim, in->sizes, -1, MT_ITER_ROW_MAJOR));
      mt__iter_rows(&it, fn, NULL, 0);
    }
    at += in->sizes[dim];
  }
  return MT_OK;
}
