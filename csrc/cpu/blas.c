/* blas.c: CPU matrix products (gemm, gemv, dot).
 *
 * f32/f64 go to OpenBLAS, single-threaded, split over OpenMP threads by gemm_par.c. Row-major or column-major operands
 * (one inner stride 1, the other at least the size) are passed as they are, with a transpose flag; only other layouts
 * are packed into a contiguous temp. f16/bf16 are widened to float temps around sgemm; integer dtypes use an i-k-j loop
 * accumulating in 64 bits. The bodies are written once in generic/blas*.c, each compiled for the dtypes that take it;
 * this file holds the matrix views, the scratch buffers and the entry points. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "../core/half_bulk.h"
#include "../core/dtype.h"
#include "../core/error.h"
#include "generate.h"

/* One matrix of a batch: element pointer, sizes and strides in elements. */
typedef struct mat {
  char *p;
  int64_t r, c, s0, s1;
} mat;

static mat mat_of(const mt_tensor *t, int64_t batch) {
  size_t es = mt__dtype_size(t->dtype);
  mat m = {mt__data(t) + batch * t->strides[0] * (int64_t)es, t->sizes[1], t->sizes[2], t->strides[1], t->strides[2]};
  return m;
}

static void mat_transpose(mat *m) {
  int64_t t = m->r;
  m->r = m->c, m->c = t;
  t = m->s0;
  m->s0 = m->s1, m->s1 = t;
}

/* Can row-major BLAS read m in place? Sets *trans (m is stored as its transpose) and *ld.
 * A stride over a size-1 dimension is never used, so it is chosen to fit. */
static int blas_layout(const mat *m, int *trans, int64_t *ld) {
  int64_t r = m->r, c = m->c, s0 = m->s0, s1 = m->s1;
  if (r > INT_MAX || c > INT_MAX) return 0;
  if (c == 1) {
    *trans = 0, *ld = s0 >= 1 ? s0 : 1;
    if (r == 1 || s0 >= 1) return *ld <= INT_MAX;
  }
  if (r == 1) {
    if (s1 == 1) return *trans = 0, *ld = c, 1;
    if (s1 >= 1) return *trans = 1, *ld = s1, s1 <= INT_MAX;
    return 0;
  }
  if (s1 == 1 && s0 >= c) return *trans = 0, *ld = s0, s0 <= INT_MAX;
  if (s0 == 1 && s1 >= r) return *trans = 1, *ld = s1, s1 <= INT_MAX;
  return 0;
}

/* every dtype's zero is all-zero bits, so beta == 0 can clear without reading (NaN ignored) */
static void mat_zero(const mat *m, size_t es) {
  for (int64_t i = 0; i < m->r; i++) {
    char *row = m->p + i * m->s0 * (int64_t)es;
    if (m->s1 == 1) memset(row, 0, (size_t)m->c * es);
    else
      for (int64_t j = 0; j < m->c; j++) memset(row + j * m->s1 * (int64_t)es, 0, es);
  }
}

/* Scratch for operands BLAS cannot read in place; grown on demand, reused across a batch. */
typedef struct scratch {
  void *buf[3];
  size_t cap[3];
} scratch;

static void *scratch_get(scratch *s, int slot, size_t nbytes) {
  if (s->cap[slot] < nbytes) {
    free(s->buf[slot]);
    s->buf[slot] = malloc(nbytes ? nbytes : 1);
    s->cap[slot] = s->buf[slot] ? nbytes : 0;
  }
  return s->buf[slot];
}

static void scratch_free(scratch *s) {
  for (int i = 0; i < 3; i++) free(s->buf[i]);
}

/* the packing of generic/blas_pack.c converts contiguous rows of float16 eight at a time (F16C,
 * half_bulk.c); the other dtypes answer 0 and take its element loop */
static int row_widen_f16(float *d, const uint16_t *s, int64_t n) {
  mt__half_to_float_n(d, s, (size_t)n);
  return 1;
}
static int row_narrow_f16(uint16_t *d, const float *s, int64_t n) {
  mt__float_to_half_n(d, s, (size_t)n);
  return 1;
}
static int row_widen_bf16(float *d, const uint16_t *s, int64_t n) { return 0; }
static int row_narrow_bf16(uint16_t *d, const float *s, int64_t n) { return 0; }
static int row_widen_f32(float *d, const float *s, int64_t n) { return 0; }
static int row_narrow_f32(float *d, const float *s, int64_t n) { return 0; }
static int row_widen_f64(double *d, const double *s, int64_t n) { return 0; }
static int row_narrow_f64(double *d, const double *s, int64_t n) { return 0; }

/* scalar_t's BLAS routines in generic/blas_cblas.c: gemm_par.c's threaded GEMM and cblas_?NAME */
#define PAR_GEMM _Generic((scalar_t)0, float : mt__sgemm, double : mt__dgemm)
#define CBLAS(name, ...) _Generic((scalar_t)0, float : cblas_s##name, double : cblas_d##name)(__VA_ARGS__)

/* ---- the bodies, each written once in generic/blas*.c for the dtypes that take it ---- */

