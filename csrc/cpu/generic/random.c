/* generic/random.c: random.c's Bernoulli draws for one dtype (included through generate_all.h).
 * Element i takes Philox counter offset + i. */

/* out[i] = 1 with probability p, else 0. out: numel contiguous elements */
static void MT_G(bernoulli)(scalar_t *out, int64_t numel, uint64_t seed, uint64_t offset, double p) {
  scalar_t one, zero;
  MT_ST(&one, PW_CV(1));
  MT_ST(&zero, PW_CV(0));
#pragma omp parallel for if (numel > RANDOM_GRAIN)
  for (int64_t i = 0; i < numel; i++) out[i] = mt_philox_uniform(seed, offset + (uint64_t)i) < p ? one : zero;
}
