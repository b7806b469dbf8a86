#define _GNU_SOURCE /* strdup, pread */
/* cache.c: the in-memory copy of a rank's encoded images (IBM's 2017 ResNet-50 run kept the
 * data set in RAM rather than rereading files each epoch). A rank owns a contiguous block of
 * samples, so with shards it reads whole files once, front to back. The size is known before
 * anything is read (shard indexes; stat for files), so an over-budget partition is refused up
 * front with the numbers and the dataset simply keeps streaming from disk. */
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
    MT_TRY(sample_length(&d->samples[i], &len));
    total += len;
  }
  *bytes = total;
  return MT_OK;
}

/* ---- parallel reading: threads take samples from a shared cursor; the first failure stops
 * everyone and its message (thread-local in the failing thread) is carried back here. */
typedef struct reader_job {
  mt_dataset *d;
  uint8_t *arena;
  const uint64_t *off;
  int64_t lo, hi;
  int64_t next;
  int failed;
  mt_status status;
  char message[512];
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
    int64_t i = j->failed ? j->hi : j->next++;
    pthread_mutex_unlock(&j->lock);
    if (i >= j->hi) break;
    const mt__sample *s = &j->d->samples[i];
    uint8_t *dst = j->arena + j->off[i - j->lo];
    uint64_t len = j->off[i - j->lo + 1] - j->off[i - j->lo];
    mt_status st = s->shard >= 0 ? mt_shard_read(j->d->shards[s->shard], s->record, dst, (size_t)len)
                                 : read_file_exact(s->name, dst, len);
    if (st != MT_OK) {
      pthread_mutex_lock(&j->lock);
      if (!j->failed) {
        j->failed = 1;
        j->status = st;
        snprintf(j->message, sizeof j->message, "%s", mt_last_error());
      }
      pthread_mutex_unlock(&j->lock);
      break;
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
  if (!off) return mt__error(MT_ERR_MEMORY, OP ": out of host memory for the offsets of %lld samples", (long long)m);
  uint64_t total = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t len = 0;
    mt_status st = sample_length(&d->samples[i], &len);
    if (st != MT_OK) {
      free(off);
      return st;
    }
    if (len == 0) {
      free(off);
      return mt__error(MT_ERR_FORMAT, OP ": %s is empty", d->samples[i].name);
    }
    off[i - lo] = total;
    total += len;
  }
  off[m] = total;
  if (budget_bytes > 0 && total > budget_bytes) {
    char need[32], have[32];
    format_bytes(need, sizeof need, total);
    format_bytes(have, sizeof have, budget_bytes);
    free(off);
    return mt__error(MT_ERR_MEMORY,
                     OP
                     ": rank %d's partition (%lld images, %s) does not fit the memory budget of %s; "
                     "raise the budget, use more ranks, or read from disk (streaming)",
                     rank, (long long)m, need, have);
  }
  uint8_t *arena = malloc(total > 0 ? (size_t)total : 1);
  if (!arena) {
    char need[32];
    format_bytes(need, sizeof need, total);
    free(off);
    return mt__error(MT_ERR_MEMORY, OP ": cannot allocate %s of host memory for rank %d's %lld images", need, rank,
                     (long long)m);
  }
  reader_job j = {.d = d, .arena = arena, .off = off, .lo = lo, .hi = hi, .next = lo};
  pthread_mutex_init(&j.lock, NULL);
  int nth = threads < m ? threads : (int)(m > 0 ? m : 1);
  pthread_t tid[256];
  int started = 0;
  for (; started < nth - 1; started++)
    if (pthread_create(&tid[started], NULL, reader_main, &j) != 0) break;
  reader_main(&j); /* this thread reads too (and alone if no thread could start) */
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&j.lock);
  if (j.failed) {
    free(arena);
    free(off);
    return mt__error(j.status, "%s", j.message);
  }
  /* publish: record the lengths so readers outside the cache know them, then swap arenas */
  for (int64_t i = lo; i < hi; i++) d->samples[i].length = off[i - lo + 1] - off[i - lo];
  free(d->arena);
  free(d->cache_off);
  d->arena = arena;
  d->arena_bytes = total;
  d->cache_off = off;
  d->cache_lo = lo;
  d->cache_hi = hi;
  d->cache_seconds = now_seconds() - t0;
  return MT_OK;
}

void mt_dataset_cache_stats(const mt_dataset *d, int64_t *samples, uint64_t *bytes, double *seconds) {
  int cached = d && d->arena;
  if (samples) *samples = cached ? d->cache_hi - d->cache_lo : 0;
  if (bytes) *bytes = cached ? d->arena_bytes : 0;
  if (seconds) *seconds = cached ? d->cache_seconds : 0.0;
}
