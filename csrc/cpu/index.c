/* index.c: CPU index_select, index_add, index_fill, gather and scatter.
 *
 * All five are one of two shapes over an iteration (iter.h: mt_iter_init_raw and
 * mt__iter_rows) with three operands:
 *   gather:  dst[p] = src[p' + (idx[p] - base) * kstride]       (index_select: idx repeats along rows)
 *   scatter: dst[p' + (idx[p] - base) * kstride] (=, +=) src[p]  (index_add/index_fill likewise)
 * where the indexed operand has stride 0 along the indexed dim and kstride is its real stride
 * there. Indices are validated in a separate pass before anything is written, so a bad index
 * leaves the destination untouched. Copies move raw elements by size; index_add computes per dtype. */
#include <string.h>
#include "iter.h"
#include "../core/dtype.h"
#include "../core/error.h"

typedef struct idx_ctx {
  int64_t base, kstride;
  double alpha;
  uint64_t bits; /* fill value, already in the destination's storage format */
  /* bounds check */
  int64_t lo, hi;
  int found;
  int64_t bad;
} idx_ctx;

/* ---- bounds check ---- */

#define CHECK_ROWS(I)                                                                                \
  static void any_bad_##I(void *vc, int64_t n, char *const *p, const int64_t *s) {                   \
    idx_ctx *c = vc;                                                                                 \
    const I *ix = (const I *)p[0];                                                                   \
    int64_t lo = c->lo, hi = c->hi, st = s[0];                                                       \
    int bad = 0;                                                                                     \
    for (int64_t e = 0; e < n; e++) bad |= ((int64_t)ix[e * st] < lo) | ((int64_t)ix[e * st] >= hi); \
    if (bad) { _Pragma("omp atomic write") c->found = 1; }                                           \
  }                                                                                                  \
  static void first_bad_##I(void *vc, int64_t n, char *const *p, const int64_t *s) {                 \
    idx_ctx *c = vc;                                                                                 \
    if (c->found) return;                                                                            \
    const I *ix = (const I *)p[0];                                                                   \
    for (int64_t e = 0; e < n; e++) {                                                                \
      int64_t v = ix[e * s[0]];                                                                      \
      if (v < c->lo || v >= c->hi) {                                                                 \
        c->found = 1, c->bad = v;                                                                    \
        return;                                                                                      \
      }                                                                                              \
    }                                                                                                \
  }
CHECK_ROWS(int32_t)
CHECK_ROWS(int64_t)
#undef CHECK_ROWS

/* Every value of index (any shape) must lie in [base, base + size): a parallel scan, then a
 * serial one to name the first offender in row-major order. */
static mt_status check_indices(const char *op, const mt_tensor *index, int dim, int64_t size, int64_t base) {
  mt_iter it;
  char *b[1] = {mt__data(index)};
  size_t es[1] = {mt__dtype_size(index->dtype)};
  const int64_t *st[1] = {index->strides};
  MT_TRY(mt_iter_init_raw(&it, 1, b, es, st, index->ndim, index->sizes, -1, MT_ITER_ROW_MAJOR));
  idx_ctx c = {.lo = base, .hi = base + size};
  int i64 = index->dtype == MT_I64;
  mt__iter_rows(&it, i64 ? any_bad_int64_t : any_bad_int32_t, &c, 0);
  if (!c.found) return MT_OK;
  c.found = 0;
  mt__iter_rows(&it, i64 ? first_bad_int64_t : first_bad_int32_t, &c, MT_ITER_SERIAL);
  return mt__error(MT_ERR_INDEX, "%s: index %lld out of range for dimension %d of size %lld", op, (long long)c.bad,
                   dim + 1, (long long)size);
}

/* ---- row kernels: raw element moves, by element size (T) and index type (I) ---- */

