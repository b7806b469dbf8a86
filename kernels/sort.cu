/* sort.cu: stable sort along a dimension, and topk.
 *
 * Values are mapped to unsigned keys whose unsigned order is the value order: floats flip their
 * bits by sign, NaN becomes the largest key (NaN sorts as the largest value, as on the CPU) and
 * -0 becomes +0 (they compare equal, so stability decides between them). A descending sort
 * complements the keys, which keeps it stable: ties stay in their original order either way.
 * The output values are read back from the input at the sorted positions, so they are the
 * input's exact bits.
 *
 * Slices of up to 4096 elements: one block per slice, bitonic sort of (key, position) pairs in
 * shared memory; comparing positions on equal keys makes the result the stable order. Longer
 * slices: CUB radix sort (stable) of (key, position) pairs, per slice when there are few slices,
 * segmented when there are many. */
#include "common.cuh"
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

/* ---- order-preserving keys ---- */

template <class T> struct mtk_key_type;
template <> struct mtk_key_type<float> { typedef uint32_t type; };
template <> struct mtk_key_type<double> { typedef uint64_t type; };
template <> struct mtk_key_type<__half> { typedef uint16_t type; };
template <> struct mtk_key_type<__nv_bfloat16> { typedef uint16_t type; };
template <> struct mtk_key_type<int32_t> { typedef uint32_t type; };
template <> struct mtk_key_type<int64_t> { typedef uint64_t type; };
template <> struct mtk_key_type<uint8_t> { typedef uint8_t type; };
template <> struct mtk_key_type<mtk_bool> { typedef uint8_t type; };
template <> struct mtk_key_type<int8_t> { typedef uint8_t type; };
template <> struct mtk_key_type<int16_t> { typedef uint16_t type; };

/* IEEE bits -> key: NaN is the largest, -0 equals +0 */
template <class K> MTK_D K mtk_float_key(K bits, K abs_inf) {
  const K sign = (K)((K)1 << (sizeof(K) * 8 - 1));
  K mag = (K)(bits & (K)~sign);
  if (mag > abs_inf) return (K) ~(K)0;
  if (mag == 0) return sign;
  return (bits & sign) ? (K)~bits : (K)(bits | sign);
}

template <class T> MTK_D typename mtk_key_type<T>::type mtk_sort_key(const T *p) {
  typedef typename mtk_key_type<T>::type K;
  K bits;
  if constexpr (std::is_same<T, mtk_bool>::value) {
    bits = (K)(p->v != 0);
  } else {
    memcpy(&bits, p, sizeof bits);
    if constexpr (std::is_same<T, float>::value) bits = mtk_float_key<K>(bits, 0x7f800000u);
    else if constexpr (std::is_same<T, double>::value) bits = mtk_float_key<K>(bits, 0x7ff0000000000000ull);
    else if constexpr (std::is_same<T, __half>::value) bits = mtk_float_key<K>(bits, (K)0x7c00);
    else if constexpr (std::is_same<T, __nv_bfloat16>::value) bits = mtk_float_key<K>(bits, (K)0x7f80);
    else if constexpr (std::is_same<T, int32_t>::value || std::is_same<T, int64_t>::value ||
                       std::is_same<T, int8_t>::value || std::is_same<T, int16_t>::value)
      bits = (K)(bits ^ ((K)1 << (sizeof(K) * 8 - 1)));
  }
  return bits;
}

/* ---- short slices: bitonic sort in shared memory ---- */

#define MTK_SORT_SMALL 4096

template <class T> __global__ void __launch_bounds__(1024)
    mtk_sort_small(const T *src, T *vals, int64_t *idx, mtk_offsets<3> oc, int64_t nseg, int len, int P, int64_t sst,
                   int64_t vst, int64_t ist, int desc, int64_t base) {
  typedef typename mtk_key_type<T>::type K;
  extern __shared__ uint4 smem_words[]; /* uint4: 16-byte alignment for any key type */
  unsigned char *smem_raw = (unsigned char *)smem_words;
  K *keys = (K *)smem_raw;
  int *pos = (int *)(smem_raw + (size_t)P * sizeof(K));
  for (int64_t seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
    int64_t off[3];
    oc.get(seg, off);
    const T *s = src + off[0];
    for (int j = threadIdx.x; j < P; j += blockDim.x) {
      if (j < len) {
        K k = mtk_sort_key(s + j * sst);
        keys[j] = desc ? (K)~k : k;
        pos[j] = j;
      } else { /* padding sorts after everything */
        keys[j] = (K) ~(K)0;
        pos[j] = INT_MAX;
      }
    }
    __syncthreads();
    for (int k = 2; k <= P; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < (P >> 1); t += blockDim.x) {
          int i = 2 * t - (t & (j - 1)), q = i + j; /* i has bit j clear; q is its partner */
          K ki = keys[i], kq = keys[q];
          int pi = pos[i], pq = pos[q];
          bool greater = ki > kq || (ki == kq && pi > pq);
          bool ascending = (i & k) == 0;
          if (greater == ascending) {
            keys[i] = kq;
            keys[q] = ki;
            pos[i] = pq;
            pos[q] = pi;
          }
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      int p = pos[j];
      vals[off[1] + j * vst] = s[p * sst];
      if (idx) idx[off[2] + j * ist] = p + base;
    }
    __syncthreads(); /* shared memory is refilled for the next slice */
  }
}

