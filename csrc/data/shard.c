/* shard.c: packed shards, many encoded samples in one file so that a dataset of a million small
 * images reads as a few hundred large files.
 *
 * Layout, every integer little-endian whatever the host:
 *   header, 64 bytes at offset 0
 *      0  8 bytes  magic "MTSHARD\0"
 *      8  u32      version (1)
 *     12  u32      size of an index entry (32)
 *     16  u64      record count N
 *     24  u64      index offset (= end of the record area)
 *     32  u64      index size in bytes (N entries, then the names blob)
 *     40  u32      CRC-32 of the index
 *     44  u32      CRC-32 of header bytes [0, 44)
 *     48  16 bytes zero
 *   records back to back from offset 64 up to the index offset
 *   index: N entries of 32 bytes
 *      0  u64 record offset    8  u32 length    12  i32 label (>= 0)    16  u32 CRC-32 of the record
 *     20  u32 name offset into the names blob   24  u32 name length     28  u32 zero
 *   names blob: the records' names (no terminators), up to the end of the file
 * The index sits at the end so that the writer streams records without knowing their number;
 * the header is written last, and the whole file is renamed into place only once complete.
 * CRC-32 is zlib's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "../core/error.h"

#define SH_MAGIC "MTSHARD" /* 7 characters + the terminating zero = 8 bytes */
#define SH_VERSION 1u
#define SH_HEADER 64u
#define SH_ENTRY 32u

/* ------------------------------------------------------------------------------------------
 * little-endian fields */

static void put_u32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* zlib's crc32 takes a 32-bit length: feed large buffers in pieces */
static uint32_t crc_update(uint32_t crc, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
    crc = (uint32_t)crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return crc;
}

/* pwrite all n bytes at off (no shared file position) */
static int write_all(int fd, const void *buf, size_t n, uint64_t off) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pwrite(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------
 * writer */

struct mt_shard_writer {
  char *path, *tmp;
  int fd;
  int failed;   /* a write failed: commit must not publish a partial file */
  uint64_t pos; /* where the next record goes */
  uint64_t n;
  uint8_t *index; /* serialised entries, SH_ENTRY bytes each */
  uint64_t index_cap;
  uint8_t *names;
  uint64_t names_len, names_cap;
};

static void writer_free(mt_shard_writer *w) {
  if (w->fd >= 0) close(w->fd);
  free(w->path);
  free(w->tmp);
  free(w->index);
  free(w->names);
  free(w);
}

mt_status mt_shard_writer_open(mt_shard_writer **out, const char *path) {
  if (!out) return mt__error(MT_ERR_ARG, "shard_writer_open: out is NULL");
  *out = NULL;
  if (!path || !*path) return mt__error(MT_ERR_ARG, "shard_writer_open: path is NULL or empty");
  mt_shard_writer *w = calloc(1, sizeof *w);
  if (!w) return mt__error(MT_ERR_MEMORY, "shard_writer_open: %s: out of memory", path);
  w->fd = -1;
  size_t len = strlen(path) + 32;
  w->path = strdup(path);
  w->tmp = malloc(len);
  if (!w->path || !w->tmp) {
    writer_free(w);
    return mt__error(MT_ERR_MEMORY, "shard_writer_open: %s: out of memory", path);
  }
  snprintf(w->tmp, len, "%s.tmp.%ld", path, (long)getpid());
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0) {
    int e = errno;
    writer_free(w);
    return mt__error(MT_ERR_IO, "shard_writer_open: cannot create %s.tmp.%ld: %s", path, (long)getpid(), strerror(e));
  }
  /* the header's place; its contents are written by commit */
  uint8_t zero[SH_HEADER] = {0};
  if (write_all(w->fd, zero, sizeof zero, 0) != 0) {
    int e = errno;
    mt_status st = mt__error(MT_ERR_IO, "shard_writer_open: %s: write failed: %s", w->tmp, strerror(e));
    mt_shard_writer_abort(w);
    return st;
  }
  w->pos = SH_HEADER;
  *out = w;
  return MT_OK;
}

/* grow *buf (capacity *cap) to hold need bytes */
static int grow(uint8_t **buf, uint64_t *cap, uint64_t need) {
  if (need <= *cap) return 0;
  uint64_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  if (c > SIZE_MAX) return -1;
  void *p = realloc(*buf, (size_t)c);
  if (!p) return -1;
  *buf = p;
  *cap = c;
  return 0;
}

