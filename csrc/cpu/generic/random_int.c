/* generic/random_int.c: random.c's uniform draws for one integer dtype (random.c includes it once
 * per integer dtype). Element i takes Philox counter offset + i. */

/* uniform on [lo, hi): the floor of the draw (hi - 1 when the rounding reached hi). out: numel
 * contiguous elements */
static void MT_G(uniform)(scalar_t *out, int64_t numel, uint64_t seed, uint64_t offset, double lo, double hi) {
#pragma omp parallel for if (numel > RANDOM_GRAIN)
  for (int64_t i = 0; i < numel; i++) {
    double f = floor(lo + (hi - lo) * mt_philox_uniform(seed, offset + (uint64_t)i));
    if (f >= hi && hi > lo) f = hi - 1;
    MT_ST(out + i, PW_CV(f));
  }
}
