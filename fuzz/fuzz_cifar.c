/* fuzz_cifar.c: libFuzzer target for mt_cifar_parse (csrc/data/cifar.c and its gzip reader).
 * Input: a mode byte, then the payload. Mode bits 0-1 give nlabels (0 and 3 are invalid and
 * must be refused), bit 2 gzip-compresses the payload here first, bits 3-7 (a value v >= 24)
 * cut the compressed stream to (v - 24) eighths of its length.
 * What must hold, whatever the bytes:
 *  - a failure returns a real status, a message naming "cifar: <what>:", and no tensors;
 *  - a plain payload is accepted exactly when a reference check below accepts it (a whole,
 *    nonzero number of records, labels in range), and then the tensors hold its bytes;
 *  - a gzip-compressed payload gives the same result as the plain one, a cut one fails;
 *  - nothing crashes, leaks or trips the sanitizers.
 * Records are 3073 or 3074 bytes: run with -max_len of a few records (e.g. 16384). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "moontorch.h"
#include "fuzz_gzip.h"

static void fail(const char *what) {
  fprintf(stderr, "fuzz_cifar: %s; last error: %s\n", what, mt_last_error());
  abort();
}

static void check_error(mt_status st, const mt_tensor *a, const mt_tensor *b) {
  if (st <= MT_OK || st > MT_ERR_FORMAT) fail("status out of range");
  if (st == MT_ERR_INTERNAL) fail("internal error");
  if (a || b) fail("a tensor came back with an error");
  if (strncmp(mt_last_error(), "cifar: fuzz: ", 13) != 0) fail("message does not name the input");
}

static int reference_valid(const uint8_t *p, size_t n, int nlabels) {
  if (nlabels != 1 && nlabels != 2) return 0;
  size_t rec = 3072 + (size_t)nlabels;
  if (n == 0 || n % rec) return 0;
  for (size_t r = 0; r < n; r += rec) {
    if (nlabels == 1 && p[r] >= 10) return 0;
    if (nlabels == 2 && (p[r] >= 20 || p[r + 1] >= 100)) return 0;
  }
  return 1;
}

static void check_tensors(const uint8_t *p, size_t n, int nlabels, const mt_tensor *img, const mt_tensor *lab) {
  size_t rec = 3072 + (size_t)nlabels;
  int64_t count = (int64_t)(n / rec);
  if (mt_tensor_dtype(img) != MT_U8 || mt_tensor_ndim(img) != 4 || mt_tensor_size(img, 0) != count ||
      mt_tensor_size(img, 1) != 3 || mt_tensor_size(img, 2) != 32 || mt_tensor_size(img, 3) != 32)
    fail("wrong image tensor");
  if (mt_tensor_dtype(lab) != MT_I64 || mt_tensor_ndim(lab) != 2 || mt_tensor_size(lab, 0) != count ||
      mt_tensor_size(lab, 1) != nlabels)
    fail("wrong label tensor");
  const uint8_t *pix = mt_tensor_data(img);
  const int64_t *l = mt_tensor_data(lab);
  for (int64_t i = 0; i < count; i++) {
    const uint8_t *r = p + i * rec;
    for (int k = 0; k < nlabels; k++)
      if (l[i * nlabels + k] != r[k]) fail("wrong label");
    if (memcmp(pix + i * 3072, r + nlabels, 3072)) fail("wrong pixels");
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mt_set_num_threads(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  int nlabels = mode & 3, cut = mode >> 3;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  mt_tensor *img = NULL, *lab = NULL;
  mt_status st = mt_cifar_parse(&img, &lab, p, n, nlabels, "fuzz");
  if (st != MT_OK) check_error(st, img, lab);
  int is_gz = n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
  if (!is_gz) {
    int valid = reference_valid(p, n, nlabels);
    if (valid != (st == MT_OK)) fail(valid ? "a valid file was rejected" : "an invalid file was accepted");
    if (valid) check_tensors(p, n, nlabels, img, lab);
  }
  if ((mode & 4) && !is_gz) {
    size_t cap = compressBound(n) + 64;
    uint8_t *gz = malloc(cap);
    if (!gz) fail("malloc");
    size_t glen = fuzz_gzip(p, n, gz, cap, 6);
    int cutting = cut >= 24;
    if (cutting) glen = glen * (size_t)(cut - 24) / 8;
    mt_tensor *zi = NULL, *zl = NULL;
    mt_status zst = mt_cifar_parse(&zi, &zl, gz, glen, nlabels, "fuzz");
    if (zst != MT_OK) check_error(zst, zi, zl);
    if (cutting && zst == MT_OK) fail("a cut gzip stream was accepted");
    if (!cutting) {
      if (zst != st) fail("gzip and plain give different statuses");
      if (zst == MT_OK) check_tensors(p, n, nlabels, zi, zl);
    }
    mt_tensor_release(zi);
    mt_tensor_release(zl);
    free(gz);
  }
  mt_tensor_release(img);
  mt_tensor_release(lab);
  if (mt_memory_allocated(-1) != 0) fail("tensor memory still allocated");
  return 0;
}
