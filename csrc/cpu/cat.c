/* cat.c: CPU concatenation. Each input is copied into its slice of out (same dtype, so raw
 * element moves), through the iterator's row driver: contiguous runs become memcpy. */
#include <string.h>
#include "iter.h"
#include "../core/error.h"
#include "generate.h"

/* the copy of a row, written once in generic/cat.c for each element size: copies are raw moves
 * (same dtype), so one dtype of each size does */
#define MT_GENERIC_FILE "generic/cat.c"
#define MT_GEN_N u8
#include "generate_one.h"
#define MT_GEN_N i16
#include "generate_one.h"
#define MT_GEN_N i32
#include "generate_one.h"
#define MT_GEN_N i64
#include "generate_one.h"
#undef MT_GENERIC_FILE

/* The entry point passes only inputs that take part (legacy empty 1-d ones removed), each with
 * out's dtype and sizes except along dim; out is already sized and shares memory with none. */
mt_status mt__cpu_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim) {
  size_t es = mt__dtype_size(out->dtype);
  mt_iter_row fn = es == 1 ? copy_row_u8 : es == 2 ? copy_row_i16 : es == 4 ? copy_row_i32 : copy_row_i64;
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