#define MOVE_ROWS(T, I)                                                                        \
  static void gather_##T##_##I(void *vc, int64_t n, char *const *p, const int64_t *s) {        \
    const idx_ctx *c = vc;                                                                     \
    T *d = (T *)p[0];                                                                          \
    const T *src = (const T *)p[1];                                                            \
    const I *ix = (const I *)p[2];                                                             \
    int64_t ds = s[0], ss = s[1], is = s[2], ks = c->kstride, b = c->base;                     \
    if (is == 0) { /* one index for the whole row (index_select) */                            \
      const T *row = src + ((int64_t)ix[0] - b) * ks;                                          \
      if (ds == 1 && ss == 1) memcpy(d, row, (size_t)n * sizeof(T));                           \
      else                                                                                     \
        for (int64_t e = 0; e < n; e++) d[e * ds] = row[e * ss];                               \
      return;                                                                                  \
    }                                                                                          \
    if (ds == 1 && is == 1 && ss == 0 && ks == 1) { /* dense rows (gather's common case): with \
                                                       strides known, a tight loop */          \
      for (int64_t e = 0; e < n; e++) d[e] = src[(int64_t)ix[e] - b];                          \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t e = 0; e < n; e++) d[e * ds] = src[e * ss + ((int64_t)ix[e * is] - b) * ks];  \
  }                                                                                            \
  static void scatter_##T##_##I(void *vc, int64_t n, char *const *p, const int64_t *s) {       \
    const idx_ctx *c = vc;                                                                     \
    T *d = (T *)p[0];                                                                          \
    const T *src = (const T *)p[1];                                                            \
    const I *ix = (const I *)p[2];                                                             \
    int64_t ds = s[0], ss = s[1], is = s[2], ks = c->kstride, b = c->base;                     \
    if (is == 0) {                                                                             \
      T *row = d + ((int64_t)ix[0] - b) * ks;                                                  \
      if (ds == 1 && ss == 1) memcpy(row, src, (size_t)n * sizeof(T));                         \
      else                                                                                     \
        for (int64_t e = 0; e < n; e++) row[e * ds] = src[e * ss];                             \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t e = 0; e < n; e++) d[e * ds + ((int64_t)ix[e * is] - b) * ks] = src[e * ss];  \
  }                                                                                            \
  static void fill_##T##_##I(void *vc, int64_t n, char *const *p, const int64_t *s) {          \
    const idx_ctx *c = vc;                                                                     \
    T *d = (T *)p[0], v;                                                                       \
    memcpy(&v, &c->bits, sizeof v);                                                            \
    const I *ix = (const I *)p[1];                                                             \
    int64_t ds = s[0], is = s[1], ks = c->kstride, b = c->base;                                \
    if (is == 0) {                                                                             \
      T *row = d + ((int64_t)ix[0] - b) * ks;                                                  \
      for (int64_t e = 0; e < n; e++) row[e * ds] = v;                                         \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t e = 0; e < n; e++) d[e * ds + ((int64_t)ix[e * is] - b) * ks] = v;            \
  }
#define MOVE_SIZES(I) MOVE_ROWS(uint8_t, I) MOVE_ROWS(uint16_t, I) MOVE_ROWS(uint32_t, I) MOVE_ROWS(uint64_t, I)
MOVE_SIZES(int32_t)
MOVE_SIZES(int64_t)
#undef MOVE_SIZES
#undef MOVE_ROWS

