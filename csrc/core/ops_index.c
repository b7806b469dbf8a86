/* ops_index.c: public entry points for cat and the index ops (index_select, index_add,
 * index_fill, gather, scatter, scatter_fill). They check shapes/dtypes/devices, size results,
 * and keep the backends free of aliasing: a result that shares memory with an input is
 * computed in a temp, and an input that shares memory with an in-place target is cloned first.
 * Index values are range-checked by the backends (they live on the device). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

static int shares(const mt_tensor *a, const mt_tensor *b) { return a && b && a->storage && a->storage == b->storage; }

static mt_status check_device(const char *op, const mt_tensor *t, const char *what, const mt_tensor *ref,
                              const char *refwhat) {
  if (t->device == ref->device) return MT_OK;
  char b1[32], b2[32];
  return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but %s is on %s", op, what, mt__device_str(t->device, b1, sizeof b1),
                   refwhat, mt__device_str(ref->device, b2, sizeof b2));
}

static mt_status check_dtype(const char *op, const mt_tensor *t, const char *what, const mt_tensor *ref,
                             const char *refwhat) {
  if (t->dtype == ref->dtype) return MT_OK;
  return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but %s has %s", op, what, mt_dtype_name(t->dtype), refwhat,
                   mt_dtype_name(ref->dtype));
}

static mt_status check_index(const char *op, const mt_tensor *index, const mt_tensor *ref, int max_ndim) {
  MT_CHECK_TENSOR(index, op, "index");
  if (index->dtype != MT_I64 && index->dtype != MT_I32)
    return mt__error(MT_ERR_DTYPE, "%s: index must be an int64 (Long) or int32 tensor, got %s", op,
                     mt_dtype_name(index->dtype));
  if (max_ndim >= 0 && index->ndim > max_ndim) {
    char b[128];
    return mt__error(MT_ERR_SHAPE, "%s: index must be 1-d, got size %s", op, SHAPE(index, b));
  }
  return check_device(op, index, "index", ref, "the tensor");
}

static mt_status check_dim(const char *op, const mt_tensor *t, int dim) {
  if (dim >= 0 && dim < t->ndim) return MT_OK;
  char b[128];
  return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s", op, dim + 1, SHAPE(t, b));
}

/* Writing through a 0 stride would make several results share one element. */
static mt_status check_writable(const char *op, const mt_tensor *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1 && t->strides[i] == 0) {
      char b[128];
      return mt__error(MT_ERR_ARG,
                       "%s: the tensor written to (size %s) is expanded, so several of its elements "
                       "share memory; call clone() first",
                       op, SHAPE(t, b));
    }
  return MT_OK;
}

/* a contiguous copy of t, for inputs that overlap the tensor being written */
static mt_status clone(const mt_backend *be, const mt_tensor *t, mt_tensor **out) {
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = be->copy(*out, t);
  if (st != MT_OK) mt_tensor_release(*out), *out = NULL;
  return st;
}

/* The result tensor to compute into: out itself (resized), or a fresh temp when out shares
 * memory with an input. finish_result() copies a temp back into out. */
static mt_status begin_result(const char *op, mt_tensor *out, mt_dtype dtype, int device, int ndim,
                              const int64_t *sizes, const mt_tensor *in1, const mt_tensor *in2, mt_tensor **res) {
  if (out->dtype != dtype || out->device != device) return mt__prepare_out(out, dtype, device, ndim, sizes, op);
  if (shares(out, in1) || shares(out, in2)) return mt__tensor_empty(res, dtype, device, ndim, sizes);
  MT_TRY(mt__prepare_out(out, dtype, device, ndim, sizes, op));
  MT_TRY(check_writable(op, out));
  *res = out;
  return MT_OK;
}

static mt_status finish_result(const char *op, const mt_backend *be, mt_tensor *out, mt_tensor *res, mt_status st) {
  if (res == out || !res) return st;
  if (st == MT_OK) st = mt__prepare_out(out, res->dtype, res->device, res->ndim, res->sizes, op);
  if (st == MT_OK) st = be->copy(out, res);
  mt_tensor_release(res);
  return st;
}

/* ---- cat ---- */

