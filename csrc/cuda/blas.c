/* blas.c: matrix products on CUDA through cuBLAS: gemm (batched), gemv and dot.
 *
 * cuBLAS is column-major and moontorch row-major. A row-major matrix X (r x c, row stride ld)
 * is, read column-major, X^T with leading dimension ld; so C = A B is computed as
 * C^T = B^T A^T with B passed first. A column-major input (a transposed view) is passed as is
 * with the transpose flag. Inputs that are neither (non-unit inner strides) are copied to a
 * contiguous temporary first.
 *
 * f32 runs in full fp32 (no TF32, to match the CPU) unless TF32 is allowed
 * (mt_cuda_set_allow_tf32, settings.c), f64 in fp64, f16/bf16 on tensor cores with fp32
 * accumulation. One handle per device, bound to the device stream. */
#include <cublas_v2.h>
#include <pthread.h>
#include <string.h>
#include "cuda_common.h"

static cublasHandle_t handles[MT_CUDA_MAX_DEVICES];
static pthread_mutex_t handle_mu = PTHREAD_MUTEX_INITIALIZER;

static mt_status blas_error(cublasStatus_t s, const char *op) {
  (void)cudaGetLastError();
  return mt__error(MT_ERR_CUDA, "%s: cuBLAS error %s", op, cublasGetStatusString(s));
}

/* The device's handle, created on first use; makes the device current. */
static mt_status get_handle(int device, cublasHandle_t *out, const char *op) {
  cudaStream_t s;
  MT_TRY(mt__cuda_get_stream(device, &s, op));
  pthread_mutex_lock(&handle_mu);
  if (!handles[device]) {
    cublasHandle_t h;
    cublasStatus_t bs = cublasCreate(&h);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(h, s);
    if (bs != CUBLAS_STATUS_SUCCESS) {
      pthread_mutex_unlock(&handle_mu);
      return blas_error(bs, op);
    }
    handles[device] = h;
  }
  *out = handles[device];
  pthread_mutex_unlock(&handle_mu);
  return MT_OK;
}

static mt_status float_only(const char *op, const char *what, mt_dtype dtype) {
  if (dtype == MT_F32 || dtype == MT_F64 || dtype == MT_F16 || dtype == MT_BF16) return MT_OK;
  return mt__error(MT_ERR_DTYPE, "%s: integer %s are not supported on CUDA (got %s)", op, what, mt_dtype_name(dtype));
}

