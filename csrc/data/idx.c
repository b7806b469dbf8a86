/* idx.c: IDX files (MNIST, Fashion-MNIST, EMNIST), plain or gzip.
 *   bytes 0-1: zero; byte 2: element type; byte 3: number of dimensions n;
 *   then n big-endian uint32 sizes, then the elements row-major and big-endian.
 * The header is checked before anything is allocated: a size product that overflows, or more
 * data than the (possibly compressed) bytes could hold, is an error, not an allocation. The
 * data must then be exactly as long as declared: short files are reported with the byte
 * offset where they ran out, extra bytes after the data are an error too. Offsets are in the
 * decompressed stream, i.e. what `gzip -dc file | xxd` shows. */
#include <stdio.h>
#include <string.h>
#include "zsource.h"
#include "../core/tensor.h"
#include "../core/error.h"

typedef struct idx_type {
  uint8_t code;
  uint8_t size;   /* bytes per element in the file */
  mt_dtype dtype; /* in memory: small signed integers widen to int32 */
} idx_type;

static const idx_type idx_types[] = {
    {0x08, 1, MT_U8}, {0x09, 1, MT_I32}, {0x0B, 2, MT_I32}, {0x0C, 4, MT_I32}, {0x0D, 4, MT_F32}, {0x0E, 8, MT_F64},
};

static mt_status truncated(const mt__zsource *s, uint64_t start, uint64_t got, uint64_t n, const char *part) {
  if (s->cut)
    return mt__error(MT_ERR_FORMAT,
                     "idx: %s: truncated at byte offset %llu while reading %s (%llu of %llu bytes present; "
                     "the gzip stream is cut short at compressed byte %zu)",
                     s->what, (unsigned long long)(start + got), part, (unsigned long long)got, (unsigned long long)n,
                     s->len);
  return mt__error(MT_ERR_FORMAT,
                   "idx: %s: truncated at byte offset %llu while reading %s (%llu of %llu bytes present)", s->what,
                   (unsigned long long)(start + got), part, (unsigned long long)got, (unsigned long long)n);
}

/* exactly n bytes, or an error naming the offset where they ran out */
static mt_status need(mt__zsource *s, void *dst, uint64_t n, const char *part) {
  uint64_t start = s->out_pos, got;
  MT_TRY(mt__zsource_read(s, dst, n, &got));
  return got < n ? truncated(s, start, got, n, part) : MT_OK;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Big-endian file elements (already at the start of data) to host values, in place. The
 * widening types go from the last element down, so no element is overwritten before it is
 * read: element i of the file sits at byte size*i, its int32 at 4*i >= size*i. */
static void to_host(uint8_t *data, int64_t n, const idx_type *ty) {
  switch (ty->code) {
    case 0x09:
      for (int64_t i = n - 1; i >= 0; i--) {
        int32_t v = (int8_t)data[i];
        memcpy(data + 4 * i, &v, 4);
      }
      break;
    case 0x0B:
      for (int64_t i = n - 1; i >= 0; i--) {
        int32_t v = (int16_t)(uint16_t)(data[2 * i] << 8 | data[2 * i + 1]);
        memcpy(data + 4 * i, &v, 4);
      }
      break;
    case 0x0C:
    case 0x0D: /* int32 and float32 share the byte swap */
      for (int64_t i = 0; i < n; i++) {
        uint32_t v = be32(data + 4 * i);
        memcpy(data + 4 * i, &v, 4);
      }
      break;
    case 0x0E:
      for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)be32(data + 8 * i) << 32 | be32(data + 8 * i + 4);
        memcpy(data + 8 * i, &v, 8);
      }
      break;
    default: /* 0x08: bytes need nothing */ break;
  }
}