mt_status mt_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim) {
  const char *op = "cat";
  MT_CHECK_TENSOR(out, op, "result");
  if (n < 1 || !inputs) return mt__error(MT_ERR_ARG, "%s: expected at least one tensor", op);
  for (int i = 0; i < n; i++)
    if (!inputs[i]) return mt__error(MT_ERR_ARG, "%s: input %d is NULL", op, i + 1);
  const mt_tensor *first = inputs[0];
  for (int i = 1; i < n; i++) {
    char what[32];
    snprintf(what, sizeof what, "input %d", i + 1);
    MT_TRY(check_dtype(op, inputs[i], what, first, "input 1"));
    MT_TRY(check_device(op, inputs[i], what, first, "input 1"));
  }
  /* legacy rule: empty 1-d tensors take no part, whatever the others' shapes */
  mt_tensor **kept = malloc((size_t)n * sizeof *kept);
  if (!kept) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  int nk = 0, ref_i = -1;
  for (int i = 0; i < n; i++) {
    if (inputs[i]->ndim == 1 && inputs[i]->sizes[0] == 0) continue;
    if (ref_i < 0) ref_i = i;
    kept[nk++] = inputs[i];
  }
  mt_status st = MT_OK;
  char b1[128], b2[128];
  int64_t sizes[MT_MAX_DIMS];
  int ndim = 1;
  sizes[0] = 0;
  if (nk > 0) {
    const mt_tensor *ref = inputs[ref_i];
    ndim = ref->ndim;
    if (ndim == 0) {
      st = mt__error(MT_ERR_SHAPE, "%s: input %d is zero-dimensional and cannot be concatenated", op, ref_i + 1);
      goto done;
    }
    if (dim < 0 || dim >= ndim) {
      st = mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for input %d of size %s", op, dim + 1, ref_i + 1,
                     SHAPE(ref, b1));
      goto done;
    }
    memcpy(sizes, ref->sizes, sizeof sizes);
    sizes[dim] = 0;
    for (int i = ref_i; i < n; i++) {
      const mt_tensor *t = inputs[i];
      if (t->ndim == 1 && t->sizes[0] == 0) continue;
      int ok = t->ndim == ndim;
      for (int d = 0; ok && d < ndim; d++) ok = d == dim || t->sizes[d] == ref->sizes[d];
      if (!ok) {
        st = mt__error(MT_ERR_SHAPE,
                       "%s: sizes must match except in dimension %d, but input %d has size %s and "
                       "input %d has size %s",
                       op, dim + 1, ref_i + 1, SHAPE(ref, b1), i + 1, SHAPE(t, b2));
        goto done;
      }
      sizes[dim] += t->sizes[dim];
    }
  }
  const mt_backend *be = mt__backend_for(first->device, op);
  if (!be) {
    st = mt_last_status();
    goto done;
  }
  int overlap = 0;
  for (int i = 0; i < nk; i++) overlap |= shares(out, kept[i]);
  mt_tensor *res = out;
  if (out->dtype != first->dtype || out->device != first->device || !overlap) {
    st = mt__prepare_out(out, first->dtype, first->device, ndim, sizes, op);
    if (st == MT_OK) st = check_writable(op, out);
  } else {
    st = mt__tensor_empty(&res, first->dtype, first->device, ndim, sizes);
  }
  if (st != MT_OK) goto done;
  if (nk > 0) st = be->cat(res, kept, nk, dim);
  st = finish_result(op, be, out, res, st);
done:
  free(kept);
  return st;
}

/* ---- index_select / gather: new results ---- */

mt_status mt_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) {
  const char *op = "index_select";
  MT_CHECK_TENSOR(out, op, "result");
  MT_CHECK_TENSOR(src, op, "source");
  MT_TRY(check_index(op, index, src, 1));
  MT_TRY(check_dim(op, src, dim));
  const mt_backend *be = mt__backend_for(src->device, op);
  if (!be) return mt_last_status();
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, src->sizes, sizeof sizes);
  sizes[dim] = mt__numel(index);
  mt_tensor *res = NULL;
  MT_TRY(begin_result(op, out, src->dtype, src->device, src->ndim, sizes, src, index, &res));
  return finish_result(op, be, out, res, be->index_select(res, src, dim, index, base));
}

/* gather's and scatter's index: valid for t (named what in messages), dim in range, the same
 * rank as t and no larger than t outside dim */
static mt_status check_index_fits(const char *op, const mt_tensor *index, const mt_tensor *t, const char *what,
                                  int dim) {
  MT_TRY(check_index(op, index, t, -1));
  MT_TRY(check_dim(op, t, dim));
  char b1[128], b2[128];
  if (index->ndim != t->ndim)
    return mt__error(MT_ERR_SHAPE, "%s: index of size %s and %s of size %s must have the same number of dimensions", op,
                     SHAPE(index, b1), what, SHAPE(t, b2));
  for (int d = 0; d < t->ndim; d++)
    if (d != dim && index->sizes[d] > t->sizes[d])
      return mt__error(MT_ERR_SHAPE, "%s: index of size %s is larger than the %s of size %s in dimension %d", op,
                       SHAPE(index, b1), what, SHAPE(t, b2), d + 1);
  return MT_OK;
}