static cudaDataType_t cuda_type(mt_dtype dt) {
  switch (dt) {
    case MT_F64: return CUDA_R_64F;
    case MT_F16: return CUDA_R_16F;
    case MT_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

/* How a row-major r x c matrix with strides (sr, sc) is handed to cuBLAS as the transposed
 * operand: trans = 0 when rows are contiguous (passed as X^T, ld = sr), trans = 1 when columns
 * are (passed as X with the transpose flag, ld = sc). 0 when neither fits. */
static int mat_layout(int64_t r, int64_t c, int64_t sr, int64_t sc, int *trans, int64_t *ld) {
  int64_t rmin = r > 1 ? r : 1, cmin = c > 1 ? c : 1;
  if (sc == 1 || c == 1) {
    int64_t l = r == 1 ? cmin : sr;
    if (l >= cmin) {
      *trans = 0;
      *ld = l;
      return 1;
    }
  }
  if (sr == 1 || r == 1) {
    int64_t l = c == 1 ? rmin : sc;
    if (l >= rmin) {
      *trans = 1;
      *ld = l;
      return 1;
    }
  }
  return 0;
}

/* A contiguous copy of t on its device (same dtype), for layouts cuBLAS cannot take. */
static mt_status contiguous_copy(mt_tensor **out, const mt_tensor *t) {
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt__cuda_convert(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* out[i] = beta*out[i] + alpha*a[i]@b[i] over 3-d tensors (batch, rows, cols) */
static mt_status gemm3(const char *op, mt_tensor *out, double beta, double alpha, const mt_tensor *a,
                       const mt_tensor *b) {
  MT_TRY(float_only(op, "matrices", a->dtype));
  int dev = out->device;
  int64_t batch = out->sizes[0], n = out->sizes[1], m = out->sizes[2], k = a->sizes[2];
  if (batch == 0 || n == 0 || m == 0) return MT_OK;
  if (k == 0) { /* empty inner product: out = beta*out (beta = 0 ignores out, even NaN) */
    if (beta == 0) return mt__cuda_fill(out, 0);
    return beta == 1 ? MT_OK : mt__cuda_unary(MT_MUL_SCALAR, out, out, beta, 0);
  }
  mt_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  const mt_tensor *A = a, *B = b;
  mt_tensor *Cm = out;
  int transA = 0, transB = 0, transC = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  mt_status st = MT_OK;
  if (!mat_layout(n, k, A->strides[1], A->strides[2], &transA, &lda)) {
    st = contiguous_copy(&ta, A);
    A = ta;
    if (st == MT_OK) mat_layout(n, k, A->strides[1], A->strides[2], &transA, &lda);
  }
  if (st == MT_OK && !mat_layout(k, m, B->strides[1], B->strides[2], &transB, &ldb)) {
    st = contiguous_copy(&tb, B);
    B = tb;
    if (st == MT_OK) mat_layout(k, m, B->strides[1], B->strides[2], &transB, &ldb);
  }
  /* the result must be row-major (it is written as C^T); else compute into a temporary */
  if (st == MT_OK && (!mat_layout(n, m, out->strides[1], out->strides[2], &transC, &ldc) || transC ||
                      (batch > 1 && out->strides[0] == 0))) {
    st = mt__tensor_empty(&tc, out->dtype, dev, 3, out->sizes);
    if (st == MT_OK && beta != 0) st = mt__cuda_convert(tc, out);
    Cm = tc;
    if (st == MT_OK) mat_layout(n, m, Cm->strides[1], Cm->strides[2], &transC, &ldc);
  }
  cublasHandle_t h = NULL;
  if (st == MT_OK) st = get_handle(dev, &h, op);
  if (st == MT_OK) {
    long long sA = batch > 1 ? A->strides[0] : 0, sB = batch > 1 ? B->strides[0] : 0;
    long long sC = batch > 1 ? Cm->strides[0] : 0;
    cudaDataType_t ty = cuda_type(out->dtype);
    cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N, opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t bs;
    if (out->dtype == MT_F64) {
      double al = alpha, be = beta;
      bs =
          cublasGemmStridedBatchedEx_64(h, opB, opA, m, n, k, &al, mt__data(B), ty, ldb, sB, mt__data(A), ty, lda, sA,
                                        &be, mt__data(Cm), ty, ldc, sC, batch, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
    } else {
      /* f32 with pure fp32 compute unless TF32 is allowed (mt_cuda_set_allow_tf32); f16/bf16
       * take float scalars and accumulate in fp32 (CUBLAS_COMPUTE_32F, never a 16-bit compute) */
      float al = (float)alpha, be = (float)beta;
      cublasComputeType_t ct =
          out->dtype == MT_F32 && mt__cuda_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      bs = cublasGemmStridedBatchedEx_64(h, opB, opA, m, n, k, &al, mt__data(B), ty, ldb, sB, mt__data(A), ty, lda, sA,
                                         &be, mt__data(Cm), ty, ldc, sC, batch, ct, CUBLAS_GEMM_DEFAULT);
    }
    if (bs != CUBLAS_STATUS_SUCCESS) st = blas_error(bs, op);
  }
  if (st == MT_OK && tc) st = mt__cuda_convert(out, tc);
  /* stream-ordered frees: the queued kernels finish before the memory is reused */
  mt_tensor_release(ta);
  mt_tensor_release(tb);
  mt_tensor_release(tc);
  return st;
}

mt_status mt__cuda_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b) {
  if (out->ndim != 3 || a->ndim != 3 || b->ndim != 3)
    return mt__error(MT_ERR_SHAPE, "mm: internal: gemm expects 3-d tensors, got %d, %d and %d dimensions", out->ndim,
                     a->ndim, b->ndim);
  return gemm3("mm", out, beta, alpha, a, b);
}

/* Views of a tensor as a 3-d (1, rows, cols) matrix, without copying. */
static mt_tensor *as_matrix(const mt_tensor *t, int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
  mt_tensor *v = mt__tensor_alias(t);
  if (!v) return NULL;
  v->ndim = 3;
  v->sizes[0] = 1, v->sizes[1] = rows, v->sizes[2] = cols;
  v->strides[0] = 0, v->strides[1] = srow, v->strides[2] = scol;
  return v;
}

/* out = beta*out + alpha*m@v, as a (n x k)@(k x 1) product: cuBLAS's gemm picks its gemv
 * kernels for a single column and this path also covers f16/bf16 */
mt_status mt__cuda_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v) {
  const char *op = "mv";
  MT_TRY(float_only(op, "matrices", m->dtype));
  if (out->ndim != 1 || m->ndim != 2 || v->ndim != 1)
    return mt__error(MT_ERR_SHAPE, "%s: internal: gemv expects 1-d, 2-d and 1-d tensors", op);
  int64_t n = m->sizes[0], k = m->sizes[1];
  mt_tensor *o3 = as_matrix(out, n, 1, out->strides[0], 1);
  mt_tensor *m3 = as_matrix(m, n, k, m->strides[0], m->strides[1]);
  mt_tensor *v3 = as_matrix(v, k, 1, v->strides[0], 1);
  mt_status st =
      (o3 && m3 && v3) ? gemm3(op, o3, beta, alpha, m3, v3) : mt__error(MT_ERR_MEMORY, "%s: out of host memory", op);
  mt_tensor_release(o3);
  mt_tensor_release(m3);
  mt_tensor_release(v3);
  return st;
}

mt_status mt__cuda_dot(const mt_tensor *a, const mt_tensor *b, double *out) {
  const char *op = "dot";
  MT_TRY(float_only(op, "vectors", a->dtype));
  int64_t n = mt__numel(a);
  *out = 0;
  if (n == 0) return MT_OK;
  int dev = a->device;
  mt_tensor *ta = NULL, *tb = NULL;
  const mt_tensor *A = a, *B = b;
  mt_status st = MT_OK;
  /* cuBLAS needs positive increments; 0 (expanded) or other layouts go through a copy */
  int64_t ia = a->ndim ? a->strides[a->ndim - 1] : 1, ib = b->ndim ? b->strides[b->ndim - 1] : 1;
  if (a->ndim != 1 || (n > 1 && ia < 1)) {
    st = contiguous_copy(&ta, a);
    A = ta, ia = 1;
  }
  if (st == MT_OK && (b->ndim != 1 || (n > 1 && ib < 1))) {
    st = contiguous_copy(&tb, b);
    B = tb, ib = 1;
  }
  if (n == 1) ia = ib = 1;
  cublasHandle_t h = NULL;
  if (st == MT_OK) st = get_handle(dev, &h, op);
  if (st == MT_OK) {
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    /* host pointer mode (the default): cuBLAS returns once the result is on the host */
    if (a->dtype == MT_F32) {
      float r = 0;
      bs = cublasSdot_v2_64(h, n, (const float *)mt__data(A), ia, (const float *)mt__data(B), ib, &r);
      *out = r;
    } else if (a->dtype == MT_F64) {
      double r = 0;
      bs = cublasDdot_v2_64(h, n, (const double *)mt__data(A), ia, (const double *)mt__data(B), ib, &r);
      *out = r;
    } else {
      /* f16/bf16: a (1 x n)@(n x 1) product accumulated and stored in fp32, more accurate than
       * cublasDotEx, whose result would be rounded to 16 bits */
      mt_tensor *r = NULL;
      int64_t one = 1;
      st = mt__tensor_empty(&r, MT_F32, dev, 1, &one);
      if (st == MT_OK) {
        float al = 1, be = 0, hr = 0;
        cudaDataType_t ty = cuda_type(a->dtype);
        bs = cublasGemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_T, 1, 1, n, &al, mt__data(A), ty, ia, mt__data(B), ty, ib, &be,
                             mt__data(r), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bs == CUBLAS_STATUS_SUCCESS) {
          cudaStream_t s;
          st = mt__cuda_get_stream(dev, &s, op);
          if (st == MT_OK) {
            cudaError_t e = cudaMemcpyAsync(&hr, mt__data(r), sizeof hr, cudaMemcpyDeviceToHost, s);
            if (e == cudaSuccess) e = cudaStreamSynchronize(s);
            if (e != cudaSuccess) st = mt__cuda_error(e, op, __FILE__, __LINE__);
          }
          *out = hr;
        }
        mt_tensor_release(r);
      }
    }
    if (st == MT_OK && bs != CUBLAS_STATUS_SUCCESS) st = blas_error(bs, op);
  }
  mt_tensor_release(ta);
  mt_tensor_release(tb);
  return st;
}
