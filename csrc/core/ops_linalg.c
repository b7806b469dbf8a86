/* ops_linalg.c: public entry points for matrix products (addmm, baddbmm, addmv, dot).
 * They validate shapes/dtypes/devices, resize the result, copy c into it, and hand the
 * backend 3-d views (gemm) or 2-d/1-d tensors (gemv, dot). */
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "dtype.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

static int shares_storage(const mt_tensor *a, const mt_tensor *b) {
  return a && b && a->storage && a->storage == b->storage;
}

/* Operands must agree in dtype and device with the first; bool has no products. */
static mt_status check_operands(const char *op, int n, const mt_tensor *const *ts, const char *const *names) {
  const mt_tensor *ref = ts[0];
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    if (ts[i]->dtype != ref->dtype)
      return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but %s has %s", op, names[i], mt_dtype_name(ts[i]->dtype),
                       names[0], mt_dtype_name(ref->dtype));
    if (ts[i]->device != ref->device) {
      char b1[32], b2[32];
      return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but %s is on %s", op, names[i],
                       mt__device_str(ts[i]->device, b1, sizeof b1), names[0],
                       mt__device_str(ref->device, b2, sizeof b2));
    }
  }
  if (ref->dtype == MT_BOOL) return mt__error(MT_ERR_DTYPE, "%s: bool tensors are not supported", op);
  return MT_OK;
}

/* A header aliasing t with extra leading size-1 dims up to ndim dims (for the 3-d backend). */
static mt_status lead_view(const mt_tensor *t, int ndim, mt_tensor **out) {
  mt_tensor *v = mt__tensor_alias(t);
  if (!v) return mt__error(MT_ERR_MEMORY, "matmul: out of host memory");
  int add = ndim - t->ndim;
  for (int i = t->ndim - 1; i >= 0; i--) v->sizes[i + add] = t->sizes[i], v->strides[i + add] = t->strides[i];
  for (int i = 0; i < add; i++) v->sizes[i] = 1, v->strides[i] = mt__numel(t);
  v->ndim = ndim;
  *out = v;
  return MT_OK;
}

/* Shared tail of addmm/baddbmm/addmv: res = beta*c + alpha*product, where `run` computes the
 * product into a tensor already holding c. Works in a fresh temp when res overlaps an operand
 * (other than being c itself), so inputs are never overwritten mid-product. */
typedef mt_status (*product_fn)(const mt_backend *be, mt_tensor *res, double beta, double alpha, const mt_tensor *a,
                                const mt_tensor *b);

