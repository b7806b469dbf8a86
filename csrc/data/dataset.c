/* dataset.c: a dataset is a list of samples (name, label, where the encoded bytes live) plus the
 * class names. Samples come from loose files (mt_dataset_add_file, or a directory scan in
 * folder.c) or from the records of packed shards (shard.c). Reading is safe from many threads:
 * files are opened per read and shard records are read with pread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dataset.h"
#include "../core/error.h"
#include "../core/tensor.h"

#define NAME_BLOCK ((size_t)1 << 16)

mt_status mt_dataset_new(mt_dataset **out) {
  if (!out) return mt__error(MT_ERR_ARG, "dataset_new: out is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return mt__error(MT_ERR_MEMORY, "dataset_new: out of memory");
  return MT_OK;
}

void mt_dataset_free(mt_dataset *d) {
  if (!d) return;
  for (int64_t i = 0; i < d->nname_blocks; i++) free(d->name_blocks[i]);
  free(d->name_blocks);
  free(d->samples);
  for (int i = 0; i < d->nclasses; i++) free(d->classes[i]);
  free(d->classes);
  for (int i = 0; i < d->nshards; i++) mt_shard_close(d->shards[i]);
  free(d->shards);
  for (int i = 0; i < d->nwarnings; i++) free(d->warnings[i]);
  free(d->warnings);
  free(d->arena);
  free(d->cache_off);
  mt__dataset_free_cache_errors(d->cache_errors, d->cache_nerrors);
  free(d);
}

/* ------------------------------------------------------------------------------------------
 * building */

/* make room for one more element in a growable array (growth by half keeps the slack of a
 * million-sample list small) */
static int reserve(void **arr, int64_t n, int64_t *cap, size_t elem, int64_t limit) {
  if (n < *cap) return 0;
  if (n >= limit) return -1;
  int64_t c = *cap < 16 ? 16 : *cap + *cap / 2;
  if (c > limit) c = limit;
  if ((uint64_t)c > SIZE_MAX / elem) return -1;
  void *p = realloc(*arr, (size_t)c * elem);
  if (!p) return -1;
  *arr = p;
  *cap = c;
  return 0;
}

static int reserve_int(void **arr, int n, int *cap, size_t elem) {
  int64_t c = *cap;
  if (reserve(arr, n, &c, elem, INT32_MAX) != 0) return -1;
  *cap = (int)c;
  return 0;
}

/* a copy of name carved from the name blocks */
static char *name_copy(mt_dataset *d, const char *name) {
  size_t len = strlen(name) + 1;
  if (len > d->name_left) {
    if (reserve((void **)&d->name_blocks, d->nname_blocks, &d->name_blocks_cap, sizeof(char *), INT64_MAX) != 0)
      return NULL;
    size_t size = len > NAME_BLOCK ? len : NAME_BLOCK;
    char *b = malloc(size);
    if (!b) return NULL;
    d->name_blocks[d->nname_blocks++] = b;
    d->name_next = b;
    d->name_left = size;
  }
  char *s = d->name_next;
  memcpy(s, name, len);
  d->name_next += len;
  d->name_left -= len;
  return s;
}

mt_status mt__dataset_push(mt_dataset *d, const char *name, int32_t label, int32_t shard, int64_t record,
                           uint64_t length) {
  if (reserve((void **)&d->samples, d->n, &d->cap, sizeof(mt__sample), INT64_MAX / 2) != 0)
    return mt__error(MT_ERR_MEMORY, "dataset: out of memory adding sample %lld (%s)", (long long)d->n, name);
  char *copy = name_copy(d, name);
  if (!copy) return mt__error(MT_ERR_MEMORY, "dataset: out of memory adding sample %lld (%s)", (long long)d->n, name);
  mt__sample *s = &d->samples[d->n++];
  s->name = copy;
  s->label = label;
  s->shard = shard;
  s->record = record;
  s->length = length;
  return MT_OK;
}

mt_status mt__dataset_push_class(mt_dataset *d, const char *name) {
  if (reserve_int((void **)&d->classes, d->nclasses, &d->classes_cap, sizeof(char *)) != 0)
    return mt__error(MT_ERR_MEMORY, "dataset: out of memory adding class '%s'", name);
  char *copy = strdup(name);
  if (!copy) return mt__error(MT_ERR_MEMORY, "dataset: out of memory adding class '%s'", name);
  d->classes[d->nclasses++] = copy;
  return MT_OK;
}

/* Names of dropped samples stay in the name blocks until the dataset is freed: a failed add
 * is rare and must not cost a per-name allocation. */
void mt__dataset_truncate(mt_dataset *d, int64_t n, int nclasses, int nwarnings) {
  if (d->n > n) d->n = n;
  while (d->nclasses > nclasses) free(d->classes[--d->nclasses]);
  while (d->nwarnings > nwarnings) free(d->warnings[--d->nwarnings]);
}

