/* views.c: tensors that share storage (view, narrow, select, transpose, ...) and single-element access. */
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "dtype.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

static mt_status new_alias(mt_tensor **out, const mt_tensor *t, const char *op) {
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = NULL;
  MT_CHECK_TENSOR(t, op, "tensor");
  *out = mt__tensor_alias(t);
  return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
}

static mt_status check_dim(const char *op, const mt_tensor *t, int dim, int extra) {
  if (dim < 0 || dim >= t->ndim + extra) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s (%d dimensions)", op, dim + 1,
                     SHAPE(t, b), t->ndim);
  }
  return MT_OK;
}

/* An index as messages show it (1-based), without overflowing on hostile input. */
static long long one_based(int64_t i) { return i == INT64_MAX ? (long long)i : (long long)i + 1; }
static long long sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (a > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* Check that every element a strided layout can reach lies inside the storage. */
static mt_status check_in_storage(const char *op, const mt_tensor *t, int ndim, const int64_t *sizes,
                                  const int64_t *strides, int64_t offset) {
  int64_t lo = offset, hi = offset;
  if (offset < 0) return mt__error(MT_ERR_INDEX, "%s: negative storage offset %lld", op, (long long)offset);
  int64_t count = 1; /* product of the nonzero sizes: must not overflow even for an empty view */
  bool empty = false;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0)
      return mt__error(MT_ERR_SHAPE, "%s: size %lld of dimension %d is negative", op, (long long)sizes[i], i + 1);
    if (strides[i] < 0)
      return mt__error(MT_ERR_SHAPE, "%s: stride %lld of dimension %d is negative", op, (long long)strides[i], i + 1);
    if (sizes[i] == 0) empty = true;
    else if (__builtin_mul_overflow(count, sizes[i], &count))
      return mt__error(MT_ERR_SHAPE, "%s: element count overflows", op);
  }
  if (empty) { /* touches nothing, but a later resize grows from the offset: keep it in the storage */
    if (offset > mt_tensor_storage_numel(t))
      return mt__error(MT_ERR_INDEX, "%s: storage offset %lld beyond the %lld elements of the storage", op,
                       (long long)offset, (long long)mt_tensor_storage_numel(t));
    return MT_OK;
  }
  for (int i = 0; i < ndim; i++) {
    /* the span of the layout, stride by stride, without overflow (strides are >= 0 here) */
    int64_t step;
    if (__builtin_mul_overflow(strides[i], sizes[i] - 1, &step) || __builtin_add_overflow(hi, step, &hi))
      return mt__error(MT_ERR_SHAPE, "%s: stride %lld with size %lld overflows", op, (long long)strides[i],
                       (long long)sizes[i]);
  }
  int64_t n = mt_tensor_storage_numel(t);
  if (offset < 0 || lo < 0 || hi >= n)
    return mt__error(MT_ERR_INDEX, "%s: layout reaches elements %lld..%lld but the storage holds %lld", op,
                     (long long)lo, (long long)hi, (long long)n);
  return MT_OK;
}

mt_status mt_tensor_as_strided(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset) {
  const char *op = "as_strided";
  MT_CHECK_TENSOR(t, op, "tensor");
  if (ndim < 0 || ndim > MT_MAX_DIMS)
    return mt__error(MT_ERR_SHAPE, "%s: %d dimensions requested, at most %d supported", op, ndim, MT_MAX_DIMS);
  if (ndim && (!sizes || !strides)) return mt__error(MT_ERR_ARG, "%s: sizes or strides is NULL", op);
  MT_TRY(check_in_storage(op, t, ndim, sizes, strides, offset));
  MT_TRY(new_alias(out, t, op));
  (*out)->ndim = ndim;
  if (ndim) {
    memcpy((*out)->sizes, sizes, (size_t)ndim * sizeof *sizes);
    memcpy((*out)->strides, strides, (size_t)ndim * sizeof *strides);
  }
  (*out)->offset = offset;
  return MT_OK;
}

