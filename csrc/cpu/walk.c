/* walk.c: the strided traversal behind the CPU indexing ops (see walk.h). */
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "walk.h"

void mt__walk_init(mt_walk *w, int nops, char *const *base, const size_t *esize,
                   const int64_t (*strides)[MT_MAX_DIMS], int ndim, const int64_t *sizes, int keep) {
  memset(w, 0, sizeof *w);
  w->nops = nops;
  w->keep = -1;
  w->numel = 1;
  for (int op = 0; op < nops; op++) w->base[op] = base[op], w->esize[op] = esize[op];
  int nd = 0, last_is_keep = 0;
  for (int i = 0; i < ndim; i++) {
    w->numel *= sizes[i];
    if (sizes[i] == 1) continue; /* contributes no offset; a size-1 kept dim cannot collide either */
    int merge = nd > 0 && i != keep && !last_is_keep;
    for (int op = 0; merge && op < nops; op++) merge = w->stride[op][nd - 1] == strides[op][i] * sizes[i];
    if (merge) {
      w->size[nd - 1] *= sizes[i];
      for (int op = 0; op < nops; op++) w->stride[op][nd - 1] = strides[op][i];
      continue;
    }
    w->size[nd] = sizes[i];
    for (int op = 0; op < nops; op++) w->stride[op][nd] = strides[op][i];
    last_is_keep = i == keep;
    if (last_is_keep) w->keep = nd;
    nd++;
  }
  if (nd == 0) w->size[0] = 1, nd = 1; /* a single element */
  w->nd = nd;
}

void mt__walk_run(const mt_walk *w, mt_walk_row fn, void *ctx, int flags) {
  if (w->numel == 0) return;
  int last = w->nd - 1, nops = w->nops;
  int64_t len = w->size[last];
  /* exclusive with the kept dim above the row: loop it inside each work item, in order */
  int jd = (flags & MT_WALK_EXCLUSIVE) && w->keep >= 0 && w->keep < last ? w->keep : -1;
  int64_t nj = jd >= 0 ? w->size[jd] : 1;
  int od[MT_MAX_DIMS], no = 0;
  int64_t nq = 1;
  for (int d = 0; d < last; d++)
    if (d != jd) od[no++] = d, nq *= w->size[d];
  int nth = 1;
#ifdef _OPENMP
  nth = omp_get_max_threads();
#endif
  int par = !(flags & MT_WALK_SERIAL) && w->numel > MT_PARALLEL_GRAIN && nth > 1;
  /* few rows: cut rows into segments so every thread gets work, unless the row is the kept
   * dim of an exclusive walk (its elements may collide) */
  int64_t nseg = 1;
  if (par && nq < 4 * (int64_t)nth && !((flags & MT_WALK_EXCLUSIVE) && w->keep == last)) {
    int64_t want = (4 * (int64_t)nth + nq - 1) / nq, most = len / 1024;
    nseg = want < most ? want : most;
    if (nseg < 1) nseg = 1;
  }
  int64_t items = nq * nseg, seglen = (len + nseg - 1) / nseg;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t it = 0; it < items; it++) {
    int64_t q = it / nseg, l0 = (it % nseg) * seglen, l1 = l0 + seglen < len ? l0 + seglen : len;
    if (l0 >= l1) continue;
    int64_t off[MT_WALK_OPS] = {0}, s[MT_WALK_OPS] = {0};
    for (int k = no - 1; k >= 0; k--) {
      int d = od[k];
      int64_t c = q % w->size[d];
      q /= w->size[d];
      for (int op = 0; op < nops; op++) off[op] += c * w->stride[op][d];
    }
    char *p[MT_WALK_OPS] = {0};
    for (int op = 0; op < nops; op++) s[op] = w->stride[op][last], off[op] += l0 * s[op];
    for (int64_t j = 0; j < nj; j++) {
      for (int op = 0; op < nops; op++)
        p[op] = w->base[op] + (off[op] + (jd >= 0 ? j * w->stride[op][jd] : 0)) * (int64_t)w->esize[op];
      fn(ctx, l1 - l0, p, s);
    }
  }
}
