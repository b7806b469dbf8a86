/* dispatch.c: which backend serves a device, and the device-level entry points. */
#include <stddef.h>
#include <string.h>
#include "backend.h"
#include "error.h"

/* Every field after `name` is a function pointer: a table is checked entry by entry without a
 * list of field names that could itself miss a new entry. */
typedef mt_status (*mt__any_fn)(void);
_Static_assert((sizeof(mt_backend) - offsetof(mt_backend, alloc)) % sizeof(mt__any_fn) == 0,
               "mt_backend must hold only function pointers after its name");

static mt_status table_check(const mt_backend *t) {
  const char *p = (const char *)t;
  for (size_t off = offsetof(mt_backend, alloc); off < sizeof *t; off += sizeof(mt__any_fn)) {
    mt__any_fn f;
    memcpy(&f, p + off, sizeof f);
    if (!f)
      return mt__error(MT_ERR_INTERNAL, "backend %s: op table entry %zu (counting alloc as 0) is missing", t->name,
                       (off - offsetof(mt_backend, alloc)) / sizeof(mt__any_fn));
  }
  return MT_OK;
}

mt_status mt_backend_check(void) {
  MT_TRY(table_check(&mt__cpu_backend));
  const mt_backend *cuda = mt__cuda_backend_get();
  return cuda ? table_check(cuda) : MT_OK;
}

const mt_backend *mt__backend_for(int device, const char *op) {
  if (device == MT_CPU) return &mt__cpu_backend;
  if (device < 0) {
    mt__error(MT_ERR_DEVICE, "%s: invalid device %d", op, device);
    return NULL;
  }
  const mt_backend *cuda = mt__cuda_backend_get();
  if (!cuda) {
    mt__error(MT_ERR_CUDA,
              "%s: CUDA device %d requested but this build of moontorch has no CUDA support "
              "(rebuild with CUDA found, or -DMT_CUDA=ON)",
              op, device);
    return NULL;
  }
  int n = mt_cuda_device_count();
  if (device >= n) {
    if (n == 0) mt__error(MT_ERR_CUDA, "%s: CUDA device %d requested but no CUDA device is available", op, device);
    else mt__error(MT_ERR_DEVICE, "%s: CUDA device %d requested but only %d present", op, device, n);
    return NULL;
  }
  return cuda;
}

mt_status mt_memory_stats_get(int device, mt_memory_stats *out) {
  if (!out) return mt__error(MT_ERR_ARG, "memory_stats: out is NULL");
  const mt_backend *be = mt__backend_for(device, "memory_stats");
  if (!be) return mt_last_status();
  return be->memory_stats(device, out);
}

mt_status mt_memory_reset_peak(int device) {
  const mt_backend *be = mt__backend_for(device, "memory_reset_peak");
  if (!be) return mt_last_status();
  return be->memory_reset_peak(device);
}

int64_t mt_memory_allocated(int device) {
  mt_memory_stats s;
  const mt_backend *be = device == MT_CPU ? &mt__cpu_backend : mt__cuda_backend_get();
  if (!be || (device != MT_CPU && device >= mt_cuda_device_count())) return -1;
  if (be->memory_stats(device, &s) != MT_OK) return -1;
  return s.allocated;
}
