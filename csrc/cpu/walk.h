/* walk.h: a strided traversal of up to three operands over one iteration shape, used by the
 * CPU indexing ops (gather/scatter/index_*) and cat.
 *
 * The shape is coalesced (size-1 dims dropped, adjacent dims merged when every operand's
 * strides allow) and walked in row-major order; each run of the last dim is handed to a row
 * callback, so per-element work is a tight loop with no indirect calls. One dim (`keep`, the
 * dim an index addresses) is never merged, which lets writers that may collide along it (scatter,
 * index_add) split work so that all of a destination element's updates happen on one thread, in
 * index order: results are deterministic and race-free. */
#ifndef MT_CPU_WALK_H
#define MT_CPU_WALK_H
#include "cpu.h"

#define MT_WALK_OPS 3

typedef struct mt_walk {
  int nops, nd, keep;                       /* keep: coalesced position of the kept dim, or -1 */
  int64_t size[MT_MAX_DIMS];
  int64_t stride[MT_WALK_OPS][MT_MAX_DIMS]; /* in elements */
  char *base[MT_WALK_OPS];
  size_t esize[MT_WALK_OPS];
  int64_t numel;
} mt_walk;

/* n elements of a row: operand i starts at p[i] and advances by s[i] elements */
typedef void (*mt_walk_row)(void *ctx, int64_t n, char *const *p, const int64_t *s);

/* Describe a walk over (ndim, sizes). strides[i] are operand i's strides for that shape (a 0
 * stride repeats an element); keep is the uncoalesced dim to preserve, or -1. */
void mt__walk_init(mt_walk *w, int nops, char *const *base, const size_t *esize,
                   const int64_t (*strides)[MT_MAX_DIMS], int ndim, const int64_t *sizes, int keep);

/* flags for mt__walk_run */
#define MT_WALK_EXCLUSIVE 1 /* elements differing only along the kept dim: one thread, in increasing order */
#define MT_WALK_SERIAL 2    /* one thread, plain row-major order */

/* Run fn over every row, in parallel for large walks unless MT_WALK_SERIAL. */
void mt__walk_run(const mt_walk *w, mt_walk_row fn, void *ctx, int flags);

#endif
