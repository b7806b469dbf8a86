/* zsource.h: the bytes of a small-format file (IDX, CIFAR) read as a stream, plain or gzip.
 * Shared by idx.c and cifar.c. Gzip is recognised by its magic (1f 8b) and inflated from
 * memory in bounded steps into the caller's buffer, so a file's decompressed size is never
 * trusted before the bytes are actually there. */
#ifndef MT_DATA_ZSOURCE_H
#define MT_DATA_ZSOURCE_H
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>
#include "../moontorch.h"

/* deflate's best case is 1032:1; a stream of n compressed bytes never inflates to more than
 * this (plus a margin for headers), which lets a parser reject impossible sizes up front */
#define MT__INFLATE_MAX_RATIO 1032u

typedef struct mt__zsource {
  const uint8_t *buf;
  size_t len;
  size_t in_pos;         /* plain: next byte to read; gzip: compressed bytes consumed */
  uint64_t out_pos;      /* decompressed bytes delivered so far (= file offset for plain files) */
  int gz;                /* the bytes are a gzip stream */
  int z_ready;           /* z was initialised (inflateEnd is due) */
  int ended;             /* no more data: end of the plain bytes or of the last gzip member */
  int cut;               /* gzip: the compressed bytes ran out before the stream's end */
  const char *op, *what; /* for error messages: "idx", the file name */
  z_stream z;
} mt__zsource;

void mt__zsource_init(mt__zsource *s, const void *buf, size_t len, const char *op, const char *what);
/* Read up to n bytes into dst (dst NULL: skip them). *got < n only at the end of the data or
 * where a gzip stream is cut short (s->cut says which); corrupt gzip data is an error. */
mt_status mt__zsource_read(mt__zsource *s, void *dst, uint64_t n, uint64_t *got);
/* an upper bound on the decompressed bytes still to come */
uint64_t mt__zsource_max_remaining(const mt__zsource *s);
void mt__zsource_free(mt__zsource *s);

/* A whole file read into memory (empty files give len 0). Errors name op and path. */
typedef struct mt__file_bytes {
  const uint8_t *data;
  size_t len;
  void *owned; /* the buffer, freed by close */
} mt__file_bytes;
mt_status mt__file_bytes_open(mt__file_bytes *f, const char *path, const char *op);
void mt__file_bytes_close(mt__file_bytes *f);

#endif
