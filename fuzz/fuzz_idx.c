/* fuzz_idx.c: libFuzzer target for mt_idx_parse (csrc/data/idx.c and its gzip reader).
 * The first input byte picks a mode, the second where to cut, the rest is the payload:
 *   even: the payload is parsed as it is (plain, or gzip when it starts with 1f 8b);
 *   odd:  the payload is gzip-compressed here first (and, when the second byte says so, the
 *         compressed stream is cut), so the fuzzer reaches the gzip paths with valid streams.
 * What must hold, whatever the bytes:
 *  - a failure returns a real status, a message naming "idx: <what>:", and no tensor;
 *  - a plain payload that parses gives exactly what a separate reference decoder below reads
 *    (type, sizes, every element) and a payload it rejects is rejected;
 *  - a gzip-compressed payload gives the same status and tensor as the plain payload, and a
 *    cut one fails;
 *  - nothing crashes, leaks (every tensor byte is freed at the end) or trips the sanitizers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "moontorch.h"
#include "fuzz_gzip.h"

static void fail(const char *what) {
  fprintf(stderr, "fuzz_idx: %s; last error: %s\n", what, mt_last_error());
  abort();
}

static void check_error(mt_status st, const mt_tensor *t) {
  if (st <= MT_OK || st > MT_ERR_FORMAT) fail("status out of range");
  if (st == MT_ERR_INTERNAL) fail("internal error");
  if (t) fail("a tensor came back with an error");
  if (strncmp(mt_last_error(), "idx: fuzz: ", 11) != 0) fail("message does not name the input");
}

/* ---- reference decoder for plain payloads: 1 if the bytes are a valid IDX file ---- */
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int elem_size(uint8_t code) {
  switch (code) {
    case 0x08:
    case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C:
    case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

static int reference_valid(const uint8_t *p, size_t n) {
  if (n < 4 || p[0] || p[1] || !elem_size(p[2]) || p[3] == 0 || p[3] > 8) return 0;
  int nd = p[3];
  if (n < 4 + 4 * (size_t)nd) return 0;
  /* the nonzero sizes must multiply to at most 2^60 elements, also when a size is 0 */
  unsigned __int128 span = 1;
  int empty = 0;
  for (int d = 0; d < nd; d++) {
    uint64_t s = be32(p + 4 + 4 * d);
    empty |= s == 0;
    if (s && span <= (unsigned __int128)1 << 64) span *= s; /* stays below 2^96: no wrap */
  }
  if (span > (uint64_t)INT64_MAX / 8) return 0;
  return (empty ? 0 : (uint64_t)span * (uint64_t)elem_size(p[2])) == n - 4 - 4 * (size_t)nd;
}

/* element i of a valid plain file as a double (every IDX type converts to double exactly) */
static double reference_value(const uint8_t *p, int64_t i) {
  const uint8_t *e = p + 4 + 4 * p[3] + i * elem_size(p[2]);
  switch (p[2]) {
    case 0x08: return e[0];
    case 0x09: return (int8_t)e[0];
    case 0x0B: return (int16_t)(e[0] << 8 | e[1]);
    case 0x0C: return (int32_t)be32(e);
    case 0x0D: {
      uint32_t u = be32(e);
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    default: {
      uint64_t u = (uint64_t)be32(e) << 32 | be32(e + 4);
      double d;
      memcpy(&d, &u, 8);
      return d;
    }
  }
}

static double tensor_value(const mt_tensor *t, int64_t i) {
  const uint8_t *d = mt_tensor_data(t);
  switch (mt_tensor_dtype(t)) {
    case MT_U8: return d[i];
    case MT_I32: {
      int32_t v;
      memcpy(&v, d + 4 * i, 4);
      return v;
    }
    case MT_F32: {
      float v;
      memcpy(&v, d + 4 * i, 4);
      return v;
    }
    case MT_F64: {
      double v;
      memcpy(&v, d + 8 * i, 8);
      return v;
    }
    default: fail("unexpected dtype"); return 0;
  }
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_against_reference(const uint8_t *p, size_t n, mt_status st, const mt_tensor *t) {
  int valid = reference_valid(p, n);
  if (valid != (st == MT_OK)) fail(valid ? "a valid file was rejected" : "an invalid file was accepted");
  if (!valid) return;
  static const int dtypes[15] = {
      [0x08] = MT_U8, [0x09] = MT_I32, [0x0B] = MT_I32, [0x0C] = MT_I32, [0x0D] = MT_F32, [0x0E] = MT_F64};
  if (mt_tensor_dtype(t) != dtypes[p[2]]) fail("wrong dtype");
  if (mt_tensor_ndim(t) != p[3] || !mt_tensor_is_contiguous(t)) fail("wrong ndim or layout");
  for (int d = 0; d < p[3]; d++)
    if (mt_tensor_size(t, d) != be32(p + 4 + 4 * d)) fail("wrong size");
  for (int64_t i = 0; i < mt_tensor_numel(t); i++)
    if (!same_bits(reference_value(p, i), tensor_value(t, i))) fail("wrong element");
}

static void check_same(const mt_tensor *a, const mt_tensor *b) {
  if (mt_tensor_dtype(a) != mt_tensor_dtype(b) || mt_tensor_ndim(a) != mt_tensor_ndim(b)) fail("gzip: other type");
  for (int d = 0; d < mt_tensor_ndim(a); d++)
    if (mt_tensor_size(a, d) != mt_tensor_size(b, d)) fail("gzip: other sizes");
  size_t bytes = (size_t)mt_tensor_numel(a) * mt_dtype_size(mt_tensor_dtype(a));
  if (bytes && memcmp(mt_tensor_data(a), mt_tensor_data(b), bytes)) fail("gzip: other data");
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mt_set_num_threads(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  uint8_t mode = data[0], cut = data[1];
  const uint8_t *p = data + 2;
  size_t n = size - 2;
  mt_tensor *plain = NULL;
  mt_status st = mt_idx_parse(&plain, p, n, "fuzz");
  if (st != MT_OK) check_error(st, plain);
  int is_gz = n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
  if (!is_gz) check_against_reference(p, n, st, plain);

  if ((mode & 1) && !is_gz) {
    size_t cap = compressBound(n) + 64;
    uint8_t *gz = malloc(cap);
    if (!gz) fail("malloc");
    size_t glen = fuzz_gzip(p, n, gz, cap, (mode >> 1) % 10);
    /* cut: keep a fraction of the compressed stream (a stream that lost its trailer must fail) */
    int cutting = cut >= 200;
    if (cutting) glen = glen * (size_t)(cut - 200) / 56;
    mt_tensor *z = NULL;
    mt_status zst = mt_idx_parse(&z, gz, glen, "fuzz");
    if (zst != MT_OK) check_error(zst, z);
    if (cutting && zst == MT_OK) fail("a cut gzip stream was accepted");
    if (!cutting) {
      if (zst != st) fail("gzip and plain give different statuses");
      if (zst == MT_OK) check_same(plain, z);
    }
    mt_tensor_release(z);
    free(gz);
  }
  mt_tensor_release(plain);
  if (mt_memory_allocated(-1) != 0) fail("tensor memory still allocated");
  return 0;
}
