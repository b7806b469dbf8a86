/* iter.h: the CPU's one strided N-d iterator, over up to MT_ITER_MAX_OPS operands of one shape.
 *
 * Usage (operands already have identical sizes; inputs may carry 0 strides from expand):
 *
 *   mt_iter it;
 *   const mt_tensor *ops[3] = {out, a, b};
 *   mt_iter_init(&it, 3, ops, 0);
 *   MT_ITER_RUNS(&it, n, p, s, {
 *     // one run of n elements: operand k starts at byte address p[k] and steps s[k] bytes
 *     for (int64_t i = 0; i < n; i++) ... *(float *)(p[0] + i * s[0]) ...
 *   });
 *
 * What init does:
 *  - drops size-1 dimensions and stores the rest innermost first;
 *  - unless MT_ITER_ROW_MAJOR is given, orders dimensions by operand 0's strides (smallest
 *    innermost), so an in-place op on a transposed tensor walks memory in order. Pass
 *    MT_ITER_ROW_MAJOR when the visiting order matters (masked_select, arange, random, indexing);
 *  - merges neighbouring dimensions that are contiguous with each other in every operand, so
 *    a contiguous (or uniformly strided) problem becomes one long run and the body's inner loop
 *    is a plain vectorisable loop.
 * MT_ITER_RUNS splits the flat element range [0, numel) into one chunk per OpenMP thread when
 * numel > MT_PARALLEL_GRAIN (a chunk may start in the middle of a row, so even a single long
 * run is shared), and calls the body once per run. Strides are in bytes so operands may have
 * different dtypes (comparisons write u8, copy converts).
 *
 * The indexing ops (gather/scatter/index_*, cat) describe operands by hand (mt_iter_init_raw:
 * a base, an element size and strides each, so an indexed operand can have stride 0 along the
 * indexed dim), keep that dim unmerged, and run a row callback with mt_iter_rows, whose
 * MT_ITER_EXCLUSIVE mode gives all updates of one destination element to one thread, in index
 * order: scatter and index_add are deterministic and race-free.
 */
#ifndef MT_CPU_ITER_H
#define MT_CPU_ITER_H
#include <string.h>
#include "../core/error.h"
#include "cpu.h"

#define MT_ITER_MAX_OPS 4
#define MT_ITER_ROW_MAJOR 1

typedef struct mt_iter {
  int nops;
  int ndim; /* >= 1 after init */
  int keep; /* position of the kept dim (init_raw), or -1 */
  int64_t numel;
  int64_t sizes[MT_MAX_DIMS];                    /* sizes[0] is the innermost dimension */
  int64_t strides[MT_MAX_DIMS][MT_ITER_MAX_OPS]; /* bytes; strides[d][k] for operand k */
  char *data[MT_ITER_MAX_OPS];                   /* address of element 0 of each operand */
  size_t esize[MT_ITER_MAX_OPS];                 /* element size of each operand */
} mt_iter;

/* Set up `it` over an iteration shape (ndim, sizes): operand k starts at base[k], has elements
 * of esize[k] bytes and strides[k][d] (in elements; 0 repeats an element) along dim d. `keep`
 * is a dim never merged with its neighbours (-1: none). */
static inline mt_status mt_iter_init_raw(mt_iter *it, int nops, char *const *base, const size_t *esize,
                                         const int64_t *const *strides, int ndim, const int64_t *sizes, int keep,
                                         int flags) {
  if (nops < 1 || nops > MT_ITER_MAX_OPS) return mt__error(MT_ERR_INTERNAL, "iter: %d operands", nops);
  memset(it, 0, sizeof *it);
  it->nops = nops;
  it->keep = -1;
  it->numel = 1;
  for (int k = 0; k < nops; k++) it->data[k] = base[k], it->esize[k] = esize[k];

  /* dims (outer index in the tensor) listed innermost first, size-1 dims dropped (a size-1 kept
   * dim addresses one element: nothing there can collide) */
  int dims[MT_MAX_DIMS], nd = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    it->numel *= sizes[d];
    if (sizes[d] != 1) dims[nd++] = d;
  }
  if (!(flags & MT_ITER_ROW_MAJOR)) {
    /* stable insertion sort by |stride of operand 0|, smallest first */
    for (int i = 1; i < nd; i++) {
      int d = dims[i], j = i;
      int64_t sd = strides[0][d] < 0 ? -strides[0][d] : strides[0][d];
      while (j > 0) {
        int64_t sp = strides[0][dims[j - 1]];
        if (sp < 0) sp = -sp;
        if (sp <= sd) break;
        dims[j] = dims[j - 1];
        j--;
      }
      dims[j] = d;
    }
  }

  int n = 0;
  for (int i = 0; i < nd; i++) {
    int d = dims[i];
    if (n > 0 && d != keep && n - 1 != it->keep) {
      /* merge d into the current innermost-so-far dim n-1 when every operand steps over it
       * exactly as if the two were one dimension */
      int merge = 1;
      for (int k = 0; k < nops && merge; k++)
        merge = strides[k][d] * (int64_t)esize[k] == it->strides[n - 1][k] * it->sizes[n - 1];
      if (merge) {
        it->sizes[n - 1] *= sizes[d];
        continue;
      }
    }
    it->sizes[n] = sizes[d];
    for (int k = 0; k < nops; k++) it->strides[n][k] = strides[k][d] * (int64_t)esize[k];
    if (d == keep) it->keep = n;
    n++;
  }
  if (n == 0) { /* a scalar or all size-1: one run of one element */
    it->sizes[0] = 1;
    n = 1;
  }
  it->ndim = n;
  return MT_OK;
}