/* view: sizes may contain one -1. Works whenever the requested shape can be expressed with
 * strides over t's layout (the same rule as PyTorch's view), not only for contiguous t. */
mt_status mt_tensor_view(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes_in) {
  const char *op = "view";
  MT_CHECK_TENSOR(t, op, "tensor");
  if (ndim < 0 || ndim > MT_MAX_DIMS)
    return mt__error(MT_ERR_SHAPE, "%s: %d dimensions requested, at most %d supported", op, ndim, MT_MAX_DIMS);
  if (ndim && !sizes_in) return mt__error(MT_ERR_ARG, "%s: sizes is NULL", op);
  int64_t sizes[MT_MAX_DIMS], strides[MT_MAX_DIMS], known = 1, numel = mt__numel(t);
  int infer = -1;
  char b1[128], b2[128];
  for (int i = 0; i < ndim; i++) {
    sizes[i] = sizes_in[i];
    if (sizes[i] == -1) {
      if (infer >= 0) return mt__error(MT_ERR_SHAPE, "%s: only one size may be -1", op);
      infer = i;
    } else if (sizes[i] < 0) {
      return mt__error(MT_ERR_SHAPE, "%s: invalid size %lld", op, (long long)sizes[i]);
    } else {
      if (sizes[i] && known > INT64_MAX / sizes[i]) return mt__error(MT_ERR_SHAPE, "%s: element count overflows", op);
      known *= sizes[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known)
      return mt__error(MT_ERR_SHAPE, "%s: cannot view a tensor of size %s as %s", op, SHAPE(t, b1),
                       mt__sizes_str(ndim, sizes_in, b2, sizeof b2));
    sizes[infer] = numel / known;
    known = numel;
  }
  if (known != numel)
    return mt__error(MT_ERR_SHAPE, "%s: cannot view a tensor of size %s (%lld elements) as %s (%lld elements)", op,
                     SHAPE(t, b1), (long long)numel, mt__sizes_str(ndim, sizes, b2, sizeof b2), (long long)known);
  if (numel == 0 || mt__is_contiguous(t)) {
    mt__contiguous_strides(ndim, sizes, strides);
  } else {
    /* Walk old dims in chunks that are contiguous among themselves; each chunk must map onto
     * a run of new dims with the same element count. */
    int vi = ndim - 1;
    int64_t chunk_base = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int ti = t->ndim - 1; ti >= 0; ti--) {
      tensor_numel *= t->sizes[ti];
      bool chunk_ends = ti == 0 || (t->sizes[ti - 1] != 1 && t->strides[ti - 1] != tensor_numel * chunk_base);
      if (!chunk_ends) continue;
      while (vi >= 0 && (view_numel < tensor_numel || sizes[vi] == 1)) {
        strides[vi] = view_numel * chunk_base;
        view_numel *= sizes[vi];
        vi--;
      }
      if (view_numel != tensor_numel) break;
      if (ti > 0) {
        chunk_base = t->strides[ti - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
    if (view_numel != tensor_numel || vi != -1)
      return mt__error(MT_ERR_SHAPE,
                       "%s: size %s is not compatible with the strides of a tensor of size %s; call contiguous() "
                       "or reshape() first",
                       op, mt__sizes_str(ndim, sizes, b2, sizeof b2), SHAPE(t, b1));
  }
  MT_TRY(new_alias(out, t, op));
  (*out)->ndim = ndim;
  if (ndim) {
    memcpy((*out)->sizes, sizes, (size_t)ndim * sizeof *sizes);
    memcpy((*out)->strides, strides, (size_t)ndim * sizeof *strides);
  }
  return MT_OK;
}

/* Strides of an empty tensor can be huge (they are never used to address memory), so the
 * arithmetic that derives a view's layout saturates instead of overflowing. */
static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}

static void shift_offset(mt_tensor *r, const mt_tensor *t, int64_t index, int64_t stride) {
  if (mt__numel(t) == 0) return; /* nothing is addressed: keep the offset */
  r->offset += index * stride;   /* in bounds for a non-empty tensor, so no overflow */
}

mt_status mt_tensor_narrow(mt_tensor **out, const mt_tensor *t, int dim, int64_t start, int64_t length) {
  const char *op = "narrow";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_dim(op, t, dim, 0));
  if (start < 0 || length < 0 || start > t->sizes[dim] || length > t->sizes[dim] - start) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "%s: range [%lld, %lld] out of bounds for dimension %d of a tensor of size %s", op,
                     one_based(start), sat_add(start, length), dim + 1, SHAPE(t, b));
  }
  MT_TRY(new_alias(out, t, op));
  shift_offset(*out, t, start, t->strides[dim]);
  (*out)->sizes[dim] = length;
  return MT_OK;
}

