/* ops_pointwise.c: the public pointwise and random entry points. Each validates its
 * arguments (NULLs, dtypes, devices, shapes), broadcasts, prepares the output and then calls
 * exactly one backend function, so the CPU and CUDA backends share every check and message. */
#include <string.h>
#include "backend.h"
#include "dtype.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

/* Torch7 names (so messages match what the Lua user called) and kinds, from moontorch.h's lists */
enum { KIND_ANY, KIND_FLOAT, KIND_INT, KIND_CMP };
#define OP_NAME(E, NAME, KIND, ...) [E] = NAME,
#define OP_KIND(E, NAME, KIND, ...) [E] = KIND_##KIND,
static const char *const unary_names[] = {MT_UNARY_OPS(OP_NAME, ~)};
static const char *const binary_names[] = {MT_BINARY_OPS(OP_NAME, ~)};
static const unsigned char unary_kind[] = {MT_UNARY_OPS(OP_KIND, ~)};
static const unsigned char binary_kind[] = {MT_BINARY_OPS(OP_KIND, ~)};
_Static_assert(sizeof unary_names / sizeof unary_names[0] == MT_NUM_UNARY_OPS, "one name per unary op");
_Static_assert(sizeof binary_names / sizeof binary_names[0] == MT_NUM_BINARY_OPS, "one name per binary op");

static mt_status float_only_error(const char *op, int dtype) {
  return mt__error(MT_ERR_DTYPE, "%s: not defined for %s tensors (floating-point dtypes only)", op,
                   mt_dtype_name(dtype));
}

static mt_status int_only_error(const char *op, int dtype) {
  return mt__error(MT_ERR_DTYPE, "%s: not defined for %s tensors (integer dtypes only)", op, mt_dtype_name(dtype));
}

static mt_status same_dtype(const char *op, const mt_tensor *a, const mt_tensor *b) {
  if (a->dtype == b->dtype) return MT_OK;
  return mt__error(MT_ERR_DTYPE, "%s: dtype mismatch: %s and %s (convert one operand first, e.g. with :type())", op,
                   mt_dtype_name(a->dtype), mt_dtype_name(b->dtype));
}

static mt_status same_device(const char *op, const mt_tensor *a, const mt_tensor *b) {
  if (a->device == b->device) return MT_OK;
  char b1[32], b2[32];
  return mt__error(MT_ERR_DEVICE, "%s: operands are on different devices (%s and %s)", op,
                   mt__device_str(a->device, b1, sizeof b1), mt__device_str(b->device, b2, sizeof b2));
}

static int same_sizes(const mt_tensor *t, int ndim, const int64_t *sizes) {
  return t->ndim == ndim && (ndim == 0 || !memcmp(t->sizes, sizes, (size_t)ndim * sizeof *sizes));
}

/* An in-place op cannot grow its own tensor: resizing out would destroy the input it is. */
static mt_status check_inplace(const char *op, const mt_tensor *out, const mt_tensor *in, int ndim,
                               const int64_t *sizes) {
  if (out != in || same_sizes(out, ndim, sizes)) return MT_OK;
  char b1[128], b2[128];
  return mt__error(MT_ERR_SHAPE, "%s: in-place result of size %s cannot hold the broadcast size %s", op, SHAPE(out, b1),
                   mt__sizes_str(ndim, sizes, b2, sizeof b2));
}

/* v: t seen with (ndim, sizes), broadcast dims getting stride 0. A header on the caller's stack
 * sharing t's storage without a reference: it must not outlive the call. The caller has
 * checked that t broadcasts to sizes. */
static void broadcast_view(mt_tensor *v, const mt_tensor *t, int ndim, const int64_t *sizes) {
  memcpy(v, t, sizeof *v);
  int lead = ndim - t->ndim;
  for (int i = 0; i < ndim; i++) {
    int64_t have = i < lead ? 1 : t->sizes[i - lead];
    v->strides[i] = (i >= lead && have == sizes[i]) ? t->strides[i - lead] : 0;
    v->sizes[i] = sizes[i];
  }
  v->ndim = ndim;
}

static const mt_backend *backend(const mt_tensor *t, const char *op) { return mt__backend_for(t->device, op); }

/* mt__prepare_out for a pointwise result. As in PyTorch, a result this call (re)sizes takes
 * the channels-last layout of the first operand of the result's size (a or b) when that one is
 * channels-last; a result that already had the right size keeps its own strides (Torch7). */
