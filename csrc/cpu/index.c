/* index.c: CPU index_select, index_add, index_fill, gather and scatter.
 *
 * All five are one of two shapes over an iteration (iter.h: mt_iter_init_raw and
 * mt__iter_rows) with three operands:
 *   gather:  dst[p] = src[p' + (idx[p] - base) * kstride]       (index_select: idx repeats along rows)
 *   scatter: dst[p' + (idx[p] - base) * kstride] (=, +=) src[p]  (index_add/index_fill likewise)
 * where the indexed operand has stride 0 along the indexed dim and kstride is its real stride
 * there. Indices are validated in a separate pass before anything is written, so a bad index
 * leaves the destination untouched. Copies move raw elements by size (generic/index.c);
 * index_add computes per dtype (generic/index_add.c). */
#include <string.h>
#include "iter.h"
#include "pointwise.h"
#include "../core/dtype.h"
#include "../core/error.h"

typedef struct idx_ctx {
  int64_t base, kstride;
  int index64; /* the indices are int64 (else int32) */
  double alpha;
  uint64_t bits; /* fill value, already in the destination's storage format */
  /* bounds check */
  int64_t lo, hi;
  int found;
  int64_t bad;
} idx_ctx;

/* index element e of a row of int64 (index64) or int32 indices from p on */
MT_ALWAYS_INLINE int64_t index_at(const char *p, int64_t e, int index64) {
  return index64 ? ((const int64_t *)p)[e] : (int64_t)((const int32_t *)p)[e];
}

/* ---- bounds check ---- */

/* set found when a row of indices (n of them, stride elements apart) has one outside [lo, hi) */
MT_ALWAYS_INLINE void any_bad_row(idx_ctx *c, int64_t n, const char *index, int64_t stride, int index64) {
  int64_t lo = c->lo, hi = c->hi;
  int bad = 0;
  for (int64_t e = 0; e < n; e++) {
    int64_t v = index_at(index, e * stride, index64);
    bad |= (v < lo) | (v >= hi);
  }
  if (bad) {
#pragma omp atomic write
    c->found = 1;
  }
}
static void any_bad(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  idx_ctx *c = ctx;
  if (c->index64) any_bad_row(c, n, p[0], s[0], 1);
  else any_bad_row(c, n, p[0], s[0], 0);
}

/* the first index outside [lo, hi) into bad, unless one was found before */
MT_ALWAYS_INLINE void first_bad_row(idx_ctx *c, int64_t n, const char *index, int64_t stride, int index64) {
  if (c->found) return;
  for (int64_t e = 0; e < n; e++) {
    int64_t v = index_at(index, e * stride, index64);
    if (v < c->lo || v >= c->hi) {
      c->found = 1, c->bad = v;
      return;
    }
  }
}
static void first_bad(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  idx_ctx *c = ctx;
  if (c->index64) first_bad_row(c, n, p[0], s[0], 1);
  else first_bad_row(c, n, p[0], s[0], 0);
}

/* Every value of index (any shape) must lie in [base, base + size): a parallel scan, then a
 * serial one to name the first offender in row-major order. */
static mt_status check_indices(const char *op, const mt_tensor *index, int dim, int64_t size, int64_t base) {
  mt_iter it;
  char *b[1] = {mt__data(index)};
  size_t es[1] = {mt__dtype_size(index->dtype)};
  const int64_t *st[1] = {index->strides};
  MT_TRY(mt_iter_init_raw(&it, 1, b, es, st, index->ndim, index->sizes, -1, MT_ITER_ROW_MAJOR));
  idx_ctx c = {.lo = base, .hi = base + size, .index64 = index->dtype == MT_I64};
  mt__iter_rows(&it, any_bad, &c, 0);
  if (!c.found) return MT_OK;
  c.found = 0;
  mt__iter_rows(&it, first_bad, &c, MT_ITER_SERIAL);
  return mt__error(MT_ERR_INDEX, "%s: index %lld out of range for dimension %d of size %lld", op, (long long)c.bad,
                   dim + 1, (long long)size);
}

