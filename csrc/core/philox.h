/* philox.h: Philox 4x32-10 (Salmon et al., SC'11), shared by the CPU and CUDA backends so a
 * seed gives the same numbers on both. Element i of a draw uses counter (offset + i) with the
 * seed as key; uniform and normal values are derived from its four 32-bit outputs. */
#ifndef MT_CORE_PHILOX_H
#define MT_CORE_PHILOX_H
#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MT_HOSTDEV __host__ __device__ __forceinline__
#else
#define MT_HOSTDEV static inline
#endif

typedef struct {
  uint32_t v[4];
} mt_philox_out;

MT_HOSTDEV mt_philox_out mt_philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  mt_philox_out o;
  o.v[0] = c0;
  o.v[1] = c1;
  o.v[2] = c2;
  o.v[3] = c3;
  return o;
}

/* uniform in [0, 1) on Torch7's grid: one 32-bit output times 2^-32, as TH's uniform draws them.
 * Code written for Torch7 relies on it (the mean of k copies of a draw is exactly the draw). */
MT_HOSTDEV double mt_philox_uniform(uint64_t seed, uint64_t counter) {
  mt_philox_out o = mt_philox(seed, counter);
  return (double)o.v[0] * (1.0 / 4294967296.0);
}

/* standard normal by Box-Muller from outputs 2 and 3 (and 0 for the radius, never 0) */
MT_HOSTDEV double mt_philox_normal(uint64_t seed, uint64_t counter) {
  mt_philox_out o = mt_philox(seed, counter);
  double u1 = ((double)o.v[2] + 1.0) * (1.0 / 4294967297.0); /* (0, 1) */
  double u2 = (double)o.v[3] * (1.0 / 4294967296.0);         /* [0, 1) */
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
#endif