static mt_status prepare_pointwise(mt_tensor *out, mt_dtype dtype, const mt_tensor *a, const mt_tensor *b, int ndim,
                                   const int64_t *sizes, const char *op) {
  bool fresh = !(same_sizes(out, ndim, sizes) && out->storage);
  MT_TRY(mt__prepare_out(out, dtype, a->device, ndim, sizes, op));
  const mt_tensor *like = same_sizes(a, ndim, sizes) ? a : b && same_sizes(b, ndim, sizes) ? b : NULL;
  if (fresh && like && mt__is_channels_last(like)) mt__set_layout(out, true);
  return MT_OK;
}

/* ---- fill, copy ---- */

mt_status mt_fill(mt_tensor *t, double v) {
  MT_CHECK_TENSOR(t, "fill", "tensor");
  const mt_backend *be = backend(t, "fill");
  if (!be) return mt_last_status();
  return be->fill(t, v);
}

/* dst and src have the same shape here; pick the backend that can see both devices. */
static mt_status copy_same_shape(mt_tensor *dst, const mt_tensor *src) {
  if (mt__numel(dst) == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(dst->device != MT_CPU ? dst->device : src->device, "copy");
  if (!be) return mt_last_status();
  return be->copy(dst, src);
}

/* Same element count, different shapes: Torch7 copies in row-major order. Re-express one side
 * with the other's shape (a view when the strides allow, else through a contiguous temporary). */
static mt_status copy_reshaped(mt_tensor *dst, const mt_tensor *src) {
  mt_tensor *v = NULL;
  if (mt_tensor_view(&v, src, dst->ndim, dst->sizes) == MT_OK) {
    mt_status st = copy_same_shape(dst, v);
    mt_tensor_release(v);
    return st;
  }
  if (mt_tensor_view(&v, dst, src->ndim, src->sizes) == MT_OK) {
    mt_status st = copy_same_shape(v, src);
    mt_tensor_release(v);
    return st;
  }
  mt_tensor *tmp;
  MT_TRY(mt__tensor_empty(&tmp, src->dtype, src->device, src->ndim, src->sizes));
  mt_status st = copy_same_shape(tmp, src);
  if (st == MT_OK) st = mt_tensor_view(&v, tmp, dst->ndim, dst->sizes);
  if (st == MT_OK) {
    st = copy_same_shape(dst, v);
    mt_tensor_release(v);
  }
  mt_tensor_release(tmp);
  return st;
}

mt_status mt_copy(mt_tensor *dst, const mt_tensor *src) {
  MT_CHECK_TENSOR(dst, "copy", "destination");
  MT_CHECK_TENSOR(src, "copy", "source");
  if (dst == src) return MT_OK;
  if (same_sizes(src, dst->ndim, dst->sizes)) return copy_same_shape(dst, src);
  int nd;
  int64_t sizes[MT_MAX_DIMS];
  if (mt__broadcast_shape("copy", src->ndim, src->sizes, dst->ndim, dst->sizes, &nd, sizes) == MT_OK &&
      same_sizes(dst, nd, sizes)) {
    mt_tensor v;
    broadcast_view(&v, src, nd, sizes);
    return copy_same_shape(dst, &v);
  }
  int64_t nd_el = mt__numel(dst), ns_el = mt__numel(src);
  if (nd_el == ns_el) return copy_reshaped(dst, src);
  char b1[128], b2[128];
  return mt__error(MT_ERR_SHAPE,
                   "copy: cannot copy a tensor of size %s (%lld elements) into one of size %s (%lld elements)",
                   SHAPE(src, b1), (long long)ns_el, SHAPE(dst, b2), (long long)nd_el);
}

/* ---- unary and binary ---- */

/* Torch7 applies pointwise ops to any operands that hold as many elements as the first one, in
 * element order, and shapes the result like the first: *x is then re-expressed with a's shape
 * (a view when its strides allow, else a contiguous copy) and *owned holds that new reference,
 * which the caller releases. This rule wins where broadcasting would also apply (a 3-vector
 * with a 3x1 gives 3 elements, not 3x3); operands of different element counts broadcast
 * (numpy's rules), where Torch7 would raise. */
static mt_status elementwise_like(const char *op, const mt_tensor *a, const mt_tensor **x, mt_tensor **owned) {
  int nd;
  int64_t sizes[MT_MAX_DIMS];
  *owned = NULL;
  if (same_sizes(*x, a->ndim, a->sizes)) return MT_OK;
  if (mt__numel(a) != mt__numel(*x))
    return mt__broadcast_shape(op, a->ndim, a->sizes, (*x)->ndim, (*x)->sizes, &nd, sizes);
  if (mt_tensor_view(owned, *x, a->ndim, a->sizes) != MT_OK) {
    mt_tensor *tmp;
    MT_TRY(mt__tensor_empty(&tmp, (*x)->dtype, (*x)->device, (*x)->ndim, (*x)->sizes));
    mt_status st = copy_same_shape(tmp, *x);
    if (st == MT_OK) st = mt_tensor_view(owned, tmp, a->ndim, a->sizes);
    mt_tensor_release(tmp);
    if (st != MT_OK) return st;
  }
  *x = *owned;
  return MT_OK;
}

const char *mt_unary_op_name(int op) { return op >= 0 && op < MT_NUM_UNARY_OPS ? unary_names[op] : NULL; }

mt_status mt_unary(int op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  if (op < 0 || op >= MT_NUM_UNARY_OPS) return mt__error(MT_ERR_ARG, "unary: invalid op %d", op);
  const char *name = unary_names[op];
  MT_CHECK_TENSOR(a, name, "tensor");
  MT_CHECK_TENSOR(out, name, "result tensor");
  int fl = mt_dtype_is_floating(a->dtype);
  if (!fl && unary_kind[op] == KIND_FLOAT) return float_only_error(name, a->dtype);
  if (fl && unary_kind[op] == KIND_INT) return int_only_error(name, a->dtype);
  if (op == MT_DIV_SCALAR && !fl && mt_double_to_i64(p1) == 0)
    return mt__error(MT_ERR_ARG, "div: integer division by zero (divisor %g is 0 as %s)", p1, mt_dtype_name(a->dtype));
  if (op == MT_CLAMP && (p1 > p2))
    return mt__error(MT_ERR_ARG, "clamp: lower bound %g is greater than upper bound %g", p1, p2);
  int cmp = unary_kind[op] == KIND_CMP;
  MT_TRY(prepare_pointwise(out, cmp ? MT_U8 : a->dtype, a, NULL, a->ndim, a->sizes, name));
  const mt_backend *be = backend(a, name);
  if (!be) return mt_last_status();
  return be->unary((mt_unary_op)op, out, a, p1, p2);
}

static mt_status binary(int op, const char *name, mt_tensor *out, const mt_tensor *a, const mt_tensor *b,
                        double alpha) {
  int nd;
  int64_t sizes[MT_MAX_DIMS];
  MT_TRY(mt__broadcast_shape(name, a->ndim, a->sizes, b->ndim, b->sizes, &nd, sizes));
  MT_TRY(check_inplace(name, out, a, nd, sizes));
  MT_TRY(check_inplace(name, out, b, nd, sizes));
  int cmp = binary_kind[op] == KIND_CMP;
  MT_TRY(prepare_pointwise(out, cmp ? MT_U8 : a->dtype, a, b, nd, sizes, name));
  const mt_backend *be = backend(a, name);
  if (!be) return mt_last_status();
  mt_tensor av, bv;
  broadcast_view(&av, a, nd, sizes);
  broadcast_view(&bv, b, nd, sizes);
  return be->binary((mt_binary_op)op, out, &av, &bv, alpha);
}

mt_status mt_binary(int op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha) {
  if (op < 0 || op >= MT_NUM_BINARY_OPS) return mt__error(MT_ERR_ARG, "binary: invalid op %d", op);
  const char *name = binary_names[op];
  MT_CHECK_TENSOR(a, name, "first operand");
  MT_CHECK_TENSOR(b, name, "second operand");
  MT_CHECK_TENSOR(out, name, "result tensor");
  MT_TRY(same_dtype(name, a, b));
  MT_TRY(same_device(name, a, b));
  if (binary_kind[op] == KIND_FLOAT && !mt_dtype_is_floating(a->dtype)) return float_only_error(name, a->dtype);
  if (binary_kind[op] == KIND_INT && mt_dtype_is_floating(a->dtype)) return int_only_error(name, a->dtype);
  mt_tensor *owned;
  MT_TRY(elementwise_like(name, a, &b, &owned));
  mt_status st = binary(op, name, out, a, b, alpha);
  if (owned) mt_tensor_release(owned);
  return st;
}

static mt_status addc_shaped(const char *name, int div, mt_tensor *out, const mt_tensor *a, double value,
                             const mt_tensor *b, const mt_tensor *c);

static mt_status addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                      const mt_tensor *c) {
  const char *name = div ? "addcdiv" : "addcmul";
  MT_CHECK_TENSOR(a, name, "tensor");
  MT_CHECK_TENSOR(b, name, "tensor1");
  MT_CHECK_TENSOR(c, name, "tensor2");
  MT_CHECK_TENSOR(out, name, "result tensor");
  MT_TRY(same_dtype(name, a, b));
  MT_TRY(same_dtype(name, a, c));
  MT_TRY(same_device(name, a, b));
  MT_TRY(same_device(name, a, c));
  if (div && !mt_dtype_is_floating(a->dtype)) return float_only_error(name, a->dtype);
  mt_tensor *ob, *oc = NULL;
  MT_TRY(elementwise_like(name, a, &b, &ob));
  mt_status st = elementwise_like(name, a, &c, &oc);
  if (st == MT_OK) st = addc_shaped(name, div, out, a, value, b, c);
  if (ob) mt_tensor_release(ob);
  if (oc) mt_tensor_release(oc);
  return st;
}

