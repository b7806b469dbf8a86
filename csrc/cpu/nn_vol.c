/* nn_vol.c: the CPU loops of vol2col and col2vol (csrc/nn/vol.c). vol2col only moves elements, so
 * it runs on the element's bits (2, 4 or 8 bytes; a zero is all-zero bits in every floating
 * format); col2vol adds, in the dtype's compute type. Rows (c, kt, ky, kx) are independent in
 * vol2col and channels are in col2vol, so OpenMP splits those. The loops are written once, in
 * generic/nn_vol2col.c and generic/nn_col2vol.c. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* For a tap at offset off (k*dilation - pad) along a dimension of n inputs, stride d and o
 * outputs: the outputs lo <= i < hi whose input off + i*d lies inside [0, n). */
static void inside(int64_t off, int64_t d, int64_t n, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + d - 1) / d;
  int64_t h = off > n - 1 ? 0 : (n - 1 - off) / d + 1;
  if (h > o) h = o;
  if (l > h) l = h;
  *lo = l, *hi = h;
}

/* vol2col only moves elements: it is compiled for the integer dtypes of 2, 4 and 8 bytes, a
 * pass of generate.h each (no generate header lists just these) */
#include "generate.h"
#define MT_GENERIC_FILE "generic/nn_vol2col.c"
#define MT_GEN_N i16
#include "generate_one.h"
#define MT_GEN_N i32
#include "generate_one.h"
#define MT_GEN_N i64
#include "generate_one.h"
#undef MT_GENERIC_FILE

void mt__vol2col_rows(size_t esize, const void *x, void *col, const mt_vol_geom *g, int64_t q0, int64_t q1, int par) {
  switch (esize) {
    case 2: vol2col_i16((const int16_t *)x, (int16_t *)col, g, q0, q1, par); break;
    case 4: vol2col_i32((const int32_t *)x, (int32_t *)col, g, q0, q1, par); break;
    case 8: vol2col_i64((const int64_t *)x, (int64_t *)col, g, q0, q1, par); break;
    default: break;
  }
}

mt_status mt__cpu_vol2col(mt_tensor *colt, const mt_tensor *xt, const mt_vol_geom *g) {
  size_t es = mt_dtype_size(xt->dtype);
  if (es != 2 && es != 4 && es != 8)
    return mt__error(MT_ERR_DTYPE, "vol2col: dtype %s is not supported", mt_dtype_name(xt->dtype));
  mt__vol2col_rows(es, mt__data(xt), mt__data(colt), g, 0, g->oT * g->oH, 1);
  return MT_OK;
}

/* col2vol adds, per float dtype */
#define MT_GENERIC_FILE "generic/nn_col2vol.c"
#include "generate_float.h"

#define COL2VOL_CASE(E, N, T, CT) \
  case E: ok = col2vol_##N((const T *)mt__data(colt), (T *)mt__data(xt), g); break;
mt_status mt__cpu_col2vol(mt_tensor *xt, const mt_tensor *colt, const mt_vol_geom *g) {
  int ok;
  switch (colt->dtype) {
    MT_FLOAT_DTYPE_LIST(COL2VOL_CASE)
    default: return mt__error(MT_ERR_DTYPE, "col2vol: dtype %s is not supported", mt_dtype_name(colt->dtype));
  }
  if (!ok)
    return mt__error(MT_ERR_MEMORY, "col2vol: out of memory for a %lld-element volume",
                     (long long)(g->T * g->H * g->W));
  return MT_OK;
}
