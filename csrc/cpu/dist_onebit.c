/* dist_onebit.c: the CPU bodies of 1-bit compression with error feedback (the slots
 * dist_onebit_encode and dist_onebit_decode; csrc/dist/onebit.c checks the arguments). A chunk
 * of the residual becomes one scale (its mean magnitude, the scale that leaves the smallest
 * squared error for a sign code) and one bit per element; every rank decodes every rank's
 * chunks in rank order, so the sum is the same on every rank. A chunk (2048 floats by default)
 * stays in L1 between the passes over it, so each body reads and writes its tensors once; the
 * loops are written so that the compiler vectorizes them (no per-element shifts by i % 8). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

/* chunks per parallel region below which one thread does the work */
#define PAR_MIN_CHUNKS 4
/* elements handled per inner block (a multiple of 8; a chunk is cut into these) */
#define BLOCK 256

/* eight 0/1 bytes (little-endian in a uint64) into one byte, byte k -> bit k: the multiply puts
 * byte k's bit at bit 56 + k and nothing else reaches the top byte */
static inline uint8_t pack8(const uint8_t *flags) {
  uint64_t word;
  memcpy(&word, flags, 8);
  return (uint8_t)((word * 0x0102040810204080ull) >> 56);
}

/* v: n float32 (the residual in; with g, v += g first; the new residual out); bits: ceil(n/8)
 * bytes, element i in bit i % 8 of byte i / 8; scales: ceil(n/chunk) float32; chunk: a
 * multiple of 8 */
mt_status mt__cpu_dist_onebit_encode(mt_tensor *v, const mt_tensor *g, mt_tensor *bits, mt_tensor *scales,
                                     int64_t chunk) {
  int64_t n = mt__numel(v), nchunks = (n + chunk - 1) / chunk;
  float *x = (float *)mt__data(v), *scale = (float *)mt__data(scales);
  const float *grad = g ? (const float *)mt__data(g) : NULL;
  uint8_t *code = (uint8_t *)mt__data(bits);
#pragma omp parallel for if (nchunks >= PAR_MIN_CHUNKS) schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    int64_t lo = c * chunk, hi = lo + chunk < n ? lo + chunk : n;
    double sum = 0;
    if (grad) {
#pragma omp simd reduction(+ : sum)
      for (int64_t i = lo; i < hi; i++) {
        x[i] += grad[i];
        sum += fabsf(x[i]);
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int64_t i = lo; i < hi; i++) sum += fabsf(x[i]);
    }
    float s = (float)(sum / (double)(hi - lo));
    scale[c] = s;
    uint8_t flags[BLOCK];
    for (int64_t at = lo; at < hi; at += BLOCK) {
      int64_t len = hi - at < BLOCK ? hi - at : BLOCK;
      float *xb = x + at;
      /* NaN: bit 0, and the NaN stays in the residual (and the scale) */
#pragma omp simd
      for (int64_t i = 0; i < len; i++) {
        uint8_t positive = xb[i] >= 0.0f;
        flags[i] = positive;
        xb[i] -= positive ? s : -s;
      }
      int64_t padded = (len + 7) & ~(int64_t)7;
      for (int64_t i = len; i < padded; i++) flags[i] = 0;
      uint8_t *out = code + at / 8;
      for (int64_t byte = 0; byte < padded / 8; byte++) out[byte] = pack8(flags + 8 * byte);
    }
  }
  return MT_OK;
}

/* bit k of a byte, as a vector constant: (byte & BIT[k]) is a compare the compiler vectorizes,
 * where a shift by k per lane is not (below AVX2) */
static const int BIT[8] = {1, 2, 4, 8, 16, 32, 64, 128};

/* dst: n float32 := alpha * sum over blocks b of (bit ? scale : -scale); bits: nblocks blocks of
 * ceil(n/8) bytes; scales: nblocks blocks of ceil(n/chunk) float32 */
mt_status mt__cpu_dist_onebit_decode(mt_tensor *dst, const mt_tensor *bits, const mt_tensor *scales, int64_t chunk,
                                     int64_t nblocks, double alpha) {
  int64_t n = mt__numel(dst), nchunks = (n + chunk - 1) / chunk, nbytes = (n + 7) / 8;
  float *out = (float *)mt__data(dst);
  const float *scale = (const float *)mt__data(scales);
  const uint8_t *code = (const uint8_t *)mt__data(bits);
  float a = (float)alpha;
#pragma omp parallel for if (nchunks >= PAR_MIN_CHUNKS) schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    int64_t lo = c * chunk, hi = lo + chunk < n ? lo + chunk : n;
    int64_t whole = lo + ((hi - lo) & ~(int64_t)7); /* lo is a multiple of 8 */
    memset(out + lo, 0, (size_t)(hi - lo) * sizeof *out);
    for (int64_t b = 0; b < nblocks; b++) {
      float s = scale[b * nchunks + c];
      const uint8_t *block = code + b * nbytes;
      for (int64_t i = lo; i < whole; i += 8) {
        int byte = block[i >> 3];
#pragma omp simd
        for (int k = 0; k < 8; k++) out[i + k] += (byte & BIT[k]) ? s : -s;
      }
      for (int64_t i = whole; i < hi; i++) out[i] += (block[i >> 3] & BIT[i & 7]) ? s : -s;
    }
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) out[i] *= a;
  }
  return MT_OK;
}
