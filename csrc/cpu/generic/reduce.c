/* generic/reduce.c: reduce.c's conversions of one dtype's elements to and from the compute
 * buffers, double for the floating dtypes and int64 for the others (included through
 * generate_all.h; static inline, so a dtype keeps only the directions reduce.c calls). */

/* count elements from element start of base into buf */
static inline void MT_G(load_double)(const char *base, int64_t start, int64_t count, double *buf) {
  const scalar_t *src = (const scalar_t *)base + start;
  for (int64_t i = 0; i < count; i++) buf[i] = MT_LD(src + i);
}
static inline void MT_G(load_int64)(const char *base, int64_t start, int64_t count, int64_t *buf) {
  const scalar_t *src = (const scalar_t *)base + start;
  for (int64_t i = 0; i < count; i++) buf[i] = MT_LD(src + i);
}

/* count values of v into elements start on of base */
static inline void MT_G(store_double)(char *base, int64_t start, int64_t count, const double *v) {
  scalar_t *out = (scalar_t *)base + start;
  for (int64_t i = 0; i < count; i++) MT_ST(out + i, v[i]);
}
static inline void MT_G(store_int64)(char *base, int64_t start, int64_t count, const int64_t *v) {
  scalar_t *out = (scalar_t *)base + start;
  for (int64_t i = 0; i < count; i++) MT_ST(out + i, v[i]);
}
