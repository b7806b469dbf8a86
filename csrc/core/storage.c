/* storage.c: storages as Torch7's Storage objects use them: a storage viewing part of another,
 * an in-place resize that every tensor on the storage sees, and storages that map a file.
 * Each entry point hands Lua a 1-d tensor covering its whole storage from offset 0. */
#define _GNU_SOURCE /* ftruncate, fstat with off_t beyond 2 GB */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backend.h"
#include "error.h"

static int64_t storage_numel(const mt_tensor *t) {
  return t->storage ? (int64_t)(t->storage->nbytes / mt__dtype_size(t->dtype)) : 0;
}

int mt_storage_kind(const mt_tensor *t) {
  if (!t || !t->storage) return MT_STORAGE_MEMORY;
  if (t->storage->base) return MT_STORAGE_VIEW;
  return t->storage->mapped ? MT_STORAGE_FILE : MT_STORAGE_MEMORY;
}

mt_status mt_storage_view(mt_tensor **out, const mt_tensor *t, int64_t offset, int64_t numel) {
  const char *op = "storage view";
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = NULL;
  MT_CHECK_TENSOR(t, op, "tensor");
  int64_t n = storage_numel(t), end;
  if (offset < 0 || numel < 0 || __builtin_add_overflow(offset, numel, &end) || end > n)
    return mt__error(MT_ERR_INDEX, "%s: elements [%lld, %lld] are outside a storage of size %lld", op,
                     (long long)offset + 1, (long long)offset + (long long)numel, (long long)n);
  if (!t->storage) return mt_tensor_new(out, t->dtype, t->device, 1, &numel); /* empty either way */
  mt_storage *s = calloc(1, sizeof *s);
  if (!s) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  size_t es = mt__dtype_size(t->dtype);
  s->data = (char *)t->storage->data + (size_t)offset * es;
  s->nbytes = s->capacity = (size_t)numel * es;
  s->device = t->storage->device;
  s->pinned = 0; /* only the base's own block is registered with the CUDA host allocator */
  s->base = t->storage;
  atomic_init(&s->refcount, 1);
  atomic_fetch_add(&t->storage->refcount, 1);
  if (!(*out = mt__tensor_over_storage(s, t->dtype, numel))) {
    mt__storage_release(s);
    return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  }
  return MT_OK;
}

mt_status mt_storage_resize(mt_tensor *t, int64_t numel) {
  const char *op = "storage resize";
  MT_CHECK_TENSOR(t, op, "storage");
  if (numel < 0) return mt__error(MT_ERR_SHAPE, "%s: size %lld is negative", op, (long long)numel);
  size_t es = mt__dtype_size(t->dtype);
  if ((uint64_t)numel > (uint64_t)INT64_MAX / 8 / es)
    return mt__error(MT_ERR_SHAPE, "%s: size %lld overflows", op, (long long)numel);
  size_t bytes = (size_t)numel * es;
  mt_storage *s = t->storage;
  if (s && s->base) return mt__error(MT_ERR_UNSUPPORTED, "%s: a storage that views another cannot be resized", op);
  if (s && s->mapped) return mt__error(MT_ERR_UNSUPPORTED, "%s: a storage that maps a file cannot be resized", op);
  if (!s) {
    MT_TRY(mt__storage_new(&t->storage, bytes, t->device, 0));
  } else if (bytes <= s->capacity) {
    /* Shrinking keeps the block: tensors on this storage that reach further stay in memory. */
    s->nbytes = bytes;
  } else {
    /* Grow into a new block and swap it into the same storage, so every tensor on it sees it. */
    mt_storage *ns;
    MT_TRY(mt__storage_new(&ns, bytes, s->device, s->pinned));
    if (s->nbytes) {
      mt_tensor *from = mt__tensor_over_storage(s, MT_U8, (int64_t)s->nbytes);
      mt_tensor *to = mt__tensor_over_storage(ns, MT_U8, (int64_t)s->nbytes);
      mt_status st = from && to ? mt_copy(to, from) : mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
      free(from); /* headers only: they borrowed the storages */
      free(to);
      if (st != MT_OK) {
        mt__storage_release(ns);
        return st;
      }
    }
    void *data = s->data;
    size_t cap = s->capacity;
    s->data = ns->data, s->capacity = ns->capacity, s->nbytes = bytes;
    ns->data = data, ns->capacity = cap;
    mt__storage_release(ns); /* frees the old block */
  }
  t->offset = 0;
  t->ndim = 1;
  t->sizes[0] = numel;
  t->strides[0] = 1;
  return MT_OK;
}

