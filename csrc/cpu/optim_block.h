/* optim_block.h: what the CPU optimizer steps share for mixed precision. A step walks the flat
 * vector in blocks of MT_OPT_BLOCK elements: the gradient's block is converted into the
 * master's compute type (times the step's gradient scale) on the stack, the update runs on it,
 * and the updated master values are rounded into the compute copy's block. One body per
 * master dtype serves every gradient dtype, and a plain step (gradient of the master's dtype,
 * scale 1, no copy) computes exactly what it did before blocks. */
#ifndef MT_CPU_OPTIM_BLOCK_H
#define MT_CPU_OPTIM_BLOCK_H
#include "../core/dtype.h"
#include "../core/tensor.h"

#define MT_OPT_BLOCK 1024
/* the number of blocks of [0, n), and the length of block bk */
#define MT_OPT_NBLOCKS(n) (((n) + MT_OPT_BLOCK - 1) / MT_OPT_BLOCK)
static inline int64_t mt__opt_block_len(int64_t n, int64_t bk) {
  int64_t r = n - bk * MT_OPT_BLOCK;
  return r < MT_OPT_BLOCK ? r : MT_OPT_BLOCK;
}

/* the loops for each storage dtype: mt__opt_load_float_f16 and so on */
#define MT_GENERIC_FILE "generic/optim_block.c"
#include "generate_float.h"

/* dst[j] = t[i0 + j] * s for j < m, t any floating dtype (checked by csrc/nn) */
#define MT__OPT_LOAD_CASE(E, N, T, TCT, CT) \
  case E: mt__opt_load_##CT##_##N(dst, (const T *)mt__data(t) + i0, m, s); break;
static inline void mt__opt_load_float(float *dst, const mt_tensor *t, int64_t i0, int64_t m, float s) {
  switch (t->dtype) {
    MT_FLOAT_DTYPE_LIST_X(MT__OPT_LOAD_CASE, float)
    default: break;
  }
}
static inline void mt__opt_load_double(double *dst, const mt_tensor *t, int64_t i0, int64_t m, double s) {
  switch (t->dtype) {
    MT_FLOAT_DTYPE_LIST_X(MT__OPT_LOAD_CASE, double)
    default: break;
  }
}

/* t[i0 + j] = src[j] rounded to t's dtype */
#define MT__OPT_STORE_CASE(E, N, T, TCT, CT) \
  case E: mt__opt_store_##CT##_##N((T *)mt__data(t) + i0, m, src); break;
static inline void mt__opt_store_float(mt_tensor *t, int64_t i0, int64_t m, const float *src) {
  switch (t->dtype) {
    MT_FLOAT_DTYPE_LIST_X(MT__OPT_STORE_CASE, float)
    default: break;
  }
}
static inline void mt__opt_store_double(mt_tensor *t, int64_t i0, int64_t m, const double *src) {
  switch (t->dtype) {
    MT_FLOAT_DTYPE_LIST_X(MT__OPT_STORE_CASE, double)
    default: break;
  }
}

/* the right one for a compute-type buffer: float for f32/f16/bf16 masters, double for f64 */
#define mt__opt_load(dst, t, i0, m, s) \
  _Generic((dst), float * : mt__opt_load_float, double * : mt__opt_load_double)(dst, t, i0, m, s)
#define mt__opt_store(t, i0, m, src) \
  _Generic((src), float * : mt__opt_store_float, double * : mt__opt_store_double)(t, i0, m, src)
#endif
