/* ops_reduce.c: public entry points for reductions, sort and topk. Each validates its
 * arguments, sizes the outputs and makes exactly one backend call (see backend.h). */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include "backend.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

/* names and kinds from moontorch.h's MT_REDUCE_OPS */
#define OP_NAME(E, NAME, KIND, ...) [E] = NAME,
#define OP_FLOAT(E, NAME, KIND, ...) [E] = KIND_IS_FLOAT_##KIND,
#define KIND_IS_FLOAT_ANY 0
#define KIND_IS_FLOAT_FLOAT 1
static const char *const reduce_names[] = {MT_REDUCE_OPS(OP_NAME, ~)};
static const unsigned char reduce_float_only[] = {MT_REDUCE_OPS(OP_FLOAT, ~)};
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == MT_NUM_REDUCE_OPS, "one name per reduction");

static bool has_index(int op) { return op == MT_MAX || op == MT_MIN || op == MT_ARGMAX || op == MT_ARGMIN; }

/* The dtype an op writes for an input dtype (Torch7: sums keep the input's type). */
static mt_dtype reduce_out_dtype(int op, mt_dtype in) {
  switch (op) {
    case MT_ARGMAX:
    case MT_ARGMIN: return MT_I64;
    case MT_ANY:
    case MT_ALL: return MT_U8;
    default: return in;
  }
}

static bool shares_storage(const mt_tensor *x, const mt_tensor *y) {
  return x && y && (x == y || (x->storage && x->storage == y->storage));
}

/* A header over t's storage with a size-1 dimension inserted at dim: lets the backend see the
 * keepdim layout of an output the caller wants without that dimension. */
static mt_status with_dim(mt_tensor **r, mt_tensor *t, int dim, const char *op) {
  *r = mt__tensor_alias(t);
  if (!*r) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  for (int i = t->ndim; i > dim; i--) {
    (*r)->sizes[i] = t->sizes[i - 1];
    (*r)->strides[i] = t->strides[i - 1];
  }
  (*r)->sizes[dim] = 1;
  (*r)->strides[dim] = 0;
  (*r)->ndim = t->ndim + 1;
  return MT_OK;
}

static mt_status check_reduce_args(int op, const mt_tensor *out, const mt_tensor *indices, const mt_tensor *a, int dim,
                                   double p, const char **name) {
  if (op < 0 || op >= MT_NUM_REDUCE_OPS) return mt__error(MT_ERR_ARG, "reduce: invalid operation %d", op);
  const char *nm = *name = reduce_names[op];
  MT_CHECK_TENSOR(a, nm, "input");
  MT_CHECK_TENSOR(out, nm, "result tensor");
  char b[128];
  if (reduce_float_only[op] && !mt_dtype_is_floating(a->dtype))
    return mt__error(MT_ERR_DTYPE,
                     "%s: expected a floating-point tensor, got %s (convert it with :double() or "
                     ":float() first)",
                     nm, mt_dtype_name(a->dtype));
  if ((op == MT_VAR || op == MT_STD) && !(p >= 0 && p < INFINITY))
    return mt__error(MT_ERR_ARG, "%s: correction must be a finite number >= 0, got %g", nm, p);
  if (op == MT_NORM && p != p) return mt__error(MT_ERR_ARG, "%s: the order p is NaN", nm);
  if (indices && !has_index(op))
    return mt__error(MT_ERR_ARG, "%s: only max, min, argmax and argmin produce indices", nm);
  if (indices && (indices == out || (indices->storage && indices->storage == out->storage)))
    return mt__error(MT_ERR_ARG, "%s: the values and indices results must not share memory", nm);
  if (dim >= (a->ndim ? a->ndim : 1))
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s (%d dimensions)", nm, dim + 1,
                     SHAPE(a, b), a->ndim);
  if (has_index(op)) {
    int64_t n = dim >= 0 && a->ndim ? a->sizes[dim] : mt__numel(a);
    if (n == 0 && dim >= 0 && a->ndim)
      return mt__error(MT_ERR_SHAPE, "%s: cannot reduce dimension %d of size 0 (tensor of size %s)", nm, dim + 1,
                       SHAPE(a, b));
    if (n == 0) return mt__error(MT_ERR_SHAPE, "%s: cannot reduce an empty tensor (size %s)", nm, SHAPE(a, b));
  }
  return MT_OK;
}

