/* dataset.h: the dataset's layout, shared by dataset.c (building it), cache.c (the in-memory
 * copy of a rank's block) and loader.c (reading samples from many threads). */
#ifndef MT_DATA_DATASET_H
#define MT_DATA_DATASET_H
#include <stddef.h>
#include <stdint.h>
#include "../moontorch.h"
#include "../core/error.h"

typedef struct mt__sample {
  char *name;      /* a file's path, or "<shard path>:<record name>" */
  int32_t label;   /* 0-based */
  int32_t shard;   /* -1: a file; otherwise an index into mt_dataset.shards */
  int64_t record;  /* the record within that shard */
  uint64_t length; /* encoded size in bytes; 0 for a file until it is statted or read */
} mt__sample;

typedef struct mt__cache_error {
  int64_t index; /* the sample */
  char *message;
} mt__cache_error;

struct mt_dataset {
  mt__sample *samples;
  int64_t n, cap;
  char **classes;
  int nclasses, classes_cap;
  mt_shard **shards;
  int nshards, shards_cap;
  char **warnings;
  int nwarnings, warnings_cap;
  /* cache.c: cached bytes of samples [cache_lo, cache_hi) live at arena + cache_off[i - cache_lo] */
  uint8_t *arena;
  uint64_t arena_bytes;
  uint64_t *cache_off;
  int64_t cache_lo, cache_hi;
  double cache_seconds;
  /* samples of the block that could not be read (empty, missing, unreadable), sorted by index:
   * they hold no bytes and a read of one fails with its message, as a streaming read would, so
   * the loader skips and names them instead of the whole set going uncached */
  mt__cache_error *cache_errors;
  int64_t cache_nerrors;
  /* dataset.c: sample names are carved from large blocks, one malloc per block rather than per
   * name (ImageNet has 1.28M samples) */
  char **name_blocks;
  int64_t nname_blocks, name_blocks_cap;
  char *name_next; /* free space left in the newest block */
  size_t name_left;
};

/* The block of samples rank `rank` of `world` owns, [lo, hi): the one split the cache reads and
 * the partitioned loader walks, so the two always agree. Sizes differ by at most one. */
static inline void mt__dataset_block(int64_t n, int rank, int world, int64_t *lo, int64_t *hi) {
  *lo = (int64_t)((__int128)n * rank / world);
  *hi = (int64_t)((__int128)n * (rank + 1) / world);
}

/* The encoded bytes of sample i: a pointer into the cache when cached, otherwise read (file or
 * shard record, CRC checked) into *buf, grown with realloc as needed (*buf and *cap are the
 * caller's per-thread scratch). Safe to call from several threads at once. */
mt_status mt__dataset_bytes(const mt_dataset *d, int64_t i, uint8_t **buf, size_t *cap, const uint8_t **bytes,
                            size_t *len);
/* the message of cached sample i when it could not be read, else NULL (cache.c) */
const char *mt__dataset_cache_error(const mt_dataset *d, int64_t i);
/* frees the cache's list of unreadable samples */
void mt__dataset_free_cache_errors(mt__cache_error *e, int64_t n);
/* record a warning (copied); fails only when out of memory */
mt_status mt__dataset_warn(mt_dataset *d, const char *fmt, ...) MT_PRINTF(2, 3);

/* building (dataset.c, folder.c): append a sample (name copied) or a class; on a failed add of
 * several samples, mt__dataset_truncate drops everything added since the counts were taken. */
mt_status mt__dataset_push(mt_dataset *d, const char *name, int32_t label, int32_t shard, int64_t record,
                           uint64_t length);
mt_status mt__dataset_push_class(mt_dataset *d, const char *name);
void mt__dataset_truncate(mt_dataset *d, int64_t n, int nclasses, int nwarnings);
#endif