static mt_status parse(mt_tensor **out, mt__zsource *s) {
  const char *what = s->what;
  uint8_t head[4], dims[4 * MT_MAX_DIMS];
  MT_TRY(need(s, head, 4, "the magic number"));
  if (head[0] || head[1])
    return mt__error(
        MT_ERR_FORMAT,
        "idx: %s: bad magic number at byte offset 0 (0x%02x%02x%02x%02x; an IDX file starts with two zero bytes)", what,
        head[0], head[1], head[2], head[3]);
  const idx_type *ty = NULL;
  for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
    if (idx_types[i].code == head[2]) ty = &idx_types[i];
  if (!ty)
    return mt__error(MT_ERR_FORMAT,
                     "idx: %s: unknown element type 0x%02x at byte offset 2 (known: 0x08 uint8, 0x09 int8, "
                     "0x0b int16, 0x0c int32, 0x0d float32, 0x0e float64)",
                     what, head[2]);
  int ndim = head[3];
  /* a 0-d file would be a lone scalar: no dataset ships one, and it more likely means a
   * damaged header, so it is refused like the other impossible counts */
  if (ndim == 0) return mt__error(MT_ERR_FORMAT, "idx: %s: zero dimensions at byte offset 3", what);
  if (ndim > MT_MAX_DIMS)
    return mt__error(MT_ERR_FORMAT, "idx: %s: %d dimensions at byte offset 3; at most %d are supported", what, ndim,
                     MT_MAX_DIMS);
  MT_TRY(need(s, dims, 4 * (uint64_t)ndim, "the dimension sizes"));

  /* The product of the nonzero sizes must be addressable even when another size is 0: such a
   * shape could not be viewed or reshaped, so it is refused like an overflowing one. */
  int64_t sizes[MT_MAX_DIMS];
  uint64_t span = 1, numel, bytes;
  int overflow = 0, empty = 0;
  for (int d = 0; d < ndim; d++) {
    sizes[d] = be32(dims + 4 * d);
    empty |= sizes[d] == 0;
    if (sizes[d]) overflow |= __builtin_mul_overflow(span, (uint64_t)sizes[d], &span);
  }
  overflow |= span > (uint64_t)INT64_MAX / 8;
  char sz[160];
  if (overflow)
    return mt__error(MT_ERR_FORMAT, "idx: %s: sizes %s at byte offset 4 describe more elements than can be addressed",
                     what, mt__sizes_str(ndim, sizes, sz, sizeof sz));
  numel = empty ? 0 : span;
  bytes = numel * ty->size;
  uint64_t data_start = s->out_pos;
  /* more data declared than these bytes could hold: find where they really end (cheap, no
   * allocation) so the error gives the same offset as a short file of plausible size */
  if (bytes > mt__zsource_max_remaining(s)) {
    uint64_t got;
    MT_TRY(mt__zsource_read(s, NULL, bytes, &got));
    return truncated(s, data_start, got, bytes, "the data");
  }

  mt_tensor *t = NULL;
  mt_status st = mt_tensor_new(&t, ty->dtype, MT_CPU, ndim, sizes);
  if (st != MT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", mt_last_error());
    return mt__error(st, "idx: %s: cannot make a %s tensor for %s elements: %s", what, mt_dtype_name(ty->dtype),
                     mt__sizes_str(ndim, sizes, sz, sizeof sz), why);
  }
  uint8_t *data = (uint8_t *)mt__data(t);
  if (bytes) st = need(s, data, bytes, "the data");
  if (st == MT_OK) {
    uint8_t extra;
    uint64_t got;
    st = mt__zsource_read(s, &extra, 1, &got); /* for gzip, this also checks the stream's CRC */
    if (st == MT_OK && got)
      st = mt__error(MT_ERR_FORMAT,
                     "idx: %s: unexpected data after byte offset %llu (the header declares %s elements of %d bytes)",
                     what, (unsigned long long)(data_start + bytes), mt__sizes_str(ndim, sizes, sz, sizeof sz),
                     ty->size);
    else if (st == MT_OK && s->cut)
      st = mt__error(MT_ERR_FORMAT,
                     "idx: %s: the gzip stream is cut short at compressed byte %zu, after all %llu bytes of data "
                     "(its end and checksum are missing)",
                     what, s->len, (unsigned long long)(data_start + bytes));
  }
  if (st != MT_OK) {
    mt_tensor_release(t);
    return st;
  }
  to_host(data, (int64_t)numel, ty);
  *out = t;
  return MT_OK;
}

mt_status mt_idx_parse(mt_tensor **out, const void *buf, size_t len, const char *what) {
  if (!out) return mt__error(MT_ERR_ARG, "idx: out is NULL");
  *out = NULL;
  if (!what) what = "<memory>";
  if (!buf && len) return mt__error(MT_ERR_ARG, "idx: %s: buffer is NULL but its length is %zu", what, len);
  mt__zsource s;
  mt__zsource_init(&s, buf ? buf : "", len, "idx", what);
  mt_status st = parse(out, &s);
  mt__zsource_free(&s);
  return st;
}

mt_status mt_idx_load(mt_tensor **out, const char *path) {
  if (!out) return mt__error(MT_ERR_ARG, "idx: out is NULL");
  *out = NULL;
  mt__file_bytes f;
  MT_TRY(mt__file_bytes_open(&f, path, "idx"));
  mt_status st = mt_idx_parse(out, f.data, f.len, path);
  mt__file_bytes_close(&f);
  return st;
}
