/* fuzz_shard.c: libFuzzer target over the shard reader (mt_shard_parse, mt_shard_entry,
 * mt_shard_read) and, now and then, the writer.
 *
 * The first input byte picks a mode; the rest is a shard file:
 *  - mode & 3 == 0: parsed as it is;
 *  - mode & 3 == 1 or 2: the header and index CRCs are recomputed first, so that mutations get
 *    past the checksums and reach the bounds checks of every index entry;
 *  - mode & 3 == 3: the bytes are cut into records, written with the writer to a file, read
 *    back with mt_shard_open and compared.
 * What must hold, whatever the bytes:
 *  - parse returns MT_OK or a status with a non-empty message and no handle;
 *  - every entry of an accepted shard lies inside the buffer (checked here), its name is a
 *    terminated string, and reading it into a buffer of exactly its length stays inside that
 *    buffer (ASan) and either succeeds with the bytes at that offset or reports a CRC error;
 *  - a buffer one byte short is refused;
 *  - nothing crashes, leaks or trips UBSan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "moontorch.h"

static void fail(const char *what) {
  fprintf(stderr, "fuzz_shard: %s; last error: %s\n", what, mt_last_error());
  abort();
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
  return v;
}
static void put_u32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* recompute the index CRC (when the header's index range fits) and the header CRC */
static void reseal(uint8_t *b, size_t n) {
  if (n < 64) return;
  uint64_t ioff = get_u64(b + 24), isize = get_u64(b + 32);
  if (ioff <= n && isize <= n - ioff) put_u32(b + 40, (uint32_t)crc32(0, b + ioff, (uInt)isize));
  put_u32(b + 44, (uint32_t)crc32(0, b, 44));
}

static void check_reader(const uint8_t *buf, size_t len, mt_shard *s) {
  int64_t n = mt_shard_count(s);
  if (n < 0) fail("negative record count");
  for (int64_t i = 0; i < n; i++) {
    uint64_t off;
    uint32_t length;
    int32_t label;
    const char *name;
    if (mt_shard_entry(s, i, &off, &length, &label, &name) != MT_OK) fail("entry of an accepted shard failed");
    if (off < 64 || off > len || length > len - off) fail("entry outside the buffer");
    if (label < 0) fail("negative label accepted");
    (void)strlen(name); /* ASan: terminated inside its allocation */
    uint8_t *dst = malloc(length ? length : 1);
    if (!dst) return;
    mt_status st = mt_shard_read(s, i, dst, length);
    if (st == MT_OK && length && memcmp(dst, buf + off, length) != 0) fail("read gave other bytes than the record's");
    if (st != MT_OK && (st != MT_ERR_FORMAT || !*mt_last_error())) fail("read failed without a CRC error");
    if (length && mt_shard_read(s, i, dst, length - 1) == MT_OK) fail("a short buffer was accepted");
    free(dst);
  }
  if (mt_shard_entry(s, n, NULL, NULL, NULL, NULL) == MT_OK) fail("entry past the end accepted");
}

/* mode 3: the writer. Records are cut from the input at every 0xff byte; the label is the
 * record's first byte and its name its index. */
static void round_trip(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0])
    snprintf(path, sizeof path, "%s/fuzz_shard.%ld.mts", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
             (long)getpid());
  mt_shard_writer *w;
  if (mt_shard_writer_open(&w, path) != MT_OK) return; /* no writable temporary folder */
  size_t start = 0, nrec = 0, offs[256], lens[256];
  for (size_t i = 0; i <= size && nrec < 256; i++) {
    if (i < size && data[i] != 0xff) continue;
    char name[32];
    snprintf(name, sizeof name, "r%zu", nrec);
    int32_t label = i > start ? data[start] : 0;
    if (mt_shard_writer_add(w, data + start, i - start, label, name) != MT_OK) fail("writer add failed");
    offs[nrec] = start;
    lens[nrec++] = i - start;
    start = i + 1;
  }
  if (mt_shard_writer_commit(w) != MT_OK) fail("writer commit failed");
  mt_shard *s;
  if (mt_shard_open(&s, path) != MT_OK) fail("a written shard does not open");
  if (mt_shard_count(s) != (int64_t)nrec) fail("record count differs");
  uint8_t *dst = malloc(size ? size : 1);
  for (size_t r = 0; dst && r < nrec; r++) {
    if (mt_shard_read(s, (int64_t)r, dst, lens[r]) != MT_OK) fail("a written record does not read");
    if (lens[r] && memcmp(dst, data + offs[r], lens[r]) != 0) fail("a written record reads back different");
  }
  free(dst);
  mt_shard_close(s);
  unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int mode = data[0] & 3;
  data++, size--;
  if (mode == 3) {
    round_trip(data, size);
    return 0;
  }
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  if (size) memcpy(buf, data, size);
  if (mode) reseal(buf, size);
  mt_shard *s = (mt_shard *)1;
  mt_status st = mt_shard_parse(&s, buf, size, "fuzz");
  if (st != MT_OK) {
    if (s != NULL) fail("a failed parse left a handle");
    if (!*mt_last_error()) fail("a failed parse left no message");
  } else {
    check_reader(buf, size, s);
    mt_shard_close(s);
  }
  free(buf);
  return 0;
}
