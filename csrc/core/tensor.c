/* tensor.c: storages, tensor headers, metadata accessors and shape helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "error.h"

/* per-dtype facts, all read off MT_DTYPES */
#define DT_SIZE(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = sizeof(T),
#define DT_NAME(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = NAME,
#define DT_TORCH(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = TORCH,
#define DT_CTYPE(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = #T,
#define DT_FLOAT(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = FL,
static const size_t dtype_sizes[] = {MT_DTYPES(DT_SIZE, ~)};
static const char *const dtype_names[] = {MT_DTYPES(DT_NAME, ~)};
static const char *const dtype_torch[] = {MT_DTYPES(DT_TORCH, ~)};
static const char *const dtype_ctypes[] = {MT_DTYPES(DT_CTYPE, ~)};
static const unsigned char dtype_float[] = {MT_DTYPES(DT_FLOAT, ~)};
_Static_assert(sizeof dtype_sizes / sizeof dtype_sizes[0] == MT_NUM_DTYPES, "one entry per dtype");

static int valid_dtype(int dtype) { return dtype >= 0 && dtype < MT_NUM_DTYPES; }
size_t mt__dtype_size(int dtype) { return valid_dtype(dtype) ? dtype_sizes[dtype] : 0; }
size_t mt_dtype_size(int dtype) { return mt__dtype_size(dtype); }
const char *mt_dtype_name(int dtype) { return valid_dtype(dtype) ? dtype_names[dtype] : "invalid-dtype"; }
int mt_dtype_is_floating(int dtype) { return valid_dtype(dtype) && dtype_float[dtype]; }
const char *mt_dtype_torch_name(int dtype) { return valid_dtype(dtype) ? dtype_torch[dtype] : NULL; }
const char *mt_dtype_ctype(int dtype) { return valid_dtype(dtype) ? dtype_ctypes[dtype] : NULL; }

const char *mt_version(void) { return "0.1.0"; }

/* ---- shape helpers ---- */

const char *mt__sizes_str(int ndim, const int64_t *sizes, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  if (ndim == 0) {
    snprintf(buf, len, "[scalar]");
    return buf;
  }
  for (int i = 0; i < ndim && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, i ? "x%lld" : "%lld", (long long)sizes[i]);
  return buf;
}

const char *mt__shape_str(const mt_tensor *t, char *buf, size_t len) {
  return mt__sizes_str(t->ndim, t->sizes, buf, len);
}

const char *mt__device_str(int device, char *buf, size_t len) {
  if (device == MT_CPU) snprintf(buf, len, "cpu");
  else snprintf(buf, len, "cuda:%d", device);
  return buf;
}

void mt__contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
  /* Saturate instead of overflowing: a shape with a 0 size may have a huge product elsewhere,
   * and such a tensor holds no elements, so its strides are never used for addressing. */
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    int64_t n = sizes[i] > 0 ? sizes[i] : 1;
    if (__builtin_mul_overflow(s, n, &s)) s = INT64_MAX;
  }
}

int64_t mt__numel(const mt_tensor *t) {
  /* a zero size anywhere means no elements, whatever the product of the other sizes */
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (__builtin_mul_overflow(n, t->sizes[i], &n)) return INT64_MAX; /* views refuse such shapes */
  return n;
}

bool mt__is_contiguous(const mt_tensor *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] == 0) return true; /* no elements: any layout is contiguous (as in PyTorch) */
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->sizes[i] == 1) continue;
    if (t->strides[i] != s) return false;
    if (__builtin_mul_overflow(s, t->sizes[i], &s)) return false;
  }
  return true;
}

void mt__channels_last_strides(const int64_t *s, int64_t *st) {
  st[0] = s[1] * s[2] * s[3], st[1] = 1, st[2] = s[3] * s[1], st[3] = s[1];
}