mt_status mt_shard_writer_add(mt_shard_writer *w, const void *buf, size_t len, int32_t label, const char *name) {
  if (!w) return mt__error(MT_ERR_ARG, "shard_writer_add: writer is NULL");
  if (w->failed) return mt__error(MT_ERR_IO, "shard_writer_add: %s: an earlier write failed", w->tmp);
  if (!buf && len) return mt__error(MT_ERR_ARG, "shard_writer_add: %s: buffer is NULL", w->tmp);
  if (!name) name = "";
  if (len > UINT32_MAX)
    return mt__error(MT_ERR_ARG, "shard_writer_add: %s: record '%s' has %zu bytes; at most %u fit in a shard entry",
                     w->tmp, name, len, UINT32_MAX);
  if (label < 0)
    return mt__error(MT_ERR_ARG, "shard_writer_add: %s: record '%s' has label %d; labels are >= 0", w->tmp, name,
                     (int)label);
  size_t nlen = strlen(name);
  if (nlen > UINT32_MAX || w->names_len + nlen > UINT32_MAX)
    return mt__error(MT_ERR_ARG, "shard_writer_add: %s: names exceed 4 GiB at record '%.64s...'", w->tmp, name);
  if (grow(&w->index, &w->index_cap, (w->n + 1) * SH_ENTRY) != 0 ||
      grow(&w->names, &w->names_cap, w->names_len + nlen + 1) != 0)
    return mt__error(MT_ERR_MEMORY, "shard_writer_add: %s: out of memory at record %llu", w->tmp,
                     (unsigned long long)w->n);
  if (len && write_all(w->fd, buf, len, w->pos) != 0) {
    w->failed = 1;
    return mt__error(MT_ERR_IO,
                     "shard_writer_add: %s: write of record %llu ('%s', %zu bytes) at byte offset %llu "
                     "failed: %s",
                     w->tmp, (unsigned long long)w->n, name, len, (unsigned long long)w->pos, strerror(errno));
  }
  uint8_t *e = w->index + w->n * SH_ENTRY;
  put_u64(e, w->pos);
  put_u32(e + 8, (uint32_t)len);
  put_u32(e + 12, (uint32_t)label);
  put_u32(e + 16, crc_update(0, buf, len));
  put_u32(e + 20, (uint32_t)w->names_len);
  put_u32(e + 24, (uint32_t)nlen);
  put_u32(e + 28, 0);
  memcpy(w->names + w->names_len, name, nlen);
  w->names_len += nlen;
  w->pos += len;
  w->n++;
  return MT_OK;
}

void mt_shard_writer_abort(mt_shard_writer *w) {
  if (!w) return;
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
  }
  unlink(w->tmp);
  writer_free(w);
}

/* make the rename durable: fsync the directory holding path. File systems that cannot sync a
 * directory (EINVAL) have nothing more to do. */
static int sync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return ENOMEM;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (fd < 0) return errno;
  int r = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
  close(fd);
  return r;
}

mt_status mt_shard_writer_commit(mt_shard_writer *w) {
  if (!w) return mt__error(MT_ERR_ARG, "shard_writer_commit: writer is NULL");
  mt_status st = MT_OK;
  if (w->failed) {
    st = mt__error(MT_ERR_IO, "shard_writer_commit: %s: an earlier write failed; nothing was published", w->path);
    mt_shard_writer_abort(w);
    return st;
  }
  uint64_t isize = w->n * SH_ENTRY, off = w->pos;
  uint32_t icrc = crc_update(crc_update(0, w->index, isize), w->names, w->names_len);
  uint8_t h[SH_HEADER] = {0};
  memcpy(h, SH_MAGIC, 8);
  put_u32(h + 8, SH_VERSION);
  put_u32(h + 12, SH_ENTRY);
  put_u64(h + 16, w->n);
  put_u64(h + 24, off);
  put_u64(h + 32, isize + w->names_len);
  put_u32(h + 40, icrc);
  put_u32(h + 44, crc_update(0, h, 44));
  if ((isize && write_all(w->fd, w->index, isize, off) != 0) ||
      (w->names_len && write_all(w->fd, w->names, w->names_len, off + isize) != 0) ||
      write_all(w->fd, h, sizeof h, 0) != 0) {
    st = mt__error(MT_ERR_IO, "shard_writer_commit: %s: writing the index failed: %s", w->tmp, strerror(errno));
  } else if (fsync(w->fd) != 0) {
    st = mt__error(MT_ERR_IO, "shard_writer_commit: %s: fsync failed: %s", w->tmp, strerror(errno));
  } else {
    int r = close(w->fd);
    w->fd = -1;
    if (r != 0) st = mt__error(MT_ERR_IO, "shard_writer_commit: %s: close failed: %s", w->tmp, strerror(errno));
    else if (rename(w->tmp, w->path) != 0)
      st = mt__error(MT_ERR_IO, "shard_writer_commit: cannot rename %s to %s: %s", w->tmp, w->path, strerror(errno));
    else {
      int e = sync_parent(w->path);
      writer_free(w); /* published: nothing to remove any more */
      if (e)
        return mt__error(MT_ERR_IO, "shard_writer_commit: shard written but fsync of its directory failed: %s",
                         strerror(e));
      return MT_OK;
    }
  }
  mt_shard_writer_abort(w);
  return st;
}