/* ---- row kernels: raw element moves by element width (generic/index.c), index_add per
 * dtype (generic/index_add.c) ---- */

#define MT_GENERIC_FILE "generic/index.c"
#include "generate_raw.h"

/* by element size: 1, 2, 4, 8 bytes */
static const mt_iter_row gather_rows[4] = {gather_rows8, gather_rows16, gather_rows32, gather_rows64};
static const mt_iter_row scatter_rows[4] = {scatter_rows8, scatter_rows16, scatter_rows32, scatter_rows64};
static const mt_iter_row fill_rows[4] = {fill_rows8, fill_rows16, fill_rows32, fill_rows64};

static int size_slot(int dtype) {
  size_t es = mt__dtype_size(dtype);
  return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
}

#define MT_GENERIC_FILE "generic/index_add.c"
#include "generate_all.h"

#define ADD_ENT(E, N, T, CT) [E] = add_rows_##N,
static const mt_iter_row add_rows[] = {MT_DTYPE_LIST(ADD_ENT)};
_Static_assert(sizeof add_rows / sizeof add_rows[0] == MT_NUM_DTYPES, "add_rows: one row per dtype");

/* ---- building iterations ---- */

/* strides of a 1-d index repeated over a shape: 0 everywhere except along dim */
static void index_strides_1d(const mt_tensor *index, int ndim, int dim, int64_t *st) {
  for (int i = 0; i < ndim; i++) st[i] = 0;
  st[dim] = index->ndim ? index->strides[0] : 0;
}

/* t's strides with the indexed dim zeroed (its offset comes from the index value) */
static void indexed_strides(const mt_tensor *t, int ndim, int dim, int64_t *st) {
  memcpy(st, t->strides, (size_t)ndim * sizeof *st);
  st[dim] = 0;
}

/* operands t0..t{n-1} with element strides st[k] over (ndim, sizes), keeping dim unmerged */
static mt_status run_rows(mt_iter_row fn, idx_ctx *c, int flags, int ndim, const int64_t *sizes, int dim, int n,
                          const mt_tensor *const *ts, int64_t (*st)[MT_MAX_DIMS]) {
  mt_iter it;
  char *b[3];
  size_t es[3];
  const int64_t *sp[3];
  for (int k = 0; k < n; k++) b[k] = mt__data(ts[k]), es[k] = mt__dtype_size(ts[k]->dtype), sp[k] = st[k];
  MT_TRY(mt_iter_init_raw(&it, n, b, es, sp, ndim, sizes, dim, MT_ITER_ROW_MAJOR));
  mt__iter_rows(&it, fn, c, flags);
  return MT_OK;
}

static mt_status run3(mt_iter_row fn, idx_ctx *c, int flags, int ndim, const int64_t *sizes, int dim,
                      const mt_tensor *t0, const mt_tensor *t1, const mt_tensor *t2, int64_t (*st)[MT_MAX_DIMS]) {
  const mt_tensor *ts[3] = {t0, t1, t2};
  return run_rows(fn, c, flags, ndim, sizes, dim, 3, ts, st);
}

/* the fill value in t's storage format */
static uint64_t value_bits(int dtype, double v) {
  uint64_t bits = 0;
  void *p = &bits;
  if (!mt_dtype_is_floating(dtype)) {
    int64_t i = mt_double_to_i64(v);
    switch (dtype) {
#define INT_BITS(E, N, T, CT) \
  case E: mt_st_##N((T *)p, i); break;
      MT_DTYPE_LIST(INT_BITS)
#undef INT_BITS
      default: break;
    }
    return bits;
  }
  switch (dtype) {
#define FLOAT_BITS(E, N, T, CT) \
  case E: mt_st_##N((T *)p, v); break;
    MT_FLOAT_DTYPE_LIST(FLOAT_BITS)
#undef FLOAT_BITS
    default: break;
  }
  return bits;
}