static mt_status run_product(const char *op, mt_tensor *out, double beta, const mt_tensor *c, double alpha,
                             const mt_tensor *a, const mt_tensor *b, int ndim, const int64_t *sizes, product_fn run) {
  char b1[128], b2[128];
  const mt_backend *be = mt__backend_for(a->device, op);
  if (!be) return mt_last_status();
  if (!c) beta = 0;
  if (c) { /* c must broadcast to the result without growing it */
    int fits = c->ndim <= ndim;
    for (int i = 0; fits && i < c->ndim; i++) {
      int64_t want = sizes[ndim - c->ndim + i];
      fits = c->sizes[i] == want || c->sizes[i] == 1;
    }
    if (!fits)
      return mt__error(MT_ERR_SHAPE, "%s: c of size %s cannot be broadcast to the result size %s", op, SHAPE(c, b1),
                       mt__sizes_str(ndim, sizes, b2, sizeof b2));
  }
  if (out == c) {
    int same = c->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = c->sizes[i] == sizes[i];
    if (!same)
      return mt__error(MT_ERR_SHAPE, "%s: the result tensor is c, of size %s, but the result has size %s", op,
                       SHAPE(c, b1), mt__sizes_str(ndim, sizes, b2, sizeof b2));
  }
  /* a result of the wrong dtype/device: let prepare_out report it before any work */
  if (out->dtype != a->dtype || out->device != a->device)
    return mt__prepare_out(out, a->dtype, a->device, ndim, sizes, op);
  int temp = shares_storage(out, a) || shares_storage(out, b) || (out != c && shares_storage(out, c));
  mt_tensor *res = out;
  if (temp) MT_TRY(mt__tensor_empty(&res, a->dtype, a->device, ndim, sizes));
  else MT_TRY(mt__prepare_out(out, a->dtype, a->device, ndim, sizes, op));
  for (int i = 0; i < res->ndim; i++)
    if (res->sizes[i] > 1 && res->strides[i] == 0) /* several results would share one element */
      return mt__error(MT_ERR_ARG,
                       "%s: the result tensor (size %s) is expanded, so several of its elements share "
                       "memory; call clone() first",
                       op, SHAPE(res, b1));
  mt_status st = MT_OK;
  if (res != c && c && beta != 0) {
    mt_tensor *cv;
    st = mt_tensor_expand(&cv, c, ndim, sizes);
    if (st == MT_OK) {
      st = be->copy(res, cv);
      mt_tensor_release(cv);
    }
  }
  if (st == MT_OK) st = run(be, res, beta, alpha, a, b);
  if (temp) {
    if (st == MT_OK) st = mt__prepare_out(out, a->dtype, a->device, ndim, sizes, op);
    if (st == MT_OK) st = be->copy(out, res);
    mt_tensor_release(res);
  }
  return st;
}

static mt_status run_gemm(const mt_backend *be, mt_tensor *res, double beta, double alpha, const mt_tensor *a,
                          const mt_tensor *b) {
  mt_tensor *r3 = NULL, *a3 = NULL, *b3 = NULL;
  mt_status st = lead_view(res, 3, &r3);
  if (st == MT_OK) st = lead_view(a, 3, &a3);
  if (st == MT_OK) st = lead_view(b, 3, &b3);
  if (st == MT_OK) st = be->gemm(r3, beta, alpha, a3, b3);
  mt_tensor_release(r3), mt_tensor_release(a3), mt_tensor_release(b3);
  return st;
}

static mt_status run_gemv(const mt_backend *be, mt_tensor *res, double beta, double alpha, const mt_tensor *m,
                          const mt_tensor *v) {
  return be->gemv(res, beta, alpha, m, v);
}

/* The checks the three products share, in their order: operands present, ranks (ra, rb; want
 * says them in words), then sizes (sizes_ok, which the caller can compute only once the ranks
 * hold), then dtype, device and aliasing. */
static mt_status product_ranks(const char *op, const mt_tensor *out, const mt_tensor *a, const char *na, int ra,
                               const mt_tensor *b, const char *nb, int rb, const char *want) {
  MT_CHECK_TENSOR(out, op, "result");
  MT_CHECK_TENSOR(a, op, na);
  MT_CHECK_TENSOR(b, op, nb);
  char b1[128], b2[128];
  if (a->ndim != ra || b->ndim != rb)
    return mt__error(MT_ERR_SHAPE, "%s: expected %s, got %s: %s, %s: %s", op, want, na, SHAPE(a, b1), nb, SHAPE(b, b2));
  return MT_OK;
}

static mt_status product_operands(const char *op, const mt_tensor *a, const char *na, const mt_tensor *b,
                                  const char *nb, const mt_tensor *c, int sizes_ok) {
  char b1[128], b2[128];
  if (!sizes_ok)
    return mt__error(MT_ERR_SHAPE, "%s: size mismatch, %s: %s, %s: %s", op, na, SHAPE(a, b1), nb, SHAPE(b, b2));
  const mt_tensor *ts[] = {a, b, c};
  const char *names[] = {na, nb, "c"};
  return check_operands(op, 3, ts, names);
}

