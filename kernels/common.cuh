/* common.cuh: what every kernel file shares: dtype load/store on the device, scalar conversion,
 * an N-d strided offset calculator with dimension collapsing, a generic grid-stride pointwise
 * launcher, dtype dispatch over MT_DTYPES and temporaries from the caching allocator.
 * Include this first in every kernel file. */
#ifndef MTK_COMMON_CUH
#define MTK_COMMON_CUH

/* The core headers are C11: tensor.h's refcounts are `atomic_int` from <stdatomic.h>, which C++
 * before C++23 does not provide. std::atomic<int> has the same size and alignment on every
 * platform CUDA supports, so the struct layout seen here matches the C side. The core headers
 * also lack extern "C" guards, hence the block below. */
#include <atomic>
using std::atomic_int; /* tensor.h leaves <stdatomic.h> to C */
extern "C" {
#include "../csrc/core/backend.h"
#include "../csrc/core/error.h"
}
#include "kernels.h"
#include "dim_order.cuh"
#include "../csrc/core/philox.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#define MTK_HD __host__ __device__ __forceinline__
#define MTK_D __device__ __forceinline__

static_assert(sizeof(std::atomic<int>) == sizeof(int), "atomic_int layout must match the C core");

/* ---- dtypes ---- */

/* bool shares uint8 storage but stores (v != 0): a distinct type keeps the two apart. */
struct mtk_bool {
  uint8_t v;
};

/* Compute type per storage type: f16/bf16 compute in float, integers in int64 (as on the CPU). */
template <class T> struct mtk_ct;
template <> struct mtk_ct<float> { typedef float type; };
template <> struct mtk_ct<double> { typedef double type; };
template <> struct mtk_ct<__half> { typedef float type; };
template <> struct mtk_ct<__nv_bfloat16> { typedef float type; };
template <> struct mtk_ct<int32_t> { typedef int64_t type; };
template <> struct mtk_ct<int64_t> { typedef int64_t type; };
template <> struct mtk_ct<uint8_t> { typedef int64_t type; };
template <> struct mtk_ct<mtk_bool> { typedef int64_t type; };
template <> struct mtk_ct<int8_t> { typedef int64_t type; };
template <> struct mtk_ct<int16_t> { typedef int64_t type; };

template <class T> struct mtk_is_float { static constexpr bool value = false; };
template <> struct mtk_is_float<float> { static constexpr bool value = true; };
template <> struct mtk_is_float<double> { static constexpr bool value = true; };
template <> struct mtk_is_float<__half> { static constexpr bool value = true; };
template <> struct mtk_is_float<__nv_bfloat16> { static constexpr bool value = true; };

MTK_D float mtk_ld(const float *p) { return *p; }
MTK_D double mtk_ld(const double *p) { return *p; }
MTK_D float mtk_ld(const __half *p) { return __half2float(*p); }
MTK_D float mtk_ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
MTK_D int64_t mtk_ld(const int32_t *p) { return *p; }
MTK_D int64_t mtk_ld(const int64_t *p) { return *p; }
MTK_D int64_t mtk_ld(const uint8_t *p) { return *p; }
MTK_D int64_t mtk_ld(const mtk_bool *p) { return p->v != 0; }
MTK_D int64_t mtk_ld(const int8_t *p) { return *p; }
MTK_D int64_t mtk_ld(const int16_t *p) { return *p; }

/* Stores take the compute type (or double, for values computed in double such as arange and
 * random draws: converted through the compute type exactly as the CPU's mt_st_* macros do). */
MTK_D void mtk_st(float *p, float v) { *p = v; }
MTK_D void mtk_st(float *p, double v) { *p = (float)v; }
MTK_D void mtk_st(double *p, double v) { *p = v; }
MTK_D void mtk_st(__half *p, float v) { *p = __float2half_rn(v); }
MTK_D void mtk_st(__half *p, double v) { *p = __float2half_rn((float)v); }
MTK_D void mtk_st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
MTK_D void mtk_st(__nv_bfloat16 *p, double v) { *p = __float2bfloat16_rn((float)v); }
MTK_D void mtk_st(int32_t *p, int64_t v) { *p = (int32_t)v; }
MTK_D void mtk_st(int64_t *p, int64_t v) { *p = v; }
MTK_D void mtk_st(uint8_t *p, int64_t v) { *p = (uint8_t)v; }
MTK_D void mtk_st(mtk_bool *p, int64_t v) { p->v = (uint8_t)(v != 0); }
MTK_D void mtk_st(int8_t *p, int64_t v) { *p = (int8_t)v; }
MTK_D void mtk_st(int16_t *p, int64_t v) { *p = (int16_t)v; }

