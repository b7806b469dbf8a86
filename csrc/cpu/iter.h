/* iter.h: the CPU's one strided N-d iterator, over up to MT_ITER_MAX_OPS operands of one shape.
 *
 * Usage (operands already have identical sizes; inputs may carry 0 strides from expand): a
 * kernel is a function over one chunk [begin, end) of the iteration order, which it walks as
 * runs (stretches of the innermost dimension), and mt__iter_chunks calls it over the whole
 * iteration, one chunk per OpenMP thread above the grain:
 *
 *   static void add_f32(const mt_iter *it, int64_t begin, int64_t end, void *arg) {
 *     const int64_t *s = it->strides[0];  // byte strides of the operands along a run
 *     mt_iter_run run;
 *     for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run))
 *       // run.n elements: operand k starts at byte address run.p[k] and steps s[k] bytes
 *       for (int64_t i = 0; i < run.n; i++) ... *(float *)(run.p[0] + i * s[0]) ...
 *   }
 *   mt_iter it;
 *   const mt_tensor *ops[3] = {out, a, b};
 *   MT_TRY(mt_iter_init(&it, 3, ops, 0));
 *   mt__iter_chunks(&it, add_f32, NULL);
 *
 * What init does:
 *  - drops size-1 dimensions and stores the rest innermost first;
 *  - unless MT_ITER_ROW_MAJOR is given, orders dimensions by operand 0's strides (smallest
 *    innermost), so an in-place op on a transposed tensor walks memory in order. Pass
 *    MT_ITER_ROW_MAJOR when the visiting order matters (masked_select, arange, random, indexing);
 *  - merges neighbouring dimensions that are contiguous with each other in every operand, so
 *    a contiguous (or uniformly strided) problem becomes one long run and the body's inner loop
 *    is a plain vectorisable loop.
 * mt__iter_chunks splits the flat element range [0, numel) into one chunk per OpenMP thread
 * when numel > MT_PARALLEL_GRAIN (a chunk may start in the middle of a row, so even a single
 * long run is shared). Strides are in bytes so operands may have different dtypes (comparisons
 * write u8, copy converts). MT_ITER_RUNS is the same walk for a body that is a block of its
 * caller.
 *
 * The indexing ops (gather/scatter/index_*, cat) describe operands by hand (mt_iter_init_raw:
 * a base, an element size and strides each, so an indexed operand can have stride 0 along the
 * indexed dim), keep that dim unmerged, and run a row callback with mt__iter_rows, whose
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

/* the small functions a kernel's loops are written through are MT_ALWAYS_INLINE (cpu.h): the
 * loops compile as if written out in the kernel (constant arguments fold, no call per run) */
/* Place a cursor (idx, p) at flat position pos of the iteration order. */
MT_ALWAYS_INLINE void mt_iter_seek(const mt_iter *it, int64_t pos, int64_t *idx, char **p) {
  for (int k = 0; k < it->nops; k++) p[k] = it->data[k];
  for (int d = 0; d < it->ndim; d++) {
    idx[d] = pos % it->sizes[d];
    pos /= it->sizes[d];
    for (int k = 0; k < it->nops; k++) p[k] += idx[d] * it->strides[d][k];
  }
}

/* Move the cursor n elements on along the innermost dimension (n never crosses the end of the
 * innermost row), carrying into outer dimensions when the row is finished. */
MT_ALWAYS_INLINE void mt_iter_advance(const mt_iter *it, int64_t *idx, char **p, int64_t n) {
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

/* A run: n elements of the innermost dimension from flat position pos of the iteration order;
 * operand k's first element is at byte address p[k]. */
typedef struct mt_iter_run {
  int64_t n;                /* elements in the run; 0 when the chunk is done */
  int64_t pos, end;         /* the run's first position; the end of its chunk */
  int64_t idx[MT_MAX_DIMS]; /* the index of the run's first element, innermost dim first */
  char *p[MT_ITER_MAX_OPS];
} mt_iter_run;

/* the length of the run at run->pos: the rest of its row, cut at the chunk's end */
MT_ALWAYS_INLINE void mt__iter_run_length(const mt_iter *it, mt_iter_run *run) {
  int64_t n = it->sizes[0] - run->idx[0];
  if (n > run->end - run->pos) n = run->end - run->pos;
  run->n = run->pos < run->end ? n : 0;
}

/* the first run of the chunk [begin, end) of the iteration order */
MT_ALWAYS_INLINE void mt_iter_first(const mt_iter *it, mt_iter_run *run, int64_t begin, int64_t end) {
  run->pos = begin, run->end = end;
  run->idx[0] = 0; /* set by the seek (ndim >= 1), which the compiler cannot see */
  mt_iter_seek(it, begin, run->idx, run->p);
  mt__iter_run_length(it, run);
}

/* the run after this one (n = 0 past the chunk's end) */
MT_ALWAYS_INLINE void mt_iter_next(const mt_iter *it, mt_iter_run *run) {
  run->pos += run->n;
  if (run->pos < run->end) mt_iter_advance(it, run->idx, run->p, run->n);
  mt__iter_run_length(it, run);
}

/* a pointwise kernel: the runs of elements [begin, end) of the iteration; arg: its parameters */
typedef void (*mt_iter_chunk)(const mt_iter *it, int64_t begin, int64_t end, void *arg);

/* Call fn over the whole iteration: one chunk, or mt_iter_nchunks(numel) chunks of equal
 * length in parallel. */
void mt__iter_chunks(const mt_iter *it, mt_iter_chunk fn, void *arg);

/* The runs of [begin, end) for a body that is a block of its caller: the body sees N (the run
 * length), P[k] (char *) and S[k] (byte strides) under the names it passes, usually n, p, s. */
#define MT__ITER_CHUNK(it_, begin_, end_, N, P, S, ...)                                           \
  do {                                                                                            \
    const int64_t *const S = (it_)->strides[0];                                                   \
    mt_iter_run run_;                                                                             \
    for (mt_iter_first((it_), &run_, (begin_), (end_)); run_.n > 0; mt_iter_next((it_), &run_)) { \
      int64_t N = run_.n;                                                                         \
      char *const *P = run_.p;                                                                    \
      __VA_ARGS__                                                                                 \
    }                                                                                             \
  } while (0)

/* mt__iter_chunks for such a body: MT_ITER_RUNS(&it, n, p, s, { ... }) */
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
