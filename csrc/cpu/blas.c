/* blas.c: CPU matrix products (gemm, gemv, dot).
 *
 * f32/f64 go to OpenBLAS, single-threaded, split over OpenMP threads by gemm_par.c. Row-major or column-major operands
 * (one inner stride 1, the other at least the size) are passed as they are, with a transpose flag; only other layouts
 * are packed into a contiguous temp. f16/bf16 are widened to float temps around sgemm; integer dtypes use an i-k-j loop
 * accumulating in 64 bits. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "../core/half_bulk.h"
#include "../core/dtype.h"
#include "../core/error.h"

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

/* ---- element-wise helpers over one strided matrix, generic over dtypes ---- */

/* every dtype's zero is all-zero bits, so beta == 0 can clear without reading (NaN ignored) */
static void mat_zero(const mat *m, size_t es) {
  for (int64_t i = 0; i < m->r; i++) {
    char *row = m->p + i * m->s0 * (int64_t)es;
    if (m->s1 == 1) memset(row, 0, (size_t)m->c * es);
    else
      for (int64_t j = 0; j < m->c; j++) memset(row + j * m->s1 * (int64_t)es, 0, es);
  }
}

#define SCALE_FN(E, N, T, CT)                                                     \
  static void mat_scale_##N(const mat *m, double beta) {                          \
    CT b = (CT)(mt_dtype_is_floating(E) ? beta : (double)mt_double_to_i64(beta)); \
    for (int64_t i = 0; i < m->r; i++)                                            \
      for (int64_t j = 0; j < m->c; j++) {                                        \
        T *q = (T *)m->p + i * m->s0 + j * m->s1;                                 \
        mt_st_##N(q, b *mt_ld_##N(q));                                            \
      }                                                                           \
  }
MT_DTYPE_LIST(SCALE_FN)
#undef SCALE_FN

static void mat_scale(int dtype, const mat *m, double beta) {
  switch (dtype) {
#define SCALE_CASE(E, N, T, CT) \
  case E: mat_scale_##N(m, beta); break;
    MT_DTYPE_LIST(SCALE_CASE)
#undef SCALE_CASE
    default: break;
  }
}

/* pack a strided matrix into a contiguous float/double buffer (widening f16/bf16) and back;
 * serial on purpose: OpenMP workers still spinning afterwards would slow the BLAS threads */
/* contiguous rows of float16 convert eight at a time (F16C, half_bulk.c); the others answer 0
 * and take the element loop */
static int row_widen_f16(float *d, const uint16_t *s, int64_t n) {
  mt__half_to_float_n(d, s, (size_t)n);
  return 1;
}
static int row_narrow_f16(uint16_t *d, const float *s, int64_t n) {
  mt__float_to_half_n(d, s, (size_t)n);
  return 1;
}
#define NO_ROW_FN(N, T, D)                                 \
  static int row_widen_##N(D *d, const T *s, int64_t n) {  \
    (void)d, (void)s, (void)n;                             \
    return 0;                                              \
  }                                                        \
  static int row_narrow_##N(T *d, const D *s, int64_t n) { \
    (void)d, (void)s, (void)n;                             \
    return 0;                                              \
  }
NO_ROW_FN(f32, float, float)
NO_ROW_FN(f64, double, double)
NO_ROW_FN(bf16, uint16_t, float)
#undef NO_ROW_FN
#define PACK_FN(N, T, D)                                                                                         \
  static void pack_##N(const mat *m, D *dst) {                                                                   \
    for (int64_t i = 0; i < m->r; i++) {                                                                         \
      if (m->s1 == 1 && row_widen_##N(dst + i * m->c, (const T *)m->p + i * m->s0, m->c)) continue;              \
      for (int64_t j = 0; j < m->c; j++) dst[i * m->c + j] = mt_ld_##N((const T *)m->p + i * m->s0 + j * m->s1); \
    }                                                                                                            \
  }                                                                                                              \
  static void unpack_##N(const mat *m, const D *src) {                                                           \
    for (int64_t i = 0; i < m->r; i++) {                                                                         \
      if (m->s1 == 1 && row_narrow_##N((T *)m->p + i * m->s0, src + i * m->c, m->c)) continue;                   \
      for (int64_t j = 0; j < m->c; j++) mt_st_##N((T *)m->p + i * m->s0 + j * m->s1, src[i * m->c + j]);        \
    }                                                                                                            \
  }