mt_status mt_storage_map_file(mt_tensor **out, const char *path, int dtype, int shared, int64_t numel) {
  const char *op = "storage";
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = NULL;
  if (!path) return mt__error(MT_ERR_ARG, "%s: file name is NULL", op);
  if (dtype < 0 || dtype >= MT_NUM_DTYPES) return mt__error(MT_ERR_DTYPE, "%s: invalid dtype %d", op, dtype);
  if (shared < 0 || shared > 2) return mt__error(MT_ERR_ARG, "%s: shared is %d (0, 1 or 2)", op, shared);
  size_t es = mt__dtype_size(dtype);
  if (numel >= 0 && (uint64_t)numel > (uint64_t)INT64_MAX / 8 / es)
    return mt__error(MT_ERR_SHAPE, "%s: size %lld overflows", op, (long long)numel);
  int fd = open(path, shared ? O_RDWR | O_CREAT : O_RDONLY, 0666);
  if (fd < 0)
    return mt__error(MT_ERR_IO, "%s: cannot open '%s' for %s: %s", op, path, shared ? "reading and writing" : "reading",
                     strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return mt__error(MT_ERR_IO, "%s: cannot stat '%s': %s", op, path, strerror(e));
  }
  size_t have = (size_t)sb.st_size, bytes;
  if (numel < 0) {
    if (have == 0) {
      close(fd);
      return mt__error(MT_ERR_IO, "%s: file '%s' is empty; give the size to map", op, path);
    }
    numel = (int64_t)(have / es);
  }
  bytes = (size_t)numel * es;
  if (have < bytes) {
    if (!shared || ftruncate(fd, (off_t)bytes) != 0) {
      int e = errno;
      close(fd);
      if (!shared)
        return mt__error(MT_ERR_IO, "%s: file '%s' holds %zu bytes, %zu needed for %lld elements of %s", op, path, have,
                         bytes, (long long)numel, mt_dtype_name(dtype));
      return mt__error(MT_ERR_IO, "%s: cannot extend '%s' to %zu bytes: %s", op, path, bytes, strerror(e));
    }
  }
  void *data = NULL;
  if (bytes) {
    /* private maps are copy-on-write: the storage may change, the file does not */
    data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      int e = errno;
      close(fd);
      return mt__error(MT_ERR_IO, "%s: cannot map %zu bytes of '%s': %s", op, bytes, path, strerror(e));
    }
  }
  close(fd); /* the map keeps the file */
  mt_storage *s = calloc(1, sizeof *s);
  char *owned = shared == 2 ? strdup(path) : NULL;
  if (s && (shared != 2 || owned)) {
    s->unlink_path = owned;
    s->data = data;
    s->nbytes = s->capacity = bytes;
    s->device = MT_CPU;
    s->mapped = bytes > 0;
    atomic_init(&s->refcount, 1);
    if ((*out = mt__tensor_over_storage(s, (mt_dtype)dtype, numel))) return MT_OK;
    mt__storage_release(s);
    return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  }
  free(s);
  free(owned);
  if (data) munmap(data, bytes);
  return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
}

void mt__storage_unmap(mt_storage *s) {
  if (s->data) munmap(s->data, s->capacity);
  if (s->unlink_path) {
    unlink(s->unlink_path); /* gone already (removed by hand) is fine */
    free(s->unlink_path);
  }
}
