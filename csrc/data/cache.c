#define _GNU_SOURCE /* strdup, pread */
/* cache.c: the in-memory copy of a rank's encoded images (IBM's 2017 ResNet-50 run kept the
 * data set in RAM rather than rereading files each epoch). A rank owns a contiguous block of
 * samples, so with shards it reads whole files once, front to back. The size is known before
 * anything is read (shard indexes; stat for files), so an over-budget partition is refused up
 * front with the numbers and the dataset simply keeps streaming from disk. A sample that cannot
 * be read (empty, gone, unreadable) is left out and listed rather than failing the whole cache:
 * reading it then fails with its message, so the loader skips, counts and names it as it does
 * an undecodable image. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/error.h"
#include "dataset.h"

#define OP "dataset cache"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mt_status block_of(const mt_dataset *d, int rank, int world, int replicated, int64_t *lo, int64_t *hi) {
  if (!d) return mt__error(MT_ERR_ARG, OP ": dataset is NULL");
  if (world < 1 || rank < 0 || rank >= world)
    return mt__error(MT_ERR_ARG, OP ": rank %d is not in [0, world = %d)", rank, world);
  if (replicated) {
    *lo = 0;
    *hi = d->n;
  } else {
    mt__dataset_block(d->n, rank, world, lo, hi);
  }
  return MT_OK;
}

/* a sample's encoded size: known for shard records, from stat for files */
static mt_status sample_length(const mt__sample *s, uint64_t *len) {
  if (s->shard >= 0 || s->length > 0) {
    *len = s->length;
    return MT_OK;
  }
  struct stat st;
  if (stat(s->name, &st) != 0) return mt__error(MT_ERR_IO, OP ": cannot stat %s: %s", s->name, strerror(errno));
  if (!S_ISREG(st.st_mode)) return mt__error(MT_ERR_IO, OP ": %s is not a regular file", s->name);
  *len = (uint64_t)st.st_size;
  return MT_OK;
}

mt_status mt_dataset_partition_bytes(const mt_dataset *d, int rank, int world, int replicated, uint64_t *bytes) {
  int64_t lo = 0, hi = 0;
  MT_TRY(block_of(d, rank, world, replicated, &lo, &hi));
  if (!bytes) return mt__error(MT_ERR_ARG, OP ": bytes is NULL");
  uint64_t total = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t len = 0;
    if (sample_length(&d->samples[i], &len) == MT_OK) total += len; /* one that cannot be statted is skipped */
  }
  *bytes = total;
  return MT_OK;
}

/* ---- the unreadable samples of a block, appended by the reader threads under a lock */
typedef struct error_list {
  mt__cache_error *e;
  int64_t n, cap;
  int oom;
} error_list;

static void add_error(error_list *l, int64_t index, const char *message) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 16;
    mt__cache_error *e = realloc(l->e, (size_t)cap * sizeof *e);
    if (!e) {
      l->oom = 1;
      return;
    }
    l->e = e;
    l->cap = cap;
  }
  char *m = strdup(message);
  if (!m) {
    l->oom = 1;
    return;
  }
  l->e[l->n].index = index;
  l->e[l->n++].message = m;
}

void mt__dataset_free_cache_errors(mt__cache_error *e, int64_t n) {
  for (int64_t k = 0; k < n; k++) free(e[k].message);
  free(e);
}

static int by_index(const void *a, const void *b) {
  int64_t x = ((const mt__cache_error *)a)->index, y = ((const mt__cache_error *)b)->index;
  return (x > y) - (x < y);
}

const char *mt__dataset_cache_error(const mt_dataset *d, int64_t i) {
  int64_t a = 0, b = d->cache_nerrors; /* binary search of the sorted list */
  while (a < b) {
    int64_t m = a + (b - a) / 2;
    if (d->cache_errors[m].index < i) a = m + 1;
    else b = m;
  }
  return a < d->cache_nerrors && d->cache_errors[a].index == i ? d->cache_errors[a].message : NULL;
}