static mt_status addc_shaped(const char *name, int div, mt_tensor *out, const mt_tensor *a, double value,
                             const mt_tensor *b, const mt_tensor *c) {
  int n1, nd;
  int64_t s1[MT_MAX_DIMS], sizes[MT_MAX_DIMS];
  MT_TRY(mt__broadcast_shape(name, a->ndim, a->sizes, b->ndim, b->sizes, &n1, s1));
  MT_TRY(mt__broadcast_shape(name, n1, s1, c->ndim, c->sizes, &nd, sizes));
  MT_TRY(check_inplace(name, out, a, nd, sizes));
  MT_TRY(check_inplace(name, out, b, nd, sizes));
  MT_TRY(check_inplace(name, out, c, nd, sizes));
  MT_TRY(prepare_pointwise(out, a->dtype, a, b, nd, sizes, name));
  const mt_backend *be = backend(a, name);
  if (!be) return mt_last_status();
  mt_tensor av, bv, cv;
  broadcast_view(&av, a, nd, sizes);
  broadcast_view(&bv, b, nd, sizes);
  broadcast_view(&cv, c, nd, sizes);
  return be->addc(div, out, &av, value, &bv, &cv);
}

mt_status mt_addcmul(mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b, const mt_tensor *c) {
  return addc(0, out, a, value, b, c);
}