bool mt__is_channels_last(const mt_tensor *t) {
  if (t->ndim != 4) return false;
  int64_t want[4], row[4];
  mt__channels_last_strides(t->sizes, want);
  mt__contiguous_strides(4, t->sizes, row);
  /* exactly the strides channelsLast gives (as PyTorch, the size-1 dimensions' strides tell
   * a 1-channel or 1x1 channels-last tensor from an NCHW one) */
  if (!memcmp(t->strides, want, sizeof want) && memcmp(want, row, sizeof row)) return true;
  if (mt__is_contiguous(t)) return false;
  for (int i = 0; i < 4; i++)
    if (t->sizes[i] > 1 && t->strides[i] != want[i]) return false;
  return true;
}

bool mt__set_layout(mt_tensor *t, bool cl) {
  if (t->ndim != 4 || !(mt__is_contiguous(t) || mt__is_channels_last(t))) return false;
  if (cl) mt__channels_last_strides(t->sizes, t->strides);
  else mt__contiguous_strides(4, t->sizes, t->strides);
  return true;
}

/* product of sizes with overflow detection; -1 on overflow or negative size */
static int64_t checked_numel(int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0) return -1;
    if (sizes[i] && n > INT64_MAX / sizes[i]) return -1;
    n *= sizes[i];
  }
  return n;
}

mt_status mt__broadcast_shape(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb, int *ndim,
                              int64_t *sizes) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int64_t x = i < n - na ? 1 : sa[i - (n - na)];
    int64_t y = i < n - nb ? 1 : sb[i - (n - nb)];
    if (x != y && x != 1 && y != 1) {
      char b1[128], b2[128];
      return mt__error(MT_ERR_SHAPE, "%s: sizes %s and %s cannot be broadcast together (dimension %d: %lld vs %lld)",
                       op, mt__sizes_str(na, sa, b1, sizeof b1), mt__sizes_str(nb, sb, b2, sizeof b2), i + 1,
                       (long long)x, (long long)y);
    }
    sizes[i] = x == 1 ? y : x;
  }
  *ndim = n;
  return MT_OK;
}

/* ---- storages ---- */

mt_status mt__storage_new(mt_storage **out, size_t nbytes, int device, int pinned) {
  const mt_backend *be;
  if (pinned) {
    /* Page-locked memory only helps CUDA transfers; without a device it is plain memory. */
    be = mt__cuda_backend_get();
    if (!be || mt_cuda_device_count() == 0) {
      be = &mt__cpu_backend;
      pinned = 0;
    }
  } else if (!(be = mt__backend_for(device, "allocate"))) {
    return mt_last_status();
  }
  mt_storage *s = calloc(1, sizeof *s);
  if (!s) return mt__error(MT_ERR_MEMORY, "allocate: out of host memory for a storage header");
  mt_status st = be->alloc(device, nbytes, pinned, &s->data);
  if (st != MT_OK) {
    free(s);
    return st;
  }
  s->nbytes = s->capacity = nbytes;
  s->device = device;
  s->pinned = pinned;
  atomic_init(&s->refcount, 1);
  *out = s;
  return MT_OK;
}

void mt__storage_release(mt_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub(&s->refcount, 1) != 1) return;
  if (s->base) {
    mt__storage_release(s->base);
  } else if (s->mapped || s->unlink_path) {
    mt__storage_unmap(s);
  } else {
    const mt_backend *be = s->pinned ? mt__cuda_backend_get() : mt__backend_for(s->device, "free");
    if (be) be->free(s->device, s->data, s->capacity, s->pinned);
  }
  free(s);
}

/* ---- tensors ---- */

static mt_tensor *header_new(void) {
  mt_tensor *t = calloc(1, sizeof *t);
  if (t) atomic_init(&t->refcount, 1);
  return t;
}