/* ---- parallel reading: threads take samples from a shared cursor; a sample that fails is
 * listed with its message (thread-local in the reading thread) and the others go on */
typedef struct reader_job {
  mt_dataset *d;
  uint8_t *arena;
  const uint64_t *off;
  const uint8_t *skip; /* samples already listed as unreadable while sizing */
  int64_t lo, hi;
  int64_t next;
  error_list *errors;
  pthread_mutex_t lock;
} reader_job;

static mt_status read_file_exact(const char *path, uint8_t *dst, uint64_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mt__error(MT_ERR_IO, OP ": cannot open %s: %s", path, strerror(errno));
  uint64_t done = 0;
  mt_status st = MT_OK;
  while (done < len) {
    ssize_t r = pread(fd, dst + done, (size_t)(len - done), (off_t)done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      st = mt__error(MT_ERR_IO, OP ": reading %s at byte %llu: %s", path, (unsigned long long)done, strerror(errno));
      break;
    }
    if (r == 0) {
      st = mt__error(MT_ERR_IO, OP ": %s shrank while being read (%llu of %llu bytes)", path, (unsigned long long)done,
                     (unsigned long long)len);
      break;
    }
    done += (uint64_t)r;
  }
  close(fd);
  return st;
}

static void *reader_main(void *arg) {
  reader_job *j = arg;
  for (;;) {
    pthread_mutex_lock(&j->lock);
    int64_t i = j->next++;
    pthread_mutex_unlock(&j->lock);
    if (i >= j->hi) break;
    if (j->skip[i - j->lo]) continue;
    const mt__sample *s = &j->d->samples[i];
    uint8_t *dst = j->arena + j->off[i - j->lo];
    uint64_t len = j->off[i - j->lo + 1] - j->off[i - j->lo];
    mt_status st = s->shard >= 0 ? mt_shard_read(j->d->shards[s->shard], s->record, dst, (size_t)len)
                                 : read_file_exact(s->name, dst, len);
    if (st != MT_OK) {
      pthread_mutex_lock(&j->lock);
      add_error(j->errors, i, mt_last_error());
      pthread_mutex_unlock(&j->lock);
    }
  }
  return NULL;
}

static void format_bytes(char *buf, size_t n, uint64_t b) {
  if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (double)(1ull << 30));
  else snprintf(buf, n, "%.1f MiB", (double)b / (double)(1ull << 20));
}