/* ---- backend entry points ---- */

mt_status mt__cpu_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) {
  MT_TRY(check_indices("index_select", index, dim, src->sizes[dim], base));
  int nd = out->ndim;
  int64_t st[3][MT_MAX_DIMS];
  memcpy(st[0], out->strides, sizeof st[0]);
  indexed_strides(src, nd, dim, st[1]);
  index_strides_1d(index, nd, dim, st[2]);
  idx_ctx c = {.base = base, .kstride = src->strides[dim], .index64 = index->dtype == MT_I64};
  return run3(gather_rows[size_slot(out->dtype)], &c, 0, nd, out->sizes, dim, out, src, index, st);
}

mt_status mt__cpu_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) {
  MT_TRY(check_indices("gather", index, dim, src->sizes[dim], base));
  int nd = index->ndim;
  int64_t st[3][MT_MAX_DIMS];
  memcpy(st[0], out->strides, sizeof st[0]);
  indexed_strides(src, nd, dim, st[1]);
  memcpy(st[2], index->strides, sizeof st[2]);
  idx_ctx c = {.base = base, .kstride = src->strides[dim], .index64 = index->dtype == MT_I64};
  return run3(gather_rows[size_slot(out->dtype)], &c, 0, nd, index->sizes, dim, out, src, index, st);
}

mt_status mt__cpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v, int64_t base) {
  MT_TRY(check_indices(src ? "scatter" : "scatter_fill", index, dim, t->sizes[dim], base));
  int nd = index->ndim;
  int64_t st[3][MT_MAX_DIMS];
  indexed_strides(t, nd, dim, st[0]);
  idx_ctx c = {.base = base, .kstride = t->strides[dim], .index64 = index->dtype == MT_I64};
  if (src) {
    memcpy(st[1], src->strides, sizeof st[1]);
    memcpy(st[2], index->strides, sizeof st[2]);
    return run3(scatter_rows[size_slot(t->dtype)], &c, MT_ITER_EXCLUSIVE, nd, index->sizes, dim, t, src, index, st);
  }
  c.bits = value_bits(t->dtype, v);
  memcpy(st[1], index->strides, sizeof st[1]);
  const mt_tensor *ts[2] = {t, index};
  return run_rows(fill_rows[size_slot(t->dtype)], &c, MT_ITER_EXCLUSIVE, nd, index->sizes, dim, 2, ts, st);
}

mt_status mt__cpu_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                            int64_t base) {
  MT_TRY(check_indices("index_add", index, dim, t->sizes[dim], base));
  int nd = src->ndim;
  int64_t st[3][MT_MAX_DIMS];
  indexed_strides(t, nd, dim, st[0]);
  memcpy(st[1], src->strides, sizeof st[1]);
  index_strides_1d(index, nd, dim, st[2]);
  idx_ctx c = {.base = base, .kstride = t->strides[dim], .index64 = index->dtype == MT_I64, .alpha = alpha};
  return run3(add_rows[t->dtype], &c, MT_ITER_EXCLUSIVE, nd, src->sizes, dim, t, src, index, st);
}

mt_status mt__cpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) {
  MT_TRY(check_indices("index_fill", index, dim, t->sizes[dim], base));
  int nd = t->ndim;
  int64_t sizes[MT_MAX_DIMS], st[2][MT_MAX_DIMS];
  memcpy(sizes, t->sizes, sizeof sizes);
  sizes[dim] = mt__numel(index);
  indexed_strides(t, nd, dim, st[0]);
  index_strides_1d(index, nd, dim, st[1]);
  idx_ctx c = {
      .base = base, .kstride = t->strides[dim], .index64 = index->dtype == MT_I64, .bits = value_bits(t->dtype, v)};
  const mt_tensor *ts[2] = {t, index};
  return run_rows(fill_rows[size_slot(t->dtype)], &c, MT_ITER_EXCLUSIVE, nd, sizes, dim, 2, ts, st);
}