mt_status mt__dataset_warn(mt_dataset *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  int r = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (r < 0 || reserve_int((void **)&d->warnings, d->nwarnings, &d->warnings_cap, sizeof(char *)) != 0) {
    if (r >= 0) free(msg);
    return mt__error(MT_ERR_MEMORY, "dataset: out of memory recording a warning");
  }
  d->warnings[d->nwarnings++] = msg;
  return MT_OK;
}

mt_status mt_dataset_add_file(mt_dataset *d, const char *path, int32_t label) {
  if (!d) return mt__error(MT_ERR_ARG, "dataset_add_file: dataset is NULL");
  if (!path || !*path) return mt__error(MT_ERR_ARG, "dataset_add_file: path is NULL or empty");
  if (label < 0)
    return mt__error(MT_ERR_ARG, "dataset_add_file: %s: label %d is negative (labels are 0-based)", path, (int)label);
  return mt__dataset_push(d, path, label, -1, 0, 0);
}

mt_status mt_dataset_add_class(mt_dataset *d, const char *name) {
  if (!d) return mt__error(MT_ERR_ARG, "dataset_add_class: dataset is NULL");
  if (!name) return mt__error(MT_ERR_ARG, "dataset_add_class: name is NULL");
  return mt__dataset_push_class(d, name);
}

