/* tensor.h: the internal layout of tensors and storages, shared by the core and backends.
 * Not part of the public API: Lua reaches these only through accessor functions. */
#ifndef MT_CORE_TENSOR_H
#define MT_CORE_TENSOR_H

/* C++ (the CUDA kernel files) gets atomic_int as std::atomic<int> from kernels/common.cuh:
 * a C <stdatomic.h> in C++ breaks libstdc++ 13's own headers with its macros */
#ifndef __cplusplus
#include <stdatomic.h>
#endif
#include <stdbool.h>
#include "../moontorch.h"

#define MT_MAX_DIMS 8
#define MT_CPU (-1)

typedef struct mt_storage {
  void *data;
  size_t nbytes;
  size_t capacity;         /* bytes allocated (>= nbytes: a storage resized down keeps its block) */
  int device;              /* MT_CPU or CUDA ordinal */
  int pinned;              /* host memory that is page-locked (CUDA host allocator) */
  struct mt_storage *base; /* a view (storage.c): data points into base, which it holds */
  int mapped;              /* data is an mmap of `capacity` bytes of a file (storage.c) */
  char *unlink_path;       /* a file mapped for shared memory, removed with the storage (storage.c) */
  atomic_int refcount;
} mt_storage;

struct mt_tensor {
  mt_storage *storage; /* NULL only while numel == 0 and nothing was ever allocated */
  int64_t offset;      /* in elements */
  int64_t sizes[MT_MAX_DIMS];
  int64_t strides[MT_MAX_DIMS];
  int ndim;
  mt_dtype dtype;
  int device;
  atomic_int refcount;
};

/* element size of a dtype, or 0 for an invalid one */
size_t mt__dtype_size(int dtype);
int64_t mt__numel(const mt_tensor *t);
bool mt__is_contiguous(const mt_tensor *t);
/* Channels-last (NHWC in memory) 4-d N x C x H x W tensors: strides H*W*C, 1, W*C, C. The check
 * is true for exactly those strides, and otherwise ignores strides of size-1 dimensions and is
 * false for a tensor that is also contiguous: a 1-channel (or 1x1) tensor, which is both, counts
 * as channels-last only when its size-1 dimensions have their channels-last strides too. */
bool mt__is_channels_last(const mt_tensor *t);
void mt__channels_last_strides(const int64_t *sizes, int64_t *strides);
/* A dense 4-d tensor (contiguous or channels-last, so one block of numel elements either way)
 * restrided in place to channels-last (cl) or NCHW over the same elements; values are not
 * moved. False (t unchanged) for anything else. */
bool mt__set_layout(mt_tensor *t, bool cl);
/* address of element 0 (host or device pointer) */
static inline char *mt__data(const mt_tensor *t) {
  /* an empty storage has no data: no pointer arithmetic on NULL */
  return t->storage && t->storage->data ? (char *)t->storage->data + t->offset * (int64_t)mt__dtype_size(t->dtype)
                                        : NULL;
}

/* make a new tensor header (refcount 1) sharing t's storage */
mt_tensor *mt__tensor_alias(const mt_tensor *t);
/* a 1-d tensor of numel elements over all of s from offset 0, taking over one reference to s
 * (NULL when out of host memory: the caller still owns that reference) */
mt_tensor *mt__tensor_over_storage(mt_storage *s, mt_dtype dtype, int64_t numel);
/* new contiguous tensor with fresh storage */
mt_status mt__tensor_empty(mt_tensor **out, mt_dtype dtype, int device, int ndim, const int64_t *sizes);
/* resize out to (ndim, sizes) with dtype/device checked: the common "prepare output" step */
mt_status mt__prepare_out(mt_tensor *out, mt_dtype dtype, int device, int ndim, const int64_t *sizes, const char *op);
/* contiguous strides for sizes */
void mt__contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);
/* broadcast shapes a and b into (ndim, sizes); MT_ERR_SHAPE with a message naming op */
mt_status mt__broadcast_shape(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb, int *ndim,
                              int64_t *sizes);
/* shape as text "3x4x5" into buf (for error messages) */
const char *mt__shape_str(const mt_tensor *t, char *buf, size_t len);
const char *mt__sizes_str(int ndim, const int64_t *sizes, char *buf, size_t len);
const char *mt__device_str(int device, char *buf, size_t len);

/* storages */
mt_status mt__storage_new(mt_storage **out, size_t nbytes, int device, int pinned);
void mt__storage_release(mt_storage *s);
/* unmap a file-mapped storage's memory and remove its file if it owns it (storage.c) */
void mt__storage_unmap(mt_storage *s);

#endif
