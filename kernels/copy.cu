// copy.cu: the strided copy kernel behind every device-side copy: any dtype to any
// dtype, any strides (including 0 from expand), one launch on the device's stream.
//
// Conversions follow the CPU backend (core/dtype.h): values pass through a wide type (float
// for f32/f16/bf16, double for f64, int64 for integers); floats become integers by truncation
// toward zero, bool is (v != 0), f16/bf16 round to nearest even from float. Same-dtype copies
// move raw bits, so NaN payloads and -0 survive.
// The core headers are C11: tensor.h's refcounts are atomic_int from <stdatomic.h>, which C++
// before C++23 lacks; std::atomic<int> has the same size and alignment, so the layout matches.
#include <atomic>
using std::atomic_int; // tensor.h leaves <stdatomic.h> to C
extern "C" {
#include "../csrc/core/backend.h"
#include "../csrc/core/error.h"
}
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include "kernels.h"
#include "dim_order.cuh"

static_assert(sizeof(std::atomic<int>) == sizeof(int), "atomic_int layout must match the C core");

namespace {

struct h16 {
  uint16_t x;
}; // IEEE binary16 bits
struct b16 {
  uint16_t x;
}; // bfloat16 bits
struct boolean {
  uint8_t x;
};

__device__ __forceinline__ float ld(const float *p) { return *p; }
__device__ __forceinline__ double ld(const double *p) { return *p; }
__device__ __forceinline__ float ld(const h16 *p) { return __half2float(__ushort_as_half(p->x)); }
__device__ __forceinline__ float ld(const b16 *p) { return __bfloat162float(__ushort_as_bfloat16(p->x)); }
__device__ __forceinline__ int64_t ld(const int32_t *p) { return *p; }
__device__ __forceinline__ int64_t ld(const int64_t *p) { return *p; }
__device__ __forceinline__ int64_t ld(const uint8_t *p) { return *p; }
__device__ __forceinline__ int64_t ld(const boolean *p) { return p->x != 0; }
__device__ __forceinline__ int64_t ld(const int8_t *p) { return *p; }
__device__ __forceinline__ int64_t ld(const int16_t *p) { return *p; }

template <typename V> __device__ __forceinline__ void st(float *p, V v) { *p = (float)v; }
template <typename V> __device__ __forceinline__ void st(double *p, V v) { *p = (double)v; }
template <typename V> __device__ __forceinline__ void st(h16 *p, V v) {
  p->x = __half_as_ushort(__float2half_rn((float)v)); // via float, as the CPU does
}
template <typename V> __device__ __forceinline__ void st(b16 *p, V v) {
  p->x = __bfloat16_as_ushort(__float2bfloat16_rn((float)v));
}
// Through int64 so that e.g. -1.5 -> uint8 wraps to 255 as on the CPU, instead of saturating.
template <typename V> __device__ __forceinline__ void st(int32_t *p, V v) { *p = (int32_t)(int64_t)v; }
template <typename V> __device__ __forceinline__ void st(int64_t *p, V v) { *p = (int64_t)v; }
template <typename V> __device__ __forceinline__ void st(uint8_t *p, V v) { *p = (uint8_t)(int64_t)v; }
template <typename V> __device__ __forceinline__ void st(boolean *p, V v) { p->x = v != 0; }
template <typename V> __device__ __forceinline__ void st(int8_t *p, V v) { *p = (int8_t)(int64_t)v; }
template <typename V> __device__ __forceinline__ void st(int16_t *p, V v) { *p = (int16_t)(int64_t)v; }

template <typename D, typename S> struct Convert {
  __device__ __forceinline__ static void apply(D *d, const S *s) { st(d, ld(s)); }
};
template <typename T> struct Raw {
  __device__ __forceinline__ static void apply(T *d, const T *s) { *d = *s; }
};

struct Layout {
  int ndim;
  int64_t sizes[MT_MAX_DIMS];
  int64_t dst[MT_MAX_DIMS];
  int64_t src[MT_MAX_DIMS];
};

template <typename D, typename S, typename Op>
__global__ void copy_contig(D *__restrict__ dst, const S *__restrict__ src, int64_t n) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) Op::apply(dst + i, src + i);
}

// I: the index type for offsets (int32 when everything fits: 64-bit division is slow on GPUs)
template <typename D, typename S, typename Op, typename I>
__global__ void copy_strided(D *dst, const S *src, Layout L, int64_t n) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    I rem = (I)i, od = 0, os = 0;
    for (int d = L.ndim - 1; d > 0; d--) {
      I sz = (I)L.sizes[d];
      I q = rem / sz, idx = rem - q * sz;
      rem = q;
      od += idx * (I)L.dst[d];
      os += idx * (I)L.src[d];
    }
    od += rem * (I)L.dst[0];
    os += rem * (I)L.src[0];
    Op::apply(dst + od, src + os);
  }
}

struct Launch {
  void *dst;
  const void *src;
  Layout L;
  int64_t n;
  bool contig, fits32;
  cudaStream_t stream;
};

