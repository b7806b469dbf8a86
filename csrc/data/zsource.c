/* zsource.c: plain-or-gzip byte streams over memory, and whole files read into memory (see
 * zsource.h). Concatenated gzip members are read as one stream (as gzip -d does); any other
 * bytes after the last member are an error, since they mean the file is not what it claims. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zsource.h"
#include "../core/error.h"

/* zlib counts in unsigned int; steps stay well below that */
#define Z_STEP (1u << 30)
/* output inflate may hold back (a pending match, bits in its accumulator) on top of the
 * ratio bound for the input it has not consumed yet */
#define Z_SLACK (1u << 16)

void mt__zsource_init(mt__zsource *s, const void *buf, size_t len, const char *op, const char *what) {
  memset(s, 0, sizeof *s);
  s->buf = buf;
  s->len = len;
  s->op = op;
  s->what = what;
  s->gz = len >= 2 && s->buf[0] == 0x1f && s->buf[1] == 0x8b;
  s->ended = !s->gz && len == 0;
}

void mt__zsource_free(mt__zsource *s) {
  if (s->z_ready) inflateEnd(&s->z);
  s->z_ready = 0;
}

uint64_t mt__zsource_max_remaining(const mt__zsource *s) {
  uint64_t left = s->len - s->in_pos;
  if (!s->gz) return left;
  if (s->ended || s->cut) return 0;
  if (left > (UINT64_MAX - Z_SLACK) / MT__INFLATE_MAX_RATIO) return UINT64_MAX;
  return left * MT__INFLATE_MAX_RATIO + Z_SLACK;
}

static mt_status corrupt(const mt__zsource *s, int ret) {
  const char *why = s->z.msg ? s->z.msg : zError(ret);
  if (ret == Z_MEM_ERROR) return mt__error(MT_ERR_MEMORY, "%s: %s: out of memory inflating gzip data", s->op, s->what);
  return mt__error(MT_ERR_FORMAT,
                   "%s: %s: corrupt gzip data at compressed byte offset %zu (decompressed byte offset %llu): %s", s->op,
                   s->what, s->in_pos, (unsigned long long)s->out_pos, why);
}

static mt_status read_gz(mt__zsource *s, uint8_t *dst, uint64_t n, uint64_t *got) {
  uint8_t scratch[16384]; /* where skipped bytes go */
  uint64_t done = 0;
  while (done < n && !s->ended && !s->cut) {
    if (!s->z_ready) {
      memset(&s->z, 0, sizeof s->z);
      int ret = inflateInit2(&s->z, 15 + 32); /* 32: accept the gzip wrapper */
      if (ret != Z_OK) return corrupt(s, ret);
      s->z_ready = 1;
    }
    if (s->in_pos == s->len) {
      s->cut = 1; /* the compressed bytes ended inside a member */
      break;
    }
    uint64_t want = n - done;
    uint8_t *out = dst ? dst + done : scratch;
    if (!dst && want > sizeof scratch) want = sizeof scratch;
    if (want > Z_STEP) want = Z_STEP;
    size_t in_avail = s->len - s->in_pos;
    if (in_avail > Z_STEP) in_avail = Z_STEP;
    s->z.next_in = (Bytef *)(s->buf + s->in_pos);
    s->z.avail_in = (uInt)in_avail;
    s->z.next_out = out;
    s->z.avail_out = (uInt)want;
    int ret = inflate(&s->z, Z_NO_FLUSH);
    size_t used = in_avail - s->z.avail_in;
    uint64_t made = want - s->z.avail_out;
    s->in_pos += used;
    s->out_pos += made;
    done += made;
    if (ret == Z_STREAM_END) {
      size_t left = s->len - s->in_pos;
      if (left == 0) {
        s->ended = 1;
      } else if (left >= 2 && s->buf[s->in_pos] == 0x1f && s->buf[s->in_pos + 1] == 0x8b) {
        inflateReset(&s->z); /* the next member of a concatenated file */
      } else {
        return mt__error(MT_ERR_FORMAT,
                         "%s: %s: %zu unexpected bytes after the gzip stream at compressed byte offset %zu", s->op,
                         s->what, left, s->in_pos);
      }
    } else if (ret != Z_OK && !(ret == Z_BUF_ERROR && (used || made))) {
      return corrupt(s, ret); /* Z_BUF_ERROR without progress cannot happen with both buffers non-empty */
    }
  }
  *got = done;
  return MT_OK;
}

mt_status mt__zsource_read(mt__zsource *s, void *dst, uint64_t n, uint64_t *got) {
  *got = 0;
  if (s->gz) return read_gz(s, dst, n, got);
  uint64_t left = s->len - s->in_pos, k = n < left ? n : left;
  if (dst && k) memcpy(dst, s->buf + s->in_pos, (size_t)k);
  s->in_pos += (size_t)k;
  s->out_pos += k;
  s->ended = s->in_pos == s->len;
  *got = k;
  return MT_OK;
}

void mt__file_bytes_close(mt__file_bytes *f) {
  free(f->owned);
  memset(f, 0, sizeof *f);
}

/* read() rather than mmap: a file truncated by another process while we parse it must give an
 * error, not SIGBUS */
mt_status mt__file_bytes_open(mt__file_bytes *f, const char *path, const char *op) {
  memset(f, 0, sizeof *f);
  if (!path) return mt__error(MT_ERR_ARG, "%s: path is NULL", op);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mt__error(MT_ERR_IO, "%s: cannot open %s: %s", op, path, strerror(errno));
  struct stat sb;
  mt_status st = MT_OK;
  if (fstat(fd, &sb) != 0) {
    st = mt__error(MT_ERR_IO, "%s: cannot stat %s: %s", op, path, strerror(errno));
  } else if (!S_ISREG(sb.st_mode)) {
    st = mt__error(MT_ERR_IO, "%s: cannot open %s: %s", op, path,
                   S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
  } else if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX / 2) {
    st = mt__error(MT_ERR_MEMORY, "%s: %s: %lld bytes do not fit in memory", op, path, (long long)sb.st_size);
  } else {
    size_t size = (size_t)sb.st_size, done = 0;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) st = mt__error(MT_ERR_MEMORY, "%s: %s: out of memory reading %zu bytes", op, path, size);
    while (st == MT_OK && done < size) {
      size_t want = size - done < Z_STEP ? size - done : Z_STEP;
      ssize_t r = read(fd, buf + done, want);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0)
        st = mt__error(MT_ERR_IO, "%s: %s: read failed at byte offset %zu: %s", op, path, done, strerror(errno));
      else if (r == 0) break; /* the file shrank since fstat: parse what is there */
      else done += (size_t)r;
    }
    if (st == MT_OK) {
      f->owned = buf;
      f->data = buf;
      f->len = done;
    } else {
      free(buf);
    }
  }
  close(fd);
  return st;
}