mt_status mt_tensor_select(mt_tensor **out, const mt_tensor *t, int dim, int64_t index) {
  const char *op = "select";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_dim(op, t, dim, 0));
  if (index < 0 || index >= t->sizes[dim]) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "%s: index %lld out of range for dimension %d of a tensor of size %s", op,
                     one_based(index), dim + 1, SHAPE(t, b));
  }
  MT_TRY(new_alias(out, t, op));
  mt_tensor *r = *out;
  shift_offset(r, t, index, t->strides[dim]);
  for (int i = dim; i < t->ndim - 1; i++) {
    r->sizes[i] = t->sizes[i + 1];
    r->strides[i] = t->strides[i + 1];
  }
  r->ndim--;
  return MT_OK;
}

mt_status mt_tensor_transpose(mt_tensor **out, const mt_tensor *t, int d0, int d1) {
  const char *op = "transpose";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_dim(op, t, d0, 0));
  MT_TRY(check_dim(op, t, d1, 0));
  MT_TRY(new_alias(out, t, op));
  mt_tensor *r = *out;
  int64_t s = r->sizes[d0], st = r->strides[d0];
  r->sizes[d0] = r->sizes[d1];
  r->strides[d0] = r->strides[d1];
  r->sizes[d1] = s;
  r->strides[d1] = st;
  return MT_OK;
}

mt_status mt_tensor_permute(mt_tensor **out, const mt_tensor *t, int ndim, const int *dims) {
  const char *op = "permute";
  MT_CHECK_TENSOR(t, op, "tensor");
  if (ndim != t->ndim || (ndim && !dims))
    return mt__error(MT_ERR_SHAPE, "%s: %d dimensions given for a tensor with %d", op, ndim, t->ndim);
  int seen[MT_MAX_DIMS] = {0};
  for (int i = 0; i < ndim; i++) {
    MT_TRY(check_dim(op, t, dims[i], 0));
    if (seen[dims[i]]++) return mt__error(MT_ERR_ARG, "%s: dimension %d repeated", op, dims[i] + 1);
  }
  MT_TRY(new_alias(out, t, op));
  for (int i = 0; i < ndim; i++) {
    (*out)->sizes[i] = t->sizes[dims[i]];
    (*out)->strides[i] = t->strides[dims[i]];
  }
  return MT_OK;
}