template <typename D, typename S, typename Op> void launch(const Launch &a) {
  const int threads = 256;
  int64_t blocks = (a.n + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535; // grid-stride loops cover the rest
  D *d = (D *)a.dst;
  const S *s = (const S *)a.src;
  if (a.contig) copy_contig<D, S, Op><<<(unsigned)blocks, threads, 0, a.stream>>>(d, s, a.n);
  else if (a.fits32) copy_strided<D, S, Op, int32_t><<<(unsigned)blocks, threads, 0, a.stream>>>(d, s, a.L, a.n);
  else copy_strided<D, S, Op, int64_t><<<(unsigned)blocks, threads, 0, a.stream>>>(d, s, a.L, a.n);
}

// MT_DTYPES (moontorch.h) with this file's storage types, picked by each dtype's short name
#define CK_T_f32 float
#define CK_T_f64 double
#define CK_T_f16 h16
#define CK_T_bf16 b16
#define CK_T_i32 int32_t
#define CK_T_i64 int64_t
#define CK_T_u8 uint8_t
#define CK_T_b8 boolean
#define CK_T_i8 int8_t
#define CK_T_i16 int16_t

template <typename D> bool launch_from(int sdt, const Launch &a) {
#define CK_FROM(E, N, T, CT, NAME, TORCH, ST, FL, ...) \
  case E: launch<D, CK_T_##N, Convert<D, CK_T_##N>>(a); return true;
  switch (sdt) {
    MT_DTYPES(CK_FROM, ~)
    default: return false;
  }
#undef CK_FROM
}

bool launch_convert(int ddt, int sdt, const Launch &a) {
#define CK_TO(E, N, T, CT, NAME, TORCH, ST, FL, ...) \
  case E: return launch_from<CK_T_##N>(sdt, a);
  switch (ddt) {
    MT_DTYPES(CK_TO, ~)
    default: return false;
  }
#undef CK_TO
}

bool launch_raw(size_t es, const Launch &a) {
  switch (es) {
    case 1: launch<uint8_t, uint8_t, Raw<uint8_t>>(a); return true;
    case 2: launch<uint16_t, uint16_t, Raw<uint16_t>>(a); return true;
    case 4: launch<uint32_t, uint32_t, Raw<uint32_t>>(a); return true;
    case 8: launch<uint64_t, uint64_t, Raw<uint64_t>>(a); return true;
    default: return false;
  }
}

// Largest |offset| a layout reaches, for choosing 32-bit indexing.
int64_t extent(const Layout &L, const int64_t *str) {
  int64_t e = 0;
  for (int d = 0; d < L.ndim; d++) e += (L.sizes[d] - 1) * (str[d] < 0 ? -str[d] : str[d]);
  return e;
}

} // namespace

extern "C" mt_status mt__cuda_convert(mt_tensor *dst, const mt_tensor *src) {
  const char *op = "copy";
  if (dst->device != src->device || dst->device < 0)
    return mt__error(MT_ERR_DEVICE, "%s: internal: device copy between cuda:%d and cuda:%d", op, dst->device,
                     src->device);
  if (dst->ndim != src->ndim) return mt__error(MT_ERR_SHAPE, "%s: internal: dimension counts differ", op);
  Launch a;
  a.n = 1;
  // Visit the dims in the destination's memory order (dim_order.cuh: a channels-last copy is
  // then one contiguous run), drop size-1 dims and merge dims that are contiguous with their
  // inner neighbour in both tensors, so common cases take the simplest kernel.
  const int64_t *order_strides[2] = {dst->strides, src->strides};
  int perm[MT_MAX_DIMS];
  mtk_dim_order(dst->ndim, 2, order_strides, perm);
  a.L.ndim = 0;
  for (int i = 0; i < dst->ndim; i++) {
    int d = perm[i];
    if (dst->sizes[d] != src->sizes[d]) return mt__error(MT_ERR_SHAPE, "%s: internal: sizes differ", op);
    a.n *= dst->sizes[d];
    if (dst->sizes[d] == 1) continue;
    int k = a.L.ndim;
    if (k > 0 && a.L.dst[k - 1] == dst->strides[d] * dst->sizes[d] &&
        a.L.src[k - 1] == src->strides[d] * src->sizes[d]) {
      a.L.sizes[k - 1] *= dst->sizes[d];
      a.L.dst[k - 1] = dst->strides[d];
      a.L.src[k - 1] = src->strides[d];
      continue;
    }
    a.L.sizes[k] = dst->sizes[d];
    a.L.dst[k] = dst->strides[d];
    a.L.src[k] = src->strides[d];
    a.L.ndim++;
  }
  if (a.n == 0) return MT_OK;
  a.contig = a.L.ndim == 0 || (a.L.ndim == 1 && a.L.dst[0] == 1 && a.L.src[0] == 1);
  a.fits32 = a.n <= INT32_MAX && extent(a.L, a.L.dst) <= INT32_MAX && extent(a.L, a.L.src) <= INT32_MAX;
  if (a.L.ndim == 0) a.L.ndim = 1, a.L.sizes[0] = 1, a.L.dst[0] = a.L.src[0] = 1;
  a.dst = mt__data(dst);
  a.src = mt__data(src);
  MT_TRY(mt__cuda_get_stream(dst->device, &a.stream, op));
  bool ok =
      dst->dtype == src->dtype ? launch_raw(mt__dtype_size(dst->dtype), a) : launch_convert(dst->dtype, src->dtype, a);
  if (!ok)
    return mt__error(MT_ERR_DTYPE, "%s: unsupported dtypes %s -> %s", op, mt_dtype_name(src->dtype),
                     mt_dtype_name(dst->dtype));
  MT_CUDA_LAUNCH_CHECK(op);
  return MT_OK;
}
