/* alloc.c: the caching allocator for CUDA device memory.
 *
 * cudaMalloc/cudaFree are slow and cudaFree synchronises the device, so memory is taken from
 * the driver in segments and handed out as blocks that return to a free list when a storage
 * dies; a steady training loop then never calls the driver.
 *  - Sizes are rounded to 512 bytes. Requests up to 1 MiB come from 2 MiB segments (the small
 *    pool); larger ones from segments rounded up to 2 MiB (20 MiB for requests under 10 MiB,
 *    so several mid-sized tensors share one cudaMalloc) (the large pool).
 *  - Free lists are per device, per pool, ordered by (stream, size, address): allocation takes
 *    the smallest free block of the same stream that fits (best fit) and splits off the rest;
 *    freeing merges a block with free neighbours of its segment.
 *  - Frees are stream ordered: a block freed by its stream may be handed out again at once for
 *    work on the same stream, since that work queues after everything that used the block. A
 *    block also used on other streams (mt__cuda_record_stream) is parked until events recorded
 *    on those streams at free time have completed.
 *  - When cudaMalloc fails, every cached segment that is wholly free is returned to the driver
 *    (after a device synchronise, so parked blocks come back) and the allocation is retried once.
 * One mutex per device: data loader threads allocate too. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_common.h"

#define MIN_BLOCK ((size_t)512)
#define SMALL_SIZE ((size_t)1 << 20) /* largest request served by the small pool */
#define SMALL_SEGMENT ((size_t)2 << 20)
#define MID_LIMIT ((size_t)10 << 20) /* large requests below this share a 20 MiB segment */
#define MID_SEGMENT ((size_t)20 << 20)
#define LARGE_ROUND ((size_t)2 << 20)

enum { BLOCK_FREE, BLOCK_USED, BLOCK_PARKED }; /* parked: freed, waiting for other streams */

typedef struct block {
  char *ptr;
  size_t size;
  cudaStream_t stream;       /* the stream its segment belongs to */
  struct block *prev, *next; /* address-order neighbours within the segment */
  struct block *hnext;       /* chain in the table of blocks in use */
  int state, pool, pending;  /* pending: events still to complete before reuse */
  struct use {
    int device;
    cudaStream_t stream;
  } * uses; /* other streams that used it */
  int nuses, cap_uses;
} block;

typedef struct {
  block **v;
  size_t n, cap;
} freelist;

typedef struct {
  cudaEvent_t ev;
  int device; /* the event's device */
  block *b;
} parked;

typedef struct devalloc {
  pthread_mutex_t mu;
  freelist pools[2]; /* 0: small, 1: large */
  block **table;     /* blocks in use, hashed by address */
  size_t tcap, tcount;
  parked *park;
  size_t npark, cap_park;
  mt_memory_stats st;
} devalloc;

static devalloc devs[MT_CUDA_MAX_DEVICES];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_devs(void) {
  for (int i = 0; i < MT_CUDA_MAX_DEVICES; i++) pthread_mutex_init(&devs[i].mu, NULL);
}

/* ---- free lists: sorted arrays; binary search, memmove insert (lists stay short) ---- */

static int block_less(const block *a, cudaStream_t s, size_t size, const char *ptr) {
  if ((uintptr_t)a->stream != (uintptr_t)s) return (uintptr_t)a->stream < (uintptr_t)s;
  if (a->size != size) return a->size < size;
  return (uintptr_t)a->ptr < (uintptr_t)ptr;
}