#define PACK_DT(E, N, T, CT) PACK_FN(N, T, CT)
MT_FLOAT_DTYPE_LIST(PACK_DT)
#undef PACK_DT
#undef PACK_FN

/* ---- f32 / f64 through BLAS ---- */

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

/* x as BLAS reads it (*t, *ld): in place where blas_layout allows, else packed row-major into
 * scratch slot (then *packed is that copy, NULL otherwise); 0 when out of memory */
#define BLAS_OPERAND_FN(N, T)                                                                  \
  static int blas_operand_##N(mat *x, int *t, int64_t *ld, scratch *s, int slot, T **packed) { \
    *packed = NULL;                                                                            \
    if (blas_layout(x, t, ld)) return 1;                                                       \
    T *buf = scratch_get(s, slot, (size_t)(x->r * x->c) * sizeof(T));                          \
    if (!buf) return 0;                                                                        \
    pack_##N(x, buf);                                                                          \
    *x = (mat){(char *)buf, x->r, x->c, x->c, 1};                                              \
    *t = 0, *ld = x->c > 1 ? x->c : 1;                                                         \
    *packed = buf;                                                                             \
    return 1;                                                                                  \
  }
BLAS_OPERAND_FN(f32, float)
BLAS_OPERAND_FN(f64, double)
#undef BLAS_OPERAND_FN