/* double -> compute type; integers saturate and NaN becomes 0 (mt_double_to_i64's rule). */
template <class CT> MTK_HD CT mtk_from_double(double v) { return (CT)v; }
template <> MTK_HD int64_t mtk_from_double<int64_t>(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

template <class CT> MTK_HD bool mtk_isnan(CT v) { return v != v; }
template <> MTK_HD bool mtk_isnan<int64_t>(int64_t) { return false; }

/* ---- dispatch: one switch per call, outside every loop ---- */

template <class T> struct mtk_tag { typedef T type; };

/* MT_DTYPES (moontorch.h) with CUDA's storage types, picked by each dtype's short name:
 * MTK_DTYPE_LIST(X) calls X(ENUM, T). A dtype added to the list without a type here fails to
 * compile. */
#define MTK_T_f32 float
#define MTK_T_f64 double
#define MTK_T_f16 __half
#define MTK_T_bf16 __nv_bfloat16
#define MTK_T_i32 int32_t
#define MTK_T_i64 int64_t
#define MTK_T_u8 uint8_t
#define MTK_T_b8 mtk_bool
#define MTK_T_i8 int8_t
#define MTK_T_i16 int16_t
#define MTK__DT_ROW(E, N, T, CT, NAME, TORCH, ST, FL, X, ...) X(E, MTK_T_##N)
#define MTK_DTYPE_LIST(X) MT_DTYPES(MTK__DT_ROW, X, ~)

/* mtk_dispatch(dtype, op, [&](auto tag) { using T = typename decltype(tag)::type; ... }) */
#define MTK_DISPATCH_CASE(E, T) \
  case E: return f(mtk_tag<T>());
template <class F> static mt_status mtk_dispatch(int dtype, const char *op, F &&f) {
  switch (dtype) {
    MTK_DTYPE_LIST(MTK_DISPATCH_CASE)
    default: return mt__error(MT_ERR_DTYPE, "%s: dtype %s is not supported on CUDA", op, mt_dtype_name(dtype));
  }
}
/* index tensors: int64 or int32 */
template <class F> static mt_status mtk_dispatch_index(int dtype, const char *op, F &&f) {
  switch (dtype) {
    case MT_I64: return f(mtk_tag<int64_t>());
    case MT_I32: return f(mtk_tag<int32_t>());
    default:
      return mt__error(MT_ERR_DTYPE, "%s: index tensor has dtype %s, expected int64 or int32", op,
                       mt_dtype_name(dtype));
  }
}

template <class T> static inline T *mtk_ptr(const mt_tensor *t) { return (T *)mt__data(t); }

/* ---- N-d strided offsets ---- */

/* Offsets (in elements) of N operands for a row-major linear index over a shared shape. Sizes and
 * strides travel by value as kernel parameters. `small` selects 32-bit index arithmetic (integer
 * division is the cost here) when every linear index fits. */
template <int N> struct mtk_offsets {
  int ndim;
  int small;
  int64_t sizes[MT_MAX_DIMS];
  int64_t strides[N][MT_MAX_DIMS];

  MTK_D void get(int64_t i, int64_t *off) const {
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    if (small) {
      uint32_t r = (uint32_t)i;
      for (int d = ndim - 1; d > 0; d--) {
        uint32_t s = (uint32_t)sizes[d], q = r / s, c = r - q * s;
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += (int64_t)c * strides[k][d];
        r = q;
      }
      if (ndim > 0) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += (int64_t)r * strides[k][0];
      }
    } else {
      int64_t r = i;
      for (int d = ndim - 1; d > 0; d--) {
        int64_t q = r / sizes[d], c = r - q * sizes[d];
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += c * strides[k][d];
        r = q;
      }
      if (ndim > 0) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += r * strides[k][0];
      }
    }
  }
};

/* Build offsets for a shape with N stride vectors, dropping size-1 dims and merging neighbours
 * that are contiguous with each other in every operand (a contiguous tensor becomes 1-d).
 * Returns true when every operand is plainly contiguous (offset == linear index). */
