/* ops_lapack.c: public entry points of Torch7's LAPACK functions (gesv, trtrs, gels, inverse,
 * potrf, potrs, potri, pstrf, qr, geqrf, orgqr, ormqr, eig, symeig, svd).
 *
 * Each checks its arguments here, completely, so that LAPACK's own argument check (xerbla,
 * which prints) never fires; copies its inputs into column-major work matrices (what LAPACK
 * wants, and what Torch7 returns: "strides 1, m"); makes one backend call per LAPACK routine;
 * and turns LAPACK's info > 0 into an error naming the function and the failing index. */
#include <limits.h>
#include <stdio.h>
#include "backend.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

static int shares(const mt_tensor *a, const mt_tensor *b) { return a && b && a->storage && a->storage == b->storage; }

/* ---- argument checks ---- */

/* every operand: present, float32/float64, on the device of the first; results: the inputs' dtype */
static mt_status check_operands(const char *op, int n, const mt_tensor *const *ts, const char *const *names) {
  const mt_tensor *ref = ts[0];
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return mt__error(MT_ERR_ARG, "%s: %s is NULL", op, names[i]);
    if (ts[i]->dtype != MT_F32 && ts[i]->dtype != MT_F64)
      return mt__error(MT_ERR_DTYPE,
                       "%s: %s has dtype %s; LAPACK functions take float32 or float64 tensors "
                       "(FloatTensor or DoubleTensor)",
                       op, names[i], mt_dtype_name(ts[i]->dtype));
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
  return MT_OK;
}

/* result tensors must not share memory with each other (each gets its own matrix) */
static mt_status check_results(const char *op, int n, mt_tensor *const *rs, const char *const *names) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (shares(rs[i], rs[j]))
        return mt__error(MT_ERR_ARG, "%s: the result tensors %s and %s share memory; pass separate tensors", op,
                         names[i], names[j]);
  return MT_OK;
}

static mt_status check_matrix(const char *op, const char *name, const mt_tensor *t, int square) {
  char b[128];
  if (t->ndim != 2) return mt__error(MT_ERR_SHAPE, "%s: %s should be a 2-d matrix, got size %s", op, name, SHAPE(t, b));
  if (t->sizes[0] == 0 || t->sizes[1] == 0)
    return mt__error(MT_ERR_SHAPE, "%s: %s is empty (%s)", op, name, SHAPE(t, b));
  if (square && t->sizes[0] != t->sizes[1])
    return mt__error(MT_ERR_SHAPE, "%s: %s should be square, but is %s", op, name, SHAPE(t, b));
  /* LAPACK indexes with 32-bit integers, leading dimension times columns included */
  if (t->sizes[0] > INT_MAX / t->sizes[1] || t->sizes[0] > INT_MAX / 2 || t->sizes[1] > INT_MAX / 2)
    return mt__error(MT_ERR_SHAPE, "%s: %s of size %s is too large for LAPACK (32-bit indices)", op, name, SHAPE(t, b));
  return MT_OK;
}

/* a right-hand side: 2-d, or 1-d taken as one column (Torch7); rows must be A's */
static mt_status check_rhs(const char *op, const mt_tensor *b, const mt_tensor *a) {
  char b1[128], b2[128];
  if (b->ndim != 1 && b->ndim != 2)
    return mt__error(MT_ERR_SHAPE, "%s: B should have 1 or 2 dimensions, got size %s", op, SHAPE(b, b1));
  if (b->sizes[0] != a->sizes[0])
    return mt__error(MT_ERR_SHAPE, "%s: A and B size incompatible: A is %s (%lld rows), B is %s (%lld rows)", op,
                     SHAPE(a, b1), (long long)a->sizes[0], SHAPE(b, b2), (long long)b->sizes[0]);
  int64_t cols = b->ndim == 2 ? b->sizes[1] : 1;
  if (cols == 0) return mt__error(MT_ERR_SHAPE, "%s: B is empty (%s)", op, SHAPE(b, b1));
  if (cols > INT_MAX / (b->sizes[0] > a->sizes[1] ? b->sizes[0] : a->sizes[1]))
    return mt__error(MT_ERR_SHAPE, "%s: B of size %s is too large for LAPACK (32-bit indices)", op, SHAPE(b, b1));
  return MT_OK;
}