#define GEMM_FN(N, T, BLAS)                                                                                      \
  static mt_status gemm_one_##N(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c, \
                                scratch *s) {                                                                    \
    int ta, tb, tc;                                                                                              \
    int64_t lda, ldb, ldc;                                                                                       \
    mat c_orig = c;                                                                                              \
    T *cbuf = NULL;                                                                                              \
    if (!blas_operand_##N(&c, &tc, &ldc, s, 2, &cbuf)) goto oom;                                                 \
    if (tc) { /* c is column-major: compute c^T = b^T a^T into its row-major view */                             \
      mat t = a;                                                                                                 \
      a = b, b = t;                                                                                              \
      mat_transpose(&a), mat_transpose(&b), mat_transpose(&c);                                                   \
      int64_t x = n;                                                                                             \
      n = m, m = x;                                                                                              \
    }                                                                                                            \
    T *packed; /* a and b need no unpacking */                                                                   \
    if (!blas_operand_##N(&a, &ta, &lda, s, 0, &packed)) goto oom;                                               \
    if (!blas_operand_##N(&b, &tb, &ldb, s, 1, &packed)) goto oom;                                               \
    BLAS(ta, tb, n, m, k, (T)alpha, (const T *)a.p, lda, (const T *)b.p, ldb, (T)beta, (T *)c.p, ldc, 0);        \
    if (cbuf) unpack_##N(&c_orig, cbuf);                                                                         \
    return MT_OK;                                                                                                \
  oom:                                                                                                           \
    return mt__error(MT_ERR_MEMORY, "gemm: out of host memory for a %lldx%lld temporary", (long long)n,          \
                     (long long)(k > m ? k : m));                                                                \
  }
GEMM_FN(f32, float, mt__sgemm)
GEMM_FN(f64, double, mt__dgemm)
#undef GEMM_FN

/* f16/bf16: widen all three operands to float, sgemm, narrow the result. */
#define HALF_GEMM_FN(N)                                                                                              \
  static mt_status gemm_one_##N(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c,     \
                                scratch *s) {                                                                        \
    float *fa = scratch_get(s, 0, (size_t)(n * k) * 4), *fb = scratch_get(s, 1, (size_t)(k * m) * 4);                \
    float *fc = scratch_get(s, 2, (size_t)(n * m) * 4);                                                              \
    if (!fa || !fb || !fc) return mt__error(MT_ERR_MEMORY, "gemm: out of host memory for float temporaries");        \
    pack_##N(&a, fa), pack_##N(&b, fb);                                                                              \
    pack_##N(&c, fc); /* already cleared when beta == 0 */                                                           \
    mt__sgemm(0, 0, n, m, k, (float)alpha, fa, k > 1 ? k : 1, fb, m > 1 ? m : 1, (float)beta, fc, m > 1 ? m : 1, 0); \
    unpack_##N(&c, fc);                                                                                              \
    return MT_OK;                                                                                                    \
  }
HALF_GEMM_FN(f16)
HALF_GEMM_FN(bf16)
#undef HALF_GEMM_FN

/* ---- integer dtypes: i-k-j loop, 64-bit wrapping accumulation (unsigned: no UB on overflow) ---- */

#define INT_GEMM_FN(E, N, T, CT)                                                                                 \
  static mt_status gemm_one_##N(int64_t n, int64_t m, int64_t k, double alpha, mat a, mat b, double beta, mat c, \
                                scratch *s) {                                                                    \
    (void)s;                                                                                                     \
    uint64_t al = (uint64_t)mt_double_to_i64(alpha), be = (uint64_t)mt_double_to_i64(beta);                      \
    int failed = 0;                                                                                              \
    _Pragma("omp parallel if(n * m * k > MT_PARALLEL_GRAIN && n > 1)") {                                         \
      uint64_t *acc = malloc((size_t)m * sizeof *acc);                                                           \
      if (!acc) { _Pragma("omp atomic write") failed = 1; }                                                      \
      _Pragma("omp for schedule(static)") for (int64_t i = 0; i < n; i++) {                                      \
        if (!acc) continue;                                                                                      \
        memset(acc, 0, (size_t)m * sizeof *acc);                                                                 \
        const T *arow = (const T *)a.p + i * a.s0;                                                               \
        for (int64_t p = 0; p < k; p++) {                                                                        \
          uint64_t av = (uint64_t)mt_ld_##N(arow + p * a.s1);                                                    \
          if (av == 0) continue;                                                                                 \
          const T *brow = (const T *)b.p + p * b.s0;                                                             \
          if (b.s1 == 1)                                                                                         \
            for (int64_t j = 0; j < m; j++) acc[j] += av * (uint64_t)mt_ld_##N(brow + j);                        \
          else                                                                                                   \
            for (int64_t j = 0; j < m; j++) acc[j] += av * (uint64_t)mt_ld_##N(brow + j * b.s1);                 \
        }                                                                                                        \
        T *crow = (T *)c.p + i * c.s0;                                                                           \
        for (int64_t j = 0; j < m; j++) {                                                                        \
          uint64_t prev = be ? be * (uint64_t)mt_ld_##N(crow + j * c.s1) : 0;                                    \
          mt_st_##N(crow + j * c.s1, (int64_t)(prev + al * acc[j]));                                             \
        }                                                                                                        \
      }                                                                                                          \
      free(acc);                                                                                                 \
    }                                                                                                            \
    return failed ? mt__error(MT_ERR_MEMORY, "gemm: out of host memory for an accumulator row") : MT_OK;         \
  }
INT_GEMM_FN(MT_I32, i32, int32_t, int64_t)
INT_GEMM_FN(MT_I64, i64, int64_t, int64_t)
INT_GEMM_FN(MT_U8, u8, uint8_t, int64_t)
INT_GEMM_FN(MT_I8, i8, int8_t, int64_t)
INT_GEMM_FN(MT_I16, i16, int16_t, int64_t)
#undef INT_GEMM_FN

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

#define GEMV_BLAS_FN(N, T, BLAS)                                                                                      \
  static mt_status gemv_##N(double beta, double alpha, mat mm, mat v, mat y) {                                        \
    int tr;                                                                                                           \
    int64_t ld, n = mm.r, k = mm.c;                                                                                   \
    T *mbuf = NULL, *vbuf = NULL, *ybuf = NULL;                                                                       \
    mt_status st = MT_OK;                                                                                             \
    if (!blas_layout(&mm, &tr, &ld)) {                                                                                \
      if (!(mbuf = malloc((size_t)(n * k) * sizeof(T)))) goto oom;                                                    \
      pack_##N(&mm, mbuf);                                                                                            \
      mm = (mat){(char *)mbuf, n, k, k, 1};                                                                           \
      tr = 0, ld = k > 1 ? k : 1;                                                                                     \
    }                                                                                                                 \
    int64_t incx = k == 1 ? 1 : v.s0, incy = n == 1 ? 1 : y.s0;                                                       \
    if (incx < 1 || incx > INT_MAX) {                                                                                 \
      if (!(vbuf = malloc((size_t)k * sizeof(T)))) goto oom;                                                          \
      pack_##N(&v, vbuf);                                                                                             \
      v.p = (char *)vbuf, incx = 1;                                                                                   \
    }                                                                                                                 \
    if (incy < 1 || incy > INT_MAX) {                                                                                 \
      if (!(ybuf = malloc((size_t)n * sizeof(T)))) goto oom;                                                          \
      pack_##N(&y, ybuf);                                                                                             \
    }                                                                                                                 \
    /* row-major: a stored transpose is a (k x n) matrix read with Trans; rows of the result are                      \
     * split over threads (memory-bound, so only for a large matrix) */                                               \
    T *yp = ybuf ? ybuf : (T *)y.p;                                                                                   \
    int64_t iy = ybuf ? 1 : incy;                                                                                     \
    int nth = n * k > 4 * MT_PARALLEL_GRAIN && n >= 64 ? omp_get_max_threads() : 1;                                   \
    _Pragma("omp parallel for num_threads(nth) schedule(static) if(nth > 1)") for (int t = 0; t < nth; t++) {         \
      int64_t i0 = n * t / nth, i1 = n * (t + 1) / nth;                                                               \
      const T *mp = (const T *)mm.p + (tr ? i0 : i0 * ld);                                                            \
      if (i1 > i0)                                                                                                    \
        BLAS(CblasRowMajor, tr ? CblasTrans : CblasNoTrans, (blasint)(tr ? k : i1 - i0), (blasint)(tr ? i1 - i0 : k), \
             (T)alpha, mp, (blasint)ld, (const T *)v.p, (blasint)incx, (T)beta, yp + i0 * iy, (blasint)iy);           \
    }                                                                                                                 \
    if (ybuf) unpack_##N(&y, ybuf);                                                                                   \
    goto done;                                                                                                        \
  oom:                                                                                                                \
    st = mt__error(MT_ERR_MEMORY, "gemv: out of host memory for a temporary");                                        \
  done:                                                                                                               \
    free(mbuf), free(vbuf), free(ybuf);                                                                               \
    return st;                                                                                                        \
  }