template <int N>
static bool mtk_make_offsets(mtk_offsets<N> *o, int ndim, const int64_t *sizes, const int64_t *const *strides) {
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; merge && k < N; k++) merge = o->strides[k][nd - 1] == strides[k][d] * sizes[d];
    if (merge) {
      o->sizes[nd - 1] *= sizes[d];
      for (int k = 0; k < N; k++) o->strides[k][nd - 1] = strides[k][d];
    } else {
      o->sizes[nd] = sizes[d];
      for (int k = 0; k < N; k++) o->strides[k][nd] = strides[k][d];
      nd++;
    }
  }
  o->ndim = nd;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  o->small = n <= (int64_t)UINT32_MAX;
  bool contig = nd <= 1;
  for (int k = 0; contig && nd == 1 && k < N; k++) contig = o->strides[k][0] == 1;
  return contig;
}

/* ---- launching ---- */

#define MTK_THREADS 256
/* Grid-stride loops cover the rest; this many blocks fill any current GPU several times over. */
#define MTK_MAX_BLOCKS 65536

static inline unsigned mtk_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return (unsigned)(b < 1 ? 1 : b > MTK_MAX_BLOCKS ? MTK_MAX_BLOCKS : b);
}

/* f(i, off): i the row-major linear index, off[k] operand k's element offset. */
template <int N, bool CONTIG, class F> __global__ void __launch_bounds__(MTK_THREADS)
    mtk_pointwise_kernel(F f, mtk_offsets<N> c, int64_t n) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[N];
    if (CONTIG) {
#pragma unroll
      for (int k = 0; k < N; k++) off[k] = i;
    } else {
      c.get(i, off);
    }
    f(i, off);
  }
}

/* Run f over a shape whose N operands have the given strides, on the device's stream. */
template <int N, class F> static mt_status mtk_pointwise(int device, const char *op, int ndim, const int64_t *sizes,
                                                         const int64_t *const *strides, F f) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_offsets<N> c;
  bool contig = mtk_make_offsets<N>(&c, ndim, sizes, strides);
  if (contig) mtk_pointwise_kernel<N, true, F><<<mtk_blocks(n, MTK_THREADS), MTK_THREADS, 0, s>>>(f, c, n);
  else mtk_pointwise_kernel<N, false, F><<<mtk_blocks(n, MTK_THREADS), MTK_THREADS, 0, s>>>(f, c, n);
  MT_CUDA_LAUNCH_CHECK(op);
  return MT_OK;
}

/* mtk_pointwise for maps whose result does not depend on the visiting order (f ignores i):
 * the dims are visited in operand 0's memory order (dim_order.cuh), so channels-last and other
 * dense permuted layouts run as one contiguous loop. */
template <int N, class F> static mt_status mtk_pointwise_any_order(int device, const char *op, int ndim,
                                                                   const int64_t *sizes, const int64_t *const *strides,
                                                                   F f) {
  int perm[MT_MAX_DIMS];
  mtk_dim_order(ndim, N, strides, perm);
  int64_t psizes[MT_MAX_DIMS], pst[N][MT_MAX_DIMS];
  const int64_t *pstp[N];
  for (int d = 0; d < ndim; d++) {
    psizes[d] = sizes[perm[d]];
    for (int k = 0; k < N; k++) pst[k][d] = strides[k][perm[d]];
  }
  for (int k = 0; k < N; k++) pstp[k] = pst[k];
  return mtk_pointwise<N>(device, op, ndim, psizes, pstp, f);
}

/* ---- temporaries from the caching allocator (stream-ordered release) ---- */

struct mtk_temp {
  mt_tensor *t = nullptr;
  mtk_temp() = default;
  mtk_temp(const mtk_temp &) = delete;
  mtk_temp &operator=(const mtk_temp &) = delete;
  ~mtk_temp() { mt_tensor_release(t); }
  mt_status alloc(int device, size_t nbytes) {
    int64_t n = (int64_t)nbytes;
    return mt__tensor_empty(&t, MT_U8, device, 1, &n);
  }
  /* a contiguous tensor of this dtype and shape */
  mt_status alloc_tensor(mt_dtype dtype, int device, int ndim, const int64_t *sizes) {
    return mt__tensor_empty(&t, dtype, device, ndim, sizes);
  }
  template <class T> T *as() const { return (T *)mt__data(t); }
};

/* ---- shared host helpers (defined in pointwise.cu) ---- */

/* dst = src for tensors of the same shape and dtype on one device, any strides. */
mt_status mtk_copy_same(mt_tensor *dst, const mt_tensor *src, const char *op);

#endif