static mt_status check_char(const char *op, const char *what, char c, const char *allowed) {
  if (c == allowed[0] || c == allowed[1]) return MT_OK;
  if (c >= 32 && c < 127)
    return mt__error(MT_ERR_ARG, "%s: %s should be '%c' or '%c', got '%c'", op, what, allowed[0], allowed[1], c);
  return mt__error(MT_ERR_ARG, "%s: %s should be '%c' or '%c', got character code %d", op, what, allowed[0], allowed[1],
                   (int)(unsigned char)c);
}

/* LAPACK's info: > 0 is the user's problem, described by fmt with the index (twice, for
 * "U(i,i)"); < 0 means a check above missed something */
static mt_status lapack_info(const char *op, int info, const char *fmt) {
  if (info == 0) return MT_OK;
  if (info < 0)
    return mt__error(MT_ERR_INTERNAL,
                     "%s: LAPACK rejected its argument %d (a moontorch bug: the checks should "
                     "have caught it)",
                     op, -info);
  char msg[256];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  snprintf(msg, sizeof msg, fmt, info, info);
#pragma GCC diagnostic pop
  return mt__error(MT_ERR_ARG, "%s: %s", op, msg);
}

/* ---- column-major work matrices ---- */

/* Is t a rows x cols matrix with strides 1, rows (LAPACK's leading dimension rows)? */
static int is_colmajor(const mt_tensor *t, int64_t rows, int64_t cols) {
  return t->ndim == 2 && t->storage && t->sizes[0] == rows && t->sizes[1] == cols &&
         (rows == 1 || t->strides[0] == 1) && (cols == 1 || t->strides[1] == rows);
}

/* Make t a column-major rows x cols matrix, keeping its storage when it is large enough. */
static mt_status make_colmajor(mt_tensor *t, int64_t rows, int64_t cols) {
  if (is_colmajor(t, rows, cols)) return MT_OK;
  int64_t s[2] = {cols, rows};
  MT_TRY(mt_tensor_resize(t, 2, s));
  t->sizes[0] = rows, t->sizes[1] = cols, t->strides[0] = 1, t->strides[1] = rows;
  return MT_OK;
}

static mt_status temp_colmajor(mt_tensor **t, mt_dtype dtype, int device, int64_t rows, int64_t cols) {
  int64_t s[2] = {cols, rows};
  MT_TRY(mt__tensor_empty(t, dtype, device, 2, s));
  (*t)->sizes[0] = rows, (*t)->sizes[1] = cols, (*t)->strides[0] = 1, (*t)->strides[1] = rows;
  return MT_OK;
}

/* A 1-d right-hand side as a one-column matrix view; other tensors as a new reference. */
static mt_status as_matrix(const mt_tensor *t, mt_tensor **out) {
  mt_tensor *v = mt__tensor_alias(t);
  if (!v) return mt__error(MT_ERR_MEMORY, "lapack: out of host memory");
  if (v->ndim == 1) v->ndim = 2, v->sizes[1] = 1, v->strides[1] = 1;
  *out = v;
  return MT_OK;
}

/* The matrix LAPACK overwrites for one result: the caller's result tensor itself, made
 * column-major, when it shares memory with no input (or is the very view of src, already
 * column-major: Torch7's in-place form); otherwise a temporary, copied into the result at the
 * end. `src` (may be NULL) is copied into its top rows; `other`: out shares memory with an
 * input other than src. */
typedef struct work {
  mt_tensor *out; /* the caller's result; NULL: none wanted */
  mt_tensor *t;   /* what LAPACK writes */
} work;

