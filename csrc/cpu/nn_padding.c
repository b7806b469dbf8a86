/* nn_padding.c: the CPU loops of 2-d padding (csrc/nn/padding.c checks the arguments) over
 * contiguous NCHW planes, written once in generic/nn_padding.c and compiled per float dtype.
 * Forward copies each input row's middle in one memcpy and fills the borders through a column
 * table; backward adds each output row onto its source row in the compute type (zero padding:
 * rows of memcpy). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* source index of padded position o (before: the left / top pad) in a dimension of size n, or
 * -1 for a zero */
static inline int64_t pad_src(int64_t o, int64_t n, int64_t before, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == MT_PAD_ZERO) return -1;
  if (mode == MT_PAD_REFLECT) return i < 0 ? -i : 2 * (n - 1) - i;
  return i < 0 ? 0 : n - 1;
}

#define MT_GENERIC_FILE "generic/nn_padding.c"
#include "generate_float.h"

/* the column table of a padded row and the range [lo, hi) of columns read straight from the
 * input row; NULL when out of memory */
static int64_t *column_table(const mt_pool_geom *g, int mode, int64_t *lo, int64_t *hi) {
  int64_t W = g->W, oW = g->oW, left = g->pW;
  int64_t *col = (int64_t *)malloc((size_t)(oW > 0 ? oW : 1) * sizeof *col);
  if (!col) return NULL;
  for (int64_t o = 0; o < oW; o++) col[o] = pad_src(o, W, left, mode);
  *lo = left > 0 ? left : 0;
  *hi = oW - (oW - left - W > 0 ? oW - left - W : 0);
  return col;
}

#define PAD_CASE(E, N, T, CT) \
  case E: pad_rows_##N((const T *)mt__data(xt), (T *)mt__data(yt), col, g, mode, lo, hi); break;
MT_AVX2_CLONES mt_status mt__cpu_pad2d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_pool_geom *g, int mode) {
  int64_t lo, hi;
  int64_t *col = column_table(g, mode, &lo, &hi);
  if (!col) return mt__error(MT_ERR_MEMORY, "pad2d: out of memory for a column table");
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(PAD_CASE)
    default: free(col); return mt__error(MT_ERR_DTYPE, "pad2d: no padding loop for %s", mt_dtype_name(xt->dtype));
  }
  free(col);
  return MT_OK;
}

#define ZERO_PAD_BACKWARD_CASE(E, N, T, CT)                                 \
  case E:                                                                   \
    zero_pad_backward_##N((const T *)mt__data(dyt), (T *)mt__data(dxt), g); \
    break;
#define PAD_BACKWARD_CASE(E, N, T, CT) \
  case E: pad_backward_##N((const T *)mt__data(dyt), (T *)mt__data(dxt), buf, col, g, mode, lo, hi); break;
MT_AVX2_CLONES mt_status mt__cpu_pad2d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_pool_geom *g, int mode) {
  if (mode == MT_PAD_ZERO) {
    switch (dxt->dtype) {
      MT_FLOAT_DTYPE_LIST(ZERO_PAD_BACKWARD_CASE)
      default: break;
    }
    return MT_OK;
  }
  int64_t lo, hi;
  int64_t *col = column_table(g, mode, &lo, &hi);
  void *buf = malloc((size_t)omp_get_max_threads() * g->H * g->W * sizeof(double)); /* a plane per thread */
  if (!col || !buf) {
    free(col), free(buf);
    return mt__error(MT_ERR_MEMORY, "pad2d: out of memory for the backward buffers");
  }
  switch (dxt->dtype) {
    MT_FLOAT_DTYPE_LIST(PAD_BACKWARD_CASE)
    default: break;
  }
  free(col), free(buf);
  return MT_OK;
}