/* Set up `it` over tensors ops[0..nops). Every operand must have ops[0]'s sizes (the entry
 * points broadcast beforehand); a mismatch is a caller bug reported as MT_ERR_INTERNAL. */
static inline mt_status mt_iter_init(mt_iter *it, int nops, const mt_tensor *const *ops, int flags) {
  if (nops < 1 || nops > MT_ITER_MAX_OPS) return mt__error(MT_ERR_INTERNAL, "iter: %d operands", nops);
  const mt_tensor *t0 = ops[0];
  char *base[MT_ITER_MAX_OPS];
  size_t esize[MT_ITER_MAX_OPS];
  const int64_t *strides[MT_ITER_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    if (ops[k]->ndim != t0->ndim || memcmp(ops[k]->sizes, t0->sizes, (size_t)t0->ndim * sizeof(int64_t)))
      return mt__error(MT_ERR_INTERNAL, "iter: operand %d has a different shape from operand 0", k);
    base[k] = mt__data(ops[k]);
    esize[k] = mt__dtype_size(ops[k]->dtype);
    strides[k] = ops[k]->strides;
  }
  return mt_iter_init_raw(it, nops, base, esize, strides, t0->ndim, t0->sizes, -1, flags);
}

/* Place a cursor (idx, p) at flat position pos of the iteration order. */
static inline void mt_iter_seek(const mt_iter *it, int64_t pos, int64_t *idx, char **p) {
  for (int k = 0; k < it->nops; k++) p[k] = it->data[k];
  for (int d = 0; d < it->ndim; d++) {
    idx[d] = pos % it->sizes[d];
    pos /= it->sizes[d];
    for (int k = 0; k < it->nops; k++) p[k] += idx[d] * it->strides[d][k];
  }
}

/* Move the cursor n elements on along the innermost dimension (n never crosses the end of the
 * innermost row), carrying into outer dimensions when the row is finished. */
static inline void mt_iter_advance(const mt_iter *it, int64_t *idx, char **p, int64_t n) {
  idx[0] += n;
  for (int k = 0; k < it->nops; k++) p[k] += n * it->strides[0][k];
  for (int d = 0; d < it->ndim - 1 && idx[d] == it->sizes[d]; d++) {
    idx[d] = 0;
    idx[d + 1]++;
    for (int k = 0; k < it->nops; k++) p[k] += it->strides[d + 1][k] - it->sizes[d] * it->strides[d][k];
  }
}

/* How many chunks to split numel elements into: one per thread above the grain, else one.
 * Inside an enclosing parallel region, stay serial. */
static inline int mt_iter_nchunks(int64_t numel) {
#ifdef _OPENMP
  if (numel > MT_PARALLEL_GRAIN && !omp_in_parallel()) {
    int t = omp_get_max_threads();
    int64_t most = numel / (MT_PARALLEL_GRAIN / 4); /* keep chunks worth a thread's start-up */
    return (int)(t < most ? t : most);
  }
#endif
  (void)numel;
  return 1;
}

/* Run the body over elements [begin, end) of the iteration order. */
#define MT__ITER_CHUNK(it_, begin_, end_, n, p, s, ...)         \
  do {                                                          \
    int64_t idx_[MT_MAX_DIMS], pos_ = (begin_), stop_ = (end_); \
    char *p[MT_ITER_MAX_OPS];                                   \
    const int64_t *const s = (it_)->strides[0];                 \
    mt_iter_seek((it_), pos_, idx_, p);                         \
    while (pos_ < stop_) {                                      \
      int64_t n = (it_)->sizes[0] - idx_[0];                    \
      if (n > stop_ - pos_) n = stop_ - pos_;                   \
      __VA_ARGS__                                               \
      pos_ += n;                                                \
      if (pos_ < stop_) mt_iter_advance((it_), idx_, p, n);     \
    }                                                           \
  } while (0)

/* Call the body once per run; see the top of this file. The body is a statement (usually a
 * braced block) that sees `n` (run length), `p[k]` (char *) and `s[k]` (byte strides). */
#define MT_ITER_RUNS(it, n, p, s, ...)                                                                        \
  do {                                                                                                        \
    const mt_iter *it_r_ = (it);                                                                              \
    int64_t total_r_ = it_r_->numel;                                                                          \
    int nch_r_ = mt_iter_nchunks(total_r_);                                                                   \
    if (nch_r_ <= 1) {                                                                                        \
      MT__ITER_CHUNK(it_r_, 0, total_r_, n, p, s, __VA_ARGS__);                                               \
    } else {                                                                                                  \
      _Pragma("omp parallel for schedule(static)") for (int c_r_ = 0; c_r_ < nch_r_; c_r_++) {                \
        MT__ITER_CHUNK(it_r_, total_r_ *c_r_ / nch_r_, total_r_ * (c_r_ + 1) / nch_r_, n, p, s, __VA_ARGS__); \
      }                                                                                                       \
    }                                                                                                         \
  } while (0)

/* ---- row callbacks (the indexing ops) ---- */

/* n elements of a row: operand k starts at p[k] and advances by s[k] elements */
typedef void (*mt_iter_row)(void *ctx, int64_t n, char *const *p, const int64_t *s);

/* flags for mt_iter_rows */
#define MT_ITER_EXCLUSIVE 1 /* elements differing only along the kept dim: one thread, in increasing order */
#define MT_ITER_SERIAL 2    /* one thread, plain order */

/* Call fn over every row (innermost run) in row-major order of the outer dims, in parallel for
 * large iterations unless MT_ITER_SERIAL. */
void mt__iter_rows(const mt_iter *it, mt_iter_row fn, void *ctx, int flags);

#endif