static int same_view(const mt_tensor *a, const mt_tensor *b) {
  if (!a || !b || a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return 0;
  return 1;
}

static mt_status work_open(const mt_backend *be, work *w, mt_tensor *out, const mt_tensor *src, int64_t rows,
                           int64_t cols, int other, mt_dtype dtype, int device) {
  w->out = out, w->t = NULL;
  int shared = other || shares(out, src);
  if (out && !other && same_view(out, src) && is_colmajor(out, rows, cols)) {
    mt_tensor_retain(out);
    w->t = out;
    return MT_OK;
  }
  if (out && !shared) {
    MT_TRY(make_colmajor(out, rows, cols));
    mt_tensor_retain(out);
    w->t = out;
  } else {
    MT_TRY(temp_colmajor(&w->t, dtype, device, rows, cols));
  }
  if (!src) return MT_OK;
  if (src->sizes[0] == rows) return be->copy(w->t, src);
  mt_tensor *top;
  MT_TRY(mt_tensor_narrow(&top, w->t, 0, 0, src->sizes[0]));
  mt_status st = be->copy(top, src);
  mt_tensor_release(top);
  return st;
}

/* Hand the work matrix's values to the result (when they differ) and drop the work matrix.
 * A result of the right size is written in its own layout (Torch7's in-place forms). */
static mt_status work_close(const mt_backend *be, work *w, mt_status st) {
  if (st == MT_OK && w->t && w->out && w->t != w->out) {
    mt_tensor *t = w->t, *out = w->out;
    int same = out->ndim == t->ndim && out->storage;
    for (int i = 0; same && i < t->ndim; i++)
      same = out->sizes[i] == t->sizes[i] && (out->strides[i] || t->sizes[i] < 2);
    if (!same)
      st = t->ndim == 2 ? make_colmajor(out, t->sizes[0], t->sizes[1]) : mt_tensor_resize(out, t->ndim, t->sizes);
    if (st == MT_OK) st = be->copy(out, t);
  }
  mt_tensor_release(w->t);
  w->t = NULL;
  return st;
}

/* A 1-d result of n elements (tau, eigenvalues, singular values, pivots): the result itself
 * when it is contiguous and shares no memory with an input, else a temporary. */
static mt_status vec_open(work *w, mt_tensor *out, int64_t n, int shared, mt_dtype dtype, int device, const char *op) {
  w->out = out, w->t = NULL;
  if (out && !shared) {
    MT_TRY(mt__prepare_out(out, dtype, device, 1, &n, op));
    if (mt__is_contiguous(out)) {
      mt_tensor_retain(out);
      w->t = out;
      return MT_OK;
    }
  }
  return mt__tensor_empty(&w->t, dtype, device, 1, &n);
}

/* A read-only operand LAPACK reads column-major: a view when it is one, else a copy. */
/* t as a column-major matrix of `dtype`: t itself when it is one, else a converted copy */
static mt_status colmajor_input(const mt_backend *be, const mt_tensor *t, mt_dtype dtype, mt_tensor **out) {
  if (t->dtype == dtype && is_colmajor(t, t->sizes[0], t->sizes[1]))
    return (*out = mt__tensor_alias(t)) ? MT_OK : mt__error(MT_ERR_MEMORY, "lapack: out of host memory");
  MT_TRY(temp_colmajor(out, dtype, t->device, t->sizes[0], t->sizes[1]));
  mt_status st = be->copy(*out, t);
  if (st != MT_OK) mt_tensor_release(*out), *out = NULL;
  return st;
}

static mt_status contiguous_input(const mt_backend *be, const mt_tensor *t, mt_dtype dtype, mt_tensor **out) {
  if (t->dtype == dtype && mt__is_contiguous(t))
    return (*out = mt__tensor_alias(t)) ? MT_OK : mt__error(MT_ERR_MEMORY, "lapack: out of host memory");
  MT_TRY(mt__tensor_empty(out, dtype, t->device, t->ndim, t->sizes));
  mt_status st = be->copy(*out, t);
  if (st != MT_OK) mt_tensor_release(*out), *out = NULL;
  return st;
}

/* The dtype the QR family (geqrf, orgqr, ormqr, qr) computes in: float32 factors in float64 and
 * rounds the results. Float32 Householder QR reproduces A only to about 8 ulps of its column
 * norms (above the 1e-5 Torch7's own tests ask); in float64 the rounded factors are within 2. */
static mt_dtype qr_dtype(const mt_tensor *a) { return a->dtype == MT_F32 ? MT_F64 : a->dtype; }

#define BACKEND(op, t)                                     \
  const mt_backend *be = mt__backend_for((t)->device, op); \
  if (!be) return mt_last_status()

/* ---- linear systems ---- */

/* gesv and trtrs: A (n x n) and B (n x k, or n) into ra (A's factor or copy) and rb (X) */
static mt_status square_solve(const char *op, mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a,
                              char uplo, char trans, char diag) {
  const mt_tensor *ts[] = {a, b, rb, ra};
  const char *names[] = {"A", "B", "result X", "result A"};
  MT_TRY(check_operands(op, 4, ts, names));
  mt_tensor *rs[] = {rb, ra};
  MT_TRY(check_results(op, 2, rs, names + 2));
  MT_TRY(check_matrix(op, "A", a, 1));
  MT_TRY(check_rhs(op, b, a));
  int tri = op[0] == 't';
  if (tri) {
    MT_TRY(check_char(op, "uplo", uplo, "UL"));
    MT_TRY(check_char(op, "trans", trans, "NT"));
    MT_TRY(check_char(op, "diag", diag, "NU"));
  }
  BACKEND(op, a);
  mt_tensor *bm = NULL;
  MT_TRY(as_matrix(b, &bm));
  int64_t n = a->sizes[0], k = bm->sizes[1];
  work wa, wb = {0};
  int info = 0;
  mt_status st = work_open(be, &wa, ra, a, n, n, shares(ra, b), a->dtype, a->device);
  if (st == MT_OK) st = work_open(be, &wb, rb, bm, n, k, shares(rb, a), a->dtype, a->device);
  if (st == MT_OK)
    st = tri ? be->lapack_trtrs(wa.t, wb.t, uplo, trans, diag, &info) : be->lapack_gesv(wa.t, wb.t, &info);
  if (st == MT_OK)
    st = lapack_info(op, info,
                     tri ? "A is singular: its diagonal element A(%d,%d) is zero"
                         : "A is singular: U(%d,%d) of its LU factorization is exactly zero");
  st = work_close(be, &wb, st);
  st = work_close(be, &wa, st);
  mt_tensor_release(bm);
  return st;
}

mt_status mt_gesv(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a) {
  return square_solve("gesv", rb, ra, b, a, 'U', 'N', 'N');
}

mt_status mt_trtrs(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a, char uplo, char trans,
                   char diag) {
  return square_solve("trtrs", rb, ra, b, a, uplo, trans, diag);
}

mt_status mt_gels(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a) {
  const char *op = "gels";
  const mt_tensor *ts[] = {a, b, rb, ra};
  const char *names[] = {"A", "B", "result X", "result A"};
  MT_TRY(check_operands(op, 4, ts, names));
  mt_tensor *rs[] = {rb, ra};
  MT_TRY(check_results(op, 2, rs, names + 2));
  MT_TRY(check_matrix(op, "A", a, 0));
  MT_TRY(check_rhs(op, b, a));
  BACKEND(op, a);
  mt_tensor *bm = NULL;
  MT_TRY(as_matrix(b, &bm));
  int64_t m = a->sizes[0], n = a->sizes[1], k = bm->sizes[1], ldb = m > n ? m : n;
  work wa, wb = {0};
  int info = 0;
  mt_status st = work_open(be, &wa, ra, a, m, n, shares(ra, b), a->dtype, a->device);
  if (st == MT_OK) st = work_open(be, &wb, rb, bm, ldb, k, shares(rb, a), a->dtype, a->device);
  if (st == MT_OK) st = be->lapack_gels(wa.t, wb.t, &info);
  if (st == MT_OK)
    st =
        lapack_info(op, info, "A does not have full rank: the %d-th diagonal element of its triangular factor is zero");
  st = work_close(be, &wb, st);
  st = work_close(be, &wa, st);
  mt_tensor_release(bm);
  return st;
}

/* ---- one square matrix in, one out: inverse, potrf, potri ---- */

typedef enum { SQ_INVERSE, SQ_POTRF, SQ_POTRI } square_kind;

static mt_status square_one(const char *op, square_kind kind, mt_tensor *out, const mt_tensor *a, char uplo) {
  const mt_tensor *ts[] = {a, out};
  const char *names[] = {kind == SQ_POTRI ? "chol" : "A", "result"};
  MT_TRY(check_operands(op, 2, ts, names));
  MT_TRY(check_matrix(op, names[0], a, 1));
  if (kind != SQ_INVERSE) MT_TRY(check_char(op, "uplo", uplo, "UL"));
  BACKEND(op, a);
  int64_t n = a->sizes[0];
  work w;
  int info = 0;
  mt_status st = work_open(be, &w, out, a, n, n, 0, a->dtype, a->device);
  if (st == MT_OK) {
    if (kind == SQ_INVERSE) {
      st = be->lapack_getri(w.t, &info);
      if (st == MT_OK)
        st = lapack_info(op, info, "the matrix is singular: U(%d,%d) of its LU factorization is exactly zero");
    } else if (kind == SQ_POTRF) {
      st = be->lapack_potrf(w.t, uplo, &info);
      if (st == MT_OK)
        st = lapack_info(op, info, "A is not positive definite: its leading minor of order %d is not positive");
      if (st == MT_OK) st = be->lapack_triangle(w.t, uplo, 0); /* Torch7 returns a clean triangle */
    } else {
      st = be->lapack_potri(w.t, uplo, &info);
      if (st == MT_OK) st = lapack_info(op, info, "chol is singular: its diagonal element (%d,%d) is zero");
      if (st == MT_OK) st = be->lapack_triangle(w.t, uplo, 1); /* the full symmetric inverse */
    }
  }
  return work_close(be, &w, st);
}

mt_status mt_inverse(mt_tensor *out, const mt_tensor *a) { return square_one("inverse", SQ_INVERSE, out, a, 'U'); }
mt_status mt_potrf(mt_tensor *out, const mt_tensor *a, char uplo) {
  return square_one("potrf", SQ_POTRF, out, a, uplo);
}
mt_status mt_potri(mt_tensor *out, const mt_tensor *chol, char uplo) {
  return square_one("potri", SQ_POTRI, out, chol, uplo);
}

mt_status mt_potrs(mt_tensor *out, const mt_tensor *b, const mt_tensor *chol, char uplo) {
  const char *op = "potrs";
  const mt_tensor *ts[] = {chol, b, out};
  const char *names[] = {"chol", "B", "result"};
  MT_TRY(check_operands(op, 3, ts, names));
  MT_TRY(check_matrix(op, "chol", chol, 1));
  MT_TRY(check_rhs(op, b, chol));
  MT_TRY(check_char(op, "uplo", uplo, "UL"));
  BACKEND(op, chol);
  mt_tensor *bm = NULL, *cm = NULL;
  MT_TRY(as_matrix(b, &bm));
  work w = {0};
  int info = 0;
  mt_status st = colmajor_input(be, chol, chol->dtype, &cm);
  if (st == MT_OK)
    st = work_open(be, &w, out, bm, chol->sizes[0], bm->sizes[1], shares(out, chol), b->dtype, b->device);
  if (st == MT_OK) st = be->lapack_potrs(cm, w.t, uplo, &info);
  if (st == MT_OK) st = lapack_info(op, info, "chol is singular: its diagonal element (%d,%d) is zero");
  st = work_close(be, &w, st);
  mt_tensor_release(cm), mt_tensor_release(bm);
  return st;
}

mt_status mt_pstrf(mt_tensor *out, mt_tensor *piv, const mt_tensor *a, char uplo, double tol) {
  const char *op = "pstrf";
  const mt_tensor *ts[] = {a, out};
  const char *names[] = {"A", "result"};
  MT_TRY(check_operands(op, 2, ts, names));
  MT_CHECK_TENSOR(piv, op, "result piv");
  if (piv->dtype != MT_I32)
    return mt__error(MT_ERR_DTYPE, "%s: piv should be an int32 tensor (IntTensor), got %s", op,
                     mt_dtype_name(piv->dtype));
  if (piv->device != a->device) return mt__error(MT_ERR_DEVICE, "%s: piv is not on A's device", op);
  mt_tensor *rs[] = {out, piv};
  const char *rnames[] = {"result", "piv"};
  MT_TRY(check_results(op, 2, rs, rnames));
  MT_TRY(check_matrix(op, "A", a, 1));
  MT_TRY(check_char(op, "uplo", uplo, "UL"));
  if (tol != tol) return mt__error(MT_ERR_ARG, "%s: tol is NaN", op);
  BACKEND(op, a);
  int64_t n = a->sizes[0];
  work w, wp = {0};
  int info = 0, rank = 0;
  mt_status st = work_open(be, &w, out, a, n, n, 0, a->dtype, a->device);
  if (st == MT_OK) st = vec_open(&wp, piv, n, shares(piv, a), MT_I32, a->device, op);
  if (st == MT_OK) st = be->lapack_pstrf(w.t, wp.t, uplo, tol, &rank, &info);
  if (st == MT_OK && info > 0)
    st = mt__error(MT_ERR_ARG,
                   "%s: A is rank deficient or not positive semidefinite (rank %d of %lld at tolerance "
                   "%g)",
                   op, rank, (long long)n, tol);
  if (st == MT_OK) st = lapack_info(op, info, "");
  if (st == MT_OK) st = be->lapack_triangle(w.t, uplo, 0);
  st = work_close(be, &wp, st);
  return work_close(be, &w, st);
}

/* ---- QR ---- */

mt_status mt_geqrf(mt_tensor *out, mt_tensor *tau, const mt_tensor *a) {
  const char *op = "geqrf";
  const mt_tensor *ts[] = {a, out, tau};
  const char *names[] = {"A", "result", "tau"};
  MT_TRY(check_operands(op, 3, ts, names));
  mt_tensor *rs[] = {out, tau};
  MT_TRY(check_results(op, 2, rs, names + 1));
  MT_TRY(check_matrix(op, "A", a, 0));
  BACKEND(op, a);
  int64_t m = a->sizes[0], n = a->sizes[1], k = m < n ? m : n;
  work w, wt = {0};
  int info = 0;
  mt_dtype ct = qr_dtype(a);
  int promote = ct != a->dtype; /* then LAPACK works on temporaries, rounded into the results */
  mt_status st = work_open(be, &w, out, a, m, n, promote, ct, a->device);
  if (st == MT_OK) st = vec_open(&wt, tau, k, promote || shares(tau, a), ct, a->device, op);
  if (st == MT_OK) st = be->lapack_geqrf(w.t, wt.t, &info);
  if (st == MT_OK) st = lapack_info(op, info, "");
  st = work_close(be, &wt, st);
  return work_close(be, &w, st);
}

static mt_status check_tau(const char *op, const mt_tensor *tau, int64_t kmax) {
  char b[128];
  if (tau->ndim != 1 || tau->sizes[0] > kmax)
    return mt__error(MT_ERR_SHAPE, "%s: tau should be a 1-d tensor of at most %lld elements, got size %s", op,
                     (long long)kmax, SHAPE(tau, b));
  return MT_OK;
}

/* Q (m x k) from geqrf's reflectors in a (m x n) and tau (k <= min(m, n)) */
mt_status mt_orgqr(mt_tensor *out, const mt_tensor *a, const mt_tensor *tau) {
  const char *op = "orgqr";
  const mt_tensor *ts[] = {a, tau, out};
  const char *names[] = {"A", "tau", "result"};
  MT_TRY(check_operands(op, 3, ts, names));
  MT_TRY(check_matrix(op, "A", a, 0));
  int64_t m = a->sizes[0], n = a->sizes[1];
  MT_TRY(check_tau(op, tau, m < n ? m : n));
  BACKEND(op, a);
  int64_t k = tau->sizes[0];
  if (k == 0) return mt__error(MT_ERR_SHAPE, "%s: tau is empty", op);
  mt_tensor *a_k = NULL, *tc = NULL;
  work w = {0};
  int info = 0;
  mt_dtype ct = qr_dtype(a);
  int promote = ct != a->dtype;
  mt_status st = mt_tensor_narrow(&a_k, a, 1, 0, k);
  if (st == MT_OK) st = contiguous_input(be, tau, ct, &tc);
  if (st == MT_OK) st = work_open(be, &w, out, a_k, m, k, promote || shares(out, a) || shares(out, tau), ct, a->device);
  if (st == MT_OK) st = be->lapack_orgqr(w.t, tc, &info);
  if (st == MT_OK) st = lapack_info(op, info, "");
  st = work_close(be, &w, st);
  mt_tensor_release(a_k), mt_tensor_release(tc);
  return st;
}

/* res = op(Q) c (side 'L') or c op(Q) (side 'R'), Q from geqrf's a and tau */
mt_status mt_ormqr(mt_tensor *out, const mt_tensor *a, const mt_tensor *tau, const mt_tensor *c, char side,
                   char trans) {
  const char *op = "ormqr";
  const mt_tensor *ts[] = {a, tau, c, out};
  const char *names[] = {"A", "tau", "C", "result"};
  MT_TRY(check_operands(op, 4, ts, names));
  MT_TRY(check_matrix(op, "A", a, 0));
  MT_TRY(check_matrix(op, "C", c, 0));
  MT_TRY(check_char(op, "side", side, "LR"));
  MT_TRY(check_char(op, "trans", trans, "NT"));
  int64_t nq = side == 'L' ? c->sizes[0] : c->sizes[1];
  char b1[128], b2[128];
  if (a->sizes[0] != nq)
    return mt__error(MT_ERR_SHAPE, "%s: A (%s) should have as many rows as C (%s) has %s (side '%c')", op, SHAPE(a, b1),
                     SHAPE(c, b2), side == 'L' ? "rows" : "columns", side);
  MT_TRY(check_tau(op, tau, a->sizes[1] < nq ? a->sizes[1] : nq));
  BACKEND(op, a);
  mt_tensor *ac = NULL, *tc = NULL;
  work w = {0};
  int info = 0;
  mt_dtype ct = qr_dtype(a);
  int promote = ct != a->dtype;
  mt_status st = colmajor_input(be, a, ct, &ac);
  if (st == MT_OK) st = contiguous_input(be, tau, ct, &tc);
  if (st == MT_OK)
    st = work_open(be, &w, out, c, c->sizes[0], c->sizes[1], promote || shares(out, a) || shares(out, tau), ct,
                   c->device);
  if (st == MT_OK) st = be->lapack_ormqr(ac, tc, w.t, side, trans, &info);
  if (st == MT_OK) st = lapack_info(op, info, "");
  st = work_close(be, &w, st);
  mt_tensor_release(ac), mt_tensor_release(tc);
  return st;
}

/* thin QR: q (m x k, column-major) and r (k x n, upper triangular), k = min(m, n) */
mt_status mt_qr(mt_tensor *q, mt_tensor *r, const mt_tensor *a) {
  const char *op = "qr";
  const mt_tensor *ts[] = {a, q, r};
  const char *names[] = {"A", "result Q", "result R"};
  MT_TRY(check_operands(op, 3, ts, names));
  mt_tensor *rs[] = {q, r};
  MT_TRY(check_results(op, 2, rs, names + 1));
  MT_TRY(check_matrix(op, "A", a, 0));
  BACKEND(op, a);
  int64_t m = a->sizes[0], n = a->sizes[1], k = m < n ? m : n;
  mt_tensor *fa = NULL, *tau = NULL, *top = NULL, *left = NULL;
  work wq = {0}, wr = {0};
  int info = 0;
  mt_dtype ct = qr_dtype(a);
  int promote = ct != a->dtype;
  mt_status st = temp_colmajor(&fa, ct, a->device, m, n);
  if (st == MT_OK) st = be->copy(fa, a);
  if (st == MT_OK) st = mt__tensor_empty(&tau, ct, a->device, 1, &k);
  if (st == MT_OK) st = be->lapack_geqrf(fa, tau, &info);
  if (st == MT_OK) st = lapack_info(op, info, "");
  /* R: the top k rows of the factor, below the diagonal cleared; row-major as Torch7's triu */
  int64_t rsz[2] = {k, n};
  if (st == MT_OK) st = mt_tensor_narrow(&top, fa, 0, 0, k);
  if (st == MT_OK)
    st = shares(r, a) ? mt__tensor_empty(&wr.t, a->dtype, a->device, 2, rsz)
                      : mt__prepare_out(r, a->dtype, a->device, 2, rsz, op);
  if (st == MT_OK && !wr.t) mt_tensor_retain(r), wr.t = r;
  wr.out = r;
  if (st == MT_OK) st = be->copy(wr.t, top);
  if (st == MT_OK) st = be->lapack_triangle(wr.t, 'U', 0);
  /* Q: the reflectors' first k columns, expanded */
  if (st == MT_OK) st = mt_tensor_narrow(&left, fa, 1, 0, k);
  if (st == MT_OK) st = work_open(be, &wq, q, left, m, k, promote || shares(q, a), ct, a->device);
  if (st == MT_OK) st = be->lapack_orgqr(wq.t, tau, &info);
  if (st == MT_OK) st = lapack_info(op, info, "");
  st = work_close(be, &wq, st);
  st = work_close(be, &wr, st);
  mt_tensor_release(fa), mt_tensor_release(tau), mt_tensor_release(top), mt_tensor_release(left);
  return st;
}

/* ---- eigenvalues and singular values ---- */

/* e: n x 2 (real, imaginary parts; row-major as Torch7's); v: n x n column-major, the right
 * eigenvectors in LAPACK's packing (a complex pair takes two columns: real and imaginary parts) */
mt_status mt_eig(mt_tensor *e, mt_tensor *v, const mt_tensor *a, char jobvr) {
  const char *op = "eig";
  MT_TRY(check_char(op, "jobvr", jobvr, "NV"));
  const mt_tensor *ts[] = {a, e, jobvr == 'V' ? v : a};
  const char *names[] = {"A", "result e", "result V"};
  MT_TRY(check_operands(op, 3, ts, names));
  mt_tensor *rs[] = {e, jobvr == 'V' ? v : NULL};
  MT_TRY(check_results(op, 2, rs, names + 1));
  MT_TRY(check_matrix(op, "A", a, 1));
  BACKEND(op, a);
  int64_t n = a->sizes[0];
  mt_tensor *fa = NULL;
  work we = {0}, wv = {0};
  int info = 0;
  mt_status st = temp_colmajor(&fa, a->dtype, a->device, n, n);
  if (st == MT_OK) st = be->copy(fa, a);
  /* wr and wi are the two columns of a column-major n x 2 temporary */
  if (st == MT_OK) st = temp_colmajor(&we.t, a->dtype, a->device, n, 2);
  we.out = e;
  if (st == MT_OK && jobvr == 'V') st = work_open(be, &wv, v, NULL, n, n, shares(v, a), a->dtype, a->device);
  if (st == MT_OK) st = be->lapack_geev(fa, we.t, wv.t, &info);
  if (st == MT_OK)
    st = lapack_info(op, info,
                     "the QR algorithm failed to compute all eigenvalues (only those after the first %d converged)");
  if (st == MT_OK) { /* e is a plain row-major n x 2 result */
    int64_t esz[2] = {n, 2};
    st = mt__prepare_out(e, a->dtype, a->device, 2, esz, op);
  }
  st = work_close(be, &wv, st);
  st = work_close(be, &we, st);
  mt_tensor_release(fa);
  return st;
}

/* e: n eigenvalues in ascending order; v (jobz 'V'): n x n column-major eigenvectors */
mt_status mt_symeig(mt_tensor *e, mt_tensor *v, const mt_tensor *a, char jobz, char uplo) {
  const char *op = "symeig";
  MT_TRY(check_char(op, "jobz", jobz, "NV"));
  MT_TRY(check_char(op, "uplo", uplo, "UL"));
  const mt_tensor *ts[] = {a, e, jobz == 'V' ? v : a};
  const char *names[] = {"A", "result e", "result V"};
  MT_TRY(check_operands(op, 3, ts, names));
  mt_tensor *rs[] = {e, jobz == 'V' ? v : NULL};
  MT_TRY(check_results(op, 2, rs, names + 1));
  MT_TRY(check_matrix(op, "A", a, 1));
  BACKEND(op, a);
  int64_t n = a->sizes[0];
  work we = {0}, wv = {0};
  int info = 0;
  mt_status st = work_open(be, &wv, jobz == 'V' ? v : NULL, a, n, n, 0, a->dtype, a->device);
  if (st == MT_OK) st = vec_open(&we, e, n, shares(e, a), a->dtype, a->device, op);
  if (st == MT_OK) st = be->lapack_syev(wv.t, we.t, jobz, uplo, &info);
  if (st == MT_OK)
    st = lapack_info(op, info, "%d off-diagonal elements of an intermediate tridiagonal form did not converge to zero");
  st = work_close(be, &we, st);
  return work_close(be, &wv, st);
}

/* a = U diag(S) V^T. job 'S': U m x k, V n x k; 'A': U m x m, V n x n (k = min(m, n)). U is
 * column-major; V row-major (LAPACK's V^T in column-major order is V's row-major layout). */
mt_status mt_svd(mt_tensor *u, mt_tensor *s, mt_tensor *v, const mt_tensor *a, char job) {
  const char *op = "svd";
  const mt_tensor *ts[] = {a, u, s, v};
  const char *names[] = {"A", "result U", "result S", "result V"};
  MT_TRY(check_operands(op, 4, ts, names));
  mt_tensor *rs[] = {u, s, v};
  MT_TRY(check_results(op, 3, rs, names + 1));
  MT_TRY(check_matrix(op, "A", a, 0));
  MT_TRY(check_char(op, "job", job, "SA"));
  BACKEND(op, a);
  int64_t m = a->sizes[0], n = a->sizes[1], k = m < n ? m : n;
  int64_t ku = job == 'A' ? m : k, kv = job == 'A' ? n : k;
  mt_tensor *fa = NULL, *vt = NULL;
  work wu = {0}, ws = {0}, wv = {0};
  int info = 0;
  mt_status st = temp_colmajor(&fa, a->dtype, a->device, m, n);
  if (st == MT_OK) st = be->copy(fa, a);
  if (st == MT_OK) st = work_open(be, &wu, u, NULL, m, ku, shares(u, a), a->dtype, a->device);
  if (st == MT_OK) st = vec_open(&ws, s, k, shares(s, a), a->dtype, a->device, op);
  /* V row-major n x kv is V^T column-major kv x n: a temporary always (small), as LAPACK wants it */
  int64_t vsz[2] = {n, kv};
  if (st == MT_OK) st = mt__tensor_empty(&wv.t, a->dtype, a->device, 2, vsz);
  wv.out = v;
  if (st == MT_OK) st = mt_tensor_transpose(&vt, wv.t, 0, 1);
  if (st == MT_OK) st = be->lapack_gesvd(fa, ws.t, wu.t, vt, job, &info);
  if (st == MT_OK)
    st = lapack_info(op, info, "%d superdiagonals of an intermediate bidiagonal form did not converge to zero");
  if (st == MT_OK && !(v->ndim == 2 && v->sizes[0] == n && v->sizes[1] == kv))
    st = mt__prepare_out(v, a->dtype, a->device, 2, vsz, op);
  st = work_close(be, &wv, st);
  st = work_close(be, &ws, st);
  st = work_close(be, &wu, st);
  mt_tensor_release(fa), mt_tensor_release(vt);
  return st;
}
