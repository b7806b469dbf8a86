/* generic/optim_block.c: optim_block.h's loops between one float dtype's storage and the two
 * compute types (included by optim_block.h through generate_float.h). */

/* dst[j] = p[j] * s for j < m, in float (f32, f16 and bf16 masters) */
static inline void MT_G(mt__opt_load_float)(float *dst, const scalar_t *p, int64_t m, float s) {
  if (s == 1)
    for (int64_t j = 0; j < m; j++) dst[j] = (float)MT_LD(p + j);
  else
    for (int64_t j = 0; j < m; j++) dst[j] = (float)MT_LD(p + j) * s;
}

/* the same in double (f64 masters) */
static inline void MT_G(mt__opt_load_double)(double *dst, const scalar_t *p, int64_t m, double s) {
  if (s == 1)
    for (int64_t j = 0; j < m; j++) dst[j] = (double)MT_LD(p + j);
  else
    for (int64_t j = 0; j < m; j++) dst[j] = (double)MT_LD(p + j) * s;
}

/* p[j] = src[j] rounded to the storage type, from float or double */
static inline void MT_G(mt__opt_store_float)(scalar_t *p, int64_t m, const float *src) {
  for (int64_t j = 0; j < m; j++) MT_ST(p + j, src[j]);
}

static inline void MT_G(mt__opt_store_double)(scalar_t *p, int64_t m, const double *src) {
  for (int64_t j = 0; j < m; j++) MT_ST(p + j, src[j]);
}