/* every dtype: scaling a matrix by beta, the dot product */
#define MT_GENERIC_FILE "generic/blas.c"
#include "generate_all.h"
/* the float dtypes: strided operands packed into contiguous temporaries and back */
#define MT_GENERIC_FILE "generic/blas_pack.c"
#include "generate_float.h"
/* float32 and float64 through BLAS */
#define MT_GENERIC_FILE "generic/blas_cblas.c"
#include "generate_blas.h"
/* float16 and bfloat16: products in float (sgemm on widened copies) */
#define MT_GENERIC_FILE "generic/blas_half.c"
#define MT_GEN_N f16
#include "generate_one.h"
#define MT_GEN_N bf16
#include "generate_one.h"
#undef MT_GENERIC_FILE
/* the integer dtypes but bool: i-k-j loops in 64-bit integers */
#define MT_GENERIC_FILE "generic/blas_int.c"
#define MT_GEN_N i32
#include "generate_one.h"
#define MT_GEN_N i64
#include "generate_one.h"
#define MT_GEN_N u8
#include "generate_one.h"
#define MT_GEN_N i8
#include "generate_one.h"
#define MT_GEN_N i16
#include "generate_one.h"
#undef MT_GENERIC_FILE

/* m = beta * m for a matrix of the given dtype */
#define SCALE_CASE(E, N, T, CT) \
  case E: mat_scale_##N(m, beta); break;
static void mat_scale(int dtype, const mat *m, double beta) {
  switch (dtype) {
    MT_DTYPE_LIST(SCALE_CASE)
    default: break;
  }
}

typedef mt_status (*gemm_one_fn)(int64_t, int64_t, int64_t, double, mat, mat, double, mat, scratch *);

/* matrix i of a batched product */
static mt_status gemm_batch_item(gemm_one_fn fn, mt_tensor *out, int64_t i, double beta, double alpha,
                                 const mt_tensor *a, const mt_tensor *b, int64_t n, int64_t m, int64_t k, size_t es,
                                 scratch *s) {
  mat c = mat_of(out, i);
  /* BLAS semantics: beta == 0 ignores out's values, even NaN; clearing first makes that hold
   * for every path and BLAS version */
  if (beta == 0) mat_zero(&c, es);
  if (k == 0) {
    if (beta != 0 && beta != 1) mat_scale(out->dtype, &c, beta);
    return MT_OK;
  }
  return fn(n, m, k, alpha, mat_of(a, i), mat_of(b, i), beta, c, s);
}

mt_status mt__cpu_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b) {
  mt__blas_init();
  int64_t nb = out->sizes[0], n = out->sizes[1], m = out->sizes[2], k = a->sizes[2];
  size_t es = mt__dtype_size(out->dtype);
  gemm_one_fn fn;
  switch (out->dtype) {
    case MT_F32: fn = gemm_one_f32; break;
    case MT_F64: fn = gemm_one_f64; break;
    case MT_F16: fn = gemm_one_f16; break;
    case MT_BF16: fn = gemm_one_bf16; break;
    case MT_I32: fn = gemm_one_i32; break;
    case MT_I64: fn = gemm_one_i64; break;
    case MT_U8: fn = gemm_one_u8; break;
    case MT_I8: fn = gemm_one_i8; break;
    case MT_I16: fn = gemm_one_i16; break;
    default: return mt__error(MT_ERR_DTYPE, "gemm: dtype %s not supported", mt_dtype_name(out->dtype));
  }
  if (nb == 0 || n == 0 || m == 0) return MT_OK;
  if (n > INT_MAX || m > INT_MAX || k > INT_MAX)
    return mt__error(MT_ERR_UNSUPPORTED, "gemm: sizes %lldx%lldx%lld exceed the BLAS integer range", (long long)n,
                     (long long)k, (long long)m);
  /* a batch that divides evenly over the threads (or is long enough that the remainder hardly
   * matters), or of products each too small to split (bilinear upsampling's 64x32 by 32x64),
   * goes matrix by matrix over the threads, each product single-threaded as the serial loop
   * would run it: the same bits either way. Splitting each product instead cost a parallel
   * region per matrix and packed each operand once per thread: nn.MM's 32 x (128x256 by
   * 256x128) took 2.7-5.0 ms that way on 2 threads, 2.0-3.1 ms this way. (Not one region with
   * an if clause: libgomp then runs the larger products' own GEMM threads as nested regions, on
   * one thread.) */
  const int nth = omp_get_max_threads();
  if (nb > 1 && nth > 1 && (nb % nth == 0 || nb >= 4 * nth || mt__gemm_threads(n, m, k) < nth)) {
    int failed = 0;
#pragma omp parallel
    {
      scratch s = {{0}, {0}};
      mt_status my = MT_OK;
#pragma omp for schedule(static)
      for (int64_t i = 0; i < nb; i++)
        if (my == MT_OK) my = gemm_batch_item(fn, out, i, beta, alpha, a, b, n, m, k, es, &s);
      scratch_free(&s);
      if (my != MT_OK) {
#pragma omp atomic write
        failed = 1;
      }
    }
    /* a worker's message was set on its own thread: say it here (only memory can fail) */
    if (failed)
      return mt__error(MT_ERR_MEMORY, "gemm: out of host memory for the temporaries of a %lldx%lldx%lld product",
                       (long long)n, (long long)k, (long long)m);
    return MT_OK;
  }
  scratch s = {{0}, {0}};
  mt_status st = MT_OK;
  for (int64_t i = 0; i < nb && st == MT_OK; i++) st = gemm_batch_item(fn, out, i, beta, alpha, a, b, n, m, k, es, &s);
  scratch_free(&s);
  return st;
}