/* ------------------------------------------------------------------------------------------
 * reader */

typedef struct sh_entry {
  uint64_t offset;
  uint32_t length;
  int32_t label;
  uint32_t crc;
  uint32_t name; /* offset of the terminated copy in mt_shard.names */
} sh_entry;

struct mt_shard {
  char *path;    /* the file, or the name given to mt_shard_parse */
  int fd;        /* -1 for a shard in memory */
  uint8_t *mem;  /* the copied bytes of a shard in memory */
  uint64_t size; /* file size */
  int64_t n;
  sh_entry *e;
  char *names; /* every name, zero-terminated */
};

void mt_shard_close(mt_shard *s) {
  if (!s) return;
  if (s->fd >= 0) close(s->fd);
  free(s->mem);
  free(s->e);
  free(s->names);
  free(s->path);
  free(s);
}

/* up to n bytes at off from the file or the memory copy: the count read (short only at the
 * end of the file), or -1 with errno set */
static int64_t sh_pread(const mt_shard *s, void *dst, size_t n, uint64_t off) {
  if (s->fd < 0) {
    if (off >= s->size || n == 0) return 0;
    uint64_t k = s->size - off < n ? s->size - off : n;
    memcpy(dst, s->mem + off, (size_t)k);
    return (int64_t)k;
  }
  uint8_t *p = dst;
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(s->fd, p + done, n - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += (size_t)r;
  }
  return (int64_t)done;
}

/* check one index entry against the record area and the names blob, and take it */
static mt_status sh_entry_take(mt_shard *s, int64_t i, const uint8_t *e, uint64_t ioff, const uint8_t *blob,
                               uint64_t blob_len, uint64_t *names_used) {
  const char *p = s->path;
  unsigned long long at = (unsigned long long)(ioff + (uint64_t)i * SH_ENTRY);
  uint64_t off = get_u64(e);
  uint32_t len = get_u32(e + 8), noff = get_u32(e + 20), nlen = get_u32(e + 24);
  int32_t label = (int32_t)get_u32(e + 12);
  if (off < SH_HEADER || off > ioff || len > ioff - off)
    return mt__error(MT_ERR_FORMAT,
                     "shard %s: record %lld: bytes [%llu, %llu + %u) lie outside the record area "
                     "[%u, %llu) (index entry at byte offset %llu)",
                     p, (long long)i, (unsigned long long)off, (unsigned long long)off, len, SH_HEADER,
                     (unsigned long long)ioff, at);
  if (noff > blob_len || nlen > blob_len - noff || nlen > blob_len - *names_used)
    return mt__error(MT_ERR_FORMAT,
                     "shard %s: record %lld: name [%u, %u + %u) lies outside the %llu-byte names blob "
                     "(index entry at byte offset %llu)",
                     p, (long long)i, noff, noff, nlen, (unsigned long long)blob_len, at);
  if (memchr(blob + noff, 0, nlen))
    return mt__error(MT_ERR_FORMAT,
                     "shard %s: record %lld: name contains a zero byte (index entry at byte offset %llu)", p,
                     (long long)i, at);
  if (label < 0)
    return mt__error(MT_ERR_FORMAT, "shard %s: record %lld: negative label %d (index entry at byte offset %llu)", p,
                     (long long)i, (int)label, at);
  /* names are copied out terminated; the sum of their lengths is bounded by the blob (checked
   * above), so hostile overlapping names cannot blow up memory */
  sh_entry *d = &s->e[i];
  d->offset = off;
  d->length = len;
  d->label = label;
  d->crc = get_u32(e + 16);
  d->name = (uint32_t)(*names_used + (uint64_t)i);
  memcpy(s->names + d->name, blob + noff, nlen);
  s->names[d->name + nlen] = 0;
  *names_used += nlen;
  return MT_OK;
}

