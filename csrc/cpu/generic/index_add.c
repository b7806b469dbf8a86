/* generic/index_add.c: index.c's index_add rows for one dtype (included through generate_all.h).
 * A row: n elements, operand k from p[k] on in steps of s[k] elements. */

/* dst[e + (index[e] - base) * kstride] += alpha * src[e] along the row (dst, src, index), in
 * acc_t (integers wrap); int32 or int64 indices */
MT_ALWAYS_INLINE void MT_G(add_row)(const idx_ctx *c, int64_t n, char *const *p, const int64_t *s, int index64) {
  scalar_t *dst = (scalar_t *)p[0];
  const scalar_t *src = (const scalar_t *)p[1];
  int64_t dst_stride = s[0], src_stride = s[1], index_stride = s[2], kstride = c->kstride, base = c->base;
  acc_t alpha = PW_SCALAR(acc_t, c->alpha);
  for (int64_t e = 0; e < n; e++) {
    scalar_t *q = dst + e * dst_stride + (index_at(p[2], e * index_stride, index64) - base) * kstride;
    MT_ST(q, PW_ADD(MT_LD(q), PW_MUL(alpha, MT_LD(src + e * src_stride))));
  }
}

/* the row callback (mt_iter_row), for either index type */
static void MT_G(add_rows)(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  const idx_ctx *c = ctx;
  if (c->index64) MT_G(add_row)(c, n, p, s, 1);
  else MT_G(add_row)(c, n, p, s, 0);
}