/* ---- gemv: out = beta*out + alpha*m@v ---- */

/* a strided vector as a 1-column matrix view (so the matrix helpers apply) */
static mat vec_of(const mt_tensor *t) {
  mat v = {mt__data(t), t->sizes[0], 1, t->strides[0], 1};
  return v;
}

mt_status mt__cpu_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v) {
  mt__blas_init();
  mat mm = {mt__data(m), m->sizes[0], m->sizes[1], m->strides[0], m->strides[1]};
  mat vv = vec_of(v), y = vec_of(out);
  size_t es = mt__dtype_size(out->dtype);
  if (y.r == 0) return MT_OK;
  if (beta == 0) mat_zero(&y, es);
  if (mm.c == 0) {
    if (beta != 0 && beta != 1) mat_scale(out->dtype, &y, beta);
    return MT_OK;
  }
  if (mm.r > INT_MAX || mm.c > INT_MAX)
    return mt__error(MT_ERR_UNSUPPORTED, "gemv: sizes %lldx%lld exceed the BLAS integer range", (long long)mm.r,
                     (long long)mm.c);
  switch (out->dtype) {
    case MT_F32: return gemv_f32(beta, alpha, mm, vv, y);
    case MT_F64: return gemv_f64(beta, alpha, mm, vv, y);
    case MT_F16: return gemv_f16(beta, alpha, mm, vv, y);
    case MT_BF16: return gemv_bf16(beta, alpha, mm, vv, y);
    case MT_I32: return gemv_i32(beta, alpha, mm, vv, y);
    case MT_I64: return gemv_i64(beta, alpha, mm, vv, y);
    case MT_U8: return gemv_u8(beta, alpha, mm, vv, y);
    case MT_I8: return gemv_i8(beta, alpha, mm, vv, y);
    case MT_I16: return gemv_i16(beta, alpha, mm, vv, y);
    default: return mt__error(MT_ERR_DTYPE, "gemv: dtype %s not supported", mt_dtype_name(out->dtype));
  }
}

/* ---- dot: a and b have the same shape (the entry point flattens otherwise) ---- */

/* Collapse a and b's dims jointly; returns the number of dims left (sizes/strides filled). */
static int coalesce2(const mt_tensor *a, const mt_tensor *b, int64_t *sz, int64_t *sa, int64_t *sb) {
  int nd = 0;
  for (int i = 0; i < a->ndim; i++) {
    if (a->sizes[i] == 1) continue;
    if (nd > 0 && sa[nd - 1] == a->strides[i] * a->sizes[i] && sb[nd - 1] == b->strides[i] * a->sizes[i]) {
      sz[nd - 1] *= a->sizes[i];
      sa[nd - 1] = a->strides[i], sb[nd - 1] = b->strides[i];
      continue;
    }
    sz[nd] = a->sizes[i], sa[nd] = a->strides[i], sb[nd] = b->strides[i];
    nd++;
  }
  if (nd == 0) sz[0] = 1, sa[0] = sb[0] = 1, nd = 1;
  return nd;
}

#define DOT_CASE(E, N, T, CT) \
  case E: *out = dot_##N(pa, pb, nd, sz, sa, sb); return MT_OK;
mt_status mt__cpu_dot(const mt_tensor *a, const mt_tensor *b, double *out) {
  mt__blas_init();
  int64_t sz[MT_MAX_DIMS], sa[MT_MAX_DIMS], sb[MT_MAX_DIMS];
  *out = 0;
  if (mt__numel(a) == 0) return MT_OK;
  int nd = coalesce2(a, b, sz, sa, sb);
  const void *pa = mt__data(a), *pb = mt__data(b);
  /* one run with positive strides: BLAS (f32 accumulates in double via dsdot) */
  if (nd == 1 && sz[0] <= INT_MAX && sa[0] >= 1 && sb[0] >= 1 && sa[0] <= INT_MAX && sb[0] <= INT_MAX) {
    if (a->dtype == MT_F32) {
      *out = cblas_dsdot((blasint)sz[0], pa, (blasint)sa[0], pb, (blasint)sb[0]);
      return MT_OK;
    }
    if (a->dtype == MT_F64) {
      *out = cblas_ddot((blasint)sz[0], pa, (blasint)sa[0], pb, (blasint)sb[0]);
      return MT_OK;
    }
  }
  switch (a->dtype) {
    MT_DTYPE_LIST(DOT_CASE)
    default: return mt__error(MT_ERR_DTYPE, "dot: dtype %s not supported", mt_dtype_name(a->dtype));
  }
}
