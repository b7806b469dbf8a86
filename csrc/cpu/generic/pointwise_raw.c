/* generic/pointwise_raw.c: pointwise.c's moves of raw elements of one width, raw_t (uint8_t to
 * uint64_t: pointwise.c includes it once per width RAW_BITS; RAW_G(name) is name<bits>). */

/* a same-dtype copy over [begin, end) of the iteration (dst, src): the bits move unconverted
 * (NaN payloads kept), memmove for contiguous runs */
static void RAW_G(copy_raw)(const mt_iter *it, int64_t begin, int64_t end, void *arg) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(raw_t) && s[1] == sizeof(raw_t)) {
      memmove(run.p[0], run.p[1], (size_t)run.n * sizeof(raw_t));
    } else {
      for (int64_t i = 0; i < run.n; i++) *(raw_t *)(run.p[0] + i * s[0]) = *(const raw_t *)(run.p[1] + i * s[1]);
    }
  }
}

/* a transposing copy (dst walks dim 0 of the iteration contiguously, src walks dim 1) in
 * TILE x TILE tiles, so each cache line of src is read once; the work items (a column of tiles
 * of one 2-d slice) are shared among threads */
static void RAW_G(copy_tiled)(const mt_iter *it) {
  const int64_t size0 = it->sizes[0], size1 = it->sizes[1], tiles1 = (size1 + TILE - 1) / TILE;
  const int64_t dst_stride0 = it->strides[0][0], dst_stride1 = it->strides[1][0];
  const int64_t src_stride0 = it->strides[0][1], src_stride1 = it->strides[1][1];
  const int64_t items = it->numel / (size0 * size1) * tiles1;
#pragma omp parallel for if (it->numel > MT_PARALLEL_GRAIN)
  for (int64_t item = 0; item < items; item++) {
    int64_t idx[MT_MAX_DIMS];
    char *p[MT_ITER_MAX_OPS];
    mt_iter_seek(it, (item / tiles1) * size0 * size1, idx, p);
    int64_t j0 = (item % tiles1) * TILE, j1 = j0 + TILE < size1 ? j0 + TILE : size1;
    for (int64_t i0 = 0; i0 < size0; i0 += TILE) {
      int64_t i1 = i0 + TILE < size0 ? i0 + TILE : size0;
      for (int64_t j = j0; j < j1; j++)
        for (int64_t i = i0; i < i1; i++)
          *(raw_t *)(p[0] + i * dst_stride0 + j * dst_stride1) =
              *(const raw_t *)(p[1] + i * src_stride0 + j * src_stride1);
    }
  }
}

/* masked_select's writes: chunk c of nchunks of the iteration (src, mask) writes its selected
 * elements to out from counts[c] on, in row-major order */
static void RAW_G(masked_select_write)(const mt_iter *it, const int64_t *counts, int nchunks, raw_t *out) {
  const int64_t numel = it->numel, *s = it->strides[0];
#pragma omp parallel for if (nchunks > 1)
  for (int c = 0; c < nchunks; c++) {
    int64_t at = counts[c];
    mt_iter_run run;
    for (mt_iter_first(it, &run, numel * c / nchunks, numel * (c + 1) / nchunks); run.n > 0; mt_iter_next(it, &run))
      for (int64_t i = 0; i < run.n; i++)
        if (*(const uint8_t *)(run.p[1] + i * s[1])) out[at++] = *(const raw_t *)(run.p[0] + i * s[0]);
  }
}

#undef RAW_BITS
