/* generic/random_float.c: random.c's uniform and normal draws for one floating dtype (included
 * through generate_float.h). Element i takes Philox counter offset + i. */

/* uniform on [lo, hi): the draw rounded to this dtype, stepped down to the next value below
 * when the rounding reached hi. out: numel contiguous elements */
static void MT_G(uniform)(scalar_t *out, int64_t numel, uint64_t seed, uint64_t offset, double lo, double hi) {
#pragma omp parallel for if (numel > RANDOM_GRAIN)
  for (int64_t i = 0; i < numel; i++) {
    double v = lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i);
    MT_ST(out + i, v);
    if ((double)MT_LD(out + i) >= hi && hi > lo) MT_G(below)(out + i);
  }
}

/* normal with mean and standard deviation sd. out: numel contiguous elements */
static void MT_G(normal)(scalar_t *out, int64_t numel, uint64_t seed, uint64_t offset, double mean, double sd) {
#pragma omp parallel for if (numel > RANDOM_GRAIN)
  for (int64_t i = 0; i < numel; i++) MT_ST(out + i, mean + sd * mt_philox_normal(seed, offset + (uint64_t)i));
}