GEMV_BLAS_FN(f32, float, cblas_sgemv)
GEMV_BLAS_FN(f64, double, cblas_dgemv)
#undef GEMV_BLAS_FN

/* other dtypes: one dot product per row, accumulated in double (floats) or 64-bit ints */
#define GEMV_LOOP_FN(E, N, T, CT, ACC, CONV)                                                                     \
  static mt_status gemv_##N(double beta, double alpha, mat mm, mat v, mat y) {                                   \
    ACC al = CONV(alpha), be = CONV(beta);                                                                       \
    int64_t n = mm.r, k = mm.c;                                                                                  \
    _Pragma("omp parallel for schedule(static) if(n * k > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < n; i++) { \
      const T *row = (const T *)mm.p + i * mm.s0;                                                                \
      ACC acc = 0;                                                                                               \
      for (int64_t j = 0; j < k; j++)                                                                            \
        acc += (ACC)mt_ld_##N(row + j * mm.s1) * (ACC)mt_ld_##N((const T *)v.p + j * v.s0);                      \
      T *q = (T *)y.p + i * y.s0;                                                                                \
      ACC prev = be ? be * (ACC)mt_ld_##N(q) : 0;                                                                \
      mt_st_##N(q, (CT)(prev + al * acc));                                                                       \
    }                                                                                                            \
    return MT_OK;                                                                                                \
  }
#define TO_U64(x) ((uint64_t)mt_double_to_i64(x))
#define TO_DBL(x) ((double)(x))
GEMV_LOOP_FN(MT_F16, f16, uint16_t, float, double, TO_DBL)
GEMV_LOOP_FN(MT_BF16, bf16, uint16_t, float, double, TO_DBL)
GEMV_LOOP_FN(MT_I32, i32, int32_t, int64_t, uint64_t, TO_U64)
GEMV_LOOP_FN(MT_I64, i64, int64_t, int64_t, uint64_t, TO_U64)
GEMV_LOOP_FN(MT_U8, u8, uint8_t, int64_t, uint64_t, TO_U64)
GEMV_LOOP_FN(MT_I8, i8, int8_t, int64_t, uint64_t, TO_U64)
GEMV_LOOP_FN(MT_I16, i16, int16_t, int64_t, uint64_t, TO_U64)
#undef GEMV_LOOP_FN

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

#define DOT_FN(E, N, T, CT)                                                                                                \
  static double dot_##N(const T *a, const T *b, int nd, const int64_t *sz, const int64_t *sa, const int64_t *sb) {         \
    int64_t rows = 1, len = sz[nd - 1], xa = sa[nd - 1], xb = sb[nd - 1];                                                  \
    for (int i = 0; i < nd - 1; i++) rows *= sz[i];                                                                        \
    double total = 0;                                                                                                      \
    _Pragma("omp parallel for reduction(+ : total) schedule(static) if(rows * len > MT_PARALLEL_GRAIN && rows > 1)") for ( \
        int64_t r = 0; r < rows; r++) {                                                                                    \
      int64_t oa = 0, ob = 0, q = r;                                                                                       \
      for (int i = nd - 2; i >= 0; i--) {                                                                                  \
        int64_t c = q % sz[i];                                                                                             \
        q /= sz[i];                                                                                                        \
        oa += c * sa[i], ob += c * sb[i];                                                                                  \
      }                                                                                                                    \
      const T *pa = a + oa, *pb = b + ob;                                                                                  \
      if (E == MT_F32 || E == MT_F64 || E == MT_F16 || E == MT_BF16) {                                                     \
        double acc = 0;                                                                                                    \
        for (int64_t j = 0; j < len; j++) acc += (double)mt_ld_##N(pa + j * xa) * (double)mt_ld_##N(pb + j * xb);          \
        total += acc;                                                                                                      \
      } else {                                                                                                             \
        uint64_t acc = 0;                                                                                                  \
        for (int64_t j = 0; j < len; j++) acc += (uint64_t)mt_ld_##N(pa + j * xa) * (uint64_t)mt_ld_##N(pb + j * xb);      \
        total += (double)(int64_t)acc;                                                                                     \
      }                                                                                                                    \
    }                                                                                                                      \
    return total;                                                                                                          \
  }
MT_DTYPE_LIST(DOT_FN)
#undef DOT_FN

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
#define DOT_CASE(E, N, T, CT) \
  case E: *out = dot_##N(pa, pb, nd, sz, sa, sb); return MT_OK;
    MT_DTYPE_LIST(DOT_CASE)
#undef DOT_CASE
    default: return mt__error(MT_ERR_DTYPE, "dot: dtype %s not supported", mt_dtype_name(a->dtype));
  }
}