/* header, then the whole index in one read; everything checked before any record is read */
static mt_status sh_load(mt_shard *s) {
  const char *p = s->path;
  uint8_t h[SH_HEADER];
  if (s->size < SH_HEADER)
    return mt__error(MT_ERR_FORMAT, "shard %s: truncated: %llu bytes, the header alone needs %u", p,
                     (unsigned long long)s->size, SH_HEADER);
  int64_t r = sh_pread(s, h, SH_HEADER, 0);
  if (r != (int64_t)SH_HEADER)
    return mt__error(MT_ERR_IO, "shard %s: cannot read the header at byte offset 0: %s", p,
                     r < 0 ? strerror(errno) : "short read");
  if (memcmp(h, SH_MAGIC, 8) != 0)
    return mt__error(MT_ERR_FORMAT, "shard %s: not a moontorch shard (bad magic at byte offset 0)", p);
  uint32_t version = get_u32(h + 8);
  if (version != SH_VERSION)
    return mt__error(MT_ERR_FORMAT, "shard %s: unsupported version %u at byte offset 8 (this build reads version %u)",
                     p, version, SH_VERSION);
  if (get_u32(h + 44) != crc_update(0, h, 44))
    return mt__error(MT_ERR_FORMAT, "shard %s: header checksum mismatch at byte offset 44: the header is corrupt", p);
  if (get_u32(h + 12) != SH_ENTRY)
    return mt__error(MT_ERR_FORMAT, "shard %s: index entries of %u bytes at byte offset 12; version %u has %u", p,
                     get_u32(h + 12), SH_VERSION, SH_ENTRY);
  uint64_t n = get_u64(h + 16), ioff = get_u64(h + 24), isize = get_u64(h + 32);
  if (ioff < SH_HEADER || ioff > s->size || isize != s->size - ioff)
    return mt__error(MT_ERR_FORMAT,
                     "shard %s: the header puts a %llu-byte index at byte offset %llu but the file has "
                     "%llu bytes: truncated or extended",
                     p, (unsigned long long)isize, (unsigned long long)ioff, (unsigned long long)s->size);
  if (n > isize / SH_ENTRY)
    return mt__error(MT_ERR_FORMAT, "shard %s: %llu records at byte offset 16 do not fit the %llu-byte index", p,
                     (unsigned long long)n, (unsigned long long)isize);
  if (isize > SIZE_MAX / 2)
    return mt__error(MT_ERR_MEMORY, "shard %s: index of %llu bytes is too large", p, (unsigned long long)isize);
  uint8_t *idx = malloc(isize ? (size_t)isize : 1);
  if (!idx)
    return mt__error(MT_ERR_MEMORY, "shard %s: out of memory for a %llu-byte index", p, (unsigned long long)isize);
  r = sh_pread(s, idx, (size_t)isize, ioff);
  if (r != (int64_t)isize) {
    int e = errno;
    free(idx);
    return mt__error(MT_ERR_IO, "shard %s: cannot read the index at byte offset %llu: %s", p, (unsigned long long)ioff,
                     r < 0 ? strerror(e) : "short read");
  }
  mt_status st = MT_OK;
  if (get_u32(h + 40) != crc_update(0, idx, (size_t)isize)) {
    st = mt__error(MT_ERR_FORMAT,
                   "shard %s: index checksum mismatch (index at byte offset %llu, %llu bytes): the "
                   "index is corrupt",
                   p, (unsigned long long)ioff, (unsigned long long)isize);
  } else {
    uint64_t blob_len = isize - n * SH_ENTRY, used = 0;
    s->e = malloc(n ? (size_t)n * sizeof(sh_entry) : 1);
    s->names = malloc((size_t)(blob_len + n + 1));
    if (!s->e || !s->names)
      st = mt__error(MT_ERR_MEMORY, "shard %s: out of memory for %llu index entries", p, (unsigned long long)n);
    for (uint64_t i = 0; st == MT_OK && i < n; i++)
      st = sh_entry_take(s, (int64_t)i, idx + i * SH_ENTRY, ioff, idx + n * SH_ENTRY, blob_len, &used);
    if (st == MT_OK) s->n = (int64_t)n;
  }
  free(idx);
  return st;
}

static mt_status sh_new(mt_shard **out, const char *name) {
  mt_shard *s = calloc(1, sizeof *s);
  if (s) s->path = strdup(name);
  if (!s || !s->path) {
    free(s);
    return mt__error(MT_ERR_MEMORY, "shard %s: out of memory", name);
  }
  s->fd = -1;
  *out = s;
  return MT_OK;
}