mt_status mt_addmm(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *a,
                   const mt_tensor *b) {
  const char *op = "addmm";
  MT_TRY(product_ranks(op, out, a, "m1", 2, b, "m2", 2, "2-d matrices"));
  MT_TRY(product_operands(op, a, "m1", b, "m2", c, a->sizes[1] == b->sizes[0]));
  int64_t sizes[2] = {a->sizes[0], b->sizes[1]};
  return run_product(op, out, beta, c, alpha, a, b, 2, sizes, run_gemm);
}

mt_status mt_baddbmm(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *a,
                     const mt_tensor *b) {
  const char *op = "baddbmm";
  MT_TRY(product_ranks(op, out, a, "batch1", 3, b, "batch2", 3, "3-d batches"));
  MT_TRY(product_operands(op, a, "batch1", b, "batch2", c, a->sizes[0] == b->sizes[0] && a->sizes[2] == b->sizes[1]));
  int64_t sizes[3] = {a->sizes[0], a->sizes[1], b->sizes[2]};
  return run_product(op, out, beta, c, alpha, a, b, 3, sizes, run_gemm);
}

mt_status mt_addmv(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *m,
                   const mt_tensor *v) {
  const char *op = "addmv";
  MT_TRY(product_ranks(op, out, m, "mat", 2, v, "vec", 1, "a 2-d matrix and a 1-d vector"));
  MT_TRY(product_operands(op, m, "mat", v, "vec", c, m->sizes[1] == v->sizes[0]));
  int64_t sizes[1] = {m->sizes[0]};
  return run_product(op, out, beta, c, alpha, m, v, 1, sizes, run_gemv);
}

/* a 1-d contiguous version of t: a view when t is contiguous, else a packed copy */
static mt_status flat_of(const mt_backend *be, const mt_tensor *t, mt_tensor **out) {
  int64_t n = mt__numel(t);
  if (mt__is_contiguous(t)) {
    mt_tensor *v = mt__tensor_alias(t);
    if (!v) return mt__error(MT_ERR_MEMORY, "dot: out of host memory");
    v->ndim = 1, v->sizes[0] = n, v->strides[0] = 1;
    *out = v;
    return MT_OK;
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = be->copy(*out, t);
  if (st == MT_OK) (*out)->ndim = 1, (*out)->sizes[0] = n, (*out)->strides[0] = 1;
  else mt_tensor_release(*out), *out = NULL;
  return st;
}

mt_status mt_dot(const mt_tensor *a, const mt_tensor *b, double *out) {
  const char *op = "dot";
  MT_CHECK_TENSOR(a, op, "first tensor");
  MT_CHECK_TENSOR(b, op, "second tensor");
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = 0;
  const mt_tensor *ts[] = {a, b};
  const char *names[] = {"first tensor", "second tensor"};
  MT_TRY(check_operands(op, 2, ts, names));
  char b1[128], b2[128];
  if (mt__numel(a) != mt__numel(b))
    return mt__error(MT_ERR_SHAPE, "%s: inconsistent tensor size, %s (%lld elements) and %s (%lld elements)", op,
                     SHAPE(a, b1), (long long)mt__numel(a), SHAPE(b, b2), (long long)mt__numel(b));
  const mt_backend *be = mt__backend_for(a->device, op);
  if (!be) return mt_last_status();
  int same = a->ndim == b->ndim;
  for (int i = 0; same && i < a->ndim; i++) same = a->sizes[i] == b->sizes[i];
  mt_status st;
  if (same) {
    st = be->dot(a, b, out);
  } else {
    /* same element count, different shapes (Torch7 allows it): compare in row-major order */
    mt_tensor *fa = NULL, *fb = NULL;
    st = flat_of(be, a, &fa);
    if (st == MT_OK) st = flat_of(be, b, &fb);
    if (st == MT_OK) st = be->dot(fa, fb, out);
    mt_tensor_release(fa), mt_tensor_release(fb);
  }
  *out = mt__lua_number(*out);
  return st;
}