mt_tensor *mt__tensor_alias(const mt_tensor *src) {
  mt_tensor *t = header_new();
  if (!t) return NULL;
  memcpy(t->sizes, src->sizes, sizeof t->sizes);
  memcpy(t->strides, src->strides, sizeof t->strides);
  t->ndim = src->ndim;
  t->dtype = src->dtype;
  t->device = src->device;
  t->offset = src->offset;
  t->storage = src->storage;
  if (t->storage) atomic_fetch_add(&t->storage->refcount, 1);
  return t;
}

mt_tensor *mt__tensor_over_storage(mt_storage *s, mt_dtype dtype, int64_t numel) {
  mt_tensor *t = header_new();
  if (!t) return NULL;
  t->storage = s;
  t->dtype = dtype;
  t->device = s->device;
  t->ndim = 1;
  t->sizes[0] = numel;
  t->strides[0] = 1;
  return t;
}

static mt_status check_new_args(const char *op, int dtype, int ndim, const int64_t *sizes, int64_t *numel) {
  if (dtype < 0 || dtype >= MT_NUM_DTYPES) return mt__error(MT_ERR_DTYPE, "%s: invalid dtype %d", op, dtype);
  if (ndim < 0 || ndim > MT_MAX_DIMS)
    return mt__error(MT_ERR_SHAPE, "%s: %d dimensions requested, at most %d supported", op, ndim, MT_MAX_DIMS);
  if (ndim > 0 && !sizes) return mt__error(MT_ERR_ARG, "%s: sizes is NULL", op);
  for (int i = 0; i < ndim; i++)
    if (sizes[i] < 0)
      return mt__error(MT_ERR_SHAPE, "%s: size %lld of dimension %d is negative", op, (long long)sizes[i], i + 1);
  int64_t n = checked_numel(ndim, sizes);
  if (n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) return mt__error(MT_ERR_SHAPE, "%s: element count overflows", op);
  *numel = n;
  return MT_OK;
}

static mt_status tensor_alloc(mt_tensor **out, int dtype, int device, int ndim, const int64_t *sizes, int pinned,
                              const char *op) {
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = NULL;
  int64_t n;
  MT_TRY(check_new_args(op, dtype, ndim, sizes, &n));
  mt_tensor *t = header_new();
  if (!t) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  mt_status st = mt__storage_new(&t->storage, (size_t)n * mt__dtype_size(dtype), device, pinned);
  if (st != MT_OK) {
    free(t);
    return st;
  }
  t->ndim = ndim;
  t->dtype = (mt_dtype)dtype;
  t->device = device;
  if (ndim) memcpy(t->sizes, sizes, (size_t)ndim * sizeof *sizes);
  mt__contiguous_strides(ndim, t->sizes, t->strides);
  *out = t;
  return MT_OK;
}

mt_status mt__tensor_empty(mt_tensor **out, mt_dtype dtype, int device, int ndim, const int64_t *sizes) {
  return tensor_alloc(out, dtype, device, ndim, sizes, 0, "tensor");
}

mt_status mt_tensor_new(mt_tensor **out, int dtype, int device, int ndim, const int64_t *sizes) {
  return tensor_alloc(out, dtype, device, ndim, sizes, 0, "tensor");
}

mt_status mt_tensor_new_pinned(mt_tensor **out, int dtype, int ndim, const int64_t *sizes) {
  return tensor_alloc(out, dtype, MT_CPU, ndim, sizes, 1, "pinned tensor");
}

void mt_tensor_retain(mt_tensor *t) {
  if (t) atomic_fetch_add(&t->refcount, 1);
}

void mt_tensor_release(mt_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub(&t->refcount, 1) != 1) return;
  mt__storage_release(t->storage);
  free(t);
}