/* ---- long slices: CUB radix sort over a slice-major key buffer ---- */

template <class T> struct mtk_keys_f {
  typename mtk_key_type<T>::type *keys;
  int *pos;
  const T *src;
  int desc;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    typedef typename mtk_key_type<T>::type K;
    K k = mtk_sort_key(src + off[0]);
    keys[i] = desc ? (K)~k : k;
    pos[i] = (int)off[1];
  }
};

template <class T> struct mtk_unkey_f {
  T *vals;
  int64_t *idx;
  const T *src;
  const int *pos;
  int64_t sst, base;
  /* operands: src at (slice, j), vals, idx, coordinate j */
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    int64_t p = pos[i];
    vals[off[1]] = src[off[0] + (p - off[3]) * sst];
    if (idx) idx[off[2]] = p + base;
  }
};

__global__ void mtk_segment_offsets(int *offs, int n, int len) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) offs[i] = i * len;
}

/* few slices: one full-device radix sort each; many: one segmented sort per chunk of slices */
#define MTK_SORT_FEW_SLICES 16

template <class K> static mt_status mtk_radix_sort(int device, const K *kin, K *kout, const int *pin, int *pout,
                                                   int64_t nseg, int64_t len) {
  const char *op = "sort";
  cudaStream_t s = mt__cuda_stream(device);
  const int bits = (int)sizeof(K) * 8;
  size_t bytes = 0;
  if (nseg <= MTK_SORT_FEW_SLICES) {
    MT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, pin, pout, len, 0, bits, s), op);
    mtk_temp scratch;
    MT_TRY(scratch.alloc(device, bytes));
    for (int64_t g = 0; g < nseg; g++) {
      int64_t o = g * len;
      MT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(scratch.as<void>(), bytes, kin + o, kout + o, pin + o, pout + o, len,
                                                  0, bits, s),
                  op);
    }
    return MT_OK;
  }
  int64_t per = INT_MAX / len; /* slices per call: CUB's segmented sort counts items in int */
  if (per > nseg) per = nseg;
  mtk_temp offs, scratch;
  MT_TRY(offs.alloc(device, (size_t)(per + 1) * sizeof(int)));
  mtk_segment_offsets<<<mtk_blocks(per + 1, MTK_THREADS), MTK_THREADS, 0, s>>>(offs.as<int>(), (int)per, (int)len);
  MT_CUDA_LAUNCH_CHECK(op);
  const int *ob = offs.as<int>();
  MT_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, kin, kout, pin, pout, (int)(per * len), (int)per,
                                                       ob, ob + 1, 0, bits, s),
              op);
  MT_TRY(scratch.alloc(device, bytes));
  for (int64_t g = 0; g < nseg; g += per) {
    int64_t cnt = nseg - g < per ? nseg - g : per, o = g * len;
    MT_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(scratch.as<void>(), bytes, kin + o, kout + o, pin + o,
                                                         pout + o, (int)(cnt * len), (int)cnt, ob, ob + 1, 0, bits, s),
                op);
  }
  return MT_OK;
}

/* ---- driver ---- */

