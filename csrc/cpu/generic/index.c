/* generic/index.c: index.c's row kernels that move raw elements of one width, raw_t (uint8_t to
 * uint64_t: index.c includes it once per width RAW_BITS; RAW_G(name) is name<bits>). A row:
 * n elements, operand k from p[k] on in steps of s[k] elements; indices are int32 or int64. */

/* gather (gather, index_select): dst[e] = src[e + (index[e] - base) * kstride] along the row
 * (dst, src, index); an index stride of 0 is one index for the whole row */
MT_ALWAYS_INLINE void RAW_G(gather_row)(const idx_ctx *c, int64_t n, char *const *p, const int64_t *s, int index64) {
  raw_t *dst = (raw_t *)p[0];
  const raw_t *src = (const raw_t *)p[1];
  int64_t dst_stride = s[0], src_stride = s[1], index_stride = s[2], kstride = c->kstride, base = c->base;
  if (index_stride == 0) { /* index_select */
    const raw_t *row = src + (index_at(p[2], 0, index64) - base) * kstride;
    if (dst_stride == 1 && src_stride == 1) memcpy(dst, row, (size_t)n * sizeof(raw_t));
    else
      for (int64_t e = 0; e < n; e++) dst[e * dst_stride] = row[e * src_stride];
    return;
  }
  if (dst_stride == 1 && index_stride == 1 && src_stride == 0 && kstride == 1) {
    /* dense rows (gather's common case): with the strides known, a tight loop */
    for (int64_t e = 0; e < n; e++) dst[e] = src[index_at(p[2], e, index64) - base];
    return;
  }
  for (int64_t e = 0; e < n; e++)
    dst[e * dst_stride] = src[e * src_stride + (index_at(p[2], e * index_stride, index64) - base) * kstride];
}

/* scatter: dst[e + (index[e] - base) * kstride] = src[e] along the row (dst, src, index) */
MT_ALWAYS_INLINE void RAW_G(scatter_row)(const idx_ctx *c, int64_t n, char *const *p, const int64_t *s, int index64) {
  raw_t *dst = (raw_t *)p[0];
  const raw_t *src = (const raw_t *)p[1];
  int64_t dst_stride = s[0], src_stride = s[1], index_stride = s[2], kstride = c->kstride, base = c->base;
  if (index_stride == 0) {
    raw_t *row = dst + (index_at(p[2], 0, index64) - base) * kstride;
    if (dst_stride == 1 && src_stride == 1) memcpy(row, src, (size_t)n * sizeof(raw_t));
    else
      for (int64_t e = 0; e < n; e++) row[e * dst_stride] = src[e * src_stride];
    return;
  }
  for (int64_t e = 0; e < n; e++)
    dst[e * dst_stride + (index_at(p[2], e * index_stride, index64) - base) * kstride] = src[e * src_stride];
}

/* fill (scatter_fill, index_fill): dst[e + (index[e] - base) * kstride] = the fill value along
 * the row (dst, index) */
MT_ALWAYS_INLINE void RAW_G(fill_row)(const idx_ctx *c, int64_t n, char *const *p, const int64_t *s, int index64) {
  raw_t *dst = (raw_t *)p[0], value;
  memcpy(&value, &c->bits, sizeof value);
  int64_t dst_stride = s[0], index_stride = s[1], kstride = c->kstride, base = c->base;
  if (index_stride == 0) {
    raw_t *row = dst + (index_at(p[1], 0, index64) - base) * kstride;
    for (int64_t e = 0; e < n; e++) row[e * dst_stride] = value;
    return;
  }
  for (int64_t e = 0; e < n; e++)
    dst[e * dst_stride + (index_at(p[1], e * index_stride, index64) - base) * kstride] = value;
}

/* the row callbacks (mt_iter_row), for either index type */
static void RAW_G(gather_rows)(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  const idx_ctx *c = ctx;
  if (c->index64) RAW_G(gather_row)(c, n, p, s, 1);
  else RAW_G(gather_row)(c, n, p, s, 0);
}
static void RAW_G(scatter_rows)(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  const idx_ctx *c = ctx;
  if (c->index64) RAW_G(scatter_row)(c, n, p, s, 1);
  else RAW_G(scatter_row)(c, n, p, s, 0);
}
static void RAW_G(fill_rows)(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  const idx_ctx *c = ctx;
  if (c->index64) RAW_G(fill_row)(c, n, p, s, 1);
  else RAW_G(fill_row)(c, n, p, s, 0);
}

#undef RAW_BITS