/* [element size log2][index is i64] */
#define MOVE_TABLE(K)                                                                      \
  static const mt_iter_row K##_rows[4][2] = {{K##_uint8_t_int32_t, K##_uint8_t_int64_t},   \
                                             {K##_uint16_t_int32_t, K##_uint16_t_int64_t}, \
                                             {K##_uint32_t_int32_t, K##_uint32_t_int64_t}, \
                                             {K##_uint64_t_int32_t, K##_uint64_t_int64_t}};
MOVE_TABLE(gather)
MOVE_TABLE(scatter)
MOVE_TABLE(fill)
#undef MOVE_TABLE

static int size_slot(int dtype) {
  size_t es = mt__dtype_size(dtype);
  return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
}

/* ---- index_add: dst[...] += alpha * src[...], computed per dtype ---- */

#define ADD_FLOAT(x, a, y) ((x) + (a) * (y))
/* integers wrap (unsigned arithmetic) instead of overflowing */
#define ADD_INT(x, a, y) ((int64_t)((uint64_t)(x) + (uint64_t)(a) * (uint64_t)(y)))

#define ADD_ROW(N, T, CT, I, ADD, ALPHA)                                             \
  static void add_##N##_##I(void *vc, int64_t n, char *const *p, const int64_t *s) { \
    const idx_ctx *c = vc;                                                           \
    T *d = (T *)p[0];                                                                \
    const T *src = (const T *)p[1];                                                  \
    const I *ix = (const I *)p[2];                                                   \
    int64_t ds = s[0], ss = s[1], is = s[2], ks = c->kstride, b = c->base;           \
    CT al = ALPHA(c->alpha);                                                         \
    for (int64_t e = 0; e < n; e++) {                                                \
      T *q = d + e * ds + ((int64_t)ix[e * is] - b) * ks;                            \
      mt_st_##N(q, ADD(mt_ld_##N(q), al, mt_ld_##N(src + e * ss)));                  \
    }                                                                                \
  }
#define F_ALPHA(a) (a)
#define I_ALPHA(a) mt_double_to_i64(a)
/* every dtype of MT_DTYPES: floats add in their compute type, integers wrap */
#define ADD_ROW_DT(E, N, T, CT, NAME, TORCH, ST, FL, I, ...) ADD_ROW(N, T, CT, I, ADD_KIND_##FL, ALPHA_KIND_##FL)
#define ADD_KIND_1 ADD_FLOAT
#define ADD_KIND_0 ADD_INT
#define ALPHA_KIND_1 F_ALPHA
#define ALPHA_KIND_0 I_ALPHA
MT_DTYPES(ADD_ROW_DT, int32_t)
MT_DTYPES(ADD_ROW_DT, int64_t)
#undef ADD_ROW

#define ADD_ENT(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = {add_##N##_int32_t, add_##N##_int64_t},
static const mt_iter_row add_rows[][2] = {MT_DTYPES(ADD_ENT, ~)};
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
  idx_ctx c = {.base = base, .kstride = src->strides[dim]};
  return run3(gather_rows[size_slot(out->dtype)][index->dtype == MT_I64], &c, 0, nd, out->sizes, dim, out, src, index,
              st);
}

mt_status mt__cpu_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) {
  MT_TRY(check_indices("gather", index, dim, src->sizes[dim], base));
  int nd = index->ndim;
  int64_t st[3][MT_MAX_DIMS];
  memcpy(st[0], out->strides, sizeof st[0]);
  indexed_strides(src, nd, dim, st[1]);
  memcpy(st[2], index->strides, sizeof st[2]);
  idx_ctx c = {.base = base, .kstride = src->strides[dim]};
  return run3(gather_rows[size_slot(out->dtype)][index->dtype == MT_I64], &c, 0, nd, index->sizes, dim, out, src, index,
              st);
}

mt_status mt__cpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v, int64_t base) {
  MT_TRY(check_indices(src ? "scatter" : "scatter_fill", index, dim, t->sizes[dim], base));
  int nd = index->ndim, i64 = index->dtype == MT_I64;
  int64_t st[3][MT_MAX_DIMS];
  indexed_strides(t, nd, dim, st[0]);
  idx_ctx c = {.base = base, .kstride = t->strides[dim]};
  if (src) {
    memcpy(st[1], src->strides, sizeof st[1]);
    memcpy(st[2], index->strides, sizeof st[2]);
    return run3(scatter_rows[size_slot(t->dtype)][i64], &c, MT_ITER_EXCLUSIVE, nd, index->sizes, dim, t, src, index,
                st);
  }
  c.bits = value_bits(t->dtype, v);
  memcpy(st[1], index->strides, sizeof st[1]);
  const mt_tensor *ts[2] = {t, index};
  return run_rows(fill_rows[size_slot(t->dtype)][i64], &c, MT_ITER_EXCLUSIVE, nd, index->sizes, dim, 2, ts, st);
}

mt_status mt__cpu_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                            int64_t base) {
  MT_TRY(check_indices("index_add", index, dim, t->sizes[dim], base));
  int nd = src->ndim;
  int64_t st[3][MT_MAX_DIMS];
  indexed_strides(t, nd, dim, st[0]);
  memcpy(st[1], src->strides, sizeof st[1]);
  index_strides_1d(index, nd, dim, st[2]);
  idx_ctx c = {.base = base, .kstride = t->strides[dim], .alpha = alpha};
  return run3(add_rows[t->dtype][index->dtype == MT_I64], &c, MT_ITER_EXCLUSIVE, nd, src->sizes, dim, t, src, index,
              st);
}

mt_status mt__cpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) {
  MT_TRY(check_indices("index_fill", index, dim, t->sizes[dim], base));
  int nd = t->ndim;
  int64_t sizes[MT_MAX_DIMS], st[2][MT_MAX_DIMS];
  memcpy(sizes, t->sizes, sizeof sizes);
  sizes[dim] = mt__numel(index);
  indexed_strides(t, nd, dim, st[0]);
  index_strides_1d(index, nd, dim, st[1]);
  idx_ctx c = {.base = base, .kstride = t->strides[dim], .bits = value_bits(t->dtype, v)};
  const mt_tensor *ts[2] = {t, index};
  return run_rows(fill_rows[size_slot(t->dtype)][index->dtype == MT_I64], &c, MT_ITER_EXCLUSIVE, nd, sizes, dim, 2, ts,
                  st);
}