/* sort src along dim into vals (src's dtype and shape) and idx (int64, may be NULL) */
template <class T> static mt_status mtk_sort_typed(mt_tensor *vals, mt_tensor *idx, const mt_tensor *src, int dim,
                                                   int desc, int64_t base) {
  typedef typename mtk_key_type<T>::type K;
  const char *op = "sort";
  int device = src->device;
  cudaStream_t s = mt__cuda_stream(device);
  int64_t n = mt__numel(src), len = src->sizes[dim], nseg = n / len;
  static const int64_t zeros[MT_MAX_DIMS] = {0};
  const int64_t *ist = idx ? idx->strides : zeros;
  int64_t *ip = idx ? mtk_ptr<int64_t>(idx) : nullptr;
  if (len <= MTK_SORT_SMALL) {
    int64_t sizes[MT_MAX_DIMS];
    memcpy(sizes, src->sizes, sizeof sizes);
    sizes[dim] = 1;
    const int64_t *st[3] = {src->strides, vals->strides, ist};
    mtk_offsets<3> oc;
    mtk_make_offsets<3>(&oc, src->ndim, sizes, st);
    int P = 1;
    while (P < len) P <<= 1;
    int threads = P / 2 < 32 ? 32 : P / 2 > 1024 ? 1024 : P / 2;
    size_t shmem = (size_t)P * (sizeof(K) + sizeof(int));
    unsigned blocks = (unsigned)(nseg < (1 << 20) ? nseg : (1 << 20));
    mtk_sort_small<T><<<blocks, threads, shmem, s>>>(mtk_ptr<T>(src), mtk_ptr<T>(vals), ip, oc, nseg, (int)len, P,
                                                     src->strides[dim], vals->strides[dim], idx ? idx->strides[dim] : 0,
                                                     desc, base);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  }
  if (len > INT_MAX)
    return mt__error(MT_ERR_UNSUPPORTED, "sort: dimension of size %lld is too long to sort on CUDA", (long long)len);
  /* walk src with dim moved last, so linear positions are slice-major */
  int nd = 0;
  int64_t sizes[MT_MAX_DIMS], sst[MT_MAX_DIMS], vst[MT_MAX_DIMS], xst[MT_MAX_DIMS], cst[MT_MAX_DIMS];
  for (int d = 0; d <= src->ndim; d++) {
    int e = d < src->ndim ? d : dim;
    if (d == dim) continue;
    sizes[nd] = src->sizes[e];
    sst[nd] = src->strides[e];
    vst[nd] = vals->strides[e];
    xst[nd] = idx ? idx->strides[e] : 0;
    cst[nd] = d == src->ndim ? 1 : 0;
    nd++;
  }
  mtk_temp kin, kout, pin, pout;
  MT_TRY(kin.alloc(device, (size_t)n * sizeof(K)));
  MT_TRY(kout.alloc(device, (size_t)n * sizeof(K)));
  MT_TRY(pin.alloc(device, (size_t)n * sizeof(int)));
  MT_TRY(pout.alloc(device, (size_t)n * sizeof(int)));
  const int64_t *kst[2] = {sst, cst};
  MT_TRY(
      mtk_pointwise<2>(device, op, nd, sizes, kst, mtk_keys_f<T>{kin.as<K>(), pin.as<int>(), mtk_ptr<T>(src), desc}));
  MT_TRY(mtk_radix_sort<K>(device, kin.as<K>(), kout.as<K>(), pin.as<int>(), pout.as<int>(), nseg, len));
  const int64_t *ost[4] = {sst, vst, xst, cst};
  return mtk_pointwise<4>(
      device, op, nd, sizes, ost,
      mtk_unkey_f<T>{mtk_ptr<T>(vals), ip, mtk_ptr<T>(src), pout.as<int>(), src->strides[dim], base});
}

static mt_status mtk_sort(mt_tensor *vals, mt_tensor *idx, const mt_tensor *src, int dim, int desc, int64_t base) {
  if (mt__numel(src) == 0) return MT_OK;
  if (src->ndim == 0) { /* a scalar is its own sort */
    MT_TRY(mtk_copy_same(vals, src, "sort"));
    return idx ? mt__cuda_fill(idx, (double)base) : MT_OK;
  }
  if (vals->dtype != src->dtype || (idx && idx->dtype != MT_I64))
    return mt__error(MT_ERR_DTYPE, "sort: values must have the source's dtype %s and indices int64",
                     mt_dtype_name(src->dtype));
  /* values are read from src at sorted positions while being written: sorting in place needs a copy */
  mtk_temp copy;
  if (vals->storage == src->storage) {
    MT_TRY(copy.alloc_tensor(src->dtype, src->device, src->ndim, src->sizes));
    MT_TRY(mtk_copy_same(copy.t, src, "sort"));
    src = copy.t;
  }
  return mtk_dispatch(src->dtype, "sort", [&](auto tag) {
    typedef typename decltype(tag)::type T;
    return mtk_sort_typed<T>(vals, idx, src, dim, desc, base);
  });
}

extern "C" mt_status mt__cuda_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                                   int64_t base) {
  return mtk_sort(values, indices, src, dim, descending, base);
}

/* topk, first version: a full stable sort along dim (descending for the largest), then the
 * first k of each slice. Results are therefore always sorted, ties in index order. A selection
 * pass (radix select) would do less work for small k. */
extern "C" mt_status mt__cuda_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim,
                                   int largest, int sorted, int64_t base) {
  (void)sorted;
  if (mt__numel(values) == 0) return MT_OK;
  if (src->ndim == 0) return mt__cuda_sort(values, indices, src, 0, largest, base);
  mtk_temp sv, si;
  MT_TRY(sv.alloc_tensor(src->dtype, src->device, src->ndim, src->sizes));
  MT_TRY(si.alloc_tensor(MT_I64, src->device, src->ndim, src->sizes));
  MT_TRY(mtk_sort(sv.t, si.t, src, dim, largest, base));
  mt_tensor *nv = nullptr, *ni = nullptr;
  mt_status st = mt_tensor_narrow(&nv, sv.t, dim, 0, k);
  if (st == MT_OK) st = mt_tensor_narrow(&ni, si.t, dim, 0, k);
  if (st == MT_OK) st = mtk_copy_same(values, nv, "topk");
  if (st == MT_OK && indices) st = mtk_copy_same(indices, ni, "topk");
  mt_tensor_release(nv);
  mt_tensor_release(ni);
  return st;
}