mt_status mt_reduce(int op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim, int keepdim, double p,
                    int64_t base) {
  const char *nm = "reduce";
  MT_TRY(check_reduce_args(op, out, indices, a, dim, p, &nm));
  const mt_backend *be = mt__backend_for(a->device, nm);
  if (!be) return mt_last_status();
  if (a->ndim == 0) dim = -1; /* a scalar reduced over its (only) dimension: itself */

  /* out and indices must not overlap the input: the backend reads a while writing them. An
   * alias of a keeps its layout and storage even if out is a itself and gets resized. */
  mt_tensor *src = (mt_tensor *)a, *held = NULL;
  if (shares_storage(out, a) || shares_storage(indices, a)) {
    if (!(held = src = mt__tensor_alias(a))) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", nm);
  }

  int64_t ks[MT_MAX_DIMS], fs[MT_MAX_DIMS]; /* keepdim sizes, final sizes */
  int kn = 0, fn = 0;
  if (dim >= 0) {
    for (int i = 0; i < src->ndim; i++) {
      ks[kn++] = i == dim ? 1 : src->sizes[i];
      if (i != dim || keepdim) fs[fn++] = ks[i];
    }
  }
  mt_status st = mt__prepare_out(out, reduce_out_dtype(op, src->dtype), src->device, fn, fs, nm);
  if (st == MT_OK && indices) st = mt__prepare_out(indices, MT_I64, src->device, fn, fs, nm);

  /* the backend's view of each output: keepdim layout, or a fresh temporary if it overlaps */
  mt_tensor *views[2] = {NULL, NULL}, *temps[2] = {NULL, NULL}, *outs[2] = {out, indices};
  for (int k = 0; k < 2 && st == MT_OK; k++) {
    if (!outs[k]) continue;
    if (shares_storage(outs[k], src)) {
      st = mt__tensor_empty(&temps[k], outs[k]->dtype, src->device, kn, ks);
      if (st == MT_OK) mt_tensor_retain(views[k] = temps[k]);
    } else if (dim >= 0 && !keepdim) {
      st = with_dim(&views[k], outs[k], dim, nm);
    } else {
      mt_tensor_retain(views[k] = outs[k]);
    }
  }
  if (st == MT_OK) st = be->reduce((mt_reduce_op)op, views[0], views[1], src, dim, p, base);
  for (int k = 0; k < 2; k++) {
    if (st == MT_OK && temps[k]) {
      mt_tensor *dst = NULL;
      if (dim >= 0 && !keepdim) st = with_dim(&dst, outs[k], dim, nm);
      else mt_tensor_retain(dst = outs[k]);
      if (st == MT_OK) st = be->copy(dst, temps[k]);
      mt_tensor_release(dst);
    }
    mt_tensor_release(temps[k]);
    mt_tensor_release(views[k]);
  }
  mt_tensor_release(held);
  return st;
}

/* The whole reduction as a double. ARGMAX/ARGMIN give the 0-based flat index (row-major). */
mt_status mt_reduce_all_value(int op, const mt_tensor *a, double p, double *out) {
  if (op < 0 || op >= MT_NUM_REDUCE_OPS) return mt__error(MT_ERR_ARG, "reduce: invalid operation %d", op);
  MT_CHECK_TENSOR(a, reduce_names[op], "input");
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", reduce_names[op]);
  if (a->dtype < 0 || a->dtype >= MT_NUM_DTYPES) return mt__error(MT_ERR_DTYPE, "%s: invalid dtype", reduce_names[op]);
  /* Torch7 returns the full sum/product of integer tensors as a number accumulated in 64 bits
   * (a ByteTensor of 1000 ones sums to 1000, not 232): widen small integer types first. */
  const mt_tensor *src = a;
  mt_tensor *wide = NULL, *tmp;
  if ((op == MT_SUM || op == MT_PROD) &&
      (a->dtype == MT_U8 || a->dtype == MT_BOOL || a->dtype == MT_I32 || a->dtype == MT_I8 || a->dtype == MT_I16)) {
    MT_TRY(mt__tensor_empty(&wide, MT_I64, a->device, a->ndim, a->sizes));
    mt_status st = mt_copy(wide, a);
    if (st != MT_OK) {
      mt_tensor_release(wide);
      return st;
    }
    src = wide;
  }
  mt_status st = mt__tensor_empty(&tmp, reduce_out_dtype(op, src->dtype), a->device, 0, NULL);
  if (st == MT_OK) {
    st = mt_reduce(op, tmp, NULL, src, -1, 0, p, 0);
    if (st == MT_OK) st = mt_tensor_get_item(tmp, NULL, out);
    mt_tensor_release(tmp);
  }
  mt_tensor_release(wide);
  return st;
}