static size_t lower_bound(const freelist *fl, cudaStream_t s, size_t size, const char *ptr) {
  size_t lo = 0, hi = fl->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (block_less(fl->v[mid], s, size, ptr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int fl_insert(freelist *fl, block *b) {
  if (fl->n == fl->cap) {
    size_t cap = fl->cap ? 2 * fl->cap : 64;
    block **v = realloc(fl->v, cap * sizeof *v);
    if (!v) return 0;
    fl->v = v;
    fl->cap = cap;
  }
  size_t i = lower_bound(fl, b->stream, b->size, b->ptr);
  memmove(fl->v + i + 1, fl->v + i, (fl->n - i) * sizeof *fl->v);
  fl->v[i] = b;
  fl->n++;
  return 1;
}

static void fl_remove(freelist *fl, block *b) {
  size_t i = lower_bound(fl, b->stream, b->size, b->ptr);
  if (i < fl->n && fl->v[i] == b) {
    memmove(fl->v + i, fl->v + i + 1, (fl->n - i - 1) * sizeof *fl->v);
    fl->n--;
  }
}

/* ---- table of blocks in use, keyed by address (chained hash) ---- */

static size_t hash_ptr(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p >> 9; /* blocks are 512-byte aligned */
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 20) & (cap - 1);
}

static int table_insert(devalloc *d, block *b) {
  if (d->tcount >= d->tcap) {
    size_t cap = d->tcap ? 2 * d->tcap : 1024;
    block **t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (size_t i = 0; i < d->tcap; i++) {
      for (block *x = d->table[i], *nx; x; x = nx) {
        nx = x->hnext;
        size_t h = hash_ptr(x->ptr, cap);
        x->hnext = t[h];
        t[h] = x;
      }
    }
    free(d->table);
    d->table = t;
    d->tcap = cap;
  }
  size_t h = hash_ptr(b->ptr, d->tcap);
  b->hnext = d->table[h];
  d->table[h] = b;
  d->tcount++;
  return 1;
}

static block *table_find(devalloc *d, const void *ptr, int remove) {
  if (!d->tcap) return NULL;
  block **pp = &d->table[hash_ptr(ptr, d->tcap)];
  for (; *pp; pp = &(*pp)->hnext) {
    block *b = *pp;
    if (b->ptr == ptr) {
      if (remove) {
        *pp = b->hnext;
        b->hnext = NULL;
        d->tcount--;
      }
      return b;
    }
  }
  return NULL;
}

/* ---- blocks ---- */

/* b takes over its next block's bytes, which must be unlisted; that block's record goes. */
static void absorb_next(block *b) {
  block *n = b->next;
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  free(n->uses);
  free(n);
}

/* A block becomes free: merge with free neighbours in its segment, then list it. */
static void release_block(devalloc *d, block *b) {
  freelist *fl = &d->pools[b->pool];
  b->state = BLOCK_FREE;
  block *p = b->prev;
  if (p && p->state == BLOCK_FREE) {
    fl_remove(fl, p);
    absorb_next(p);
    b = p;
  }
  block *n = b->next;
  if (n && n->state == BLOCK_FREE) {
    fl_remove(fl, n);
    absorb_next(b);
  }
  if (!fl_insert(fl, b)) {
    /* Out of host memory for the list: the block stays unlisted (leaked to the cache) rather
     * than corrupting anything. */
    b->state = BLOCK_PARKED;
  }
}

/* Parked blocks whose events have completed become free. */
static void process_parked(devalloc *d) {
  size_t keep = 0;
  for (size_t i = 0; i < d->npark; i++) {
    parked *p = &d->park[i];
    cudaError_t e = cudaEventQuery(p->ev);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError(); /* not an error; keep the runtime's error slot clean */
      d->park[keep++] = *p;
      continue;
    }
    if (e != cudaSuccess) (void)cudaGetLastError(); /* the stream failed: nothing will use the block */
    mt__cuda_event_put(p->device, p->ev);
    if (--p->b->pending == 0) release_block(d, p->b);
  }
  d->npark = keep;
}

static size_t segment_size(size_t size) {
  if (size <= SMALL_SIZE) return SMALL_SEGMENT;
  if (size < MID_LIMIT) return MID_SEGMENT;
  return (size + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
}

/* Give wholly free segments back to the driver. Caller holds the lock and made device current. */
static void free_cached_segments(devalloc *d) {
  /* Let parked blocks finish first so they can be freed too. */
  if (cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
  process_parked(d);
  for (int pool = 0; pool < 2; pool++) {
    freelist *fl = &d->pools[pool];
    size_t keep = 0;
    for (size_t i = 0; i < fl->n; i++) {
      block *b = fl->v[i];
      if (b->prev || b->next) { /* part of a segment still partly in use */
        fl->v[keep++] = b;
        continue;
      }
      if (cudaFree(b->ptr) != cudaSuccess) (void)cudaGetLastError();
      d->st.reserved -= (int64_t)b->size;
      free(b->uses);
      free(b);
    }
    fl->n = keep;
  }
}

static void bump_peaks(mt_memory_stats *st) {
  if (st->allocated > st->peak_allocated) st->peak_allocated = st->allocated;
  if (st->reserved > st->peak_reserved) st->peak_reserved = st->reserved;
}

static mt_status device_alloc(int device, size_t nbytes, void **out) {
  *out = NULL;
  if (nbytes == 0) return MT_OK; /* an empty storage needs no memory */
  if (nbytes > SIZE_MAX - LARGE_ROUND) return mt__error(MT_ERR_MEMORY, "allocate: %zu bytes is too large", nbytes);
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(device, &stream, "allocate"));
  size_t size = (nbytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
  int pool = size > SMALL_SIZE;
  devalloc *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  if (d->npark) process_parked(d);

  freelist *fl = &d->pools[pool];
  block *b = NULL;
  size_t i = lower_bound(fl, stream, size, NULL);
  if (i < fl->n && fl->v[i]->stream == stream) {
    b = fl->v[i];
    memmove(fl->v + i, fl->v + i + 1, (fl->n - i - 1) * sizeof *fl->v);
    fl->n--;
  } else {
    size_t seg = segment_size(size);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, seg);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      free_cached_segments(d);
      e = cudaMalloc(&p, seg);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      mt_memory_stats st = d->st;
      pthread_mutex_unlock(&d->mu);
      if (e == cudaErrorMemoryAllocation) {
        size_t freeb = 0, total = 0;
        if (cudaMemGetInfo(&freeb, &total) != cudaSuccess) (void)cudaGetLastError();
        return mt__error(MT_ERR_MEMORY,
                         "allocate: CUDA out of memory on cuda:%d: tried to allocate %zu bytes (%.1f MiB); "
                         "%lld bytes allocated by tensors, %lld bytes reserved by the caching allocator, "
                         "%zu of %zu bytes free on the device",
                         device, nbytes, (double)nbytes / 1048576.0, (long long)st.allocated, (long long)st.reserved,
                         freeb, total);
      }
      return mt__cuda_error(e, "allocate", __FILE__, __LINE__);
    }
    b = calloc(1, sizeof *b);
    if (!b) {
      cudaFree(p);
      pthread_mutex_unlock(&d->mu);
      return mt__error(MT_ERR_MEMORY, "allocate: out of host memory for a block header");
    }
    b->ptr = p;
    b->size = seg;
    b->stream = stream;
    b->pool = pool;
    d->st.reserved += (int64_t)seg;
    d->st.num_system_allocs++;
  }

  b->state = BLOCK_USED; /* before splitting, so the tail does not merge straight back */
  /* Split off the unused tail when it is worth keeping: any 512-byte remainder in the small
   * pool; in the large pool only tails that are themselves large requests. */
  size_t rest = b->size - size;
  if (rest >= (pool ? SMALL_SIZE + 1 : MIN_BLOCK)) {
    block *r = calloc(1, sizeof *r);
    if (r) {
      r->ptr = b->ptr + size;
      r->size = rest;
      r->stream = b->stream;
      r->pool = pool;
      r->prev = b;
      r->next = b->next;
      if (b->next) b->next->prev = r;
      b->next = r;
      b->size = size;
      release_block(d, r);
    }
  }
  if (!table_insert(d, b)) {
    release_block(d, b);
    pthread_mutex_unlock(&d->mu);
    return mt__error(MT_ERR_MEMORY, "allocate: out of host memory for the block table");
  }
  d->st.allocated += (int64_t)b->size;
  d->st.num_allocs++;
  bump_peaks(&d->st);
  *out = b->ptr;
  pthread_mutex_unlock(&d->mu);
  return MT_OK;
}

static void device_free(int device, void *ptr) {
  if (!ptr || device < 0 || device >= MT_CUDA_MAX_DEVICES) return;
  devalloc *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  block *b = table_find(d, ptr, 1);
  if (!b) { /* not ours: nothing sensible to do, and freeing must not fail */
    pthread_mutex_unlock(&d->mu);
    return;
  }
  d->st.allocated -= (int64_t)b->size;
  b->state = BLOCK_PARKED;
  for (int i = 0; i < b->nuses; i++) {
    /* an event on each other stream, created on that stream's device */
    struct use u = b->uses[i];
    cudaEvent_t ev = NULL;
    parked *np = NULL;
    if (d->npark == d->cap_park) {
      size_t cap = d->cap_park ? 2 * d->cap_park : 64;
      parked *q = realloc(d->park, cap * sizeof *q);
      if (q) d->park = q, d->cap_park = cap;
    }
    if (d->npark < d->cap_park && mt__cuda_event_get(u.device, &ev) == MT_OK) {
      if (cudaEventRecord(ev, u.stream) == cudaSuccess) {
        np = &d->park[d->npark++];
        np->ev = ev;
        np->device = u.device;
        np->b = b;
        b->pending++;
      } else {
        (void)cudaGetLastError();
        mt__cuda_event_put(u.device, ev);
      }
    }
    /* Could not record an event: wait for the other stream here instead of risking reuse. */
    if (!np && cudaStreamSynchronize(u.stream) != cudaSuccess) (void)cudaGetLastError();
  }
  b->nuses = 0;
  if (b->pending == 0) release_block(d, b);
  pthread_mutex_unlock(&d->mu);
}

/* ---- the backend table's entries ---- */

mt_status mt__cuda_alloc(int device, size_t nbytes, int pinned, void **ptr) {
  if (!ptr) return mt__error(MT_ERR_ARG, "allocate: ptr is NULL");
  if (pinned) return mt__cuda_host_alloc(nbytes, ptr);
  if (device < 0 || device >= mt_cuda_device_count())
    return mt__error(MT_ERR_DEVICE, "allocate: invalid CUDA device %d", device);
  pthread_once(&init_once, init_devs);
  return device_alloc(device, nbytes, ptr);
}

void mt__cuda_free(int device, void *ptr, size_t nbytes, int pinned) {
  (void)nbytes;
  if (pinned) {
    mt__cuda_host_free(ptr);
    return;
  }
  pthread_once(&init_once, init_devs);
  device_free(device, ptr);
}

void mt__cuda_record_stream(int device, void *ptr, int stream_device, cudaStream_t stream) {
  if (!ptr || device < 0 || device >= MT_CUDA_MAX_DEVICES) return;
  pthread_once(&init_once, init_devs);
  devalloc *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  block *b = table_find(d, ptr, 0);
  if (b && b->stream != stream) {
    int seen = 0;
    for (int i = 0; i < b->nuses && !seen; i++) seen = b->uses[i].stream == stream;
    if (!seen) {
      if (b->nuses == b->cap_uses) {
        int cap = b->cap_uses ? 2 * b->cap_uses : 2;
        struct use *u = realloc(b->uses, (size_t)cap * sizeof *u);
        if (u) b->uses = u, b->cap_uses = cap;
      }
      if (b->nuses < b->cap_uses) {
        b->uses[b->nuses].device = stream_device;
        b->uses[b->nuses++].stream = stream;
      } else if (cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaGetLastError(); /* no memory: be safe */
    }
  }
  pthread_mutex_unlock(&d->mu);
}

mt_status mt__cuda_release_cached(int device) {
  int n = mt_cuda_device_count();
  pthread_once(&init_once, init_devs);
  for (int i = device < 0 ? 0 : device; i < (device < 0 ? n : device + 1); i++) {
    MT_TRY(mt__cuda_set_device(i, "cuda.emptyCache"));
    devalloc *d = &devs[i];
    pthread_mutex_lock(&d->mu);
    free_cached_segments(d);
    pthread_mutex_unlock(&d->mu);
  }
  return MT_OK;
}

mt_status mt__cuda_memory_stats(int device, mt_memory_stats *out) {
  if (!out) return mt__error(MT_ERR_ARG, "memory_stats: out is NULL");
  if (device < 0 || device >= mt_cuda_device_count())
    return mt__error(MT_ERR_DEVICE, "memory_stats: invalid CUDA device %d", device);
  pthread_once(&init_once, init_devs);
  devalloc *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  *out = d->st;
  pthread_mutex_unlock(&d->mu);
  return MT_OK;
}

mt_status mt__cuda_memory_reset_peak(int device) {
  if (device < 0 || device >= mt_cuda_device_count())
    return mt__error(MT_ERR_DEVICE, "memory_reset_peak: invalid CUDA device %d", device);
  pthread_once(&init_once, init_devs);
  devalloc *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  d->st.peak_allocated = d->st.allocated;
  d->st.peak_reserved = d->st.reserved;
  pthread_mutex_unlock(&d->mu);
  return MT_OK;
}