mt_status mt_dataset_cache(mt_dataset *d, int rank, int world, int replicated, uint64_t budget_bytes, int threads) {
  int64_t lo = 0, hi = 0;
  MT_TRY(block_of(d, rank, world, replicated, &lo, &hi));
  if (threads < 1 || threads > 256) return mt__error(MT_ERR_ARG, OP ": threads must be in [1, 256], got %d", threads);
  double t0 = now_seconds();
  int64_t m = hi - lo;
  uint64_t *off = malloc((size_t)(m + 1) * sizeof *off);
  uint8_t *skip = calloc((size_t)(m > 0 ? m : 1), 1);
  if (!off || !skip) {
    free(off);
    free(skip);
    return mt__error(MT_ERR_MEMORY, OP ": out of host memory for the offsets of %lld samples", (long long)m);
  }
  error_list errors = {0};
  uint64_t total = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t len = 0;
    if (sample_length(&d->samples[i], &len) != MT_OK) add_error(&errors, i, mt_last_error());
    else if (len == 0) {
      char msg[600];
      snprintf(msg, sizeof msg, OP ": %.560s is empty", d->samples[i].name);
      add_error(&errors, i, msg);
    }
    if (errors.n && errors.e[errors.n - 1].index == i) {
      skip[i - lo] = 1;
      len = 0;
    }
    off[i - lo] = total;
    total += len;
  }
  off[m] = total;
  mt_status st = MT_OK;
  if (errors.oom) st = mt__error(MT_ERR_MEMORY, OP ": out of host memory for the list of unreadable samples");
  else if (budget_bytes > 0 && total > budget_bytes) {
    char need[32], have[32];
    format_bytes(need, sizeof need, total);
    format_bytes(have, sizeof have, budget_bytes);
    st = mt__error(MT_ERR_MEMORY,
                   OP
                   ": rank %d's partition (%lld images, %s) does not fit the memory budget of %s; "
                   "raise the budget, use more ranks, or read from disk (streaming)",
                   rank, (long long)m, need, have);
  }
  uint8_t *arena = st == MT_OK ? malloc(total > 0 ? (size_t)total : 1) : NULL;
  if (st == MT_OK && !arena) {
    char need[32];
    format_bytes(need, sizeof need, total);
    st = mt__error(MT_ERR_MEMORY, OP ": cannot allocate %s of host memory for rank %d's %lld images", need, rank,
                   (long long)m);
  }
  if (st != MT_OK) {
    free(off);
    free(skip);
    mt__dataset_free_cache_errors(errors.e, errors.n);
    return st;
  }
  reader_job j = {.d = d, .arena = arena, .off = off, .skip = skip, .lo = lo, .hi = hi, .next = lo, .errors = &errors};
  pthread_mutex_init(&j.lock, NULL);
  int nth = threads < m ? threads : (int)(m > 0 ? m : 1);
  pthread_t tid[256];
  int started = 0;
  for (; started < nth - 1; started++)
    if (pthread_create(&tid[started], NULL, reader_main, &j) != 0) break;
  reader_main(&j); /* this thread reads too (and alone if no thread could start) */
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&j.lock);
  free(skip);
  if (errors.n > 1) qsort(errors.e, (size_t)errors.n, sizeof *errors.e, by_index); /* threads add out of order */
  if (errors.oom) st = mt__error(MT_ERR_MEMORY, OP ": out of host memory for the list of unreadable samples");
  else if (m > 0 && errors.n == m) /* nothing to cache: a wrong path or permissions, not a bad image */
    st = mt__error(MT_ERR_IO, OP ": none of rank %d's %lld images could be read; the first: %s", rank, (long long)m,
                   errors.e[0].message);
  if (st != MT_OK) {
    free(arena);
    free(off);
    mt__dataset_free_cache_errors(errors.e, errors.n);
    return st;
  }
  /* publish: record the lengths so readers outside the cache know them (not those of the
   * unreadable, which keep what they had), then swap arenas */
  for (int64_t i = lo, k = 0; i < hi; i++) {
    if (k < errors.n && errors.e[k].index == i) k++;
    else d->samples[i].length = off[i - lo + 1] - off[i - lo];
  }
  free(d->arena);
  free(d->cache_off);
  mt__dataset_free_cache_errors(d->cache_errors, d->cache_nerrors);
  d->cache_errors = errors.e;
  d->cache_nerrors = errors.n;
  d->arena = arena;
  d->arena_bytes = total;
  d->cache_off = off;
  d->cache_lo = lo;
  d->cache_hi = hi;
  d->cache_seconds = now_seconds() - t0;
  return MT_OK;
}

int64_t mt_dataset_cache_nerrors(const mt_dataset *d) { return d && d->arena ? d->cache_nerrors : 0; }
const char *mt_dataset_cache_error(const mt_dataset *d, int64_t k) {
  return d && d->arena && k >= 0 && k < d->cache_nerrors ? d->cache_errors[k].message : NULL;
}

void mt_dataset_cache_stats(const mt_dataset *d, int64_t *samples, uint64_t *bytes, double *seconds) {
  int cached = d && d->arena;
  if (samples) *samples = cached ? d->cache_hi - d->cache_lo : 0;
  if (bytes) *bytes = cached ? d->arena_bytes : 0;
  if (seconds) *seconds = cached ? d->cache_seconds : 0.0;
}
