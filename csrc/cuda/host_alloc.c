/* host_alloc.c: the caching allocator for pinned (page-locked) host memory.
 *
 * Pinned buffers let host<->device copies run asynchronously on the device stream, but
 * cudaHostAlloc/cudaFreeHost are very slow (they change page tables and synchronise), so freed
 * buffers are kept in power-of-two bins and reused. A buffer an async copy still reads or writes
 * must not be handed out again: each copy records an event on its stream against the buffer
 * (mt__cuda_host_record), and a freed buffer waits on a parked list until all its events have
 * completed. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "cuda_common.h"

#define MIN_HOST_BLOCK ((size_t)4096)
#define NBINS 64

typedef struct {
  int device;
  cudaEvent_t ev;
} hevent;

typedef struct hblock {
  void *ptr;
  size_t size;
  int bin, in_use;
  hevent *evs; /* copies that may still touch the buffer */
  int nev, cap;
  struct hblock *hnext; /* hash chain: every block we own */
  struct hblock *fnext; /* bin list or parked list */
} hblock;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static hblock *bins[NBINS];
static hblock *parked_list;
static hblock **table;
static size_t tcap, tcount;

static size_t hash_ptr(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p >> 12;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 20) & (cap - 1);
}

static int table_insert(hblock *b) {
  if (tcount >= tcap) {
    size_t cap = tcap ? 2 * tcap : 256;
    hblock **t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (size_t i = 0; i < tcap; i++) {
      for (hblock *x = table[i], *nx; x; x = nx) {
        nx = x->hnext;
        size_t h = hash_ptr(x->ptr, cap);
        x->hnext = t[h];
        t[h] = x;
      }
    }
    free(table);
    table = t;
    tcap = cap;
  }
  size_t h = hash_ptr(b->ptr, tcap);
  b->hnext = table[h];
  table[h] = b;
  tcount++;
  return 1;
}

static hblock *table_find(const void *ptr, int remove) {
  if (!tcap) return NULL;
  for (hblock **pp = &table[hash_ptr(ptr, tcap)]; *pp; pp = &(*pp)->hnext) {
    hblock *b = *pp;
    if (b->ptr == ptr) {
      if (remove) {
        *pp = b->hnext;
        tcount--;
      }
      return b;
    }
  }
  return NULL;
}

/* Drop the events that have completed; returns how many are still outstanding. */
static int prune(hblock *b) {
  int keep = 0;
  for (int i = 0; i < b->nev; i++) {
    cudaError_t e = cudaEventQuery(b->evs[i].ev);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      b->evs[keep++] = b->evs[i];
      continue;
    }
    if (e != cudaSuccess) (void)cudaGetLastError(); /* a failed stream will not touch it any more */
    mt__cuda_event_put(b->evs[i].device, b->evs[i].ev);
  }
  b->nev = keep;
  return keep;
}

static void to_bin(hblock *b) {
  b->fnext = bins[b->bin];
  bins[b->bin] = b;
}

static void process_parked(void) {
  hblock **pp = &parked_list;
  while (*pp) {
    hblock *b = *pp;
    if (prune(b) == 0) {
      *pp = b->fnext;
      to_bin(b);
    } else {
      pp = &b->fnext;
    }
  }
}

static void free_bins(void) {
  for (int i = 0; i < NBINS; i++) {
    for (hblock *b = bins[i], *nb; b; b = nb) {
      nb = b->fnext;
      table_find(b->ptr, 1);
      if (cudaFreeHost(b->ptr) != cudaSuccess) (void)cudaGetLastError();
      free(b->evs);
      free(b);
    }
    bins[i] = NULL;
  }
}

mt_status mt__cuda_host_alloc(size_t nbytes, void **out) {
  *out = NULL;
  if (nbytes == 0) return MT_OK;
  if (nbytes > ((size_t)1 << 62))
    return mt__error(MT_ERR_MEMORY, "allocate: %zu bytes of pinned memory is too large", nbytes);
  size_t size = MIN_HOST_BLOCK;
  int bin = 12;
  while (size < nbytes) size <<= 1, bin++;
  pthread_mutex_lock(&mu);
  if (parked_list) process_parked();
  hblock *b = bins[bin];
  if (b) {
    bins[bin] = b->fnext;
  } else {
    void *p = NULL;
    /* Portable: pinned for every device's context, not only the current one. */
    cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      free_bins();
      e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      pthread_mutex_unlock(&mu);
      return mt__error(MT_ERR_MEMORY, "allocate: cannot allocate %zu bytes of pinned host memory (%s)", nbytes,
                       cudaGetErrorString(e));
    }
    b = calloc(1, sizeof *b);
    if (b) {
      b->ptr = p;
      b->size = size;
      b->bin = bin;
    }
    if (!b || !table_insert(b)) {
      free(b);
      cudaFreeHost(p);
      pthread_mutex_unlock(&mu);
      return mt__error(MT_ERR_MEMORY, "allocate: out of host memory for a pinned block header");
    }
  }
  b->in_use = 1;
  b->fnext = NULL;
  *out = b->ptr;
  pthread_mutex_unlock(&mu);
  return MT_OK;
}

void mt__cuda_host_free(void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&mu);
  hblock *b = table_find(ptr, 0);
  if (b && b->in_use) {
    b->in_use = 0;
    if (prune(b) == 0) {
      to_bin(b);
    } else {
      b->fnext = parked_list;
      parked_list = b;
    }
  }
  pthread_mutex_unlock(&mu);
}

void mt__cuda_host_record(void *ptr, int device, cudaStream_t stream) {
  if (!ptr) return;
  pthread_mutex_lock(&mu);
  hblock *b = table_find(ptr, 0);
  if (b && b->in_use) {
    /* A buffer reused for many copies would pile up events: drop finished ones first. */
    if (b->nev >= 8) prune(b);
    int recorded = 0;
    if (b->nev == b->cap) {
      int cap = b->cap ? 2 * b->cap : 4;
      hevent *e = realloc(b->evs, (size_t)cap * sizeof *e);
      if (e) b->evs = e, b->cap = cap;
    }
    cudaEvent_t ev;
    if (b->nev < b->cap && mt__cuda_event_get(device, &ev) == MT_OK) {
      if (cudaEventRecord(ev, stream) == cudaSuccess) {
        b->evs[b->nev].device = device;
        b->evs[b->nev].ev = ev;
        b->nev++;
        recorded = 1;
      } else {
        (void)cudaGetLastError();
        mt__cuda_event_put(device, ev);
      }
    }
    /* Could not track the copy: wait for it, so the buffer is safe to reuse. */
    if (!recorded && cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaGetLastError();
  }
  pthread_mutex_unlock(&mu);
}

void mt__cuda_host_release_cached(void) {
  pthread_mutex_lock(&mu);
  process_parked();
  free_bins();
  pthread_mutex_unlock(&mu);
}