int mt_tensor_ndim(const mt_tensor *t) { return t ? t->ndim : 0; }
int64_t mt_tensor_size(const mt_tensor *t, int dim) { return (t && dim >= 0 && dim < t->ndim) ? t->sizes[dim] : -1; }
int64_t mt_tensor_stride(const mt_tensor *t, int dim) { return (t && dim >= 0 && dim < t->ndim) ? t->strides[dim] : 0; }
int64_t mt_tensor_offset(const mt_tensor *t) { return t ? t->offset : 0; }
int64_t mt_tensor_numel(const mt_tensor *t) { return t ? mt__numel(t) : 0; }
int mt_tensor_dtype(const mt_tensor *t) { return t ? (int)t->dtype : -1; }
int mt_tensor_device(const mt_tensor *t) { return t ? t->device : MT_CPU; }
int mt_tensor_is_contiguous(const mt_tensor *t) { return t ? mt__is_contiguous(t) : 0; }
int mt_tensor_is_channels_last(const mt_tensor *t) { return t ? mt__is_channels_last(t) : 0; }
int mt_tensor_is_pinned(const mt_tensor *t) { return t && t->storage ? t->storage->pinned : 0; }
void *mt_tensor_data(const mt_tensor *t) { return t ? mt__data(t) : NULL; }
int64_t mt_tensor_storage_numel(const mt_tensor *t) {
  return t && t->storage ? (int64_t)(t->storage->nbytes / mt__dtype_size(t->dtype)) : 0;
}
const void *mt_tensor_storage_key(const mt_tensor *t) { return t ? (const void *)t->storage : NULL; }

/* ---- in-place metadata ---- */

mt_status mt_tensor_resize(mt_tensor *t, int ndim, const int64_t *sizes) {
  MT_CHECK_TENSOR(t, "resize", "tensor");
  int64_t n;
  MT_TRY(check_new_args("resize", t->dtype, ndim, sizes, &n));
  int64_t end;
  bool fits = !__builtin_add_overflow(t->offset, n, &end) && t->storage &&
              (uint64_t)end <= t->storage->nbytes / mt__dtype_size(t->dtype);
  if (!fits) {
    /* Torch7 semantics: a storage too small is replaced; the old contents are not kept. */
    mt_storage *s;
    MT_TRY(mt__storage_new(&s, (size_t)n * mt__dtype_size(t->dtype), t->device, t->storage ? t->storage->pinned : 0));
    mt__storage_release(t->storage);
    t->storage = s;
    t->offset = 0;
  }
  t->ndim = ndim;
  if (ndim) memcpy(t->sizes, sizes, (size_t)ndim * sizeof *sizes);
  mt__contiguous_strides(ndim, t->sizes, t->strides);
  return MT_OK;
}

mt_status mt_tensor_set(mt_tensor *t, const mt_tensor *src) {
  MT_CHECK_TENSOR(t, "set", "tensor");
  MT_CHECK_TENSOR(src, "set", "source");
  if (t == src) return MT_OK;
  if (src->storage) atomic_fetch_add(&src->storage->refcount, 1);
  mt__storage_release(t->storage);
  t->storage = src->storage;
  t->offset = src->offset;
  t->ndim = src->ndim;
  t->dtype = src->dtype;
  t->device = src->device;
  memcpy(t->sizes, src->sizes, sizeof t->sizes);
  memcpy(t->strides, src->strides, sizeof t->strides);
  return MT_OK;
}

mt_status mt__prepare_out(mt_tensor *out, mt_dtype dtype, int device, int ndim, const int64_t *sizes, const char *op) {
  if (!out) return mt__error(MT_ERR_ARG, "%s: result tensor is NULL", op);
  if (out->dtype != dtype)
    return mt__error(MT_ERR_DTYPE, "%s: result tensor has dtype %s, expected %s", op, mt_dtype_name(out->dtype),
                     mt_dtype_name(dtype));
  if (out->device != device) {
    char b1[32], b2[32];
    return mt__error(MT_ERR_DEVICE, "%s: result tensor is on %s, expected %s", op,
                     mt__device_str(out->device, b1, sizeof b1), mt__device_str(device, b2, sizeof b2));
  }
  bool same = out->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = out->sizes[i] == sizes[i];
  if (same && out->storage) return MT_OK;
  return mt_tensor_resize(out, ndim, sizes);
}