mt_status mt_tensor_expand(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes) {
  const char *op = "expand";
  MT_CHECK_TENSOR(t, op, "tensor");
  char b1[128], b2[128];
  if (ndim < t->ndim || ndim > MT_MAX_DIMS || (ndim && !sizes))
    return mt__error(MT_ERR_SHAPE, "%s: cannot expand a tensor of size %s to %d dimensions", op, SHAPE(t, b1), ndim);
  int64_t ns[MT_MAX_DIMS], nst[MT_MAX_DIMS];
  int lead = ndim - t->ndim;
  for (int i = 0; i < ndim; i++) {
    int64_t want = sizes[i];
    if (i < lead) {
      if (want < 0) return mt__error(MT_ERR_SHAPE, "%s: size -1 not allowed for a new leading dimension", op);
      ns[i] = want;
      nst[i] = 0;
      continue;
    }
    int64_t have = t->sizes[i - lead];
    if (want == -1) want = have;
    if (want == have) {
      ns[i] = have;
      nst[i] = t->strides[i - lead];
    } else if (have == 1 && want >= 0) {
      ns[i] = want;
      nst[i] = 0;
    } else {
      return mt__error(MT_ERR_SHAPE, "%s: cannot expand a tensor of size %s to %s (dimension %d: %lld vs %lld)", op,
                       SHAPE(t, b1), mt__sizes_str(ndim, sizes, b2, sizeof b2), i + 1, (long long)have,
                       (long long)want);
    }
  }
  int64_t count = 1;
  for (int i = 0; i < ndim; i++)
    if (ns[i] && __builtin_mul_overflow(count, ns[i], &count))
      return mt__error(MT_ERR_SHAPE, "%s: expanding a tensor of size %s to %s: element count overflows", op,
                       SHAPE(t, b1), mt__sizes_str(ndim, sizes, b2, sizeof b2));
  MT_TRY(new_alias(out, t, op));
  (*out)->ndim = ndim;
  memcpy((*out)->sizes, ns, (size_t)ndim * sizeof *ns);
  memcpy((*out)->strides, nst, (size_t)ndim * sizeof *nst);
  return MT_OK;
}

mt_status mt_tensor_squeeze(mt_tensor **out, const mt_tensor *t, int dim) {
  const char *op = "squeeze";
  MT_CHECK_TENSOR(t, op, "tensor");
  if (dim >= 0) MT_TRY(check_dim(op, t, dim, 0));
  MT_TRY(new_alias(out, t, op));
  mt_tensor *r = *out;
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    bool drop = t->sizes[i] == 1 && (dim < 0 || dim == i);
    if (drop) continue;
    r->sizes[n] = t->sizes[i];
    r->strides[n] = t->strides[i];
    n++;
  }
  r->ndim = n;
  return MT_OK;
}

mt_status mt_tensor_unsqueeze(mt_tensor **out, const mt_tensor *t, int dim) {
  const char *op = "unsqueeze";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_dim(op, t, dim, 1));
  if (t->ndim >= MT_MAX_DIMS)
    return mt__error(MT_ERR_SHAPE, "%s: tensor already has %d dimensions, the maximum", op, MT_MAX_DIMS);
  MT_TRY(new_alias(out, t, op));
  mt_tensor *r = *out;
  for (int i = t->ndim; i > dim; i--) {
    r->sizes[i] = t->sizes[i - 1];
    r->strides[i] = t->strides[i - 1];
  }
  r->sizes[dim] = 1;
  r->strides[dim] = dim < t->ndim ? sat_mul(t->sizes[dim], t->strides[dim]) : 1;
  r->ndim = t->ndim + 1;
  return MT_OK;
}

/* unfold: slices of `size` every `step` along dim, as a new last dimension (Torch7's unfold). */
mt_status mt_tensor_unfold(mt_tensor **out, const mt_tensor *t, int dim, int64_t size, int64_t step) {
  const char *op = "unfold";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_dim(op, t, dim, 0));
  if (t->ndim >= MT_MAX_DIMS)
    return mt__error(MT_ERR_SHAPE, "%s: tensor already has %d dimensions, the maximum", op, MT_MAX_DIMS);
  if (size < 1 || step < 1 || size > t->sizes[dim])
    return mt__error(MT_ERR_ARG, "%s: size %lld and step %lld invalid for dimension %d of size %lld", op,
                     (long long)size, (long long)step, dim + 1, (long long)t->sizes[dim]);
  MT_TRY(new_alias(out, t, op));
  mt_tensor *r = *out;
  r->sizes[dim] = (t->sizes[dim] - size) / step + 1;
  r->strides[dim] = sat_mul(t->strides[dim], step);
  r->sizes[t->ndim] = size;
  r->strides[t->ndim] = t->strides[dim];
  r->ndim = t->ndim + 1;
  return MT_OK;
}

/* ---- single elements ---- */

