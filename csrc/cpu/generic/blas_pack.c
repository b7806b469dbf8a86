/* generic/blas_pack.c: a strided matrix of one float dtype copied into a contiguous row-major
 * temporary in its compute type (float for the halves) and back (included by blas.c through
 * generate_float.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). Serial on purpose:
 * OpenMP workers still spinning afterwards would slow the BLAS threads. */

/* m (r, c) strided into dst (r, c) contiguous; rows of stride 1 through row_widen where the dtype
 * has a bulk conversion */
static void MT_G(pack)(const mat *m, acc_t *dst) {
  for (int64_t i = 0; i < m->r; i++) {
    if (m->s1 == 1 && MT_G(row_widen)(dst + i * m->c, (const scalar_t *)m->p + i * m->s0, m->c)) continue;
    for (int64_t j = 0; j < m->c; j++) dst[i * m->c + j] = MT_LD((const scalar_t *)m->p + i * m->s0 + j * m->s1);
  }
}

/* src (r, c) contiguous back into m (r, c) strided, rounded to the storage type */
static void MT_G(unpack)(const mat *m, const acc_t *src) {
  for (int64_t i = 0; i < m->r; i++) {
    if (m->s1 == 1 && MT_G(row_narrow)((scalar_t *)m->p + i * m->s0, src + i * m->c, m->c)) continue;
    for (int64_t j = 0; j < m->c; j++) MT_ST((scalar_t *)m->p + i * m->s0 + j * m->s1, src[i * m->c + j]);
  }
}