mt_status mt_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) {
  const char *op = "gather";
  MT_CHECK_TENSOR(out, op, "result");
  MT_CHECK_TENSOR(src, op, "source");
  MT_TRY(check_index_fits(op, index, src, "source", dim));
  const mt_backend *be = mt__backend_for(src->device, op);
  if (!be) return mt_last_status();
  mt_tensor *res = NULL;
  MT_TRY(begin_result(op, out, src->dtype, src->device, index->ndim, index->sizes, src, index, &res));
  return finish_result(op, be, out, res, be->gather(res, src, dim, index, base));
}

/* ---- in-place writers ---- */

/* Clones of index/src where they share memory with t (NULL where not needed). */
static mt_status unalias(const mt_backend *be, const mt_tensor *t, const mt_tensor **index, const mt_tensor **src,
                         mt_tensor **ci, mt_tensor **cs) {
  *ci = *cs = NULL;
  if (shares(t, *index)) {
    MT_TRY(clone(be, *index, ci));
    *index = *ci;
  }
  if (src && shares(t, *src)) {
    MT_TRY(clone(be, *src, cs));
    *src = *cs;
  }
  return MT_OK;
}

mt_status mt_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                       int64_t base) {
  const char *op = "index_add";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_CHECK_TENSOR(src, op, "source");
  MT_TRY(check_index(op, index, t, 1));
  MT_TRY(check_dim(op, t, dim));
  MT_TRY(check_dtype(op, src, "source", t, "the tensor"));
  MT_TRY(check_device(op, src, "source", t, "the tensor"));
  int ok = src->ndim == t->ndim;
  for (int d = 0; ok && d < t->ndim; d++) ok = src->sizes[d] == (d == dim ? mt__numel(index) : t->sizes[d]);
  if (!ok) {
    char b1[128], b2[128];
    return mt__error(MT_ERR_SHAPE,
                     "%s: source of size %s does not match the tensor of size %s with %lld indices "
                     "along dimension %d",
                     op, SHAPE(src, b1), SHAPE(t, b2), (long long)mt__numel(index), dim + 1);
  }
  MT_TRY(check_writable(op, t));
  const mt_backend *be = mt__backend_for(t->device, op);
  if (!be) return mt_last_status();
  mt_tensor *ci, *cs;
  mt_status st = unalias(be, t, &index, &src, &ci, &cs);
  if (st == MT_OK) st = be->index_add(t, dim, index, src, alpha, base);
  mt_tensor_release(ci), mt_tensor_release(cs);
  return st;
}

mt_status mt_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) {
  const char *op = "index_fill";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_index(op, index, t, 1));
  MT_TRY(check_dim(op, t, dim));
  MT_TRY(check_writable(op, t));
  const mt_backend *be = mt__backend_for(t->device, op);
  if (!be) return mt_last_status();
  mt_tensor *ci, *cs;
  mt_status st = unalias(be, t, &index, NULL, &ci, &cs);
  if (st == MT_OK) st = be->index_fill(t, dim, index, v, base);
  mt_tensor_release(ci);
  return st;
}

static mt_status scatter_common(const char *op, mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src,
                                double v, int64_t base) {
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_TRY(check_index_fits(op, index, t, "tensor", dim));
  char b1[128], b2[128];
  if (src) {
    MT_TRY(check_dtype(op, src, "source", t, "the tensor"));
    MT_TRY(check_device(op, src, "source", t, "the tensor"));
    if (src->ndim != t->ndim)
      return mt__error(MT_ERR_SHAPE,
                       "%s: source of size %s and tensor of size %s must have the same number of "
                       "dimensions",
                       op, SHAPE(src, b1), SHAPE(t, b2));
    for (int d = 0; d < t->ndim; d++)
      if (index->sizes[d] > src->sizes[d])
        return mt__error(MT_ERR_SHAPE, "%s: index of size %s is larger than the source of size %s in dimension %d", op,
                         SHAPE(index, b1), SHAPE(src, b2), d + 1);
  }
  MT_TRY(check_writable(op, t));
  const mt_backend *be = mt__backend_for(t->device, op);
  if (!be) return mt_last_status();
  mt_tensor *ci, *cs;
  mt_status st = unalias(be, t, &index, src ? &src : NULL, &ci, &cs);
  if (st == MT_OK) st = be->scatter(t, dim, index, src, v, base);
  mt_tensor_release(ci), mt_tensor_release(cs);
  return st;
}

mt_status mt_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, int64_t base) {
  if (!src) return mt__error(MT_ERR_ARG, "scatter: source is NULL");
  return scatter_common("scatter", t, dim, index, src, 0, base);
}

mt_status mt_scatter_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) {
  return scatter_common("scatter_fill", t, dim, index, NULL, v, base);
}
