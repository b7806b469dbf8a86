/* generic/cat.c: cat.c's row copy for elements of one size (included by cat.c once for each of
 * u8, i16, i32 and i64, whose storage types are 1, 2, 4 and 8 bytes; generate.h names scalar_t
 * and MT_G). */

/* a row of n elements from p[1] to p[0] (strides s in elements), as raw moves: one memcpy when
 * both are contiguous. A row callback of mt__iter_rows (ctx unused) */
static void MT_G(copy_row)(void *ctx, int64_t n, char *const *p, const int64_t *s) {
  scalar_t *dst = (scalar_t *)p[0];
  const scalar_t *src = (const scalar_t *)p[1];
  if (s[0] == 1 && s[1] == 1) memcpy(dst, src, (size_t)n * sizeof(scalar_t));
  else
    for (int64_t e = 0; e < n; e++) dst[e * s[0]] = src[e * s[1]];
}
