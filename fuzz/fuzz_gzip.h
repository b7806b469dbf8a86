/* fuzz_gzip.h: gzip-compress a fuzz input, so the IDX and CIFAR targets can check that a
 * compressed file parses exactly like the plain one. Aborts (a fuzz finding) if zlib fails. */
#ifndef MT_FUZZ_GZIP_H
#define MT_FUZZ_GZIP_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* windowBits 31: the gzip wrapper; returns the compressed length */
static size_t fuzz_gzip(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int level) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)n;
  z.next_out = dst;
  z.avail_out = (uInt)cap;
  int ret = deflate(&z, Z_FINISH);
  size_t out = z.total_out;
  deflateEnd(&z);
  if (ret != Z_STREAM_END) {
    fprintf(stderr, "fuzz_gzip: deflate did not finish (output buffer of %zu bytes too small?)\n", cap);
    abort();
  }
  return out;
}
#endif