static mt_status element_offset(const char *op, const mt_tensor *t, const int64_t *index, int64_t *off) {
  MT_CHECK_TENSOR(t, op, "tensor");
  if (t->ndim && !index) return mt__error(MT_ERR_ARG, "%s: index is NULL", op);
  if (!t->storage || mt__numel(t) == 0) return mt__error(MT_ERR_INDEX, "%s: tensor is empty", op);
  int64_t o = t->offset;
  for (int i = 0; i < t->ndim; i++) {
    if (index[i] < 0 || index[i] >= t->sizes[i]) {
      char b[128];
      return mt__error(MT_ERR_INDEX, "%s: index %lld out of range for dimension %d of a tensor of size %s", op,
                       one_based(index[i]), i + 1, SHAPE(t, b));
    }
    o += index[i] * t->strides[i];
  }
  *off = o;
  return MT_OK;
}

#define GET_CASE(E, N, T, CT)            \
  case E:                                \
    v = (double)mt_ld_##N((const T *)p); \
    break;
#define SET_CASE(E, N, T, CT) \
  case E: mt_st_##N((T *)p, (CT)v); break;

static double load_double(int dtype, const void *p) {
  double v = 0;
  switch (dtype) { MT_DTYPE_LIST(GET_CASE) default : break; }
  return mt__lua_number(v);
}

static void store_double(int dtype, void *p, double v) {
  if (!mt_dtype_is_floating(dtype)) {
    int64_t i = mt_double_to_i64(v);
    switch (dtype) {
#define SETI_CASE(E, N, T, CT) \
  case E: mt_st_##N((T *)p, i); break;
      MT_DTYPE_LIST(SETI_CASE)
      default: break;
    }
    return;
  }
  switch (dtype) { MT_FLOAT_DTYPE_LIST(SET_CASE) default : break; }
}

/* A one-element alias of t at element `off`, for device-agnostic transfers through mt_copy. */
static mt_status element_view(const mt_tensor *t, int64_t off, mt_tensor **view) {
  *view = mt__tensor_alias(t);
  if (!*view) return mt__error(MT_ERR_MEMORY, "element: out of host memory");
  (*view)->ndim = 0;
  (*view)->offset = off;
  return MT_OK;
}

mt_status mt_tensor_get_item(const mt_tensor *t, const int64_t *index, double *out) {
  int64_t off;
  MT_TRY(element_offset("get", t, index, &off));
  if (!out) return mt__error(MT_ERR_ARG, "get: out is NULL");
  size_t es = mt__dtype_size(t->dtype);
  if (t->device == MT_CPU) {
    *out = load_double(t->dtype, (char *)t->storage->data + off * (int64_t)es);
    return MT_OK;
  }
  char buf[8];
  mt_tensor *v, *host;
  MT_TRY(element_view(t, off, &v));
  mt_status st = mt__tensor_empty(&host, t->dtype, MT_CPU, 0, NULL);
  if (st == MT_OK) {
    st = mt_copy(host, v);
    if (st == MT_OK) memcpy(buf, host->storage->data, es), *out = load_double(t->dtype, buf);
    mt_tensor_release(host);
  }
  mt_tensor_release(v);
  return st;
}

mt_status mt_tensor_set_item(mt_tensor *t, const int64_t *index, double v) {
  int64_t off;
  MT_TRY(element_offset("set", t, index, &off));
  size_t es = mt__dtype_size(t->dtype);
  if (t->device == MT_CPU) {
    store_double(t->dtype, (char *)t->storage->data + off * (int64_t)es, v);
    return MT_OK;
  }
  mt_tensor *view, *host;
  MT_TRY(element_view(t, off, &view));
  mt_status st = mt__tensor_empty(&host, t->dtype, MT_CPU, 0, NULL);
  if (st == MT_OK) {
    store_double(t->dtype, host->storage->data, v);
    st = mt_copy(view, host);
    mt_tensor_release(host);
  }
  mt_tensor_release(view);
  return st;
}
