/* iter.c: the drivers of the CPU iterator (see iter.h): chunks for the pointwise kernels, rows
 * for the indexing ops. */
#include "iter.h"

void mt__iter_chunks(const mt_iter *it, mt_iter_chunk fn, void *arg) {
  int64_t numel = it->numel;
  int nchunks = mt_iter_nchunks(numel);
  if (nchunks <= 1) {
    fn(it, 0, numel, arg);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int chunk = 0; chunk < nchunks; chunk++) fn(it, numel * chunk / nchunks, numel * (chunk + 1) / nchunks, arg);
}

void mt__iter_rows(const mt_iter *it, mt_iter_row fn, void *ctx, int flags) {
  if (it->numel == 0) return;
  int nops = it->nops;
  int64_t len = it->sizes[0];
  /* exclusive with the kept dim above the row: loop it inside each work item, in order */
  int jd = (flags & MT_ITER_EXCLUSIVE) && it->keep > 0 ? it->keep : -1;
  int64_t nj = jd >= 0 ? it->sizes[jd] : 1;
  int od[MT_MAX_DIMS], no = 0; /* the other outer dims, innermost first */
  int64_t nq = 1;
  for (int d = 1; d < it->ndim; d++)
    if (d != jd) od[no++] = d, nq *= it->sizes[d];
  int nth = omp_get_max_threads();
  int par = !(flags & MT_ITER_SERIAL) && it->numel > MT_PARALLEL_GRAIN && nth > 1;
  /* few rows: cut rows into segments so every thread gets work, unless the row is the kept
   * dim of an exclusive iteration (its elements may collide) */
  int64_t nseg = 1;
  if (par && nq < 4 * (int64_t)nth && !((flags & MT_ITER_EXCLUSIVE) && it->keep == 0)) {
    int64_t want = (4 * (int64_t)nth + nq - 1) / nq, most = len / 1024;
    nseg = want < most ? want : most;
    if (nseg < 1) nseg = 1;
  }
  /* the callbacks index in elements */
  int64_t s[MT_ITER_MAX_OPS] = {0};
  for (int k = 0; k < nops; k++) s[k] = it->esize[k] ? it->strides[0][k] / (int64_t)it->esize[k] : 0;
  int64_t items = nq * nseg, seglen = (len + nseg - 1) / nseg;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t item = 0; item < items; item++) {
    int64_t q = item / nseg, l0 = (item % nseg) * seglen, l1 = l0 + seglen < len ? l0 + seglen : len;
    if (l0 >= l1) continue;
    int64_t off[MT_ITER_MAX_OPS] = {0}; /* bytes */
    for (int i = 0; i < no; i++) {      /* row-major: the innermost outer dim varies fastest */
      int d = od[i];
      int64_t c = q % it->sizes[d];
      q /= it->sizes[d];
      for (int k = 0; k < nops; k++) off[k] += c * it->strides[d][k];
    }
    char *p[MT_ITER_MAX_OPS] = {0};
    for (int k = 0; k < nops; k++) off[k] += l0 * it->strides[0][k];
    for (int64_t j = 0; j < nj; j++) {
      for (int k = 0; k < nops; k++) p[k] = it->data[k] + off[k] + (jd >= 0 ? j * it->strides[jd][k] : 0);
      fn(ctx, l1 - l0, p, s);
    }
  }
}