mt_status mt_shard_open(mt_shard **out, const char *path) {
  if (!out) return mt__error(MT_ERR_ARG, "shard_open: out is NULL");
  *out = NULL;
  if (!path) return mt__error(MT_ERR_ARG, "shard_open: path is NULL");
  mt_shard *s = NULL;
  MT_TRY(sh_new(&s, path));
  s->fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  mt_status st = MT_OK;
  if (s->fd < 0) st = mt__error(MT_ERR_IO, "shard %s: cannot open: %s", path, strerror(errno));
  else if (fstat(s->fd, &sb) != 0) st = mt__error(MT_ERR_IO, "shard %s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode)) st = mt__error(MT_ERR_IO, "shard %s: not a regular file", path);
  else {
    s->size = (uint64_t)sb.st_size;
    st = sh_load(s);
  }
  if (st != MT_OK) {
    mt_shard_close(s);
    return st;
  }
  *out = s;
  return MT_OK;
}

mt_status mt_shard_parse(mt_shard **out, const void *buf, size_t len, const char *name) {
  if (!out) return mt__error(MT_ERR_ARG, "shard_parse: out is NULL");
  *out = NULL;
  if (!buf && len) return mt__error(MT_ERR_ARG, "shard_parse: buffer is NULL");
  if (!name) name = "<memory>";
  mt_shard *s = NULL;
  MT_TRY(sh_new(&s, name));
  s->mem = malloc(len ? len : 1);
  mt_status st;
  if (!s->mem) st = mt__error(MT_ERR_MEMORY, "shard %s: out of memory for a copy of %zu bytes", name, len);
  else {
    if (len) memcpy(s->mem, buf, len);
    s->size = len;
    st = sh_load(s);
  }
  if (st != MT_OK) {
    mt_shard_close(s);
    return st;
  }
  *out = s;
  return MT_OK;
}

int64_t mt_shard_count(const mt_shard *s) { return s ? s->n : 0; }

static mt_status sh_check_index(const mt_shard *s, int64_t i, const char *op) {
  if (!s) return mt__error(MT_ERR_ARG, "%s: shard is NULL", op);
  if (i < 0 || i >= s->n)
    return mt__error(MT_ERR_INDEX, "%s: shard %s: record %lld out of range (%lld records)", op, s->path, (long long)i,
                     (long long)s->n);
  return MT_OK;
}

mt_status mt_shard_entry(const mt_shard *s, int64_t i, uint64_t *offset, uint32_t *length, int32_t *label,
                         const char **name) {
  MT_TRY(sh_check_index(s, i, "shard_entry"));
  const sh_entry *e = &s->e[i];
  if (offset) *offset = e->offset;
  if (length) *length = e->length;
  if (label) *label = e->label;
  if (name) *name = s->names + e->name;
  return MT_OK;
}

mt_status mt_shard_read(const mt_shard *s, int64_t i, void *dst, size_t cap) {
  MT_TRY(sh_check_index(s, i, "shard_read"));
  const sh_entry *e = &s->e[i];
  const char *p = s->path, *name = s->names + e->name;
  if (cap < e->length || (!dst && e->length))
    return mt__error(MT_ERR_ARG, "shard_read: shard %s: record %lld ('%s') has %u bytes; the buffer holds %zu", p,
                     (long long)i, name, e->length, dst ? cap : 0);
  int64_t r = sh_pread(s, dst, e->length, e->offset);
  if (r < 0)
    return mt__error(MT_ERR_IO, "shard %s: record %lld ('%s') at byte offset %llu: read failed: %s", p, (long long)i,
                     name, (unsigned long long)e->offset, strerror(errno));
  if (r != (int64_t)e->length)
    return mt__error(MT_ERR_IO,
                     "shard %s: record %lld ('%s') at byte offset %llu: only %lld of %u bytes could be read "
                     "(the file shrank after it was opened)",
                     p, (long long)i, name, (unsigned long long)e->offset, (long long)r, e->length);
  uint32_t crc = crc_update(0, dst, e->length);
  if (crc != e->crc)
    return mt__error(MT_ERR_FORMAT,
                     "shard %s: record %lld ('%s') at byte offset %llu (%u bytes): CRC-32 mismatch "
                     "(index says %08x, data gives %08x): the record is corrupt",
                     p, (long long)i, name, (unsigned long long)e->offset, e->length, e->crc, crc);
  return MT_OK;
}