mt_status mt_dataset_add_shard(mt_dataset *d, const char *path) {
  if (!d) return mt__error(MT_ERR_ARG, "dataset_add_shard: dataset is NULL");
  if (!path) return mt__error(MT_ERR_ARG, "dataset_add_shard: path is NULL");
  if (reserve_int((void **)&d->shards, d->nshards, &d->shards_cap, sizeof(mt_shard *)) != 0)
    return mt__error(MT_ERR_MEMORY, "dataset_add_shard: %s: out of memory", path);
  mt_shard *s = NULL;
  MT_TRY(mt_shard_open(&s, path));
  int64_t n0 = d->n, count = mt_shard_count(s);
  size_t plen = strlen(path);
  char *name = NULL;
  size_t name_cap = 0;
  mt_status st = MT_OK;
  /* one allocation for the whole shard rather than growing sample by sample */
  if (count > 0 && d->n + count > d->cap) {
    int64_t want = d->n + count;
    mt__sample *p =
        (uint64_t)want <= SIZE_MAX / sizeof(mt__sample) ? realloc(d->samples, (size_t)want * sizeof *p) : NULL;
    if (!p)
      st = mt__error(MT_ERR_MEMORY, "dataset_add_shard: %s: out of memory for %lld samples", path, (long long)count);
    else {
      d->samples = p;
      d->cap = want;
    }
  }
  for (int64_t i = 0; st == MT_OK && i < count; i++) {
    uint32_t length;
    int32_t label;
    const char *rname;
    st = mt_shard_entry(s, i, NULL, &length, &label, &rname);
    if (st != MT_OK) break;
    size_t need = plen + strlen(rname) + 2;
    if (need > name_cap) {
      char *p = realloc(name, need * 2);
      if (!p) {
        st = mt__error(MT_ERR_MEMORY, "dataset_add_shard: %s: out of memory", path);
        break;
      }
      name = p;
      name_cap = need * 2;
    }
    snprintf(name, name_cap, "%s:%s", path, rname);
    st = mt__dataset_push(d, name, label, d->nshards, i, length);
  }
  free(name);
  if (st != MT_OK) {
    mt__dataset_truncate(d, n0, d->nclasses, d->nwarnings);
    mt_shard_close(s);
    return st;
  }
  d->shards[d->nshards++] = s;
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * queries */

int64_t mt_dataset_size(const mt_dataset *d) { return d ? d->n : 0; }

/* splitmix64: a seeded stream good enough for a permutation, and the same on every platform */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

mt_status mt_dataset_shuffle(mt_dataset *d, uint64_t seed) {
  if (!d) return mt__error(MT_ERR_ARG, "Dataset:shuffle: dataset is NULL");
  if (d->cache_off)
    return mt__error(MT_ERR_ARG, "Dataset:shuffle: the dataset is cached; shuffle before Dataset:cache");
  uint64_t s = seed;
  for (int64_t i = d->n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(mix(&s) % (uint64_t)(i + 1));
    mt__sample t = d->samples[i];
    d->samples[i] = d->samples[j];
    d->samples[j] = t;
  }
  return MT_OK;
}
int mt_dataset_nclasses(const mt_dataset *d) { return d ? d->nclasses : 0; }
const char *mt_dataset_class(const mt_dataset *d, int i) {
  return d && i >= 0 && i < d->nclasses ? d->classes[i] : NULL;
}
int mt_dataset_nwarnings(const mt_dataset *d) { return d ? d->nwarnings : 0; }
const char *mt_dataset_warning(const mt_dataset *d, int i) {
  return d && i >= 0 && i < d->nwarnings ? d->warnings[i] : NULL;
}

static mt_status check_index(const mt_dataset *d, int64_t i, const char *op) {
  if (!d) return mt__error(MT_ERR_ARG, "%s: dataset is NULL", op);
  if (i < 0 || i >= d->n)
    return mt__error(MT_ERR_INDEX, "%s: sample %lld out of range (the dataset has %lld samples, 0-based)", op,
                     (long long)i, (long long)d->n);
  return MT_OK;
}

mt_status mt_dataset_sample(const mt_dataset *d, int64_t i, int32_t *label, const char **name) {
  MT_TRY(check_index(d, i, "dataset_sample"));
  if (label) *label = d->samples[i].label;
  if (name) *name = d->samples[i].name;
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * reading */

static mt_status grow_buf(uint8_t **buf, size_t *cap, size_t need, const char *name) {
  if (need <= *cap && *buf) return MT_OK;
  size_t c = need > *cap ? need : *cap;
  if (c == 0) c = 1;
  uint8_t *p = realloc(*buf, c);
  if (!p) return mt__error(MT_ERR_MEMORY, "dataset: out of memory for the %zu bytes of %s", need, name);
  *buf = p;
  *cap = c;
  return MT_OK;
}

static mt_status read_file(const char *path, uint8_t **buf, size_t *cap, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mt__error(MT_ERR_IO, "dataset: cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  mt_status st = MT_OK;
  if (fstat(fd, &sb) != 0) st = mt__error(MT_ERR_IO, "dataset: cannot stat %s: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode)) st = mt__error(MT_ERR_IO, "dataset: %s is not a regular file", path);
  else if (sb.st_size == 0) st = mt__error(MT_ERR_FORMAT, "dataset: %s is empty", path);
  else if ((uint64_t)sb.st_size > SIZE_MAX / 2)
    st = mt__error(MT_ERR_MEMORY, "dataset: %s is too large (%lld bytes)", path, (long long)sb.st_size);
  else st = grow_buf(buf, cap, (size_t)sb.st_size, path);
  size_t size = st == MT_OK ? (size_t)sb.st_size : 0, done = 0;
  while (st == MT_OK && done < size) {
    ssize_t r = pread(fd, *buf + done, size - done, (off_t)done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      st = mt__error(MT_ERR_IO, "dataset: reading %s failed at byte offset %zu: %s", path, done, strerror(errno));
    else if (r == 0)
      st = mt__error(MT_ERR_IO,
                     "dataset: %s ended at byte offset %zu of %zu (it shrank while being "
                     "read)",
                     path, done, size);
    else done += (size_t)r;
  }
  close(fd);
  *len = done;
  return st;
}

mt_status mt__dataset_bytes(const mt_dataset *d, int64_t i, uint8_t **buf, size_t *cap, const uint8_t **bytes,
                            size_t *len) {
  MT_TRY(check_index(d, i, "dataset_bytes"));
  if (!buf || !cap || !bytes || !len) return mt__error(MT_ERR_ARG, "dataset_bytes: an output pointer is NULL");
  const mt__sample *s = &d->samples[i];
  if (d->arena && i >= d->cache_lo && i < d->cache_hi) {
    const char *bad = mt__dataset_cache_error(d, i);
    if (bad) return mt__error(MT_ERR_IO, "%s", bad);
    *bytes = d->arena + d->cache_off[i - d->cache_lo];
    *len = (size_t)s->length;
    return MT_OK;
  }
  if (s->shard < 0) {
    MT_TRY(read_file(s->name, buf, cap, len));
    *bytes = *buf;
    return MT_OK;
  }
  if (s->shard >= d->nshards)
    return mt__error(MT_ERR_INTERNAL, "dataset: sample %lld names shard %d of %d", (long long)i, (int)s->shard,
                     d->nshards);
  MT_TRY(grow_buf(buf, cap, (size_t)s->length, s->name));
  MT_TRY(mt_shard_read(d->shards[s->shard], s->record, *buf, *cap));
  *bytes = *buf;
  *len = (size_t)s->length;
  return MT_OK;
}

mt_status mt_dataset_read(const mt_dataset *d, int64_t i, mt_tensor **out) {
  if (!out) return mt__error(MT_ERR_ARG, "dataset_read: out is NULL");
  *out = NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  const uint8_t *bytes;
  mt_status st = mt__dataset_bytes(d, i, &buf, &cap, &bytes, &len);
  if (st == MT_OK) {
    int64_t size = (int64_t)len;
    st = mt_tensor_new(out, MT_U8, MT_CPU, 1, &size);
    if (st == MT_OK && len) memcpy(mt_tensor_data(*out), bytes, len);
  }
  free(buf);
  return st;
}