mt_status mt_addcdiv(mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b, const mt_tensor *c) {
  return addc(1, out, a, value, b, c);
}

/* ---- masks ---- */

static mt_status check_mask(const char *op, const mt_tensor *mask) {
  if (mask->dtype == MT_U8 || mask->dtype == MT_BOOL) return MT_OK;
  return mt__error(MT_ERR_DTYPE, "%s: mask must be a uint8 or bool tensor, got %s", op, mt_dtype_name(mask->dtype));
}

mt_status mt_masked_fill(mt_tensor *t, const mt_tensor *mask, double v) {
  const char *op = "maskedFill";
  MT_CHECK_TENSOR(t, op, "tensor");
  MT_CHECK_TENSOR(mask, op, "mask");
  MT_TRY(check_mask(op, mask));
  MT_TRY(same_device(op, t, mask));
  int nd;
  int64_t sizes[MT_MAX_DIMS];
  mt_tensor *owned = NULL;
  if (mt__numel(mask) == mt__numel(t)) MT_TRY(elementwise_like(op, t, &mask, &owned)); /* Torch7's rule */
  if (mt__broadcast_shape(op, mask->ndim, mask->sizes, t->ndim, t->sizes, &nd, sizes) != MT_OK ||
      !same_sizes(t, nd, sizes)) {
    char b1[128], b2[128];
    return mt__error(MT_ERR_SHAPE, "%s: mask of size %s cannot be broadcast to the tensor's size %s", op,
                     SHAPE(mask, b1), SHAPE(t, b2));
  }
  const mt_backend *be = backend(t, op);
  mt_status st = be ? MT_OK : mt_last_status();
  mt_tensor mv;
  broadcast_view(&mv, mask, nd, sizes);
  if (st == MT_OK) st = be->masked_fill(t, &mv, v);
  if (owned) mt_tensor_release(owned);
  return st;
}

