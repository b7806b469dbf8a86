/* tfevents.c: TensorBoard event files, written without TensorFlow or a protobuf library.
 * A file is a sequence of TFRecords:
 *   uint64 length (LE), uint32 masked CRC-32C of those 8 bytes, the data, uint32 masked CRC-32C
 *   of the data; masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
 * Each record's data is an Event proto, encoded here by hand (tensorflow/core/util/event.proto):
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
 * The first record carries file_version "brain.Event:2", which TensorBoard expects. Each record
 * is written with one fwrite and flushed, so a crash leaves whole records behind (a reader
 * drops a torn last record by its CRC). One writer must not be shared between threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../core/error.h"

struct mt_events {
  FILE *f;
  char *path;
};

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78): crc32c_table[i] is the CRC register
 * after shifting byte i through it */
static const uint32_t crc32c_table[256] = {
    0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c, 0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf,
    0x78b2dbcc, 0x6be22838, 0x9989ab3b, 0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
    0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384, 0x9a879fa0, 0x68ec1ca3, 0x7bbcef57,
    0x89d76c54, 0x5d1d08bf, 0xaf768bbc, 0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
    0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512, 0x4b5fa6e6, 0xb93425e5, 0x6dfe410e,
    0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa, 0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
    0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a, 0x7da08661, 0x8fcb0562, 0x9c9bf696,
    0x6ef07595, 0x417b1dbc, 0xb3109ebf, 0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
    0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f, 0xed03a29b, 0x1f682198, 0x5125dad3,
    0xa34e59d0, 0xb01eaa24, 0x42752927, 0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
    0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7, 0x61c69362, 0x93ad1061, 0x80fde395,
    0x72966096, 0xa65c047d, 0x5437877e, 0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
    0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e, 0x90a324fa, 0x62c8a7f9, 0xb602c312,
    0x44694011, 0x5739b3e5, 0xa55230e6, 0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
    0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c, 0x456cac67, 0xb7072f64, 0xa457dc90,
    0x563c5f93, 0x082f63b7, 0xfa44e0b4, 0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
    0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b, 0xb4091bff, 0x466298fc, 0x1871a4d8,
    0xea1a27db, 0xf94ad42f, 0x0b21572c, 0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
    0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d, 0x2892ed69, 0xdaf96e6a, 0xc9a99d9e,
    0x3bc21e9d, 0xef087a76, 0x1d63f975, 0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
    0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905, 0xd9f75af1, 0x2b9cd9f2, 0xff56bd19,
    0x0d3d3e1a, 0x1e6dcdee, 0xec064eed, 0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
    0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff, 0x8ecee914, 0x7ca56a17, 0x6ff599e3,
    0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8, 0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
    0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78, 0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a,
    0x115b2b19, 0x020bd8ed, 0xf0605bee, 0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
    0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e, 0xf36e6f75, 0x0105ec76, 0x12551f82,
    0xe03e9c81, 0x34f4f86a, 0xc69f7b69, 0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
    0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351};

uint32_t mt_crc32c(const void *buf, size_t len) {
  const uint8_t *p = buf;
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; p && i < len; i++) c = crc32c_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

