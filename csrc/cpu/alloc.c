/* alloc.c: host memory for CPU storages: 64-byte aligned (AVX-512 loads, cache lines), with
 * counters so Lua can see how many tensor bytes are live (the GC cannot). */
#include <stdatomic.h>
#include <stdlib.h>
#include "../core/backend.h"
#include "../core/error.h"
#include "cpu.h"

static atomic_llong live_bytes, peak_bytes, n_allocs;

mt_status mt__cpu_alloc(int device, size_t nbytes, int pinned, void **ptr) {
  (void)device;
  (void)pinned;
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  if (rounded < nbytes) return mt__error(MT_ERR_MEMORY, "allocate: %zu bytes is too large", nbytes);
  void *p = NULL;
  if (rounded && posix_memalign(&p, 64, rounded) != 0)
    return mt__error(MT_ERR_MEMORY, "allocate: out of host memory (%zu bytes requested, %lld live)", nbytes,
                     (long long)atomic_load(&live_bytes));
  *ptr = p;
  long long now = atomic_fetch_add(&live_bytes, (long long)nbytes) + (long long)nbytes;
  long long peak = atomic_load(&peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {}
  atomic_fetch_add(&n_allocs, 1);
  return MT_OK;
}

void mt__cpu_free(int device, void *ptr, size_t nbytes, int pinned) {
  (void)device;
  (void)pinned;
  free(ptr);
  atomic_fetch_sub(&live_bytes, (long long)nbytes);
}

mt_status mt__cpu_memory_stats(int device, mt_memory_stats *out) {
  (void)device;
  out->allocated = out->reserved = atomic_load(&live_bytes);
  out->peak_allocated = out->peak_reserved = atomic_load(&peak_bytes);
  out->num_allocs = out->num_system_allocs = atomic_load(&n_allocs);
  return MT_OK;
}

mt_status mt__cpu_memory_reset_peak(int device) {
  (void)device;
  atomic_store(&peak_bytes, atomic_load(&live_bytes));
  return MT_OK;
}