mt_status mt_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask) {
  const char *op = "maskedSelect";
  MT_CHECK_TENSOR(src, op, "source");
  MT_CHECK_TENSOR(mask, op, "mask");
  MT_CHECK_TENSOR(out, op, "result tensor");
  MT_TRY(check_mask(op, mask));
  MT_TRY(same_device(op, src, mask));
  if (out->dtype != src->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: result tensor has dtype %s, expected %s", op, mt_dtype_name(out->dtype),
                     mt_dtype_name(src->dtype));
  MT_TRY(same_device(op, out, src));
  /* the backend resizes out while reading src and mask: they must not share memory */
  if (out == src || out == mask || (out->storage && (out->storage == src->storage || out->storage == mask->storage)))
    return mt__error(MT_ERR_ARG, "%s: the result tensor must not share memory with the source or the mask", op);
  int nd;
  int64_t sizes[MT_MAX_DIMS];
  mt_tensor *owned;
  MT_TRY(elementwise_like(op, src, &mask, &owned)); /* a mask of as many elements goes in element order */
  mt_status st = mt__broadcast_shape(op, src->ndim, src->sizes, mask->ndim, mask->sizes, &nd, sizes);
  const mt_backend *be = st == MT_OK ? backend(src, op) : NULL;
  if (st == MT_OK && !be) st = mt_last_status();
  if (st == MT_OK) {
    mt_tensor sv, mv;
    broadcast_view(&sv, src, nd, sizes);
    broadcast_view(&mv, mask, nd, sizes);
    st = be->masked_select(out, &sv, &mv);
  }
  if (owned) mt_tensor_release(owned);
  return st;
}

/* ---- arange ---- */

mt_status mt_arange(mt_tensor *t, double start, double step) {
  MT_CHECK_TENSOR(t, "arange", "tensor");
  if (mt__numel(t) == 0) return MT_OK;
  const mt_backend *be = backend(t, "arange");
  if (!be) return mt_last_status();
  if (mt__is_contiguous(t)) return be->arange(t, start, step);
  mt_tensor *tmp;
  MT_TRY(mt__tensor_empty(&tmp, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = be->arange(tmp, start, step);
  if (st == MT_OK) st = be->copy(t, tmp);
  mt_tensor_release(tmp);
  return st;
}

/* ---- random ---- */

enum { RNG_UNIFORM, RNG_NORMAL, RNG_BERNOULLI };

/* Draw into t (through a contiguous temporary when t is not contiguous, so element i of the
 * row-major order always takes counter offset + i), then advance the generator. */
static mt_status random_fill(const char *op, int kind, mt_tensor *t, mt_generator *g, double a, double b) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  const mt_backend *be = backend(t, op);
  if (!be) return mt_last_status();
  mt_tensor *dst = t;
  if (!mt__is_contiguous(t)) MT_TRY(mt__tensor_empty(&dst, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st;
  switch (kind) {
    case RNG_UNIFORM: st = be->random_uniform(dst, g->seed, g->offset, a, b); break;
    case RNG_NORMAL: st = be->random_normal(dst, g->seed, g->offset, a, b); break;
    default: st = be->random_bernoulli(dst, g->seed, g->offset, a); break;
  }
  if (dst != t) {
    if (st == MT_OK) st = be->copy(t, dst);
    mt_tensor_release(dst);
  }
  if (st == MT_OK) g->offset += (uint64_t)numel;
  return st;
}

mt_status mt_random_uniform(mt_tensor *t, mt_generator *g, double lo, double hi) {
  MT_CHECK_TENSOR(t, "uniform", "tensor");
  if (!g) return mt__error(MT_ERR_ARG, "uniform: generator is NULL");
  if (!(lo <= hi)) return mt__error(MT_ERR_ARG, "uniform: lower bound %g must not exceed upper bound %g", lo, hi);
  if (lo - lo != 0 || hi - hi != 0) return mt__error(MT_ERR_ARG, "uniform: bounds %g and %g must be finite", lo, hi);
  return random_fill("uniform", RNG_UNIFORM, t, g, lo, hi);
}

mt_status mt_random_normal(mt_tensor *t, mt_generator *g, double mean, double std) {
  MT_CHECK_TENSOR(t, "normal", "tensor");
  if (!g) return mt__error(MT_ERR_ARG, "normal: generator is NULL");
  if (!mt_dtype_is_floating(t->dtype)) return float_only_error("normal", t->dtype);
  if (!(std >= 0)) return mt__error(MT_ERR_ARG, "normal: standard deviation %g must be non-negative", std);
  if (mean - mean != 0 || std - std != 0)
    return mt__error(MT_ERR_ARG, "normal: mean %g and standard deviation %g must be finite", mean, std);
  return random_fill("normal", RNG_NORMAL, t, g, mean, std);
}

mt_status mt_random_bernoulli(mt_tensor *t, mt_generator *g, double p) {
  MT_CHECK_TENSOR(t, "bernoulli", "tensor");
  if (!g) return mt__error(MT_ERR_ARG, "bernoulli: generator is NULL");
  if (!(p >= 0 && p <= 1)) return mt__error(MT_ERR_ARG, "bernoulli: probability %g must lie in [0, 1]", p);
  return random_fill("bernoulli", RNG_BERNOULLI, t, g, p, 0);
}