static uint32_t masked_crc(const uint8_t *p, size_t n) {
  uint32_t c = mt_crc32c(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protobuf wire format: varints, little-endian fixed-width fields ---- */
static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
  return p + n;
}

static uint8_t *put_double(uint8_t *p, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  return put_le(p, v, 8);
}

static uint8_t *put_float(uint8_t *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  return put_le(p, v, 4);
}

/* frame `n` bytes of event data at rec + 12 (rec has room for n + 16), write and flush */
static mt_status write_record(mt_events *e, uint8_t *rec, size_t n) {
  put_le(rec, n, 8);
  put_le(rec + 8, masked_crc(rec, 8), 4);
  put_le(rec + 12 + n, masked_crc(rec + 12, n), 4);
  if (fwrite(rec, 1, n + 16, e->f) != n + 16 || fflush(e->f) != 0)
    return mt__error(MT_ERR_IO, "tensorboard: %s: write failed: %s", e->path, strerror(errno));
  return MT_OK;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char FILE_VERSION[] = "brain.Event:2";

static mt_status write_file_version(mt_events *e) {
  uint8_t rec[12 + 9 + 2 + sizeof FILE_VERSION + 4];
  uint8_t *p = rec + 12;
  *p++ = 0x09; /* field 1, fixed64: wall_time */
  p = put_double(p, now());
  *p++ = 0x1a; /* field 3, length-delimited: file_version */
  p = put_varint(p, sizeof FILE_VERSION - 1);
  memcpy(p, FILE_VERSION, sizeof FILE_VERSION - 1);
  p += sizeof FILE_VERSION - 1;
  return write_record(e, rec, (size_t)(p - (rec + 12)));
}

mt_status mt_events_scalar(mt_events *e, const char *tag, double value, int64_t step, double wall_time) {
  if (!e) return mt__error(MT_ERR_ARG, "tensorboard: writer is NULL");
  if (!e->f) return mt__error(MT_ERR_ARG, "tensorboard: %s: the writer is closed", e->path);
  if (!tag || !tag[0]) return mt__error(MT_ERR_ARG, "tensorboard: %s: the tag is empty", e->path);
  if (!(wall_time >= 0) || isinf(wall_time))
    return mt__error(MT_ERR_ARG,
                     "tensorboard: %s: wall time %g for tag '%s' is not a time (seconds since 1970, or 0 for now)",
                     e->path, wall_time, tag);
  if (wall_time == 0) wall_time = now();
  size_t taglen = strlen(tag);
  size_t vlen = 1 + varint_len(taglen) + taglen + 1 + 4; /* Value { tag, simple_value } */
  size_t slen = 1 + varint_len(vlen) + vlen;             /* Summary { value } */
  size_t elen = 1 + 8 + 1 + varint_len((uint64_t)step) + 1 + varint_len(slen) + slen;
  uint8_t *rec = malloc(elen + 16);
  if (!rec) return mt__error(MT_ERR_MEMORY, "tensorboard: %s: out of memory for tag '%.64s'", e->path, tag);
  uint8_t *p = rec + 12;
  *p++ = 0x09; /* Event.wall_time, fixed64 */
  p = put_double(p, wall_time);
  *p++ = 0x10; /* Event.step, varint (a negative int64 takes ten bytes, as protobuf encodes it) */
  p = put_varint(p, (uint64_t)step);
  *p++ = 0x2a; /* Event.summary, length-delimited */
  p = put_varint(p, slen);
  *p++ = 0x0a; /* Summary.value */
  p = put_varint(p, vlen);
  *p++ = 0x0a; /* Value.tag */
  p = put_varint(p, taglen);
  memcpy(p, tag, taglen);
  p += taglen;
  *p++ = 0x15; /* Value.simple_value, fixed32 */
  p = put_float(p, (float)value);
  mt_status st = write_record(e, rec, elen);
  free(rec);
  return st;
}

const char *mt_events_path(const mt_events *e) { return e ? e->path : NULL; }

void mt_events_close(mt_events *e) {
  if (!e) return;
  if (e->f) fclose(e->f);
  free(e->path);
  free(e);
}

/* dir/events.out.tfevents.<seconds>.<host>, created exclusively: a second writer opened in the
 * same second gets a ".1", ".2", ... suffix rather than truncating the first one's file */
static mt_status create_file(mt_events *e, const char *dir, size_t dirlen) {
  char host[256];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = 0;
  for (char *c = host; *c; c++)
    if (*c == '/') *c = '_';
  long long secs = (long long)time(NULL);
  size_t cap = dirlen + strlen(host) + 64;
  e->path = malloc(cap);
  if (!e->path) return mt__error(MT_ERR_MEMORY, "tensorboard: out of memory");
  for (int k = 0; k < 1000; k++) {
    int n = snprintf(e->path, cap, "%.*s/events.out.tfevents.%lld.%s", (int)dirlen, dir, secs, host);
    if (k) snprintf(e->path + n, cap - (size_t)n, ".%d", k);
    int fd = open(e->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return mt__error(MT_ERR_IO, "tensorboard: cannot create %s: %s", e->path, strerror(errno));
    e->f = fdopen(fd, "wb");
    if (!e->f) {
      close(fd);
      return mt__error(MT_ERR_IO, "tensorboard: cannot open %s: %s", e->path, strerror(errno));
    }
    return MT_OK;
  }
  return mt__error(MT_ERR_IO, "tensorboard: %s: too many event files from this second", e->path);
}

mt_status mt_events_open(mt_events **out, const char *dir) {
  if (!out) return mt__error(MT_ERR_ARG, "tensorboard: out is NULL");
  *out = NULL;
  if (!dir || !dir[0]) return mt__error(MT_ERR_ARG, "tensorboard: the log directory name is empty");
  size_t dirlen = strlen(dir);
  while (dirlen > 1 && dir[dirlen - 1] == '/') dirlen--;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return mt__error(MT_ERR_IO, "tensorboard: cannot create the log directory %s: %s", dir, strerror(errno));
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return mt__error(MT_ERR_IO, "tensorboard: %s is not a directory", dir);
  mt_events *e = calloc(1, sizeof *e);
  if (!e) return mt__error(MT_ERR_MEMORY, "tensorboard: out of memory");
  mt_status st = create_file(e, dir, dirlen);
  if (st == MT_OK) {
    st = write_file_version(e);
    if (st != MT_OK) unlink(e->path);
  }
  if (st != MT_OK) {
    mt_events_close(e);
    return st;
  }
  *out = e;
  return MT_OK;
}