/* ---- sort and topk ---- */

static mt_status check_sort_args(const char *op, const mt_tensor *values, const mt_tensor *indices,
                                 const mt_tensor *src, int dim) {
  MT_CHECK_TENSOR(src, op, "input");
  MT_CHECK_TENSOR(values, op, "values result");
  MT_CHECK_TENSOR(indices, op, "indices result");
  if (dim < 0 || dim >= (src->ndim ? src->ndim : 1)) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s (%d dimensions)", op, dim + 1,
                     SHAPE(src, b), src->ndim);
  }
  if (values == indices) return mt__error(MT_ERR_ARG, "%s: values and indices must be different tensors", op);
  return MT_OK;
}

/* Shared tail of sort and topk: outputs of shape (src with dim -> m) that overlap src are
 * computed into temporaries and copied back. */
static mt_status sort_like(const char *op, mt_tensor *values, mt_tensor *indices, const mt_tensor *a, int dim,
                           int64_t m, int64_t k, int flag1, int flag2, int64_t base) {
  const mt_backend *be = mt__backend_for(a->device, op);
  if (!be) return mt_last_status();
  mt_tensor *src = (mt_tensor *)a, *held = NULL;
  if (shares_storage(values, a) || shares_storage(indices, a) || shares_storage(values, indices)) {
    if (!(held = src = mt__tensor_alias(a))) return mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  }
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, src->sizes, sizeof sizes);
  if (src->ndim) sizes[dim] = m;
  mt_status st = mt__prepare_out(values, src->dtype, src->device, src->ndim, sizes, op);
  if (st == MT_OK) st = mt__prepare_out(indices, MT_I64, src->device, src->ndim, sizes, op);
  mt_tensor *outs[2] = {values, indices}, *use[2] = {values, indices}, *temps[2] = {NULL, NULL};
  bool overlap = shares_storage(values, indices);
  for (int i = 0; i < 2 && st == MT_OK; i++) {
    if (shares_storage(outs[i], src) || (i == 1 && overlap)) {
      st = mt__tensor_empty(&temps[i], outs[i]->dtype, src->device, src->ndim, sizes);
      use[i] = temps[i];
    }
  }
  if (st == MT_OK) {
    if (k < 0) st = be->sort(use[0], use[1], src, dim, flag1, base);
    else st = be->topk(use[0], use[1], src, k, dim, flag1, flag2, base);
  }
  for (int i = 0; i < 2; i++) {
    if (st == MT_OK && temps[i]) st = be->copy(outs[i], temps[i]);
    mt_tensor_release(temps[i]);
  }
  mt_tensor_release(held);
  return st;
}

mt_status mt_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending, int64_t base) {
  MT_TRY(check_sort_args("sort", values, indices, src, dim));
  int64_t n = src->ndim ? src->sizes[dim] : 1;
  return sort_like("sort", values, indices, src, dim, n, -1, descending != 0, 0, base);
}

mt_status mt_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim, int largest,
                  int sorted, int64_t base) {
  MT_TRY(check_sort_args("topk", values, indices, src, dim));
  int64_t n = src->ndim ? src->sizes[dim] : 1;
  if (k < 0 || k > n || (!src->ndim && k != 1)) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "topk: k = %lld out of range: dimension %d has size %lld (tensor of size %s)",
                     (long long)k, dim + 1, (long long)n, SHAPE(src, b));
  }
  return sort_like("topk", values, indices, src, dim, k, k, largest != 0, sorted != 0, base);
}
